#!/usr/bin/env bash
# An interactive run: when 0-2 are a terminal the command gets a pty of the
# sandbox's own devpts (tty names it, the size follows), keystrokes reach it,
# Ctrl-C is the command's, the host terminal is restored, and a forced kill
# after SIGINT is reported as one. A real pty from python3's pty module.
. "$(dirname "$0")/lib.sh"
need_root
command -v python3 >/dev/null || skip_all "needs python3"

policy plain '{"version": 1}'
chmod 644 "$T/plain.json"

# term [--signal NAME] OUT INPUT CMD...: runs CMD on a fresh 33x111 pty,
# types INPUT (Python escapes) once the command is up, sends signal NAME to
# the child, and writes what the terminal showed to OUT; prints the exit
# status (tests/helpers/pty-run.py).
term() { python3 "$(dirname "$0")/../helpers/pty-run.py" "$@"; }

run=("$SANDCAP" run --policy "$T/plain.json" --)

rc=$(term "$T/tty.out" "" "${run[@]}" sh -c 'tty; stty size; ls -l /proc/self/fd/0')
out=$(tr -d '\r' <"$T/tty.out")
expect_eq "tty in a pty: exit 0" "$rc" 0
expect_match "tty names the sandbox's pty" "$out" $'(^|\n)/dev/pts/[0-9]+\n'
expect_match "the size is the host terminal's" "$out" $'\n33 111\n'
expect_match "fd 0 is that pty" "$out" "/proc/self/fd/0 -> /dev/pts/[0-9]+"

rc=$(term "$T/read.out" 'hello\r' "${run[@]}" sh -c 'read x; echo "got:$x"')
expect_eq "a line typed reaches the command: exit 0" "$rc" 0
expect_match "and it read it" "$(tr -d '\r' <"$T/read.out")" "got:hello"

rc=$(term "$T/ctrlc.out" '\x03' "${run[@]}" sleep 44.5)
expect_eq "Ctrl-C on the terminal is the command's: it dies of SIGINT (130)" "$rc" 130

# The host terminal is as it was after the run (the relay puts it in raw mode).
rc=$(term "$T/stty.out" "" sh -c "stty -g >'$T/before'; ${run[*]} true; stty -g >'$T/after'")
expect_eq "the host terminal's mode is restored" "$(cat "$T/after")" "$(cat "$T/before")"

# SIGINT to the supervisor of a command that ignores it: killed after the
# grace, and the summary (on the terminal) and the log say so.
rc=$(term --signal SIGINT "$T/forced.out" "" "$SANDCAP" run --audit "$T/forced.jsonl" --policy "$T/plain.json" -- \
	sh -c 'trap "" INT; sleep 45.5; :')
out=$(tr -d '\r' <"$T/forced.out")
expect_eq "SIGINT ignored under a pty: a forced kill (137)" "$rc" 137
expect_match "the summary says it was killed after the grace" "$out" \
	"stopped by signal 2 \(Interrupt\): killed, the command did not end within the grace"
expect_no_match "not an OOM kill" "$out" "OOM"
exit_rec=$(grep '"event":"sandbox.exit"' "$T/forced.jsonl")
expect_match "sandbox.exit: stopped by SIGINT, forced" "$exit_rec" \
	'"stopped_by":\{"forced_kill":true,"signal":"SIGINT"\}'
expect_match "sandbox.exit: no OOM kill" "$exit_rec" '"oom_killed":false'

# Without a terminal nothing changes: fd 0 stays what it was. (tty exits 1
# there, and --quiet prints the summary of a failed command: exit 0 here.)
out=$(echo piped | "$SANDCAP" run --quiet --policy "$T/plain.json" -- sh -c 'cat; tty || true' 2>&1)
expect_eq "no terminal: stdin passes through, tty says so" "$out" "piped
not a tty"

finish
