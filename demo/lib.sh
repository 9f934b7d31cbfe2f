# Shared by the demo scenarios: expectations, fixtures on loopback, output.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SANDCAP=${SANDCAP:-$ROOT/build/sandcap}
W=$(mktemp -d /tmp/sandcap-demo.XXXXXX)
chmod 755 "$W"
export SANDCAP_STATE_DIR=$W/state
FAILS=0
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

bold() { printf '\033[1m%s\033[0m\n' "$*"; }
section() { printf '\n  -- %s\n' "$*"; }
indent() { sed 's/^/     /'; }
expect() { # expect "what" CMD...
	local what=$1
	shift
	if "$@"; then
		printf '     \033[32mPASS\033[0m %s\n' "$what"
	else
		printf '     \033[31mFAIL\033[0m %s\n' "$what"
		FAILS=$((FAILS + 1))
	fi
}
fails() { ! "$@" >/dev/null 2>&1; }
contains() { grep -q -- "$2" <<<"$1"; }
json_field() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])[sys.argv[1]])' "$1"; }
capabilities() { # the blast radius, condensed
	"$SANDCAP" check --policy "$1" | grep -vE '^\s*$' | sed -n '1,40p' | indent
}
audit_excerpt() { # audit_excerpt LOG EVENT...: the records that prove it
	local log=$1
	shift
	for e in "$@"; do
		grep "\"event\":\"$e\"" "$log" | head -3 | cut -c1-160
	done | indent
}
last_audit() { ls -t "$SANDCAP_STATE_DIR"/audit/*.jsonl | head -1; }
# Where each scenario keeps its logs and their HTML reports (they outlive $W).
REPORTS=${DEMO_REPORTS:-$ROOT/build/demo-reports}
mkdir -p "$REPORTS"
html_report() { # html_report NAME LOG [--key FILE]: REPORTS/NAME.jsonl and NAME.html
	local name=$1 log=$2
	shift 2
	cp "$log" "$REPORTS/$name.jsonl"
	# A tampered or cut log still gives its page (with a non-zero status).
	"$SANDCAP" audit report --html "$REPORTS/$name.jsonl" "$@" >"$REPORTS/$name.html" 2>/dev/null
	echo "     report: $REPORTS/$name.html (log: $REPORTS/$name.jsonl)"
}

. "$ROOT/tools/fixtures.sh"
