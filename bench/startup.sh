#!/usr/bin/env bash
# Start-up latency of a sandbox running /bin/true and `python3 -c 'print(1)'`,
# for sandcap and its peers measured in the same run, with ratios. Medians
# from hyperfine; a noisy machine moves absolute numbers, so read the ratios.
#
#   bench/startup.sh [SANDCAP_BINARY]   (as root)
#   env: RUNS (default 100), ROUNDS (default 5), BENCH_RESULTS (append "startup<TAB>WORKLOAD<TAB>NAME<TAB>MS" lines)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
S=${1:-$(pwd)/build/sandcap}
RUNS=${RUNS:-100}
ROUNDS=${ROUNDS:-5}
bench_tmp startup

cat >"$T/minimal.json" <<'JSON'
{ "version": 1, "audit": { "exec": false } }
JSON
cat >"$T/limits.json" <<'JSON'
{ "version": 1, "limits": { "memory": "256M", "cpu": 1, "pids": 64 }, "audit": { "exec": false } }
JSON
# The full default policy: limits, a wall clock and exec auditing (the default).
cat >"$T/full.json" <<'JSON'
{ "version": 1, "limits": { "memory": "256M", "cpu": 1, "pids": 64, "wall": "30s" } }
JSON

BWRAP=(bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr
	--symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin
	--symlink usr/sbin /sbin --proc /proc --dev /dev --tmpfs /tmp)

# crun 1.8 refuses cgroup v1 hybrid hosts whose cgroup2 mount lists a
# controller; inside a private mount namespace without that mount it runs.
# The wrapper's own cost is measured alone and subtracted.
CRUN_PRE="unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec"

bench_one() { # LABEL ARGV-AS-STRING BUNDLE-ARGS...
	local label=$1 argv=$2
	shift 2
	local cmds=(
		"plain|$argv"
		"bwrap|${BWRAP[*]} $argv"
		"sandcap-minimal|$S run --quiet --policy $T/minimal.json -- $argv"
		"sandcap-limits|$S run --quiet --policy $T/limits.json -- $argv"
		"sandcap-full|$S run --quiet --policy $T/full.json -- $argv"
	)
	if command -v firejail >/dev/null; then
		cmds+=("firejail|firejail --quiet --noprofile --net=none $argv")
	fi
	if command -v crun >/dev/null; then
		bench_crun_bundle "$T/bundle-$label" "$@"
		cmds+=("crun-limits|$CRUN_PRE crun run --bundle $T/bundle-$label bench-\$\$'")
		cmds+=("crun-wrapper|$CRUN_PRE /bin/true'")
	fi
	local args=() c
	for c in "${cmds[@]}"; do args+=(-n "${c%%|*}" "${c#*|}"); done
	# hyperfine runs one command's batch after the other; on a shared machine
	# the load moves between batches, so the runs are split into rounds that
	# alternate between all commands, and pooled.
	local round per=$(((RUNS + ROUNDS - 1) / ROUNDS))
	for round in $(seq "$ROUNDS"); do
		if ! hyperfine -N --warmup "$([ "$round" = 1 ] && echo 10 || echo 2)" --runs "$per" \
			--export-json "$T/$label.$round.json" "${args[@]}" >"$T/hyperfine.log" 2>&1; then
			cat "$T/hyperfine.log" >&2
			return 1
		fi
	done
	python3 - "$T/$label" "$label" "$argv" "${BENCH_RESULTS:-}" <<'PY'
import glob, json, statistics, sys
prefix, label, argv, out = sys.argv[1:5]
times = {}
for path in sorted(glob.glob(prefix + ".*.json")):
    for r in json.load(open(path))["results"]:
        times.setdefault(r["command"], []).extend(r["times"])
res = {name: statistics.median(t) * 1000 for name, t in times.items()}
if "crun-limits" in res and "crun-wrapper" in res:
    res["crun-limits"] -= res.pop("crun-wrapper")
print(f"start-up to exit of {argv} (median of {len(times['plain'])} runs in {len(glob.glob(prefix + '.*.json'))} rounds, ms)")
for name, ms in res.items():
    note = "  (minus the unshare wrapper)" if name == "crun-limits" else ""
    print(f"  {name:18s} {ms:7.2f} ms{note}")
def ratio(a, b):
    if a in res and b in res:
        print(f"  {a + ' / ' + b + ':':36s} {res[a] / res[b]:5.2f}x")
print("ratios (lower is faster)")
ratio("sandcap-minimal", "bwrap")
ratio("sandcap-limits", "crun-limits")
ratio("sandcap-full", "crun-limits")
ratio("sandcap-full", "bwrap")
ratio("sandcap-full", "firejail")
ratio("sandcap-full", "sandcap-minimal")
if out:
    with open(out, "a") as f:
        for name, ms in res.items():
            f.write(f"startup\t{label}\t{name}\t{ms:.3f}\n")
PY
}

bench_one true /bin/true /bin/true
echo
# /usr/bin/python3 by its full path: the host's PATH may name another Python
# (pyenv, a venv) that the sandboxes, which see only /usr, could not run.
bench_one python "/usr/bin/python3 -c print(1)" /usr/bin/python3 -c 'print(1)'
