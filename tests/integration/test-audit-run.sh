#!/usr/bin/env bash
# A scripted agent run produces exactly the expected audit event sequence;
# the log verifies; every kind of tampering is caught at the right line; and
# the report matches a golden text with the variable fields masked.
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures nginx dnsmasq python3
port=$(free_port)
dns=$(free_port)
start_origin "$port" || skip_all "origin did not start"
start_dns "$dns" api.allowed.test=127.0.0.1 denied.test=127.0.0.1
head -c 32 /dev/urandom >"$T/key"
chmod 600 "$T/key"
policy run "{\"version\": 1, \"name\": \"scripted\",
  \"net\": {\"egress\": [{\"host\": \"api.allowed.test\", \"ports\": [$port]}],
            \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\"},
  \"limits\": {\"memory\": \"64M\", \"wall\": \"60s\"},
  \"audit\": {\"sample_interval\": null}}"
log=$T/run.jsonl
# Each step ends before the next starts (sleep), so the order is deterministic.
"$SANDCAP" run --quiet --audit "$log" --audit-key "$T/key" --policy "$T/run.json" -- /bin/sh -c "
/usr/bin/curl -s http://api.allowed.test:$port/data.json >/dev/null; /bin/sleep 0.3
/usr/bin/curl -s http://denied.test:$port/ >/dev/null; /bin/sleep 0.3
/usr/bin/python3 -c 'import ctypes; ctypes.CDLL(None).mount(b\"none\", b\"/mnt\", b\"tmpfs\", 0, None)'
/usr/bin/python3 -c 'x = bytearray(256 << 20)'
" >/dev/null 2>&1
rc=$?
expect_eq "the run ends with the OOM kill's status" "$rc" 137

seq=$(python3 - "$log" <<'PY'
import json, sys
out = []
for line in open(sys.argv[1]):
    r = json.loads(line); d = r["data"]; e = r["event"]
    if e == "proc.exec":
        argv = d.get("argv", [])
        e += " " + (argv[0] if argv[0] == "sandcap-init" else d.get("path", ""))
    elif e in ("net.request", "net.denied"):
        e += " %s %s" % (d.get("host"), d.get("decision", ""))
    elif e == "syscall.denied":
        e += " " + d.get("syscall", "")
    elif e == "limit.hit":
        e += " " + d.get("limit", "")
    out.append(e.rstrip())
# A request is logged when the proxy sees the connection end, which may be
# just after the next exec (the sleep): sleeps are counted, not ordered.
sleeps = out.count("proc.exec /bin/sleep")
print("\n".join(x for x in out if x != "proc.exec /bin/sleep"))
print("sleeps: %d" % sleeps)
PY
)
expect_eq "exactly the expected event sequence" "$seq" "sandbox.start
proc.exec sandcap-init
proc.exec /bin/sh
proc.exec /usr/bin/curl
net.request.start
net.request api.allowed.test allow
proc.exec /usr/bin/curl
net.denied denied.test
net.request denied.test deny
proc.exec /usr/bin/python3
syscall.denied mount
proc.exec /usr/bin/python3
limit.hit memory
sandbox.exit
audit.seal
sleeps: 2"

# The seccomp layer as sandbox.start records it: with the listener.
mode=$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["data"]["layers"]["seccomp"])' "$log")
expect_eq "sandbox.start says the seccomp filter has its listener" "$mode" "active, with user notification"

check "the untouched log verifies with the key" "$SANDCAP" audit verify "$log" --key "$T/key"

# The report names the policy by the digest sandbox.start carries.
digest=$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["data"]["policy_digest"])' "$log")
reported=$("$SANDCAP" audit report --json "$log" | python3 -c 'import json, sys; print(json.load(sys.stdin)["access"]["policy_digest"])' 2>&1)
expect_eq "report --json names the policy digest of sandbox.start" "$reported" "$digest"

# tamper: verify must fail, naming the right line
tamper() { # tamper NAME EXPECTED_LINE PYTHON-EXPR-ON-lines
	python3 - "$log" "$T/t.jsonl" "$3" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(True)
exec(sys.argv[3])
open(sys.argv[2], "w").write("".join(lines))
PY
	out=$("$SANDCAP" audit verify "$T/t.jsonl" --key "$T/key" 2>&1)
	local rc=$?
	if [ $rc -ne 0 ] && [[ $out =~ line\ $2: ]]; then ok "$1 is caught at line $2"; else not_ok "$1 is caught at line $2 (rc $rc: $out)"; fi
}
tamper "an edited byte" 4 'lines[3] = lines[3].replace("\"pid\":", "\"pid\":1", 1)'
tamper "a deleted record" 5 'del lines[4]'
tamper "a swapped pair" 5 'lines[4], lines[5] = lines[5], lines[4]'
tamper "a forged record with a recomputed hash (seen at the next line)" 8 '
import hashlib, json
prev = json.loads(lines[5])
rec = {"schema": prev["schema"], "seq": prev["seq"] + 1, "ts": prev["ts"], "sandbox": prev["sandbox"], "event": "proc.exec",
       "data": {"argv": ["innocent"], "path": "/bin/true", "pid": 1}, "prev": prev["hash"]}
body = json.dumps(rec, separators=(",", ":"))
rec["hash"] = hashlib.sha256(bytes.fromhex(prev["hash"]) + body.encode()).hexdigest()
lines.insert(6, json.dumps(rec, separators=(",", ":")) + "\n")'
n=$(wc -l <"$log")
tamper "a cut-off tail" "$((n - 1))" 'del lines[-2:]'
out=$(head -c 32 /dev/urandom >"$T/other"; chmod 600 "$T/other"; "$SANDCAP" audit verify "$log" --key "$T/other" 2>&1)
expect_match "the wrong key is caught" "$out" "HMAC|key|seal"

mask() {
	sed -E -e "s#$T#TMP#g" -e "s/\b$port\b/PORT/g" -e "s/\b$dns\b/DNSPORT/g" \
		-e 's/sc-[0-9a-f]{16}/sc-ID/g' -e 's/[0-9a-f]{64}/HASH/g' \
		-e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z/TS/g' -e 's/\[[0-9]+\]/[PID]/g' \
		-e 's/[0-9]+(\.[0-9]+)? (s|ms|B|KiB|MiB|GiB)\b/N \2/g' -e 's/pid [0-9]+/pid N/g' \
		-e 's/out [0-9]+, in [0-9]+/out N, in N/g' -e 's/cgroup=v[12]/cgroup=vN/g' \
		-e 's/, synchronous wake-up//'
}
golden=$(dirname "$0")/golden/audit-report.txt
"$SANDCAP" audit report "$log" | mask >"$T/report.txt"
if [ -n "${SANDCAP_UPDATE_GOLDEN:-}" ]; then cp "$T/report.txt" "$golden"; fi
if diff -u "$golden" "$T/report.txt" >"$T/report.diff"; then
	ok "the report matches the golden text (variable fields masked)"
else
	not_ok "the report matches the golden text"
	sed 's/^/# /' "$T/report.diff"
fi
finish
