#!/usr/bin/env bash
# Ordinary programs serve themselves on the sandbox's own loopback: TCP
# bind, listen, accept and connect on 127.0.0.1 and ::1 (a socket server,
# http.server, asyncio), with and without egress; the proxy's listener keeps
# its port (EADDRINUSE); a server on the host's loopback stays out of reach.
# With net.listen false no socket may listen (TCP, its autobind, unix), TCP
# bind is refused, and each refused listen is a syscall.denied.
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures python3

mkdir -p "$T/w"
cat >"$T/w/serve.py" <<'EOF'
import asyncio, errno, http.server, socket, sys, threading, urllib.request

def echo(fam, addr):
    s = socket.socket(fam); s.bind((addr, 0)); s.listen()
    port = s.getsockname()[1]
    def serve():
        c, _ = s.accept(); c.sendall(c.recv(10)); c.close()
    t = threading.Thread(target=serve); t.start()
    c = socket.create_connection((addr, port), timeout=5); c.sendall(b"ping")
    print(fam.name, c.recv(10).decode()); t.join()

echo(socket.AF_INET, "127.0.0.1")
echo(socket.AF_INET6, "::1")
a = socket.socket(); a.listen(); print("autobind", a.getsockname()[1] > 0)
h = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=h.handle_request).start()
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
print("http.server", opener.open("http://127.0.0.1:%d/" % h.server_port).status)

async def main():
    async def handle(r, w):
        w.write(await r.read(4)); await w.drain(); w.close()
    srv = await asyncio.start_server(handle, "localhost", 0)
    port = srv.sockets[0].getsockname()[1]
    r, w = await asyncio.open_connection("localhost", port)
    w.write(b"pong"); await w.drain()
    print("asyncio", (await r.read(4)).decode()); w.close(); srv.close()
asyncio.run(main())

if len(sys.argv) > 1:
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", int(sys.argv[1]))); print("proxy port: bound")
    except OSError as e:
        print("proxy port:", errno.errorcode[e.errno])
    c = socket.socket(); c.settimeout(3)
    try:
        c.connect(("127.0.0.1", int(sys.argv[2]))); print("host server: reached")
    except OSError as e:
        print("host server:", errno.errorcode.get(e.errno, e))
EOF
chmod -R a+rX "$T/w"

# A server on the host's loopback, which the sandbox must not reach.
hport=$(free_port)
python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
c, _ = s.accept(); open(sys.argv[2], "w").write("hit")' "$hport" "$T/host.hit" &
PIDS+=($!)

grant="\"fs\": {\"grants\": [{\"path\": \"$T/w\", \"mode\": \"ro\", \"at\": \"/w\"}]}"
policy none "{\"version\": 1, $grant}"
policy egress "{\"version\": 1, $grant, \"net\": {\"egress\": [{\"host\": \"example.com\", \"ports\": [443]}]}}"
policy nolisten "{\"version\": 1, $grant, \"net\": {\"listen\": false}}"

for p in none egress; do
	out=$("$SANDCAP" run --quiet --policy "$T/$p.json" -- python3 /w/serve.py 3128 "$hport" 2>&1)
	expect_match "$p: a TCP server on 127.0.0.1 answers" "$out" "AF_INET ping"
	expect_match "$p: ... and on ::1" "$out" "AF_INET6 ping"
	expect_match "$p: listen without bind gets a port" "$out" "autobind True"
	expect_match "$p: http.server serves urllib" "$out" "http.server 200"
	expect_match "$p: asyncio's start_server on localhost" "$out" "asyncio pong"
	expect_match "$p: the host's loopback server is not reached" "$out" "host server: (ECONNREFUSED|ETIMEDOUT|ENETUNREACH|timed out)"
done
expect_match "egress: the proxy's port is taken (EADDRINUSE)" "$out" "proxy port: EADDRINUSE"
check "host: its loopback server saw no connection" test ! -e "$T/host.hit"

out=$("$SANDCAP" run --quiet --audit "$T/nl.jsonl" --policy "$T/nolisten.json" -- python3 -c '
import errno, socket
def t(name, f):
    try:
        f(); print(name, "ok")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
t("bind", lambda: socket.socket().bind(("127.0.0.1", 0)))
t("bind6", lambda: socket.socket(socket.AF_INET6).bind(("::1", 0)))
t("udp-bind", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).bind(("127.0.0.1", 0)))
t("autobind", lambda: socket.socket().listen())
u = socket.socket(socket.AF_UNIX); u.bind("/tmp/u.sock")
t("unix", lambda: u.listen())
t("connect-out", lambda: socket.create_connection(("127.0.0.1", 9), timeout=2))' 2>&1)
expect_match "net.listen false: TCP bind is EACCES" "$out" "bind EACCES"
expect_match "... on ::1 too" "$out" "bind6 EACCES"
expect_match "... a UDP bind is not listening: it works" "$out" "udp-bind ok"
expect_eq "... each refused TCP bind is a syscall.denied, the UDP one is not" \
	"$(grep -c '"event":"syscall.denied".*"syscall":"bind"' "$T/nl.jsonl")" 2
expect_match "... listen without bind is EPERM" "$out" "autobind EPERM"
expect_match "... a unix socket may not listen either" "$out" "unix EPERM"
expect_match "... a connect is still the netns's to refuse" "$out" "connect-out ECONNREFUSED"
expect_eq "... each refused listen is a syscall.denied" \
	"$(grep -c '"event":"syscall.denied".*"syscall":"listen"' "$T/nl.jsonl")" 2
expect_match "check says what the agent may listen on" \
	"$("$SANDCAP" check --policy "$T/none.json")" "listening: allowed, TCP and unix sockets"
expect_match "check says net.listen false" \
	"$("$SANDCAP" check --policy "$T/nolisten.json")" "listening: refused"

finish
