#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs in the cgroup2-only VM (tests/vm/run-in-vm): sandcap-runc's cgroup v2
# paths for real, driven directly (no containerd): linux.cgroupsPath on the
# unified tree, the memory limit on the sandbox's cgroup nested in it, the
# state pid (the sandbox's pid 1) and its cgroup, pause and resume through
# cgroup.freeze, and what delete leaves (nothing).
# An image's root is an overlay (src/ns/mounts.c): overlay.ko is loaded.
# Usage: SANDCAP_VM_MODULES=overlay run-in-vm -f tests/vm/guest-tap.sh=/sandcap/guest-tap.sh
#	BUILDDIR tests/vm/guest-runc.sh sandcap-runc sandcap-main sandcap-run sandcap-init sandcap-proxy
set -u
# shellcheck source=tests/vm/guest-tap.sh
. /sandcap/guest-tap.sh
export SANDCAP_STATE_DIR=/tmp/state
CG=/sys/fs/cgroup
RT=/tmp/runc-root
rc() { sandcap-runc --root "$RT" "$@"; }
status() { rc state "$1" 2>/dev/null | sed -n 's/.*"status": "\([a-z]*\)".*/\1/p'; }
# wait_for COND...: up to 10 s
wait_for() { for _ in $(seq 100); do "$@" && return 0; sleep 0.1; done; return 1; }
# A process that has not ended (a zombie has: the VM's pid 1 reaps it).
alive() { [ -e "/proc/$1/status" ] && ! grep -q '^State:.Z' "/proc/$1/status" 2>/dev/null; }
sandboxed() { # processes running under a sandbox's host uid range
	c=0
	for f in /proc/[0-9]*/status; do
		grep -q '^State:.Z' "$f" 2>/dev/null && continue
		u=$(awk '/^Uid:/ {print $2}' "$f" 2>/dev/null)
		[ -n "$u" ] && [ "$u" -ge 1073741824 ] && c=$((c + 1))
	done
	echo $c
}
ours() { # sandcap's own processes still alive (container supervisor, session's)
	for f in /proc/[0-9]*/comm; do
		alive "$(basename "${f%/comm}")" || continue
		case "$(cat "$f" 2>/dev/null)" in sandcap*) echo "${f%/comm}" ;; esac
	done
}

# A bundle over a static busybox; the process counts on its stdout, which
# the container supervisor relays to create's (a file here), every 0.2 s
# (a rw bind would need idmapped mounts, which tmpfs lacks before 6.3).
B=/tmp/bundle
mkdir -p $B/rootfs/bin $B/rootfs/proc $B/rootfs/dev $B/rootfs/tmp
cp /bin/busybox $B/rootfs/bin/busybox
for a in sh sleep echo cat; do ln -s busybox $B/rootfs/bin/$a; done
cat >$B/config.json <<'EOF'
{
  "ociVersion": "1.2.0",
  "process": {
    "terminal": false,
    "user": {"uid": 0, "gid": 0},
    "args": ["sh", "-c", "i=0; while :; do i=$((i+1)); echo $i; sleep 0.2; done"],
    "env": ["PATH=/bin"],
    "cwd": "/"
  },
  "root": {"path": "rootfs", "readonly": true},
  "hostname": "vm",
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]}
  ],
  "linux": {
    "cgroupsPath": "/sc-vm/c1",
    "resources": {"memory": {"limit": 67108864}},
    "namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"},
                   {"type": "mount"}]
  }
}
EOF

# --- create, start: the state pid and its cgroup ---
rc create --bundle $B --pid-file /tmp/pid c1 >/tmp/c1.out 2>/tmp/c1.err
r=$?
cat /tmp/c1.err
check "create with cgroupsPath /sc-vm/c1 (exit $r)" [ "$r" = 0 ]
if [ "$r" != 0 ]; then
	echo "1..$n"
	exit 1
fi
check "state: created" [ "$(status c1)" = created ]
rc start c1
check "start: running" [ "$(status c1)" = running ]
pid=$(rc state c1 | sed -n 's/.*"pid": \([0-9]*\),.*/\1/p')
check "state's pid is --pid-file's ($pid)" [ -n "$pid" -a "$pid" = "$(cat /tmp/pid 2>/dev/null)" ]
# shellcheck disable=SC2016 # awk's own $NF
check "... it is the sandbox's pid 1 (NSpid ends in 1)" \
	awk '/^NSpid:/ { exit !($NF == 1 && NF > 2) }' /proc/"${pid:-0}"/status
check "... sandcap-init, whose parent is the caller's (pid 1 of the VM, CLONE_PARENT)" \
	[ "$(cat /proc/"${pid:-0}"/comm 2>/dev/null):$(awk '/^PPid:/ {print $2}' /proc/"${pid:-0}"/status 2>/dev/null)" = sandcap-init:1 ]
rel=$(sed -n 's/^0:://p' /proc/"${pid:-0}"/cgroup 2>/dev/null)
check "its cgroup ($rel) is the sandbox's own, nested in /sc-vm/c1" \
	[ "$(dirname "${rel:-/x}")" = /sc-vm/c1 -a "${rel##*/}" != supervisor ]
check "the container supervisor is in the leaf /sc-vm/c1/supervisor" \
	[ -n "$(cat $CG/sc-vm/c1/supervisor/cgroup.procs 2>/dev/null)" ]
check "its memory.max is the spec's limit ($(cat "$CG$rel/memory.max" 2>&1))" \
	[ "$(cat "$CG$rel/memory.max" 2>/dev/null)" = 67108864 ]
check "/sc-vm/c1 holds no process itself (no internal processes)" \
	[ -z "$(cat $CG/sc-vm/c1/cgroup.procs 2>&1)" ]
check "memory, cpu and pids are enabled on the way" \
	[ "$(cat $CG/sc-vm/cgroup.subtree_control):$(cat $CG/sc-vm/c1/cgroup.subtree_control)" = "cpu memory pids:cpu memory pids" ]
count() { tail -n 1 /tmp/c1.out; }
wait_for [ -s /tmp/c1.out ]
check "the process counts ($(count))" [ -s /tmp/c1.out ]

# --- pause: frozen, the counter stops; resume: it goes on ---
rc pause c1
check "pause: exit 0, state paused" [ "$?:$(status c1)" = 0:paused ]
check "cgroup.freeze 1" [ "$(cat "$CG$rel/cgroup.freeze" 2>&1)" = 1 ]
check "cgroup.events: frozen 1" grep -qx 'frozen 1' "$CG$rel/cgroup.events"
a=$(count)
sleep 1.5
b=$(count)
check "paused, the counter stands ($a, then $b)" [ "$a" = "$b" ]
rc pause c1 2>/dev/null
check "pause of a paused container: refused" [ $? = 1 ]
rc resume c1
check "resume: exit 0, state running" [ "$?:$(status c1)" = 0:running ]
check "cgroup.freeze 0, frozen 0" \
	[ "$(cat "$CG$rel/cgroup.freeze"):$(grep frozen "$CG$rel/cgroup.events")" = "0:frozen 0" ]
sleep 1.5
c=$(count)
check "resumed, the counter goes on ($b, then $c)" [ "$c" -gt "$b" ]

# --- a paused container killed; delete ---
rc pause c1
rc kill c1 KILL
check "kill KILL of a paused container: exit 0" [ $? = 0 ]
wait_for [ "$(status c1)" = stopped ]
check "... stopped" [ "$(status c1)" = stopped ]
# shellcheck disable=SC2317 # called through wait_for
pid1_ended() { ! alive "${pid:-0}"; }
check "... pid 1 has ended" wait_for pid1_ended
rc delete c1
check "delete: exit 0" [ $? = 0 ]
check "the cgroups create made are gone ($(find $CG/sc-vm 2>&1 | head -3))" [ ! -e $CG/sc-vm ]
check "the state is gone" [ ! -e $RT/c1 ]
wait_for [ "$(sandboxed)" = 0 ]
check "no sandboxed process left" [ "$(sandboxed)" = 0 ]
wait_for [ -z "$(ours)" ]
check "no sandcap process left ($(ours))" [ -z "$(ours)" ]
check "no sandbox cgroup left" [ -z "$(find $CG -name 'sandcap-*' -type d)" ]
# --- without cgroupsPath: nothing moves, pause freezes the sandbox's
# own cgroup, under the caller's (here the root) ---
mkdir -p /tmp/b2
sed -e /cgroupsPath/d -e "s|\"path\": \"rootfs\"|\"path\": \"$B/rootfs\"|" $B/config.json >/tmp/b2/config.json
if ! rc create --bundle /tmp/b2 c2 >/tmp/c2.out 2>&1 || ! rc start c2; then
	cat /tmp/c2.out
fi
rel=$(sed -n 's/^0:://p' /proc/"$(rc state c2 | sed -n 's/.*"pid": \([0-9]*\),.*/\1/p')"/cgroup 2>/dev/null)
check "no cgroupsPath: pid 1 in a sandbox cgroup of its own ($rel)" \
	[ "$(dirname "${rel:-/x}")" = / -a "${rel#/sandcap-}" != "$rel" ]
rc pause c2
check "... pause: paused, $rel frozen" \
	[ "$(status c2):$(grep frozen "$CG$rel/cgroup.events" 2>&1)" = "paused:frozen 1" ]
rc delete --force c2
check "... delete --force of a paused container" [ $? = 0 -a ! -e $RT/c2 ]
wait_for [ -z "$(ours)" ]
check "... nothing left ($(ours))" [ -z "$(ours)$(find $CG -name 'sandcap-*' -type d)" ]
echo "1..$n"
exit "$fail"
