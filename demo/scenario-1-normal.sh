#!/usr/bin/env bash
# Scenario 1: normal execution. A Python agent reads its granted input,
# computes and writes its result; everything works as on the host.
. "$(dirname "$0")/lib.sh"
bold "Scenario 1 - normal execution"
mkdir -p "$W/data" "$W/work"
cp /usr/share/common-licenses/GPL-3 "$W/data/input.txt" 2>/dev/null || seq 1 5000 >"$W/data/input.txt"
chown 4242:4242 "$W/work" # an owner of its own: the agent writes as this owner
cat >"$W/policy.json" <<JSON
{ "version": 1, "name": "normal",
  "fs": { "grants": [ { "path": "$W/data", "mode": "ro", "at": "/data" },
                      { "path": "$W/work", "mode": "rw", "at": "/work" } ],
          "workdir": "/work" },
  "limits": { "memory": "256M", "cpu": 1, "pids": 64, "wall": "30s" } }
JSON
section "capabilities granted"
capabilities "$W/policy.json"
section "run: python3 examples/agents/hello.py"
out=$("$SANDCAP" run --json --policy "$W/policy.json" -- python3 - <"$ROOT/examples/agents/hello.py" 2>"$W/summary")
rc=$?
echo "$out" | indent
section "checked from outside"
expect "exit status 0" [ "$rc" = 0 ]
expect "result written to the granted folder on the host" [ -s "$W/work/report.txt" ]
expect "result owned on the host by the folder's owner (uid $(stat -c %u "$W/work"))" [ "$(stat -c %u "$W/work/report.txt" 2>/dev/null)" = "$(stat -c %u "$W/work")" ]
expect "agent ran as uid 1000 inside" contains "$out" "as uid 1000"
section "audit excerpt"
audit_excerpt "$(last_audit)" proc.exec sandbox.exit
html_report scenario-1 "$(last_audit)"
exit $FAILS
