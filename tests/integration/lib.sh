# Shared helpers for integration tests: TAP output (tests/tap.sh), a temp
# dir, the binary.
# Sourced by tests/integration/test-*.sh; each test runs real sandboxes as root.
set -uo pipefail

SANDCAP=${SANDCAP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/sandcap}
TEST_NAME=$(basename "$0" .sh)
T=$(mktemp -d "/tmp/sandcap-${TEST_NAME}.XXXXXX")
chmod 755 "$T"
export SANDCAP_STATE_DIR="$T/state"
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"

cleanup_dir() { rm -rf "$T"; }
trap cleanup_dir EXIT

ok() { tap_ok "$@"; }
not_ok() { tap_not_ok "$@"; }
skip() { tap_skip "$@"; } # skip WHAT WHY
# check NAME CMD...: ok when CMD succeeds (its output is not TAP: dropped)
check() {
	local name=$1
	shift
	if "$@" >/dev/null; then ok "$name"; else not_ok "$name"; fi
}
# expect_eq NAME GOT WANT
expect_eq() {
	if [ "$2" == "$3" ]; then ok "$1"; else not_ok "$1 (got '$2', want '$3')"; fi
}
# expect_match NAME TEXT REGEX
expect_match() {
	if [[ $2 =~ $3 ]]; then ok "$1"; else not_ok "$1 ('$2' does not match /$3/)"; fi
}
expect_no_match() {
	if [[ $2 =~ $3 ]]; then not_ok "$1 ('$2' matches /$3/)"; else ok "$1"; fi
}
skip_all() { tap_skip_all "$@"; }
need_root() { [ "$(id -u)" = 0 ] || skip_all "needs root"; }
finish() { tap_done; }

# worker_of SUPERVISOR-PID [NOT-THIS-PID]: the egress proxy worker that a
# `sandcap run` (its pid) has now; our own, though other runs share the host.
worker_of() {
	local w
	for _ in $(seq 60); do
		w=$(pgrep -n -P "$1" -f '^sandcap-proxy')
		[ -n "$w" ] && [ "$w" != "${2:-}" ] && { echo "$w"; return 0; }
		sleep 0.1
	done
	return 1
}

# binaries_for_others DIR: copies sandcap and the sandcap-main, sandcap-run,
# sandcap-proxy and sandcap-init beside it (sandcap finds them next to
# itself) into DIR, mode 755, for tests that run as another uid: the build
# tree may live where that user cannot look (a checkout under /root).
# Prints DIR/sandcap.
binaries_for_others() {
	local d
	d=$(dirname "$SANDCAP")
	mkdir -p "$1" && cp "$SANDCAP" "$d/sandcap-main" "$d/sandcap-run" "$d/sandcap-proxy" "$d/sandcap-init" "$1/" && chmod 755 "$1"
	echo "$1/sandcap"
}

# policy NAME JSON: writes $T/NAME.json
policy() { printf '%s\n' "$2" > "$T/$1.json"; }
# sc POLICYNAME CMD...: runs CMD in a sandbox quietly, stdout+stderr captured by caller
sc() {
	local p=$1
	shift
	"$SANDCAP" run --quiet --policy "$T/$p.json" -- "$@"
}

# The loopback servers of tools/fixtures.sh (origins, DNS), stopped when the
# suite exits: use_fixtures TOOL... skips the suite when a tool is missing.
use_fixtures() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null || skip_all "$tool not installed"
	done
	W=$T
	PIDS=()
	. "$(dirname "$0")/../../tools/fixtures.sh"
	trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; cleanup_dir' EXIT
}
