#!/bin/sh
# SPDX-License-Identifier: MIT
# `sandcap audit verify|report` exit codes and messages on real logs.
# Unprivileged. Usage: test-audit-cli.sh [SANDCAP [AUDIT_RATE]]   (TAP output)
# Defaults: $SANDCAP (or build/sandcap) and audit-rate from the same build.
set -u
SANDCAP=${1:-${SANDCAP:-$(cd "$(dirname "$0")/../.." && pwd)/build/sandcap}}
RATE=${2:-$(dirname "$SANDCAP")/bench/audit-rate}
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
n=0
fail=0
check() { # check WANT_RC DESCRIPTION -- COMMAND...
	want=$1 desc=$2
	shift 3
	"$@" >"$dir/out" 2>"$dir/err"
	rc=$?
	n=$((n + 1))
	if [ "$rc" -eq "$want" ]; then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc (exit $rc, wanted $want)"
		sed 's/^/# /' "$dir/err"
		fail=1
	fi
}

has() { # has PATTERN FILE DESCRIPTION
	n=$((n + 1))
	if grep -q -- "$1" "$2"; then
		echo "ok $n - $3"
	else
		echo "not ok $n - $3"
		fail=1
	fi
}

"$RATE" -n 50 -s 5 -d "$dir" -k >/dev/null || { echo "1..0 # SKIP audit-rate failed"; exit 77; }
log=$dir/audit-rate-always.log
(umask 077 && printf 'audit-rate benchmark key 32 byte' >"$dir/key")
(umask 077 && printf 'some other key of thirty-2 bytes' >"$dir/wrong")

check 0 "an intact log verifies" -- "$SANDCAP" audit verify "$log"
has ': intact, 6 records' "$dir/out" "summary line"
last=$(sed -n 's/^last hash: //p' "$dir/out")
check 0 "with its key, the HMAC verifies" -- "$SANDCAP" audit verify "$log" --key "$dir/key"
has 'seal HMAC verified' "$dir/out" "HMAC verified is said"
check 0 "the anchor matches" -- "$SANDCAP" audit verify "$log" --expect-hash "$last"
check 1 "another anchor does not" -- "$SANDCAP" audit verify "$log" --expect-hash \
	0000000000000000000000000000000000000000000000000000000000000000
check 1 "the wrong key fails" -- "$SANDCAP" audit verify "$log" --key "$dir/wrong"
has 'line 6: seal HMAC mismatch' "$dir/err" "HMAC message"

sed 3d "$log" >"$dir/deleted.log"
check 1 "a deleted record fails" -- "$SANDCAP" audit verify "$dir/deleted.log"
has 'deleted.log: line 3: seq 3, expected 2' "$dir/err" "message"
sed '2s/"GET"/"PUT"/' "$log" >"$dir/edited.log"
check 1 "an edited record fails" -- "$SANDCAP" audit verify "$dir/edited.log"
has 'line 2: hash mismatch' "$dir/err" "message"
head -n 5 "$log" >"$dir/cut.log"
check 1 "a cut tail fails" -- "$SANDCAP" audit verify "$dir/cut.log"
check 1 "stdin works and fails the same" -- sh -c "\"$SANDCAP\" audit verify - <\"$dir/cut.log\""

chmod 644 "$dir/key"
check 2 "a key readable by others is refused" -- "$SANDCAP" audit verify "$log" --key "$dir/key"
check 2 "a missing file is an I/O error" -- "$SANDCAP" audit verify "$dir/nonexistent"
check 2 "no FILE is a usage error" -- "$SANDCAP" audit verify
check 0 "verify --help" -- "$SANDCAP" audit verify --help

check 0 "report of an intact log" -- "$SANDCAP" audit report "$log"
has 'Chain: intact' "$dir/out" "report says intact"
check 1 "report of a broken log exits 1" -- "$SANDCAP" audit report "$dir/deleted.log"
has 'Chain: BROKEN at line 3' "$dir/out" "report says broken"
check 0 "report --json" -- "$SANDCAP" audit report --json "$log"
check 0 "report --help" -- "$SANDCAP" audit report --help

# An endless input ends: report reads at most AU_LOG_MAX_LINES lines and
# says so; verify and export stop at the first line that is no record.
check 1 "report of an endless stdin of empty lines ends (exit 1)" -- \
	sh -c "yes '' | timeout 120 \"$SANDCAP\" audit report -"
has 'Stopped after line 16777216: the log is longer than' "$dir/out" "report says where and why it stopped"
check 1 "report --json of it ends too" -- sh -c "yes '' | timeout 120 \"$SANDCAP\" audit report --json -"
has '"stopped_reading": "the log is longer than' "$dir/out" "report --json says why it stopped"
check 1 "verify of an endless stdin ends (exit 1)" -- sh -c "yes '' | timeout 60 \"$SANDCAP\" audit verify -"
check 1 "export of an endless stdin ends (exit 1)" -- \
	sh -c "yes '' | timeout 60 \"$SANDCAP\" audit export --format ocsf -"

echo "1..$n"
exit $fail
