/* SPDX-License-Identifier: MIT */
/*
 * Delegation receipts: built by the parent's spawn server for each child,
 * checked offline from the log alone (receipt.h). The check reuses the
 * intersection the token verifier uses (src/policy/intersect.c); it parses
 * plans with plan_parse_json(), which never looks at the host, so a log
 * checks on any machine.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit-internal.h"
#include "audit/receipt.h"
#include "base/cleanup.h"
#include "base/sha256.h"
#include "policy/intersect.h"
#include "token/token.h"

/* Sub-sandboxes whose plans are kept while a log is read: a tree is
 * bounded by max_children per level; more than this is refused. */
#define AU_RECEIPT_SANDBOXES 1024u

int au_plan_digest(json_t *plan, char ret_hex[AU_HASH_HEX + 1])
{
	_cleanup_free_ char *dump = NULL;
	uint8_t md[AU_HASH_BYTES];

	if (!json_is_object(plan))
		return -EINVAL;
	dump = json_dumps(plan, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
	if (!dump)
		return -ENOMEM;
	sha256_parts(dump, strlen(dump), "", 0, "", 0, md);
	au_hex(md, AU_HASH_BYTES, ret_hex);
	return 0;
}

static int digest_of_plan(const sc_plan *p, char hex[AU_HASH_HEX + 1])
{
	_cleanup_free_ char *text = plan_to_json(p);
	_cleanup_json_ json_t *o = text ? json_loads(text, 0, NULL) : NULL;

	return o ? au_plan_digest(o, hex) : -ENOMEM;
}

json_t *au_receipt_build(const sc_plan *parent, const sc_plan *child, const char *child_token,
			 unsigned base_caveats)
{
	_cleanup_(tk_decoded_freep) tk_decoded *dec = NULL;
	char pd[AU_HASH_HEX + 1], cd[AU_HASH_HEX + 1];
	sc_diag d = {0};
	json_t *caveats;

	if (digest_of_plan(parent, pd) < 0 || digest_of_plan(child, cd) < 0 ||
	    tk_decode(child_token, &dec, &d) < 0)
		return NULL;
	caveats = json_array();
	for (size_t i = base_caveats; caveats && i < dec->n_caveats; i++)
		(void)json_array_append_new(caveats, json_loads(dec->caveats_json[i], 0, NULL));
	return json_pack("{s:s, s:s, s:o}", "parent_digest", pd, "child_digest", cd, "caveats",
			 caveats);
}

typedef struct known {
	char id[AU_SANDBOX_ID_MAX + 1];
	sc_plan *plan;
	json_t *json;
	unsigned depth;
} known;

typedef struct checker {
	known *k;
	size_t n;
	char *reason;
	size_t reason_len;
} checker;

__attribute__((format(printf, 2, 3))) static int fail(checker *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(c->reason, c->reason_len, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static known *find(checker *c, const char *id)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->k[i].id, id) == 0)
			return &c->k[i];
	return NULL;
}

/* Parses a recorded plan (pure: no look at the host). */
static int parse_plan(checker *c, json_t *plan, const char *whose, sc_plan **ret)
{
	_cleanup_free_ char *text = NULL;
	sc_diag d = {0};
	int r;

	if (!json_is_object(plan))
		return fail(c, "%s has no plan", whose);
	text = json_dumps(plan, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text)
		return -ENOMEM;
	r = plan_parse_json(text, strlen(text), ret, &d);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return fail(c, "%s: the recorded plan is not a valid plan: %s%s%s", whose, d.path,
			    d.path[0] ? ": " : "", d.message);
	return 0;
}

static int remember(checker *c, const char *id, json_t *plan, unsigned depth, const char *whose)
{
	known *k;
	int r;

	if (strlen(id) > AU_SANDBOX_ID_MAX || !au_valid_sandbox_id(id))
		return fail(c, "%s: not a valid sandbox id", whose);
	if (find(c, id))
		return fail(c, "sandbox %s starts twice", id);
	if (c->n == AU_RECEIPT_SANDBOXES)
		return fail(c, "more than %u sandboxes to check", AU_RECEIPT_SANDBOXES);
	k = &c->k[c->n];
	*k = (known){.depth = depth};
	r = parse_plan(c, plan, whose, &k->plan);
	if (r < 0)
		return r;
	strcpy(k->id, id);
	k->json = json_incref(plan);
	c->n++;
	return 0;
}

static int check_digest(checker *c, json_t *plan, json_t *want, const char *what, const char *id)
{
	char hex[AU_HASH_HEX + 1];
	int r = au_plan_digest(plan, hex);

	if (r < 0)
		return r;
	if (!json_is_string(want) || strcmp(json_string_value(want), hex) != 0)
		return fail(c,
			    "spawn.start of %s: %s is not the digest of the recorded plan (plan "
			    "or receipt edited?)",
			    id, what);
	return 0;
}

/* One spawn.start: the receipt against the parent's and its own plan. */
static int check_spawn(checker *c, json_t *data)
{
	_cleanup_(sc_plan_freep) sc_plan *child = NULL, *inter = NULL;
	const char *id = json_string_value(json_object_get(data, "child"));
	const char *parent = json_string_value(json_object_get(data, "parent"));
	json_t *rc = json_object_get(data, "receipt"), *plan = json_object_get(data, "plan");
	char why[512] = "";
	known *p;
	int r;

	if (!id || !parent)
		return fail(c, "spawn.start without child and parent ids");
	if (!json_is_object(rc))
		return fail(c, "spawn.start of %s has no receipt (written by an older sandcap?)",
			    id);
	if (!json_is_array(json_object_get(rc, "caveats")))
		return fail(c, "spawn.start of %s: the receipt has no caveats list", id);
	p = find(c, parent);
	if (!p)
		return fail(c, "spawn.start of %s: its parent %s did not start before it", id,
			    parent);
	r = check_digest(c, p->json, json_object_get(rc, "parent_digest"), "parent_digest", id);
	if (r == 0)
		r = check_digest(c, plan, json_object_get(rc, "child_digest"), "child_digest", id);
	if (r == 0)
		r = parse_plan(c, plan, id, &child);
	if (r < 0)
		return r;
	/* Within the parent: every value it states (the caveat check of
	 * delegation), and the intersection with the parent is itself. */
	if (plan_check_narrower(p->plan, child, why, sizeof(why)) < 0)
		return fail(c, "spawn.start of %s: its plan is wider than its parent %s's: %s", id,
			    parent, why);
	r = plan_intersect(p->plan, child, &inter);
	if (r < 0)
		return r;
	if (!plan_equal(inter, child))
		return fail(c,
			    "spawn.start of %s: its plan is not within its parent %s's (the "
			    "intersection differs)",
			    id, parent);
	return remember(c, id, plan, p->depth + 1, id);
}

static int feed(checker *c, const au_record *rec, au_receipts_info *info)
{
	int r;

	if (strcmp(rec->event, "sandbox.start") == 0 && c->n == 0)
		return remember(c, rec->sandbox, json_object_get(rec->data, "plan"), 0,
				"sandbox.start");
	if (strcmp(rec->event, "spawn.start") != 0)
		return 0;
	/* A child refused at setup records no plan: nothing was delegated. */
	if (!json_object_get(rec->data, "plan"))
		return 0;
	if (c->n == 0)
		return fail(c, "spawn.start before sandbox.start");
	r = check_spawn(c, rec->data);
	if (r < 0)
		return r;
	info->checked++;
	if (c->k[c->n - 1].depth > info->max_depth)
		info->max_depth = c->k[c->n - 1].depth;
	return 0;
}

int au_receipts_check(FILE *in, au_receipts_info *ret, size_t *reterr_line, char *reason,
		      size_t reason_len)
{
	_cleanup_free_ char *buf = NULL;
	checker c = {.reason = reason, .reason_len = reason_len};
	size_t cap = 0, len = 0;
	bool newline;
	int r = 0;

	*ret = (au_receipts_info){0};
	*reterr_line = 0;
	c.k = calloc(AU_RECEIPT_SANDBOXES, sizeof(*c.k));
	if (!c.k)
		return -ENOMEM;
	for (;;) {
		au_record rec = {0};

		r = au_read_line(in, &buf, &cap, &len, &newline);
		if (r == 0)
			break;
		(*reterr_line)++;
		if (r == -EMSGSIZE) {
			r = fail(&c, "longer than %u bytes", AU_LINE_MAX);
			break;
		}
		if (r < 0)
			break;
		r = au_parse_record(buf, len, &rec, reason, reason_len);
		if (r == 0)
			r = feed(&c, &rec, ret);
		au_record_clear(&rec);
		if (r < 0)
			break;
	}
	if (r == 0 && c.n == 0) {
		r = fail(&c, "no sandbox.start with a plan");
		*reterr_line = 1;
	}
	if (r == 0)
		*reterr_line = 0;
	for (size_t i = 0; i < c.n; i++) {
		sc_plan_free(c.k[i].plan);
		json_decref(c.k[i].json);
	}
	free(c.k);
	return r;
}
