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
#    the same filters (the file counts must agree, or the filters hid files
#    and the timing means nothing);
#  - an exec-heavy one (200 x /bin/true), where every exec makes a round trip
#    through the listener.
# Needs hyperfine and python3. Prints each median and its ratio to the bare run.
# env: RUNS (default 10), ROUNDS (default 5), BENCH_RESULTS (append
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

bare=$(/bin/sh -c "$WORK")
filtered=$("$WRAP" --no-ns -- /bin/sh -c "$WORK")
if [ "$bare" != "$filtered" ]; then
	echo "find saw $bare files bare but $filtered under the filters: not comparable" >&2
	exit 1
fi
hfr "${RUNS:-10}" --warmup 1 --style basic \
	-n bare "/bin/sh -c '$WORK'" \
	-n seccomp "$WRAP --no-ns --no-landlock -- /bin/sh -c '$WORK'" \
	-n landlock+seccomp "$WRAP --no-ns -- /bin/sh -c '$WORK'" \
	-n landlock+seccomp+audit "$WRAP --no-ns --audit -- /bin/sh -c '$WORK' 2>/dev/null"
echo "== find /usr -type f | wc -l ($bare files)"
report find

# shellcheck disable=SC2016 # expanded by the inner shell
EXECS='i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done'
hfr "${RUNS:-10}" --warmup 1 --style basic \
	-n bare "/bin/sh -c '$EXECS'" \
	-n landlock+seccomp "$WRAP --no-ns -- /bin/sh -c '$EXECS'" \
	-n landlock+seccomp+audit "$WRAP --no-ns --audit -- /bin/sh -c '$EXECS' 2>/dev/null"
echo "== 200 x exec /bin/true"
report exec200
