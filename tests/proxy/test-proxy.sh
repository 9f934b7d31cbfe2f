#!/bin/bash
# SPDX-License-Identifier: MIT
# Integration tests of the egress proxy with real servers on loopback only:
# nginx (origins, plain and TLS), dnsmasq (names), curl and python clients.
# Runs px-standalone (tests/proxy/build.sh). TAP output; exit 77 = skipped.
#
#   tests/proxy/test-proxy.sh [BUILDDIR]
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$top/build}
SA=${PX_STANDALONE:-$B/tests/proxy/px-standalone}
T=$(mktemp -d /tmp/sandcap-proxy-test.XXXXXX)
chmod 755 "$T"
n=0
fails=0
pids=()

skip_all() {
	echo "1..0 # SKIP $*"
	[ "${SANDCAP_MUST_WORK:-0}" = 1 ] && exit 1
	exit 77
}

for tool in nginx dnsmasq curl openssl python3 bc; do
	command -v $tool >/dev/null || skip_all "$tool not installed"
done
[ "$(id -u)" = 0 ] || skip_all "needs root (the worker drops to nobody)"
[ -x "$SA" ] || "$top/tests/proxy/build.sh" "$B" || skip_all "cannot build px-standalone"

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

ok() { # ok COND-EXIT-STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		fails=$((fails + 1))
	fi
}

check() { # check DESCRIPTION COMMAND...
	local d=$1
	shift
	"$@" >/dev/null 2>&1
	ok $? "$d"
}

# Ports BASE..BASE+19, all free, below the kernel's ephemeral range.
. "$top/tools/fixtures.sh"
BASE=$(free_port 20)
P_HTTP=$BASE P_HTTP2=$((BASE + 1)) P_TLS=$((BASE + 2)) P_DNS=$((BASE + 3))
P1=$((BASE + 10)) P2=$((BASE + 11)) P3=$((BASE + 12)) P4=$((BASE + 13)) P5=$((BASE + 14))
P6=$((BASE + 15)) P_SINK=$((BASE + 4)) P_RAW=$((BASE + 5)) P_DEAD=$((BASE + 6))

# --- origins -----------------------------------------------------------------
mkdir -p "$T/www"
echo hello >"$T/www/index.html"
head -c $((4 * 1024 * 1024)) /dev/urandom >"$T/www/big.bin"
head -c $((200 * 1024)) /dev/urandom >"$T/www/mid.bin"
truncate -s 64M "$T/www/huge.bin" # sparse
head -c $((4 * 1024 * 1024)) /dev/urandom >"$T/upload.bin"
head -c 2048 /dev/zero | tr '\0' a >"$T/2k.txt"

openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=sandcap test CA" \
	-keyout "$T/ca.key" -out "$T/ca.pem" \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
	>/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -subj "/CN=secure.test" -keyout "$T/srv.key" \
	-out "$T/srv.csr" >/dev/null 2>&1
printf "subjectAltName=DNS:secure.test,DNS:tls.test\n" >"$T/ext.cnf"
openssl x509 -req -in "$T/srv.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
	-days 1 -extfile "$T/ext.cnf" -out "$T/srv.pem" >/dev/null 2>&1

cat >"$T/nginx.conf" <<EOF
daemon on; pid $T/nginx.pid; error_log $T/nginx-error.log; worker_processes 1;
events { worker_connections 256; }
http {
  log_format auth '\$request auth="\$http_authorization" key="\$http_x_api_key" conn=\$connection';
  access_log $T/access.log auth;
  client_body_temp_path $T/cbt; proxy_temp_path $T/pt; fastcgi_temp_path $T/ft;
  uwsgi_temp_path $T/ut; scgi_temp_path $T/st;
  server {
    listen 127.0.0.1:$P_HTTP; listen 127.0.0.1:$P_HTTP2; listen [::1]:$P_HTTP; root $T/www;
    client_max_body_size 64m;
    location /auth { return 200 "auth=\$http_authorization\n"; }
    location /upload { client_body_in_single_buffer off; return 200 "up\n"; }
    location /host { return 200 "host=\$host\n"; }
    location /key { return 200 "key=\$http_x_api_key\n"; }
    # pages of the page cache, cut at segment boundaries: the tunnel's pipe
    # fills up in pages before it does in bytes
    location = /huge.bin { sendfile on; }
  }
  server {
    listen 127.0.0.1:$P_TLS ssl; root $T/www;
    ssl_certificate $T/srv.pem; ssl_certificate_key $T/srv.key;
    location /auth { return 200 "tls-auth=\$http_authorization\n"; }
  }
}
EOF
nginx -c "$T/nginx.conf" -p "$T" || skip_all "nginx does not start"

dnsmasq --keep-in-foreground --no-resolv --no-hosts --port=$P_DNS --listen-address=127.0.0.1 \
	--bind-interfaces --pid-file="$T/dnsmasq.pid" \
	--address=/allowed.test/127.0.0.1 --address=/other.allowed.test/127.0.0.1 \
	--address=/denied.test/127.0.0.1 --address=/rebind.test/127.0.0.1 \
	--address=/metadata.test/169.254.169.254 --address=/wild.test/127.0.0.1 \
	--address=/methods.test/127.0.0.1 --address=/secure.test/127.0.0.1 \
	--address=/tls.test/127.0.0.1 --address=/plain.test/127.0.0.1 \
	--address=/nx.test/ --address=/nx.internal/ 2>"$T/dnsmasq.log" &
pids+=($!)

# --- proxies -----------------------------------------------------------------
DNS="\"dns\": \"127.0.0.1:$P_DNS\""
cat >"$T/p1.json" <<EOF
{ "egress": [
    {"host": "allowed.test", "ports": [$P_HTTP, $P_RAW, $P_DEAD]},
    {"host": "nx.test", "ports": [$P_HTTP]},
    {"host": "other.allowed.test", "ports": [$P_HTTP]},
    {"host": "*.wild.test", "ports": [$P_HTTP]},
    {"host": "methods.test", "ports": [$P_HTTP], "methods": ["GET"]},
    {"host": "metadata.test", "ports": [80, $P_HTTP]},
    {"host": "tls.test", "ports": [$P_TLS]},
    {"host": "127.0.0.1", "ports": [$P_HTTP]},
    {"host": "::1", "ports": [$P_HTTP]} ],
  "allow_private": ["127.0.0.1/32", "::1/128"],
  "max_request_body": "1K", "max_response_body": "100K", $DNS }
EOF
cat >"$T/p2.json" <<EOF
{ "egress": [ {"host": "rebind.test", "ports": [$P_HTTP]},
              {"host": "127.0.0.1", "ports": [$P_HTTP]} ], $DNS }
EOF
cat >"$T/p3.json" <<EOF
{ "egress": [ {"host": "allowed.test", "ports": [$P_HTTP]} ],
  "allow_private": ["127.0.0.0/8"], "rate": "5/s", $DNS }
EOF
cat >"$T/p4.json" <<EOF
{ "egress": [ {"host": "allowed.test", "ports": [$P_HTTP]} ],
  "allow_private": ["127.0.0.0/8"], "bandwidth": "1M/s", $DNS }
EOF
cat >"$T/p5.json" <<EOF
{ "egress": [ {"host": "allowed.test", "ports": [$P_HTTP, $P_SINK]} ],
  "allow_private": ["127.0.0.0/8"], "egress_budget": "1M", $DNS }
EOF
echo "s3cr3t-file" >"$T/secret.txt"
cat >"$T/p6.json" <<EOF
{ "egress": [ {"host": "secure.test", "ports": [$P_TLS]},
              {"host": "plain.test", "ports": [$P_HTTP]} ],
  "allow_private": ["127.0.0.0/8"], "upstream_ca": "$T/ca.pem",
  "credentials": [
    {"host": "secure.test", "header": "Authorization", "value_env": "PX_TEST_TOKEN",
     "format": "Bearer %s", "upstream": "https"},
    {"host": "plain.test", "header": "X-Api-Key", "value_file": "$T/secret.txt",
     "upstream": "http"} ], $DNS }
EOF

wait_port() { # wait_port PORT: until something accepts on 127.0.0.1:PORT
	for _ in $(seq 100); do
		python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $1), timeout=1)" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

start_proxy() { # start_proxy NAME PORT
	PX_TEST_TOKEN=s3cr3t-env "$SA" "$T/$1.json" "$2" "$T/$1.events" >"$T/$1.out" 2>"$T/$1.err" &
	pids+=($!)
	for _ in $(seq 50); do
		grep -q READY "$T/$1.out" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
for i in 1 2 3 4 5 6; do
	pv=P$i
	start_proxy p$i "${!pv}" || skip_all "proxy p$i does not start: $(cat "$T/p$i.err")"
done
sleep 0.3

X1="-x http://127.0.0.1:$P1"
raw_line() { # raw_line PORT BYTES(printf format) -> first line of the answer
	python3 - "$1" "$2" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
data = b""
try:
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except Exception:
    pass
print(data.split(b"\r\n")[0].decode("latin-1"))
EOF
}
C="curl -sS --max-time 20"

# --- allowlist ---------------------------------------------------------------
out=$($C $X1 "http://allowed.test:$P_HTTP/index.html")
[ "$out" = hello ]
ok $? "allowed host reaches the origin"

hdr=$($C -i $X1 "http://denied.test:$P_HTTP/index.html")
echo "$hdr" | grep -q "^HTTP/1.1 403" && echo "$hdr" | grep -q "X-Sandcap-Deny: host-not-allowed"
ok $? "unlisted host: 403 with X-Sandcap-Deny"

out=$($C $X1 "http://a.wild.test:$P_HTTP/index.html")
[ "$out" = hello ]
ok $? "*.wild.test matches a subdomain"
code=$($C -o /dev/null -w '%{http_code}' $X1 "http://wild.test:$P_HTTP/index.html")
[ "$code" = 403 ]
ok $? "*.wild.test does not match wild.test itself"

hdr=$($C -i $X1 "http://allowed.test:$P_HTTP2/index.html")
echo "$hdr" | grep -q "X-Sandcap-Deny: port-not-allowed"
ok $? "unlisted port refused"

out=$($C $X1 "http://methods.test:$P_HTTP/index.html")
[ "$out" = hello ]
ok $? "listed method allowed"
hdr=$($C -i -X DELETE $X1 "http://methods.test:$P_HTTP/index.html")
echo "$hdr" | grep -q "X-Sandcap-Deny: method-not-allowed"
ok $? "unlisted method refused"

hdr=$($C -i $X1 "http://metadata.test:$P_HTTP/")
echo "$hdr" | grep -q "X-Sandcap-Deny: private-address"
ok $? "name resolving to 169.254.169.254 refused after resolution"
hdr=$($C -i -x "http://127.0.0.1:$P2" "http://rebind.test:$P_HTTP/")
echo "$hdr" | grep -q "X-Sandcap-Deny: private-address"
ok $? "allowed name resolving to 127.0.0.1 refused without allow_private"
hdr=$($C -i -x "http://127.0.0.1:$P2" "http://127.0.0.1:$P_HTTP/")
echo "$hdr" | grep -q "X-Sandcap-Deny: private-address"
ok $? "listed private IP literal refused without allow_private"
out=$($C $X1 "http://127.0.0.1:$P_HTTP/index.html")
[ "$out" = hello ]
ok $? "listed IP literal inside allow_private allowed"
out=$($C $X1 "http://[::1]:$P_HTTP/index.html")
[ "$out" = hello ]
ok $? "listed IPv6 literal inside allow_private allowed"
hdr=$($C -i -x "http://127.0.0.1:$P2" "http://[::ffff:127.0.0.1]:$P_HTTP/index.html")
echo "$hdr" | grep -q "X-Sandcap-Deny: ip-literal"
ok $? "IPv4-mapped IPv6 literal refused"
hdr=$($C -i $X1 "http://127.0.0.2:$P_HTTP/index.html")
echo "$hdr" | grep -q "X-Sandcap-Deny: ip-literal"
ok $? "unlisted IP literal refused"
# allow_private only lifts the private-address check for what a rule allows:
# p3 allows one name and 127.0.0.0/8, and no address at all
X3="-x http://127.0.0.1:$P3"
hdr=$($C -i $X3 -X POST --data x "http://127.0.0.1:80/")
echo "$hdr" | grep -q "^HTTP/1.1 403" && echo "$hdr" | grep -q "X-Sandcap-Deny: ip-literal"
ok $? "allow_private is no side door: POST http://127.0.0.1:80/ refused"
hdr=$($C -i $X3 -X DELETE "http://127.0.0.2/")
echo "$hdr" | grep -q "^HTTP/1.1 403" && echo "$hdr" | grep -q "X-Sandcap-Deny: ip-literal"
ok $? "allow_private is no side door: DELETE http://127.0.0.2/ refused"
hdr=$($C -i $X3 "http://127.0.0.1:$P_HTTP/index.html")
echo "$hdr" | grep -q "X-Sandcap-Deny: ip-literal"
ok $? "allow_private is no side door: not even GET on the allowed name's port"

# keep-alive: two requests, one connection
out=$($C -v $X1 "http://allowed.test:$P_HTTP/index.html" "http://other.allowed.test:$P_HTTP/index.html" 2>&1)
[ "$(echo "$out" | grep -c '^hello')" = 2 ] && echo "$out" | grep -q "Re-using existing connection"
ok $? "client keep-alive across two requests"

# pooled upstreams: separate client connections, one upstream connection per
# host; a request with a body opens its own; none after Connection: close
conn_of() { grep -F "GET $1 " "$T/access.log" | tail -1 | sed 's/.*conn=//'; }
for u in /index.html?pool1 /index.html?pool2; do $C $X1 "http://allowed.test:$P_HTTP$u" >/dev/null; done
$C $X1 "http://other.allowed.test:$P_HTTP/index.html?pool3" >/dev/null
a=$(conn_of "/index.html?pool1") b=$(conn_of "/index.html?pool2") o=$(conn_of "/index.html?pool3")
[ -n "$a" ] && [ "$a" = "$b" ] && [ -n "$o" ] && [ "$o" != "$a" ]
ok $? "plain requests on new client connections reuse the upstream connection of the same host only ($a $b $o)"

[ "$(raw_line $P1 "GET http://[127.0.0.1]:$P_HTTP/index.html HTTP/1.1\r\nHost: [127.0.0.1]:$P_HTTP\r\n\r\n")" = "HTTP/1.1 400 Bad Request" ]
ok $? "[127.0.0.1] (brackets around IPv4) refused with 400, not forwarded"

# Host rewritten from the target, hop-by-hop stripped
out=$($C $X1 -H "Connection: X-Foo" -H "X-Foo: 1" "http://allowed.test:$P_HTTP/host")
[ "$out" = "host=allowed.test" ]
ok $? "origin sees Host from the request target"

# --- response framing (a raw origin) -----------------------------------------
python3 - "$P_RAW" <<'PY' &
import socket, sys, threading
def serve(c):
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
            head, buf = buf.split(b"\r\n\r\n", 1)
            path = head.split(b" ")[1]
            if path == b"/chunked":
                c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                          b"3\r\nhel\r\n3;x=y\r\nlo\n\r\n0\r\nX-Trailer: 1\r\n\r\n")
            elif path == b"/close":
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nbye\n")
                return
            elif path == b"/sink":
                n = 0
                if b"chunked" in head.lower():
                    while not buf.endswith(b"\r\n0\r\n\r\n"):
                        d = c.recv(65536)
                        if not d:
                            return
                        buf += d
                    n = len(buf)
                else:
                    cl = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
                    while len(buf) < cl:
                        d = c.recv(65536)
                        if not d:
                            return
                        buf += d
                    n = cl
                buf = b""
                body = b"got=%d\n" % n
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            elif path == b"/smuggle":
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\nok")
            else:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nraw\n")
    finally:
        c.close()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
pids+=($!)
wait_port $P_RAW
R="http://allowed.test:$P_RAW"
out=$($C -v $X1 "$R/chunked" "$R/chunked" 2>&1)
[ "$(echo "$out" | grep -c '^hello')" = 2 ] && echo "$out" | grep -q "Re-using existing connection"
ok $? "chunked response relayed, connection kept alive after it"
out=$($C -v $X1 "$R/close" "$R/plain" 2>&1)
echo "$out" | grep -q '^bye' && echo "$out" | grep -q '^raw' && ! echo "$out" | grep -q "Re-using existing connection"
ok $? "close-delimited response relayed, client connection closed after it"
code=$($C -o /dev/null -w '%{http_code}' $X1 "$R/smuggle")
[ "$code" = 502 ]
ok $? "origin response with CL + TE refused with 502"
out=$(python3 - "$P1" "$P_RAW" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
r = b"GET http://allowed.test:%s/plain HTTP/1.1\r\nHost: allowed.test:%s\r\n\r\n" % (sys.argv[2].encode(), sys.argv[2].encode())
s.sendall(r + r.replace(b"/plain", b"/chunked"))
data = b""
while not data.endswith(b"X-Trailer: 1\r\n\r\n"):
    d = s.recv(65536)
    if not d:
        break
    data += d
print(data.count(b"HTTP/1.1 200"), b"raw" in data, b"hel" in data)
PY
)
[ "$out" = "2 True True" ]
ok $? "two pipelined requests answered in order ($out)"

# --- upstream failures and deadlines ------------------------------------------
hdr=$($C -i $X1 "http://allowed.test:$P_DEAD/")
echo "$hdr" | grep -q "^HTTP/1.1 502" && echo "$hdr" | grep -q "X-Sandcap-Deny: connect-failed"
ok $? "origin refusing the connection: 502"
hdr=$($C -i $X1 "http://nx.test:$P_HTTP/")
echo "$hdr" | grep -q "^HTTP/1.1 502" && echo "$hdr" | grep -q "X-Sandcap-Deny: dns-failure" &&
	echo "$hdr" | grep -q "nx.test does not resolve: no such name in the host's /etc/hosts or in DNS"
ok $? "name that does not resolve: 502 saying why"
sleep 0.2
grep -q '"event":"net.denied".*"detail":"nx.test does not resolve: no such name.*"reason":"dns-failure"' "$T/p1.events"
ok $? "... and recorded with the reason"
out=$(python3 - "$P1" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.sendall(b"GET http://allowed.test/ HTTP/1.1\r\nHo")  # and then nothing
t = time.time()
try:
    d = s.recv(4096)
except Exception:
    d = b""
print("closed" if not d else "answered", int(time.time() - t))
PY
)
set -- $out
[ "$1" = closed ] && [ "$2" -ge 8 ] && [ "$2" -le 20 ]
ok $? "a client that never finishes its head is dropped at the deadline ($out s)"
grep -q '"event":"net.denied".*"head_hex":"474554206874[0-9a-f]*".*"reason":"head-timeout"' "$T/p1.events"
ok $? "... and recorded as head-timeout, with the bytes it sent"

# --- strict parsing (raw bytes) ----------------------------------------------
raw() { # raw PORT BYTES(printf format) -> first line of the answer
	python3 - "$1" "$2" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
data = b""
try:
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except Exception:
    pass
print(data.split(b"\r\n")[0].decode("latin-1"))
EOF
}
H="http://allowed.test:$P_HTTP/index.html"
A="Host: allowed.test:$P_HTTP"
[ "$(raw $P1 "GET $H HTTP/1.1\r\nHost: evil.test\r\n\r\n")" = "HTTP/1.1 400 Bad Request" ]
ok $? "Host header disagreeing with the target: 400"
[ "$(raw $P1 "POST $H HTTP/1.1\r\n$A\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")" = "HTTP/1.1 400 Bad Request" ]
ok $? "smuggling: CL + TE refused with 400"
[ "$(raw $P1 "POST $H HTTP/1.1\r\n$A\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcd")" = "HTTP/1.1 400 Bad Request" ]
ok $? "smuggling: duplicate Content-Length refused with 400"
[ "$(raw $P1 "GET $H HTTP/1.1\n$A\n\n")" = "HTTP/1.1 400 Bad Request" ]
ok $? "smuggling: bare LF refused with 400"
[ "$(raw $P1 "GET $H HTTP/1.1\r\n$A\rX-A: b\r\n\r\n")" = "HTTP/1.1 400 Bad Request" ]
ok $? "smuggling: bare CR refused with 400"
[ "$(raw $P1 "GET $H HTTP/1.1\r\n$A\r\nX-A: b\r\n c\r\n\r\n")" = "HTTP/1.1 400 Bad Request" ]
ok $? "smuggling: obs-fold refused with 400"
[ "$(raw $P1 "GET /index.html HTTP/1.1\r\n$A\r\n\r\n")" = "HTTP/1.1 400 Bad Request" ]
ok $? "origin-form request refused"
sleep 0.2
grep '"reason":"bad-request"' "$T/p1.events" | grep '"detail":"both Content-Length and Transfer-Encoding"' |
	grep '"method":"POST"' | grep '"host":"allowed.test"' | grep -q '"path":"/index.html"'
ok $? "a smuggling attempt is recorded with the request it asked for"
grep '"reason":"bad-request"' "$T/p1.events" | grep '"detail":"bare LF"' | grep -q '"head_hex":"474554'
ok $? "an unparsable head is recorded with its first bytes in hex"
[ "$(raw $P1 "POST $H HTTP/1.1\r\n$A\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")" = "HTTP/1.1 400 Bad Request" ]
sleep 0.2
grep '"event":"net.denied"' "$T/p1.events" | grep -q '"detail":"malformed chunked request body"'
ok $? "a malformed chunked body: 400 and a net.denied record"
hdr=$($C -i -X POST --data x $X1 "http://methods.test:$P_HTTP/index.html")
echo "$hdr" | grep -q "X-Sandcap-Deny: method-not-allowed"
ok $? "a method outside a rule says method-not-allowed"

# --- CONNECT -----------------------------------------------------------------
out=$($C -p $X1 "http://allowed.test:$P_HTTP/index.html")
[ "$out" = hello ]
ok $? "CONNECT tunnel (curl --proxytunnel)"
out=$($C --cacert "$T/ca.pem" $X1 "https://tls.test:$P_TLS/auth")
[ "$out" = "tls-auth=" ]
ok $? "https through a CONNECT tunnel, TLS end to end"
code=$($C -o /dev/null -w '%{http_code}' -p $X1 "http://denied.test:$P_HTTP/" 2>/dev/null)
[ "$code" = 403 ] || [ "$code" = 000 ]
hdr=$(curl -sS -i --max-time 5 -p $X1 "http://denied.test:$P_HTTP/" 2>&1)
echo "$hdr" | grep -q "403"
ok $? "CONNECT to unlisted host refused"

# clients that vanish mid-transfer (SIGPIPE from splice must not kill the worker)
for _ in 1 2 3 4 5; do
	curl -s --max-time 20 -p $X1 "http://allowed.test:$P_HTTP/big.bin" 2>/dev/null | head -c 1000 >/dev/null
	curl -s --max-time 20 --limit-rate 100k -p $X1 "http://allowed.test:$P_HTTP/big.bin" -o /dev/null --max-time 0.3 2>/dev/null
done
out=$($C $X1 "http://allowed.test:$P_HTTP/index.html")
[ "$out" = hello ]
ok $? "proxy survives clients that disconnect in the middle of a tunnel"

# A client that stops reading fills the tunnel's pipe: the worker must wait
# for it to drain, not be told again and again that the origin is readable.
w1=$(awk '/READY/ {print $2}' "$T/p1.out")
out=$(python3 - "$P1" "$P_HTTP" "$w1" <<'EOF'
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"CONNECT allowed.test:%s HTTP/1.1\r\n\r\n" % sys.argv[2].encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
s.sendall(b"GET /huge.bin HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
time.sleep(1)  # every buffer on the way fills up
def ticks():  # utime + stime of the worker
    return sum(int(x) for x in open("/proc/%s/stat" % sys.argv[3]).read().rsplit(")", 1)[1].split()[11:13])
t0 = ticks()
time.sleep(2)
used = ticks() - t0
got = 0
while got < 1 << 20:
    got += len(s.recv(65536))
print(used, got >= 1 << 20)
EOF
)
hz=$(getconf CLK_TCK)
[ "${out#* }" = True ] && [ "${out%% *}" -lt $((hz / 5)) ]
ok $? "a tunnel whose client stops reading leaves the worker idle ($out: CPU ticks in 2 s at $hz Hz, then it reads on)"

# --- python clients ----------------------------------------------------------
out=$(python3 - "$P1" "$P_HTTP" <<'EOF'
import sys, urllib.request
h = urllib.request.ProxyHandler({"http": "http://127.0.0.1:%s" % sys.argv[1]})
print(urllib.request.build_opener(h).open("http://allowed.test:%s/index.html" % sys.argv[2], timeout=10).read().decode().strip())
EOF
)
[ "$out" = hello ]
ok $? "python3 urllib through the proxy"
if python3 -c "import requests" 2>/dev/null; then
	out=$(python3 - "$P1" "$P_HTTP" <<'EOF'
import sys, requests
p = "http://127.0.0.1:%s" % sys.argv[1]
r = requests.get("http://allowed.test:%s/index.html" % sys.argv[2], proxies={"http": p}, timeout=10)
d = requests.get("http://denied.test:%s/" % sys.argv[2], proxies={"http": p}, timeout=10)
print(r.text.strip(), d.status_code, d.headers.get("X-Sandcap-Deny"))
EOF
)
	[ "$out" = "hello 403 host-not-allowed" ]
	ok $? "python3-requests through the proxy"
else
	n=$((n + 1))
	echo "ok $n - python3-requests # SKIP module not installed"
fi

# --- body limits -------------------------------------------------------------
code=$($C -o /dev/null -w '%{http_code}' $X1 --data-binary @"$T/2k.txt" "http://allowed.test:$P_HTTP/upload")
[ "$code" = 413 ]
ok $? "request body over max_request_body (Content-Length): 413"
code=$($C -o /dev/null -w '%{http_code}' $X1 -H "Transfer-Encoding: chunked" --data-binary @"$T/2k.txt" "http://allowed.test:$P_HTTP/upload")
[ "$code" = 413 ]
ok $? "request body over max_request_body (chunked): 413"
out=$($C $X1 --data-binary "small" "http://allowed.test:$P_HTTP/upload")
[ "$out" = up ]
ok $? "small POST body forwarded"
size=$(curl -s --max-time 10 $X1 "http://allowed.test:$P_HTTP/mid.bin" | wc -c)
[ "$size" -le $((100 * 1024)) ] && [ "$size" -gt 0 ]
ok $? "response over max_response_body cut ($size bytes delivered)"
sleep 0.2
grep -q '"limit":"max_response_body"' "$T/p1.events"
ok $? "response cut logged as limit.hit"

cat >"$T/p8.json" <<EOF
{ "egress": [ {"host": "allowed.test", "ports": [$P_RAW]} ], "allow_private": ["127.0.0.0/8"], $DNS }
EOF
start_proxy p8 $((BASE + 17))
X8="-x http://127.0.0.1:$((BASE + 17))"
out=$($C -v $X8 --data-binary @"$T/upload.bin" "http://allowed.test:$P_RAW/sink" 2>&1)
echo "$out" | grep -q "^got=4194304" && echo "$out" | grep -qi "Expect: 100-continue" &&
	echo "$out" | grep -q "HTTP/1.1 100 Continue"
ok $? "4 MiB POST with Expect: 100-continue forwarded"
out=$($C $X8 -H "Transfer-Encoding: chunked" --data-binary @"$T/upload.bin" "http://allowed.test:$P_RAW/sink")
[ "${out%%=*}" = got ] && [ "${out#got=}" -gt 4194304 ]
ok $? "4 MiB chunked POST forwarded"
sleep 0.2
grep -q '"bytes_out":419[0-9][0-9][0-9][0-9],' "$T/p8.events"
ok $? "upload bytes counted in net.request"

# --- rate --------------------------------------------------------------------
codes=""
for _ in $(seq 10); do
	codes="$codes $($C -o /dev/null -w '%{http_code}' -x "http://127.0.0.1:$P3" "http://allowed.test:$P_HTTP/index.html")"
done
n200=$(echo "$codes" | tr ' ' '\n' | grep -c 200)
n429=$(echo "$codes" | tr ' ' '\n' | grep -c 429)
[ "$n429" -ge 1 ] && [ "$n200" -ge 5 ]
ok $? "rate 5/s: 429 after the burst ($codes)"
sleep 0.2
grep '"event":"net.denied"' "$T/p3.events" | grep -q '"reason":"rate"'
ok $? "a request over the rate logged as one net.denied (reason rate)"
! grep '"status":429' "$T/p3.events" | grep -q '"event":"net.request"'
ok $? "... and no net.request of its own"

# --- bandwidth ---------------------------------------------------------------
t0=$(date +%s.%N)
size=$($C -x "http://127.0.0.1:$P4" "http://allowed.test:$P_HTTP/big.bin" | wc -c)
t1=$(date +%s.%N)
dt=$(echo "$t1 - $t0" | bc)
echo "# forward: 4 MiB at 1M/s took ${dt}s"
[ "$size" = $((4 * 1024 * 1024)) ] && [ "$(echo "$dt >= 3.0" | bc)" = 1 ]
ok $? "bandwidth 1M/s paces a 4 MiB download (${dt}s)"
t0=$(date +%s.%N)
size=$($C -p -x "http://127.0.0.1:$P4" "http://allowed.test:$P_HTTP/big.bin" | wc -c)
t1=$(date +%s.%N)
dt=$(echo "$t1 - $t0" | bc)
[ "$size" = $((4 * 1024 * 1024)) ] && [ "$(echo "$dt >= 3.0" | bc)" = 1 ]
ok $? "bandwidth 1M/s paces a 4 MiB tunnel download (${dt}s)"
sleep 0.2
[ "$(grep -c '"limit":"bandwidth"' "$T/p4.events")" = 2 ]
ok $? "bandwidth pacing logged once per connection"
w4=$(awk '/READY/ {print $2}' "$T/p4.out")
ticks=$(awk '{print $14 + $15}' /proc/$w4/stat)
hz=$(getconf CLK_TCK)
# ~8 s of paced transfer: a worker that spins instead of sleeping burns ~8 s of CPU
[ "$ticks" -lt $((3 * hz)) ]
ok $? "paced transfers sleep instead of spinning (worker CPU $ticks ticks at $hz Hz)"

# --- egress budget -----------------------------------------------------------
# a sink that reads forever and never answers: only the budget can end the upload
python3 - "$P_SINK" <<'PY' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(4)
while True:
    c, _ = s.accept()
    while c.recv(65536):
        pass
    c.close()
PY
pids+=($!)
wait_port $P_SINK
out=$(python3 - "$P5" "$P_SINK" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test:%s\r\n\r\n" % (sys.argv[2].encode(), sys.argv[2].encode()))
head = s.recv(4096)
sent = 0
try:
    while sent < 8 * 1024 * 1024:
        sent += s.send(b"x" * 65536)
    print("not-cut", sent)
except (BrokenPipeError, ConnectionResetError):
    print("cut", sent)
PY
)
sleep 0.3
echo "# $out"
[ "${out%% *}" = cut ] && grep -q '"reason":"egress_budget"' "$T/p5.events" &&
	grep -q '"bytes_out":1048576,' "$T/p5.events"
ok $? "egress budget (1M) cuts an upload tunnel at exactly 1 MiB"
grep -q '"limit":"egress_budget"' "$T/p5.events"
ok $? "egress budget logged as limit.hit"

# --- credentials ---------------------------------------------------------------
out=$($C -x "http://127.0.0.1:$P6" -H "Authorization: agent-value" "http://secure.test:$P_TLS/auth")
[ "$out" = "tls-auth=Bearer s3cr3t-env" ]
ok $? "credential injected over verified upstream TLS, replacing the agent's header"
size=$($C -x "http://127.0.0.1:$P6" "http://secure.test:$P_TLS/big.bin" | wc -c)
[ "$size" = $((4 * 1024 * 1024)) ] && cmp -s <($C -x "http://127.0.0.1:$P6" "http://secure.test:$P_TLS/big.bin") "$T/www/big.bin"
ok $? "4 MiB download over proxy-originated TLS arrives intact"
out=$($C -x "http://127.0.0.1:$P6" -H "X-Api-Key: mine" "http://plain.test:$P_HTTP/key")
[ "$out" = "key=s3cr3t-file" ]
ok $? "plain-http credential from value_file set, the agent's value replaced"
sleep 0.2
grep -q 'auth="Bearer s3cr3t-env"' "$T/access.log" && grep -q 'key="s3cr3t-file"' "$T/access.log" &&
	! grep -q 'mine' "$T/access.log" && ! grep -q 'agent-value' "$T/access.log"
ok $? "credentials reach the origin (access log), agent values never do"
hdr=$(curl -sS -i --max-time 5 -p -x "http://127.0.0.1:$P6" "http://secure.test:$P_TLS/" 2>&1)
echo "$hdr" | grep -q "403" 
ok $? "CONNECT to a credentialed host refused"
curl -sS -i --max-time 5 -x "http://127.0.0.1:$P6" "http://secure.test:$P_TLS/auth" -o /dev/null
! grep -q "s3cr3t" "$T/p6.events" && grep -q "secure.test" "$T/p6.events"
ok $? "secret never appears in events"
PX_TEST_TOKEN= env -u PX_TEST_TOKEN "$SA" "$T/p6.json" $((BASE + 30)) >/dev/null 2>&1
[ $? = 3 ]
ok $? "missing secret: px_spawn fails with ENOKEY"
cat >"$T/p7.json" <<EOF
{ "egress": [ {"host": "secure.test", "ports": [$P_TLS]} ], "allow_private": ["127.0.0.0/8"],
  "credentials": [ {"host": "secure.test", "header": "Authorization", "value_env": "PX_TEST_TOKEN",
  "upstream": "https"} ], $DNS }
EOF
start_proxy p7 $((BASE + 16)) || echo "# proxy p7 did not say READY: $(cat "$T/p7.err")"
hdr=$($C -i -x "http://127.0.0.1:$((BASE + 16))" "http://secure.test:$P_TLS/auth" 2>&1)
echo "$hdr" | grep -q "X-Sandcap-Deny: upstream-tls"
rc=$?
[ $rc = 0 ] || { printf '%s\n' "$hdr" "--- p7.err:" "$(cat "$T/p7.err")" | sed 's/^/# /'; }
ok $rc "upstream certificate from an untrusted CA refused"

# --- names from the host's /etc/hosts, and localhost -----------------------------
# The worker reads /etc/hosts before it is confined. The test's own hosts file
# is bind-mounted over /etc/hosts in a private mount namespace (unshare -m):
# the real file is never touched.
hosts_sum=$(sha256sum /etc/hosts 2>&1)
printf '# test hosts\n127.0.0.1 api.internal\n169.254.169.254 meta.internal\n' >"$T/hosts"
cat >"$T/p9.json" <<EOF
{ "egress": [ {"host": "api.internal", "ports": [$P_HTTP]}, {"host": "meta.internal", "ports": [$P_HTTP]},
              {"host": "localhost", "ports": [$P_HTTP]}, {"host": "app.localhost", "ports": [$P_HTTP]},
              {"host": "nx.internal", "ports": [$P_HTTP]},
              {"host": "127.0.0.0/30", "ports": [$P_HTTP], "methods": ["GET"]} ],
  "allow_private": ["127.0.0.0/8", "::1/128"], $DNS }
EOF
P9=$((BASE + 18))
PX_TEST_TOKEN= "$top/tests/helpers/with-hosts-file" \
	"$T/hosts" "$SA" "$T/p9.json" "$P9" "$T/p9.events" >"$T/p9.out" 2>"$T/p9.err" &
pids+=($!)
for _ in $(seq 300); do grep -q READY "$T/p9.out" 2>/dev/null && break; sleep 0.1; done
X9="-x http://127.0.0.1:$P9"
out=$($C $X9 "http://api.internal:$P_HTTP/index.html")
[ "$out" = hello ]
ok $? "a name from the host's /etc/hosts resolves (api.internal)"
hdr=$($C -i $X9 "http://meta.internal:$P_HTTP/")
echo "$hdr" | grep -q "X-Sandcap-Deny: private-address"
ok $? "the private-range rules still apply to a name from /etc/hosts"
out=$($C $X9 "http://localhost:$P_HTTP/index.html")
[ "$out" = hello ]
ok $? "localhost resolves (RFC 6761) although the hosts file does not list it"
out=$($C $X9 "http://app.localhost:$P_HTTP/index.html")
[ "$out" = hello ]
ok $? "a name under .localhost resolves to loopback"
hdr=$($C -i $X9 "http://nx.internal:$P_HTTP/")
echo "$hdr" | grep -q "X-Sandcap-Deny: dns-failure" && echo "$hdr" | grep -q "nx.internal does not resolve"
ok $? "a name neither in /etc/hosts nor in DNS: 502 saying so"
out=$($C $X9 "http://127.0.0.1:$P_HTTP/index.html")
[ "$out" = hello ]
ok $? "a rule naming a CIDR allows an address inside it"
hdr=$($C -i $X9 -X POST --data x "http://127.0.0.1:$P_HTTP/index.html")
echo "$hdr" | grep -q "X-Sandcap-Deny: method-not-allowed"
ok $? "... with its methods: POST refused as method-not-allowed"
[ "$(sha256sum /etc/hosts 2>&1)" = "$hosts_sum" ] && ! grep -qs api.internal /etc/hosts
ok $? "the real /etc/hosts is untouched"

# --- upstream TLS against the system store, read lazily ---------------------------
# A system store holding only the test CA: a hashed directory (openssl rehash)
# whose links point into another directory, bind-mounted over /etc/ssl/certs.
# The confined worker must read both, one CA at a time, at verification.
mkdir -p "$T/store" "$T/cas"
cp "$T/ca.pem" "$T/cas/sandcap-test-ca.pem"
ln -s "$T/cas/sandcap-test-ca.pem" "$T/store/sandcap-test-ca.pem"
openssl rehash "$T/store" 2>/dev/null || c_rehash "$T/store" >/dev/null 2>&1
chmod 755 "$T/store" "$T/cas"
chmod 644 "$T/cas/sandcap-test-ca.pem"
cat >"$T/p10.json" <<EOF
{ "egress": [ {"host": "secure.test", "ports": [$P_TLS]} ], "allow_private": ["127.0.0.0/8"],
  "credentials": [ {"host": "secure.test", "header": "Authorization", "value_env": "PX_TEST_TOKEN",
  "format": "Bearer %s", "upstream": "https"} ], $DNS }
EOF
P10=$((BASE + 19))
PX_TEST_TOKEN=s3cr3t-env unshare -m sh -c 'mount --bind "$1" /etc/ssl/certs && exec "$2" "$3" "$4" "$5"' sh \
	"$T/store" "$SA" "$T/p10.json" "$P10" "$T/p10.events" >"$T/p10.out" 2>"$T/p10.err" &
pids+=($!)
for _ in $(seq 300); do grep -q READY "$T/p10.out" 2>/dev/null && break; sleep 0.1; done
out=$($C -x "http://127.0.0.1:$P10" "http://secure.test:$P_TLS/auth")
[ "$out" = "tls-auth=Bearer s3cr3t-env" ]
ok $? "upstream TLS verified against the system store's hashed directory, read by the confined worker"
w10=$(awk '/READY/ {print $2}' "$T/p10.out")
[ -n "$w10" ] && [ "$(awk '/^Seccomp:/ {print $2}' /proc/$w10/status)" = 2 ]
ok $? "... which runs under its seccomp filter"

# --- connections past the worker's maximum ------------------------------------------
out=$(python3 - "$((BASE + 17))" <<'EOF'
import socket, sys, time
socks = []
for _ in range(530):
    socks.append(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5))
time.sleep(1.5)
for s in socks:
    s.close()
print("done")
EOF
)
sleep 1.5
grep -q '"limit":"connections"' "$T/p8.events" && [ "$(grep -c '"limit":"connections"' "$T/p8.events")" -le 3 ]
ok $? "connections refused at the cap are recorded, as one limit.hit per second ($(grep -o '"detail":"[0-9]* connections refused[^"]*"' "$T/p8.events" | head -1))"

# --- the worker itself -------------------------------------------------------
wpid=$(awk '/READY/ {print $2}' "$T/p1.out")
st=/proc/$wpid/status
[ "$(awk '/^Uid:/ {print $2}' $st)" != 0 ] && [ "$(awk '/^Uid:/ {print $3}' $st)" != 0 ]
ok $? "worker uid is not 0 ($(awk '/^Uid:/ {print $2}' $st))"
[ "$(awk '/^CapEff:/ {print $2}' $st)" = 0000000000000000 ] &&
	[ "$(awk '/^CapBnd:/ {print $2}' $st)" = 0000000000000000 ] &&
	[ "$(awk '/^CapPrm:/ {print $2}' $st)" = 0000000000000000 ]
ok $? "worker has no capabilities (effective, permitted, bounding)"
[ "$(awk '/^Seccomp:/ {print $2}' $st)" = 2 ]
ok $? "worker runs under a seccomp filter"
[ "$(awk '/^NoNewPrivs:/ {print $2}' $st)" = 1 ]
ok $? "worker has no_new_privs"
[ "$(tr '\0' '\n' </proc/$wpid/environ | grep -c .)" = 0 ]
ok $? "worker environment is empty"
! ls -l /proc/$wpid/fd | awk 'NR > 1 {print $NF}' | grep -v -e '^/dev/null$' -e '^socket:' -e '^anon_inode:' -e '^pipe:'
ok $? "worker holds no file but /dev/null (sockets, pipes, epoll only)" 
! grep -q '"event":"invalid"' "$T"/p*.events
ok $? "every event passes px_event_parse"
grep -q '"event":"net.tunnel.close"' "$T/p1.events"
ok $? "tunnel close logged"

kill "${pids[1]}" # p1's launcher: closes the event socket
sleep 0.5
[ ! -d /proc/$wpid ] || grep -q zombie /proc/$wpid/status
ok $? "worker exits when the supervisor closes the event socket"

w2=$(awk '/READY/ {print $2}' "$T/p2.out")
kill -TERM "$w2"
sleep 0.5
[ ! -d /proc/$w2 ] || grep -q zombie /proc/$w2/status
ok $? "worker exits on SIGTERM"

echo "1..$n"
[ $fails = 0 ]
