#!/usr/bin/env bash
# The SDK in E2B's shape (docs/api.md, "An SDK in E2B's shape"): the same
# script of E2B-shaped calls (tests/integration/sdk/) through the Python
# and the TypeScript client against a real daemon and real sandboxes, each
# check of the script a test here; then the effects seen from the host: the
# files written in the grant, the killed command gone, the log's records.
# Usage: SANDCAP=build/sandcap tests/integration/test-sdk.sh (as root)
. "$(dirname "$0")/lib.sh"
need_root
[ -x "$SANDCAP" ] || skip_all "$SANDCAP not built"
command -v node >/dev/null || skip_all "no node"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export SANDCAP SANDCAP_RUNTIME_DIR="$T/run" SANDCAP_SOCKET="$T/api.sock"
mkdir -p "$T/grant"
policy agent "{\"version\": 1, \"name\": \"agent\", \"limits\": {\"memory\": \"256M\", \"pids\": 64, \"wall\": \"10m\"},
  \"fs\": {\"grants\": [{\"path\": \"$T/grant\", \"mode\": \"rw\"}]}}"
head -c 100000000 /dev/urandom >"$T/big.bin"

"$SANDCAP" serve --socket "$SANDCAP_SOCKET" --policy "$T/agent.json" 2>"$T/serve.log" &
daemon=$!
for _ in $(seq 100); do
	curl -sf --unix-socket "$SANDCAP_SOCKET" http://sandcap/v1/health >/dev/null && break
	sleep 0.1
done

# run_script NAME CMD...: each "ok"/"not ok" line of the script is a test
run_script() {
	local name=$1 line
	shift
	"$@" >"$T/$name.out" 2>"$T/$name.err"
	echo "$?" >"$T/$name.rc"
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "$name: ${line#ok }" ;;
		"not ok "*) not_ok "$name: ${line#not ok }" ;;
		esac
	done <"$T/$name.out"
	expect_eq "$name: the script ran to its end" "$(cat "$T/$name.rc") $(sed 's/^/  /' "$T/$name.err" | head -5)" "0 "
}
run_script python env PYTHONPATH="$ROOT/clients/python" \
	python3 "$ROOT/tests/integration/sdk/e2b_calls.py" "$T/grant" "sdkmark-py-$$" "$T/big.bin"
run_script node node "$ROOT/tests/integration/sdk/e2b-calls.mjs" "$ROOT/clients/typescript/sdk.js" \
	"$T/grant" "sdkmark-js-$$" "$T/big.bin"

for name in python node; do
	mark=sdkmark-$([ $name = python ] && echo py || echo js)-$$
	res=$(sed -n 's/^RESULT //p' "$T/$name.out")
	log=$(echo "$res" | python3 -c 'import json, sys; print(json.load(sys.stdin)["audit"])')
	expect_eq "$name: the file written through the SDK is in the grant, on the host" \
		"$(cat "$T/grant/$name/kept.txt" 2>&1)" "kept by $name"
	expect_eq "$name: the renamed file moved on the host, the removed directory is gone" \
		"$(cat "$T/grant/$name/moved.txt" 2>&1) $(test -e "$T/grant/$name/sub" && echo there)" "hello "
	if pgrep -f "$mark" >/dev/null; then
		not_ok "$name: the killed background command is gone from the host's process table"
	else
		ok "$name: the killed background command is gone from the host's process table"
	fi
	counts=$(python3 - "$log" "$mark" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ev = lambda e: [r for r in recs if r.get("event") == e]
starts = [r for r in ev("exec.start") if any(sys.argv[2] in a for a in r["data"]["argv"])]
exits = [r for r in ev("exec.exit") if starts and r["data"]["id"] == starts[0]["data"]["id"]]
print(len(starts), exits[0]["data"]["signal"] if exits else None,
      *(len(ev(e)) > 0 for e in ("file.mkdir", "file.put", "file.get", "file.stat", "file.list",
                                  "file.rename", "file.remove", "session.timeout", "session.pause", "session.resume", "file.watch")),
      [r["data"]["result"] for r in ev("file.put") if r["data"]["path"] == "/etc/sdk-denied"],
      sum(r["data"]["tty"] for r in ev("exec.start")))
PY
)
	expect_eq "$name: the log records the background command (exec.start, its exit by SIGKILL), each file operation, the timeout, pause and resume, the watches, the refused write, the two ptys (tty)" \
		"$counts" "1 9 True True True True True True True True True True True ['EROFS'] 2"
	check "$name: the sealed log verifies" sh -c "\"\$0\" audit verify \"\$1\" >/dev/null" "$SANDCAP" "$log"
done

# a pty's size is checked before anything runs
id=$(curl -s --unix-socket "$SANDCAP_SOCKET" -d '{"policy": "agent"}' http://sandcap/v1/sessions |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
for bad in '{"cols": 0, "rows": 24}' '{"cols": 80}' '{"cols": 80, "rows": 65536}' '[80, 24]'; do
	out=$(curl -s --unix-socket "$SANDCAP_SOCKET" -d "{\"argv\": [\"sh\"], \"pty\": $bad}" \
		"http://sandcap/v1/sessions/$id/commands")
	expect_match "a pty of $bad is refused (400, \$.pty)" "$out" '"code":"bad_request".*"path":"\$\.pty"'
done
out=$(curl -s --unix-socket "$SANDCAP_SOCKET" -d '{"cols": 80, "rows": 24}' \
	"http://sandcap/v1/sessions/$id/commands/99/resize")
expect_match "resize of no such command: 404" "$out" '"code":"not_found"'
curl -s --unix-socket "$SANDCAP_SOCKET" -X DELETE "http://sandcap/v1/sessions/$id" >/dev/null

kill -TERM "$daemon"
wait "$daemon"
expect_eq "the daemon exits 0" "$?" 0
finish
