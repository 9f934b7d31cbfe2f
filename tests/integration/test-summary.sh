#!/usr/bin/env bash
# What a run says about itself: the end-of-run summary against the audit
# report of the same log (one number for files written), denials named by
# host with their reason, network limits hit, glibc's interface probe not
# counted as a denial while a real one still is, --quiet on failure; and why
# a layer is missing when sandcap runs inside a chroot (doctor, refused run).
. "$(dirname "$0")/lib.sh"
need_root
for tool in nginx dnsmasq curl python3; do
	command -v $tool >/dev/null || skip_all "$tool not installed"
done
W=$T
PIDS=()
. "$(dirname "$0")/../../tools/fixtures.sh"
JAIL=$T/jail
cleanup_all() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	mountpoint -q "$JAIL" && umount -R "$JAIL"
	mountpoint -q "$T/plain/usr" && umount -R "$T/plain" 2>/dev/null
	cleanup_dir
}
trap cleanup_all EXIT

port=$(free_port)
dns=$(free_port)
start_origin "$port" || skip_all "origin did not start"
start_dns "$dns" api.allowed.test=127.0.0.1 denied.test=127.0.0.1 other.test=127.0.0.1
A="http://api.allowed.test:$port"

mkdir -p "$T/rw"
policy net "{\"version\": 1,
  \"fs\": {\"grants\": [{\"path\": \"$T/rw\", \"mode\": \"rw\", \"at\": \"/work\"}]},
  \"net\": {\"egress\": [{\"host\": \"api.allowed.test\", \"ports\": [$port]}],
    \"allow_private\": [\"127.0.0.1/32\"], \"dns\": \"127.0.0.1:$dns\",
    \"max_request_body\": \"1K\"},
  \"audit\": {\"exec\": true, \"denied_syscalls\": true}}"

# --- files written: one number in the summary, --json, sandbox.exit and the report ---
script='echo a > /work/f1; echo b >> /work/f1; echo c > /work/f2; mkdir /work/d; echo d > /work/d/f3; rm /work/f2'
text=$("$SANDCAP" run --audit "$T/files.jsonl" --policy "$T/net.json" -- sh -c "$script" 2>&1)
json=$("$SANDCAP" run --json --audit "$T/files-json.jsonl" --policy "$T/net.json" -- sh -c "rm -rf /work/*; $script" 2>&1 | tail -n 1)
n_text=$(sed -n 's/^  files written: \([0-9]*\) .*/\1/p' <<<"$text")
n_report=$("$SANDCAP" audit report "$T/files.jsonl" | sed -n 's/^  files     \([0-9]*\) written.*/\1/p')
n_exit=$(python3 -c "
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r['event'] == 'sandbox.exit': print(r['data']['files_written'])" "$T/files.jsonl")
n_json=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["files_written"])' "$json")
n_rjson=$("$SANDCAP" audit report --json "$T/files-json.jsonl" | python3 -c 'import json, sys; print(json.load(sys.stdin)["did"]["files_written"])')
expect_eq "files written: summary, report and sandbox.exit agree (4 paths)" "$n_text/$n_report/$n_exit" "4/4/4"
expect_eq "files written: --json and the report's JSON agree" "$n_json/$n_rjson" "4/4"

# --- denials by host and reason, limits hit ---
out=$("$SANDCAP" run --audit "$T/deny.jsonl" --policy "$T/net.json" -- sh -c "
curl -s -o /dev/null http://denied.test:$port/; curl -s -o /dev/null http://denied.test:$port/x
curl -s -o /dev/null http://other.test:$port/
head -c 4096 /dev/zero | curl -s -o /dev/null --data-binary @- $A/upload
curl -s -o /dev/null $A/data.json" 2>&1)
expect_match "the summary names the most denied host with its reason" "$out" \
	"denied: denied\.test x2 \(host-not-allowed\), other\.test x1 \(host-not-allowed\)"
expect_match "the summary names the network limit hit" "$out" "limits hit: request body cap"
expect_match "the denied count includes the body cap refusal" "$out" "network: 1 allowed, 4 denied"
json=$("$SANDCAP" run --json --policy "$T/net.json" -- curl -s -o /dev/null "http://denied.test:$port/" 2>&1 | tail -n 1)
expect_eq "--json lists the denied hosts" "$(python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print(d["denied_hosts"], d["requests_denied"])' "$json")" \
	"[{'count': 1, 'host': 'denied.test', 'reason': 'host-not-allowed'}] 1"

# --- glibc's netlink probe is not a denial; a real denied syscall still is ---
probe='import socket; socket.getaddrinfo("localhost", 80, flags=socket.AI_ADDRCONFIG); socket.getaddrinfo("127.0.0.1", 80, socket.AF_INET, socket.SOCK_STREAM, 0, socket.AI_ADDRCONFIG); print("resolved")'
out=$("$SANDCAP" run --json --audit "$T/probe.jsonl" --policy "$T/net.json" -- python3 -c "$probe" 2>&1)
expect_eq "getaddrinfo(AI_ADDRCONFIG) works inside" "$(head -n 1 <<<"$out")" "resolved"
expect_eq "... and is 0 syscalls denied" "$(tail -n 1 <<<"$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["syscalls_denied"])')" "0"
check "... with no syscall.denied record in the log" bash -c "[ -s '$T/probe.jsonl' ] && ! grep -q '\"event\":\"syscall.denied\"' '$T/probe.jsonl'"
out=$("$SANDCAP" run --json --policy "$T/net.json" -- sh -c "curl -s -o /dev/null $A/data.json; python3 -c 'import ctypes; ctypes.CDLL(None).mount(b\"a\", b\"/tmp\", b\"tmpfs\", 0, None)'" 2>&1 | tail -n 1)
expect_eq "curl through the proxy plus one mount: exactly 1 syscall denied (mount)" \
	"$(python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print(d["syscalls_denied"], d["syscalls_denied_by_name"])' "$out")" \
	"1 [{'count': 1, 'syscall': 'mount'}]"
out=$("$SANDCAP" run --policy "$T/net.json" -- python3 -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9)' 2>&1)
expect_match "another netlink family is still denied and counted" "$out" "syscalls denied: 1 \(socket x1\)"

# --- --quiet keeps the summary when the command fails ---
out=$("$SANDCAP" run --quiet --policy "$T/net.json" -- sh -c 'exit 3' 2>&1)
expect_match "--quiet, exit 3: the summary is printed" "$out" "command exited with status 3"
out=$("$SANDCAP" run --quiet --policy "$T/net.json" -- true 2>&1)
expect_eq "--quiet, exit 0: nothing" "$out" ""

# --- a chroot: doctor and a refused run name it ---
mkdir -p "$JAIL"
mount --rbind / "$JAIL" && mount --make-rslave "$JAIL"
out=$(chroot "$JAIL" "$SANDCAP" doctor 2>&1)
expect_match "doctor in a chroot (bind mount of /): user namespaces refused, the chroot named" "$out" \
	"user namespace +NO +sandcap runs inside a chroot"
out=$(chroot "$JAIL" env SANDCAP_STATE_DIR="$T/state" "$SANDCAP" run --policy "$T/net.json" -- true 2>&1)
rc=$?
expect_eq "a run in the chroot is refused" "$rc" 125
expect_match "... saying it is a chroot" "$out" "cannot set up the sandbox: .*runs inside a chroot"
policy bare '{"version": 1}'
out=$(chroot "$JAIL" env SANDCAP_STATE_DIR="$T/state" "$SANDCAP" run --policy "$T/bare.json" -- true 2>&1)
expect_match "a run without grants is refused at the userns step, naming the chroot" "$out" \
	"userns: Operation not permitted; sandcap runs inside a chroot"
binaries_for_others "$T/bin" >/dev/null
out=$(chroot --userspec=65534:65534 "$JAIL" env HOME=/tmp SANDCAP_STATE_DIR=/tmp/sandcap-summary-$$ "$T/bin/sandcap" run --policy "$T/bare.json" -- true 2>&1)
expect_match "unprivileged in the chroot: refused, naming the chroot" "$out" "runs inside a chroot"
umount -R "$JAIL"
# A chroot into a plain directory (the usual kind): only the runtime bound in.
mkdir -p "$T/plain"
for d in usr lib lib64 bin sbin etc proc; do
	[ -e "/$d" ] || continue
	if [ -L "/$d" ]; then cp -a "/$d" "$T/plain/$d"; else mkdir -p "$T/plain/$d" && mount --rbind "/$d" "$T/plain/$d"; fi
done
mkdir -p "$T/plain$(dirname "$SANDCAP")" "$T/plain/tmp" && mount --bind "$(dirname "$SANDCAP")" "$T/plain$(dirname "$SANDCAP")"
out=$(chroot "$T/plain" "$SANDCAP" doctor 2>&1)
expect_match "doctor in a chroot into a directory names it" "$out" "user namespace +NO +sandcap runs inside a chroot"
umount -R "$T/plain$(dirname "$SANDCAP")"
for d in usr lib lib64 bin sbin etc proc; do mountpoint -q "$T/plain/$d" && umount -R "$T/plain/$d"; done
out=$("$SANDCAP" doctor 2>&1)
expect_no_match "doctor outside the chroot does not claim one" "$out" "chroot"
expect_match "doctor reports the Landlock ABI in use" "$out" "landlock +yes +ABI [0-9]+ \(fs"
finish
