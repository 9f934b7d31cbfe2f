#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs in the cgroup2-only VM (tests/vm/run-in-vm): the cgroup unit test,
# which then exercises cg-v2.c for real, twice.
#   1. From the root cgroup, which may hold processes and still enable
#      controllers for its children.
#   2. From a non-root cgroup that holds only the test: cg_create must move
#      the process into <own>/supervisor to obey the "no internal process"
#      rule, then create the sandbox cgroups as its siblings.
# Usage: run-in-vm BUILDDIR tests/vm/guest-cgroup.sh tests/unit/test-cgroup
set -u
fail=0

check_v2() {
	if ! grep -q "^# testing cgroup v2" "$1"; then
		echo "not testing cgroup v2: see above"
		fail=1
	fi
}

echo "# run 1: test-cgroup from the root cgroup"
test-cgroup >/tmp/run1.tap 2>&1
rc=$?
cat /tmp/run1.tap
check_v2 /tmp/run1.tap
[ "$rc" = 0 ] || { echo "run 1 failed: exit $rc"; fail=1; }

echo "# run 2: test-cgroup from /outer, a cgroup of its own"
mkdir /sys/fs/cgroup/outer
sh -c 'echo $$ >/sys/fs/cgroup/outer/cgroup.procs && exec test-cgroup' >/tmp/run2.tap 2>&1
rc=$?
cat /tmp/run2.tap
check_v2 /tmp/run2.tap
[ "$rc" = 0 ] || { echo "run 2 failed: exit $rc"; fail=1; }
# The test moved itself into the leaf and left no sandbox cgroup behind.
left=""
for d in /sys/fs/cgroup/outer/*/; do # child cgroups are the directories
	d=${d%/}
	left="$left${left:+ }${d##*/}"
done
if [ "$left" != "supervisor" ]; then
	echo "not ok - /sys/fs/cgroup/outer holds: $left (want only supervisor)"
	fail=1
else
	echo "ok - /sys/fs/cgroup/outer holds only the supervisor leaf"
fi
grep -q memory /sys/fs/cgroup/outer/cgroup.subtree_control ||
	{ echo "not ok - controllers not enabled in /outer"; fail=1; }
exit $fail
