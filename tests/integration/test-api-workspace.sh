#!/usr/bin/env bash
# Workspaces over the API (docs/api.md, "Workspaces"): a session's cow grant
# diffed, applied and discarded through the daemon, by the Python and the
# TypeScript SDK, while it runs and after it was killed; checked from the
# host: apply wrote the host folder, discard and a refused apply left it as
# it was, another uid finds nothing, the session's log has the apply.
# Usage: SANDCAP=build/sandcap tests/integration/test-api-workspace.sh (as root)
. "$(dirname "$0")/lib.sh"
need_root
[ -x "$SANDCAP" ] || skip_all "$SANDCAP not built"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export SANDCAP SANDCAP_RUNTIME_DIR="$T/run" SANDCAP_SOCKET="$T/api.sock"
H=$T/host
mkdir -p "$H"
printf 'one\ntwo\n' >"$H/a.txt"
printf 'host\n' >"$H/c.txt"
policy cow "{\"version\": 1, \"name\": \"cow\", \"limits\": {\"memory\": \"256M\", \"pids\": 64, \"wall\": \"10m\"},
  \"fs\": {\"grants\": [{\"path\": \"$H\", \"at\": \"/w\", \"mode\": \"cow\", \"quota\": \"16M\"}]}}"
digest() { (cd "$1" && find . -printf '%p %y %m\n' | LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum) | sha256sum; }

"$SANDCAP" serve --socket "$SANDCAP_SOCKET" --policy "$T/cow.json" --group nogroup 2>"$T/serve.log" &
daemon=$!
for _ in $(seq 100); do
	curl -sf --unix-socket "$SANDCAP_SOCKET" http://sandcap/v1/health >/dev/null && break
	sleep 0.1
done

# 1. Python, a live session: diff, apply, then its log says so.
cat >"$T/live.py" <<'PY'
import json, sys
from sandcap.sdk import Sandbox, WorkspaceConflictException
sb = Sandbox.create("cow")
sb.commands.run("printf 'one\\nTWO\\n' > /w/a.txt; echo new > /w/b.txt; echo agent > /w/c.txt")
d = sb.workspace.diff(patch=True)
print("DIFF", json.dumps(sorted((c.op, c.path) for c in d.changes)))
print("PATCH", json.dumps("+TWO" in (d.patch or "")))
open(sys.argv[1] + "/c.txt", "w").write("host changed\n")  # a conflict
try:
    sb.workspace.apply()
    print("CONFLICT none")
except WorkspaceConflictException as e:
    print("CONFLICT", e.code, json.dumps(e.conflicts), e.result.get("exit_code"))
print("HOSTB", open(sys.argv[1] + "/a.txt").read() == "one\ntwo\n")
r = sb.workspace.apply(force=True)
print("APPLIED", r["outcome"], json.dumps(sorted(p["path"] for p in r["paths"])))
print("LIST", json.dumps([w["state"] for w in sb.workspace.list()]))
try:
    sb.workspace.discard()
    print("DISCARD live allowed")
except Exception as e:
    print("DISCARD", e.code)
print("AUDIT", sb.audit_path)
sb.kill()
PY
out=$(PYTHONPATH="$ROOT/clients/python" python3 "$T/live.py" "$H" 2>&1)
expect_match "python: diff of a live session lists A/M with paths" "$out" 'DIFF \[\["A", "b.txt"\], \["M", "a.txt"\], \["M", "c.txt"\]\]'
expect_match "python: the patch has the changed line" "$out" 'PATCH true'
expect_match "python: apply over a host change is refused with its conflicts, exit code 2" "$out" 'CONFLICT conflicts \["c.txt"\] 2'
expect_match "python: the refused apply wrote nothing" "$out" 'HOSTB True'
expect_match "python: apply --force writes every path" "$out" 'APPLIED applied \["a.txt", "b.txt", "c.txt"\]'
expect_match "python: the live workspace is listed as live" "$out" 'LIST \["live"\]'
expect_match "python: a live workspace is not discarded" "$out" 'DISCARD live'
expect_eq "python: apply wrote the host folder" "$(cat "$H/a.txt" "$H/b.txt" "$H/c.txt" 2>&1)" "$(printf 'one\nTWO\nnew\nagent')"
log=$(echo "$out" | sed -n 's/^AUDIT //p')
expect_eq "python: the session's log records workspace.applied" \
	"$(grep -c '"event":"workspace.applied"' "$log" 2>&1)" 1
check "python: the session's log verifies" "$SANDCAP" audit verify "$log"

# 2. TypeScript, an ended run: killed, its kept workspace diffed, discarded.
before=$(digest "$H")
if command -v node >/dev/null; then
	cat >"$T/ended.mjs" <<'JS'
const { Sandbox } = await import(process.argv[2]);
const sb = await Sandbox.create("cow");
await sb.commands.run("echo discarded > /w/gone.txt; rm /w/a.txt");
await sb.kill();
const d = await sb.workspace.diff();
console.log("DIFF", JSON.stringify(d.changes.map((c) => [c.op, c.path]).sort()));
console.log("LIST", JSON.stringify((await sb.workspace.list()).map((w) => w.state)));
await sb.workspace.discard();
try { await sb.workspace.diff(); console.log("AFTER found"); } catch (e) { console.log("AFTER", e.code); }
console.log("ID", sb.sandboxId);
JS
	out=$(node "$T/ended.mjs" "$ROOT/clients/typescript/sdk.js" 2>&1)
	expect_match "node: diff of a killed session's kept workspace" "$out" 'DIFF \[\["A","gone.txt"\],\["D","a.txt"\]\]'
	expect_match "node: the kept workspace is listed as kept" "$out" 'LIST \["kept"\]'
	expect_match "node: after discard there is none" "$out" 'AFTER no_workspace'
	expect_eq "node: discard left the host folder untouched" "$(digest "$H")" "$before"
	expect_eq "node: the workspace directory is gone" "$(ls "$SANDCAP_STATE_DIR/workspaces" | grep -c "^$(echo "$out" | sed -n 's/^ID //p')")" 0
else
	skip "node: the ended run" "no node"
fi

# 3. Another uid finds nothing, nor can it apply; root's session stays its own.
id=$(curl -s --unix-socket "$SANDCAP_SOCKET" -d '{"policy": "cow"}' http://sandcap/v1/sessions |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
curl -s --unix-socket "$SANDCAP_SOCKET" -d '{"argv": ["sh", "-c", "echo x > /w/x.txt"]}' \
	"http://sandcap/v1/sessions/$id/exec" >/dev/null
chgrp nogroup "$T" && chmod 750 "$T"
out=$(setpriv --reuid 65534 --regid 65534 --groups "$(getent group nogroup | cut -d: -f3)" \
	curl -s --unix-socket "$SANDCAP_SOCKET" -X POST "http://sandcap/v1/sessions/$id/workspace/apply" 2>&1)
expect_match "another uid: apply of root's session's workspace is 404" "$out" '"code":"not_found"'
expect_eq "another uid: nothing was written" "$(test -e "$H/x.txt" && echo there)" ""
out=$(curl -s --unix-socket "$SANDCAP_SOCKET" "http://sandcap/v1/sessions/$id/workspace/diff?workspace=other.0")
expect_match "a workspace of another session is refused" "$out" '"code":"no_workspace"'
out=$(curl -s --unix-socket "$SANDCAP_SOCKET" -X POST "http://sandcap/v1/sessions/$id/workspace/apply")
expect_match "curl: apply answers what it wrote" "$out" '"outcome":"applied".*"x.txt"'
expect_eq "curl: x.txt is on the host" "$(cat "$H/x.txt" 2>&1)" x
curl -s --unix-socket "$SANDCAP_SOCKET" -X DELETE "http://sandcap/v1/sessions/$id" >/dev/null

kill -TERM "$daemon"
wait "$daemon"
expect_eq "the daemon exits 0" "$?" 0
finish
