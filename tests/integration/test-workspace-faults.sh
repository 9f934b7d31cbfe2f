#!/bin/bash
# Workspaces under faults, from the host's side: an apply killed at several
# points and one stopped by a full host filesystem resume with a plain
# retry (recorded before their first write, their own writes no conflicts,
# a host edit still one, no temporary file left); sparse files and punched
# holes take on the host what they took in the quota; trees 200 and 1,000
# levels deep are kept and applied, and only a subtree too long for a path
# is refused.
. "$(dirname "$0")/lib.sh"
need_root

ws_of() { sed -n 's/^  workspace: \([^ ]*\).*/\1/p' <<<"$1"; }
# The paths of every record EVENT of the logs given, under KEY, one a line.
paths_in() {
	local ev=$1 key=$2
	shift 2
	cat "$@" 2>/dev/null | grep "\"event\":\"$ev\"" |
		python3 -c 'import sys, json
k = sys.argv[1]
for l in sys.stdin:
    for e in json.loads(l)["data"][k]:
        print(e["path"] if isinstance(e, dict) else e)' "$key" | LC_ALL=C sort -u
}
# Files and symlinks of the upper layer $1 whose host counterpart in $2
# differs (what is still to be written), one a line.
pending() {
	python3 - "$1" "$2" <<'PY'
import os, sys
up, host = sys.argv[1:3]
out = []
for d, _, files in os.walk(up):
    for f in files:
        p = os.path.join(d, f)
        rel = os.path.relpath(p, up)
        try:
            same = open(p, "rb").read() == open(os.path.join(host, rel), "rb").read()
        except OSError:
            same = False
        if not same:
            out.append(rel)
if out:
    print("\n".join(sorted(out, key=os.fsencode)))
PY
}
count_files() { find "$1" -type f 2>/dev/null | wc -l; }
# Host files made within the clock tick of a sandbox's start are conflicts
# (docs/decisions.md, "Workspaces: conflicts from ctime"): let one pass.
settle() { sleep 0.2; }

# ---- 1. 5,200 paths, the apply killed at three points ----
H=$T/host
mkdir -p "$H/m" && for i in $(seq 20); do echo "host $i" > "$H/m/f$i"; done
chown -R 1234:1234 "$H" && settle
policy big "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$H\", \"at\": \"/w\", \"mode\": \"cow\", \"quota\": \"64M\", \"inodes\": 8000}]}}"
out=$("$SANDCAP" run --policy "$T/big.json" -- sh -c '
	for d in $(seq 0 51); do mkdir /w/d$d; for f in $(seq 1 99); do echo "$d $f" > /w/d$d/f$f; done; done
	for i in $(seq 20); do echo "agent $i" > /w/m/f$i; done' 2>&1)
id=$(ws_of "$out")
expect_match "the run kept a workspace" "$id" '^sc-'
up=$SANDCAP_STATE_DIR/workspaces/$id/upper
all=$("$SANDCAP" workspace diff "$id" | wc -l)
expect_eq "5,220 changes (52 directories, 5,148 new files, 20 modified)" "$all" 5220
logs=()
# kill -9 once the host has N files of the apply (0: at once)
kill_at() {
	local n=$1 pid i
	"$SANDCAP" workspace apply "$id" >"$T/apply.out" 2>&1 &
	pid=$!
	for ((i = 0; i < 3000 && n > 0; i++)); do
		[ "$(count_files "$H")" -ge "$n" ] && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.01
	done
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	count_files "$H"
}
killed=0
for n in 0 400 2600; do
	got=$(kill_at $n)
	[ "$got" -lt $((5148 + 20)) ] && killed=$((killed + 1))
	tap_diag "killed at $n: $got files on the host"
done
check "at least two applies were killed half-way" test $killed -ge 2
check "a killed apply left its intent behind" test -s "$SANDCAP_STATE_DIR/workspaces/.intents/$id"
first=$SANDCAP_STATE_DIR/audit/$id.apply.jsonl
check "the first killed apply recorded its intent before its first write" \
	grep -q '"event":"workspace.apply.intent"' "$first"
expect_eq "its intent lists all 5,220 paths" "$(paths_in workspace.apply.intent changes "$first" | wc -l)" 5220
expect_match "workspace list says it is being applied" "$("$SANDCAP" workspace list)" "$id +applying"
before=$(pending "$up" "$H")
left=$(wc -l <<<"$before")
r=$("$SANDCAP" workspace apply "$id" 2>&1)
rc=$?
expect_eq "the plain retry succeeds (exit 0)" "$rc" 0
expect_no_match "no conflict from the killed applies' own directories" "$r" "conflict"
expect_match "it says it resumes" "$r" "resuming the unfinished apply"
expect_match "and how many paths the killed applies had written" "$r" "[0-9]+ path\(s\) applied to .*; [0-9]+ written by the unfinished apply before"
rec=$(sed -n 's/^  record: //p' <<<"$r")
written=$(grep '"event":"workspace.apply"' "$rec" | python3 -c 'import sys, json
for l in sys.stdin:
    for f in json.loads(l)["data"]["files"]:
        if f["op"] == "write": print(f["path"])' | LC_ALL=C sort)
expect_eq "it wrote exactly the $left file(s) still to be written" "$written" "$before"
check "the record verifies" "$SANDCAP" audit verify "$rec"
expect_eq "the host now has every file" "$(pending "$up" "$H" | wc -l)" 0
check "the directories have their modes" test "$(stat -c %a "$H/d7")" = "$(stat -c %a "$up/d7")"
expect_eq "no temporary file is left" "$(find "$H" -name '.sandcap-apply.*' | wc -l)" 0
chain=$(ls "$SANDCAP_STATE_DIR/audit/$id".apply*.jsonl)
union=$( (paths_in workspace.apply.intent changes $chain; paths_in workspace.apply.intent in_place $chain) | LC_ALL=C sort -u | wc -l)
expect_eq "the chain lists every path (intents and what was in place)" "$union" 5220
expect_eq "the last intent names all 5,220 as written or in place" \
	"$( (paths_in workspace.apply.intent changes "$rec"; paths_in workspace.apply.intent in_place "$rec") | LC_ALL=C sort -u | wc -l)" 5220
check "the last record says applied" grep -q '"outcome":"applied"' "$rec"
check "the intent is gone once applied" test ! -e "$SANDCAP_STATE_DIR/workspaces/.intents/$id"
expect_match "and a further apply is refused" "$("$SANDCAP" workspace apply "$id" 2>&1)" "applied already"
"$SANDCAP" workspace discard "$id" >/dev/null 2>&1

# ---- 2. A full host filesystem (a tiny tmpfs as the folder) ----
full_case() {
	local F=$1
	mkdir -p "$F"
	mount -t tmpfs -o size=1M,mode=0755 tmpfs "$F" || return 1
	echo base > "$F/z-edit" && chown -R 1234:1234 "$F" && settle
	policy full "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$F\", \"at\": \"/w\", \"mode\": \"cow\", \"quota\": \"16M\"}]}}"
	out=$("$SANDCAP" run --policy "$T/full.json" -- sh -c '
		for d in a b c; do mkdir /w/$d; for f in 1 2 3 4; do head -c 200000 /dev/urandom > /w/$d/f$f; done; done
		echo agent > /w/z-edit' 2>&1)
	fid=$(ws_of "$out")
	fup=$SANDCAP_STATE_DIR/workspaces/$fid/upper
}
F=$T/full
if full_case "$F"; then
	r=$("$SANDCAP" workspace apply "$fid" 2>&1)
	rc=$?
	expect_eq "an apply into a full folder fails (exit 1)" "$rc" 1
	expect_match "saying ENOSPC and that it can be resumed" "$r" "No space left.*apply again to resume"
	rec=$(sed -n 's/^  record: //p' <<<"$r")
	check "its record is sealed and verifies" "$SANDCAP" audit verify "$rec"
	check "it says failed" grep -q '"outcome":"failed"' "$rec"
	expect_eq "no temporary file is left in the full folder" "$(find "$F" -name '.sandcap-apply.*' | wc -l)" 0
	mount -o remount,size=16M "$F"
	before=$(pending "$fup" "$F")
	r=$("$SANDCAP" workspace apply "$fid" 2>&1)
	expect_eq "with room again, the plain retry finishes (exit 0, no conflict)" "$?:$(grep -c conflict <<<"$r")" "0:0"
	rec=$(sed -n 's/^  record: //p' <<<"$r")
	written=$(paths_in workspace.apply files "$rec" | grep -v '^[abc]$')
	expect_eq "it wrote exactly what the full folder lacked" "$written" "$before"
	expect_eq "the folder has every file" "$(pending "$fup" "$F" | wc -l)" 0
	"$SANDCAP" workspace discard "$fid" >/dev/null 2>&1
	umount "$F"

	# A host edit after the failed apply is still a conflict; the
	# directories it made are not.
	full_case "$F"
	"$SANDCAP" workspace apply "$fid" >/dev/null 2>&1
	mount -o remount,size=16M "$F"
	echo "host edit" > "$F/z-edit"
	r=$("$SANDCAP" workspace apply "$fid" 2>&1)
	rc=$?
	expect_eq "after a host edit the plain retry is refused (exit 2)" "$rc" 2
	expect_eq "the edited file is the only conflict" "$(sed -n 's/^  conflict: //p' <<<"$r")" z-edit
	check "the host's edit is kept" test "$(cat "$F/z-edit")" = "host edit"
	r=$("$SANDCAP" workspace apply "$fid" --force 2>&1)
	expect_eq "--force finishes" "$?:$(cat "$F/z-edit"):$(pending "$fup" "$F" | wc -l)" "0:agent:0"
	"$SANDCAP" workspace discard "$fid" >/dev/null 2>&1
	umount "$F"
else
	skip "a full host folder" "cannot mount a tmpfs"
fi

# ---- 3. Holes: a sparse file and punched holes are kept and applied as
# holes, so the host's disk use is bounded by the quota ----
S=$T/sparse
mkdir -p "$S" && head -c 8388608 /dev/urandom > "$S/punch" && chown -R 1234:1234 "$S" && settle
policy sparse "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$S\", \"at\": \"/w\", \"mode\": \"cow\", \"quota\": \"16M\"}]}}"
out=$("$SANDCAP" run --policy "$T/sparse.json" -- sh -c '
	truncate -s 256M /w/sparse && printf "hello!" | dd of=/w/sparse bs=1 seek=134217728 conv=notrunc 2>/dev/null
	fallocate --punch-hole --offset 1048576 --length 6291456 /w/punch && echo PUNCHED
	echo "IN $(stat -c %b /w/sparse) $(stat -c %s /w/sparse)"' 2>&1)
sid=$(ws_of "$out")
expect_match "a 256 MiB sparse file fits a 16M quota inside" "$out" "IN [0-9]+ 268435456"
expect_match "a hole was punched inside" "$out" PUNCHED
sup=$SANDCAP_STATE_DIR/workspaces/$sid/upper
check "kept with its holes: at most 1 MiB of the state directory ($(stat -c %b "$sup/sparse" 2>&1) blocks)" \
	test "$(stat -c %b "$sup/sparse")" -lt 2048
check "the punched file is kept with its hole (under 3 MiB of 8)" test "$(stat -c %b "$sup/punch")" -lt 6144
r=$("$SANDCAP" workspace apply "$sid" 2>&1)
expect_eq "the sparse workspace applies" "$?" 0
check "the host's copy is as long ($(stat -c %s "$S/sparse"))" test "$(stat -c %s "$S/sparse")" = 268435456
check "and takes at most 1 MiB of the host's disk ($(stat -c %b "$S/sparse") blocks)" \
	test "$(stat -c %b "$S/sparse")" -lt 2048
check "the punched file takes under 3 MiB on the host ($(stat -c %b "$S/punch") blocks)" \
	test "$(stat -c %b "$S/punch")" -lt 6144
check "the sparse file's content is equal" cmp -s "$sup/sparse" "$S/sparse"
check "the punched file's content is equal" cmp -s "$sup/punch" "$S/punch"
check "the hole reads as zeros, the data as written" \
	test "$(dd if="$S/sparse" bs=1 skip=134217726 count=10 2>/dev/null | od -An -c | tr -d ' ')" = '\0\0hello!\0\0'
rec=$(sed -n 's/^  record: //p' <<<"$r")
check "the record's SHA-256 is the content's, holes as zeros" \
	grep -q "\"path\":\"sparse\",\"sha256\":\"$(sha256sum < "$S/sparse" | cut -d' ' -f1)\"" "$rec"
"$SANDCAP" workspace discard "$sid" >/dev/null 2>&1

# ---- 4. Deep trees: 200 and 1,000 levels are kept, diffed and applied;
# a subtree whose paths grow too long to apply is refused from there on,
# alone ----
D=$T/deep
mkdir -p "$D/gone" && echo x > "$D/gone/f" && chown -R 1234:1234 "$D" && settle
policy deep "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$D\", \"at\": \"/w\", \"mode\": \"cow\", \"quota\": \"64M\"}]}}"
p200=$(printf 'd/%.0s' $(seq 200)) p1000=$(printf 'e/%.0s' $(seq 1000))
n100=$(printf 'n%.0s' $(seq 100))
l15=$(for i in $(seq 15); do printf '%s/' "$n100"; done) l30=$(for i in $(seq 30); do printf '%s/' "$n100"; done)
out=$("$SANDCAP" run --policy "$T/deep.json" -- sh -c '
	for i in $(seq 100); do echo $i > /w/other$i; done
	rm -r /w/gone
	mkdir -p "/w/$1" && echo two > "/w/$1leaf"
	mkdir -p "/w/$2" && echo thousand > "/w/$2leaf"
	mkdir -p "/w/long/$3" "/w/x/$4" && echo lost > "/w/x/$4/leaf"
	mv /w/x "/w/long/$3/x" && echo MOVED' sh "$p200" "$p1000" "$l15" "$l30" 2>&1)
did=$(ws_of "$out")
expect_match "a workspace with 200 and 1,000 levels is kept" "$did" '^sc-'
expect_match "a tree of 45 levels of 100-byte names was made inside" "$out" "MOVED"
check "the part too long to apply is refused, by name and why" grep -Eq \
	"^  workspace $did kept without 1 subtree\(s\) \(their paths are longer than apply can name, PATH_MAX\), the first: long/n{55}\.\.\. \(4[0-9]{3} bytes\)" <<<"$out"
d=$("$SANDCAP" workspace diff "$did" 2>&1)
check "diff lists the file 200 levels down" grep -qx "A  ${p200}leaf" <<<"$d"
check "diff lists the file 1,000 levels down" grep -qx "A  ${p1000}leaf" <<<"$d"
expect_eq "and the 100 other files" "$(grep -c '^A  other' <<<"$d")" 100
check "and the deletion" grep -qx "D  gone/" <<<"$d"
r=$("$SANDCAP" workspace apply "$did" 2>&1)
expect_eq "the deep workspace applies" "$?" 0
check "the file 200 levels down is on the host" test "$(cat "$D/${p200}leaf")" = two
check "the file 1,000 levels down is on the host" test "$(cat "$D/${p1000}leaf")" = thousand
check "the other files and the deletion too" test -f "$D/other100" -a ! -e "$D/gone"
levels=$(find "$D/long" -type d | wc -l)
check "the long subtree is applied as deep as a path can name ($levels levels)" test "$levels" -ge 38 -a "$levels" -le 43
expect_eq "and its too-long leaf is not" "$(find "$D/long" -type f | wc -l)" 0
"$SANDCAP" workspace discard "$did" >/dev/null 2>&1
check "a deep workspace can be discarded" test ! -e "$SANDCAP_STATE_DIR/workspaces/$did"

finish
