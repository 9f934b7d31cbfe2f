#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Cost of exec auditing inside a real sandbox: a shell loop running N
# execve of /bin/true inside `sandcap run`, with audit.exec on and off, and
# on the host. Each exec with audit.exec makes a round trip through the
# supervisor's seccomp user-notification listener and appends one hash-chained
# record; the difference between the two sandboxed runs, divided by N, is
# that cost (target: under 50 us): the median over rounds of the paired
# difference, in wall clock and in CPU time (user + system of the whole
# sandbox, which the supervisor reaps). The log of the audited run must hold at
# least N proc.exec records, or the comparison means nothing.
#
#   bench/exec-audit.sh [SANDCAP_BINARY]   (as root)
#   env: EXECS (default 1000), RUNS (default 5), BENCH_RESULTS (append
#   "exec-audit<TAB>NAME<TAB>VALUE<TAB>UNIT" lines)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
S=${1:-$(pwd)/build/sandcap}
N=${EXECS:-1000}
RUNS=${RUNS:-5}
bench_tmp exec-audit

echo '{ "version": 1, "audit": { "exec": true } }' >"$T/on.json"
echo '{ "version": 1, "audit": { "exec": false } }' >"$T/off.json"
# shellcheck disable=SC2016 # expanded by the inner shell
LOOP='i=0; while [ $i -lt '"$N"' ]; do /bin/true; i=$((i+1)); done'

"$S" run --quiet --audit "$T/check.jsonl" --policy "$T/on.json" -- /bin/sh -c "$LOOP"
got=$(grep -c '"event":"proc.exec"' "$T/check.jsonl" || true)
if [ "$got" -lt "$N" ]; then
	echo "exec-audit: the audited run logged $got proc.exec records, expected at least $N" >&2
	exit 1
fi

# The mechanism's floor on this kernel, in the same rounds: the same loop
# on the host under a filter that sends only execve to a listener which
# answers "continue" and does nothing else, and under one served by
# sandcap's handler, which also copies path and argv out and builds the
# record but neither hashes nor writes it (tests/escape/filter-wrap).
FW=$(dirname "$S")/tests/escape/filter-wrap
floor=()
if [ -x "$FW" ]; then
	floor=(-n notify-floor "$FW --no-ns --no-landlock --exec-notify-floor -- /bin/sh -c '$LOOP'"
		-n notify-read "$FW --no-ns --no-landlock --exec-notify-read -- /bin/sh -c '$LOOP'")
fi

# One run of each command per round, alternating: the load of a shared
# machine moves between batches.
for round in $(seq "$RUNS"); do
	if ! hyperfine -N --warmup "$([ "$round" = 1 ] && echo 1 || echo 0)" --runs 1 --export-json "$T/r.$round.json" \
		-n host "/bin/sh -c '$LOOP'" \
		-n sandbox-audit-off "$S run --quiet --policy $T/off.json -- /bin/sh -c '$LOOP'" \
		-n sandbox-audit-on "$S run --quiet --policy $T/on.json -- /bin/sh -c '$LOOP'" \
		"${floor[@]}" >"$T/hf.log" 2>&1; then
		cat "$T/hf.log" >&2
		exit 1
	fi
done
python3 - "$T" "$N" "${BENCH_RESULTS:-}" <<'PY'
import glob, json, statistics, sys
d, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
wall, cpu, diff, cdiff = {}, {}, [], []
fdiff = {"notify-floor": [], "notify-read": []}
for path in glob.glob(d + "/r.*.json"):
    rnd = {x["command"]: x for x in json.load(open(path))["results"]}
    for k, x in rnd.items():
        wall.setdefault(k, []).extend(x["times"])
        cpu.setdefault(k, []).append(x["user"] + x["system"])
    # Paired within the round: the two sandboxed runs ran back to back, under
    # about the same load.
    on, off = rnd["sandbox-audit-on"], rnd["sandbox-audit-off"]
    diff.append(on["mean"] - off["mean"])
    cdiff.append(on["user"] + on["system"] - off["user"] - off["system"])
    for k in fdiff:
        if k in rnd:
            fdiff[k].append(rnd[k]["mean"] - rnd["host"]["mean"])
print(f"{n} x execve(/bin/true) in a shell loop, {len(diff)} rounds (medians)")
rows = []
for name in ("host", "sandbox-audit-off", "sandbox-audit-on", "notify-floor", "notify-read"):
    if name not in wall:
        continue
    w, c = statistics.median(wall[name]), statistics.median(cpu[name])
    print(f"  {name:20s} wall {w / n * 1e6:7.1f} us per exec   CPU {c / n * 1e6:7.1f} us per exec")
    rows.append((name, w / n * 1e6, "us/exec"))
cost = statistics.median(diff) / n * 1e6
ccost = statistics.median(cdiff) / n * 1e6
# On a loaded machine the wall-clock cost is mostly the wait for the
# supervisor to be scheduled at every exec; the CPU cost is the work itself.
print(f"  exec auditing adds {cost:.1f} us of wall clock and {ccost:.1f} us of CPU per exec"
      f" (median of paired rounds; target < 50 us)")
for k, label in (("notify-floor", "the bare notification round trip"),
                 ("notify-read", "round trip + copying path and argv out + building the record")):
    if fdiff[k]:
        v = statistics.median(fdiff[k]) / n * 1e6
        print(f"  floor on the host: {label} adds {v:.1f} us per exec")
        rows.append((k + "-cost", v, "us/exec"))
rows.append(("audit-cost", cost, "us/exec"))
rows.append(("audit-cpu", ccost, "us/exec"))
if out:
    with open(out, "a") as f:
        for name, v, unit in rows:
            f.write(f"exec-audit\t{name}\t{v:.2f}\t{unit}\n")
PY
