#!/usr/bin/env bash
# What the agent tried, for files: every write a wall refuses (a read-only
# mount: the runtime, a ro grant; Landlock: /proc, /dev, the root) is an
# fs.denied record with the call, the path and the errno, and is really
# refused (checked from the host); writes the sandbox allows work and leave
# no such record; "mkdir -p" of an existing directory and other answers the
# kernel gives first (EEXIST, ENOENT) are the same as without the listener
# (every errno compared); a flood of refusals is
# folded into counted records, and the report's count is exact; with
# audit.denied_syscalls off the writes are still refused, unrecorded.
. "$(dirname "$0")/lib.sh"
need_root
command -v python3 >/dev/null || skip_all "needs python3"

mkdir -p "$T/rw" "$T/ro/sub"
echo keep >"$T/ro/file"
echo keep >"$T/ro/sub/inner"
ln -s /etc/hostname "$T/rw/to-etc"
chmod -R a+rwX "$T/rw" "$T/ro"
policy base "{\"version\": 1, \"fs\": {\"grants\": [
  {\"path\": \"$T/rw\", \"mode\": \"rw\", \"at\": \"/rw\"},
  {\"path\": \"$T/ro\", \"mode\": \"ro\", \"at\": \"/ro\"}]}}"

# Each line: the attempt, then the op and path its fs.denied must name.
cat >"$T/attempts.sh" <<'EOF'
echo x > /etc/passwd                      # openat /etc/passwd
touch /usr/bin/sandcap-planted            # openat /usr/bin/sandcap-planted
echo x > /ro/file                         # openat /ro/file
echo x >> /ro/new                         # openat /ro/new
rm -f /ro/file                            # unlinkat /ro/file
rmdir /ro/sub 2>/dev/null; rm -rf /ro/sub # unlinkat /ro/sub/inner
mkdir /ro/dir                             # mkdir /ro/dir
mv /rw/moved /ro/moved                    # renameat2 /ro/moved
ln -s target /ro/link                     # symlinkat /ro/link
ln /rw/moved /ro/hard                     # linkat /ro/hard
chmod 600 /ro/file                        # fchmodat /ro/file
truncate -s 0 /ro/file                    # openat /ro/file
cd /ro && touch relative                  # openat /ro/relative
echo 1 > /proc/self/oom_score_adj         # openat /proc/self/oom_score_adj
echo x > /dev/planted                     # openat /dev/planted
echo x > /rw/to-etc                       # openat /rw/to-etc
EOF
grep -o '# .*' "$T/attempts.sh" | cut -c3- >"$T/want"
{
	echo 'echo moved > /rw/moved'
	sed 's/ *#.*//; s/$/ 2>\/dev\/null; echo "rc=$?"/' "$T/attempts.sh"
	# what the sandbox allows, and answers the kernel gives first
	echo 'echo ok > /rw/new && echo > /dev/null && mkdir -p /usr/bin /rw && echo fine > /tmp/t && chmod 600 /rw/new && mv /rw/new /rw/renamed && rm /rw/renamed && echo allowed-ok'
	echo 'mkdir /usr 2>&1; touch /nonexistent/x 2>&1; true'
} >"$T/script.sh"
chmod 644 "$T/script.sh"
cp "$T/script.sh" "$T/rw/script.sh"
out=$("$SANDCAP" run --quiet --audit "$T/a.jsonl" --policy "$T/base.json" -- sh /rw/script.sh 2>&1)
expect_eq "every refused attempt failed inside" "$(grep -c '^rc=[1-9]' <<<"$out")" "$(wc -l <"$T/want")"
expect_match "the writes the sandbox allows work" "$out" "allowed-ok"
expect_match "mkdir of an existing directory is EEXIST, the kernel's answer" "$out" "cannot create directory '/usr': File exists"
expect_match "a create in a missing directory: ENOENT" "$out" "cannot touch '/nonexistent/x': No such file or directory"

# From the host: nothing was written past a wall.
check "host: no file planted in /usr/bin" test ! -e /usr/bin/sandcap-planted
check "host: the ro grant is as it was" \
	test "$(cd "$T/ro" && find . | sort | tr '\n' ' ')" = ". ./file ./sub ./sub/inner "
check "host: its file kept its content" test "$(cat "$T/ro/file")" = keep
check "host: /etc/hostname untouched through the grant's symlink" test "$(cat /etc/hostname)" != x

python3 - "$T/a.jsonl" "$T/want" >"$T/check.out" 2>&1 <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
denied = [r["data"] for r in recs if r["event"] == "fs.denied"]
got = {(d["op"], d["path"]) for d in denied}
for line in open(sys.argv[2]):
    op, path = line.split()
    print(("ok" if (op, path) in got else "missing"), op, path)
bad = [d for d in denied if d.get("errno") not in ("EROFS", "EACCES")
       or d.get("reason") not in ("read-only", "not-writable") or not d.get("pid")]
print("malformed", len(bad))
allowed = [d for d in denied if d["path"].startswith(("/rw/new", "/rw/renamed", "/tmp/", "/dev/null"))
           or d["path"] in ("/usr", "/usr/bin", "/rw")]
print("allowed-recorded", len(allowed))
ro = {d["path"]: d["errno"] for d in denied}
print("errno", ro.get("/etc/passwd"), ro.get("/proc/self/oom_score_adj"), ro.get("/dev/planted"))
EOF
while read -r verdict op path; do
	case $verdict in
	ok) ok "fs.denied: $op $path" ;;
	missing) not_ok "fs.denied: $op $path (no record; $(grep -c fs.denied "$T/a.jsonl") fs.denied)" ;;
	esac
done < <(grep -E '^(ok|missing) ' "$T/check.out")
expect_eq "every fs.denied has pid, errno and reason" "$(sed -n 's/^malformed //p' "$T/check.out")" 0
expect_eq "no allowed write is recorded as refused" "$(sed -n 's/^allowed-recorded //p' "$T/check.out")" 0
expect_eq "errno of each wall: a read-only mount EROFS, Landlock EACCES" \
	"$(sed -n 's/^errno //p' "$T/check.out")" "EROFS EACCES EACCES"
expect_eq "the log verifies" "$("$SANDCAP" audit verify "$T/a.jsonl" >/dev/null 2>&1; echo $?)" 0
report=$("$SANDCAP" audit report "$T/a.jsonl")
expect_match "the report counts every fs.denied" "$report" "files     $(grep -c '"event":"fs.denied"' "$T/a.jsonl") writes refused"
expect_match "... each with its call, path and errno" "$report" "openat /etc/passwd \(EROFS, read-only\)"

# Answers the kernel gives before any wall, and the walls' own, are the
# same whether the listener judges the write or the kernel alone does
# (audit.denied_syscalls off): each call's errno, compared.
cat >"$T/rw/edges.py" <<'EOF'
import errno, os
def t(name, f):
    try:
        f()
        r = "ok"
    except OSError as e:
        r = errno.errorcode[e.errno]
    print(name, r)
W = os.O_WRONLY
t("unlink-absent-ro", lambda: os.unlink("/ro/absent"))
t("unlink-absent-runtime", lambda: os.unlink("/usr/absent"))
t("unlink-absent-landlock", lambda: os.unlink("/dev/absent"))
t("mkdir-existing-ro", lambda: os.mkdir("/ro/sub"))
t("mkdir-existing-root", lambda: os.mkdir("/usr"))
t("create-excl-existing", lambda: os.open("/ro/file", W | os.O_CREAT | os.O_EXCL))
t("create-missing-dir", lambda: os.open("/ro/none/x", W | os.O_CREAT))
t("open-dir-for-write", lambda: os.open("/usr", os.O_RDWR))
t("creat-read-only-existing", lambda: os.close(os.open("/ro/file", os.O_RDONLY | os.O_CREAT)))
t("rename-absent-ro", lambda: os.rename("/ro/absent", "/ro/other"))
t("symlink-existing-ro", lambda: os.symlink("x", "/ro/file"))
t("chmod-absent-ro", lambda: os.chmod("/ro/absent", 0o600))
t("rmdir-dot", lambda: os.rmdir("/ro/sub/."))
t("write-dev-null", lambda: os.close(os.open("/dev/null", W)))
t("create-in-proc", lambda: os.open("/proc/planted", W | os.O_CREAT))
t("truncate-ro", lambda: os.truncate("/ro/file", 0))
t("tmpfile-ro", lambda: os.open("/ro", os.O_TMPFILE | os.O_RDWR))
t("tmpfile-tmp", lambda: os.close(os.open("/tmp", os.O_TMPFILE | os.O_RDWR)))
EOF
policy ro_quiet "{\"version\": 1, \"audit\": {\"denied_syscalls\": false}, \"fs\": {\"grants\": [
  {\"path\": \"$T/rw\", \"mode\": \"rw\", \"at\": \"/rw\"},
  {\"path\": \"$T/ro\", \"mode\": \"ro\", \"at\": \"/ro\"}]}}"
judged=$("$SANDCAP" run --quiet --policy "$T/base.json" -- python3 /rw/edges.py 2>&1)
kernel=$("$SANDCAP" run --quiet --policy "$T/ro_quiet.json" -- python3 /rw/edges.py 2>&1)
expect_eq "18 calls answered as the kernel alone answers them" "$judged" "$kernel"
expect_match "... an absent name under a read-only mount: EROFS" "$judged" "unlink-absent-ro EROFS"

# A flood: 3,000 refused opens from one process, ten records a second and
# counts for the rest; the report counts each attempt once.
cat >"$T/rw/flood.py" <<'EOF'
import os, sys
n = 0
for i in range(int(sys.argv[1])):
    try:
        os.open("/usr/flood-%d" % i, os.O_WRONLY | os.O_CREAT, 0o644)
    except OSError:
        n += 1
print("refused", n)
EOF
out=$("$SANDCAP" run --quiet --audit "$T/flood.jsonl" --policy "$T/base.json" -- python3 /rw/flood.py 3000 2>&1)
expect_eq "3,000 refused creates" "$out" "refused 3000"
recs=$(grep -c '"event":"fs.denied"' "$T/flood.jsonl")
folded=$(python3 -c '
import json, sys
print(sum(json.loads(l)["data"].get("suppressed", 0) for l in open(sys.argv[1])
          if "\"denied_records\"" in l and "\"files\"" in l))' "$T/flood.jsonl")
expect_eq "records plus folded counts are every attempt" "$((recs + folded))" 3000
check "few records one by one ($recs)" test "$recs" -le 100
expect_match "the report's count is exact" "$("$SANDCAP" audit report "$T/flood.jsonl")" "files     3000 writes refused"
expect_eq "the flood's log verifies" "$("$SANDCAP" audit verify "$T/flood.jsonl" >/dev/null 2>&1; echo $?)" 0

# audit.denied_syscalls off: still refused, not recorded.
policy quiet "{\"version\": 1, \"audit\": {\"denied_syscalls\": false}}"
out=$("$SANDCAP" run --quiet --audit "$T/q.jsonl" --policy "$T/quiet.json" -- sh -c 'touch /usr/bin/sandcap-planted; echo rc=$?' 2>&1)
expect_match "audit.denied_syscalls off: the write is still refused" "$out" "rc=1"
expect_eq "... and not recorded" "$(grep -c '"event":"fs.denied"' "$T/q.jsonl")" 0
check "host: still no file planted" test ! -e /usr/bin/sandcap-planted

finish
