#!/usr/bin/env bash
# Domain fronting through plain tunnels, and SOCKS5 to an inspected host,
# from inside real sandboxes: a ClientHello naming another host than the
# tunnel's (over CONNECT and SOCKS5) never reaches an origin that logs every
# server name it is sent; the allowed name still gets through and moves
# bulk bytes; curl over SOCKS5 to a host with a placeholder credential is
# inspected; git over SSH to another port of that host is a plain tunnel.
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures openssl dnsmasq nginx curl python3 git ssh ssh-keygen nc.openbsd /usr/sbin/sshd

o=$(free_port)       # the SNI-logging TLS origin
api=$(free_port)     # the HTTPS origin of the credentialed host
sshport=$(free_port) # its sshd
http=$(free_port)    # its plain http origin (nginx)
dns=$(free_port)
mkdir -p "$T/ca" "$T/client"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj "/CN=sandcap fronting test CA" -keyout "$T/ca/ca.key" -out "$T/ca/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=allowed.test" \
	-keyout "$T/ca/o.key" -out "$T/ca/o.csr" 2>/dev/null
printf 'subjectAltName=DNS:allowed.test,DNS:evil.test,DNS:cred.test,DNS:paths.test\n' >"$T/ca/o.ext"
openssl x509 -req -in "$T/ca/o.csr" -CA "$T/ca/ca.pem" -CAkey "$T/ca/ca.key" -CAcreateserial \
	-days 1 -extfile "$T/ca/o.ext" -out "$T/ca/o.pem" 2>/dev/null
chmod 755 "$T/ca" && chmod 644 "$T/ca"/*

python3 "$(dirname "$0")/../helpers/sni-origin.py" "$o" "$T/ca/o.pem" "$T/ca/o.key" "$T/sni.log" &
PIDS+=($!)
python3 "$(dirname "$0")/../helpers/tls-origin.py" "$api" "$T/ca/o.pem" "$T/ca/o.key" "$T/api.log" &
PIDS+=($!)
start_origin "$http" || skip_all "origin did not start"
start_dns "$dns" allowed.test=127.0.0.1 evil.test=127.0.0.1 cred.test=127.0.0.1 paths.test=127.0.0.1
for p in "$o" "$api"; do
	for _ in $(seq 100); do
		(echo >/dev/tcp/127.0.0.1/"$p") 2>/dev/null && break
		sleep 0.05
	done
done

export REAL_KEY="real-key-$$-$RANDOM$RANDOM"
policy net "{\"version\": 1,
  \"fs\": {\"grants\": [{\"path\": \"$T/client\", \"mode\": \"ro\", \"at\": \"/client\"}]},
  \"net\": {\"egress\": [{\"host\": \"allowed.test\", \"ports\": [$o]},
                       {\"host\": \"cred.test\", \"ports\": [$api, $sshport, $http]},
                       {\"host\": \"paths.test\", \"ports\": [$api], \"inspect\": true,
                        \"paths\": [\"/v1/\"]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\",
    \"upstream_ca\": \"$T/ca/ca.pem\", \"rate\": \"100/s\",
    \"credentials\": [{\"host\": \"cred.test\", \"placeholder_env\": \"API_KEY\",
                      \"value_env\": \"REAL_KEY\"}]}}"
run_net() { "$SANDCAP" run --quiet --audit "$T/$1.jsonl" --policy "$T/net.json" -- "${@:2}"; }

# count LOG EVENT [KEY=VALUE...]: how many records of EVENT have those values
count() {
	python3 - "$@" <<'PY'
import json, sys
log, event, *conds = sys.argv[1:]
want = dict(c.split("=", 1) for c in conds)
print(sum(1 for line in open(log)
          if (r := json.loads(line))["event"] == event
          and all(str(r["data"].get(k)) == v for k, v in want.items())))
PY
}

# front.py VIA NAME: a tunnel to allowed.test through the proxy (VIA is
# connect or socks5), or straight to it (transparent: the sandbox
# resolver's address, silent for 0.5 s, so that the proxy takes it for a
# protocol whose server speaks first), then TLS with NAME as the server
# name; prints what came back, or the error.
cat >"$T/client/front.py" <<PY
import socket, ssl, struct, sys, time
via, name = sys.argv[1], sys.argv[2]
if via == "transparent":
    s = socket.create_connection(("allowed.test", $o), timeout=20)
    time.sleep(0.5)
    print("silent")
else:
    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
if via == "transparent":
    pass
elif via == "connect":
    s.sendall(b"CONNECT allowed.test:$o HTTP/1.1\r\nHost: allowed.test:$o\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    print(head.split(b"\r\n")[0].decode())
else:
    s.sendall(b"\x05\x01\x00"); assert s.recv(2) == b"\x05\x00"
    s.sendall(b"\x05\x01\x00\x03\x0callowed.test" + struct.pack("!H", $o))
    print("socks", s.recv(10)[1])
ctx = ssl.create_default_context(cafile="/client/ca.pem")
ctx.check_hostname = False
try:
    t = ctx.wrap_socket(s, server_hostname=name)
    f = t.makefile("rwb")
    f.write(b"ok\n4000000\n"); f.flush()
    print(f.readline().decode().strip(), len(f.read(4000000)))
except (OSError, ssl.SSLError) as e:
    print("refused", type(e).__name__)
PY
cp "$T/ca/ca.pem" "$T/client/ca.pem"

for via in connect socks5 transparent; do
	: >"$T/sni.log"
	out=$(run_net "$via-evil" python3 /client/front.py "$via" evil.test 2>&1)
	expect_match "$via to allowed.test with a ClientHello naming evil.test: refused" "$out" "refused"
	check "... and the origin never saw the name evil.test" \
		bash -c "! grep -q evil.test '$T/sni.log'"
	expect_eq "... recorded as net.denied sni-mismatch with the SNI" \
		"$(count "$T/$via-evil.jsonl" net.denied reason=sni-mismatch sni=evil.test host=allowed.test)" 1
	out=$(run_net "$via-ok" python3 /client/front.py "$via" allowed.test 2>&1)
	expect_match "$via to allowed.test naming allowed.test: through, 4 MB back" "$out" "ok 4000000"
	check "... the origin saw allowed.test" grep -qx allowed.test "$T/sni.log"
done
out=$(run_net nosni python3 -c '
import socket, ssl
s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
s.sendall(b"CONNECT allowed.test:'"$o"' HTTP/1.1\r\nHost: allowed.test:'"$o"'\r\n\r\n")
s.recv(100)
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
try:
    ctx.wrap_socket(s); print("through")
except (OSError, ssl.SSLError): print("refused")' 2>&1)
expect_eq "a ClientHello without a server name: refused" "$out" "refused"
expect_eq "... recorded as sni-missing" "$(count "$T/nosni.jsonl" net.denied reason=sni-missing)" 1
check "... and the origin got no hello without a name" bash -c "! grep -qx -- - '$T/sni.log'"

# --- SOCKS5 to a host with a placeholder credential ---
out=$(run_net socks-cred sh -c 'curl -sS --noproxy "" --socks5-hostname 127.0.0.1:3128 \
	-H "Authorization: Bearer $API_KEY" https://cred.test:'"$api"'/v1/socks' 2>&1)
expect_match "curl over SOCKS5 to a credentialed host: a SOCKS reply, then inspected" "$out" '"ok": true'
check "... the origin got the real value" grep -q "Bearer $REAL_KEY" "$T/api.log"
expect_eq "... recorded as an inspected request via socks5" \
	"$(count "$T/socks-cred.jsonl" net.request decision=allow host=cred.test path=/v1/socks)" 1

# --- another port of that host: git over SSH, a plain tunnel ---
mkdir -p "$T/ssh" /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$T/ssh/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$T/client/id"
chmod 644 "$T/client/id"
cp "$T/client/id.pub" "$T/ssh/authorized_keys"
printf '[cred.test]:%s %s\n' "$sshport" "$(cut -d' ' -f1,2 "$T/ssh/host_key.pub")" >"$T/client/known_hosts"
cat >"$T/ssh/sshd_config" <<CONF
Port $sshport
ListenAddress 127.0.0.1
HostKey $T/ssh/host_key
PidFile $T/ssh/sshd.pid
AuthorizedKeysFile $T/ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowUsers root
CONF
/usr/sbin/sshd -D -e -f "$T/ssh/sshd_config" 2>"$T/ssh/sshd.log" &
PIDS+=($!)
git init -q --bare "$T/repo.git"
git -C "$T" init -q work && git -C "$T/work" -c user.name=t -c user.email=t@t commit -q --allow-empty -m "ssh beside https"
git -C "$T/work" push -q "$T/repo.git" HEAD:refs/heads/main 2>/dev/null
git -C "$T/repo.git" symbolic-ref HEAD refs/heads/main
for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/"$sshport") 2>/dev/null && break; sleep 0.1; done
for x in connect 5; do
	out=$(run_net "git-$x" sh -c 'cp /client/id /tmp/id && chmod 600 /tmp/id &&
GIT_SSH_COMMAND="ssh -i /tmp/id -o UserKnownHostsFile=/client/known_hosts -o ProxyCommand=\"nc -X '"$x"' -x 127.0.0.1:3128 %h %p\"" \
git clone -q ssh://root@cred.test:'"$sshport$T"'/repo.git /tmp/clone && git -C /tmp/clone log --format=%s &&
curl -sS -H "Authorization: Bearer $API_KEY" https://cred.test:'"$api"'/v1/beside-'"$x"'' 2>&1)
	expect_match "git over SSH (nc -X $x) to a host with a placeholder credential: a plain tunnel" \
		"$out" "ssh beside https"
	expect_match "... and HTTPS to the same name in the same run: inspected" "$out" '"ok": true'
	check "... the origin got the real value" grep -q "/v1/beside-$x.*Bearer $REAL_KEY" "$T/api.log"
	expect_eq "... the SSH tunnel recorded, not inspected" \
		"$(count "$T/git-$x.jsonl" net.tunnel.close host=cred.test port="$sshport")" 1
done

# silent_then_tls LOG HOST PATH: inside a sandbox, CONNECT HOST:$api, stay
# silent for 0.5 s (past the proxy's 200 ms), then speak TLS and GET PATH;
# prints the CONNECT's answer and then the response's status or "refused".
silent_then_tls() {
	run_net "$1" python3 -c '
import socket, ssl, sys, time
host, port, path = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
s.sendall(("CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (host, port, host, port)).encode())
print(s.recv(100).split(b"\r\n")[0].decode())
time.sleep(0.5)
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
try:
    t = ctx.wrap_socket(s, server_hostname=host)
    t.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, host)).encode())
    print(t.recv(100).split(b"\r\n")[0].decode() or "refused")
except (OSError, ssl.SSLError) as e: print("refused", type(e).__name__)' "$2" "$api" "$3" 2>&1
}

# An inspected rule's paths hold for every request to it: a client silent
# for 0.5 s after the CONNECT (so that inspection is declined) and then
# speaking TLS gets no plain tunnel around them.
out=$(run_net paths curl -sS "https://paths.test:$api/v1/in" "https://paths.test:$api/elsewhere" 2>&1)
expect_match "an inspected rule with paths: a path under them is answered" "$out" '"path": "/v1/in"'
expect_match "... one outside them refused" "$out" "path-not-allowed|403"
out=$(silent_then_tls paths-silent paths.test /elsewhere/silent)
expect_match "CONNECT to it, silent for 0.5 s, then TLS: refused" "$out" "refused"
check "... and the origin never got the path outside the rule's" \
	bash -c "! grep -q /elsewhere/silent '$T/api.log'"
expect_eq "... recorded as net.denied path-not-allowed" \
	"$(count "$T/paths-silent.jsonl" net.denied reason=path-not-allowed host=paths.test)" 1

# The same on an inspected host without paths: a client silent past 200 ms
# and then speaking TLS would otherwise get a tunnel past inspection (no
# record of its requests, no credential limits); it is refused.
out=$(silent_then_tls cred-silent cred.test /v1/late-silent)
expect_match "an inspected host, CONNECT silent for 0.5 s, then TLS: refused" "$out" "refused"
check "... the origin never got its request" bash -c "! grep -q /v1/late-silent '$T/api.log'"
expect_eq "... recorded as net.denied inspect-late" \
	"$(count "$T/cred-silent.jsonl" net.denied reason=inspect-late host=cred.test)" 1

out=$(run_net plain-cred curl -sS -p -x http://127.0.0.1:3128 "http://cred.test:$http/data.json" 2>&1)
expect_eq "plain http through CONNECT to another port of that host: a plain tunnel" \
	"$out" '{"answer": 42}'

finish
