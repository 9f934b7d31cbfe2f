#!/usr/bin/env bash
# The egress proxy against real servers on loopback (tests/proxy).
B=$(dirname "${SANDCAP:-$(dirname "$0")/../../build/sandcap}")
exec bash "$(dirname "$0")/../proxy/test-proxy.sh" "$B"
