#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Where sandcap's start-up goes beyond bubblewrap's. sandcap does work at
# every start that `bwrap --unshare-all` does not: a durable audit log, a
# cgroup (for limits and accounting), Landlock, seccomp, the /proc masks
# and a fresh pid 1 (sandcap-init). This builds a scratch copy of sandcap
# with bench/ablation.patch, which lets SANDCAP_ABLATE name layers to skip
# (never part of a real build), and times `run -- /bin/true` of the minimal
# policy with each layer taken away, all of them, and bwrap, interleaved
# round by round. The audit log's disk work is taken away by keeping the
# log on tmpfs (SANDCAP_STATE_DIR=/dev/shm/...), not by the patch. Then
# build/bench/layer-floors (when built): what loading the agent's seccomp
# filter, a cgroup per sandbox and the log's last boundary (in the same
# state directory) cost at the kernel's cheapest.
#
#   bench/startup-ablation.sh        (as root; needs bwrap, meson, ninja)
#   env: RUNS (default 100 rounds), BENCH_RESULTS (append
#   "ablation<TAB>NAME<TAB>MS" lines), BEFORE (a git revision or source
#   directory built the same way and run in the same rounds: each layer's
#   cost, the run with it less the run without it, before and after)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
RUNS=${RUNS:-100}
bench_tmp startup-ablation

mkdir "$T/state" /dev/shm/sandcap-ablation.$$
bench_on_exit 'rm -rf /dev/shm/sandcap-ablation.$$'
bench_ablation_build "$T"
before=
if [ -n "${BEFORE:-}" ]; then
	bench_ablation_build "$T/before" "$BEFORE"
	before=$T/before/build/sandcap
fi

echo '{ "version": 1, "audit": { "exec": false } }' >"$T/minimal.json"

python3 - "$T/build/sandcap" "$T/minimal.json" "$T/state" "/dev/shm/sandcap-ablation.$$" \
	"$RUNS" "${BENCH_RESULTS:-}" "$before" <<'PY'
import os, statistics, subprocess, sys, time
sandcap, policy, state, shm, runs, out, before = sys.argv[1:8]
runs = int(runs)
bwrap = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr",
         "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
         "--symlink", "usr/sbin", "/sbin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "/bin/true"]
layers = ["seccomp", "landlock", "masks", "cgroup", "init"]
def build_cases(binary, tag):
    run = [binary, "run", "--quiet", "--policy", policy, "--", "/bin/true"]
    c = [(tag + "sandcap", run, {"SANDCAP_STATE_DIR": state}),
         (tag + "no audit disk I/O", run, {"SANDCAP_STATE_DIR": shm})]
    c += [(f"{tag}no {l}", run, {"SANDCAP_STATE_DIR": state, "SANDCAP_ABLATE": l}) for l in layers]
    c += [(tag + "none of them", run, {"SANDCAP_STATE_DIR": shm, "SANDCAP_ABLATE": ",".join(layers)})]
    return c
cases = [("bwrap", bwrap, {})] + build_cases(sandcap, "")
if before:
    cases += build_cases(before, "before: ")
env = {k: v for k, v in os.environ.items() if k not in ("SANDCAP_ABLATE", "SANDCAP_STATE_DIR")}
times = {name: [] for name, _, _ in cases}
null = open(os.devnull, "w")
def once(argv, extra):
    t = time.perf_counter()
    rc = subprocess.call(argv, stdout=null, stderr=null, env={**env, **extra})
    if rc != 0:
        sys.exit(f"startup-ablation: {argv[0]} exited {rc}")
    return time.perf_counter() - t
for _, argv, extra in cases:  # warm-up
    for _ in range(3):
        once(argv, extra)
# One run of every case per round, in a rotating order: the machine's
# speed drifts, and each case sees the same drift.
for r in range(runs):
    for k in range(len(cases)):
        name, argv, extra = cases[(k + r) % len(cases)]
        times[name].append(once(argv, extra))
med = {name: statistics.median(t) * 1000 for name, t in times.items()}
full, bw = med["sandcap"], med["bwrap"]
print(f"start-up of run -- /bin/true, minimal policy, layers taken away (median of {runs} interleaved rounds)")
for name, ms in med.items():
    if name.startswith("before: "):
        continue
    delta = "" if name in ("bwrap", "sandcap") else f"  {ms - full:+6.2f} ms"
    print(f"  {name:20s} {ms:6.2f} ms  {ms / bw:5.2f}x bwrap{delta}")
if before:
    # A layer's cost: the run with it less the run without it, in each build.
    bfull = med["before: sandcap"]
    print(f"each layer's cost, before ({os.environ.get('BEFORE', '')}) and after (ms)")
    print(f"  {'sandcap, all layers':20s} {bfull:6.2f} -> {full:6.2f}  ({bfull / bw:4.2f}x -> {full / bw:4.2f}x bwrap)")
    for name in med:
        if name.startswith("no ") or name == "none of them":
            b, a = bfull - med["before: " + name], full - med[name]
            print(f"  {name[3:] if name.startswith('no ') else 'all of them':20s} {b:6.2f} -> {a:6.2f}")
if out:
    with open(out, "a") as f:
        for name, ms in med.items():
            f.write(f"ablation\t{name}\t{ms:.3f}\n")
PY
if [ -x build/bench/layer-floors ]; then
	echo "the mechanisms' floors (build/bench/layer-floors, medians, ms)"
	build/bench/layer-floors -n 200 -d "$T/state" | while read -r name ms extra; do
		case $name in
		seccomp-agent) echo "  seccomp: loading the agent's filter ($extra instructions) $ms" ;;
		seccomp-one) echo "  seccomp: loading a filter of one instruction    $ms" ;;
		cgroup-floor) echo "  cgroup: mkdir, a child moving itself in, rmdir  $ms" ;;
		audit-floor) echo "  audit: the seal's fsync and the reserve given back $ms" ;;
		esac
	done
fi
