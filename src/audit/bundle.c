/* SPDX-License-Identifier: MIT */
/*
 * Evidence bundles (docs/audit.md, "Bundles"): the log, its reports, the
 * public key and the policy or token claims in one plain tar, with a
 * manifest of their sizes and SHA-256. The checker trusts nothing in the
 * archive: it recomputes the manifest, the reports and the policy digest
 * from the members and the log, and compares bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/audit-internal.h"
#include "audit/bundle.h"
#include "audit/tar.h"
#include "base/cleanup.h"
#include "base/sha256.h"

typedef struct member {
	const char *name;
	bool required;
	size_t max;
	char *data; /* read: owned; write: borrowed */
	size_t len;
	bool present;
} member;

enum { M_MANIFEST, M_LOG, M_REPORT, M_TEXT, M_PUBKEY, M_POLICY, M_TOKEN, M_N };

static void members_init(member m[M_N])
{
	static const struct {
		const char *name;
		bool required;
		size_t max;
	} spec[M_N] = {
	    {AU_BUNDLE_MANIFEST, true, AU_BUNDLE_MEMBER_MAX},
	    {AU_BUNDLE_LOG, true, AU_BUNDLE_LOG_MAX},
	    {AU_BUNDLE_REPORT, true, AU_BUNDLE_MEMBER_MAX},
	    {AU_BUNDLE_TEXT, true, AU_BUNDLE_MEMBER_MAX},
	    {AU_BUNDLE_PUBKEY, false, AU_BUNDLE_MEMBER_MAX},
	    {AU_BUNDLE_POLICY, false, AU_BUNDLE_MEMBER_MAX},
	    {AU_BUNDLE_TOKEN, false, AU_BUNDLE_MEMBER_MAX},
	};

	for (size_t i = 0; i < M_N; i++)
		m[i] = (member){
		    .name = spec[i].name, .required = spec[i].required, .max = spec[i].max};
}

__attribute__((format(printf, 3, 4))) static int fail(char *reason, size_t reason_len,
						      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(reason, reason_len, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static void sha_hex(const void *buf, size_t len, char out[AU_HASH_HEX + 1])
{
	uint8_t md[AU_HASH_BYTES];

	sha256_parts(buf, len, "", 0, "", 0, md);
	au_hex(md, AU_HASH_BYTES, out);
}

/* The manifest the members give: compact JSON with sorted keys, so that
 * the checker can rebuild it and compare bytes. */
static char *manifest_of(const member m[M_N], const au_verify_info *info)
{
	_cleanup_json_ json_t *root = NULL;
	json_t *list = json_array();
	char hex[AU_HASH_HEX + 1];

	if (!list)
		return NULL;
	for (size_t i = M_LOG; i < M_N; i++) {
		if (!m[i].present)
			continue;
		sha_hex(m[i].data, m[i].len, hex);
		if (json_array_append_new(list,
					  json_pack("{s:s, s:I, s:s}", "name", m[i].name, "size",
						    (json_int_t)m[i].len, "sha256", hex)) < 0) {
			json_decref(list);
			return NULL;
		}
	}
	root = json_pack("{s:s, s:i, s:s, s:s, s:I, s:s?, s:o}", "format", AU_BUNDLE_FORMAT,
			 "version", 1, "sandbox", info->sandbox, "last_hash", info->last_hash,
			 "records", (json_int_t)info->records, "key_id",
			 info->key_id[0] ? info->key_id : NULL, "members", list);
	if (!root)
		return NULL;
	return json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
}

static int report_of(const char *log, size_t len, bool json, char **ret, size_t *ret_len)
{
	FILE *in = fmemopen((void *)log, len, "r"), *out;
	int r;

	if (!in)
		return -errno;
	out = open_memstream(ret, ret_len);
	if (!out) {
		(void)fclose(in);
		return -errno;
	}
	r = au_report(in, out, json);
	(void)fclose(in);
	if (fclose(out) != 0 && r >= 0)
		r = -EIO;
	return r < 0 ? r : 0;
}

/* The first record's data (sandbox.start): what the policy or token
 * members must match. */
static json_t *start_data(const char *log, size_t len)
{
	const char *nl = memchr(log, '\n', len);
	au_record rec = {0};
	char reason[8];
	json_t *d;

	if (!nl || au_parse_record(log, (size_t)(nl - log), &rec, reason, sizeof(reason)) < 0)
		return NULL;
	d = strcmp(rec.event, "sandbox.start") == 0 ? json_incref(rec.data) : NULL;
	au_record_clear(&rec);
	return d;
}

static int verify_log(const char *log, size_t len, const au_sign_key *pub, au_verify_info *info,
		      char *reason, size_t reason_len)
{
	char why[512] = "";
	size_t line = 0;
	FILE *in;
	int r;

	if (len == 0)
		return fail(reason, reason_len, "%s: empty", AU_BUNDLE_LOG);
	in = fmemopen((void *)log, len, "r");
	if (!in)
		return -errno;
	r = au_verify_pub(in, NULL, 0, pub, info, &line, why, sizeof(why));
	(void)fclose(in);
	if (r == -EBADMSG)
		return fail(reason, reason_len, "%s: line %zu: %s", AU_BUNDLE_LOG, line, why);
	return r;
}

/* policy.json / token-claims.json against what sandbox.start names. */
static int check_origin(const member m[M_N], bool *ret_policy, bool *ret_token, char *reason,
			size_t reason_len)
{
	_cleanup_json_ json_t *start = start_data(m[M_LOG].data, m[M_LOG].len);
	char hex[AU_HASH_HEX + 1];

	*ret_policy = *ret_token = false;
	if (!start)
		return fail(reason, reason_len, "%s: the first record is not sandbox.start",
			    AU_BUNDLE_LOG);
	if (m[M_POLICY].present && m[M_TOKEN].present)
		return fail(reason, reason_len, "both %s and %s: a run has one or the other",
			    AU_BUNDLE_POLICY, AU_BUNDLE_TOKEN);
	if (m[M_POLICY].present) {
		const char *want = json_string_value(json_object_get(start, "policy_digest"));

		sha_hex(m[M_POLICY].data, m[M_POLICY].len, hex);
		if (!want || strcmp(want, hex) != 0)
			return fail(reason, reason_len,
				    "%s: SHA-256 %s, but the run's policy_digest is %s (not the "
				    "policy of this run)",
				    AU_BUNDLE_POLICY, hex, want ? want : "missing");
		*ret_policy = true;
	}
	if (m[M_TOKEN].present) {
		_cleanup_json_ json_t *t =
		    json_loadb(m[M_TOKEN].data, m[M_TOKEN].len, JSON_REJECT_DUPLICATES, NULL);
		const char *id =
		    json_string_value(json_object_get(json_object_get(start, "token"), "id"));
		json_t *claims = json_object_get(t, "claims");
		const char *cid = json_string_value(json_object_get(claims, "id"));

		if (!json_is_object(claims) || !json_is_array(json_object_get(t, "caveats")))
			return fail(reason, reason_len,
				    "%s: expected {\"claims\": {...}, \"caveats\": [...]}",
				    AU_BUNDLE_TOKEN);
		if (!id || !cid || strcmp(id, cid) != 0)
			return fail(reason, reason_len,
				    "%s: token id %s, but the run's token is %s", AU_BUNDLE_TOKEN,
				    cid ? cid : "missing", id ? id : "none");
		*ret_token = true;
	}
	return 0;
}

int au_bundle_write(int fd, const au_bundle_in *in, char *reason, size_t reason_len)
{
	_cleanup_free_ char *report = NULL, *text = NULL, *manifest = NULL;
	_cleanup_(au_sign_key_freep) au_sign_key *pub = NULL;
	member m[M_N];
	au_tar_member tm[M_N];
	au_verify_info info;
	bool pol, tok;
	size_t n = 0;
	int r;

	members_init(m);
	if (in->pubkey) {
		r = au_sign_key_parse(in->pubkey, in->pubkey_len, &pub);
		if (r < 0)
			return fail(reason, reason_len, "the public key is not an Ed25519 PEM key");
	}
	r = verify_log(in->log, in->log_len, pub, &info, reason, reason_len);
	if (r < 0)
		return r;
	m[M_LOG] = (member){.name = AU_BUNDLE_LOG, .data = (char *)in->log, .len = in->log_len};
	m[M_PUBKEY] =
	    (member){.name = AU_BUNDLE_PUBKEY, .data = (char *)in->pubkey, .len = in->pubkey_len};
	m[M_POLICY] =
	    (member){.name = AU_BUNDLE_POLICY, .data = (char *)in->policy, .len = in->policy_len};
	m[M_TOKEN] = (member){
	    .name = AU_BUNDLE_TOKEN, .data = (char *)in->token_claims, .len = in->token_claims_len};
	r = report_of(in->log, in->log_len, true, &report, &m[M_REPORT].len);
	if (r == 0)
		r = report_of(in->log, in->log_len, false, &text, &m[M_TEXT].len);
	if (r < 0)
		return r;
	m[M_REPORT].data = report;
	m[M_TEXT].data = text;
	for (size_t i = M_LOG; i < M_N; i++)
		m[i].present = m[i].data != NULL;
	r = check_origin(m, &pol, &tok, reason, reason_len);
	if (r < 0)
		return r;
	manifest = manifest_of(m, &info);
	if (!manifest)
		return -ENOMEM;
	m[M_MANIFEST].data = manifest;
	m[M_MANIFEST].len = strlen(manifest);
	m[M_MANIFEST].present = true;
	for (size_t i = 0; i < M_N; i++)
		if (m[i].present)
			tm[n++] = (au_tar_member){m[i].name, m[i].data, m[i].len};
	return au_tar_write(fd, tm, n, (int64_t)time(NULL), reason, reason_len);
}

typedef struct reading {
	member *m;
	char *reason;
	size_t reason_len;
} reading;

static int take_member(const char *name, const void *data, size_t len, void *userdata)
{
	reading *rd = userdata;

	for (size_t i = 0; i < M_N; i++) {
		member *m = &rd->m[i];

		if (strcmp(name, m->name) != 0)
			continue;
		if (m->present)
			return fail(rd->reason, rd->reason_len, "%s appears twice", m->name);
		if (len > m->max)
			return fail(rd->reason, rd->reason_len, "%s is larger than %zu bytes",
				    m->name, m->max);
		m->data = malloc(len + 1);
		if (!m->data)
			return -ENOMEM;
		memcpy(m->data, data, len);
		m->data[len] = '\0';
		m->len = len;
		m->present = true;
		return 0;
	}
	/* Names from the archive go to a terminal: only the safe ones. */
	return fail(rd->reason, rd->reason_len,
		    "unknown member %.64s%s (a bundle holds only %s, ...)",
		    strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == strlen(name)
			? name
			: "(a name with other bytes)",
		    strlen(name) > 64 ? "..." : "", AU_BUNDLE_MANIFEST);
}

static int same_bytes(const member *m, const char *want, size_t want_len, char *reason,
		      size_t reason_len)
{
	if (m->len != want_len || memcmp(m->data, want, want_len) != 0)
		return fail(reason, reason_len,
			    "%s is not what the members give (edited, or of another log?)",
			    m->name);
	return 0;
}

static int check_members(member m[M_N], const au_sign_key *pub, au_bundle_result *ret, char *reason,
			 size_t reason_len)
{
	_cleanup_free_ char *report = NULL, *text = NULL, *manifest = NULL;
	_cleanup_(au_sign_key_freep) au_sign_key *own = NULL;
	size_t report_len = 0, text_len = 0;
	int r;

	for (size_t i = 0; i < M_N; i++)
		if (m[i].required && !m[i].present)
			return fail(reason, reason_len, "no %s in the bundle", m[i].name);
	if (m[M_PUBKEY].present) {
		if (au_sign_key_parse(m[M_PUBKEY].data, m[M_PUBKEY].len, &own) < 0)
			return fail(reason, reason_len, "%s is not an Ed25519 PEM public key",
				    AU_BUNDLE_PUBKEY);
		if (pub && strcmp(au_sign_key_id(pub), au_sign_key_id(own)) != 0)
			return fail(reason, reason_len,
				    "%s is key %.16s..., not the given public key %.16s...",
				    AU_BUNDLE_PUBKEY, au_sign_key_id(own), au_sign_key_id(pub));
		ret->pubkey_in_bundle = true;
	}
	r = verify_log(m[M_LOG].data, m[M_LOG].len, pub ? pub : own, &ret->info, reason,
		       reason_len);
	if (r < 0)
		return r;
	if (ret->info.seal_signed && !pub && !own)
		return fail(reason, reason_len,
			    "the log is signed, but neither the bundle nor the caller has its "
			    "public key");
	r = report_of(m[M_LOG].data, m[M_LOG].len, true, &report, &report_len);
	if (r == 0)
		r = report_of(m[M_LOG].data, m[M_LOG].len, false, &text, &text_len);
	if (r < 0)
		return r;
	r = same_bytes(&m[M_REPORT], report, report_len, reason, reason_len);
	if (r == 0)
		r = same_bytes(&m[M_TEXT], text, text_len, reason, reason_len);
	if (r == 0)
		r = check_origin(m, &ret->policy_checked, &ret->token_checked, reason, reason_len);
	if (r < 0)
		return r;
	manifest = manifest_of(m, &ret->info);
	if (!manifest)
		return -ENOMEM;
	return same_bytes(&m[M_MANIFEST], manifest, strlen(manifest), reason, reason_len);
}

int au_bundle_verify(const void *tar, size_t len, const au_sign_key *pub, au_bundle_result *ret,
		     char *reason, size_t reason_len)
{
	member m[M_N];
	reading rd = {m, reason, reason_len};
	int r;

	*ret = (au_bundle_result){0};
	members_init(m);
	r = au_tar_read(tar, len, AU_BUNDLE_LOG_MAX, 2 * M_N, take_member, &rd, reason, reason_len);
	if (r == -EFBIG || r == -E2BIG)
		r = -EBADMSG;
	if (r == 0)
		r = check_members(m, pub, ret, reason, reason_len);
	for (size_t i = 0; i < M_N; i++)
		free(m[i].data);
	return r;
}
