#!/usr/bin/env bash
# No setuid or setgid file leaves the sandbox: a grant is idmapped onto its
# owner, so in a root-owned rw grant the agent's files are root's on the
# host, where the grant is not mounted nosuid. The agent tries every way of
# leaving a file with S_ISUID/S_ISGID in such a grant (tests/helpers/
# setid-probe.c: chmod, fchmod, fchmodat, fchmodat2, open, openat, creat,
# openat2, O_TMPFILE + linkat, mkdir, mkdirat, mknod, mknodat,
# security.capability, a hard link of an existing setuid program,
# io_uring), through `sandcap run`, a session's `sandcap exec`, the API
# (`sandcap serve`, as uid 65534) and sandcap-runc (a volume, with and
# without a seccomp profile of the spec's own). Checked from the host
# after each: `find GRANT -perm /6000` finds nothing, ordinary modes were
# set, each refusal is an fs.denied record naming the path, the call and
# the mode, and fs.write records carry the files' modes.
. "$(dirname "$0")/lib.sh"
need_root
command -v python3 >/dev/null || skip_all "needs python3"
B=$(dirname "$SANDCAP")
PROBE=$B/tests/helpers/setid-probe
[ -x "$PROBE" ] || PROBE=$(dirname "$0")/../../build/tests/helpers/setid-probe
[ -x "$PROBE" ] || skip_all "setid-probe not built"
PROBE=$(cd "$(dirname "$PROBE")" && pwd)/setid-probe
export SANDCAP_RUNTIME_DIR="$T/runtime"

# What each attempt must get. Anything else, a "done" above all, fails.
expect_outcomes() {
	cat <<'EOF'
chmod refused EPERM
chmod-high-bits refused EPERM
chmod-setgid refused EPERM
chmod-setuid refused EPERM
chmod-plus-x ok
chmod-sticky ok
fchmod refused EPERM
fchmod-plain ok
fchmodat refused EPERM
fchmodat-plain ok
fchmodat2 refused EPERM
fchmodat2-empty-path refused EPERM
open refused EPERM
openat refused EPERM
creat refused EPERM
openat2 refused ENOSYS
openat-plain ok
open-read-stray-mode ok
openat-write-stray-mode ok
tmpfile-open refused EPERM
tmpfile-fchmod refused EPERM
tmpfile-link ok
mkdir refused EPERM
mkdirat refused EPERM
mkdir-plain ok
mknod refused EPERM
mknod-type-0 refused EPERM
mknodat refused EPERM
mknodat-fifo refused EPERM
mknodat-plain ok
setxattr-capability refused EPERM
link-existing refused EXDEV
io_uring_setup refused EPERM
EOF
}

# A root-owned grant, as a project folder or a volume is.
new_grant() {
	rm -rf "$T/$1"
	mkdir -p "$T/$1"
	chown root:root "$T/$1"
	chmod 755 "$T/$1"
	echo "$T/$1"
}

# The fs.denied records of LOG as "op mode path" lines.
denied_of() {
	python3 - "$1" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["event"] == "fs.denied":
        d = r["data"]
        print(d.get("op"), d.get("mode"), d.get("reason"), d.get("errno"), d.get("path"))
EOF
}

# judge HOW GRANT OUT LOG [ONE [VERIFY]]: the host-side checks after one way
# in. With ONE, the probe's lines are one check each; else one check for
# all. VERIFY: the log as written, when LOG is a copy with paths renamed.
judge() {
	local how=$1 g=$2 out=$3 log=$4 one=${5:-} vlog=${6:-$4} line name want got
	if [ -n "$one" ]; then
		while IFS= read -r line; do
			name=${line%% *}
			want=${line#* }
			got=$(grep -m1 "^$name " <<<"$out")
			got=${got#* }
			if [ "$name" = link-existing ] && [ "$got" = none ]; then
				skip "$how: $name" "no setuid program in the image"
				continue
			fi
			expect_eq "$how: $name" "$got" "$want"
		done < <(expect_outcomes)
	else
		got=$(grep -v '^link-existing none$' <<<"$out")
		want=$(expect_outcomes)
		[[ $out == *"link-existing none"* ]] && want=$(grep -v '^link-existing ' <<<"$want")
		expect_eq "$how: every attempt answered as expected" "$got" "$want"
	fi
	expect_eq "$how: find GRANT -perm /6000 finds nothing on the host" \
		"$(find "$g" -perm /6000 -printf '%m %p\n')" ""
	expect_eq "$how: the files and directories are root's on the host (the grant's owner)" \
		"$(find "$g" -mindepth 1 ! -user root -printf '%u %p\n')" ""
	expect_eq "$how: ordinary modes were set (chmod 1755, fchmod 700, fchmodat 750, mkdir 755, openat 755)" \
		"$(stat -c '%a' "$g/chmod" "$g/fchmod" "$g/fchmodat" "$g/mkdir-plain" "$g/plain" | tr '\n' ' ')" \
		"1755 700 750 755 755 "
	check "$how: the O_TMPFILE linked in with an ordinary mode" test -f "$g/tmpfile-link"
	check "$how: no security.capability on the host" \
		sh -c "! getfattr -n security.capability '$g/fcaps' 2>/dev/null | grep -q capability"
	local d
	d=$(denied_of "$log")
	local missing="" c
	for c in "chmod 6755 setid EPERM $g/chmod" "chmod 4755 setid EPERM $g/chmod" \
		"chmod 2755 setid EPERM $g/chmod" "fchmod 6755 setid EPERM $g/fchmod" \
		"fchmodat 6755 setid EPERM $g/fchmodat" "fchmodat2 6755 setid EPERM $g/fchmodat2" \
		"open 6755 setid EPERM $g/open" "openat 6755 setid EPERM $g/openat" \
		"creat 6755 setid EPERM $g/creat" "mkdir 6755 setid EPERM $g/mkdir" \
		"mkdirat 6755 setid EPERM $g/mkdirat" "mknod 6755 setid EPERM $g/mknod" \
		"mknodat 6755 setid EPERM $g/mknodat" "mknodat 2644 setid EPERM $g/fifo" \
		"openat 6755 setid EPERM $g/." "fchmod 6755 setid EPERM $g/tmpfile-fchmod"; do
		# the grant is at the same path inside; an O_TMPFILE's fd names "/#ino (deleted)"
		if [[ $c == *tmpfile-fchmod ]]; then
			grep -q "^fchmod 6755 setid EPERM $g/#[0-9]* (deleted)$" <<<"$d" || missing="$missing [$c]"
		else
			grep -qxF "$c" <<<"$d" || missing="$missing [$c]"
		fi
	done
	expect_eq "$how: each refusal is an fs.denied record (op, mode, reason, errno, path)" "${missing# }" ""
	expect_eq "$how: fchmodat2 with AT_EMPTY_PATH is recorded with its fd's path" \
		"$(grep -cxF "fchmodat2 6755 setid EPERM $g/fchmodat2" <<<"$d")" 2
	expect_eq "$how: the log verifies" "$("$SANDCAP" audit verify "$vlog" >/dev/null 2>&1; echo $?)" 0
}

# ---- sandcap run ----
G=$(new_grant run)
policy run "{\"version\": 1, \"fs\": {\"grants\": [
	{\"path\": \"$(dirname "$PROBE")\", \"mode\": \"ro\"}, {\"path\": \"$G\", \"mode\": \"rw\"}]}}"
out=$("$SANDCAP" run --quiet --policy "$T/run.json" -- "$PROBE" "$G" 2>&1)
log=$(ls -t "$SANDCAP_STATE_DIR"/audit/*.jsonl | head -1)
judge "run" "$G" "$out" "$log" one
# fs.write records carry the mode the file has (octal)
modes=$(python3 - "$log" "$G" <<'EOF'
import json, sys
last = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["event"] == "fs.write" and r["data"].get("op") != "delete":
        last[r["data"]["path"]] = r["data"].get("mode")
g = sys.argv[2]
print(last.get(g + "/plain"), last.get(g + "/chmod"), last.get(g + "/fchmod"), last.get(g + "/mkdir-plain"))
EOF
)
expect_eq "run: fs.write records carry the file's final mode" "$modes" "0755 1755 0700 0755"

# The same with the listing fallback (docs/audit.md, section 8): the mode after the run.
G4=$(new_grant listing)
policy listing "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$G4\", \"mode\": \"rw\"}]}}"
SANDCAP_FSWATCH=listing "$SANDCAP" run --quiet --policy "$T/listing.json" -- \
	sh -c "cd '$G4' && echo x > f && chmod 640 f && mkdir d && chmod 711 d" >/dev/null 2>&1
log=$(ls -t "$SANDCAP_STATE_DIR"/audit/*.jsonl | head -1)
modes=$(python3 - "$log" "$G4" <<'EOF'
import json, sys
m = {r["data"]["path"]: r["data"].get("mode") for r in map(json.loads, open(sys.argv[1]))
     if r["event"] == "fs.write"}
print(m.get(sys.argv[2] + "/f"), m.get(sys.argv[2] + "/d"))
EOF
)
expect_eq "run, listing fallback: fs.write records carry the final mode" "$modes" "0640 0711"

# An ordinary build-and-install keeps working: cc, chmod +x, install -m 755.
G2=$(new_grant build)
policy build "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$G2\", \"mode\": \"rw\"}]}}"
out=$("$SANDCAP" run --quiet --policy "$T/build.json" -- sh -c "cd '$G2' && printf '#!/bin/sh\necho hi\n' > s &&
	chmod +x s && ./s && install -m 755 s s2 && ./s2 && chmod u+s s 2>&1; cp -p /usr/bin/passwd p 2>/dev/null; echo end" 2>&1)
expect_match "run: chmod +x and install -m 755 work" "$out" $'^hi\nhi\n'
expect_match "run: chmod u+s is refused as EPERM" "$out" 'Operation not permitted'
expect_eq "run: nothing setid after chmod u+s and cp -p of a setuid program" \
	"$(find "$G2" -perm /6000 -printf '%p\n')" ""

# audit.denied_syscalls off: still refused, without a record.
G3=$(new_grant quiet)
policy quiet "{\"version\": 1, \"audit\": {\"denied_syscalls\": false}, \"fs\": {\"grants\": [
	{\"path\": \"$(dirname "$PROBE")\", \"mode\": \"ro\"}, {\"path\": \"$G3\", \"mode\": \"rw\"}]}}"
out=$("$SANDCAP" run --quiet --policy "$T/quiet.json" -- "$PROBE" "$G3" 2>&1)
expect_eq "run, audit.denied_syscalls off: find -perm /6000 finds nothing" \
	"$(find "$G3" -perm /6000 -printf '%p\n')" ""
expect_match "run, audit.denied_syscalls off: refused with EPERM" "$out" 'chmod refused EPERM'

# ---- a session: sandcap exec ----
G=$(new_grant session)
policy session "{\"version\": 1, \"fs\": {\"grants\": [
	{\"path\": \"$(dirname "$PROBE")\", \"mode\": \"ro\"}, {\"path\": \"$G\", \"mode\": \"rw\"}]}}"
sout=$("$SANDCAP" session start --policy "$T/session.json" --name setid --json 2>&1)
slog=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["audit"])' "$sout" 2>/dev/null)
out=$("$SANDCAP" exec setid -- "$PROBE" "$G" 2>&1)
"$SANDCAP" session stop setid >/dev/null 2>&1
judge "session exec" "$G" "$out" "$slog"

# ---- the API, as uid 65534 ----
command -v curl >/dev/null || skip "api" "needs curl"
if command -v curl >/dev/null; then
	G=$(new_grant api)
	BIN=$(binaries_for_others "$T/bin")
	mkdir -p "$T/pbin" && cp "$PROBE" "$T/pbin/" && chmod 755 "$T/pbin" "$T/pbin/setid-probe"
	policy offered "{\"version\": 1, \"name\": \"offered\", \"limits\": {\"wall\": \"5m\"}, \"fs\": {\"grants\": [
		{\"path\": \"$T/pbin\", \"mode\": \"ro\"}, {\"path\": \"$G\", \"mode\": \"rw\"}]}}"
	S=$T/api.sock
	SANDCAP=$BIN "$BIN" serve --socket "$S" --group nogroup --policy "$T/offered.json" 2>"$T/serve.log" &
	daemon=$!
	for _ in $(seq 200); do [ -S "$S" ] && break; sleep 0.1; done
	as65534() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	echo '{"policy": "offered"}' >"$T/create.json"
	body=$(as65534 curl -s --unix-socket "$S" -X POST --data-binary @"$T/create.json" http://sandcap/v1/sessions)
	id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$body" 2>/dev/null)
	alog=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["audit"])' "$body" 2>/dev/null)
	printf '{"argv": ["%s", "%s"]}' "$T/pbin/setid-probe" "$G" >"$T/exec.json"
	out=$(as65534 curl -s --unix-socket "$S" -X POST --data-binary @"$T/exec.json" \
		"http://sandcap/v1/sessions/$id/exec" | python3 -c 'import base64,json,sys
print("".join(base64.b64decode(o["data"]).decode() for o in map(json.loads, sys.stdin) if o.get("stream") == "stdout"), end="")')
	as65534 curl -s --unix-socket "$S" -X DELETE "http://sandcap/v1/sessions/$id" >/dev/null
	kill "$daemon" 2>/dev/null
	wait "$daemon" 2>/dev/null
	judge "api (uid 65534)" "$G" "$out" "$alog"
fi

# ---- sandcap-runc: a volume over a busybox root ----
R=$B/sandcap-runc
BB=$(command -v busybox)
if [ -x "$R" ] && [ -n "$BB" ] && file -L "$BB" 2>/dev/null | grep -q 'statically linked'; then
	RT=$T/ocir
	trap '"$R" --root "$RT" delete --force setid-none >/dev/null 2>&1
		"$R" --root "$RT" delete --force setid-allow >/dev/null 2>&1; cleanup_dir' EXIT
	mkdir -p "$T/b/rootfs/bin" "$T/b/rootfs/proc" "$T/b/rootfs/dev" "$T/b/rootfs/tmp" "$T/b/rootfs/vol"
	cp "$BB" "$T/b/rootfs/bin/busybox"
	cp "$PROBE" "$T/b/rootfs/bin/setid-probe"
	(cd "$T/b" && "$R" spec)
	for prof in none allow; do
		G=$(new_grant "oci-$prof")
		python3 - "$T/b/config.json" "$G" "$prof" <<'EOF'
import json, sys
p, g, prof = sys.argv[1:]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/setid-probe", "/vol"]
c["mounts"] = [m for m in c["mounts"] if m["destination"] != "/vol"]
c["mounts"].append({"destination": "/vol", "type": "bind", "source": g, "options": ["rbind", "rw"]})
c["linux"].pop("seccomp", None)
if prof == "allow":
    # a profile of the spec's own that allows everything: sandcap's filter still refuses
    c["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"]}
json.dump(c, open(p, "w"))
EOF
		out=$("$R" --root "$RT" run --bundle "$T/b" "setid-$prof" 2>&1)
		olog=$(ls -t "$SANDCAP_STATE_DIR"/audit/*.jsonl | head -1)
		"$R" --root "$RT" delete --force "setid-$prof" >/dev/null 2>&1
		# inside the container the volume is /vol: the records name that path
		out=$(sed "s|/vol|$G|g" <<<"$out")
		sed "s|\"/vol|\"$G|g" "$olog" >"$T/olog-$prof.jsonl"
		judge "sandcap-runc ($prof seccomp profile)" "$G" "$out" "$T/olog-$prof.jsonl" "" "$olog"
	done
else
	skip "sandcap-runc" "needs sandcap-runc and a static busybox"
fi
finish
