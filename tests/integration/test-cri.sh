#!/usr/bin/env bash
# A Kubernetes pod through containerd's real CRI plugin, driven over its
# gRPC API as a kubelet drives it (tests/helpers/cri-client.py), with
# sandcap-runc as the runtime (the runc v2 shim's BinaryName): containerd of
# its own (root, state, socket under $T), CNI's bridge, host-local and
# loopback plugins on a private subnet, a pause and an app image built here
# from a static busybox and imported. The requests are a kubelet's for a
# restricted pod (volumes, /etc/hosts, /dev/termination-log, limits,
# oom_score_adj, huge-page limits of 0, RuntimeDefault seccomp, no
# capability). Asserts: RunPodSandbox, CreateContainer and StartContainer
# succeed; the app container is in a sandcap sandbox (ExecSync and its CRI
# log: the pod's runAsUser 65532, Seccomp 2, NoNewPrivs 1, CapEff 0, lo only); its volumes,
# termination message, oom_score_adj and memory limit are what was asked;
# its egress through sandcap's proxy, as the org.sandcap.policy annotation
# allows, reaches a server on the bridge's host side from the pod's
# address, and a direct connect reaches nothing; the port it serves on the
# pod's addresses (net.serve, "bind": "0.0.0.0") is reached from the host
# at the pod's IP, as a kubelet's probe, recorded as net.inbound, and one
# its agent listens on undeclared is refused; stop and removal leave no
# container state, process, mount, network namespace, cgroup or CNI cache
# entry behind, and the audit log is sealed.
. "$(dirname "$0")/lib.sh"
need_root
for c in containerd ctr containerd-shim-runc-v2 protoc ip; do
	command -v $c >/dev/null || skip_all "needs $c (tools/install-deps test)"
done
for p in bridge host-local loopback; do
	[ -x /usr/lib/cni/$p ] || skip_all "needs /usr/lib/cni/$p (containernetworking-plugins)"
done
# The client needs grpc; Debian's python3-grpcio is /usr/bin/python3's.
PY=
for p in python3 /usr/bin/python3; do
	$p -c 'import grpc, google.protobuf' 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || skip_all "needs python3-grpcio and python3-protobuf"
BB=$(command -v busybox) || skip_all "needs busybox (busybox-static)"
file -L "$BB" 2>/dev/null | grep -q 'statically linked' || skip_all "needs a static busybox"

R=$(cd "$(dirname "$SANDCAP")" && pwd)/sandcap-runc
CLIENT=$(cd "$(dirname "$0")/../helpers" && pwd)/cri-client.py
export CRI_PROTO_OUT="$T/proto"
C="$T/ctd"
SOCK="$C/c.sock"
BR=sccri$$
NET=10.231.9
GW=$NET.1
PORT=8089
cri() { "$PY" "$CLIENT" "$SOCK" "$@"; }
ctd=
srv=
pod=
netns_before=$(ls /var/run/netns 2>/dev/null | sort)
# CNI's cache (containerd's default): removed after if this made it.
cni_cache=/var/lib/cni
[ -e $cni_cache ] && cni_cache=
cleanup() {
	if [ -n "$pod" ]; then
		cri StopPodSandbox "{\"podSandboxId\": \"$pod\"}" >/dev/null 2>&1
		cri RemovePodSandbox "{\"podSandboxId\": \"$pod\"}" >/dev/null 2>&1
	fi
	for p in $srv $ctd; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	# What a failed removal left: the shims and supervisors of this containerd.
	for p in $(pgrep -f -- "$SOCK|$C/runc"); do kill -9 "$p" 2>/dev/null; done
	for n in $(ls /var/run/netns 2>/dev/null); do
		case $n in cni-*) printf '%s\n' "$netns_before" | grep -qx "$n" || ip netns del "$n" ;; esac
	done
	ip link del "$BR" 2>/dev/null
	[ -n "$cni_cache" ] && rm -rf "$cni_cache"
	grep -o " $T[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
	cleanup_dir
}
trap cleanup EXIT

# ---- two images from one busybox root: a pause (sleeps) and an app ----
root="$T/rootfs"
mkdir -p "$root"/{bin,etc,proc,dev,sys,tmp,run} "$root/var/run/secrets/kubernetes.io/serviceaccount"
cp "$BB" "$root/bin/busybox"
for a in sh cat echo sleep grep id hostname wget true httpd; do ln -s busybox "$root/bin/$a"; done
mkdir -p "$root/www"
echo "served-from-the-pod-$$" > "$root/www/index.html"
# The mount points of the files containerd's CRI binds (the root is read-only).
: > "$root/etc/hosts"
: > "$root/etc/hostname"
: > "$root/etc/resolv.conf"
mkimage() { # mkimage NAME ARCHIVE CMD-JSON: an OCI archive of $root
	"$PY" - "$root" "$T/$2" "$1" "$3" <<'PYEOF'
import hashlib, io, json, sys, tarfile
root, out, name, cmd = sys.argv[1:]
blobs = {}
def blob(data):
    d = hashlib.sha256(data).hexdigest()
    blobs[d] = data
    return "sha256:" + d, len(data)
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
    t.add(root, arcname=".")
layer = buf.getvalue()
ldig, lsize = blob(layer)
cfg = {"architecture": "amd64", "os": "linux",
       "config": {"Cmd": json.loads(cmd), "Env": ["PATH=/bin"], "WorkingDir": "/"},
       "rootfs": {"type": "layers", "diff_ids": [ldig]}}
cdig, csize = blob(json.dumps(cfg).encode())
man = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
       "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cdig, "size": csize},
       "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": ldig, "size": lsize}]}
mdig, msize = blob(json.dumps(man).encode())
index = {"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
         "digest": mdig, "size": msize, "platform": {"architecture": "amd64", "os": "linux"},
         "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": "test"}}]}
with tarfile.open(out, "w") as t:
    def add(n, data):
        i = tarfile.TarInfo(n)
        i.size = len(data)
        t.addfile(i, io.BytesIO(data))
    add("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
    add("index.json", json.dumps(index).encode())
    for d, data in blobs.items():
        add("blobs/sha256/" + d, data)
PYEOF
}
PAUSE=docker.io/library/sandcap-pause:test
APP=docker.io/library/sandcap-app:test
mkimage $PAUSE pause.tar '["sleep", "3600"]'
mkimage $APP app.tar '["sleep", "3600"]'

# ---- containerd with its CRI plugin: the runtime sandcap-runc, CNI ----
mkdir -p "$C/cni/conf" "$C/cni/ipam" "$C/runc"
cat > "$C/cni/conf/10-sandcap.conflist" <<JSON
{"cniVersion": "0.4.0", "name": "sandcap-test", "plugins": [
  {"type": "bridge", "bridge": "$BR", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": "$C/cni/ipam",
            "ranges": [[{"subnet": "$NET.0/24", "gateway": "$GW"}]]}}]}
JSON
cat > "$C/config.toml" <<EOF
version = 2
root = "$C/root"
state = "$C/state"
[grpc]
  address = "$SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$C/cni/conf"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "sandcap"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.sandcap]
      runtime_type = "io.containerd.runc.v2"
      pod_annotations = ["org.sandcap.*"]
      container_annotations = ["org.sandcap.*"]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.sandcap.options]
        BinaryName = "$R"
        Root = "$C/runc"
        SystemdCgroup = false
EOF
containerd --config "$C/config.toml" > "$C/log" 2>&1 &
ctd=$!
for i in $(seq 100); do cri Version >/dev/null 2>&1 && break; sleep 0.1; done
out=$(cri Version 2>&1)
expect_match "containerd's CRI answers over its gRPC API" "$out" '"runtimeApiVersion": "v1'
ctr=(ctr -a "$SOCK" -n k8s.io)
for i in pause app; do
	"${ctr[@]}" images import --snapshotter native "$T/$i.tar" > "$T/import-$i.log" 2>&1
	expect_eq "the $i image is imported" "$?" 0
done

# ---- the pod ----
# As a kubelet asks: the pod's cgroup parent, its DNS, RuntimeDefault seccomp.
podcfg=$(cat <<JSON
{"metadata": {"name": "web", "uid": "uid-$$", "namespace": "default", "attempt": 0},
 "hostname": "web-$$", "logDirectory": "$T/logs",
 "dnsConfig": {"servers": ["$GW"], "searches": ["default.svc.cluster.local"], "options": ["ndots:5"]},
 "labels": {"io.kubernetes.pod.name": "web"},
 "linux": {"cgroupParent": "/kubepods/burstable/poduid-$$",
           "securityContext": {"namespaceOptions": {"network": "POD", "pid": "CONTAINER", "ipc": "POD"},
                               "seccomp": {"profileType": "RuntimeDefault"}}}}
JSON
)
mkdir -p "$T/logs"
out=$(cri RunPodSandbox "{\"config\": $podcfg}" 2>&1)
expect_match "RunPodSandbox: the pause container runs on sandcap-runc" "$out" 'podSandboxId'
pod=$(printf '%s' "$out" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["podSandboxId"])' 2>/dev/null)
[ -n "$pod" ] || { echo "# $out"; tail -20 "$C/log" | sed 's/^/# /'; }
st=$(cri PodSandboxStatus "{\"podSandboxId\": \"$pod\"}" 2>&1)
podip=$(printf '%s' "$st" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["status"]["network"]["ip"])' 2>/dev/null)
expect_match "the pod has an address of the CNI bridge's subnet" "$podip" "^$NET\\."

# ---- a server on the bridge's host side, and one on a port not allowed ----
mkdir -p "$T/www"
echo "served-on-the-pod-network" > "$T/www/index.html"
python3 -m http.server --bind "$GW" --directory "$T/www" "$PORT" > "$T/srv.log" 2>&1 &
srv=$!
python3 -m http.server --bind "$GW" --directory "$T/www" "$((PORT + 1))" > "$T/srv2.log" 2>&1 &
srv="$srv $!"
for i in $(seq 50); do
	python3 -c "import socket; socket.create_connection(('$GW', $PORT), 1)" 2>/dev/null && break
	sleep 0.1
done

# ---- the app container ----
# What a kubelet sends for a container of a restricted pod: its volumes
# (a service account's, read-only), its /etc/hosts and /dev/termination-log,
# requests and limits with the oom_score_adj of a burstable pod (and a
# huge-page limit of 0 for each size, as the kubelet gives every container), no
# capability, RuntimeDefault seccomp, the default masked and read-only paths.
mkdir -p "$T/sa"
echo "token-$$" > "$T/sa/token"
printf '127.0.0.1\tlocalhost\n%s\tweb-%s\n' "$podip" "$$" > "$T/etc-hosts"
: > "$T/termination-log"
pol="{\\\"net\\\": {\\\"listen\\\": true, \\\"serve\\\": [{\\\"port\\\": 8080, \\\"bind\\\": \\\"0.0.0.0\\\"}], \\\"egress\\\": [{\\\"host\\\": \\\"$GW\\\", \\\"ports\\\": [$PORT]}], \\\"allow_private\\\": [\\\"$NET.0/24\\\"]}}"
ccfg=$(cat <<JSON
{"metadata": {"name": "app", "attempt": 0}, "image": {"image": "$APP"},
 "command": ["sh", "-c", "grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status; id -u; httpd -p 8080 -h /www; httpd -p 8081 -h /www; exec sleep 3600"],
 "envs": [{"key": "KUBERNETES_SERVICE_HOST", "value": "10.96.0.1"}, {"key": "KUBERNETES_SERVICE_PORT", "value": "443"}],
 "mounts": [{"containerPath": "/var/run/secrets/kubernetes.io/serviceaccount", "hostPath": "$T/sa", "readonly": true},
            {"containerPath": "/etc/hosts", "hostPath": "$T/etc-hosts"},
            {"containerPath": "/dev/termination-log", "hostPath": "$T/termination-log"}],
 "logPath": "app.log",
 "labels": {"io.kubernetes.container.name": "app"},
 "annotations": {"org.sandcap.policy": "$pol"},
 "linux": {"resources": {"cpuPeriod": 100000, "cpuQuota": 50000, "cpuShares": 512,
                         "memoryLimitInBytes": 134217728, "memorySwapLimitInBytes": 134217728,
                         "oomScoreAdj": 937,
                         "hugepageLimits": [{"pageSize": "2MB", "limit": 0}, {"pageSize": "1GB", "limit": 0}]},
           "securityContext": {"capabilities": {"dropCapabilities": ["ALL"]},
              "namespaceOptions": {"network": "POD", "pid": "CONTAINER", "ipc": "POD"},
              "runAsUser": {"value": 65532}, "readonlyRootfs": false, "noNewPrivs": true,
              "seccomp": {"profileType": "RuntimeDefault"},
              "maskedPaths": ["/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys",
                              "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                              "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
                              "/sys/devices/virtual/powercap"],
              "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                "/proc/sysrq-trigger"]}}}
JSON
)
out=$(cri CreateContainer "{\"podSandboxId\": \"$pod\", \"config\": $ccfg, \"sandboxConfig\": $podcfg}" 2>&1)
expect_match "CreateContainer: the app container is created" "$out" 'containerId'
cid=$(printf '%s' "$out" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["containerId"])' 2>/dev/null)
[ -n "$cid" ] || echo "# $out"
out=$(cri StartContainer "{\"containerId\": \"$cid\"}" 2>&1)
expect_eq "StartContainer" "$?" 0
[ -z "$out" ] || [ "$out" = "{}" ] || echo "# $out"
out=$(cri ContainerStatus "{\"containerId\": \"$cid\"}" 2>&1)
expect_match "ContainerStatus: running" "$out" '"state": "CONTAINER_RUNNING"'
# The sandbox's processes and cgroups, to look for after its removal.
pids=$("$R" --root "$C/runc/k8s.io" ps --format json "$cid" 2>/dev/null |
	"$PY" -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin))))')
# Those sandcap made (a "sandcap-" component; the test run's own cgroup,
# "sandcap.tests-N", holds them and stays).
cgs=$(for p in $pids; do
	sed -n 's|^[0-9]*:\([^:]*\):\(/.*\)|\1 \2|p' /proc/$p/cgroup 2>/dev/null | grep '/sandcap-'
done | sort -u | while read -r ctl path; do
	ctl=${ctl#name=}
	echo "/sys/fs/cgroup/${ctl:-unified}$path"
done)
check "the app container's processes are in cgroups of sandcap's" test -n "$cgs"
audit=$("$R" --root "$C/runc/k8s.io" state "$cid" 2>/dev/null |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["annotations"]["org.sandcap.audit"])')

out=$(cri ExecSync "{\"containerId\": \"$cid\", \"cmd\": [\"sh\", \"-c\", \"id -u; grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status; exit 3\"], \"timeout\": 20}" 2>&1)
expect_eq "ExecSync: the command's exit code" "$?" 3
expect_eq "ExecSync: as the pod's runAsUser" "$(printf '%s\n' "$out" | grep -x 65532)" 65532
expect_match "ExecSync: Seccomp 2" "$out" 'Seccomp:[[:space:]]+2'
expect_match "ExecSync: NoNewPrivs 1" "$out" 'NoNewPrivs:[[:space:]]+1'
expect_match "ExecSync: no capability" "$out" 'CapEff:[[:space:]]+0000000000000000'
ex() { # ex SH-COMMAND: its output (both streams) in the app container
	cri ExecSync "{\"containerId\": \"$cid\", \"cmd\": [\"sh\", \"-c\", \"$1\"], \"timeout\": 20}" 2>&1
}
expect_eq "the service account's volume is there" \
	"$(ex 'cat /var/run/secrets/kubernetes.io/serviceaccount/token')" "token-$$"
expect_match "... read-only" "$(ex 'echo x > /var/run/secrets/kubernetes.io/serviceaccount/token 2>&1')" \
	'Read-only file system'
expect_match "the kubelet's /etc/hosts is the container's" "$(ex 'cat /etc/hosts')" "web-$$"
expect_match "readonlyRootfs false, runAsUser 65532: the image's root-owned /bin is not its to write" \
	"$(ex 'echo x > /bin/x 2>&1')" 'Permission denied'
ex 'echo bye-from-the-app > /dev/termination-log' >/dev/null
expect_eq "/dev/termination-log: what the process writes there reaches the kubelet's file" \
	"$(cat "$T/termination-log")" "bye-from-the-app"
expect_eq "oomScoreAdj of a burstable pod (937): set" "$(ex 'cat /proc/self/oom_score_adj')" 937
sup=$("$R" --root "$C/runc/k8s.io" state "$pod" 2>/dev/null |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
expect_eq "the pause container's -998: 0 (the agent is not favoured)" \
	"$(cat "/proc/$sup/oom_score_adj" 2>/dev/null)" 0
mem=$(for d in $cgs; do cat "$d/memory.limit_in_bytes" "$d/memory.max" 2>/dev/null; done | head -1)
expect_eq "memoryLimitInBytes: the sandbox's cgroup limit" "$mem" 134217728
for i in $(seq 50); do grep -q 'CapEff' "$T/logs/app.log" 2>/dev/null && break; sleep 0.1; done
log=$(cat "$T/logs/app.log" 2>/dev/null)
expect_match "the container's log (CRI format) has its own output: Seccomp 2" "$log" 'stdout F Seccomp:[[:space:]]+2'
expect_match "... as the pod's runAsUser" "$log" 'stdout F 65532'
expect_match "... and no capability" "$log" 'stdout F CapEff:[[:space:]]+0000000000000000'

out=$(cri ExecSync "{\"containerId\": \"$cid\", \"cmd\": [\"wget\", \"-q\", \"-O\", \"-\", \"http://$GW:$PORT/\"], \"timeout\": 20}" 2>&1)
expect_eq "egress through sandcap's proxy reaches the server on the pod network" "$out" "served-on-the-pod-network"
check "... leaving from the pod's address" grep -q "^$podip - .*GET / " "$T/srv.log"
out=$(cri ExecSync "{\"containerId\": \"$cid\", \"cmd\": [\"wget\", \"-q\", \"-O\", \"-\", \"http://$GW:$((PORT + 1))/\"], \"timeout\": 20}" 2>&1)
expect_no_match "through the proxy, a port the policy does not allow: refused" "$out" "served-on-the-pod-network"
out=$(cri ExecSync "{\"containerId\": \"$cid\", \"cmd\": [\"sh\", \"-c\", \"unset http_proxy HTTP_PROXY; wget -q -T 3 -O - http://$GW:$((PORT + 1))/ 2>&1\"], \"timeout\": 20}" 2>&1)
expect_no_match "a direct connect to the server gets nothing" "$out" "served-on-the-pod-network"
check "... which saw no request at all" bash -c "! grep -q GET '$T/srv2.log'"
out=$(cri ExecSync "{\"containerId\": \"$cid\", \"cmd\": [\"cat\", \"/proc/net/dev\"], \"timeout\": 20}" 2>&1)
expect_eq "the agent's netns has no interface but lo" \
	"$(printf '%s\n' "$out" | sed -n '3,$p' | awk -F: '{gsub(/ /, "", $1); print $1}' | tr '\n' ' ')" "lo "

# ---- serving: the host reaches the pod's IP, as a kubelet's probe does ----
HTTP_GET=$(cd "$(dirname "$0")/../helpers" && pwd)/http-get.py
get() { python3 "$HTTP_GET" "$@"; } # ADDR PORT: GET /, as a kubelet's HTTP probe
for i in $(seq 50); do [ "$(get "$podip" 8080)" = "served-from-the-pod-$$" ] && break; sleep 0.1; done
expect_eq "the pod's IP:8080 from the host: answered by the agent's server" \
	"$(get "$podip" 8080)" "served-from-the-pod-$$"
expect_eq "... 8081, where the agent listens undeclared: refused" "$(get "$podip" 8081)" "refused"
for i in $(seq 50); do grep -q '"event":"net.inbound"' "$audit" 2>/dev/null && break; sleep 0.1; done
expect_match "the audit log: net.inbound from the bridge's host side, port 8080" \
	"$(grep '"event":"net.inbound"' "$audit" 2>/dev/null | grep '"result":"ok"' | head -1)" \
	"\"bytes_in\":29,\"bytes_out\":[1-9][0-9]+,.*\"host_port\":8080,\"peer\":\"$GW:[0-9]+\",\"port\":8080,\"result\":\"ok\""

# ---- stop and remove: nothing left ----
cri StopContainer "{\"containerId\": \"$cid\", \"timeout\": 5}" >/dev/null
expect_eq "StopContainer" "$?" 0
out=$(cri ContainerStatus "{\"containerId\": \"$cid\"}" 2>&1)
expect_match "ContainerStatus: exited" "$out" '"state": "CONTAINER_EXITED"'
cri RemoveContainer "{\"containerId\": \"$cid\"}" >/dev/null
expect_eq "RemoveContainer" "$?" 0
cri StopPodSandbox "{\"podSandboxId\": \"$pod\"}" >/dev/null
expect_eq "StopPodSandbox" "$?" 0
cri RemovePodSandbox "{\"podSandboxId\": \"$pod\"}" >/dev/null
expect_eq "RemovePodSandbox" "$?" 0
podid=$pod
pod=
expect_eq "no container or session is left under the runtime's root" \
	"$(find "$C/runc/k8s.io" -mindepth 1 ! -path "$C/runc/k8s.io/sessions" 2>/dev/null)" ""
check "the app container's audit log is sealed" grep -q '"event":"audit.seal"' "$audit"
expect_eq "no process of the runtime is left" "$(pgrep -f "$C/runc" | tr '\n' ' ')" ""
expect_eq "no mount of the pod is left" "$(grep -c " $C/state" /proc/mounts)" 0
expect_eq "no network namespace is left" "$(ls /var/run/netns 2>/dev/null | sort)" "$netns_before"
left=
for p in $pids; do [ -d /proc/$p ] && left="$left $p"; done
expect_eq "none of the sandbox's processes is left" "$left" ""
left=
for d in $cgs; do [ -d "$d" ] && left="$left $d"; done
expect_eq "none of its cgroups is left" "$left" ""
expect_eq "CNI's cache has nothing of the pod" "$(ls /var/lib/cni/results 2>/dev/null | grep -c "$podid")" 0
finish
