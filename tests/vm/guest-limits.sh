#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs in the cgroup2-only VM (tests/vm/run-in-vm): `sandcap run` limit tests
# against the v2 backend for real — memory, cpu, pids and wall clock.
# Usage: run-in-vm BUILDDIR tests/vm/guest-limits.sh sandcap sandcap-main sandcap-run sandcap-init tests/helpers/hog
set -u
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $*"; }
check() { name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }
export SANDCAP_STATE_DIR=/tmp/state

mkdir -p /opt/hog && cp /sandcap/bin/hog /opt/hog/hog
# Landlock's network rules need ABI 4 (Linux 6.7); Debian 12's kernel has
# less, so these policies accept that one degraded layer: the VM is here to
# test cgroup v2.
grant='"fs": {"grants": [{"path": "/opt/hog", "mode": "ro", "at": "/opt/hog"}]}, "best_effort": true'
echo "{\"version\": 1, $grant, \"limits\": {\"memory\": \"64M\"}}" >/tmp/mem.json
echo "{\"version\": 1, $grant, \"limits\": {\"cpu\": 0.5}}" >/tmp/cpu.json
echo "{\"version\": 1, $grant, \"limits\": {\"pids\": 32, \"wall\": \"30s\"}}" >/tmp/pids.json
echo "{\"version\": 1, $grant, \"limits\": {\"wall\": \"1s\"}}" >/tmp/wall.json

sandboxed() { # processes running under a sandbox's host uid range
	c=0
	for f in /proc/[0-9]*/status; do
		u=$(awk '/^Uid:/ {print $2}' "$f" 2>/dev/null)
		[ -n "$u" ] && [ "$u" -ge 1073741824 ] && c=$((c + 1))
	done
	echo $c
}

sandcap run --json --policy /tmp/mem.json -- /opt/hog/hog mem >/dev/null 2>/tmp/mem.out
rc=$?
tail -1 /tmp/mem.out
check "v2: memory bomb killed (exit $rc)" [ "$rc" = 137 ]
check "v2: OOM kill read back from memory.events" grep -q '"oom_killed":true' /tmp/mem.out
check "v2: cgroup version reported" grep -q '"cgroup":"v2"' /tmp/mem.out

sandcap run --json --policy /tmp/cpu.json -- /opt/hog/hog spin 2 3 2>/tmp/cpu.out
tail -1 /tmp/cpu.out
cpu=$(sed -n 's/.*"cpu_s":\([0-9.]*\).*/\1/p' /tmp/cpu.out)
wall=$(sed -n 's/.*"wall_s":\([0-9.]*\).*/\1/p' /tmp/cpu.out)
# The quota bounds CPU time to half the wall time, start-up included.
check "v2: 2 busy threads under cpu 0.5 use half the wall time +-20% ($cpu s of $wall s)" \
	awk -v c="$cpu" -v w="$wall" 'BEGIN { exit !(c >= 0.4 * w && c <= 0.6 * w) }'
check "v2: throttling reported" grep -q '"cpu_throttled":true' /tmp/cpu.out

sandcap run --json --policy /tmp/pids.json -- /opt/hog/hog forkbomb 3 2>/tmp/pids.out
tail -1 /tmp/pids.out
check "v2: pids limit hit and reported" grep -q '"pids_limited":true' /tmp/pids.out
sleep 0.2
check "v2: no process of the fork bomb survives" [ "$(sandboxed)" = 0 ]

start=$(date +%s)
sandcap run --quiet --policy /tmp/wall.json -- /opt/hog/hog heartbeat /tmp/hb 2>/dev/null
rc=$?
took=$(($(date +%s) - start))
check "v2: wall limit gives exit 124 (exit $rc)" [ "$rc" = 124 ]
check "v2: wall limit ends the run in about 1 s ($took s)" [ "$took" -le 3 ]
sleep 0.2
check "v2: the double-forked daemon died with the sandbox" [ "$(sandboxed)" = 0 ]

# A SIGTERM to the supervisor stops the run cleanly: the log says so and
# is sealed, and the cgroup goes.
echo "{\"version\": 1, $grant, \"limits\": {\"memory\": \"64M\", \"cpu\": 0.5, \"pids\": 32}}" >/tmp/all.json
echo "{\"version\": 1, $grant}" >/tmp/none.json
sandcap run --quiet --audit /tmp/term.jsonl --policy /tmp/all.json -- sleep 51 2>/dev/null &
pid=$!
for _ in $(seq 50); do [ "$(sandboxed)" -ge 1 ] && break; sleep 0.1; done
kill -TERM $pid
wait $pid
rc=$?
check "v2: SIGTERM to the supervisor: the command's status 143 (exit $rc)" [ "$rc" = 143 ]
check "v2: sandbox.exit says SIGTERM" grep -q '"stopped_by":{"forced_kill":false,"signal":"SIGTERM"}' /tmp/term.jsonl
check "v2: and the log verifies" sandcap audit verify /tmp/term.jsonl
left=$(find /sys/fs/cgroup -name 'sandcap-*' -type d | head -3)
check "v2: no cgroup left after SIGTERM ($left)" [ -z "$left" ]

# A SIGKILLed supervisor with every limit leaves its cgroup; a run without
# limits removes it once it is a minute old.
sandcap run --quiet --policy /tmp/all.json -- sleep 52 2>/dev/null &
pid=$!
for _ in $(seq 50); do [ "$(sandboxed)" -ge 1 ] && break; sleep 0.1; done
kill -KILL $pid
wait $pid 2>/dev/null
sleep 0.5
left=$(find /sys/fs/cgroup -name 'sandcap-*' -type d)
check "v2: a SIGKILLed supervisor leaves its cgroup" [ -n "$left" ]
for d in $left; do touch -d "@$(($(date +%s) - 120))" "$d"; done
sandcap run --quiet --policy /tmp/none.json -- true 2>/dev/null
left=$(find /sys/fs/cgroup -name 'sandcap-*' -type d | head -3)
check "v2: the next run, without limits, removes it ($left)" [ -z "$left" ]

# Without root: a cgroup v2 subtree delegated to an ordinary user, as
# systemd's Delegate=yes makes one (the directory and its cgroup.procs,
# cgroup.threads and cgroup.subtree_control owned by the user), with the
# supervisor started in it. The sandbox cgroup is then the user's own.
echo "sc:x:1000:1000:sc:/tmp/sc-home:/bin/sh" >>/etc/passwd
echo "sc:x:1000:" >>/etc/group
mkdir -p /tmp/sc-home && chown 1000:1000 /tmp/sc-home
echo "+memory +cpu +pids" >/sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/deleg
for f in . cgroup.procs cgroup.threads cgroup.subtree_control; do
	chown 1000:1000 "/sys/fs/cgroup/deleg/$f"
done
sh -c 'echo $$ >/sys/fs/cgroup/deleg/cgroup.procs &&
	exec su -s /bin/sh sc -c "SANDCAP_STATE_DIR=/tmp/sc-home/state /sandcap/bin/sandcap run \
	--json --policy /tmp/mem.json -- /opt/hog/hog mem"' >/dev/null 2>/tmp/umem.out
rc=$?
tail -3 /tmp/umem.out
check "v2 without root, delegated cgroup: memory bomb killed (exit $rc)" [ "$rc" = 137 ]
check "v2 without root: OOM kill read back from memory.events" grep -q '"oom_killed":true' /tmp/umem.out
check "v2 without root: the sandbox had a cgroup v2 of its own" grep -q '"cgroup":"v2"' /tmp/umem.out
check "v2 without root: the audit log is the user's" [ -n "$(find /tmp/sc-home/state/audit -user 1000 -name '*.jsonl')" ]
rmdir /sys/fs/cgroup/deleg/supervisor /sys/fs/cgroup/deleg 2>/dev/null

left=$(find /sys/fs/cgroup -name 'sandcap-*' -type d | head -3)
check "v2: no sandbox cgroup left behind ($left)" [ -z "$left" ]
echo "1..$n"
exit $fail
