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
# log on tmpfs (SANDCAP_STATE_DIR=/dev/shm/...), not by the patch.
#
#   bench/startup-ablation.sh        (as root; needs bwrap, meson, ninja)
#   env: RUNS (default 100 rounds), BENCH_RESULTS (append
#   "ablation<TAB>NAME<TAB>MS" lines)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
RUNS=${RUNS:-100}
bench_tmp startup-ablation

mkdir "$T/state" /dev/shm/sandcap-ablation.$$
bench_on_exit 'rm -rf /dev/shm/sandcap-ablation.$$'
bench_ablation_build "$T"

echo '{ "version": 1, "audit": { "exec": false } }' >"$T/minimal.json"

python3 - "$T/build/sandcap" "$T/minimal.json" "$T/state" "/dev/shm/sandcap-ablation.$$" \
	"$RUNS" "${BENCH_RESULTS:-}" <<'PY'
import os, statistics, subprocess, sys, time
sandcap, policy, state, shm, runs, out = sys.argv[1:7]
runs = int(runs)
bwrap = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr",
         "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
         "--symlink", "usr/sbin", "/sbin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "/bin/true"]
run = [sandcap, "run", "--quiet", "--policy", policy, "--", "/bin/true"]
layers = ["seccomp", "landlock", "masks", "cgroup", "init"]
cases = [("bwrap", bwrap, {}), ("sandcap", run, {"SANDCAP_STATE_DIR": state}),
         ("no audit disk I/O", run, {"SANDCAP_STATE_DIR": shm})]
cases += [(f"no {l}", run, {"SANDCAP_STATE_DIR": state, "SANDCAP_ABLATE": l}) for l in layers]
cases += [("none of them", run, {"SANDCAP_STATE_DIR": shm, "SANDCAP_ABLATE": ",".join(layers)})]
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
    delta = "" if name in ("bwrap", "sandcap") else f"  {ms - full:+6.2f} ms"
    print(f"  {name:20s} {ms:6.2f} ms  {ms / bw:5.2f}x bwrap{delta}")
if out:
    with open(out, "a") as f:
        for name, ms in med.items():
            f.write(f"ablation\t{name}\t{ms:.3f}\n")
PY
