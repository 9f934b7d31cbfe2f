#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What recording refused writes costs a real workload (docs/decisions.md,
# "Refused writes are recorded"): with audit.denied_syscalls on, every call
# that writes a name or a file goes through the seccomp listener, which
# judges it; off, the filter allows it outright. Two workloads in a rw
# grant, each run ROUNDS times per setting, interleaved:
#   build    make -j2 of a generated C project (FILES sources)
#   install  npm install of PKGS local packages (--install-links: each
#            packed, then extracted into node_modules; no network)
# Prints the medians and the ratio on/off. With FLOOR=1 (the default) it
# also runs a scratch build with bench/ablation.patch whose listener lets
# every write go on without judging it (SANDCAP_ABLATE=judge): the round
# trip alone, the mechanism's floor, in the same rounds. Not a test:
# nothing fails on a number.
#   ROUNDS=5 FILES=200 PKGS=40 FLOOR=1 bench/fs-denied.sh
set -euo pipefail
. "$(dirname "$0")/lib.sh"
bench_need fs-denied make gcc
SANDCAP=${SANDCAP:-$(cd "$(dirname "$0")/.." && pwd)/build/sandcap}
ROUNDS=${ROUNDS:-5}
FILES=${FILES:-200}
PKGS=${PKGS:-40}
FLOOR=${FLOOR:-1}
bench_tmp fs-denied
ABLATED=
if [ "$FLOOR" = 1 ]; then
	bench_ablation_build "$T/ablation"
	ABLATED=$T/ablation/build/sandcap
fi

# The C project: FILES sources, each including a shared header.
mkdir -p "$T/src/c"
printf '#pragma once\nint f(int);\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n' >"$T/src/c/common.h"
for i in $(seq 1 "$FILES"); do
	printf '#include "common.h"\nint f%d(int x) { char b[64]; snprintf(b, sizeof b, "%%d", x * %d); return (int)strlen(b) + atoi(b); }\n' "$i" "$i" >"$T/src/c/f$i.c"
done
printf 'int main(void) { return 0; }\n' >"$T/src/c/main.c"
cat >"$T/src/c/Makefile" <<'EOF'
SRCS := $(wildcard *.c)
OBJS := $(SRCS:.c=.o)
prog: $(OBJS)
	$(CC) -o $@ $^
%.o: %.c common.h
	$(CC) -O1 -c -o $@ $<
clean:
	rm -f $(OBJS) prog
EOF

# The npm project: PKGS local packages of 30 files each.
have_npm=0
if command -v npm >/dev/null; then
	have_npm=1
	deps=
	for i in $(seq 1 "$PKGS"); do
		d=$T/src/pkgs/p$i
		mkdir -p "$d/lib"
		printf '{"name": "p%d", "version": "1.0.0"}\n' "$i" >"$d/package.json"
		for j in $(seq 1 30); do echo "module.exports = $j;" >"$d/lib/f$j.js"; done
		deps="$deps\"p$i\": \"file:../pkgs/p$i\","
	done
	mkdir -p "$T/src/proj"
	printf '{"name": "proj", "version": "1.0.0", "dependencies": {%s}}\n' "${deps%,}" \
		>"$T/src/proj/package.json"
fi
chmod -R a+rwX "$T/src"

for on in true false; do
	cat >"$T/policy-$on.json" <<EOF
{"version": 1, "audit": {"denied_syscalls": $on, "exec": false},
 "limits": {"pids": 512},
 "fs": {"grants": [{"path": "$T/src", "mode": "rw", "at": "/w"}]}}
EOF
done

# run SETTING CMD: seconds of one sandboxed run of CMD (sh -c); SETTING
# true, false, or floor (recorded, by the ablated build, judging nothing)
run() {
	local t0 t1 bin=$SANDCAP pol=$1
	[ "$1" = floor ] && bin=$ABLATED pol=true
	t0=$(date +%s.%N)
	SANDCAP_ABLATE=judge "$bin" run --quiet --policy "$T/policy-$pol.json" -- sh -c "$2" >/dev/null 2>&1 ||
		{ echo "fs-denied: the run failed ($1): $2" >&2; exit 1; }
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }' 
}
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

build='cd /w/c && make -s clean && make -s -j2'
install='cd /w/proj && rm -rf node_modules package-lock.json && HOME=/tmp npm install --install-links --offline --no-audit --no-fund --cache /tmp/npm-cache'
for w in build install; do
	[ "$w" = install ] && [ $have_npm = 0 ] && { echo "install: npm not installed, skipped"; continue; }
	: >"$T/$w-true" && : >"$T/$w-false" && : >"$T/$w-floor"
	run true "${!w}" >/dev/null # warm the page cache
	for _ in $(seq 1 "$ROUNDS"); do
		run true "${!w}" >>"$T/$w-true"
		run false "${!w}" >>"$T/$w-false"
		[ -n "$ABLATED" ] && run floor "${!w}" >>"$T/$w-floor"
	done
	on=$(median <"$T/$w-true")
	off=$(median <"$T/$w-false")
	printf '%-8s recorded %.3f s, not recorded %.3f s: %.3fx (median of %d each)\n' \
		"$w" "$on" "$off" "$(awk -v a="$on" -v b="$off" 'BEGIN { print a / b }')" "$ROUNDS"
	if [ -n "$ABLATED" ]; then
		fl=$(median <"$T/$w-floor")
		printf '%-8s   floor (the round trip, no judging) %.3f s: %.3fx\n' "" "$fl" \
			"$(awk -v a="$fl" -v b="$off" 'BEGIN { print a / b }')"
	fi
done
