#!/usr/bin/env bash
# The API daemon end to end (`sandcap serve`, docs/api.md): a real daemon on
# a unix socket, real sessions. Create (from the warm pool, a policy, a
# token), exec with NDJSON streaming, files, stop, list; garbage and hostile
# requests leave it serving; callers of other uids (setpriv) get their own
# quota and see nothing of each other; the Python and TypeScript clients;
# the MCP server over stdio; SIGTERM stops every session and seals its log.
# Usage: SANDCAP=build/sandcap tests/integration/test-api.sh (as root)
. "$(dirname "$0")/lib.sh"
need_root
[ -x "$SANDCAP" ] || skip_all "$SANDCAP not built"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export SANDCAP SANDCAP_RUNTIME_DIR="$T/run"
S=$T/api.sock

policy agent '{"version": 1, "name": "agent", "limits": {"memory": "128M", "pids": 64, "wall": "5m"}}'
policy other '{"version": 1, "name": "other", "limits": {"memory": "64M", "pids": 32, "wall": "5m"}}'
"$SANDCAP" token keygen --out "$T/root.key" >/dev/null
"$SANDCAP" token mint --key "$T/root.key" --policy "$T/other.json" --ttl 10m >"$T/other.tok"

# api METHOD PATH [BODY-FILE]: the body on stdout, the status in $T/status
api() {
	local data=()
	[ $# -ge 3 ] && data=(--data-binary "@$3")
	curl -s -o "$T/body" -w '%{http_code}' --unix-socket "$S" -X "$1" "${data[@]}" \
		"http://sandcap$2" >"$T/status"
	cat "$T/body"
}
as_uid() { local u=$1; shift; setpriv --reuid="$u" --regid=65534 --clear-groups "$@"; }
jget() { python3 -c 'import json,sys; d=json.load(sys.stdin); exec("print(d" + sys.argv[1] + ")")' "$1"; }
healthy() { [ "$(curl -s --unix-socket "$S" http://sandcap/v1/health | jget '["ok"]' 2>/dev/null)" = True ]; }
b64() { printf '%s' "$1" | base64 -w0; }
# the decoded stdout of an NDJSON exec stream
ndjson_stdout() {
	python3 -c 'import base64,json,sys
print("".join(base64.b64decode(o["data"]).decode() for o in map(json.loads, sys.stdin) if o.get("stream") == "stdout"), end="")'
}

"$SANDCAP" serve --socket "$S" --group nogroup --pool "$T/agent.json=2" --policy "$T/other.json" \
	--quota-per-uid 2 --token-key "$T/root.key" 2>"$T/serve.log" &
daemon=$!
for _ in $(seq 100); do
	[ "$(curl -s --unix-socket "$S" http://sandcap/v1/health 2>/dev/null | jget '["policies"][0]["ready"]' 2>/dev/null)" = 2 ] && break
	sleep 0.1
done
expect_eq "the pool is full (2 ready) after start" \
	"$(curl -s --unix-socket "$S" http://sandcap/v1/health | jget '["policies"][0]["ready"]')" 2
expect_eq "socket mode 0660, group nogroup" "$(stat -c '%a %G' "$S")" "660 nogroup"

# The pool's supervisors come from sandcap-run (docs/architecture.md, "Two programs").
comms=$(python3 -c 'import json, sys
print(" ".join(sorted(open("/proc/%d/comm" % s["pid"]).read().strip() for s in json.load(sys.stdin))))' \
	< <("$SANDCAP" session list --json) 2>&1)
expect_eq "the pool's sessions are supervised by sandcap-run" "$comms" "sandcap-run sandcap-run"

# --- create from the pool, exec, files, audit, stop ---
echo '{"policy": "agent"}' >"$T/create.json"
out=$(api POST /v1/sessions "$T/create.json")
ID=$(echo "$out" | jget '["id"]')
expect_eq "create: 201 from the pool" "$(cat "$T/status") $(echo "$out" | jget '["from_pool"]')" "201 True"
AUDIT=$(echo "$out" | jget '["audit"]')
ms=$(curl -s -o "$T/body" -w '%{time_total}' --unix-socket "$S" -X POST --data-binary @"$T/create.json" \
	http://sandcap/v1/sessions)
api DELETE "/v1/sessions/$(jget '["id"]' <"$T/body")" >/dev/null
# two taken: the pool refills in the background, and never holds more than 2
over=0
for _ in $(seq 100); do
	h=$(curl -s --unix-socket "$S" http://sandcap/v1/health)
	n=$(echo "$h" | jget '["policies"][0]["ready"] + d["policies"][0]["starting"]')
	[ "$n" -gt 2 ] && over=1
	[ "$(echo "$h" | jget '["policies"][0]["ready"]')" = 2 ] && break
	sleep 0.05
done
expect_eq "the pool refilled to 2 in the background, never above" \
	"$(curl -s --unix-socket "$S" http://sandcap/v1/health | jget '["policies"][0]["ready"]') $over" "2 0"
tap_diag "create from the pool: ${ms}s (curl time_total)"
check "a second create from the pool within 50 ms" python3 -c "import sys; sys.exit(not float('$ms') < 0.05)"

printf '{"argv": ["sh", "-c", "echo hi; cat; echo oops >&2; exit 3"], "stdin": "%s"}' "$(b64 'IN')" >"$T/exec.json"
out=$(api POST "/v1/sessions/$ID/exec" "$T/exec.json")
expect_eq "exec: stdout and stdin, streamed as NDJSON" "$(echo "$out" | ndjson_stdout)" "hi
IN"
expect_eq "exec: the last line has exit code 3" "$(echo "$out" | tail -1 | jget '["exit_code"]')" 3
curl -s -D "$T/headers" -o /dev/null --unix-socket "$S" --data-binary @"$T/exec.json" "http://sandcap/v1/sessions/$ID/exec"
check "exec: chunked transfer encoding" grep -qi '^transfer-encoding: chunked' "$T/headers"

printf 'payload\0bytes' >"$T/payload"
api PUT "/v1/sessions/$ID/files?path=/tmp/p.bin" "$T/payload" >/dev/null
expect_eq "put: 200" "$(cat "$T/status")" 200
api GET "/v1/sessions/$ID/files?path=/tmp/p.bin" >/dev/null
check "get: the same bytes back" cmp -s "$T/body" "$T/payload"
out=$(api GET "/v1/sessions/$ID/ls?path=/tmp")
expect_match "ls: the file listed with its size" "$out" '"name":"p.bin"[^}]*|"size":13'
echo '{"argv": ["wc", "-c", "/tmp/p.bin"]}' >"$T/wc.json"
expect_match "a later exec sees the file put before" "$(api POST "/v1/sessions/$ID/exec" "$T/wc.json" | ndjson_stdout)" '^13 '
out=$(api PUT "/v1/sessions/$ID/files?path=/usr/bin/planted" "$T/payload")
expect_match "put outside what the policy grants: refused with a structured error" \
	"$(cat "$T/status") $out" '^403 \{"error":\{"code":"denied","message":"[^"]+'
check "and nothing planted on the host" test ! -e /usr/bin/planted
out=$(api GET "/v1/sessions/$ID/files?path=relative")
expect_eq "a relative path: 400 bad_path" "$(cat "$T/status") $(echo "$out" | jget '["error"]["code"]')" "400 bad_path"
out=$(api GET "/v1/sessions/$ID/audit")
expect_eq "audit: the session's log and its report" \
	"$(echo "$out" | jget '["audit"]') $(echo "$out" | jget '["report"]["log"]["records"] > 0')" "$AUDIT True"
code=$(curl -s -D "$T/html-headers" -o "$T/report.html" -w '%{http_code}' --unix-socket "$S" "http://sandcap/v1/sessions/$ID/report.html")
expect_eq "report.html: 200, text/html" \
	"$code $(grep -i '^content-type:' "$T/html-headers" | tr -d '\r' | cut -d' ' -f2-)" "200 text/html; charset=utf-8"
expect_match "report.html: the page of the session's log, marked live while the session runs" \
	"$(head -c 15 "$T/report.html") $(grep -o 'data-state="[a-z]*"' "$T/report.html")" '^<!DOCTYPE html> data-state="live"$'
out=$(api GET /v1/sessions)
expect_match "list: the session is there" "$out" "\"id\":\"$ID\""

# --- hostile and malformed requests ---
raw() { # raw PYTHON-BYTES-EXPR: sends it, prints the status line answered
	python3 - "$S" "$1" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
try:
    s.sendall(eval(sys.argv[2]))
except (BrokenPipeError, ConnectionResetError):
    pass
try:
    print(s.recv(200).split(b"\r\n")[0].decode())
except Exception as e:
    print("no answer:", e)
EOF
}
expect_match "garbage: 400" "$(raw 'b"\x00\xff garbage\r\n\r\n"')" '^HTTP/1.1 400'
expect_match "a 100 KB header: 431" "$(raw 'b"GET /v1/health HTTP/1.1\r\nX: " + b"a" * 100000 + b"\r\n\r\n"')" '^HTTP/1.1 431'
expect_match "CL + TE: 400" "$(raw 'b"POST /v1/sessions HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}"')" '^HTTP/1.1 400'
expect_match "a body over 64 MiB announced: 413" "$(raw 'b"PUT /v1/sessions HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n"')" '^HTTP/1.1 413'
expect_match "a dot-dot path: 404" "$(raw 'b"GET /v1/sessions/../../etc HTTP/1.1\r\n\r\n"')" '^HTTP/1.1 404'
echo '{"policy": ' >"$T/bad.json"
out=$(api POST /v1/sessions "$T/bad.json")
expect_eq "bad JSON: 400 bad_json" "$(cat "$T/status") $(echo "$out" | jget '["error"]["code"]')" "400 bad_json"
echo '{"policy": {"version": 1, "fs": {"grants": [{"path": "/tmp", "mode": "rwx"}]}}}' >"$T/badpol.json"
out=$(api POST /v1/sessions "$T/badpol.json")
expect_eq "an invalid policy: the JSON path of the error" "$(echo "$out" | jget '["error"]["path"]')" '$.fs.grants[0].mode'
api DELETE /v1/sessions/no-such >/dev/null
expect_eq "an unknown session: 404" "$(cat "$T/status")" 404
python3 - "$S" <<'EOF'
import socket, sys
# 300 connections at once, each sending half a request and going away
socks = []
for _ in range(300):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"GET /v1/hea"); socks.append(s)
for s in socks:
    s.close()
EOF
check "after garbage, 300 half-open connections and oversized requests: still serving" healthy

# disconnect mid-stream: the command is stopped, the session and daemon stay
echo '{"argv": ["sh", "-c", "while :; do echo tick; sleep 0.05; done"]}' >"$T/loop.json"
timeout 1 curl -s -N --unix-socket "$S" --data-binary @"$T/loop.json" "http://sandcap/v1/sessions/$ID/exec" >"$T/ticks"
expect_match "a streaming exec streamed before its client left" "$(head -1 "$T/ticks" | ndjson_stdout)" '^tick' 
sleep 0.5
echo '{"argv": ["sh", "-c", "for p in /proc/[0-9]*; do cat $p/cmdline; echo; done"]}' >"$T/ps.json"
expect_no_match "the command of the client that left is gone" \
	"$(api POST "/v1/sessions/$ID/exec" "$T/ps.json" | ndjson_stdout)" 'sleep|while'
check "the daemon still serves after a client left mid-stream" healthy

# --- per-uid quota and isolation ---
ucreate() { as_uid "$1" curl -s -w ' %{http_code}' --unix-socket "$S" -X POST -d "$2" http://sandcap/v1/sessions; }
u1a=$(ucreate 12345 '{"policy": "other"}')
u1b=$(ucreate 12345 '{"policy": "agent"}')
u1c=$(ucreate 12345 '{"policy": "other"}')
expect_match "uid 12345: two sandboxes" "$u1a$u1b" '201.*201$'
expect_match "uid 12345: a third is over its quota (429)" "$u1c" 'quota_exceeded.* 429$'
U1=$(echo "${u1a% *}" | jget '["id"]')
out=$(ucreate 12346 '{"policy": {"version": 1, "fs": {"grants": [{"path": "/etc", "mode": "rw", "at": "/host-etc"}]}}}')
expect_match "an inline policy from a non-root caller: 403 forbidden" "$out" '"code":"forbidden".* 403$'
out=$(ucreate 12346 "{\"policy\": $(cat "$T/agent.json")}")
expect_match "an inline policy that is one the daemon offers: taken" "$out" '"policy":"agent".* 201$'
expect_eq "uid 12346 lists only its own" \
	"$(as_uid 12346 curl -s --unix-socket "$S" http://sandcap/v1/sessions |
		python3 -c 'import json,sys; print([s["uid"] for s in json.load(sys.stdin)["sessions"]])')" "[12346]"
expect_match "uid 12346 cannot exec in uid 12345's sandbox" \
	"$(as_uid 12346 curl -s -w ' %{http_code}' --unix-socket "$S" -d @"$T/wc.json" "http://sandcap/v1/sessions/$U1/exec")" ' 404$'
expect_match "nor read its report.html" \
	"$(as_uid 12346 curl -s -w ' %{http_code}' --unix-socket "$S" "http://sandcap/v1/sessions/$U1/report.html")" '"not_found".* 404$'
expect_match "which its owner reads" \
	"$(as_uid 12345 curl -s -o /dev/null -w '%{http_code} %{content_type}' --unix-socket "$S" "http://sandcap/v1/sessions/$U1/report.html")" '^200 text/html'
expect_match "nor stop it" \
	"$(as_uid 12346 curl -s -w ' %{http_code}' --unix-socket "$S" -X DELETE "http://sandcap/v1/sessions/$U1")" ' 404$'
expect_match "root does not see uid 12345's sandboxes either" "$(api GET "/v1/sessions/$U1")" '"not_found"'
out=$(as_uid 12345 curl -s -w ' %{http_code}' --unix-socket "$S" -X DELETE "http://sandcap/v1/sessions/$U1")
expect_match "uid 12345 stops its own" "$out" ' 200$'
expect_match "which frees a place in its quota" "$(ucreate 12345 '{"policy": "other"}')" ' 201$'
check "a uid outside the socket's group cannot connect" \
	sh -c "! setpriv --reuid=12347 --regid=12347 --clear-groups curl -sf --unix-socket $S http://sandcap/v1/health"

# --- a token ---
printf '{"token": "%s"}' "$(cat "$T/other.tok")" >"$T/tok.json"
out=$(api POST /v1/sessions "$T/tok.json")
expect_match "create from a token: 201, named by the token" "$(cat "$T/status") $out" '^201 .*"policy":"token:'
api DELETE "/v1/sessions/$(echo "$out" | jget '["id"]')" >/dev/null
# one character of the signature changed (not the last: its low bits are
# padding, and a change there may decode to the same bytes)
printf '{"token": "%s"}' "$(python3 -c 'import sys; t = open(sys.argv[1]).read().strip(); i = len(t) - 5; print(t[:i] + ("B" if t[i] == "A" else "A") + t[i + 1:])' "$T/other.tok")" >"$T/badtok.json"
out=$(api POST /v1/sessions "$T/badtok.json")
expect_eq "a token with a bad signature: 403 token_invalid" "$(cat "$T/status") $(echo "$out" | jget '["error"]["code"]')" "403 token_invalid"

# --- the clients ---
export SANDCAP_TEST_SOCKET=$S SANDCAP_TEST_POLICY=$T/agent.json
if python3 -m unittest discover -s "$ROOT/clients/python/tests" >"$T/py.log" 2>&1; then
	ok "Python client: unittest against the daemon and the CLI ($(grep -o 'Ran [0-9]* tests' "$T/py.log"))"
else
	not_ok "Python client: unittest"
	tap_diag "$(tail -20 "$T/py.log")"
fi
if python3 -m venv "$T/venv" >/dev/null 2>&1 &&
	"$T/venv/bin/pip" install -q --no-index "$ROOT/clients/python" >"$T/pip.log" 2>&1; then
	expect_eq "pip install ./clients/python: importable from the venv" \
		"$(cd / && "$T/venv/bin/python" -c 'import sandcap, sys; print(sandcap.__file__.startswith(sys.argv[1]))' "$T/venv")" True
else
	not_ok "pip install ./clients/python"
	tap_diag "$(tail -5 "$T/pip.log")"
fi
if (cd "$ROOT/clients/typescript" && node --test test/) >"$T/ts.log" 2>&1; then
	ok "TypeScript client: node --test against the daemon and the CLI ($(grep -o '^# pass [0-9]*' "$T/ts.log"))"
else
	not_ok "TypeScript client: node --test"
	tap_diag "$(grep -E '^not ok|Error' "$T/ts.log" | head -10)"
fi

# --- MCP over stdio ---
python3 - "$SANDCAP" "$T/agent.json" >"$T/mcp.out" 2>"$T/mcp.err" <<'EOF'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp", "--policy", sys.argv[2]], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True)
n = 0
def call(method, params=None, notify=False):
    global n
    msg = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    if not notify:
        n += 1
        msg["id"] = n
    p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
    return None if notify else json.loads(p.stdout.readline())
init = call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
print("version", init["result"]["protocolVersion"])
call("notifications/initialized", notify=True)
print("tools", ",".join(sorted(t["name"] for t in call("tools/list")["result"]["tools"])))
tool = lambda name, **a: call("tools/call", {"name": name, "arguments": a})["result"]
print("write", tool("write_file", path="/tmp/m.txt", content="from mcp")["isError"])
print("read", tool("read_file", path="/tmp/m.txt")["content"][0]["text"])
print("list", "m.txt" in tool("list_files", path="/tmp")["content"][0]["text"])
r = tool("run_command", command="cat /tmp/m.txt; exit 2")
print("run", r["structuredContent"]["exit_code"], r["structuredContent"]["stdout"], r["isError"])
print("denied", tool("write_file", path="/usr/bin/x", content="x")["isError"])
p.stdin.write("{garbage\n"); p.stdin.flush()
print("garbage", json.loads(p.stdout.readline())["error"]["code"])
p.stdin.close()
print("exit", p.wait())
EOF
mcp=$(cat "$T/mcp.out")
expect_match "MCP: initialize answers 2025-06-18" "$mcp" 'version 2025-06-18'
expect_match "MCP: the four tools" "$mcp" 'tools list_files,read_file,run_command,write_file'
expect_match "MCP: write_file then read_file and list_files" "$mcp" 'write False.read from mcp.list True'
expect_match "MCP: run_command sees the file, exit code 2" "$mcp" 'run 2 from mcp True'
expect_match "MCP: a write outside the grants is a tool error" "$mcp" 'denied True'
expect_match "MCP: garbage is a parse error (-32700), the server goes on" "$mcp" 'garbage -32700.exit 0'
mlog=$(sed -n 's/^sandcap mcp: sandbox .*, log \(.*\)$/\1/p' "$T/mcp.err" | tail -1)
check "MCP: its log is sealed at the end of input" "$SANDCAP" audit verify "$mlog"
expect_match "MCP: each command is in the log" "$("$SANDCAP" audit report "$mlog" 2>&1)" 'cat /tmp/m.txt'

# --- SIGTERM: every session stopped, every log sealed ---
logs=$(python3 -c 'import json,sys; print("\n".join(s["audit"] for s in json.load(sys.stdin)))' \
	< <("$SANDCAP" session list --json))
live=$(echo "$logs" | grep -c .)
tap_diag "sessions live at SIGTERM: $live"
kill -TERM "$daemon"
wait "$daemon"
expect_eq "SIGTERM: the daemon exits 0" "$?" 0
expect_eq "no session left" "$("$SANDCAP" session list --json)" "[]"
bad=0
for l in $logs; do "$SANDCAP" audit verify "$l" >/dev/null 2>&1 || bad=$((bad + 1)); done
expect_eq "every one of the $live logs verifies sealed" "$bad" 0
check "the socket is gone" test ! -e "$S"
check "the daemon logged no crash" sh -c "! grep -qiE 'sanitizer|segv|abort' '$T/serve.log'"

# --- a pooled session's limits start at its hand-out; an OOM kill is named ---
# A session that waited in the pool longer than most of its limits.wall
# still has all of it once handed out: before, the wait counted, and a
# 4 s command taken after 6 s of an 8 s wall was killed.
policy short '{"version": 1, "name": "short", "limits": {"memory": "64M", "wall": "8s"}}'
P=$T/pool.sock
"$SANDCAP" serve --socket "$P" --pool "$T/short.json=1" 2>"$T/pool.log" &
pdaemon=$!
for _ in $(seq 200); do
	[ "$(curl -s --unix-socket "$P" http://sandcap/v1/health 2>/dev/null | jget '["policies"][0]["ready"]' 2>/dev/null)" = 1 ] && break
	sleep 0.1
done
sleep 6
echo '{"policy": "short"}' >"$T/short-create.json"
out=$(curl -s --unix-socket "$P" --data-binary @"$T/short-create.json" http://sandcap/v1/sessions)
PID_=$(echo "$out" | jget '["id"]')
plog=$(echo "$out" | jget '["audit"]')
expect_eq "a pooled session taken after 6 s in the pool" "$(echo "$out" | jget '["from_pool"]')" True
echo '{"argv": ["python3", "-c", "x = bytearray(200 << 20)"]}' >"$T/oom.json"
out=$(curl -s --unix-socket "$P" --data-binary @"$T/oom.json" "http://sandcap/v1/sessions/$PID_/exec" | tail -1)
expect_eq "a command OOM-killed through the API names the memory limit" \
	"$(echo "$out" | jget '["exit_code"], d["signal"], d["limits_hit"]')" "137 9 ['memory']"
echo '{"argv": ["sh", "-c", "sleep 4; echo done"]}' >"$T/slow.json"
out=$(curl -s --unix-socket "$P" --data-binary @"$T/slow.json" "http://sandcap/v1/sessions/$PID_/exec")
expect_eq "the pooled session runs a 4 s command under its 8 s wall: the wait did not count" \
	"$(echo "$out" | ndjson_stdout) $(echo "$out" | tail -1 | jget '["exit_code"], d["limits_hit"]')" "done 0 []"
waited=$(python3 -c 'import json, sys
print([json.loads(l)["data"]["waited_ms"] for l in open(sys.argv[1]) if "\"session.begin\"" in l])' "$plog")
check "its log says when it was handed out, after waiting 6 s or more ($waited)" \
	python3 -c "import sys; w = $waited; sys.exit(not (len(w) == 1 and w[0] >= 6000))"
kill -TERM "$pdaemon"
wait "$pdaemon"
expect_eq "the pool's daemon exits 0" "$?" 0

finish
