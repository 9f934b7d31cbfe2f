#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the evidence costs (docs/performance.md, "Evidence"):
#   1. audit records/s with the public-key seal (Ed25519, a signed
#      checkpoint every 1000 records) against the HMAC seal alone
#      (build/bench/audit-rate, on the file system of DIR);
#   2. a download of SIZE through the egress proxy of a real sandbox, whose
#      net.request carries the SHA-256 of the whole body, next to the time
#      SHA-256 takes for the same bytes on this machine (what the digest
#      adds at most to the worker's CPU time), in the same run. The record's
#      digest must equal sha256sum's and its body_bytes the full SIZE.
#      The time is taken with `openssl dgst -sha256`, which uses the same
#      libcrypto SHA-256 as the worker (coreutils' sha256sum has its own,
#      several times slower here).
# A number never fails the script; a short download or a wrong digest does.
#
#   bench/evidence.sh [SANDCAP_BINARY]   (as root)
#   env: BENCH_SIZE (default 1G), BENCH_RECORDS (default 200000)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
S=${1:-$(pwd)/build/sandcap}
RATE=$(dirname "$S")/bench/audit-rate
SIZE=${BENCH_SIZE:-1G}
bench_need evidence nginx curl python3 sha256sum openssl
bench_tmp evidence-bench

echo "== audit records/s, HMAC seal vs HMAC + Ed25519 checkpoints"
"$RATE" -n "${BENCH_RECORDS:-200000}" -s 200 -d "$T"

echo "== response digest on a $SIZE download through the proxy"
PORT=$(bench_free_port)
mkdir -p "$T/www"
head -c "$(numfmt --from=iec "$SIZE")" /dev/urandom >"$T/www/bulk.bin"
want=$(stat -c %s "$T/www/bulk.bin")
bench_nginx "$PORT" 64
bench_policy "$T/policy.json" 127.0.0.1 "$PORT"
t0=$(date +%s.%N)
# Inside, NO_PROXY lists 127.0.0.1: --noproxy '' sends it to the proxy anyway.
# shellcheck disable=SC2016 # expanded inside the sandbox
"$S" run --quiet --policy "$T/policy.json" --audit "$T/dl.jsonl" -- /bin/sh -c \
	'curl -sS -o /dev/null --noproxy "" -x "$HTTP_PROXY" "$0"' "http://127.0.0.1:$PORT/bulk.bin"
t1=$(date +%s.%N)
openssl dgst -sha256 <"$T/www/bulk.bin" >/dev/null
t2=$(date +%s.%N)
sum=$(sha256sum <"$T/www/bulk.bin" | cut -d' ' -f1)
got=$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["event"] == "net.request":
        print(r["data"]["body_sha256"], r["data"]["body_bytes"])' "$T/dl.jsonl")
if [ "$got" != "$sum $want" ]; then
	echo "evidence: the record says '$got', the file is '$sum $want'" >&2
	exit 1
fi
python3 - "$t0" "$t1" "$t2" "$want" <<'PY'
import sys
t0, t1, t2, n = map(float, sys.argv[1:])
mib = n / (1 << 20)
print("download through the proxy, digest on: %.2f s (%.0f MiB/s, sandbox start-up included)" % (t1 - t0, mib / (t1 - t0)))
print("SHA-256 of the same bytes (openssl):   %.2f s (%.0f MiB/s): the CPU the digest adds" % (t2 - t1, mib / (t2 - t1)))
print("as a share of the download's time:     %.0f %% (spent in the worker, beside its relaying)" % (100 * (t2 - t1) / (t1 - t0)))
PY
