#!/usr/bin/env bash
# Every signal 1 to 64 sent from outside (kill(2), sigqueue(3) and tgkill(2)
# in turn) to the supervisor of `sandcap run`, to a session's supervisor and
# to `sandcap serve` (docs/decisions.md, "Signals from outside"). One whose
# default would end the process stops the sandbox as SIGTERM does: a sealed
# log that verifies, `sandbox.exit` naming the signal in `stopped_by`, no
# process, cgroup, session or socket left. The job-control stops, SIGCHLD,
# SIGCONT, SIGURG, SIGWINCH and libc's own 32 and 33 change nothing: the run
# goes on to its own end, the session and the daemon keep serving. Also: a
# supervisor held by SIGSTOP past its wall clock does not call a command that
# ended in time a timeout, and a real fault of the supervisor still crashes it.
# Usage: SANDCAP=build/sandcap tests/integration/test-signals-all.sh (as root)
. "$(dirname "$0")/lib.sh"
need_root
[ -x "$SANDCAP" ] || skip_all "$SANDCAP not built"
export SANDCAP_RUNTIME_DIR="$T/run"
mkdir -m 700 "$SANDCAP_RUNTIME_DIR"

policy plain '{"version": 1}'
# Commands that wait for the test without a program of their own (an exec
# waits for its record, which a stopped supervisor does not write): sh reads
# a line from the FIFO $T/g/NAME, /g/NAME inside.
mkdir -m 755 "$T/g"
grant='"fs": {"grants": [{"path": "'"$T/g"'", "mode": "ro", "at": "/g"}]}'
policy held '{"version": 1, '"$grant"', "limits": {"wall": "6s"}}'
policy eheld '{"version": 1, '"$grant"', "limits": {"exec_wall": "6s"}}'
held() { mkfifo -m 644 "$T/g/$1" 2>/dev/null; echo "read x < /g/$1; exit ${2:-7}"; }
waiting() { pgrep -f -- "^sh -c read x < /g/$1;" >/dev/null; }
ended() { ! waiting "$1"; }
release() { timeout 30 sh -c "echo go >'$T/g/$1'"; }

# Signals that are not a request to stop (the rest of 1-64 but KILL and STOP are).
QUIET=" 17 18 20 21 22 23 28 32 33 "
quiet() { [[ $QUIET == *" $1 "* ]]; }
# The name sandbox.exit gives: kill -l's with SIG in front (29 is SIGIO there).
name_of() { if [ "$1" = 29 ]; then echo SIGPOLL; else echo "SIG$(kill -l "$1")"; fi; }
# How the signal goes: the three si_codes a process can send with.
how_of() { case $(($1 % 3)) in 0) echo kill ;; 1) echo queue ;; 2) echo tkill ;; esac; }
# tgkill(2)'s number
case $(uname -m) in aarch64) TGKILL=131 ;; *) TGKILL=234 ;; esac
# send SIG PID HOW
send() {
	case $3 in
	kill) kill -s "$1" "$2" ;;
	queue) /bin/kill -q 7 -s "$1" "$2" ;;
	tkill) perl -e 'syscall($ARGV[0] + 0, $ARGV[1] + 0, $ARGV[1] + 0, $ARGV[2] + 0) == 0 or exit 1' \
		"$TGKILL" "$2" "$1" ;;
	esac
}
# the value of "KEY":"..." or "KEY":VALUE in TEXT, or null
json_value() { grep -o "\"$1\":\(\"[^\"]*\"\|[^,}]*\)" <<<"$2" | head -1 | cut -d: -f2- | tr -d '"' | grep . || echo null; }
# the signal sandbox.exit names in stopped_by (null when none)
stopped_by() {
	local l
	l=$(grep '"event":"sandbox.exit"' "$1" 2>/dev/null) || { echo "no sandbox.exit"; return; }
	json_value signal "$(grep -o '"stopped_by":{[^}]*}' <<<"$l")"
}
id_of() { grep -o '"sandbox":"sc-[0-9a-f]*"' "$1" 2>/dev/null | head -1 | cut -d'"' -f4; }
cgroups_of() { [ -n "$1" ] && find /sys/fs/cgroup -maxdepth 6 -type d -name "sandcap-$1" 2>/dev/null; }
# poll CMD... until it succeeds, up to 30 s (a busy host)
poll() {
	for _ in $(seq 300); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
state_of() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) && s=${s##*) } && echo "${s%% *}"; }
# gone PID: exited (a zombie too: a session's supervisor is not our child,
# and whoever reaps it may take its time)
gone() { local s; s=$(state_of "$1"); [ -z "$s" ] || [ "$s" = Z ]; }
running() { pgrep -fx "$1" >/dev/null; }
# gone_all PID...: none of them is alive
gone_all() {
	local p
	for p in "$@"; do gone "$p" || return 1; done
}
# what a sealed, verified log with sandbox.exit leaves unsaid, for LOG
log_errors() {
	local e=""
	"$SANDCAP" audit verify "$1" >/dev/null 2>&1 || e+=" the log does not verify;"
	tail -1 "$1" 2>/dev/null | grep -q '"event":"audit.seal"' || e+=" the log is not sealed;"
	grep -q '"event":"sandbox.exit"' "$1" 2>/dev/null || e+=" no sandbox.exit;"
	echo "$e"
}
# result KIND N ERRORS TEXT: one TAP line, written for the report below
result() {
	if [ -z "$3" ]; then echo "ok $4" >"$T/res-$1-$2"; else echo "not ok $4:$3" >"$T/res-$1-$2"; fi
}

# --- sandcap run ---
run_one() {
	local n=$1 how log="$T/run-$1.jsonl" e="" pid rc id sup
	how=$(how_of "$n")
	if quiet "$n"; then
		"$SANDCAP" run --quiet --audit "$log" --policy "$T/held.json" -- \
			sh -c "$(held "run-$n")" 2>"$T/run-$n.err" &
		pid=$!
		poll waiting "run-$n" || e+=" did not start;"
		send "$n" $pid "$how"
		sleep 0.3
		[ "$(state_of $pid)" != T ] || e+=" the supervisor is stopped;"
		gone $pid && e+=" it ended;"
		release "run-$n" || e+=" the command did not read;"
		poll gone $pid || { e+=" still running at 30 s;"; kill -CONT $pid; kill -KILL $pid; }
		wait $pid
		rc=$?
		[ "$rc" = 7 ] || e+=" exit $rc, want the command's 7;"
		[ "$(stopped_by "$log")" = null ] || e+=" stopped_by $(stopped_by "$log");"
		e+=$(log_errors "$log")
		result run "$n" "$e" "run: $(name_of "$n") ($how) changes nothing: the command's exit 7, sealed log"
		return
	fi
	"$SANDCAP" run --quiet --audit "$log" --policy "$T/plain.json" -- \
		sleep "61.$((1000 + n))" 2>"$T/run-$n.err" &
	pid=$!
	poll running "sleep 61.$((1000 + n))" || e+=" did not start;"
	send "$n" $pid "$how"
	poll gone $pid || { e+=" still running at 30 s;"; kill -KILL $pid; }
	wait $pid
	rc=$?
	id=$(id_of "$log")
	[ "$rc" = $((128 + n)) ] || e+=" exit $rc, want $((128 + n));"
	[ "$(stopped_by "$log")" = "$(name_of "$n")" ] || e+=" stopped_by '$(stopped_by "$log")';"
	e+=$(log_errors "$log")
	[ -z "$(cgroups_of "$id")" ] || e+=" cgroup left;"
	running "sleep 61.$((1000 + n))" && e+=" the command still runs;"
	result run "$n" "$e" "run: $(name_of "$n") ($how) stops it: exit $((128 + n)), stopped_by, sealed, nothing left"
}

# --- a session's supervisor ---
session_one() {
	local n=$1 how name="sig-$1" log="$T/ses-$1.jsonl" e="" info sup kids id
	how=$(how_of "$n")
	info=$("$SANDCAP" session start --policy "$T/plain.json" --name "$name" --audit "$log" --json 2>"$T/ses-$n.err")
	sup=$(json_value pid "$info")
	if [ "$sup" = null ]; then
		result ses "$n" " did not start: $(head -c 200 "$T/ses-$n.err")" "session: $(name_of "$n")"
		return
	fi
	id=$(id_of "$log")
	kids=$(pgrep -P "$sup" | tr '\n' ' ')
	send "$n" "$sup" "$how"
	if quiet "$n"; then
		sleep 0.3
		[ "$(state_of "$sup")" != T ] || { e+=" the supervisor is stopped;"; kill -CONT "$sup"; }
		gone "$sup" && e+=" the supervisor ended;"
		[ "$("$SANDCAP" exec "$name" -- sh -c 'echo up' 2>&1)" = up ] || e+=" exec after it fails;"
		"$SANDCAP" session stop "$name" >/dev/null 2>&1 || e+=" session stop fails;"
		poll gone "$sup" || { e+=" the supervisor still runs;"; kill -KILL "$sup"; }
		[ "$(stopped_by "$log")" = null ] || e+=" stopped_by $(stopped_by "$log");"
		e+=$(log_errors "$log")
		result ses "$n" "$e" "session: $(name_of "$n") ($how) changes nothing: it serves on, stops when asked"
		return
	fi
	poll gone "$sup" || { e+=" the supervisor still runs at 30 s;"; kill -KILL "$sup"; }
	[ "$(stopped_by "$log")" = "$(name_of "$n")" ] || e+=" stopped_by '$(stopped_by "$log")';"
	e+=$(log_errors "$log")
	gone_all $kids || e+=" a process of the sandbox is left ($kids);"
	[ -z "$(cgroups_of "$id")" ] || e+=" cgroup left;"
	[ ! -e "$SANDCAP_RUNTIME_DIR/sessions/$name" ] || e+=" its directory is left;"
	result ses "$n" "$e" "session: $(name_of "$n") ($how) stops it: stopped_by, sealed, nothing left"
}

# --- sandcap serve, with one session ---
serve_one() {
	local n=$1 how sock="$T/sv-$1.sock" e="" pid rc body sup log id
	how=$(how_of "$n")
	"$SANDCAP" serve --socket "$sock" --policy "$T/plain.json" 2>"$T/sv-$n.log" &
	pid=$!
	poll curl -sf -o /dev/null --unix-socket "$sock" http://sandcap/v1/health || e+=" not serving;"
	body=$(curl -s --unix-socket "$sock" -X POST -d '{"policy": "plain"}' http://sandcap/v1/sessions)
	sup=$(json_value pid "$body")
	log=$(json_value audit "$body")
	if [ "$sup" = null ]; then
		kill -KILL $pid
		wait $pid
		result sv "$n" " no session: $body" "serve: $(name_of "$n")"
		return
	fi
	id=$(id_of "$log")
	send "$n" $pid "$how"
	if quiet "$n"; then
		sleep 0.3
		[ "$(state_of $pid)" != T ] || { e+=" the daemon is stopped;"; kill -CONT $pid; }
		curl -sf -o /dev/null --unix-socket "$sock" http://sandcap/v1/health || e+=" not serving after it;"
		gone "$sup" && e+=" its session ended;"
		kill -TERM $pid
	fi
	poll gone $pid || { e+=" still running at 30 s;"; kill -KILL $pid; }
	wait $pid
	rc=$?
	[ "$rc" = 0 ] || e+=" exit $rc;"
	[ ! -e "$sock" ] || e+=" its socket is left;"
	poll gone "$sup" || e+=" its session's supervisor is left;"
	e+=$(log_errors "$log")
	[ -z "$(cgroups_of "$id")" ] || e+=" cgroup left;"
	if quiet "$n"; then
		result sv "$n" "$e" "serve: $(name_of "$n") ($how) changes nothing: it serves on, SIGTERM stops it"
	else
		grep -q "$(name_of "$n"): stopping" "$T/sv-$n.log" || e+=" its log does not name the signal;"
		[ -z "$e" ] || e+=" the daemon said: $(tr '\n' ' ' <"$T/sv-$n.log" | tail -c 400)"
		result sv "$n" "$e" "serve: $(name_of "$n") ($how) stops it and its session: sealed log, socket removed"
	fi
}

# A supervisor held by SIGSTOP past its wall clock (6 s) while its
# command ends: on SIGCONT, the command's own exit, no timeout. For `run`,
# and for a session's limits.exec_wall (6 s).
stopped_past_wall() {
	local log="$T/wall.jsonl" e="" pid rc t0
	t0=$(date +%s)
	"$SANDCAP" run --quiet --audit "$log" --policy "$T/held.json" -- \
		sh -c "$(held wall 5)" 2>"$T/wall.err" &
	pid=$!
	poll waiting wall || e+=" did not start;"
	kill -STOP $pid
	release wall || e+=" the command did not read;"
	poll ended wall || e+=" the command did not end;"
	[ $(($(date +%s) - t0)) -lt 6 ] || e+=" (the host was too slow: the command ended after the deadline);"
	while [ $(($(date +%s) - t0)) -le 7 ]; do sleep 0.2; done
	kill -CONT $pid
	poll gone $pid || { e+=" still running;"; kill -KILL $pid; }
	wait $pid
	rc=$?
	[ "$rc" = 5 ] || e+=" exit $rc, want 5;"
	[ "$(json_value timed_out "$(grep '"event":"sandbox.exit"' "$log")")" = false ] ||
		e+=" timed_out is not false;"
	grep -q '"limit":"wall"' "$log" && e+=" a wall limit.hit;"
	e+=$(log_errors "$log")
	result wall 0 "$e" "a command that ended in time under a supervisor stopped past the wall clock: its own exit 5, no timeout"
}

stopped_past_exec_wall() {
	local e="" info sup pid rc t0
	info=$("$SANDCAP" session start --policy "$T/eheld.json" --name ewall --audit "$T/ewall.jsonl" --json 2>&1)
	sup=$(json_value pid "$info")
	t0=$(date +%s)
	"$SANDCAP" exec ewall -- sh -c "$(held ewall 5)" >/dev/null 2>"$T/ewall.err" &
	pid=$!
	poll waiting ewall || e+=" did not start: $info;"
	kill -STOP "$sup"
	release ewall || e+=" the command did not read;"
	poll ended ewall || e+=" the command did not end;"
	[ $(($(date +%s) - t0)) -lt 6 ] || e+=" (the host was too slow: the command ended after the deadline);"
	while [ $(($(date +%s) - t0)) -le 7 ]; do sleep 0.2; done
	kill -CONT "$sup"
	poll gone $pid || { e+=" exec still waits;"; kill -KILL $pid; }
	wait $pid
	rc=$?
	[ "$rc" = 5 ] || e+=" exit $rc, want 5 ($(head -c 200 "$T/ewall.err"));"
	grep -q '"limit":"exec_wall"' "$T/ewall.jsonl" && e+=" an exec_wall limit.hit;"
	"$SANDCAP" session stop ewall >/dev/null 2>&1 || e+=" session stop fails;"
	e+=$(log_errors "$T/ewall.jsonl")
	result wall 1 "$e" "a session's command that ended in time under a supervisor stopped past limits.exec_wall: its own exit 5"
}

# A real fault (the kernel's SIGSEGV, si_code > 0) in the supervisor: it
# dies of it at once, it does not take it for a request or loop on it.
real_fault() {
	local e="" pid rc
	"$SANDCAP" run --quiet --policy "$T/plain.json" -- sleep 62.5 2>/dev/null &
	pid=$!
	poll running "sleep 62.5" || e+=" did not start;"
	gdb -p $pid -batch -nx -ex 'set $pc = 0' -ex detach >/dev/null 2>&1 || e+=" gdb failed;"
	poll gone $pid || { e+=" still running;"; kill -KILL $pid; }
	wait $pid
	rc=$?
	[ "$rc" = 139 ] || e+=" exit $rc, want 139 (SIGSEGV);"
	poll bash -c '! pgrep -fx "sleep 62.5" >/dev/null' || e+=" its sandbox outlived it;"
	result fault 0 "$e" "a real SIGSEGV of the supervisor crashes it (139) and its sandbox with it"
}

start=$(date +%s%N)
jobs_max=32
throttle() { while [ "$(jobs -rp | wc -l)" -ge $jobs_max ]; do wait -n; done; }
stopped_past_wall &
stopped_past_exec_wall &
if command -v gdb >/dev/null; then real_fault & fi
for n in $(seq 64); do
	[ "$n" = 9 ] || [ "$n" = 19 ] && continue # SIGKILL and SIGSTOP cannot be caught
	throttle
	run_one "$n" &
	throttle
	session_one "$n" &
	throttle
	serve_one "$n" &
done
wait
for kind in run ses sv wall fault; do
	for n in $(seq 0 64); do
		[ -e "$T/res-$kind-$n" ] || continue
		line=$(cat "$T/res-$kind-$n")
		case $line in
		ok*) ok "${line#ok }" ;;
		*) not_ok "${line#not ok }" ;;
		esac
	done
done
command -v gdb >/dev/null || skip "a real fault of the supervisor" "gdb not installed"
want=$((62 * 3 + 2))
command -v gdb >/dev/null && want=$((want + 1))
expect_eq "every check gave its result" "$(ls "$T" | grep -c '^res-')" "$want"
check "no session is left in the runtime directory" \
	bash -c "[ -z \"\$(ls -A '$SANDCAP_RUNTIME_DIR/sessions' 2>/dev/null)\" ]"
tap_diag "all signals: $((($(date +%s%N) - start) / 1000000)) ms"
finish
