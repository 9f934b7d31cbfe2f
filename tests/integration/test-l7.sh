#!/usr/bin/env bash
# L7 rules and credential limits, from inside real sandboxes with curl
# against a real nginx origin on loopback: path prefixes after normalising
# (the ".." tricks), "clone but not push" on git's smart HTTP paths, and a
# credential's max_requests, methods, max_bytes and expires hit exactly at
# the limit, also across a proxy worker that is killed; the audit log, the
# run summary and `sandcap audit report` show the per-credential use.
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures nginx dnsmasq curl python3 git

port=$(free_port)
dns=$(free_port)
start_origin "$port" || skip_all "origin did not start"
start_dns "$dns" git.l7.test=127.0.0.1 api.l7.test=127.0.0.1 bytes.l7.test=127.0.0.1 \
	exp.l7.test=127.0.0.1 repo.l7.test=127.0.0.1

# A real git origin (smart HTTP, push allowed by the server) with one commit.
gport=$(free_port)
git init -q --bare "$T/git/repo.git" && git -C "$T/git/repo.git" config http.receivepack true
git init -q "$T/work" && echo hello >"$T/work/f" && git -C "$T/work" add f &&
	git -C "$T/work" -c user.name=t -c user.email=t@t commit -qm one &&
	git -C "$T/work" push -q "$T/git/repo.git" HEAD:refs/heads/main &&
	git -C "$T/git/repo.git" symbolic-ref HEAD refs/heads/main
python3 "$(dirname "$0")/../helpers/git-http-origin.py" "$gport" "$T/git" "$T/git.log" &
PIDS+=($!)
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/"$gport") 2>/dev/null && break; sleep 0.1; done
mkdir -p "$W/nginx/html/repo.git/info" "$W/nginx/html/pub"
echo refs >"$W/nginx/html/repo.git/info/refs"
echo public >"$W/nginx/html/pub/x"
echo secret-config >"$W/nginx/html/repo.git/config"

policy l7 "{\"version\": 1,
  \"net\": {\"egress\": [
      {\"host\": \"git.l7.test\", \"ports\": [$port], \"methods\": [\"GET\"],
       \"paths\": [\"/repo.git/info/refs\", \"/pub/\"]},
      {\"host\": \"git.l7.test\", \"ports\": [$port], \"methods\": [\"POST\"],
       \"paths\": [\"/repo.git/git-upload-pack\"]},
      {\"host\": \"api.l7.test\", \"ports\": [$port]},
      {\"host\": \"bytes.l7.test\", \"ports\": [$port]},
      {\"host\": \"exp.l7.test\", \"ports\": [$port]},
      {\"host\": \"repo.l7.test\", \"ports\": [$gport], \"methods\": [\"GET\"],
       \"paths\": [\"/repo.git/info/refs\"]},
      {\"host\": \"repo.l7.test\", \"ports\": [$gport], \"methods\": [\"POST\"],
       \"paths\": [\"/repo.git/git-upload-pack\"]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\",
    \"credentials\": [
      {\"host\": \"api.l7.test\", \"header\": \"Authorization\", \"value_env\": \"L7_SECRET\",
       \"format\": \"Bearer api-%s\", \"upstream\": \"http\", \"name\": \"api-key\",
       \"max_requests\": 3, \"methods\": [\"GET\", \"HEAD\"]},
      {\"host\": \"bytes.l7.test\", \"header\": \"Authorization\", \"value_env\": \"L7_SECRET\",
       \"format\": \"Bearer bytes-%s\", \"upstream\": \"http\", \"name\": \"bytes-key\",
       \"max_bytes\": \"2K\"},
      {\"host\": \"exp.l7.test\", \"header\": \"Authorization\", \"value_env\": \"L7_SECRET\",
       \"format\": \"Bearer exp-%s\", \"upstream\": \"http\", \"name\": \"exp-key\",
       \"expires\": \"2s\"}]}}"
export L7_SECRET=l7-$$
run_l7() { "$SANDCAP" run --quiet --audit "$T/audit-$1.jsonl" --policy "$T/l7.json" -- "${@:2}"; }
code() { printf '%s' "curl -sS --path-as-is -o /dev/null -w '%{http_code} ' $* 2>/dev/null;"; }
G="http://git.l7.test:$port"

# --- path rules --------------------------------------------------------------
out=$(run_l7 paths sh -c "$(code "$G/repo.git/info/refs?service=git-upload-pack")
	$(code "-X POST --data x $G/repo.git/git-upload-pack")
	$(code "-X POST --data x $G/repo.git/git-receive-pack")
	$(code "$G/repo.git/info/refs/../../config")
	$(code "$G/pub/../repo.git/config")
	$(code "$G/pub/%2e%2e/repo.git/config")
	$(code "$G/pub//x")
	$(code "$G/pub/%2Frepo.git")
	$(code "$G/pubx")
	$(code "'$G/pub/..;/repo.git/config'")" 2>&1)
# (nginx answers a POST to a file it does not have with 404: it got there)
expect_eq "clone paths allowed, push and the .. tricks refused (403)" "$out" \
	"200 404 403 403 403 403 200 403 403 403 "
check "the origin never saw a refused path" bash -c \
	"! grep -Eq 'receive-pack|config|pubx|%2F' '$W/nginx/access.log'"
check "the origin saw the clone's requests" bash -c \
	"grep -q 'GET /repo.git/info/refs?service=git-upload-pack' '$W/nginx/access.log' &&
	 grep -q 'POST /repo.git/git-upload-pack' '$W/nginx/access.log'"
check "a refused path is net.denied path-not-allowed with the normalised path" grep -q \
	'"event":"net.denied".*"normalised_path":"/repo.git/config","path":"/pub/../repo.git/config".*"reason":"path-not-allowed"' \
	"$T/audit-paths.jsonl"
check "... and %2e%2e is resolved too" grep -q \
	'"normalised_path":"/repo.git/config","path":"/pub/%2e%2e/repo.git/config".*"reason":"path-not-allowed"' \
	"$T/audit-paths.jsonl"
check "an encoded / is refused with a reason" grep -q \
	'"detail":"the path has an encoded \\"/\\" (%2F)".*"reason":"path-not-allowed"' "$T/audit-paths.jsonl"
check "push is refused as path-not-allowed" grep -q \
	'"method":"POST".*"path":"/repo.git/git-receive-pack".*"reason":"path-not-allowed"' "$T/audit-paths.jsonl"
out=$(run_l7 connect curl -sS -o /dev/null -w '%{http_code}' -p "http://git.l7.test:$port/" 2>&1)
expect_match "a rule with paths refuses CONNECT" "$out" "403"

# git itself: clone works, push is refused by the proxy (the origin would take it)
out=$(run_l7 git sh -c "git clone -q http://repo.l7.test:$gport/repo.git /tmp/c && cat /tmp/c/f &&
	cd /tmp/c && echo more >>f && git -c user.name=a -c user.email=a@a commit -qam two &&
	{ git push -q origin HEAD:main 2>&1; echo push=\$?; }" 2>&1)
expect_match "git clone through path rules gets the repository" "$out" "^hello"
expect_match "git push is refused with 403" "$out" "403.*push=[1-9]"
check "the origin never got a git-receive-pack POST" bash -c "! grep -q 'POST /repo.git/git-receive-pack' '$T/git.log'"
check "... it got the clone's upload-pack POST" grep -q 'POST /repo.git/git-upload-pack' "$T/git.log"
check "the push is net.denied path-not-allowed" grep -q \
	'"method":"POST".*"path":"/repo.git/git-receive-pack".*"reason":"path-not-allowed"' "$T/audit-git.jsonl"

# --- max_requests and methods, summary and report -----------------------------
A="http://api.l7.test:$port/data.json"
"$SANDCAP" run --json --audit "$T/audit-api.jsonl" --policy "$T/l7.json" -- sh -c \
	"$(code "-X POST --data x $A") $(code "$A") $(code "$A") $(code "$A") $(code "$A")" \
	>"$T/api.out" 2>"$T/api.err"
expect_eq "methods GET only: POST 403; max_requests 3: three 200, the fourth 429" \
	"$(cat "$T/api.out")" "403 200 200 200 429 "
expect_eq "the origin saw exactly 3 requests with the credential" \
	"$(grep -c 'auth="Bearer api-l7-' "$W/nginx/access.log")" 3
check "the fourth is net.denied credential-limit naming the credential and the limit" grep -q \
	'"event":"net.denied".*"credential":"api-key".*"detail":"credential api-key used for its 3 requests".*"reason":"credential-limit"' \
	"$T/audit-api.jsonl"
check "the POST is refused by the credential's methods" grep -q \
	'"detail":"credential api-key is not for POST requests".*"reason":"credential-limit"' "$T/audit-api.jsonl"
check "net.request records name the credential they carried" bash -c \
	"[ \$(grep '\"event\":\"net.request\"' '$T/audit-api.jsonl' | grep '\"decision\":\"allow\"' | grep -c '\"credential\":\"api-key\"') = 3 ]"
summary=$(tail -1 "$T/api.err")
expect_match "the --json summary has the credential's use" "$summary" \
	'"credentials":\[\{"bytes_in":[1-9][0-9]*,"bytes_out":[1-9][0-9]*,"name":"api-key","refused":2,"requests":3\}\]'
"$SANDCAP" run --audit "$T/audit-api2.jsonl" --policy "$T/l7.json" -- sh -c "$(code "$A")" \
	>/dev/null 2>"$T/api2.err"
expect_match "the text summary has it" "$(cat "$T/api2.err")" \
	"credential api-key: 1 request, [0-9]+ bytes out, [0-9]+ bytes in, 0 refused"
report=$("$SANDCAP" audit report "$T/audit-api.jsonl" 2>&1)
expect_match "audit report lists the credential" "$report" \
	"credentials:.*api-key: 3 requests, [0-9]+ bytes out, [0-9]+ bytes in, 2 refused"
report=$("$SANDCAP" audit report --json "$T/audit-api.jsonl" 2>&1)
got=$(python3 -c 'import json,sys; c=json.load(sys.stdin)["did"]["network"]["credentials"][0]; print(c["name"], c["requests"], c["refused"], c["bytes_out"] > 0)' <<<"$report" 2>&1)
expect_eq "audit report --json has did.network.credentials" "$got" "api-key 3 2 True"

# --- max_bytes: up front with a Content-Length, cut mid-body when chunked ------
B="http://bytes.l7.test:$port/upload"
out=$(run_l7 bytes sh -c "head -c 1000 /dev/zero >/tmp/k; head -c 3000 /dev/zero >/tmp/m;
	$(code "--data-binary @/tmp/k $B") $(code "--data-binary @/tmp/k $B")
	$(code "-H 'Transfer-Encoding: chunked' --data-binary @/tmp/m $B")
	$(code "http://bytes.l7.test:$port/data.json")" 2>&1)
expect_eq "max_bytes 2K: 1000 bytes 200, 1000 more 429 up front, chunked cut (000), then 429" \
	"$out" "200 429 000 429 "
expect_eq "the origin received only the first body" "$(origin_received)" 1000
check "the up-front refusal says max_bytes" grep -q \
	'"credential":"bytes-key","detail":"credential bytes-key: [0-9]* of its 2048 bytes sent.*"reason":"credential-limit"' \
	"$T/audit-bytes.jsonl"
check "the cut chunked request is recorded" grep -q '"reason":"credential-max-bytes"' "$T/audit-bytes.jsonl"
sent=$(grep '"event":"net.request"' "$T/audit-bytes.jsonl" | grep '"credential":"bytes-key"' |
	sed -n 's/.*"bytes_out":\([0-9]*\).*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
expect_eq "exactly 2048 bytes went upstream with the credential" "$sent" 2048

# --- expires -------------------------------------------------------------------
out=$(run_l7 exp sh -c "$(code "http://exp.l7.test:$port/data.json") sleep 2.2; $(code "http://exp.l7.test:$port/data.json")" 2>&1)
expect_eq "expires 2s: 200 at once, 403 after" "$out" "200 403 "
check "... as credential-limit expires" grep -q \
	'"credential":"exp-key","detail":"credential exp-key expired 2 s after the start".*"reason":"credential-limit"' \
	"$T/audit-exp.jsonl"

# --- the counters survive a killed worker ----------------------------------------
before=$(grep -c 'auth="Bearer api-l7-' "$W/nginx/access.log")
"$SANDCAP" run --quiet --audit "$T/audit-kill.jsonl" --policy "$T/l7.json" -- sh -c \
	"$(code "$A") $(code "$A") sleep 2; $(code "$A") $(code "$A")" >"$T/kill.out" 2>/dev/null &
bg=$!
w1=$(worker_of $bg) && sleep 1 && kill -9 "$w1"
wait $bg
expect_eq "max_requests 3 across a killed worker: 200 200, then 200 429" "$(cat "$T/kill.out")" \
	"200 200 200 429 "
check "the worker was killed and replaced" grep -q '"event":"proxy.exit".*"signal":9' "$T/audit-kill.jsonl"
expect_eq "the origin saw 3 more" "$(($(grep -c 'auth="Bearer api-l7-' "$W/nginx/access.log") - before))" 3

# --- sandcap check --------------------------------------------------------------
out=$("$SANDCAP" check --policy "$T/l7.json" 2>&1)
expect_match "sandcap check describes paths and credential limits" "$out" \
	"only paths under /repo.git/info/refs, /pub/ .*api-key: Authorization header for api.l7.test.*at most: 3 requests, methods GET, HEAD"
finish
