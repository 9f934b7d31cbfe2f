#!/usr/bin/env bash
# Programs nobody here wrote behave inside as on the host (docs/compat.md):
# CPython's regression tests for the OS on the host and in a sandbox, in the
# same run, every case that passes on the host passing inside but for the
# deliberate differences docs/compat.md lists; and trinity, the syscall
# fuzzer, for two minutes inside: the supervisor answers, the log is sealed
# and bounded, its counts are exact, nothing is left on the host.
. "$(dirname "$0")/lib.sh"
need_root
command -v trinity >/dev/null || skip_all "trinity not installed"
[ -f /usr/lib/python3.11/test/test_os.py ] || skip_all "libpython3.11-testsuite not installed"

DOC=$(cd "$(dirname "$0")/../.." && pwd)/docs/compat.md
MODULES="test_os test_posix test_subprocess test_signal test_socket test_selectors test_asyncio
	test_ssl test_multiprocessing_spawn test_threading test_io test_tempfile test_shutil"
MODULES=$(echo $MODULES)

# The policy is docs/compat.md's own, its working folder made a scratch one.
mkdir -p "$T/host" "$T/in"
chown nobody:nogroup "$T/host"
chown 1000:1000 "$T/in"
python3 - "$DOC" "$T/in" >"$T/cpython.json" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
block = re.search(r"^## The policy\n.*?```json\n(.*?)```", text, re.S | re.M).group(1)
p = json.loads(block)
p["fs"]["grants"][0]["path"] = sys.argv[2]
print(json.dumps(p))
EOF
check "docs/compat.md's policy is read" test -s "$T/cpython.json"

# Both runs at once (each -j2): about three minutes on two cores.
regrtest() { # regrtest JUNIT MODULES...: the arguments of one regrtest run
	local x=$1
	shift
	echo python3 -m test -j2 --timeout 600 --junit-xml "$x" "$@"
}
t0=$SECONDS
(cd "$T/host" && setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME="$T/host" \
	$(regrtest "$T/host/cases.xml" $MODULES) >"$T/host.log" 2>&1) &
hostpid=$!
"$SANDCAP" run --policy "$T/cpython.json" --audit "$T/cpython.log" -- \
	env HOME=/work $(regrtest /work/cases.xml $MODULES) >"$T/in.log" 2>&1
in_rc=$?
wait $hostpid
host_rc=$?
echo "# CPython on the host (exit $host_rc) and inside (exit $in_rc): $((SECONDS - t0)) s"
check "the host's run wrote its results" test -s "$T/host/cases.xml"
check "the sandbox's run wrote its results" test -s "$T/in/cases.xml"

# The cases that pass on the host and not inside, less the deliberate ones.
compare() { # compare HOSTXML INXML: prints "N M" and then one id a line
	python3 - "$DOC" "$1" "$2" <<'EOF'
import fnmatch, re, sys
import xml.etree.ElementTree as ET
def passed(path):
    ok, n = set(), 0
    for tc in ET.parse(path).getroot().iter("testcase"):
        n += 1
        if not any(c.tag in ("error", "failure", "skipped") for c in tc):
            ok.add(tc.get("name"))
    return ok, n
doc = open(sys.argv[1]).read()
section = doc.split("## Deliberate differences", 1)[1]
allowed = re.findall(r"^\| `([^`]+)` \|", section, re.M)
host, n = passed(sys.argv[2])
inside, _ = passed(sys.argv[3])
lost = sorted(c for c in host - inside if not any(fnmatch.fnmatchcase(c, a) for a in allowed))
print(len(host), n)
print("\n".join(lost))
EOF
}
out=$(compare "$T/host/cases.xml" "$T/in/cases.xml")
read -r host_ok cases <<<"$(head -1 <<<"$out")"
lost=$(tail -n +2 <<<"$out" | grep . || true)
echo "# $cases cases, $host_ok pass on the host; $(grep -c . <<<"$lost") do not inside at first"
check "CPython's suites ran thousands of cases" test "${cases:-0}" -gt 1000

# A case lost inside runs once more on its own, so that a timing test on a
# busy host does not decide.
if [ -n "$lost" ]; then
	printf '%s\n' $lost >"$T/in/again.txt"
	"$SANDCAP" run --policy "$T/cpython.json" --audit "$T/again.log" -- \
		env HOME=/work python3 -m test --timeout 600 --junit-xml /work/again.xml \
		--matchfile /work/again.txt $MODULES >"$T/again.out" 2>&1
	lost=$(compare "$T/host/cases.xml" "$T/in/again.xml" | tail -n +2 | grep -Fx -f "$T/in/again.txt" || true)
fi
expect_eq "every case that passes on the host passes inside (less docs/compat.md's)" "$lost" ""
[ -z "$lost" ] || sed -n '/^==*$/,/^--*$/p' "$T/again.out" | head -40 | sed 's/^/# /'
check "the CPython run's log verifies" "$SANDCAP" audit verify "$T/cpython.log"

# trinity for two minutes, started again whenever it exits, each time in a
# session of its own: its fcntl(F_SETOWN) of its process group with any
# F_SETSIG signal (SIGIO by default) must not reach the loop.
mkdir -p "$T/tr"
chown 1000:1000 "$T/tr"
policy trinity "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$T/tr\", \"at\": \"/work\", \"mode\": \"rw\"}], \"workdir\": \"/work\"}, \"limits\": {\"memory\": \"2G\", \"pids\": 256, \"wall\": \"120s\"}}"
ipc_before=$(ipcs -a | grep -c '^0x')
mounts_before=$(wc -l </proc/self/mountinfo)
t0=$SECONDS
timeout 200 "$SANDCAP" run --policy "$T/trinity.json" --audit "$T/trinity.log" -- \
	sh -c 'trap "" HUP INT QUIT PIPE ALRM TERM USR1 USR2 TSTP TTIN TTOU IO
		while :; do setsid -w trinity -a 64 --disable-fds=perf -q -l off -x kill -x tkill -x tgkill \
			-x rt_sigqueueinfo -x rt_tgsigqueueinfo -x pidfd_send_signal; done' \
	>"$T/trinity.out" 2>&1
rc=$?
took=$((SECONDS - t0))
id=$(sed -n 's/^sandcap: \(sc-[0-9a-f]*\) .*/\1/p' "$T/trinity.out" | head -1)
echo "# trinity: exit $rc after $took s, $(stat -c %s "$T/trinity.log") bytes of log, sandbox $id"
grep -A3 '^sandcap: sc-' "$T/trinity.out" | sed 's/^/# /'
grep -o '"event":"sandbox.exit".*"oom_killed":[a-z]*' "$T/trinity.log" | sed 's/^/# /'
# The wall clock ends it (124); or the memory limit does, when what
# trinity pinned outlives its processes (System V segments, a full /tmp)
# and the OOM killer reaches the loop too: 137, said so in the log.
if [ "$rc" = 137 ] && grep -q '"event":"sandbox.exit".*"oom_killed":true' "$T/trinity.log"; then
	tap_diag "the memory limit ended the run before the wall clock (OOM kill recorded)"
	rc=124
fi
expect_eq "the wall clock (or the memory limit, recorded) ends trinity's run, the supervisor answering" "$rc" 124
check "within the wall clock and the teardown" test "$took" -lt 150
check "trinity's log verifies" "$SANDCAP" audit verify "$T/trinity.log"
check "and is sealed" bash -c "tail -1 '$T/trinity.log' | grep -q '\"event\":\"audit.seal\"'"
check "at most 8 MiB for two minutes of trinity" test "$(stat -c %s "$T/trinity.log")" -le $((8 << 20))
json=$("$SANDCAP" audit report --json "$T/trinity.log" 2>/dev/null)
counts=$(python3 -c '
import json, sys
r = json.loads(sys.argv[1])
exit_ = [json.loads(l)["data"] for l in open(sys.argv[2]) if "\"sandbox.exit\"" in l][0]
print(exit_["syscalls_denied"], r["stopped"]["syscalls"]["count"], exit_["cpu_ns"])
' "$json" "$T/trinity.log")
read -r exit_denied report_denied cpu_ns <<<"$counts"
echo "# refused syscalls: sandbox.exit $exit_denied, report $report_denied; cpu_ns $cpu_ns"
check "trinity's refused calls were many" test "${exit_denied:-0}" -gt 10000
expect_eq "the report counts every refused call, folded or not" "$report_denied" "$exit_denied"
check "sandbox.exit's CPU time is the run's" test "${cpu_ns:-0}" -gt 1000000000
check "no trinity is left on the host" bash -c "! pgrep -x trinity"
check "no cgroup of the sandbox is left" bash -c "! find /sys/fs/cgroup -maxdepth 4 -name '$id*' | grep -q ."
expect_eq "no System V IPC object is left" "$(ipcs -a | grep -c '^0x')" "$ipc_before"
expect_eq "no mount is left" "$(wc -l </proc/self/mountinfo)" "$mounts_before"
finish
