# TAP for shell tests, the format tests/tap-run reads (as it does the C
# tests' tests/tap.h): one "ok N - what" or "not ok N - what" per check, a
# skipped check as "ok N - what # SKIP why", and the plan "1..N" at the end.
# Sourced; a test ends with "tap_done" (its exit status) or tap_skip_all.
_tap_n=0
_tap_failed=0

tap_ok() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $*"; }
tap_not_ok() { _tap_n=$((_tap_n + 1)); _tap_failed=$((_tap_failed + 1)); echo "not ok $_tap_n - $*"; }
# tap_skip WHAT WHY: a check that could not run here (SANDCAP_MUST_WORK=1
# makes tests/tap-run count it as a failure)
tap_skip() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $1 # SKIP $2"; }
tap_diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
# tap_skip_all WHY: the whole test cannot run here
tap_skip_all() { echo "1..0 # SKIP $*"; exit 77; }
tap_done() {
	echo "1..$_tap_n"
	[ "$_tap_failed" -eq 0 ]
}
