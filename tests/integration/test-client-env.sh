#!/usr/bin/env bash
# The agent's proxy environment against real clients (httpx sync and async,
# requests, urllib, curl, wget, git, Node's fetch): each constructs its
# client with no configuration and makes a call through the proxy; the
# loopback origin's access log says which calls arrived.
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures nginx dnsmasq curl wget git python3 node
/usr/bin/python3 -c 'import httpx, requests' 2>/dev/null || skip_all "python3-httpx or python3-requests not installed"

port=$(free_port)
dns=$(free_port)
start_origin "$port" || skip_all "origin did not start"
start_dns "$dns" api.allowed.test=127.0.0.1 || skip_all "dns did not start"
LOG=$T/nginx/access.log
G="\"fs\": {\"grants\": [{\"path\": \"$T/c\", \"mode\": \"ro\", \"at\": \"/c\"}]},"

# clients SCHEME://HOST:PORT TAG: one call per client, each tagged in the query
mkdir -p "$T/c"
cat >"$T/c/clients.sh" <<'SH'
b=$1 t=$2
python3 - "$b" "$t" <<'PY'
import sys, asyncio, urllib.request
import httpx, requests
b, t = sys.argv[1], sys.argv[2]
def say(name, f):
    try:
        print(name, f())
    except Exception as e:
        print(name, "FAILED", type(e).__name__, e)
say("httpx-client", lambda: httpx.Client().get(f"{b}/data.json?c={t}-httpx-client").json()["answer"])
say("httpx-get", lambda: httpx.get(f"{b}/data.json?c={t}-httpx-get").json()["answer"])
async def a():
    async with httpx.AsyncClient() as c:
        return (await c.get(f"{b}/data.json?c={t}-httpx-async")).json()["answer"]
say("httpx-async", lambda: asyncio.run(a()))
say("requests", lambda: requests.get(f"{b}/data.json?c={t}-requests", timeout=10).json()["answer"])
say("urllib", lambda: urllib.request.urlopen(f"{b}/data.json?c={t}-urllib", timeout=10).read().decode().strip())
PY
echo "curl $(curl -sS --max-time 10 "$b/data.json?c=$t-curl" 2>&1)"
echo "wget $(wget -q -T 10 -O- "$b/data.json?c=$t-wget" 2>&1)"
# no repository there: the origin's log shows git's request, the 404 is expected
git ls-remote "$b/$t-git" >/dev/null 2>&1; echo "git asked"
node -e 'fetch(process.argv[1]).then(r => r.json()).then(j => console.log("node-fetch", j.answer),
  e => console.log("node-fetch FAILED", e.cause ? e.cause.code : e.message))' "$b/data.json?c=$t-node-fetch"
SH
want='httpx-client 42
httpx-get 42
httpx-async 42
requests 42
urllib {"answer": 42}
curl {"answer": 42}
wget {"answer": 42}
git asked
node-fetch 42'
arrived() { # arrived TAG: every client's tagged request in the access log
	local c missing=
	for c in httpx-client httpx-get httpx-async requests urllib curl wget node-fetch; do
		grep -q "GET /data.json?c=$1-$c HTTP" "$LOG" || missing+=" $c"
	done
	grep -q "GET /$1-git/info/refs?service=git-upload-pack HTTP" "$LOG" || missing+=" git"
	[ -z "$missing" ] || { echo "# not at the origin:$missing"; return 1; }
}
run_p() { "$SANDCAP" run --quiet --audit "$T/audit-$1.jsonl" --policy "$T/$2.json" -- "${@:3}"; }

# A rule for a name.
policy name "{\"version\": 1, $G \"net\": {\"egress\": [{\"host\": \"api.allowed.test\", \"ports\": [$port]}],
  \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\"}}"
out=$(run_p name name bash /c/clients.sh "http://api.allowed.test:$port" name 2>&1)
expect_eq "every client reaches a named rule with the default environment" "$out" "$want"
check "... and each request arrived at the origin" arrived name
check "... each through the proxy (net.request)" bash -c "[ \$(grep -c '\"event\":\"net.request\"' '$T/audit-name.jsonl') -ge 9 ]"

# A rule for the origin's loopback address: 127.0.0.1 inside is the
# sandbox's own, so the request must go through the proxy.
policy lo "{\"version\": 1, $G \"net\": {\"egress\": [{\"host\": \"127.0.0.1\", \"ports\": [$port]}],
  \"allow_private\": [\"127.0.0.1/32\"]}}"
out=$(run_p lo lo bash /c/clients.sh "http://127.0.0.1:$port" lo 2>&1)
expect_eq "every client reaches a rule on 127.0.0.1 with the default environment" "$out" "$want"
check "... and each request arrived at the origin" arrived lo
check "... none refused as not-a-known-name" bash -c "! grep -q not-a-known-name '$T/audit-lo.jsonl'"

# A rule for localhost: the proxy resolves it to the host's loopback.
policy lh "{\"version\": 1, $G \"net\": {\"egress\": [{\"host\": \"localhost\", \"ports\": [$port]}],
  \"allow_private\": [\"127.0.0.1/32\", \"::1/128\"]}}"
out=$(run_p lh lh bash /c/clients.sh "http://localhost:$port" lh 2>&1)
expect_eq "every client reaches a rule on localhost with the default environment" "$out" "$want"
check "... and each request arrived at the origin" arrived lh
check "... none refused as not-a-known-name" bash -c "! grep -q not-a-known-name '$T/audit-lh.jsonl'"

# A policy's env replaces a proxy variable or leaves it out ("").
policy over "{\"version\": 1, $G \"net\": {\"egress\": [{\"host\": \"api.allowed.test\", \"ports\": [$port]}],
  \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\"},
  \"env\": {\"http_proxy\": \"socks5h://127.0.0.1:3128\", \"HTTP_PROXY\": \"\", \"NO_PROXY\": \"\"}}"
out=$(run_p over over sh -c "env | grep -i '^[a-z]*_proxy=' | sort; curl -sS --max-time 10 http://api.allowed.test:$port/data.json?c=over-curl" 2>&1)
expect_eq "a policy's env replaces http_proxy and leaves out HTTP_PROXY and NO_PROXY" "$out" "ALL_PROXY=http://127.0.0.1:3128
HTTPS_PROXY=http://127.0.0.1:3128
SOCKS_PROXY=socks5h://127.0.0.1:3128
all_proxy=http://127.0.0.1:3128
http_proxy=socks5h://127.0.0.1:3128
https_proxy=http://127.0.0.1:3128
no_proxy=localhost,127.0.0.1
{\"answer\": 42}"
check "... curl took the replaced http_proxy (SOCKS5)" grep -q '"event":"net.request".*"via":"socks5"' "$T/audit-over.jsonl"
policy allonly "{\"version\": 1, $G \"net\": {\"egress\": [{\"host\": \"api.allowed.test\", \"ports\": [$port]}],
  \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\"},
  \"env\": {\"http_proxy\": \"\", \"HTTP_PROXY\": \"\", \"https_proxy\": \"\", \"HTTPS_PROXY\": \"\"}}"
out=$(run_p allonly allonly bash /c/clients.sh "http://api.allowed.test:$port" allonly 2>&1)
expect_eq "with ALL_PROXY alone every client still gets through" "$out" "$want"
check "... and each request arrived at the origin" arrived allonly

finish
