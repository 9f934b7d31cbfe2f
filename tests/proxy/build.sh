#!/bin/sh
# Builds the test-only launcher against the sandcap-core library.
# Usage: tests/proxy/build.sh [BUILDDIR]   (default: build)
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
b=${1:-$top/build}
ninja -C "$b" libsandcap-core.a >/dev/null
${CC:-cc} -std=gnu17 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -I"$top/src" -I"$top/include" \
	"$top/tests/proxy/px-standalone.c" "$b/libsandcap-core.a" \
	$(pkg-config --cflags --libs jansson libseccomp openssl libcares) \
	-o "$b/px-standalone"
