#!/usr/bin/env bash
# The five demo scenarios through the Docker SDK for Python (Debian's
# python3-docker: DockerClient, containers.run with runtime="sandcap",
# volumes, mem_limit, nano_cpus, detach; wait, logs, stats), against a
# dockerd of this test's own (docker-lib.sh) whose `sandcap` runtime has a
# policy allowing one server on a bridge network of the test's.
# tests/helpers/docker-sdk.py runs them: normal execution (the result in
# the rw volume, as uid 1000), limits (the OOM kill: 137, State.OOMKilled
# and the cgroup's count in the log; CPU held to 0.5 core, throttled),
# egress (the allowed server through the proxy from the container's
# address, a denied host and port refused, a direct connection refused),
# filesystem (ro volume read and not written, rw volume written, host
# files outside invisible, examples/agents/fs-agent.sh) and audit (the
# container's log, named by sandcap-runc's state, verifies; an edited or
# cut copy does not). Then nothing is left behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/docker-lib.sh"
# Debian's python3-docker is /usr/bin/python3's.
PY=
for p in /usr/bin/python3 python3; do
	$p -c 'import docker' 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || skip_all "needs the Docker SDK for Python (apt: python3-docker)"
HOG=$(dirname "$SANDCAP")/tests/helpers/hog
[ -x "$HOG" ] || HOG=$(dirname "$0")/../../build/tests/helpers/hog
[ -x "$HOG" ] || skip_all "tests/helpers/hog not built"
HERE=$(cd "$(dirname "$0")" && pwd)

NET=sc-dksdk-$$
SUBNET=10.231.10.0/24
ADDR=10.231.10.1 # the bridge's host side, where the servers listen
PORT=$(free_port 2)
srv=
cleanup() {
	docker_cleanup "$NET"
	[ -n "$srv" ] && kill $srv 2>/dev/null && wait $srv 2>/dev/null
	cleanup_dir
}
trap cleanup EXIT

docker_image "$HOG"
mkdir -p "$T/www"
echo "past-the-proxy" > "$T/www/index.html"
cat > "$T/policy.json" <<EOF
{"net": {"egress": [{"host": "$ADDR", "ports": [$PORT]}], "allow_private": ["$SUBNET"]},
 "audit": {"exec": true}}
EOF
docker_start

# The servers bind to the bridge's address once the script made it.
(
	for _ in $(seq 600); do ip -4 -o addr show | grep -q " $ADDR/" && break; sleep 0.1; done
	exec python3 -m http.server --bind "$ADDR" --directory "$T/www" "$PORT"
) > "$T/srv.log" 2>&1 &
srv=$!
(
	for _ in $(seq 600); do ip -4 -o addr show | grep -q " $ADDR/" && break; sleep 0.1; done
	exec python3 -m http.server --bind "$ADDR" --directory "$T/www" "$((PORT + 1))"
) > "$T/srv2.log" 2>&1 &
srv="$srv $!"

n=0 rc=
while read -r verdict what; do
	case $verdict in
	PASS) ok "$what" ;;
	FAIL) not_ok "$what" ;;
	EXIT) rc=$what && continue ;;
	*) continue ;;
	esac
	n=$((n + 1))
done < <(SANDCAP_RUNC=$R EGRESS="$ADDR $PORT $SUBNET $NET" AGENTS="$HERE/../../examples/agents" \
	timeout 300 "$PY" "$HERE/../helpers/docker-sdk.py" "$DOCKER_HOST" "$T" 2> "$T/sdk.err"; echo "EXIT $?")
expect_eq "the SDK ran the five scenarios to their end ($n checks)" "$rc $((n >= 36))" "0 1"
[ -s "$T/sdk.err" ] && tap_diag "$(tail -20 "$T/sdk.err")"

kill $srv 2>/dev/null && wait $srv 2>/dev/null
srv=
docker_stop_and_check
check "no address of its network on the host" bash -c "! ip -4 -o addr show | grep -q ' $ADDR/'"
finish
