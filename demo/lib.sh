# Shared by the demo scenarios: expectations, fixtures on loopback, output.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SANDCAP=${SANDCAP:-$ROOT/build/sandcap}
W=$(mktemp -d /tmp/sandcap-demo.XXXXXX)
chmod 755 "$W"
export SANDCAP_STATE_DIR=$W/state
FAILS=0
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

bold() { printf '\033[1m%s\033[0m\n' "$*"; }
section() { printf '\n  -- %s\n' "$*"; }
indent() { sed 's/^/     /'; }
expect() { # expect "what" CMD...
	local what=$1
	shift
	if "$@"; then
		printf '     \033[32mPASS\033[0m %s\n' "$what"
	else
		printf '     \033[31mFAIL\033[0m %s\n' "$what"
		FAILS=$((FAILS + 1))
	fi
}
fails() { ! "$@" >/dev/null 2>&1; }
contains() { grep -q -- "$2" <<<"$1"; }
json_field() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])[sys.argv[1]])' "$1"; }
capabilities() { # the blast radius, condensed
	"$SANDCAP" check --policy "$1" | grep -vE '^\s*$' | sed -n '1,40p' | indent
}
audit_excerpt() { # audit_excerpt LOG EVENT...: the records that prove it
	local log=$1
	shift
	for e in "$@"; do
		grep "\"event\":\"$e\"" "$log" | head -3 | cut -c1-160
	done | indent
}
last_audit() { ls -t "$SANDCAP_STATE_DIR"/audit/*.jsonl | head -1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# A real origin server on host loopback: nginx logging every request.
start_origin() { # start_origin PORT
	local port=$1 d=$W/nginx
	mkdir -p "$d/html" "$d/tmp"
	echo '{"answer": 42}' >"$d/html/data.json"
	cat >"$d/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 64; }
http {
  access_log $d/access.log;
  client_body_temp_path $d/tmp;
  proxy_temp_path $d/tmp;
  fastcgi_temp_path $d/tmp;
  uwsgi_temp_path $d/tmp;
  scgi_temp_path $d/tmp;
  server {
    listen 127.0.0.1:$port;
    root $d/html;
    client_max_body_size 64m;
    location /upload { return 200 "stored\n"; }
  }
}
NGINX
	nginx -c "$d/nginx.conf" -e "$d/error.log" &
	PIDS+=($!)
	for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/"$port") 2>/dev/null && return 0; sleep 0.1; done
	echo "origin did not start" >&2
	return 1
}
origin_log() { cat "$W/nginx/access.log" 2>/dev/null; }

# A real DNS server on host loopback answering the demo's names.
start_dns() { # start_dns PORT NAME=IP...
	local port=$1
	shift
	local args=()
	for a in "$@"; do args+=("--address=/${a%%=*}/${a#*=}"); done
	dnsmasq --no-daemon --no-resolv --no-hosts --listen-address=127.0.0.1 --bind-interfaces \
		--port="$port" "${args[@]}" --log-facility=- >"$W/dns.log" 2>&1 &
	PIDS+=($!)
	sleep 0.3
}
