#!/usr/bin/env bash
# Docker's operations on a running container, with sandcap-runc (a dockerd
# of this test's own: docker-lib.sh), each checked by its effect and read
# through docker (its API, its client), not through the pid sandcap-runc
# gives. Asserts: `docker stats` reads the container's cgroup (memory about
# what the process holds, pids, CPU held to --cpus 0.5); `docker top` lists
# the container's processes and no other; pause freezes them (a counter
# stops, exec is refused) and unpause resumes them; restart and
# --restart on-failure run the command again; wait and inspect give the
# state and the exit code; update is refused and changes nothing; --cpus
# and --pids-limit reach the sandbox's own cgroup, and a fork bomb under
# --pids-limit 20 is bounded.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/docker-lib.sh"
HOG=$(dirname "$SANDCAP")/tests/helpers/hog
[ -x "$HOG" ] || HOG=$(dirname "$0")/../../build/tests/helpers/hog
[ -x "$HOG" ] || skip_all "tests/helpers/hog not built"

trap 'docker_cleanup; cleanup_dir' EXIT
docker_image "$HOG"
mkdir -p "$T/vol"
chmod 777 "$T/vol"
echo '{}' > "$T/policy.json"
docker_start
run() { dk run -d --runtime sandcap "$@" 2>&1; }
st() { dk inspect -f "$1" "$2" 2>&1; }
# api_stats ID: "MEMORY PIDS CORES" from one stats sample of docker's API
# (memory as docker's client counts it, usage less the inactive file cache;
# cores over the second between the sample and the one before it)
api_stats() {
	curl -s --max-time 30 --unix-socket "$T/docker.sock" \
		"http://docker/containers/$1/stats?stream=false" | python3 -c '
import json, sys
s = json.load(sys.stdin)
m = s["memory_stats"]
st = m.get("stats", {})
mem = m["usage"] - st.get("total_inactive_file", st.get("inactive_file", 0))
c, p = s["cpu_stats"], s["precpu_stats"]
dt = c["cpu_usage"]["total_usage"] - p["cpu_usage"]["total_usage"]
ds = c["system_cpu_usage"] - p.get("system_cpu_usage", 0)
print(mem, s["pids_stats"].get("current", 0), "%.2f" % (dt / ds * c["online_cpus"] if ds else -1))'
}
# cg CONTROLLER FILE ID: FILE of the sandbox's own cgroup, nested in docker's
cg() {
	cat /sys/fs/cgroup/"$1"/docker/"$3"/*/"$2" /sys/fs/cgroup/docker/"$3"/*/"$2" 2>/dev/null | head -1
}

# ---- stats: memory and pids ----
id=$(run --memory 128m sandcap-bb:1 hog hold 40 /bin/sleep 600)
expect_match "a container holding 40 MiB runs" "$id" '^[0-9a-f]{64}$'
for _ in $(seq 50); do
	read -r mem pids cores < <(api_stats "$id")
	[ "${mem:-0}" -ge $((40 << 20)) ] && break
	sleep 0.2
done
check "stats: memory $((${mem:-0} >> 20)) MiB, what it holds (40 MiB) and little more" \
	test "${mem:-0}" -ge $((40 << 20)) -a "${mem:-0}" -le $((56 << 20))
check "stats: pids $pids, its processes (init, hog, sleep) at least" test "${pids:-0}" -ge 3
out=$(dk stats --no-stream --format '{{.MemUsage}} {{.PIDs}}' "$id" 2>&1)
expect_match "docker stats (the client) says so too, against the 128 MiB limit" "$out" '^(4[0-9]|5[0-5])(\.[0-9]+)?MiB / 128MiB [0-9]+$'

# ---- update: refused, the limits as they were ----
out=$(dk update --memory 256m --memory-swap 512m "$id" 2>&1)
expect_match "update: refused, with the reason" "$?:$out" "^1:.*cannot be changed once it is created"
expect_eq "... the sandbox's memory limit as it was, docker's configuration too" \
	"$(cg memory memory.limit_in_bytes "$id")$(cg memory memory.max "$id") $(st '{{.HostConfig.Memory}}' "$id")" \
	"134217728 134217728"
dk rm -f "$id" >/dev/null 2>&1

# ---- stats: CPU, and --cpus reaching the sandbox ----
id=$(run --cpus 0.5 sandcap-bb:1 hog spin 2 60)
expect_eq "--cpus 0.5: the sandbox's cgroup has half a core" \
	"$(cg cpu cpu.cfs_quota_us "$id") $(cg cpu cpu.cfs_period_us "$id")" "50000 100000"
sleep 1
read -r mem pids cores < <(api_stats "$id")
check "stats: two spinning threads use $cores cores, held to 0.5" \
	python3 -c "import sys; sys.exit(not 0.05 <= $cores <= 0.65)"
dk rm -f "$id" >/dev/null 2>&1

# ---- top: the container's processes, no other ----
a=$(run sandcap-bb:1 sh -c 'sleep 1001 & exec sleep 1002')
b=$(run sandcap-bb:1 sleep 1003)
for _ in $(seq 50); do dk top "$a" 2>/dev/null | grep -q 'sleep 1001' && break; sleep 0.1; done
out=$(dk top "$a" -o pid,args 2>&1 | sed 1d | awk '{$1=""; print substr($0, 2)}' | sort | tr '\n' ';')
expect_match "top: pid 1 of the sandbox and the command's two processes, nothing else" \
	"$out" '^sandcap-init [^;]*;sleep 1001;sleep 1002;$' 
dk rm -f "$a" "$b" >/dev/null 2>&1

# ---- pause, unpause ----
id=$(run -v "$T/vol:/data" sandcap-bb:1 sh -c 'while :; do echo >> /data/n; sleep 0.05; done')
n() { wc -l < "$T/vol/n"; } # the counter: a line each 50 ms
for _ in $(seq 50); do [ "$(n 2>/dev/null)" -ge 5 ] 2>/dev/null && break; sleep 0.1; done
dk pause "$id" >/dev/null 2>&1
expect_eq "pause: exit 0" "$?" 0
expect_eq "... inspect: paused" "$(st '{{.State.Status}} {{.State.Paused}}' "$id")" "paused true"
n1=$(n)
sleep 1
n2=$(n)
expect_eq "... the counter stands still for a second" "$n2" "$n1"
out=$(dk exec "$id" echo in 2>&1)
expect_match "... exec is refused" "$?:$out" '^1:.* is paused, unpause the container before exec$' 
dk unpause "$id" >/dev/null 2>&1
expect_eq "unpause: exit 0" "$?" 0
sleep 0.5
n3=$(n)
check "... the counter goes on ($n2 -> $n3)" test "$n3" -gt "$n2"
expect_eq "... inspect: running" "$(st '{{.State.Status}} {{.State.Paused}}' "$id")" "running false"
expect_eq "... exec runs" "$(dk exec "$id" echo in 2>&1)" "in"
dk pause "$id" >/dev/null 2>&1
dk rm -f "$id" >/dev/null 2>&1
expect_eq "rm -f of a paused container" "$?:$(dk ps -aq)" "0:"

# ---- create, start, restart, wait, inspect ----
dk create --name rs --runtime sandcap -v "$T/vol:/data" sandcap-bb:1 \
	sh -c 'echo run >> /data/runs; exec sleep 600' >/dev/null 2>&1
expect_eq "create: inspect says created" "$(st '{{.State.Status}} {{.State.Pid}}' rs)" "created 0"
dk start rs >/dev/null 2>&1
for _ in $(seq 50); do [ -s "$T/vol/runs" ] && break; sleep 0.1; done
expect_match "start: running, with a pid" "$(st '{{.State.Status}} {{.State.Running}} {{.State.Pid}}' rs)" '^running true [1-9][0-9]*$'
t0=$(st '{{.State.StartedAt}}' rs)
s=$(date +%s)
dk restart -t 20 rs >/dev/null 2>&1
expect_eq "restart: exit 0" "$?" 0
check "... by SIGTERM, not after the 20 s grace" test $(($(date +%s) - s)) -lt 15
for _ in $(seq 50); do [ "$(grep -c run "$T/vol/runs")" = 2 ] && break; sleep 0.1; done
expect_eq "... the command ran again" "$(grep -c run "$T/vol/runs")" 2
check "... started anew ($(st '{{.State.StartedAt}}' rs), was $t0)" \
	test "$(st '{{.State.Status}} {{.State.StartedAt}}' rs)" '>' "running $t0"
dk rm -f rs >/dev/null 2>&1
rm -f "$T/vol/runs"
dk run -d --name of --restart on-failure:2 --runtime sandcap -v "$T/vol:/data" sandcap-bb:1 \
	sh -c 'echo run >> /data/runs; exit 4' >/dev/null 2>&1
for _ in $(seq 100); do
	[ "$(st '{{.State.Status}} {{.RestartCount}}' of)" = "exited 2" ] && break
	sleep 0.1
done
expect_eq "--restart on-failure:2: run three times" "$(grep -c run "$T/vol/runs")" 3
expect_eq "... exited 4, restarted twice" "$(st '{{.State.Status}} {{.State.ExitCode}} {{.RestartCount}}' of)" "exited 4 2"
out=$(run --name waited sandcap-bb:1 sh -c 'sleep 1; exit 3')
expect_match "a container that exits 3 after a second" "$out" '^[0-9a-f]{64}$'
expect_eq "wait: the command's status" "$(dk wait waited 2>&1)" 3
expect_eq "inspect: exited, its code, no pid" \
	"$(st '{{.State.Status}} {{.State.ExitCode}} {{.State.Running}} {{.State.Pid}} {{.State.OOMKilled}}' waited)" \
	"exited 3 false 0 false"
check "... finished after it started" \
	test "$(st '{{.State.FinishedAt}}' waited)" '>' "$(st '{{.State.StartedAt}}' waited)"
dk run -d --name wk --runtime sandcap sandcap-bb:1 sleep 600 >/dev/null 2>&1
(sleep 1; dk kill wk >/dev/null 2>&1) &
k=$!
expect_eq "wait: a killed one's status" "$(dk wait wk 2>&1)" 137
wait $k
dk rm -f of waited wk >/dev/null 2>&1

# ---- --pids-limit 20: a fork bomb ----
id=$(run --pids-limit 20 sandcap-bb:1 hog forkbomb 3)
expect_eq "--pids-limit 20: the sandbox's cgroup" "$(cg pids pids.max "$id")" 20
expect_eq "a fork bomb under it ends (hog exits 0 once a fork was refused)" "$(dk wait "$id" 2>&1)" 0
out=$(dk logs "$id" 2>&1)
forked=$(echo "$out" | sed -n 's/^forked \([0-9]*\), refused \([0-9]*\)$/\1/p')
check "... bounded: $out" test "${forked:-99}" -lt 20
dk rm -f "$id" >/dev/null 2>&1

docker_stop_and_check
finish
