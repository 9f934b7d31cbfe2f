#!/usr/bin/env bash
# Scenario 4: filesystem isolation. The agent reads and writes what it was
# granted and is refused everything else, checked on the host afterwards.
. "$(dirname "$0")/lib.sh"
bold "Scenario 4 - filesystem isolation (granted paths only)"
mkdir -p "$W/data" "$W/work" "$W/private"
echo "the quick brown fox jumps over the lazy dog" >"$W/data/input.txt"
echo "host-secret-$$" >"$W/private/secret.txt"
cat >"$W/policy.json" <<JSON
{ "version": 1, "name": "filesystem",
  "fs": { "grants": [ { "path": "$W/data", "mode": "ro", "at": "/data" },
                      { "path": "$W/work", "mode": "rw", "at": "/work" } ],
          "workdir": "/work" },
  "env": { "HOST_SECRET": "$W/private/secret.txt" } }
JSON
section "capabilities granted"
"$SANDCAP" check --policy "$W/policy.json" | sed -n '/^Files/,/^$/p' | indent
section "run: examples/agents/fs-agent.sh"
out=$("$SANDCAP" run --quiet --policy "$W/policy.json" -- sh -s <"$ROOT/examples/agents/fs-agent.sh" 2>&1)
echo "$out" | indent
section "checked from outside"
expect "granted read worked" contains "$out" "ALLOWED read granted"
expect "host file outside the grants refused" contains "$out" "REFUSED read host file"
expect "/etc/shadow refused" contains "$out" "REFUSED read /etc/shadow"
expect "granted write landed on the host" grep -q words "$W/work/result.txt"
expect "read-only input unchanged on the host" grep -q "quick brown fox" "$W/data/input.txt"
expect "nothing written outside (/usr/bin/evil absent)" [ ! -e /usr/bin/evil ]
expect "symlink escape refused" contains "$out" "REFUSED escape with a symlink"
expect "the secret never appeared inside" bash -c "! grep -q host-secret-$$ <<<'$out'"
section "audit excerpt"
audit_excerpt "$(last_audit)" fs.grant
html_report scenario-4 "$(last_audit)"
exit $FAILS
