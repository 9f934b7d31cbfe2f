#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs in the VM (tests/vm/run-quota): quotas on rw grants enforced by ext4
# project quotas for real, on a loop image made with the project and quota
# features. The host kernel of the integration tests has no quota format
# (CONFIG_QFMT_V2), so only this guest shows the enforced path.
set -u
# shellcheck source=tests/vm/guest-tap.sh
. /sandcap/guest-tap.sh
export SANDCAP_STATE_DIR=/tmp/state
MiB=1048576

img=/tmp/prj.img
truncate -s 160M $img
mkfs.ext4 -q -O project,quota $img || { echo "not ok - mkfs.ext4"; exit 1; }
mkdir -p /mnt/prj
if ! mount -o loop,prjquota $img /mnt/prj; then
	dmesg | tail -3
	echo "not ok - an ext4 with project quotas cannot be mounted"
	exit 1
fi
G=/mnt/prj/g
mkdir $G && printf 'base\n' >$G/keep && chown -R 1234:1234 $G
# Landlock's network rules need ABI 4 (Linux 6.7); Debian 12's kernel has
# less: the policies accept that one degraded layer, not the quota's.
pol() { # NAME EXTRA-GRANT-KEYS
	echo "{\"version\": 1, \"best_effort\": true, \"fs\": {\"grants\": [{\"path\": \"$G\", \"at\": \"/g\", \"mode\": \"rw\", \"quota\": \"16M\"$2}]}}" >"/tmp/$1.json"
}
pol q ''
pol qi ', "inodes": 20'
pol qb ', "best_effort": true'
fill() { # what the agent runs: 64 MiB against a 16 MiB quota
	echo "dd if=/dev/zero of=/g/$1 bs=1M count=64 2>&1 | grep -o 'Disk quota exceeded' | head -1"
}

sandcap run --audit /tmp/q1.jsonl --policy /tmp/q.json -- sh -c "$(fill big)" >/tmp/q1.out 2>&1
check "a 64 MiB write into a rw grant with a 16M quota fails with EDQUOT inside" \
	grep -q 'Disk quota exceeded' /tmp/q1.out
sz=$(stat -c %s $G/big)
check "it stopped at the quota: 15..16 MiB ($sz bytes)" \
	[ "$sz" -le $((16 * MiB)) -a "$sz" -ge $((15 * MiB)) ]
check "sandbox.start says enforced" grep -q '"quota_state":"enforced"' /tmp/q1.jsonl
check "and lists no quota under not_enforced" sh -c "! grep -q 'not_enforced\":\[[^]]*fs.grants' /tmp/q1.jsonl"
check "the log verifies" sandcap audit verify /tmp/q1.jsonl
check "what was there is untouched" [ "$(cat $G/keep)" = base ]

# The limit is what the tree holds at the start plus the quota: the next
# run may add 16 MiB again, beside the 16 MiB already there.
sandcap run --policy /tmp/q.json -- sh -c "$(fill big2)" >/tmp/q2.out 2>&1
sz=$(stat -c %s $G/big2)
check "a second run may add the quota again: 15..16 MiB ($sz bytes)" \
	[ "$sz" -le $((16 * MiB)) -a "$sz" -ge $((15 * MiB)) ]
rm -f $G/big $G/big2

sandcap run --policy /tmp/qi.json -- sh -c \
	'i=0; while [ $i -lt 50 ]; do true > /g/n$i || break; i=$((i+1)); done; echo "made $i"' \
	>/tmp/qi.out 2>&1
made=$(sed -n 's/^made //p' /tmp/qi.out)
check "\"inodes\": 20 stops the 21st new file ($made made)" [ "$made" = 20 ]
check "with EDQUOT" grep -q 'Disk quota exceeded' /tmp/qi.out
rm -f $G/n*

cd $G || exit 1
check "doctor: rw grant quotas enforced here" sh -c "sandcap doctor | grep -Eq 'rw grant quotas +yes +here \($G\): project quotas are enforced'"
check "doctor --policy: the grant's quota would be enforced" \
	sh -c "sandcap doctor --policy /tmp/q.json | grep -Eq 'rw grant quota +yes +fs.grants\[0\] $G: project quotas are enforced'"
cd /

# Mounted without prjquota, ext4 counts project usage but enforces no
# limit: refused, or run and recorded as not enforced with best_effort.
umount /mnt/prj
mount -o loop $img /mnt/prj
sandcap run --policy /tmp/q.json -- true >/tmp/q3.out 2>&1
rc=$?
check "counted but not enforced: the quota is refused (exit $rc)" [ "$rc" != 0 ]
check "saying why" grep -q 'has a quota, but project quotas are counted but not enforced there' /tmp/q3.out
check "doctor --policy says run refuses it" \
	sh -c "sandcap doctor --policy /tmp/q.json | grep -Eq 'rw grant quota +NO +fs.grants\[0\] $G: project quotas are counted but not enforced.*run refuses it'"
sandcap run --audit /tmp/q4.jsonl --policy /tmp/qb.json -- sh -c \
	'dd if=/dev/zero of=/g/big bs=1M count=24 2>&1 | tail -1' >/tmp/q4.out 2>&1
check "best_effort: it runs, warning that the quota is not enforced" grep -q 'not enforced.*fs.grants\[0\].quota' /tmp/q4.out
check "sandbox.start records quota_state not_enforced" grep -q '"quota_state":"not_enforced"' /tmp/q4.jsonl
check "and names it under not_enforced" grep -q '"not_enforced":\[[^]]*fs.grants\[0\].quota: project quotas are counted but not enforced' /tmp/q4.jsonl
sz=$(stat -c %s $G/big)
check "and nothing limits the write then ($sz bytes)" [ "$sz" = $((24 * MiB)) ]
umount /mnt/prj
echo "1..$n"
exit $fail
