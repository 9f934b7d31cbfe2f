#!/bin/bash
# tools/oci-conformance.sh RUNTIME_TOOLS_DIR [SANDCAP_RUNC]
#
# Runs the validation suite of opencontainers/runtime-tools (a checkout of
# it, commit 260e151 is the last that builds with Debian 12's Go 1.19)
# against runc and against sandcap-runc, one program at a time, and prints
# each runtime's counts and the programs where the two differ. It
# builds the suite first where its programs are missing (offline, from its
# vendor directory). Run it as root: the suite creates real containers.
#
# Environment: RUNC (default /usr/sbin/runc), OCI_TIMEOUT (seconds a program
# may take, default 60), OCI_KEEP (a directory to keep the TAP output in),
# OCI_DETAIL=1 (list every test point that differs, not only the programs).
# Each program's bundle is the suite's own rootfs tarball.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 RUNTIME_TOOLS_DIR [SANDCAP_RUNC]" >&2
	exit 2
fi
RT=$(realpath "$1")
here=$(dirname "$(realpath "$0")")
SANDCAP_RUNC=$(realpath "${2:-$here/../build/sandcap-runc}")
RUNC=${RUNC:-/usr/sbin/runc}
TIMEOUT=${OCI_TIMEOUT:-60}

[ "$(id -u)" = 0 ] || { echo "$0: run as root" >&2; exit 2; }
[ -x "$SANDCAP_RUNC" ] || { echo "$0: no $SANDCAP_RUNC (build it, or name it)" >&2; exit 2; }
[ -x "$RUNC" ] || { echo "$0: no runc at $RUNC (set RUNC)" >&2; exit 2; }
if [ ! -f "$RT/Makefile" ] || [ ! -d "$RT/validation" ]; then
	echo "$0: $RT is not a runtime-tools checkout" >&2
	exit 2
fi

OUT=${OCI_KEEP:-$(mktemp -d "${TMPDIR:-/tmp}/oci-conformance.XXXXXX")}
OUT=$(realpath "$OUT")
mkdir -p "$OUT/runc" "$OUT/sandcap-runc" "$OUT/bin" "$OUT/state" "$OUT/tmp"
# Each runtime keeps its state under $OUT and the programs make their
# bundles in $OUT/tmp, so that what a stopped program leaves is found (and
# only that is removed) at the end. runc's mounts of a root with shared
# propagation (linux_rootfs_propagation) stay on the host's side, over
# the bundle: they are unmounted before it is removed.
printf '#!/bin/sh\nunset TMPDIR\nexec %q --root %q "$@"\n' "$RUNC" "$OUT/state/runc" >"$OUT/bin/runc"
printf '#!/bin/sh\nunset TMPDIR\nexec %q --root %q "$@"\n' "$SANDCAP_RUNC" "$OUT/state/sandcap-runc" >"$OUT/bin/sandcap-runc"
chmod +x "$OUT/bin/runc" "$OUT/bin/sandcap-runc"
leftovers() {
	local r id m
	for r in runc sandcap-runc; do
		for id in $("$OUT/bin/$r" list -q 2>/dev/null); do
			"$OUT/bin/$r" delete --force "$id" >/dev/null 2>&1 || true
		done
	done
	awk -v t="$OUT/tmp/" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r |
		while read -r m; do umount -l "$m" || true; done
	if ! awk -v t="$OUT/tmp/" 'index($2, t) == 1 { f = 1 } END { exit !f }' /proc/mounts; then
		rm -rf --one-file-system "$OUT/tmp"
	else
		echo "$0: mounts left under $OUT/tmp" >&2
	fi
}
if [ -n "${OCI_KEEP:-}" ]; then
	trap leftovers EXIT
else
	trap 'leftovers; rm -rf "$OUT"' EXIT
fi

cd "$RT"
mapfile -t progs < <(find validation -mindepth 2 -name '*.go' ! -path '*/util/*' | sed 's/\.go$/.t/' | sort)
missing=0
[ -x runtimetest ] || missing=1
for p in "${progs[@]}"; do [ -x "$p" ] || missing=1; done
if [ $missing = 1 ]; then
	echo "building the suite in $RT" >&2
	gocache=$(mktemp -d "${TMPDIR:-/tmp}/oci-conformance-go.XXXXXX")
	GOFLAGS=-mod=vendor GOCACHE=$gocache GOPATH=$gocache/path GOPROXY=off \
		make runtimetest validation-executables >"$OUT/build.log" 2>&1 || {
		tail -n 20 "$OUT/build.log" >&2
		rm -rf "$gocache"
		exit 1
	}
	chmod -R u+w "$gocache" && rm -rf "$gocache"
fi

# Each program runs in the checkout (it untars rootfs-ARCH.tar.gz and copies
# runtimetest from there); one that hangs is stopped and counts as not ok.
for p in "${progs[@]}"; do
	name=$(basename "$p" .t)
	for r in runc sandcap-runc; do
		rc=0
		TMPDIR=$OUT/tmp RUNTIME=$OUT/bin/$r timeout -k 5 "$TIMEOUT" "./$p" >"$OUT/$r/$name.tap" 2>"$OUT/$r/$name.err" </dev/null || rc=$?
		echo "$rc" >"$OUT/$r/$name.rc"
	done
	printf '.' >&2
done
echo >&2

python3 - "$OUT" "${progs[@]}" <<'EOF'
import os, re, sys

out, progs = sys.argv[1], [os.path.basename(p)[:-2] for p in sys.argv[2:]]
runtimes = ("runc", "sandcap-runc")

def points(r, name):
    """A program's test points: (description, result) in order; a program
    that ends without any ok or not ok line, or is stopped, is one not ok."""
    tap = open(f"{out}/{r}/{name}.tap", errors="replace").read().splitlines()
    rc = int(open(f"{out}/{r}/{name}.rc").read())
    res = []
    for line in tap:
        m = re.match(r"(not ok|ok)\b\s*\d*\s*(?:- )?(.*)", line)
        if not m:
            continue
        desc, skip = m.group(2), "# SKIP" in m.group(2).upper()
        desc = re.sub(r"\s*#\s*skip.*", "", desc, flags=re.I)
        # temporary names (/target348456609) differ between runs
        desc = re.sub(r"\d{5,}", "N", desc)
        res.append((desc, "skip" if skip else m.group(1)))
    if rc == 124 or rc == 137:
        res.append(("(the program timed out)", "not ok"))
    elif not any(s != "skip" for _, s in res) and (rc != 0 or '"error":' in "\n".join(tap)):
        # the hook programs report a failure as a diagnostic, with no point
        failed.append((r, name, rc))
        res.append(("(the program failed before any test point)", "not ok"))
    return res

failed = []

def cause(r, name):
    """Why the runtime's run went wrong: its own message (a refusal names
    the field), else the first failing test point."""
    err = open(f"{out}/{r}/{name}.err", errors="replace").read().splitlines()
    for line in err:
        if line.startswith("sandcap-runc:") or "level=error" in line:
            return re.sub(r"/\S*/ocitest\d+", "BUNDLE", line)[:150]
    for line in open(f"{out}/{r}/{name}.tap", errors="replace"):
        if line.startswith("not ok"):
            return re.sub(r"^not ok \d+ - ", "", line.strip())[:150]
    return ""

total = {r: {"ok": 0, "not ok": 0, "skip": 0} for r in runtimes}
diff, progdiff = [], []
for name in progs:
    per = {r: points(r, name) for r in runtimes}
    n = {r: {"ok": 0, "not ok": 0, "skip": 0} for r in runtimes}
    for r in runtimes:
        for _, s in per[r]:
            total[r][s] += 1
            n[r][s] += 1
    # match test points by description, in order, for each runtime
    seen = {}
    for r in runtimes:
        count = {}
        for d, s in per[r]:
            k = (d, count.get(d, 0))
            count[d] = k[1] + 1
            seen.setdefault(k, {})[r] = s
    differs = False
    for (d, _), got in seen.items():
        a, b = got.get("runc", "-"), got.get("sandcap-runc", "-")
        if a != b:
            diff.append((name, a, b, d))
            differs = True
    if differs:
        progdiff.append((name, n["runc"], n["sandcap-runc"],
                         cause("sandcap-runc", name) if n["sandcap-runc"]["not ok"] else ""))

for r in runtimes:
    t = total[r]
    print(f"{r:13} {t['ok']:5} ok {t['not ok']:5} not ok {t['skip']:5} skipped")
print()
print(f"{len(progdiff)} programs differ ({len(diff)} test points); ok/not ok of each:")
print(f"{'program':31} {'runc':9} {'sandcap-runc':12} sandcap-runc's first failure")
for name, a, b, c in progdiff:
    ra, rb = f"{a['ok']}/{a['not ok']}", f"{b['ok']}/{b['not ok']}"
    print(f"{name:31} {ra:9} {rb:12} {c}")
if os.environ.get("OCI_DETAIL"):
    print()
    print(f"{'program':34} {'runc':6} {'sandcap-runc':12} test point")
    for name, a, b, d in diff:
        print(f"{name:34} {a:6} {b:12} {d}")
if failed:
    print()
    print("programs that failed before any test point:")
    for r, name, rc in failed:
        print(f"{r:13} {name:32} exit {rc}: {cause(r, name)}")
EOF
