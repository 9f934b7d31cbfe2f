#!/usr/bin/env bash
# sandcap audit prune: the per-run logs under the state directory older than
# the given age are removed, sealed or crashed; the log of a running sandbox
# (its writer holds the flock) is kept however old; young logs, symlinks and
# other files are left alone; --dry-run removes nothing; a bad age is refused.
. "$(dirname "$0")/lib.sh"
need_root

A=$SANDCAP_STATE_DIR/audit
policy p '{"version": 1}'
# newlog: runs a sandbox and prints the path of its new log
newlog() {
	local before
	before=$(ls "$A" 2>/dev/null)
	"$SANDCAP" run --quiet --policy "$T/p.json" -- /bin/true >/dev/null 2>&1
	comm -13 <(echo "$before") <(ls "$A") | sed "s#^#$A/#"
}
old=$(newlog)
young=$(newlog)
crashed=$A/sc-crashed.jsonl
head -n -1 "$old" > "$crashed" # cut before the seal: as a killed supervisor leaves it
touch -d '40 days ago' "$old" "$crashed"
echo keep > "$T/target.jsonl" && touch -d '40 days ago' "$T/target.jsonl"
ln -s "$T/target.jsonl" "$A/sc-link.jsonl"
echo notes > "$A/notes.txt" && touch -d '40 days ago' "$A/notes.txt"

# A running sandbox's log, older than the cutoff on disk: still locked.
before=$(ls "$A")
"$SANDCAP" run --quiet --policy "$T/p.json" -- /bin/sleep 3 >/dev/null 2>&1 &
runner=$!
running=
for _ in $(seq 50); do
	running=$(comm -13 <(echo "$before") <(ls "$A") | sed "s#^#$A/#")
	[ -n "$running" ] && grep -q '"event":"sandbox.start"' "$running" && break
	sleep 0.1
done
touch -d '40 days ago' "$running"

out=$("$SANDCAP" audit prune --older-than 30d --dry-run 2>&1)
expect_match "dry run: the sealed old log would go" "$out" "would remove $old \(sealed, [0-9]+ bytes, last written 40 days ago\)"
expect_match "dry run: the crashed one too, said to be unsealed" "$out" "would remove $crashed \(unsealed"
check "dry run removes nothing" [ -f "$old" -a -f "$crashed" ]

out=$("$SANDCAP" audit prune --older-than 30d 2>&1)
rc=$?
expect_eq "prune exits 0" "$rc" 0
expect_match "the sealed old log is listed as removed" "$out" "removed $old \(sealed"
check "and is gone" [ ! -e "$old" ]
check "the crashed old log is gone" [ ! -e "$crashed" ]
expect_match "the running sandbox's log is kept, and said so" "$out" "kept $running \(a running sandbox writes it\)"
check "and is there" [ -f "$running" ]
check "the young log is kept" [ -f "$young" ]
check "a symlink named .jsonl is left alone, and its target" [ -L "$A/sc-link.jsonl" -a -f "$T/target.jsonl" ]
check "a file that is not a log is left alone" [ -f "$A/notes.txt" ]
expect_match "the total" "$out" "removed 2 logs \([0-9]+ bytes\) older than 30d; kept 1 of running sandboxes, 1 younger"
wait $runner
check "the kept log was finished by its run and verifies" "$SANDCAP" audit verify "$running"

touch -d '40 days ago' "$running"
out=$("$SANDCAP" audit prune --older-than 30d --dir "$A" 2>&1)
expect_match "--dir: once its run ended (and the log aged), it goes" "$out" "removed $running \(sealed"

for bad in 30x 30 -1d 0d "" 99999999999999999999d; do
	out=$("$SANDCAP" audit prune --older-than "$bad" 2>&1)
	rc=$?
	expect_eq "--older-than '$bad' is refused with exit 2" "$rc" 2
	expect_match "with a message naming it" "$out" "--older-than '$bad': expected a positive age with a unit"
done
out=$("$SANDCAP" audit prune 2>&1)
expect_eq "no --older-than: exit 2" "$?" 2
expect_match "and says it is required" "$out" "--older-than AGE is required"
out=$("$SANDCAP" audit prune --older-than 1d --dir "$T/nonexistent" 2>&1)
expect_eq "a directory that cannot be read: exit 2" "$?" 2
expect_match "named in the error" "$out" "$T/nonexistent: No such file or directory"
out=$(SANDCAP_STATE_DIR=$T/fresh-state "$SANDCAP" audit prune --older-than 1d 2>&1)
expect_eq "a state directory no run has logged to yet: nothing to prune, exit 0" \
	"$? $out" "0 removed 0 logs (0 bytes) older than 1d; kept 0 of running sandboxes, 0 younger"
finish
