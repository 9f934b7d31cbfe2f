#!/usr/bin/env bash
# Clients that ignore the proxy variables still get through the one door:
# the proxy's sandbox resolver answers allowed names with synthetic addresses, and a
# connection to one reaches the proxy (docs/proxy.md, "Transparent
# redirection"). Real clients (Node's fetch and https, python http.client,
# curl --noproxy '*', getent) inside real sandboxes with NO proxy variable,
# against real origins on host loopback (nginx, a TLS origin with a CA made
# here, a server that speaks first).
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures nginx dnsmasq curl openssl python3 node getent

port=$(free_port)
dns=$(free_port)
tls=$(free_port)
greet=$(free_port)
start_origin "$port" || skip_all "origin did not start"
start_dns "$dns" api.allowed.test=127.0.0.1 tls.allowed.test=127.0.0.1 greet.allowed.test=127.0.0.1
start_tls_origin "$tls" tls.allowed.test || skip_all "TLS origin did not start"
# A server that speaks first, as SMTP or MySQL do, and echoes one line.
python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"220 hello\n"); c.sendall(c.recv(100)); c.close()
' "$greet" &
PIDS+=($!)

policy net "{\"version\": 1,
  \"fs\": {\"grants\": [{\"path\": \"$T/ca\", \"mode\": \"ro\", \"at\": \"/ca\"}]},
  \"net\": {\"egress\": [
      {\"host\": \"api.allowed.test\", \"ports\": [$port]},
      {\"host\": \"tls.allowed.test\", \"ports\": [$tls]},
      {\"host\": \"*.wild.test\", \"ports\": [$port]},
      {\"host\": \"greet.allowed.test\", \"ports\": [$greet]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\"}}"
# No proxy variable at all: what a client that ignores them sees.
NOPX="env -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u NO_PROXY -u SOCKS_PROXY -u http_proxy -u https_proxy -u all_proxy -u no_proxy -u NODE_USE_ENV_PROXY -u JAVA_TOOL_OPTIONS"
run_net() { "$SANDCAP" run --quiet --audit "$T/audit-$1.jsonl" --policy "$T/net.json" -- "${@:2}"; }
A="api.allowed.test:$port"

out=$("$SANDCAP" doctor 2>&1)
expect_match "doctor tries transparent redirection for real" "$out" \
	'transparent egress +yes +local routes on lo: connects to synthetic IPv4 and IPv6 addresses reach the listeners'
out=$(run_net env sh -c 'env; cat /etc/resolv.conf' 2>&1)
expect_match "Node's own proxy knob is set" "$out" "NODE_USE_ENV_PROXY=1"
expect_match "... and the JVM's" "$out" \
	"JAVA_TOOL_OPTIONS=-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=3128 -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128"
expect_match "resolv.conf inside names the sandbox resolver" "$out" "nameserver 127.0.0.1"
check "sandbox.start says transparent redirection is on" \
	grep -q '"event":"sandbox.start".*"transparent":"on"' "$T/audit-env.jsonl"

out=$(run_net getent $NOPX sh -c "getent ahostsv4 api.allowed.test | head -1; getent hosts x.wild.test; getent hosts denied.test; echo rc=\$?" 2>&1)
expect_match "an allowed name resolves to a synthetic address" "$out" '^198\.1[89]\.[0-9]+\.[0-9]+ +STREAM api\.allowed\.test'
expect_match "a name under *.domain too" "$out" '(198\.1[89]\.|fd73:616e:6463:6170::)[0-9a-f.:]* +x\.wild\.test'
expect_match "a name no rule allows does not resolve" "$out" 'rc=2$'
check "each query is a net.dns record with its answer" \
	grep -q '"event":"net.dns","data":{"answer":"198.18.[0-9.]*","name":"api.allowed.test","rcode":"NOERROR".*"type":"A"' "$T/audit-getent.jsonl"
check "... and the refusal with its reason" \
	grep -q '"event":"net.dns","data":{"answer":"","name":"denied.test","rcode":"NXDOMAIN","reason":"name-not-allowed"' "$T/audit-getent.jsonl"
rep=$("$SANDCAP" audit report "$T/audit-getent.jsonl" 2>&1)
expect_match "audit report counts the DNS queries" "$rep" 'dns +[0-9]+ queries, [1-9][0-9]* answered, [1-9][0-9]* refused'
expect_match "... and lists them with answers and refusals" "$rep" \
	$'api\\.allowed\\.test A -> NOERROR 198\\.18\\.[0-9.]+\n(.*\n)*    denied\\.test [A-Z]+ -> NXDOMAIN \\(name-not-allowed\\)'
check "audit report --json has them" grep -q '"queries": [1-9]' <<<"$("$SANDCAP" audit report --json "$T/audit-getent.jsonl")"
out=$("$SANDCAP" run --audit "$T/audit-sum.jsonl" --policy "$T/net.json" -- getent hosts denied.test 2>&1)
expect_match "the run summary counts the DNS queries" "$out" 'dns: [0-9]+ quer(y|ies) to the sandbox resolver, [0-9]+ answered, [1-9][0-9]* refused'

out=$(run_net clients $NOPX sh -c "
curl -sS --noproxy '*' http://$A/data.json
python3 -c '
import http.client
c = http.client.HTTPConnection(\"api.allowed.test\", $port, timeout=10)
c.request(\"GET\", \"/data.json\"); print(c.getresponse().read().decode().strip())'
node -e '
fetch(\"http://$A/data.json\").then(r => r.text()).then(t => console.log(t.trim()),
  e => console.log(\"fetch failed\", e.cause || e))'
node -e '
require(\"http\").get(\"http://$A/data.json\", r => { let b = \"\"; r.on(\"data\", d => b += d);
  r.on(\"end\", () => console.log(b.trim())); }).on(\"error\", e => console.log(\"http failed\", e))'
" 2>&1)
expect_eq "curl --noproxy '*', python http.client, Node fetch and http, without proxy variables" "$out" \
	'{"answer": 42}
{"answer": 42}
{"answer": 42}
{"answer": 42}'
check "each is a net.request of the proxy, for the name" bash -c \
	"[ \$(grep -c '\"event\":\"net.request\".*\"decision\":\"allow\".*\"host\":\"api.allowed.test\".*\"path\":\"/data.json\"' '$T/audit-clients.jsonl') = 4 ]"

out=$(run_net v6 $NOPX python3 -c "
import http.client, socket
a = socket.getaddrinfo('api.allowed.test', $port, socket.AF_INET6, socket.SOCK_STREAM)[0][4][0]
c = http.client.HTTPConnection(a, $port, timeout=10)
c.request('GET', '/data.json', headers={'Host': '$A'})
print(a, c.getresponse().read().decode().strip())" 2>&1)
expect_match "over IPv6 too: the AAAA answer's synthetic address reaches the proxy" "$out" \
	'^fd73:616e:6463:6170::[0-9a-f]+ \{"answer": 42\}$'
check "... a net.request for the name" \
	grep -q '"event":"net.request".*"decision":"allow".*"host":"api.allowed.test".*"path":"/data.json"' "$T/audit-v6.jsonl"

out=$(run_net https $NOPX sh -c "
curl -sS --noproxy '*' --cacert /ca/ca.pem -o /dev/null -w '%{http_code}\n' https://tls.allowed.test:$tls/
node -e '
require(\"https\").get(\"https://tls.allowed.test:$tls/\", {ca: require(\"fs\").readFileSync(\"/ca/ca.pem\")},
  r => console.log(r.statusCode)).on(\"error\", e => console.log(\"https failed\", e.code))'
curl -sS --noproxy '*' -k -m 5 --resolve other.test:$tls:\$(getent ahostsv4 tls.allowed.test | head -1 | cut -d' ' -f1) https://other.test:$tls/ -o /dev/null; echo rc=\$?
" 2>&1)
expect_match "TLS with a matching SNI is tunnelled: curl and Node https" "$out" '^200.200.'
expect_match "a ClientHello naming another host than the address's is refused" "$out" 'rc=(35|56)$'
check "... recorded as sni-mismatch" \
	grep -q '"event":"net.denied".*"detail":"the ClientHello names other.test".*"reason":"sni-mismatch"' "$T/audit-https.jsonl"
check "the tunnels are net.request records of CONNECT" bash -c \
	"[ \$(grep -c '\"event\":\"net.request\".*\"decision\":\"allow\".*\"host\":\"tls.allowed.test\".*\"method\":\"CONNECT\"' '$T/audit-https.jsonl') = 2 ]"

out=$(run_net host $NOPX curl -sS --noproxy '*' -o /dev/null -w '%{http_code}' -H 'Host: denied.test' "http://$A/data.json" 2>&1)
expect_eq "an HTTP request whose Host names another host is refused" "$out" 400
check "... recorded as host-mismatch" grep -q '"reason":"host-mismatch"' "$T/audit-host.jsonl"

out=$(run_net greet $NOPX python3 -c "
import socket
s = socket.create_connection(('greet.allowed.test', $greet), timeout=5)
print(s.recv(100).decode().strip()); s.sendall(b'ping\n'); print(s.recv(100).decode().strip())" 2>&1)
expect_eq "other TCP where the server speaks first: a plain tunnel" "$out" '220 hello
ping'

out=$(run_net direct $NOPX python3 -c "
import socket, time
for a in [('1.2.3.4', $port), ('127.0.0.1', $port), ('1.2.3.4', 9)]:
    t = time.monotonic()
    try:
        s = socket.create_connection(a, timeout=5); s.sendall(b'GET / HTTP/1.0\r\n\r\n')
        print('answer' if s.recv(100) else 'closed', end=' ')
    except OSError as e:
        print(type(e).__name__, end=' ')
    print('fast' if time.monotonic() - t < 1 else 'slow')
" 2>&1)
# (port 9 is no rule's: no listener, the kernel's reset, a direct attempt)
expect_eq "a connect to an address the sandbox resolver did not give out is refused at once, never reaches the host" "$out" \
	'ConnectionResetError fast
ConnectionResetError fast
ConnectionRefusedError fast'
check "... each recorded as net.denied not-a-known-name, with destination, port and protocol" bash -c \
	"[ \$(grep -c '\"event\":\"net.denied\".*\"addr\":\"\(1.2.3.4\|127.0.0.1\)\".*\"port\":$port,\"protocol\":\"tcp\",\"reason\":\"not-a-known-name\"' '$T/audit-direct.jsonl') = 2 ]"
check "... and the one to port 9 as a direct-connect attempt" \
	grep -q '"event":"net.denied".*"port":9,.*"reason":"direct-connect"' "$T/audit-direct.jsonl"

# A flood of them on an allowed port: at most 20 records a second, every
# other one counted in a limit.hit denied_records, none lost. Each connect
# waits for its reset (in connect or in recv), so the worker has refused it
# before the next.
out=$(run_net unknown-flood $NOPX python3 -c "
import socket
for i in range(300):
    try:
        s = socket.create_connection(('1.2.3.4', $port), timeout=5)
        s.recv(1)
    except ConnectionResetError:
        pass
print('done')" 2>&1)
expect_eq "300 connects to an unknown address on an allowed port ran" "$out" done
read -r n_rec n_sup n_hits wall <<<"$(python3 - "$T/audit-unknown-flood.jsonl" <<'PY'
import json, sys
rec = sup = hits = wall = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    d = r["data"]
    if r["event"] == "net.denied" and d.get("reason") == "not-a-known-name":
        rec += 1
    elif r["event"] == "limit.hit" and d.get("limit") == "denied_records":
        sup += d["suppressed"]
        hits += 1
    elif r["event"] == "sandbox.exit":
        wall = (d["wall_ns"] + 999999999) // 1000000000
print(rec, sup, hits, wall)
PY
)"
expect_eq "... every one recorded or counted ($n_rec recorded, $n_sup counted in $n_hits limit.hit)" \
	"$((n_rec + n_sup))" 300
check "... at most 20 recorded a second (${wall}s)" test "$n_rec" -ge 20 -a "$n_rec" -le $((20 * (wall + 1)))

policy literal "{\"version\": 1, \"net\": {\"egress\": [{\"host\": \"127.0.0.1\", \"ports\": [$greet]}],
    \"allow_private\": [\"127.0.0.1/32\"]}}"
out=$("$SANDCAP" run --quiet --audit "$T/audit-literal.jsonl" --policy "$T/literal.json" -- $NOPX python3 -c "
import socket
s = socket.create_connection(('127.0.0.1', $greet), timeout=5); print(s.recv(100).decode().strip())" 2>&1)
expect_eq "an address an IP-literal rule allows: a tunnel to it, no name needed" "$out" '220 hello'
check "... a net.request of CONNECT to the literal" \
	grep -q '"event":"net.request".*"decision":"allow".*"host":"127.0.0.1".*"method":"CONNECT"' "$T/audit-literal.jsonl"

# A rule for the proxy's own port: its wildcard listener shares 3128 with the
# proxy's 127.0.0.1 listener (SO_REUSEPORT), and both keep their jobs.
policy own "{\"version\": 1, \"net\": {\"egress\": [{\"host\": \"api.allowed.test\", \"ports\": [$port, 3128]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\"}}"
out=$("$SANDCAP" run --quiet --audit "$T/audit-own.jsonl" --policy "$T/own.json" -- sh -c \
	"curl -sS http://$A/data.json; $NOPX curl -sS --noproxy '*' -o /dev/null -w '%{http_code}' http://api.allowed.test:3128/" 2>&1)
expect_match "with port 3128 allowed, the proxy variable still works and 3128 of a name reaches the proxy" \
	"$out" '^\{"answer": 42\}.(502|200|404)$'
check "... which judged it as a request for api.allowed.test:3128" \
	grep -q '"event":"net.request".*"host":"api.allowed.test".*"port":3128' "$T/audit-own.jsonl"

# Where it cannot be set up (more allowed ports than listeners), the proxy
# variables still work and sandbox.start says why.
many=$(seq 20000 20060 | grep -vx "$port" | head -60 | paste -sd,) # 60 ports, not $port
policy many "{\"version\": 1, \"net\": {\"egress\": [{\"host\": \"api.allowed.test\", \"ports\": [$port, $many]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\"}}"
out=$("$SANDCAP" run --quiet --audit "$T/audit-many.jsonl" --policy "$T/many.json" -- sh -c \
	"curl -sS http://$A/data.json; getent hosts api.allowed.test; echo rc=\$?" 2>&1)
expect_eq "transparent redirection off: the proxy variables still work, no sandbox resolver answers" "$out" \
	'{"answer": 42}
rc=2'
check "... and sandbox.start says why" grep -q \
	'"transparent":"off: more allowed ports than transparent listeners: Argument list too long"' "$T/audit-many.jsonl"
# The JVM reads no proxy variable: its own properties in JAVA_TOOL_OPTIONS
# take it through the proxy, here where nothing transparent could.
if command -v javac >/dev/null; then
	cat >"$T/ca/Get.java" <<'JAVA'
public class Get {
	public static void main(String[] a) throws Exception {
		var c = (java.net.HttpURLConnection) new java.net.URL(a[0]).openConnection();
		System.out.println(new String(c.getInputStream().readAllBytes()).trim());
	}
}
JAVA
	# No grant of the JVM's settings: Debian's /etc/java-*-openjdk, where
	# its java.security links lead, is part of every sandbox's /etc.
	sed -i 's|"net": {|"fs": {"grants": [{"path": "'"$T/ca"'", "mode": "ro", "at": "/ca"}]}, "net": {|' "$T/many.json"
	out=$("$SANDCAP" run --quiet --audit "$T/audit-jvm.jsonl" --policy "$T/many.json" -- \
		java /ca/Get.java "http://$A/data.json" 2>"$T/jvm.err")
	expect_eq "a JVM program follows JAVA_TOOL_OPTIONS to the proxy (transparent redirection off)" \
		"$out" '{"answer": 42}'
	check "... the JVM says it took them" grep -q '^Picked up JAVA_TOOL_OPTIONS: -Dhttp.proxyHost=127.0.0.1' "$T/jvm.err"
	check "... a net.request of the proxy for the name" \
		grep -q '"event":"net.request".*"decision":"allow".*"host":"api.allowed.test".*"method":"GET"' "$T/audit-jvm.jsonl"
else
	skip "a JVM program follows JAVA_TOOL_OPTIONS" "no JDK (javac) installed"
fi

# DNS on the wire: a resolver address hard-coded (8.8.8.8) reaches the sandbox resolver
# too; other types of an allowed name have no data; a malformed query is
# FORMERR; past net.rate the answer is REFUSED and the count one limit.hit.
cat >"$T/ca/dnsq.py" <<'PY'
import socket, struct, sys
def q(server, name, qtype=1, raw=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
    msg = raw or struct.pack('>HHHHHH', 0x1234, 0x0100, 1, 0, 0, 0) + \
        b''.join(bytes([len(l)]) + l.encode() for l in name.split('.')) + b'\0' + struct.pack('>HH', qtype, 1)
    s.sendto(msg, (server, 53))
    r = s.recv(600)
    return '%s/%d' % (['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED'][r[3] & 15],
                      struct.unpack('>H', r[6:8])[0])
if sys.argv[1] == 'kinds':
    print(q('8.8.8.8', 'api.allowed.test'), q('127.0.0.1', 'api.allowed.test', 15),
          q('127.0.0.1', 'denied.test'), q('127.0.0.1', '', raw=b'\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xc0\x0c\x00\x01\x00\x01'))
else:
    got = [q('127.0.0.1', 'n%d.wild.test' % i) for i in range(40)]
    print(got.count('NOERROR/1'), got.count('REFUSED/0'))
PY
out=$(run_net dnskinds $NOPX python3 /ca/dnsq.py kinds 2>&1)
expect_eq "8.8.8.8 answered by the sandbox resolver; MX of an allowed name: no data; a denied name; a compression pointer: FORMERR" \
	"$out" "NOERROR/1 NOERROR/0 NXDOMAIN/0 FORMERR/0"
sed -i 's/"allow_private": \[/"rate": "10\/s", "allow_private": [/' "$T/net.json"
out=$(run_net dnsrate $NOPX python3 /ca/dnsq.py flood 2>&1)
read -r answered refused <<<"$out"
check "past net.rate (10/s) queries are REFUSED ($out)" [ "${answered:-0}" -ge 10 -a "${answered:-0}" -le 15 -a "${refused:-0}" -ge 25 ]
check "... one limit.hit counts them, not a record each" \
	grep -q '"event":"limit.hit","data":{"detail":"[0-9]* DNS queries refused (REFUSED) over net.rate","kind":"dns","limit":"rate","suppressed":[1-9][0-9]*}' "$T/audit-dnsrate.jsonl"
n=$(grep -c '"event":"net.dns"' "$T/audit-dnsrate.jsonl")
check "... and only the answered ones are net.dns records ($n)" [ "$n" = "$answered" ]
counted=$(python3 -c '
import json, sys
print(sum(r["data"]["suppressed"] for r in map(json.loads, open(sys.argv[1]))
          if r["event"] == "limit.hit" and r["data"]["limit"] == "rate"))' "$T/audit-dnsrate.jsonl")
expect_eq "... every query recorded or counted ($n recorded, $counted counted)" "$((n + counted))" 40
# A worker that crashed (an ASan report, a fault) would be a proxy.exit.
check "no proxy worker died in any of these runs" bash -c "! grep -l '\"event\":\"proxy.exit\"' '$T'/audit-*.jsonl"
finish
