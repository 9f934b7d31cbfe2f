#!/usr/bin/env bash
# `sandcap serve` started by socket activation (deploy/systemd/sandcap.socket,
# docs/install.md): systemd-socket-activate, the same protocol as systemd's
# (LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES, the socket at fd 3), binds the
# socket and starts the daemon at the first connection, which it then
# answers: health, a session created, a command run in it, the session
# stopped. Neither the socket nor LISTEN_* reach the session's supervisor;
# SIGTERM leaves the socket file to its owner. A socket the unit got wrong
# (one connection with Accept=yes, a datagram or seqpacket socket, two
# sockets, fd 3 not a socket) and a --socket or --group that contradicts
# the unit are refused with a message that says so; LISTEN_PID naming
# another process is not ours, and --socket works as without a manager.
# Usage: SANDCAP=build/sandcap tests/integration/test-socket-activation.sh (as root)
. "$(dirname "$0")/lib.sh"
need_root
[ -x "$SANDCAP" ] || skip_all "$SANDCAP not built"
command -v systemd-socket-activate >/dev/null ||
	skip_all "needs systemd-socket-activate (Debian's systemd package; tools/install-deps test)"
command -v curl >/dev/null || skip_all "needs curl"
export SANDCAP SANDCAP_RUNTIME_DIR="$T/run"
S=$T/api.sock
ACT=()
trap 'for p in "${ACT[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; cleanup_dir' EXIT

# What the activator passes on: only what -E names (its children's
# environment is its own making, as systemd's is).
envs=(-E SANDCAP_STATE_DIR -E SANDCAP_RUNTIME_DIR -E PATH)
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TMPDIR; do
	[ -n "${!v:-}" ] && envs+=(-E "$v")
done

jget() { python3 -c 'import json,sys; d=json.load(sys.stdin); exec("print(d" + sys.argv[1] + ")")' "$1"; }
api() { # api METHOD PATH [BODY-FILE]: the body on stdout, the status in $T/status
	local data=()
	[ $# -ge 3 ] && data=(--data-binary "@$3")
	curl -s -m 30 -o "$T/body" -w '%{http_code}' --unix-socket "$S" -X "$1" "${data[@]}" \
		"http://sandcap$2" >"$T/status"
	cat "$T/body"
}
ndjson_stdout() {
	python3 -c 'import base64,json,sys
print("".join(base64.b64decode(o["data"]).decode() for o in map(json.loads, sys.stdin) if o.get("stream") == "stdout"), end="")'
}
# wait_for FILE REGEX: up to 10 s for a line matching REGEX in FILE
wait_for() {
	for _ in $(seq 100); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

policy agent '{"version": 1, "name": "agent", "limits": {"memory": "128M", "pids": 64, "wall": "5m"}}'

# --- the daemon started by the first connection ---
systemd-socket-activate -l "$S" --fdname=sandcap.socket "${envs[@]}" \
	"$SANDCAP" serve --policy "$T/agent.json" 2>"$T/serve.log" &
daemon=$!
ACT+=("$daemon")
wait_for "$T/serve.log" '^Listening on ' || true
check "the activator listens on the socket before the daemon runs" test -S "$S"
expect_no_match "no daemon yet: nothing has connected" "$(cat "/proc/$daemon/comm" 2>/dev/null)" 'sandcap'
out=$(api GET /v1/health)
expect_eq "the first request starts the daemon, which answers it" \
	"$(cat "$T/status") $(echo "$out" | jget '["ok"]' 2>/dev/null)" "200 True"
expect_eq "the daemon is the process the activator exec'd (LISTEN_PID is its pid)" \
	"$(cat "/proc/$daemon/comm" 2>/dev/null)" "sandcap-main"
expect_match "it serves the socket passed, and says so" "$(cat "$T/serve.log")" \
	"serving $S, the socket passed by the service manager"

echo '{"policy": "agent"}' >"$T/create.json"
out=$(api POST /v1/sessions "$T/create.json")
ID=$(echo "$out" | jget '["id"]' 2>/dev/null)
expect_eq "a session created through the passed socket" "$(cat "$T/status")" 201
echo '{"argv": ["sh", "-c", "echo activated; id -u"]}' >"$T/exec.json"
out=$(api POST "/v1/sessions/$ID/exec" "$T/exec.json")
expect_eq "a command run in it, its output streamed back" "$(echo "$out" | ndjson_stdout)" "activated
1000"
sup=$(python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["pid"])' \
	< <("$SANDCAP" session list --json) 2>/dev/null)
if [ -n "$sup" ] && [ -d "/proc/$sup" ]; then
	lsock=$(readlink "/proc/$daemon/fd/3")
	leaked=$(for f in /proc/"$sup"/fd/*; do readlink "$f"; done 2>/dev/null | grep -cxF "$lsock")
	expect_eq "the listening socket is not inherited by the session's supervisor" "$leaked" 0
	expect_eq "nor are LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES" \
		"$(tr '\0' '\n' <"/proc/$sup/environ" | grep -c '^LISTEN_')" 0
else
	not_ok "the session's supervisor (session list --json: '$sup')"
fi
audit=$(api GET "/v1/sessions/$ID/audit" | jget '["audit"]' 2>/dev/null)
api DELETE "/v1/sessions/$ID" >/dev/null
expect_eq "the session stopped through the API" "$(cat "$T/status")" 200
check "its log verifies sealed" sh -c '"$0" audit verify "$1" >/dev/null' "$SANDCAP" "$audit"

kill -TERM "$daemon"
wait "$daemon"
expect_eq "SIGTERM: the daemon exits 0" "$?" 0
check "the socket file is left to the manager that made it" test -S "$S"
check "the daemon logged no crash" sh -c "! grep -qiE 'sanitizer|segv|abort' '$T/serve.log'"

# --- sockets the unit got wrong, options that contradict it ---
# refused LABEL REGEX ACTIVATE-OPTIONS... -- SERVE-OPTIONS...: the daemon
# started by a connection exits 125 with a message matching REGEX.
refused() {
	local label=$1 re=$2 opts=() log=$T/refused.log pid
	shift 2
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	rm -f "$S" "$log"
	systemd-socket-activate -l "$S" "${opts[@]}" "${envs[@]}" \
		"$SANDCAP" serve "$@" 2>"$log" &
	pid=$!
	ACT+=("$pid")
	wait_for "$log" '^Listening on '
	python3 - "$S" <<'EOF' 2>/dev/null
import socket, sys, stat, os
for t in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
    s = socket.socket(socket.AF_UNIX, t)
    try:
        s.connect(sys.argv[1])
        s.send(b"x")
        break
    except OSError:
        continue
EOF
	if wait_for "$log" 'sandcap: serve: '; then
		expect_match "$label" "$(grep 'sandcap: serve: ' "$log")" "$re"
	else
		not_ok "$label (no message; the log: $(tr '\n' ' ' <"$log"))"
	fi
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}
refused "Accept=yes (a connection, not the listener): refused, the unit's mistake named" \
	'is not listening .*Accept=no' --accept -- --policy "$T/agent.json"
refused "a datagram socket: refused" 'not a stream socket' --datagram --
refused "a seqpacket socket: refused" 'not a stream socket' --seqpacket --
refused "--socket naming another path: refused, both named" \
	"--socket $T/other.sock, but the socket passed by the service manager is $S" -- --socket "$T/other.sock"
refused "--group with a passed socket: refused, SocketGroup= named" 'SocketGroup=' -- --group nogroup

# The same protocol by hand, for what the activator cannot be made to pass.
# by_hand 'FD 3 REDIRECTION' VAR=VALUE... -- SERVE-OPTIONS...: the serve's
# exit status and its message in $T/hand.log
by_hand() {
	local redir=$1 vars=()
	shift
	while [ "$1" != -- ]; do vars+=("$1"); shift; done
	shift
	# exec keeps the pid, so LISTEN_PID=$$ names the daemon.
	timeout 20 env "${vars[@]}" bash -c 'export LISTEN_PID=$$; eval "exec '"$redir"'"; exec "$@"' \
		by-hand "$SANDCAP" serve "$@" 2>"$T/hand.log" </dev/null
}
by_hand '3<'"$T/agent.json" LISTEN_FDS=1 --
expect_match "fd 3 a file, not a socket: exit 125, said" "$? $(cat "$T/hand.log")" '^125 .*fd 3 is not a socket'
by_hand '3<'"$T/agent.json" LISTEN_FDS=2 --
expect_match "two sockets passed: exit 125, one ListenStream= asked" "$? $(cat "$T/hand.log")" \
	'^125 .*more than one socket'
by_hand '3<'"$T/agent.json" LISTEN_FDS=one --
expect_match "LISTEN_FDS not a number: exit 125, said" "$? $(cat "$T/hand.log")" '^125 .*not a number'
by_hand '3<&-' LISTEN_FDS=1 --
expect_match "LISTEN_FDS=1 with fd 3 closed: exit 125, said" "$? $(cat "$T/hand.log")" \
	'^125 .*fd 3 is not open'
by_hand '3<&-' LISTEN_FDS=0 --
expect_match "no socket passed and no --socket: exit 125, both ways named" "$? $(cat "$T/hand.log")" \
	'^125 .*expected --socket PATH, or a socket passed by systemd'

# LISTEN_PID of another process (a parent's variables): not ours; --socket
# is created as without a manager.
P=$T/plain.sock
LISTEN_PID=1 LISTEN_FDS=1 "$SANDCAP" serve --socket "$P" 3<"$T/agent.json" 2>"$T/plain.log" &
plain=$!
ACT+=("$plain")
for _ in $(seq 100); do
	[ -S "$P" ] && curl -s --unix-socket "$P" http://sandcap/v1/health >/dev/null 2>&1 && break
	sleep 0.1
done
expect_eq "LISTEN_PID of another process: ignored, --socket served (mode 0660)" \
	"$(curl -s --unix-socket "$P" http://sandcap/v1/health | jget '["ok"]' 2>/dev/null) $(stat -c %a "$P")" \
	"True 660"
kill -TERM "$plain"
wait "$plain"
expect_eq "SIGTERM: exits 0" "$?" 0
check "the socket it made is removed" test ! -e "$P"
finish
