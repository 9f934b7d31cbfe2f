#!/usr/bin/env bash
# Evidence an auditor checks offline (docs/audit.md): the public-key seal
# and its checkpoints, what entered the agent (response and file-read
# digests), the stated bound, bundles, delegation receipts and exports.
# Real sandboxes, a real nginx origin on loopback, a real SIGKILL.
. "$(dirname "$0")/lib.sh"
need_root
for tool in nginx dnsmasq python3 sha256sum; do
	command -v $tool >/dev/null || skip_all "$tool not installed"
done
W=$T
PIDS=()
. "$(dirname "$0")/../../tools/fixtures.sh"
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; cleanup_dir' EXIT
port=$(free_port)
dns=$(free_port)
start_origin "$port" || skip_all "origin did not start"
start_dns "$dns" origin.test=127.0.0.1
head -c 300000 /dev/urandom >"$W/nginx/html/blob.bin"

# ---- the public-key seal ----
"$SANDCAP" audit keygen --out "$T/sign.key" --public "$T/pub.key" >"$T/keygen.out" 2>&1
check "keygen writes a key pair" test -s "$T/sign.key" -a -s "$T/pub.key"
expect_eq "the private key is mode 0600" "$(stat -c %a "$T/sign.key")" 600
"$SANDCAP" audit keygen --out "$T/sign.key" --public "$T/other.pub" >/dev/null 2>"$T/err"
expect_eq "keygen never overwrites a key" "$?" 1
"$SANDCAP" audit keygen --out "$T/other.key" --public "$T/other.pub" >/dev/null 2>&1
key_id=$(sed -n 's/^key id //p' "$T/keygen.out")

policy net "{\"version\": 1,
  \"net\": {\"egress\": [{\"host\": \"origin.test\", \"ports\": [$port]}],
            \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\"}}"
log=$T/net.jsonl
"$SANDCAP" run --quiet --audit "$log" --audit-sign "$T/sign.key" --audit-checkpoint-records 4 \
	--policy "$T/net.json" -- /bin/sh -c "
/usr/bin/curl -s -o /dev/null http://origin.test:$port/blob.bin
/usr/bin/curl -s -o /dev/null http://origin.test:$port/data.json
/bin/true; /bin/true; /bin/true" >/dev/null 2>&1
expect_eq "the networked run succeeds" "$?" 0
out=$("$SANDCAP" audit verify "$log" --pubkey "$T/pub.key" 2>&1)
expect_eq "the signed log verifies with the public key" "$?" 0
expect_match "verify says the signature was checked" "$out" "seal signature verified with the public key"
expect_match "verify names the key" "$out" "signed by key $key_id, [1-9][0-9]* checkpoints"
out=$("$SANDCAP" audit verify "$log" --pubkey "$T/other.pub" 2>&1)
expect_eq "another public key is refused" "$?" 1
expect_match "... saying whose key signed" "$out" "not by the given public key"

# A quiet log is signed by time: no record comes during the sleep, yet a
# checkpoint covers the records before it.
"$SANDCAP" run --quiet --audit "$T/timed.jsonl" --audit-sign "$T/sign.key" \
	--audit-checkpoint-records 0 --audit-checkpoint-interval 0.2 --policy "$T/net.json" \
	-- /bin/sh -c '/bin/true; /bin/sleep 1' >/dev/null 2>&1
cps=$(python3 - "$T/timed.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
cps = [r for r in recs if r["event"] == "audit.checkpoint"]
# the one written while the sandbox slept: right after the exec of sleep
print(len(cps), any(recs[r["seq"] - 1]["event"] == "proc.exec" for r in cps))
PY
)
expect_eq "a checkpoint is written by time while the log is quiet" "$cps" "1 True"
"$SANDCAP" audit verify "$T/timed.jsonl" --pubkey "$T/pub.key" >/dev/null 2>&1
expect_eq "... and the log verifies" "$?" 0

# ---- what entered the agent: response digests ----
digest_of() { # digest_of LOG PATH: body_sha256 and body_bytes of that request
	python3 - "$1" "$2" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["event"] == "net.request" and r["data"].get("path") == sys.argv[2]:
        print(r["data"].get("body_sha256"), r["data"].get("body_bytes"))
PY
}
want="$(sha256sum <"$W/nginx/html/blob.bin" | cut -d' ' -f1) 300000"
expect_eq "the response digest is the origin's file's sha256sum" "$(digest_of "$log" /blob.bin)" "$want"
want="$(sha256sum <"$W/nginx/html/data.json" | cut -d' ' -f1) $(stat -c %s "$W/nginx/html/data.json")"
expect_eq "... for the second request too" "$(digest_of "$log" /data.json)" "$want"

# ---- tampering, with the public key and no secret ----
refused() { # refused NAME FILE REGEX
	local out
	out=$("$SANDCAP" audit verify "$2" --pubkey "$T/pub.key" 2>&1)
	expect_eq "$1 is refused" "$?" 1
	expect_match "... $3" "$out" "$3"
}
n=$(wc -l <"$log")
sed '3s/"pid":/"pid":1/' "$log" >"$T/edited.jsonl"
refused "an edited record" "$T/edited.jsonl" "line 3: hash mismatch"
awk 'NR == 3 { held = $0; next } { print } NR == 4 { print held }' "$log" >"$T/reordered.jsonl"
refused "reordered records" "$T/reordered.jsonl" "line 3: seq 3, expected 2"
head -n $((n - 3)) "$log" >"$T/cut.jsonl"
refused "a cut tail" "$T/cut.jsonl" "log not sealed"
expect_match "... and says how far it is signed" \
	"$("$SANDCAP" audit verify "$T/cut.jsonl" --pubkey "$T/pub.key" 2>&1)" \
	"verified up to record [0-9]+, signed checkpoint; [0-9]+ records after it unverified"
# A forger without the key: a record inserted, every hash after it
# recomputed, the checkpoints' and seal's counts and hashes updated (their
# signatures kept), or the seal replaced by an unsigned one.
forge() { # forge IN OUT MODE
	python3 - "$@" <<'PY'
import hashlib, json, sys
src, dst, mode = sys.argv[1:]
recs = [json.loads(l) for l in open(src)]
fake = dict(recs[2]); fake["event"] = "proc.exec"
fake["data"] = {"argv": ["/bin/innocent"], "path": "/bin/innocent", "pid": 7, "truncated": False}
recs.insert(3, fake)
prev = hashlib.sha256(b"sandcap-audit-v1:" + recs[0]["sandbox"].encode()).hexdigest()
out = []
for i, r in enumerate(recs):
    r["seq"], r["prev"] = i, prev
    if r["event"] in ("audit.checkpoint", "audit.seal"):
        r["data"]["records"], r["data"]["final_hash"] = i, prev
        if r["event"] == "audit.seal" and mode == "unsigned":
            r["data"].pop("sig"); r["data"].pop("key_id")
    body = "{" + ",".join('"%s":%s' % (k, json.dumps(r[k], sort_keys=True, separators=(",", ":")))
                          for k in ["schema", "seq", "ts", "sandbox", "event", "data", "prev"]) + "}"
    r["hash"] = hashlib.sha256(bytes.fromhex(prev) + body.encode()).hexdigest()
    out.append(body[:-1] + ',"hash":"%s"}\n' % r["hash"])
    prev = r["hash"]
open(dst, "w").write("".join(out))
PY
}
forge "$log" "$T/forged.jsonl" keep-sig
out=$("$SANDCAP" audit verify "$T/forged.jsonl" 2>&1)
expect_eq "the forged log's chain is whole (the forger recomputed it)" "$?" 0
refused "a forged record, chain recomputed" "$T/forged.jsonl" \
	"audit.checkpoint signature does not verify with the public key"
forge "$log" "$T/resealed.jsonl" unsigned
refused "a forged record, resealed unsigned" "$T/resealed.jsonl" \
	"signature does not verify|sealed without a signature"

# ---- a supervisor SIGKILLed mid-run leaves a signed prefix ----
policy plain '{"version": 1}'
klog=$T/killed.jsonl
"$SANDCAP" run --quiet --audit "$klog" --audit-sign "$T/sign.key" --audit-checkpoint-records 100 \
	--policy "$T/plain.json" -- /bin/sh -c 'while :; do /bin/true; done' >/dev/null 2>&1 &
spid=$!
for _ in $(seq 100); do
	c=$(grep -c '"event":"audit.checkpoint"' "$klog" 2>/dev/null)
	[ "${c:-0}" -ge 3 ] && break
	sleep 0.1
done
{ kill -KILL "$spid"; wait "$spid"; } 2>/dev/null
sleep 0.2
out=$("$SANDCAP" audit verify "$klog" --pubkey "$T/pub.key" 2>&1)
expect_eq "the killed run's log does not verify as whole" "$?" 1
last_cp=$(grep -n '"event":"audit.checkpoint"' "$klog" | tail -1 | cut -d: -f1)
total=$(grep -c '' "$klog")
expect_match "it is verified up to its last checkpoint" "$out" \
	"verified up to record $((last_cp - 1)), signed checkpoint; [0-9]+ records after it unverified"
expect_match "... and names what is missing" "$out" "log not sealed|incomplete record"
echo "# killed log: $total lines, last checkpoint at line $last_cp"
expect_eq "no process of the killed run is left" "$(pgrep -fc 'while :; do /bin/true')" 0

finish
