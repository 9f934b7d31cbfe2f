#!/usr/bin/env bash
# How fast an agent can grow the audit log, under the default policy: a
# flood of DNS queries to the sandbox resolver, of requests the proxy
# refuses, of direct connects around it, of refused syscalls, of refused
# file writes and of execs with a long argv, each for a few seconds in a
# real sandbox. From the host, after each run: the log grew no faster than
# its documented bound (1 MiB/s, plus the one-second burst), and every
# query, request, connect, syscall, write and exec is a record or counted
# in a folded one (limit.hit "suppressed"), so that
# records plus counts are exactly what was sent. Then the proxy's own
# upstream lookups under a wildcard rule, against a dnsmasq on loopback:
# bounded by the default net.rate, and `audit report` states the bytes.
. "$(dirname "$0")/lib.sh"
need_root
use_fixtures python3 dnsmasq

SECS=3
RATE=$((1 << 20))
mkdir -p "$T/flood"
cat >"$T/flood/flood.py" <<'PY'
import os, socket, struct, subprocess, sys, time
mode, secs = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + secs
sent = done = 0
def query(s, i):
    name = b''.join(bytes([len(l)]) + l for l in (b'q%d' % i, b'example', b'com')) + b'\0'
    s.send(struct.pack('>HHHHHH', i & 0xffff, 0x0100, 1, 0, 0, 0) + name + struct.pack('>HH', 1, 1))
    s.recv(600)
if mode == 'dns':
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
    s.connect(('127.0.0.1', 53))
    while time.monotonic() < end:
        sent += 1
        try:
            query(s, sent); done += 1
        except socket.timeout:
            pass
elif mode == 'requests':
    req = b'GET http://denied.test/x HTTP/1.1\r\nHost: denied.test\r\n\r\n'
    c = None
    while time.monotonic() < end:
        if c is None:
            c = socket.create_connection(('127.0.0.1', 3128)); f = c.makefile('rb')
        c.sendall(req); sent += 1
        head = b''
        while not head.endswith(b'\r\n\r\n'):
            b = f.read(1)
            if not b: break
            head += b
        if not head:
            c = None; continue
        done += 1
        n = 0; close = False
        for l in head.split(b'\r\n'):
            if l.lower().startswith(b'content-length:'): n = int(l.split(b':')[1])
            if l.lower().startswith(b'connection:') and b'close' in l.lower(): close = True
        f.read(n)
        if close:
            c.close(); c = None
elif mode == 'connects':
    while time.monotonic() < end:
        s = socket.socket(); sent += 1
        try: s.connect(('10.9.9.9', 81))
        except OSError: done += 1
        s.close()
elif mode == 'syscalls':
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    while time.monotonic() < end:
        libc.syscall(153); libc.syscall(165, 0, 0, 0, 0, 0); sent += 2  # vhangup, mount
    done = sent
elif mode == 'writes':
    while time.monotonic() < end:
        sent += 1
        try: os.close(os.open('/usr/flood', os.O_WRONLY | os.O_CREAT))
        except OSError: done += 1
elif mode == 'execs':
    arg = 'x' * 16384
    while time.monotonic() < end:
        subprocess.call(['/bin/true', arg]); sent += 1
    done = sent
print(sent, done)
PY

policy flood "{\"version\": 1,
  \"fs\": {\"grants\": [{\"path\": \"$T/flood\", \"mode\": \"ro\", \"at\": \"/flood\"}]},
  \"net\": {\"egress\": [{\"host\": \"*.example.com\", \"ports\": [80]}]}}"

# facts LOG: log bytes, wall ns, and the counts of the records that matter
facts() {
	python3 - "$1" <<'PY'
import json, os, sys
log = sys.argv[1]
c = dict(dns=0, dns_folded=0, req=0, req_folded=0, denied_req=0, denied_rate=0, tcp=0, tcp_folded=0, execs=0, wall=0,
         sys=0, sys_folded=0, fs=0, fs_folded=0)
for line in open(log):
    r = json.loads(line); e = r['event']; d = r['data']
    if e == 'net.dns': c['dns'] += 1
    elif e == 'net.request' and d.get('decision') == 'deny': c['req'] += 1
    elif e == 'net.denied' and d.get('protocol') == 'tcp': c['tcp'] += 1
    elif e == 'net.denied' and d.get('reason') == 'rate': c['denied_rate'] += 1
    elif e == 'net.denied': c['denied_req'] += 1
    elif e == 'limit.hit' and d.get('limit') == 'rate' and d.get('kind') == 'dns': c['dns_folded'] += d['suppressed']
    elif e == 'limit.hit' and d.get('limit') == 'rate' and d.get('kind') == 'requests': c['req_folded'] += d['suppressed']
    elif e == 'limit.hit' and d.get('limit') == 'net.attempts': c['tcp_folded'] += d.get('suppressed', 0)
    elif e == 'syscall.denied': c['sys'] += 1
    elif e == 'fs.denied': c['fs'] += 1
    elif e == 'limit.hit' and d.get('kind') == 'syscalls': c['sys_folded'] += d['suppressed']
    elif e == 'limit.hit' and d.get('kind') == 'files': c['fs_folded'] += d['suppressed']
    elif e == 'proc.exec' and d.get('argv', [''])[0] == '/bin/true': c['execs'] += 1
    elif e == 'sandbox.exit': c['wall'] = d['wall_ns']
print(os.path.getsize(log), ' '.join('%s=%d' % kv for kv in c.items()))
PY
}

# flood MODE: runs it; sets sent, done, bytes and the counts from facts
flood() {
	local out
	out=$("$SANDCAP" run --quiet --audit "$T/$1.jsonl" --policy "$T/flood.json" -- \
		python3 /flood/flood.py "$1" "$SECS" 2>"$T/$1.err")
	read -r sent done <<<"$out"
	read -r bytes rest <<<"$(facts "$T/$1.jsonl")"
	eval "$rest"
	# the bound over the run's wall time, the one-second burst on top, and
	# the records of start and end
	limit=$(python3 -c "print(int($RATE * ($wall / 1e9 + 1) + 65536))")
	rate=$(python3 -c "print(int($bytes / max($wall / 1e9, 0.001)))")
	diag "$1: sent ${sent:-?}, log $bytes bytes in $((wall / 1000000)) ms: $rate bytes/s"
}
diag() { echo "# $*"; }

flood dns
check "DNS flood: the log grew no faster than 1 MiB/s ($bytes <= $limit bytes)" [ "$bytes" -le "$limit" ]
check "... queries were sent ($sent) and answered ($done)" [ "${done:-0}" -gt 100 ]
expect_eq "... every answered query a net.dns record or counted ($dns + $dns_folded)" "$((dns + dns_folded))" "$done"

flood requests
check "refused requests: the log grew no faster than 1 MiB/s ($bytes <= $limit bytes)" [ "$bytes" -le "$limit" ]
check "... requests were sent ($sent) and answered ($done)" [ "${done:-0}" -gt 100 ]
expect_eq "... every request a record or counted ($req inside net.rate, $denied_rate over it, $req_folded counted)" \
	"$((req + denied_rate + req_folded))" "$done"
check "... over net.rate, one net.denied each for the first 10 a second at most ($denied_rate)" \
	[ "$denied_rate" -le $((10 * (SECS + 2))) -a \( "$denied_rate" -ge 1 -o "$done" -le "$req" \) ]
expect_eq "... inside it, a 403 is one net.denied and one net.request" "$denied_req" "$req"
out=$("$SANDCAP" audit report --json "$T/requests.jsonl" 2>&1)
got=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["bound"]["requests_denied"])' <<<"$out" 2>&1)
expect_eq "... audit report counts every refusal, folded ones too" "$got" "$done"

flood connects
check "direct connects: the log grew no faster than 1 MiB/s ($bytes <= $limit bytes)" [ "$bytes" -le "$limit" ]
check "... connects were refused ($done of $sent)" [ "${done:-0}" -gt 100 ]
expect_eq "... every connect a net.denied record or counted ($tcp + $tcp_folded)" "$((tcp + tcp_folded))" "$done"

flood syscalls
check "refused syscalls (vhangup, mount): the log grew no faster than 1 MiB/s ($bytes <= $limit bytes)" [ "$bytes" -le "$limit" ]
check "... many were refused ($sent)" [ "${sent:-0}" -gt 1000 ]
expect_eq "... every one a syscall.denied or counted ($sys + $sys_folded)" "$((sys + sys_folded))" "$sent"
check "... ten records of each one by one, the rest counted ($sys)" [ "$sys" -eq 20 ]
out=$("$SANDCAP" audit report "$T/syscalls.jsonl" 2>&1)
expect_match "... audit report counts each syscall exactly" "$out" "syscalls  $sent denied: (vhangup x$((sent / 2)) mount x$((sent / 2))|mount x$((sent / 2)) vhangup x$((sent / 2)))"
folded=$(grep -m1 '"kind":"syscalls"' "$T/syscalls.jsonl")
expect_match "... a folded record names the syscall, its first and last time and the first's arguments" \
	"$folded" '"args":\["0x.*"first":"20[0-9-]+T.*"last":"20.*"syscall":"(vhangup|mount)"'

flood writes
check "refused writes: the log grew no faster than 1 MiB/s ($bytes <= $limit bytes)" [ "$bytes" -le "$limit" ]
check "... many were refused ($done of $sent)" [ "${done:-0}" -gt 1000 ]
expect_eq "... every one an fs.denied or counted ($fs + $fs_folded)" "$((fs + fs_folded))" "$done"

flood execs
check "exec loop with a 16 KiB argv: the log grew no faster than 1 MiB/s ($bytes <= $limit bytes)" [ "$bytes" -le "$limit" ]
expect_eq "... every exec a proc.exec record ($execs of $sent)" "$execs" "$sent"

# audit.max_bytes: the run that passes it is stopped, and the log says why.
policy small "{\"version\": 1, \"audit\": {\"max_bytes\": \"256K\", \"max_rate\": null}}"
"$SANDCAP" run --audit "$T/small.jsonl" --policy "$T/small.json" -- \
	sh -c 'i=0; while [ $i -lt 100000 ]; do /bin/true; i=$((i+1)); done; echo finished' >"$T/small.out" 2>"$T/small.err"
rc=$?
check "audit.max_bytes 256K: the run did not go on to the end (exit $rc)" bash -c "[ $rc -ne 0 ] && ! grep -q finished '$T/small.out'"
check "... the log ends with audit.error EFBIG, sandbox.exit and the seal" python3 - "$T/small.jsonl" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
names = [r['event'] for r in ev]
err = [r['data'] for r in ev if r['event'] == 'audit.error']
assert err and err[0]['error'] == 'EFBIG', err
assert names[-2:] == ['sandbox.exit', 'audit.seal'], names[-3:]
PY
size=$(stat -c %s "$T/small.jsonl")
check "... and holds no more than the bound and the stop path's records ($size bytes)" [ "$size" -le $((262144 + 65536)) ]
out=$("$SANDCAP" audit verify "$T/small.jsonl" 2>&1)
expect_match "... which verify calls intact and sealed, writing stopped by EFBIG" "$out" \
	"INCOMPLETE: intact and sealed, but writing failed \(EFBIG\)"
check "... and the run's summary names audit.max_bytes" grep -q "EFBIG (the log reached audit.max_bytes)" "$T/small.err"

# The proxy's own lookups under a wildcard rule carry names the agent
# chose to the upstream resolver: bounded by the default net.rate.
dns=$(free_port)
dnsmasq --no-daemon --no-resolv --no-hosts --listen-address=127.0.0.1 --bind-interfaces \
	--port="$dns" --address=/example.com/127.0.0.1 --log-queries --log-facility="$T/dnsq.log" 2>/dev/null &
PIDS+=($!)
sleep 0.3
policy wild "{\"version\": 1,
  \"fs\": {\"grants\": [{\"path\": \"$T/flood\", \"mode\": \"ro\", \"at\": \"/flood\"}]},
  \"net\": {\"egress\": [{\"host\": \"*.example.com\", \"ports\": [9]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\"}}"
cat >"$T/flood/wild.py" <<'PY'
import socket, sys, time
end = time.monotonic() + float(sys.argv[1]); n = 0
while time.monotonic() < end:
    c = socket.create_connection(('127.0.0.1', 3128))
    h = 'x%05d%s.example.com' % (n, 'a' * 50)
    c.sendall(('GET http://%s:9/ HTTP/1.1\r\nHost: %s:9\r\nConnection: close\r\n\r\n' % (h, h)).encode())
    c.recv(4096); c.close(); n += 1
print(n)
PY
sent=$("$SANDCAP" run --quiet --audit "$T/wild.jsonl" --policy "$T/wild.json" -- python3 /flood/wild.py "$SECS" 2>"$T/wild.err")
names=$(grep -o 'query\[[A-Z]*\] x[0-9]*a*\.example\.com' "$T/dnsq.log" | awk '{print $2}' | sort -u | wc -l)
read -r bytes rest <<<"$(facts "$T/wild.jsonl")"
eval "$rest"
most=$(python3 -c "print(int(200 * ($wall / 1e9 + 1)))")
diag "wildcard: $sent requests, $names distinct names reached dnsmasq in $((wall / 1000000)) ms"
check "names the agent chose reached the upstream resolver at most at net.rate ($names <= $most)" \
	[ "${names:-0}" -ge 1 -a "${names:-0}" -le "$most" ]
out=$("$SANDCAP" audit report "$T/wild.jsonl" 2>&1)
expect_match "audit report states the bytes that could leave by lookups" "$out" \
	"outside +names under a wildcard rule \(\*\.example\.com\).*at most net.rate 200/s lookups, each a name of up to 253 bytes, so up to 50600 bytes a second, at most [0-9]+ bytes in this run"
finish
