#!/usr/bin/env bash
# Delegation from inside: an agent asks its supervisor, through
# /run/sandcap/spawn.sock, for a sub-agent with strictly less. Checked for
# the real effect: what the child sees, what is refused and logged, the
# parent's memory limit covering parent + child, depth, the token chain back
# to the root token (and tokens that do not extend it), the combined log.
. "$(dirname "$0")/lib.sh"
need_root
command -v python3 >/dev/null || skip_all "needs python3"

AGENTS=$(cd "$(dirname "$0")/../../examples/agents" && pwd)
mkdir -p "$T/a" "$T/b" "$T/outside" "$T/logs"
echo in-a > "$T/a/fa"
echo in-b > "$T/b/fb"
echo host-only > "$T/outside/secret"
cat > "$T/a/mem.py" <<'EOF'
import sys
chunks = [bytearray(b"x" * (1 << 20)) for _ in range(int(sys.argv[1]))]
print("allocated", len(chunks), flush=True)
EOF
chmod -R a+rX "$T/a" "$T/b"

# parent POLICYNAME DEPTH CHILDREN [MEMORY] [WALL]
parent() {
	policy "$1" "{\"version\": 1,
	 \"fs\": {\"grants\": [{\"path\": \"$T/a\", \"mode\": \"ro\"},
	                       {\"path\": \"$T/b\", \"mode\": \"rw\"},
	                       {\"path\": \"$AGENTS\", \"mode\": \"ro\", \"at\": \"/agents\"}]},
	 \"limits\": {\"memory\": \"${4:-128M}\", \"pids\": 128, \"wall\": \"${5:-60s}\"},
	 \"spawn\": {\"max_depth\": $2, \"max_children\": $3}}"
}
parent p1 1 4
parent p2 2 4
parent pc 1 2

logn=0
# run POLICY CMD...: runs in a sandbox with a fresh log $LOG; output in $out, status in $rc
run() {
	local p=$1
	shift
	logn=$((logn + 1))
	LOG="$T/logs/run$logn.jsonl"
	out=$("$SANDCAP" run --quiet --policy "$T/$p.json" --audit "$LOG" -- "$@" 2>"$T/err")
	rc=$?
}
# field JSON KEY: a top-level field of a one-line JSON reply
field() { python3 -c 'import json,sys; v=json.loads(sys.argv[1]).get(sys.argv[2]); print(json.dumps(v) if isinstance(v,(bool,dict,list)) or v is None else v)' "$1" "$2"; }
# events LOG EVENT: the data of every EVENT record, one JSON object a line
events() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["event"] == sys.argv[2]:
        print(json.dumps(r["data"], sort_keys=True))' "$1" "$2"; }
sp() { echo "python3 /agents/spawn.py $*"; }
verify_log() { "$SANDCAP" audit verify "$1" >/dev/null 2>&1; }
grant_a="{\"fs\": {\"grants\": [{\"path\": \"$T/a\", \"mode\": \"ro\"}]}}"

# --- the socket ---
policy nospawn "{\"version\": 1}"
run nospawn sh -c 'ls -la /run/sandcap 2>&1'
expect_match "no spawn in the policy: no socket" "$out" "No such file"
run p1 sh -c 'test -S /run/sandcap/spawn.sock && echo SOCKET; ls /run/sandcap'
expect_eq "spawn in the policy: the only thing in /run/sandcap is the socket" "$out" "SOCKET
spawn.sock"
run p1 sh -c 'rm -f /run/sandcap/spawn.sock 2>&1; echo x > /run/sandcap/other 2>&1; test -S /run/sandcap/spawn.sock && echo STILL'
expect_match "the agent can neither remove the socket nor write next to it" "$out" "STILL"

# --- a narrower child really sees less ---
run p1 python3 /agents/spawn.py --policy "$grant_a" -- sh -c "cat $T/a/fa; ls $T/b 2>&1; cat $T/b/fb 2>&1; (echo new > $T/a/x) 2>&1; exit 7"
reply=$out
expect_eq "the child runs (ok)" "$(field "$reply" ok)" "true"
expect_match "the child reads the grant it kept" "$(field "$reply" stdout)" "^in-a"
expect_match "the parent's other grant is invisible to the child" "$(field "$reply" stdout)" "$T/b.*No such file.*$T/b/fb.*No such file"
expect_match "the kept grant is still read-only" "$(field "$reply" stdout)" "Read-only file system"
expect_eq "the child's status comes back" "$(field "$reply" status)" "7"
expect_eq "...and is what the agent's client exits with" "$rc" "7"
run p1 sh -c "cat $T/b/fb"
expect_eq "the parent itself still sees both grants" "$out" "in-b"

run p1 python3 /agents/spawn.py --policy "$grant_a" --stdin "from-stdin" -- cat
expect_eq "stdin reaches the child" "$(field "$out" stdout)" "from-stdin"
run p1 python3 /agents/spawn.py -- sh -c 'head -c 20000 /dev/zero | tr "\0" y; echo err >&2'
expect_eq "stdout is cut at 16 KiB" "$(field "$out" stdout | tr -d '\n' | wc -c)" "16384"
expect_eq "...and says so" "$(field "$out" stdout_truncated)" "true"
expect_eq "stderr comes back too, not truncated" "$(field "$out" stderr):$(field "$out" stderr_truncated)" "err:false"

# --- asking for more than the parent has ---
deny() { # deny NAME FRAGMENT REASON-REGEX
	run p1 python3 /agents/spawn.py --policy "$2" -- true
	expect_eq "$1: refused" "$(field "$out" ok):$(field "$out" denied):$rc" "false:true:125"
	expect_match "$1: the reason is given" "$(field "$out" error)" "$3"
	expect_match "$1: logged as spawn.denied with the reason" "$(events "$LOG" spawn.denied)" "$3"
	expect_eq "$1: nothing was started" "$(events "$LOG" spawn.start)" ""
}
deny "a path outside the parent's grants" "{\"fs\": {\"grants\": [{\"path\": \"$T/outside\", \"mode\": \"ro\"}]}}" "inside one of the parent's grants"
deny "rw over a ro grant" "{\"fs\": {\"grants\": [{\"path\": \"$T/a\", \"mode\": \"rw\"}]}}" "read-only in the token"
deny "a new host" '{"net": {"egress": [{"host": "example.com"}]}}' "example.com is not allowed"
deny "more memory" '{"limits": {"memory": "1G"}}' "limits.memory .* is above"
deny "removing the wall clock" '{"limits": {"wall": "1h"}}' "limits.wall .* is above"
deny "a deeper spawn" '{"spawn": {"max_depth": 2}}' "spawn.max_depth 2 is above"
deny "more children" '{"spawn": {"max_children": 9}}' "spawn.max_children 9 is above"
deny "a path escaping with .." "{\"fs\": {\"grants\": [{\"path\": \"$T/a/../outside\", \"mode\": \"ro\"}]}}" "inside one of the parent's grants"
run p1 python3 /agents/spawn.py --policy '{"fs": {"grants": [{"path": "/no/such/dir", "mode": "ro"}]}}' -- true
expect_eq "a missing host path outside is refused with the same words (no existence oracle)" \
	"$(field "$out" error)" "a grant's path must lie inside one of the parent's grants"
run p1 sh -c 'python3 -c "
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(\"/run/sandcap/spawn.sock\")
s.send(b\"not json\")
print(s.recv(65536).decode())"'
expect_match "a malformed request is refused" "$out" '"denied":true.*not a JSON object'
run p1 python3 -c '
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect("/run/sandcap/spawn.sock")
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
s.send(b"{\"argv\": [\"true\"], \"stdin\": \"" + b"x" * 150000 + b"\"}")
print(s.recv(65536).decode())'
expect_match "an oversized request is refused" "$out" '"denied":true.*larger than 128 KiB'

# --- a parent started from a token ---
"$SANDCAP" token keygen --out "$T/root.key" >/dev/null
"$SANDCAP" token mint --key "$T/root.key" --policy "$T/p1.json" --ttl 10m >"$T/p1.tok"
out=$("$SANDCAP" run --quiet --token "$T/p1.tok" --key "$T/root.key" -- python3 /agents/spawn.py --policy "$grant_a" -- sh -c "cat $T/a/fa; cat $T/b/fb 2>&1" 2>/dev/null)
expect_match "a parent run from a token delegates the same way" "$(field "$out" stdout)" "^in-a.*No such file"

# --- the token chain back to the root token ---
# parent (root token, depth 2) -> child (drops grant b, memory 100M) ->
# grandchild (pids 32): each level narrows, the grandchild has all of it.
"$SANDCAP" token mint --key "$T/root.key" --policy "$T/p2.json" --ttl 10m --id root-tok-2 >"$T/p2.tok"
cat >"$T/a/level1.sh" <<LEVEL1
python3 /agents/spawn.py --get-token
python3 /agents/spawn.py --policy '{"limits": {"pids": 32}}' -- sh -c "cat $T/a/fa; ls $T/b 2>&1"
LEVEL1
lvl1="{\"fs\": {\"grants\": [{\"path\": \"$T/a\", \"mode\": \"ro\"}, {\"path\": \"$AGENTS\", \"mode\": \"ro\"}]}, \"limits\": {\"memory\": \"100M\"}}"
LOG="$T/logs/chain.jsonl"
out=$("$SANDCAP" run --quiet --token "$T/p2.tok" --key "$T/root.key" --audit "$LOG" -- python3 /agents/spawn.py --policy "$lvl1" -- sh "$T/a/level1.sh" 2>/dev/null)
childtok=$(field "$out" stdout | sed -n 1p)
inner=$(field "$out" stdout | sed -n 2p)
roottok=$(cat "$T/p2.tok")
check "the child's token is the root token, byte for byte, plus caveats" \
	test -n "$childtok" -a "${childtok#"${roottok%.*}".}" != "$childtok"
expect_match "sandcap token inspect of the child's token shows the root token's id" \
	"$("$SANDCAP" token inspect "$childtok" 2>&1)" "id: *root-tok-2"
expect_eq "the grandchild runs" "$(field "$inner" ok)" "true"
expect_match "...sees the grant both levels kept, not the one the child dropped" "$(field "$inner" stdout)" "^in-a.*$T/b.*No such file"
levels=$(events "$LOG" spawn.start | python3 -c '
import json, sys
for l in sys.stdin:
    d = json.loads(l)
    p = d["plan"]
    print(d["token"]["id"], d["token"]["caveats"], p["limits"]["memory"], p["limits"]["pids"],
          ",".join(sorted(g["path"] for g in p["fs"]["grants"])), p["spawn"]["max_depth"])')
kept=$(printf '%s\n' "$AGENTS" "$T/a" | LC_ALL=C sort | paste -sd,)
expect_eq "the child's spawn.start: the root token's id, 2 caveats (the parent's run, the request), memory 100M, no grant b" \
	"$(sed -n 1p <<<"$levels")" "root-tok-2 2 104857600 128 $kept 1"
expect_match "the grandchild's: the root token's id, more caveats, the intersection of every level" \
	"$(sed -n 2p <<<"$levels")" "^root-tok-2 [34] 104857600 32 $kept 0\$"
check "audit verify passes on the chained log" verify_log "$LOG"

# The agent attenuates its own token (no key) and hands it over.
cat >"$T/a/own.sh" <<OWN
tok=\$(python3 /agents/spawn.py --get-token --attenuate "\$1") || exit 1
python3 /agents/spawn.py --token "\$tok" -- sh -c "cat $T/a/fa; ls $T/b 2>&1"
OWN
run p1 sh "$T/a/own.sh" "$grant_a"
expect_eq "a token the agent attenuated itself is accepted" "$(field "$out" ok)" "true"
expect_match "...and its caveat holds: grant b is gone" "$(field "$out" stdout)" "^in-a.*$T/b.*No such file"
expect_match "...spawn.start counts its caveat and ours" "$(events "$LOG" spawn.start)" '"token": \{"caveats": 2, "id": "sc-'
run p1 python3 -c '
import sys
sys.path.insert(0, "/agents")
import spawn
t = spawn.get_token()
x = spawn.attenuate(t, {"limits": {"memory": "64M"}})
print(spawn.spawn(["true"], token=x.rsplit(".", 1)[0] + "." + t.rsplit(".", 1)[1]))'
expect_match "an extension whose chain is wrong is refused" "$out" "'denied': True.*token signature invalid"
run p1 sh "$T/a/own.sh" '{"fs": {"grants": [{"path": "/no/such/dir", "mode": "ro"}]}}'
expect_eq "a host path outside the parent's grants in the agent's caveat: the same words as in a request" \
	"$(field "$out" error)" "token caveat 1: a grant's path must lie inside one of the parent's grants"

# A token valid under the root key but not an extension of the parent's.
printf '%s\n' '{"limits": {"memory": "100M"}}' >"$T/narrow.json"
"$SANDCAP" token attenuate "$T/p2.tok" --policy "$T/narrow.json" >"$T/a/forged.tok"
verifies() { "$SANDCAP" check --token "$1" --key "$T/root.key" >/dev/null 2>&1; }
check "the forged-prefix token verifies under the root key on its own" verifies "$T/a/forged.tok"
LOG="$T/logs/forged.jsonl"
out=$("$SANDCAP" run --quiet --token "$T/p2.tok" --key "$T/root.key" --audit "$LOG" -- sh -c "python3 /agents/spawn.py --token \"\$(cat $T/a/forged.tok)\" -- true" 2>/dev/null)
expect_eq "...but a child may not run with it: refused" "$(field "$out" ok):$(field "$out" denied)" "false:true"
expect_match "...because its first caveat differs from the parent's" "$(field "$out" error)" "does not extend the parent's token: caveat 1 differs"
expect_match "...and logged" "$(events "$LOG" spawn.denied)" "does not extend the parent's token"
expect_eq "...nothing started" "$(events "$LOG" spawn.start)" ""

# --- a child with less network: its own proxy, the parent's log ---
if command -v curl >/dev/null; then
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	mkdir -p "$T/www" && echo hello-web >"$T/www/index.html"
	python3 -m http.server "$port" --bind 127.0.0.1 --directory "$T/www" >/dev/null 2>&1 &
	web=$!
	sleep 0.5
	policy pn "{\"version\": 1,
	 \"fs\": {\"grants\": [{\"path\": \"$AGENTS\", \"mode\": \"ro\", \"at\": \"/agents\"}]},
	 \"net\": {\"egress\": [{\"host\": \"127.0.0.1\", \"ports\": [$port]}, {\"host\": \"localhost.test\", \"ports\": [$port]}],
	         \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:9\"},
	 \"limits\": {\"memory\": \"256M\", \"wall\": \"30s\"}, \"spawn\": {\"max_depth\": 1}}"
	get='curl -s --noproxy "" -x "$HTTP_PROXY" -o /dev/null -w "%{http_code} "'
	run pn python3 /agents/spawn.py --policy "{\"net\": {\"egress\": [{\"host\": \"127.0.0.1\", \"ports\": [$port]}]}}" -- \
		sh -c "$get http://127.0.0.1:$port/index.html; $get http://localhost.test:$port/"
	expect_eq "the child reaches the host it kept and is refused the one it dropped" "$(field "$out" stdout)" "200 403 "
	expect_match "the child's request is in the parent's log, with child and parent" "$(events "$LOG" net.request)" "\"child\": \"sc-.*\"parent\": \"sc-.*\"status\": 200"
	expect_match "the child's refusal too" "$(events "$LOG" net.denied)" "\"child\": \"sc-.*localhost.test.*\"parent\": \"sc-"
	kill "$web" 2>/dev/null
	wait "$web" 2>/dev/null
else
	ok "# SKIP curl not installed: network delegation not tested"
fi

# --- depth ---
run p1 python3 /agents/spawn.py --policy "$grant_a" -- sh -c 'ls /run/sandcap/spawn.sock 2>&1'
expect_match "max_depth 1: the child (depth 0) has no socket" "$(field "$out" stdout)" "No such file"
run p2 python3 /agents/spawn.py -- python3 /agents/spawn.py -- sh -c 'echo grandchild; ls /run/sandcap 2>&1'
inner=$(field "$out" stdout)
expect_eq "max_depth 2: the child spawns a grandchild" "$(field "$inner" ok)" "true"
expect_match "...which runs and has no socket" "$(field "$inner" stdout)" "grandchild.*No such file"
depths=$(events "$LOG" spawn.start | python3 -c '
import json, sys
print(" ".join(str(json.loads(l)["plan"]["spawn"]["max_depth"]) for l in sys.stdin))')
expect_eq "the children's plans have max_depth 1 then 0" "$depths" "1 0"
root=$(head -1 "$LOG" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandbox"])')
child=$(field "$out" sandbox)
grand=$(field "$inner" sandbox)
chain=$(events "$LOG" spawn.exit | python3 -c '
import json, sys
print(" ".join(json.loads(l)["child"] + "<" + json.loads(l)["parent"] for l in sys.stdin))')
expect_eq "grandchild's events name the child as parent, child's the root" "$chain" "$grand<$child $child<$root"
check "audit verify passes on the three-level log" verify_log "$LOG"

# --- max_children: a total over the parent's life ---
run pc sh -c "$(sp -- true); $(sp -- true); $(sp -- true)"
expect_match "the third child of max_children 2 is refused" "$out" 'max_children 2 reached'
expect_eq "...two ran" "$(events "$LOG" spawn.exit | wc -l)" "2"

# --- children run at the same time ---
run p1 sh -c "$(sp -- sh -c "'echo one; sleep 1'") & $(sp -- sh -c "'echo two; sleep 1'") & wait"
expect_eq "two children at once both answer" "$(grep -c '"ok": true' <<<"$out")" "2"
order=$(python3 -c '
import json, sys
print(" ".join(json.loads(l)["event"] for l in open(sys.argv[1]) if json.loads(l)["event"].startswith("spawn.")))' "$LOG")
expect_eq "...and overlap: both started before either ended" "$order" "spawn.start spawn.start spawn.exit spawn.exit"

# --- the parent's memory limit covers parent + children ---
run p1 python3 /agents/spawn.py --policy '{"limits": {"memory": "100M"}}' -- python3 "$T/a/mem.py" 90
expect_eq "alone, a child allocates 90M under its 100M" "$(field "$out" stdout)" "allocated 90"
run p1 python3 -c "
import subprocess
hold = bytearray(b'y' * (40 << 20))
subprocess.run(['python3', '/agents/spawn.py', '--policy', '{\"limits\": {\"memory\": \"100M\"}}', '--', 'python3', '$T/a/mem.py', '90'])
print('parent-alive', len(hold) >> 20)"
expect_match "with the parent holding 40M of its 128M, the same child is OOM-killed" "$out" '"oom_killed": true.*"status": 137'
expect_match "...and the parent lives on" "$out" "parent-alive 40"
expect_match "the child's OOM kill is logged with its parent" "$(events "$LOG" limit.hit)" "\"child\": \"sc-.*\"limit\": \"memory\".*\"parent\": \"sc-"

# --- the combined log ---
run p1 python3 /agents/spawn.py --policy "$grant_a" -- sh -c "cat $T/a/fa"
check "audit verify passes on a log with a child" verify_log "$LOG"
root=$(head -1 "$LOG" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandbox"])')
child=$(field "$out" sandbox)
tagged=$(python3 -c '
import json, sys
inside, bad, n = False, 0, 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    d = r["data"]
    if r["event"] == "spawn.start":
        inside = True
    if inside:
        n += 1
        if d.get("child") != sys.argv[2] or d.get("parent") != sys.argv[3]:
            bad += 1
    if r["event"] == "spawn.exit":
        inside = False
print(n > 3, bad)' "$LOG" "$child" "$root")
expect_eq "every child event carries child and parent" "$tagged" "True 0"
check "the child's token (one caveat on the parent's) is in spawn.start" \
	grep -qF "\"token\": {\"caveats\": 1, \"id\": \"$root\"}" <(events "$LOG" spawn.start)
expect_match "the child's exec is logged" "$(events "$LOG" proc.exec)" "\"argv\": \\[\"cat\", \"$T/a/fa\"\\], \"child\": \"$child\""
parent pw20 1 4 128M 20s
run pw20 sh -c "sleep 2; $(sp -- true)"
wall=$(events "$LOG" spawn.start | python3 -c '
import json, re, sys
w = json.loads(sys.stdin.readline())["plan"]["limits"]["wall"]
m = re.fullmatch(r"(\d+)(ms|s)", w)
print(int(m.group(1)) * (1 if m.group(2) == "ms" else 1000))')
check "the child's wall clock is what is left of the parent's ($wall ms of 20 s, 2 s used)" \
	test "$wall" -le 19000 -a "$wall" -ge 15000

# --- the parent ends while a child runs ---
# Only this run's processes and cgroups are counted: other sandboxes may be
# running on the host. A unique sleep duration names the child's process.
nap="299.$$$RANDOM"
left_behind() { # left_behind LOG: cgroups of the log's sandboxes that still exist
	python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["sandbox"]); print(r["data"].get("child", ""))' "$1" | sort -u | while read -r id; do
		[ -n "$id" ] && find /sys/fs/cgroup -maxdepth 6 -type d -name "sandcap-$id"
	done | wc -l
}
run p1 sh -c "$(sp -- sleep "$nap") & sleep 1; exit 0"
expect_eq "the parent's exit ends the run" "$rc" "0"
expect_match "the unfinished child is logged as ended with its parent" "$(events "$LOG" spawn.error)" "killed with its parent"
check "audit verify passes" verify_log "$LOG"
check "the child had started" grep -qF "\"command\": [\"sleep\", \"$nap\"]" <(events "$LOG" spawn.start)
sleep 0.2
expect_eq "no child process survives" "$(pgrep -fc "sleep $nap" || true)" "0"
expect_eq "no cgroup of the parent or the child is left behind" "$(left_behind "$LOG")" "0"
parent pw 1 4 128M 2s
run pw python3 /agents/spawn.py -- sleep "$nap"
expect_eq "the parent's wall clock ends its child too" "$rc" "124"
# a SIGKILLed process may still be on its way out: allow it 2 s
for _ in $(seq 20); do [ "$(pgrep -fc "sleep $nap" || true)" = 0 ] && break; sleep 0.1; done
expect_eq "no child process survives the wall clock" "$(pgrep -fc "sleep $nap" || true)" "0"
expect_eq "...nor any of their cgroups" "$(left_behind "$LOG")" "0"
finish
