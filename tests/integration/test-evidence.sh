#!/usr/bin/env bash
# Evidence an auditor checks offline (docs/audit.md): the public-key seal
# and its checkpoints, what entered the agent (response and file-read
# digests), the stated bound, bundles, delegation receipts and exports.
# Real sandboxes, a real nginx origin on loopback, a real SIGKILL.
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures nginx dnsmasq python3 sha256sum
port=$(free_port)
dns=$(free_port)
start_origin "$port" || skip_all "origin did not start"
start_dns "$dns" origin.test=127.0.0.1 tls.test=127.0.0.1
head -c 300000 /dev/urandom >"$W/nginx/html/blob.bin"
# An HTTPS origin (openssl s_server -WWW: the files of its directory, the
# body up to the close) whose CA the proxy trusts: inspected, its responses
# are seen and digested as plain HTTP's are.
tls=$(free_port)
make_tls_cert "$T/tls" tls.test
mkdir -p "$T/www"
head -c 200000 /dev/urandom >"$T/www/page.bin"
(cd "$T/www" && exec openssl s_server -quiet -accept "127.0.0.1:$tls" -cert "$T/tls/srv.pem" \
	-key "$T/tls/srv.key" -WWW) >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/"$tls") 2>/dev/null && break; sleep 0.1; done

# What a forger without any key can do: rewrite records and recompute the
# whole chain (seq, prev, hash, and the counts and hashes a checkpoint or the
# seal state), in the canonical form. Imported by the forging scripts below.
cat >"$T/rechain.py" <<'PY'
import hashlib, json

def rechain(recs, dst, fix=lambda i, r, prev: None):
    prev = hashlib.sha256(b"sandcap-audit-v1:" + recs[0]["sandbox"].encode()).hexdigest()
    out = []
    for i, r in enumerate(recs):
        r["seq"], r["prev"] = i, prev
        if r["event"] in ("audit.checkpoint", "audit.seal"):
            r["data"]["records"], r["data"]["final_hash"] = i, prev
        fix(i, r, prev)
        body = "{" + ",".join('"%s":%s' % (k, json.dumps(r[k], sort_keys=True, separators=(",", ":")))
                              for k in ["schema", "seq", "ts", "sandbox", "event", "data", "prev"]) + "}"
        r["hash"] = hashlib.sha256(bytes.fromhex(prev) + body.encode()).hexdigest()
        out.append(body[:-1] + ',"hash":"%s"}\n' % r["hash"])
        prev = r["hash"]
    open(dst, "w").write("".join(out))
PY

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
/usr/bin/curl -s -o /dev/null -o /dev/null http://origin.test:$port/blob.bin http://origin.test:$port/data.json
/usr/bin/curl -s -o /dev/null http://refused.test:$port/
getent hosts origin.test
python3 -c 'import socket; socket.socket().connect_ex((\"192.0.2.1\", 9))'
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
sleep = [r["seq"] for r in recs if r["event"] == "proc.exec" and r["data"]["path"].endswith("/sleep")]
# the checkpoint written while the sandbox slept: right after sleep's exec
print(len(sleep) == 1 and recs[sleep[0] + 1]["event"] == "audit.checkpoint")
PY
)
expect_eq "a checkpoint is written by time while the log is quiet" "$cps" "True"
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
expect_eq "... for the second request on the same connection too" "$(digest_of "$log" /data.json)" "$want"

# Inspected HTTPS: the digest of what the agent got after decryption. A
# tunnel (CONNECT by hand, the bytes counted on both ends) gets its bytes
# each way: exactly what crossed it, the CONNECT exchange not included.
cat >"$T/tunnel.py" <<'PY'
import socket, sys
host, port = sys.argv[1], sys.argv[2]
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(("CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (host, port, host, port)).encode())
head = b""
while not head.endswith(b"\r\n\r\n"):
    head += s.recv(1)
req = ("GET /blob.bin HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host).encode()
s.sendall(req)
got = 0
while True:
    d = s.recv(65536)
    if not d:
        break
    got += len(d)
print(head.split(b" ")[1].decode(), len(req), got)
PY
policy tls "{\"version\": 1,
  \"net\": {\"egress\": [{\"host\": \"origin.test\", \"ports\": [$port]},
                       {\"host\": \"tls.test\", \"ports\": [$tls], \"inspect\": true}],
            \"upstream_ca\": \"$T/tls/ca.pem\",
            \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\"}}"
tunnel=$("$SANDCAP" run --quiet --audit "$T/tls.jsonl" --policy "$T/tls.json" -- /bin/sh -c \
	'/usr/bin/curl -sS -o /dev/null https://tls.test:'"$tls"'/page.bin && python3 -c "$1" origin.test '"$port" \
	sh "$(cat "$T/tunnel.py")" 2>"$T/tls.err")
expect_eq "the inspected HTTPS fetch and the tunnel succeed" "$?:$(cut -d' ' -f1 <<<"$tunnel")" "0:200"
want="$(sha256sum <"$T/www/page.bin" | cut -d' ' -f1) 200000"
expect_eq "an inspected HTTPS response's digest is the origin's file's sha256sum" \
	"$(digest_of "$T/tls.jsonl" /page.bin)" "$want"
counts=$(python3 - "$T/tls.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["event"] == "net.tunnel.close" and r["data"]["host"] == "origin.test":
        print(r["data"]["bytes_out"], r["data"]["bytes_in"])
PY
)
expect_eq "the tunnel's record has the bytes each way that crossed it" "$counts" "$(cut -d' ' -f2- <<<"$tunnel")"
check "... more than the file's" test "$(cut -d' ' -f3 <<<"$tunnel")" -gt 300000

# ---- what entered the agent: file reads ----
mkdir -p "$T/data"
head -c 200000 /dev/urandom >"$T/data/input.bin"
echo "small" >"$T/data/note.txt"
chmod -R a+rX "$T/data"
policy reads "{\"version\": 1, \"audit\": {\"reads\": true},
  \"fs\": {\"grants\": [{\"path\": \"$T/data\", \"mode\": \"ro\", \"at\": \"/in\"}]}}"
"$SANDCAP" run --quiet --audit "$T/reads.jsonl" --policy "$T/reads.json" -- /bin/sh -c \
	'cat /in/input.bin >/dev/null; cat /in/note.txt /in/note.txt >/dev/null' >/dev/null 2>&1
expect_eq "the run with audit.reads succeeds" "$?" 0
reads=$(python3 - "$T/reads.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["event"] == "fs.read":
        d = r["data"]
        print(d["path"], d["host_path"], d["size"], d["sha256"])
PY
)
expect_eq "each file read is recorded once, with the sha256sum of the file" "$reads" \
	"/in/input.bin $T/data/input.bin 200000 $(sha256sum <"$T/data/input.bin" | cut -d' ' -f1)
/in/note.txt $T/data/note.txt 6 $(sha256sum <"$T/data/note.txt" | cut -d' ' -f1)"
expect_match "sandbox.start says how reads were watched" "$(grep -o '"fs_read":"[^"]*"' "$T/reads.jsonl")" '"fs_read":"fanotify"'
# The bound on reads: FR_MAX_FILES (4096) records a run, the rest counted.
mkdir -p "$T/many"
python3 -c '
import sys
for i in range(4100):
    open("%s/f%04d" % (sys.argv[1], i), "w").write("%d\n" % i)' "$T/many"
chmod -R a+rX "$T/many"
policy many "{\"version\": 1, \"audit\": {\"reads\": true},
  \"fs\": {\"grants\": [{\"path\": \"$T/many\", \"mode\": \"ro\", \"at\": \"/many\"}]}}"
"$SANDCAP" run --quiet --audit "$T/many.jsonl" --policy "$T/many.json" -- /bin/sh -c \
	'cat /many/* >/dev/null' >/dev/null 2>&1
out=$(python3 - "$T/many.jsonl" <<'PY'
import json, sys
reads = [json.loads(l)["data"] for l in open(sys.argv[1]) if json.loads(l)["event"] == "fs.read"]
files = [d for d in reads if d.get("op") != "truncated"]
cut = [d for d in reads if d.get("op") == "truncated"]
print(len(files), len({d["path"] for d in files}), all(d["sha256"] for d in files),
      [(d["count"], d["reason"]) for d in cut])
PY
)
expect_eq "past 4096 files read, the rest is counted in one record" "$out" "4096 4096 True [(4, 'file cap')]"
out=$("$SANDCAP" audit report --json "$T/many.jsonl" | python3 -c '
import json, sys
d = json.load(sys.stdin)["did"]
print(d["files_read_incomplete"], d["files_read_unrecorded"])')
expect_eq "... and the report says how many went unrecorded" "$out" "True 4"

# ---- the bound, from the log alone ----
bound=$("$SANDCAP" audit report --json "$log" | python3 -c '
import json, sys
b = json.load(sys.stdin)["bound"]
print(b["max_bytes_out"], b["bytes_out"] > 0, b["within_budget"], b["own_network_namespace"],
      ";".join("%s:%s" % (r["host"], ",".join(map(str, r["ports"]))) for r in b["reachable"]),
      ";".join(c["host"] for c in b["contacted"]), len(b["credentials"]), b["outside_budget"])')
expect_eq "the report states the bound: no budget, bytes left, the policy's host and port, what was contacted" \
	"$bound" "None True None True origin.test:$port origin.test 0 None"
# What else the sandbox had: its resolver and the attempts around the proxy,
# as the traffic records show them (a refused host, a getent, a connect to
# 192.0.2.1:9 in the run above).
bound=$("$SANDCAP" audit report --json "$log" | python3 -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
b = json.load(sys.stdin)["bound"]
ev = lambda n: [r["data"] for r in recs if r["event"] == n]
direct = sum(1 for d in ev("net.denied") if "protocol" in d) + \
    sum(d.get("suppressed", 0) for d in ev("limit.hit") if d["limit"] == "net.attempts")
on = recs[0]["data"].get("transparent") == "on"
print(b["direct_attempts"] == direct, b["dns_queries"] == len(ev("net.dns")),
      b["requests_denied"] == len(ev("net.denied")),
      (direct >= 1 and len(ev("net.dns")) >= 1) if on else "off",
      b["dns"].startswith("the sandbox resolver only" if on else "none in the sandbox"),
      b["sockets"].startswith("loopback of its own network namespace"))' "$log")
expect_eq "the bound's DNS, direct attempts and refusals are the traffic's" "$bound" \
	"True True True $(grep -q '"transparent":"on"' "$log" && echo True || echo off) True True"
policy budget "{\"version\": 1,
  \"net\": {\"egress\": [{\"host\": \"origin.test\", \"ports\": [$port]}], \"egress_budget\": \"64K\",
            \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\",
            \"credentials\": [{\"host\": \"origin.test\", \"header\": \"X-Evidence-Key\",
                               \"value_env\": \"EVIDENCE_KEY\", \"upstream\": \"http\",
                               \"name\": \"evidence-key\", \"max_requests\": 2}]}}"
EVIDENCE_KEY=secret-$$ "$SANDCAP" run --quiet --audit "$T/budget.jsonl" --policy "$T/budget.json" -- \
	/bin/sh -c "/usr/bin/curl -s -o /dev/null -d @/etc/services http://origin.test:$port/upload
/usr/bin/curl -s -o /dev/null http://origin.test:$port/data.json
/usr/bin/curl -s -o /dev/null http://origin.test:$port/data.json" >/dev/null 2>&1
sent=$(python3 -c '
import json, sys
print(sum(json.loads(l)["data"].get("bytes_out", 0) for l in open(sys.argv[1])
          if json.loads(l)["event"] in ("net.request", "net.tunnel.close")))' "$T/budget.jsonl")
bound=$("$SANDCAP" audit report --json "$T/budget.jsonl" | python3 -c '
import json, sys
b = json.load(sys.stdin)["bound"]
print(b["max_bytes_out"], b["egress_budget"], b["bytes_out"], b["within_budget"])')
expect_eq "with a budget: at most the budget could leave, and the bytes that did are the traffic's" \
	"$bound" "65536 65536 $sent True"
text=$("$SANDCAP" audit report "$T/budget.jsonl")
expect_match "the text report states it too" "$text" "budget    at most 64.0 KiB could leave"
expect_match "... and the sockets" "$text" "sockets   loopback of its own network namespace"
# The credential: usable for origin.test, at most 2 requests; the third was
# refused. Its use is the records'.
cred=$("$SANDCAP" audit report --json "$T/budget.jsonl" | python3 -c '
import json, sys
recs = [json.loads(l)["data"] for l in open(sys.argv[1]) if json.loads(l)["event"] == "net.request"]
c = json.load(sys.stdin)["bound"]["credentials"]
used = [r for r in recs if r.get("credential") == "evidence-key" and r["decision"] == "allow"]
print(len(c), c[0]["name"], c[0]["host"], c[0]["header"], c[0]["max_requests"], c[0]["requests"],
      c[0]["refused"], c[0]["bytes_out"] == sum(r["bytes_out"] for r in used) > 0, "value" in str(c))' "$T/budget.jsonl")
expect_eq "the bound names the usable credential, its limit and how much it was used" "$cred" \
	"1 evidence-key origin.test X-Evidence-Key 2 2 1 True False"
expect_match "... in the text too" "$text" \
	"credentials evidence-key: X-Evidence-Key for origin.test, used by 2 requests \([0-9]+ bytes out\), 1 refused"
check "... and never its value" bash -c "! grep -rq 'secret-$$' '$T/budget.jsonl'"
bound=$("$SANDCAP" audit report --json "$T/reads.jsonl" | python3 -c '
import json, sys
b = json.load(sys.stdin)["bound"]
print(b["max_bytes_out"], b["egress"])')
expect_eq "without egress nothing could leave" "$bound" "0 none: a network namespace with loopback only"

# ---- bundles ----
"$SANDCAP" audit bundle "$log" --out "$T/b.tar" --pubkey "$T/pub.key" --policy "$T/net.json" >/dev/null 2>"$T/err"
expect_eq "a bundle is written" "$?" 0
expect_eq "it holds the log, both reports, the public key, the policy and the manifest" \
	"$(tar tf "$T/b.tar" | paste -sd' ')" "manifest.json audit.jsonl report.json report.txt pubkey.pem policy.json"
out=$("$SANDCAP" audit verify --bundle "$T/b.tar" --pubkey "$T/pub.key" 2>&1)
expect_eq "the bundle verifies offline" "$?" 0
expect_match "... the signature with the given key, the policy against its digest" "$out" \
	"seal signature verified with the given public key; reports match the log; policy.json is the run's policy"
"$SANDCAP" audit verify --bundle "$T/b.tar" --pubkey "$T/other.pub" >/dev/null 2>&1
expect_eq "with another public key it does not" "$?" 1
"$SANDCAP" audit bundle "$log" --out "$T/wrong.tar" --policy "$T/reads.json" >/dev/null 2>&1
expect_eq "bundle refuses a policy that is not the run's" "$?" 1
python3 - "$T/b.tar" "$T" <<'PY'
import sys, tarfile
src = open(sys.argv[1], "rb").read()
for m in tarfile.open(sys.argv[1]).getmembers():
    b = bytearray(src)
    b[m.offset_data + m.size // 2] ^= 0x01
    open("%s/tampered-%s.tar" % (sys.argv[2], m.name), "wb").write(b)
PY
for m in manifest.json audit.jsonl report.json report.txt pubkey.pem policy.json; do
	out=$("$SANDCAP" audit verify --bundle "$T/tampered-$m.tar" 2>&1)
	expect_eq "a bundle with one byte of $m changed is refused" "$?" 1
done

# A run from a token: its claims and caveats go in, never its signature.
"$SANDCAP" token keygen --out "$T/root.key" >/dev/null 2>&1
"$SANDCAP" token mint --key "$T/root.key" --policy "$T/reads.json" --ttl 10m --id bundle-tok >"$T/t.tok"
"$SANDCAP" run --quiet --audit "$T/tok.jsonl" --token "$T/t.tok" --key "$T/root.key" -- /bin/true >/dev/null 2>&1
"$SANDCAP" audit bundle "$T/tok.jsonl" --out "$T/tok.tar" --token "$T/t.tok" >/dev/null 2>&1
out=$("$SANDCAP" audit verify --bundle "$T/tok.tar" 2>&1)
expect_match "a token run's bundle verifies and names its token" "$out" "token-claims.json names the run's token"
sig=$(sed 's/.*\.//' "$T/t.tok")
tar xOf "$T/tok.tar" token-claims.json >"$T/claims.json"
expect_eq "... without the token's signature" "$(grep -c -- "$sig" "$T/claims.json")" 0
expect_eq "... with its claims" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["claims"]["id"])' "$T/claims.json")" "bundle-tok"

# ---- exports ----
for fmt in ocsf otlp-json; do
	"$SANDCAP" audit export --format $fmt "$log" >"$T/export.$fmt"
	expect_eq "export --format $fmt succeeds" "$?" 0
done
out=$(python3 - "$T/export.ocsf" "$(wc -l <"$log")" <<'PY'
import json, sys
print(sum(1 for l in open(sys.argv[1]) if json.loads(l)) == int(sys.argv[2]))
PY
)
expect_eq "OCSF: one event per record" "$out" "True"
# The attributes OCSF 1.1.0 requires of each class and object used (from
# the schema's events/ and objects/: base event, System Activity, Network,
# Findings), checked on every event of four logs.
cat >"$T/ocsf_check.py" <<'PY'
import datetime, json, sys
CLASSES = {1007: (1, "Process Activity", ["actor", "device", "process"]),
           1001: (1, "File System Activity", ["actor", "device", "file"]),
           4001: (4, "Network Activity", ["src_endpoint", "dst_endpoint"]),
           2004: (2, "Detection Finding", ["finding_info"]),
           0: (0, "Base Event", [])}
OBJECTS = {"metadata": ["product", "version"], "finding_info": ["title", "uid"],
           "file": ["name", "type_id"], "device": ["type_id"]}
seen = {}
for path in sys.argv[1:]:
    for n, line in enumerate(open(path), 1):
        e = json.loads(line)
        where = "%s:%d %s" % (path, n, e.get("unmapped", {}).get("event"))
        for k in ("class_uid", "category_uid", "activity_id", "type_uid", "time", "severity_id"):
            assert type(e.get(k)) is int, (where, k)
        cat, name, req = CLASSES[e["class_uid"]]
        assert e["category_uid"] == cat and e["class_name"] == name, where
        assert e["type_uid"] == e["class_uid"] * 100 + e["activity_id"], where
        for k in req:
            assert isinstance(e.get(k), dict), (where, k)
        for obj, keys in OBJECTS.items():
            for k in keys:
                assert obj not in e or k in e[obj], (where, obj, k)
        for h in e.get("file", {}).get("hashes", []):
            assert h["algorithm_id"] == 3 and len(h["value"]) == 64, where
        md = e["metadata"]
        assert md["version"] == "1.1.0" and md["product"]["vendor_name"] == "sandcap", where
        ts = datetime.datetime.strptime(md["original_time"][:26] + "Z", "%Y-%m-%dT%H:%M:%S.%fZ")
        ms = int(ts.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
        assert abs(e["time"] - ms) <= 1, (where, e["time"], ms)
        seen.setdefault(e["unmapped"]["event"], set()).add(e["class_uid"])
for ev in ("sandbox.start", "proc.exec", "sandbox.exit", "net.request", "net.tunnel.close",
           "net.denied", "fs.grant", "fs.read", "audit.checkpoint", "audit.seal"):
    print(ev, *sorted(seen.get(ev, ())))
PY
for l in budget reads tls; do
	"$SANDCAP" audit export --format ocsf "$T/$l.jsonl" >"$T/$l.ocsf" 2>/dev/null
done
out=$(python3 "$T/ocsf_check.py" "$T/export.ocsf" "$T/budget.ocsf" "$T/reads.ocsf" "$T/tls.ocsf" 2>&1)
expect_eq "OCSF: every event has its class's required attributes; each native event its class" "$out" \
	"sandbox.start 1007
proc.exec 1007
sandbox.exit 1007
net.request 4001
net.tunnel.close 4001
net.denied 2004
fs.grant 1001
fs.read 1001
audit.checkpoint 0
audit.seal 0"
out=$(python3 - "$T/export.ocsf" "$T/budget.ocsf" "$T/reads.ocsf" <<'PY'
import json, sys
evs = [json.loads(l) for p in sys.argv[1:] for l in open(p)]
den = [e for e in evs if e["unmapped"]["event"] == "net.denied"]
fr = [e for e in evs if e["unmapped"]["event"] == "fs.read"]
print(sorted({e["finding_info"]["title"] for e in den}), {e["severity_id"] for e in den},
      {(e["file"]["name"], e["file"]["type_id"], e["activity_id"]) for e in fr if e["file"]["name"] == "note.txt"})
PY
)
expect_match "OCSF: a refusal is a Detection Finding naming its reason; fs.read a Read of a regular file" "$out" \
	"'net.denied: host-not-allowed'.*'net.denied: credential-limit'|'net.denied: credential-limit'.*'net.denied: host-not-allowed'"
expect_match "... of severity Medium; fs.read a Read of a regular file" "$out" "\{3\} \{\('note.txt', 1, 2\)\}"
out=$(python3 - "$T/export.otlp-json" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    lr = o["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert len(lr) == 1 and int(lr[0]["timeUnixNano"]) > 0 and lr[0]["body"]["kvlistValue"]
print("ok")
PY
)
expect_eq "OTLP JSON: one resourceLogs/scopeLogs/logRecords object per line" "$out" "ok"
head -n 3 "$log" >"$T/short.jsonl"
"$SANDCAP" audit export --format ocsf "$T/short.jsonl" >/dev/null 2>"$T/err"
expect_eq "export of a cut log says it is not sealed" "$?:$(grep -c 'not sealed' "$T/err")" "1:1"

# ---- delegation receipts ----
AGENTS=$(cd "$(dirname "$0")/../../examples/agents" && pwd)
cat >"$T/data/level1.sh" <<LEVEL1
python3 /agents/spawn.py --policy '{"limits": {"pids": 32}}' -- cat /in/note.txt
LEVEL1
chmod a+r "$T/data/level1.sh"
policy deleg "{\"version\": 1,
  \"fs\": {\"grants\": [{\"path\": \"$T/data\", \"mode\": \"ro\", \"at\": \"/in\"},
                        {\"path\": \"$AGENTS\", \"mode\": \"ro\", \"at\": \"/agents\"}]},
  \"limits\": {\"memory\": \"128M\", \"pids\": 128, \"wall\": \"60s\"},
  \"spawn\": {\"max_depth\": 2, \"max_children\": 4}}"
dlog=$T/deleg.jsonl
out=$("$SANDCAP" run --quiet --audit "$dlog" --policy "$T/deleg.json" -- python3 /agents/spawn.py \
	--policy '{"limits": {"memory": "100M"}}' -- sh /in/level1.sh 2>/dev/null)
expect_match "a two-level spawn runs" "$out" 'small'
out=$("$SANDCAP" audit verify "$dlog" --receipts 2>&1)
expect_eq "its receipts verify" "$?" 0
expect_match "... both levels recomputed" "$out" "receipts: 2 delegations recomputed, each child within its parent \(depth 2\)"
# A forger widens the grandchild's memory beyond its parent's and recomputes
# its receipt's digest and the whole chain (an unsigned log lets him).
widen() { # widen IN OUT digest|keep
	PYTHONPATH=$T python3 - "$@" <<'PY'
import hashlib, json, sys
from rechain import rechain
src, dst, how = sys.argv[1:]
recs = [json.loads(l) for l in open(src)]
child = [r for r in recs if r["event"] == "spawn.start"][-1]["data"]
child["plan"]["limits"]["memory"] = 512 << 20
if how == "digest":
    dump = json.dumps(child["plan"], sort_keys=True, separators=(",", ":"))
    child["receipt"]["child_digest"] = hashlib.sha256(dump.encode()).hexdigest()
rechain(recs, dst)
PY
}
widen "$dlog" "$T/widened.jsonl" digest
"$SANDCAP" audit verify "$T/widened.jsonl" >/dev/null 2>&1
expect_eq "the widened log's chain is whole (recomputed)" "$?" 0
out=$("$SANDCAP" audit verify "$T/widened.jsonl" --receipts 2>&1)
expect_eq "a hand-widened child fails the receipts" "$?" 1
expect_match "... saying it is wider than its parent" "$out" "its plan is wider than its parent .*memory"
widen "$dlog" "$T/widened2.jsonl" keep
out=$("$SANDCAP" audit verify "$T/widened2.jsonl" --receipts 2>&1)
expect_match "a widened child with its old digest fails on the digest" "$out" "child_digest is not the digest of the recorded plan"

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
# signatures kept), or the seal replaced by an unsigned one, or that and
# every checkpoint dropped.
forge() { # forge IN OUT keep-sig|unsigned|stripped
	PYTHONPATH=$T python3 - "$@" <<'PY'
import json, sys
from rechain import rechain
src, dst, mode = sys.argv[1:]
recs = [json.loads(l) for l in open(src)]
fake = dict(recs[2]); fake["event"] = "proc.exec"
fake["data"] = {"argv": ["/bin/innocent"], "path": "/bin/innocent", "pid": 7, "truncated": False}
recs.insert(3, fake)
if mode == "stripped":
    recs = [r for r in recs if r["event"] != "audit.checkpoint"]
def unsign(i, r, prev):
    if r["event"] == "audit.seal" and mode != "keep-sig":
        r["data"].pop("sig"); r["data"].pop("key_id")
rechain(recs, dst, unsign)
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
forge "$log" "$T/stripped.jsonl" stripped
refused "a forged record, every checkpoint dropped and resealed unsigned" "$T/stripped.jsonl" \
	"log sealed without a signature, but a public key was given"

# ---- the seal and the checkpoints sign themselves ----
# Every field of the seal and of a checkpoint is covered by the signature
# and the HMAC: a forger who edits one (the seal's time moved by a day, say)
# and recomputes the hashes by the chain rule (that record's and every one
# after it) is refused, signed (--pubkey) and unsigned (--key).
policy plain '{"version": 1}'
head -c 32 /dev/urandom >"$T/audit.key"
chmod 600 "$T/audit.key"
other_id=$("$SANDCAP" audit keygen --out "$T/third.key" --public "$T/third.pub" | sed -n 's/^key id //p')
"$SANDCAP" run --quiet --audit "$T/sk.jsonl" --audit-sign "$T/sign.key" --audit-key "$T/audit.key" \
	--audit-checkpoint-records 3 --policy "$T/plain.json" -- /bin/sh -c '/bin/true; /bin/true' \
	>/dev/null 2>&1
"$SANDCAP" run --quiet --audit "$T/k.jsonl" --audit-key "$T/audit.key" --policy "$T/plain.json" \
	-- /bin/true >/dev/null 2>&1
"$SANDCAP" audit verify "$T/sk.jsonl" --pubkey "$T/pub.key" --key "$T/audit.key" >/dev/null 2>&1
expect_eq "the signed and keyed log verifies" "$?" 0
"$SANDCAP" audit verify "$T/k.jsonl" --key "$T/audit.key" >/dev/null 2>&1
expect_eq "the keyed log verifies" "$?" 0
cat >"$T/edit.py" <<'PY'
import datetime, json, sys
from rechain import rechain
src, dst, which, field, other_id, cut = sys.argv[1:]
recs = [json.loads(l) for l in open(src)]
idx = [i for i, r in enumerate(recs) if r["event"] == which][0]
if cut == "cut":  # the log ends a record or two after the checkpoint
    recs = recs[: idx + 1] + [r for r in recs[idx + 1 : idx + 3] if r["event"] != "audit.seal"]
flip = lambda h: h[:-1] + ("0" if h[-1] != "0" else "1")
def later(ts):
    t = datetime.datetime.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S") + datetime.timedelta(days=1)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ts[19:]
def edit(i, r, prev):
    if i != idx:
        return
    d = r["data"]
    if field == "seq": r["seq"] += 1
    elif field == "ts": r["ts"] = later(r["ts"])
    elif field == "sandbox": r["sandbox"] += "x"
    elif field == "event": r["event"] = "audit.sealed"
    elif field == "prev": r["prev"] = flip(r["prev"])
    elif field == "records": d["records"] += 1
    elif field in ("final_hash", "hmac", "sig"): d[field] = flip(d[field])
    elif field == "keyed": d["keyed"] = not d["keyed"]
    elif field == "key_id": d["key_id"] = other_id
    else: raise SystemExit("no field " + field)
rechain(recs, dst, edit)
PY
edited() { # edited LOG EVENT FIELD [cut]: the edited log, rehashed, in $T/e.jsonl
	PYTHONPATH=$T python3 "$T/edit.py" "$1" "$T/e.jsonl" "$2" "$3" "$other_id" "${4:-whole}"
}
for f in seq ts sandbox event prev records final_hash keyed hmac sig key_id; do
	edited "$T/sk.jsonl" audit.seal "$f"
	"$SANDCAP" audit verify "$T/e.jsonl" --pubkey "$T/pub.key" >/dev/null 2>&1
	expect_eq "the seal's $f edited and rehashed fails verify --pubkey" "$?" 1
done
for f in seq ts sandbox event prev records final_hash keyed hmac; do
	edited "$T/k.jsonl" audit.seal "$f"
	"$SANDCAP" audit verify "$T/e.jsonl" --key "$T/audit.key" >/dev/null 2>&1
	expect_eq "an unsigned seal's $f edited and rehashed fails verify --key" "$?" 1
done
for f in seq ts sandbox prev records final_hash sig key_id; do
	edited "$T/sk.jsonl" audit.checkpoint "$f"
	"$SANDCAP" audit verify "$T/e.jsonl" --pubkey "$T/pub.key" >/dev/null 2>&1
	expect_eq "a checkpoint's $f edited and rehashed fails verify --pubkey" "$?" 1
	edited "$T/sk.jsonl" audit.checkpoint "$f" cut
	out=$("$SANDCAP" audit verify "$T/e.jsonl" --pubkey "$T/pub.key" 2>&1)
	expect_no_match "... in a log cut after it, it vouches for nothing ($f)" "$out" \
		"verified up to record [0-9]+, signed checkpoint"
done
edited "$T/sk.jsonl" audit.seal ts
out=$("$SANDCAP" audit verify "$T/e.jsonl" --pubkey "$T/pub.key" 2>&1)
expect_match "the seal's time moved: its signature does not verify" "$out" \
	"line [0-9]+: audit.seal signature does not verify with the public key"
edited "$T/k.jsonl" audit.seal ts
out=$("$SANDCAP" audit verify "$T/e.jsonl" --key "$T/audit.key" 2>&1)
expect_match "... nor, unsigned, its HMAC" "$out" "line [0-9]+: seal HMAC mismatch"

# ---- a supervisor SIGKILLed mid-run leaves a signed prefix ----
policy plain '{"version": 1}'
klog=$T/killed.jsonl
"$SANDCAP" run --quiet --audit "$klog" --audit-sign "$T/sign.key" --audit-checkpoint-records 100 \
	--policy "$T/plain.json" -- /bin/sh -c 'while :; do /bin/true; done' >/dev/null 2>&1 &
spid=$!
for _ in $(seq 300); do
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
