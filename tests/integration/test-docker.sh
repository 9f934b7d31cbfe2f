#!/usr/bin/env bash
# Docker (Debian's docker.io 20.10) on sandcap-runc: a dockerd of this
# test's own (its own data and exec roots, socket, vfs storage, no iptables,
# no default bridge) with two runtimes in its daemon.json, `sandcap` (a
# policy named by runtimeArgs, `--policy FILE`) and `sandcap-plain`, and an
# image imported from a static busybox root that has nothing but /bin.
# Asserts: `docker run` runs as the agent and exits with the command's
# status (a SIGKILL's 137, a background child's stdout not waited for);
# -t gets a terminal; --init runs docker-init (a link on the host);
# --memory 64m bounds the sandbox, whose pid 1 is State.Pid (docker stats
# and top read its cgroup and processes); -v to a mount point the image lacks
# works and leaves the image as it was; exec, logs, stop, kill and rm -f;
# on a user-defined bridge network (docker's libnetwork-setkey hook) the
# container supervisor gets the container's address, the agent lo only,
# and the runtimeArgs' policy decides what the proxy reaches from there;
# `-p` to a port a runtime's policy serves on 0.0.0.0 reaches the agent's
# server through docker-proxy, recorded as net.inbound, and a published
# port it does not serve gets nothing; nothing is left behind once
# dockerd has stopped.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/docker-lib.sh"

NET=sc-dk-$$
SUBNET=10.231.9.0/24
ADDR=10.231.9.1 # the bridge's host side, where the server listens
PORT=$(free_port 2)
srv=
cleanup() {
	docker_cleanup "$NET"
	[ -n "$srv" ] && kill $srv 2>/dev/null && wait $srv 2>/dev/null
	cleanup_dir
}
trap cleanup EXIT

docker_image
mkdir -p "$T/vol" "$T/www" "$T/web"
echo from-the-host > "$T/vol/in"
chmod 777 "$T/vol"
echo "past-the-proxy" > "$T/www/index.html"
echo '{"net": {"egress": [{"host": "'$ADDR'", "ports": ['$PORT']}], "allow_private": ["'$SUBNET'"]}}' \
	> "$T/policy.json"
echo '{"net": {"listen": true, "serve": [{"port": 8080, "bind": "0.0.0.0"}]}}' > "$T/web.json"
echo "served-by-the-agent" > "$T/web/index.html"
chmod -R a+rX "$T/web"

docker_start "sandcap-web=$T/web.json"

# ---- run: the agent, the command's status ----
out=$(dk run --rm --runtime sandcap sandcap-bb:1 id 2>&1)
expect_eq "docker run --runtime sandcap: the image's user, root by name (no capability: below)" "$out" "uid=0 gid=0"
dk run --rm --runtime sandcap sandcap-bb:1 sh -c 'exit 7' >/dev/null 2>&1
expect_eq "... exits with the command's status" "$?" 7
dk run --rm --runtime sandcap sandcap-bb:1 sh -c 'kill -9 $$' >/dev/null 2>&1
expect_eq "... a command killed by SIGKILL: 128+9" "$?" 137
t0=$(date +%s%N)
out=$(dk run --rm --runtime sandcap sandcap-bb:1 sh -c 'sleep 25 & echo main; exit 3' 2>&1)
rc_=$? t1=$(date +%s%N)
expect_eq "... a background child holding stdout: the main process's 3, its output" "$rc_ $out" "3 main"
check "... at once (within 5 s, not the child's 25)" test $(( (t1 - t0) / 1000000000 )) -lt 5
out=$(dk run --rm --runtime sandcap sandcap-bb:1 sh -c 'grep -E "^(NoNewPrivs|Seccomp|CapEff):" /proc/self/status | tr -s "\t" " " | tr "\n" " "' 2>&1)
expect_eq "... inside sandcap's walls" "$out" "CapEff: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 "
out=$(dk run --rm --read-only --runtime sandcap sandcap-bb:1 sh -c 'touch /bin/x 2>&1; ls /' 2>&1)
expect_match "--read-only: the root is read-only" "$out" "Read-only file system"
expect_match "... with the mount points the image lacks (/tmp, /run, /etc's files)" "$(echo $out)" "etc .*run .*tmp"
out=$(dk run --rm --runtime sandcap sandcap-bb:1 sh -c 'echo w > /bin/x && cat /bin/x; touch /x 2>&1' 2>&1)
expect_match "without --read-only: the root takes writes (in a private layer)" "$out" "^w"$'\n'
expect_match "... but no new name directly in / (Landlock)" "$out" "touch: /x: Permission denied"

# ---- -t ----
out=$(timeout 60 "$DOCKER" run --rm -t --runtime sandcap sandcap-bb:1 tty < /dev/null 2>&1 | tr -d '\r')
expect_eq "run -t: a terminal of the sandbox's devpts" "$out" "/dev/pts/0"

# ---- --init: docker-init is a link to tini-static on the host ----
out=$(dk run --rm --runtime sandcap --init sandcap-bb:1 sh -c 'cat /proc/[0-9]*/cmdline | tr "\0" " "' 2>/dev/null)
expect_match "--init: docker-init runs the command" "$out" "/sbin/docker-init -- sh -c"

# ---- --memory 64m (docker's swap is twice it) ----
id=$(dk run -d --runtime sandcap --memory 64m sandcap-bb:1 sleep 60 2>&1)
expect_match "--memory 64m: runs" "$id" '^[0-9a-f]{64}$'
lim=$(cat /sys/fs/cgroup/memory/docker/"$id"/*/memory.limit_in_bytes \
	/sys/fs/cgroup/docker/"$id"/*/memory.max 2>/dev/null | sort -u | head -1)
expect_eq "... the sandbox's cgroup, nested in docker's, is bounded to 64 MiB" "$lim" 67108864
# State.Pid is the sandbox's pid 1: docker stats reads its own cgroup,
# docker top lists its processes.
out=$(dk stats --no-stream --format '{{.MemUsage}} {{.PIDs}}' "$id" 2>&1)
expect_match "docker stats: the sandbox's memory against its 64 MiB, and its pids" "$out" '^[0-9.]+[KMG]i?B / 64MiB [1-9][0-9]*$'
out=$(dk top "$id" 2>&1)
expect_match "docker top: the sandbox's processes" "$out" 'sleep 60'
dk rm -f "$id" >/dev/null 2>&1

# ---- -v to a mount point the image lacks ----
dk run --name vol --runtime sandcap -v "$T/vol:/data/in" sandcap-bb:1 sh -c 'cat /data/in/in; echo from-the-box > /data/in/out' > "$T/vol.out" 2>&1
expect_eq "-v to /data/in, absent from the image: read" "$(cat "$T/vol.out")" "from-the-host"
expect_eq "... and written to" "$(cat "$T/vol/out" 2>/dev/null)" "from-the-box"
# vfs gives each container a copy of the image: that copy is its root.
root="$T/data/vfs/dir/$(cat "$T/data/image/vfs/layerdb/mounts/$(dk inspect -f '{{.Id}}' vol)/mount-id" 2>/dev/null)"
check "... the container's root was not written (no /data, /tmp, /run in it)" \
	test -d "$root/bin" -a ! -e "$root/data" -a ! -e "$root/tmp" -a ! -e "$root/run"
dk rm -f vol >/dev/null 2>&1

# ---- exec, logs, stop, kill, rm -f ----
dk run -d --name long --runtime sandcap sandcap-bb:1 sh -c 'echo to-the-log; exec sleep 60' >/dev/null 2>&1
expect_eq "exec: the container's user" "$(dk exec long id 2>&1)" "uid=0 gid=0"
dk exec long sh -c 'exit 5' >/dev/null 2>&1
expect_eq "exec: its status" "$?" 5
for _ in $(seq 50); do dk logs long 2>&1 | grep -q to-the-log && break; sleep 0.1; done
expect_eq "logs" "$(dk logs long 2>&1)" "to-the-log"
start=$(date +%s)
dk stop -t 20 long >/dev/null 2>&1
expect_eq "stop: exit 0" "$?" 0
check "... by SIGTERM, not after the 20 s grace" test $(($(date +%s) - start)) -lt 15
expect_eq "... the container exited" "$(dk inspect -f '{{.State.Status}} {{.State.ExitCode}}' long)" "exited 143"
dk run -d --name killme --runtime sandcap sandcap-bb:1 sleep 60 >/dev/null 2>&1
dk kill killme >/dev/null 2>&1
expect_eq "kill: exit 0" "$?" 0
for _ in $(seq 50); do [ "$(dk inspect -f '{{.State.Status}}' killme)" = exited ] && break; sleep 0.1; done
expect_eq "... the container was killed" "$(dk inspect -f '{{.State.Status}} {{.State.ExitCode}}' killme)" "exited 137"
dk run -d --name forced --runtime sandcap sandcap-bb:1 sleep 60 >/dev/null 2>&1
dk rm -f forced long killme >/dev/null 2>&1
expect_eq "rm -f of a running container (and the stopped ones)" "$?" 0
expect_eq "... none is left" "$(dk ps -aq)" ""

# ---- a bridge network (libnetwork-setkey) and the runtimeArgs' policy ----
dk network create --driver bridge --subnet "$SUBNET" --gateway "$ADDR" "$NET" >/dev/null 2>&1
check "a user-defined bridge network" dk network inspect "$NET"
python3 -m http.server --bind "$ADDR" --directory "$T/www" "$PORT" > "$T/srv.log" 2>&1 &
srv=$!
python3 -m http.server --bind "$ADDR" --directory "$T/www" "$((PORT + 1))" > "$T/srv2.log" 2>&1 &
srv="$srv $!"
for _ in $(seq 50); do python3 -c "import socket; socket.create_connection(('$ADDR', $PORT), 1)" 2>/dev/null && break; sleep 0.1; done
dk run -d --name net --runtime sandcap --network "$NET" sandcap-bb:1 sleep 60 >/dev/null 2>&1
# State.Pid is the sandbox's pid 1; the netns docker configured through the
# hook is its supervisors' (the session's, where the proxy's upstream side is).
pid1=$(dk inspect -f '{{.State.Pid}}' net)
sup=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' \
	"$T/exec/runtime-runc/moby/sessions/$(dk inspect -f '{{.Id}}' net)/meta.json" 2>/dev/null)
ip4=$(dk inspect -f "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}" net)
expect_match "the container has an address on it" "$ip4" '^10\.231\.9\.'
check "... in its session's supervisor's network namespace (the hook's), not the host's" \
	test "$(readlink /proc/"${sup:-0}"/ns/net)" != "$(readlink /proc/1/ns/net)" -a \
	-n "$(nsenter -t "${sup:-0}" -n ip -4 -o addr show 2>/dev/null | grep " $ip4/")"
expect_eq "State.Pid: the sandbox's pid 1, in the agent's own netns (lo only)" \
	"$(grep -E '^NSpid:' /proc/"${pid1:-0}"/status 2>/dev/null | awk '{print $NF}') $(nsenter -t "${pid1:-0}" -n cat /proc/net/dev 2>/dev/null | awk -F: 'NR > 2 {gsub(/ /, "", $1); print $1}')" "1 lo"
out=$(dk exec net cat /proc/net/dev 2>&1 | sed -n '3,$p' | awk -F: '{gsub(/ /, "", $1); print $1}' | tr '\n' ' ')
expect_eq "the agent's own netns has lo only" "$out" "lo "
out=$(dk exec net wget -q -O - "http://$ADDR:$PORT/" 2>&1)
expect_eq "the runtimeArgs' policy: its egress rule lets the proxy reach the server" "$out" "past-the-proxy"
check "... from the container's address" grep -q "^$ip4 - .*GET / " "$T/srv.log"
out=$(dk exec net wget -q -O - "http://$ADDR:$((PORT + 1))/" 2>&1)
expect_no_match "... and nothing it does not allow" "$out" "past-the-proxy"
check "... whose server saw no request" bash -c "! grep -q GET '$T/srv2.log'"
dk run -d --name plain --runtime sandcap-plain --network "$NET" sandcap-bb:1 sleep 60 >/dev/null 2>&1
out=$(dk exec plain wget -q -O - "http://$ADDR:$PORT/" 2>&1)
expect_match "the runtime without --policy: no egress at all" "$out" "Network is unreachable"

# ---- serving: docker run -p to the port the runtime's policy serves ----
# docker-proxy listens on the host and connects to the container's address
# on the bridge, where the supervisor's listener (0.0.0.0 of the
# container's netns) takes it into the sandbox; 8081, published but not
# served, where the agent listens too, gets nothing.
HTTP_GET=$(cd "$(dirname "$0")/../helpers" && pwd)/http-get.py
get() { python3 "$HTTP_GET" "$@"; } # ADDR PORT: GET /, as a kubelet's HTTP probe
HP=$(free_port 2)
dk run -d --name web --runtime sandcap-web --network "$NET" -p "127.0.0.1:$HP:8080" \
	-p "127.0.0.1:$((HP + 1)):8081" -v "$T/web:/www:ro" sandcap-bb:1 \
	sh -c 'httpd -p 8081 -h /www; exec httpd -f -p 8080 -h /www' > "$T/web.id" 2>&1
expect_match "docker run -p on a runtime whose policy serves 8080 on 0.0.0.0" "$(cat "$T/web.id")" '^[0-9a-f]{64}$'
for _ in $(seq 50); do [ "$(get 127.0.0.1 "$HP")" = served-by-the-agent ] && break; sleep 0.1; done
expect_eq "-p $HP:8080: docker-proxy reaches the agent's server" "$(get 127.0.0.1 "$HP")" "served-by-the-agent"
wip=$(dk inspect -f "{{(index .NetworkSettings.Networks \"$NET\").IPAddress}}" web)
expect_eq "... as does the host at the container's address" "$(get "$wip" 8080)" "served-by-the-agent"
expect_no_match "-p $((HP + 1)):8081, published but not served: nothing answers" \
	"$(get 127.0.0.1 "$((HP + 1))")" "served-by-the-agent"
expect_eq "... the container's address:8081 is refused" "$(get "$wip" 8081)" "refused"
wa=$("$R" --root "$T/exec/runtime-runc/moby" state "$(cat "$T/web.id")" 2>/dev/null |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["annotations"]["org.sandcap.audit"])')
for _ in $(seq 50); do [ "$(grep -c '"event":"net.inbound".*"result":"ok"' "$wa" 2>/dev/null)" -ge 2 ] && break; sleep 0.1; done
expect_match "the audit log: net.inbound, from the bridge's side, port 8080" \
	"$(grep '"event":"net.inbound"' "$wa" 2>/dev/null | grep '"result":"ok"' | tail -1)" \
	"\"bytes_in\":29,\"bytes_out\":[1-9][0-9]+,.*\"host_port\":8080,\"peer\":\"$ADDR:[0-9]+\",\"port\":8080,\"result\":\"ok\""
check "... none for 8081" bash -c "! grep -q '\"event\":\"net.inbound\".*\"port\":8081' '$wa'"
dk rm -f net plain web >/dev/null 2>&1
dk network rm "$NET" >/dev/null 2>&1

# ---- nothing left behind ----
kill $srv 2>/dev/null && wait $srv 2>/dev/null
srv=
docker_stop_and_check
check "no address of its network on the host" bash -c "! ip -4 -o addr show | grep -q ' $ADDR/'"
finish
