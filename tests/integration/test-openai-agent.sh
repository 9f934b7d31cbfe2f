#!/usr/bin/env bash
# examples/openai-agent: an agent loop with npm's `openai` SDK whose tool
# calls run in a sandcap sandbox through the TypeScript SDK, against the
# example's stand-in for the OpenAI API on loopback (offline once `openai` is
# installed from the npm registry into a scratch directory). Checks the
# answer, and that every tool call is in the sandbox's sealed log.
. "$(dirname "$0")/lib.sh"
need_root
command -v node >/dev/null || skip_all "no node"
command -v npm >/dev/null || skip_all "no npm"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export SANDCAP_RUNTIME_DIR="$T/run" SANDCAP_SOCKET="$T/api.sock"

APP=$T/app
mkdir -p "$APP"
cp "$ROOT"/examples/openai-agent/*.mjs "$APP/"
echo '{"name": "openai-agent-test", "private": true, "type": "module"}' >"$APP/package.json"
(cd "$APP" && timeout 300 npm install --no-audit --no-fund --loglevel=error openai "$ROOT/clients/typescript") \
	>"$T/npm.log" 2>&1 || skip_all "npm install openai failed (no npm registry?): $(tail -1 "$T/npm.log")"

policy agent '{"version": 1, "name": "agent", "limits": {"memory": "256M", "pids": 64, "wall": "10m"}}'
"$SANDCAP" serve --socket "$SANDCAP_SOCKET" --policy "$T/agent.json" 2>"$T/serve.log" &
daemon=$!
node "$APP/stand-in.mjs" 0 >"$T/port" &
standin=$!
for _ in $(seq 100); do
	curl -sf --unix-socket "$SANDCAP_SOCKET" http://sandcap/v1/health >/dev/null && [ -s "$T/port" ] && break
	sleep 0.1
done
port=$(cat "$T/port")

OPENAI_BASE_URL="http://127.0.0.1:$port/v1" OPENAI_API_KEY=sk-stand-in \
	node "$APP/agent.mjs" >"$T/out" 2>"$T/err"
expect_eq "the agent exits 0" "$? $(head -3 "$T/err" | grep -v '^sandbox\|^tool')" "0 "
expect_eq "its answer quotes what the program printed in the sandbox" "$(cat "$T/out")" "The program printed 42."
expect_match "it called both tools of the script" "$(cat "$T/err")" \
	$'tool write_file \\{"path":"/tmp/hello.py".*\ntool run_command \\{"command":"python3 /tmp/hello.py"\\}'
log=$(sed -n 's/^sandbox .*, audit log //p' "$T/err")
out=$(python3 - "$log" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ev = lambda e: [r["data"] for r in recs if r["event"] == e]
starts = [d for d in ev("exec.start") if "python3 /tmp/hello.py" in " ".join(d["argv"])]
exits = [d for d in ev("exec.exit") if starts and d["id"] == starts[0]["id"]]
puts = [d["result"] for d in ev("file.put") if d["path"] == "/tmp/hello.py"]
print(len(starts), exits[0]["status"] if exits else None, puts, recs[-1]["event"])
PY
)
expect_eq "the log: the write (file.put ok), the run (exec.start, exit 0), sealed" "$out" "1 0 ['ok'] audit.seal"
check "the log verifies" sh -c '"$0" audit verify "$1" >/dev/null' "$SANDCAP" "$log"
expect_eq "the sandbox was stopped at the end" \
	"$(curl -s --unix-socket "$SANDCAP_SOCKET" http://sandcap/v1/sessions)" '{"sessions":[]}'
out=$(curl -s -d '{"model": "m", "messages": [], "tools": []}' "http://127.0.0.1:$port/v1/chat/completions")
expect_match "the stand-in refuses a request without the tools" "$out" '"expected the tools"'

kill "$standin" 2>/dev/null
kill -TERM "$daemon"
wait "$daemon"
expect_eq "the daemon exits 0" "$?" 0
finish
