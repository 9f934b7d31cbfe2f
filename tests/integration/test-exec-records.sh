#!/usr/bin/env bash
# proc.exec records say which execs failed: an execve whose file is not
# there (each miss of a PATH search), or not executable, carries "result"
# with the errno, checked from the sandbox's own root and working directory;
# the report lists only the programs that ran.
. "$(dirname "$0")/lib.sh"
need_root
command -v python3 >/dev/null || skip_all "python3 not installed"

mkdir -p "$T/rw"
chown 4321:4321 "$T/rw"
policy p "{\"version\": 1, \"fs\": {\"grants\": [
  {\"path\": \"$T/rw\", \"mode\": \"rw\", \"at\": \"/work\"}], \"workdir\": \"/work\"}}"
# execs LOG: one "path result" line per proc.exec record after sandcap-init's
execs() {
	python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["event"] == "proc.exec" and r["data"]["argv"][:1] != ["sandcap-init"]:
        print(r["data"]["path"], r["data"].get("result", "ok"))
PY
}

# python's os.execvp tries each PATH entry in turn: /usr/local/bin first.
"$SANDCAP" run --quiet --audit "$T/path.jsonl" --policy "$T/p.json" -- /usr/bin/python3 -c '
import os
os.environ["PATH"] = "/nonexistent:/usr/local/bin:/usr/bin"
os.execvp("true", ["true"])' >/dev/null 2>&1
expect_eq "execvp: the misses are failed execs, the hit is not" "$(execs "$T/path.jsonl")" \
	"/usr/bin/python3 ok
/nonexistent/true ENOENT
/usr/local/bin/true ENOENT
/usr/bin/true ok"

# sandcap-init's own PATH search does not try names that are not there.
"$SANDCAP" run --quiet --audit "$T/init.jsonl" --policy "$T/p.json" -- true >/dev/null 2>&1
expect_eq "sandcap-init finds the command without failed execs" "$(execs "$T/init.jsonl")" \
	"/usr/bin/true ok"
"$SANDCAP" run --quiet --audit "$T/none.jsonl" --policy "$T/p.json" -- no-such-command >/dev/null 2>&1
expect_eq "a command found nowhere: exit 127 and no exec at all" \
	"$?:$(execs "$T/none.jsonl")" "127:"

# Relative to the sandbox's working directory; inside its root (/usr/bin
# exists on the host too, /work does not); not a file; no execute bit; a
# symlink whose absolute target resolves inside the sandbox's root.
"$SANDCAP" run --quiet --audit "$T/rel.jsonl" --policy "$T/p.json" -- /bin/sh -c '
cd /work; echo "exit 0" > noexec; ln -s /bin/true lnk
./missing; ./noexec; ./lnk; /work; /usr/bin/true; /work/sub/x' >/dev/null 2>&1
expect_eq "relative, not executable, a directory, a symlink, a missing directory" \
	"$(execs "$T/rel.jsonl" | tail -n +3)" "./missing ENOENT
./noexec EACCES
./lnk ok
/work EACCES
/usr/bin/true ok
/work/sub/x ENOENT"

out=$("$SANDCAP" audit report "$T/path.jsonl")
# sandcap-init, python3 and true ran; the two misses did not
expect_match "the report counts the programs that ran" "$out" "processes 3 executed"
expect_no_match "and does not list the misses" "$out" "\] (/nonexistent|/usr/local/bin)/true"
check "a log with failed execs verifies" "$SANDCAP" audit verify "$T/path.jsonl"
finish
