#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-escapes.sh SANDCAP_BINARY POLICY
#
# Runs every escape probe twice: once as
#   SANDCAP_BINARY run --policy POLICY -- PROBE NAME [ARG]
# where it must be HELD, and once bare, where (as root) it must ESCAPE, which
# proves the probe can detect what it looks for. Fails if anything escapes
# inside, or if a probe that should escape outside does not.
#
# PROBE (environment) is the probe-escape binary; by default the one next to
# this script or in build/tests/escape/. POLICY must make it executable
# inside the sandbox at the same path (e.g. a read-only grant of its
# directory) and should have no egress, so that the host-side endpoints
# below are unreachable.
#
# Outside-only exceptions (a HELD outside is reported but not a failure):
#   ptrace-init     the host's pid 1 may be protected (another user
#                   namespace, Yama, lockdown) even from root
#   sys-write       needs a writable numeric knob in /sys (KSM/THP); absent
#                   on some kernels, read-only in containers
#   proc-sys-write  /proc/sys may be read-only when the host is a container
# Not root: the outside runs are informational only.
set -u

if [ $# -ne 2 ]; then
	echo "usage: $0 SANDCAP_BINARY POLICY" >&2
	exit 2
fi
SANDCAP=$1
POLICY=$2
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -z "${PROBE:-}" ]; then
	for p in "$HERE/probe-escape" "$HERE/../../build/tests/escape/probe-escape"; do
		[ -x "$p" ] && PROBE=$p && break
	done
fi
PROBE=${PROBE:-$HERE/probe-escape}
[ -x "$PROBE" ] || { echo "no probe binary at $PROBE (set PROBE=)" >&2; exit 2; }

OUTSIDE_EXCEPTIONS="ptrace-init sys-write proc-sys-write"

# Host-side endpoints for the network probes.
TCP_PORT=$((20000 + $$ % 20000))
UDP_PORT=$((TCP_PORT + 1))
ABSTRACT="sandcap-escape-$$"
"$PROBE" serve "$TCP_PORT" "$UDP_PORT" "$ABSTRACT" >/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null' EXIT INT TERM
sleep 0.3
if ! kill -0 $SERVER 2>/dev/null; then
	echo "could not start the host-side endpoints (ports $TCP_PORT/$UDP_PORT)" >&2
	exit 2
fi

args_for() {
	case $1 in
	tcp-connect) echo "$TCP_PORT" ;;
	udp) echo "$UDP_PORT" ;;
	abstract-unix) echo "$ABSTRACT" ;;
	*) echo "" ;;
	esac
}

# Prints the verdict word (ESCAPED, HELD, SKIP, ERROR) of one run.
verdict() {
	out=$1
	rc=$2
	case $out in
	*"ESCAPED "*) echo ESCAPED ;;
	*"HELD "*) echo HELD ;;
	*"SKIP "*) echo SKIP ;;
	*)
		# Killed by a signal (seccomp's SIGSYS, ...) is held too; a
		# setup failure of the sandbox (125) or a missing probe is not.
		if [ "$rc" -gt 128 ] && [ "$rc" -lt 160 ]; then echo HELD; else echo ERROR; fi
		;;
	esac
}

fail=0
root=0
[ "$(id -u)" -eq 0 ] && root=1
for name in $("$PROBE" list); do
	a=$(args_for "$name")
	# shellcheck disable=SC2086
	in_out=$("$SANDCAP" run --policy "$POLICY" -- "$PROBE" "$name" $a 2>&1)
	in_rc=$?
	in_v=$(verdict "$in_out" $in_rc)
	# shellcheck disable=SC2086
	out_out=$(cd /tmp && "$PROBE" "$name" $a 2>&1)
	out_rc=$?
	out_v=$(verdict "$out_out" $out_rc)

	status=ok
	case $in_v in
	HELD) ;;
	*) status=FAIL; fail=1 ;;
	esac
	if [ $root -eq 1 ] && [ "$out_v" != ESCAPED ]; then
		case " $OUTSIDE_EXCEPTIONS " in
		*" $name "*) status="$status (outside exception)" ;;
		*) status="FAIL (probe cannot detect)"; fail=1 ;;
		esac
	fi
	printf '%-18s inside: %-8s outside: %-8s %s\n' "$name" "$in_v" "$out_v" "$status"
	if [ "$in_v" != HELD ]; then
		printf '    inside said: %s (rc %s)\n' "$(echo "$in_out" | tail -n 3 | tr '\n' ' ')" "$in_rc"
	fi
done
exit $fail
