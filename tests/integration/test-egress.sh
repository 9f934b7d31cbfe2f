#!/usr/bin/env bash
# Egress through the one door, from inside real sandboxes with real clients
# (curl, python urllib and requests) against real servers on loopback
# (nginx origin, dnsmasq names, a TLS origin with a CA made here).
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures nginx dnsmasq curl openssl python3

port=$(free_port)
dns=$(free_port)
tls=$(free_port)
start_origin "$port" || skip_all "origin did not start"
start_dns "$dns" api.allowed.test=127.0.0.1 tls.allowed.test=127.0.0.1 other.allowed.test=127.0.0.1 sub.wild.test=127.0.0.1 \
	wild.test=127.0.0.1 denied.test=127.0.0.1 rebind.test=127.0.0.2 metadata.test=169.254.169.254 gone.internal=

# A TLS origin whose CA exists only for this test.
start_tls_origin "$tls" tls.allowed.test || skip_all "TLS origin did not start"

policy net "{\"version\": 1,
  \"fs\": {\"grants\": [{\"path\": \"$T/ca\", \"mode\": \"ro\", \"at\": \"/ca\"}]},
  \"net\": {\"egress\": [
      {\"host\": \"api.allowed.test\", \"ports\": [$port, $tls]},
      {\"host\": \"tls.allowed.test\", \"ports\": [$tls]},
      {\"host\": \"other.allowed.test\", \"ports\": [$port], \"methods\": [\"GET\"]},
      {\"host\": \"*.wild.test\", \"ports\": [$port]},
      {\"host\": \"rebind.test\", \"ports\": [$port]},
      {\"host\": \"metadata.test\", \"ports\": [80, $port]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\", \"rate\": \"200/s\",
    \"credentials\": [{\"host\": \"api.allowed.test\", \"header\": \"Authorization\",
      \"value_env\": \"SANDCAP_TEST_SECRET\", \"format\": \"Bearer %s\", \"upstream\": \"http\"}]}}"
export SANDCAP_TEST_SECRET=s3cret-never-inside-$$
A="http://api.allowed.test:$port"
run_net() { "$SANDCAP" run --quiet --audit "$T/audit-$1.jsonl" --policy "$T/net.json" -- "${@:2}"; }

out=$(run_net curl1 curl -sS "$A/data.json" 2>&1)
expect_eq "curl through the proxy reaches the allowed host" "$out" '{"answer": 42}'
out=$(run_net py python3 -c "
import urllib.request, requests
print(urllib.request.urlopen('$A/data.json', timeout=10).read().decode().strip())
print(requests.get('$A/data.json', timeout=10).json()['answer'])" 2>&1)
expect_eq "python urllib and requests through the proxy" "$out" '{"answer": 42}
42'
check "the origin saw the injected credential" grep -q "auth=\"Bearer $SANDCAP_TEST_SECRET\"" "$T/nginx/access.log"
out=$(run_net leak sh -c 'env; tr "\0" "\n" </proc/1/environ; tr "\0" "\n" </proc/self/environ; grep -rs s3cret /etc /tmp; curl -sS -H "Authorization: mine" '"$A"'/data.json >/dev/null' 2>&1)
expect_no_match "the credential is nowhere inside the sandbox" "$out" "s3cret"
check "an agent's own Authorization header is replaced, not merged" bash -c "! grep -q 'auth=\"mine' '$T/nginx/access.log'"

out=$(run_net denied curl -sS -o /dev/null -w '%{http_code}' "http://denied.test:$port/data.json" 2>&1)
expect_eq "a host outside the allowlist gets 403" "$out" 403
check "the denial is in the audit log" grep -q '"event":"net.denied".*denied.test' "$T/audit-denied.jsonl"
out=$(run_net wild sh -c "curl -sS -o /dev/null -w '%{http_code} ' http://sub.wild.test:$port/data.json; curl -sS -o /dev/null -w '%{http_code}' http://wild.test:$port/data.json" 2>&1)
expect_eq "*.domain allows subdomains only, not the domain itself" "$out" "200 403"
out=$(run_net port curl -sS -o /dev/null -w '%{http_code}' "http://other.allowed.test:$tls/" 2>&1)
expect_eq "a port outside the rule gets 403" "$out" 403
out=$(run_net method curl -sS -o /dev/null -w '%{http_code}' -X DELETE "http://other.allowed.test:$port/data.json" 2>&1)
expect_eq "a method outside the rule gets 403" "$out" 403
out=$(run_net rebind curl -sS -o /dev/null -w '%{http_code}' "http://rebind.test:$port/data.json" 2>&1)
expect_eq "a name resolving to a private address is refused" "$out" 403
out=$(run_net meta curl -sS -o /dev/null -w '%{http_code}' "http://metadata.test/latest/meta-data/" 2>&1)
expect_eq "a name resolving to 169.254.169.254 is refused" "$out" 403
out=$(run_net literal curl -sS --noproxy '' -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/data.json" 2>&1)
expect_eq "a literal IP not in the allowlist is refused" "$out" 403

out=$(run_net tunnel curl -sS --proxytunnel --cacert /ca/ca.pem "https://tls.allowed.test:$tls/" 2>&1 | head -c 200)
expect_match "https through a CONNECT tunnel, verified by the agent" "$out" "s_server|HTTP|html|Ciphers"
check "the tunnel is logged when it closes" grep -q '"event":"net.tunnel.close"' "$T/audit-tunnel.jsonl"
out=$(run_net credconnect curl -sS -i --proxytunnel "https://api.allowed.test:$tls/" 2>&1)
expect_match "CONNECT to a credentialed host is refused, pointing to http://" "$out" "403"
check "... with the reason in the audit log" grep -q 'credentialed-host' "$T/audit-credconnect.jsonl"

out=$(run_net direct python3 -c "
import socket
for a in [('127.0.0.1', $port), ('127.0.0.1', $dns)]:
    try:
        # the sandbox's lo may accept (a transparent listener): nothing may answer
        s = socket.create_connection(a, timeout=2); s.sendall(b'GET /data.json HTTP/1.0\r\n\r\n')
        print('CONNECTED', a, s.recv(100))
    except OSError as e:
        print('refused', e.errno)
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1)
    s.sendto(b'x', ('127.0.0.1', $dns)); print('UDP', s.recv(10))
except OSError as e:
    print('udp refused', e.errno)" 2>&1)
expect_no_match "direct TCP and UDP to host loopback fail" "$out" "CONNECTED|UDP b"

# The proxy worker: unprivileged, no capabilities, filtered.
# Our own worker: the child of this supervisor (other runs may share the host).
"$SANDCAP" run --quiet --audit "$T/audit-worker.jsonl" --policy "$T/net.json" -- sleep 3 >/dev/null 2>&1 &
bg=$!
sleep 1.5
wpid=$(pgrep -n -P "$bg" -f '^sandcap-proxy')
if [ -n "$wpid" ]; then
	st=$(cat /proc/"$wpid"/status)
	uid=$(awk '/^Uid:/ {print $2}' <<<"$st")
	check "proxy worker runs as an unprivileged uid ($uid)" [ "$uid" != 0 ]
	expect_match "proxy worker has no capabilities" "$st" "CapEff:	0000000000000000"
	expect_match "proxy worker has a seccomp filter" "$st" "Seccomp:	2"
	expect_match "proxy worker has no_new_privs" "$st" "NoNewPrivs:	1"
else
	not_ok "proxy worker process found"
fi
wait $bg

# allow_private lifts the private-address check only for what a rule allows.
out=$(run_net sidedoor sh -c "curl -sS --noproxy '' -x \"\$HTTP_PROXY\" -o /dev/null -w '%{http_code} ' -X POST --data x http://127.0.0.1:80/; curl -sS --noproxy '' -x \"\$HTTP_PROXY\" -o /dev/null -w '%{http_code}' -X DELETE http://127.0.0.2/" 2>&1)
expect_eq "allow_private is no side door: POST http://127.0.0.1:80/ and DELETE http://127.0.0.2/ refused" "$out" "403 403"
check "... as ip-literal in the audit log" bash -c "[ \$(grep -c '\"reason\":\"ip-literal\"' '$T/audit-sidedoor.jsonl') -ge 2 ]"
out=$("$SANDCAP" check --policy "$T/net.json" 2>&1)
expect_match "sandcap check says allow_private only widens the listed destinations" "$out" \
	"private addresses: refused, except 127.0.0.1/32.    for the destinations above only"

# Names from the host's /etc/hosts and localhost. The test's hosts file is
# bind-mounted over /etc/hosts in a private mount namespace: the real one is
# never changed.
hosts_sum=$(sha256sum /etc/hosts 2>&1)
printf '127.0.0.1 api.internal\n' >"$T/hosts"
policy hosts "{\"version\": 1, \"net\": {\"egress\": [
      {\"host\": \"api.internal\", \"ports\": [$port]}, {\"host\": \"localhost\", \"ports\": [$port]},
      {\"host\": \"gone.internal\", \"ports\": [$port]}],
    \"allow_private\": [\"127.0.0.1/32\", \"::1/128\"], \"dns\": \"127.0.0.1:$dns\"}}"
out=$("$(dirname "$0")/../helpers/with-hosts-file" "$T/hosts" \
	"$SANDCAP" run --quiet --audit "$T/audit-hosts.jsonl" --policy "$T/hosts.json" -- sh -c \
	"curl -sS http://api.internal:$port/data.json; curl -sS --noproxy '' -x \"\$HTTP_PROXY\" http://localhost:$port/data.json; curl -sS -i http://gone.internal:$port/" 2>&1)
expect_match "a name from the host's /etc/hosts resolves through the proxy" "$out" '^\{"answer": 42\}'
expect_match "localhost resolves (RFC 6761)" "$out" '\}.\{"answer": 42\}'
expect_match "a name that does not resolve gets a body saying why" "$out" \
	"gone.internal does not resolve: no such name in the host's /etc/hosts or in DNS"
check "... and a net.denied record with the reason" grep -q '"event":"net.denied".*"detail":"gone.internal does not resolve.*"reason":"dns-failure"' "$T/audit-hosts.jsonl"
check "the real /etc/hosts is untouched" bash -c "[ \"\$(sha256sum /etc/hosts 2>&1)\" = '$hosts_sum' ]"

# The worker dying is seen, and repaired: killed mid-run, the agent's next
# request works (a new worker on the same listener), the log says so, and
# the budget goes on where it was.
policy budget "{\"version\": 1, \"net\": {\"egress\": [{\"host\": \"api.allowed.test\", \"ports\": [$port]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\", \"egress_budget\": \"100K\"}}"
"$SANDCAP" run --quiet --audit "$T/audit-kill.jsonl" --policy "$T/budget.json" -- sh -c \
	"head -c 61440 /dev/zero >/tmp/b; curl -sS $A/data.json; sleep 3; curl -sS $A/data.json; curl -sS --data-binary @/tmp/b $A/upload; sleep 3; curl -sS --max-time 5 --data-binary @/tmp/b $A/upload; echo; echo end" \
	>"$T/kill.out" 2>"$T/kill.err" &
bg=$!
w1=$(worker_of $bg) && sleep 1 && kill -9 "$w1"
w2=$(worker_of $bg "$w1") && sleep 3.2 && kill -9 "$w2"
wait $bg
rc=$?
out=$(cat "$T/kill.out")
expect_eq "a run whose worker is killed twice ends normally" "$rc" 0
expect_match "the agent's requests after each kill still work" "$out" '^\{"answer": 42\}.\{"answer": 42\}.stored'
check "the log has a proxy.exit per kill, with the signal" bash -c "[ \$(grep -c '\"event\":\"proxy.exit\".*\"signal\":9' '$T/audit-kill.jsonl') = 2 ]"
check "... saying the worker was restarted on the same listener" grep -q '"restarted on the same listener"' "$T/audit-kill.jsonl"
expect_no_match "the budget is carried over: the second 60 KiB upload (past 100K in total) is cut" "$out" 'stored.*stored'
check "... and the cut is recorded" grep -q '"limit":"egress_budget"' "$T/audit-kill.jsonl"
expect_match "the run warns that the proxy was restarted, even with --quiet" "$(cat "$T/kill.err")" \
	"the egress proxy died and was restarted 2 times"
check "the log with the proxy.exit records verifies" "$SANDCAP" audit verify "$T/audit-kill.jsonl"

# Past the bound the sandbox is stopped, with the reason.
"$SANDCAP" run --audit "$T/audit-bound.jsonl" --policy "$T/net.json" -- sleep 30 \
	>"$T/bound.out" 2>"$T/bound.err" &
bg=$!
w=""
for k in 1 2 3 4; do
	w=$(worker_of $bg "$w") && kill -9 "$w"
done
wait $bg
rc=$?
check "after $((4)) deaths (3 restarts) the run stops, not exit 0 ($rc)" [ "$rc" != 0 ]
expect_match "the summary says why" "$(cat "$T/bound.err")" "stopped: its egress proxy died 4 times"
check "the log has 4 proxy.exit records, the last one stopping the sandbox" bash -c \
	"[ \$(grep -c '\"event\":\"proxy.exit\"' '$T/audit-bound.jsonl') = 4 ] && grep '\"event\":\"proxy.exit\"' '$T/audit-bound.jsonl' | tail -1 | grep -q 'restart limit reached: stopping the sandbox'"

policy nonet '{"version": 1}'
out=$("$SANDCAP" run --quiet --policy "$T/nonet.json" -- sh -c 'env | grep -i proxy; python3 -c "import socket; socket.create_connection((\"127.0.0.1\", 3128), timeout=2)"' 2>&1)
expect_no_match "no net.egress: no proxy variables" "$out" "HTTP_PROXY"
expect_match "no net.egress: no listener" "$out" "Connection refused|Permission denied"

finish
