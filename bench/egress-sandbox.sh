#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Egress throughput through a real sandbox: curl inside `sandcap run`
# downloads SIZE from an nginx origin on the host's loopback through the
# sandbox's egress proxy (the only way out of its network namespace), as a
# plain-HTTP forward request and as a CONNECT tunnel, against curl on the
# host fetching the same file directly. Best of two downloads each (the
# machine is shared); the byte count must be the full SIZE.
#
# First, what egress costs at start-up: `sandcap run -- /bin/true` with
# net.egress against the same run without, both measured by hyperfine in the
# same invocation, and once more with an "upstream": "https" credential (the
# only policy whose worker sets up TLS trust). BENCH_ROUNDS invocations
# take turns with the runs, so that a change of the machine's load between
# one command's batch and the next weighs on all three alike; medians of all
# runs. The ratios are printed (the bar is 1.3x); a number never fails the
# script.
#
#   bench/egress-sandbox.sh [SANDCAP_BINARY]   (as root)
#   env: BENCH_SIZE (default 1G), BENCH_START_ONLY=1 (skip the downloads),
#   BENCH_RUNS (runs of each command, default 40), BENCH_ROUNDS (default 4),
#   BENCH_RESULTS (append
#   "egress-sandbox<TAB>NAME<TAB>MIB_PER_S<TAB>RATIO" and
#   "egress-start<TAB>NAME<TAB>MS<TAB>RATIO" lines)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
S=${1:-$(pwd)/build/sandcap}
SIZE=${BENCH_SIZE:-1G}
bench_need egress-sandbox nginx curl python3
bench_tmp egress-bench
PORT=$(bench_free_port)
mkdir -p "$T/www"
truncate -s "$SIZE" "$T/www/bulk.bin" # sparse: the origin is not the bottleneck
want=$(stat -c %s "$T/www/bulk.bin")
bench_nginx "$PORT" 64
bench_policy "$T/policy.json" 127.0.0.1 "$PORT"

# --- start-up -----------------------------------------------------------------
if command -v hyperfine >/dev/null; then
	echo '{ "version": 1, "audit": { "exec": false } }' >"$T/none.json"
	cat >"$T/egress.json" <<JSON
{ "version": 1, "audit": { "exec": false },
  "net": { "egress": [ { "host": "api.example.com" } ] } }
JSON
	cat >"$T/egress-tls.json" <<JSON
{ "version": 1, "audit": { "exec": false },
  "net": { "egress": [ { "host": "api.example.com" } ],
           "credentials": [ { "host": "api.example.com", "header": "Authorization",
                              "value_env": "BENCH_TOKEN", "upstream": "https" } ] } }
JSON
	rounds=${BENCH_ROUNDS:-4}
	runs=$(((${BENCH_RUNS:-40} + rounds - 1) / rounds))
	for r in $(seq "$rounds"); do
		BENCH_TOKEN=bench hyperfine -N --style basic --warmup 3 --runs "$runs" \
			--export-json "$T/start-$r.json" \
			-n no-egress "$S run --quiet --policy $T/none.json -- /bin/true" \
			-n egress "$S run --quiet --policy $T/egress.json -- /bin/true" \
			-n egress-https-credential "$S run --quiet --policy $T/egress-tls.json -- /bin/true" \
			>"$T/start.txt" 2>&1 || { cat "$T/start.txt" >&2; exit 1; }
	done
	python3 - "${BENCH_RESULTS:-}" "$T"/start-*.json <<'PY'
import json, statistics, sys
times, cpu = {}, {}
for f in sys.argv[2:]:
    for r in json.load(open(f))["results"]:
        times.setdefault(r["command"], []).extend(r["times"])
        cpu.setdefault(r["command"], []).append((r["user"] + r["system"]) * 1e3)
base = statistics.median(times["no-egress"])
print("start-up of sandcap run -- /bin/true (hyperfine, median of %d runs in %d turns)"
      % (len(times["no-egress"]), len(sys.argv) - 2))
rows = []
for name in ("no-egress", "egress", "egress-https-credential"):
    t = times[name]
    med = statistics.median(t)
    q = statistics.quantiles(t, n=4)
    ratio = med / base
    print(f"  {name:24s} {med * 1e3:6.1f} ms (quartiles {q[0] * 1e3:5.1f}-{q[2] * 1e3:5.1f})"
          f"  cpu {statistics.mean(cpu[name]):5.1f} ms  {ratio:4.2f}x no-egress")
    rows.append(f"egress-start\t{name}\t{med * 1e3:.2f}\t{ratio:.3f}\n")
print("  bar: egress <= 1.30x no-egress (cpu: the supervisor and what it waited for)")
if sys.argv[1]:
    with open(sys.argv[1], "a") as f:
        f.writelines(rows)
PY
else
	echo "egress-sandbox: hyperfine not installed (tools/install-deps bench): start-up not measured" >&2
fi
[ "${BENCH_START_ONLY:-0}" = 1 ] && exit 0

URL="http://127.0.0.1:$PORT/bulk.bin"
# Inside, NO_PROXY lists 127.0.0.1; --noproxy '' makes curl use the proxy for
# it anyway (there is no other route out of the sandbox).
# shellcheck disable=SC2016 # expanded inside the sandbox
CURL='curl -sS -o /dev/null -w "%{speed_download} %{size_download}\n" --noproxy "" -x "$HTTP_PROXY"'
once() { # MODE -> "bytes_per_s bytes"
	case $1 in
	host) curl -sS -o /dev/null -w '%{speed_download} %{size_download}\n' "$URL" ;;
	forward) "$S" run --quiet --policy "$T/policy.json" -- /bin/sh -c "$CURL '$URL'" ;;
	connect) "$S" run --quiet --policy "$T/policy.json" -- /bin/sh -c "$CURL -p '$URL'" ;;
	esac
}
best() { # MODE -> "bytes_per_s bytes" of the faster of two complete downloads
	local a b
	a=$(once "$1")
	b=$(once "$1")
	for x in "$a" "$b"; do
		[ "${x#* }" = "$want" ] || { echo "egress-sandbox: $1 fetched ${x#* } bytes, not $want" >&2; exit 1; }
	done
	python3 -c 'import sys; a, b = sys.argv[1:]; print(a if float(a.split()[0]) >= float(b.split()[0]) else b)' "$a" "$b"
}
host=$(best host)
fwd=$(best forward)
con=$(best connect)
python3 - "$SIZE" "$host" "$fwd" "$con" "${BENCH_RESULTS:-}" <<'PY'
import sys
size, host, fwd, con, out = sys.argv[1:6]
h = float(host.split()[0])
print(f"download of {size} from nginx on loopback (curl, best of 2)")
rows = []
for name, v in (("host-direct", host), ("sandbox-forward", fwd), ("sandbox-connect", con)):
    bps = float(v.split()[0])
    print(f"  {name:16s} {bps / 2**20:8.1f} MiB/s  {bps / h:5.2f}x host direct")
    rows.append(f"egress-sandbox\t{name}\t{bps / 2**20:.1f}\t{bps / h:.3f}\n")
if out:
    with open(out, "a") as f:
        f.writelines(rows)
PY
