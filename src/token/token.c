/* SPDX-License-Identifier: MIT */
/*
 * Capability tokens: encoding, the HMAC chain, minting, attenuation and
 * verification (docs/tokens.md).
 *
 * The token text is hostile input: every length is capped before anything is
 * decoded, the signature chain is checked before any JSON is parsed, and the
 * effective plan is recomputed from the signed bytes at every verification.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/diag.h"
#include "base/io.h"
#include "base/sha256.h"
#include "policy/plan.h"
#include "token/token.h"

/* Base64url of the largest piece: the whole token bounds every segment. */
#define TK_MAX_SEGMENTS (TK_MAX_CAVEATS + 2u)

typedef struct tk_split {
	const char *seg[TK_MAX_SEGMENTS]; /* claims, caveats..., signature (not NUL-terminated) */
	size_t len[TK_MAX_SEGMENTS];
	size_t n; /* claims + caveats + signature */
	uint8_t sig[TK_SIG_LEN];
} tk_split;

typedef struct tk_parsed {
	json_t *claims;
	json_t *caveats[TK_MAX_CAVEATS];
	size_t n_caveats;
	char *claims_json;
	char *caveats_json[TK_MAX_CAVEATS];
	tk_info info; /* exp: the earliest of all */
} tk_parsed;

static void tk_parsed_done(tk_parsed *t)
{
	json_decref(t->claims);
	free(t->claims_json);
	for (size_t i = 0; i < t->n_caveats; i++) {
		json_decref(t->caveats[i]);
		free(t->caveats_json[i]);
	}
	memset(t, 0, sizeof(*t));
}

/* A token's diagnostics have no JSON path of their own. */
#define tk_fail(d, err, ...) diag_fail((d), (err), "", __VA_ARGS__)

/* Prefixes a policy parser diagnostic with what was being parsed. */
static int tk_fail_diag(sc_diag *d, int err, const char *what, const sc_diag *pd)
{
	if (err == -ENOMEM)
		return tk_fail(d, err, "out of memory");
	if (pd->path[0])
		return tk_fail(d, err, "%s: %s: %s", what, pd->path, pd->message);
	return tk_fail(d, err, "%s: %s", what, pd->message);
}

static void fmt_time(time_t t, char *buf, size_t size)
{
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, size, "%lld", (long long)t);
}

/* ---- base64url (base/base64.h) ---- */

/* A malloc'd encoding, or NULL. */
static char *b64url_dup(const uint8_t *in, size_t len)
{
	char *out = len <= SIZE_MAX / 2 ? malloc(B64URL_LEN(len) + 1) : NULL;

	if (out)
		(void)b64url_encode(in, len, out);
	return out;
}

/* ---- HMAC chain ---- */

static int hmac(const uint8_t *key, size_t key_len, const void *data, size_t len,
		uint8_t out[TK_SIG_LEN])
{
	hmac_sha256(key, key_len, data, len, out);
	return 0;
}

/* sig_0 = HMAC(key, claims text), sig_i = HMAC(sig_{i-1}, caveat_i text), over
 * the first n_links segments. */
static int chain(const tk_split *s, const uint8_t key[TK_KEY_LEN], size_t n_links,
		 uint8_t out[TK_SIG_LEN])
{
	uint8_t cur[TK_SIG_LEN];
	int r;

	r = hmac(key, TK_KEY_LEN, s->seg[0], s->len[0], cur);
	for (size_t i = 1; r == 0 && i < n_links; i++)
		r = hmac(cur, sizeof(cur), s->seg[i], s->len[i], cur);
	if (r == 0)
		memcpy(out, cur, TK_SIG_LEN);
	explicit_bzero(cur, sizeof(cur));
	return r;
}

/* ---- structure ---- */

static int split(const char *token, tk_split *s, sc_diag *d)
{
	_cleanup_free_ uint8_t *sig = NULL;
	const char *p, *end;
	size_t len, sig_len = 0;

	memset(s, 0, sizeof(*s));
	if (!token)
		return tk_fail(d, -EBADMSG, "malformed token: empty");
	len = strnlen(token, TK_MAX_TOKEN_BYTES + 1);
	if (len > TK_MAX_TOKEN_BYTES)
		return tk_fail(d, -EBADMSG, "malformed token: longer than %u bytes",
			       TK_MAX_TOKEN_BYTES);
	if (len < sizeof(TK_PREFIX) || memcmp(token, TK_PREFIX ".", sizeof(TK_PREFIX)) != 0)
		return tk_fail(d, -EBADMSG,
			       "malformed token: does not start with \"" TK_PREFIX ".\" (not a "
			       "sandcap token of this version)");
	p = token + sizeof(TK_PREFIX);
	end = token + len;
	while (p <= end) {
		const char *dot = memchr(p, '.', (size_t)(end - p));
		size_t n = dot ? (size_t)(dot - p) : (size_t)(end - p);

		if (s->n >= TK_MAX_SEGMENTS)
			return tk_fail(d, -EBADMSG, "malformed token: more than %u caveats",
				       TK_MAX_CAVEATS);
		if (n == 0)
			return tk_fail(d, -EBADMSG, "malformed token: empty segment %zu", s->n + 1);
		if (n % 4 == 1)
			return tk_fail(d, -EBADMSG,
				       "malformed token: segment %zu has an impossible base64url "
				       "length",
				       s->n + 1);
		for (size_t i = 0; i < n; i++)
			if (!b64url_is_char((unsigned char)p[i]))
				return tk_fail(d, -EBADMSG,
					       "malformed token: segment %zu has a character "
					       "outside base64url",
					       s->n + 1);
		s->seg[s->n] = p;
		s->len[s->n] = n;
		s->n++;
		if (!dot)
			break;
		p = dot + 1;
	}
	if (s->n < 2)
		return tk_fail(d, -EBADMSG, "malformed token: no signature");
	if (b64url_decode(s->seg[s->n - 1], s->len[s->n - 1], &sig, &sig_len) < 0 ||
	    sig_len != TK_SIG_LEN)
		return tk_fail(d, -EBADMSG, "malformed token: the signature is not %d bytes",
			       TK_SIG_LEN);
	memcpy(s->sig, sig, TK_SIG_LEN);
	return 0;
}

static bool valid_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > TK_MAX_ID)
		return false;
	for (; *id; id++)
		if (!(isalnum((unsigned char)*id) || *id == '.' || *id == '_' || *id == '-'))
			return false;
	return true;
}

static int want_time(json_t *v, time_t *ret)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > (json_int_t)TK_MAX_TIME)
		return -EBADMSG;
	*ret = (time_t)json_integer_value(v);
	return 0;
}

static int decode_json(const char *seg, size_t len, size_t max, char **ret_text, json_t **ret)
{
	_cleanup_free_ uint8_t *buf = NULL;
	json_error_t jerr;
	size_t n = 0;
	json_t *j;
	int r;

	r = b64url_decode(seg, len, &buf, &n);
	if (r < 0)
		return r;
	if (n > max)
		return -E2BIG;
	j = json_loadb((const char *)buf, n, JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		return -EBADMSG;
	if (!json_is_object(j)) {
		json_decref(j);
		return -EBADMSG;
	}
	*ret = j;
	*ret_text = (char *)TAKE_PTR(buf);
	return 0;
}

/* Only these keys, each of the right type. */
static int parse_claims(json_t *c, tk_info *info, sc_diag *d)
{
	const char *key;
	json_t *v;

	json_object_foreach(c, key, v)
	{
		if (strcmp(key, "v") != 0 && strcmp(key, "id") != 0 && strcmp(key, "iat") != 0 &&
		    strcmp(key, "exp") != 0 && strcmp(key, "policy") != 0)
			return tk_fail(d, -EBADMSG, "malformed token: unknown claim \"%.64s\"",
				       key);
	}
	v = json_object_get(c, "v");
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		return tk_fail(d, -EBADMSG, "malformed token: claims version is not 1");
	v = json_object_get(c, "id");
	if (!json_is_string(v) || !valid_id(json_string_value(v)))
		return tk_fail(d, -EBADMSG, "malformed token: bad \"id\"");
	snprintf(info->id, sizeof(info->id), "%s", json_string_value(v));
	if (want_time(json_object_get(c, "iat"), &info->iat) < 0 ||
	    want_time(json_object_get(c, "exp"), &info->exp) < 0)
		return tk_fail(d, -EBADMSG, "malformed token: bad \"iat\" or \"exp\"");
	if (info->exp <= info->iat)
		return tk_fail(d, -EBADMSG, "malformed token: \"exp\" is not after \"iat\"");
	if (!json_is_object(json_object_get(c, "policy")))
		return tk_fail(d, -EBADMSG, "malformed token: the claims have no policy object");
	return 0;
}

static int parse_caveat(json_t *c, size_t i, time_t *exp, sc_diag *d)
{
	const char *key;
	json_t *v;
	time_t t;

	json_object_foreach(c, key, v)
	{
		if (strcmp(key, "exp") != 0 && strcmp(key, "policy") != 0)
			return tk_fail(d, -EBADMSG,
				       "malformed token: caveat %zu: unknown key \"%.64s\"", i + 1,
				       key);
	}
	if (json_object_size(c) == 0)
		return tk_fail(d, -EBADMSG, "malformed token: caveat %zu is empty", i + 1);
	v = json_object_get(c, "exp");
	if (v) {
		if (want_time(v, &t) < 0)
			return tk_fail(d, -EBADMSG, "malformed token: caveat %zu: bad \"exp\"",
				       i + 1);
		if (t < *exp)
			*exp = t;
	}
	v = json_object_get(c, "policy");
	if (v && !json_is_object(v))
		return tk_fail(d, -EBADMSG, "malformed token: caveat %zu: policy is not an object",
			       i + 1);
	return 0;
}

/* Decodes and schema-checks the JSON of every segment. */
static int parse_segments(const tk_split *s, tk_parsed *t, sc_diag *d)
{
	int r;

	memset(t, 0, sizeof(*t));
	r = decode_json(s->seg[0], s->len[0], TK_MAX_TOKEN_BYTES, &t->claims_json, &t->claims);
	if (r < 0)
		return tk_fail(d, r == -ENOMEM ? r : -EBADMSG,
			       "malformed token: the claims are not a JSON object");
	r = parse_claims(t->claims, &t->info, d);
	if (r < 0)
		return r;
	for (size_t i = 1; i + 1 < s->n; i++) {
		size_t k = t->n_caveats;

		r = decode_json(s->seg[i], s->len[i], TK_MAX_CAVEAT_BYTES, &t->caveats_json[k],
				&t->caveats[k]);
		if (r < 0)
			return tk_fail(
			    d, r == -ENOMEM ? r : -EBADMSG,
			    "malformed token: caveat %zu is not a JSON object of at most "
			    "%u bytes",
			    k + 1, TK_MAX_CAVEAT_BYTES);
		t->n_caveats++;
		r = parse_caveat(t->caveats[k], k, &t->info.exp, d);
		if (r < 0)
			return r;
	}
	t->info.n_caveats = (unsigned)t->n_caveats;
	return 0;
}

static int parse_policy_json(json_t *pol, sc_plan **ret, sc_diag *pd)
{
	_cleanup_free_ char *s = json_dumps(pol, JSON_COMPACT | JSON_SORT_KEYS);

	if (!s)
		return -ENOMEM;
	return plan_parse(s, strlen(s), ret, pd);
}

/* The policy parser is the only producer of plans: run the result through it. */
static int revalidate(const sc_plan *p, sc_plan **ret, sc_diag *pd)
{
	_cleanup_free_ char *s = plan_to_json(p);

	if (!s)
		return -ENOMEM;
	return plan_parse(s, strlen(s), ret, pd);
}

/* Claims policy, then each caveat intersected in order. */
static int effective(const tk_parsed *t, size_t n_caveats, sc_plan **ret, sc_diag *d)
{
	_cleanup_(sc_plan_freep) sc_plan *cur = NULL;
	sc_diag pd = {};
	char what[64];
	int r;

	r = parse_policy_json(json_object_get(t->claims, "policy"), &cur, &pd);
	if (r < 0)
		return tk_fail_diag(d, r, "token policy", &pd);
	for (size_t i = 0; i < n_caveats; i++) {
		_cleanup_(sc_plan_freep) sc_plan *cv = NULL, *inter = NULL, *next = NULL;
		json_t *frag = json_object_get(t->caveats[i], "policy");

		if (!frag)
			continue;
		snprintf(what, sizeof(what), "token caveat %zu", i + 1);
		r = plan_apply_fragment(cur, frag, &cv, &pd);
		if (r < 0)
			return tk_fail_diag(d, r, what, &pd);
		r = plan_intersect(cur, cv, &inter);
		if (r < 0)
			return tk_fail(d, r, "%s: %s", what, strerror(-r));
		r = revalidate(inter, &next, &pd);
		if (r < 0) {
			snprintf(what, sizeof(what), "token caveat %zu: effective set", i + 1);
			return tk_fail_diag(d, r, what, &pd);
		}
		sc_plan_free(cur);
		cur = TAKE_PTR(next);
	}
	*ret = TAKE_PTR(cur);
	return 0;
}

/* ---- public ---- */

/* After the chain is checked: schema, expiry, the effective set, the wall
 * clock capped by the remaining lifetime. */
static int verify_signed(const tk_split *s, time_t now, sc_plan **ret_plan, tk_info *ret_info,
			 sc_diag *reterr_diag)
{
	_cleanup_(sc_plan_freep) sc_plan *p = NULL, *capped = NULL;
	tk_parsed t = {};
	sc_diag pd = {};
	char when[64];
	int r;

	r = parse_segments(s, &t, reterr_diag);
	if (r < 0)
		goto out;
	if (now >= t.info.exp) {
		fmt_time(t.info.exp, when, sizeof(when));
		r = tk_fail(reterr_diag, -EKEYEXPIRED, "token expired at %s", when);
		goto out;
	}
	r = effective(&t, t.n_caveats, &p, reterr_diag);
	if (r < 0)
		goto out;
	/* The token's lifetime bounds the run: a sandbox started a second before
	 * expiry gets a second. */
	{
		uint64_t left = (uint64_t)(t.info.exp - now), left_ns;

		if (__builtin_mul_overflow(left, 1000000000ULL, &left_ns))
			left_ns = PLAN_UNLIMITED - 1;
		if (left_ns < p->wall_ns)
			p->wall_ns = left_ns;
	}
	r = revalidate(p, &capped, &pd);
	if (r < 0) {
		r = tk_fail_diag(reterr_diag, r, "token effective set", &pd);
		goto out;
	}
	if (ret_info)
		*ret_info = t.info;
	*ret_plan = TAKE_PTR(capped);
	r = 0;
out:
	tk_parsed_done(&t);
	return r;
}

int tk_verify(const char *token, const uint8_t key[TK_KEY_LEN], time_t now, sc_plan **ret_plan,
	      tk_info *ret_info, sc_diag *reterr_diag)
{
	uint8_t want[TK_SIG_LEN];
	tk_split s;
	int r;

	if (!key || !ret_plan)
		return -EINVAL;
	r = split(token, &s, reterr_diag);
	if (r < 0)
		return r;
	r = chain(&s, key, s.n - 1, want);
	if (r < 0)
		return tk_fail(reterr_diag, r, "cannot compute HMAC-SHA256");
	r = mem_equal_ct(want, s.sig, TK_SIG_LEN) ? 0 : 1;
	explicit_bzero(want, sizeof(want));
	if (r != 0)
		return tk_fail(reterr_diag, -EKEYREJECTED, "token signature invalid");
	return verify_signed(&s, now, ret_plan, ret_info, reterr_diag);
}

int tk_verify_extension(const char *base, const char *token, time_t now, sc_plan **ret_plan,
			tk_info *ret_info, sc_diag *reterr_diag)
{
	uint8_t cur[TK_SIG_LEN];
	tk_split bs, s;
	size_t nb;
	int r = 0;

	if (!ret_plan)
		return -EINVAL;
	r = split(base, &bs, NULL);
	if (r < 0)
		return r == -ENOMEM ? r : -EINVAL; /* ours: the caller's bug */
	r = split(token, &s, reterr_diag);
	if (r < 0)
		return r;
	/* Every segment of base but its signature, byte for byte (the
	 * encoding is canonical, so equal segments are equal bytes), then at
	 * least one caveat of the extension. */
	nb = bs.n - 1;
	for (size_t i = 0; i < nb && i < s.n - 1; i++) {
		if (s.len[i] == bs.len[i] && memcmp(s.seg[i], bs.seg[i], s.len[i]) == 0)
			continue;
		if (i == 0)
			return tk_fail(reterr_diag, -EKEYREJECTED,
				       "the token does not extend the parent's token: the claims "
				       "differ");
		return tk_fail(reterr_diag, -EKEYREJECTED,
			       "the token does not extend the parent's token: caveat %zu differs",
			       i);
	}
	if (s.n < bs.n + 1)
		return tk_fail(reterr_diag, -EKEYREJECTED,
			       "the token does not extend the parent's token: it adds no caveat to "
			       "the parent's %zu",
			       bs.n - 2);
	/* sig_i = HMAC(sig_{i-1}, caveat_i) from base's signature on: what
	 * only a holder of base could compute. */
	memcpy(cur, bs.sig, TK_SIG_LEN);
	for (size_t i = nb; r == 0 && i < s.n - 1; i++)
		r = hmac(cur, sizeof(cur), s.seg[i], s.len[i], cur);
	if (r == 0)
		r = mem_equal_ct(cur, s.sig, TK_SIG_LEN) ? 0 : -EKEYREJECTED;
	explicit_bzero(cur, sizeof(cur));
	if (r == -EKEYREJECTED)
		return tk_fail(reterr_diag, r, "token signature invalid");
	if (r < 0)
		return tk_fail(reterr_diag, r, "cannot compute HMAC-SHA256");
	return verify_signed(&s, now, ret_plan, ret_info, reterr_diag);
}

static int random_id(char out[33])
{
	uint8_t b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -EIO;
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/* "sc1." + segments joined by "." */
static char *join(const char *const *segs, const size_t *lens, size_t n)
{
	size_t total = sizeof(TK_PREFIX), o;
	char *out;

	for (size_t i = 0; i < n; i++)
		if (__builtin_add_overflow(total, lens[i] + 1, &total))
			return NULL;
	out = malloc(total + 1);
	if (!out)
		return NULL;
	memcpy(out, TK_PREFIX, sizeof(TK_PREFIX) - 1);
	o = sizeof(TK_PREFIX) - 1;
	for (size_t i = 0; i < n; i++) {
		out[o++] = '.';
		memcpy(out + o, segs[i], lens[i]);
		o += lens[i];
	}
	out[o] = '\0';
	return out;
}

int tk_mint(const sc_plan *plan, const uint8_t key[TK_KEY_LEN], const char *id, time_t iat,
	    int64_t ttl_s, char **ret_token, sc_diag *reterr_diag)
{
	_cleanup_free_ char *pj = NULL, *cj = NULL, *c64 = NULL, *s64 = NULL, *tok = NULL;
	json_auto_t *pol = NULL, *claims = NULL;
	uint8_t sig[TK_SIG_LEN];
	char rid[33];
	const char *segs[2];
	size_t lens[2];
	int r;

	if (!plan || !key || !ret_token)
		return -EINVAL;
	if (id && !valid_id(id))
		return tk_fail(reterr_diag, -EINVAL,
			       "token id must be 1 to %u letters, digits, \".\", \"_\" or \"-\"",
			       TK_MAX_ID);
	if (ttl_s < 1 || ttl_s > TK_MAX_TTL_S)
		return tk_fail(reterr_diag, -EINVAL, "token lifetime must be from 1 s to 366 days");
	if (iat < 0 || iat > TK_MAX_TIME - ttl_s)
		return tk_fail(reterr_diag, -EINVAL, "the clock is out of range");
	if (!id) {
		r = random_id(rid);
		if (r < 0)
			return tk_fail(reterr_diag, r, "cannot get random bytes");
		id = rid;
	}
	pj = plan_to_json(plan);
	if (!pj)
		return -ENOMEM;
	pol = json_loads(pj, 0, NULL);
	if (!pol)
		return -ENOMEM;
	claims = json_pack("{s:i, s:s, s:I, s:I, s:O}", "v", 1, "id", id, "iat", (json_int_t)iat,
			   "exp", (json_int_t)(iat + ttl_s), "policy", pol);
	if (!claims)
		return -ENOMEM;
	cj = json_dumps(claims, JSON_COMPACT | JSON_SORT_KEYS);
	if (!cj)
		return -ENOMEM;
	c64 = b64url_dup((const uint8_t *)cj, strlen(cj));
	if (!c64)
		return -ENOMEM;
	r = hmac(key, TK_KEY_LEN, c64, strlen(c64), sig);
	if (r < 0)
		return tk_fail(reterr_diag, r, "cannot compute HMAC-SHA256");
	s64 = b64url_dup(sig, sizeof(sig));
	explicit_bzero(sig, sizeof(sig));
	if (!s64)
		return -ENOMEM;
	segs[0] = c64;
	lens[0] = strlen(c64);
	segs[1] = s64;
	lens[1] = strlen(s64);
	tok = join(segs, lens, 2);
	if (!tok)
		return -ENOMEM;
	if (strlen(tok) > TK_MAX_TOKEN_BYTES)
		return tk_fail(reterr_diag, -E2BIG,
			       "the token would be longer than %u bytes; shorten the policy",
			       TK_MAX_TOKEN_BYTES);
	*ret_token = TAKE_PTR(tok);
	return 0;
}

/*
 * A fragment grant with an explicit "at" must name the place the token shows
 * it: verification always uses the token's mapping (plan_check_narrower()
 * cannot tell an explicit "at" equal to the path from an absent one).
 */
static int check_explicit_at(json_t *frag, const sc_plan *cv, const sc_plan *inter, sc_diag *d)
{
	json_t *grants = json_object_get(json_object_get(frag, "fs"), "grants");

	for (size_t i = 0; i < json_array_size(grants) && i < cv->n_grants; i++) {
		if (!json_object_get(json_array_get(grants, i), "at"))
			continue;
		for (size_t j = 0; j < inter->n_grants; j++)
			if (strcmp(inter->grants[j].path, cv->grants[i].path) == 0 &&
			    strcmp(inter->grants[j].at, cv->grants[i].at) != 0)
				return tk_fail(d, -EPERM,
					       "grant %s: \"at\" %s differs from where the token "
					       "shows it (%s); omit \"at\"",
					       cv->grants[i].path, cv->grants[i].at,
					       inter->grants[j].at);
	}
	return 0;
}

int tk_attenuate(const char *token, const char *fragment, size_t fragment_len, time_t exp,
		 char **ret_token, sc_diag *reterr_diag)
{
	_cleanup_(sc_plan_freep) sc_plan *cur = NULL, *cv = NULL, *inter = NULL, *next = NULL;
	_cleanup_free_ char *cj = NULL, *c64 = NULL, *s64 = NULL, *tok = NULL;
	json_auto_t *frag = NULL, *cav = NULL;
	const char *segs[TK_MAX_SEGMENTS + 1];
	size_t lens[TK_MAX_SEGMENTS + 1];
	uint8_t sig[TK_SIG_LEN];
	tk_parsed t = {};
	tk_split s;
	sc_diag pd = {};
	char reason[512], when[64], when2[64];
	int r;

	if (!ret_token)
		return -EINVAL;
	r = split(token, &s, reterr_diag);
	if (r < 0)
		return r;
	r = parse_segments(&s, &t, reterr_diag);
	if (r < 0)
		goto out;
	if (t.n_caveats >= TK_MAX_CAVEATS) {
		r = tk_fail(reterr_diag, -E2BIG, "the token already has %u caveats, the limit",
			    TK_MAX_CAVEATS);
		goto out;
	}
	if (!fragment && exp == 0) {
		r = tk_fail(reterr_diag, -EINVAL, "nothing to add: give a policy or an expiry");
		goto out;
	}
	if (exp != 0 && (exp < 0 || exp > TK_MAX_TIME)) {
		r = tk_fail(reterr_diag, -EINVAL, "expiry out of range");
		goto out;
	}
	if (exp != 0 && exp >= t.info.exp) {
		fmt_time(exp, when, sizeof(when));
		fmt_time(t.info.exp, when2, sizeof(when2));
		r = tk_fail(reterr_diag, -EPERM, "expiry %s is not earlier than the token's %s",
			    when, when2);
		goto out;
	}
	cav = json_object();
	if (!cav) {
		r = -ENOMEM;
		goto out;
	}
	if (exp != 0 && json_object_set_new(cav, "exp", json_integer((json_int_t)exp)) < 0) {
		r = -ENOMEM;
		goto out;
	}
	if (fragment) {
		json_error_t jerr;

		if (fragment_len > TK_MAX_CAVEAT_BYTES) {
			r = tk_fail(reterr_diag, -E2BIG, "the policy is larger than %u bytes",
				    TK_MAX_CAVEAT_BYTES);
			goto out;
		}
		frag = json_loadb(fragment, fragment_len, JSON_REJECT_DUPLICATES, &jerr);
		if (!frag) {
			r = -EBADMSG;
			if (reterr_diag) {
				memset(reterr_diag, 0, sizeof(*reterr_diag));
				snprintf(reterr_diag->message, sizeof(reterr_diag->message), "%s",
					 jerr.text);
				reterr_diag->line = jerr.line > 0 ? jerr.line : 0;
				reterr_diag->column = jerr.column > 0 ? jerr.column : 0;
			}
			goto out;
		}
		r = effective(&t, t.n_caveats, &cur, reterr_diag);
		if (r < 0)
			goto out;
		r = plan_apply_fragment(cur, frag, &cv, &pd);
		if (r < 0) {
			if (reterr_diag)
				*reterr_diag = pd;
			goto out;
		}
		r = plan_check_narrower(cur, cv, reason, sizeof(reason));
		if (r < 0) {
			r = tk_fail(reterr_diag, r, "%s", reason);
			goto out;
		}
		r = plan_intersect(cur, cv, &inter);
		if (r < 0)
			goto out;
		r = check_explicit_at(frag, cv, inter, reterr_diag);
		if (r < 0)
			goto out;
		r = revalidate(inter, &next, &pd);
		if (r < 0) {
			r = tk_fail_diag(reterr_diag, r, "the narrowed set", &pd);
			goto out;
		}
		if (plan_equal(next, cur) && exp == 0) {
			r = tk_fail(reterr_diag, -EINVAL,
				    "the caveat narrows nothing: every value it lists is what the "
				    "token already has");
			goto out;
		}
		if (json_object_set(cav, "policy", frag) < 0) {
			r = -ENOMEM;
			goto out;
		}
	}
	cj = json_dumps(cav, JSON_COMPACT | JSON_SORT_KEYS);
	c64 = cj ? b64url_dup((const uint8_t *)cj, strlen(cj)) : NULL;
	if (!c64) {
		r = -ENOMEM;
		goto out;
	}
	/* The new link is keyed by the old signature, which the holder has. */
	r = hmac(s.sig, TK_SIG_LEN, c64, strlen(c64), sig);
	if (r < 0) {
		r = tk_fail(reterr_diag, r, "cannot compute HMAC-SHA256");
		goto out;
	}
	s64 = b64url_dup(sig, sizeof(sig));
	explicit_bzero(sig, sizeof(sig));
	if (!s64) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i + 1 < s.n; i++) {
		segs[i] = s.seg[i];
		lens[i] = s.len[i];
	}
	segs[s.n - 1] = c64;
	lens[s.n - 1] = strlen(c64);
	segs[s.n] = s64;
	lens[s.n] = strlen(s64);
	tok = join(segs, lens, s.n + 1);
	if (!tok) {
		r = -ENOMEM;
		goto out;
	}
	if (strlen(tok) > TK_MAX_TOKEN_BYTES) {
		r = tk_fail(reterr_diag, -E2BIG, "the token would be longer than %u bytes",
			    TK_MAX_TOKEN_BYTES);
		goto out;
	}
	*ret_token = TAKE_PTR(tok);
	r = 0;
out:
	tk_parsed_done(&t);
	return r;
}

tk_decoded *tk_decoded_free(tk_decoded *d)
{
	if (!d)
		return NULL;
	free(d->claims_json);
	for (size_t i = 0; i < d->n_caveats; i++)
		free(d->caveats_json[i]);
	free(d->caveats_json);
	sc_plan_free(d->effective);
	free(d);
	return NULL;
}

int tk_decode(const char *token, tk_decoded **ret, sc_diag *reterr_diag)
{
	_cleanup_(tk_decoded_freep) tk_decoded *o = NULL;
	tk_parsed t = {};
	tk_split s;
	int r;

	if (!ret)
		return -EINVAL;
	r = split(token, &s, reterr_diag);
	if (r < 0)
		return r;
	r = parse_segments(&s, &t, reterr_diag);
	if (r < 0)
		goto out;
	o = calloc(1, sizeof(*o));
	if (!o || !(o->caveats_json = calloc(t.n_caveats + 1, sizeof(char *)))) {
		r = -ENOMEM;
		goto out;
	}
	o->info = t.info;
	o->effective_error = effective(&t, t.n_caveats, &o->effective, &o->effective_diag);
	o->claims_json = TAKE_PTR(t.claims_json);
	for (size_t i = 0; i < t.n_caveats; i++)
		o->caveats_json[i] = TAKE_PTR(t.caveats_json[i]);
	o->n_caveats = t.n_caveats;
	*ret = TAKE_PTR(o);
	r = 0;
out:
	tk_parsed_done(&t);
	return r;
}

/* ---- keys ---- */

int tk_key_load_diag(const char *path, uint8_t key[TK_KEY_LEN], sc_diag *d)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	uint8_t extra;
	ssize_t n;
	int r;

	if (!path || !key)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		if (r == -ELOOP)
			return tk_fail(d, r, "the key file is a symbolic link; name the file");
		return tk_fail(d, r, "cannot open the key file: %s", strerror(-r));
	}
	if (fstat(fd, &st) < 0)
		return tk_fail(d, -errno, "cannot stat the key file: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return tk_fail(d, -EBADMSG, "the key file is not a regular file");
	/* A key others can read is a key others can mint with. */
	if (st.st_mode & 077)
		return tk_fail(d, -EACCES,
			       "the key file is accessible by group or others (mode %04o); "
			       "chmod 600 it",
			       (unsigned)(st.st_mode & 07777));
	if (st.st_size != TK_KEY_LEN)
		return tk_fail(d, -EBADMSG, "the key file holds %lld bytes, not %d",
			       (long long)st.st_size, TK_KEY_LEN);
	r = io_read_exact(fd, key, TK_KEY_LEN);
	if (r < 0)
		return tk_fail(d, r == -EPIPE ? -EBADMSG : r, "cannot read the key file: %s",
			       strerror(-r));
	do
		n = read(fd, &extra, 1);
	while (n < 0 && errno == EINTR);
	if (n != 0) {
		explicit_bzero(key, TK_KEY_LEN);
		return tk_fail(d, -EBADMSG, "the key file holds more than %d bytes", TK_KEY_LEN);
	}
	return 0;
}

int tk_key_load(const char *path, uint8_t key[TK_KEY_LEN])
{
	return tk_key_load_diag(path, key, NULL);
}

int tk_key_generate(const char *path)
{
	_cleanup_close_ int fd = -1;
	uint8_t key[TK_KEY_LEN];
	int r;

	if (!path)
		return -EINVAL;
	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
		return -EIO;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0) {
		r = -errno;
		explicit_bzero(key, sizeof(key));
		return r;
	}
	r = io_write_all(fd, key, sizeof(key));
	explicit_bzero(key, sizeof(key));
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r < 0) {
		/* Never leave a short key behind for someone to load. */
		(void)unlink(path);
		return r;
	}
	return 0;
}
