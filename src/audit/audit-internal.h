/* SPDX-License-Identifier: MIT */
/*
 * Shared by the writer, the verifier and the report: the canonical record
 * line, the chain hash and the per-line checks. Not part of the contract.
 *
 * A record line is, byte for byte (no spaces, keys in this order):
 *
 *   {"schema":2,"seq":N,"ts":"T","sandbox":"S","event":"E","data":D,"prev":"P","hash":"H"}\n
 *
 * Logs of schema 1 (written before the version was recorded) have no
 * "schema" member; the verifier accepts both, but not both in one log.
 *
 * N is a decimal integer without sign or leading zeros, T an RFC 3339 UTC
 * time with nanoseconds, D a JSON object dumped compact with sorted keys,
 * P and H 64 lower-case hex digits. The "body" of a line is the line
 * without its final newline and without the 75-byte suffix
 * `,"hash":"H"}`; the hashed bytes are
 *
 *   H = SHA-256(bytes(P) || body || "}")
 *
 * i.e. the line with the hash member removed textually. The verifier never
 * re-serialises a record: it checks the line is a well-formed object with
 * exactly these keys in this order, then hashes the bytes it read.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "audit/audit.h"

/* ,"hash":"<64 hex>"}  -- the textual suffix removed before hashing */
#define AU_HASH_SUFFIX_HEAD ",\"hash\":\""
#define AU_HASH_SUFFIX_LEN  (sizeof(AU_HASH_SUFFIX_HEAD) - 1 + AU_HASH_HEX + 2)
#define AU_GENESIS_PREFIX   "sandcap-audit-v1:"
#define AU_TS_LEN	    30 /* 2026-11-29T08:30:00.123456789Z */

/* The seven members of a record, in their only allowed order, after the
 * "schema" member of AU_SCHEMA_VERSION records. */
#define AU_N_KEYS	  7
#define AU_SCHEMA_VERSION 2
#define AU_SCHEMA_PREFIX  "{\"schema\":2,"

void au_hex(const uint8_t *bytes, size_t n, char *out); /* out gets 2n+1 bytes */
/* Exactly 2n lower-case hex digits. 0 or -EINVAL. */
int au_unhex(const char *s, size_t len, uint8_t *out, size_t n);

/* SHA-256("sandcap-audit-v1:" || sandbox_id): the first record's prev. */
int au_genesis(const char *sandbox_id, uint8_t out[AU_HASH_BYTES]);
/* SHA-256(prev || body || "}"). */
int au_chain_hash(const uint8_t prev[AU_HASH_BYTES], const char *body, size_t body_len,
		  uint8_t out[AU_HASH_BYTES]);
/* HMAC-SHA256(key, msg). */
int au_hmac(const uint8_t *key, size_t key_len, const uint8_t *msg, size_t msg_len,
	    uint8_t out[AU_HASH_BYTES]);

/*
 * What the signature of a seal or checkpoint and the seal's HMAC cover
 * (docs/audit.md, "What is signed"): every field of the record. The message
 * is the domain string, a NUL, and the record's line without its hash
 * member (the bytes the chain hashes, ending in "}"), with the hex digits
 * of "sig" replaced by '0's, and for the HMAC those of "hmac" too: the
 * HMAC is computed first, the signature then covers it.
 */
#define AU_SIG_DOMAIN  "sandcap-audit-sig-v2"
#define AU_HMAC_DOMAIN "sandcap-audit-hmac-v2"
/* The hexlen hex digits of member name in body: found only as exactly one
 * `"name":"` followed by them and a quote (the canonical form), else NULL. */
char *au_member_hex(char *body, size_t body_len, const char *name, size_t hexlen);
/* The message above of a record's body (the line without the hash member
 * and its "}"), malloc'ed into *ret. A member that is not there in the
 * canonical form is left as it is (the check then fails). -ENOMEM. */
int au_cover_message(const char *body, size_t body_len, bool for_hmac, uint8_t **ret,
		     size_t *ret_len);

bool au_valid_sandbox_id(const char *s);
bool au_valid_event(const char *s);
int au_format_ts(const struct timespec *ts, char out[AU_TS_LEN + 1]);

/*
 * Builds a complete record line (newline included) into a malloc'ed buffer.
 * data_json is the compact, key-sorted dump of the data object.
 */
int au_record_build(uint64_t seq, const struct timespec *ts, const char *sandbox_id,
		    const char *event, const char *data_json, const uint8_t prev[AU_HASH_BYTES],
		    char **ret_line, size_t *ret_len, uint8_t ret_hash[AU_HASH_BYTES]);

#define AU_LINE_START 4096u /* first size of the line buffer, doubled up to AU_LINE_MAX */

/*
 * Reads one line of at most AU_LINE_MAX bytes (newline included) into *buf,
 * grown as needed up to AU_LINE_MAX (caller frees). Returns 1 with *ret_len (without the newline)
 * and *ret_newline, 0 at EOF, -EMSGSIZE for a longer line (read no further than AU_LINE_MAX:
 * the caller stops there), -EIO on a read error.
 */
int au_read_line(FILE *in, char **buf, size_t *cap, size_t *ret_len, bool *ret_newline);

/*
 * The same lines as au_read_line, read in large blocks into one buffer
 * rather than a getc per byte: what the verifier reads a whole log with.
 * From a pipe, a block is waited for whole (or EOF) before its lines are
 * checked. Start it as (au_lines){.in = f}; au_lines_done frees it.
 * au_lines_next returns 1 with *ret_line (valid until the next call, not
 * NUL-terminated), *ret_len and *ret_newline, 0 at EOF, -EMSGSIZE for a line
 * over AU_LINE_MAX (read no further than AU_LINE_MAX past its start),
 * -EIO, -ENOMEM.
 */
typedef struct au_lines {
	FILE *in;
	char *buf;
	size_t cap, start, end;
	size_t searched; /* [start, searched) has no newline */
	bool eof;
} au_lines;
int au_lines_next(au_lines *l, const char **ret_line, size_t *ret_len, bool *ret_newline);
void au_lines_done(au_lines *l);

/* Length of the valid UTF-8 sequence at s (n >= 1 bytes there), 0 if
 * invalid: no overlongs, no surrogates, nothing above U+10FFFF (RFC 3629;
 * jansson's rule too). */
size_t au_utf8_seq(const unsigned char *s, size_t n);

/* What a reader took of a log so far. */
typedef struct au_log_bound {
	uint64_t lines, bytes;
} au_log_bound;
/* Counts one line read (len bytes and its newline): -EFBIG once the log is
 * past AU_LOG_MAX_LINES lines or AU_LOG_MAX_BYTES bytes; why says so. */
int au_log_bound_add(au_log_bound *b, size_t len, bool newline, char *why, size_t why_len);

/* A record line after the structural checks (au_parse_record). */
typedef struct au_record {
	json_t *root;	 /* owns everything below */
	unsigned schema; /* 1: no "schema" member, else its value */
	uint64_t seq;
	const char *ts;
	const char *sandbox;
	const char *event;
	json_t *data;
	uint8_t prev[AU_HASH_BYTES];
	uint8_t hash[AU_HASH_BYTES];
	size_t body_len; /* bytes of the line covered by the hash, "}" excluded */
} au_record;

void au_record_clear(au_record *r);
/* Writes the reason (may be NULL) and returns -EBADMSG. */
__attribute__((format(printf, 3, 4))) int au_fail_reason(char *reason, size_t reason_len,
							 const char *fmt, ...);

/*
 * Structural checks of one line (without its newline): JSON object, the
 * seven keys in order with their types, the hash member textually last.
 * 0 or -EBADMSG with a reason.
 */
int au_parse_record(const char *line, size_t len, au_record *ret, char *reterr_reason,
		    size_t reason_len);

/* Where au_scan_record puts a record's strings. */
typedef struct au_scan_buf {
	char ts[AU_TS_LEN + 1];
	char sandbox[AU_SANDBOX_ID_MAX + 1];
	char event[AU_EVENT_MAX + 1];
} au_scan_buf;

/*
 * The fast path of au_parse_record for a line in the writer's exact form
 * (scan.c says which): 1 when au_parse_record would accept the line with
 * these fields, *ret filled with no JSON (root and data NULL, the strings
 * in buf); 0 when not sure (nothing filled): the caller must then use
 * au_parse_record, which decides and words the error. Never allocates.
 * Also 0 for the events whose data au_chain_feed reads.
 */
int au_scan_record(const char *line, size_t len, au_scan_buf *buf, au_record *ret);

/* The chain state the verifier carries from line to line: constant size. */
typedef struct au_chain {
	const uint8_t *key;
	size_t key_len;
	uint64_t records;
	unsigned schema; /* the first record's: every record must have it */
	uint8_t prev[AU_HASH_BYTES];
	char sandbox[AU_SANDBOX_ID_MAX + 1];
	bool sealed;
	bool keyed;
	bool hmac_checked;
	char first_ts[AU_TS_LEN + 1];
	char last_ts[AU_TS_LEN + 1];
	/* From the log's audit.error record, if it has one. */
	bool failed;
	uint64_t failed_records;
	char failed_error[32];
	char failed_event[AU_EVENT_MAX + 1];
	/* The public-key seal: the key to check signatures with (may be
	 * NULL: then they are only checked for form), the key id the log
	 * signs with, and how far a checked signature reaches. */
	const au_sign_key *pub;
	char key_id[AU_HASH_HEX + 1];
	uint64_t checkpoints;
	bool seal_signed;
	bool sig_checked;	 /* the seal's signature verified with pub */
	bool have_checkpoint;	 /* a checkpoint's signature verified with pub */
	uint64_t checkpoint_seq; /* ... the last such checkpoint's seq */
	bool legacy_rule;	 /* a signature or HMAC of a log sealed by the old rule */
} au_chain;

void au_chain_init(au_chain *c, const uint8_t *key, size_t key_len);
/* Checks one parsed record (line body in line) against the chain and
 * advances it. 0 or -EBADMSG with a reason. */
int au_chain_feed(au_chain *c, const au_record *r, const char *line, char *reterr_reason,
		  size_t reason_len);
/* At end of input: the log must be non-empty and sealed. */
int au_chain_end(const au_chain *c, char *reterr_reason, size_t reason_len);
