#!/usr/bin/env bash
# The API daemon (`sandcap serve`, docs/api.md) under attack by the callers it
# serves: an inline policy from an unauthorized uid tells nothing about the
# host's files; one uid trickling 300 heads a byte at a time, or holding 256
# idle connections, does not keep another uid (or root) from an answer within
# 1 s, and its connections are closed at the head deadline; keep-alive
# connections that idle are closed, and give their place to a new one; 50 MB creates, with and without
# Content-Length, are refused at the 1 MiB bound while serve's memory stays
# under 64 MiB (VmHWM); a write a read-only mount refuses is 403 denied (API
# and MCP).
# Usage: SANDCAP=build/sandcap tests/integration/test-api-abuse.sh (as root)
. "$(dirname "$0")/lib.sh"
need_root
# meson test sets MALLOC_PERTURB_, which makes glibc touch every page it
# hands out: serve's memory is measured below as a user runs it.
unset MALLOC_PERTURB_
[ -x "$SANDCAP" ] || skip_all "$SANDCAP not built"
export SANDCAP SANDCAP_RUNTIME_DIR="$T/run"
S=$T/api.sock
mkdir -p "$T/ro"
echo data >"$T/ro/f"
policy agent "{\"version\": 1, \"name\": \"agent\", \"limits\": {\"memory\": \"128M\", \"pids\": 64, \"wall\": \"5m\"},
  \"fs\": {\"grants\": [{\"path\": \"$T/ro\", \"mode\": \"ro\", \"at\": \"/data\"}]}}"

as_uid() { local u=$1; shift; setpriv --reuid="$u" --regid=65534 --clear-groups "$@"; }
jget() { python3 -c 'import json,sys; d=json.load(sys.stdin); exec("print(d" + sys.argv[1] + ")")' "$1"; }
healthy() { [ "$(curl -s -m 5 --unix-socket "$S" http://sandcap/v1/health | jget '["ok"]' 2>/dev/null)" = True ]; }

"$SANDCAP" serve --socket "$S" --group nogroup --policy "$T/agent.json" 2>"$T/serve.log" &
daemon=$!
for _ in $(seq 100); do healthy && break; sleep 0.1; done
check "serve answers" healthy
# the memory of the process that serves (the front execs sandcap-main in place)
vm() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$daemon/status"; }
base_rss=$(vm VmRSS)

# --- an inline policy from an unauthorized uid: no oracle of the host's files ---
hidden=/root/sandcap-abuse-$$
mkdir -p "$hidden" && chmod 700 /root
oracle() { # the answer to uid 65534 for a grant of $1
	as_uid 65534 curl -s -w ' %{http_code}' --unix-socket "$S" -X POST \
		-d "{\"policy\": {\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$1\", \"mode\": \"ro\"}]}}}" \
		http://sandcap/v1/sessions
}
yes_=$(oracle "$hidden")
no_=$(oracle "$hidden-missing")
rmdir "$hidden"
expect_match "an inline policy from uid 65534 naming a path under /root: 403 forbidden" "$yes_" '"code":"forbidden".* 403$'
expect_eq "the same answer whether the path exists or not" "$no_" "$yes_"
bad=$(as_uid 65534 curl -s -w ' %{http_code}' --unix-socket "$S" -X POST \
	-d '{"policy": {"version": 1, "fs": {"grants": [{"path": "relative", "mode": "rwx"}]}}}' http://sandcap/v1/sessions)
expect_eq "an invalid inline policy from uid 65534: the same answer" "$bad" "$yes_"
out=$(curl -s -w ' %{http_code}' --unix-socket "$S" -X POST \
	-d "{\"policy\": {\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$hidden-missing\", \"mode\": \"ro\"}]}}}" \
	http://sandcap/v1/sessions)
expect_match "root is still told what is wrong with its inline policy" "$out" '"code":"policy_invalid".*"path":"\$\.fs\.grants\[0\]\.path".* 400$'

# --- one uid's slow and idle connections starve nobody ---
# uid 65534 opens 300 connections, each sending a byte of its head every 5 s;
# uid 65533 opens 256 that send nothing. Each prints how many connections were
# taken (not refused at once) and how many were still open after 17 s.
attacker() { # UID COUNT TRICKLE(0|1)
	as_uid "$1" /usr/bin/python3 - "$S" "$2" "$3" <<'EOF'
import socket, sys, time
path, count, trickle = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
socks, refused, busy = [], 0, 0
for _ in range(count):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    try:
        s.connect(path)
    except OSError:
        refused += 1
        continue
    s.setblocking(False)
    socks.append(s)
head = b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 64 + b"\r\n\r\n"
def answered(s):  # the daemon answered or closed it
    try:
        return s.recv(4096) is not None
    except BlockingIOError:
        return False
    except OSError:
        return True
# refused ones are answered 503 and closed at once: before any byte is sent
time.sleep(2)
live = {s: not answered(s) for s in socks}
busy = sum(1 for s in socks if not live[s])
for _ in range(3):  # a byte every 5 s
    for s in socks:
        if trickle and live[s]:
            try:
                s.send(head[_:_ + 1])
            except OSError:
                live[s] = False
    time.sleep(5)
for s in socks:
    if live[s] and answered(s):
        live[s] = False
taken = len(socks) - busy
print(taken, sum(1 for s in socks if live[s]))
EOF
}
attacker 65534 300 1 >"$T/slow.out" 2>&1 &
slow=$!
attacker 65533 256 0 >"$T/idle.out" 2>&1 &
idle=$!
sleep 2
worst=0 fails=0 threads=0
for i in $(seq 8); do
	n=$(ls "/proc/$daemon/task" | wc -l)
	[ "$n" -gt "$threads" ] && threads=$n
	for who in 12345 0; do
		r=$(as_uid "$who" curl -s -o /dev/null -m 5 -w '%{http_code} %{time_total}' --unix-socket "$S" \
			http://sandcap/v1/health)
		[ "${r% *}" = 200 ] || fails=$((fails + 1))
		worst=$(python3 -c "print(max($worst, ${r#* }))")
	done
	sleep 1
done
wait $slow $idle
tap_diag "under 300 slow + 256 idle connections: the slowest other answer took ${worst}s; serve had at most $threads threads"
tap_diag "slow attacker (taken, still open at 17 s): $(cat "$T/slow.out"); idle attacker: $(cat "$T/idle.out")"
expect_eq "uid 12345 and root answered 200 every time while one uid held 300 slow connections" "$fails" 0
check "each answer within 1 s" python3 -c "import sys; sys.exit(not $worst < 1.0)"
read -r taken open <"$T/slow.out"
check "the slow uid had at most 64 connections taken, the rest refused or evicted at once" test "${taken:-999}" -le 64
check "serve held at most 64 + 64 connection threads (and a few of its own) meanwhile" test "$threads" -le 136
expect_eq "its slow heads were all closed by the head deadline (10 s)" "${open:-x}" 0
read -r taken open <"$T/idle.out"
check "the idle uid had at most 64 connections taken" test "${taken:-999}" -le 64
expect_eq "its idle connections were all closed (10 s)" "${open:-x}" 0

# A uid at its share of connections, 64 of them idle: its next connection
# takes the place of the oldest idle one rather than be refused.
out=$(as_uid 12345 /usr/bin/python3 - "$S" <<'EOF'
import socket, sys, time
idle = []
for _ in range(64):
    s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); idle.append(s)
time.sleep(0.5)
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
t = time.time()
s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
first = s.recv(4096).split(b"\r\n")[0].decode()
took = time.time() - t
time.sleep(0.5)
closed = 0
for i in idle:
    i.setblocking(False)
    try:
        closed += i.recv(10) == b""
    except BlockingIOError:
        pass
print(first, closed, "fast" if took < 1 else took)
EOF
)
expect_eq "a uid with 64 idle connections: its 65th is answered, the oldest idle one closed" "$out" "HTTP/1.1 200 OK 1 fast"

# A keep-alive connection that idles after an answer is closed too.
out=$(python3 - "$S" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(30)
s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
first = s.recv(4096).split(b"\r\n")[0].decode()
t = time.time()
while s.recv(4096):
    pass
print(first, round(time.time() - t))
EOF
)
expect_match "an idle keep-alive connection is closed after about 10 s" "$out" '^HTTP/1.1 200 OK (9|10|11|12)$'

# --- oversized bodies: refused at the bound, memory bounded ---
# six 50 MB creates at once with Content-Length and six chunked; each prints
# its status line and how many bytes it got to send before the answer
big() { # chunked(0|1)
	as_uid 65534 /usr/bin/python3 - "$S" "$1" <<'EOF'
import socket, sys, threading
path, chunked = sys.argv[1], sys.argv[2] == "1"
total = 50 * 1000 * 1000
def one(out, i):
    s = socket.socket(socket.AF_UNIX); s.connect(path); s.settimeout(30)
    head = b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\n"
    head += b"Transfer-Encoding: chunked\r\n\r\n" if chunked else b"Content-Length: %d\r\n\r\n" % total
    first = b'{"policy": {"version": 1, "name": "'
    s.sendall(head + (b"%x\r\n%s\r\n" % (len(first), first) if chunked else first))
    piece, sent = b"a" * 65536, 0
    try:
        while sent < total:
            s.sendall(b"10000\r\n" + piece + b"\r\n" if chunked else piece)
            sent += len(piece)
    except OSError:
        pass
    try:
        out[i] = (s.recv(200).split(b"\r\n")[0].decode(), sent)
    except OSError as e:
        out[i] = ("no answer: %s" % e, sent)
out = [None] * 6
ts = [threading.Thread(target=one, args=(out, i)) for i in range(6)]
[t.start() for t in ts]; [t.join() for t in ts]
print(" ".join(sorted(set(o[0] for o in out))), max(o[1] for o in out))
EOF
}
out=$(big 0)
expect_match "six 50 MB creates with Content-Length: 413" "$out" '^HTTP/1.1 413 [A-Za-z ]+ [0-9]+$'
check "refused from the head, before the body (sent ${out##* } bytes at most)" test "${out##* }" -lt $((8 << 20))
out=$(big 1)
expect_match "six 50 MB chunked creates: 413" "$out" '^HTTP/1.1 413 [A-Za-z ]+ [0-9]+$'
check "refused once past the 1 MiB bound (sent ${out##* } bytes at most)" test "${out##* }" -lt $((8 << 20))
hwm=$(vm VmHWM)
tap_diag "serve's memory: VmRSS ${base_rss} kB at start, VmHWM ${hwm} kB after every attack, VmRSS $(vm VmRSS) kB"
if ldd "$(dirname "$SANDCAP")/sandcap-main" 2>/dev/null | grep -q libasan; then
	# ASan's shadow and quarantine: bound the growth, not the total
	check "serve grew by less than 64 MiB under the attacks (ASan build)" test $((hwm - base_rss)) -lt 65536
else
	check "serve's peak memory under the attacks stayed under 64 MiB (VmHWM)" test "$hwm" -lt 65536
fi
check "still serving after every attack" healthy

# --- a write a read-only mount refuses: 403 denied, one prefix ---
ID=$(curl -s --unix-socket "$S" -d '{"policy": "agent"}' http://sandcap/v1/sessions | jget '["id"]')
for p in /data/new /data/f /usr/bin/planted; do
	out=$(curl -s -w ' %{http_code}' --unix-socket "$S" -T "$T/agent.json" "http://sandcap/v1/sessions/$ID/files?path=$p")
	expect_match "PUT $p (a read-only mount): 403 denied" "$out" '^\{"error":\{"code":"denied","message":"[^"]*Read-only file system"\}\}[[:space:]]+403$'
	expect_no_match "  with one prefix" "$out" 'session put: session put'
done
check "nothing written on the host" test "$(cat "$T/ro/f")" = data -a ! -e "$T/ro/new" -a ! -e /usr/bin/planted
curl -s --unix-socket "$S" -X DELETE "http://sandcap/v1/sessions/$ID" >/dev/null
out=$(python3 - "$SANDCAP" "$T/agent.json" 2>/dev/null <<'EOF'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp", "--policy", sys.argv[2]], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True)
def call(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())
call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
r = call(2, "tools/call", {"name": "write_file", "arguments": {"path": "/data/new", "content": "x"}})["result"]
print(r["isError"], r["content"][0]["text"])
p.stdin.close(); p.wait()
EOF
)
expect_match "MCP: write_file into a read-only mount is a tool error, denied" "$out" '^True denied: .*Read-only file system$'
expect_no_match "  with one prefix" "$out" 'session put: session put'

# idle connections do not hold up the end
as_uid 12345 /usr/bin/python3 -c 'import socket, sys, time
s = [socket.socket(socket.AF_UNIX) for _ in range(8)]
[x.connect(sys.argv[1]) for x in s]
time.sleep(30)' "$S" >/dev/null 2>&1 &
holder=$!
sleep 1
t0=$(date +%s%N)
kill -TERM "$daemon"
wait "$daemon"
expect_eq "serve exits 0 on SIGTERM" "$?" 0
ms=$((($(date +%s%N) - t0) / 1000000))
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
tap_diag "SIGTERM to exit with 8 idle connections: $ms ms"
check "with 8 idle connections open, within 5 s (idle ones are closed at once)" test "$ms" -lt 5000
finish
