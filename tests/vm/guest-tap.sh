# shellcheck shell=sh
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2034 # n and fail are read by the script that sources this
# TAP helpers for a guest script (busybox sh): `. /sandcap/guest-tap.sh`,
# with `-f tests/vm/guest-tap.sh=/sandcap/guest-tap.sh` given to run-in-vm.
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $*"; }
check() { name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }
