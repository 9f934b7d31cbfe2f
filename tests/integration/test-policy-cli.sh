#!/usr/bin/env bash
# How the command line loads a policy: --set and what its errors name,
# --policy - (standard input), and credentials whose secret is missing,
# which are refused before any sandbox exists. Real runs, as root.
. "$(dirname "$0")/lib.sh"
need_root
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

policy base '{"version": 1, "limits": {"memory": "64M", "wall": "20s"}}'

# --- --set ---
out=$("$SANDCAP" run --quiet --policy "$T/base.json" --set .=1 -- true 2>&1); rc=$?
expect_eq "--set .=1 gives 125" "$rc" 125
expect_eq "--set .=1 says why" "$out" \
	'sandcap: --set .=1: KEY is a dotted path of policy keys such as limits.memory, and "." has an empty component'
out=$("$SANDCAP" run --quiet --policy "$T/base.json" --set a..b=1 -- true 2>&1); rc=$?
expect_match "--set with an empty component gives 125 with a message" "$rc:$out" \
	'^125:sandcap: --set a\.\.b=1: KEY is a dotted path'
out=$("$SANDCAP" run --quiet --policy "$T/base.json" --set limits.memory=1M -- true 2>&1); rc=$?
expect_eq "a bad --set value gives 125" "$rc" 125
expect_eq "... and the error names the --set, the key and what was expected" "$out" \
	'sandcap: --set limits.memory=1M: $.limits.memory: expected a memory limit of at least "4M", got "1M"'
out=$("$SANDCAP" run --quiet --policy "$T/base.json" --set limits.memroy=1G -- true 2>&1)
expect_match "a misspelt --set key is named as the --set's" "$out" \
	'^sandcap: --set limits.memroy=1G: \$\.limits\.memroy: unknown key "memroy" \(expected one of: memory, '
out=$("$SANDCAP" run --quiet --policy "$T/base.json" --set "fs.grants=[{\"path\": \"$T/nope\"}]" -- true 2>&1)
expect_eq "a host check failing below a --set names the --set" "$out" \
	"sandcap: --set fs.grants=[{\"path\": \"$T/nope\"}]: \$.fs.grants[0].path: \"$T/nope\" does not exist"
out=$("$SANDCAP" run --quiet --policy "$T/base.json" --set limits.memory.max=1G -- true 2>&1); rc=$?
expect_eq "--set into a value that is not an object is refused, saying so" "$rc:$out" \
	'125:sandcap: --set limits.memory.max=1G: "memory" holds a value, not an object with keys to set'
# A --set that makes a new key or object: the error is about its parent,
# and still names that --set (the file alone is valid).
out=$("$SANDCAP" run --quiet --policy "$T/base.json" --set bogus.key=1 -- true 2>&1); rc=$?
expect_match "a --set adding an unknown top-level object names the --set" "$rc:$out" \
	'^125:sandcap: --set bogus\.key=1: \$\.bogus: unknown key "bogus"'
out=$("$SANDCAP" run --quiet --policy "$T/base.json" --set fs.grants.0.path=/x -- true 2>&1)
expect_eq "a --set that makes an object where an array belongs names the --set" "$out" \
	'sandcap: --set fs.grants.0.path=/x: $.fs.grants: expected an array of grants, got an object'
policy badkey '{"version": 1, "limits": {"memroy": "64M"}}'
out=$("$SANDCAP" run --quiet --policy "$T/badkey.json" --set limits.x.y=1 -- true 2>&1)
expect_match "... but not when the file alone has an error there" "$out" \
	"^sandcap: $T/badkey.json \\(as changed by --set\\): "
policy badmode '{"version": 1, "fs": {"grants": [{"path": "/tmp", "mode": "rwx"}]}}'
out=$("$SANDCAP" run --quiet --policy "$T/badmode.json" --set limits.wall=5s -- true 2>&1)
expect_eq "an error the file holds still names the file" "$out" \
	"sandcap: $T/badmode.json (as changed by --set): \$.fs.grants[0].mode: expected one of \"ro\", \"rw\", \"cow\", got \"rwx\""
out=$("$SANDCAP" run --quiet --policy "$T/base.json" --set limits.wall=1s -- sleep 5 2>&1); rc=$?
expect_eq "a good --set takes effect (wall 1s ends sleep 5)" "$rc" 124

# --- --policy - ---
out=$(printf '%s' '{"version": 1, "name": "from-stdin"}' |
	"$SANDCAP" run --quiet --audit "$T/stdin.jsonl" --policy - -- sh -c 'cat; echo ran' 2>&1); rc=$?
expect_eq "--policy - runs the policy read from standard input" "$rc:$out" "0:ran"
check "... recorded as <stdin> in sandbox.start" \
	grep -q '"event":"sandbox.start".*"policy_source":"<stdin>"' "$T/stdin.jsonl"
check "... with the name the policy gave" grep -q '"name":"from-stdin"' "$T/stdin.jsonl"
out=$(echo '{"version": 1, "limits": {"pids": 0}}' | "$SANDCAP" run --policy - -- true 2>&1); rc=$?
expect_eq "a bad policy on standard input is named <stdin>" "$rc:$out" \
	'125:sandcap: <stdin>: $.limits.pids: expected an integer from 1 to 4194304, got 0'
out=$(echo '{"version": 1}' | "$SANDCAP" check --policy - 2>&1); rc=$?
expect_match "check --policy - describes it" "$rc:$out" '^0:Policy "sandbox"'
"$SANDCAP" token keygen --out "$T/root.key" >/dev/null 2>&1
tok=$(echo '{"version": 1, "limits": {"memory": "64M"}}' | "$SANDCAP" token mint --key "$T/root.key" --policy - 2>&1)
expect_match "token mint --policy - mints from standard input" "$tok" '^sc1\.'
check "--help of run and check documents --policy -" \
	bash -c "'$SANDCAP' run --help | grep -q '\"-\" reads it' && '$SANDCAP' check --help | grep -q '\"-\" reads standard input'"

# --- credentials whose secret is missing ---
port=$(free_port 2>/dev/null || echo 18080)
policy cred "{\"version\": 1,
  \"net\": {\"egress\": [{\"host\": \"api.example.test\", \"ports\": [$port]}],
    \"credentials\": [{\"host\": \"api.example.test\", \"header\": \"Authorization\",
      \"value_env\": \"SANDCAP_TEST_UNSET_SECRET\", \"format\": \"Bearer %s\", \"upstream\": \"http\"}]}}"
want="\$.net.credentials[0].value_env: environment variable SANDCAP_TEST_UNSET_SECRET is not set; it holds the Authorization header the proxy adds for api.example.test"
unset SANDCAP_TEST_UNSET_SECRET
out=$("$SANDCAP" run --audit "$T/unset.jsonl" --policy "$T/cred.json" -- true 2>&1); rc=$?
expect_eq "an unset value_env gives 125" "$rc" 125
expect_eq "... naming the variable and the credential" "$out" "sandcap: $T/cred.json: $want"
check "... before anything started (no audit log)" [ ! -e "$T/unset.jsonl" ]
out=$(SANDCAP_TEST_UNSET_SECRET= "$SANDCAP" run --policy "$T/cred.json" -- true 2>&1); rc=$?
expect_eq "an empty value_env gives 125, saying it is empty" "$rc:$out" \
	"125:sandcap: $T/cred.json: ${want/is not set/is empty}"
out=$("$SANDCAP" check --policy "$T/cred.json" 2>&1 >/dev/null); rc=$?
expect_eq "check warns about it and still passes" "$rc:$out" \
	"0:sandcap: warning: $T/cred.json: $want ('sandcap run' refuses to start without it)"
out=$(SANDCAP_TEST_UNSET_SECRET=s3cret "$SANDCAP" run --quiet --policy "$T/cred.json" -- true 2>&1); rc=$?
expect_eq "with the variable set the run starts (proxy and all)" "$rc:$out" "0:"
out=$(SANDCAP_TEST_UNSET_SECRET=s3cret "$SANDCAP" check --policy "$T/cred.json" 2>&1 >/dev/null)
expect_eq "... and check has nothing to warn about" "$out" ""
printf '\n' >"$T/newline.secret"
policy credfile "{\"version\": 1,
  \"net\": {\"egress\": [{\"host\": \"api.example.test\", \"ports\": [$port]}],
    \"credentials\": [{\"host\": \"api.example.test\", \"header\": \"X-Key\", \"value_file\": \"$T/newline.secret\"}]}}"
out=$("$SANDCAP" run --policy "$T/credfile.json" -- true 2>&1); rc=$?
expect_eq "a value_file holding only a line end gives 125, saying so" "$rc:$out" \
	"125:sandcap: $T/credfile.json: \$.net.credentials[0].value_file: $T/newline.secret is empty; it holds the X-Key header the proxy adds for api.example.test"
mkdir -p "$T/grant" && echo hidden >"$T/grant/secret"
ln -s "$T/grant/secret" "$T/link.secret"
policy credlink "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$T/grant\"}]},
  \"net\": {\"egress\": [{\"host\": \"api.example.test\", \"ports\": [$port]}],
    \"credentials\": [{\"host\": \"api.example.test\", \"header\": \"X-Key\", \"value_file\": \"$T/link.secret\"}]}}"
out=$("$SANDCAP" run --policy "$T/credlink.json" -- true 2>&1); rc=$?
expect_eq "a value_file symlinked into a grant is refused" "$rc:$out" \
	"125:sandcap: $T/credlink.json: \$.net.credentials[0].value_file: secret file \"$T/link.secret\" is \"$T/grant/secret\", inside a grant, where the sandbox could read it"

# --- the README's example, as the README tells to run it ---
made_work=
[ -d /tmp/agent-work ] || { mkdir /tmp/agent-work && made_work=1; }
out=$(env -u EXAMPLE_API_TOKEN "$SANDCAP" run --quiet --policy "$ROOT/examples/policies/research-agent.json" -- true 2>&1); rc=$?
expect_match "research-agent.json without EXAMPLE_API_TOKEN: 125 naming it" "$rc:$out" \
	'^125:.*research-agent.json: \$\.net\.credentials\[0\]\.value_env: environment variable EXAMPLE_API_TOKEN is not set'
out=$(EXAMPLE_API_TOKEN=example-secret "$SANDCAP" run --quiet --audit "$T/ra.jsonl" \
	--policy "$ROOT/examples/policies/research-agent.json" -- sh -c 'test -d /work && test -r /usr/share/doc && echo ok' 2>&1); rc=$?
expect_eq "research-agent.json runs with EXAMPLE_API_TOKEN set" "$rc:$out" "0:ok"
# sdk-agent.json's credentials have no header: the value only replaces the
# placeholder. What check and run say of a missing one names that, never
# a header that does not exist.
for verb in check run; do
	if [ $verb = check ]; then
		out=$(env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u GITHUB_TOKEN "$SANDCAP" check \
			--policy "$ROOT/examples/policies/sdk-agent.json" 2>&1)
	else
		out=$(env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u GITHUB_TOKEN "$SANDCAP" run --quiet \
			--policy "$ROOT/examples/policies/sdk-agent.json" -- true 2>&1)
	fi
	expect_match "sdk-agent.json: $verb names the missing secret and what it is for" "$out" \
		"environment variable OPENAI_API_KEY is not set; it holds the value the proxy puts in place of OPENAI_API_KEY's placeholder in requests to api.openai.com"
	expect_no_match "... and prints no (null)" "$out" "\(null\)"
done
[ -n "$made_work" ] && rmdir /tmp/agent-work

# --- a policy larger than the limit says the limit ---
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' >"$T/big.json"
out=$("$SANDCAP" run --quiet --policy "$T/big.json" -- true 2>&1); rc=$?
expect_eq "a policy over 1 MiB gives 125, saying the limit" "$rc:$out" \
	"125:sandcap: $T/big.json: cannot read policy: larger than 1048576 bytes, the most a policy may be"
out=$("$SANDCAP" check --policy "$T/big.json" 2>&1)
expect_match "... check too" "$out" "larger than 1048576 bytes, the most a policy may be"

finish
