#!/usr/bin/env bash
# The first wall: filesystem view, identity, privileges, environment,
# network namespace and exit statuses, checked for their real effect.
. "$(dirname "$0")/lib.sh"
need_root

mkdir -p "$T/ro" "$T/rw" "$T/outside"
echo granted > "$T/ro/file"
echo host-only > "$T/outside/secret"
chown 4321:4321 "$T/rw"
ln -s "$T/outside" "$T/rw/link-out"
cp /usr/bin/id "$T/rw/suid-id" && chown 0:0 "$T/rw/suid-id" && chmod 4755 "$T/rw/suid-id"

policy base '{"version": 1}'
policy grants "{\"version\": 1, \"fs\": {\"grants\": [
  {\"path\": \"$T/ro\", \"mode\": \"ro\"},
  {\"path\": \"$T/rw\", \"mode\": \"rw\", \"at\": \"/work\"}], \"workdir\": \"/work\"}}"

# --- filesystem ---
out=$(sc grants cat "$T/ro/file" 2>&1)
expect_eq "granted ro file is readable" "$out" "granted"
out=$(sc grants sh -c "echo x > '$T/ro/file'" 2>&1)
expect_match "writing a ro grant fails with EROFS" "$out" "Read-only file system"
expect_eq "ro grant unchanged on the host" "$(cat "$T/ro/file")" "granted"

sc grants sh -c 'echo written > /work/new-file' >/dev/null 2>&1
expect_eq "rw grant is writable and lands on the host" "$(cat "$T/rw/new-file" 2>/dev/null)" "written"
expect_eq "file written in rw grant keeps the grant owner" "$(stat -c %u:%g "$T/rw/new-file" 2>/dev/null)" "4321:4321"

out=$(sc grants cat "$T/outside/secret" 2>&1)
expect_match "host file outside grants invisible by absolute path" "$out" "No such file"
out=$(sc grants sh -c "cat /proc/1/root$T/outside/secret; cat /proc/self/root/../$T/outside/secret" 2>&1)
expect_no_match "host file invisible via /proc/1/root and /proc/self/root/.." "$out" "host-only"
out=$(sc grants cat /work/link-out/secret 2>&1)
expect_no_match "symlink planted in a rw grant leads nowhere outside" "$out" "host-only"
out=$(sc grants sh -c 'ln -s / /work/rootlink && cat /work/rootlink/'"$T"'/outside/secret' 2>&1)
expect_no_match "symlink created inside to / stays in the sandbox view" "$out" "host-only"

out=$(sc base sh -c 'cat /etc/shadow; ls /etc/ssh' 2>&1)
expect_match "/etc/shadow and /etc/ssh not visible" "$out" "shadow: No such file.*ssh.*No such file"
out=$(sc base sh -c 'hostname; cat /etc/hostname; cat /proc/sys/kernel/hostname' 2>&1)
expect_eq "hostname is the sandbox's, never the host's" "$out" "sandbox
sandbox
sandbox"
out=$(sc base sh -c 'cat /etc/passwd' 2>&1)
expect_no_match "host passwd not visible" "$out" "^root:x:0:0:root:/root:/bin/bash"
out=$(sc base sh -c 'echo x > /usr/x; echo y > /etc/x; echo z > /x' 2>&1)
expect_match "runtime and root are read-only" "$out" "Read-only.*Read-only.*Read-only"

# --- processes ---
bash -c "exec -a sandcap-marker-$$ sleep 300" &
marker=$!
sleep 0.2
check "host marker process exists on the host" [ -n "$(pgrep -f "sandcap-marker-$$")" ]
out=$(sc base sh -c 'for f in /proc/[0-9]*/cmdline; do tr "\0" " " < $f; echo; done' 2>&1)
kill $marker
expect_no_match "no host process visible" "$out" "sandcap-marker"
npids=$(sc base sh -c 'ls -d /proc/[0-9]* | wc -l' 2>&1)
check "only the sandbox's own processes in /proc ($npids)" [ "$npids" -le 4 ]

# --- privileges ---
out=$(sc base grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status 2>&1 | tr -s '\t' ' ')
expect_eq "no capabilities in any set, no_new_privs" "$out" "CapInh: 0000000000000000
CapPrm: 0000000000000000
CapEff: 0000000000000000
CapBnd: 0000000000000000
CapAmb: 0000000000000000
NoNewPrivs: 1"
out=$(sc grants /work/suid-id -u 2>&1)
expect_eq "setuid-root binary in a grant does not give euid 0" "$out" "1000"
out=$(sc base sh -c 'id -u; id -g' 2>&1)
expect_eq "agent runs as uid/gid 1000 inside" "$out" "1000
1000"
host_uid=$(sc base sh -c 'cat /proc/self/uid_map' 2>&1 | awk '$1 == 1000 {print $2}')
check "agent's host uid is unprivileged ($host_uid)" [ "${host_uid:-0}" -ge 1073741824 ]
out=$(sc base sh -c 'cat /proc/self/uid_map' 2>&1 | awk '$2 == 0')
expect_eq "nothing inside maps to host root" "$out" ""

# The agent's ids are the policy's (identity.uid/gid): 0 is root by name
# only, the same unprivileged host id, no capability after any exec.
for u in 0 65532; do
	policy "id$u" "{\"version\": 1, \"identity\": {\"uid\": $u, \"gid\": $u}, \"fs\": {\"grants\": [
  {\"path\": \"$T/rw\", \"mode\": \"rw\", \"at\": \"/work\"}]}}"
	out=$(sc "id$u" sh -c 'id -u; id -g; grep -E "^Cap(Inh|Prm|Eff|Bnd|Amb)" /proc/self/status | grep -vc "	0000000000000000$"; echo x > /work/by-'$u'; echo y > /usr/x' 2>&1)
	expect_match "identity.uid $u: the agent runs as uid and gid $u, no capability in any set" "$out" "^$u"$'\n'"$u"$'\n'0$'\n'
	expect_match "identity.uid $u: the runtime still read-only" "$out" 'Read-only file system'
	expect_eq "identity.uid $u: its file in a rw grant keeps the grant's owner" "$(stat -c %u:%g "$T/rw/by-$u" 2>/dev/null)" "4321:4321"
	map=$(sc "id$u" cat /proc/self/uid_map 2>&1)
	host_uid=$(printf '%s\n' "$map" | awk -v u=$u '$1 == u {print $2}')
	check "identity.uid $u: its host uid is unprivileged ($host_uid)" [ "${host_uid:-0}" -ge 1073741824 ]
	expect_eq "identity.uid $u: nothing inside maps to host root" "$(printf '%s\n' "$map" | awk '$2 == 0')" ""
done

# --- environment ---
out=$(FAKE_SECRET=hunter2-launcher sc base sh -c 'env; tr "\0" "\n" < /proc/1/environ' 2>&1)
expect_no_match "launcher's environment is absent" "$out" "hunter2"
out=$(sc base sh -c 'env | cut -d= -f1 | sort | tr "\n" " "' 2>&1)
expect_eq "environment holds only the documented variables" "$out" "HOME PATH PWD TMPDIR USER "

# --- file descriptors ---
exec 7>"$T/fd7"
out=$(sc base sh -c 'ls /proc/self/fd' 2>&1 | tr '\n' ' ')
exec 7>&-
expect_eq "no fd but 0-2 crosses (plus the shell's own)" "$out" "0 1 2 3 "

# --- network ---
python3 - "$T/port" <<'PY' &
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(5)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(20)
try:
    c, _ = s.accept(); open(sys.argv[1] + ".hit", "w").write("connected")
except Exception:
    pass
PY
server=$!
for _ in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
port=$(cat "$T/port")
out=$(sc base python3 -c "
import socket
for addr in [('127.0.0.1', $port), ('10.255.255.1', 80)]:
    try:
        socket.create_connection(addr, timeout=2); print('CONNECTED', addr)
    except OSError as e:
        print('refused', e.errno)
" 2>&1)
kill $server 2>/dev/null; wait $server 2>/dev/null
expect_no_match "host loopback and outside addresses unreachable" "$out" "CONNECTED"
check "host listener saw no connection" [ ! -e "$T/port.hit" ]
out=$(sc base sh -c 'ls /sys/class/net 2>/dev/null || cat /proc/net/dev' 2>&1)
expect_no_match "only lo in the network namespace" "$out" "eth|ens|veth|wlan"

# --- /tmp ---
sc base sh -c "echo x > /tmp/marker-$$" >/dev/null 2>&1
out=$(sc base sh -c "ls /tmp/marker-$$" 2>&1)
expect_match "/tmp files are gone after exit" "$out" "No such file"
check "the sandbox's /tmp never touched the host's" [ ! -e "/tmp/marker-$$" ]

# --- exit statuses ---
sc base true; expect_eq "exit 0" "$?" 0
sc base sh -c 'exit 3'; expect_eq "exit 3 passes through" "$?" 3
sc base sh -c 'kill -TERM $$'; expect_eq "signal N gives 128+N" "$?" 143
sc base /etc/hosts 2>/dev/null; expect_eq "not executable gives 126" "$?" 126
sc base /no/such/binary 2>/dev/null; expect_eq "not found gives 127" "$?" 127
sc base no-such-command 2>/dev/null; expect_eq "a name not on PATH gives 127" "$?" 127
printf 'echo "plain script: $1"\n' > "$T/ro/noshebang"
chmod +x "$T/ro/noshebang"
out=$(sc grants "$T/ro/noshebang" arg 2>&1)
expect_eq "a script without #! runs through /bin/sh, as in a shell" "$out" "plain script: arg"
"$SANDCAP" run --quiet --policy "$T/missing.json" -- true 2>/dev/null; expect_eq "missing policy gives 125" "$?" 125
"$SANDCAP" run --quiet --policy "$T/base.json" 2>/dev/null; expect_eq "missing command gives 125" "$?" 125
policy badgrant "{\"version\": 1, \"fs\": {\"grants\": [{\"path\": \"$T/nope\", \"mode\": \"ro\"}]}}"
out=$("$SANDCAP" run --quiet --policy "$T/badgrant.json" -- true 2>&1); rc=$?
expect_eq "non-existent grant gives 125" "$rc" 125
expect_match "error names file and key" "$out" "badgrant.json: \\\$\\.fs\\.grants\\[0\\]\\.path"
out=$(echo '{"version": 1, "fs": {"grants": [{"path": "/tmp", "mode": "rwx"}]}}' > "$T/rwx.json"; "$SANDCAP" run --policy "$T/rwx.json" -- true 2>&1)
expect_eq "bad mode: exact message" "$out" "sandcap: $T/rwx.json: \$.fs.grants[0].mode: expected one of \"ro\", \"rw\", \"cow\", got \"rwx\""

policy spawn '{"version": 1, "spawn": {"max_depth": 1}}'
out=$("$SANDCAP" run --quiet --policy "$T/spawn.json" -- sh -c 'test -S /run/sandcap/spawn.sock && echo socket' 2>&1); rc=$?
if [[ $out == *"cgroup v1 only"* ]]; then
	expect_eq "spawn on cgroup v2 is refused, saying why" "$rc" 125
else
	expect_eq "spawn gives the delegation socket (tests/integration/test-spawn.sh)" "$rc:$out" "0:socket"
fi

# --- stdio and signals ---
out=$(echo piped-in | sc base cat)
expect_eq "stdin and stdout pass through" "$out" "piped-in"
if command -v script >/dev/null; then
	# A terminal on 0-2: the agent gets a pty of its own devpts, never the
	# host's (the same /dev/pts/N name, another devpts instance: st_dev).
	out=$( (sleep 0.5; printf 'typed-line\n') | timeout 30 script -qec "stat -L -c %d \$(tty); '$SANDCAP' run --quiet --policy '$T/base.json' -- sh -c 'test -t 0 && echo INTERACTIVE; read x; echo GOT:\$x; stat -L -c %d /proc/self/fd/0'" /dev/null | tr -d '\r')
	host_tty=$(echo "$out" | head -1)
	inner_tty=$(echo "$out" | tail -1)
	expect_match "interactive use works through the pty relay" "$out" "INTERACTIVE.*GOT:typed-line"
	check "the sandbox's terminal (devpts $inner_tty) is not the host's ($host_tty)" [ -n "$inner_tty" -a "$inner_tty" != "$host_tty" ]
fi
"$SANDCAP" run --quiet --policy "$T/base.json" -- sh -c 'trap "" INT; sleep 30' &
pid=$!
sleep 0.5
kill -INT $pid
start=$(date +%s%N)
wait $pid
rc=$?
elapsed=$((($(date +%s%N) - start) / 1000000))
check "Ctrl-C stops the whole sandbox even if the agent ignores it (${elapsed} ms, rc $rc)" [ "$elapsed" -lt 6000 ]

finish
