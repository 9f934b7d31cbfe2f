#!/usr/bin/env bash
# The escape suite (tests/escape): every probe is HELD inside a real sandbox
# and ESCAPES outside it, so a probe that could never see an escape is caught.
. "$(dirname "$0")/lib.sh"
need_root
B=$(dirname "$SANDCAP")
PROBE=$B/tests/escape/probe-escape
[ -x "$PROBE" ] || PROBE=$(dirname "$0")/../../build/tests/escape/probe-escape
dir=$(dirname "$PROBE")
policy escape "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$dir\", \"mode\": \"ro\"}]}}"
PROBE=$PROBE sh "$(dirname "$0")/../escape/run-escapes.sh" "$SANDCAP" "$T/escape.json" >"$T/table"
rc=$?
# One check per probe, from run-escapes.sh's table ("NAME inside: V outside: V STATUS").
rows=0
while IFS= read -r line; do
	if [[ $line =~ ^([^[:space:]]+)[[:space:]]+inside:[[:space:]]+([A-Z]+)[[:space:]]+outside:[[:space:]]+([A-Z]+)[[:space:]]+(.*)$ ]]; then
		rows=$((rows + 1))
		what="${BASH_REMATCH[1]}: held inside (${BASH_REMATCH[2]}), escapes outside (${BASH_REMATCH[3]})"
		if [[ ${BASH_REMATCH[4]} == ok* ]]; then ok "$what ${BASH_REMATCH[4]#ok}"; else not_ok "$what: ${BASH_REMATCH[4]}"; fi
	else
		echo "# $line"
	fi
done <"$T/table"
expect_eq "every probe reported" "$rows" "$("$PROBE" list | wc -w)"
expect_eq "run-escapes.sh exit status" "$rc" 0

# Each refused attempt is also seen: the audit logs of those runs hold the
# denials (the sandbox's own logs, under $SANDCAP_STATE_DIR).
seen=$(cat "$SANDCAP_STATE_DIR"/audit/*.jsonl 2>/dev/null | python3 -c '
import json, sys
names = set()
for line in sys.stdin:
    r = json.loads(line)
    if r["event"] == "syscall.denied":
        names.add(r["data"].get("syscall", ""))
print(" ".join(sorted(names)))')
echo "# syscall.denied seen: $seen"
missing=""
# (the open_by_handle_at probe is stopped at name_to_handle_at, its first step)
for s in name_to_handle_at mount chroot pivot_root keyctl bpf perf_event_open userfaultfd \
	io_uring_setup unshare setns ptrace sethostname clock_settime socket ioctl mknodat; do
	[[ " $seen " == *" $s "* ]] || missing="$missing $s"
done
expect_eq "every refused dangerous syscall is in the audit log as syscall.denied" "${missing# }" ""
finish
