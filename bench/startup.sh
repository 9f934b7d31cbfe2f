#!/usr/bin/env bash
# Start-up latency of a sandbox running /bin/true (and a Python print), for
# sandcap and its peers measured in the same run, with ratios. Medians from
# hyperfine; a noisy machine moves absolute numbers, so read the ratios.
# Usage: bench/startup.sh [SANDCAP_BINARY]   (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
S=${1:-$(pwd)/build/sandcap}
RUNS=${RUNS:-100}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export SANDCAP_STATE_DIR=$T/state

cat >"$T/minimal.json" <<'JSON'
{ "version": 1, "audit": { "exec": false } }
JSON
cat >"$T/limits.json" <<'JSON'
{ "version": 1, "limits": { "memory": "256M", "cpu": 1, "pids": 64 }, "audit": { "exec": false } }
JSON
cat >"$T/full.json" <<'JSON'
{ "version": 1, "limits": { "memory": "256M", "cpu": 1, "pids": 64, "wall": "30s" } }
JSON

BWRAP=(bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr
	--symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin
	--symlink usr/sbin /sbin --proc /proc --dev /dev --tmpfs /tmp)

cmds=(
	"plain|/bin/true"
	"bwrap|${BWRAP[*]} /bin/true"
	"sandcap-minimal|$S run --quiet --policy $T/minimal.json -- /bin/true"
	"sandcap-limits|$S run --quiet --policy $T/limits.json -- /bin/true"
	"sandcap-full|$S run --quiet --policy $T/full.json -- /bin/true"
)
if command -v firejail >/dev/null; then
	cmds+=("firejail|firejail --quiet --noprofile --net=none /bin/true")
fi
if command -v crun >/dev/null; then
	# crun refuses cgroup v1 hybrid hosts whose cgroup2 mount lists a
	# controller; inside a private mount namespace without that mount it runs.
	mkdir -p "$T/bundle/rootfs"
	(cd "$T/bundle" && crun spec --rootless >/dev/null 2>&1 || crun spec >/dev/null)
	python3 - "$T/bundle/config.json" <<'PY'
import json, sys
p = sys.argv[1]; c = json.load(open(p))
c["process"]["args"] = ["/bin/true"]; c["process"]["terminal"] = False
c["root"] = {"path": "rootfs", "readonly": True}
c["mounts"] = [m for m in c["mounts"] if m["destination"] in ("/proc", "/dev", "/dev/pts", "/dev/shm")]
for d in ("/usr", "/lib", "/lib64", "/bin", "/sbin"):
    c["mounts"].append({"destination": d, "type": "bind", "source": d, "options": ["rbind", "ro", "nosuid", "nodev"]})
c["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]})
lin = c.setdefault("linux", {})
lin["namespaces"] = [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount", "cgroup")]
lin["resources"] = {"memory": {"limit": 268435456}, "cpu": {"quota": 100000, "period": 100000}, "pids": {"limit": 64}}
lin.pop("uidMappings", None); lin.pop("gidMappings", None)
c["process"]["user"] = {"uid": 0, "gid": 0}
json.dump(c, open(p, "w"))
PY
	for d in usr lib lib64 bin sbin proc dev tmp; do mkdir -p "$T/bundle/rootfs/$d"; done
	cmds+=("crun-limits|unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec crun run --bundle $T/bundle bench-\$\$'")
	cmds+=("unshare-wrapper|unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec /bin/true'")
fi

args=()
for c in "${cmds[@]}"; do args+=(-n "${c%%|*}" "${c#*|}"); done
hyperfine -N --warmup 10 --runs "$RUNS" --export-json "$T/startup.json" "${args[@]}" >"$T/hyperfine.log" 2>&1 || {
	cat "$T/hyperfine.log"
	exit 1
}
python3 - "$T/startup.json" <<'PY'
import json, statistics, sys
res = {r["command"]: statistics.median(r["times"]) * 1000 for r in json.load(open(sys.argv[1]))["results"]}
print("start-up to exit of /bin/true (median of runs, ms)")
for name, ms in res.items():
    print(f"  {name:18s} {ms:7.2f} ms")
def ratio(a, b):
    if a in res and b in res:
        print(f"  {a} / {b}: {res[a] / res[b]:.2f}x")
print("ratios (lower is faster)")
ratio("sandcap-minimal", "bwrap")
ratio("sandcap-minimal", "plain")
ratio("sandcap-limits", "bwrap")
if "crun-limits" in res and "unshare-wrapper" in res:
    crun = res["crun-limits"] - res["unshare-wrapper"]
    print(f"  crun-limits without its wrapper: {crun:.2f} ms")
    if "sandcap-limits" in res:
        print(f"  sandcap-limits / crun-limits: {res['sandcap-limits'] / crun:.2f}x")
ratio("sandcap-full", "bwrap")
ratio("firejail", "sandcap-full")
PY
