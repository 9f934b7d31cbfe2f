#!/usr/bin/env bash
# Capability tokens end to end with the real binary: keygen, mint, attenuate,
# and what a sandbox started from a token can and cannot see.
# Usage: SANDCAP=build/sandcap tests/integration/test-token.sh (as root)
set -euo pipefail

SANDCAP=${SANDCAP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/sandcap}
n=0
failed=0

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
# expect NAME CONDITION...: ok when the test command succeeds
expect() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}
contains() { [[ $1 == *"$2"* ]]; }
# rc_and_out WANT_RC TEXT: the last exit status was WANT_RC and $T/o holds TEXT
rc_and_out() { [ "$rc" -eq "$1" ] && [[ $(cat "$T/o") == *"$2"* ]]; }
lacks() { [[ $1 != *"$2"* ]]; }

if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root"
	exit 77
fi
if [ ! -x "$SANDCAP" ]; then
	echo "1..0 # SKIP $SANDCAP not built"
	exit 77
fi

T=$(mktemp -d /tmp/sandcap-test-token.XXXXXX)
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
mkdir -p "$T/data/pub" "$T/data/priv"
echo public-text > "$T/data/pub/file"
echo secret-text > "$T/data/priv/secret"
chmod -R a+rX "$T/data"

# sc OUT ERR -- ARGS...: runs sandcap, stdout to $OUT, stderr to $ERR; sets rc.
rc=0
sc() {
	local out=$1 err=$2
	shift 3
	rc=0
	"$SANDCAP" "$@" >"$out" 2>"$err" || rc=$?
}

# --- keys ---
sc "$T/o" "$T/e" -- token keygen --out "$T/root.key"
expect "keygen exits 0" [ "$rc" -eq 0 ]
expect "key is 32 bytes, mode 0600" [ "$(stat -c %s:%a "$T/root.key")" = "32:600" ]
cp "$T/root.key" "$T/root.key.orig"
sc "$T/o" "$T/e" -- token keygen --out "$T/root.key"
expect "keygen refuses to overwrite (125)" [ "$rc" -eq 125 ]
expect "the existing key is unchanged" cmp -s "$T/root.key" "$T/root.key.orig"

# --- mint ---
cat > "$T/policy.json" <<EOF
{"version": 1,
 "fs": {"grants": [{"path": "$T/data", "mode": "ro", "at": "/data"}], "workdir": "/data"},
 "limits": {"memory": "256M", "pids": 64}}
EOF
sc "$T/full.tok" "$T/e" -- token mint --key "$T/root.key" --policy "$T/policy.json" --ttl 10m --id itest
expect "mint exits 0" [ "$rc" -eq 0 ]
expect "the token starts with sc1." contains "$(cat "$T/full.tok")" "sc1."

sc "$T/o" "$T/e" -- check --token "$T/full.tok" --key "$T/root.key"
expect "check --token verifies the minted token" [ "$rc" -eq 0 ]

sc "$T/o" "$T/e" -- run --token "$T/full.tok" --key "$T/root.key" -- cat /data/priv/secret
expect "the full token can read /data/priv/secret" rc_and_out 0 secret-text

# --- attenuate: drop /data/priv ---
cat > "$T/narrow.json" <<EOF
{"fs": {"grants": [{"path": "$T/data/pub", "mode": "ro"}], "workdir": "/data/pub"}}
EOF
sc "$T/pub.tok" "$T/e" -- token attenuate "$T/full.tok" --policy "$T/narrow.json"
expect "attenuate exits 0 without a key" [ "$rc" -eq 0 ]

sc "$T/o" "$T/e" -- run --token "$T/pub.tok" --key "$T/root.key" -- cat /data/pub/file
expect "the attenuated token still reads /data/pub/file" rc_and_out 0 public-text

sc "$T/o" "$T/e" -- run --token "$T/pub.tok" --key "$T/root.key" -- cat /data/priv/secret
expect "cat of the dropped path fails" [ "$rc" -ne 0 ]
expect "the dropped path is invisible (No such file)" contains "$(cat "$T/o" "$T/e")" "No such file"
expect "the secret did not leak" lacks "$(cat "$T/o" "$T/e")" secret-text

sc "$T/o" "$T/e" -- run --token "$T/pub.tok" --key "$T/root.key" -- cat "$T/data/priv/secret"
expect "the dropped path is invisible by its host path too" lacks "$(cat "$T/o" "$T/e")" secret-text

# --- widening is refused ---
cat > "$T/wide.json" <<EOF
{"fs": {"grants": [{"path": "$T/data/pub", "mode": "rw"}]}}
EOF
sc "$T/o" "$T/e" -- token attenuate "$T/pub.tok" --policy "$T/wide.json"
expect "attenuate refuses rw over ro (125)" [ "$rc" -eq 125 ]
expect "and says why" contains "$(cat "$T/e")" "rw is read-only in the token"
cat > "$T/wide2.json" <<EOF
{"fs": {"grants": [{"path": "$T/data/priv", "mode": "ro"}]}}
EOF
sc "$T/o" "$T/e" -- token attenuate "$T/pub.tok" --policy "$T/wide2.json"
expect "attenuate refuses a path the token dropped (125)" [ "$rc" -eq 125 ]
expect "and says it is not inside the token's grants" contains "$(cat "$T/e")" "is not inside the token's grants"

# --- tampering ---
tok=$(cat "$T/pub.tok")
mid=$((${#tok} / 2))
c=${tok:$mid:1}
if [ "$c" = A ]; then r=B; else r=A; fi
printf '%s\n' "${tok:0:$mid}$r${tok:$((mid + 1))}" > "$T/tampered.tok"
sc "$T/o" "$T/e" -- run --token "$T/tampered.tok" --key "$T/root.key" -- cat /data/pub/file
expect "run with a tampered token exits 125" [ "$rc" -eq 125 ]
expect "with \"token signature invalid\"" contains "$(cat "$T/e")" "token signature invalid"
expect "and runs nothing" lacks "$(cat "$T/o")" public-text

sc "$T/o" "$T/e" -- token keygen --out "$T/other.key"
sc "$T/o" "$T/e" -- run --token "$T/pub.tok" --key "$T/other.key" -- true
expect "run with another key exits 125" [ "$rc" -eq 125 ]
expect "with \"token signature invalid\"" contains "$(cat "$T/e")" "token signature invalid"

# --- key file permissions ---
cp "$T/root.key" "$T/loose.key"
chmod 644 "$T/loose.key"
sc "$T/o" "$T/e" -- run --token "$T/pub.tok" --key "$T/loose.key" -- true
expect "a world-readable key is refused (125)" [ "$rc" -eq 125 ]

# --- expiry ---
sc "$T/short.tok" "$T/e" -- token mint --key "$T/root.key" --policy "$T/policy.json" --ttl 2s
sc "$T/o" "$T/e" -- run --token "$T/short.tok" --key "$T/root.key" -- sleep 30
expect "the remaining lifetime caps the wall clock (124)" [ "$rc" -eq 124 ]
sleep 1
sc "$T/o" "$T/e" -- run --token "$T/short.tok" --key "$T/root.key" -- true
expect "an expired token exits 125" [ "$rc" -eq 125 ]
expect "with \"token expired at\"" contains "$(cat "$T/e")" "token expired at"

# --- inspect ---
sc "$T/o" "$T/e" -- token inspect - < "$T/pub.tok"
expect "inspect exits 0" [ "$rc" -eq 0 ]
expect "inspect says NOT VERIFIED" contains "$(cat "$T/o")" "NOT VERIFIED"
expect "inspect shows the caveat" contains "$(cat "$T/o")" "Caveat 1"

echo "1..$n"
[ "$failed" -eq 0 ]
