#!/usr/bin/env bash
# A Kubernetes pod on sandcap-runc, as containerd's CRI makes it: a pod
# network namespace (made here with `ip netns`, as CNI would) where a server
# listens that exists nowhere else; a pause container joining that netns
# with new ipc and uts namespaces and the pod's hostname; an app container
# whose network, ipc and uts paths are /proc/PID/ns/* of the pid in the
# pause container's state. Asserts: the app runs; its egress through the
# proxy reaches the server only the pod netns has, leaving from the pod's
# address; the agent's own netns is not the pod's (lo only, a direct
# connect answered by nothing); both containers share ipc (a SysV segment
# one writes, the other reads) and uts (the pause spec's hostname); the
# walls hold; a host namespace, a wrong type, a pid path and a hostname
# beside a joined uts are refused with the field named. Serving: a web
# container whose policy serves port 8090 on the pod's addresses ("bind":
# "0.0.0.0") is reached from the host's netns at the pod's address (a
# veth, as a kubelet's probe comes), answered by the agent's server, each
# connection a net.inbound record (peer, port, bytes); a port its agent
# listens on but nobody declared, and one nothing declared, are refused;
# the same policy in a container with no network namespace of its own
# (the host's) is refused at create.
. "$(dirname "$0")/lib.sh"
need_root
command -v python3 >/dev/null || skip_all "needs python3"
command -v ip >/dev/null || skip_all "needs ip (iproute2)"
command -v cc >/dev/null || skip_all "needs a C compiler for the SysV helper"
BB=$(command -v busybox) || skip_all "needs busybox (busybox-static)"
file -L "$BB" 2>/dev/null | grep -q 'statically linked' || skip_all "needs a static busybox"

R=$(dirname "$SANDCAP")/sandcap-runc
RT="$T/root"
NS=sc-pod-$$
ADDR=10.231.7.2
PORT=8087
rc() { "$R" --root "$RT" "$@"; }
srv=
HV=
cleanup() {
	for c in web app pause bad; do rc delete --force $c >/dev/null 2>&1; done
	[ -n "$HV" ] && ip link del "$HV" 2>/dev/null
	[ -n "$srv" ] && kill $srv 2>/dev/null && wait $srv 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	cleanup_dir
}
trap cleanup EXIT

# ---- the pod's network, as CNI leaves it: an address of the pod netns
# only, and a server there ----
ip netns add "$NS" || skip_all "cannot make a network namespace"
ip -n "$NS" link set lo up
# The pod's address (CNI's would be on a veth; on lo it is this netns's alone).
ip -n "$NS" addr add "$ADDR/32" dev lo
mkdir -p "$T/www"
echo "only-in-the-pod-netns" > "$T/www/index.html"
ip netns exec "$NS" python3 -m http.server --bind "$ADDR" --directory "$T/www" "$PORT" \
	> "$T/srv.log" 2>&1 &
srv=$!
# and on a port the policy does not allow
ip netns exec "$NS" python3 -m http.server --bind "$ADDR" --directory "$T/www" "$((PORT + 1))" \
	> "$T/srv2.log" 2>&1 &
srv="$srv $!"
for i in $(seq 50); do
	ip netns exec "$NS" python3 -c "import socket; socket.create_connection(('$ADDR', $PORT), 1)" 2>/dev/null && break
	sleep 0.1
done
check "the server answers inside the pod netns" \
	ip netns exec "$NS" python3 -c "import urllib.request; urllib.request.urlopen('http://$ADDR:$PORT/', timeout=2)"

# ---- a root: busybox, and a SysV shared-memory helper (static) ----
mkdir -p "$T/b/rootfs/bin" "$T/b/rootfs/proc" "$T/b/rootfs/dev" "$T/b/rootfs/tmp"
cp "$BB" "$T/b/rootfs/bin/busybox"
for a in sh cat echo sleep grep hostname wget true httpd; do ln -s busybox "$T/b/rootfs/bin/$a"; done
mkdir -p "$T/b/rootfs/www"
echo "served-from-inside-$$" > "$T/b/rootfs/www/index.html"
cat > "$T/shm.c" <<'EOF'
/* shm put KEY TEXT: a segment for everyone (each agent is another host uid)
 * holding TEXT; shm get KEY: prints what it holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
int main(int argc, char **argv)
{
	int put = argc == 4 && strcmp(argv[1], "put") == 0;
	int id = argc >= 3 ? shmget((key_t)atoi(argv[2]), 4096, put ? IPC_CREAT | 0666 : 0) : -1;
	char *m = id >= 0 ? shmat(id, NULL, 0) : (void *)-1;

	if (m == (void *)-1) {
		perror("shm");
		return 1;
	}
	if (put)
		snprintf(m, 4096, "%s", argv[3]);
	else
		puts(m);
	return 0;
}
EOF
cc -static -O2 -o "$T/b/rootfs/bin/shm" "$T/shm.c" || skip_all "cannot build a static helper (libc6-dev)"
(cd "$T/b" && "$R" spec)
edit() { # edit NAME PYTHON: $T/NAME/config.json, the spec's changed by PYTHON (c)
	mkdir -p "$T/$1"
	python3 - "$T/b/config.json" "$T/$1/config.json" "$2" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c['root']['path'] = sys.argv[1][:-len('config.json')] + 'rootfs'
c['process']['terminal'] = False
exec(sys.argv[3])
json.dump(c, open(sys.argv[2], "w"))
EOF
}
nsof() { readlink "/proc/$1/ns/$2"; }

# ---- the pause container: the pod netns by its path, new ipc, uts, pid
# and mount namespaces, the pod's hostname ----
edit pause "c['hostname'] = 'pod-$$'
c['process']['args'] = ['sleep', '60']
c['linux']['namespaces'] = [{'type': 'pid'}, {'type': 'network', 'path': '/var/run/netns/$NS'},
    {'type': 'ipc'}, {'type': 'uts'}, {'type': 'mount'}]"
rc create --bundle "$T/pause" --pid-file "$T/pause.pid" pause
expect_eq "the pause container: created in the pod netns" "$?" 0
rc start pause
pp=$(rc state pause | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
expect_eq "state's pid is --pid-file's" "$pp" "$(cat "$T/pause.pid" 2>/dev/null)"
# The session's supervisor, where the proxy's upstream side is.
ssof() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$RT/sessions/$1/meta.json"; }
expect_eq "its session's supervisor is in the pod netns" "$(nsof "$(ssof pause)" net)" \
	"net:[$(stat -L -c %i "/var/run/netns/$NS")]"
check "state's pid is the sandbox's pid 1, in the agent's own netns (not the pod's)" \
	test "$(grep -E '^NSpid:' /proc/$pp/status | awk '{print $NF}')" = 1 -a "$(nsof "$pp" net)" != "$(nsof "$(ssof pause)" net)"
check "... with ipc and uts namespaces of the pod's own, not the host's" \
	test "$(nsof "$pp" ipc)" != "$(nsof 1 ipc)" -a "$(nsof "$pp" uts)" != "$(nsof 1 uts)"

# ---- the app container: the pause container's network, ipc and uts ----
pol="{\"net\": {\"egress\": [{\"host\": \"$ADDR\", \"ports\": [$PORT]}], \"allow_private\": [\"10.231.7.0/24\"]}}"
edit app "del c['hostname']
c['process']['args'] = ['sleep', '60']
c['annotations'] = {'org.sandcap.policy': '$pol'}
c['linux']['namespaces'] = [{'type': 'pid'}, {'type': 'network', 'path': '/proc/$pp/ns/net'},
    {'type': 'ipc', 'path': '/proc/$pp/ns/ipc'}, {'type': 'uts', 'path': '/proc/$pp/ns/uts'},
    {'type': 'mount'}]"
rc create --bundle "$T/app" --pid-file "$T/app.pid" app
expect_eq "the app container: created with the pause container's namespaces" "$?" 0
rc start app
expect_match "the app container runs" "$(rc state app)" '"status": "running"'
ap=$(cat "$T/app.pid" 2>/dev/null)
expect_eq "its session's supervisor (the proxy's upstream side) is in the pod netns, by the pause's pid 1's path" \
	"$(nsof "$(ssof app)" net)" "$(nsof "$(ssof pause)" net)"

out=$(rc exec app wget -q -O - "http://$ADDR:$PORT/" 2>&1)
expect_eq "egress through the proxy reaches the server only the pod netns has" "$out" "only-in-the-pod-netns"
check "... leaving from the pod's address" grep -q "^$ADDR - .*GET / " "$T/srv.log"
out=$(rc exec app wget -q -O - "http://$ADDR:$((PORT + 1))/" 2>&1)
expect_no_match "through the proxy, a port the policy does not allow: refused" "$out" "only-in-the-pod-netns"
out=$(rc exec app cat /proc/net/dev 2>&1)
expect_eq "the agent's netns has no interface but lo" \
	"$(printf '%s\n' "$out" | sed -n '3,$p' | awk -F: '{gsub(/ /, "", $1); print $1}' | tr '\n' ' ')" "lo "
out=$(rc exec app sh -c "unset http_proxy HTTP_PROXY; wget -q -T 3 -O - http://$ADDR:$((PORT + 1))/ 2>&1")
expect_no_match "a direct connect to the pod's address gets nothing from its server" "$out" "only-in-the-pod-netns"
check "... which saw no request at all" bash -c "! grep -q GET '$T/srv2.log'"
init=$(rc ps --format json app | python3 -c 'import json,sys; print(json.load(sys.stdin)[0])')
check "the agent's netns is neither the pod's nor the host's" \
	test "$(nsof "$init" net)" != "net:[$(stat -L -c %i "/var/run/netns/$NS")]" -a "$(nsof "$init" net)" != "$(nsof 1 net)"

# ---- serving: a container's server reached from the pod network ----
# A veth from the host's netns to the pod's, as CNI's bridge leaves one: a
# kubelet's probe, a Service, a port-forward arrive at the pod's address
# from outside the pod netns. The web container declares port 8090 on the
# pod's addresses; its agent serves 8090 and, undeclared, 8091.
HV=scph$$
POD=10.231.8.2
ip link add "$HV" type veth peer name eth0 netns "$NS"
ip addr add 10.231.8.1/30 dev "$HV"
ip link set "$HV" up
ip -n "$NS" addr add "$POD/30" dev eth0
ip -n "$NS" link set eth0 up
HTTP_GET=$(cd "$(dirname "$0")/../helpers" && pwd)/http-get.py
get() { python3 "$HTTP_GET" "$@"; } # ADDR PORT: GET /, as a kubelet's HTTP probe
pol='{"net": {"listen": true, "serve": [{"port": 8090, "bind": "0.0.0.0"}]}}'
edit web "del c['hostname']
c['process']['args'] = ['sh', '-c', 'httpd -p 8091 -h /www; exec httpd -f -p 8090 -h /www']
c['annotations'] = {'org.sandcap.policy': '$pol'}
c['linux']['namespaces'] = [{'type': 'pid'}, {'type': 'network', 'path': '/proc/$pp/ns/net'},
    {'type': 'ipc', 'path': '/proc/$pp/ns/ipc'}, {'type': 'uts', 'path': '/proc/$pp/ns/uts'},
    {'type': 'mount'}]"
rc create --bundle "$T/web" --pid-file "$T/web.pid" web >"$T/web.err" 2>&1
expect_eq "a container that serves port 8090 on the pod's addresses: created" "$?:$(cat "$T/web.err")" "0:"
rc start web
for i in $(seq 50); do [ "$(get "$POD" 8090)" = "served-from-inside-$$" ] && break; sleep 0.1; done
expect_eq "from the host's netns, the pod's address:8090 is answered from inside" \
	"$(get "$POD" 8090)" "served-from-inside-$$"
expect_eq "... and from the pod's loopback (a sidecar's way)" \
	"$(ip netns exec "$NS" python3 "$HTTP_GET" 127.0.0.1 8090)" \
	"served-from-inside-$$"
expect_eq "a port the agent listens on but nobody declared: refused from the pod network" \
	"$(get "$POD" 8091)" "refused"
expect_eq "a port nothing declared nor listens on: refused" "$(get "$POD" 8092)" "refused"
expect_eq "8090 is not open on the host's own addresses" "$(get 10.231.8.1 8090)" "refused"
expect_match "the listener is in the pod netns, on every address of it" \
	"$(ip netns exec "$NS" ss -Hltn '( sport = :8090 )' | awk '{print $4}')" '^(0\.0\.0\.0|\*):8090$'
wa=$(rc state web | python3 -c 'import json,sys; print(json.load(sys.stdin)["annotations"]["org.sandcap.audit"])')
for i in $(seq 50); do grep -q '"event":"net.inbound".*"peer":"10\.231\.8\.1:' "$wa" && break; sleep 0.1; done
rec=$(grep '"event":"net.inbound"' "$wa" | grep '"peer":"10\.231\.8\.1:' | grep '"result":"ok"' | head -1)
expect_match "the audit log: net.inbound with the prober's address, the port, the result" "$rec" \
	'"host_port":8090,"peer":"10\.231\.8\.1:[0-9]+","port":8090,"result":"ok"'
expect_match "... the request's bytes in" "$rec" '"bytes_in":29,'
expect_match "... and the answer's bytes out" "$rec" '"bytes_out":[1-9][0-9]+,'
expect_match "sandbox.start names where the port is served" \
	"$(grep -m1 '"event":"sandbox.start"' "$wa")" '"serve":\{"8090":"0\.0\.0\.0:8090"\}'

# a second container of the pod serving the same port: refused, as a
# second server of a pod would be
edit bad "del c['hostname']
c['process']['args'] = ['true']
c['annotations'] = {'org.sandcap.policy': '$pol'}
c['linux']['namespaces'] = [{'type': 'pid'}, {'type': 'network', 'path': '/proc/$pp/ns/net'}, {'type': 'mount'}]"
out=$(rc create --bundle "$T/bad" bad 2>&1)
expect_eq "a second container serving 8090 in the pod: refused (125)" "$?" 125
expect_match "... the port taken" "$out" 'net\.serve port 8090: cannot listen on 0\.0\.0\.0 \(port 8090\): Address already in use'
check "... nothing left" test ! -e "$RT/bad"
expect_eq "... the first one still answers" "$(get "$POD" 8090)" "served-from-inside-$$"

# 0.0.0.0 where the container has no network namespace of its own: its
# supervisor's is the host's, so nothing may listen on the host's addresses
edit bad "del c['hostname']
c['process']['args'] = ['true']
c['annotations'] = {'org.sandcap.policy': '$pol'}
c['linux']['namespaces'] = [{'type': 'pid'}, {'type': 'mount'}]"
out=$(rc create --bundle "$T/bad" bad 2>&1)
expect_eq "bind 0.0.0.0 in the host's network namespace: refused (125)" "$?" 125
expect_match "... saying why" "$out" 'net.serve port 8090: "bind": "0.0.0.0" is only for a container in a network namespace of its own.*supervisor is in the host.s'
check "... nothing left" test ! -e "$RT/bad"
check "... nothing listens on the host for it" test -z "$(ss -Hltn '( sport = :8090 )')"
edit bad "del c['hostname']
c['process']['args'] = ['true']
c['annotations'] = {'org.sandcap.policy': '$pol'}
c['linux']['namespaces'] = [{'type': 'pid'}, {'type': 'network', 'path': '/proc/$$/ns/net'}, {'type': 'mount'}]"
out=$(rc create --bundle "$T/bad" bad 2>&1)
expect_eq "... and so in the host's, joined by its path (125)" "$?" 125
expect_match "... saying why" "$out" '"bind": "0.0.0.0" is only for a container in a network namespace of its own'

# ---- shared ipc and uts ----
rc exec pause shm put 4242 "written-by-pause-$$"
expect_eq "a SysV segment the pause container wrote: the app reads it" \
	"$(rc exec app shm get 4242 2>&1)" "written-by-pause-$$"
expect_eq "the app's hostname is the pod's (the pause spec's)" "$(rc exec app hostname 2>&1)" "pod-$$"
pinit=$(rc ps --format json pause | python3 -c 'import json,sys; print(json.load(sys.stdin)[0])')
check "both sandboxes: one ipc namespace" test "$(nsof "$init" ipc)" = "$(nsof "$pinit" ipc)"
check "... one uts namespace" test "$(nsof "$init" uts)" = "$(nsof "$pinit" uts)"
check "... not the host's" test "$(nsof "$init" ipc)" != "$(nsof 1 ipc)" -a "$(nsof "$init" uts)" != "$(nsof 1 uts)"
out=$(rc exec app sh -c 'hostname evil 2>&1; cat /proc/sys/kernel/hostname')
expect_match "the agent cannot change the pod's hostname" "$out" "pod-$$\$"

# ---- the walls, inside the app container ----
out=$(rc exec app grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status)
expect_match "app: Seccomp 2" "$out" 'Seccomp:[[:space:]]+2'
expect_match "app: NoNewPrivs 1" "$out" 'NoNewPrivs:[[:space:]]+1'
expect_match "app: no capability" "$out" 'CapEff:[[:space:]]+0000000000000000'
a=$(rc state app | python3 -c 'import json,sys; print(json.load(sys.stdin)["annotations"]["org.sandcap.audit"])')
start=$(grep -m1 '"sandbox.start"' "$a")
expect_match "the audit log: the sandbox's own namespaces" "$start" '"namespaces": ?"user mount pid net cgroup"'
expect_match "... and ipc and uts shared" "$start" '"ipc_uts": ?"shared \(a pod.s\)"'

# ---- refusals, the field named, nothing left ----
refused() { # refused WHAT NAMESPACES-PYTHON PATTERN
	edit bad "c['process']['args'] = ['true']
$2"
	out=$(rc create --bundle "$T/bad" bad 2>&1)
	expect_eq "$1: refused (125)" "$?" 125
	expect_match "$1: the field named" "$out" "$3"
	check "$1: nothing left" test ! -e "$RT/bad"
}
# The host's: this shell's (as /proc/1's may not be readable in a
# container, the kernel's initial namespaces are known by their inodes).
refused "the host's ipc namespace" "del c['hostname']
c['linux']['namespaces'] = [{'type': 'pid'}, {'type': 'ipc', 'path': '/proc/$$/ns/ipc'}]" \
	"\\\$\\.linux\\.namespaces\\[1\\]\\.path: /proc/$$/ns/ipc is the host.s ipc namespace"
refused "the host's uts namespace" "del c['hostname']
c['linux']['namespaces'] = [{'type': 'uts', 'path': '/proc/$$/ns/uts'}]" \
	"\\\$\\.linux\\.namespaces\\[0\\]\\.path: /proc/$$/ns/uts is the host.s uts namespace"
refused "pid 1's ipc namespace" "del c['hostname']
c['linux']['namespaces'] = [{'type': 'ipc', 'path': '/proc/1/ns/ipc'}]" \
	'\$\.linux\.namespaces\[0\]\.path: /proc/1/ns/ipc'
edit bad "del c['hostname']
c['linux']['namespaces'] = [{'type': 'ipc', 'path': '/proc/$$/ns/ipc'}]"
out=$(unshare --ipc "$R" --root "$RT" create --bundle "$T/bad" bad 2>&1)
expect_match "the host's ipc namespace, from a runtime in another one: refused" "$out" \
	'is the host.s ipc namespace'

refused "a network namespace given as ipc" "del c['hostname']
c['linux']['namespaces'] = [{'type': 'ipc', 'path': '/proc/$pp/ns/net'}]" \
	"\\\$\\.linux\\.namespaces\\[0\\]\\.path: /proc/$pp/ns/net is not an ipc namespace"
refused "a file that is no namespace" "c['linux']['namespaces'] = [{'type': 'network', 'path': '$T/srv.log'}]" \
	'\$\.linux\.namespaces\[0\]\.path: .*srv\.log is not a network namespace'
refused "a pid path (shareProcessNamespace)" "c['linux']['namespaces'] = [{'type': 'pid', 'path': '/proc/$pp/ns/pid'}]" \
	'\$\.linux\.namespaces\[0\]\.path: joining an existing pid namespace is not supported'
refused "a hostname beside a joined uts namespace" "c['linux']['namespaces'] = [{'type': 'uts', 'path': '/proc/$pp/ns/uts'}]" \
	'\$\.hostname: a container that joins a uts namespace'

# ---- the pod goes: the app, then the pause container ----
rc kill web KILL
rc kill app KILL
rc kill pause KILL
for i in $(seq 50); do rc state pause | grep -q stopped && rc state app | grep -q stopped &&
	rc state web | grep -q stopped && break; sleep 0.1; done
rc delete web
rc delete app
rc delete pause
check "the served port is closed with its container" \
	test -z "$(ip netns exec "$NS" ss -Hltn '( sport = :8090 )')"
expect_eq "... refused from the pod network" "$(get "$POD" 8090)" "refused"
expect_eq "both deleted, nothing left under --root" "$(ls "$RT" | grep -v '^sessions$')" ""
finish
