/* SPDX-License-Identifier: MIT */
/*
 * A record line back into its parts, with the structural checks that need
 * no chain (audit-internal.h). Every line is hostile input. Apart from the
 * verifier, so that what reads one line (receipts, exports) links no
 * signature code.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit-internal.h"
#include "base/cleanup.h"

int au_fail_reason(char *reason, size_t reason_len, const char *fmt, ...)
{
	va_list ap;

	if (reason && reason_len > 0) {
		va_start(ap, fmt);
		(void)vsnprintf(reason, reason_len, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static const char *const record_keys[AU_N_KEYS] = {
    "seq", "ts", "sandbox", "event", "data", "prev", "hash",
};

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
		return au_fail_reason(reterr_reason, reason_len, "empty line");
	r.root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!r.root)
		return au_fail_reason(reterr_reason, reason_len, "not valid JSON at column %d: %s",
				      jerr.column, jerr.text);
	if (!json_is_object(r.root)) {
		au_record_clear(&r);
		return au_fail_reason(reterr_reason, reason_len, "not a JSON object");
	}
	/* jansson keeps insertion order, i.e. the order of the text. A
	 * schema 1 record has no "schema" member; a later one has it first. */
	r.schema = 1;
	v = json_object_get(r.root, "schema");
	if (v) {
		if (!json_is_integer(v) || json_integer_value(v) != AU_SCHEMA_VERSION ||
		    strcmp(json_object_iter_key(json_object_iter(r.root)), "schema") != 0) {
			au_record_clear(&r);
			return au_fail_reason(
			    reterr_reason, reason_len,
			    "\"schema\" must be the first key and %d (record malformed, "
			    "or written by a newer sandcap)",
			    AU_SCHEMA_VERSION);
		}
		r.schema = AU_SCHEMA_VERSION;
	}
	json_object_foreach(r.root, key, v)
	{
		if (r.schema > 1 && i == 0 && strcmp(key, "schema") == 0)
			continue;
		if (i >= AU_N_KEYS || strcmp(key, record_keys[i]) != 0) {
			au_record_clear(&r);
			return au_fail_reason(reterr_reason, reason_len,
					      i < AU_N_KEYS
						  ? "key %zu is not \"%s\" (record malformed)"
						  : "more than %zu keys%s (record malformed)",
					      i + 1, i < AU_N_KEYS ? record_keys[i] : "");
		}
		i++;
	}
	if (i != AU_N_KEYS) {
		au_record_clear(&r);
		return au_fail_reason(reterr_reason, reason_len,
				      "missing key \"%s\" (record malformed)", record_keys[i]);
	}

	v = json_object_get(r.root, "seq");
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		au_record_clear(&r);
		return au_fail_reason(reterr_reason, reason_len,
				      "seq is not a non-negative integer");
	}
	r.seq = (uint64_t)json_integer_value(v);
	r.ts = json_string_value(json_object_get(r.root, "ts"));
	if (!r.ts || !ts_well_formed(r.ts)) {
		au_record_clear(&r);
		return au_fail_reason(reterr_reason, reason_len, "ts is not a UTC timestamp");
	}
	r.sandbox = json_string_value(json_object_get(r.root, "sandbox"));
	if (!r.sandbox || !au_valid_sandbox_id(r.sandbox)) {
		au_record_clear(&r);
		return au_fail_reason(reterr_reason, reason_len,
				      "sandbox is not a valid sandbox id");
	}
	r.event = json_string_value(json_object_get(r.root, "event"));
	if (!r.event || !au_valid_event(r.event)) {
		au_record_clear(&r);
		return au_fail_reason(reterr_reason, reason_len, "event is not a valid event name");
	}
	r.data = json_object_get(r.root, "data");
	if (!json_is_object(r.data)) {
		au_record_clear(&r);
		return au_fail_reason(reterr_reason, reason_len, "data is not an object");
	}
	v = json_object_get(r.root, "prev");
	if (!json_is_string(v) ||
	    au_unhex(json_string_value(v), json_string_length(v), r.prev, AU_HASH_BYTES) < 0) {
		au_record_clear(&r);
		return au_fail_reason(reterr_reason, reason_len,
				      "prev is not 64 lower-case hex digits");
	}
	v = json_object_get(r.root, "hash");
	hash = json_string_value(v);
	if (!hash || au_unhex(hash, json_string_length(v), r.hash, AU_HASH_BYTES) < 0) {
		au_record_clear(&r);
		return au_fail_reason(reterr_reason, reason_len,
				      "hash is not 64 lower-case hex digits");
	}
	/* The hashed bytes are the line minus this exact suffix. */
	if (len < AU_HASH_SUFFIX_LEN ||
	    memcmp(line + len - AU_HASH_SUFFIX_LEN, AU_HASH_SUFFIX_HEAD,
		   sizeof(AU_HASH_SUFFIX_HEAD) - 1) != 0 ||
	    memcmp(line + len - 2 - AU_HASH_HEX, hash, AU_HASH_HEX) != 0 ||
	    memcmp(line + len - 2, "\"}", 2) != 0) {
		au_record_clear(&r);
		return au_fail_reason(reterr_reason, reason_len,
				      "not canonical: the line must end with ,\"hash\":\"<hex>\"}");
	}
	r.body_len = len - AU_HASH_SUFFIX_LEN;
	*ret = r;
	return 0;
}
