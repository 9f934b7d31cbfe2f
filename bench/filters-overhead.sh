#!/bin/sh
# SPDX-License-Identifier: MIT
#
# filters-overhead.sh [FILTER_WRAP]
#
# Cost of the second wall on a syscall-heavy workload: `find /usr -type f | wc -l`
# (getdents64/newfstatat/openat by the ten thousand) bare, under seccomp
# alone, under Landlock + seccomp, and with exec/deny auditing through the
# user-notification listener; then on an exec-heavy one (200 x /bin/true),
# where every exec makes a round trip through the listener. FILTER_WRAP is the filter-wrap test tool
# (tests/escape/filter-wrap.c). Needs hyperfine and python3. Prints each
# mean and its ratio to the bare run.
set -eu

WRAP=${1:-$(dirname "$0")/../build/filter-wrap}
[ -x "$WRAP" ] || { echo "no filter-wrap at $WRAP" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "hyperfine missing (apt-get install hyperfine)" >&2; exit 77; }
WORK='find /usr -type f | wc -l'
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT

hyperfine --warmup 2 --runs "${RUNS:-10}" --style basic --export-json "$OUT" \
	-n bare "/bin/sh -c '$WORK'" \
	-n seccomp "$WRAP --no-ns --no-landlock -- /bin/sh -c '$WORK'" \
	-n landlock+seccomp "$WRAP --no-ns -- /bin/sh -c '$WORK'" \
	-n landlock+seccomp+audit "$WRAP --no-ns --audit -- /bin/sh -c '$WORK' 2>/dev/null" \
	>/dev/null

report() {
python3 - "$OUT" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
base = r["bare"]["mean"]
cbase = r["bare"]["user"] + r["bare"]["system"]
for name, x in r.items():
    cpu = x["user"] + x["system"]
    print(f"{name:24s} wall {x['mean'] * 1000:8.1f} ms ± {x['stddev'] * 1000:5.1f} ratio {x['mean'] / base:5.3f}"
          f"   cpu {cpu * 1000:8.1f} ms ratio {cpu / cbase:5.3f}")
PY
}
echo "== $WORK"
report

# shellcheck disable=SC2016 # expanded by the inner shell
EXECS='i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done'
hyperfine --warmup 2 --runs "${RUNS:-10}" --style basic --export-json "$OUT" \
	-n bare "/bin/sh -c '$EXECS'" \
	-n landlock+seccomp "$WRAP --no-ns -- /bin/sh -c '$EXECS'" \
	-n landlock+seccomp+audit "$WRAP --no-ns --audit -- /bin/sh -c '$EXECS' 2>/dev/null" \
	>/dev/null
echo "== 200 x exec /bin/true"
report
