/* SPDX-License-Identifier: MIT */
/*
 * The append-only, hash-chained audit log (docs/architecture.md; the record
 * format, the chain, the seal and the event catalogue are in docs/audit.md).
 * hash = SHA-256(prev_hash_bytes || line_without_hash_field).
 * Only the supervisor writes. Library code: never prints; errors are -errno.
 * Not thread-safe: one au_log belongs to one thread (the supervisor's loop).
 */
#pragma once

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "policy/plan.h"

#define AU_HASH_BYTES 32u
#define AU_HASH_HEX   64u
/* One record line, newline included. Emitters bound their fields so that a
 * record stays far below this; a larger one is replaced (see au_emit). */
#define AU_LINE_MAX (1u << 20)
/* The most `audit report`, `verify` and `export` read of one log: an endless
 * input (a pipe that never ends) must end, with an error. */
#define AU_LOG_MAX_LINES  (1u << 24)
#define AU_LOG_MAX_BYTES  (16ull << 30)
#define AU_SANDBOX_ID_MAX 128u /* [A-Za-z0-9._:-]+ */
#define AU_EVENT_MAX	  64u  /* [a-z0-9._]+ */
#define AU_KEY_MIN	  16u  /* HMAC keys shorter than this are refused */
#define AU_KEY_MAX	  1024u
#define AU_KEY_FILE_BYTES 32u /* a key file holds exactly this many raw bytes */
#define AU_SEAL_EVENT	  "audit.seal"

typedef struct au_log au_log;

/* Written only by the writer: the record of a write that failed. */
#define AU_ERROR_EVENT "audit.error"
/*
 * Space the file keeps allocated beyond its last record (fallocate,
 * FALLOC_FL_KEEP_SIZE), for the records of the stop path: audit.error, up
 * to four limit.hit, sandbox.exit (the refusal's carries a 512-byte detail)
 * and the seal add up to about 5 KiB at their largest; four pages leave
 * room. An append into allocated space does not fail with ENOSPC (measured
 * on tmpfs and ext4, docs/audit.md).
 */
#define AU_RESERVE_BYTES (16u << 10)
/* What stays allocated behind a record of the stop path: the seal. Its
 * line is at most about 640 bytes (a 128-byte sandbox id, 20-digit seq). */
#define AU_SEAL_MAX_BYTES 1024u
/* Allocated ahead of need, so that most records cost no fallocate. */
#define AU_ALLOC_CHUNK (64u << 10)

/*
 * Creates the log at path: O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC|O_NOFOLLOW,
 * mode 0600, and takes an exclusive flock() on it for the log's lifetime.
 * Nothing but a regular file is opened: an existing path is looked at
 * with O_PATH first, so a FIFO, socket or device never blocks or acts.
 * One log per run: a file that already has content is refused (-EEXIST),
 * never appended to, because a second chain in one file could not be
 * verified as one. Also -ELOOP (symlink), -EINVAL (not a regular file,
 * bad sandbox id, key length outside [AU_KEY_MIN, AU_KEY_MAX]), -EBUSY (another writer holds the
 * lock), -EPERM (an existing empty file owned by someone else), -ENOSPC
 * (or -EDQUOT) when AU_RESERVE_BYTES cannot be allocated: a file it
 * created is removed again. key may be NULL (unkeyed seal); it is copied
 * and wiped on close.
 */
int au_open(const char *path, const uint8_t *key, size_t key_len, const char *sandbox_id,
	    audit_fsync mode, au_log **ret);
/*
 * Appends one record with one write(), into space allocated first with
 * AU_RESERVE_BYTES behind it. Takes ownership of data (a JSON object; NULL
 * means {}), also on failure. event must match [a-z0-9._]+ and must not be
 * audit.seal or audit.error. Returns 0, or 1 when the record would have
 * exceeded AU_LINE_MAX and was written with data {"oversized": true,
 * "bytes": N} instead. -EINVAL (bad event or data), -EBADFD (already
 * sealed), or the error of the allocation, of building the line or of the
 * write: the record is not in the file, and the log is failed from then
 * on (au_failed()): every
 * later au_emit() returns that error, only au_emit_failure(),
 * au_emit_final() and au_seal() still write, into the reserve. After a
 * failed write the file is truncated back to its last complete record, and
 * if that fails too the error sticks (nothing is written any more).
 * With AUDIT_FSYNC_ALWAYS every record is followed by fsync(); otherwise
 * the caller marks boundaries with au_sync_detach() (the first also fsyncs
 * the directory), and au_seal() or au_close() make the last records
 * durable: sandbox.exit is followed directly by the seal, so one fsync
 * serves both.
 */
int au_emit(au_log *log, const char *event, json_t *data);
/* A record of the stop path (limit.hit and sandbox.exit at the end):
 * written also when the log has failed, into the reserve; only room for
 * the seal must stay behind it. Otherwise as au_emit(): one that cannot
 * be written fails the log too. */
int au_emit_final(au_log *log, const char *event, json_t *data);
/* After au_emit() failed: the audit.error record, into the reserve:
 * {"errno", "error" (its name, "ENOSPC"), "message", "event" (the record
 * that was not written), "records" (written before it), "action" (what
 * the caller did about it, e.g. "sandbox stopped")}. -EINVAL when the log
 * has not failed. */
int au_emit_failure(au_log *log, const char *action);
/* 0, or the -errno that failed the log; then the event that was not
 * written and how many records were (either pointer may be NULL). */
int au_failed(const au_log *log, const char **ret_event, uint64_t *ret_records);
/* AU_RESERVE_BYTES, or 0 when the filesystem cannot preallocate
 * (EOPNOTSUPP): then a failure still fails the log, but the stop path's
 * records may not fit. */
uint64_t au_reserved(const au_log *log);
/*
 * The most bytes the log may hold (audit.max_bytes; UINT64_MAX or 0: no
 * bound). The record that would pass it is not written: au_emit() fails
 * with -EFBIG and the log is failed as for any other error, so that only
 * the stop path's records (au_emit_failure(), au_emit_final(), the seal)
 * still go in, into the reserve.
 */
void au_set_max_bytes(au_log *log, uint64_t max_bytes);
/* Bytes of complete records written so far. */
uint64_t au_bytes(const au_log *log);
/* What a file type is, in words ("a FIFO"), for messages. */
const char *au_file_type(mode_t mode);
/* Writes the final audit.seal record: {"final_hash", "hmac" (keyed only),
 * "keyed", "records", "sig" and "key_id" (signed only)}, the HMAC and the
 * signature over every field of the record, then fsyncs. Also after a failure (into the
 * reserve). Nothing may follow (-EBADFD). */
int au_seal(au_log *log);
/* au_seal() whose fsync the caller makes, as with au_sync_detach(): the
 * seal and every record before it are durable once the fsyncs of *ret_fd
 * and *ret_dirfd (-1 if none) return. On failure both are -1. */
int au_seal_detach(au_log *log, int *ret_fd, int *ret_dirfd);
/* A boundary whose fsync the caller makes, so that other threads may append
 * meanwhile (under the caller's lock): *ret_fd is a dup of the log's fd and,
 * at the first boundary, *ret_dirfd the directory's fd (else -1). The
 * caller fsyncs and closes both. Records appended before this call are
 * durable once those fsyncs return. */
int au_sync_detach(au_log *log, int *ret_fd, int *ret_dirfd);
/*
 * The public-key seal (docs/audit.md, "The public-key seal"): an Ed25519
 * key pair in PEM files. A log with a signing key signs its seal and, as
 * records of their own (audit.checkpoint), the prefix written so far every
 * every_records records or every_ns nanoseconds, whichever comes first.
 */
#define AU_SIG_BYTES		  64u
#define AU_CHECKPOINT_EVENT	  "audit.checkpoint"
#define AU_CHECKPOINT_RECORDS_DEF 1000u
#define AU_CHECKPOINT_MS_DEF	  5000u
typedef struct au_sign_key au_sign_key;
/* Generates a key pair: the private key (PKCS#8 PEM) into a new file of
 * mode 0600, the public key (SubjectPublicKeyInfo PEM) into a new file of
 * mode 0644. Both are created with O_EXCL|O_NOFOLLOW (-EEXIST, -ELOOP):
 * an existing key is never replaced. ret_id (may be NULL) gets the key id. */
int au_keygen(const char *priv_path, const char *pub_path, char ret_id[AU_HASH_HEX + 1]);
/* Loads an Ed25519 key from a PEM file of at most 8 KiB: private (a
 * regular file, not a symlink, mode & 077 == 0: -EACCES otherwise) or
 * public. -EBADMSG when it holds no such PEM, -EPROTOTYPE for another
 * algorithm, -EFBIG for a larger file. */
int au_sign_key_load(const char *path, bool private, au_sign_key **ret);
au_sign_key *au_sign_key_free(au_sign_key *k); /* NULL-safe, returns NULL */
static inline void au_sign_key_freep(au_sign_key **k)
{
	*k = au_sign_key_free(*k);
}
/* Hex SHA-256 of the raw 32-byte public key: records name the key by it. */
const char *au_sign_key_id(const au_sign_key *k);
bool au_sign_key_is_private(const au_sign_key *k);
/* Signs / checks (0, -EBADMSG) len bytes of msg: the message of a
 * checkpoint or seal record (au_cover_message, docs/audit.md). */
int au_sign(const au_sign_key *k, const uint8_t *msg, size_t len, uint8_t ret_sig[AU_SIG_BYTES]);
int au_sig_check(const au_sign_key *k, const uint8_t *msg, size_t len,
		 const uint8_t sig[AU_SIG_BYTES]);
/* Checks a signature by the rule of logs sealed before the signature
 * covered the record itself: the prefix of sandbox's log, records records
 * whose last hash is final_hash; kind is "checkpoint" or "seal". */
int au_sig_check_v1(const au_sign_key *k, const char *kind, const char *sandbox, uint64_t records,
		    const uint8_t final_hash[AU_HASH_BYTES], const uint8_t sig[AU_SIG_BYTES]);
/*
 * What signs a log, as the writer sees it: a key and its function. The
 * writer links no signature code (sandcap-run, the supervisor of `sandcap
 * run`, holds no OpenSSL beyond SHA-256: docs/architecture.md, "Two
 * programs"); au_signer_of() makes one of a loaded private key.
 */
typedef struct au_signer {
	const void *key;
	int (*sign)(const void *key, const uint8_t *msg, size_t len, uint8_t ret_sig[AU_SIG_BYTES]);
	char key_id[AU_HASH_HEX + 1];
} au_signer;
/* -EINVAL unless k is a private key. k must outlive *ret. */
int au_signer_of(const au_sign_key *k, au_signer *ret);
/* The log signs with s (not owned: it must outlive the log) from now on;
 * 0 for either interval turns that trigger off. */
int au_set_signer(au_log *log, const au_signer *s, uint64_t every_records, uint64_t every_ns);
/* Writes an audit.checkpoint now if one is due by time and a record was
 * written since the last: for a caller's timer, so that a quiet log is
 * signed too. 1 when written, 0 when not due, else as au_emit() (a
 * checkpoint is a record like any other: its failure fails the log). */
int au_checkpoint_due(au_log *log);
/* Nanoseconds until the next checkpoint is due by time (0: due now),
 * UINT64_MAX when none can be (no signer, no interval, nothing new). */
uint64_t au_checkpoint_wait_ns(const au_log *log);

/* Hex of the last record's hash (after au_seal: of the seal record), or of
 * the genesis value before the first record. The external anchor printed in
 * the run's summary; `sandcap audit verify` prints the same value. */
const char *au_last_hash(const au_log *log);
uint64_t au_records(const au_log *log); /* records written so far */
/* NULL-safe, returns NULL; does not seal, but fsyncs unsynced records. */
au_log *au_close(au_log *log);
/* au_close(), except that the space allocated beyond the last record is
 * the caller's to give back: ftruncate() to *ret_size on a dup of the log's
 * fd (au_seal_detach()'s), after its fsyncs; -1 when there is none. */
au_log *au_close_defer(au_log *log, off_t *ret_size);

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
	/* The log records that writing failed (audit.error): intact, but a
	 * record is missing from there on and the sandbox was stopped. */
	bool failed;
	uint64_t failed_records; /* records written before the failure */
	char failed_error[32];	 /* e.g. "ENOSPC" */
	char failed_event[AU_EVENT_MAX + 1];
	/* The public-key seal. Filled also when verification fails, so that
	 * a log cut off (a supervisor killed) can say how far it is signed. */
	bool seal_signed;	 /* the seal carries an Ed25519 signature */
	bool sig_checked;	 /* ... verified with the public key */
	uint64_t checkpoints;	 /* audit.checkpoint records read */
	bool have_checkpoint;	 /* one verified with the public key ... */
	uint64_t checkpoint_seq; /* ... the last: records 0..seq are signed */
	uint64_t good_records;	 /* records that passed every check before a failure */
	char key_id[AU_HASH_HEX + 1];
	/* A signature or the HMAC checked by the rule of logs sealed before
	 * they covered the record itself: the seal's and checkpoints' own
	 * fields (their ts) are not vouched for. */
	bool legacy_rule;
} au_verify_info;

/* Verifies a whole log in constant memory. 0 if intact (which includes a
 * log that records its own failure: see au_verify_info.failed); -EBADMSG with the
 * 1-based line and reason filled otherwise (a log that ends without its
 * seal fails with "log not sealed (cut off?)", keyed or not). With a key,
 * the seal must carry an HMAC of the final hash under that key. -EIO (and a
 * reason) on a read error; -EINVAL for a key of a bad length. */
int au_verify(FILE *in, const uint8_t *key, size_t key_len, size_t *reterr_line,
	      char *reterr_reason, size_t reason_len);
/* The same, also describing an intact log in ret_info (may be NULL). */
int au_verify_ex(FILE *in, const uint8_t *key, size_t key_len, au_verify_info *ret_info,
		 size_t *reterr_line, char *reterr_reason, size_t reason_len);
/* The same with a public key (may be NULL): then every checkpoint and the
 * seal must carry a signature by that key that verifies, and ret_info
 * (also on -EBADMSG) says up to which checkpoint the log is signed. */
int au_verify_pub(FILE *in, const uint8_t *key, size_t key_len, const au_sign_key *pub,
		  au_verify_info *ret_info, size_t *reterr_line, char *reterr_reason,
		  size_t reason_len);

/* Reconstructs what happened: plain text or one JSON object. Streams the
 * log in bounded memory and checks the chain on the way (without a key);
 * a broken or unsealed chain is stated in the report, not an error.
 * Returns 0 (intact and sealed), 1 (reported, but the chain is not intact
 * or the log records a failure, audit.error) or -errno for I/O errors on
 * in or out. A line over AU_LINE_MAX ends the reading. */
int au_report(FILE *in, FILE *out, bool json);

typedef enum au_report_format {
	AU_REPORT_TEXT,
	AU_REPORT_JSON,
	AU_REPORT_HTML, /* one self-contained page (report-html.c, docs/audit.md 6a) */
	_AU_REPORT_FORMAT_MAX,
	_AU_REPORT_FORMAT_INVALID = -EINVAL,
} au_report_format;

typedef struct au_report_opts {
	au_report_format format;
	/* HTML only: check the seal's HMAC with key and every signature with
	 * pub on the same pass (as au_verify_pub); either may be NULL. */
	const uint8_t *key;
	size_t key_len;
	const au_sign_key *pub;
	/* A writer still holds the log (its flock): what is written so far. */
	bool live;
	/* in can be rewound: with sub-sandboxes, their receipts are
	 * recomputed after the report's pass (au_receipts_check). */
	bool rewindable;
} au_report_opts;

/* au_report() in any format, with the options above. Same returns; -EINVAL
 * for a key of a bad length or an unknown format. */
int au_report_ex(FILE *in, FILE *out, const au_report_opts *o);
