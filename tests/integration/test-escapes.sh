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
PROBE=$PROBE sh "$(dirname "$0")/../escape/run-escapes.sh" "$SANDCAP" "$T/escape.json"
