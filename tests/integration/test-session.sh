#!/usr/bin/env bash
# Sessions: a sandbox that stays up and runs commands one after another and
# at once (sandcap session, sandcap exec). Each command is checked for the
# layers the first would have had, state persists between them, two
# sessions cannot see each other, the exec and idle limits end what they
# bound, a killed supervisor takes its sandbox with it and the next start
# sweeps what it left, files move only where the policy lets them, and -t
# gives a real pty that Ctrl-C reaches.
. "$(dirname "$0")/lib.sh"
need_root
command -v python3 >/dev/null || skip_all "needs python3"

export SANDCAP_RUNTIME_DIR="$T/run"
S=$SANDCAP
B=$(dirname "$SANDCAP")
PROBE=$B/tests/escape/probe-escape
[ -x "$PROBE" ] || PROBE=$(dirname "$0")/../../build/tests/escape/probe-escape
mkdir -p "$T/work" "$T/work2"
chmod 777 "$T/work" "$T/work2"
policy main "{\"version\": 1, \"fs\": {\"grants\": [
	{\"path\": \"$T/work\", \"at\": \"/work\", \"mode\": \"rw\"},
	{\"path\": \"$(dirname "$PROBE")\", \"at\": \"/probe\", \"mode\": \"ro\"}]},
	\"limits\": {\"exec_wall\": \"1500ms\", \"pids\": 256}}"
policy other "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$T/work2\", \"at\": \"/work\", \"mode\": \"rw\"}]}}"
policy idle '{"version": 1, "limits": {"idle": "700ms"}}'
policy wall '{"version": 1, "limits": {"wall": "1200ms"}}'

stop_all() {
	for n in a b c idle wall term det pz; do "$S" session stop "$n" >/dev/null 2>&1; done
	cleanup_dir
}
trap stop_all EXIT

# ---- lifecycle ----
out=$("$S" session start --policy "$T/main.json" --name a --json 2>&1)
expect_match "start --json names the session, its supervisor and its log" "$out" \
	'^\{"audit":"[^"]+\.jsonl","name":"a","pid":[0-9]+,"policy":"[^"]+","sandbox":"sc-[0-9a-f]+","started":"[0-9T:Z-]+","workspaces":\[\]\}$'
sup=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["pid"])' "$out" 2>/dev/null)
audit=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["audit"])' "$out" 2>/dev/null)
check "its supervisor runs in the background" kill -0 "${sup:-0}"
expect_eq "the session directory is 0700" "$(stat -c %a "$T/run/sessions/a")" 700
expect_eq "its control socket is 0600" "$(stat -c %a "$T/run/sessions/a/ctl.sock")" 600
out=$("$S" session start --policy "$T/main.json" --name a 2>&1)
rc=$?
expect_eq "a second start with the same name is refused (125)" "$rc" 125
expect_match "and says the name is taken" "$out" "exists already"

out=$("$S" exec a -- sh -c 'echo to-out; echo to-err >&2; exit 7' 2>"$T/err")
rc=$?
expect_eq "exec: the command's exit status" "$rc" 7
expect_eq "exec: its stdout" "$out" "to-out"
expect_eq "exec: its stderr" "$(cat "$T/err")" "to-err"
"$S" exec a -- sh -c 'kill -TERM $$'
expect_eq "exec: 128+N for a command that died of signal N" "$?" 143
"$S" exec a -- /nonexistent 2>/dev/null
expect_eq "exec: 127 for a command not found" "$?" 127
out=$(printf 'line1\nline2\n' | "$S" exec -i a -- wc -l)
expect_eq "exec -i: standard input reaches the command" "$out" "2"
out=$(echo ignored | "$S" exec a -- cat)
expect_eq "exec without -i: the command reads end of file" "$out" ""
out=$("$S" exec --cwd /work --env FOO=bar a -- sh -c 'echo "$PWD $FOO $USER"')
expect_eq "exec --cwd and --env over the session's environment" "$out" "/work bar agent"

# ---- state persists between commands ----
"$S" exec a -- sh -c 'echo in-tmp > /tmp/kept; echo in-grant > /work/kept'
out=$("$S" exec a -- cat /tmp/kept /work/kept)
expect_eq "/tmp and the rw grant persist between execs" "$out" $'in-tmp\nin-grant'
expect_eq "the grant's file is on the host" "$(cat "$T/work/kept")" "in-grant"

# ---- every command has the layers of the first ----
st=$("$S" exec a -- cat /proc/self/status)
expect_match "exec: seccomp filter in place (Seccomp: 2)" "$st" $'Seccomp:\t2'
expect_match "exec: no_new_privs" "$st" $'NoNewPrivs:\t1'
expect_match "exec: no effective capability" "$st" $'CapEff:\t0000000000000000'
expect_match "exec: the agent's uid" "$st" $'Uid:\t1000\t1000\t1000\t1000'
out=$("$S" exec a -- sh -c 'echo x > /proc/self/comm' 2>&1)
expect_match "exec: Landlock refuses a write the mounts allow (/proc/self/comm)" "$out" "Permission denied"
out=$("$S" exec a -- sh -c 'echo x > /etc/passwd' 2>&1)
expect_match "exec: a write outside the grants is refused" "$out" "Read-only file system|Permission denied"
# ls's own fds, as exec gave them (a shell's own listing races with the
# pipes and saved copies it holds while running a command): 0-2 and the
# directory ls reads
fds=$("$S" exec a -- ls -l /proc/self/fd | grep -- '->' | sed 's/.* \([0-9]*\) -> \([a-z]*\).*/\1 \2/')
expect_eq "exec: only 0-2, all pipes of the supervisor's" "$fds" $'0 pipe\n1 pipe\n2 pipe\n3 '
out=$("$S" exec a -- ls /proc/1/fd 2>&1)
expect_match "exec: pid 1 (and its control channel) is out of reach" "$out" "Permission denied"
"$S" exec a -- sh -c 'kill -TERM 1; kill -HUP 1; kill -INT 1; kill -KILL 1' 2>/dev/null
sleep 0.2
out=$("$S" exec a -- echo alive)
expect_eq "signals the agent sends to pid 1 do not end the session" "$out" "alive"
for probe in mount chroot pivot_root mknod ptrace-parent ptrace-init tiocsti keyctl bpf \
	unshare-user setns socket-raw sethostname io_uring_setup; do
	out=$("$S" exec a -- /probe/probe-escape "$probe" 2>&1)
	rc=$?
	if [[ $out == *"HELD "* ]] || { [ $rc -gt 128 ] && [ $rc -lt 160 ]; }; then
		ok "exec: escape probe $probe is held"
	else
		not_ok "exec: escape probe $probe is held (rc $rc: $out)"
	fi
done

# ---- concurrent execs ----
for i in $(seq 10); do
	"$S" exec a -- sh -c "sleep 0.3; echo n$i" >"$T/par.$i" &
done
wait
good=0
for i in $(seq 10); do [ "$(cat "$T/par.$i")" = "n$i" ] && good=$((good + 1)); done
expect_eq "10 concurrent execs each get their own output" "$good" 10

# ---- --ndjson ----
out=$("$S" exec --ndjson a -- sh -c 'printf out; printf err >&2; exit 3')
rc=$?
expect_eq "--ndjson: the exit status is still the command's" "$rc" 3
res=$(printf '%s\n' "$out" | python3 -c '
import base64, json, sys
streams, last = {"stdout": b"", "stderr": b""}, None
for line in sys.stdin:
    o = json.loads(line)
    if "stream" in o:
        streams[o["stream"]] += base64.b64decode(o["data"])
    else:
        last = o
print(streams["stdout"].decode(), streams["stderr"].decode(), last["exit_code"], last["signal"],
      last["limits_hit"], isinstance(last["duration_ms"], int))')
expect_eq "--ndjson: base64 chunks per stream, then the result" "$res" "out err 3 None [] True"

# ---- limits.exec_wall ----
t0=$(date +%s%N)
out=$("$S" exec --ndjson a -- sleep 30)
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "limits.exec_wall: the command is killed, exit 124" "$rc" 124
expect_match "and limits_hit says exec_wall" "$out" '"limits_hit":\["exec_wall"\]'
check "within the bound (1.5 s, took ${ms} ms)" test "$ms" -lt 4000
out=$("$S" exec a -- echo still-up)
expect_eq "the session runs on after an exec_wall kill" "$out" "still-up"

# ---- files through the walls ----
printf 'payload\n' | "$S" session put a /work/put.txt
expect_eq "put into the rw grant: written" "$?" 0
expect_eq "and the file is on the host" "$(cat "$T/work/put.txt")" "payload"
out=$("$S" session get a /work/put.txt)
expect_eq "get reads it back" "$out" "payload"
out=$("$S" session get a /tmp/kept)
expect_eq "get reads the sandbox's /tmp" "$out" "in-tmp"
out=$("$S" session ls a /work --json)
expect_match "ls lists the grant" "$out" '"name":"put.txt","size":8,"type":"f"'
out=$(echo no | "$S" session put a /etc/refused 2>&1)
rc=$?
expect_eq "put outside the grants fails (1)" "$rc" 1
expect_match "refused by the kernel inside" "$out" "Read-only file system|Permission denied"
out=$(echo no | "$S" session put a /proc/self/comm 2>&1)
expect_match "put where only Landlock stands is refused by Landlock" "$out" "Permission denied"
out=$("$S" session get a "$T/main.json" 2>&1)
expect_match "get of a host file outside the view: not there" "$out" "No such file"

# ---- isolation between sessions ----
"$S" session start --policy "$T/other.json" --name b >/dev/null
"$S" exec a -- sh -c 'echo secret > /tmp/mine'
"$S" exec a -- sleep 1 &
sleep 0.3
out=$("$S" exec b -- sh -c 'cat /tmp/mine /work/kept 2>&1; ls /proc | grep -c "^[0-9]"')
expect_match "session b sees neither a's /tmp nor a's grant" "$out" "No such file.*No such file"
expect_match "and only its own processes (pid 1 and this exec's sh, ls, grep)" "$out" $'\n[1-4]$'
out=$("$S" exec b -- cat /proc/sys/kernel/hostname)
out2=$("$S" exec b -- sh -c 'readlink /proc/self/ns/pid')
out3=$("$S" exec a -- sh -c 'readlink /proc/self/ns/pid')
check "two sessions are in different pid namespaces" test "$out2" != "$out3"
wait

# ---- list and stop ----
out=$("$S" session list --json)
res=$(python3 -c '
import json, sys
l = {s["name"]: s for s in json.loads(sys.argv[1])}
a = l.get("a", {})
print(sorted(l), a.get("state"), a.get("commands", 0) > 20, a.get("memory_peak", 0) > 0,
      isinstance(a.get("age_s"), int), a.get("policy", "").endswith("main.json"))' "$out")
expect_eq "list: both sessions, running, with commands, memory, age, policy" "$res" \
	"['a', 'b'] running True True True True"
out=$("$S" session stop a --json)
res=$(python3 -c '
import json, sys
s = json.loads(sys.argv[1])
print(s["name"], s["audit_state"], s["commands"] > 20, len(s["audit_hash"]))' "$out")
expect_eq "stop: the summary, the log sealed" "$res" "a sealed True 64"
# (gone, or a zombie its new parent, the host's pid 1, has not reaped yet)
check "stop: the supervisor has ended" bash -c "for i in \$(seq 50); do
	[ -e /proc/$sup ] && ! grep -q '^State:.*Z' /proc/$sup/status 2>/dev/null || exit 0; sleep 0.02; done; exit 1"
check "stop: the session's directory is removed" test ! -e "$T/run/sessions/a"
out=$("$S" audit verify "$audit" 2>&1)
expect_match "the session's log verifies" "$out" "intact"
ev=$(python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
starts = [r for r in recs if r["event"] == "exec.start"]
exits = [r for r in recs if r["event"] == "exec.exit"]
walls = [r for r in recs if r["event"] == "limit.hit" and r["data"]["limit"] == "exec_wall"]
execs = [r for r in recs if r["event"] == "proc.exec"]
files = [r["event"] for r in recs if r["event"].startswith("file.")]
seven = [r for r in exits if r["data"]["status"] == 7]
print(len(starts) == len(exits), len(walls), len(execs) >= len(starts), len(seven),
      starts[0]["data"]["argv"][0], sorted(set(files)))' "$audit")
expect_eq "the log: exec.start/exec.exit per command, proc.exec records, the exec_wall hit, file records" \
	"$ev" "True 1 True 1 sh ['file.get', 'file.list', 'file.put']"
rep=$("$S" audit report "$audit" 2>&1)
expect_match "audit report: a session has no command of its own" "$rep" 'command   none of its own: a session, [0-9]+ commands run in it'
expect_match "audit report: the commands it ran, with their exit statuses and durations" "$rep" \
	'commands  [0-9]+ run, [0-9]+ ended'$'\n''    #1 [a-z].* -> exit [0-9]+, [0-9]+ ms'
expect_match "audit report: the file transfers" "$rep" 'transfers [0-9]+ \(put, get, ls'$'\n''(    .*'$'\n'')*    put work/put\.txt: 8 bytes \(ok\)|put /work/put\.txt: 8 bytes \(ok\)'
check "audit report --json: commands with status" grep -q '"status": [0-9]' <<<"$("$S" audit report --json "$audit")"
out=$("$S" exec a -- true 2>&1)
rc=$?
expect_eq "exec in a stopped session: 125" "$rc" 125
expect_match "and says there is no such session" "$out" "no session a"
"$S" session stop b >/dev/null 2>&1

# ---- limits.idle ----
"$S" session start --policy "$T/idle.json" --name idle >/dev/null
"$S" exec idle -- sleep 1.2
expect_eq "a command longer than limits.idle keeps the session up" "$?" 0
sleep 1.5
out=$("$S" session list)
expect_no_match "an idle session stops by itself" "$out" "idle"
log=$(ls -t "$SANDCAP_STATE_DIR"/audit/*.jsonl | head -1)
expect_match "its log records limit.hit idle and is sealed" \
	"$(grep -c '"limit":"idle"' "$log") $(tail -1 "$log" | grep -c audit.seal)" "^1 1$"

# ---- limits.wall bounds the session; SIGTERM to its supervisor ends it cleanly ----
"$S" session start --policy "$T/wall.json" --name wall >/dev/null
"$S" session start --policy "$T/other.json" --name term >/dev/null
tsup=$(python3 -c 'import json; print(json.load(open("'"$T"'/run/sessions/term/meta.json"))["pid"])')
tlog=$(python3 -c 'import json; print(json.load(open("'"$T"'/run/sessions/term/meta.json"))["audit"])')
out=$("$S" exec --ndjson wall -- sleep 30)
expect_eq "limits.wall: a command still running when it ends the session exits 124" "$?" 124
expect_match "and limits_hit says wall" "$out" '"limits_hit":\["wall"\]'
kill -TERM "$tsup"
for i in $(seq 50); do [ -e "$T/run/sessions/term" ] || break; sleep 0.05; done
out=$("$S" session list)
expect_no_match "after limits.wall and SIGTERM neither session is listed" "$out" "wall|term"
expect_match "SIGTERM to the supervisor: the log ends sealed, stopped_by SIGTERM" \
	"$(grep -c '"stopped_by":{"forced_kill":false,"signal":"SIGTERM"}' "$tlog") $(tail -1 "$tlog" | grep -c audit.seal)" "^1 1$"

# ---- the supervisor killed: the sandbox dies with it, the next start sweeps ----
"$S" session start --policy "$T/other.json" --name c >/dev/null
sup=$(python3 -c 'import json; print(json.load(open("'"$T"'/run/sessions/c/meta.json"))["pid"])')
sbx=$(python3 -c 'import json; print(json.load(open("'"$T"'/run/sessions/c/meta.json"))["sandbox"])')
"$S" exec c -- sleep 300 2>/dev/null &
# This session's sleep, by its sandbox's cgroup (other sandboxes on the
# host may run a sleep too), waited for however slow the host is.
pids=
for i in $(seq 100); do
	pids=$(for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = sleep ] && grep -q "sandcap-$sbx\b" "$p/cgroup" 2>/dev/null &&
			echo "${p#/proc/}"
	done)
	[ -n "$pids" ] && break
	sleep 0.05
done
check "the session's command runs (host pid ${pids:-none})" test -n "$pids"
kill -KILL "$sup"
wait
for i in $(seq 40); do
	alive=0
	for p in $pids; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
	[ $alive = 0 ] && break
	sleep 0.05
done
expect_eq "after SIGKILL of the supervisor no process of its sandbox is left (within 2 s)" "$alive" 0
check "its directory is left behind" test -d "$T/run/sessions/c"
"$S" session list >/dev/null
check "the next list (or start) sweeps it" test ! -e "$T/run/sessions/c"

# ---- -t: a pty of the sandbox's own, Ctrl-C delivered inside ----
"$S" session start --policy "$T/other.json" --name a >/dev/null
# term OUT INPUT CMD...: CMD on a fresh 33x111 pty; once it prints "ready",
# the window becomes 40x120 and INPUT is typed (tests/helpers/pty-run.py)
term() { python3 "$(dirname "$0")/../helpers/pty-run.py" --resize-on-ready --timeout 15 "$@"; }
rc=$(term "$T/tty.out" '\x03' "$S" exec -t a -- sh -c \
	'tty; stty size; ls -l /proc/self/fd/0; trap "stty size; exit 9" WINCH; echo ready; while :; do sleep 0.1; done')
out=$(tr -d '\r' <"$T/tty.out")
expect_match "-t: the command's terminal is a pty of the sandbox's devpts" "$out" $'(^|\n)/dev/pts/[0-9]+\n'
expect_match "-t: it starts with the caller's window size" "$out" $'\n33 111\n'
expect_match "-t: fd 0 is that pty" "$out" "/proc/self/fd/0 -> /dev/pts/[0-9]+"
expect_match "-t: a window-size change reaches it" "$out" $'\n40 120($|\n)'
expect_eq "-t: exit status after the resize trap" "$rc" 9
rc=$(term "$T/int.out" '\x03' "$S" exec -t a -- sh -c 'echo ready; sleep 30')
expect_eq "-t: Ctrl-C reaches the command inside (130)" "$rc" 130
out=$(script -qec "$S exec -t a -- sh -c 'test -t 0 && echo tty-ok'" /dev/null </dev/null | tr -d '\r')
expect_match "-t under script(1) too" "$out" "tty-ok"
"$S" session stop a >/dev/null 2>&1

# ---- without root: the session under $XDG_RUNTIME_DIR, the same commands ----
U=sc-sess-$$
if command -v useradd >/dev/null && command -v setpriv >/dev/null &&
	useradd --no-create-home --home-dir "$T/uhome" --shell /usr/sbin/nologin --user-group "$U" 2>/dev/null; then
	mkdir -p "$T/uhome" "$T/uxdg"
	binaries_for_others "$T/ubin" >/dev/null
	chmod 644 "$T/other.json"
	chown "$U:$U" "$T/uhome" "$T/uxdg"
	chmod 700 "$T/uxdg"
	policy plain '{"version": 1}'
	chmod 644 "$T/plain.json"
	as_user() {
		env -i HOME="$T/uhome" XDG_RUNTIME_DIR="$T/uxdg" PATH=/usr/bin:/bin \
			setpriv --reuid="$U" --regid="$U" --init-groups -- "$@"
	}
	if as_user unshare --user true 2>/dev/null; then
		as_user "$T/ubin/sandcap" session start --policy "$T/plain.json" --name u >/dev/null
		out=$(as_user "$T/ubin/sandcap" exec u -- sh -c 'id -u; echo kept > /tmp/k')
		out2=$(as_user "$T/ubin/sandcap" session get u /tmp/k)
		check "without root: the session's state is under XDG_RUNTIME_DIR" test -S "$T/uxdg/sandcap/sessions/u/ctl.sock"
		expect_eq "without root: exec runs as the agent, get reads what it wrote" "$out $out2" "1000 kept"
		out=$(as_user "$T/ubin/sandcap" session stop u --json)
		expect_match "without root: stop seals the log" "$out" '"audit_state":"sealed"'
	else
		skip "sessions without root" "no unprivileged user namespaces here"
	fi
	for p in $(pgrep -u "$U" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	sleep 0.1
	userdel "$U" 2>/dev/null
	getent group "$U" >/dev/null && groupdel "$U" 2>/dev/null
else
	skip "sessions without root" "needs useradd and setpriv"
fi


# --- a command OOM-killed names the memory limit ---
policy oom '{"version": 1, "limits": {"memory": "64M"}}'
"$S" session start --name oom --policy "$T/oom.json" >/dev/null 2>&1
out=$("$S" exec --ndjson oom -- python3 -c 'x = bytearray(200 << 20)' | tail -1)
expect_match "... exit 137, signal 9, limits_hit [\"memory\"]" "$out" \
	'^\{"exit_code":137,"signal":9,"limits_hit":\["memory"\],'
out=$("$S" exec --ndjson oom -- sh -c 'python3 -c "x = bytearray(200 << 20)"; exit 0' | tail -1)
expect_match "a child OOM-killed while the command exits 0: memory named, exit 0" "$out" \
	'^\{"exit_code":0,"signal":null,"limits_hit":\["memory"\],'
out=$("$S" exec --ndjson oom -- true | tail -1)
expect_match "the next command hits no limit" "$out" '"limits_hit":\[\]'
out=$("$S" exec oom -- python3 -c 'x = bytearray(200 << 20)' 2>&1); rc=$?
expect_eq "exec without --ndjson exits 137 ..." "$rc" 137
expect_match "... saying the memory limit killed it" "$out" "killed by the memory limit \(OOM\)"
log=$("$S" session stop oom 2>&1 | sed -n 's/^  audit: \([^ ]*\) .*/\1/p')
expect_eq "the log has limit.hit memory for each of the three commands, with its id" \
	"$(grep -h '"event":"limit.hit"' "$log" 2>/dev/null | grep '"limit":"memory"' | grep -c '"id":')" 3

# --- exec --detach: the session holds the command; commands lists it, kill ends it ---
mkdir -p "$T/work3" && chmod 777 "$T/work3"
policy det "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$T/work3\", \"at\": \"/work\", \"mode\": \"rw\"}]}}"
"$S" session start --name det --policy "$T/det.json" >/dev/null 2>&1
t0=$(date +%s%N)
id=$("$S" exec --detach det -- sh -c 'echo $$ > /work/pid; while :; do sleep 0.05; echo tick > /work/alive; done')
rc=$?
t1=$(date +%s%N)
expect_eq "exec --detach: exit 0 ..." "$rc" 0
expect_match "... and prints the command's id" "$id" '^[0-9]+$'
check "... returning at once (under 1 s)" test $(((t1 - t0) / 1000000)) -lt 1000
for _ in $(seq 50); do [ -s "$T/work3/alive" ] && break; sleep 0.1; done
rm -f "$T/work3/alive"; sleep 0.3
check "the detached command runs on once the client is gone" test -s "$T/work3/alive"
out=$("$S" session commands det --json)
expect_eq "session commands --json: its id, argv, detached" \
	"$(python3 -c 'import json,sys; c=json.loads(sys.argv[1]); print([(x["id"], x["argv"][0], x["detached"], x["tty"]) for x in c])' "$out")" \
	"[($id, 'sh', True, False)]"
"$S" exec det -- sleep 0.5 & bg=$!
sleep 0.2
out=$("$S" session commands det)
expect_match "session commands: a table of both, the attached one not detached" "$out" \
	"^ID +PID +DETACHED +COMMAND"$'\n'"[0-9]+ +[0-9]+ +no +sleep 0\.5"$'\n'"$id +[0-9]+ +yes +sh -c "
wait $bg
"$S" session kill det "$id" --signal TERM
expect_eq "session kill --signal TERM: exit 0" "$?" 0
for _ in $(seq 30); do [ "$("$S" session commands det --json)" = "[]" ] && break; sleep 0.1; done
expect_eq "the command is gone from the list" "$("$S" session commands det --json)" "[]"
out=$("$S" session kill det "$id" 2>&1); rc=$?
expect_eq "kill of a command that ended: exit 1 ..." "$rc" 1
expect_eq "... saying so" "$out" "sandcap: session kill: no command $id runs in session det"
out=$("$S" session kill det 1 --signal NOPE 2>&1); rc=$?
expect_eq "an unknown signal is refused (125)" "$rc" 125
out=$("$S" exec --detach -t det -- true 2>&1); rc=$?
expect_eq "--detach with -t is refused (125)" "$rc" 125
out=$("$S" exec --detach nosuch -- true 2>&1); rc=$?
expect_eq "--detach to no session: 125" "$rc" 125
id2=$("$S" exec --detach det -- sleep 30)
log=$("$S" session stop det 2>&1 | sed -n 's/^  audit: \([^ ]*\) .*/\1/p')
out=$(python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
def ev(e, i): return [r["data"] for r in recs if r["event"] == e and r["data"].get("id") == i]
a, b = int(sys.argv[2]), int(sys.argv[3])
print(ev("exec.start", a)[0].get("detached"), ev("exec.kill", a)[0]["signal"], ev("exec.exit", a)[0]["status"],
      ev("exec.exit", b)[0]["session_ended"])' "$log" "$id" "$id2" 2>&1)
expect_eq "the log: exec.start detached, exec.kill 15, exec.exit 143; stop ends a detached command" \
	"$out" "True 15 143 True"

# --- pause and resume: the cgroup frozen, the wall clock stopped meanwhile ---
policy pz "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$T/work3\", \"at\": \"/work\", \"mode\": \"rw\"}]}, \"limits\": {\"wall\": \"2s\"}}"
"$S" session start --name pz --policy "$T/pz.json" >/dev/null 2>&1
"$S" exec --detach pz -- sh -c 'while :; do date +%s%N > /work/tick; sleep 0.05; done' >/dev/null
sleep 0.4
"$S" session pause pz
expect_eq "session pause: exit 0" "$?" 0
a=$(cat "$T/work3/tick"); sleep 0.5
expect_eq "paused: nothing runs" "$(cat "$T/work3/tick")" "$a"
expect_match "session list: paused" "$("$S" session list)" $'\n''pz +paused '
out=$("$S" exec pz -- true 2>&1); rc=$?
expect_eq "exec while paused: 125 ..." "$rc" 125
expect_match "... saying it is paused" "$out" "session pz is paused"
"$S" session pause pz
expect_eq "a second pause: exit 0" "$?" 0
sleep 2.2 # past limits.wall from the start, had the clock run on
"$S" session resume pz
expect_eq "session resume: exit 0" "$?" 0
for _ in $(seq 50); do [ "$(cat "$T/work3/tick")" != "$a" ] && break; sleep 0.1; done
check "the session outlived its limits.wall by the time paused, and runs again" \
	test "$(cat "$T/work3/tick")" != "$a"
for _ in $(seq 40); do "$S" session list | grep -q '^pz ' || break; sleep 0.1; done
check "then limits.wall ends it" sh -c '! "$0" session list | grep -q "^pz "' "$S"
log=$(ls -t "$SANDCAP_STATE_DIR"/audit/*.jsonl | head -1)
out=$(python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ev = lambda e: [r["data"] for r in recs if r["event"] == e]
p, r = ev("session.pause"), ev("session.resume")
print(len(p), len(r), 0 < p[0]["wall_left_ms"] < 2000, r[0]["paused_ms"] >= 2000,
      [h["limit"] for h in ev("limit.hit")])' "$log" 2>&1)
expect_eq "the log: session.pause (wall left), session.resume (paused_ms), then limit.hit wall" \
	"$out" "1 1 True True ['wall']"
pzid=$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["sandbox"])' "$log")
# the session is gone from the list before its supervisor has torn down
for _ in $(seq 100); do
	[ -z "$(find /sys/fs/cgroup/freezer -name "*$pzid*" 2>/dev/null)" ] && break
	sleep 0.1
done
expect_eq "no freezer cgroup is left behind" "$(find /sys/fs/cgroup/freezer -name "*$pzid*" 2>/dev/null)" ""
out=$("$S" session pause nosuch 2>&1); rc=$?
expect_eq "pause of no session: 125" "$rc" 125

# --- a runtime directory others may enter is refused, by its own name ---
mkdir -m 0755 "$T/rt755"
out=$(SANDCAP_RUNTIME_DIR=$T/rt755 "$S" session start --name rt --policy "$T/oom.json" 2>&1); rc=$?
expect_eq "a runtime directory of mode 0755 is refused" "$rc" 125
expect_eq "... naming it, its mode, and what it must be" "$out" \
	"sandcap: session start: runtime: $T/rt755: has mode 0755 and owner uid 0; it must be a directory of uid 0 with mode 0700 (its sessions' control sockets grant everything)"
chmod 0700 "$T/rt755"
mkdir -m 0755 "$T/rt755/sessions"
out=$(SANDCAP_RUNTIME_DIR=$T/rt755 "$S" session start --name rt --policy "$T/oom.json" 2>&1)
expect_match "... and its sessions directory by that name" "$out" "runtime: $T/rt755/sessions: has mode 0755"

finish
