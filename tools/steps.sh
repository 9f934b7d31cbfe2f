# Shared by run-demo and run-tests: each step runs with its output in a log;
# a step that fails says which it was and shows the end of that log.
# The caller sets STEP_PROG (the name to report under).
STEP_LOGS=$(mktemp -d "${TMPDIR:-/tmp}/sandcap-$STEP_PROG.XXXXXX")
trap 'rm -rf "$STEP_LOGS"' EXIT
STEP_N=0

step() { # step NAME CMD...
	local name=$1 log=$STEP_LOGS/step-$((++STEP_N)).log rc=0
	shift
	echo "$STEP_PROG: $name"
	"$@" >"$log" 2>&1 || rc=$?
	[ $rc -eq 0 ] && return 0
	{
		echo "$STEP_PROG: step '$name' failed (exit $rc): $*"
		echo "$STEP_PROG: its last 40 lines:"
		tail -n 40 "$log" | sed 's/^/  | /'
	} >&2
	trap - EXIT
	echo "$STEP_PROG: whole output kept in $log" >&2
	exit $rc
}
