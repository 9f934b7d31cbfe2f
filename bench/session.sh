#!/usr/bin/env bash
# A warm `sandcap exec` of /bin/true in a running session against a cold
# `sandcap run` of it, bwrap and `crun exec` into a running container, in
# the same run (medians from hyperfine, and ratios; no pass or fail), with
# the floors a CLI exec cannot go below: an empty static program's start
# (bench/empty, linked as the `sandcap` front is) and the warm exec through
# the library (build/bench/session-exec, no CLI start-up); and the memory
# of idle sessions (their cgroups' and supervisors' resident memory).
#
#   bench/session.sh [SANDCAP_BINARY]   (as root; build/bench/ next to it)
#   env: RUNS (default 200), IDLE (idle sessions to measure, default 20),
#        BENCH_RESULTS (append "session<TAB>WHAT<TAB>NAME<TAB>VALUE" lines)
set -euo pipefail
cd "$(dirname "$0")/.."
S=${1:-$(pwd)/build/sandcap}
RUNS=${RUNS:-200}
IDLE=${IDLE:-20}
T=$(mktemp -d)
export SANDCAP_STATE_DIR=$T/state SANDCAP_RUNTIME_DIR=$T/run
cleanup() {
	for d in "$T"/run/sessions/*/; do
		[ -d "$d" ] && "$S" session stop "$(basename "$d")" >/dev/null 2>&1 || true
	done
	[ -n "${CRUN_STARTED:-}" ] && crun delete -f bench-session >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT

# The same policy for the session and the cold run: limits and exec
# auditing, the defaults a session would be used with.
cat >"$T/p.json" <<'JSON'
{ "version": 1, "limits": { "memory": "256M", "cpu": 1, "pids": 64 } }
JSON
"$S" session start --policy "$T/p.json" --name bench >/dev/null

BWRAP="bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr \
--symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin \
--symlink usr/sbin /sbin --proc /proc --dev /dev --tmpfs /tmp"
B=$(dirname "$S")/bench
cmds=(-n "sandcap exec (warm)" "$S exec bench -- /bin/true"
	-n "sandcap run (cold)" "$S run --quiet --policy $T/p.json -- /bin/true"
	-n "bwrap" "$BWRAP /bin/true")
# The same exec code in the full program, sandcap-main (OpenSSL, c-ares,
# jansson and libseccomp linked in): what the front saves.
[ -x "$(dirname "$S")/sandcap-main" ] &&
	cmds+=(-n "sandcap-main exec (warm)" "$(dirname "$S")/sandcap-main exec bench -- /bin/true")
[ -x "$B/empty" ] && cmds+=(-n "empty static program" "$B/empty")

# crun exec into a running container: its warm path, when crun runs here
# (cgroup v1 hybrid hosts need the private mount namespace bench/startup.sh
# uses; skipped when it cannot start one).
if command -v crun >/dev/null; then
	mkdir -p "$T/bundle/rootfs"
	(cd "$T/bundle" && crun spec >/dev/null)
	python3 - "$T/bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]; c = json.load(open(p))
c["process"]["args"] = ["/bin/sleep", "600"]; c["process"]["terminal"] = False
c["root"] = {"path": "rootfs", "readonly": True}
c["mounts"] = [m for m in c["mounts"] if m["destination"] in ("/proc", "/dev")]
for d in ("/usr", "/lib", "/lib64", "/bin"):
    c["mounts"].append({"destination": d, "type": "bind", "source": d, "options": ["rbind", "ro"]})
json.dump(c, open(p, "w"))
PY
	for d in usr lib lib64 bin proc dev; do mkdir -p "$T/bundle/rootfs/$d"; done
	if unshare -m sh -c "umount /sys/fs/cgroup/unified 2>/dev/null; crun run -d --bundle $T/bundle bench-session" >/dev/null 2>&1; then
		CRUN_STARTED=1
		cmds+=(-n "crun exec (warm)" "unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec crun exec bench-session /bin/true'"
			-n "crun's wrapper alone" "unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec /bin/true'")
	fi
fi

hyperfine -N --warmup 20 --runs "$RUNS" --export-json "$T/h.json" "${cmds[@]}" >"$T/hyperfine.out" 2>&1 ||
	{ cat "$T/hyperfine.out"; exit 1; }
# The same warm exec through the library, as a daemon linking it pays it
# (no CLI start-up): bench/session-exec.c, sx_exec().
lib=
if [ -x "$B/session-exec" ]; then
	read -r lib p10 p90 < <("$B/session-exec" bench "$RUNS" /bin/true)
	echo "library warm exec: median $lib ms (p10 $p10, p90 $p90)"
fi
python3 - "$T/h.json" "${BENCH_RESULTS:-}" "$lib" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
med = {k: sorted(v["times"])[len(v["times"]) // 2] * 1000 for k, v in r.items()}
if "crun exec (warm)" in med:
    med["crun exec (warm)"] -= med.pop("crun's wrapper alone")
if sys.argv[3]:
    med["library warm exec"] = float(sys.argv[3])
warm = med["sandcap exec (warm)"]
print("%-32s %10s %10s" % ("", "median ms", "x warm"))
for k, v in med.items():
    print("%-32s %10.3f %10.2f" % (k, v, v / warm))
print("cold run / warm exec: %.1fx" % (med["sandcap run (cold)"] / warm))
if "empty static program" in med and sys.argv[3]:
    floor = med["empty static program"] + float(sys.argv[3])
    print("floor of a CLI exec (empty program's start + library exec): %.3f ms;"
          " the CLI exec is %.3f ms above it" % (floor, warm - floor))
if sys.argv[2]:
    with open(sys.argv[2], "a") as f:
        for k, v in med.items():
            f.write("session\texec /bin/true\t%s\t%.3f\n" % (k, v))
PY

# Memory of IDLE idle sessions: what their cgroups hold (the sandbox) and
# the supervisors' resident set, per session.
for i in $(seq "$IDLE"); do "$S" session start --policy "$T/p.json" --name "idle$i" >/dev/null; done
"$S" session list --json | python3 -c '
import json, sys
l = [s for s in json.load(sys.stdin) if s["name"].startswith("idle")]
rss = 0
for s in l:
    for line in open("/proc/%d/status" % s["pid"]):
        if line.startswith("VmRSS:"):
            rss += int(line.split()[1]) * 1024
cg = sum(s.get("memory_peak") or 0 for s in l)
n = len(l)
print("%d idle sessions: sandbox cgroup peak %.0f KiB, supervisor RSS %.0f KiB per session" % (n, cg / n / 1024, rss / n / 1024))'
