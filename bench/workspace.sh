#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a "cow" grant costs: `git status` and `find` over a large tree (a git
# repository of FILES files in DIRS directories) on the host, through a rw
# grant (an idmapped bind) and through a cow grant (an overlay whose lower
# layer is the tree), each inside one sandbox run so that start-up is not
# counted; then `sandcap workspace apply` of CHANGED changed files. Medians
# of RUNS rounds; no number makes it fail (only a sandbox or an apply that
# does not work).
#
#   bench/workspace.sh [SANDCAP_BINARY]   (as root)
#   env: FILES (default 20000), DIRS (200), CHANGED (1000), RUNS (5),
#   BENCH_RESULTS (append "workspace<TAB>NAME<TAB>VALUE<TAB>UNIT" lines)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
S=${1:-$(pwd)/build/sandcap}
FILES=${FILES:-20000}
DIRS=${DIRS:-200}
CHANGED=${CHANGED:-1000}
RUNS=${RUNS:-5}
bench_tmp bench-ws /var/tmp
R=$T/repo

mkdir -p "$R"
for ((d = 0; d < DIRS; d++)); do
	mkdir -p "$R/d$d"
	for ((f = 0; f < FILES / DIRS; f++)); do
		echo "file $d/$f" >"$R/d$d/f$f"
	done
done
git -C "$R" init -q
git -C "$R" -c user.email=b@e -c user.name=bench add -A
git -C "$R" -c user.email=b@e -c user.name=bench commit -qm tree
chown -R 1234:1234 "$R"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# ms CMD...: wall milliseconds of CMD
# shellcheck disable=SC2016 # expanded by the inner shell
TIMED='s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(((e - s) / 1000000))'
result() {
	printf '  %-28s %8s ms\n' "$1" "$2"
	[ -z "${BENCH_RESULTS:-}" ] || printf 'workspace\t%s\t%s\tms\n' "$1" "$2" >>"$BENCH_RESULTS"
}

# One sandbox run per mode: RUNS rounds of both commands inside it.
inner() {
	local dir=$1
	# shellcheck disable=SC2016
	echo 'for i in $(seq '"$RUNS"'); do
		sh -c '"'$TIMED'"' t git -c safe.directory="*" -C '"$dir"' status --porcelain
		sh -c '"'$TIMED'"' t find '"$dir"' -type f
	done'
}
measure() {
	local name=$1 out
	shift
	out=$("$@")
	result "git status, $name" "$(awk 'NR % 2 == 1' <<<"$out" | median)"
	result "find, $name" "$(awk 'NR % 2 == 0' <<<"$out" | median)"
}

echo "workspace: $FILES files in $DIRS directories, medians of $RUNS"
git -c safe.directory="*" -C "$R" status --porcelain >/dev/null # warm the index and the caches
measure host sh -c "$(inner "$R")"
for mode in rw cow; do
	printf '{"version": 1, "fs": {"grants": [{"path": "%s", "at": "/r", "mode": "%s"%s}]}}\n' \
		"$R" "$mode" "$([ "$mode" = cow ] && echo ', "quota": "256M"')" >"$T/$mode.json"
	measure "$mode grant" "$S" run --quiet --policy "$T/$mode.json" -- sh -c "$(inner /r)"
done

# Apply: CHANGED files rewritten in a cow grant, then applied.
printf '{"version": 1, "fs": {"grants": [{"path": "%s", "at": "/r", "mode": "cow", "quota": "256M"}]}}\n' \
	"$R" >"$T/apply.json"
for ((i = 0; i < RUNS; i++)); do
	out=$("$S" run --policy "$T/apply.json" -- sh -c \
		'n=0; for f in /r/d*/f*; do [ $n -lt '"$CHANGED"' ] || break; echo changed >> "$f"; n=$((n+1)); done' 2>&1)
	id=$(sed -n 's/^  workspace: \([^ ]*\).*/\1/p' <<<"$out")
	[ -n "$id" ] || { echo "workspace: no workspace kept: $out" >&2; exit 1; }
	s=$(date +%s%N)
	"$S" workspace apply "$id" --force >/dev/null 2>&1 || { echo "workspace: apply failed" >&2; exit 1; }
	e=$(date +%s%N)
	echo $(((e - s) / 1000000))
	"$S" workspace discard "$id" >/dev/null 2>&1
done | median | { read -r v; result "apply of $CHANGED files" "$v"; }
