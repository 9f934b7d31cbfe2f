#!/usr/bin/env bash
# Scenario 5: audit-trail reconstruction. A scripted agent runs programs,
# tries a refused syscall and hits its memory limit; the log is verified,
# reconstructed, then tampered with and caught.
. "$(dirname "$0")/lib.sh"
bold "Scenario 5 - audit trail: verify, reconstruct, detect tampering"
head -c 32 /dev/urandom >"$W/audit.key"
chmod 600 "$W/audit.key"
cat >"$W/policy.json" <<JSON
{ "version": 1, "name": "audited", "limits": { "memory": "64M", "wall": "20s" },
  "audit": { "exec": true, "denied_syscalls": true } }
JSON
log=$W/run.jsonl
section "run: a scripted agent"
"$SANDCAP" run --audit "$log" --audit-key "$W/audit.key" --policy "$W/policy.json" -- sh -c '
  uname -a >/dev/null; ls / >/dev/null
  python3 -c "import ctypes; l = ctypes.CDLL(None); print(\"mount ->\", l.mount(b\"none\", b\"/tmp\", b\"tmpfs\", 0, None), ctypes.get_errno())"
  python3 -c "x = bytearray(512 << 20)"' 2>&1 | indent
section "sandcap audit verify"
"$SANDCAP" audit verify "$log" --key "$W/audit.key" 2>&1 | indent
expect "the untouched log verifies" "$SANDCAP" audit verify "$log" --key "$W/audit.key"
section "sandcap audit report"
"$SANDCAP" audit report "$log" | indent
report=$("$SANDCAP" audit report "$log")
expect "report lists the programs run" contains "$report" "python3"
expect "report shows the refused syscall" grep -q '"event":"syscall.denied"' "$log"
expect "report shows the memory limit hit" grep -q '"limit":"memory"' "$log"
section "tampering"
cp "$log" "$W/edited.jsonl"
sed -i '3s/"pid":[0-9]*/"pid":1/' "$W/edited.jsonl"
out=$("$SANDCAP" audit verify "$W/edited.jsonl" --key "$W/audit.key" 2>&1)
echo "edited record 3:  $out" | indent
expect "an edited record is caught at line 3" contains "$out" "line 3"
head -n -2 "$log" >"$W/cut.jsonl"
out=$("$SANDCAP" audit verify "$W/cut.jsonl" --key "$W/audit.key" 2>&1)
echo "cut-off tail:     $out" | indent
expect "a cut-off tail is caught" fails "$SANDCAP" audit verify "$W/cut.jsonl" --key "$W/audit.key"
section "HTML reports"
html_report scenario-5-intact "$log" --key "$W/audit.key"
html_report scenario-5 "$W/edited.jsonl" --key "$W/audit.key"
exit $FAILS
