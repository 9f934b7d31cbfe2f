/* SPDX-License-Identifier: MIT */
/*
 * The append-only, hash-chained audit log (DESIGN.md section 6).
 * hash = SHA-256(prev_hash_bytes || line_without_hash_field).
 * Only the supervisor writes. Library code: never prints; errors are -errno.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/plan.h"

typedef struct au_log au_log;

/* Opens path O_APPEND|O_CLOEXEC|O_CREAT (0600). key may be NULL. */
int au_open(const char *path, const uint8_t *key, size_t key_len, const char *sandbox_id,
	    audit_fsync mode, au_log **ret);
/* Appends one record. Takes ownership of data (a JSON object). */
int au_emit(au_log *log, const char *event, json_t *data);
/* Writes audit.seal (with an HMAC of the final hash when keyed) and fsyncs. */
int au_seal(au_log *log);
int au_sync(au_log *log);
/* Hex of the last record's hash: the external anchor printed in the summary. */
const char *au_last_hash(const au_log *log);
au_log *au_close(au_log *log); /* NULL-safe, returns NULL */

/* Verifies a whole log in constant memory. 0 if intact; -EBADMSG with the
 * 1-based line and reason filled otherwise. */
int au_verify(FILE *in, const uint8_t *key, size_t key_len, size_t *reterr_line,
	      char *reterr_reason, size_t reason_len);
/* Reconstructs what happened: plain text or one JSON object. */
int au_report(FILE *in, FILE *out, bool json);
