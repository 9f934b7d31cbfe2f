#!/usr/bin/env bash
# Real faults of the audit log (docs/audit.md, "When the log cannot be
# written"): its filesystem full at start or filled by the agent through a
# rw grant on it, --audit naming a FIFO, a socket or a device, and verify
# or report given an endless input. Each test checks what happened to the
# sandbox's command, not only what sandcap said.
. "$(dirname "$0")/lib.sh"
need_root
command -v python3 >/dev/null || skip_all "python3 not installed"

TINY=$T/tiny
mkdir -p "$TINY" "$T/out"
mount -t tmpfs -o size=256k,mode=0755 tmpfs "$TINY" || skip_all "cannot mount a tmpfs"
trap 'umount -l "$TINY" 2>/dev/null; cleanup_dir' EXIT
# The agent writes markers on another filesystem ($T/out, not full), and
# fills the tiny one through /fill, where its log lives too.
reset() {
	rm -rf "$TINY"/* "$T/out"/*
	mkdir -p "$TINY/log" "$TINY/grant"
	chmod 777 "$TINY/grant" "$T/out"
}
policy grants "{\"version\": 1, \"fs\": {\"grants\": [
  {\"path\": \"$TINY/grant\", \"mode\": \"rw\", \"at\": \"/fill\"},
  {\"path\": \"$T/out\", \"mode\": \"rw\", \"at\": \"/out\"}]},
  \"limits\": {\"wall\": \"30s\"}}"
# run CMD: sh -c CMD in the sandbox, log in the tiny tmpfs; sets rc, out
run() {
	log=$TINY/log/run.jsonl
	local t0=$SECONDS
	out=$(timeout 60 "$SANDCAP" run --audit "$log" --policy "$T/grants.json" -- sh -c "$1" 2>&1)
	rc=$?
	echo "# run took $((SECONDS - t0)) s, exit $rc"
}
# argv_logged WORD: a proc.exec record has WORD among its argv
argv_logged() {
	python3 - "$log" "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["event"] == "proc.exec" and sys.argv[2] in r["data"].get("argv", []):
        sys.exit(0)
sys.exit(1)
PY
}
# field EVENT KEY: data[KEY] of the first EVENT record
field() {
	python3 - "$log" "$1" "$2" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["event"] == sys.argv[2]:
        print(r["data"].get(sys.argv[3], "")); break
PY
}
last_event() { tail -n 1 "$log" | python3 -c 'import json, sys; print(json.load(sys.stdin)["event"])'; }
BIG=$(head -c 6000 /dev/zero | tr '\0' x)

# --- full at start: refused, nothing runs ---
reset
dd if=/dev/zero of="$TINY/grant/hog" bs=4k 2>/dev/null
run "echo ran > /out/ran"
expect_eq "a full audit filesystem refuses the run" "$rc" 125
expect_match "the message names the log and the missing reserve" "$out" \
	"audit log $TINY/log/run.jsonl: its filesystem has no room for the 16384 bytes"
check "the command did not run (no marker)" [ ! -e "$T/out/ran" ]
check "no empty log is left behind" [ ! -e "$log" ]
expect_no_match "the refusal names no log" "$out" "; audit: "
expect_no_match "no hash is printed" "$out" "hash"

# --- room for the reserve, not for sandbox.start: refused, and the log says why ---
reset
dd if=/dev/zero of="$TINY/grant/hog" bs=4k 2>/dev/null
truncate -s -16384 "$TINY/grant/hog" # four free pages: the reserve, nothing more
run "echo ran > /out/ran"
expect_eq "no room for sandbox.start refuses the run" "$rc" 125
expect_match "  ... saying so" "$out" "audit: cannot write the start of audit log $log: No space left on device"
check "  ... and the command did not run" [ ! -e "$T/out/ran" ]
expect_eq "  ... the log: audit.error, sandbox.exit, the seal, in the reserve" \
	"$(python3 -c 'import json, sys; print(*[json.loads(l)["event"] for l in open(sys.argv[1])])' "$log")" \
	"audit.error sandbox.exit audit.seal"
expect_eq "  ... audit.error: sandbox.start not written, run refused" \
	"$(field audit.error event) $(field audit.error action)" "sandbox.start run refused"
"$SANDCAP" audit verify "$log" >/dev/null 2>&1
expect_eq "  ... verify: incomplete (1)" "$?" 1

# --- the agent's attack: fill the grant, exec, delete the fill ---
# Each exec writes a marker when it runs: an exec without its record must
# not have run.
reset
run "dd if=/dev/zero of=/fill/f bs=4k 2>/dev/null
/bin/sh -c 'echo > /out/m1' SECRET-ACTION $BIG
/bin/sh -c 'echo > /out/m2' SECRET-2
rm /fill/f; echo > /out/end"
for m in 1 2; do
	word=SECRET-ACTION
	[ $m = 2 ] && word=SECRET-2
	if [ -e "$T/out/m$m" ]; then
		check "exec $word ran, so its record is in the log" argv_logged "$word"
	else
		check "exec $word has no record and did not run: the sandbox was stopped" \
			[ "$rc" = 137 ] && [ "$(field audit.error error)" = ENOSPC ]
	fi
done
if [ -e "$T/out/end" ]; then
	expect_eq "the run that fit its records ends normally" "$rc" 0
	check "and its log verifies" bash -c "\"$SANDCAP\" audit verify \"$log\" >/dev/null"
fi

# --- the same, with execs until the space runs out ---
reset
run "dd if=/dev/zero of=/fill/f bs=4k 2>/dev/null; i=0
while [ \$i -lt 400 ]; do /bin/sh -c 'echo > /out/ran-\$1' sh SECRET-\$i $BIG; i=\$((i+1)); done
rm /fill/f; echo > /out/end"
expect_eq "the sandbox is stopped: killed (137)" "$rc" 137
check "the loop never finished" [ ! -e "$T/out/end" ]
check "the fill was never deleted" [ -e "$TINY/grant/f" ]
ran=$(ls "$T/out" | grep -c '^ran-')
missing=0
for f in "$T"/out/ran-*; do
	[ -e "$f" ] || continue
	argv_logged "${f##*/ran-}" || missing=$((missing + 1))
done
expect_eq "every exec that ran ($ran) has its record, argv and all" "$missing" 0
check "some execs ran before the space ran out" [ "$ran" -gt 0 ]
n=$ran
check "the exec after the last recorded one did not run" [ ! -e "$T/out/ran-SECRET-$n" ]
if argv_logged "SECRET-$n"; then
	not_ok "exec SECRET-$n has a record though it never ran"
else
	ok "exec SECRET-$n, the one that was stopped, has no record"
fi
expect_eq "audit.error says why" "$(field audit.error error) $(field audit.error event)" \
	"ENOSPC proc.exec"
expect_eq "and what was done" "$(field audit.error action)" "sandbox stopped"
expect_eq "sandbox.exit follows, with the kill" "$(field sandbox.exit status)" 137
expect_eq "the log ends with its seal" "$(last_event)" audit.seal
vout=$("$SANDCAP" audit verify "$log" 2>&1)
vrc=$?
expect_eq "verify: not a whole run (exit 1)" "$vrc" 1
expect_match "verify says the log is incomplete and why" "$vout" \
	"INCOMPLETE: intact and sealed, but writing failed \(ENOSPC\) after [0-9]+ records: proc.exec was not written and the sandbox was stopped"
expect_match "the summary says the log failed" "$out" \
	"stopped: its audit log could not be written \(exit 137\)"
expect_match "  ... with the error and the record" "$out" \
	"audit log FAILED: ENOSPC \(No space left on device\) after [0-9]+ records, proc.exec not written; sandbox stopped"
expect_no_match "  ... and claims no final hash" "$out" "final hash"
rout=$("$SANDCAP" audit report "$log" 2>&1)
expect_match "report: the log is incomplete" "$rout" "Log: INCOMPLETE: writing failed \(ENOSPC\)"
reset
t0=$SECONDS
jout=$(timeout 60 "$SANDCAP" run --json --audit "$TINY/log/json.jsonl" --policy "$T/grants.json" -- \
	sh -c "dd if=/dev/zero of=/fill/g bs=4k 2>/dev/null; while :; do /bin/true $BIG; done" 2>&1 >/dev/null)
expect_match "--json: audit_state failed, with the error" "$jout" \
	'"audit_error":\{"after_records":[0-9]+,"error":"ENOSPC","not_written":"proc.exec","sandbox_stopped":true'
expect_match "--json: not sealed as final" "$jout" '"audit_state":"failed"'
echo "# the --json run took $((SECONDS - t0)) s"

# --- fs.write records go through the same writer ---
reset
run "dd if=/dev/zero of=/fill/f bs=4k 2>/dev/null; i=0
while :; do echo \$i > /out/w\$((i % 64)); i=\$((i+1)); done"
if [ "$(grep -o '"fs_write":"[^"]*"' "$log" | head -1)" = '"fs_write":"fanotify"' ]; then
	expect_eq "a write loop whose fs.write records find no room is stopped (137)" "$rc" 137
	expect_eq "audit.error names fs.write" "$(field audit.error event)" fs.write
	expect_eq "the log ends with its seal" "$(last_event)" audit.seal
else
	ok "# SKIP fs.write without fanotify is recorded at exit"
fi

# --- the proxy worker's records go through the same writer ---
if command -v nginx >/dev/null && command -v dnsmasq >/dev/null; then
	W=$T
	PIDS=()
	. "$(dirname "$0")/../../tools/fixtures.sh"
	trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null
umount -l "$TINY" 2>/dev/null; cleanup_dir' EXIT
	port=$(free_port)
	dns=$(free_port)
	start_origin "$port"
	start_dns "$dns" api.allowed.test=127.0.0.1
	policy net "{\"version\": 1, \"fs\": {\"grants\": [
	  {\"path\": \"$TINY/grant\", \"mode\": \"rw\", \"at\": \"/fill\"}]},
	  \"net\": {\"egress\": [{\"host\": \"api.allowed.test\", \"ports\": [$port]}],
	            \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\"},
	  \"limits\": {\"wall\": \"30s\"}}"
	reset
	log=$TINY/log/net.jsonl
	# One process, no more execs: only net.request records after the fill.
	out=$(timeout 60 "$SANDCAP" run --audit "$log" --policy "$T/net.json" -- /usr/bin/python3 -c "
import subprocess, urllib.request
subprocess.run(['dd', 'if=/dev/zero', 'of=/fill/f', 'bs=4k'], stderr=subprocess.DEVNULL)
while True:
    urllib.request.urlopen('http://api.allowed.test:$port/data.json').read()
" 2>&1)
	rc=$?
	expect_eq "a request loop whose net.request records find no room is stopped (137)" "$rc" 137
	expect_match "audit.error names net.request or the start of one" "$(field audit.error event)" \
		'^net\.request(\.start)?$'
	expect_eq "the log ends with its seal" "$(last_event)" audit.seal
	reqs=$(grep -c '"event":"net.request"' "$log")
	served=$(grep -c 'GET /data.json' "$T/nginx/access.log")
	check "requests ran and were recorded ($reqs recorded, $served served)" [ "$reqs" -gt 0 ]
	check "the origin served at most the recorded ones and those in flight at the stop" \
		[ "$served" -le $((reqs + 4)) ]
else
	ok "# SKIP nginx or dnsmasq missing: the proxy's records are not tested"
fi

# --- check and doctor warn when the log shares a rw grant's filesystem ---
out=$("$SANDCAP" check --policy "$T/grants.json" --audit "$TINY/log/x.jsonl" 2>&1 >/dev/null)
expect_match "check warns: the log's directory is on rw grant $TINY/grant's filesystem" "$out" \
	"warning: the audit log's directory \($TINY/log\) is on the filesystem of rw grant $TINY/grant"
out=$("$SANDCAP" doctor --policy "$T/grants.json" --audit "$TINY/log/x.jsonl" 2>&1 >/dev/null)
expect_match "doctor --policy warns the same" "$out" "is on the filesystem of rw grant $TINY/grant"
if [ "$(stat -c %d /dev/shm)" != "$(stat -c %d "$T")" ]; then
	out=$("$SANDCAP" check --policy "$T/grants.json" --audit /dev/shm/x.jsonl 2>&1 >/dev/null)
	expect_eq "no warning for a log on a filesystem of its own" "$out" ""
fi

# --- --audit that is not a regular file: refused at once ---
mkfifo "$T/fifo"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/sock"
for target in "$T/fifo:a FIFO" "$T/sock:a socket" "/dev/null:a character device"; do
	path=${target%%:*}
	what=${target#*:}
	start=$(date +%s%N)
	out=$(timeout 10 "$SANDCAP" run --audit "$path" --policy "$T/grants.json" -- \
		sh -c 'echo > /out/fifo-ran' 2>&1)
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	expect_eq "--audit $what: refused (125), not hung (timeout would be 124)" "$rc" 125
	expect_match "  ... saying what it is" "$out" "audit log $path is $what, not a regular file"
	check "  ... at once (${ms} ms)" [ "$ms" -lt 5000 ]
	expect_no_match "  ... and names no log, since none was written" "$out" "; audit: "
done
check "the command never ran" [ ! -e "$T/out/fifo-ran" ]
check "the FIFO is still a FIFO" [ -p "$T/fifo" ]

# --- verify and report on endless input ---
out=$(timeout 10 "$SANDCAP" audit verify /dev/zero 2>&1)
expect_eq "verify /dev/zero: refused (2), promptly" "$?" 2
expect_match "  ... it is not a regular file" "$out" "/dev/zero: a character device, not a regular file"
out=$(timeout 10 "$SANDCAP" audit verify - </dev/zero 2>&1)
expect_eq "verify - < /dev/zero: fails (1), promptly" "$?" 1
expect_match "  ... at line 1, saying what was read" "$out" \
	"line 1: longer than 1048576 bytes \(read that far without a newline\)"
out=$(timeout 10 "$SANDCAP" audit report - </dev/zero 2>&1)
expect_eq "report - < /dev/zero: a report of a broken log (1), promptly" "$?" 1
expect_match "  ... that stopped reading there" "$out" "longer than 1048576 bytes; not read any further"
out=$(timeout 10 "$SANDCAP" audit report "$T/fifo" 2>&1)
expect_eq "report of a FIFO: refused (2), not hung" "$?" 2

finish
