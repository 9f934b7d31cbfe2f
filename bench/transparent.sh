#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The three ways out, side by side (docs/proxy.md, "Transparent
# redirection"): a client inside `sandcap run` that ignores the proxy
# variables (the sandbox resolver's synthetic address, a transparent listener),
# the same client through the proxy variable (a forward request), and curl
# on the host fetching directly. For each: a SIZE download from an nginx
# origin on the host's loopback (best of two, MiB/s; the byte count must be
# the full SIZE) and small-request latency (N requests, a new connection
# each, median and p90 in ms, measured inside one sandbox by python). Then
# the sandbox resolver's queries per second (one client, one query in flight, for
# 2 s), and under load: BENCH_QUERIES queries 32 in flight (tests/helpers/
# dnsflood), alone and with three CPU hogs beside the run, where the resolver
# waits for the supervisor rather than drop a record (docs/audit.md, "No
# record is lost"); each with how many net.dns records its log kept. No
# number ever fails the script.
#
#   bench/transparent.sh [SANDCAP_BINARY]   (as root)
#   env: BENCH_SIZE (default 1G), BENCH_REQUESTS (default 300),
#        BENCH_QUERIES (default 200000)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
S=${1:-$(pwd)/build/sandcap}
SIZE=${BENCH_SIZE:-1G}
N=${BENCH_REQUESTS:-300}
bench_need transparent nginx dnsmasq curl python3
bench_tmp transparent-bench
PORT=$(bench_free_port)
DNS=$(bench_free_port)
mkdir -p "$T/www"
truncate -s "$SIZE" "$T/www/bulk.bin" # sparse: the origin is not the bottleneck
echo ok >"$T/www/small"
want=$(stat -c %s "$T/www/bulk.bin")
bench_nginx "$PORT" 256
bench_dnsmasq "$DNS" bulk.bench.test
bench_policy "$T/policy.json" bulk.bench.test "$PORT" '"dns": "127.0.0.1:'"$DNS"'"'
URL="http://bulk.bench.test:$PORT"
NOPX="env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy -u ALL_PROXY -u all_proxy"
run() { "$S" run --quiet --policy "$T/policy.json" -- "$@"; }

# --- throughput -------------------------------------------------------------
best() { # best LABEL CMD...: the best of two downloads, MiB/s
	local b=0 r label=$1
	shift
	for _ in 1 2; do
		r=$("$@" 2>/dev/null) || r="0 0"
		read -r bytes secs <<<"$r"
		if [ "$bytes" != "$want" ]; then
			echo "  $label: got $bytes of $want bytes" >&2
			continue
		fi
		b=$(python3 -c "print(max($b, $want / 1048576 / $secs))")
	done
	printf '%s' "$b"
}
dl="-sS -o /dev/null -w '%{size_download} %{time_total}'"
echo "transparent: $SIZE download, MiB/s (best of 2)"
direct=$(best direct sh -c "curl $dl --noproxy '*' --resolve bulk.bench.test:$PORT:127.0.0.1 $URL/bulk.bin")
proxyvar=$(best proxy-variable run sh -c "curl $dl $URL/bulk.bin")
transp=$(best transparent run $NOPX sh -c "curl $dl --noproxy '*' $URL/bulk.bin")
printf '  %-16s %8.0f\n  %-16s %8.0f  (%.2fx of direct)\n  %-16s %8.0f  (%.2fx of direct)\n' \
	direct "$direct" proxy-variable "$proxyvar" "$(python3 -c "print($proxyvar / max($direct, 1e-9))")" \
	transparent "$transp" "$(python3 -c "print($transp / max($direct, 1e-9))")"

# --- latency ----------------------------------------------------------------
cat >"$T/lat.py" <<'PY'
import http.client, os, statistics, sys, time
host, port, n, proxy = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "proxy"
t = []
for _ in range(n):
    a = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", 3128) if proxy else http.client.HTTPConnection(host, port)
    c.request("GET", "http://%s:%d/small" % (host, port) if proxy else "/small",
              headers={"Host": "%s:%d" % (host, port)})
    r = c.getresponse(); r.read(); c.close()
    if r.status != 200:
        sys.exit("status %d" % r.status)
    t.append((time.monotonic() - a) * 1000)
t.sort()
print("%.3f %.3f" % (statistics.median(t), t[int(len(t) * 0.9)]))
PY
chmod 644 "$T/lat.py"
cp "$T/lat.py" "$T/www/lat.py"
echo "transparent: small-request latency, $N requests, new connection each: median / p90 ms"
bench_policy "$T/lat-policy.json" bulk.bench.test "$PORT" '"dns": "127.0.0.1:'"$DNS"'"' \
	'"fs": { "grants": [ { "path": "'"$T/www"'", "mode": "ro", "at": "/bench" } ] }'
lat() { "$S" run --quiet --policy "$T/lat-policy.json" -- $NOPX python3 /bench/lat.py bulk.bench.test "$PORT" "$N" "$1" 2>/dev/null || echo "- -"; }
printf '  %-16s %s\n' direct "$(python3 "$T/lat.py" 127.0.0.1 "$PORT" "$N" direct)"
printf '  %-16s %s\n' proxy-variable "$(lat proxy)"
printf '  %-16s %s\n' transparent "$(lat transparent)"

# --- the sandbox resolver ------------------------------------------------------
cat >"$T/www/dnsq.py" <<'PY'
import socket, struct, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("127.0.0.1", 53)); s.settimeout(2)
q = struct.pack(">HHHHHH", 1, 0x0100, 1, 0, 0, 0) + b"\x04bulk\x05bench\x04test\x00\x00\x01\x00\x01"
n, end = 0, time.monotonic() + 2
while time.monotonic() < end:
    s.send(q); s.recv(512); n += 1
print("%.0f" % (n / 2))
PY
chmod 644 "$T/www/dnsq.py"
echo "transparent: sandbox resolver, queries/s (one client, one in flight; every one a net.dns record)"
printf '  %-16s %s\n' sandbox-resolver "$("$S" run --quiet --policy "$T/lat-policy.json" -- python3 /bench/dnsq.py 2>/dev/null || echo -)"

# --- the sandbox resolver under load: backpressure, not drops ----------------
H=$(dirname "$S")/tests/helpers
if [ -x "$H/dnsflood" ] && [ -x "$H/hog" ]; then
	Q=${BENCH_QUERIES:-200000}
	cp "$H/dnsflood" "$T/www/dnsflood"
	chmod 755 "$T/www/dnsflood"
	echo "transparent: sandbox resolver, $Q queries 32 in flight: queries/s, net.dns records kept"
	flood() { # LABEL [hogs]
		local hog= a b out log=$T/flood-$RANDOM.jsonl
		[ -n "${2:-}" ] && { "$H/hog" spin 3 600 >/dev/null 2>&1 & hog=$!; }
		a=$(date +%s.%N)
		out=$("$S" run --quiet --audit "$log" --policy "$T/lat-policy.json" -- \
			sh -c 'ns=$(awk "/^nameserver/ { print \$2; exit }" /etc/resolv.conf)
			exec /bench/dnsflood "${ns:-10.0.0.1}" "$1" bulk.bench.test' sh "$Q" 2>/dev/null) ||
			out="sent - answered -"
		b=$(date +%s.%N)
		[ -n "$hog" ] && { kill "$hog" 2>/dev/null; wait "$hog" 2>/dev/null || true; }
		printf '  %-16s %8.0f queries/s  %s, %s net.dns records, %s counted as dropped\n' "$1" \
			"$(python3 -c "print($Q / ($b - $a))")" "$out" \
			"$(grep -c '"event":"net.dns"' "$log" || true)" \
			"$(grep -c events_dropped "$log" || true)"
	}
	flood alone
	flood "3 CPU hogs" hogs
else
	echo "transparent: the resolver under load skipped ($H/dnsflood and hog not built)"
fi
