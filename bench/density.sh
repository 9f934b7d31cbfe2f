#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Density: N sandboxes at once on this machine, each running `sleep` until
# released, for sandcap (minimal policy), bubblewrap (the binds of
# bench/startup.sh) and crun (the same bundle and limits as
# bench/startup.sh), in rounds that alternate between them. Per tool and
# round:
#   - the time from the first launch until all N sleeps run (the launches
#     go out as fast as one process can fork them);
#   - memory per sandbox: the PSS (/proc/PID/smaps_rollup) of every process
#     of one sandbox, the supervisor or launcher, helpers, pid 1 and sleep,
#     summed over all N and divided by N, so that shared pages count once;
#     and, where the sandbox has a memory cgroup of its own, that cgroup's
#     usage;
#   - the supervisor alone (the process launched, its PSS);
#   - failures: sandboxes not running after TIMEOUT seconds, or which ended
#     before they were released, or with an unexpected status after;
#   - a leak check once all have ended: cgroup directories in every mounted
#     hierarchy, mounts, processes and run-state files (sandcap's state
#     directory, crun's /run/crun) against a snapshot taken before.
# The release is SIGKILL to every sleep from the host (in crun the sleep is
# pid 1 of its namespace, which ignores SIGTERM), so each sandbox ends by
# its command's end, the ordinary way.
#
# Two more sandcaps may join the same rounds: BEFORE=PATH/sandcap, another
# build (what a change did), and FLOOR=1, the mechanism's floor: a scratch
# build with bench/ablation.patch (bench/startup-ablation.sh) run with every
# layer bubblewrap lacks taken away (seccomp, Landlock, the /proc masks,
# the cgroup, pid 1's exec) and its audit log on tmpfs, so that the time it
# takes is what sandcap's own machinery costs (namespaces, mounts, id maps,
# supervisor, a log) against bubblewrap's.
#
#   bench/density.sh [SANDCAP_BINARY]   (as root)
#   env: N (default 200), ROUNDS (default 3), TIMEOUT (s, default 120),
#        BEFORE, FLOOR (above),
#        BENCH_RESULTS (append "density<TAB>NAME<TAB>VALUE<TAB>UNIT" lines)
# Exits 1 only when a sandbox failed or something leaked, never on a figure.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
S=${1:-$(pwd)/build/sandcap}
N=${N:-200}
ROUNDS=${ROUNDS:-3}
TIMEOUT=${TIMEOUT:-120}
[ "$(id -u)" = 0 ] || { echo "density.sh: run as root" >&2; exit 2; }
command -v bwrap >/dev/null || { echo "density.sh: bwrap missing" >&2; exit 77; }
bench_tmp density /var/tmp
mkdir "$T/state"
floor=""
if [ "${FLOOR:-0}" = 1 ]; then
	mkdir /dev/shm/sandcap-density.$$
	bench_on_exit 'rm -rf /dev/shm/sandcap-density.$$'
	bench_ablation_build "$T/ablated"
	floor=$T/ablated/build/sandcap
fi
echo '{ "version": 1, "audit": { "exec": false } }' >"$T/minimal.json"

# The crun bundle of bench/startup.sh (bench_crun_bundle), running sleep.
have_crun=0
if command -v crun >/dev/null; then
	have_crun=1
	bench_crun_bundle "$T/bundle" /bin/sleep 86399
fi

python3 - "$S" "$T" "$N" "$ROUNDS" "$TIMEOUT" "$have_crun" "${BENCH_RESULTS:-}" "${BEFORE:-}" \
	"$floor" "/dev/shm/sandcap-density.$$" "$BENCH_ABLATE_ALL" <<'PY'
import os, signal, statistics, subprocess, sys, time
sandcap, T, N, rounds, timeout, have_crun, out, before_bin, floor, floor_state, ablate_all = sys.argv[1:12]
N, rounds, timeout = int(N), int(rounds), float(timeout)

# A sleep whose argument names its tool: found in /proc by that.
TOKEN = "86399"
bwrap = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr",
         "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
         "--symlink", "usr/sbin", "/sbin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
         "/bin/sleep", TOKEN]
def sandcap_run(binary):
    return lambda i: [binary, "run", "--quiet", "--policy", f"{T}/minimal.json", "--", "/bin/sleep", TOKEN]
tools = {"sandcap": sandcap_run(sandcap), "bwrap": lambda i: bwrap}
if before_bin:
    tools["before"] = sandcap_run(before_bin)
if floor:
    tools["floor"] = sandcap_run(floor)
if have_crun == "1":
    # crun 1.8 refuses this cgroup v1 hybrid layout while the cgroup2 mount
    # lists a controller: as in bench/startup.sh, each runs in a mount
    # namespace without it (sh execs crun, so the launched process is crun).
    tools["crun"] = lambda i: ["unshare", "-m", "sh", "-c",
                               f"umount /sys/fs/cgroup/unified 2>/dev/null; exec crun run --bundle {T}/bundle density-{os.getpid()}-{i}"]
env = {k: v for k, v in os.environ.items() if k not in ("SANDCAP_ABLATE",)}
env["SANDCAP_STATE_DIR"] = f"{T}/state"
# The floor: every layer the patch can take away, the log on tmpfs.
tool_env = {"floor": dict(env, SANDCAP_ABLATE=ablate_all, SANDCAP_STATE_DIR=floor_state)}
null = open(os.devnull, "w")

def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""

def sleepers():
    """pids of the sleeps of this bench (argv exactly sleep TOKEN)."""
    found = set()
    for d in os.listdir("/proc"):
        if d.isdigit() and read(f"/proc/{d}/comm") == "sleep\n":
            argv = read(f"/proc/{d}/cmdline").split("\0")
            if len(argv) >= 2 and argv[1] == TOKEN:
                found.add(int(d))
    return found

def children(pid):
    kids = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            kids += [int(c) for c in read(f"/proc/{pid}/task/{t}/children").split()]
    except OSError:
        pass
    return kids

def tree(pid):
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += children(p)
    return seen

def pss_kib(pid):
    for line in read(f"/proc/{pid}/smaps_rollup").splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0

own_memcg = None
def memcg_bytes(pid):
    """Usage of the memory cgroup pid is in, if not the bench's own."""
    for line in read(f"/proc/{pid}/cgroup").splitlines():
        hid, ctrl, path = line.split(":", 2)
        if "memory" in ctrl.split(",") or (hid == "0" and not os.path.exists("/sys/fs/cgroup/memory")):
            if path == own_memcg:
                return None
            for f in (f"/sys/fs/cgroup/memory{path}/memory.usage_in_bytes", f"/sys/fs/cgroup{path}/memory.current"):
                v = read(f).strip()
                if v:
                    return int(v)
    return None

def cgroup_dirs():
    dirs = set()
    for line in read("/proc/self/mountinfo").splitlines():
        f = line.split()
        fstype = f[f.index("-") + 1]
        if fstype in ("cgroup", "cgroup2"):
            for root, ds, _ in os.walk(f[4]):
                dirs.update(os.path.join(root, d) for d in ds)
    return dirs

def snapshot():
    state = set()
    for base in (f"{T}/state", "/run/crun"):
        for root, ds, fs in os.walk(base):
            # The audit logs stay by design (they are the record).
            state.update(os.path.join(root, x) for x in ds + fs if "/audit" not in root and x != "audit")
    procs = {int(d) for d in os.listdir("/proc") if d.isdigit()}
    return {"cgroups": cgroup_dirs(), "mounts": set(read("/proc/self/mountinfo").splitlines()),
            "state": state, "procs": procs}

def leaks(before):
    after = snapshot()
    found = []
    for k in ("cgroups", "mounts", "state"):
        found += [f"{k}: {x}" for x in sorted(after[k] - before[k])]
    for p in sorted(after["procs"] - before["procs"]):
        comm = read(f"/proc/{p}/comm").strip()
        if comm in ("sandcap", "sandcap-main", "sandcap-run", "sandcap-init", "bwrap", "crun", "sleep", "unshare") and p != os.getpid():
            found.append(f"process: {p} {comm}")
    return found

own_memcg = next((l.split(":", 2)[2] for l in read("/proc/self/cgroup").splitlines()
                  if "memory" in l.split(":")[1].split(",")), None)

def one_round(name):
    before = snapshot()
    argv = tools[name]
    t0 = time.perf_counter()
    procs = [subprocess.Popen(argv(i), stdout=null, stderr=null, stdin=subprocess.DEVNULL,
                              env=tool_env.get(name, env)) for i in range(N)]
    running = set()
    deadline = t0 + timeout
    while time.perf_counter() < deadline:
        running = sleepers()
        if len(running) >= N:
            break
        if all(p.poll() is not None for p in procs):
            break
        time.sleep(0.01)
    t_all = time.perf_counter() - t0
    failures = []
    if len(running) < N:
        failures.append(f"{N - len(running)} of {N} not running after {t_all:.1f} s")
    time.sleep(0.5)  # let the supervisors settle into their wait
    early = [p for p in procs if p.poll() is not None]
    if early:
        failures.append(f"{len(early)} ended before their release (status {early[0].returncode})")
    counted, sup, cg = set(), [], []
    for p in procs:
        pids = tree(p.pid)
        counted.update(pids)
        sup.append(pss_kib(p.pid))
        for q in pids:
            if q in running:
                b = memcg_bytes(q)
                if b is not None:
                    cg.append(b / 1024)
    # crun's container processes leave crun's tree (it double-forks).
    counted |= running
    total = sum(pss_kib(q) for q in counted)
    for q in sleepers():
        try:
            os.kill(q, signal.SIGKILL)
        except ProcessLookupError:
            pass
    bad = 0
    for p in procs:
        try:
            rc = p.wait(timeout=max(timeout, 10))
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        # The sleep's end by SIGKILL, as each tool reports it.
        if rc not in (0, 137, -9):
            bad += 1
            last = rc
    if bad:
        failures.append(f"{bad} ended with an unexpected status (e.g. {last})")
    time.sleep(0.3)  # crun's and the kernel's last cleanups are asynchronous
    leaked = leaks(before)
    if leaked:
        time.sleep(2)
        leaked = leaks(before)
    return {"t_all": t_all, "pss": total / N, "sup": statistics.median(sup) if sup else 0,
            "cg": statistics.median(cg) if cg else None, "failures": failures, "leaks": leaked}

names = list(tools)
res = {n: [] for n in names}
for r in range(rounds):
    for k in range(len(names)):
        name = names[(k + r) % len(names)]
        x = one_round(name)
        res[name].append(x)
        cg = f", cgroup {x['cg']:.0f} KiB" if x["cg"] is not None else ""
        print(f"  round {r + 1} {name:8s} {N} running in {x['t_all']:6.2f} s, {x['pss']:6.0f} KiB PSS per sandbox"
              f" (supervisor {x['sup']:.0f} KiB{cg}), {len(x['failures'])} failures, {len(x['leaks'])} leaks", flush=True)
        for f in x["failures"] + x["leaks"][:10]:
            print(f"      {f}")

med = {}
for n in names:
    rs = res[n]
    cgs = [x["cg"] for x in rs if x["cg"] is not None]
    med[n] = {"t_all": statistics.median(x["t_all"] for x in rs), "pss": statistics.median(x["pss"] for x in rs),
              "sup": statistics.median(x["sup"] for x in rs), "cg": statistics.median(cgs) if cgs else None,
              "failures": sum(len(x["failures"]) for x in rs), "leaks": sum(len(x["leaks"]) for x in rs)}
print(f"{N} concurrent sandboxes running sleep (medians of {rounds} rounds)")
for n, m in med.items():
    cg = f"{m['cg']:7.0f} KiB" if m["cg"] is not None else "      n/a  "
    print(f"  {n:8s} all running {m['t_all']:6.2f} s   PSS per sandbox {m['pss'] / 1024:5.2f} MiB"
          f"   supervisor {m['sup'] / 1024:5.2f} MiB   cgroup {cg}   failures {m['failures']}   leaks {m['leaks']}")
print("ratios (lower is better)")
pairs = [("sandcap", peer) for peer in names if peer != "sandcap"]
if "floor" in med:
    pairs.append(("floor", "bwrap"))
for one, peer in pairs:
    a, b = med[one], med[peer]
    print(f"  {one} / {peer}: time to all running {a['t_all'] / b['t_all']:.2f}x, "
          f"memory per sandbox {a['pss'] / b['pss']:.2f}x")
if out:
    with open(out, "a") as f:
        for n, m in med.items():
            f.write(f"density\t{n} time to {N} running\t{m['t_all']:.3f}\ts\n")
            f.write(f"density\t{n} PSS per sandbox\t{m['pss'] / 1024:.3f}\tMiB\n")
            f.write(f"density\t{n} supervisor PSS\t{m['sup'] / 1024:.3f}\tMiB\n")
sys.exit(1 if any(m["failures"] or m["leaks"] for m in med.values()) else 0)
PY
