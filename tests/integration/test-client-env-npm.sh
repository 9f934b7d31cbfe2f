#!/usr/bin/env bash
# The agent's proxy environment against Node clients from the npm registry:
# axios, and the OpenAI and Anthropic SDKs (npm's `openai` and
# `@anthropic-ai/sdk`), installed here outside the sandbox and granted
# read-only. Each is constructed with its defaults; the SDKs' base URLs
# (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, set by the policy as a user would)
# name a stand-in for both APIs on host loopback, which only the proxy
# reaches. The stand-in's log says which calls arrived, the audit log that
# each went through the proxy.
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures dnsmasq node npm jq python3

mkdir -p "$T/c/js"
npm install --prefix "$T/c/js" --cache "$T/npm-cache" --no-audit --no-fund --loglevel=error \
	axios openai @anthropic-ai/sdk >"$T/npm.log" 2>&1 ||
	skip_all "npm install from the registry failed: $(tail -1 "$T/npm.log")"

port=$(free_port)
dns=$(free_port)
start_dns "$dns" api.allowed.test=127.0.0.1 || skip_all "dns did not start"
# The stand-in: GET /data.json, the OpenAI chat completion and the Anthropic
# message, each answered with 42; every request line logged.
python3 -c '
import http.server, json, sys
answers = {
    ("GET", "/data.json"): {"answer": 42},
    ("POST", "/v1/chat/completions"): {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "42"}, "finish_reason": "stop"}]},
    ("POST", "/v1/messages"): {"id": "m", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "42"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}},
}
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(sys.argv[2], "a") as f:
            f.write("%s %s\n" % (self.command, self.path))
        a = answers.get((self.command, self.path.split("?")[0]))
        body = json.dumps(a).encode() if a else b"{}"
        self.send_response(200 if a else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = answer
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
' "$port" "$T/standin.log" &
PIDS+=($!)
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done
LOG=$T/standin.log

cat >"$T/c/js/clients.js" <<'JS'
const [b, t] = process.argv.slice(2);
const say = (name, p) => p.then(v => console.log(name, v),
  e => console.log(name, "FAILED", e.cause ? e.cause.code || e.cause.message : e.message));
(async () => {
  const axios = require("axios");
  await say("axios", axios.get(`${b}/data.json?c=${t}-axios`).then(r => r.data.answer));
  const { OpenAI } = require("openai");
  await say("openai", new OpenAI().chat.completions.create({ model: "m", messages: [{ role: "user", content: t }] })
    .then(r => r.choices[0].message.content));
  const { Anthropic } = require("@anthropic-ai/sdk");
  await say("anthropic", new Anthropic().messages.create({ model: "m", max_tokens: 8,
    messages: [{ role: "user", content: t }] }).then(r => r.content[0].text));
})();
JS
# axios alone: it reads the proxy variables, where Node 20's fetch, which
# the SDKs use, reads none
cat >"$T/c/js/axios.js" <<'JS'
const [b, t] = process.argv.slice(2);
require("axios").get(`${b}/data.json?c=${t}-axios`).then(r => console.log("axios", r.data.answer),
  e => console.log("axios FAILED", e.response ? e.response.status + " " + e.response.headers["x-sandcap-deny"] : e.message));
JS
want='axios 42
openai 42
anthropic 42'

# run TAG HOST [SCRIPT [RULE-EXTRA]]: the clients (clients.js) in a sandbox
# whose one rule is HOST:port
run() {
	local b="http://$2:$port" d=
	[ "$2" != api.allowed.test ] || d=", \"dns\": \"127.0.0.1:$dns\""
	policy "$1" "{\"version\": 1,
  \"fs\": {\"grants\": [{\"path\": \"$T/c\", \"mode\": \"ro\", \"at\": \"/c\"}]},
  \"net\": {\"egress\": [{\"host\": \"$2\", \"ports\": [$port]${4:-}}], \"allow_private\": [\"127.0.0.1/32\", \"::1/128\"]$d},
  \"env\": {\"OPENAI_BASE_URL\": \"$b/v1\", \"OPENAI_API_KEY\": \"sk-test\",
    \"ANTHROPIC_BASE_URL\": \"$b\", \"ANTHROPIC_API_KEY\": \"sk-ant-test\"}}"
	timeout 120 "$SANDCAP" run --quiet --audit "$T/audit-$1.jsonl" --policy "$T/$1.json" -- \
		node "/c/js/${3:-clients.js}" "$b" "$1" 2>&1
}
arrived() { # arrived TAG: each client's request in the stand-in's log
	local missing=
	grep -qx "GET /data.json?c=$1-axios" "$LOG" || missing+=" axios"
	# the SDKs' requests carry no tag: each run's are new lines in the log
	[ "$(grep -cx 'POST /v1/chat/completions' "$LOG")" = "$2" ] || missing+=" openai"
	[ "$(grep -cx 'POST /v1/messages' "$LOG")" = "$2" ] || missing+=" anthropic"
	[ -z "$missing" ] || { echo "# not at the stand-in:$missing"; return 1; }
}
# proxied TAG: a net.request for each call. axios reads the proxy variables
# and NO_PROXY names no loopback rule, so the proxy sees its request; the
# SDKs' fetch reads none before Node 24 and goes by transparent
# redirection, which tunnels one to an IP-literal rule's address (a CONNECT,
# no path).
proxied() {
	local recs tunnels missing=
	recs=$(jq -r 'select(.event == "net.request") | .data.method + " " + (.data.path // "")' "$T/audit-$1.jsonl")
	grep -qx "GET /data.json?c=$1-axios" <<<"$recs" || missing+=" axios"
	tunnels=$(grep -cx 'CONNECT ' <<<"$recs")
	for c in "POST /v1/chat/completions" "POST /v1/messages"; do
		if ! grep -qx "$c" <<<"$recs"; then
			[ "$tunnels" -gt 0 ] && tunnels=$((tunnels - 1)) || missing+=" ${c#* }"
		fi
	done
	[ -z "$missing" ] || { echo "# no net.request for:$missing;" $recs; return 1; }
}

out=$(run name api.allowed.test)
expect_eq "axios and the OpenAI and Anthropic SDKs reach a named rule with the default environment" "$out" "$want"
check "... and each request arrived at the stand-in" arrived name 1
check "... each through the proxy (its net.request)" proxied name

out=$(run lo 127.0.0.1)
expect_eq "... and a rule on 127.0.0.1" "$out" "$want"
check "... each request arrived at the stand-in" arrived lo 2
check "... each through the proxy (its net.request)" proxied lo

out=$(run lh localhost)
expect_eq "... and a rule on localhost" "$out" "$want"
check "... each request arrived at the stand-in" arrived lh 3
check "... each through the proxy (its net.request)" proxied lh

# A rule with paths on a loopback address or name: the proxy must see each
# request, since a tunnel hides its path; NO_PROXY holds no loopback
# spelling, as axios takes any one of them for all of loopback.
for r in 127.0.0.1 localhost; do
	out=$(run "paths-$r" "$r" axios.js ", \"paths\": [\"/data.json\"]")
	expect_eq "axios reaches a rule with paths on $r through the proxy" "$out" "axios 42"
	check "... its request recorded with its path" grep -q "\"event\":\"net.request\".*\"path\":\"/data.json?c=paths-$r-axios\"" \
		"$T/audit-paths-$r.jsonl"
done

finish
