#!/usr/bin/env bash
# The agent's proxy environment against real clients: each constructs its
# client with its defaults and makes a call with no proxy configuration; the
# loopback origin's access log says which calls arrived, the audit log that
# each went through the proxy. HTTP libraries: httpx (sync, async), requests,
# urllib, aiohttp (by default it reads no proxy variable and goes by
# transparent redirection; with trust_env through the proxy), Go's net/http,
# Node's fetch; tools: curl, wget, git; package managers against repositories
# on the origin: pip (a simple index), npm (a registry's package document and
# tarball), apt (a flat repository). Node packages from the npm registry
# (axios, the OpenAI and Anthropic SDKs) are test-client-env-npm.sh's.
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures nginx dnsmasq curl wget git python3 node npm go apt-get dpkg-deb jq openssl
/usr/bin/python3 -c 'import httpx, requests, aiohttp, pip' 2>/dev/null ||
	skip_all "python3-httpx, python3-requests, python3-aiohttp or python3-pip not installed"

port=$(free_port)
dns=$(free_port)
start_origin "$port" || skip_all "origin did not start"
start_dns "$dns" api.allowed.test=127.0.0.1 || skip_all "dns did not start"
LOG=$T/nginx/access.log
G="\"fs\": {\"grants\": [{\"path\": \"$T/c\", \"mode\": \"ro\", \"at\": \"/c\"}]},"
P=$T/pkg
mkdir -p "$T/c" "$P"

# Go's net/http: http.Get, so DefaultTransport and ProxyFromEnvironment.
cat >"$P/get.go" <<'GO'
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

func main() {
	r, err := http.Get(os.Args[1])
	if err != nil {
		fmt.Println("go FAILED", err)
		return
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	fmt.Println("go", strings.TrimSpace(string(b)))
}
GO
(cd "$P" && HOME=$P GOPATH=$P/go GOCACHE=$P/go-cache GOFLAGS=-mod=mod CGO_ENABLED=0 \
	go build -o "$T/c/go-get" get.go) || skip_all "go build failed"

# One package for each package manager: a wheel, an npm tarball, a .deb.
python3 - "$P/sandcap_demo-1.0-py3-none-any.whl" <<'PY'
import base64, hashlib, sys, zipfile
files = {"sandcap_demo/__init__.py": "answer = 42\n",
         "sandcap_demo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: sandcap-demo\nVersion: 1.0\n",
         "sandcap_demo-1.0.dist-info/WHEEL":
             "Wheel-Version: 1.0\nGenerator: sandcap\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
def digest(c):
    return base64.urlsafe_b64encode(hashlib.sha256(c.encode()).digest()).rstrip(b"=").decode()
files["sandcap_demo-1.0.dist-info/RECORD"] = "".join(
    "%s,sha256=%s,%d\n" % (n, digest(c), len(c)) for n, c in files.items()) + \
    "sandcap_demo-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for n, c in files.items():
        z.writestr(n, c)
PY
mkdir -p "$P/npm/package" "$P/deb/DEBIAN"
echo '{"name": "sandcap-demo", "version": "1.0.0", "main": "index.js"}' >"$P/npm/package/package.json"
echo 'module.exports = 42;' >"$P/npm/package/index.js"
tar -C "$P/npm" -czf "$P/sandcap-demo-1.0.0.tgz" package
printf 'Package: sandcap-demo\nVersion: 1.0\nArchitecture: all\nMaintainer: sandcap <sandcap@example.invalid>\nDescription: demo\n' \
	>"$P/deb/DEBIAN/control"
dpkg-deb -b "$P/deb" "$P/sandcap-demo_1.0_all.deb" >/dev/null || skip_all "dpkg-deb failed"

# repos TAG BASE: the three repositories on the origin under /TAG/, for
# clients that reach it as BASE
repos() {
	local d=$T/nginx/html/$1 whl=sandcap_demo-1.0-py3-none-any.whl tgz=sandcap-demo-1.0.0.tgz
	local deb=sandcap-demo_1.0_all.deb
	mkdir -p "$d/simple/sandcap-demo" "$d/files" "$d/npm" "$d/apt"
	cp "$P/$whl" "$P/$tgz" "$d/files/" && cp "$P/$deb" "$d/apt/"
	# pip: a simple index (PEP 503)
	printf '<a href="../../files/%s#sha256=%s">%s</a>\n' "$whl" \
		"$(sha256sum <"$d/files/$whl" | cut -d' ' -f1)" "$whl" >"$d/simple/sandcap-demo/index.html"
	# npm: the package document, which names its tarball by absolute URL
	printf '{"name": "sandcap-demo", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {"name": "sandcap-demo", "version": "1.0.0", "main": "index.js", "dist": {"tarball": "%s", "shasum": "%s", "integrity": "sha512-%s"}}}}\n' \
		"$2/$1/files/$tgz" "$(sha1sum <"$d/files/$tgz" | cut -d' ' -f1)" \
		"$(openssl dgst -sha512 -binary <"$d/files/$tgz" | base64 -w0)" >"$d/npm/sandcap-demo"
	# apt: a flat repository, its Release unsigned (the source is trusted=yes)
	(cd "$d/apt" && {
		cat "$P/deb/DEBIAN/control"
		printf 'Filename: ./%s\nSize: %s\nSHA256: %s\n' "$deb" "$(stat -c %s "$deb")" \
			"$(sha256sum <"$deb" | cut -d' ' -f1)"
	} >Packages && printf 'Suite: test\nCodename: test\nDate: %s\nSHA256:\n %s %s Packages\n' \
		"$(LC_ALL=C date -u -R)" "$(sha256sum <Packages | cut -d' ' -f1)" "$(stat -c %s Packages)" >Release)
}

# clients SCHEME://HOST:PORT TAG: one call per client, each tagged in the
# query or the repository's path
cat >"$T/c/clients.sh" <<'SH'
b=$1 t=$2 h=${1#http://}
h=${h%:*}
python3 - "$b" "$t" <<'PY'
import sys, asyncio, urllib.request
import aiohttp, httpx, requests
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
async def ah(name, **kw):
    async with aiohttp.ClientSession(**kw) as s:
        async with s.get(f"{b}/data.json?c={t}-{name}") as r:
            return (await r.json(content_type=None))["answer"]
say("aiohttp", lambda: asyncio.run(ah("aiohttp")))
say("aiohttp-env", lambda: asyncio.run(ah("aiohttp-env", trust_env=True)))
PY
echo "curl $(curl -sS --max-time 10 "$b/data.json?c=$t-curl" 2>&1)"
echo "wget $(wget -q -T 10 -O- "$b/data.json?c=$t-wget" 2>&1)"
# no repository there: the origin's log shows git's request, the 404 is expected
git ls-remote "$b/$t-git" >/dev/null 2>&1; echo "git asked"
node -e 'fetch(process.argv[1]).then(r => r.json()).then(j => console.log("node-fetch", j.answer),
  e => console.log("node-fetch FAILED", e.cause ? e.cause.code : e.message))' "$b/data.json?c=$t-node-fetch"
/c/go-get "$b/data.json?c=$t-go"
cd /tmp || exit
# pip refuses a plain-HTTP index not on loopback unless told it is trusted
pip=(python3 -m pip -q --trusted-host "$h")
echo "pip-download $({ "${pip[@]}" download --no-deps -d /tmp/pip --index-url "$b/$t/simple/" sandcap-demo &&
	ls /tmp/pip; } 2>&1)"
echo "pip-install $({ "${pip[@]}" install --no-deps --target /tmp/pipt --index-url "$b/$t/simple/" sandcap-demo &&
	PYTHONPATH=/tmp/pipt python3 -c 'import sandcap_demo; print(sandcap_demo.answer)'; } 2>&1)"
echo "npm-view $(npm view --registry "$b/$t/npm/" sandcap-demo version 2>&1)"
echo "npm-install $({ mkdir -p /tmp/npm && cd /tmp/npm &&
	npm install -q --no-audit --no-fund --registry "$b/$t/npm/" sandcap-demo >/dev/null &&
	node -p 'require("sandcap-demo")'; } 2>&1)"
# apt as the agent: its state, caches and sources under /tmp (APT_CONFIG is
# read before the default /etc/apt, which the sandbox has not)
a=/tmp/apt
mkdir -p $a/etc/apt.conf.d $a/etc/preferences.d $a/etc/sources.list.d $a/lists/partial $a/cache/archives/partial
: >$a/status
echo "deb [trusted=yes] $b/$t/apt ./" >$a/etc/sources.list
echo "Dir::Etc \"$a/etc\"; Dir::State \"$a\"; Dir::State::status \"$a/status\"; Dir::Cache \"$a/cache\";" >$a/apt.conf
echo "apt $({ APT_CONFIG=$a/apt.conf apt-get -qq update && cd $a && APT_CONFIG=$a/apt.conf apt-get -qq download sandcap-demo &&
	dpkg-deb -f $a/sandcap-demo_1.0_all.deb Version; } 2>&1)"
SH
want='httpx-client 42
httpx-get 42
httpx-async 42
requests 42
urllib {"answer": 42}
aiohttp 42
aiohttp-env 42
curl {"answer": 42}
wget {"answer": 42}
git asked
node-fetch 42
go {"answer": 42}
pip-download sandcap_demo-1.0-py3-none-any.whl
pip-install 42
npm-view 1.0.0
npm-install 42
apt 1.0'
arrived() { # arrived TAG: every client's tagged request in the access log
	local c missing=
	for c in httpx-client httpx-get httpx-async requests urllib aiohttp aiohttp-env curl wget node-fetch go; do
		grep -q "GET /data.json?c=$1-$c HTTP" "$LOG" || missing+=" $c"
	done
	grep -q "GET /$1-git/info/refs?service=git-upload-pack HTTP" "$LOG" || missing+=" git"
	grep -q "GET /$1/simple/sandcap-demo/ HTTP" "$LOG" || missing+=" pip-index"
	grep -q "GET /$1/files/sandcap_demo-1.0-py3-none-any.whl HTTP" "$LOG" || missing+=" pip-wheel"
	grep -q "GET /$1/npm/sandcap-demo HTTP" "$LOG" || missing+=" npm-document"
	grep -q "GET /$1/files/sandcap-demo-1.0.0.tgz HTTP" "$LOG" || missing+=" npm-tarball"
	grep -q "GET /$1/apt/./Packages HTTP" "$LOG" || missing+=" apt-Packages"
	grep -q "GET /$1/apt/./sandcap-demo_1.0_all.deb HTTP" "$LOG" || missing+=" apt-deb"
	[ -z "$missing" ] || { echo "# not at the origin:$missing"; return 1; }
}
proxied() { # proxied TAG: each of TAG's requests at the origin has its net.request
	local missing n tunnels
	missing=$(comm -23 <(awk -v t="$1" '$2 ~ ("^/" t "[/-]") || $2 ~ ("[?&]c=" t "-") { print $2 }' "$LOG" | sort -u) \
		<(jq -r 'select(.event == "net.request") | .data.path' "$T/audit-$1.jsonl" | sort -u))
	# a client that goes to an IP-literal rule's address by itself is
	# tunnelled by transparent redirection: a CONNECT record, no path
	n=$(wc -w <<<"$missing")
	tunnels=$(jq -r 'select(.event == "net.request" and .data.method == "CONNECT") | .data.id' "$T/audit-$1.jsonl" | wc -l)
	[ "$n" -le "$tunnels" ] || { echo "# at the origin without a net.request ($tunnels tunnels):" $missing; return 1; }
}
run_p() { "$SANDCAP" run --quiet --audit "$T/audit-$1.jsonl" --policy "$T/$2.json" -- "${@:3}"; }
# A rule for a name.
policy name "{\"version\": 1, $G \"net\": {\"egress\": [{\"host\": \"api.allowed.test\", \"ports\": [$port]}],
  \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\"}}"
repos name "http://api.allowed.test:$port"
out=$(run_p name name bash /c/clients.sh "http://api.allowed.test:$port" name 2>&1)
expect_eq "every client reaches a named rule with the default environment" "$out" "$want"
check "... and each request arrived at the origin" arrived name
check "... each through the proxy (its net.request)" proxied name

# SOCKS5 stays at hand for a client told to use it, from SOCKS_PROXY, in the
# same environment that the clients above took as it is.
out=$(run_p socks name sh -c "curl -sS --max-time 10 --socks5-hostname \"\${SOCKS_PROXY#socks5h://}\" \
	http://api.allowed.test:$port/data.json?c=socks-hostname; curl -sS --max-time 10 -x \"\$SOCKS_PROXY\" \
	http://api.allowed.test:$port/data.json?c=socks-x" 2>&1)
expect_eq "curl reaches the rule through SOCKS5 at SOCKS_PROXY (--socks5-hostname, -x)" "$out" '{"answer": 42}
{"answer": 42}'
check "... both recorded as SOCKS5 (via socks5)" bash -c "[ \$(grep -c '\"event\":\"net.request\".*\"via\":\"socks5\"' '$T/audit-socks.jsonl') = 2 ]"

# A rule for the origin's loopback address: 127.0.0.1 inside is the
# sandbox's own, so the request must go through the proxy.
policy lo "{\"version\": 1, $G \"net\": {\"egress\": [{\"host\": \"127.0.0.1\", \"ports\": [$port]}],
  \"allow_private\": [\"127.0.0.1/32\"]}}"
repos lo "http://127.0.0.1:$port"
out=$(run_p lo lo bash /c/clients.sh "http://127.0.0.1:$port" lo 2>&1)
expect_eq "every client reaches a rule on 127.0.0.1 with the default environment" "$out" "$want"
check "... and each request arrived at the origin" arrived lo
check "... each through the proxy (its net.request)" proxied lo
check "... none refused as not-a-known-name" bash -c "! grep -q not-a-known-name '$T/audit-lo.jsonl'"

# A rule for localhost: the proxy resolves it to the host's loopback.
policy lh "{\"version\": 1, $G \"net\": {\"egress\": [{\"host\": \"localhost\", \"ports\": [$port]}],
  \"allow_private\": [\"127.0.0.1/32\", \"::1/128\"]}}"
repos lh "http://localhost:$port"
out=$(run_p lh lh bash /c/clients.sh "http://localhost:$port" lh 2>&1)
expect_eq "every client reaches a rule on localhost with the default environment" "$out" "$want"
check "... and each request arrived at the origin" arrived lh
check "... each through the proxy (its net.request)" proxied lh
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
repos allonly "http://api.allowed.test:$port"
out=$(run_p allonly allonly bash /c/clients.sh "http://api.allowed.test:$port" allonly 2>&1)
expect_eq "with ALL_PROXY alone every client still gets through" "$out" "$want"
check "... and each request arrived at the origin" arrived allonly
check "... each through the proxy or transparent redirection (its net.request)" proxied allonly

finish
