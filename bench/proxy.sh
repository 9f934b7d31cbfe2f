#!/bin/bash
# SPDX-License-Identifier: MIT
# Egress proxy benchmark on loopback: bulk CONNECT-tunnel throughput and
# small-request rate/latency through the forward proxy, each against direct
# access and tinyproxy measured in the same run, and the small requests
# against squid too (when installed), which keeps upstream connections alive
# as sandcap's pool does, and HAProxy as an HTTP relay (below). The bulk download is also
# relayed by HAProxy in TCP mode with splice(2) both ways: no CONNECT, no
# policy, no limits, one thread, the fastest user-space relay Debian ships,
# and so the ceiling for any relay on this machine. Reports figures and
# ratios; never fails on wall-clock numbers (exit 77 when a tool is missing;
# without haproxy its row is left out).
#
#   bench/proxy.sh [BUILDDIR]     env: BENCH_SIZE (default 1G), BENCH_ROUNDS (default 5),
#                                 BENCH_SECS (default 5 per contender and round; 0 skips the
#                                 small requests), BENCH_SMALL_ROUNDS (default 3)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$top/build}
SA=$B/px-standalone
SIZE=${BENCH_SIZE:-1G}
SECS=${BENCH_SECS:-5}
T=$(mktemp -d /tmp/sandcap-proxy-bench.XXXXXX)
chmod 755 "$T"
pids=()

for tool in nginx curl wrk tinyproxy bc; do
	command -v $tool >/dev/null || { echo "bench: $tool not installed, skipping"; exit 77; }
done
[ -x "$SA" ] || "$top/tests/proxy/build.sh" "$B" || exit 77

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

BASE=$((40000 + RANDOM % 10000))
P_HTTP=$BASE
P_SC=$((BASE + 1))
P_TP=$((BASE + 2))
P_HA=$((BASE + 3))
P_SQ=$((BASE + 4))
P_HH=$((BASE + 5))

mkdir -p "$T/www"
truncate -s "$SIZE" "$T/www/bulk.bin" # sparse: the origin is not the bottleneck
echo hello >"$T/www/index.html"
cat >"$T/nginx.conf" <<NGINX
daemon on; pid $T/nginx.pid; error_log $T/nginx-error.log; worker_processes 1;
events { worker_connections 1024; }
http { access_log off; sendfile on; keepalive_requests 1000000;
  client_body_temp_path $T/cbt; proxy_temp_path $T/pt; fastcgi_temp_path $T/ft;
  uwsgi_temp_path $T/ut; scgi_temp_path $T/st;
  server { listen 127.0.0.1:$P_HTTP backlog=1024; root $T/www; } }
NGINX
nginx -c "$T/nginx.conf" -p "$T" || exit 77

cat >"$T/sc.json" <<JSON
{ "egress": [ {"host": "127.0.0.1", "ports": [$P_HTTP]} ], "allow_private": ["127.0.0.1/32"], "rate": null }
JSON
"$SA" "$T/sc.json" $P_SC /dev/null >"$T/sc.out" 2>&1 &
pids+=($!)
cat >"$T/tinyproxy.conf" <<TP
Port $P_TP
Listen 127.0.0.1
MaxClients 200
LogLevel Critical
ConnectPort $P_HTTP
Allow 127.0.0.1
TP
tinyproxy -d -c "$T/tinyproxy.conf" >"$T/tinyproxy.log" 2>&1 &
pids+=($!)
# HAProxy as a plain TCP relay to the origin (curl talks to it as if it were
# the origin): splice in both directions, a single thread like the worker.
# For the small requests also as an HTTP relay (absolute-form targets like
# the proxies get, kept-alive on both sides, server connections reused):
# parsing and relaying each request with no policy and no record, the
# least a user-space HTTP relay costs here.
have_haproxy=0
if command -v haproxy >/dev/null; then
	cat >"$T/haproxy.cfg" <<HA
global
  nbthread 1
  maxconn 100
  maxpipes 100
defaults
  mode tcp
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  option splice-request
  option splice-response
listen relay
  bind 127.0.0.1:$P_HA
  server origin 127.0.0.1:$P_HTTP
listen httprelay
  mode http
  bind 127.0.0.1:$P_HH
  option http-keep-alive
  http-reuse always
  server origin 127.0.0.1:$P_HTTP
HA
	haproxy -db -f "$T/haproxy.cfg" >"$T/haproxy.log" 2>&1 &
	pids+=($!)
	have_haproxy=1
fi
have_squid=0
if command -v squid >/dev/null; then
	mkdir -p "$T/squid"
	chmod 777 "$T/squid"
	cat >"$T/squid.conf" <<SQ
http_port 127.0.0.1:$P_SQ
http_access allow all
cache deny all
cache_mem 8 MB
access_log none
cache_log $T/squid/cache.log
pid_filename $T/squid/squid.pid
coredump_dir $T/squid
workers 1
shutdown_lifetime 0 seconds
SQ
	squid -N -f "$T/squid.conf" >"$T/squid/out.log" 2>&1 &
	pids+=($!)
	have_squid=1
fi
# A contender that does not listen within 5 s (a port taken, say) shows
# as 0 req/s below: say why here.
listening() { # PORT NAME LOG
	for _ in $(seq 50); do
		(echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "bench: $2 is not listening on port $1: $(tail -3 "$3" 2>/dev/null | tr '\n' ' ')" >&2
}
listening $P_SC sandcap "$T/sc.out"
listening $P_TP tinyproxy "$T/tinyproxy.log"
[ $have_haproxy = 1 ] && listening $P_HA haproxy "$T/haproxy.log"
[ $have_squid = 1 ] && listening $P_SQ squid "$T/squid/cache.log"

URL="http://127.0.0.1:$P_HTTP"
mib() { echo "scale=1; $1 / 1048576" | bc; }
ratio() { [ "${2%.*}" -gt 0 ] 2>/dev/null && echo "scale=2; $1 / $2" | bc || echo n/a; }
median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# The same curl fetches the same file for every contender: the proxies add
# only -p (CONNECT) and -x; the relay is just another address.
bulk1() { # BASE-URL [CURL-ARGS]
	local base=$1
	shift
	curl -s -o /dev/null -w '%{speed_download} %{size_download}\n' "$@" "$base/bulk.bin"
}
ROUNDS=${BENCH_ROUNDS:-5}
names=(direct sandcap tinyproxy)
args=("" "-p -x http://127.0.0.1:$P_SC" "-p -x http://127.0.0.1:$P_TP")
urls=("$URL" "$URL" "$URL")
if [ $have_haproxy = 1 ]; then
	names+=(haproxy)
	args+=("")
	urls+=("http://127.0.0.1:$P_HA")
fi
n_names=${#names[@]}
: >"$T/bulk"
bulk1 "$URL" >/dev/null # fills the page cache: the first read of the file is slower
# A shared machine's load moves over seconds: every round runs each
# contender once, starting with a different one each round, and each proxy
# is also compared with the direct run of its own round.
for round in $(seq "$ROUNDS"); do
	for k in $(seq 0 $((n_names - 1))); do
		i=$(((k + round) % n_names))
		# shellcheck disable=SC2086 # args are words
		read -r speed size <<<"$(bulk1 "${urls[$i]}" ${args[$i]})"
		echo "$round ${names[$i]} ${speed:-0} ${size:-0}" >>"$T/bulk"
	done
done
col() { awk -v n="$1" '$2 == n {print $3}' "$T/bulk" | median; }
# the smallest size seen: a short download must show
size_of() { awk -v n="$1" '$2 == n {print $4}' "$T/bulk" | sort -n | head -1; }
# the median over rounds of (proxy / direct of the same round)
paired() {
	awk -v n="$1" '$2 == "direct" {d[$1] = $3} $2 == n {p[$1] = $3}
		END {for (r in p) if (d[r] > 0) print p[r] / d[r]}' "$T/bulk" | median
}
d_speed=$(col direct) s_speed=$(col sandcap) t_speed=$(col tinyproxy)
echo "== bulk download of $SIZE (curl, one stream, median of $ROUNDS interleaved rounds) =="
printf "direct             %8s MiB/s  (%s bytes)\n" "$(mib "$d_speed")" "$(size_of direct)"
printf "sandcap CONNECT    %8s MiB/s  (%s bytes)  %sx direct (target >= 0.8; per round %.2fx)\n" \
	"$(mib "$s_speed")" "$(size_of sandcap)" "$(ratio "$s_speed" "$d_speed")" "$(paired sandcap)"
printf "tinyproxy CONNECT  %8s MiB/s  (%s bytes)  %sx direct (per round %.2fx)\n" \
	"$(mib "$t_speed")" "$(size_of tinyproxy)" "$(ratio "$t_speed" "$d_speed")" "$(paired tinyproxy)"
if [ $have_haproxy = 1 ]; then
	h_speed=$(col haproxy)
	printf "haproxy TCP relay  %8s MiB/s  (%s bytes)  %sx direct (per round %.2fx; sandcap/haproxy %sx)\n" \
		"$(mib "$h_speed")" "$(size_of haproxy)" "$(ratio "$h_speed" "$d_speed")" "$(paired haproxy)" \
		"$(ratio "$s_speed" "$h_speed")"
fi
[ "$SECS" = 0 ] && exit 0

# wrk cannot CONNECT: send absolute-form targets to the proxy instead
cat >"$T/abs.lua" <<LUA
request = function()
  return wrk.format("GET", "$URL/index.html", { Host = "127.0.0.1:$P_HTTP" })
end
LUA
to_us() { # wrk prints 123.45us / 1.23ms / 1.00s
	case "$1" in
	*us) echo "${1%us}" ;;
	*ms) echo "scale=2; ${1%ms} * 1000" | bc ;;
	*s) echo "scale=2; ${1%s} * 1000000" | bc ;;
	*) echo 0 ;;
	esac
}
wrk_run() { # wrk_run URL [SCRIPT] -> "req/s p50_us p99_us"
	local out rps p50 p99
	if [ $# -gt 1 ]; then
		out=$(wrk -t1 -c16 -d"${SECS}s" --latency -s "$2" "$1" 2>&1)
	else
		out=$(wrk -t1 -c16 -d"${SECS}s" --latency "$1" 2>&1)
	fi
	rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
	p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
	p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
	echo "${rps:-0} $(to_us "$p50") $(to_us "$p99")"
}

# As for the bulk download, each round runs every contender once, starting
# with a different one each round: the load of a shared machine moves
# within a run, and a ratio of two contenders measured seconds apart
# mostly measures that.
SROUNDS=${BENCH_SMALL_ROUNDS:-3}
snames=(direct sandcap tinyproxy)
surls=("$URL/index.html" "http://127.0.0.1:$P_SC" "http://127.0.0.1:$P_TP")
if [ $have_squid = 1 ]; then
	snames+=(squid)
	surls+=("http://127.0.0.1:$P_SQ")
fi
if [ $have_haproxy = 1 ]; then
	snames+=(haproxy)
	surls+=("http://127.0.0.1:$P_HH")
fi
n_small=${#snames[@]}
: >"$T/small"
for round in $(seq "$SROUNDS"); do
	for k in $(seq 0 $((n_small - 1))); do
		i=$(((k + round) % n_small))
		if [ "$i" = 0 ]; then
			out=$(wrk_run "${surls[$i]}")
		else
			out=$(wrk_run "${surls[$i]}" "$T/abs.lua")
		fi
		echo "$round ${snames[$i]} $out" >>"$T/small"
	done
done
# median over rounds of column COL (3 req/s, 4 p50, 5 p99) of NAME
scol() { awk -v n="$1" -v c="$2" '$2 == n {print $c}' "$T/small" | median; }
# median over rounds of NAME's req/s over OTHER's of the same round
sper() {
	awk -v n="$1" -v o="$2" '$2 == o {d[$1] = $3} $2 == n {p[$1] = $3}
		END {for (r in p) if (d[r] > 0) print p[r] / d[r]}' "$T/small" | median
}
echo "== small requests (wrk -t1 -c16 ${SECS}s, GET /index.html, median of $SROUNDS interleaved rounds) =="
d_rps=$(scol direct 3) d_p50=$(scol direct 4) d_p99=$(scol direct 5)
printf "direct             %10s req/s  p50 %8s us  p99 %8s us\n" "$d_rps" "$d_p50" "$d_p99"
for name in "${snames[@]:1}"; do
	label="sandcap forward  "
	[ "$name" = tinyproxy ] && label="tinyproxy forward"
	[ "$name" = squid ] && label="squid forward    "
	[ "$name" = haproxy ] && label="haproxy HTTP     "
	rps=$(scol "$name" 3) p50=$(scol "$name" 4) p99=$(scol "$name" 5)
	printf "%s  %10s req/s  p50 %8s us  p99 %8s us  (%sx direct, per round %.2fx; added p50 %s us, p99 %s us)\n" \
		"$label" "$rps" "$p50" "$p99" "$(ratio "$rps" "$d_rps")" "$(sper "$name" direct)" \
		"$(echo "$p50 - $d_p50" | bc)" "$(echo "$p99 - $d_p99" | bc)"
done
s_rps=$(scol sandcap 3)
[ $have_squid = 1 ] && printf "sandcap/squid      %10sx per round %.2fx (target >= 2), sandcap/direct %sx per round %.2fx (target >= 0.5)\n" \
	"$(ratio "$s_rps" "$(scol squid 3)")" "$(sper sandcap squid)" "$(ratio "$s_rps" "$d_rps")" "$(sper sandcap direct)"
[ $have_haproxy = 1 ] && printf "sandcap/haproxy    %10sx per round %.2fx (haproxy HTTP/direct per round %.2fx: a relay with no policy and no records)\n" \
	"$(ratio "$s_rps" "$(scol haproxy 3)")" "$(sper sandcap haproxy)" "$(sper haproxy direct)"
exit 0
