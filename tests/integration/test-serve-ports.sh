#!/usr/bin/env bash
# net.serve: a server the agent runs on a named port is reached from the
# host through the address sandcap prints (127.0.0.1, a port the kernel
# picks unless host_port fixes it), each connection one net.inbound record
# whose bytes are the client's; a port not named has no listener on the
# host; net.listen false with net.serve is refused at the check, "bind"
# "0.0.0.0" (a container's) at the run's setup; a burst of
# connections loses no record (itemised or counted in limit.hit); the
# relay's end leaves no process and no listening port behind.
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures python3 curl

mkdir -p "$T/w"
head -c 300000 /dev/urandom >"$T/w/big.bin"
cat >"$T/w/serve.py" <<'EOF'
import http.server, socket, sys, threading
class H(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory="/w", **k)
    def log_message(self, *a):
        pass
    def do_GET(self):
        if self.path == "/quit":
            self.send_response(200); self.send_header("Content-Length", "3"); self.end_headers()
            self.wfile.write(b"bye")
            threading.Thread(target=srv.shutdown).start()
            return
        super().do_GET()
srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
# a server on a port not named: nothing outside may reach it
other = socket.socket(); other.bind(("127.0.0.1", int(sys.argv[2]))); other.listen()
def hidden():
    c, _ = other.accept(); print("hidden port reached", flush=True)
threading.Thread(target=hidden, daemon=True).start()
print("serving", flush=True)
srv.serve_forever()
print("stopped", flush=True)
EOF
chmod -R a+rX "$T/w"

fixed=$(free_port)
grant="\"fs\": {\"grants\": [{\"path\": \"$T/w\", \"mode\": \"ro\", \"at\": \"/w\"}]}"
policy serve "{\"version\": 1, $grant, \"limits\": {\"wall\": \"120s\"}, \"net\": {\"serve\": [8000, {\"port\": 8001, \"host_port\": $fixed}]}}"
policy both "{\"version\": 1, \"net\": {\"listen\": false, \"serve\": [8000]}}"

# ---- the check ----
out=$("$SANDCAP" check --policy "$T/serve.json" 2>&1)
expect_match "check says which ports are served, and where a fixed one is" "$out" \
	"served to the host: port 8000, port 8001 as 127\\.0\\.0\\.1:$fixed"
out=$("$SANDCAP" check --policy "$T/both.json" 2>&1)
rc=$?
expect_eq "net.listen false with net.serve: refused at the check" "$rc" 125
expect_match "... naming the key and what it needs" "$out" \
	'\$\.net\.serve: net\.serve needs net\.listen true .* but net\.listen is false'
out=$("$SANDCAP" run --quiet --policy "$T/both.json" -- true 2>&1)
expect_eq "... and at run" "$?" 125
# every address: only a container's own network namespace (docs/oci.md)
policy any "{\"version\": 1, \"net\": {\"serve\": [{\"port\": 8000, \"bind\": \"0.0.0.0\"}]}}"
out=$("$SANDCAP" check --policy "$T/any.json" 2>&1)
expect_match "check says where a port bound to 0.0.0.0 is served" "$out" \
	"served to the host: port 8000 as 0\\.0\\.0\\.0:8000"
out=$("$SANDCAP" run --quiet --policy "$T/any.json" -- true 2>&1)
expect_eq "bind 0.0.0.0 in a run: refused at setup" "$?" 125
expect_match "... saying why" "$out" \
	'net\.serve port 8000: "bind": "0\.0\.0\.0" is only for a container in a network namespace of its own'

# ---- a run that serves ----
"$SANDCAP" run --audit "$T/a.jsonl" --policy "$T/serve.json" -- python3 /w/serve.py 8000 8002 \
	>"$T/out" 2>"$T/err" &
sup=$!
for _ in $(seq 100); do
	grep -q serving "$T/out" 2>/dev/null && break
	sleep 0.1
done
port=$(sed -n 's/^sandcap: port 8000 served at 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/err")
port2=$(sed -n 's/^sandcap: port 8001 served at 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/err")
check "the run prints where port 8000 is served" test -n "$port"
expect_eq "... and port 8001 at its host_port" "$port2" "$fixed"

got=$(curl -s --noproxy '*' -m 10 -o "$T/got.bin" -w '%{http_code} %{size_request} %{size_header} %{size_download}' \
	"http://127.0.0.1:$port/big.bin")
read -r code req hdr body <<<"$got"
expect_eq "the host fetches a file from the server inside" "$code" 200
check "... byte for byte" cmp -s "$T/w/big.bin" "$T/got.bin"

relay=$(pgrep -P "$sup" -f '^sandcap-proxy relay')
check "the relay runs beside the sandbox" test -n "$relay"
listens=$(ss -Hltnp 2>/dev/null | grep -c "pid=$relay,")
expect_eq "... listening on the named ports only" "$listens" 2
expect_eq "... as nobody" "$(stat -c %u /proc/"$relay")" 65534
expect_match "... on the host's loopback only" "$(ss -Hltn "( sport = :$port )" | awk '{print $4}')" \
	"^127\\.0\\.0\\.1:$port\$"

# port 8001: named, nothing listens inside
curl -s --noproxy '*' -m 5 -o /dev/null "http://127.0.0.1:$port2/"
# 52: closed with no reply; 56: reset, the request unread
expect_match "a named port nothing listens on inside: the client gets nothing" "$?" '^5[26]$' 

# many connections, some at once: every one a record, or counted
n=500
seq $n | xargs -P 8 -I{} curl -s --noproxy '*' -m 10 -o /dev/null "http://127.0.0.1:$port/serve.py"
curl -s --noproxy '*' -m 5 "http://127.0.0.1:$port/quit" >/dev/null
wait "$sup"
expect_eq "the run ends when the server does" "$?" 0

check "the log verifies" eval "\"\$SANDCAP\" audit verify \"\$T/a.jsonl\" >/dev/null"
expect_match "sandbox.start names where each port is served" "$(grep '"event":"sandbox.start"' "$T/a.jsonl")" \
	"\"serve\":\\{\"8000\":\"127\\.0\\.0\\.1:$port\",\"8001\":\"127\\.0\\.0\\.1:$fixed\"\\}"
big=$(grep '"event":"net.inbound"' "$T/a.jsonl" | head -1)
expect_match "the first connection's record: peer, ports, result" "$big" \
	"\"host_port\":$port,\"peer\":\"127\\.0\\.0\\.1:[0-9]+\",\"port\":8000,\"result\":\"ok\""
expect_match "... bytes in: the request curl sent" "$big" "\"bytes_in\":$req,"
expect_match "... bytes out: the head and body curl got" "$big" "\"bytes_out\":$((hdr + body)),"
expect_match "the unserved port's connection is recorded refused" \
	"$(grep '"event":"net.inbound"' "$T/a.jsonl" | grep '"port":8001')" '"result":"refused"'
itemised=$(grep '"event":"net.inbound"' "$T/a.jsonl" | grep -c '"port":8000')
folded=$(grep '"event":"limit.hit"' "$T/a.jsonl" | grep '"limit":"net.inbound"' |
	sed -n 's/.*"suppressed":\([0-9]*\).*/\1/p' | paste -sd+ | bc)
expect_eq "$((n + 2)) connections to port 8000: each recorded or counted ($itemised + ${folded:-0})" \
	"$((itemised + ${folded:-0}))" "$((n + 2))"
check "... past the burst, folded into limit.hit" test "${folded:-0}" -gt 0
expect_no_match "the port not named was never reached" "$(cat "$T/out")" "hidden port reached"

check "the relay is gone" test ! -e "/proc/$relay"
curl -s --noproxy '*' -m 3 -o /dev/null "http://127.0.0.1:$port/"
expect_eq "... and its ports are closed" "$?" 7
check "... nothing listens on them" test -z "$(ss -Hltn "( sport = :$port or sport = :$fixed )")"

# a relay that dies: recorded, its ports closed, the sandbox goes on
policy short "{\"version\": 1, \"net\": {\"serve\": [8000]}}"
"$SANDCAP" run --quiet --audit "$T/k.jsonl" --policy "$T/short.json" -- sleep 3 2>"$T/k.err" &
sup=$!
for _ in $(seq 100); do
	relay=$(pgrep -P "$sup" -f '^sandcap-proxy relay') && break
	sleep 0.1
done
kport=$(sed -n 's/^sandcap: port 8000 served at 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/k.err")
kill -KILL "$relay"
sleep 0.3
curl -s --noproxy '*' -m 3 -o /dev/null "http://127.0.0.1:${kport:-1}/"
expect_eq "a relay killed: its port is closed at once" "$?" 7
wait "$sup"
expect_eq "... the sandbox goes on to its end" "$?" 0
expect_match "... and the log says so" "$(grep '"event":"serve.exit"' "$T/k.jsonl")" \
	'"action":"the served ports are closed".*"signal":9'

# ---- a session, the API and the SDKs ----
export SANDCAP_RUNTIME_DIR="$T/run" SANDCAP_SOCKET="$T/api.sock"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
policy agent "{\"version\": 1, \"name\": \"agent\", $grant, \"net\": {\"serve\": [8000]}}"
trap '"$SANDCAP" session stop sv >/dev/null 2>&1; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; cleanup_dir' EXIT
out=$("$SANDCAP" session start --policy "$T/agent.json" --name sv --json 2>&1)
spt=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["serve"]["8000"])' "$out" 2>/dev/null)
expect_match "session start --json says where port 8000 is served" "$spt" '^127\.0\.0\.1:[0-9]+$'
"$SANDCAP" exec sv -- python3 /w/serve.py 8000 8002 >/dev/null 2>&1 &
for _ in $(seq 100); do
	curl -s --noproxy '*' -m 2 -o /dev/null "http://$spt/serve.py" && break
	sleep 0.1
done
check "... and the session's server answers there" cmp -s "$T/w/serve.py" \
	<(curl -s --noproxy '*' -m 5 "http://$spt/serve.py")
expect_match "session list says it too" "$("$SANDCAP" session list --json)" "\"serve\":\\{\"8000\":\"$spt\"\\}"
curl -s --noproxy '*' -m 5 -o /dev/null "http://$spt/quit"
"$SANDCAP" session stop sv >/dev/null 2>&1

"$SANDCAP" serve --socket "$SANDCAP_SOCKET" --policy "$T/agent.json" 2>"$T/serve.log" &
PIDS+=($!)
for _ in $(seq 100); do
	curl -sf --unix-socket "$SANDCAP_SOCKET" http://sandcap/v1/health >/dev/null && break
	sleep 0.1
done
cat >"$T/sdk.py" <<'EOF'
import json, os, subprocess, time, urllib.request
from sandcap.sdk import Sandbox, SandboxException
sb = Sandbox.create("agent")
h = sb.commands.run("python3 /w/serve.py 8000 8002", background=True)
host = sb.get_host(8000)
print("host", host)
o = urllib.request.build_opener(urllib.request.ProxyHandler({}))
for _ in range(100):
    try:
        print("fetched", len(o.open("http://%s/serve.py" % host, timeout=5).read()))
        break
    except OSError:
        time.sleep(0.1)
api = json.loads(subprocess.run(["curl", "-s", "--unix-socket", os.environ["SANDCAP_SOCKET"],
                                 "http://sandcap/v1/sessions/" + sb.sandbox_id],
                                capture_output=True).stdout)
print("api", json.dumps(api.get("serve")))
try:
    sb.get_host(9000)
except SandboxException as e:
    print("refused", e.code)
print("sid", sb.sandbox_id)
EOF
out=$(PYTHONPATH="$ROOT/clients/python" timeout 60 python3 "$T/sdk.py" 2>&1)
host=$(sed -n 's/^host //p' <<<"$out")
expect_match "python SDK: get_host(8000) is the host's loopback" "$host" '^127\.0\.0\.1:[0-9]+$'
expect_eq "... and the server inside answers there" "$(sed -n 's/^fetched //p' <<<"$out")" \
	"$(stat -c %s "$T/w/serve.py")"
expect_eq "GET /v1/sessions/ID gives the same address" "$(sed -n 's/^api //p' <<<"$out")" \
	"{\"8000\": \"$host\"}"
expect_eq "get_host of a port not served: refused" "$(sed -n 's/^refused //p' <<<"$out")" "not_served"
sid=$(sed -n 's/^sid //p' <<<"$out")
if command -v node >/dev/null; then
	got=$(timeout 30 node --input-type=module -e "
import { Sandbox } from '$ROOT/clients/typescript/sdk.js';
const sb = await Sandbox.connect('$sid', { socketPath: process.env.SANDCAP_SOCKET });
console.log(sb.getHost(8000));
try { sb.getHost(9000); } catch (e) { console.log(e.code); }" 2>&1)
	expect_eq "TypeScript SDK: getHost(8000), and a port not served refused" "$got" "$host
not_served"
else
	skip "TypeScript SDK: getHost" "no node"
fi
curl -s --unix-socket "$SANDCAP_SOCKET" -X DELETE "http://sandcap/v1/sessions/$sid" >/dev/null

finish
