#!/usr/bin/env bash
# Which program does what (docs/architecture.md, "Programs"): the
# supervisor of `sandcap run` is sandcap-run, which links no TLS or
# signature code; the proxy worker and the CA of TLS inspection come from
# sandcap-proxy, chosen by its first argument, never by the name it is run
# under; --audit-sign hands the whole command line to sandcap-main before
# anything is read (a policy on standard input still arrives); and without
# sandcap-proxy or sandcap-main beside it, a run that needs it is refused,
# the program named, while a run that does not goes on.
. "$(dirname "$0")/lib.sh"
need_root
D=$(dirname "$SANDCAP")
[ -x "$D/sandcap-run" ] || skip_all "no sandcap-run next to $SANDCAP"

policy min '{"version": 1, "audit": {"exec": false}}'
policy egress '{"version": 1, "net": {"egress": [{"host": "api.example.test"}]}}'
policy inspect '{"version": 1, "net": {"egress": [{"host": "api.example.test", "inspect": true}]}}'

# The pid of a `sandcap run` started in the background is its supervisor's:
# the front execs the program in place.
supervisor_comm() { # POLICY [RUN OPTIONS...]: comm of the supervisor of a run of sleep
	local p=$1 pid comm=""
	shift
	"$SANDCAP" run --quiet --policy "$T/$p.json" "$@" -- sleep 30 </dev/null 2>/dev/null &
	pid=$!
	for _ in $(seq 50); do
		comm=$(cat "/proc/$pid/comm" 2>/dev/null)
		[ -n "$(pgrep -P "$pid" -x sandcap-init)" ] && break
		sleep 0.1
	done
	echo "$comm"
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# --- the supervisor ---
expect_eq "the supervisor of a run is sandcap-run" "$(supervisor_comm min)" "sandcap-run"
if command -v nm >/dev/null && nm "$D/sandcap-run" >/dev/null 2>&1; then
	heavy=$(nm "$D/sandcap-run" | grep -cE ' [TtDdRr] (EVP_[A-Za-z_]*|OSSL_PROVIDER_[a-z_]*|X509_[a-z_]*|SSL_[a-z_]*|ares_[a-z_]*|nghttp2_[a-z_]*)$')
	expect_eq "sandcap-run links no EVP, provider, X.509, TLS, c-ares or nghttp2 code" "$heavy" 0
	check "... but the low-level SHA-256 it hashes the log with" \
		sh -c "nm '$D/sandcap-run' | grep -qE ' T SHA256_Update$'"
else
	skip "sandcap-run's symbols" "nm cannot read $D/sandcap-run (stripped?)"
fi

# A session's supervisor is forked by `session start`, run by sandcap-run.
export SANDCAP_RUNTIME_DIR=$T/runtime
if info=$("$SANDCAP" session start --policy "$T/min.json" --name progs --json 2>/dev/null); then
	spid=$(printf '%s' "$info" | python3 -c 'import json, sys; print(json.load(sys.stdin)["pid"])')
	expect_eq "a session's supervisor is sandcap-run" "$(cat "/proc/${spid:-0}/comm" 2>/dev/null)" "sandcap-run"
	out=$("$SANDCAP" exec progs -- sh -c 'echo in-session' 2>&1)
	expect_eq "... and runs commands" "$out" "in-session"
	"$SANDCAP" session stop progs >/dev/null 2>&1
else
	not_ok "a session's supervisor is sandcap-run (session start failed)"
	not_ok "... and runs commands"
fi

# --- the proxy worker and the sandbox CA come from sandcap-proxy ---
"$SANDCAP" run --quiet --policy "$T/egress.json" -- sleep 30 </dev/null 2>/dev/null &
sup=$!
if w=$(worker_of "$sup"); then
	expect_eq "an egress run's worker is sandcap-proxy" "$(basename "$(readlink "/proc/$w/exe")")" "sandcap-proxy"
	expect_eq "... run as 'sandcap-proxy worker'" "$(tr '\0' ' ' <"/proc/$w/cmdline")" "sandcap-proxy worker "
	expect_eq "... under a supervisor that is sandcap-run" "$(cat "/proc/$sup/comm")" "sandcap-run"
else
	not_ok "an egress run's worker is sandcap-proxy (no worker found)"
	not_ok "... run as 'sandcap-proxy worker'"
	not_ok "... under a supervisor that is sandcap-run"
fi
kill "$sup" 2>/dev/null
wait "$sup" 2>/dev/null

mkdir -p "$T/out"
cat >"$T/bundle.sh" <<'EOF'
openssl crl2pkcs7 -nocrl -certfile /etc/ssl/certs/ca-certificates.crt |
	openssl pkcs7 -print_certs -noout | grep -c "subject=.*sandcap sandbox CA"
EOF
policy inspect-out "{\"version\": 1,
  \"fs\": {\"grants\": [{\"path\": \"$T/out\", \"mode\": \"rw\", \"at\": \"/out\"},
                       {\"path\": \"$T/bundle.sh\", \"mode\": \"ro\", \"at\": \"/bundle.sh\"}]},
  \"net\": {\"egress\": [{\"host\": \"api.example.test\", \"inspect\": true}]}}"
if command -v openssl >/dev/null; then
	"$SANDCAP" run --quiet --policy "$T/inspect-out.json" -- sh -c 'sh /bundle.sh >/out/n' </dev/null
	expect_eq "an inspected run's sandbox trusts one sandbox CA, made by sandcap-proxy" \
		"$(cat "$T/out/n" 2>/dev/null)" 1
	expect_eq "... and the run was supervised by sandcap-run" "$(supervisor_comm inspect)" "sandcap-run"
else
	skip "the sandbox CA" "openssl not installed"
fi

# --- --audit-sign: the command line handed to sandcap-main ---
"$SANDCAP" audit keygen --out "$T/sign.key" --public "$T/sign.pub" >/dev/null
expect_eq "with --audit-sign the supervisor is sandcap-main" \
	"$(supervisor_comm min --audit-sign "$T/sign.key")" "sandcap-main"
out=$(printf '{"version": 1, "audit": {"exec": false}}' |
	"$SANDCAP" run --quiet --policy - --audit "$T/signed.jsonl" --audit-sign "$T/sign.key" -- \
		sh -c 'echo ran' 2>&1)
expect_eq "... and a policy on standard input still reaches it" "$out" "ran"
check "... and its log verifies with the public key" \
	"$SANDCAP" audit verify "$T/signed.jsonl" --pubkey "$T/sign.pub"

# --- the names they are run under choose nothing ---
ln -s "$D/sandcap-main" "$T/sandcap-proxy"
out=$("$T/sandcap-proxy" worker 2>&1)
expect_match "sandcap-main run as sandcap-proxy is sandcap-main" "$out" "unknown command 'worker'"
out=$("$D/sandcap-proxy" 2>&1)
rc=$?
expect_eq "sandcap-proxy without a mode is refused (2)" "$rc" 2
expect_match "... with its usage" "$out" "usage: sandcap-proxy worker \| ca LIFETIME_S"
check "sandcap-proxy ca writes a certificate, then a key" \
	sh -c "'$D/sandcap-proxy' ca 60 a.test | grep -c -e '-----BEGIN CERTIFICATE-----' -e '-----BEGIN PRIVATE KEY-----' | grep -qx 2"

# --- without sandcap-proxy, then without sandcap-main ---
mkdir "$T/bin"
cp "$SANDCAP" "$D/sandcap-run" "$D/sandcap-init" "$T/bin/"
NM=$T/bin/sandcap
out=$("$NM" run --quiet --policy "$T/min.json" -- sh -c 'echo plain' 2>&1)
expect_eq "without sandcap-proxy and sandcap-main a run that needs neither runs" "$out" "plain"
out=$("$NM" run --quiet --policy "$T/egress.json" -- true 2>&1)
rc=$?
expect_eq "an egress run is refused (125)" "$rc" 125
expect_match "... naming sandcap-proxy" "$out" "egress proxy: No such file or directory \(sandcap-proxy does this; it is not next to this program or in "
out=$("$NM" run --quiet --policy "$T/inspect.json" -- true 2>&1)
rc=$?
expect_eq "an inspected run is refused (125)" "$rc" 125
expect_match "... naming sandcap-proxy" "$out" "sandbox CA or placeholders: No such file or directory \(sandcap-proxy does this"
cp "$D/sandcap-proxy" "$T/bin/"
out=$("$NM" run --quiet --policy "$T/egress.json" -- sh -c 'echo egress' 2>&1)
expect_eq "with sandcap-proxy beside it an egress run needs no sandcap-main" "$out" "egress"
out=$("$NM" run --quiet --policy "$T/min.json" --audit-sign "$T/sign.key" -- true 2>&1)
rc=$?
expect_eq "a signed run is refused (125)" "$rc" 125
expect_match "... naming sandcap-main" "$out" "sign.key: signing needs sandcap-main: not next to this program or in "
out=$("$NM" check --policy "$T/min.json" 2>&1)
expect_match "every other command names it too, in the same words" "$out" "cannot run sandcap-main: not next to this program or in "
finish
