#!/usr/bin/env bash
# The HTML report of a million-record log: a real run that sends a million
# DNS queries to the sandbox resolver (one net.dns record each, as in
# test-records-load), rendered with `audit report --html`. The page must
# stay bounded (each kind keeps its first 750 and last 250 records, the
# counts of all) and load in headless Chromium; the times are printed, not
# judged (HTML_LOAD_QUERIES sets another count).
. "$(dirname "$0")/lib.sh"
need_root
command -v chromium >/dev/null || skip_all "chromium not installed (tools/install-deps test)"
use_fixtures nginx dnsmasq python3

HELPERS=$(dirname "$SANDCAP")/tests/helpers
[ -x "$HELPERS/dnsflood" ] || skip_all "tests/helpers not built"
QUERIES=${HTML_LOAD_QUERIES:-1000000}
case $SANDCAP in
*build-asan*) QUERIES=${HTML_LOAD_QUERIES:-50000} ;;
esac
MAX_BYTES=$((16 << 20)) # far above what this log gives; the page is bounded

port=$(free_port)
dns=$(free_port)
start_origin "$port" || skip_all "origin did not start"
start_dns "$dns" api.allowed.test=127.0.0.1
mkdir -p "$T/h"
cp "$HELPERS/dnsflood" "$T/h/"
cat >"$T/h/flood.sh" <<'SH'
ns=$(awk '/^nameserver/ { print $2; exit }' /etc/resolv.conf)
exec /h/dnsflood "${ns:-10.0.0.1}" "$1" api.allowed.test
SH
chmod -R 755 "$T/h"
policy load "{\"version\": 1,
  \"fs\": {\"grants\": [{\"path\": \"$T/h\", \"mode\": \"ro\", \"at\": \"/h\"}]},
  \"net\": {\"egress\": [{\"host\": \"api.allowed.test\", \"ports\": [$port]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\", \"rate\": \"1000000/s\"}}"
log=$T/flood.jsonl
"$SANDCAP" run --quiet --audit "$log" --policy "$T/load.json" -- sh /h/flood.sh "$QUERIES" >/dev/null 2>&1
grep -q '"transparent":"on"' "$log" || skip_all "no sandbox resolver here"
records=$(wc -l <"$log")
check "the run left at least $QUERIES records ($records, $(($(stat -c %s "$log") >> 20)) MiB)" test "$records" -ge "$QUERIES"

page=$T/flood.html
start=$(date +%s%N)
"$SANDCAP" audit report --html "$log" >"$page"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
size=$(stat -c %s "$page")
expect_eq "report --html of $records records exits 0 (${ms} ms, $size bytes)" "$rc" 0
check "the page is bounded: $size bytes, at most $MAX_BYTES" test "$size" -le "$MAX_BYTES"

rm -rf "$T/chrome-profile"
start=$(date +%s%N)
timeout 120 chromium --headless --disable-gpu --no-sandbox --user-data-dir="$T/chrome-profile" \
	--disable-background-networking --disable-component-update --no-first-run \
	--enable-logging=stderr --v=0 --virtual-time-budget=10000 \
	--dump-dom "file://$page#kind=dns&q=api.allowed.test" >"$T/dom" 2>"$T/dom.log"
ms=$((($(date +%s%N) - start) / 1000000))
check "Chromium loads and renders the page (${ms} ms, browser start included)" grep -q 'data-ready="1"' "$T/dom"
expect_eq "... without console errors" "$(grep -cE 'Uncaught|Refused to' "$T/dom.log")" 0
n=$(python3 -c 'import json, sys
print(json.load(sys.stdin)["kinds"]["dns"]["count"])' < <(sed -n 's/.*<script type="application\/json" id="sc-data">\(.*\)<\/script>.*/\1/p' "$page"))
expect_eq "the page counts every query" "$n" "$QUERIES"
pager=$(python3 - "$T/dom" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
m = re.search(r'id="dns"[^>]*>.*?<div class="pager"><span>([^<]*)</span>', s, re.S)
print(m.group(1) if m else "")
PY
)
expect_eq "the DNS table: the kept rows, and how many more were recorded" "$pager" \
	"1000 shown of 1,000 kept; $(python3 -c "print(f'{$QUERIES - 1000:,}')") more recorded, not in this page (the log has them)"
finish
