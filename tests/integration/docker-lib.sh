# A dockerd of a test's own for the Docker suites (test-docker*.sh): its own
# data and exec roots, socket, vfs storage, no iptables, no default bridge,
# and two runtimes in its daemon.json, `sandcap` (the policy $T/policy.json
# through runtimeArgs, `--policy FILE`) and `sandcap-plain`. Sourced after
# lib.sh; the test writes $T/policy.json before docker_start.
need_root
command -v dockerd >/dev/null && command -v docker >/dev/null ||
	skip_all "needs docker (apt: docker.io)"
command -v python3 >/dev/null || skip_all "needs python3"
command -v ip >/dev/null || skip_all "needs ip (iproute2)"
BB=$(command -v busybox) || skip_all "needs busybox (busybox-static)"
file -L "$BB" 2>/dev/null | grep -q 'statically linked' || skip_all "needs a static busybox"
. "$(dirname "${BASH_SOURCE[0]}")/../../tools/fixtures.sh"

R=$(dirname "$SANDCAP")/sandcap-runc
# Debian's client, whatever else is first on PATH: the daemon is Debian's.
DOCKER=/usr/bin/docker
[ -x "$DOCKER" ] || DOCKER=$(command -v docker)
export DOCKER_HOST="unix://$T/docker.sock" DOCKER_CONFIG="$T/cli"
dk() { timeout 120 "$DOCKER" "$@"; }
dpid=

# docker_image [FILE...]: $T/img.tar, a static busybox root with /bin only
# (no /etc, /tmp, /run, /mnt), each FILE copied into its /bin.
docker_image() {
	mkdir -p "$T/img/bin"
	cp "$BB" "$T/img/bin/busybox"
	for a in sh id cat echo sleep tty tr wget grep ls touch head tail seq nc [ test wc ln sed uname httpd; do
		ln -s busybox "$T/img/bin/$a"
	done
	[ $# -eq 0 ] || cp "$@" "$T/img/bin/"
	tar -C "$T/img" -cf "$T/img.tar" .
}

# docker_start [NAME=POLICY_FILE...]: dockerd up (skips the test when it
# does not start), with a runtime NAME more for each policy given, and the
# image imported as sandcap-bb:1 (a check).
docker_start() {
	local more= nv
	for nv in "$@"; do
		more+=",
	    \"${nv%%=*}\": {\"path\": \"$R\", \"runtimeArgs\": [\"--policy\", \"${nv#*=}\"]}"
	done
	cat > "$T/daemon.json" <<-EOF
	{
	  "runtimes": {
	    "sandcap": {"path": "$R", "runtimeArgs": ["--policy", "$T/policy.json"]},
	    "sandcap-plain": {"path": "$R"}$more
	  },
	  "exec-opts": ["native.cgroupdriver=cgroupfs"]
	}
	EOF
	dockerd --config-file "$T/daemon.json" --data-root "$T/data" --exec-root "$T/exec" \
		--pidfile "$T/docker.pid" -H "$DOCKER_HOST" --storage-driver vfs --iptables=false \
		--ip-masq=false --bridge=none > "$T/dockerd.log" 2>&1 &
	dpid=$!
	for _ in $(seq 300); do dk info >/dev/null 2>&1 && break; sleep 0.1; done
	dk info >/dev/null 2>&1 || { tail -20 "$T/dockerd.log" >&2; skip_all "dockerd did not start"; }
	check "docker import of the busybox root" dk import "$T/img.tar" sandcap-bb:1
}

# docker_cleanup [NETWORK...]: for the EXIT trap, whatever the test left.
docker_cleanup() {
	if [ -n "$dpid" ]; then
		dk rm -f $(dk ps -aq 2>/dev/null) >/dev/null 2>&1
		[ $# -eq 0 ] || dk network rm "$@" >/dev/null 2>&1
		kill "$dpid" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
		dpid=
	fi
	grep -o " $T[^ ]*" /proc/self/mountinfo | sort -r | xargs -r -n1 umount -l 2>/dev/null
}

# docker_stop_and_check: dockerd stopped, then checks that nothing of it
# is left (its containers' state under sandcap-runc's root, processes,
# mounts, cgroups). The test stops its own servers (they name $T) first.
docker_stop_and_check() {
	expect_eq "no container state under sandcap-runc's root" \
		"$(find "$T/exec/runtime-runc/moby" -mindepth 1 ! -path '*/moby/sessions' 2>/dev/null)" ""
	kill "$dpid"
	for _ in $(seq 100); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
	check "dockerd stopped" bash -c "! kill -0 $dpid 2>/dev/null"
	dpid=
	# containerd, its shims and the container supervisors all name $T.
	for _ in $(seq 50); do pgrep -f "$T/" >/dev/null || break; sleep 0.1; done
	expect_eq "no process of this test's dockerd, containerd, shims or containers is left" \
		"$(pgrep -af "$T/")" ""
	# dockerd makes its data root a private mount of its own where the
	# root's mounts are shared (as on a fresh Debian root), and leaves it:
	# not ours.
	mountpoint -q "$T/data" && umount "$T/data"
	# libnetwork unmounts a network namespace it bound after the container's end
	for _ in $(seq 50); do grep -q " $T" /proc/self/mountinfo || break; sleep 0.1; done
	expect_eq "no mount under the test's directories" \
		"$(grep " $T" /proc/self/mountinfo | cut -d' ' -f5,9)" ""
	local left= i
	for i in $(grep -o 'container=[0-9a-f]\{64\}' "$T/dockerd.log" | cut -d= -f2 | sort -u); do
		ls -d /sys/fs/cgroup/*/docker/"$i" /sys/fs/cgroup/docker/"$i" 2>/dev/null && left=1
	done
	check "no cgroup of its containers" test -z "$left"
}
