#!/bin/sh
# SPDX-License-Identifier: MIT
#
# filters-overhead.sh [FILTER_WRAP]
#
# Cost of the second wall (Landlock + seccomp) measured with filter-wrap
# (tests/escape/filter-wrap.c), which applies exactly the rulesets sandcap
# builds but no namespaces:
#  - start-up: /bin/true under no filter, seccomp alone, Landlock + seccomp,
#    and with exec/deny auditing through the user-notification listener;
#  - a syscall-heavy workload, `find /usr -type f | wc -l`
#    (getdents64/newfstatat/openat by the hundred thousand), bare and under
#    each filter alone and both (the file counts must agree, or the filters
#    hid files and the timing means nothing);
#  - an exec-heavy one (200 x /bin/true), where every exec makes a round trip
#    through the listener;
#  - the floor: a seccomp filter of one instruction that allows everything
#    (filter-wrap --seccomp-allow-all), in the find workload and per call.
#    It is what any seccomp filter costs on this kernel, before a single
#    rule: each syscall of a filtered task takes the kernel's slow entry
#    path. A profile cannot cost less than it;
#  - the CPU each filter adds per syscall, measured inside one process
#    (build/bench/syscall-cost): a syscall seccomp's cache allows, one the
#    filter evaluates, stat, open (Landlock's path walk), a find-like walk.
# The start-up runs use hyperfine in ROUNDS rounds that alternate between
# the commands; the workloads run in interleaved rounds of their own (below)
# and report medians of wall-clock and of CPU time, which a loaded machine
# does not inflate the way it inflates wall-clock time.
# Needs hyperfine and python3. Prints each median and its ratio to the bare run.
# env: RUNS (default 10), ROUNDS (default 5), FIND_ROUNDS (default 2 x RUNS),
# COST_ROUNDS (default 5), BENCH_RESULTS (append
# "filters<TAB>WORKLOAD<TAB>NAME<TAB>MS<TAB>RATIO<TAB>CPU_MS<TAB>CPU_RATIO" lines;
# on a loaded machine the CPU time, user + system, is the steadier figure).
set -eu

WRAP=${1:-$(dirname "$0")/../build/tests/escape/filter-wrap}
[ -x "$WRAP" ] || { echo "no filter-wrap at $WRAP" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "hyperfine missing (apt-get install hyperfine)" >&2; exit 77; }
WORK='find /usr -type f 2>/dev/null | wc -l'
OUT=$(mktemp)
LOG=$(mktemp)
trap 'rm -f "$OUT" "$OUT".* "$LOG"' EXIT
# hyperfine's own warnings (outliers on a shared machine) go to a log shown
# only when it fails.
hf() { hyperfine "$@" >"$LOG" 2>&1 || { cat "$LOG" >&2; exit 1; }; }
# hyperfine runs one command's batch after the other; on a shared machine the
# load moves between batches, so the runs are split into ROUNDS rounds that
# alternate between all commands, and pooled. hfr RUNS HYPERFINE-ARGS...
ROUNDS=${ROUNDS:-5}
hfr() {
	hfr_runs=$(((${1} + ROUNDS - 1) / ROUNDS))
	shift
	rm -f "$OUT".*
	for hfr_round in $(seq "$ROUNDS"); do
		hf --runs "$hfr_runs" --export-json "$OUT.$hfr_round" "$@"
	done
}

report() { # WORKLOAD-LABEL
python3 - "$OUT" "$1" "${BENCH_RESULTS:-}" <<'PY'
import glob, json, statistics, sys
prefix, label, out = sys.argv[1:4]
r = {}
for path in sorted(glob.glob(prefix + ".*")):
    for x in json.load(open(path))["results"]:
        a = r.setdefault(x["command"], {"times": [], "user": [], "system": []})
        a["times"] += x["times"]
        a["user"].append(x["user"])
        a["system"].append(x["system"])
for a in r.values():
    a["median"] = statistics.median(a["times"])
    a["user"] = statistics.mean(a["user"])
    a["system"] = statistics.mean(a["system"])
base = r["bare"]["median"]
cbase = r["bare"]["user"] + r["bare"]["system"]
rows = []
for name, x in r.items():
    cpu = x["user"] + x["system"]
    print(f"{name:24s} wall {x['median'] * 1000:8.2f} ms (median) ratio {x['median'] / base:5.3f}"
          f"   cpu {cpu * 1000:8.1f} ms ratio {cpu / cbase:5.3f}")
    rows.append(f"filters\t{label}\t{name}\t{x['median'] * 1000:.3f}\t{x['median'] / base:.3f}"
                f"\t{cpu * 1000:.3f}\t{cpu / cbase:.3f}\n")
if out:
    with open(out, "a") as f:
        f.writelines(rows)
PY
}

hfr "$((${RUNS:-10} * 10))" -N --warmup 10 --style basic \
	-n bare "$WRAP --no-ns --no-landlock --no-seccomp -- /bin/true" \
	-n seccomp "$WRAP --no-ns --no-landlock -- /bin/true" \
	-n landlock+seccomp "$WRAP --no-ns -- /bin/true" \
	-n landlock+seccomp+audit "$WRAP --no-ns --audit -- /bin/true"
echo "== start-up: filter-wrap /bin/true"
report startup

# The workloads below run one process per command and round, the commands of
# a round in an order that rotates from round to round; each run's CPU time
# (user + system of the process and everything it waited for, from wait4)
# is the figure to read: a loaded machine delays a run but does not bill it
# CPU time. Medians over the rounds; the CPU ratio is also given per round
# (each command against the bare run of the same round) and between the
# fastest runs (another load only ever adds CPU time: cache misses, stolen
# cycles).
# interleave LABEL ROUNDS NAME=COMMAND...
interleave() {
python3 - "${BENCH_RESULTS:-}" "$@" <<'PY'
import os, statistics, subprocess, sys, time
out, label, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
cmds = [a.split("=", 1) for a in sys.argv[4:]]
wall = {n: [] for n, _ in cmds}
cpu = {n: [] for n, _ in cmds}
for n, c in cmds:  # warm-up: page cache, dentries
    subprocess.run(c, shell=True, stdout=subprocess.DEVNULL)
for r in range(rounds):
    for k in range(len(cmds)):
        n, c = cmds[(k + r) % len(cmds)]
        t0 = time.perf_counter()
        p = subprocess.Popen(c, shell=True, stdout=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall[n].append(time.perf_counter() - t0)
        cpu[n].append(ru.ru_utime + ru.ru_stime)
        if status != 0:
            sys.exit(f"{n}: exit status {status}")
med = lambda v: statistics.median(v)
bw, bc = med(wall["bare"]), med(cpu["bare"])
rows = []
for n, _ in cmds:
    w, c = med(wall[n]), med(cpu[n])
    paired = med([x / y for x, y in zip(cpu[n], cpu["bare"])])
    lo = min(cpu[n]) / min(cpu["bare"])
    print(f"{n:24s} wall {w * 1000:8.2f} ms ratio {w / bw:5.3f}   cpu {c * 1000:8.2f} ms ratio {c / bc:5.3f}"
          f" (per round {paired:5.3f}, fastest {lo:5.3f})")
    rows.append(f"filters\t{label}\t{n}\t{w * 1000:.3f}\t{w / bw:.3f}\t{c * 1000:.3f}\t{c / bc:.3f}\n")
if out:
    with open(out, "a") as f:
        f.writelines(rows)
PY
}

bare=$(/bin/sh -c "$WORK")
filtered=$("$WRAP" --no-ns -- /bin/sh -c "$WORK")
if [ "$bare" != "$filtered" ]; then
	echo "find saw $bare files bare but $filtered under the filters: not comparable" >&2
	exit 1
fi
echo "== find /usr -type f | wc -l ($bare files; ${FIND_ROUNDS:=$((${RUNS:-10} * 2))} interleaved rounds)"
interleave find "$FIND_ROUNDS" \
	"bare=/bin/sh -c '$WORK'" \
	"seccomp-allow-all=$WRAP --no-ns --no-landlock --seccomp-allow-all -- /bin/sh -c '$WORK'" \
	"seccomp=$WRAP --no-ns --no-landlock -- /bin/sh -c '$WORK'" \
	"landlock=$WRAP --no-ns --no-seccomp -- /bin/sh -c '$WORK'" \
	"landlock+seccomp=$WRAP --no-ns -- /bin/sh -c '$WORK'" \
	"landlock+seccomp+audit=$WRAP --no-ns --audit -- /bin/sh -c '$WORK' 2>/dev/null"

# shellcheck disable=SC2016 # expanded by the inner shell
EXECS='i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done'
echo "== 200 x exec /bin/true (${RUNS:-10} interleaved rounds)"
interleave exec200 "${RUNS:-10}" \
	"bare=/bin/sh -c '$EXECS'" \
	"landlock+seccomp=$WRAP --no-ns -- /bin/sh -c '$EXECS'" \
	"landlock+seccomp+audit=$WRAP --no-ns --audit -- /bin/sh -c '$EXECS' 2>/dev/null"

# Per syscall, inside one process (bench/syscall-cost.c): what each filter
# adds to a call seccomp's cache allows, to one it evaluates, to a stat and
# to an open (Landlock's path walk), and to a find-like walk of /usr/share.
# by absolute path: filter-wrap grants the program's directory
COST=$(cd "$(dirname "$WRAP")/../../bench" 2>/dev/null && pwd)/syscall-cost || COST=
if [ -n "$COST" ] && [ -x "$COST" ]; then
	echo "== CPU per operation in one process (bench/syscall-cost, ${COST_ROUNDS:=5} interleaved rounds)"
	python3 - "$COST_ROUNDS" "${BENCH_RESULTS:-}" "bare=$COST" \
		"seccomp-allow-all=$WRAP --no-ns --no-landlock --seccomp-allow-all -- $COST" \
		"seccomp=$WRAP --no-ns --no-landlock -- $COST" \
		"landlock=$WRAP --no-ns --no-seccomp -- $COST" \
		"landlock+seccomp=$WRAP --no-ns -- $COST" \
		"landlock+seccomp+audit=$WRAP --no-ns --audit -- $COST" <<'PY' || exit 1
import statistics, subprocess, sys
rounds, out = int(sys.argv[1]), sys.argv[2]
cmds = [a.split("=", 1) for a in sys.argv[3:]]
res = {}  # (config, op) -> [ns]
ops = []
for r in range(rounds):
    for k in range(len(cmds)):
        n, c = cmds[(k + r) % len(cmds)]
        p = subprocess.run(c.split(), capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"syscall-cost under {n}: {p.stderr.strip()}")
        for line in p.stdout.splitlines():
            f = line.split()
            if f[0] not in ops:
                ops.append(f[0])
            res.setdefault((n, f[0]), []).append(float(f[1]))
names = [n for n, _ in cmds]
print(f"{'ns per call (walk: ms)':24s}" + "".join(f"{n:>24s}" for n in names))
rows = []
for op in ops:
    # each figure already is the fastest batch of its run; the median over
    # the rounds drops the runs another load slowed throughout
    base = statistics.median(res[("bare", op)])
    line = f"{op:24s}"
    for n in names:
        v = statistics.median(res[(n, op)])
        scale = 1e6 if op == "walk" else 1
        line += f"{v / scale:14.1f} ({v / base:5.3f}x)"
        rows.append(f"filters\tcall-{op}\t{n}\t{v / scale:.3f}\t{v / base:.3f}\t{v / scale:.3f}\t{v / base:.3f}\n")
    print(line)
if out:
    with open(out, "a") as f:
        f.writelines(rows)
PY
fi

# The floor (syscall-cost -F): two threads on one CPU taking turns, one
# under a one-instruction allow-all filter. Whatever a profile allows, a
# filtered task pays at least this.
if [ -n "$COST" ] && [ -x "$COST" ]; then
	echo "== seccomp's floor: a one-instruction allow-all filter, same CPU, alternating batches ($COST_ROUNDS runs)"
	for _ in $(seq "$COST_ROUNDS"); do "$COST" -F || exit 1; done | python3 -c '
import statistics, sys
out = sys.argv[1]
r = {}
for line in sys.stdin:
    name, bare, filtered = line.split()
    r.setdefault(name, []).append((float(bare), float(filtered)))
rows = []
for name, v in r.items():
    bare = statistics.median(b for b, _ in v)
    filt = statistics.median(f for _, f in v)
    ratio = statistics.median(f / b for b, f in v)
    scale, unit = (1e6, "ms") if name == "floor-walk" else (1, "ns")
    print(f"{name:24s} bare {bare / scale:10.1f} {unit}   allow-all filter {filt / scale:10.1f} {unit}   ratio {ratio:5.3f}")
    rows.append(f"filters\t{name}\tallow-all\t{filt / scale:.3f}\t{ratio:.3f}\t{bare / scale:.3f}\t{ratio:.3f}\n")
if out:
    with open(out, "a") as f:
        f.writelines(rows)
' "${BENCH_RESULTS:-}" || exit 1
fi
