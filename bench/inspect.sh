#!/bin/bash
# SPDX-License-Identifier: MIT
# TLS inspection benchmark on loopback, in one run, interleaved: the rate and
# latency (p50, p99) of small HTTPS requests on one kept-alive client
# connection, directly from the host, through the proxy's plain CONNECT
# tunnel, and through an inspected tunnel (where each request is decrypted,
# judged, recorded and sent on a pooled upstream TLS connection); and the cost
# of a new inspected connection (CONNECT + TLS handshake + one request) for
# a host whose leaf is minted then versus one already cached. Clients run
# inside a real sandbox (python3 http.client); the origin is nginx with TLS.
# Reports figures only; never fails on a number (exit 77 when a tool is
# missing). Needs root.
#
#   bench/inspect.sh [BUILDDIR]    env: BENCH_REQS (default 2000), BENCH_HOSTS (default 50)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/lib.sh"
B=${1:-$top/build}
SANDCAP=$B/sandcap
REQS=${BENCH_REQS:-2000}
HOSTS=${BENCH_HOSTS:-50}
bench_need inspect nginx openssl dnsmasq python3
[ "$(id -u)" = 0 ] || { echo "bench: needs root"; exit 77; }
[ -x "$SANDCAP" ] || { echo "bench: no $SANDCAP"; exit 77; }
bench_tmp inspect-bench

BASE=$((40000 + RANDOM % 10000))
P_TLS=$BASE
P_DNS=$((BASE + 1))
mkdir -p "$T/www" "$T/pub"
echo hello >"$T/www/index.html"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj "/CN=bench CA" -keyout "$T/ca.key" -out "$T/pub/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=bench" \
	-keyout "$T/srv.key" -out "$T/srv.csr" 2>/dev/null
printf 'subjectAltName=DNS:plain.bench.test,DNS:*.in.bench.test\n' >"$T/ext"
openssl x509 -req -in "$T/srv.csr" -CA "$T/pub/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
	-days 1 -extfile "$T/ext" -out "$T/srv.pem" 2>/dev/null
chmod 644 "$T"/*.pem "$T"/*.key "$T/pub/ca.pem"
bench_nginx "$P_TLS ssl backlog=1024" 1024 \
	"ssl_certificate $T/srv.pem; ssl_certificate_key $T/srv.key;" "keepalive_requests 1000000;" || exit 77
bench_dnsmasq "$P_DNS" bench.test

cat >"$T/pub/client.py" <<'PY'
# client.py MODE PORT N CAFILE: MODE direct|tunnel|inspect|mint
import http.client, socket, ssl, sys, time
mode, port, n, cafile = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ctx = ssl.create_default_context(cafile=cafile)
class Direct(http.client.HTTPSConnection):
    # the host has no name for the origin: connect to loopback, verify the name
    def connect(self):
        self.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", self.port)),
                                    server_hostname=self.host)
def conn(host):
    if mode == "direct":
        return Direct(host, port, context=ctx)
    c = http.client.HTTPSConnection("127.0.0.1", 3128, context=ctx)
    c.set_tunnel(host, port)
    return c
def get(c):
    c.request("GET", "/index.html")
    r = c.getresponse(); r.read()
    assert r.status == 200, r.status
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(len(v) * p))] * 1e3
if mode == "mint":
    # a new connection per host: first its leaf is minted, then cached
    for label in ("first (minted)", "cached"):
        lat = []
        for i in range(n):
            t = time.perf_counter(); c = conn("h%d.in.bench.test" % i); get(c); c.close()
            lat.append(time.perf_counter() - t)
        print("%-16s new connection + request: p50 %.2f ms  p99 %.2f ms" % (label, pct(lat, .5), pct(lat, .99)))
    sys.exit(0)
host = {"direct": "plain.bench.test", "tunnel": "plain.bench.test", "inspect": "a.in.bench.test"}[mode]
c = conn(host); get(c)
lat = []
t0 = time.perf_counter()
for _ in range(n):
    t = time.perf_counter(); get(c); lat.append(time.perf_counter() - t)
dt = time.perf_counter() - t0
print("%-16s %7.0f req/s  p50 %.2f ms  p99 %.2f ms" % (mode, n / dt, pct(lat, .5), pct(lat, .99)))
PY
cat >"$T/p.json" <<JSON
{"version": 1, "fs": {"grants": [{"path": "$T/pub", "mode": "ro", "at": "/pub"}]},
 "net": {"egress": [{"host": "plain.bench.test", "ports": [$P_TLS]},
                    {"host": "*.in.bench.test", "ports": [$P_TLS], "inspect": true}],
         "allow_private": ["127.0.0.1/32"], "dns": "127.0.0.1:$P_DNS", "upstream_ca": "$T/pub/ca.pem",
         "rate": null}}
JSON
inside() { "$SANDCAP" run --quiet --policy "$T/p.json" -- python3 /pub/client.py "$@"; }
echo "small HTTPS requests on one kept-alive client connection ($REQS each, interleaved x2):"
for round in 1 2; do
	python3 "$T/pub/client.py" direct "$P_TLS" "$REQS" "$T/pub/ca.pem" 2>&1 </dev/null |
		sed 's/^/  /' || true
	inside tunnel "$P_TLS" "$REQS" /pub/ca.pem 2>&1 | sed 's/^/  /'
	inside inspect "$P_TLS" "$REQS" /etc/ssl/certs/ca-certificates.crt 2>&1 | sed 's/^/  /'
done
echo "inspected connections to $HOSTS hosts:"
inside mint "$P_TLS" "$HOSTS" /etc/ssl/certs/ca-certificates.crt 2>&1 | sed 's/^/  /'
