/* SPDX-License-Identifier: MIT */
/*
 * The offline verifier. Every line is hostile input: it is read with a cap,
 * parsed strictly, and checked against a constant-size chain state, so a log
 * of any length verifies in constant memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit-internal.h"
#include "base/cleanup.h"

static const char *const record_keys[AU_N_KEYS] = {
    "seq", "ts", "sandbox", "event", "data", "prev", "hash",
};

__attribute__((format(printf, 3, 4))) static int fail(char *reason, size_t reason_len,
						      const char *fmt, ...)
{
	va_list ap;

	if (reason && reason_len > 0) {
		va_start(ap, fmt);
		(void)vsnprintf(reason, reason_len, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

void au_record_clear(au_record *r)
{
	json_decref(r->root);
	*r = (au_record){0};
}

static bool ts_well_formed(const char *s)
{
	/* 2026-11-29T08:30:00.123456789Z: digits where the template has 'd'. */
	static const char tmpl[] = "dddd-dd-ddTdd:dd:dd.dddddddddZ";

	if (strlen(s) != AU_TS_LEN)
		return false;
	for (size_t i = 0; i < AU_TS_LEN; i++)
		if (tmpl[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != tmpl[i])
			return false;
	return true;
}

int au_parse_record(const char *line, size_t len, au_record *ret, char *reterr_reason,
		    size_t reason_len)
{
	au_record r = {0};
	json_error_t jerr;
	const char *key, *hash;
	json_t *v;
	size_t i = 0;

	if (len == 0)
		return fail(reterr_reason, reason_len, "empty line");
	r.root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!r.root)
		return fail(reterr_reason, reason_len, "not valid JSON at column %d: %s",
			    jerr.column, jerr.text);
	if (!json_is_object(r.root)) {
		au_record_clear(&r);
		return fail(reterr_reason, reason_len, "not a JSON object");
	}
	/* jansson keeps insertion order, i.e. the order of the text. */
	json_object_foreach(r.root, key, v)
	{
		if (i >= AU_N_KEYS || strcmp(key, record_keys[i]) != 0) {
			au_record_clear(&r);
			return fail(reterr_reason, reason_len,
				    i < AU_N_KEYS ? "key %zu is not \"%s\" (record malformed)"
						  : "more than %zu keys%s (record malformed)",
				    i + 1, i < AU_N_KEYS ? record_keys[i] : "");
		}
		i++;
	}
	if (i != AU_N_KEYS) {
		au_record_clear(&r);
		return fail(reterr_reason, reason_len, "missing key \"%s\" (record malformed)",
			    record_keys[i]);
	}

	v = json_object_get(r.root, "seq");
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		au_record_clear(&r);
		return fail(reterr_reason, reason_len, "seq is not a non-negative integer");
	}
	r.seq = (uint64_t)json_integer_value(v);
	r.ts = json_string_value(json_object_get(r.root, "ts"));
	if (!r.ts || !ts_well_formed(r.ts)) {
		au_record_clear(&r);
		return fail(reterr_reason, reason_len, "ts is not a UTC timestamp");
	}
	r.sandbox = json_string_value(json_object_get(r.root, "sandbox"));
	if (!r.sandbox || !au_valid_sandbox_id(r.sandbox)) {
		au_record_clear(&r);
		return fail(reterr_reason, reason_len, "sandbox is not a valid sandbox id");
	}
	r.event = json_string_value(json_object_get(r.root, "event"));
	if (!r.event || !au_valid_event(r.event)) {
		au_record_clear(&r);
		return fail(reterr_reason, reason_len, "event is not a valid event name");
	}
	r.data = json_object_get(r.root, "data");
	if (!json_is_object(r.data)) {
		au_record_clear(&r);
		return fail(reterr_reason, reason_len, "data is not an object");
	}
	v = json_object_get(r.root, "prev");
	if (!json_is_string(v) ||
	    au_unhex(json_string_value(v), json_string_length(v), r.prev, AU_HASH_BYTES) < 0) {
		au_record_clear(&r);
		return fail(reterr_reason, reason_len, "prev is not 64 lower-case hex digits");
	}
	v = json_object_get(r.root, "hash");
	hash = json_string_value(v);
	if (!hash || au_unhex(hash, json_string_length(v), r.hash, AU_HASH_BYTES) < 0) {
		au_record_clear(&r);
		return fail(reterr_reason, reason_len, "hash is not 64 lower-case hex digits");
	}
	/* The hashed bytes are the line minus this exact suffix. */
	if (len < AU_HASH_SUFFIX_LEN ||
	    memcmp(line + len - AU_HASH_SUFFIX_LEN, AU_HASH_SUFFIX_HEAD,
		   sizeof(AU_HASH_SUFFIX_HEAD) - 1) != 0 ||
	    memcmp(line + len - 2 - AU_HASH_HEX, hash, AU_HASH_HEX) != 0 ||
	    memcmp(line + len - 2, "\"}", 2) != 0) {
		au_record_clear(&r);
		return fail(reterr_reason, reason_len,
			    "not canonical: the line must end with ,\"hash\":\"<hex>\"}");
	}
	r.body_len = len - AU_HASH_SUFFIX_LEN;
	*ret = r;
	return 0;
}

void au_chain_init(au_chain *c, const uint8_t *key, size_t key_len)
{
	*c = (au_chain){.key = key, .key_len = key_len};
}

static int check_seal(au_chain *c, const au_record *r, char *reason, size_t reason_len)
{
	json_t *records = json_object_get(r->data, "records");
	json_t *final = json_object_get(r->data, "final_hash");
	json_t *keyed = json_object_get(r->data, "keyed");
	json_t *hmac = json_object_get(r->data, "hmac");
	uint8_t final_bytes[AU_HASH_BYTES], mac[AU_HASH_BYTES], want[AU_HASH_BYTES];
	int r_;

	if (!json_is_integer(records) || !json_is_string(final) || !json_is_boolean(keyed) ||
	    json_object_size(r->data) != (json_is_true(keyed) ? 4u : 3u) ||
	    (json_is_true(keyed) && !json_is_string(hmac)))
		return fail(reason, reason_len, "malformed audit.seal data");
	if (json_integer_value(records) < 0 || (uint64_t)json_integer_value(records) != r->seq)
		return fail(reason, reason_len,
			    "audit.seal counts %" JSON_INTEGER_FORMAT
			    " records, the log has %" PRIu64 " before it",
			    json_integer_value(records), r->seq);
	if (au_unhex(json_string_value(final), json_string_length(final), final_bytes,
		     AU_HASH_BYTES) < 0 ||
	    memcmp(final_bytes, r->prev, AU_HASH_BYTES) != 0)
		return fail(reason, reason_len, "audit.seal final_hash is not the previous hash");

	c->keyed = json_is_true(keyed);
	if (c->keyed &&
	    au_unhex(json_string_value(hmac), json_string_length(hmac), mac, AU_HASH_BYTES) < 0)
		return fail(reason, reason_len, "audit.seal hmac is not 64 lower-case hex digits");
	if (!c->key)
		return 0;
	if (!c->keyed)
		return fail(reason, reason_len,
			    "log sealed without a key, but a key was given (seal replaced?)");
	r_ = au_hmac(c->key, c->key_len, r->prev, AU_HASH_BYTES, want);
	if (r_ < 0)
		return r_;
	if (CRYPTO_memcmp(mac, want, AU_HASH_BYTES) != 0)
		return fail(reason, reason_len,
			    "seal HMAC mismatch (wrong key, or log cut off and resealed?)");
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
		return fail(reterr_reason, reason_len,
			    "record after audit.seal (appended to a closed log?)");
	ret = au_chain_hash(r->prev, line, r->body_len, hash);
	if (ret < 0)
		return ret;
	if (memcmp(hash, r->hash, AU_HASH_BYTES) != 0)
		return fail(reterr_reason, reason_len, "hash mismatch (record edited?)");
	if (r->seq != c->records)
		return fail(reterr_reason, reason_len, "seq %" PRIu64 ", expected %" PRIu64 " (%s)",
			    r->seq, c->records,
			    r->seq > c->records ? "record deleted or reordered?"
						: "record inserted, duplicated or reordered?");
	if (c->records == 0) {
		strcpy(c->sandbox, r->sandbox); /* length checked by au_parse_record */
		ret = au_genesis(c->sandbox, c->prev);
		if (ret < 0)
			return ret;
		if (memcmp(r->prev, c->prev, AU_HASH_BYTES) != 0)
			return fail(reterr_reason, reason_len,
				    "prev is not the genesis hash of sandbox %s (log head cut?)",
				    c->sandbox);
		strcpy(c->first_ts, r->ts);
	} else {
		if (strcmp(r->sandbox, c->sandbox) != 0)
			return fail(reterr_reason, reason_len,
				    "sandbox %s, expected %s (record from another log?)",
				    r->sandbox, c->sandbox);
		if (memcmp(r->prev, c->prev, AU_HASH_BYTES) != 0)
			return fail(reterr_reason, reason_len,
				    "prev is not the hash of the record before "
				    "(record inserted, deleted or reordered?)");
	}
	if (strcmp(r->event, AU_ERROR_EVENT) == 0 && !c->failed)
		note_failure(c, r->data);
	if (strcmp(r->event, AU_SEAL_EVENT) == 0) {
		ret = check_seal(c, r, reterr_reason, reason_len);
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
		return fail(reterr_reason, reason_len, "empty log (no records)");
	if (!c->sealed)
		return fail(reterr_reason, reason_len, "log not sealed (cut off?)");
	return 0;
}

int au_verify_ex(FILE *in, const uint8_t *key, size_t key_len, au_verify_info *ret_info,
		 size_t *reterr_line, char *reterr_reason, size_t reason_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t cap = 0;
	size_t lineno = 0, len = 0, dummy_line;
	char dummy_reason[1];
	au_chain chain;
	bool newline = false;
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

	for (;;) {
		au_record rec = {0};

		r = au_read_line(in, &buf, &cap, &len, &newline);
		if (r == 0)
			break;
		lineno++;
		*reterr_line = lineno;
		if (r == -EMSGSIZE)
			return fail(reterr_reason, reason_len,
				    "longer than %u bytes (read that far without a newline)",
				    AU_LINE_MAX);
		if (r < 0) {
			(void)snprintf(reterr_reason, reason_len, "%s",
				       r == -ENOMEM ? "out of memory" : "read error");
			return r;
		}
		r = au_parse_record(buf, len, &rec, reterr_reason, reason_len);
		if (r < 0 && !newline)
			return fail(reterr_reason, reason_len,
				    "incomplete record at the end (write cut off?)");
		if (r < 0)
			return r;
		r = au_chain_feed(&chain, &rec, buf, reterr_reason, reason_len);
		au_record_clear(&rec);
		if (r < 0)
			return r;
		/* Checked after the record: a complete record missing only its
		 * newline is still a cut-off write. */
		if (!newline)
			return fail(reterr_reason, reason_len,
				    "no newline at the end (write cut off?)");
	}
	*reterr_line = lineno + 1;
	r = au_chain_end(&chain, reterr_reason, reason_len);
	if (r < 0)
		return r;

	*reterr_line = 0;
	if (ret_info) {
		*ret_info = (au_verify_info){
		    .records = chain.records,
		    .sealed = chain.sealed,
		    .keyed = chain.keyed,
		    .hmac_checked = chain.hmac_checked,
		};
		strcpy(ret_info->sandbox, chain.sandbox);
		au_hex(chain.prev, AU_HASH_BYTES, ret_info->last_hash);
		strcpy(ret_info->first_ts, chain.first_ts);
		strcpy(ret_info->last_ts, chain.last_ts);
		ret_info->failed = chain.failed;
		ret_info->failed_records = chain.failed_records;
		strcpy(ret_info->failed_error, chain.failed_error);
		strcpy(ret_info->failed_event, chain.failed_event);
	}
	return 0;
}

int au_verify(FILE *in, const uint8_t *key, size_t key_len, size_t *reterr_line,
	      char *reterr_reason, size_t reason_len)
{
	return au_verify_ex(in, key, key_len, NULL, reterr_line, reterr_reason, reason_len);
}
