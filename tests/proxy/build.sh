#!/bin/sh
# Builds the test-only launcher against the sandcap-core library.
# Usage: tests/proxy/build.sh [BUILDDIR]   (default: build)
# For a sanitizer build dir (meson -Db_sanitize=address,undefined) pass
# EXTRA_CFLAGS=-fsanitize=address,undefined.
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
b=${1:-$top/build}
ninja -C "$b" libsandcap-core.a >/dev/null
${CC:-cc} -std=gnu17 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror ${EXTRA_CFLAGS:-} -I"$top/src" -I"$top/include" \
	"$top/tests/proxy/px-standalone.c" "$b/libsandcap-core.a" \
	$(pkg-config --cflags --libs jansson libseccomp openssl libcares libnghttp2) \
	-o "$b/px-standalone"
