#!/usr/bin/env bash
# limit.hit for limits.fsize and for a full /tmp: an agent that writes past
# fsize (the kernel cuts the write at the limit and kills it with SIGXFSZ),
# and one that fills the sandbox's tmpfs (ENOSPC), each leave the record with
# the limit's name and value; a run within its limits leaves none.
. "$(dirname "$0")/lib.sh"
need_root

mkdir -p "$T/rw"
chown 4321:4321 "$T/rw"
policy lim "{\"version\": 1, \"fs\": {\"grants\": [
  {\"path\": \"$T/rw\", \"mode\": \"rw\", \"at\": \"/work\"}], \"tmp\": {\"size\": \"1M\", \"inodes\": 64}},
  \"limits\": {\"fsize\": \"256K\"}}"
# hits LOG: one "limit value" line per limit.hit record
hits() {
	grep '"event":"limit.hit"' "$1" |
		sed -E 's/.*"limit":"([^"]*)","value":([0-9]+).*/\1 \2/'
}
run() { # run NAME CMD
	log=$T/$1.jsonl
	"$SANDCAP" run --quiet --audit "$log" --policy "$T/lim.json" -- sh -c "$2" >"$T/$1.out" 2>&1
}

run grant 'head -c 1M /dev/zero > /work/big; echo "rc=$?"'
expect_eq "the writer past fsize was killed by SIGXFSZ" "$(grep -o 'rc=[0-9]*' "$T/grant.out")" "rc=153"
expect_eq "the kernel cut the file at the limit" "$(stat -c %s "$T/rw/big")" 262144
expect_eq "limit.hit fsize, with the limit" "$(hits "$log")" "fsize 262144"
expect_match "the detail names the file" "$(grep limit.hit "$log")" '"detail":"a file reached limits.fsize: /work/big"'

run tmpfsize 'head -c 300K /dev/zero > /tmp/big; echo "rc=$?"'
expect_eq "past fsize in /tmp: SIGXFSZ too" "$(grep -o 'rc=[0-9]*' "$T/tmpfsize.out")" "rc=153"
expect_eq "limit.hit fsize for a file in /tmp" "$(hits "$log")" "fsize 262144"

run tmpfull 'for i in 1 2 3 4 5 6; do head -c 200K /dev/zero > /tmp/f$i || echo "failed $i"; done'
expect_match "filling /tmp: the kernel refused a write" "$(cat "$T/tmpfull.out")" "No space left on device"
expect_eq "limit.hit tmp_full, with the size of /tmp" "$(hits "$log")" "tmp_full 1048576"
expect_match "the detail says blocks ran out" "$(grep limit.hit "$log")" "no free block left"

run inodes 'i=0; while [ $i -lt 80 ]; do : > /tmp/n$i || break; i=$((i + 1)); done; echo "made $i"'
expect_match "creating files in /tmp until the inodes run out" "$(cat "$T/inodes.out")" "No space left on device"
expect_eq "limit.hit tmp_full for inodes too" "$(hits "$log")" "tmp_full 1048576"
expect_match "the detail says inodes ran out" "$(grep limit.hit "$log")" "no free inode left"

run within 'head -c 100K /dev/zero > /work/small; head -c 100K /dev/zero > /tmp/small'
expect_eq "a run within its limits: no limit.hit" "$(hits "$log")" ""

# No rw grant and no fsize: no fanotify group (its close would cost the
# run); /tmp is checked once the sandbox has ended.
policy tmponly '{"version": 1, "fs": {"tmp": "1M"}}'
"$SANDCAP" run --quiet --audit "$T/tmponly.jsonl" --policy "$T/tmponly.json" -- sh -c \
	'head -c 2M /dev/zero > /tmp/fill' >/dev/null 2>&1
expect_eq "without a watch, a /tmp left full is seen after the run" "$(hits "$T/tmponly.jsonl")" \
	"tmp_full 1048576"
expect_match "and the log says no fanotify watched anything" "$(grep -o '"fs_write":"[^"]*"' "$T/tmponly.jsonl")" '"fs_write":"none"'

out=$("$SANDCAP" audit report "$T/tmpfull.jsonl")
expect_match "the report lists the limit hit" "$out" "tmp_full x1"
check "the logs verify" "$SANDCAP" audit verify "$T/grant.jsonl"
finish
