#!/usr/bin/env bash
# Signals to the supervisor: every catchable terminating signal stops the
# run cleanly (the sandbox stopped, sandbox.exit says which signal, the log
# sealed, no cgroup left), a second one kills at once, a closed stderr does
# not change the exit status, and what the launcher ignored or blocked is
# back to default inside.
. "$(dirname "$0")/lib.sh"
need_root

policy plain '{"version": 1}'

# cgroup directories of one sandbox, in every hierarchy
cgroups_of() { find /sys/fs/cgroup -maxdepth 6 -type d -name "sandcap-$1" 2>/dev/null; }
# the sandbox id named in a log
id_of() { grep -o '"sandbox":"sc-[0-9a-f]*"' "$1" | head -1 | cut -d'"' -f4; }
# wait until a process with exactly these arguments runs (up to 5 s)
wait_for() {
	for _ in $(seq 100); do
		pgrep -fx "$1" >/dev/null && return 0
		sleep 0.05
	done
	return 1
}
# the value at a path of the sandbox.exit record
exit_field() {
	grep '"event":"sandbox.exit"' "$1" | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())["data"]
for k in sys.argv[1].split("."):
    d = d.get(k) if isinstance(d, dict) else None
print("null" if d is None else (str(d).lower() if isinstance(d, bool) else d))' "$2"
}

# Each signal, sent to the supervisor mid-run, reaches the command (pid 1
# passes it on); the command dies of it, so the run exits 128+N.
n=0
for sig in HUP INT QUIT USR1 USR2 PIPE ALRM TERM VTALRM PROF XCPU XFSZ STKFLT PWR IO \
	RTMIN RTMIN+3 RTMAX-1 RTMAX; do
	n=$((n + 1))
	num=$(kill -l "$sig")
	log="$T/sig-$n.jsonl"
	arg="40$n.5"
	"$SANDCAP" run --audit "$log" --policy "$T/plain.json" -- sleep "$arg" 2>"$T/sig-$n.err" &
	pid=$!
	if ! wait_for "sleep $arg"; then
		not_ok "SIG$sig: the sandbox did not start"
		kill -KILL $pid
		wait $pid
		continue
	fi
	kill -s "$sig" $pid
	wait $pid
	rc=$?
	id=$(id_of "$log")
	errors=""
	[ "$rc" = $((128 + num)) ] || errors+=" exit $rc, want $((128 + num));"
	got=$(exit_field "$log" stopped_by.signal)
	[ "$got" = "SIG$sig" ] || [ "$sig$got" = IOSIGPOLL ] || errors+=" stopped_by.signal '$got';"
	[ "$(exit_field "$log" stopped_by.forced_kill)" = false ] || errors+=" forced;"
	"$SANDCAP" audit verify "$log" >/dev/null 2>&1 || errors+=" log does not verify;"
	[ -n "$id" ] && [ -z "$(cgroups_of "$id")" ] || errors+=" cgroups left: $(cgroups_of "$id");"
	pgrep -fx "sleep $arg" >/dev/null && errors+=" command still running;"
	if [ -z "$errors" ]; then
		ok "SIG$sig to the supervisor: sandbox.exit, sealed, no cgroup left, exit $rc"
	else
		not_ok "SIG$sig to the supervisor:$errors $(head -c 300 "$T/sig-$n.err")"
	fi
done

# The summary names the signal.
"$SANDCAP" run --policy "$T/plain.json" -- sleep 41.5 2>"$T/term.err" &
pid=$!
wait_for "sleep 41.5"
kill -TERM $pid
wait $pid
expect_match "the summary says the run was stopped by SIGTERM" "$(cat "$T/term.err")" \
	"stopped by signal 15 \(Terminated\): the command ended when asked \(exit 143\)"

# A closed stderr, or one whose reader is gone, leaves the command's status.
"$SANDCAP" run --policy "$T/plain.json" -- sh -c 'exit 3' 2>&-
expect_eq "stderr closed (2>&-): the command's status" "$?" 3
{
	"$SANDCAP" run --policy "$T/plain.json" -- sh -c 'sleep 0.2; exit 4' 2>&1
	echo $? >"$T/pipe.rc"
} | true
expect_eq "stdout and stderr a pipe nobody reads: the command's status, not 141" \
	"$(cat "$T/pipe.rc")" 4
out=$("$SANDCAP" run --quiet --policy "$T/plain.json" -- sh -c 'ls -l /proc/self/fd/2' 2>&-)
expect_match "a closed stderr is /dev/null inside" "$out" "-> /dev/null"

# A command that ignores SIGINT: one Ctrl-C waits out the grace, then the
# sandbox is killed (and said to be); a second Ctrl-C ends it at once.
log="$T/int1.jsonl"
start=$(date +%s%N)
"$SANDCAP" run --audit "$log" --policy "$T/plain.json" -- sh -c 'trap "" INT; sleep 42.5; :' 2>"$T/int1.err" &
pid=$!
wait_for "sleep 42.5"
kill -INT $pid
wait $pid
rc=$?
one_ms=$((($(date +%s%N) - start) / 1000000))
expect_eq "one SIGINT, ignored by the command: killed after the grace (exit 137)" "$rc" 137
expect_eq "sandbox.exit says the kill was forced" "$(exit_field "$log" stopped_by.forced_kill)" true
expect_eq "and it was no OOM kill" "$(exit_field "$log" oom_killed)" false
expect_match "the summary says it was killed" "$(cat "$T/int1.err")" \
	"stopped by signal 2 \(Interrupt\): killed, the command did not end within the grace"
expect_no_match "the summary does not call it an OOM kill" "$(cat "$T/int1.err")" "OOM"

log="$T/int2.jsonl"
start=$(date +%s%N)
"$SANDCAP" run --audit "$log" --policy "$T/plain.json" -- sh -c 'trap "" INT; sleep 43.5; :' 2>/dev/null &
pid=$!
wait_for "sleep 43.5"
t0=$(date +%s%N)
kill -INT $pid
sleep 0.2
kill -INT $pid
wait $pid
rc=$?
two_ms=$((($(date +%s%N) - t0) / 1000000))
one_ms=$((one_ms - (t0 - start) / 1000000))
expect_eq "two SIGINTs: killed (exit 137)" "$rc" 137
check "two SIGINTs end faster than one (${two_ms} ms against ${one_ms} ms)" \
	[ "$two_ms" -lt 1500 -a "$one_ms" -ge 2900 ]
expect_eq "the second one is a forced kill too" "$(exit_field "$log" stopped_by.forced_kill)" true
"$SANDCAP" audit verify "$log" >/dev/null 2>&1
expect_eq "its log verifies" "$?" 0

# A SIGPIPE that comes while the policy is still being read (before the
# supervisor takes its signals) is not dropped: it stops the run once the
# sandbox exists, like one that comes later.
mkfifo "$T/policy.fifo"
"$SANDCAP" run --quiet --audit "$T/early-pipe.jsonl" --policy - -- sleep 20 \
	<"$T/policy.fifo" >/dev/null 2>"$T/early-pipe.err" &
bg=$!
exec 7>"$T/policy.fifo"
sleep 0.3 # sandcap is blocked reading the policy from the FIFO
kill -PIPE $bg
echo '{"version": 1}' >&7
exec 7>&-
start=$(date +%s)
wait $bg
rc=$?
# 141, or 137 when it reached pid 1 before its exec and the grace ran out
expect_match "a SIGPIPE sent while the policy is read stops the run, not lost ($rc)" "$rc" '^(141|137)$'
check "  ... at once, not after the command's 20 s" [ $(($(date +%s) - start)) -lt 10 ]
check "  ... and sandbox.exit says the signal stopped it" \
	grep -q '"event":"sandbox.exit".*"stopped_by":{[^}]*"signal":"SIGPIPE"' "$T/early-pipe.jsonl"

# What the launcher ignored (nohup's SIGHUP, a Python parent's SIGPIPE) or
# blocked is back to default in the agent.
out=$(
	trap '' HUP PIPE INT
	python3 -c '
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGTERM})
os.execv(sys.argv[1], sys.argv[1:])' "$SANDCAP" run --quiet --policy "$T/plain.json" -- \
		grep -E '^Sig(Ign|Blk):' /proc/self/status 2>&1
)
expect_eq "ignored and blocked signals of the launcher: none inside" "$out" "SigBlk:	0000000000000000
SigIgn:	0000000000000000"

finish
