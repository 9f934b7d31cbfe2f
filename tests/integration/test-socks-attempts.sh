#!/usr/bin/env bash
# SOCKS5 on the proxy's listener and every direct attempt seen, from inside
# real sandboxes with real clients: curl --socks5-hostname to a loopback
# nginx and to a denied host, git over SSH to a loopback sshd through
# SOCKS5 (nc -X 5 as ProxyCommand), a UDP datagram, TCP connects around
# the proxy (IPv4 and IPv6), raw and packet sockets, and a flood of 10,000
# refused attempts that stays a bounded number of records.
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures nginx curl python3 git ssh ssh-keygen nc.openbsd /usr/sbin/sshd

port=$(free_port)
sshport=$(free_port)
start_origin "$port" || skip_all "origin did not start"

# count LOG EVENT [KEY=VALUE...]: how many records of EVENT have those values
count() {
	python3 - "$@" <<'PY'
import json, sys
log, event, *conds = sys.argv[1:]
want = dict(c.split("=", 1) for c in conds)
n = 0
for line in open(log):
    r = json.loads(line)
    d = r["data"]
    if r["event"] == event and all(str(d.get(k)) == v for k, v in want.items()):
        n += 1
print(n)
PY
}

policy net "{\"version\": 1,
  \"fs\": {\"grants\": [{\"path\": \"$T/client\", \"mode\": \"ro\", \"at\": \"/client\"}]},
  \"net\": {\"egress\": [{\"host\": \"localhost\", \"ports\": [$port]},
                       {\"host\": \"api.localhost\", \"ports\": [$port]},
                       {\"host\": \"127.0.0.1\", \"ports\": [$sshport]},
                       {\"host\": \"git.localhost\", \"ports\": [$sshport]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"rate\": \"100/s\"}}"
mkdir -p "$T/client"
run_net() { "$SANDCAP" run --audit "$T/$1.jsonl" --policy "$T/net.json" -- "${@:2}"; }

# --- SOCKS5 ---
out=$(run_net socks sh -c 'echo "$SOCKS_PROXY $ALL_PROXY"; curl -sS --noproxy "" -x "$SOCKS_PROXY" http://localhost:'"$port"'/data.json' 2>/dev/null)
expect_eq "SOCKS_PROXY inside names the SOCKS5 door (ALL_PROXY the HTTP one), and curl through it reaches the allowed origin" \
	"$out" "socks5h://127.0.0.1:3128 http://127.0.0.1:3128
{\"answer\": 42}"
expect_eq "... recorded as an allowed CONNECT via socks5 to the name" \
	"$(count "$T/socks.jsonl" net.request decision=allow via=socks5 host=localhost method=CONNECT)" 1
check "... and its tunnel's close with the bytes" grep -q '"event":"net.tunnel.close".*"via":"socks5"' "$T/socks.jsonl"
# The client resolves the name with the sandbox resolver and sends the
# synthetic address (ATYP 1), which stands for the name. (curl --socks5
# would not do: it resolves *.localhost to 127.0.0.1 itself.)
out=$(run_net socks-synth python3 -c '
import socket, struct
a = socket.gethostbyname("api.localhost")
print(a.startswith("198.18."))
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"\x05\x01\x00"); assert s.recv(2) == b"\x05\x00"
s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton(a) + struct.pack("!H", '"$port"'))
print(s.recv(10).hex())
s.sendall(b"GET /data.json HTTP/1.0\r\nHost: api.localhost\r\n\r\n")
print(s.makefile("rb").read().split(b"\r\n\r\n", 1)[1].decode().strip())' 2>/dev/null)
expect_eq "a synthetic address through SOCKS5 (ATYP 1) reaches the name it stands for" "$out" "True
05000001000000000000
{\"answer\": 42}"
expect_eq "... recorded with the name" \
	"$(count "$T/socks-synth.jsonl" net.request decision=allow via=socks5 host=api.localhost)" 1
out=$(run_net socks-denied curl -sS --noproxy "" -x socks5h://127.0.0.1:3128 "http://denied.example:$port/" 2>&1)
expect_match "a denied host through SOCKS5: reply 2, not allowed by ruleset" "$out" "SOCKS5.*\(2\)"
expect_eq "... recorded as net.denied host-not-allowed via socks5" \
	"$(count "$T/socks-denied.jsonl" net.denied via=socks5 host=denied.example reason=host-not-allowed)" 1
out=$(run_net socks-port curl -sS --noproxy "" -x socks5h://127.0.0.1:3128 "http://localhost:$sshport/" 2>&1)
expect_match "an allowed name on another port: refused too" "$out" "SOCKS5.*\(2\)"
out=$(run_net socks-udp python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"\x05\x01\x00"); print(s.recv(2).hex())
s.sendall(b"\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00"); print(s.recv(10).hex())' 2>/dev/null)
expect_eq "UDP ASSOCIATE: method 0 chosen, then reply 7 (command not supported)" "$out" "0500
05070001000000000000"
out=$(run_net socks-auth python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"\x05\x01\x02"); print(s.recv(2).hex(), s.recv(1))' 2>/dev/null)
expect_eq "a client offering only username/password: no acceptable method, closed" "$out" "05ff b''"

# --- git over SSH through SOCKS5 ---
mkdir -p "$T/ssh" /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$T/ssh/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$T/client/id"
chmod 644 "$T/client/id"
cp "$T/client/id.pub" "$T/ssh/authorized_keys"
for h in 127.0.0.1 git.localhost; do
	printf '[%s]:%s %s\n' "$h" "$sshport" "$(cut -d' ' -f1,2 "$T/ssh/host_key.pub")"
done >"$T/client/known_hosts"
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
git -C "$T" init -q work && git -C "$T/work" -c user.name=t -c user.email=t@t commit -q --allow-empty -m "through the one door"
git -C "$T/work" push -q "$T/repo.git" HEAD:refs/heads/main 2>/dev/null
git -C "$T/repo.git" symbolic-ref HEAD refs/heads/main
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/"$sshport") 2>/dev/null && break; sleep 0.1; done
out=$(run_net git sh -c 'cp /client/id /tmp/id && chmod 600 /tmp/id &&
GIT_SSH_COMMAND="ssh -i /tmp/id -o UserKnownHostsFile=/client/known_hosts -o ProxyCommand=\"nc -X 5 -x 127.0.0.1:3128 %h %p\"" \
git clone -q ssh://root@127.0.0.1:'"$sshport$T"'/repo.git /tmp/clone && git -C /tmp/clone log --format=%s' 2>&1)
expect_match "git clone over SSH through SOCKS5 (nc -X 5 as ProxyCommand)" "$out" "through the one door"
expect_eq "... recorded as a SOCKS5 tunnel to the allowed host:port" \
	"$(count "$T/git.jsonl" net.request decision=allow via=socks5 host=127.0.0.1 port="$sshport")" 1
# The same without any proxy variable or ProxyCommand: ssh resolves the name
# with the sandbox resolver, connects to its synthetic address, and the
# transparent listener relays what is neither TLS nor HTTP as a plain tunnel.
out=$(run_net git-transparent env -u ALL_PROXY -u all_proxy -u HTTP_PROXY -u http_proxy sh -c 'cp /client/id /tmp/id && chmod 600 /tmp/id &&
GIT_SSH_COMMAND="ssh -i /tmp/id -o UserKnownHostsFile=/client/known_hosts" \
git clone -q ssh://root@git.localhost:'"$sshport$T"'/repo.git /tmp/clone && git -C /tmp/clone log --format=%s' 2>&1)
expect_match "git clone over SSH to a name, no proxy variable: transparent redirection" "$out" "through the one door"
expect_eq "... recorded as a tunnel to the name and port, not via SOCKS5" \
	"$(count "$T/git-transparent.jsonl" net.request decision=allow via=None host=git.localhost method=CONNECT port="$sshport")" 1

# --- direct attempts: each refused at once and recorded ---
start=$(date +%s%N)
out=$(run_net direct python3 -c '
import socket, errno
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.sendto(b"x", ("1.2.3.4", 9999))
for fam, addr in ((socket.AF_INET, ("1.2.3.4", 8443)), (socket.AF_INET6, ("2001:db8::1", 80))):
    c = socket.socket(fam)
    c.settimeout(5)
    try:
        c.connect(addr)
    except OSError as e:
        print(errno.errorcode[e.errno])
for args in ((socket.AF_PACKET, socket.SOCK_RAW, 0), (socket.AF_INET, socket.SOCK_RAW, 1)):
    try:
        socket.socket(*args)
    except OSError as e:
        print(errno.errorcode[e.errno])
' 2>"$T/direct.err")
elapsed=$((($(date +%s%N) - start) / 1000000))
expect_eq "TCP around the proxy is refused at once (IPv4, IPv6), raw and packet sockets are refused" \
	"$out" "ECONNREFUSED
ECONNREFUSED
EPERM
EPERM"
check "... in well under the connect timeout (${elapsed} ms for the run)" test "$elapsed" -lt 4000
expect_eq "the UDP datagram: net.denied udp with destination, port, protocol" \
	"$(count "$T/direct.jsonl" net.denied reason=udp protocol=udp addr=1.2.3.4 port=9999)" 1
expect_eq "the TCP connect to a port no rule allows: net.denied direct-connect" \
	"$(count "$T/direct.jsonl" net.denied reason=direct-connect protocol=tcp addr=1.2.3.4 port=8443)" 1
expect_eq "... and over IPv6" \
	"$(count "$T/direct.jsonl" net.denied reason=direct-connect protocol=tcp addr=2001:db8::1 port=80)" 1
rep=$("$SANDCAP" audit report "$T/direct.jsonl" 2>&1)
expect_match "audit report shows a direct attempt with its protocol" "$rep" \
	'direct udp 1\.2\.3\.4:9999 \(udp\)'
expect_match "... and a direct TCP connect" "$rep" 'direct tcp 1\.2\.3\.4:8443 \(direct-connect\)'
expect_eq "the packet socket: net.denied raw-socket" \
	"$(count "$T/direct.jsonl" net.denied reason=raw-socket protocol=packet "host=socket(AF_PACKET)")" 1
expect_eq "the raw socket: net.denied raw-socket" \
	"$(count "$T/direct.jsonl" net.denied reason=raw-socket protocol=raw)" 1
expect_match "the summary lists them" "$(cat "$T/direct.err")" \
	"network: 0 allowed, 5 denied.*denied: .*1\.2\.3\.4 x2"
json=$("$SANDCAP" run --json --quiet --policy "$T/net.json" -- python3 -c '
import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("192.0.2.7", 123))' 2>&1 | tail -n 1)
expect_eq "--json lists the attempt in denied_hosts with its reason" \
	"$(python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print(d["requests_denied"], [(h["host"], h["reason"]) for h in d["denied_hosts"]])' "$json")" \
	"1 [('192.0.2.7', 'udp')]"

# --- a flood stays bounded ---
out=$(run_net flood python3 -c '
import socket
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(5000):
    u.sendto(b"x", ("1.2.3.4", 9999))
for i in range(5000):
    c = socket.socket()
    try:
        c.connect(("1.2.3.4", 1000 + i))
    except ConnectionRefusedError:
        pass
    c.close()
for i in range(500):
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    except PermissionError:
        pass
print("done")' 2>&1)
expect_match "10,000 refused attempts and 500 packet sockets ran" "$out" "done"
read -r n_rec n_sup n_hits n_all wall <<<"$(python3 - "$T/flood.jsonl" <<'PY'
import json, sys
rec = sup = hits = n = 0
wall = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    n += 1
    d = r["data"]
    if r["event"] == "net.denied" and d.get("reason") in ("udp", "direct-connect", "raw-socket"):
        rec += 1
    elif r["event"] == "limit.hit" and d.get("limit") == "net.attempts":
        sup += d["suppressed"]
        hits += 1
    elif r["event"] == "sandbox.exit":
        wall = d["wall_ns"]
print(rec, sup, hits, n, (wall + 999999999) // 1000000000)
PY
)"
echo "# flood: $n_rec records, $n_sup suppressed in $n_hits limit.hit, $n_all records in all, ${wall}s"
expect_eq "every attempt is accounted for: recorded one by one or counted" "$((n_rec + n_sup))" 10500
check "records one by one stay within the bound (32 + 2/s x 2 limiters: $n_rec)" \
	test "$n_rec" -le $((2 * (32 + 2 * (wall + 1))))
check "one limit.hit a second at most ($n_hits in ${wall}s)" test "$n_hits" -le $((2 * (wall + 2)))
check "the whole log stays small ($n_all records)" test "$n_all" -lt 200
finish
