#!/bin/sh
# Filesystem scenario agent: tries what it was granted and what it was not.
# Prints one line per attempt: "<ALLOWED|REFUSED> <what>: <detail>".
try() {
	what=$1
	shift
	if out=$("$@" 2>&1); then
		echo "ALLOWED $what: $(echo "$out" | head -c 60 | tr '\n' ' ')"
	else
		echo "REFUSED $what: $(echo "$out" | tail -n1 | sed 's/^.*: //')"
	fi
}
try "read granted /data/input.txt" cat /data/input.txt
try "read host file $HOST_SECRET" cat "$HOST_SECRET"
try "read /etc/shadow" cat /etc/shadow
try "read the host via /proc/1/root" cat "/proc/1/root$HOST_SECRET"
try "write granted /work/result.txt" sh -c 'echo "summary: $(wc -w < /data/input.txt) words" > /work/result.txt'
try "write read-only grant /data/input.txt" sh -c 'echo tampered > /data/input.txt'
try "write outside the grants /usr/bin/evil" sh -c 'echo x > /usr/bin/evil'
try "escape with a symlink in /work" sh -c 'ln -sf / /work/root && cat "/work/root$HOST_SECRET"'
