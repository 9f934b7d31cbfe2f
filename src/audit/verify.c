/* SPDX-License-Identifier: MIT */
/*
 * The offline verifier. Every line is hostile input: it is read with a cap,
 * parsed strictly, and checked against a constant-size chain state, so a log
 * of any length verifies in constant memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit-internal.h"
#include "base/sha256.h"
#include "base/cleanup.h"

void au_chain_init(au_chain *c, const uint8_t *key, size_t key_len)
{
	*c = (au_chain){.key = key, .key_len = key_len};
}

/* records and final_hash of a checkpoint or seal: the prefix before it. */
static int check_prefix(const au_record *r, json_t *records, json_t *final, char *reason,
			size_t reason_len)
{
	uint8_t final_bytes[AU_HASH_BYTES];

	if (json_integer_value(records) < 0 || (uint64_t)json_integer_value(records) != r->seq)
		return au_fail_reason(reason, reason_len,
				      "%s counts %" JSON_INTEGER_FORMAT
				      " records, the log has %" PRIu64 " before it",
				      r->event, json_integer_value(records), r->seq);
	if (au_unhex(json_string_value(final), json_string_length(final), final_bytes,
		     AU_HASH_BYTES) < 0 ||
	    memcmp(final_bytes, r->prev, AU_HASH_BYTES) != 0)
		return au_fail_reason(reason, reason_len, "%s final_hash is not the previous hash",
				      r->event);
	return 0;
}

/* The signature (for_hmac: the HMAC) of the record in line: the message
 * over every field of it (au_cover_message); or by the rule of logs sealed
 * before, over the prefix only (*ret_legacy). 0 or -EBADMSG. */
static int check_cover(au_chain *c, const au_record *r, const char *line, const char *kind,
		       const uint8_t *sig, bool for_hmac, bool *ret_legacy)
{
	_cleanup_free_ uint8_t *msg = NULL;
	uint8_t want[AU_HASH_BYTES];
	size_t len = 0;
	int r_ = au_cover_message(line, r->body_len, for_hmac, &msg, &len);

	if (r_ < 0)
		return r_;
	*ret_legacy = false;
	if (for_hmac) {
		if (au_hmac(c->key, c->key_len, msg, len, want) == 0 &&
		    mem_equal_ct(sig, want, AU_HASH_BYTES))
			return 0;
		/* the old rule: HMAC(key, final_hash) */
		r_ = au_hmac(c->key, c->key_len, r->prev, AU_HASH_BYTES, want);
		if (r_ < 0 || !mem_equal_ct(sig, want, AU_HASH_BYTES))
			return -EBADMSG;
	} else {
		r_ = au_sig_check(c->pub, msg, len, sig);
		if (r_ != -EBADMSG)
			return r_;
		r_ = au_sig_check_v1(c->pub, kind, c->sandbox, r->seq, r->prev, sig);
		if (r_ < 0)
			return r_;
	}
	*ret_legacy = true;
	return 0;
}

/*
 * The signature of a checkpoint or seal (sig, key_id in data): well-formed
 * always, by the log's one key, and checked when a public key is given.
 * 1 when checked, 0 when not (no key given).
 */
static int check_signature(au_chain *c, const au_record *r, const char *line, const char *kind,
			   char *reason, size_t reason_len)
{
	json_t *sig = json_object_get(r->data, "sig");
	json_t *key_id = json_object_get(r->data, "key_id");
	uint8_t sig_bytes[AU_SIG_BYTES], id[AU_HASH_BYTES];
	bool legacy = false;
	int r_;

	if (!json_is_string(sig) ||
	    au_unhex(json_string_value(sig), json_string_length(sig), sig_bytes, AU_SIG_BYTES) < 0)
		return au_fail_reason(reason, reason_len, "%s sig is not %u lower-case hex digits",
				      r->event, 2 * AU_SIG_BYTES);
	if (!json_is_string(key_id) ||
	    au_unhex(json_string_value(key_id), json_string_length(key_id), id, AU_HASH_BYTES) < 0)
		return au_fail_reason(reason, reason_len,
				      "%s key_id is not 64 lower-case hex digits", r->event);
	if (!c->key_id[0])
		strcpy(c->key_id, json_string_value(key_id));
	else if (strcmp(c->key_id, json_string_value(key_id)) != 0)
		return au_fail_reason(
		    reason, reason_len,
		    "%s signed by key %.16s..., earlier ones by %.16s... (forged?)", r->event,
		    json_string_value(key_id), c->key_id);
	if (!c->pub)
		return 0;
	if (strcmp(c->key_id, au_sign_key_id(c->pub)) != 0)
		return au_fail_reason(
		    reason, reason_len,
		    "%s signed by key %.16s..., not by the given public key %.16s...", r->event,
		    c->key_id, au_sign_key_id(c->pub));
	r_ = check_cover(c, r, line, kind, sig_bytes, false, &legacy);
	if (r_ == -EBADMSG)
		return au_fail_reason(
		    reason, reason_len,
		    "%s signature does not verify with the public key (forged, or the "
		    "log edited before it or in it?)",
		    r->event);
	if (r_ < 0)
		return r_;
	c->legacy_rule |= legacy;
	return 1;
}

static int check_checkpoint(au_chain *c, const au_record *r, const char *line, char *reason,
			    size_t reason_len)
{
	json_t *records = json_object_get(r->data, "records");
	json_t *final = json_object_get(r->data, "final_hash");
	int r_;

	if (!json_is_integer(records) || !json_is_string(final) || json_object_size(r->data) != 4)
		return au_fail_reason(reason, reason_len, "malformed audit.checkpoint data");
	r_ = check_prefix(r, records, final, reason, reason_len);
	if (r_ < 0)
		return r_;
	r_ = check_signature(c, r, line, "checkpoint", reason, reason_len);
	if (r_ < 0)
		return r_;
	c->checkpoints++;
	if (r_ > 0) {
		c->have_checkpoint = true;
		c->checkpoint_seq = r->seq;
	}
	return 0;
}

static int check_seal(au_chain *c, const au_record *r, const char *line, char *reason,
		      size_t reason_len)
{
	json_t *records = json_object_get(r->data, "records");
	json_t *final = json_object_get(r->data, "final_hash");
	json_t *keyed = json_object_get(r->data, "keyed");
	json_t *hmac = json_object_get(r->data, "hmac");
	bool is_signed = json_object_get(r->data, "sig") != NULL;
	uint8_t mac[AU_HASH_BYTES];
	bool legacy = false;
	int r_;

	if (!json_is_integer(records) || !json_is_string(final) || !json_is_boolean(keyed) ||
	    json_object_size(r->data) != 3u + json_is_true(keyed) + 2u * is_signed ||
	    (json_is_true(keyed) && !json_is_string(hmac)))
		return au_fail_reason(reason, reason_len, "malformed audit.seal data");
	r_ = check_prefix(r, records, final, reason, reason_len);
	if (r_ < 0)
		return r_;
	if (is_signed) {
		r_ = check_signature(c, r, line, "seal", reason, reason_len);
		if (r_ < 0)
			return r_;
		c->seal_signed = true;
		c->sig_checked = r_ > 0;
	} else if (c->pub)
		return au_fail_reason(
		    reason, reason_len,
		    "log sealed without a signature, but a public key was given (log "
		    "cut off and resealed?)");
	else if (c->checkpoints > 0)
		return au_fail_reason(
		    reason, reason_len,
		    "log has signed checkpoints but an unsigned seal (log cut off and "
		    "resealed?)");

	c->keyed = json_is_true(keyed);
	if (c->keyed &&
	    au_unhex(json_string_value(hmac), json_string_length(hmac), mac, AU_HASH_BYTES) < 0)
		return au_fail_reason(reason, reason_len,
				      "audit.seal hmac is not 64 lower-case hex digits");
	if (!c->key)
		return 0;
	if (!c->keyed)
		return au_fail_reason(
		    reason, reason_len,
		    "log sealed without a key, but a key was given (seal replaced?)");
	r_ = check_cover(c, r, line, "seal", mac, true, &legacy);
	if (r_ == -EBADMSG)
		return au_fail_reason(
		    reason, reason_len,
		    "seal HMAC mismatch (wrong key, the seal edited, or log cut off and "
		    "resealed?)");
	if (r_ < 0)
		return r_;
	c->legacy_rule |= legacy;
	c->hmac_checked = true;
	return 0;
}

/* audit.error: the writer says a record is missing from here on. */
static void note_failure(au_chain *c, json_t *data)
{
	const char *error = json_string_value(json_object_get(data, "error"));
	const char *event = json_string_value(json_object_get(data, "event"));
	json_t *records = json_object_get(data, "records");

	c->failed = true;
	c->failed_records = json_is_integer(records) && json_integer_value(records) >= 0
				? (uint64_t)json_integer_value(records)
				: 0;
	/* Shown to a terminal: only what the writer could have written. */
	(void)snprintf(
	    c->failed_error, sizeof(c->failed_error), "%s",
	    error && strspn(error, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == strlen(error) ? error
											    : "?");
	(void)snprintf(c->failed_event, sizeof(c->failed_event), "%s",
		       event && au_valid_event(event) ? event : "?");
}

int au_chain_feed(au_chain *c, const au_record *r, const char *line, char *reterr_reason,
		  size_t reason_len)
{
	uint8_t hash[AU_HASH_BYTES];
	int ret;

	if (c->sealed)
		return au_fail_reason(reterr_reason, reason_len,
				      "record after audit.seal (appended to a closed log?)");
	ret = au_chain_hash(r->prev, line, r->body_len, hash);
	if (ret < 0)
		return ret;
	if (memcmp(hash, r->hash, AU_HASH_BYTES) != 0)
		return au_fail_reason(reterr_reason, reason_len, "hash mismatch (record edited?)");
	if (r->seq != c->records)
		return au_fail_reason(
		    reterr_reason, reason_len, "seq %" PRIu64 ", expected %" PRIu64 " (%s)", r->seq,
		    c->records,
		    r->seq > c->records ? "record deleted or reordered?"
					: "record inserted, duplicated or reordered?");
	if (c->records == 0) {
		strcpy(c->sandbox, r->sandbox); /* length checked by au_parse_record */
		c->schema = r->schema;
		ret = au_genesis(c->sandbox, c->prev);
		if (ret < 0)
			return ret;
		if (memcmp(r->prev, c->prev, AU_HASH_BYTES) != 0)
			return au_fail_reason(
			    reterr_reason, reason_len,
			    "prev is not the genesis hash of sandbox %s (log head cut?)",
			    c->sandbox);
		strcpy(c->first_ts, r->ts);
	} else {
		if (strcmp(r->sandbox, c->sandbox) != 0)
			return au_fail_reason(reterr_reason, reason_len,
					      "sandbox %s, expected %s (record from another log?)",
					      r->sandbox, c->sandbox);
		if (r->schema != c->schema)
			return au_fail_reason(
			    reterr_reason, reason_len,
			    "schema %u, the log's first record has %u (record from "
			    "another log?)",
			    r->schema, c->schema);
		if (memcmp(r->prev, c->prev, AU_HASH_BYTES) != 0)
			return au_fail_reason(reterr_reason, reason_len,
					      "prev is not the hash of the record before "
					      "(record inserted, deleted or reordered?)");
	}
	if (strcmp(r->event, AU_ERROR_EVENT) == 0 && !c->failed)
		note_failure(c, r->data);
	if (strcmp(r->event, AU_CHECKPOINT_EVENT) == 0) {
		ret = check_checkpoint(c, r, line, reterr_reason, reason_len);
		if (ret < 0)
			return ret;
	}
	if (strcmp(r->event, AU_SEAL_EVENT) == 0) {
		ret = check_seal(c, r, line, reterr_reason, reason_len);
		if (ret < 0)
			return ret;
		c->sealed = true;
	}
	strcpy(c->last_ts, r->ts);
	memcpy(c->prev, r->hash, AU_HASH_BYTES);
	c->records++;
	return 0;
}

int au_chain_end(const au_chain *c, char *reterr_reason, size_t reason_len)
{
	if (c->records == 0)
		return au_fail_reason(reterr_reason, reason_len, "empty log (no records)");
	if (!c->sealed)
		return au_fail_reason(reterr_reason, reason_len, "log not sealed (cut off?)");
	return 0;
}

static void fill_info(const au_chain *c, au_verify_info *info)
{
	*info = (au_verify_info){
	    .records = c->records,
	    .sealed = c->sealed,
	    .keyed = c->keyed,
	    .hmac_checked = c->hmac_checked,
	    .failed = c->failed,
	    .failed_records = c->failed_records,
	    .seal_signed = c->seal_signed,
	    .sig_checked = c->sig_checked,
	    .checkpoints = c->checkpoints,
	    .have_checkpoint = c->have_checkpoint,
	    .checkpoint_seq = c->checkpoint_seq,
	    .good_records = c->records,
	    .legacy_rule = c->legacy_rule,
	};
	strcpy(info->sandbox, c->sandbox);
	au_hex(c->prev, AU_HASH_BYTES, info->last_hash);
	strcpy(info->first_ts, c->first_ts);
	strcpy(info->last_ts, c->last_ts);
	strcpy(info->failed_error, c->failed_error);
	strcpy(info->failed_event, c->failed_event);
	strcpy(info->key_id, c->key_id);
}

/* The lines of a log, each checked (au_scan_record, else au_parse_record)
 * and fed to the chain. */
static int verify_lines(FILE *in, au_chain *chain, size_t *reterr_line, char *reterr_reason,
			size_t reason_len)
{
	_cleanup_(au_lines_done) au_lines lines = {.in = in};
	size_t lineno = 0, len = 0;
	au_log_bound bound = {0};
	const char *buf = NULL;
	bool newline = false;
	int r;

	for (;;) {
		au_record rec = {0};
		au_scan_buf strings;

		r = au_lines_next(&lines, &buf, &len, &newline);
		if (r == 0)
			break;
		lineno++;
		*reterr_line = lineno;
		if (r == -EMSGSIZE)
			return au_fail_reason(
			    reterr_reason, reason_len,
			    "longer than %u bytes (read that far without a newline)", AU_LINE_MAX);
		if (r < 0) {
			(void)snprintf(reterr_reason, reason_len, "%s",
				       r == -ENOMEM ? "out of memory" : "read error");
			return r;
		}
		r = au_log_bound_add(&bound, len, newline, reterr_reason, reason_len);
		if (r < 0)
			return -EBADMSG;
		if (au_scan_record(buf, len, &strings, &rec) == 0)
			r = au_parse_record(buf, len, &rec, reterr_reason, reason_len);
		if (r < 0 && !newline)
			return au_fail_reason(reterr_reason, reason_len,
					      "incomplete record at the end (write cut off?)");
		if (r < 0)
			return r;
		r = au_chain_feed(chain, &rec, buf, reterr_reason, reason_len);
		au_record_clear(&rec);
		if (r < 0)
			return r;
		/* Checked after the record: a complete record missing only its
		 * newline is still a cut-off write. */
		if (!newline)
			return au_fail_reason(reterr_reason, reason_len,
					      "no newline at the end (write cut off?)");
	}
	*reterr_line = lineno + 1;
	r = au_chain_end(chain, reterr_reason, reason_len);
	if (r < 0)
		return r;
	*reterr_line = 0;
	return 0;
}

int au_verify_pub(FILE *in, const uint8_t *key, size_t key_len, const au_sign_key *pub,
		  au_verify_info *ret_info, size_t *reterr_line, char *reterr_reason,
		  size_t reason_len)
{
	size_t dummy_line;
	char dummy_reason[1];
	au_chain chain;
	int r;

	if (!reterr_line)
		reterr_line = &dummy_line;
	if (!reterr_reason || reason_len == 0) {
		reterr_reason = dummy_reason;
		reason_len = sizeof(dummy_reason);
	}
	*reterr_line = 0;
	reterr_reason[0] = '\0';
	if (!in || (key && (key_len < AU_KEY_MIN || key_len > AU_KEY_MAX)))
		return -EINVAL;
	au_chain_init(&chain, key, key_len);
	chain.pub = pub;
	r = verify_lines(in, &chain, reterr_line, reterr_reason, reason_len);
	if (ret_info)
		fill_info(&chain, ret_info);
	return r;
}

int au_verify_ex(FILE *in, const uint8_t *key, size_t key_len, au_verify_info *ret_info,
		 size_t *reterr_line, char *reterr_reason, size_t reason_len)
{
	return au_verify_pub(in, key, key_len, NULL, ret_info, reterr_line, reterr_reason,
			     reason_len);
}

int au_verify(FILE *in, const uint8_t *key, size_t key_len, size_t *reterr_line,
	      char *reterr_reason, size_t reason_len)
{
	return au_verify_ex(in, key, key_len, NULL, reterr_line, reterr_reason, reason_len);
}
