#!/usr/bin/env bash
# HTTP/2 on inspected HTTPS (docs/proxy.md, "HTTP/2"): from inside real
# sandboxes, curl --http2 and nghttp through the proxy's CONNECT to an nginx
# HTTPS origin on loopback whose CA is made here. Each stream is judged as a
# decrypted HTTP/1.1 request is (paths, placeholders) and is one net.request
# record; a refused stream leaves the others on its connection alone.
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures openssl dnsmasq curl nginx
curl --version | grep -qw HTTP2 || skip_all "curl without HTTP/2"

o=$(free_port)
dns=$(free_port)
mkdir -p "$T/www/v1/up" "$T/tmp"

make_tls_cert "$T/ca" h2.inspect.test
chmod 755 "$T/ca" && chmod 644 "$T/ca"/*
head -c 300000 /dev/urandom >"$T/www/v1/big.bin"
head -c 8000000 /dev/zero >"$T/www/v1/huge.bin"
echo '{"answer": 42}' >"$T/www/v1/data.json"
for i in 1 2 3 4 5; do echo "stream $i" >"$T/www/v1/s$i.txt"; done
chmod -R a+rX "$T/www"
chmod 777 "$T/www/v1/up" "$T/tmp" # the nginx worker stores uploads there

# The origin logs each request with its Authorization and body length.
cat >"$T/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $T/nginx.pid;
error_log $T/nginx-error.log;
events { worker_connections 64; }
http {
  log_format h2test '\$request \$status len=\$request_length auth="\$http_authorization"';
  access_log $T/access.log h2test;
  client_body_temp_path $T/tmp;
  proxy_temp_path $T/tmp;
  fastcgi_temp_path $T/tmp;
  uwsgi_temp_path $T/tmp;
  scgi_temp_path $T/tmp;
  server {
    listen 127.0.0.1:$o ssl;
    ssl_certificate $T/ca/srv.pem;
    ssl_certificate_key $T/ca/srv.key;
    root $T/www;
    location /v1/up/ { client_max_body_size 1m; dav_methods PUT; }
  }
}
NGINX
nginx -c "$T/nginx.conf" -e "$T/nginx-error.log" &
PIDS+=($!)
start_dns "$dns" inspect.test=127.0.0.1
for _ in $(seq 100); do
	(echo >/dev/tcp/127.0.0.1/"$o") 2>/dev/null && break
	sleep 0.05
done

export REAL_KEY="sk-real-$$-$RANDOM$RANDOM"
policy h2 "{\"version\": 1,
  \"net\": {\"egress\": [
      {\"host\": \"h2.inspect.test\", \"ports\": [$o], \"inspect\": true, \"paths\": [\"/v1/\"]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\",
    \"upstream_ca\": \"$T/ca/ca.pem\",
    \"credentials\": [
      {\"host\": \"h2.inspect.test\", \"placeholder_env\": \"API_KEY\", \"value_env\": \"REAL_KEY\"}]}}"
run_h2() { "$SANDCAP" run --quiet --audit "$T/audit-$1.jsonl" --policy "$T/h2.json" -- "${@:2}"; }
U="https://h2.inspect.test:$o"
records() { grep '"event":"net.request"' "$T/audit-$1.jsonl"; }

# --- one GET, a refused path and a placeholder, each its own stream
out=$(run_h2 get sh -c '
curl -sS --http2 -o /tmp/big -w "%{http_version} %{http_code}\n" "'"$U"'/v1/big.bin" &&
	sha256sum </tmp/big | cut -d" " -f1
curl -sS --http2 -w "%{http_version} %{http_code}\n" "'"$U"'/admin"
curl -sS --http2 -w "%{http_version} %{http_code}\n" "'"$U"'/v1/data.json" \
	-H "Authorization: Bearer $API_KEY"
curl -sS --http1.1 -w "%{http_version} %{http_code}\n" "'"$U"'/v1/data.json"
' 2>&1)
big_sha=$(sha256sum <"$T/www/v1/big.bin" | cut -d' ' -f1)
expect_eq "curl --http2 gets the body over HTTP/2" "$(sed -n 1,2p <<<"$out")" "2 200
$big_sha"
expect_match "a path the rule does not allow: 403 on its stream" "$(sed -n 3,4p <<<"$out")" \
	'403 Forbidden.*
2 403'
expect_eq "a request with a placeholder gets through" "$(sed -n 5,6p <<<"$out")" '{"answer": 42}
2 200'
expect_eq "curl --http1.1 still speaks HTTP/1.1 to the same host" "$(sed -n 7,8p <<<"$out")" \
	'{"answer": 42}
1.1 200'
check "the origin got the real value in the header, not the placeholder" \
	grep -q "GET /v1/data.json HTTP/1.1 200 .*auth=\"Bearer $REAL_KEY\"" "$T/access.log"
check "... and never a refused path" bash -c "! grep -q admin '$T/access.log'"
line=$(records get | grep '"path":"/v1/big.bin"')
expect_match "the stream's net.request record: method, path, status, bytes, via h2" "$line" \
	'"bytes_in":[1-9][0-9]*,"bytes_out":[1-9][0-9]*.*"method":"GET".*"path":"/v1/big.bin".*"status":200.*"via":"h2"'
expect_match "... and the SHA-256 of the body the agent got" "$line" \
	"\"body_bytes\":300000,\"body_sha256\":\"$big_sha\""
check "the refused stream: net.denied and a net.request with 403" \
	bash -c "grep -q '\"event\":\"net.denied\".*\"path\":\"/admin\".*\"via\":\"h2\"' '$T/audit-get.jsonl' &&
		grep -q '\"event\":\"net.request\".*\"decision\":\"deny\".*\"path\":\"/admin\".*\"status\":403' '$T/audit-get.jsonl'"
check "the placeholder's stream names its credential" \
	bash -c "records() { grep '\"event\":\"net.request\"' '$T/audit-get.jsonl'; }; records | grep '\"path\":\"/v1/data.json\"' | grep -q '\"credential\"'"
check "the HTTP/1.1 request's record is not marked h2" \
	bash -c "[ \$(grep -c '\"event\":\"net.request\".*\"path\":\"/v1/data.json\"' '$T/audit-get.jsonl') = 2 ] &&
		[ \$(grep '\"event\":\"net.request\".*\"path\":\"/v1/data.json\"' '$T/audit-get.jsonl' | grep -c '\"via\":\"h2\"') = 1 ]"

# --- concurrent streams on one connection, one of them refused, and an
# upload of unknown length (sent on as a chunked HTTP/1.1 body)
out=$(run_h2 multi sh -c '
curl -sS --http2 --parallel --parallel-max 8 \
	-w "%{http_version} %{http_code} %{num_connects} %{url_effective}\n" \
	-o /dev/null "'"$U"'/v1/s1.txt" -o /dev/null "'"$U"'/v1/s2.txt" \
	-o /dev/null "'"$U"'/v1/s3.txt" -o /dev/null "'"$U"'/v1/s4.txt" \
	-o /dev/null "'"$U"'/v1/s5.txt" -o /dev/null "'"$U"'/private"
echo "upload: $(head -c 100000 /dev/urandom | tee /tmp/sent | curl -sS --http2 -T - \
	-w "%{http_code}" "'"$U"'/v1/up/file") $(sha256sum </tmp/sent | cut -d" " -f1)"
' 2>&1)
streams=$(grep -E '^[0-9.]+ [0-9]{3} ' <<<"$out")
expect_eq "six parallel streams: five 200, the refused one 403" \
	"$(awk '{print $1, $2}' <<<"$streams" | sort | uniq -c | tr -s ' ')" \
	' 5 2 200
 1 2 403'
expect_eq "... over one connection" "$(awk '{ n += $3 } END { print n }' <<<"$streams")" 1
up=$(grep '^upload:' <<<"$out")
expect_eq "an upload without a length (chunked to the origin) is stored" "${up% *}" "upload: 201"
expect_eq "... all 100000 bytes of it, as sent" \
	"$(stat -c %s "$T/www/v1/up/file" 2>&1) $(sha256sum <"$T/www/v1/up/file" | cut -d' ' -f1)" \
	"100000 ${up##* }"
expect_eq "one net.request record per stream" "$(records multi | grep -c '"via":"h2"')" 7
check "... each stream's path in its own record" bash -c "for i in 1 2 3 4 5; do
	grep -q '\"event\":\"net.request\".*\"path\":\"/v1/s'\$i'.txt\".*\"status\":200' '$T/audit-multi.jsonl' || exit 1; done"

# --- the rate limit per stream: streams over it get 429, the others are served
sed 's|"allow_private"|"rate": "3/m", "allow_private"|' "$T/h2.json" >"$T/h2rate.json"
out=$("$SANDCAP" run --quiet --audit "$T/audit-rate.jsonl" --policy "$T/h2rate.json" -- sh -c '
curl -sS --http2 --parallel -w "%{http_version} %{http_code} %{num_connects}\n" \
	-o /dev/null "'"$U"'/v1/s1.txt" -o /dev/null "'"$U"'/v1/s2.txt" -o /dev/null "'"$U"'/v1/s3.txt" \
	-o /dev/null "'"$U"'/v1/s4.txt" -o /dev/null "'"$U"'/v1/s5.txt" -o /dev/null "'"$U"'/v1/s1.txt"
' 2>&1)
expect_eq "a rate of 3/m, six streams on one connection: three served, three 429" \
	"$(grep -E '^[0-9.]+ [0-9]{3} ' <<<"$out" |
		awk '{ print $1, $2; n += $3 } END { print "connections", n }' | sort | uniq -c | tr -s ' ')" \
	' 3 2 200
 3 2 429
 1 connections 1'
expect_eq "... one record each: a net.request for a stream served" \
	"$(records rate | grep -o '"decision":"[a-z]*"\|"status":[0-9]*' | paste -d' ' - - | sort | uniq -c | tr -s ' ')" \
	' 3 "decision":"allow" "status":200'
expect_eq "... and a net.denied (rate) for a stream refused over net.rate" \
	"$(grep -c '"event":"net.denied".*"reason":"rate"' "$T/audit-rate.jsonl")" 3

# --- a header list over the SETTINGS limit: 431 on that stream, as an
# HTTP/1.1 head of that size gets, and recorded
out=$(run_h2 big sh -c '
curl -sS --http2 -o /dev/null -w "%{http_version} %{http_code}\n" -H "x-big: $(head -c 40000 /dev/zero | tr "\0" a)" "'"$U"'/v1/data.json"
curl -sS --http2 -w " %{http_version} %{http_code}\n" "'"$U"'/v1/data.json"
' 2>&1)
expect_eq "a 40000-byte header: 431 on its stream; the next request goes through" "$out" '2 431
{"answer": 42}
 2 200'
check "... recorded as net.denied bad-request with why" \
	grep -q '"event":"net.denied".*"detail":"header list too large".*"path":"/v1/data.json".*"reason":"bad-request".*"via":"h2"' "$T/audit-big.jsonl"

# --- a client that leaves mid-stream (its stream's connection is closed as
# an HTTP/1.1 client's would be); the worker serves the next one
out=$(run_h2 cut sh -c '
curl -sS --http2 --limit-rate 100k --max-time 1 -o /dev/null "'"$U"'/v1/huge.bin" 2>/dev/null
echo "cut rc=$?"
curl -sS --http2 "'"$U"'/v1/data.json"
' 2>&1)
expect_eq "a client that leaves mid-stream, then a new connection is served" "$out" 'cut rc=28
{"answer": 42}'

if command -v nghttp >/dev/null; then
	# nghttp opens its streams at once (-m: the same path several times)
	out=$(run_h2 nghttp sh -c 'nghttp -n -s -m 10 "'"$U"'/v1/s1.txt" 2>&1 | grep -c "^ *[0-9].*/v1/s1.txt"' 2>&1)
	expect_eq "nghttp: ten concurrent streams complete" "$out" 10
	expect_eq "... ten records, status 200" \
		"$(records nghttp | grep '"status":200' | grep -c '"via":"h2"')" 10
else
	skip "nghttp: ten concurrent streams" "nghttp2-client not installed"
fi

finish
