#!/usr/bin/env bash
# sandcap-runc, the OCI runtime: the lifecycle of a bundle made by
# `sandcap-runc spec` over a busybox root (created -> running -> stopped ->
# deleted), state, kill and exit codes, --pid-file, a terminal through
# --console-socket, the walls inside, and specs asking for more than
# sandcap allows refused with the field named.
. "$(dirname "$0")/lib.sh"
need_root
command -v python3 >/dev/null || skip_all "needs python3"
BB=$(command -v busybox) || skip_all "needs busybox (busybox-static)"
file -L "$BB" 2>/dev/null | grep -q 'statically linked' || skip_all "needs a static busybox"

R=$(dirname "$SANDCAP")/sandcap-runc
RT="$T/root"
rc() { "$R" --root "$RT" "$@"; }
trap 'for c in life term killme walls lim; do rc delete --force $c >/dev/null 2>&1; done; cleanup_dir' EXIT

# A bundle: the spec's config over a busybox root, edited by python.
# The root is read-only: a bind's mount point must be in the image.
mkdir -p "$T/b/rootfs/bin" "$T/b/rootfs/proc" "$T/b/rootfs/dev" "$T/b/rootfs/tmp" "$T/b/rootfs/out" "$T/b/rootfs/ro" "$T/out"
cp "$BB" "$T/b/rootfs/bin/busybox"
for a in sh cat echo sleep grep id tty stty true; do ln -s busybox "$T/b/rootfs/bin/$a"; done
chmod 777 "$T/out"
(cd "$T/b" && "$R" spec)
check "spec writes config.json" test -s "$T/b/config.json"
(cd "$T/b" && "$R" spec 2>/dev/null)
expect_eq "spec refuses to overwrite it" "$?" 1
cp "$T/b/config.json" "$T/spec.json"
edit() { # edit OUT PYTHON: config.json from the spec's, changed by PYTHON (c is the config)
	python3 - "$T/spec.json" "$T/b/$1.json" "$2" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(c, open(sys.argv[2], "w"))
EOF
}
use() { cp "$T/b/$1.json" "$T/b/config.json"; }
bundle_of() { mkdir -p "$T/$1"; ln -sfn "$T/b/rootfs" "$T/$1/rootfs"; cp "$T/b/config.json" "$T/$1/"; }

# ---- lifecycle ----
edit life "c['process']['terminal'] = False
c['process']['args'] = ['sh', '-c', 'echo ran > /out/ran; echo to-stdout; echo to-stderr >&2; exit 7']
c['mounts'].append({'destination': '/out', 'type': 'bind', 'source': '$T/out', 'options': ['rbind', 'rw']})"
use life
rc create --bundle "$T/b" --pid-file "$T/pid" life > "$T/life.out" 2> "$T/life.err"
expect_eq "create: exit 0" "$?" 0
st=$(rc state life)
expect_match "state after create: created" "$st" '"status": "created"'
expect_match "state: ociVersion and id" "$st" '"id": "life",'
expect_match "state: the bundle" "$st" "\"bundle\": \"$T/b\""
expect_match "state: the audit log among the annotations" "$st" '"org.sandcap.audit": "/[^"]+\.jsonl"'
pid=$(cat "$T/pid" 2>/dev/null)
expect_match "state: the pid is --pid-file's" "$st" "\"pid\": ${pid:-x},"
check "that pid lives" kill -0 "${pid:-0}"
check "the process has not run before start" test ! -e "$T/out/ran"
rc start life
expect_eq "start: exit 0" "$?" 0
for i in $(seq 50); do [ "$(rc state life | grep -c stopped)" = 1 ] && break; sleep 0.1; done
expect_match "after its end: stopped" "$(rc state life)" '"status": "stopped"'
check "the process ran" test -e "$T/out/ran"
expect_eq "its stdout is create's" "$(cat "$T/life.out")" "to-stdout"
expect_match "its stderr is create's" "$(cat "$T/life.err")" "to-stderr"
rc start life 2>/dev/null
expect_eq "start of a stopped container: refused" "$?" 1
rc delete life
expect_eq "delete: exit 0" "$?" 0
rc state life 2>/dev/null
expect_eq "state after delete: no such container" "$?" 1
check "delete left nothing under --root" test ! -e "$RT/life"

# ---- run: the exit code; kill ----
rc run --bundle "$T/b" life >/dev/null 2>&1
expect_eq "run: the process's exit code" "$?" 7
edit sleep "c['process']['terminal'] = False
c['process']['args'] = ['sleep', '30']"
use sleep
rc create --bundle "$T/b" --pid-file "$T/kpid" killme
rc start killme
expect_match "a sleeping process: running" "$(rc state killme)" '"status": "running"'
rc delete killme 2>/dev/null
expect_eq "delete of a running container: refused" "$?" 1
rc kill killme NOSUCH 2>/dev/null
expect_eq "kill: an unknown signal refused" "$?" 1
rc kill killme SIGUSR1
expect_eq "kill SIGUSR1: exit 0" "$?" 0
kpid=$(cat "$T/kpid")
for i in $(seq 50); do kill -0 "$kpid" 2>/dev/null || break; sleep 0.1; done
expect_match "SIGUSR1 ends sleep: stopped" "$(rc state killme)" '"status": "stopped"'
rc delete killme
rc create --bundle "$T/b" killme && rc start killme && rc kill killme 15
for i in $(seq 50); do rc state killme | grep -q stopped && break; sleep 0.1; done
expect_match "kill 15 (a number): stopped" "$(rc state killme)" '"status": "stopped"'
rc delete killme
rc create --bundle "$T/b" killme
rc delete --force killme
expect_eq "delete --force of a created container" "$?" 0
check "... and nothing left" test ! -e "$RT/killme"
rc run --bundle "$T/b" --detach killme
rc kill --all killme KILL
for i in $(seq 50); do rc state killme | grep -q stopped && break; sleep 0.1; done
expect_match "kill --all KILL: stopped" "$(rc state killme)" '"status": "stopped"'
rc delete killme

# ---- the walls inside ----
edit walls "c['process']['terminal'] = False
c['process']['args'] = ['sh', '-c', 'grep -E \"^(Seccomp|NoNewPrivs|CapEff):\" /proc/self/status; id -u; echo x > /bin/new 2>&1 || echo root-ro; cat /out/../../proc/1/environ >/dev/null 2>&1; echo x > /tmp/t && echo tmp-rw']
c['process']['capabilities']['bounding'] = ['CAP_SYS_ADMIN']
c['process']['capabilities']['effective'] = ['CAP_SYS_ADMIN']"
use walls
out=$(rc run --bundle "$T/b" walls 2>&1)
expect_match "inside: Seccomp 2 (filter)" "$out" 'Seccomp:[[:space:]]+2'
expect_match "inside: NoNewPrivs 1" "$out" 'NoNewPrivs:[[:space:]]+1'
expect_match "inside: no capability, though the spec asked for CAP_SYS_ADMIN" "$out" 'CapEff:[[:space:]]+0000000000000000'
expect_eq "inside: the agent's uid" "$(printf '%s\n' "$out" | grep -x 1000)" 1000
expect_match "the root is read-only" "$out" 'root-ro'
expect_match "/tmp is writable" "$out" 'tmp-rw'
# Landlock: a write the mounts allow (/proc/self/comm is the process's
# own) is refused; a ro bind is read-only.
edit ll "c['process']['terminal'] = False
c['process']['args'] = ['sh', '-c', 'echo x > /proc/self/comm 2>&1; echo x > /ro/new 2>&1']
c['mounts'].append({'destination': '/ro', 'type': 'bind', 'source': '$T/out', 'options': ['rbind', 'ro']})"
use ll
out=$(rc run --bundle "$T/b" walls 2>&1)
expect_match "Landlock refuses a write the mounts allow (/proc/self/comm)" "$out" 'Permission denied'
expect_match "a ro bind: read-only" "$out" 'Read-only file system'

# ---- a terminal through --console-socket ----
cat > "$T/recv.py" <<'EOF'
import array, os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(1)
c, _ = s.accept()
fds = array.array("i")
msg, anc, _, _ = c.recvmsg(64, socket.CMSG_LEN(4))
for level, typ, data in anc:
    if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
        fds.frombytes(data[:4])
m = fds[0]
out = b""
end = time.time() + 10
while time.time() < end:
    try:
        b = os.read(m, 4096)
    except OSError:
        break
    if not b:
        break
    out += b
sys.stdout.write(out.decode(errors="replace"))
EOF
edit term "c['process']['args'] = ['sh', '-c', 'tty; stty size']
c['process']['consoleSize'] = {'height': 33, 'width': 111}"
use term
python3 "$T/recv.py" "$T/console.sock" > "$T/console.out" &
rpid=$!
for i in $(seq 50); do [ -S "$T/console.sock" ] && break; sleep 0.05; done
rc create --bundle "$T/b" --console-socket "$T/console.sock" term
expect_eq "create with a terminal and --console-socket" "$?" 0
rc start term
wait $rpid
expect_match "the process's terminal is a pty of the sandbox" "$(cat "$T/console.out")" '/dev/pts/[0-9]+'
expect_match "its size is consoleSize" "$(cat "$T/console.out")" '33 111'
rc delete --force term
rc create --bundle "$T/b" term 2>/dev/null
expect_eq "a terminal without --console-socket: refused" "$?" 125

# ---- refusals, the field named ----
refused() { # refused WHAT PYTHON PATTERN
	edit bad "$2"
	use bad
	out=$(rc create --bundle "$T/b" bad 2>&1)
	expect_eq "$1: refused (125)" "$?" 125
	expect_match "$1: the field named" "$out" "$3"
	check "$1: nothing left" test ! -e "$RT/bad"
}
refused "a namespace path" "c['linux']['namespaces'].append({'type': 'network', 'path': '/proc/1/ns/net'})" \
	'\$\.linux\.namespaces\[5\]\.path: joining an existing namespace is not supported'
refused "an unknown mount type" "c['mounts'].append({'destination': '/mnt', 'type': 'nfs', 'source': 'x:/y'})" \
	'\$\.mounts\[4\]\.type: a nfs mount at /mnt is not supported'
refused "another uid" "c['process']['user']['uid'] = 33" '\$\.process\.user\.uid: must be 1000'
refused "hooks" "c['hooks'] = {'prestart': [{'path': '/bin/true'}]}" '\$\.hooks: hooks are not supported'
refused "a seccomp profile" "c['linux']['seccomp'] = {'defaultAction': 'SCMP_ACT_ALLOW'}" '\$\.linux\.seccomp:'
refused "an rlimit sandcap does not set" "c['process']['rlimits'].append({'type': 'RLIMIT_CORE', 'soft': 1, 'hard': 1})" \
	'\$\.process\.rlimits\[1\]\.type: RLIMIT_CORE is not supported'
refused "a masked path sandcap does not mask" "c['linux']['maskedPaths'].append('/etc/shadow')" \
	'\$\.linux\.maskedPaths\[4\]: /etc/shadow is not a path sandcap masks'
out=$("$R" --root "$RT" --systemd-cgroup state x 2>&1)
expect_match "--systemd-cgroup refused clearly" "$out" 'systemd-cgroup is not supported'
out=$(rc create --no-pivot --bundle "$T/b" x 2>&1)
expect_match "--no-pivot refused clearly" "$out" 'no-pivot is not supported'
rc --log "$T/log.json" --log-format json create --bundle "$T/nope" x 2>/dev/null
expect_match "--log-format json: the error as a JSON line" "$(cat "$T/log.json")" '^\{"level": ?"error", ?"msg": ?".*nope'

# ---- limits ----
edit lim "c['process']['terminal'] = False
c['process']['args'] = ['true']
c['linux']['resources'] = {'memory': {'limit': 67108864}, 'pids': {'limit': 32}, 'cpu': {'quota': 50000, 'period': 100000}}"
use lim
rc create --bundle "$T/b" lim
a=$(rc state lim | python3 -c 'import json,sys; print(json.load(sys.stdin)["annotations"]["org.sandcap.audit"])')
rc start lim
for i in $(seq 50); do rc state lim | grep -q stopped && break; sleep 0.1; done
rc delete lim
expect_eq "linux.resources (memory, pids, cpu): honoured, the log sealed" "$(tail -c 2000 "$a" | grep -c '"event":"audit.seal"')" 1
expect_match "the audit log's sandbox.start carries the limits" "$(head -c 20000 "$a" | grep -m1 sandbox.start)" '"memory": ?67108864'

# ---- containerd, end to end: its own root, state and socket ----
if command -v containerd >/dev/null && command -v ctr >/dev/null &&
	command -v containerd-shim-runc-v2 >/dev/null; then
	mkdir -p "$T/ctd"
	cat > "$T/ctd/config.toml" <<EOF
version = 2
root = "$T/ctd/root"
state = "$T/ctd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$T/ctd/c.sock"
EOF
	containerd --config "$T/ctd/config.toml" > "$T/ctd/log" 2>&1 &
	ctd=$!
	ctr=(ctr -a "$T/ctd/c.sock")
	for i in $(seq 100); do "${ctr[@]}" version >/dev/null 2>&1 && break; sleep 0.1; done
	mkdir -p "$T/b/rootfs/run" "$T/b/rootfs/sys"
	out=$(timeout 30 "${ctr[@]}" run --runc-binary "$R" --rootfs "$T/b/rootfs" ctd1 \
		sh -c 'id -u; grep -E "^(Seccomp|NoNewPrivs|CapEff):" /proc/self/status; exit 5' 2>&1)
	expect_eq "ctr run --runc-binary sandcap-runc: the process's exit code" "$?" 5
	expect_eq "ctr run: the process runs as the agent" "$(printf '%s\n' "$out" | grep -x 1000)" 1000
	expect_match "ctr run: Seccomp 2" "$out" 'Seccomp:[[:space:]]+2'
	expect_match "ctr run: NoNewPrivs 1" "$out" 'NoNewPrivs:[[:space:]]+1'
	expect_match "ctr run: no capability" "$out" 'CapEff:[[:space:]]+0000000000000000'
	"${ctr[@]}" c rm ctd1 >/dev/null 2>&1
	out=$(timeout 30 "${ctr[@]}" run --runc-binary "$R" --with-ns network:/proc/1/ns/net \
		--rootfs "$T/b/rootfs" ctd2 true 2>&1)
	expect_match "ctr run asking to join a namespace: refused, the field named" "$out" \
		'linux\.namespaces\[[0-9]+\]\.path: joining an existing namespace is not supported'
	"${ctr[@]}" c rm ctd2 >/dev/null 2>&1
	kill "$ctd"
	wait "$ctd" 2>/dev/null
else
	skip "containerd end to end" "containerd, ctr and containerd-shim-runc-v2 are not installed (apt: containerd)"
fi

finish
