#!/bin/bash
# Copy-on-write grants and their workspaces, for real: the agent writes into
# an overlay whose upper layer is a tmpfs of the quota; the host folder is
# untouched until `sandcap workspace apply`, which writes only beneath it.
# Quotas on rw grants: enforced with ext4 project quotas on a loop image,
# refused elsewhere.
. "$(dirname "$0")/lib.sh"
need_root

H=$T/host
mkdir -p "$H/src/deep" "$H/gone" "$H/keep" "$H/opq"
printf 'a\n' > "$H/opq/a" && printf 'b\n' > "$H/opq/b"
printf 'one\ntwo\nthree\n' > "$H/src/a.txt"
printf 'to be moved\n' > "$H/src/mv-me.txt"
printf 'old\n' > "$H/src/deep/x"
printf 'bye\n' > "$H/gone/f"
printf 'stays\n' > "$H/keep/k"
printf '\0\1\2binary' > "$H/bin.dat"
chmod 644 "$H/src/a.txt"
# A host file with a second name outside the grant: apply replaces the
# name inside, never writes the inode both share.
mkdir -p "$T/outside-hl" && printf 'outside\n' > "$T/outside-hl/t" && ln "$T/outside-hl/t" "$H/hl"
chown -R 1234:1234 "$H"

# A digest of everything in a tree: names, types, modes, owners, link
# targets and contents. Never follows a link.
tree_digest() {
	(cd "$1" && find . -mindepth 1 -printf '%p %y %m %U:%G %l\n' | LC_ALL=C sort &&
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum) | sha256sum | cut -d' ' -f1
}
# The same, without owners (inside, owners show as the agent); sh, to run inside too.
VIEW_DIGEST='(cd "$0" && find . -mindepth 1 -printf "%p %y %m %l\n" | LC_ALL=C sort &&
	find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum) | sha256sum | cut -d" " -f1'
view_digest() { sh -c "$VIEW_DIGEST" "$1"; }

before=$(tree_digest "$H")
passwd_before=$(sha256sum < /etc/passwd)
policy cow "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$H\", \"at\": \"/w\", \"mode\": \"cow\", \"quota\": \"16M\"}]}}"

# 1. The agent: reads, writes, deletes, renames, new directories, modes,
# links, a 64 MiB write against a 16 MiB quota, then the view's digest.
out=$("$SANDCAP" run --policy "$T/cow.json" -- sh -c '
	cat /w/src/a.txt | head -1
	printf "one\nTWO\nthree\nfour\n" > /w/src/a.txt
	echo new > /w/src/new.txt
	rm -r /w/gone
	rm -r /w/opq && mkdir /w/opq && echo fresh > /w/opq/a
	mv /w/src/mv-me.txt /w/moved.txt
	mkdir -p /w/newdir/sub && echo n > /w/newdir/sub/f
	chmod 755 /w/keep/k
	chmod 750 /w/src/deep
	printf "\\0\\3" >> /w/bin.dat
	ln -s /etc /w/etc-link
	ln -s /etc/passwd /w/src/deep/x.new && mv /w/src/deep/x.new /w/src/deep/x
	ln /w/src/new.txt /w/src/hard.txt
	ln /etc/hostname /w/outside 2>/dev/null && echo LINKED-OUTSIDE
	echo inside > /w/hl
	dd if=/dev/zero of=/w/big bs=1M count=64 2>&1 | grep -o "No space left on device" | head -1
	echo "BIG $(stat -c %s /w/big)"
	rm -f /w/big
	echo "VIEW $(sh -c "$1" /w)"' sh "$VIEW_DIGEST" 2>&1)
expect_match "reads see the host's content" "$out" "^one"
expect_match "a 64 MiB write stops at the 16 MiB quota with ENOSPC inside" "$out" "No space left on device"
big=$(sed -n 's/^BIG //p' <<<"$out")
check "it stopped at the quota: 15..16 MiB were written ($big bytes)" \
	test "${big:-0}" -le $((16 << 20)) -a "${big:-0}" -ge $((15 << 20))
expect_no_match "a hard link to a file outside the grant cannot be made" "$out" "LINKED-OUTSIDE"
expect_eq "the host folder is byte-for-byte unchanged after the run" "$(tree_digest "$H")" "$before"
id=$(sed -n 's/^  workspace: \([^ ]*\).*/\1/p' <<<"$out")
expect_match "the summary names the workspace" "$id" "^sc-[0-9a-f]{16}\.0$"
view=$(sed -n 's/^VIEW //p' <<<"$out")

# 2. Listed, and in the audit log's start and exit records.
check "workspace list shows it" grep -q "^$id " <<<"$("$SANDCAP" workspace list)"
log=$(sed -n 's/^  audit: \([^ ]*\) (final hash.*/\1/p' <<<"$out")
check "sandbox.start names the workspace" grep -q "\"event\":\"sandbox.start\".*\"workspace\":\"$id\"" "$log"
check "sandbox.exit names the workspace" grep -q "\"event\":\"sandbox.exit\".*\"workspaces\":\[{[^]]*\"id\":\"$id\"" "$log"

# 3. diff lists every kind of change; symlinks as links.
d=$("$SANDCAP" workspace diff "$id")
expect_match "diff: modified" "$d" $'(^|\n)M  src/a\.txt'
expect_match "diff: added" "$d" $'(^|\n)A  src/new\.txt'
expect_match "diff: deleted (whiteout), directory and its file" "$d" $'(^|\n)D  gone/\nD  gone/f'
expect_match "diff: a directory removed and made again (opaque) hides the host's entries" "$d" $'(^|\n)M  opq/a\nD  opq/b'
expect_match "diff: renamed" "$d" $'(^|\n)R  src/mv-me\.txt -> moved\.txt'
expect_match "diff: new directories" "$d" $'(^|\n)A  newdir/\nA  newdir/sub/'
expect_match "diff: mode change" "$d" $'(^|\n)m  keep/k \(mode 0644 -> 0755\)'
expect_match "diff: a directory's mode change" "$d" $'(^|\n)m  src/deep/ \(mode 0755 -> 0750\)'
expect_match "diff: a symlink is shown as a link" "$d" $'(^|\n)A  etc-link -> /etc \(symlink\)'
expect_match "diff: a file replaced by a symlink" "$d" $'(^|\n)M  src/deep/x -> /etc/passwd \(symlink\) \(symlink, was a file\)'
p=$("$SANDCAP" workspace diff "$id" --patch)
expect_match "diff --patch: a unified diff of the text file" "$p" $'@@ -1,3 \+1,4 @@\n one\n-two\n\+TWO\n three\n\+four'
expect_match "diff --patch: a binary file is said to differ" "$p" 'Binary files a/bin\.dat and b/bin\.dat differ'
s=$("$SANDCAP" workspace diff "$id" --stat)
expect_match "diff --stat: counts lines" "$s" 'src/a\.txt \| \+2 -1'

# 4. A conflict: the host changes a file the agent changed. Refused, nothing
# written; --force writes over it.
# A file the agent changed and the host deleted meanwhile is one too.
printf 'host edit\n' >> "$H/src/a.txt"
rm "$H/keep/k"
mid=$(tree_digest "$H")
expect_match "diff: a changed file the host deleted since is said to be gone" \
	"$("$SANDCAP" workspace diff "$id")" $'(^|\n)A  keep/k \\(in the folder at the start, gone from it now\\)'
r=$("$SANDCAP" workspace apply "$id" 2>&1)
rc=$?
expect_eq "apply refuses a conflict (exit 2)" "$rc" 2
expect_match "the conflict is listed" "$r" "conflict: src/a.txt"
expect_match "a file the host deleted since is a conflict" "$r" "conflict: keep/k"
expect_no_match "a file the host left alone is none" "$r" "conflict: (src/new|bin\.dat|src/deep)"
expect_eq "a refused apply writes nothing" "$(tree_digest "$H")" "$mid"
t0=$(date +%s.%N)
r=$("$SANDCAP" workspace apply "$id" --force 2>&1)
expect_eq "apply --force succeeds" "$?" 0
t1=$(date +%s.%N)

# 5. The host is now what the sandbox saw, owned by the folder's owner;
# nothing outside the grant was written through the agent's links.
expect_eq "apply reproduces the sandbox's view exactly" "$(view_digest "$H")" "$view"
expect_eq "applied files belong to the folder's owner" "$(find "$H" ! -uid 1234 | wc -l)" 0
check "the planted /etc symlink is applied as a symlink" test "$(readlink "$H/etc-link")" = /etc
check "the file replaced by a symlink is a symlink on the host" test "$(readlink "$H/src/deep/x")" = /etc/passwd
check "/etc/passwd was not written through the links" test "$(sha256sum < /etc/passwd)" = "$passwd_before"
check "a host hard link's other name, outside the grant, is untouched" \
	test "$(cat "$T/outside-hl/t")" = outside -a "$(cat "$H/hl")" = inside
check "the agent's hard link is applied as a hard link inside the grant" \
	test "$(stat -c %i "$H/src/hard.txt")" = "$(stat -c %i "$H/src/new.txt")"
rec=$(sed -n 's/^  record: //p' <<<"$r")
check "the apply record verifies" "$SANDCAP" audit verify "$rec"
final=$("$SANDCAP" audit verify "$log" 2>&1 | sed -n 's/^last hash: //p')
check "the apply record names the run's final hash" grep -q "\"run_final_hash\":\"$final\"" "$rec"
check "the apply record lists the files with their SHA-256" \
	grep -Eq "\"op\":\"(write|link)\",\"path\":\"src/new.txt\",\"sha256\":\"$(sha256sum < "$H/src/new.txt" | cut -d' ' -f1)\"" "$rec"
r=$("$SANDCAP" workspace apply "$id" 2>&1)
expect_match "a second apply is refused" "$r" "applied already"

j=$("$SANDCAP" run --json --policy "$T/cow.json" -- touch /w/x 2>&1 | tail -1)
expect_match "run --json names the workspace" "$j" '"workspaces":"sc-[0-9a-f]{16}\.0"'
"$SANDCAP" workspace discard "$(sed -E 's/.*"workspaces":"([^"]*)".*/\1/' <<<"$j")" >/dev/null 2>&1

# A run that writes nothing into its cow grant keeps no workspace.
nws=$(ls "$SANDCAP_STATE_DIR/workspaces" | wc -l)
out=$("$SANDCAP" run --policy "$T/cow.json" -- cat /w/src/a.txt 2>&1)
expect_eq "a run that wrote nothing names no workspace" "$(grep -c '^  workspace' <<<"$out")" 0
expect_eq "and keeps none" "$(ls "$SANDCAP_STATE_DIR/workspaces" | wc -l)" "$nws"
elog=$(sed -n 's/^  audit: \([^ ]*\) (final hash.*/\1/p' <<<"$out")
check "sandbox.exit says it was not kept" grep -q '"event":"sandbox.exit".*"workspaces":\[{[^]]*"kept":false' "$elog"

# workspace prune --older-than: old ones go, young ones and one being
# applied (locked) stay; --dry-run removes nothing.
mkws() { sed -n 's/^  workspace: \([^ ]*\).*/\1/p' <<<"$("$SANDCAP" run --policy "$T/cow.json" -- touch /w/p 2>&1)"; }
W=$SANDCAP_STATE_DIR/workspaces
wold=$(mkws) wyoung=$(mkws) wbusy=$(mkws)
touch -d '40 days ago' "$W/$wold/meta.json" "$W/$wbusy/meta.json"
mkdir -p "$W/.intents" && echo x > "$W/.intents/$wold"
# The lock is held by the sleep itself (its fd 9), so killing it frees all.
(exec 9<"$W/$wbusy" && flock -x 9 && exec sleep 30) &
locker=$!
for _ in $(seq 50); do flock -n -x "$W/$wbusy" true || break; sleep 0.1; done
out=$("$SANDCAP" workspace prune --older-than 30d --dry-run 2>&1)
expect_match "dry run: the old one would go" "$out" "would remove $W/$wold \(kept, [0-9]+ entries, [0-9]+ bytes, last written 40 days ago\)"
check "dry run removes nothing" test -d "$W/$wold"
out=$("$SANDCAP" workspace prune --older-than 30d 2>&1)
expect_eq "prune exits 0" "$?" 0
check "the old workspace is gone, with its intent" test ! -e "$W/$wold" -a ! -e "$W/.intents/$wold"
check "the young one stays" test -d "$W/$wyoung"
expect_match "the one being applied stays, said so" "$out" "kept $W/$wbusy \(being applied\)"
expect_match "a total" "$out" "removed 1 workspace \([0-9]+ bytes\) older than 30d; kept 1 being applied, [0-9]+ younger"
kill $locker 2>/dev/null; wait $locker 2>/dev/null
r=$("$SANDCAP" workspace prune --older-than 30x 2>&1)
expect_eq "a bad age is refused (exit 125), saying what was expected" "$?:$(grep -c 'expected a positive age' <<<"$r")" "125:1"
check "workspace prune --help exits 0 and describes it" bash -c "'$SANDCAP' workspace prune --help | grep -q 'prune --older-than AGE'"
"$SANDCAP" workspace discard "$wyoung" >/dev/null 2>&1
"$SANDCAP" workspace discard "$wbusy" >/dev/null 2>&1

# 6. A symlinked directory component planted in the upper layer (as a
# hostile agent or a tampered state directory would) cannot redirect apply.
policy cow2 "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$H\", \"at\": \"/w\", \"mode\": \"cow\", \"quota\": \"4M\"}]}}"
# Also 50 hard links to one 1 MiB file: kept and applied as links, so
# neither the state directory nor the host holds more than the quota.
out=$("$SANDCAP" run --policy "$T/cow2.json" -- sh -c 'echo x > /w/newfile
	head -c 1048576 /dev/urandom > /w/big1
	for i in $(seq 50); do ln /w/big1 /w/link$i; done' 2>&1)
id2=$(sed -n 's/^  workspace: \([^ ]*\).*/\1/p' <<<"$out")
check "50 hard links to 1 MiB take 1 MiB in the state directory" \
	test "$(du -sk "$SANDCAP_STATE_DIR/workspaces/$id2/upper" | cut -f1)" -lt 2048
mkdir -p "$T/outside"
ln -s "$T/outside" "$H/escape" # a host symlink where the workspace writes a directory
up=$SANDCAP_STATE_DIR/workspaces/$id2/upper
mkdir "$up/escape" && echo pwned > "$up/escape/f"
r=$("$SANDCAP" workspace apply "$id2" --force 2>&1)
check "apply never writes through a symlinked directory" test ! -e "$T/outside/f"
check "the symlink on the host was replaced by the directory" test -d "$H/escape" -a ! -L "$H/escape"
check "the hard links are applied as links to one file" \
	test "$(stat -c %i "$H/link50")" = "$(stat -c %i "$H/big1")" -a "$(stat -c %h "$H/big1")" = 51
"$SANDCAP" workspace discard "$id2" >/dev/null 2>&1
check "discard removes the workspace" test ! -e "$SANDCAP_STATE_DIR/workspaces/$id2"
check "a discarded workspace is no longer listed" bash -c "! '$SANDCAP' workspace list | grep -q '^$id2 '"

# "inodes" bounds the files the changes may hold: the 33rd new one fails.
policy cowi "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$H\", \"at\": \"/w\", \"mode\": \"cow\", \"quota\": \"4M\", \"inodes\": 32}]}}"
out=$("$SANDCAP" run --policy "$T/cowi.json" -- sh -c \
	'i=0; while [ $i -lt 100 ]; do true > /w/n$i || break; i=$((i+1)); done; echo "MADE $i"' 2>&1)
expect_eq "\"inodes\": 32 lets the agent make 32 files, not one more" "$(sed -n 's/^MADE //p' <<<"$out")" 32
expect_match "the next one fails with ENOSPC" "$out" "No space left on device"
"$SANDCAP" workspace discard "$(sed -n 's/^  workspace: \([^ ]*\).*/\1/p' <<<"$out")" >/dev/null 2>&1

# A session's cow workspace lives for the session: diffed and applied while
# it runs (by the session's name or the workspace id), kept when it stops.
export SANDCAP_RUNTIME_DIR=$T/run
L=$T/live
mkdir -p "$L" && printf 'base\n' > "$L/f.txt" && chown -R 1234:1234 "$L"
policy live "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$L\", \"at\": \"/w\", \"mode\": \"cow\", \"quota\": \"64M\"}]}}"
sj=$("$SANDCAP" session start --policy "$T/live.json" --name wsl --json 2>&1)
lid=$(sed -n 's/.*"workspaces":\["\([^"]*\)"\].*/\1/p' <<<"$sj")
expect_match "session start --json names the session's workspace" "$lid" '^sc-[0-9a-f]{16}\.0$'
check "session list --json names it too" grep -q "\"workspaces\":\[\"$lid\"\]" <<<"$("$SANDCAP" session list --json)"
"$SANDCAP" exec wsl -- sh -c 'echo one > /w/new.txt; echo changed > /w/f.txt'
d=$("$SANDCAP" workspace diff wsl 2>&1)
expect_match "diff by session name reads the live upper layer" "$d" $'A  new\\.txt'
expect_match "diff by workspace id too" "$("$SANDCAP" workspace diff "$lid" 2>&1)" $'M  f\\.txt'
check "the host is untouched before apply" test ! -e "$L/new.txt"
r=$("$SANDCAP" workspace apply wsl 2>&1)
expect_eq "apply while the session runs writes the host" "$(cat "$L/new.txt" "$L/f.txt" 2>&1)" $'one\nchanged'
check "the session still runs after apply" test "$("$SANDCAP" exec wsl -- cat /w/new.txt)" = one
"$SANDCAP" exec wsl -- sh -c 'echo two > /w/new.txt'
r=$("$SANDCAP" workspace apply wsl 2>&1)
expect_eq "a path applied before and changed again is no conflict the next time" "$?:$(cat "$L/new.txt")" "0:two"
echo host > "$L/f.txt"
"$SANDCAP" exec wsl -- sh -c 'echo agent > /w/f.txt'
r=$("$SANDCAP" workspace apply "$lid" 2>&1); rc=$?
expect_eq "a host change since the last apply is a conflict (exit 2)" "$rc:$(cat "$L/f.txt")" "2:host"
expect_match "the conflict is listed" "$r" "conflict: f\.txt"
# The agent rewrites a file while it is applied: reported, never half-renamed.
"$SANDCAP" exec wsl -- sh -c 'head -c 8388608 /dev/urandom > /w/seed; (while :; do cat /w/seed > /w/hot; done) >/dev/null 2>&1 & echo $! > /tmp/writer' </dev/null
# The writer runs before the first try; a loaded host may let an apply fall
# between two rewrites, so it is tried up to 40 times.
for _ in $(seq 50); do
	"$SANDCAP" exec wsl -- test -s /w/hot 2>/dev/null && break
	sleep 0.1
done
seen=no
for _ in $(seq 40); do
	r=$("$SANDCAP" workspace apply "$lid" --force 2>&1)
	grep -q "changed during apply.*hot" <<<"$r" && { seen=yes; break; }
done
expect_eq "a file the agent changed during apply is reported" "$seen" yes
[ "$seen" = yes ] || tap_diag "the last apply said: $(head -c 600 <<<"$r")"
"$SANDCAP" exec wsl -- sh -c 'kill $(cat /tmp/writer)'
check "no temporary file is left beside it" bash -c "! ls -a '$L' | grep -q sandcap-apply"
log=$(sed -n 's/.*"audit":"\([^"]*\)".*/\1/p' <<<"$sj")
"$SANDCAP" exec wsl -- sh -c 'rm /w/hot /w/seed; echo late > /w/late.txt'
out=$("$SANDCAP" session stop wsl --json 2>&1)
expect_match "session stop names the kept workspace" "$out" "\"workspaces\":\[\"$lid\"\]"
check "the session log records each live apply" grep -q '"event":"workspace.applied".*"paths":2' "$log"
check "kept as a normal workspace" grep -q "^$lid " <<<"$("$SANDCAP" workspace list)"
d=$("$SANDCAP" workspace diff "$lid" 2>&1)
expect_match "the kept workspace lists what was not applied yet" "$d" $'A  late\\.txt'
expect_no_match "and not what was" "$d" 'new\.txt'
r=$("$SANDCAP" workspace apply "$lid" 2>&1)
expect_eq "and applies it without false conflicts" "$?:$(cat "$L/late.txt")" "0:late"
"$SANDCAP" workspace discard "$lid" >/dev/null 2>&1
unset SANDCAP_RUNTIME_DIR

# Without root a cow grant is refused before anything runs, saying why.
if command -v setpriv >/dev/null; then
	mkdir -p "$T/nobody" && chown 65534:65534 "$T/nobody"
	nb=$(binaries_for_others "$T/nobody-bin")
	r=$(cd "$T/nobody" && setpriv --reuid=65534 --regid=65534 --clear-groups \
		env HOME="$T/nobody" SANDCAP_STATE_DIR="$T/nobody/state" "$nb" run --policy "$T/cow2.json" -- true 2>&1)
	expect_match "unprivileged, a cow grant is refused clearly" "$r" "cow workspace needs root"
else
	skip "unprivileged cow refusal" "no setpriv"
fi

dr=$("$SANDCAP" doctor 2>&1)
expect_match "doctor says whether cow grants work here" "$dr" 'cow grants +yes'
expect_match "doctor says whether rw quotas are enforced here" "$dr" 'rw grant quotas +(yes|NO) '

# 7. A state directory with no room for the changes (a tiny tmpfs): the
# run says the workspace was not kept, its log says why, nothing half-kept
# is left behind.
mkdir -p "$T/tiny"
if mount -t tmpfs -o size=64k tmpfs "$T/tiny"; then
	out=$(SANDCAP_STATE_DIR=$T/tiny "$SANDCAP" run --audit "$T/tiny-run.jsonl" --policy "$T/cow2.json" -- \
		sh -c 'dd if=/dev/urandom of=/w/blob bs=64k count=16 2>/dev/null' 2>&1)
	expect_match "a workspace that cannot be kept is reported" "$out" "workspace NOT kept: .*No space left"
	check "sandbox.exit records why" grep -q '"event":"sandbox.exit".*"workspace_error":"cannot keep' "$T/tiny-run.jsonl"
	expect_eq "no half workspace is left" "$(ls "$T/tiny/workspaces" | wc -l)" 0
	umount "$T/tiny"
else
	skip "state directory full" "cannot mount a tmpfs"
fi

# 8. A rw grant with a quota: enforced with ext4 project quotas when this
# host can make one, refused without best_effort elsewhere.
policy rwq "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$T/host\", \"mode\": \"rw\", \"quota\": \"16M\"}]}}"
r=$("$SANDCAP" run --policy "$T/rwq.json" -- true 2>&1)
expect_match "a rw quota where the filesystem has no project quota is refused" "$r" "has a quota, but .*best_effort"
policy rwqb "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$T/host\", \"mode\": \"rw\", \"quota\": \"16M\", \"best_effort\": true}]}}"
r=$("$SANDCAP" run --policy "$T/rwqb.json" -- true 2>&1)
expect_match "with best_effort it runs, saying not enforced" "$r" "not enforced.*quota"
log=$(sed -n 's/^  audit: \([^ ]*\) (final hash.*/\1/p' <<<"$r")
check "sandbox.start records the quota's state as not_enforced" grep -q '"quota_state":"not_enforced"' "$log"
check "and lists it under not_enforced, saying why" \
	grep -Eq '"not_enforced":\[[^]]*"fs.grants\[0\].quota: [^"]*quota' "$log"
expect_match "doctor --policy says the grant's quota would not be enforced, and why" \
	"$("$SANDCAP" doctor --policy "$T/rwq.json" 2>&1)" \
	"rw grant quota +NO +fs.grants\[0\] $T/host: .*quota.* \(run refuses it\)"
expect_match "and that best_effort would run without it" "$("$SANDCAP" doctor --policy "$T/rwqb.json" 2>&1)" \
	"rw grant quota +NO +fs.grants\[0\] .*recorded as not_enforced"
if command -v mkfs.ext4 >/dev/null && [ -e /dev/loop-control ]; then
	img=$T/prj.img
	truncate -s 96M "$img"
	mkfs.ext4 -q -O project,quota "$img" && mkdir -p "$T/prj" &&
		mount -o loop,prjquota "$img" "$T/prj" 2>/dev/null
	if mountpoint -q "$T/prj"; then
		mkdir "$T/prj/g" && chown 1234:1234 "$T/prj/g"
		policy rwe "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$T/prj/g\", \"at\": \"/g\", \"mode\": \"rw\", \"quota\": \"16M\"}]}}"
		out=$("$SANDCAP" run --policy "$T/rwe.json" -- sh -c \
			'dd if=/dev/zero of=/g/big bs=1M count=64 2>&1 | grep -o "Disk quota exceeded" | head -1; ls -l /g/big' 2>&1)
		expect_match "a rw quota is enforced by ext4 project quotas (EDQUOT inside)" "$out" "Disk quota exceeded"
		sz=$(stat -c %s "$T/prj/g/big")
		check "the file stopped at the quota (16 MiB)" test "$sz" -le $((16 << 20)) -a "$sz" -ge $((15 << 20))
		check "the sandbox.start record says enforced" grep -q '"quota_state":"enforced"' "$(sed -n 's/^  audit: \([^ ]*\) (final hash.*/\1/p' <<<"$out")"
		umount "$T/prj"
	else
		# This kernel has no quota format (CONFIG_QFMT_V2): it mounts no
		# ext4 with the project or quota feature at all, so the enforced
		# path runs in tests/vm/run-quota. Here: a real ext4 (on a loop
		# device, no project feature) is refused all the same.
		echo "# enforced rw quotas not exercised here (see tests/vm/run-quota): $(dmesg 2>/dev/null | grep -o 'EXT4-fs (loop[0-9]*): .*' | tail -1)"
		mkfs.ext4 -q -F "$img" && mount -o loop "$img" "$T/prj"
		if mountpoint -q "$T/prj"; then
			mkdir -p "$T/prj/g"
			policy rwn "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$T/prj/g\", \"at\": \"/g\", \"mode\": \"rw\", \"quota\": \"16M\"}]}}"
			r=$("$SANDCAP" run --policy "$T/rwn.json" -- true 2>&1)
			expect_match "a rw quota on an ext4 without project quotas is refused" "$r" "has a quota, but .*best_effort"
			umount "$T/prj"
		else
			skip "a rw quota on a plain ext4" "cannot mount a loop ext4"
		fi
	fi
else
	skip "rw quota enforced" "no mkfs.ext4 or loop devices"
fi
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "# apply of the first workspace: %.3f s\n", b - a }'
finish
