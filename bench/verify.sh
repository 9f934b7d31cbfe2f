#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `sandcap audit verify` against the Python verifier of docs/audit.md
# (docs/performance.md, "Verifying a log"), in the same run, by the same
# rules: each checks every line's keys, types, hash and chain, and the
# seal's HMAC with the key. The Python verifier is taken from the document
# at each run, so it is the one the document shows.
#
# The log: BENCH_RECORDS records (the seal included), typical net.request
# records written by the audit writer (build/bench/audit-rate -w), in a
# directory under BENCH_DIR. Read once first, so both find it in the page
# cache; then BENCH_ROUNDS rounds, each verifier once a round, alternating.
# Prints each time, the medians and their ratio. A number never fails the
# script; a verifier that does not find the log intact, or two reporting
# different last hashes, does. With more than one SANDCAP binary (an
# earlier build, say), each is timed in each round; build/bench/audit-rate
# is taken from beside the first.
#
#   bench/verify.sh [SANDCAP_BINARY...]
#   env: BENCH_RECORDS (default 1000000), BENCH_ROUNDS (default 3),
#        BENCH_DIR (default /var/tmp: the log is about 460 MB)
set -euo pipefail
bins=()
for b in "$@"; do
	bins+=("$(realpath "$b")")
done
cd "$(dirname "$0")/.."
. bench/lib.sh
[ $# -gt 0 ] || bins=("$(pwd)/build/sandcap")
RATE=$(dirname "${bins[0]}")/bench/audit-rate
N=${BENCH_RECORDS:-1000000}
ROUNDS=${BENCH_ROUNDS:-3}
bench_need verify python3 awk
if ! [ "$N" -ge 2 ] 2>/dev/null || ! [ "$ROUNDS" -ge 1 ] 2>/dev/null; then
	echo "verify: BENCH_RECORDS must be >= 2, BENCH_ROUNDS >= 1" >&2
	exit 2
fi
bench_tmp verify "${BENCH_DIR:-/var/tmp}"

# The fenced Python block of docs/audit.md that defines verify().
awk '/^```python$/ { p = 1; b = ""; next }
	p && /^```$/ { if (b ~ /\ndef verify\(/) { printf "%s", b; exit } p = 0; next }
	p { b = b $0 "\n" }' docs/audit.md >"$T/verify_doc.py"
grep -q '^def verify(path, key=None):$' "$T/verify_doc.py" ||
	{ echo "verify: no 'def verify(path, key=None):' in docs/audit.md's Python" >&2; exit 1; }

"$RATE" -w "$T/audit.log" -n $((N - 1))
# audit-rate's key (bench/audit-rate.c)
printf '%s' 'audit-rate benchmark key 32 byte' >"$T/key"
chmod 600 "$T/key"
cat "$T/audit.log" >/dev/null
bytes=$(stat -c %s "$T/audit.log")

run_sandcap() { # BINARY: the last hash, or nothing when the log is not intact
	"$1" audit verify --key "$T/key" "$T/audit.log" >"$T/sandcap.out" 2>&1 || true
	grep -q ': intact, '"$N"' records, .*seal HMAC verified$' "$T/sandcap.out" &&
		sed -n 's/^last hash: //p' "$T/sandcap.out"
}
run_python() {
	python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import verify_doc
print(verify_doc.verify(sys.argv[2], open(sys.argv[3], "rb").read()))' "$T" "$T/audit.log" "$T/key"
}

echo "== audit verify of a $N-record log ($((bytes >> 20)) MiB), $ROUNDS rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
times=()
want=
for ((i = 1; i <= ROUNDS; i++)); do
	for ((k = 0; k <= ${#bins[@]}; k++)); do
		t0=$(date +%s.%N)
		if [ "$k" -lt ${#bins[@]} ]; then
			bin=${bins[k]}
			got=$(run_sandcap "$bin") || got=
		else
			bin=python
			got=$(run_python) || got=
		fi
		t1=$(date +%s.%N)
		: "${want:=$got}"
		if [ -z "$got" ] || [ "$got" != "$want" ]; then
			echo "verify: $bin gave '$got', the first '$want'" >&2
			[ "$bin" = python ] || cat "$T/sandcap.out" >&2
			exit 1
		fi
		times+=("$bin $t0 $t1")
	done
done
python3 - "$N" "${times[@]}" <<'PY'
import statistics, sys
n = int(sys.argv[1])
t = {}
for arg in sys.argv[2:]:
    who, t0, t1 = arg.rsplit(" ", 2)
    t.setdefault(who, []).append(float(t1) - float(t0))
py = statistics.median(t["python"])
for who, s in t.items():
    name = "Python verifier of docs/audit.md" if who == "python" else who + " audit verify --key"
    print("%s: %s s" % (name, ", ".join("%.2f" % x for x in s)))
for who, s in t.items():
    m = statistics.median(s)
    name = "Python verifier" if who == "python" else who
    print("  median %6.2f s, %8.0f records/s, %5.2fx the Python verifier's speed: %s"
          % (m, n / m, py / m, name))
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
