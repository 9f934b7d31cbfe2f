#!/usr/bin/env bash
# sandcap-runc, the OCI runtime: the lifecycle of a bundle made by
# `sandcap-runc spec` over a busybox root (created -> running -> stopped ->
# deleted), state, kill and exit codes, --pid-file (the sandbox's pid 1:
# its namespaces, its own cgroup; the end of its session's supervisor ends
# it), a terminal through
# --console-socket, the walls inside, exec (the same walls, its exit code,
# --pid-file, --detach, --tty) and ps, a spec's seccomp profile stacked on
# sandcap's filter, specs asking for more than sandcap allows refused with
# the field named, and containerd (ctr run, task exec, task ps) and podman
# end to end when installed (ctr's exit codes and task metrics).
. "$(dirname "$0")/lib.sh"
need_root
command -v python3 >/dev/null || skip_all "needs python3"
BB=$(command -v busybox) || skip_all "needs busybox (busybox-static)"
file -L "$BB" 2>/dev/null | grep -q 'statically linked' || skip_all "needs a static busybox"

R=$(dirname "$SANDCAP")/sandcap-runc
RT="$T/root"
rc() { "$R" --root "$RT" "$@"; }
trap 'for c in life term killme bg pz walls lim ex sc np rwx; do rc delete --force $c >/dev/null 2>&1; done; cleanup_dir' EXIT

# A bundle: the spec's config over a busybox root, edited by python.
# The root is read-only; mount points the image lacks are made over it.
mkdir -p "$T/b/rootfs/bin" "$T/b/rootfs/proc" "$T/b/rootfs/dev" "$T/b/rootfs/tmp" "$T/b/rootfs/out" "$T/b/rootfs/ro" "$T/out"
cp "$BB" "$T/b/rootfs/bin/busybox"
for a in sh cat echo sleep grep id tty stty true mkdir unshare pwd; do ln -s busybox "$T/b/rootfs/bin/$a"; done
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

# ---- mount points the image lacks: made in a private layer over it ----
mkdir -p "$T/vol"
echo from-the-host > "$T/vol/f"
edit mp "c['process']['terminal'] = False
c['process']['args'] = ['sh', '-c', 'cat /absent/vol/f && ls -d /run && touch /x']
c['mounts'].append({'destination': '/absent/vol', 'type': 'bind', 'source': '$T/vol', 'options': ['rbind', 'ro']})"
use mp
out=$(rc run --bundle "$T/b" mp 2>&1)
expect_match "a bind at a mount point the image lacks: there" "$out" "^from-the-host"
expect_match "... and /run, which the image lacks too" "$out" "/run"
expect_match "... the root is read-only still" "$out" "Read-only file system"
check "... the image was not written (no /absent, /run or /x in it)" \
	test ! -e "$T/b/rootfs/absent" -a ! -e "$T/b/rootfs/run" -a ! -e "$T/b/rootfs/x"
use life

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

# ---- the main process's end is the container's, whatever it left
# behind: a child holding its stdout is killed with the sandbox ----
edit bg "c['process']['terminal'] = False
c['process']['args'] = ['sh', '-c', 'sleep 25 & echo main-out; exit 3']"
use bg
rc create --bundle "$T/b" bg > "$T/bg.out" 2>&1 && rc start bg
t0=$(date +%s)
for i in $(seq 100); do rc state bg | grep -q stopped && break; sleep 0.1; done
expect_match "a background child holding stdout: stopped when the main process ends" \
	"$(rc state bg)" '"status": "stopped"'
expect_eq "... its output before its end relayed" "$(cat "$T/bg.out")" "main-out"
out=$(rc kill bg KILL 2>&1)
expect_eq "... kill of it: runc's exit code" "$?" 1
expect_match "... and runc's words" "$out" 'container not running'
timeout 10 "$R" --root "$RT" delete --force bg
expect_eq "... delete --force returns at once" "$?" 0
expect_eq "... within 5 s of its start" "$(( $(date +%s) - t0 < 5 ))" 1
out=$(timeout 10 "$R" --root "$RT" run --bundle "$T/b" bg 2>&1)
expect_eq "run: the main process's exit code, not the child's end" "$?:$out" "3:main-out"

# ---- runc's other commands: list, pause and resume (the freezer),
# linux.cgroupsPath (the sandbox's cgroup nested in it), short options ----
CGP=sandcap-test-oci-$$
edit pz "c['process']['terminal'] = False
c['process']['args'] = ['sh', '-c', 'i=0; while :; do i=\$((i+1)); echo \$i > /out/n; sleep 0.05; done']
c['linux']['cgroupsPath'] = '/$CGP/pz'
c['mounts'].append({'destination': '/out', 'type': 'bind', 'source': '$T/out', 'options': ['rbind', 'rw']})"
use pz
rc create --bundle "$T/b" pz && rc start pz
rc create --bundle "$T/b" pz 2>/dev/null
expect_eq "create of a taken id: runc's exit code" "$?" 1
expect_match "list: runc's table" "$(rc list)" '^ID +PID +STATUS +BUNDLE +CREATED +OWNER'$'\n''pz +[0-9]+ +running +'"$T/b"
expect_eq "list -q: the ids" "$(rc list -q)" "pz"
expect_eq "list --format json: the states" "$(rc list --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["status"])')" running
spid=$(rc state pz | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
# The pid is the sandbox's pid 1: its cgroup the sandbox's own (nested in
# cgroupsPath), its namespaces those of the container's processes.
expect_match "the pid's cgroup: the sandbox's own, nested in cgroupsPath" "$(cat /proc/$spid/cgroup)" "memory:/$CGP/pz/sandcap-sc-[0-9a-f]+"$'\n'
expect_eq "the pid: sandcap-init, pid 1 of its namespace" "$(grep -E '^NSpid:' /proc/$spid/status | awk '{print $NF}')" 1
check "the pid's pid namespace is not the host's" test "$(readlink /proc/$spid/ns/pid)" != "$(readlink /proc/self/ns/pid)"
same=0 n=0
for p in $(rc ps --format json pz | tr -d '[]' | tr , ' '); do
	ns=$(readlink /proc/$p/ns/pid) || continue # the loop's sleep, ended meanwhile
	n=$((n + 1))
	[ "$ns" = "$(readlink /proc/$spid/ns/pid)" ] && same=$((same + 1))
done
check "... it is that of every process of the container" test "$n" -ge 2 -a "$same" = "$n"
expect_eq "nsenter -t PID -n: the sandbox's network, lo only" \
	"$(nsenter -t "$spid" -n cat /proc/net/dev | awk -F: 'NR > 2 {gsub(/ /, "", $1); print $1}')" lo
cg=$(ls -d /sys/fs/cgroup/memory/$CGP/pz/*/ 2>/dev/null | head -1)
check "cgroupsPath: the sandbox's cgroup is nested in it" test -n "$cg"
check "... and holds the sandbox's processes" grep -q . "${cg}cgroup.procs"
for cmd in pause exec; do
	out=$(rc $cmd no-such-container true 2>&1)
	expect_eq "$cmd of a container that does not exist: runc's words, exit 1" \
		"$?:$out" "1:sandcap-runc: container no-such-container does not exist"
done
rc pause pz
expect_eq "pause: exit 0" "$?" 0
expect_match "state: paused" "$(rc state pz)" '"status": "paused"'
n1=$(cat "$T/out/n"); sleep 0.5; n2=$(cat "$T/out/n")
expect_eq "paused: the process does not run" "$n2" "$n1"
rc exec pz true 2>/dev/null
expect_eq "exec in a paused container: runc's exit code" "$?" 255
rc pause pz 2>/dev/null
expect_eq "pause of a paused container: refused" "$?" 1
rc resume pz
expect_eq "resume: exit 0" "$?" 0
sleep 0.5
check "resumed: it runs again" test "$(cat "$T/out/n")" -gt "$n2"
rc resume pz 2>/dev/null
expect_eq "resume of a running container: refused" "$?" 1
out=$(echo '{"memory": {"limit": 268435456}}' | rc update --resources - pz 2>&1)
expect_match "update (runc's options and all): refused, exit 1, the reason given" "$?:$out" \
	"^1:.*update: a container's resources cannot be changed once it is created"
rc pause pz
rc kill -a pz KILL
expect_eq "kill -a KILL of a paused container" "$?" 0
for i in $(seq 50); do rc state pz | grep -q stopped && break; sleep 0.1; done
expect_match "... stopped" "$(rc state pz)" '"status": "stopped"'
rc exec pz true 2>/dev/null
expect_eq "exec in a stopped container: runc's exit code" "$?" 255
rc delete -f pz
expect_eq "delete -f (runc's short option)" "$?" 0
check "delete: the cgroups it made are gone" test ! -e /sys/fs/cgroup/memory/$CGP -a ! -e /sys/fs/cgroup/freezer/$CGP
expect_eq "features: hooks, none supported" "$(rc features | python3 -c 'import json,sys; print(json.load(sys.stdin)["hooks"])')" "[]"

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

# ---- images as they come: the image's user, whatever its uid, with no
# capability; root.readonly false: a bounded private layer takes the writes,
# the image is never written ----
mkdir -p "$T/img/bin" "$T/img/etc" "$T/img/usr/bin" "$T/img/home/nonroot" "$T/img/proc" "$T/img/dev" "$T/img/tmp" "$T/img/out" "$T/own"
cp "$BB" "$T/img/bin/busybox"
for a in sh cat echo id grep rm dd ls stat touch chmod cp; do ln -s busybox "$T/img/bin/$a"; done
echo from-the-image > "$T/img/etc/gone"
chown 65532:65532 "$T/img/home/nonroot"
chown 4242:4243 "$T/own"
img_sum() { (cd "$T/img" && find . -printf '%p %U:%G %m %s %l\n' | sort && find . -type f -exec sha256sum {} + | sort) | sha256sum; }
sum0=$(img_sum)
status='grep -E \"^Cap(Eff|Prm|Bnd|Amb):\" /proc/self/status'
for u in 65532 101 0; do
	edit "u$u" "c['process']['terminal'] = False
c['root'] = {'path': '$T/img', 'readonly': True}
c['process']['user'] = {'uid': $u, 'gid': $u, 'additionalGids': [$u]}
c['process']['args'] = ['sh', '-c', 'id; $status; echo w > /out/by-$u; stat -c %u:%g /out/by-$u; echo x > /etc/x 2>&1']
c['mounts'].append({'destination': '/out', 'type': 'bind', 'source': '$T/own', 'options': ['rbind', 'rw']})"
	use "u$u"
	out=$(rc run --bundle "$T/b" "u$u" 2>&1)
	expect_match "uid $u: runs as itself (id)" "$out" "^uid=$u(\\([a-z]+\\))? gid=$u(\\([a-z]+\\))?"$'\n'
	for cap in Eff Prm Bnd Amb; do
		expect_match "uid $u: Cap$cap 0 after exec" "$out" "Cap$cap:[[:space:]]+0000000000000000"
	done
	expect_match "uid $u: its file in a rw bind is its own inside" "$out" $'\n'"$u:$u"$'\n'
	expect_eq "uid $u: ... and on the host the bind's owner's, as with 1000" "$(stat -c %u:%g "$T/own/by-$u")" "4242:4243"
	expect_match "uid $u: root.readonly true still refuses writes" "$out" 'Read-only file system'
done
# Writable: as root inside, the image's root-owned files are its own; the
# writes (a new /etc/x and /usr/bin/y, an image file removed) stay in the
# private layer, which ends in ENOSPC at its bound (fs.tmp's 64 MiB).
edit rw0 "c['process']['terminal'] = False
c['root'] = {'path': '$T/img', 'readonly': False}
c['process']['user'] = {'uid': 0, 'gid': 0}
c['process']['args'] = ['sh', '-c', '$status; stat -c %u:%g /etc/gone; echo x > /etc/x && echo y > /usr/bin/y && rm /etc/gone && cat /etc/x /usr/bin/y && ls /etc; cp /bin/busybox /usr/bin/sb && chmod 4755 /usr/bin/sb; stat -c %a /usr/bin/sb; touch /top 2>&1; echo 5 > /proc/self/oom_score_adj 2>&1; dd if=/dev/zero of=/usr/big bs=1M count=100 2>&1; echo dd=\$?; exit 6']"
use rw0
out=$(rc run --bundle "$T/b" rw0 2>&1)
expect_eq "a writable root: the run ends cleanly, with the process's code" "$?" 6
expect_match "writable, uid 0: CapEff 0" "$out" 'CapEff:[[:space:]]+0000000000000000'
expect_match "writable, uid 0: the image's root-owned files are its own (0:0)" "$out" $'\n''0:0'$'\n'
expect_match "writable: /etc/x and /usr/bin/y written, /etc/gone removed" "$out" $'x\ny\nx\n'
expect_no_match "... /etc lists no gone" "$out" 'gone'$'\n'
expect_match "writable: no setuid mode (chmod 4755 refused)" "$out" 'chmod: /usr/bin/sb: Operation not permitted'$'\n''755'
expect_match "writable: no new name directly in / (Landlock)" "$out" 'touch: /top: Permission denied'
expect_match "writable: /proc stays read-only (Landlock)" "$out" "can't create /proc/self/oom_score_adj: Permission denied"
expect_match "writable: bounded, writing past it is ENOSPC" "$out" "dd: error writing '/usr/big': No space left on device"
expect_match "... and dd fails" "$out" $'\n''dd=1'
expect_eq "writable: the image is byte for byte unchanged" "$(img_sum)" "$sum0"
check "... no /etc/x, /usr/bin/y or /usr/big in it, /etc/gone still there" \
	test ! -e "$T/img/etc/x" -a ! -e "$T/img/usr/bin/y" -a ! -e "$T/img/usr/big" -a -e "$T/img/etc/gone"
# As the image's own non-root user: where the image lets it, not root's files.
edit rwn "c['process']['terminal'] = False
c['root'] = {'path': '$T/img', 'readonly': False}
c['process']['user'] = {'uid': 65532, 'gid': 65532}
c['process']['args'] = ['sh', '-c', 'echo n > /home/nonroot/f && stat -c %u:%g /home/nonroot/f; stat -c %u:%g /etc; echo x > /etc/x 2>&1']"
use rwn
out=$(rc run --bundle "$T/b" rwn 2>&1)
expect_match "writable, uid 65532: its own directory of the image takes its writes" "$out" '^65532:65532'$'\n'
expect_match "writable, uid 65532: /etc is root's inside" "$out" $'\n''0:0'$'\n'
expect_match "... and not its to write" "$out" "can't create /etc/x: Permission denied"
expect_eq "... the image unchanged" "$(img_sum)" "$sum0"
# exec: the container's user, no other.
edit rwx "c['process']['terminal'] = False
c['root'] = {'path': '$T/img', 'readonly': False}
c['process']['user'] = {'uid': 101, 'gid': 101}
c['process']['args'] = ['sh', '-c', 'echo up > /tmp/up; while :; do sleep 1; done']"
use rwx
rc create --bundle "$T/b" rwx && rc start rwx
out=$(rc exec --user 101:101 rwx sh -c 'id -u; grep CapEff /proc/self/status')
expect_match "exec --user 101:101 (the container's): runs, CapEff 0" "$out" '^101'$'\n''CapEff:[[:space:]]+0000000000000000'
rc exec --user 101 rwx sh -c "exit 0"
expect_eq "exec --user 101 (its gid the container's)" "$?" 0
out=$(rc exec --user 0 rwx id 2>&1)
expect_eq "exec --user of another uid: refused" "$?" 125
expect_match "... the container's user named" "$out" "must be the container's"
rc delete --force rwx
# dpkg -i of a locally built .deb as the image's root: its root-owned
# files are root's inside, the package lands in the private layer only.
if command -v dpkg >/dev/null && command -v dpkg-deb >/dev/null && command -v ldd >/dev/null; then
	D="$T/deb"
	mkdir -p "$D/pkg/DEBIAN" "$D/pkg/usr/share/hello" "$D/img/root"
	printf 'Package: hello-sandcap\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.org>\nDescription: t\n' > "$D/pkg/DEBIAN/control"
	echo hi > "$D/pkg/usr/share/hello/x"
	dpkg-deb --root-owner-group --build "$D/pkg" "$D/img/root/hello.deb" >/dev/null
	(cd "$D/img" && mkdir -p bin usr/bin etc/dpkg var/lib/dpkg/info var/lib/dpkg/updates var/lib/dpkg/triggers var/log tmp proc dev &&
		: > var/lib/dpkg/status && : > var/lib/dpkg/available && cp "$BB" bin/busybox &&
		for a in sh rm cat; do ln -s busybox bin/$a; done &&
		for b in dpkg dpkg-deb dpkg-query; do
			cp "$(command -v $b)" usr/bin/ &&
			for l in $(ldd "$(command -v $b)" | grep -o '/[^ ]*'); do mkdir -p ".${l%/*}" && cp -L "$l" ".$l"; done
		done)
	dsum() { (cd "$D/img" && find . -printf '%p %U:%G %m %s\n' | sort && find . -type f -exec sha256sum {} + | sort) | sha256sum; }
	dsum0=$(dsum)
	edit deb "c['process']['terminal'] = False
c['root'] = {'path': '$D/img', 'readonly': False}
c['process']['user'] = {'uid': 0, 'gid': 0}
c['process']['args'] = ['sh', '-c', 'dpkg -i /root/hello.deb >/dev/null && dpkg-query -W hello-sandcap && cat /usr/share/hello/x']"
	use deb
	out=$(rc run --bundle "$T/b" deb 2>&1)
	expect_match "writable, uid 0: dpkg -i of a local .deb installs it" "$out" $'hello-sandcap\t1.0\nhi'
	expect_eq "... the image unchanged" "$(dsum)" "$dsum0"
else
	skip "dpkg -i in a writable root" "dpkg or dpkg-deb is not installed"
fi
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

# ---- exec and ps: more processes in a running container ----
edit ex "c['process']['terminal'] = False
c['process']['args'] = ['sleep', '30']
c['mounts'].append({'destination': '/out', 'type': 'bind', 'source': '$T/out', 'options': ['rbind', 'rw']})"
use ex
rc create --bundle "$T/b" ex && rc start ex
out=$(rc exec ex sh -c 'grep -E "^(Seccomp|NoNewPrivs|CapEff):" /proc/self/status; id -u
echo x > /proc/self/comm 2>&1; for p in /proc/[0-9]*; do cat $p/cmdline; echo; done | grep -c "^sleep"; exit 3' 2>&1)
expect_eq "exec: the command's exit code" "$?" 3
expect_match "exec: Seccomp 2 (filter)" "$out" 'Seccomp:[[:space:]]+2'
expect_match "exec: NoNewPrivs 1" "$out" 'NoNewPrivs:[[:space:]]+1'
expect_match "exec: no capability" "$out" 'CapEff:[[:space:]]+0000000000000000'
expect_eq "exec: the agent's uid" "$(printf '%s\n' "$out" | grep -x 1000)" 1000
expect_match "exec: Landlock refuses a write the mounts allow" "$out" 'Permission denied'
expect_eq "exec: in the container's pid namespace (it sees the first process)" \
	"$(printf '%s\n' "$out" | tail -1)" 1
a=$(rc state ex | python3 -c 'import json,sys; print(json.load(sys.stdin)["annotations"]["org.sandcap.audit"])')
expect_eq "exec: in the container's audit log (exec.exit, status 3)" \
	"$(grep '"exec.exit"' "$a" | grep -c '"status":3')" 1
rc exec ex mkdir /tmp/ctl
expect_eq "exec: mkdir works without a profile of the spec's" "$?" 0
out=$(rc exec --env FOO=bar --cwd /out ex sh -c 'echo $FOO; pwd')
expect_eq "exec --env, --cwd" "$(printf '%s' "$out" | tr '\n' ' ')" "bar /out"
printf 'in-stdin\n' | rc exec ex cat > "$T/ex.cat"
expect_eq "exec: stdin relayed" "$(cat "$T/ex.cat")" "in-stdin"
rc exec --pid-file "$T/ex.fpid" ex sh -c 'exit 0'
check "exec --pid-file (foreground): written" grep -qE '^[0-9]+$' "$T/ex.fpid"
rc exec --detach --pid-file "$T/ex.dpid" ex sh -c 'sleep 0.5; echo done > /out/ex-detached'
expect_eq "exec --detach: returns at once" "$?" 0
dpid=$(cat "$T/ex.dpid" 2>/dev/null)
check "exec --detach --pid-file: its relay lives" kill -0 "${dpid:-0}"
check "... and the command has not ended yet" test ! -e "$T/out/ex-detached"
for i in $(seq 50); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
check "exec --detach: the command ran and its relay ended" test -e "$T/out/ex-detached" -a ! -d "/proc/$dpid"
cat > "$T/proc.json" <<EOF
{"args": ["sh", "-c", "echo \$X; exit 9"], "env": ["X=from-process-file", "PATH=/bin"], "cwd": "/", "user": {"uid": 1000, "gid": 1000}, "terminal": false, "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 1024, "hard": 1024}]}
EOF
out=$(rc exec --process "$T/proc.json" ex)
expect_eq "exec --process FILE: its exit code" "$?" 9
expect_eq "exec --process FILE: its env" "$out" "from-process-file"
sed 's/"uid": 1000/"uid": 33/' "$T/proc.json" > "$T/proc-bad.json"
out=$(rc exec --process "$T/proc-bad.json" ex 2>&1)
expect_eq "exec --process with another uid than the container's: refused (125)" "$?" 125
expect_match "... the field named" "$out" "\\\$\\.process\\.user: must be the container's \\(uid 33, gid 1000 asked\\)"
python3 "$T/recv.py" "$T/exc.sock" > "$T/exc.out" &
rpid=$!
for i in $(seq 50); do [ -S "$T/exc.sock" ] && break; sleep 0.05; done
rc exec --tty --console-socket "$T/exc.sock" ex sh -c 'tty; exit 4'
expect_eq "exec --tty --console-socket: the exit code" "$?" 4
wait $rpid
expect_match "exec --tty: the master went to --console-socket, a pty of the sandbox" "$(cat "$T/exc.out")" '/dev/pts/[0-9]+'
out=$(rc exec --tty ex sh -c 'tty; stty size' </dev/null)
expect_match "exec --tty without --console-socket: the pty relayed to exec's stdio" "$out" '/dev/pts/[0-9]+'
rc exec --detach --pid-file "$T/ex.spid" ex sleep 30
spid=$(cat "$T/ex.spid")
ps_json=$(rc ps --format json ex)
n=$(printf '%s' "$ps_json" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
expect_eq "ps --format json: sandcap-init, the first process and the exec's sleep" "$n" 3
initns=$(readlink "/proc/$(printf '%s' "$ps_json" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0])')/ns/pid")
same=0
for p in $(printf '%s' "$ps_json" | python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin))))'); do
	[ "$(readlink /proc/$p/ns/pid)" = "$initns" ] && [ "$initns" != "$(readlink /proc/self/ns/pid)" ] && same=$((same + 1))
done
expect_eq "ps: every pid is in the container's pid namespace" "$same" 3
expect_match "ps (table): ps -ef's lines of the container" "$(rc ps ex)" '^UID +PID .*'$'\n''.*sleep 30'
out=$(rc ps ex -e -o pid,args)
expect_match "ps PS-ARGS: ps(1) with those arguments" "$out" '^ *PID COMMAND'
expect_match "... the container's processes" "$out" 'sleep 30'
expect_no_match "... and not the exec's relay, which is outside" "$out" "(^|"$'\n'") *$spid "
kill -TERM "$spid"
for i in $(seq 50); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
check "SIGTERM to an exec's relay reaches its process (the relay ended)" test ! -d "/proc/$spid"
n=$(rc ps --format json ex | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
expect_eq "... and ps no longer lists the exec's sleep" "$n" 2
rc kill ex KILL
for i in $(seq 50); do rc state ex | grep -q stopped && break; sleep 0.1; done
rc exec ex true 2>/dev/null
expect_eq "exec in a stopped container: refused (runc's 255)" "$?" 255
rc ps ex 2>/dev/null
expect_eq "ps of a stopped container: refused" "$?" 1
rc delete ex

# ---- Kubernetes' ids under a long --root: the control sockets are past
# the 107 bytes of a socket address ----
LR="$T/run/containerd/io.containerd.runtime.v2.task/k8s.io/state"
LID=$(printf '%064d' 0 | tr 0 a)
mkdir -p "$(dirname "$LR")" # --root itself is made by the runtime, 0700
use ex
"$R" --root "$LR" create --bundle "$T/b" "$LID" && "$R" --root "$LR" start "$LID"
expect_eq "a 64-character id under a long --root starts" "$?" 0
out=$("$R" --root "$LR" exec "$LID" sh -c 'echo in; exit 4')
expect_eq "... exec reaches it" "$?:$out" "4:in"
"$R" --root "$LR" kill "$LID" KILL
for i in $(seq 50); do "$R" --root "$LR" state "$LID" | grep -q stopped && break; sleep 0.1; done
expect_match "... kill reaches it" "$("$R" --root "$LR" state "$LID")" '"status": "stopped"'
"$R" --root "$LR" delete "$LID"

# ---- a seccomp profile of the spec's own, stacked on sandcap's ----
edit sc "c['process']['terminal'] = False
c['process']['args'] = ['sh', '-c', 'grep Seccomp_filters /proc/self/status; mkdir /tmp/d 2>&1; unshare -U true 2>&1; echo x > /tmp/t && echo write-ok; sleep 30']
c['linux']['seccomp'] = {'defaultAction': 'SCMP_ACT_ALLOW', 'architectures': ['SCMP_ARCH_X86_64'],
	'syscalls': [{'names': ['mkdir', 'mkdirat'], 'action': 'SCMP_ACT_ERRNO', 'errnoRet': 122}]}"
use sc
rc create --bundle "$T/b" sc > "$T/sc.out" 2>&1 && rc start sc
for i in $(seq 50); do grep -q write-ok "$T/sc.out" && break; sleep 0.1; done
out=$(cat "$T/sc.out")
expect_match "spec seccomp: a second filter (Seccomp_filters 2)" "$out" 'Seccomp_filters:[[:space:]]+2'
expect_match "spec seccomp: mkdir fails with its errnoRet (EDQUOT)" "$out" "mkdir.*Disk quota exceeded"
expect_match "spec seccomp: sandcap's own denials still hold (unshare)" "$out" 'unshare.*Operation not permitted'
expect_match "spec seccomp: what both allow works" "$out" 'write-ok'
out=$(rc exec sc sh -c 'mkdir /tmp/e 2>&1; grep Seccomp_filters /proc/self/status')
expect_match "spec seccomp: exec has it too" "$out" "Disk quota exceeded"
a=$(rc state sc | python3 -c 'import json,sys; print(json.load(sys.stdin)["annotations"]["org.sandcap.audit"])')
expect_match "spec seccomp: sandbox.start records the second filter" \
	"$(grep -m1 '"sandbox.start"' "$a")" '"seccomp_second": ?\{"instructions": ?[1-9]'
rc delete --force sc
edit np "c['process']['terminal'] = False
c['process']['args'] = ['true']"
use np
rc run --no-pivot --bundle "$T/b" np
expect_eq "--no-pivot: accepted (sandcap's root is a tmpfs of its own)" "$?" 0

# ---- refusals, the field named ----
refused() { # refused WHAT PYTHON PATTERN
	edit bad "$2"
	use bad
	out=$(rc create --bundle "$T/b" bad 2>&1)
	expect_eq "$1: refused (125)" "$?" 125
	expect_match "$1: the field named" "$out" "$3"
	check "$1: nothing left" test ! -e "$RT/bad"
}
refused "a pid namespace path" "c['linux']['namespaces'][0]['path'] = '/proc/1/ns/pid'" \
	'\$\.linux\.namespaces\[0\]\.path: joining an existing pid namespace is not supported'
refused "an unknown mount type" "c['mounts'].append({'destination': '/mnt', 'type': 'nfs', 'source': 'x:/y'})" \
	'\$\.mounts\[4\]\.type: a nfs mount at /mnt is not supported'
refused "a uid that is no id" "c['process']['user']['uid'] = -1" '\$\.process\.user\.uid: expected an id'
refused "hooks" "c['hooks'] = {'prestart': [{'path': '/bin/true'}]}" '\$\.hooks\.prestart: hooks are not supported'
refused "a seccomp listener" "c['linux']['seccomp'] = {'defaultAction': 'SCMP_ACT_ALLOW', 'listenerPath': '/run/l.sock'}" \
	'\$\.linux\.seccomp\.listenerPath: not supported'
refused "a seccomp notify action" "c['linux']['seccomp'] = {'defaultAction': 'SCMP_ACT_ALLOW', 'syscalls': [{'names': ['mkdir'], 'action': 'SCMP_ACT_NOTIFY'}]}" \
	'\$\.linux\.seccomp\.syscalls\[0\]\.action: SCMP_ACT_NOTIFY is not supported'
refused "an rlimit sandcap does not set" "c['process']['rlimits'].append({'type': 'RLIMIT_CORE', 'soft': 1, 'hard': 1})" \
	'\$\.process\.rlimits\[1\]\.type: RLIMIT_CORE is not supported'
refused "a masked path sandcap does not mask" "c['linux']['maskedPaths'].append('/etc/shadow')" \
	'\$\.linux\.maskedPaths\[4\]: /etc/shadow is not a path sandcap masks'
refused "id mappings" "c['linux']['uidMappings'] = [{'containerID': 0, 'hostID': 100000, 'size': 65536}]" \
	"\\\$\\.linux\\.uidMappings: sandcap maps its own ids \\(process\\.user's inside"
out=$("$R" --root "$RT" --systemd-cgroup state x 2>&1)
expect_match "--systemd-cgroup refused clearly" "$out" 'systemd-cgroup is not supported'
rc --log "$T/log.json" --log-format json create --bundle "$T/nope" x 2>/dev/null
expect_match "--log-format json: the error as a JSON line" "$(cat "$T/log.json")" '^\{"level": ?"error", ?"msg": ?".*nope'

# ---- limits ----
edit lim "c['process']['terminal'] = False
c['process']['args'] = ['true']
c['linux']['resources'] = {'memory': {'limit': 67108864}, 'pids': {'limit': 32}, 'cpu': {'quota': 50000, 'period': 100000}}"
use lim
rc create --bundle "$T/b" lim
lpid=$(rc state lim | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
if [ -d /sys/fs/cgroup/memory ]; then
	mem=/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" {print $3}' /proc/$lpid/cgroup)/memory.limit_in_bytes
else
	mem=/sys/fs/cgroup$(awk -F: '$1 == "0" {print $3}' /proc/$lpid/cgroup)/memory.max
fi
expect_eq "the pid's own memory cgroup holds linux.resources' limit" "$(cat "$mem" 2>/dev/null)" 67108864
a=$(rc state lim | python3 -c 'import json,sys; print(json.load(sys.stdin)["annotations"]["org.sandcap.audit"])')
rc start lim
for i in $(seq 50); do rc state lim | grep -q stopped && break; sleep 0.1; done
rc delete lim
expect_eq "linux.resources (memory, pids, cpu): honoured, the log sealed" "$(tail -c 2000 "$a" | grep -c '"event":"audit.seal"')" 1
expect_match "the audit log's sandbox.start carries the limits" "$(head -c 20000 "$a" | grep -m1 sandbox.start)" '"memory": ?67108864'

# ---- the session's supervisor killed from the host: the sandbox ends
# with it (pid 1 sees its channel close), and the log says why ----
edit sk "c['process']['terminal'] = False
c['process']['args'] = ['sleep', '30']"
use sk
rc --log "$T/sk.log" create --bundle "$T/b" sk && rc start sk
skpid=$(rc state sk | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
sspid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$RT/sessions/sk/meta.json" 2>/dev/null)
kill -9 "${sspid:-0}"
for i in $(seq 50); do rc state sk | grep -q stopped && break; sleep 0.1; done
expect_match "its session's supervisor killed: the container stopped" "$(rc state sk)" '"status": "stopped"'
check "... its pid 1 gone" test ! -d "/proc/$skpid/ns" -o "$(awk '{print $3}' /proc/$skpid/stat 2>/dev/null)" = Z
for i in $(seq 50); do grep -q supervisor "$T/sk.log" 2>/dev/null && break; sleep 0.1; done
expect_match "... and the log says why" "$(cat "$T/sk.log" 2>/dev/null)" "container sk: its session's supervisor ended before the process did"
rc delete sk
check "... delete left nothing under --root" test ! -e "$RT/sk"

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
	expect_eq "ctr run: the process runs as the image's user, root by name (uid 0)" "$(printf '%s\n' "$out" | head -1)" 0
	expect_match "ctr run: Seccomp 2" "$out" 'Seccomp:[[:space:]]+2'
	expect_match "ctr run: NoNewPrivs 1" "$out" 'NoNewPrivs:[[:space:]]+1'
	expect_match "ctr run: no capability" "$out" 'CapEff:[[:space:]]+0000000000000000'
	"${ctr[@]}" c rm ctd1 >/dev/null 2>&1
	timeout 30 "${ctr[@]}" run --runc-binary "$R" --rootfs "$T/b/rootfs" ctd7 sh -c 'exit 7' >/dev/null 2>&1
	expect_eq "ctr run: exit 7 reaches ctr" "$?" 7
	"${ctr[@]}" c rm ctd7 >/dev/null 2>&1
	timeout 30 "${ctr[@]}" run --runc-binary "$R" --rootfs "$T/b/rootfs" ctds sh -c 'kill -9 $$' >/dev/null 2>&1
	expect_eq "ctr run: a main process killed by SIGKILL, 128+9" "$?" 137
	"${ctr[@]}" c rm ctds >/dev/null 2>&1
	t0=$(date +%s%N)
	out=$(timeout 30 "${ctr[@]}" run --runc-binary "$R" --rootfs "$T/b/rootfs" ctdb sh -c 'sleep 25 & echo main; exit 3' 2>&1)
	rc_=$? t1=$(date +%s%N)
	expect_eq "ctr run: a background child holding stdout, the main process's 3" "$rc_" 3
	check "... at once (within 5 s, not the child's 25)" test $(( (t1 - t0) / 1000000000 )) -lt 5
	expect_eq "... its output relayed" "$out" main
	"${ctr[@]}" c rm ctdb >/dev/null 2>&1
	# A terminal: the shim takes the console once create's stdout and
	# stderr reach their end (script(1) gives ctr the terminal -t needs).
	if command -v script >/dev/null; then
		out=$(timeout 30 script -qec "${ctr[*]} run -t --runc-binary $R --rootfs $T/b/rootfs ctdt sh -c 'tty; exit 4'" /dev/null </dev/null 2>&1)
		expect_eq "ctr run -t: the process's exit code (no hang)" "$?" 4
		expect_match "ctr run -t: its terminal is a pty of the sandbox" "$out" '/dev/pts/[0-9]+'
		"${ctr[@]}" c rm ctdt >/dev/null 2>&1
	else
		skip "ctr run -t" "script(1) is not installed (apt: bsdutils)"
	fi
	out=$(timeout 30 "${ctr[@]}" run --runc-binary "$R" --with-ns ipc:/proc/1/ns/ipc \
		--rootfs "$T/b/rootfs" ctd2 true 2>&1)
	expect_match "ctr run asking to join the host's ipc namespace: refused, the field named" "$out" \
		'linux\.namespaces\[[0-9]+\]\.path: /proc/1/ns/ipc'
	"${ctr[@]}" c rm ctd2 >/dev/null 2>&1
	timeout 30 "${ctr[@]}" run -d --runc-binary "$R" --memory-limit 67108864 --rootfs "$T/b/rootfs" ctd3 sleep 30 >/dev/null 2>&1
	out=$(timeout 30 "${ctr[@]}" task exec --exec-id e1 ctd3 \
		sh -c 'id -u; grep -E "^(Seccomp|NoNewPrivs|CapEff):" /proc/self/status; exit 6' 2>&1)
	expect_eq "ctr task exec: the process's exit code" "$?" 6
	expect_eq "ctr task exec: as the container's user (uid 0)" "$(printf '%s\n' "$out" | head -1)" 0
	expect_match "ctr task exec: Seccomp 2" "$out" 'Seccomp:[[:space:]]+2'
	expect_match "ctr task exec: NoNewPrivs 1" "$out" 'NoNewPrivs:[[:space:]]+1'
	expect_match "ctr task exec: no capability" "$out" 'CapEff:[[:space:]]+0000000000000000'
	out=$(timeout 30 "${ctr[@]}" task ps ctd3 2>&1)
	expect_eq "ctr task ps: sandcap-init and the first process" "$(printf '%s\n' "$out" | grep -cE '^[0-9]+ ')" 2
	# The shim's metrics are the sandbox's own cgroup's (the pid's).
	out=$(timeout 30 "${ctr[@]}" task metrics --format json ctd3 2>&1)
	expect_match "ctr task metrics: the sandbox's pids and memory, its --memory-limit (the pid's cgroup)" \
		"$(printf '%s' "$out" | python3 -c 'import json,sys; m=json.load(sys.stdin); print("pids", m["pids"]["current"], "memory", m["memory"]["usage"]["usage"] > 0, m["memory"]["usage"]["limit"])' 2>&1)" \
		'^pids [1-9][0-9]* memory True 67108864$'
	tpid=$("${ctr[@]}" task ls 2>/dev/null | awk '$1 == "ctd3" {print $2}')
	check "ctr task ls: the pid is in the container's pid namespace" \
		test -n "$tpid" -a "$(readlink /proc/${tpid:-0}/ns/pid)" != "$(readlink /proc/self/ns/pid)"
	# Its session's supervisor killed: the task ends (137), the shim sees it.
	timeout 30 "${ctr[@]}" run --runc-binary "$R" --rootfs "$T/b/rootfs" ctdk sleep 30 >/dev/null 2>&1 &
	ctrk=$!
	# runc's --root of the shim: /run/containerd/runc/NAMESPACE
	ssk=/run/containerd/runc/default/sessions/ctdk/meta.json
	for i in $(seq 100); do "${ctr[@]}" task ls 2>/dev/null | grep -q 'ctdk.*RUNNING' && break; sleep 0.1; done
	sspid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$ssk" 2>/dev/null)
	kill -9 "${sspid:-0}"
	wait "$ctrk"
	expect_eq "ctr run: its session's supervisor killed, the task ends with 137" "$?" 137
	"${ctr[@]}" c rm ctdk >/dev/null 2>&1
	timeout 30 "${ctr[@]}" task kill -s KILL ctd3 >/dev/null 2>&1
	for i in $(seq 50); do "${ctr[@]}" task ls 2>/dev/null | grep -q 'ctd3.*STOPPED' && break; sleep 0.1; done
	"${ctr[@]}" task rm ctd3 >/dev/null 2>&1
	"${ctr[@]}" c rm ctd3 >/dev/null 2>&1
	kill "$ctd"
	wait "$ctd" 2>/dev/null
else
	skip "containerd end to end" "containerd, ctr and containerd-shim-runc-v2 are not installed (apt: containerd)"
fi

# ---- podman, rootful, with a root directory for an image (--rootfs) and
# storage of its own; --ipc none: its /dev/shm bind is noexec, which a
# grant cannot be (sandcap makes the container's /dev/shm itself) ----
if command -v podman >/dev/null && command -v conmon >/dev/null; then
	# The mount points of podman's binds, in the read-only root.
	mkdir -p "$T/b/rootfs/etc" "$T/b/rootfs/run"
	: > "$T/b/rootfs/etc/hostname"
	# What podman makes outside its --root and --runroot, removed after
	# unless it was there: its network run directory, conmon's cgroups,
	# sandcap-runc's default --root (conmon passes none).
	made=()
	for d in /run/containers /run/sandcap-runc /sys/fs/cgroup/*/; do
		case $d in /sys/*) d=${d}libpod_parent ;; esac
		[ -e "$d" ] || made+=("$d")
	done
	pm=(podman --root "$T/pm/root" --runroot "$T/pm/run" --tmpdir "$T/pm/tmp"
		--cgroup-manager cgroupfs --events-backend none --runtime "$R")
	out=$(timeout 60 "${pm[@]}" run --rm --ipc none --no-hosts --network none \
		--rootfs "$T/b/rootfs" sh -c 'id -u; grep -E "^(Seccomp|Seccomp_filters|NoNewPrivs|CapEff):" /proc/self/status; exit 8' 2>&1)
	expect_eq "podman --runtime sandcap-runc run --rootfs: the process's exit code" "$?" 8
	expect_eq "podman: the process runs as the image's user, root by name (uid 0)" "$(printf '%s\n' "$out" | head -1)" 0
	expect_match "podman: its seccomp profile stacked on sandcap's (two filters)" "$out" 'Seccomp_filters:[[:space:]]+2'
	expect_match "podman: NoNewPrivs 1" "$out" 'NoNewPrivs:[[:space:]]+1'
	expect_match "podman: no capability" "$out" 'CapEff:[[:space:]]+0000000000000000'
	"${pm[@]}" rm -af >/dev/null 2>&1
	for d in "${made[@]}"; do
		case $d in
		/sys/fs/cgroup/*) # conmon's, once conmon has gone
			for i in $(seq 20); do
				[ -e "$d" ] && ! rmdir "$d/conmon" "$d" 2>/dev/null || break
				sleep 0.1
			done ;;
		/run/sandcap-runc) rmdir "$d/sessions" "$d" 2>/dev/null ;;
		*) rm -rf "$d" ;;
		esac
	done
else
	skip "podman end to end" "podman and conmon are not installed (apt: podman)"
fi

finish
