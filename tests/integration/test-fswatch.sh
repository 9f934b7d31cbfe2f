#!/usr/bin/env bash
# fs.write audit records: what the agent created, modified, renamed and
# deleted in its rw grants, seen by fanotify from the supervisor, and by the
# before/after listing when fanotify is not used (SANDCAP_FSWATCH=listing).
. "$(dirname "$0")/lib.sh"
need_root

mkdir -p "$T/rw" "$T/ro"
echo granted > "$T/ro/file"
reset_rw() {
	rm -rf "$T/rw" && mkdir -p "$T/rw"
	echo old > "$T/rw/existing"
	echo r > "$T/rw/torename"
	echo d > "$T/rw/todelete"
	chown -R 4321:4321 "$T/rw"
}
policy grants "{\"version\": 1, \"fs\": {\"grants\": [
  {\"path\": \"$T/ro\", \"mode\": \"ro\", \"at\": \"/ro\"},
  {\"path\": \"$T/rw\", \"mode\": \"rw\", \"at\": \"/work\"}], \"workdir\": \"/work\"}}"

# run NAME CMD: runs sh -c CMD in a sandbox; its audit log is $T/NAME.jsonl, set as $log
run() {
	log=$T/$1.jsonl
	"$SANDCAP" run --quiet --audit "$log" --policy "$T/grants.json" -- sh -c "$2" >/dev/null 2>&1
}
# writes LOG: one "op path type" line per fs.write record, in log order
writes() {
	grep '"event":"fs.write"' "$1" |
		sed -E 's/.*"data":\{[^}]*"op":"([^"]*)","path":"([^"]*)","type":"([^"]*)".*/\1 \2 \3/'
}
verify() { "$SANDCAP" audit verify "$1" >/dev/null 2>&1; }
layer() { grep -o '"fs_write":"[^"]*"' "$1" | head -1; }

# --- fanotify ---
reset_rw
run create 'printf new > /work/created'
expect_eq "fanotify is the watch used" "$(layer "$log")" '"fs_write":"fanotify"'
expect_eq "created file: create then modify" "$(writes "$log")" "create /work/created file
modify /work/created file"
check "created file landed on the host" [ "$(cat "$T/rw/created")" = new ]
check "host_path names the host file" grep -q "\"host_path\":\"$T/rw/created\"" "$log"

run modify 'printf more >> /work/existing'
expect_eq "modified file: one modify" "$(writes "$log")" "modify /work/existing file"

run rename 'mv /work/torename /work/renamed'
expect_eq "renamed file: rename_from then rename_to" "$(writes "$log")" "rename_from /work/torename file
rename_to /work/renamed file"

run delete 'rm /work/todelete'
expect_eq "deleted file: delete" "$(writes "$log")" "delete /work/todelete file"

run mkdir 'mkdir /work/newdir'
expect_eq "created directory: create, type dir" "$(writes "$log")" "create /work/newdir dir"

run nested 'mkdir -p /work/a/b && printf z > /work/a/b/c'
expect_eq "nested directories and a file in them" "$(writes "$log")" "create /work/a dir
create /work/a/b dir
create /work/a/b/c file
modify /work/a/b/c file"

run readonly 'echo t > /tmp/scratch; cat /ro/file >/dev/null; echo x > /ro/file; echo $? > /tmp/rc'
expect_eq "nothing for /tmp or a read-only grant" "$(writes "$log")" ""
expect_eq "read-only grant unchanged" "$(cat "$T/ro/file")" "granted"

run loop 'i=0; while [ $i -lt 300 ]; do echo $i >> /work/loop; i=$((i + 1)); done'
nmod=$(writes "$log" | grep -c '^modify /work/loop ')
check "a loop of 300 writes is coalesced ($nmod modify records)" [ "$nmod" -ge 1 -a "$nmod" -lt 100 ]
check "the loop's file is created once" [ "$(writes "$log" | grep -c '^create /work/loop ')" = 1 ]

run badname 'printf x > "/work/bad$(printf "\\377")name"'
check "a name that is not UTF-8 is escaped, the record stays valid" \
	grep -q '"path":"/work/bad\\\\xffname"' "$log"

# A host process writing into the grant while the sandbox runs is not the agent.
(exec 3>>"$T/rw/hostfile"; for i in $(seq 40); do echo "$i" >&3; sleep 0.05; done) &
writer=$!
sleep 0.2
run host 'sleep 1; printf a > /work/agentfile'
wait $writer
expect_eq "writes of a living host process are not attributed to the agent" \
	"$(writes "$log")" "create /work/agentfile file
modify /work/agentfile file"

check "audit log with fs.write records verifies" verify "$log"
out=$("$SANDCAP" audit report "$log" 2>&1)
expect_match "report counts the files written as sandbox.exit does (distinct paths)" "$out" "files +1 written \(2 fs.write records\)"
expect_match "report names the path and op" "$out" "/work/agentfile \(create\)"
expect_match "sandbox.exit counts the files written" "$(grep '"event":"sandbox.exit"' "$log")" '"files_written":1[,}]'

# The sandbox's stdout redirected to a file on the grant's filesystem, but
# outside the grant, written many times by living processes: those writes
# are not in a grant, and not lost writes either.
reset_rw
"$SANDCAP" run --quiet --audit "$T/stdout.jsonl" --policy "$T/grants.json" -- sh -c \
	'for i in 1 2 3 4 5 6 7 8; do echo "line $i"; sleep 0.05; done; echo x > /work/mine; sleep 0.2' \
	> "$T/stdout.txt" 2>/dev/null
expect_eq "the redirected stdout got every line" "$(wc -l < "$T/stdout.txt")" 8
expect_eq "stdout in a file outside the grant: only the grant's writes are records" \
	"$(writes "$T/stdout.jsonl")" "create /work/mine file
modify /work/mine file"
check "no truncated fs.write record for it" bash -c "! grep -q '\"op\":\"truncated\"' '$T/stdout.jsonl'"
out=$("$SANDCAP" audit report "$T/stdout.jsonl" 2>&1)
expect_no_match "the report does not call the list incomplete" "$out" "incomplete"

# The cap: FW_MAX_EVENTS (4096) records, then one "truncated" with the count.
run many 'mkdir /work/many && cd /work/many && i=0; while [ $i -lt 4200 ]; do : > f$i; i=$((i + 1)); done'
expect_eq "at most 4096 fs.write records for files" "$(writes "$log" | grep -c " file$\| dir$")" 4096
expect_match "then one truncated record with the count left out" \
	"$(grep '"op":"truncated"' "$log")" '"count":105,.*"reason":"event cap"'
out=$("$SANDCAP" audit report "$log" 2>&1)
expect_match "the report says the list is incomplete" "$out" "incomplete: 105 writes not recorded"

# A grant that is one file.
echo abc > "$T/single.txt" && chown 4321:4321 "$T/single.txt"
policy file "{\"version\": 1, \"fs\": {\"grants\": [
  {\"path\": \"$T/single.txt\", \"mode\": \"rw\", \"at\": \"/data/single.txt\"}]}}"
for mode in fanotify listing; do
	SANDCAP_FSWATCH=$mode "$SANDCAP" run --quiet --audit "$T/file-$mode.jsonl" --policy "$T/file.json" \
		-- sh -c 'echo more >> /data/single.txt' >/dev/null 2>&1
	expect_eq "a file grant is watched too ($mode)" "$(writes "$T/file-$mode.jsonl")" \
		"modify /data/single.txt file"
done

# Another filesystem mounted inside a rw grant is cloned with it: watched too.
mkdir -p "$T/rwm/sub"
if mount -t tmpfs -o size=1M tmpfs "$T/rwm/sub"; then
	trap 'umount "$T/rwm/sub" 2>/dev/null; cleanup_dir' EXIT
	chown -R 4321:4321 "$T/rwm"
	policy sub "{\"version\": 1, \"fs\": {\"grants\": [
	  {\"path\": \"$T/rwm\", \"mode\": \"rw\", \"at\": \"/work\"}]}}"
	"$SANDCAP" run --quiet --audit "$T/sub.jsonl" --policy "$T/sub.json" \
		-- sh -c 'printf x > /work/sub/inside' >/dev/null 2>&1
	expect_eq "a submount of a rw grant is watched" "$(writes "$T/sub.jsonl")" \
		"create /work/sub/inside file
modify /work/sub/inside file"
	umount "$T/rwm/sub"
else
	not_ok "cannot mount a tmpfs for the submount test"
fi

# Nothing of a run outlives it: the fanotify group's close (slow in the
# kernel) is joined before sandcap run returns. survivors runs sandcap and
# lists, right after it returned, every process it started (its environment
# or command line carries the mark, or its executable is sandcap).
SURVIVORS=$(dirname "$SANDCAP")/tests/helpers/survivors
if [ -x "$SURVIVORS" ]; then
	reset_rw
	left=0 bad=""
	for i in $(seq 50); do
		out=$("$SURVIVORS" "sandcap-run-$$-$i" "$SANDCAP" run --quiet --policy "$T/grants.json" \
			-- sh -c "echo $i > /work/out; : sandcap-run-$$-$i" 2>/dev/null)
		[ $? = 0 ] || { left=$((left + 1)); bad=$out; }
	done
	expect_eq "50 runs with a rw grant: no process of theirs alive when they return" \
		"$left${bad:+ ($bad)}" 0
	expect_eq "and the runs ran" "$(cat "$T/rw/out")" 50
else
	not_ok "no survivors helper next to $SANDCAP"
fi

# --- listing fallback ---
reset_rw
SANDCAP_FSWATCH=listing "$SANDCAP" run --quiet --audit "$T/listing.jsonl" \
	--policy "$T/grants.json" -- sh -c 'printf new > /work/created; printf more >> /work/existing
	mv /work/torename /work/renamed; rm /work/todelete; mkdir /work/newdir
	echo t > /tmp/scratch; echo x > /ro/file' >/dev/null 2>&1
log=$T/listing.jsonl
expect_match "listing mode is announced in sandbox.start" "$(layer "$log")" \
	'"fs_write":"listing \(forced by SANDCAP_FSWATCH\)"'
expect_eq "listing reports create, modify, rename, delete and the new directory" \
	"$(writes "$log" | sort)" "$(sort <<'EOF'
create /work/created file
create /work/newdir dir
delete /work/todelete file
modify /work/existing file
rename_from /work/torename file
rename_to /work/renamed file
EOF
)"
check "listing-mode log verifies" verify "$log"

SANDCAP_FSWATCH=listing "$SANDCAP" run --quiet --audit "$T/listing-read.jsonl" \
	--policy "$T/grants.json" -- sh -c 'cat /work/existing >/dev/null' >/dev/null 2>&1
expect_eq "listing: reading changes nothing" "$(writes "$T/listing-read.jsonl")" ""

# SANDCAP_FSWATCH is the supervisor's: the agent does not see it.
out=$(SANDCAP_FSWATCH=listing "$SANDCAP" run --quiet --policy "$T/grants.json" -- sh -c 'echo "[$SANDCAP_FSWATCH]"' 2>&1)
expect_eq "the test knob does not reach the sandbox" "$out" "[]"

finish
