#!/usr/bin/env bash
# The shell examples of README.md and docs/*.md, run as a reader pastes them.
#
# The convention the Markdown follows:
# - A fenced block tagged sh, bash or console is a shell example. Every other
#   fenced block carries a tag too (text for output, synopses and diagrams;
#   json, python, js...), so that no example hides in an untagged block.
# - A shell example runs, unless the last non-blank line before its fence is
#   <!-- not run: WHY --> (a daemon or a network this host lacks, a command
#   that runs this very suite...), WHY saying what it needs and where it is
#   tested instead.
# - The examples of one file run in order in one bash, so that one may use
#   what an earlier one made, as root, in a scratch directory of their own
#   holding links to the checkout's examples/ and clients/ (the docs' paths
#   are those of a clone), the build's programs first on PATH, and a /run of
#   their own (the docs use /run/sandcap.sock and /run/sandcap-runc, which an
#   installed daemon or another suite may hold).
# - Every command must exit 0, but one whose line ends in "# exit N", which
#   must exit N. In a console block the lines "$ CMD" are the commands (a
#   trailing backslash continues one) and the other lines their output,
#   not compared.
. "$(dirname "$0")/lib.sh"
need_root
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$(cd "$(dirname "$SANDCAP")" && pwd)
cd "$ROOT" || exit 1
# TEST_DOCS="README.md docs/api.md" runs those alone, while they are edited.
read -ra DOCS <<<"${TEST_DOCS:-README.md $(echo docs/*.md)}"

# extract FILE OUTDIR: writes OUTDIR/script (the file's runnable examples,
# each between __begin and __end) and OUTDIR/blocks (one line per shell
# block: LINE run|mark|bad WHY). Prints nothing.
extract() {
	python3 - "$1" "$2" <<'EOF'
import re, sys
path, out = sys.argv[1], sys.argv[2]
lines = open(path).read().split("\n")
script, blocks = [], []
fence = re.compile(r"^(\s*)```\s*(\S*)\s*$")
want = re.compile(r"^(.*\S)\s+#\s*exit (\d+)\b.*$")
marker = re.compile(r"^\s*<!--\s*not run:\s*(\S.*?)\s*-->\s*$")

def expect(cmd):
    # "CMD  # exit N": CMD's status is compared, not trapped.
    m = want.match(cmd)
    if not m:
        return cmd
    return "%s && __want %s 0 || __want %s $?" % (m.group(1), m.group(2), m.group(2))

i = 0
while i < len(lines):
    m = fence.match(lines[i])
    if not m:
        i += 1
        continue
    indent, tag = m.group(1), m.group(2)
    start = i + 1
    j = start
    while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
        j += 1
    body = [l[len(indent):] if l.startswith(indent) else l for l in lines[start:j]]
    i = j + 1
    if tag == "":
        blocks.append("%d bad a fenced block without a tag (text, sh, json...)" % start)
        continue
    if tag not in ("sh", "bash", "console"):
        continue
    k = start - 2
    while k >= 0 and lines[k].strip() == "":
        k -= 1
    mk = marker.match(lines[k]) if k >= 0 else None
    if mk:
        blocks.append("%d mark %s" % (start, mk.group(1)))
        continue
    if tag == "console":
        cmds, cont = [], False
        for l in body:
            if cont:
                cmds[-1] += "\n" + l
            elif l.startswith("$ "):
                cmds.append(l[2:])
            else:
                continue
            cont = l.endswith("\\")
        code = [expect(c) for c in cmds]
    else:
        code = [expect(l) for l in body]
    if not code:
        blocks.append("%d bad a console block without a \"$ \" command" % start)
        continue
    blocks.append("%d run" % start)
    script.append("__begin %d" % start)
    script.extend(code)
    script.append("__end %d" % start)
open(out + "/script", "w").write("\n".join(script) + "\n")
open(out + "/blocks", "w").write("\n".join(blocks) + "\n")
EOF
}

# What runs before a file's examples: the status checks, and the programs.
PRELUDE='
__begin() { __block=$1; __bad=; echo "=== line $1" >&2; }
__end() { echo "${__bad:-ok}" >"$__res/$__block"; }
__want() { [ "$2" = "$1" ] || __bad="${__bad}exit $2, not $1; "; return 0; }
trap '\''__rc=$?; __bad="${__bad}exit $__rc: $BASH_COMMAND; "; echo "*** exit $__rc: $BASH_COMMAND" >&2'\'' ERR
set -E -o pipefail
'
# After them: what the examples left running goes.
POSTLUDE='
trap - ERR
for __j in $(jobs -p); do kill "$__j" 2>/dev/null; done
wait
for __s in $(sandcap session list --json 2>/dev/null | python3 -c "import json, sys
for s in json.load(sys.stdin): print(s[\"name\"])" 2>/dev/null); do
	sandcap session stop "$__s" >/dev/null 2>&1
done
'

made_work=
[ -e /tmp/agent-work ] || made_work=1
n_run=0
n_mark=0
for doc in "${DOCS[@]}"; do
	d="$T/$(basename "$doc" .md)"
	mkdir -p "$d/work" "$d/res" "$d/run"
	extract "$doc" "$d"
	grep -q ' run$' "$d/blocks" || : >"$d/script"
	ln -s "$ROOT/examples" "$ROOT/clients" "$d/work/"
	if [ -s "$d/script" ]; then
		{
			echo "__res=$d/res"
			echo "$PRELUDE"
			cat "$d/script"
			echo "$POSTLUDE"
		} >"$d/full.sh"
		# A /run of its own (above); the mount namespace ends with the shell.
		(cd "$d/work" && PATH="$BIN:$PATH" timeout 300 unshare -m --propagation private \
			sh -c 'mount -t tmpfs -o mode=755 tmpfs /run && exec bash "$1"' sh "$d/full.sh" \
			>"$d/log" 2>&1 </dev/null)
	fi
	while read -r line kind why; do
		[ -n "$line" ] || continue
		where="$doc:$line"
		case $kind in
		mark)
			n_mark=$((n_mark + 1))
			ok "$where: marked not run: $why"
			;;
		bad)
			not_ok "$where: $why"
			;;
		run)
			n_run=$((n_run + 1))
			if [ ! -f "$d/res/$line" ]; then
				not_ok "$where: did not finish (the shell ended or hung before its end)"
				tail -20 "$d/log" | sed "s/^/# /"
			elif [ "$(cat "$d/res/$line")" = ok ]; then
				ok "$where runs"
			else
				not_ok "$where: $(cat "$d/res/$line")"
				sed -n "/^=== line $line\$/,/^=== line /p" "$d/log" | tail -30 | sed "s/^/# /"
			fi
			;;
		esac
	done <"$d/blocks"
done
[ -n "$made_work" ] && rm -rf /tmp/agent-work
tap_diag "$n_run shell examples run, $n_mark marked not run"
[ -n "${TEST_DOCS:-}" ] || expect_match "the docs have shell examples that run" "$n_run" '^[1-9][0-9]+$'
finish
