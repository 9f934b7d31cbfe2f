#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The local API's costs (docs/api.md), no pass/fail:
#   - round trip of an exec of /bin/true through `sandcap serve` (HTTP on the
#     unix socket, one kept-alive connection) against a bare `sandcap exec`
#     of the same session: the median of each and the overhead; and the
#     same through .../commands, the SDKs' way (no child of the daemon's);
#   - a create taken from the warm pool, and a create that starts a session;
#   - a create from the pool to the end of its first command (/bin/true);
#   - exec round trips with CONC sessions at once, a connection each: p50, p99;
#   - the memory of 100 idle sessions: the PSS of every supervisor and
#     sandbox process, summed (smaps_rollup), per session.
#
#   bench/api.sh [SANDCAP_BINARY]   (as root)
#   env: RUNS (default 50), IDLE (default 100), CONC (default 30), BENCH_RESULTS (append
#   "api<TAB>NAME<TAB>VALUE<TAB>UNIT" lines)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
S=${1:-$(pwd)/build/sandcap}
RUNS=${RUNS:-50}
IDLE=${IDLE:-100}
CONC=${CONC:-30}
bench_tmp api
export SANDCAP_RUNTIME_DIR=$T/run
echo '{"version": 1, "name": "bench", "limits": {"memory": "64M", "pids": 16, "wall": "10m"}}' >"$T/bench.json"
"$S" serve --socket "$T/api.sock" --pool "$T/bench.json=$RUNS" --quota-per-uid 0 2>"$T/serve.log" &
daemon=$!
bench_on_exit 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null'

python3 - "$S" "$T/api.sock" "$RUNS" "$IDLE" "$T/bench.json" "$CONC" <<'PY'
import http.client, json, os, socket, statistics, subprocess, sys, threading, time

exe, sock, runs, idle, policy = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
conc = int(sys.argv[6])

class Conn(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(sock)

c = Conn("sandcap")
def call(method, path, body=None):
    c.request(method, path, body=json.dumps(body) if body is not None else None)
    r = c.getresponse()
    return r.status, r.read()

for _ in range(300):  # the pool full
    st, b = call("GET", "/v1/health")
    if json.loads(b)["policies"][0]["ready"] == runs:
        break
    time.sleep(0.1)

def med(xs):
    return statistics.median(xs) * 1000

out = os.environ.get("BENCH_RESULTS")
def report(name, value, unit):
    print(f"{name:<34} {value:10.3f} {unit}")
    if out:
        with open(out, "a") as f:
            f.write(f"api\t{name}\t{value:.3f}\t{unit}\n")

pool, first, ids = [], [], []
for _ in range(runs):
    t = time.perf_counter(); st, b = call("POST", "/v1/sessions", {"policy": "bench"}); pool.append(time.perf_counter() - t)
    assert st == 201 and json.loads(b)["from_pool"], b
    ids.append(json.loads(b)["id"])
    st, b = call("POST", f"/v1/sessions/{ids[-1]}/exec", {"argv": ["/bin/true"]}); first.append(time.perf_counter() - t)
    assert st == 200 and b'"exit_code":0' in b, b
cold = []
for _ in range(min(runs, 20)):
    t = time.perf_counter(); st, b = call("POST", "/v1/sessions", {"policy": json.load(open(policy)) | {"name": "cold"}}); cold.append(time.perf_counter() - t)
    assert st == 201, b
    ids.append(json.loads(b)["id"])

sid = ids[0]
api, bare, cmds = [], [], []
for _ in range(runs):
    t = time.perf_counter(); st, b = call("POST", f"/v1/sessions/{sid}/exec", {"argv": ["/bin/true"]}); api.append(time.perf_counter() - t)
    assert st == 200 and b'"exit_code":0' in b, b
    t = time.perf_counter(); subprocess.run([exe, "exec", sid, "--", "/bin/true"], check=True); bare.append(time.perf_counter() - t)
    # the SDKs' way: a command of the daemon's own (no child process)
    t = time.perf_counter(); st, b = call("POST", f"/v1/sessions/{sid}/commands", {"argv": ["/bin/true"]}); cmds.append(time.perf_counter() - t)
    assert st == 200 and b'"exit_code":0' in b, b
lat, lock = [], threading.Lock()
def worker(sid):
    w = Conn("sandcap")
    mine = []
    for _ in range(runs):
        t = time.perf_counter()
        w.request("POST", f"/v1/sessions/{sid}/exec", body=json.dumps({"argv": ["/bin/true"]}))
        r = w.getresponse(); b = r.read()
        mine.append(time.perf_counter() - t)
        assert r.status == 200 and b'"exit_code":0' in b, b
    with lock:
        lat.extend(mine)
threads = [threading.Thread(target=worker, args=(i,)) for i in ids[:conc]]
t_all = time.perf_counter()
for th in threads: th.start()
for th in threads: th.join()
t_all = time.perf_counter() - t_all
lat.sort()
report("create from the pool (median)", med(pool), "ms")
report("pooled create to first command (median)", med(first), "ms")
report("create, session started (median)", med(cold), "ms")
report("exec /bin/true via the API (median)", med(api), "ms")
report("bare sandcap exec /bin/true (median)", med(bare), "ms")
report("API round trip overhead", med(api) - med(bare), "ms")
report("API exec / bare exec", med(api) / med(bare), "x")
report("command /bin/true via the API (median)", med(cmds), "ms")
report("API command / bare exec", med(cmds) / med(bare), "x")
report(f"exec with {len(threads)} sessions at once (p50)", lat[len(lat) // 2] * 1000, "ms")
report(f"exec with {len(threads)} sessions at once (p99)", lat[min(len(lat) - 1, len(lat) * 99 // 100)] * 1000, "ms")
report(f"execs a second with {len(threads)} sessions", len(lat) / t_all, "/s")
for i in ids:
    call("DELETE", f"/v1/sessions/{i}")

# memory of idle sessions: started through the API, then measured
idle_ids = []
for _ in range(idle):
    st, b = call("POST", "/v1/sessions", {"policy": json.load(open(policy)) | {"name": "idle"}})
    assert st == 201, b
    idle_ids.append(json.loads(b))
time.sleep(1)

def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []

def tree(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop(); out.append(p); todo += children(p)
    return out

def pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

total = nprocs = 0
for s in idle_ids:
    procs = tree(s["pid"])
    nprocs += len(procs)
    total += sum(pss(p) for p in procs)
report(f"memory of {idle} idle sessions (PSS)", total / 1024, "MiB")
report("per idle session (PSS)", total / idle, "KiB")
report("processes per idle session", nprocs / idle, "")
for s in idle_ids:
    call("DELETE", f"/v1/sessions/{s['id']}")
PY
