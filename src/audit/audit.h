/* SPDX-License-Identifier: MIT */
/*
 * The append-only, hash-chained audit log (docs/architecture.md; the record
 * format, the chain, the seal and the event catalogue are in docs/audit.md).
 * hash = SHA-256(prev_hash_bytes || line_without_hash_field).
 * Only the supervisor writes. Library code: never prints; errors are -errno.
 * Not thread-safe: one au_log belongs to one thread (the supervisor's loop).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/plan.h"

#define AU_HASH_BYTES 32u
#define AU_HASH_HEX   64u
/* One record line, newline included. Emitters bound their fields so that a
 * record stays far below this; a larger one is replaced (see au_emit). */
#define AU_LINE_MAX	  (1u << 20)
#define AU_SANDBOX_ID_MAX 128u /* [A-Za-z0-9._:-]+ */
#define AU_EVENT_MAX	  64u  /* [a-z0-9._]+ */
#define AU_KEY_MIN	  16u  /* HMAC keys shorter than this are refused */
#define AU_KEY_MAX	  1024u
#define AU_KEY_FILE_BYTES 32u /* a key file holds exactly this many raw bytes */
#define AU_SEAL_EVENT	  "audit.seal"

typedef struct au_log au_log;

/*
 * Creates the log at path: O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC|O_NOFOLLOW,
 * mode 0600, and takes an exclusive flock() on it for the log's lifetime.
 * One log per run: a file that already has content is refused (-EEXIST),
 * never appended to, because a second chain in one file could not be
 * verified as one. Also -ELOOP (symlink), -EINVAL (not a regular file, bad
 * sandbox id, key length outside [AU_KEY_MIN, AU_KEY_MAX]), -EBUSY (another
 * writer holds the lock), -EPERM (an existing empty file owned by someone
 * else). key may be NULL (unkeyed seal); it is copied and wiped on close.
 */
int au_open(const char *path, const uint8_t *key, size_t key_len, const char *sandbox_id,
	    audit_fsync mode, au_log **ret);
/*
 * Appends one record with one write(). Takes ownership of data (a JSON
 * object; NULL means {}), also on failure. event must match [a-z0-9._]+ and
 * must not be "audit.seal". Returns 0, or 1 when the record would have
 * exceeded AU_LINE_MAX and was written with data {"oversized": true,
 * "bytes": N} instead. -EINVAL (bad event or data), -EBADFD (already
 * sealed), or the write error; after a failed write the file is truncated
 * back to its last complete record, and if that fails too the error sticks.
 * With AUDIT_FSYNC_ALWAYS every record is followed by fsync(); otherwise
 * the caller marks boundaries with au_sync() (the first also fsyncs the
 * directory), and au_seal() or au_close() make the last records durable:
 * sandbox.exit is followed directly by the seal, so one fsync serves both.
 */
int au_emit(au_log *log, const char *event, json_t *data);
/*
 * Appends an event received from a less-trusted peer (proxy worker, seccomp
 * listener): msg is one JSON object {"event": NAME, "data": {...}} of at
 * most AU_PEER_MSG_MAX bytes. allowed is a NULL-terminated list of event
 * names this peer may emit; an entry ending in '.' allows a family ("net.").
 * -EMSGSIZE, -EBADMSG (malformed), -EPERM (event not allowed, or
 * audit.seal), else as au_emit(). The caller still rate-limits its peers.
 */
#define AU_PEER_MSG_MAX (64u << 10)
int au_emit_untrusted(au_log *log, const char *msg, size_t len, const char *const *allowed);
/* Writes the final audit.seal record: {"final_hash", "hmac" (keyed only),
 * "keyed", "records"}, then fsyncs. Nothing may follow (-EBADFD). */
int au_seal(au_log *log);
int au_sync(au_log *log);
/* A boundary whose fsync the caller makes, so that other threads may append
 * meanwhile (under the caller's lock): *ret_fd is a dup of the log's fd and,
 * at the first boundary, *ret_dirfd the directory's fd (else -1). The
 * caller fsyncs and closes both. Records appended before this call are
 * durable once those fsyncs return. */
int au_sync_detach(au_log *log, int *ret_fd, int *ret_dirfd);
/* Hex of the last record's hash (after au_seal: of the seal record), or of
 * the genesis value before the first record. The external anchor printed in
 * the run's summary; `sandcap audit verify` prints the same value. */
const char *au_last_hash(const au_log *log);
uint64_t au_records(const au_log *log); /* records written so far */
/* NULL-safe, returns NULL; does not seal, but fsyncs unsynced records. */
au_log *au_close(au_log *log);

/*
 * A JSON string for bytes that come from the sandbox (argv, paths): valid
 * UTF-8 is kept, every invalid byte becomes the four characters \xNN, and
 * at most max_bytes of input are taken (then "..." is appended). Never
 * NULL unless out of memory.
 */
json_t *au_str(const char *bytes, size_t len, size_t max_bytes);

/* Caps for strings from the sandbox (docs/audit.md, event catalogue): a
 * record built within them stays far below AU_LINE_MAX. */
#define AU_STR_MAX_BYTES 4096u /* a path, host or URL path */
#define AU_ARGV_MAX	 64u   /* argv elements kept */
#define AU_ARG_MAX_BYTES 1024u /* bytes kept of one argv element */

/*
 * argv as a JSON array for proc.exec: at most AU_ARGV_MAX elements (then a
 * last element "...(N more)"), each through au_str(..., AU_ARG_MAX_BYTES).
 * NULL only when out of memory.
 */
json_t *au_argv(const char *const *argv, size_t argc);

/*
 * Reads an HMAC key file: exactly AU_KEY_FILE_BYTES raw bytes, a regular
 * file not readable or writable by group or others (-EACCES otherwise),
 * not a symlink (-ELOOP). -EINVAL for a wrong size.
 */
int au_key_load(const char *path, uint8_t ret_key[AU_KEY_FILE_BYTES]);

typedef struct au_verify_info {
	uint64_t records;		     /* lines, the seal included */
	bool sealed;			     /* always true when au_verify returns 0 */
	bool keyed;			     /* the seal carries an HMAC */
	bool hmac_checked;		     /* ... and it was verified with the key */
	char sandbox[AU_SANDBOX_ID_MAX + 1]; /* the sandbox id of every record */
	char last_hash[AU_HASH_HEX + 1];     /* = au_last_hash() after au_seal() */
	char first_ts[32];
	char last_ts[32];
} au_verify_info;

/* Verifies a whole log in constant memory. 0 if intact; -EBADMSG with the
 * 1-based line and reason filled otherwise (a log that ends without its
 * seal fails with "log not sealed (cut off?)", keyed or not). With a key,
 * the seal must carry an HMAC of the final hash under that key. -EIO (and a
 * reason) on a read error; -EINVAL for a key of a bad length. */
int au_verify(FILE *in, const uint8_t *key, size_t key_len, size_t *reterr_line,
	      char *reterr_reason, size_t reason_len);
/* The same, also describing an intact log in ret_info (may be NULL). */
int au_verify_ex(FILE *in, const uint8_t *key, size_t key_len, au_verify_info *ret_info,
		 size_t *reterr_line, char *reterr_reason, size_t reason_len);

/* Reconstructs what happened: plain text or one JSON object. Streams the
 * log in bounded memory and checks the chain on the way (without a key);
 * a broken or unsealed chain is stated in the report, not an error.
 * Returns 0 (intact and sealed), 1 (reported, but the chain is not intact)
 * or -errno for I/O errors on in or out. */
int au_report(FILE *in, FILE *out, bool json);
