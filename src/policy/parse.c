/* SPDX-License-Identifier: MIT */
/*
 * The policy parser's engine: JSON -> sc_plan, driven by the key table in
 * keys.c. This file knows how values of each type are read; keys.c knows
 * which keys exist and what they mean; host-check.c looks at the host.
 *
 * Everything here treats its input as hostile: every count has a named limit,
 * every string a length limit, every key is known or refused. On failure the
 * diagnostic names the JSON path of the offending value and says what was
 * expected and what was found, in a form that reads well after "FILE: ".
 *
 * Canonical input forms accepted beyond the human ones (so that the output of
 * plan_to_json() parses back to an equal plan):
 *   - sizes may be JSON integers, meaning bytes (same as the digits string);
 *   - null is accepted where a key is KEY_NULLABLE (the default is
 *     "unlimited" or "none") and means exactly that default;
 *   - an egress "methods" list naming every method means "any method".
 * Durations are never integers (a bare number has no unit that makes sense);
 * the canonical form writes them as "<N>ms".
 *
 * plan_parse_json() touches nothing outside its input; plan_parse() (plan.c)
 * adds the host check (paths exist, no symlinks), which only looks (O_PATH,
 * fstat).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/cleanup.h"
#include "base/parse-num.h"
#include "base/path.h"
#include "policy/parse-internal.h"
#include "policy/plan.h"
#include "policy/policy-internal.h"

const char *const plan_method_names[] = {
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT",
};

/* ---- diagnostics ---- */

static size_t path_push(pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t path_push(pctx *c, const char *fmt, ...)
{
	size_t saved = c->plen;
	va_list ap;
	int n;

	if (c->plen >= sizeof(c->path) - 1)
		return saved;
	va_start(ap, fmt);
	n = vsnprintf(c->path + c->plen, sizeof(c->path) - c->plen, fmt, ap);
	va_end(ap);
	if (n < 0)
		c->path[c->plen] = '\0';
	else if ((size_t)n >= sizeof(c->path) - c->plen)
		c->plen = sizeof(c->path) - 1;
	else
		c->plen += (size_t)n;
	return saved;
}

void path_pop(pctx *c, size_t saved)
{
	c->plen = saved;
	c->path[saved] = '\0';
}

/*
 * ASCII classes: <ctype.h> depends on the locale the CLI may set, and a byte
 * that is a letter in Latin-1 must not become valid in a host name.
 */
bool a_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool a_alpha(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

bool a_alnum(char ch)
{
	return a_alpha(ch) || a_digit(ch);
}

char a_lower(char ch)
{
	return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

bool is_ident(const char *s)
{
	if (!(a_alpha(*s) || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!(a_alnum(*s) || *s == '_'))
			return false;
	return true;
}

void quote(const char *s, size_t max, char *buf, size_t size)
{
	size_t o = 0, i;

	if (size < 16) {
		if (size)
			buf[0] = '\0';
		return;
	}
	buf[o++] = '"';
	for (i = 0; s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];

		/* Room for the longest escape (6), "..." and the closing quote. */
		if (i >= max || o + 12 >= size) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (ch == '"' || ch == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			o += (size_t)snprintf(buf + o, size - o, "\\u%04x", ch);
		} else {
			buf[o++] = (char)ch;
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
}

size_t path_push_key(pctx *c, const char *key)
{
	char q[160];

	if (is_ident(key) && strlen(key) <= 64)
		return path_push(c, ".%s", key);
	quote(key, 64, q, sizeof(q));
	return path_push(c, "[%s]", q);
}

size_t path_push_index(pctx *c, size_t i)
{
	return path_push(c, "[%zu]", i);
}

/* What was found, for "got ...". */
static void describe_json(const json_t *v, char *buf, size_t size)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		quote(json_string_value(v), 64, buf, size);
		return;
	case JSON_INTEGER:
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return;
	case JSON_REAL:
		snprintf(buf, size, "%g", json_real_value(v));
		return;
	case JSON_TRUE:
		snprintf(buf, size, "true");
		return;
	case JSON_FALSE:
		snprintf(buf, size, "false");
		return;
	case JSON_NULL:
		snprintf(buf, size, "null");
		return;
	case JSON_ARRAY:
		snprintf(buf, size, "an array");
		return;
	case JSON_OBJECT:
		snprintf(buf, size, "an object");
		return;
	}
	snprintf(buf, size, "an unknown value");
}

int fail(pctx *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (!c->diag)
		return err < 0 ? err : -EINVAL;
	memset(c->diag, 0, sizeof(*c->diag));
	if (c->plen < sizeof(c->diag->path)) {
		memcpy(c->diag->path, c->path, c->plen + 1);
	} else {
		/* Keep the tail: it names the offending key. */
		size_t keep = sizeof(c->diag->path) - 4;

		memcpy(c->diag->path, "...", 3);
		memcpy(c->diag->path + 3, c->path + c->plen - keep, keep + 1);
	}
	va_start(ap, fmt);
	(void)vsnprintf(c->diag->message, sizeof(c->diag->message), fmt, ap);
	va_end(ap);
	return err < 0 ? err : -EINVAL;
}

int fail_expected(pctx *c, const json_t *v, const char *what)
{
	char got[160];

	describe_json(v, got, sizeof(got));
	return fail(c, -EINVAL, "expected %s, got %s", what, got);
}

/* ---- primitive values ---- */

int want_array(pctx *c, const json_t *x, const char *items, size_t max, size_t elem_size,
	       void **ret, size_t *ret_n)
{
	char what[64];
	size_t n;

	if (!json_is_array(x)) {
		(void)snprintf(what, sizeof(what), "an array of %s", items);
		return fail_expected(c, x, what);
	}
	n = json_array_size(x);
	if (n > max)
		return fail(c, -E2BIG, "%zu %s, more than the limit of %zu", n, items, max);
	*ret = NULL;
	if (n) {
		*ret = calloc(n, elem_size);
		if (!*ret)
			return -ENOMEM;
	}
	*ret_n = n;
	return 0;
}

int want_string(pctx *c, const json_t *v, const char **ret)
{
	size_t len;

	if (!json_is_string(v))
		return fail_expected(c, v, "a string");
	len = json_string_length(v);
	if (len > POLICY_MAX_STRING)
		return fail(c, -E2BIG, "string of %zu bytes is longer than the limit of %u", len,
			    POLICY_MAX_STRING);
	/* jansson refuses \u0000 unless JSON_ALLOW_NUL, so strlen == len. */
	*ret = json_string_value(v);
	return 0;
}

int want_uint(pctx *c, const json_t *v, uint64_t min, uint64_t max, uint64_t *ret)
{
	char what[96];
	json_int_t i;

	snprintf(what, sizeof(what), "an integer from %" PRIu64 " to %" PRIu64, min, max);
	if (!json_is_integer(v))
		return fail_expected(c, v, what);
	i = json_integer_value(v);
	if (i < 0 || (uint64_t)i < min || (uint64_t)i > max)
		return fail_expected(c, v, what);
	*ret = (uint64_t)i;
	return 0;
}

/* One of names[]; *ret is the index. */
static int want_enum(pctx *c, const json_t *v, const char *const *names, size_t n, int *ret)
{
	char what[256];
	size_t o = 0, i;

	if (json_is_string(v))
		for (i = 0; i < n; i++)
			if (strcmp(json_string_value(v), names[i]) == 0) {
				*ret = (int)i;
				return 0;
			}
	if (n == 2) {
		snprintf(what, sizeof(what), "\"%s\" or \"%s\"", names[0], names[1]);
	} else {
		o = (size_t)snprintf(what, sizeof(what), "one of");
		for (i = 0; i < n && o < sizeof(what); i++)
			o += (size_t)snprintf(what + o, sizeof(what) - o, "%s \"%s\"", i ? "," : "",
					      names[i]);
	}
	return fail_expected(c, v, what);
}

#define SIZE_WHAT     "a size such as \"64M\" (a number of bytes with an optional unit K, M, G or T)"
#define DURATION_WHAT "a duration such as \"30s\" (a number with a unit ms, s, m or h)"

/* A size: "64M", "4096", or (canonical form) a JSON integer of bytes. */
static int want_size(pctx *c, const json_t *v, uint64_t *ret)
{
	uint64_t x;
	int r;

	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return fail_expected(c, v, SIZE_WHAT);
		x = (uint64_t)json_integer_value(v);
	} else if (json_is_string(v)) {
		r = parse_size(json_string_value(v), &x);
		if (r == -ERANGE)
			return fail_expected(c, v, "a size below 8E");
		if (r < 0)
			return fail_expected(c, v, SIZE_WHAT);
	} else {
		return fail_expected(c, v, SIZE_WHAT);
	}
	/* Canonical output writes sizes as JSON integers, which are signed 64-bit. */
	if (x > (uint64_t)INT64_MAX)
		return fail_expected(c, v, "a size below 8E");
	*ret = x;
	return 0;
}

static int want_duration(pctx *c, const json_t *v, uint64_t *ret)
{
	uint64_t x;
	int r;

	if (!json_is_string(v))
		return fail_expected(c, v, DURATION_WHAT);
	r = parse_duration_ns(json_string_value(v), &x);
	if (r == -ERANGE || (r >= 0 && x == PLAN_UNLIMITED))
		return fail_expected(c, v, "a duration below 584 years");
	if (r < 0)
		return fail_expected(c, v, DURATION_WHAT);
	*ret = x;
	return 0;
}

/*
 * An absolute path, normalised: repeated "/" and "." components dropped, no
 * trailing "/". ".." is refused rather than resolved: lexically resolving it
 * would disagree with the kernel whenever a component is a symlink.
 */
int want_abs_path(pctx *c, const json_t *v, char **ret)
{
	_cleanup_free_ char *out = NULL;
	const char *s = NULL, *p;
	char q[160];
	size_t o = 0;
	int r;

	r = want_string(c, v, &s);
	if (r < 0)
		return r;
	if (s[0] != '/')
		return fail_expected(c, v, "an absolute path (starting with \"/\")");
	if (strlen(s) >= PATH_MAX)
		return fail(c, -ENAMETOOLONG, "path is longer than %d bytes", PATH_MAX - 1);
	/* Legal in file names, but never meant in a policy, and they would let a
	 * path rewrite the terminal that shows "sandcap check". */
	for (p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			quote(s, 128, q, sizeof(q));
			return fail(c, -EINVAL, "path %s contains a control character", q);
		}
	out = malloc(strlen(s) + 2);
	if (!out)
		return -ENOMEM;
	for (p = s; *p;) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n == 1 && p[0] == '.') {
			p += n;
			continue;
		}
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			quote(s, 128, q, sizeof(q));
			return fail(c, -EINVAL, "path %s contains \"..\"; write the path it means",
				    q);
		}
		if (n > NAME_MAX)
			return fail(c, -ENAMETOOLONG,
				    "a component of the path is longer than %d bytes", NAME_MAX);
		out[o++] = '/';
		memcpy(out + o, p, n);
		o += n;
		p += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	*ret = TAKE_PTR(out);
	return 0;
}

/* ---- the table walk ---- */

void store_uint(void *field, size_t width, uint64_t v)
{
	switch (width) {
	case 1: {
		uint8_t x = (uint8_t)v;

		memcpy(field, &x, 1);
		break;
	}
	case 2: {
		uint16_t x = (uint16_t)v;

		memcpy(field, &x, 2);
		break;
	}
	case 4: {
		uint32_t x = (uint32_t)v;

		memcpy(field, &x, 4);
		break;
	}
	case 8:
		memcpy(field, &v, 8);
		break;
	default:
		break;
	}
}

static bool has_string_field(const policy_key *k)
{
	return k->type == KT_STRING || k->type == KT_PATH || k->type == KT_HOST_PATH;
}

static int set_string(void *field, const char *s)
{
	char **dst = field, *dup = NULL;

	if (s) {
		dup = strdup(s);
		if (!dup)
			return -ENOMEM;
	}
	free(*dst);
	*dst = dup;
	return 0;
}

int apply_defaults(const key_table *t, void *base)
{
	for (size_t i = 0; i < t->n_keys; i++) {
		const policy_key *k = &t->keys[i];
		int r;

		/* A list's table describes its elements, which start empty. */
		if (k->sub && k->type != KT_LIST) {
			r = apply_defaults(k->sub, base);
			if (r < 0)
				return r;
		}
		if (has_string_field(k) && k->def_str) {
			r = set_string(key_field(k, base), k->def_str);
			if (r < 0)
				return r;
		} else if (k->width && k->type != KT_LIST && !has_string_field(k)) {
			store_uint(key_field(k, base), k->width, k->def);
		}
	}
	if (t->init)
		t->init(base);
	return 0;
}

/* Refuses keys the table does not list, naming the ones it does. */
static int check_keys(pctx *c, const json_t *obj, const key_table *t)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
	{
		char list[512] = "", q[160];
		size_t i, o = 0;
		bool ok = false;

		for (i = 0; i < t->n_keys && !ok; i++)
			ok = strcmp(key, t->keys[i].name) == 0;
		if (ok)
			continue;
		for (i = 0; i < t->n_keys && o < sizeof(list); i++)
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "",
					      t->keys[i].name);
		(void)path_push_key(c, key);
		quote(key, 64, q, sizeof(q));
		return fail(c, -EINVAL, "unknown key %s (expected one of: %s)", q, list);
	}
	return 0;
}

/* The keys of one object, in table order (the order cross-references need). */
static int parse_keys(pctx *c, const json_t *v, const key_table *t, void *base, size_t index)
{
	int r;

	if (!json_is_object(v))
		return fail_expected(c, v, "an object");
	r = check_keys(c, v, t);
	if (r < 0)
		return r;
	for (size_t i = 0; i < t->n_keys; i++) {
		const policy_key *k = &t->keys[i];
		const json_t *x = json_object_get(v, k->name);
		size_t s;

		if (!x) {
			if (k->flags & KEY_REQUIRED)
				return fail(c, -EINVAL, "missing required key \"%s\"%s%s", k->name,
					    k->missing ? " " : "", k->missing ? k->missing : "");
			continue;
		}
		s = path_push_key(c, k->name);
		r = parse_value(c, x, k, base);
		if (r < 0)
			return r;
		path_pop(c, s);
	}
	return t->finish ? t->finish(c, v, base, index) : 0;
}

int parse_object(pctx *c, const json_t *v, const key_table *t, void *base)
{
	return parse_keys(c, v, t, base, 0);
}

static int parse_list(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	size_t *count = (size_t *)((char *)base + k->count_off);
	void **arr = key_field(k, base);
	size_t n;
	int r;

	r = want_array(c, v, k->items, k->max_items, k->elem_size, arr, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		void *elem = (char *)*arr + i * k->elem_size;
		size_t s = path_push_index(c, i);

		/* Counted before it is filled, so that sc_plan_free() frees it. */
		*count = i + 1;
		r = apply_defaults(k->sub, elem);
		if (r < 0)
			return r;
		r = parse_keys(c, json_array_get(v, i), k->sub, elem, i);
		if (r < 0)
			return r;
		path_pop(c, s);
	}
	return 0;
}

/* Out of a key's range: its own words when it has them. */
static int fail_range(pctx *c, const json_t *v, const policy_key *k, const char *generic)
{
	return fail_expected(c, v, k->what ? k->what : generic);
}

/* A size or a duration (want parses it), held to the key's minimum. */
static int parse_at_least(pctx *c, const json_t *v, const policy_key *k, void *field,
			  int (*want)(pctx *, const json_t *, uint64_t *), const char *generic)
{
	uint64_t u = 0;
	int r = want(c, v, &u);

	if (r < 0)
		return r;
	if (u < k->min)
		return fail_range(c, v, k, generic);
	store_uint(field, k->width, u);
	return 0;
}

int parse_value(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	void *field = key_field(k, base);
	uint64_t u = 0;
	int r, m = 0;

	if ((k->flags & KEY_NULLABLE) && json_is_null(v))
		return 0; /* the default, set before parsing */
	switch (k->type) {
	case KT_SECTION:
		return parse_object(c, v, k->sub, base);
	case KT_LIST:
		return parse_list(c, v, k, base);
	case KT_BOOL:
		if (!json_is_boolean(v))
			return fail_expected(c, v, "true or false");
		store_uint(field, k->width, json_is_true(v));
		return 0;
	case KT_UINT:
		if (k->what) {
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    (uint64_t)json_integer_value(v) < k->min ||
			    (uint64_t)json_integer_value(v) > k->max)
				return fail_expected(c, v, k->what);
			u = (uint64_t)json_integer_value(v);
		} else {
			r = want_uint(c, v, k->min, k->max, &u);
			if (r < 0)
				return r;
		}
		store_uint(field, k->width, u);
		return 0;
	case KT_SIZE:
		return parse_at_least(c, v, k, field, want_size, "a size above 0");
	case KT_DURATION:
		return parse_at_least(c, v, k, field, want_duration, "a duration above 0");
	case KT_ENUM:
		r = want_enum(c, v, k->names, k->n_names, &m);
		if (r < 0)
			return r;
		store_uint(field, k->width, k->values ? (uint64_t)k->values[m] : (uint64_t)m);
		return 0;
	case KT_STRING: {
		const char *s = NULL;

		r = want_string(c, v, &s);
		if (r < 0)
			return r;
		if (k->check) {
			r = k->check(c, v, s);
			if (r < 0)
				return r;
		}
		return set_string(field, s);
	}
	case KT_PATH:
	case KT_HOST_PATH: {
		_cleanup_free_ char *s = NULL;

		r = want_abs_path(c, v, &s);
		if (r < 0)
			return r;
		if (k->check) {
			r = k->check(c, v, s);
			if (r < 0)
				return r;
		}
		free(*(char **)field);
		*(char **)field = TAKE_PTR(s);
		return 0;
	}
	case KT_CUSTOM:
		return k->parse(c, v, k, base);
	case _KT_MAX:
	case _KT_INVALID:
		break;
	}
	return -EINVAL;
}

/* ---- entry points ---- */

static void plan_freep_local(sc_plan **p)
{
	sc_plan_free(*p);
}

int plan_parse_json(const char *buf, size_t len, sc_plan **ret_plan, sc_diag *reterr_diag)
{
	_cleanup_(json_decrefp) json_t *root = NULL;
	_cleanup_(plan_freep_local) sc_plan *p = NULL;
	pctx c = {.path = "$", .plen = 1, .diag = reterr_diag};
	json_error_t jerr;
	int r;

	if (reterr_diag)
		memset(reterr_diag, 0, sizeof(*reterr_diag));
	if (!ret_plan || (!buf && len))
		return fail(&c, -EINVAL, "no policy given");
	if (len > POLICY_MAX_BYTES)
		return fail(&c, -E2BIG, "policy is %zu bytes, more than the limit of %u", len,
			    POLICY_MAX_BYTES);

	root = json_loadb(buf ? buf : "", len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (reterr_diag) {
			memset(reterr_diag, 0, sizeof(*reterr_diag));
			snprintf(reterr_diag->message, sizeof(reterr_diag->message), "%s",
				 jerr.text);
			reterr_diag->line = jerr.line > 0 ? jerr.line : 0;
			reterr_diag->column = jerr.column > 0 ? jerr.column : 0;
		}
		return -EBADMSG;
	}

	p = calloc(1, sizeof(*p));
	if (!p)
		return fail(&c, -ENOMEM, "%s", strerror(ENOMEM));
	c.plan = p;
	r = apply_defaults(&policy_root, p);
	if (r >= 0)
		r = parse_object(&c, root, &policy_root, p);
	if (r < 0) {
		/* Every refusal explains itself; only allocation failures get here
		 * without a message. */
		if (reterr_diag && !reterr_diag->message[0])
			(void)fail(&c, r, "%s", strerror(-r));
		return r;
	}
	*ret_plan = TAKE_PTR(p);
	return 0;
}

void plan_paths_free(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

int plan_paths_dup(char *const *paths, size_t n, char ***ret, size_t *ret_n)
{
	*ret = NULL;
	*ret_n = 0;
	if (n == 0)
		return 0;
	*ret = calloc(n, sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		(*ret)[i] = strdup(paths[i]);
		if (!(*ret)[i])
			return -ENOMEM; /* the caller frees the *ret_n copied */
		(*ret_n)++;
	}
	return 0;
}

sc_plan *sc_plan_free(sc_plan *p)
{
	if (!p)
		return NULL;
	free(p->name);
	free(p->rootfs);
	for (size_t i = 0; i < p->n_grants; i++) {
		free(p->grants[i].path);
		free(p->grants[i].at);
	}
	free(p->grants);
	free(p->workdir);
	for (size_t i = 0; i < p->n_egress; i++) {
		free(p->egress[i].host);
		plan_paths_free(p->egress[i].paths, p->egress[i].n_paths);
	}
	free(p->egress);
	free(p->allow_private);
	free(p->serve);
	for (size_t i = 0; i < p->n_credentials; i++) {
		free(p->credentials[i].name);
		plan_paths_free(p->credentials[i].paths, p->credentials[i].n_paths);
		free(p->credentials[i].host);
		free(p->credentials[i].header);
		free(p->credentials[i].value_env);
		free(p->credentials[i].value_file);
		free(p->credentials[i].format);
		free(p->credentials[i].placeholder_env);
	}
	free(p->credentials);
	free(p->upstream_ca);
	free(p->dns);
	free(p->extra_filter);
	for (size_t i = 0; i < p->n_env; i++)
		free(p->env[i]);
	free(p->env);
	free(p->hostname);
	free(p);
	return NULL;
}

const plan_grant *plan_grant_containing(const sc_plan *p, const char *host_path)
{
	if (!p || !host_path)
		return NULL;
	for (size_t i = 0; i < p->n_grants; i++)
		if (path_is_under(host_path, p->grants[i].path))
			return &p->grants[i];
	return NULL;
}

void plan_cidr_format(const plan_cidr *c, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(c->family == AF_INET ? AF_INET : AF_INET6, c->addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	snprintf(buf, size, "%s/%u", a, c->prefix);
}

bool plan_inspects(const sc_plan *p)
{
	for (size_t i = 0; i < p->n_egress; i++)
		if (p->egress[i].inspect)
			return true;
	for (size_t i = 0; i < p->n_credentials; i++)
		if (p->credentials[i].placeholder_env)
			return true;
	return false;
}
