#!/usr/bin/env bash
# `sandcap audit report --html` of real runs, opened in headless Chromium:
# the page renders every section with the run's values (the denied host
# with its reason, the OOM kill on the timeline, the refused write, the
# denied syscall, the credential by name and never its value), its filters
# and search work from the URL's hash, it makes no network request, and
# strings the agent chose (argv, paths) with </script>, <!--, <img onerror>
# and U+2028 stay text. A tampered log is shown tampered at the right line,
# a cut one incomplete, a running one live; --key and --pubkey are stated.
. "$(dirname "$0")/lib.sh"
need_root
command -v chromium >/dev/null || skip_all "chromium not installed (tools/install-deps test)"
use_fixtures nginx dnsmasq python3 curl
port=$(free_port)
dns=$(free_port)
start_origin "$port" || skip_all "origin did not start"
start_dns "$dns" api.allowed.test=127.0.0.1 denied.test=127.0.0.1

. "$(dirname "$0")/html-lib.sh"

export HTML_TEST_SECRET="sk-never-in-the-page-$RANDOM$RANDOM"
head -c 32 /dev/urandom >"$T/key"
chmod 600 "$T/key"
mkdir -p "$T/w"
chmod 777 "$T/w"
policy run "{\"version\": 1, \"name\": \"html-report\",
  \"fs\": {\"grants\": [{\"path\": \"$T/w\", \"mode\": \"rw\", \"at\": \"/work\"}]},
  \"net\": {\"egress\": [{\"host\": \"api.allowed.test\", \"ports\": [$port]}],
            \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\",
            \"credentials\": [{\"host\": \"api.allowed.test\", \"header\": \"X-Api-Key\",
              \"value_env\": \"HTML_TEST_SECRET\", \"name\": \"html-test-key\", \"max_requests\": 10, \"upstream\": \"http\"}]},
  \"limits\": {\"memory\": \"64M\", \"wall\": \"60s\"}}"
log=$T/run.jsonl
# What the agent chooses: an argv and paths that would be markup, and a
# line separator (U+2028) that would end a JavaScript string.
inject='</script><script>alert(1)</script>'
"$SANDCAP" run --quiet --audit "$log" --audit-key "$T/key" --policy "$T/run.json" -- /bin/sh -c "
/usr/bin/curl -s http://api.allowed.test:$port/data.json >/dev/null; /bin/sleep 0.2
/usr/bin/curl -s http://denied.test:$port/ >/dev/null; /bin/sleep 0.2
mkdir -p '/work/$inject'; echo x > '/work/<img src=x onerror=alert(2)>'
/bin/echo '<!-- $inject' \"\$(printf '\\342\\200\\250')\" >/dev/null
touch '/usr/<img src=x onerror=alert(3)>'
/usr/bin/python3 -c 'import ctypes; ctypes.CDLL(None).mount(b\"none\", b\"/mnt\", b\"tmpfs\", 0, None)'
/usr/bin/python3 -c 'x = bytearray(256 << 20)'
" >/dev/null 2>&1
expect_eq "the run ends with the OOM kill's status" "$?" 137

page=$T/report.html
"$SANDCAP" audit report --html "$log" >"$page"
expect_eq "report --html of an intact log exits 0" "$?" 0
size=$(stat -c %s "$page")
ok "the page is one file of $size bytes"

# --- the file itself: self-contained, the data block cannot be closed ---
expect_eq "exactly two <script> elements (the data, the code)" "$(grep -o '<script' "$page" | wc -l)" 2
expect_eq "... and two </script>" "$(grep -oi '</script' "$page" | wc -l)" 2
expect_eq "no <!-- anywhere" "$(grep -c '<!--' "$page")" 0
check "no raw U+2028 or U+2029 in the file" python3 -c '
import sys; b = open(sys.argv[1], "rb").read(); sys.exit(b"\xe2\x80\xa8" in b or b"\xe2\x80\xa9" in b)' "$page"
expect_eq "no src= or href= to anything" "$(grep -Eoi '(src|href)[[:space:]]*=[[:space:]]*["'"'"']?[a-z]+:' "$page" | wc -l)" 0
expect_eq "no <link>, <img>, <iframe>, @import or url() in the markup" \
	"$(grep -Eoi '<(link|img|iframe|object|embed)\b|@import|url\(' "$page" | wc -l)" 0
check "a CSP allows only the page's own style and script" grep -q "default-src 'none'; style-src 'sha256-" "$page"
check "the credential's value is nowhere in the page" bash -c '! grep -qF "$HTML_TEST_SECRET" "$1"' _ "$page"

# --- rendered in Chromium ---
start=$(date +%s%N)
chrome "$T/dom" "file://$page"
ms=$((($(date +%s%N) - start) / 1000000))
expect_eq "the script ran to its end (data-ready; ${ms} ms in Chromium)" "$(grep -o 'data-ready="1"' "$T/dom" | head -1)" 'data-ready="1"'
console=$(grep -E 'CONSOLE|Uncaught|Refused to|Content Security Policy' "$T/dom.log")
expect_eq "the console has no errors and no CSP refusal" "$console" ""
page_requests=$(python3 - "$T/dom.net" <<'PY'
import json, sys
n = json.load(open(sys.argv[1]))
# requests of the page: an initiator (the file's opaque origin, "null");
# the browser's own (updates, accounts) have none
print(sorted({e["params"]["url"] for e in n["events"] if "url" in e.get("params", {})
              and e["params"].get("initiator") not in (None, "not an origin")}))
PY
)
expect_eq "the page makes no network request" "$page_requests" "[]"
expect_eq "the verdict: intact" "$(attr "$T/dom" verdict data-state)" intact
for s in access consumed did stopped bound records; do
	check "section '$s' is there" grep -q "<section id=\"$s\"" "$T/dom"
done
expect_match "the policy in plain words, as check prints it" "$(text "$T/dom" policy-text)" 'Policy "html-report"'
expect_match "the egress rule" "$(text "$T/dom" egress)" "api.allowed.test $port"
expect_match "the credential by name and header" "$(text "$T/dom" credentials)" "html-test-key api.allowed.test X-Api-Key"
expect_match "its use against its limit" "$(text "$T/dom" credential-use)" "html-test-key 1 of 10"
expect_match "bytes per host" "$(text "$T/dom" hosts)" "api.allowed.test 1"
expect_match "the allowed request, its status and body digest" "$(text "$T/dom" requests)" "GET api.allowed.test:$port /data.json 200 .* html-test-key [0-9a-f]{64}"
expect_match "the denied host with its reason" "$(text "$T/dom" denied)" "denied.test:$port / host-not-allowed"
expect_match "the OOM kill among the limits hit" "$(text "$T/dom" limits)" "memory"
check "... and marked on the activity charts" grep -q 'data-limit="memory"' "$T/dom"
expect_match "the denied syscall" "$(text "$T/dom" syscalls)" "mount"
expect_match "the refused write with errno and reason" "$(text "$T/dom" fs-denied)" "/usr/<img src=x onerror=alert\(3\)> EROFS read-only"
expect_match "the process tree has the execs with argv" "$(text "$T/dom" proc-tree)" "/usr/bin/python3: /usr/bin/python3 -c x = bytearray"
expect_match "the bound as the report states it" "$(text "$T/dom" bound-text)" "egress +only through the proxy"
expect_eq "the exit and why" "$(grep -o 'killed by the memory limit (OOM)' "$T/dom" | head -1)" "killed by the memory limit (OOM)"

# --- what the agent chose stays text ---
expect_eq "no <img> element in the DOM" "$(grep -oi '<img' "$T/dom" | wc -l)" 0
expect_eq "no script element but the page's two" "$(grep -oi '<script' "$T/dom" | wc -l)" 2
check "the </script> path is shown as text" grep -qF '/work/&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;' "$T/dom"
check "the <img onerror> path is shown as text" grep -qF '/work/&lt;img src=x onerror=alert(2)&gt;' "$T/dom"
check "the line separator in argv is shown escaped" grep -qF '\u{2028}' "$T/dom"

# --- filters and search, from the URL's hash ---
n_all=$(attr "$T/dom" all data-matching)
# the records the page lists that name onerror, counted from the log
want=$(python3 - "$log" <<'PY'
import json, sys
n = 0
for l in open(sys.argv[1]):
    r = json.loads(l); d = r["data"]
    if r["event"] in ("sandbox.start", "sandbox.exit", "audit.seal", "net.request.start"):
        continue
    if r["event"] == "net.request" and d.get("decision") != "allow":
        continue
    n += "onerror" in json.dumps(d, ensure_ascii=False).lower()
print(n)
PY
)
chrome "$T/q" "file://$page#q=onerror"
expect_eq "search: only the $want records naming onerror" "$(attr "$T/q" all data-matching)" "$want"
expect_eq "... the filter bar says so" "$(grep -o 'id="f-count"[^<]*>[^<]*' "$T/q" | sed 's/.*>//')" "$want of $n_all kept records match"
chrome "$T/k" "file://$page#kind=denied"
expect_eq "kind filter: the one refused request" "$(attr "$T/k" all data-matching)" 1
expect_eq "... and the request table is empty" "$(attr "$T/k" requests data-matching)" 0
chrome "$T/h" "file://$page#host=api.allowed.test"
expect_eq "host filter: the allowed request" "$(attr "$T/h" requests data-matching)" 1
expect_eq "... no denied one" "$(attr "$T/h" denied data-matching)" 0
pid=$(python3 -c 'import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["event"] == "syscall.denied": print(r["data"]["pid"])' "$log")
chrome "$T/p" "file://$page#proc=$pid"
expect_eq "process filter: the mount's pid has its exec and its denied syscall" "$(attr "$T/p" all data-matching)" 2
if chromium --headless --disable-gpu --no-sandbox --user-data-dir="$T/chrome-profile" --window-size=1280,4000 \
	--virtual-time-budget=5000 --screenshot="$T/report.png" "file://$page" >/dev/null 2>&1 && [ -s "$T/report.png" ]; then
	ok "a screenshot is taken ($(stat -c %s "$T/report.png") bytes)"
	[ -n "${HTML_SCREENSHOT:-}" ] && cp "$T/report.png" "$HTML_SCREENSHOT"
else
	not_ok "a screenshot is taken"
fi

# --- the verdict of a changed log, a cut one, a live one, and the keys ---
python3 - "$log" "$T/tampered.jsonl" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(True)
lines[3] = lines[3].replace('"pid":', '"pid":1', 1)
open(sys.argv[2], "w").write("".join(lines))
PY
"$SANDCAP" audit report --html "$T/tampered.jsonl" >"$T/tampered.html"
expect_eq "a tampered log: exit 1" "$?" 1
chrome "$T/tdom" "file://$T/tampered.html"
expect_eq "... shown tampered" "$(attr "$T/tdom" verdict data-state)" tampered
expect_match "... at line 4, record seq 3" "$(text "$T/tdom" verdict)" "Broken at line 4 \(record seq 3\)"
head -n -2 "$log" >"$T/cut.jsonl"
"$SANDCAP" audit report --html "$T/cut.jsonl" >"$T/cut.html"
chrome "$T/cdom" "file://$T/cut.html"
expect_eq "a log cut before its seal: incomplete" "$(attr "$T/cdom" verdict data-state)" incomplete
out=$("$SANDCAP" audit report --html --key "$T/key" "$log" | grep -o 'Seal HMAC verified with the key given' | head -1)
expect_eq "--key: the seal's HMAC is checked" "$out" "Seal HMAC verified with the key given"
head -c 32 /dev/urandom >"$T/other"
chmod 600 "$T/other"
out=$("$SANDCAP" audit report --html --key "$T/other" "$log" | grep -o 'data-state="[a-z]*"')
expect_eq "--key with the wrong key: not intact" "$out" 'data-state="tampered"'
"$SANDCAP" audit report --key "$T/key" "$log" >/dev/null 2>&1
expect_eq "--key without --html is a usage error" "$?" 2

"$SANDCAP" audit keygen --out "$T/sign.key" --public "$T/pub.key" >"$T/keygen.out"
key_id=$(sed -n 's/^key id //p' "$T/keygen.out")
policy quiet '{"version": 1}'
"$SANDCAP" run --quiet --audit "$T/signed.jsonl" --audit-sign "$T/sign.key" --policy "$T/quiet.json" -- /bin/true
out=$("$SANDCAP" audit report --html --pubkey "$T/pub.key" "$T/signed.jsonl" | grep -o "Signed by key [0-9a-f]*: the seal" | head -1)
expect_eq "--pubkey: signed by which key" "$out" "Signed by key $key_id: the seal"

"$SANDCAP" run --quiet --audit "$T/live.jsonl" --policy "$T/quiet.json" -- /bin/sleep 4 &
runner=$!
for _ in $(seq 50); do grep -q '/bin/sleep' "$T/live.jsonl" 2>/dev/null && break; sleep 0.1; done
"$SANDCAP" audit report --html "$T/live.jsonl" >"$T/live.html"
expect_eq "a log still written: shown live" "$(grep -o 'data-state="[a-z]*"' "$T/live.html")" 'data-state="live"'
wait "$runner"
"$SANDCAP" audit report --html "$T/live.jsonl" >"$T/live.html"
expect_eq "... and intact once the run ended" "$(grep -o 'data-state="[a-z]*"' "$T/live.html")" 'data-state="intact"'
finish
