#!/usr/bin/env bash
# Scenario 3: egress control. The only door out is the proxy: the allowed
# API answers, a denied domain and the cloud metadata address are refused,
# a direct connection finds nothing, and exfiltration stops at the budget.
. "$(dirname "$0")/lib.sh"
bold "Scenario 3 - egress control (allowlist, denial, exfiltration budget)"
port=$(free_port)
dns=$(free_port)
start_origin "$port" || exit 1
start_dns "$dns" api.allowed.test=127.0.0.1 evil.test=127.0.0.1 || exit 1
cat >"$W/policy.json" <<JSON
{ "version": 1, "name": "egress",
  "net": { "egress": [ { "host": "api.allowed.test", "ports": [$port], "methods": ["GET", "POST"] } ],
           "allow_private": [ "127.0.0.1/32" ],
           "dns": "127.0.0.1:$dns",
           "egress_budget": "1M" },
  "limits": { "wall": "60s" } }
JSON
section "capabilities granted"
"$SANDCAP" check --policy "$W/policy.json" | sed -n '/^Network/,/^$/p' | indent
section "run: examples/agents/net-agent.py"
out=$("$SANDCAP" run --json --policy "$W/policy.json" -- python3 - "http://api.allowed.test:$port" \
	"http://evil.test:$port" "$port" <"$ROOT/examples/agents/net-agent.py" 2>"$W/summary")
echo "$out" | indent
tail -1 "$W/summary" | cut -c1-220 | indent
section "checked from outside"
expect "allowed API answered" contains "$out" "ALLOWED GET allowed API"
expect "denied domain refused" contains "$out" "REFUSED GET denied domain"
expect "cloud metadata refused" contains "$out" "REFUSED GET cloud metadata"
expect "direct TCP connection refused" contains "$out" "REFUSED direct TCP"
expect "small upload allowed" contains "$out" "ALLOWED exfiltrate 256 KiB"
received=$(origin_received)
expect "origin received $((received / 1024)) KiB of uploads: no more than the 1 MiB budget" [ "$received" -le $((1 << 20)) ]
expect "the budget cut is in the audit log" grep -q '"limit":"egress_budget"' "$(last_audit)"
expect "origin saw the allowed GET" bash -c "grep -q 'GET /data.json' '$W/nginx/access.log'"
expect "origin never saw the denied domain" bash -c "! grep -q 'evil' '$W/nginx/access.log'"
section "audit excerpt"
audit_excerpt "$(last_audit)" net.request net.denied limit.hit
html_report scenario-3 "$(last_audit)"
exit $FAILS
