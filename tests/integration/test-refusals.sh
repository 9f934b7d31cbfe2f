#!/usr/bin/env bash
# A refused run is reported as what it was: the step that refused it, in
# the message and in the log, every time (1,000 runs refused in the
# child); and sandbox.start claims only the layers that were put in place.
. "$(dirname "$0")/lib.sh"
need_root
command -v python3 >/dev/null || skip_all "needs python3"

RUNS=${REFUSAL_RUNS:-1000}
mkdir -p "$T/emptyroot" "$T/logs"
# A rootfs whose /dev is a file: the child's "mounts" step fails (nothing
# to mount /dev onto; a missing mount point would be made), after the
# supervisor sent it its cgroup, which stays unread.
touch "$T/emptyroot/dev"
policy empty '{"version": 1, "fs": {"runtime": {"rootfs": "'"$T/emptyroot"'"}}, "audit": {"exec": true}}'
policy full '{"version": 1, "audit": {"exec": true}, "net": {"egress": [{"host": "localhost", "ports": [9]}]}}'

# layers LOG: the sandbox.start record's setup and layers, one per line
layers() {
	python3 - "$1" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["event"] == "sandbox.start":
        d = r["data"]
        print("setup=" + d.get("setup", "?"))
        for k, v in sorted(d["layers"].items()):
            print(k + "=" + json.dumps(v, sort_keys=True))
EOF
}

out=$("$SANDCAP" run --audit "$T/refused.jsonl" --policy "$T/empty.json" -- true 2>&1)
expect_eq "a rootfs whose /dev is a file: exit 125" "$?" 125
expect_match "the message names the step" "$out" "cannot set up the sandbox: mounts: "
expect_match "the summary lists only what was in place" "$out" "refused; in place: namespaces no-network; audit: "
l=$(layers "$T/refused.jsonl")
expect_match "sandbox.start: refused at mounts" "$l" "setup=refused at mounts"
expect_no_match "no seccomp claimed" "$l" "seccomp"
expect_no_match "no landlock claimed" "$l" "landlock"
expect_no_match "no pivot_root claimed" "$l" "pivot_root|mounts="
expect_no_match "no capability drop claimed" "$l" "capabilities|no_new_privs"
expect_match "but the namespaces clone3 made" "$l" 'namespaces="mount pid net ipc uts"'
expect_match "sandbox.exit names the step" "$(grep '"event":"sandbox.exit"' "$T/refused.jsonl")" \
	'"error":"mounts"'
"$SANDCAP" audit verify "$T/refused.jsonl" >/dev/null 2>&1
expect_eq "the refused run's log verifies" "$?" 0
expect_match "the report says the run was refused at its step, not an unknown exit" \
	"$("$SANDCAP" audit report "$T/refused.jsonl")" \
	"exit      refused at mounts: [^"$'\n'"]+ \\(the command did not run\\)"

"$SANDCAP" run --quiet --audit "$T/full.jsonl" --policy "$T/full.json" -- true
expect_eq "a normal run: exit 0" "$?" 0
l=$(layers "$T/full.jsonl")
expect_match "sandbox.start: setup complete" "$l" "setup=complete"
expect_match "every namespace" "$l" 'namespaces="user mount pid net ipc uts cgroup"'
expect_match "pivot_root" "$l" 'mounts="tmpfs root, pivot_root'
expect_match "landlock with its ABI" "$l" 'landlock=\{"abi": [1-9]'
expect_match "seccomp with user notification" "$l" 'seccomp="active, with user notification'
expect_match "capabilities dropped, no_new_privs" "$l" $'capabilities="none"\n.*no_new_privs=true'
expect_match "the proxy" "$l" 'proxy="active"'
expect_match "the cgroup" "$l" 'cgroup="v[12]"'

out=$("$SANDCAP" run --json --quiet --policy "$T/full.json" -- true 2>&1)
expect_match "the JSON summary lists every layer" "$out" \
	'"layers":"namespaces mounts cgroup capabilities no_new_privs landlock seccomp proxy"'
out=$("$SANDCAP" check --policy "$T/full.json" 2>&1)
expect_match "check says what a run would attempt, labelled as such" "$out" \
	"a run would attempt: namespaces .*pivot_root.*Landlock, seccomp with user notification, the egress proxy"

# Many refused runs in a row: each one must name its step, never pass for
# a command that exited with status 125.
start=$(date +%s%N)
for i in $(seq "$RUNS"); do
	"$SANDCAP" run --quiet --audit "$T/logs/$i.jsonl" --policy "$T/empty.json" -- true \
		2>"$T/logs/$i.err"
	echo $? >"$T/logs/$i.rc"
done
ms=$((($(date +%s%N) - start) / 1000000))
bad=$(python3 - "$T/logs" "$RUNS" <<'EOF'
import json, sys
d, n = sys.argv[1], int(sys.argv[2])
bad = []
for i in range(1, n + 1):
    rc = open(f"{d}/{i}.rc").read().strip()
    err = open(f"{d}/{i}.err").read()
    ex = [json.loads(l) for l in open(f"{d}/{i}.jsonl") if '"sandbox.exit"' in l]
    if rc != "125" or "cannot set up the sandbox: mounts: " not in err or len(ex) != 1 \
            or ex[0]["data"].get("error") != "mounts":
        bad.append(f"run {i}: exit {rc}, {err.strip()[:120]!r}, {ex[0]['data'] if ex else None}")
print(len(bad))
for b in bad[:5]:
    print(b, file=sys.stderr)
EOF
)
expect_eq "$RUNS refused runs, each reported as refused at mounts ($((ms / RUNS)) ms each)" "$bad" 0

finish
