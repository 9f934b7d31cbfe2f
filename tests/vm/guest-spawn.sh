#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs in the cgroup2-only VM (tests/vm/run-in-vm): delegation through the
# spawn socket on cgroup v2 for real. The parent's processes live in the
# leaf <sandbox>/agent, each child's cgroup under <sandbox>/child-N, and the
# limits on <sandbox> bound parent + children together.
# Usage: run-in-vm BUILDDIR tests/vm/guest-spawn.sh sandcap sandcap-main sandcap-run sandcap-init tests/helpers/hog
set -u
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $*"; }
check() { name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }
export SANDCAP_STATE_DIR=/tmp/state

mkdir -p /opt/hog && cp /sandcap/bin/hog /opt/hog/hog
H=/opt/hog/hog
# Landlock's network rules need ABI 4; Debian 12's kernel has less (see
# guest-limits.sh): the VM is here for cgroup v2.
grant='"fs": {"grants": [{"path": "/opt/hog", "mode": "ro"}]}, "best_effort": true'
echo "{\"version\": 1, $grant, \"limits\": {\"memory\": \"128M\", \"pids\": 64, \"wall\": \"60s\"},
 \"spawn\": {\"max_depth\": 1, \"max_children\": 8}}" >/tmp/parent.json
# req MEMORY ARGV...: a request for a child with that memory limit
req() {
	m=$1
	shift
	a=""
	for x in "$@"; do a="$a${a:+, }\"$x\""; done
	echo "{\"policy\": {\"limits\": {\"memory\": \"$m\"}}, \"argv\": [$a]}"
}
sandboxes_left() { find /sys/fs/cgroup -mindepth 1 -type d -name 'sandcap-*' | head -3; }

# --- a narrower child runs, in a cgroup nested in the parent's ---
sandcap run --quiet --policy /tmp/parent.json --audit /tmp/l1.jsonl -- \
	$H spawn "$(req 64M $H sleep 4)" >/tmp/o1 2>/tmp/e1 &
run=$!
cg=""
for _ in $(seq 150); do
	cg=$(find /sys/fs/cgroup -mindepth 3 -maxdepth 3 -type d -path '*/sandcap-sc-*/child-1/sandcap-sc-*' | head -1)
	[ -n "$cg" ] && break
	sleep 0.1
done
parent=${cg%/child-1/*}
check "v2: the child's cgroup is <parent>/child-1/<child> ($cg)" [ -n "$cg" ]
check "v2: the child's own memory.max is the 64M it asked for" [ "$(cat "$cg/memory.max" 2>&1)" = 67108864 ]
check "v2: the parent's limits are on the parent's cgroup" [ "$(cat "$parent/memory.max" 2>&1)" = 134217728 ]
check "v2: the parent's cgroup holds no process itself" [ -z "$(cat "$parent/cgroup.procs" 2>&1)" ]
check "v2: the parent's processes are in its leaf <parent>/agent" [ -n "$(cat "$parent/agent/cgroup.procs" 2>/dev/null)" ]
check "v2: the sub-supervisor is in <parent>/child-1/supervisor" [ -n "$(cat "$parent/child-1/supervisor/cgroup.procs" 2>/dev/null)" ]
check "v2: OOM kills group only the parent's leaf, not parent + children" \
	[ "$(cat "$parent/memory.oom.group"):$(cat "$parent/agent/memory.oom.group")" = 0:1 ]
wait $run
rc=$?
cat /tmp/o1 /tmp/e1
check "v2: the child ran and answered (exit $rc)" grep -q '"ok":true.*"status":0' /tmp/o1
check "v2: spawn.start and spawn.exit are in the parent's log" \
	[ "$(grep -c '"event":"spawn\.\(start\|exit\)"' /tmp/l1.jsonl)" = 2 ]
check "v2: audit verify passes" sandcap audit verify /tmp/l1.jsonl
check "v2: the run left no cgroup behind ($(sandboxes_left))" [ -z "$(sandboxes_left)" ]

# --- asking for more than the parent has ---
sandcap run --quiet --policy /tmp/parent.json --audit /tmp/l2.jsonl -- \
	$H spawn "$(req 1G $H alloc 1)" >/tmp/o2 2>/dev/null
cat /tmp/o2
check "v2: a child asking for 1G under a 128M parent is refused" grep -q '"denied":true.*limits.memory' /tmp/o2
check "v2: the refusal is logged as spawn.denied" grep -q '"event":"spawn.denied".*limits.memory' /tmp/l2.jsonl
check "v2: nothing was started" [ "$(grep -c '"event":"spawn.start"' /tmp/l2.jsonl)" = 0 ]

# --- the parent's memory limit covers parent + children ---
sandcap run --quiet --policy /tmp/parent.json --audit /tmp/l3.jsonl -- \
	$H spawn "$(req 100M $H alloc 90)" >/tmp/o3 2>/dev/null
cat /tmp/o3
check "v2: alone, a child allocates 90M under its 100M" grep -q '"stdout":"allocated 90' /tmp/o3
# The OOM killer picks the biggest process of the cgroup whose limit was hit:
# the child (up to ~85M) must outgrow the parent's 40M to be the one.
sandcap run --json --policy /tmp/parent.json --audit /tmp/l4.jsonl -- \
	$H hold 40 $H spawn "$(req 100M $H alloc 90)" >/tmp/o4 2>/tmp/e4
rc=$?
cat /tmp/o4
tail -1 /tmp/e4
check "v2: with the parent holding 40M of its 128M, the child is OOM-killed" \
	grep -q '"oom_killed":true.*"status":137' /tmp/o4
check "v2: ...and the parent lives on (exit $rc)" grep -q "^parent-alive 40" /tmp/o4
check "v2: the child's OOM kill is logged as the child's" \
	grep -q '"event":"limit.hit".*"child":"sc-.*"limit":"memory"' /tmp/l4.jsonl
check "v2: the child's spawn.exit says oom_killed" grep -q '"event":"spawn.exit".*"oom_killed":true' /tmp/l4.jsonl
check "v2: the parent's own summary has no OOM kill" grep -q '"oom_killed":false' /tmp/e4
peak=$(sed -n 's/.*"memory_peak":\([0-9]*\).*/\1/p' /tmp/e4)
check "v2: the parent's memory peak counts parent + child (${peak:-?} bytes > 100M)" \
	[ "${peak:-0}" -gt 104857600 ]
check "v2: audit verify passes" sandcap audit verify /tmp/l4.jsonl
sleep 0.2
check "v2: no cgroup left behind ($(sandboxes_left))" [ -z "$(sandboxes_left)" ]
# --- two levels: the child's cgroup is laid out like its parent's ---
echo "{\"version\": 1, $grant, \"limits\": {\"memory\": \"128M\", \"pids\": 64, \"wall\": \"60s\"},
 \"spawn\": {\"max_depth\": 2, \"max_children\": 8}}" >/tmp/parent2.json
outer='{"argv": ["/opt/hog/hog", "spawn", "{\"argv\": [\"/opt/hog/hog\", \"sleep\", \"4\"]}"]}'
sandcap run --quiet --policy /tmp/parent2.json --audit /tmp/l5.jsonl -- $H spawn "$outer" >/tmp/o5 2>/dev/null &
run=$!
gcg=""
for _ in $(seq 200); do
	gcg=$(find /sys/fs/cgroup -mindepth 5 -maxdepth 5 -type d -path '*/sandcap-sc-*/child-1/sandcap-sc-*/child-1/sandcap-sc-*' | head -1)
	[ -n "$gcg" ] && break
	sleep 0.1
done
child=${gcg%/child-1/*}
check "v2: the grandchild's cgroup is <parent>/child-1/<child>/child-1/<grandchild> ($gcg)" [ -n "$gcg" ]
check "v2: the child (depth 1) has its own processes in its leaf, none beside" \
	[ -n "$(cat "$child/agent/cgroup.procs" 2>/dev/null)" -a -z "$(cat "$child/cgroup.procs" 2>&1)" ]
check "v2: the grandchild (depth 0) has no leaf: its processes are in its cgroup" \
	[ -n "$(cat "$gcg/cgroup.procs" 2>/dev/null)" -a ! -e "$gcg/agent" ]
wait $run
cat /tmp/o5
check "v2: the grandchild ran and its reply came back through the child" grep -q '"ok":true.*\\"ok\\":true.*\\"status\\":0' /tmp/o5
check "v2: two spawn.start, two spawn.exit in the root's log" \
	[ "$(grep -c '"event":"spawn\.\(start\|exit\)"' /tmp/l5.jsonl)" = 4 ]
check "v2: audit verify passes on the three-level log" sandcap audit verify /tmp/l5.jsonl
sleep 0.2
check "v2: no cgroup left behind ($(sandboxes_left))" [ -z "$(sandboxes_left)" ]
echo "1..$n"
exit $fail
