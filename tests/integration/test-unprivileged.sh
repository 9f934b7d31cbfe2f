#!/usr/bin/env bash
# Unprivileged mode: the real `sandcap run`, started as a throwaway ordinary
# user (made here with useradd, removed at the end), must build the same
# walls as root does, checked from outside; limits need a delegated cgroup.
. "$(dirname "$0")/lib.sh"
need_root
command -v useradd >/dev/null && command -v userdel >/dev/null && command -v setpriv >/dev/null ||
	skip_all "needs useradd, userdel and setpriv"

U=sc-unpriv-$$
HERE=$(cd "$(dirname "$0")" && pwd)
B=$T/bin
HOMEDIR=$T/home
STATE=$HOMEDIR/.local/state/sandcap/audit

cleanup_user() {
	for p in $(pgrep -u "$U" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
	sleep 0.2
	userdel "$U" 2>/dev/null
	getent group "$U" >/dev/null && groupdel "$U" 2>/dev/null
	cleanup_dir
}
useradd --no-create-home --home-dir "$HOMEDIR" --shell /usr/sbin/nologin --user-group "$U" ||
	skip_all "useradd failed"
trap cleanup_user EXIT

# The build tree may live where the user cannot look: copies it can read.
mkdir -p "$HOMEDIR"
binaries_for_others "$B" >/dev/null
probe=$(dirname "$SANDCAP")/tests/escape/probe-escape
[ -x "$probe" ] || probe=$HERE/../../build/tests/escape/probe-escape
[ -x "$probe" ] && cp "$probe" "$B/"
chown "$U:$U" "$HOMEDIR"
cd "$T" || exit 1

# as_user CMD...: CMD as $U, with nothing of root's environment but the
# sanitizers' options (the ASan build runs this test too).
san_env=()
[ -n "${ASAN_OPTIONS:-}" ] && san_env+=("ASAN_OPTIONS=$ASAN_OPTIONS")
[ -n "${UBSAN_OPTIONS:-}" ] && san_env+=("UBSAN_OPTIONS=$UBSAN_OPTIONS")
as_user() {
	env -i "${san_env[@]}" HOME="$HOMEDIR" PATH=/usr/local/bin:/usr/bin:/bin \
		setpriv --reuid="$U" --regid="$U" --init-groups -- "$@"
}
usc() { # usc POLICYNAME CMD...
	local p=$1
	shift
	as_user "$B/sandcap" run --quiet --policy "$T/$p.json" -- "$@"
}

as_user unshare --user true 2>/dev/null || skip_all "unprivileged user namespaces unavailable here"

mkdir -p "$T/ro" "$T/rw" "$T/outside"
echo "granted-ro" >"$T/ro/file"
echo "host-secret" >"$T/outside/secret" # readable by the user: only the sandbox hides it
chmod 755 "$T/ro" "$T/outside"
chmod 644 "$T/ro/file" "$T/outside/secret"
chown "$U:$U" "$T/rw"
policy base "{\"version\": 1, \"fs\": {\"grants\": [
	{\"path\": \"$T/ro\", \"mode\": \"ro\"}, {\"path\": \"$T/rw\", \"mode\": \"rw\"}]}}"

# --- filesystem ---
out=$(usc base cat "$T/ro/file" 2>&1)
expect_eq "a ro grant is readable" "$out" "granted-ro"
out=$(usc base sh -c "echo x > $T/ro/new" 2>&1)
expect_match "writing a ro grant fails with EROFS" "$out" "Read-only file system"
check "nothing was written into the ro grant" [ ! -e "$T/ro/new" ]
out=$(usc base sh -c "echo written > $T/rw/out && cat $T/rw/out" 2>&1)
expect_eq "a rw grant is writable" "$out" "written"
expect_eq "the file lands on the host owned by the invoking user" \
	"$(stat -c %U:%G "$T/rw/out" 2>&1)" "$U:$U"
expect_eq "with the content written inside" "$(cat "$T/rw/out" 2>&1)" "written"
out=$(usc base cat "$T/outside/secret" 2>&1)
expect_match "a host file outside the grants is invisible" "$out" "No such file or directory"
expect_eq "only the grants are left of the host's tree" "$(usc base ls "$T" 2>&1 | tr '\n' ' ')" "ro rw "
policy at "{\"version\": 1, \"fs\": {\"grants\": [
	{\"path\": \"$T/rw\", \"mode\": \"rw\", \"at\": \"/work\"},
	{\"path\": \"$T/ro/file\", \"mode\": \"ro\", \"at\": \"/data/file\"}], \"workdir\": \"/work\"}}"
out=$(usc at sh -c 'cat /data/file && echo moved > here && pwd' 2>&1)
expect_eq "grants appear at their \"at\" (a file grant too), workdir inside one" "$out" \
	"granted-ro
/work"
expect_eq "written through the moved grant" "$(cat "$T/rw/here" 2>&1)" "moved"
usc base test -e /etc/shadow
expect_eq "/etc/shadow is invisible" "$?" 1
out=$(usc base id 2>&1)
expect_match "the command runs as the agent inside" "$out" "^uid=1000\(agent\) gid=1000\(agent\)"

# --- privileges ---
out=$(usc base grep -E '^(CapEff|CapBnd|CapPrm|NoNewPrivs)' /proc/self/status 2>&1)
expect_match "CapEff is 0" "$out" "CapEff:[[:space:]]+0000000000000000"
expect_match "CapBnd is 0" "$out" "CapBnd:[[:space:]]+0000000000000000"
expect_match "NoNewPrivs is 1" "$out" "NoNewPrivs:[[:space:]]+1"

# --- processes ---
sleep 313 &
hostpid=$!
out=$(usc base sh -c 'for f in /proc/[0-9]*/cmdline; do tr "\0" " " < $f; echo; done' 2>&1)
kill $hostpid 2>/dev/null
wait $hostpid 2>/dev/null
expect_no_match "no host process is visible" "$out" "sleep 313"
expect_match "the sandbox's own processes are" "$out" "sandcap-init"

# --- network ---
python3 - "$T/port" <<'PY' &
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(5)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(15)
try:
    c, _ = s.accept(); open(sys.argv[1] + ".hit", "w").write("connected")
except Exception:
    pass
PY
server=$!
for _ in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
port=$(cat "$T/port")
out=$(usc base python3 -c "
import socket
try:
    socket.create_connection(('127.0.0.1', $port), timeout=2); print('CONNECTED')
except OSError as e:
    print('refused', e.errno)
" 2>&1)
kill $server 2>/dev/null
wait $server 2>/dev/null
expect_match "host loopback TCP is unreachable" "$out" "^refused"
check "the host listener saw no connection" [ ! -e "$T/port.hit" ]

# The egress proxy works without root (it keeps the invoking user's uid).
mkdir -p "$T/www"
echo "through-the-proxy" >"$T/www/x.txt"
hport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 -m http.server "$hport" --bind 127.0.0.1 --directory "$T/www" >/dev/null 2>&1 &
hserver=$!
for _ in $(seq 50); do
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $hport), 1)" 2>/dev/null && break
	sleep 0.1
done
policy net "{\"version\": 1, \"net\": {\"egress\": [{\"host\": \"127.0.0.1\", \"ports\": [$hport]}],
	\"allow_private\": [\"127.0.0.1/32\"]}}"
out=$(usc net curl -s --noproxy '' "http://127.0.0.1:$hport/x.txt" 2>&1)
kill $hserver 2>/dev/null
wait $hserver 2>/dev/null
expect_eq "an allowed request goes through the proxy" "$out" "through-the-proxy"

# --- exit codes ---
usc base true
expect_eq "exit 0" "$?" 0
usc base sh -c 'exit 3'
expect_eq "exit 3 is passed through" "$?" 3
usc base no-such-command 2>/dev/null
expect_eq "exit 127 for a missing command" "$?" 127

# --- setup refusals: 125 with a message ---
mkdir -p "$T/private"
chmod 700 "$T/private"
policy private "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$T/private\", \"mode\": \"ro\"}]}}"
out=$(usc private true 2>&1)
expect_eq "a grant the user cannot read: 125" "$?" 125
expect_match "naming the grant" "$out" "$T/private: the invoking user may not read it"
policy spawn '{"version": 1, "spawn": {"max_depth": 1}}'
out=$(usc spawn true 2>&1)
expect_eq "spawn without root: 125" "$?" 125
expect_match "saying why" "$out" 'delegation \("spawn"\) needs root'

# Limits need a delegated cgroup; the user has none here (a cgroup v1 host
# delegates nothing, and on v2 this user's cgroup is root's).
policy limits '{"version": 1, "limits": {"memory": "64M", "pids": 32}}'
out=$(usc limits true 2>&1)
expect_eq "limits without a delegated cgroup: 125" "$?" 125
expect_match "saying a delegated cgroup is needed" "$out" "only in a delegated cgroup v2 subtree"
# shellcheck disable=SC2012 # newest first; names are sandcap's own
log=$(ls -t "$HOMEDIR"/.local/state/sandcap/audit/*.jsonl 2>/dev/null | head -1)
expect_match "the refused run's audit log says why" \
	"$(grep '"event":"sandbox.exit"' "${log:-/nonexistent}" 2>/dev/null)" '"error":"cgroup"'
policy limits_be '{"version": 1, "best_effort": true, "limits": {"memory": "64M", "pids": 32}}'
out=$(usc limits_be sh -c 'echo ran' 2>&1)
expect_eq "with best_effort it runs" "$?" 0
expect_match "and says on stderr what is not enforced" "$out" \
	"not enforced \(best_effort\): limits.memory, limits.pids"

# No user namespaces for this user (max_user_namespaces = 0 in a namespace
# of its own, so that the host's setting is untouched): one clear line, 125.
if unshare --user --map-user="$(id -u "$U")" --map-group="$(id -g "$U")" --keep-caps \
	sh -c 'echo 0 > /proc/sys/user/max_user_namespaces' 2>/dev/null; then
	out=$(unshare --user --map-user="$(id -u "$U")" --map-group="$(id -g "$U")" --keep-caps \
		sh -c "echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --inh-caps=-all \
		--ambient-caps=-all --bounding-set=-all env -i ${san_env[*]} HOME=$HOMEDIR $B/sandcap run \
		--policy $T/base.json -- true" 2>&1)
	expect_eq "no user namespaces: 125" "$?" 125
	expect_match "in one clear line" "$out" \
		"^sandcap: cannot set up the sandbox: userns: user namespaces are disabled on this host \(user.max_user_namespaces = 0\)[^"$'\n'"]*$"
else
	ok "# SKIP cannot disable user namespaces in a namespace of our own here"
fi

# A host where AppArmor restricts unprivileged user namespaces (Ubuntu 23.10+)
# would refuse the first mount with a bare EPERM: the sysctl, faked in a mount
# namespace of our own, must give one clear line and 125 before anything runs.
if out=$(unshare -m sh -c "mount -t tmpfs none /proc/sys/kernel &&
	echo 1 > /proc/sys/kernel/apparmor_restrict_unprivileged_userns &&
	exec env -i ${san_env[*]} HOME=$HOMEDIR setpriv --reuid=$U --regid=$U --init-groups -- \
	$B/sandcap run --policy $T/base.json -- true" 2>&1); then rc=0; else rc=$?; fi
if [ "$rc" = 125 ] || [ "$rc" = 0 ]; then
	expect_eq "AppArmor's userns restriction: 125" "$rc" 125
	expect_match "naming the sysctl" "$out" "kernel.apparmor_restrict_unprivileged_userns = 1"
else
	ok "# SKIP cannot fake the AppArmor sysctl here ($rc)"
fi

# --- doctor says which mode run would use ---
out=$(as_user "$B/sandcap" doctor 2>&1)
expect_match "doctor as the user: unprivileged mode" "$out" "run mode +yes +unprivileged \(uid $(id -u "$U")\)"
expect_match "doctor as the user: user namespaces available" "$out" "unprivileged userns +yes"
expect_match "doctor as root: root mode" "$("$B/sandcap" doctor 2>&1)" "run mode +yes +root"

# --- the audit log: the user's state directory, verifiable ---
logs=$(ls "$STATE"/*.jsonl 2>/dev/null | wc -l)
check "audit logs are written under ~/.local/state/sandcap/audit" [ "$logs" -ge 10 ]
expect_eq "owned by the user, mode 0700" "$(stat -c %U:%a "$STATE" 2>&1)" "$U:700"
good=1
for f in "$STATE"/*.jsonl; do
	as_user "$B/sandcap" audit verify "$f" >/dev/null 2>&1 || { good=0; echo "# verify failed: $f"; }
done
expect_eq "sandcap audit verify passes on every log" "$good" 1
be_log=$(grep -l '"best_effort":true' "$STATE"/*.jsonl | head -1)
start=$(head -1 "$be_log" 2>/dev/null)
expect_match "sandbox.start records what best_effort let go" "$start" \
	'"not_enforced":\["limits.memory, limits.pids: no delegated cgroup'
expect_match "and that the run was unprivileged" "$start" '"identity":"unprivileged:'
rw_log=$(grep -l '"event":"fs.write"' "$STATE"/*.jsonl | head -1)
check "fs.write is recorded for the rw grant" [ -n "$rw_log" ]
expect_match "by the listing fallback (no fanotify marks without CAP_SYS_ADMIN)" \
	"$(head -1 "$rw_log" 2>/dev/null)" '"fs_write":"listing \(fanotify not permitted'
mkdir -p "$T/xdg"
chown "$U:$U" "$T/xdg"
env -i "${san_env[@]}" HOME="$HOMEDIR" XDG_STATE_HOME="$T/xdg" PATH=/usr/bin:/bin \
	setpriv --reuid="$U" --regid="$U" --init-groups -- "$B/sandcap" run --quiet \
	--policy "$T/base.json" -- true
check "XDG_STATE_HOME is honoured" [ -n "$(ls "$T/xdg/sandcap/audit/"*.jsonl 2>/dev/null)" ]

# --- the escape suite, inside as the user, outside as root ---
if [ -x "$B/probe-escape" ]; then
	cat >"$B/as-user" <<EOF
#!/bin/sh
exec env -i ${san_env[*]} HOME="$HOMEDIR" PATH=/usr/bin:/bin setpriv --reuid="$U" --regid="$U" --init-groups -- "$B/sandcap" "\$@"
EOF
	chmod 755 "$B/as-user"
	policy escape "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$B\", \"mode\": \"ro\"}]}}"
	PROBE=$B/probe-escape sh "$HERE/../escape/run-escapes.sh" "$B/as-user" "$T/escape.json" \
		>"$T/escape.out" 2>&1
	rc=$?
	sed 's/^/# /' "$T/escape.out" | grep -v "ok$" | head -20
	expect_eq "every escape probe is held in an unprivileged sandbox" "$rc" 0
else
	ok "# SKIP no probe-escape binary next to $SANDCAP"
fi

# net.serve without root: the relay joins the sandbox's user namespace to
# enter its netns; the host reaches the server inside, the log says so.
policy serve "{\"version\": 1, \"limits\": {\"wall\": \"30s\"}, \"net\": {\"serve\": [8000]}}"
as_user "$B/sandcap" run --audit "$HOMEDIR/serve.jsonl" --policy "$T/serve.json" -- python3 -c '
import http.server
h = http.server.HTTPServer(("127.0.0.1", 8000), http.server.SimpleHTTPRequestHandler)
h.handle_request()' >/dev/null 2>"$T/serve.err" &
srv=$!
for _ in $(seq 100); do
	grep -q "served at" "$T/serve.err" 2>/dev/null && break
	sleep 0.1
done
sport=$(sed -n 's/^sandcap: port 8000 served at 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$T/serve.err")
code=000
for _ in $(seq 50); do
	code=$(curl -s --noproxy '*' -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:${sport:-1}/")
	[ "$code" = 200 ] && break
	sleep 0.1
done
expect_eq "net.serve: the host reaches the server in an unprivileged sandbox" "$code" 200
wait "$srv"
expect_match "... and its net.inbound record says so" "$(cat "$HOMEDIR/serve.jsonl")" \
	"\"event\":\"net.inbound\",\"data\":\\{[^}]*\"port\":8000,\"result\":\"ok\""

# Nothing of the user's is left running.
sleep 0.2
expect_eq "no process of the user is left" "$(pgrep -u "$U" | wc -l)" 0

finish
