# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# What the bench scripts share: sourced by each (`. "$(dirname "$0")/lib.sh"`),
# never run alone. Each function exits the script on a failure it cannot
# work around; none prints a figure.
#
#   bench_need NAME TOOL...      exit 77 (skipped) when a TOOL is missing
#   bench_tmp NAME [BASE]        $T: a fresh directory under BASE (/tmp),
#                                removed at exit; the sandboxes' state (audit
#                                logs) goes in $T/state
#   bench_on_exit CMD            CMD (a string for eval) at exit, before $T goes
#   bench_free_port              a free TCP port on 127.0.0.1
#   bench_nginx PORT CONNS [SERVER [HTTP]]
#                                nginx serving $T/www on 127.0.0.1:PORT, stopped
#                                at exit
#   bench_dnsmasq PORT DOMAIN    dnsmasq on 127.0.0.1:PORT answering DOMAIN and
#                                every name under it with 127.0.0.1
#   bench_policy FILE HOST PORT [NET [TOP]]
#                                a policy whose one way out is HOST:PORT on
#                                loopback, without exec auditing
#   bench_crun_bundle DIR ARG... an OCI bundle running ARG with the binds and
#                                limits sandcap's bench policies have
#   bench_ablation_build DIR [REV]  a scratch build of this tree (or of git
#                                revision or source directory REV) with
#                                bench/ablation.patch in DIR/build (its sandcap
#                                skips the layers SANDCAP_ABLATE names); never
#                                part of a real build
#   BENCH_ABLATE_ALL             every layer the patch can take away

bench_need() { # NAME TOOL...
	local name=$1 tool
	shift
	for tool in "$@"; do
		command -v "$tool" >/dev/null || { echo "$name: $tool not installed" >&2; exit 77; }
	done
}

BENCH_AT_EXIT=()
bench_on_exit() { # CMD
	BENCH_AT_EXIT+=("$1")
}

bench_cleanup() {
	local i
	# the last registered first, as the set-up nests
	for ((i = ${#BENCH_AT_EXIT[@]} - 1; i >= 0; i--)); do
		eval "${BENCH_AT_EXIT[i]}" || true
	done
	rm -rf "$T"
}

bench_tmp() { # NAME [BASE]
	T=$(mktemp -d "${2:-/tmp}/sandcap-$1.XXXXXX")
	# the sandbox's own uid reads the policies and files served from here
	chmod 755 "$T"
	trap bench_cleanup EXIT
	export SANDCAP_STATE_DIR=$T/state
}

bench_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# SERVER is added to the server block (e.g. ssl_certificate), HTTP replaces
# "sendfile on;" in the http block; PORT may carry listen options ("443 ssl").
bench_nginx() { # PORT CONNS [SERVER [HTTP]]
	cat >"$T/nginx.conf" <<NGINX
daemon on; pid $T/nginx.pid; error_log $T/nginx-error.log; worker_processes 1;
events { worker_connections $2; }
http { access_log off; ${4-sendfile on;}
  client_body_temp_path $T/cbt; proxy_temp_path $T/pt; fastcgi_temp_path $T/ft;
  uwsgi_temp_path $T/ut; scgi_temp_path $T/st;
  server { listen 127.0.0.1:$1; root $T/www; ${3:-} } }
NGINX
	# shellcheck disable=SC2016 # expanded at exit
	bench_on_exit '[ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null'
	nginx -c "$T/nginx.conf" -p "$T"
}

bench_dnsmasq() { # PORT DOMAIN
	dnsmasq --no-daemon --no-resolv --no-hosts --listen-address=127.0.0.1 --bind-interfaces \
		--port="$1" --address="/$2/127.0.0.1" >/dev/null 2>&1 &
	bench_on_exit "kill $! 2>/dev/null; wait $! 2>/dev/null"
	sleep 0.3 # until it listens
}

# NET is more of "net", TOP more of the policy: JSON members, without the
# leading comma (e.g. '"dns": "127.0.0.1:5353"').
bench_policy() { # FILE HOST PORT [NET [TOP]]
	cat >"$1" <<JSON
{ "version": 1, "audit": { "exec": false },${5:+
  $5,}
  "net": { "egress": [ { "host": "$2", "ports": [$3] } ],
           "allow_private": [ "127.0.0.1/32" ], "rate": null${4:+, $4} } }
JSON
}

# In every namespace but the user one (crun runs as root here, like
# sandcap's supervisor): /usr, /lib, /lib64, /bin and /sbin read-only, a
# tmpfs /tmp, 256 MiB, one CPU, 64 pids.
bench_crun_bundle() { # DIR ARG...
	local dir=$1
	shift
	mkdir -p "$dir/rootfs"
	(cd "$dir" && crun spec >/dev/null)
	python3 - "$dir/config.json" "$@" <<'PY'
import json, sys
p = sys.argv[1]; c = json.load(open(p))
c["process"]["args"] = sys.argv[2:]; c["process"]["terminal"] = False
c["process"]["env"] = ["PATH=/usr/bin:/bin", "HOME=/tmp"]
c["process"]["cwd"] = "/tmp"
c["root"] = {"path": "rootfs", "readonly": True}
c["mounts"] = [m for m in c["mounts"] if m["destination"] in ("/proc", "/dev", "/dev/pts", "/dev/shm")]
for d in ("/usr", "/lib", "/lib64", "/bin", "/sbin"):
    c["mounts"].append({"destination": d, "type": "bind", "source": d, "options": ["rbind", "ro", "nosuid", "nodev"]})
c["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]})
lin = c.setdefault("linux", {})
lin["namespaces"] = [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount", "cgroup")]
lin["resources"] = {"memory": {"limit": 268435456}, "cpu": {"quota": 100000, "period": 100000}, "pids": {"limit": 64}}
lin.pop("uidMappings", None); lin.pop("gidMappings", None)
c["process"]["user"] = {"uid": 0, "gid": 0}
json.dump(c, open(p, "w"))
PY
	for d in usr lib lib64 bin sbin proc dev tmp; do mkdir -p "$dir/rootfs/$d"; done
}

BENCH_ABLATE_ALL=seccomp,landlock,masks,cgroup,init

bench_ablation_build() { # DIR [REV]
	local top
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	mkdir -p "$1/src"
	if [ -z "${2:-}" ]; then
		tar -C "$top" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$1/src" -xf -
	elif [ -d "$2" ]; then
		tar -C "$2" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$1/src" -xf -
	else
		git -C "$top" archive "$2" | tar -C "$1/src" -xf -
	fi
	patch -s -d "$1/src" -p1 <"$top/bench/ablation.patch"
	meson setup "$1/build" "$1/src" >"$1/setup.log" 2>&1 || { cat "$1/setup.log" >&2; exit 1; }
	ninja -C "$1/build" sandcap sandcap-main sandcap-run sandcap-proxy sandcap-init >"$1/build.log" 2>&1 ||
		{ cat "$1/build.log" >&2; exit 1; }
}
