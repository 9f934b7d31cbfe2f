#!/usr/bin/env bash
# Scenario 2: resource limits. An agent allocates without end (OOM-killed by
# the kernel) and one spins on every core (throttled to its CPU quota).
. "$(dirname "$0")/lib.sh"
bold "Scenario 2 - resource limits (OOM kill and CPU throttling)"
cat >"$W/policy.json" <<JSON
{ "version": 1, "name": "limits", "limits": { "memory": "64M", "cpu": 0.5, "pids": 32, "wall": "20s" },
  "audit": { "sample_interval": "100ms" } }
JSON
section "limits enforced"
"$SANDCAP" check --policy "$W/policy.json" | sed -n '/^Limits/,/^$/p' | indent
section "run: hog.py mem 0.15 (allocates 16 MiB every 0.15 s, forever)"
"$SANDCAP" run --json --policy "$W/policy.json" -- python3 - mem 0.15 <"$ROOT/examples/agents/hog.py" 2>"$W/mem.json" | tail -2 | indent
rc=${PIPESTATUS[0]}
tail -1 "$W/mem.json" | cut -c1-200 | indent
expect "killed by SIGKILL (exit $rc = 128+9)" [ "$rc" = 137 ]
expect "the cgroup reports the OOM kill" [ "$(json_field oom_killed <"$W/mem.json")" = True ]
peak=$(json_field memory_peak <"$W/mem.json")
expect "peak memory $((peak / 1048576)) MiB, at the 64 MiB limit" [ "$peak" -le $((66 << 20)) ]
audit_excerpt "$(last_audit)" limit.hit
html_report scenario-2 "$(last_audit)"
section "run: hog.py cpu 3 (spins on every core for 3 s)"
"$SANDCAP" run --json --policy "$W/policy.json" -- python3 - cpu 3 <"$ROOT/examples/agents/hog.py" 2>"$W/cpu.json" | indent
tail -1 "$W/cpu.json" | cut -c1-200 | indent
cpu=$(json_field cpu_s <"$W/cpu.json")
thr=$(json_field throttled_s <"$W/cpu.json")
expect "CPU used ${cpu%????} s in 3 s wall: about half a core" python3 -c "import sys; sys.exit(0 if 1.1 <= $cpu <= 1.9 else 1)"
expect "throttled ${thr%????} s, reported" [ "$(json_field cpu_throttled <"$W/cpu.json")" = True ]
audit_excerpt "$(last_audit)" limit.hit
html_report scenario-2-cpu "$(last_audit)"
exit $FAILS
