/* SPDX-License-Identifier: MIT */
/*
 * `sandcap audit report`: what it could access, what it consumed, what it
 * did, where it was stopped. Streams the log once; everything kept is
 * bounded (lists keep their first REPORT_LIST_MAX items and a count, tables
 * REPORT_TABLE_MAX keys), whatever the log's length. Every string shown comes
 * from the sandbox and is printed with control and non-ASCII bytes escaped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit-internal.h"
#include "base/cleanup.h"

#define REPORT_LIST_MAX	  8u   /* items kept per list */
#define REPORT_TABLE_MAX  16u  /* keys kept per counting table */
#define REPORT_STR_MAX	  160u /* bytes kept of one string */
#define REPORT_ARGV_MAX	  16u  /* argv elements kept per process */
#define REPORT_PLAN_ITEMS 12u  /* grants / egress rules shown in text */
#define REPORT_KEY_MAX	  96u

typedef struct blist {
	json_t *items; /* at most REPORT_LIST_MAX trimmed objects */
	uint64_t count;
} blist;

typedef struct counter {
	char key[REPORT_KEY_MAX];
	uint64_t count;
	uint64_t bytes_out;
	uint64_t bytes_in;
	char detail[REPORT_STR_MAX];
} counter;

typedef struct ctable {
	counter e[REPORT_TABLE_MAX];
	size_t n;
	uint64_t other_keys;  /* keys that did not fit */
	uint64_t other_count; /* their events */
} ctable;

typedef struct report {
	uint64_t lines;
	uint64_t records;    /* lines that parsed as records */
	uint64_t unreadable; /* lines that did not */
	au_chain chain;
	bool chain_ok;
	uint64_t err_line;
	char err_reason[256];
	char sandbox[AU_SANDBOX_ID_MAX + 1];
	char first_ts[AU_TS_LEN + 1];
	char last_ts[AU_TS_LEN + 1];
	uint8_t last_hash[AU_HASH_BYTES];
	bool sealed, keyed;

	json_t *start; /* sandbox.start data: one line, so bounded by AU_LINE_MAX */
	json_t *exit;  /* sandbox.exit data */
	blist grants;  /* fs.grant */
	blist procs;   /* proc.exec */
	blist net;     /* net.request, allowed */
	blist files;   /* fs.write */
	blist denied;  /* net.denied and denied net.request */
	ctable hosts;  /* allowed traffic per host */
	ctable syscalls;
	ctable limits;
	ctable other_events;
	uint64_t net_bytes_out, net_bytes_in, tunnels;
	uint64_t syscalls_denied, limits_hit;
} report;

static void jsonp(json_t **j)
{
	json_decref(*j);
}

static bool get_u64(json_t *obj, const char *key, uint64_t *ret)
{
	json_t *v = json_object_get(obj, key);

	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*ret = (uint64_t)json_integer_value(v);
		return true;
	}
	if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 1.8e19) {
		*ret = (uint64_t)json_real_value(v);
		return true;
	}
	return false;
}

static const char *get_str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

static void sat_add(uint64_t *a, uint64_t b)
{
	if (__builtin_add_overflow(*a, b, a))
		*a = UINT64_MAX;
}

/* A bounded copy of a scalar or of an array of scalars. */
static json_t *trim(json_t *v)
{
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);

		return n > REPORT_STR_MAX ? au_str(s, n, REPORT_STR_MAX) : json_copy(v);
	}
	if (json_is_array(v)) {
		json_t *a = json_array(), *x;
		size_t i;

		if (!a)
			return NULL;
		json_array_foreach(v, i, x)
		{
			if (i == REPORT_ARGV_MAX) {
				(void)json_array_append_new(a, json_string("..."));
				break;
			}
			if (json_is_array(x) || json_is_object(x))
				continue;
			(void)json_array_append_new(a, trim(x));
		}
		return a;
	}
	if (json_is_object(v))
		return json_string("{...}");
	return json_copy(v);
}

/* The listed keys of data, trimmed, or NULL when out of memory. */
static json_t *pick(json_t *data, const char *const *keys)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	for (; *keys; keys++) {
		json_t *v = json_object_get(data, *keys);

		if (v)
			(void)json_object_set_new(o, *keys, trim(v));
	}
	return o;
}

static int blist_add(blist *l, json_t *data, const char *const *keys)
{
	json_t *item;

	sat_add(&l->count, 1);
	if (json_array_size(l->items) >= REPORT_LIST_MAX)
		return 0;
	item = pick(data, keys);
	if (!item)
		return -ENOMEM;
	return json_array_append_new(l->items, item) < 0 ? -ENOMEM : 0;
}

static counter *ctable_get(ctable *t, const char *key)
{
	char k[REPORT_KEY_MAX];

	(void)snprintf(k, sizeof(k), "%s", key ? key : "?");
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->e[i].key, k) == 0)
			return &t->e[i];
	if (t->n == REPORT_TABLE_MAX) {
		t->other_keys++; /* an upper bound: repeated overflow keys count again */
		t->other_count++;
		return NULL;
	}
	strcpy(t->e[t->n].key, k);
	return &t->e[t->n++];
}

static void ctable_count(ctable *t, const char *key, const char *detail)
{
	counter *c = ctable_get(t, key);

	if (!c)
		return;
	sat_add(&c->count, 1);
	if (detail && !c->detail[0])
		(void)snprintf(c->detail, sizeof(c->detail), "%s", detail);
}

static const char *const proc_keys[] = {"pid", "path", "argv", NULL};
static const char *const net_keys[] = {"method", "host",	"port",	     "path",
				       "addr",	 "status",	"bytes_out", "bytes_in",
				       "rule",	 "duration_ms", NULL};
static const char *const denied_keys[] = {"method", "host", "port", "path", "reason", NULL};
static const char *const file_keys[] = {"path", "op", NULL};
static const char *const grant_keys[] = {"path", "at", "mode", NULL};

static int account_traffic(report *rp, json_t *data)
{
	uint64_t out = 0, in = 0;
	counter *c;

	(void)get_u64(data, "bytes_out", &out);
	(void)get_u64(data, "bytes_in", &in);
	sat_add(&rp->net_bytes_out, out);
	sat_add(&rp->net_bytes_in, in);
	c = ctable_get(&rp->hosts, get_str(data, "host"));
	if (c) {
		sat_add(&c->bytes_out, out);
		sat_add(&c->bytes_in, in);
	}
	return 0;
}

static int handle_event(report *rp, const char *event, json_t *data)
{
	if (strcmp(event, "sandbox.start") == 0) {
		if (!rp->start)
			rp->start = json_incref(data);
	} else if (strcmp(event, "sandbox.exit") == 0) {
		json_decref(rp->exit);
		rp->exit = json_incref(data);
	} else if (strcmp(event, "fs.grant") == 0) {
		return blist_add(&rp->grants, data, grant_keys);
	} else if (strcmp(event, "proc.exec") == 0) {
		return blist_add(&rp->procs, data, proc_keys);
	} else if (strcmp(event, "net.request") == 0) {
		const char *d = get_str(data, "decision");

		if (d && strcmp(d, "allow") != 0)
			return blist_add(&rp->denied, data, denied_keys);
		(void)account_traffic(rp, data);
		counter *c = ctable_get(&rp->hosts, get_str(data, "host"));
		if (c)
			sat_add(&c->count, 1);
		return blist_add(&rp->net, data, net_keys);
	} else if (strcmp(event, "net.tunnel.close") == 0) {
		sat_add(&rp->tunnels, 1);
		return account_traffic(rp, data);
	} else if (strcmp(event, "net.denied") == 0) {
		return blist_add(&rp->denied, data, denied_keys);
	} else if (strcmp(event, "syscall.denied") == 0) {
		sat_add(&rp->syscalls_denied, 1);
		ctable_count(&rp->syscalls, get_str(data, "syscall"), NULL);
	} else if (strcmp(event, "limit.hit") == 0) {
		sat_add(&rp->limits_hit, 1);
		ctable_count(&rp->limits, get_str(data, "limit"), get_str(data, "detail"));
	} else if (strcmp(event, "fs.write") == 0) {
		return blist_add(&rp->files, data, file_keys);
	} else if (strcmp(event, AU_SEAL_EVENT) == 0) {
		rp->sealed = true;
		rp->keyed = json_is_true(json_object_get(data, "keyed"));
	} else {
		ctable_count(&rp->other_events, event, NULL);
	}
	return 0;
}

static void chain_broken(report *rp, uint64_t line, const char *reason)
{
	if (!rp->chain_ok)
		return;
	rp->chain_ok = false;
	rp->err_line = line;
	(void)snprintf(rp->err_reason, sizeof(rp->err_reason), "%s", reason);
}

static int report_line(report *rp, const char *line, size_t len, bool newline)
{
	au_record rec = {0};
	char reason[256];
	int r;

	rp->lines++;
	r = au_parse_record(line, len, &rec, reason, sizeof(reason));
	if (r < 0) {
		rp->unreadable++;
		chain_broken(rp, rp->lines,
			     newline ? reason : "incomplete record at the end (write cut off?)");
		return 0;
	}
	rp->records++;
	if (rp->chain_ok) {
		r = au_chain_feed(&rp->chain, &rec, line, reason, sizeof(reason));
		if (r == -EBADMSG)
			chain_broken(rp, rp->lines, reason);
		else if (r < 0) {
			au_record_clear(&rec);
			return r;
		} else if (!newline)
			chain_broken(rp, rp->lines, "no newline at the end (write cut off?)");
	}
	if (!rp->sandbox[0])
		strcpy(rp->sandbox, rec.sandbox);
	if (!rp->first_ts[0])
		strcpy(rp->first_ts, rec.ts);
	strcpy(rp->last_ts, rec.ts);
	memcpy(rp->last_hash, rec.hash, AU_HASH_BYTES);
	r = handle_event(rp, rec.event, rec.data);
	au_record_clear(&rec);
	return r;
}

/* ---- plain text ---- */

/* Bytes from the sandbox: printable ASCII as is, everything else \xNN. */
static void put_safe(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f)
			(void)fputc(c, out);
		else
			(void)fprintf(out, "\\x%02x", c);
	}
}

static void put_scalar(FILE *out, json_t *v)
{
	if (json_is_string(v))
		put_safe(out, json_string_value(v));
	else if (json_is_integer(v))
		(void)fprintf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		(void)fprintf(out, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		(void)fputs(json_is_true(v) ? "yes" : "no", out);
	else if (json_is_null(v))
		(void)fputs("none", out);
	else if (json_is_array(v)) {
		json_t *x;
		size_t i;

		json_array_foreach(v, i, x)
		{
			if (i)
				(void)fputc(',', out);
			if (i == REPORT_ARGV_MAX) {
				(void)fputs("...", out);
				break;
			}
			put_scalar(out, x);
		}
	} else
		(void)fputs("{...}", out);
}

static void put_size(FILE *out, uint64_t b)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	size_t u = 0;

	while (v >= 1024 && u + 1 < ELEMENTSOF(unit)) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		(void)fprintf(out, "%" PRIu64 " B", b);
	else
		(void)fprintf(out, "%.1f %s", v, unit[u]);
}

static void put_secs(FILE *out, uint64_t ns)
{
	(void)fprintf(out, "%.2f s", (double)ns / 1e9);
}

static bool key_is(const char *k, const char *const *set)
{
	for (; *set; set++)
		if (strcmp(k, *set) == 0)
			return true;
	return false;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A plan value, in human units when the key says what it measures. The
 * plan serialisation may use raw numbers or the policy's own strings. */
static void put_value(FILE *out, const char *key, json_t *v)
{
	static const char *const sizes[] = {
	    "memory",
	    "fsize",
	    "tmp_size",
	    "bandwidth",
	    "egress_budget",
	    "max_request_body",
	    "max_response_body",
	    NULL,
	};
	uint64_t n;

	if (json_is_integer(v) && json_integer_value(v) >= 0)
		n = (uint64_t)json_integer_value(v);
	else if (json_is_real(v) && json_real_value(v) >= 1.8e19)
		n = PLAN_UNLIMITED;
	else {
		put_scalar(out, v);
		return;
	}
	if (n == PLAN_UNLIMITED || (json_is_real(v) && n >= (uint64_t)INT64_MAX))
		(void)fputs("unlimited", out);
	else if (key_is(key, sizes))
		put_size(out, n);
	else if (ends_with(key, "_ns"))
		put_secs(out, n);
	else if (ends_with(key, "_millis"))
		(void)fprintf(out, "%.3g", (double)n / 1000);
	else
		put_scalar(out, v);
}

/* A plan key without the unit suffix that put_value() turns into a unit. */
static void put_key(FILE *out, const char *k)
{
	size_t n = strlen(k);

	if (ends_with(k, "_ns"))
		n -= 3;
	else if (ends_with(k, "_millis"))
		n -= 7;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)k[i];

		if (c >= 0x20 && c < 0x7f)
			(void)fputc(c, out);
		else
			(void)fprintf(out, "\\x%02x", c);
	}
}

static void put_words(FILE *out, json_t *argv)
{
	json_t *a;
	size_t j;

	json_array_foreach(argv, j, a)
	{
		if (j)
			(void)fputc(' ', out);
		put_scalar(out, a);
	}
}

static void put_more(FILE *out, const blist *l)
{
	if (l->count > json_array_size(l->items))
		(void)fprintf(out, "    ...and %" PRIu64 " more\n",
			      l->count - json_array_size(l->items));
}

static void text_access(FILE *out, const report *rp)
{
	json_t *plan = json_object_get(rp->start, "plan");
	json_t *fs = json_object_get(plan, "fs"), *net = json_object_get(plan, "net");
	json_t *grants = json_object_get(fs, "grants"), *egress = json_object_get(net, "egress");
	json_t *limits = json_object_get(plan, "limits"), *layers, *v, *x;
	const char *k;
	size_t i;

	(void)fputs("\nWhat it could access\n", out);
	if (!rp->start) {
		(void)fputs("  (no sandbox.start record: the capability set is unknown)\n", out);
		return;
	}
	v = json_object_get(rp->start, "command");
	if (v) {
		(void)fputs("  command   ", out);
		if (json_is_array(v))
			put_words(out, v);
		else
			put_scalar(out, v);
		(void)fputc('\n', out);
	}
	if (!json_is_object(plan))
		(void)fputs("  (sandbox.start has no plan)\n", out);
	(void)fputs("  files     ", out);
	if (json_array_size(grants) == 0)
		(void)fputs("no grants", out);
	json_array_foreach(grants, i, x)
	{
		const char *at = get_str(x, "at"), *path = get_str(x, "path");

		if (i == REPORT_PLAN_ITEMS) {
			(void)fprintf(out, "\n            ...and %zu more",
				      json_array_size(grants) - i);
			break;
		}
		if (i)
			(void)fputs("\n            ", out);
		put_scalar(out, json_object_get(x, "mode"));
		(void)fputs("  ", out);
		put_safe(out, path);
		if (at && (!path || strcmp(at, path) != 0)) {
			(void)fputs(" at ", out);
			put_safe(out, at);
		}
	}
	(void)fputc('\n', out);
	if (json_is_object(fs)) {
		bool first = true;

		json_object_foreach(fs, k, v)
		{
			if (strcmp(k, "grants") == 0)
				continue;
			(void)fputs(first ? "            " : ", ", out);
			first = false;
			put_safe(out, k);
			(void)fputc(' ', out);
			if (json_is_object(v)) {
				const char *k2;
				json_t *v2;

				json_object_foreach(v, k2, v2)
				{
					put_key(out, k2);
					(void)fputc('=', out);
					put_value(out, k2, v2);
					(void)fputc(' ', out);
				}
			} else
				put_value(out, k, v);
		}
		if (!first)
			(void)fputc('\n', out);
	}
	(void)fputs("  network   ", out);
	if (json_array_size(egress) == 0)
		(void)fputs("none", out);
	json_array_foreach(egress, i, x)
	{
		if (i == REPORT_PLAN_ITEMS) {
			(void)fprintf(out, "\n            ...and %zu more",
				      json_array_size(egress) - i);
			break;
		}
		if (i)
			(void)fputs("\n            ", out);
		put_safe(out, json_is_string(x) ? json_string_value(x) : get_str(x, "host"));
		if ((v = json_object_get(x, "ports"))) {
			(void)fputs(" ports ", out);
			put_scalar(out, v);
		}
		if ((v = json_object_get(x, "methods")) && json_array_size(v) > 0) {
			(void)fputs(" methods ", out);
			put_scalar(out, v);
		}
	}
	(void)fputc('\n', out);
	if (json_is_object(net)) {
		bool first = true;

		json_object_foreach(net, k, v)
		{
			if (strcmp(k, "egress") == 0 || json_is_null(v) ||
			    (json_is_array(v) && json_array_size(v) == 0))
				continue;
			(void)fputs(first ? "            " : ", ", out);
			first = false;
			put_safe(out, k);
			(void)fputc(' ', out);
			if (strcmp(k, "credentials") == 0 && json_is_array(v)) {
				/* Names only: hosts that get a header injected. */
				json_array_foreach(v, i, x)
				{
					if (i)
						(void)fputc(',', out);
					put_safe(out, get_str(x, "host"));
				}
			} else
				put_value(out, k, v);
		}
		if (!first)
			(void)fputc('\n', out);
	}
	if (json_is_object(limits)) {
		(void)fputs("  limits   ", out);
		json_object_foreach(limits, k, v)
		{
			(void)fputc(' ', out);
			put_key(out, k);
			(void)fputc('=', out);
			put_value(out, k, v);
		}
		(void)fputc('\n', out);
	}
	if (json_is_object(plan)) {
		static const char *const shown[] = {"fs", "net", "limits", "version", NULL};
		bool first = true;

		/* Whatever else the plan holds (env, identity, audit, ...): keys
		 * of objects only, values of scalars, so nothing long is dumped. */
		json_object_foreach(plan, k, v)
		{
			if (key_is(k, shown))
				continue;
			(void)fputs(first ? "  other    " : ",", out);
			first = false;
			(void)fputc(' ', out);
			put_key(out, k);
			if (json_is_object(v)) {
				const char *k2;
				json_t *v2;
				size_t n = 0;

				(void)fputs(": ", out);
				json_object_foreach(v, k2, v2)
				{
					if (n++ == REPORT_PLAN_ITEMS) {
						(void)fputs("...", out);
						break;
					}
					if (n > 1)
						(void)fputc(' ', out);
					put_key(out, k2);
					if (!json_is_object(v2) && !json_is_array(v2)) {
						(void)fputc('=', out);
						put_value(out, k2, v2);
					}
				}
			} else {
				(void)fputc('=', out);
				put_value(out, k, v);
			}
		}
		if (!first)
			(void)fputc('\n', out);
	}
	layers = json_object_get(rp->start, "layers");
	if (json_is_object(layers)) {
		(void)fputs("  layers   ", out);
		json_object_foreach(layers, k, v)
		{
			if (json_is_false(v) || json_is_null(v))
				continue;
			(void)fputc(' ', out);
			put_safe(out, k);
			if (!json_is_true(v)) {
				(void)fputc('=', out);
				put_scalar(out, v);
			}
		}
		(void)fputc('\n', out);
	}
	v = json_object_get(rp->start, "not_enforced");
	if (json_array_size(v) > 0) {
		(void)fputs("  NOT ENFORCED (best effort): ", out);
		put_scalar(out, v);
		(void)fputc('\n', out);
	}
}

static void text_consumed(FILE *out, const report *rp)
{
	json_t *x = rp->exit;
	uint64_t v, w, limit;

	(void)fputs("\nWhat it consumed\n", out);
	if (!x) {
		(void)fputs("  (no sandbox.exit record: the run did not finish cleanly)\n", out);
	} else {
		(void)fputs("  exit      ", out);
		if (json_is_true(json_object_get(x, "timed_out")))
			(void)fputs("killed by the wall-clock limit", out);
		else if (json_is_true(json_object_get(x, "oom_killed")))
			(void)fputs("killed by the memory limit (OOM)", out);
		else if (get_u64(x, "signal", &v) && v > 0)
			(void)fprintf(out, "killed by signal %" PRIu64, v);
		else if (get_u64(x, "status", &v))
			(void)fprintf(out, "status %" PRIu64, v);
		else
			(void)fputs("unknown", out);
		(void)fputc('\n', out);
		if (get_u64(x, "cpu_ns", &v)) {
			(void)fputs("  cpu       ", out);
			put_secs(out, v);
			if (get_u64(x, "throttled_ns", &w) && w > 0) {
				(void)fputs(" (throttled ", out);
				put_secs(out, w);
				(void)fputc(')', out);
			}
			(void)fputc('\n', out);
		}
		if (get_u64(x, "memory_peak", &v)) {
			json_t *lim = json_object_get(
			    json_object_get(json_object_get(rp->start, "plan"), "limits"),
			    "memory");

			(void)fputs("  memory    peak ", out);
			put_size(out, v);
			if (get_u64(json_object_get(json_object_get(rp->start, "plan"), "limits"),
				    "memory", &limit) &&
			    limit != PLAN_UNLIMITED) {
				(void)fputs(" of ", out);
				put_size(out, limit);
			} else if (json_is_string(lim)) {
				(void)fputs(" of ", out);
				put_safe(out, json_string_value(lim));
			}
			if (get_u64(x, "oom_kills", &w) && w > 0)
				(void)fprintf(out, ", %" PRIu64 " OOM kill%s", w,
					      w == 1 ? "" : "s");
			(void)fputc('\n', out);
		}
		if (get_u64(x, "wall_ns", &v)) {
			(void)fputs("  wall      ", out);
			put_secs(out, v);
			(void)fputc('\n', out);
		}
	}
	/* The proxy's own totals when the exit record has them, else ours. */
	if (!get_u64(x, "bytes_out", &v))
		v = rp->net_bytes_out;
	if (!get_u64(x, "bytes_in", &w))
		w = rp->net_bytes_in;
	(void)fputs("  network   ", out);
	put_size(out, v);
	(void)fputs(" out, ", out);
	put_size(out, w);
	(void)fputs(" in", out);
	if (!get_u64(x, "requests_allowed", &v))
		v = rp->net.count;
	if (!get_u64(x, "requests_denied", &w))
		w = rp->denied.count;
	(void)fprintf(out, "; %" PRIu64 " request%s allowed, %" PRIu64 " denied\n", v,
		      v == 1 ? "" : "s", w);
}

static void text_did(FILE *out, const report *rp)
{
	json_t *x;
	size_t i;

	(void)fputs("\nWhat it did\n", out);
	(void)fprintf(out, "  processes %" PRIu64 " executed\n", rp->procs.count);
	json_array_foreach(rp->procs.items, i, x)
	{
		(void)fputs("    ", out);
		if (json_object_get(x, "pid")) {
			(void)fputc('[', out);
			put_scalar(out, json_object_get(x, "pid"));
			(void)fputs("] ", out);
		}
		put_safe(out, get_str(x, "path"));
		if (json_is_array(json_object_get(x, "argv"))) {
			json_t *a;
			size_t j;

			(void)fputs(":", out);
			json_array_foreach(json_object_get(x, "argv"), j, a)
			{
				(void)fputc(' ', out);
				put_scalar(out, a);
			}
		}
		(void)fputc('\n', out);
	}
	put_more(out, &rp->procs);

	(void)fprintf(out, "  network   %" PRIu64 " request%s allowed", rp->net.count,
		      rp->net.count == 1 ? "" : "s");
	if (rp->tunnels)
		(void)fprintf(out, ", %" PRIu64 " tunnel%s closed", rp->tunnels,
			      rp->tunnels == 1 ? "" : "s");
	(void)fputc('\n', out);
	for (i = 0; i < rp->hosts.n; i++) {
		const counter *c = &rp->hosts.e[i];

		(void)fputs("    ", out);
		put_safe(out, c->key);
		(void)fprintf(out, ": %" PRIu64 " request%s, ", c->count, c->count == 1 ? "" : "s");
		put_size(out, c->bytes_out);
		(void)fputs(" out, ", out);
		put_size(out, c->bytes_in);
		(void)fputs(" in\n", out);
	}
	if (rp->hosts.other_keys)
		(void)fprintf(out, "    ...and up to %" PRIu64 " more hosts\n",
			      rp->hosts.other_keys);
	json_array_foreach(rp->net.items, i, x)
	{
		json_t *v;

		(void)fputs("    ", out);
		if ((v = json_object_get(x, "method"))) {
			put_scalar(out, v);
			(void)fputc(' ', out);
		}
		put_safe(out, get_str(x, "host"));
		if ((v = json_object_get(x, "port"))) {
			(void)fputc(':', out);
			put_scalar(out, v);
		}
		put_safe(out, get_str(x, "path"));
		if ((v = json_object_get(x, "status"))) {
			(void)fputs(" -> ", out);
			put_scalar(out, v);
		}
		if ((v = json_object_get(x, "bytes_out"))) {
			(void)fputs(", out ", out);
			put_scalar(out, v);
		}
		if ((v = json_object_get(x, "bytes_in"))) {
			(void)fputs(", in ", out);
			put_scalar(out, v);
		}
		(void)fputc('\n', out);
	}
	put_more(out, &rp->net);

	(void)fprintf(out, "  files     %" PRIu64 " written\n", rp->files.count);
	json_array_foreach(rp->files.items, i, x)
	{
		(void)fputs("    ", out);
		put_safe(out, get_str(x, "path"));
		if (get_str(x, "op")) {
			(void)fputs(" (", out);
			put_safe(out, get_str(x, "op"));
			(void)fputc(')', out);
		}
		(void)fputc('\n', out);
	}
	put_more(out, &rp->files);
	if (rp->other_events.n) {
		(void)fputs("  other    ", out);
		for (i = 0; i < rp->other_events.n; i++) {
			(void)fputc(' ', out);
			put_safe(out, rp->other_events.e[i].key);
			(void)fprintf(out, " x%" PRIu64, rp->other_events.e[i].count);
		}
		(void)fputc('\n', out);
	}
}

static void text_ctable(FILE *out, const ctable *t, bool details)
{
	for (size_t i = 0; i < t->n; i++) {
		(void)fputs(details ? "\n    " : " ", out);
		put_safe(out, t->e[i].key);
		(void)fprintf(out, " x%" PRIu64, t->e[i].count);
		if (details && t->e[i].detail[0]) {
			(void)fputs(": ", out);
			put_safe(out, t->e[i].detail);
		}
	}
	if (t->other_count)
		(void)fprintf(out, "%sand %" PRIu64 " of other kinds", details ? "\n    " : " ",
			      t->other_count);
	(void)fputc('\n', out);
}

static void text_stopped(FILE *out, const report *rp)
{
	json_t *x, *v;
	size_t i;

	(void)fputs("\nWhere it was stopped\n", out);
	(void)fprintf(out, "  network   %" PRIu64 " request%s denied\n", rp->denied.count,
		      rp->denied.count == 1 ? "" : "s");
	json_array_foreach(rp->denied.items, i, x)
	{
		(void)fputs("    ", out);
		if ((v = json_object_get(x, "method"))) {
			put_scalar(out, v);
			(void)fputc(' ', out);
		}
		put_safe(out, get_str(x, "host"));
		if ((v = json_object_get(x, "port"))) {
			(void)fputc(':', out);
			put_scalar(out, v);
		}
		put_safe(out, get_str(x, "path"));
		if (get_str(x, "reason")) {
			(void)fputs(" (", out);
			put_safe(out, get_str(x, "reason"));
			(void)fputc(')', out);
		}
		(void)fputc('\n', out);
	}
	put_more(out, &rp->denied);
	(void)fprintf(out, "  syscalls  %" PRIu64 " denied", rp->syscalls_denied);
	if (rp->syscalls_denied)
		(void)fputc(':', out);
	text_ctable(out, &rp->syscalls, false);
	(void)fprintf(out, "  limits    %" PRIu64 " hit", rp->limits_hit);
	text_ctable(out, &rp->limits, true);
}

static void text_report(FILE *out, const report *rp)
{
	char hex[AU_HASH_HEX + 1];

	(void)fputs("Audit report for sandbox ", out);
	put_safe(out, rp->sandbox[0] ? rp->sandbox : "(unknown)");
	(void)fprintf(out, ": %" PRIu64 " records", rp->records);
	if (rp->first_ts[0])
		(void)fprintf(out, ", %s to %s", rp->first_ts, rp->last_ts);
	(void)fputc('\n', out);
	if (rp->chain_ok)
		(void)fprintf(out, "Chain: intact, sealed%s\n",
			      rp->keyed ? " with an HMAC (check it: sandcap audit verify --key)"
					: " without a key");
	else
		(void)fprintf(out,
			      "Chain: BROKEN at line %" PRIu64
			      ": %s\n       Anything from that line on may be forged.\n",
			      rp->err_line, rp->err_reason);
	if (rp->unreadable)
		(void)fprintf(out, "Unreadable lines: %" PRIu64 " (skipped)\n", rp->unreadable);
	if (rp->records) {
		au_hex(rp->last_hash, AU_HASH_BYTES, hex);
		(void)fprintf(out, "Last hash: %s\n", hex);
	}
	text_access(out, rp);
	text_consumed(out, rp);
	text_did(out, rp);
	text_stopped(out, rp);
}

/* ---- JSON ---- */

static json_t *blist_json(const blist *l)
{
	return json_pack("{s:I, s:O, s:I}", "count", (json_int_t)l->count, "items", l->items,
			 "more", (json_int_t)(l->count - json_array_size(l->items)));
}

static json_t *ctable_json(const ctable *t, const char *name, bool bytes)
{
	json_t *a = json_array();

	if (!a)
		return NULL;
	for (size_t i = 0; i < t->n; i++) {
		json_t *o =
		    json_pack("{s:s, s:I}", name, t->e[i].key, "count", (json_int_t)t->e[i].count);

		if (!o)
			continue;
		if (bytes) {
			(void)json_object_set_new(o, "bytes_out",
						  json_integer((json_int_t)t->e[i].bytes_out));
			(void)json_object_set_new(o, "bytes_in",
						  json_integer((json_int_t)t->e[i].bytes_in));
		}
		if (t->e[i].detail[0])
			(void)json_object_set_new(o, "detail", json_string(t->e[i].detail));
		(void)json_array_append_new(a, o);
	}
	return json_pack("{s:o, s:I}", "items", a, "other", (json_int_t)t->other_count);
}

static void set(json_t *o, const char *k, json_t *v)
{
	/* Out of memory leaves the member out; the dump below still fails
	 * cleanly if the root itself could not be built. */
	(void)json_object_set_new(o, k, v ? v : json_null());
}

static json_t *borrow(json_t *v)
{
	return v ? json_incref(v) : json_null();
}

static json_t *opt_str(const char *s)
{
	return s && s[0] ? json_string(s) : json_null();
}

static int json_report(FILE *out, const report *rp)
{
	_cleanup_(jsonp) json_t *root = json_object();
	json_t *log = json_object(), *access = json_object(), *did = json_object();
	json_t *stopped = json_object(), *net = json_object(), *sys = json_object();
	json_t *lim = json_object();
	char hex[AU_HASH_HEX + 1] = "";

	if (!root || !log || !access || !did || !stopped || !net || !sys || !lim) {
		json_decref(log), json_decref(access), json_decref(did), json_decref(stopped);
		json_decref(net), json_decref(sys), json_decref(lim);
		return -ENOMEM;
	}
	if (rp->records)
		au_hex(rp->last_hash, AU_HASH_BYTES, hex);

	set(root, "sandbox", opt_str(rp->sandbox));
	set(log, "lines", json_integer((json_int_t)rp->lines));
	set(log, "records", json_integer((json_int_t)rp->records));
	set(log, "unreadable_lines", json_integer((json_int_t)rp->unreadable));
	set(log, "first_ts", opt_str(rp->first_ts));
	set(log, "last_ts", opt_str(rp->last_ts));
	set(log, "intact", json_boolean(rp->chain_ok));
	set(log, "error",
	    rp->chain_ok ? json_null()
			 : json_pack("{s:I, s:s}", "line", (json_int_t)rp->err_line, "reason",
				     rp->err_reason));
	set(log, "sealed", json_boolean(rp->sealed));
	set(log, "keyed", json_boolean(rp->keyed));
	set(log, "last_hash", opt_str(hex));
	set(root, "log", log);

	set(access, "plan", borrow(json_object_get(rp->start, "plan")));
	set(access, "layers", borrow(json_object_get(rp->start, "layers")));
	set(access, "not_enforced", borrow(json_object_get(rp->start, "not_enforced")));
	set(access, "command", borrow(json_object_get(rp->start, "command")));
	set(access, "policy_sha256", borrow(json_object_get(rp->start, "policy_sha256")));
	set(access, "grants", blist_json(&rp->grants));
	set(root, "access", access);

	set(root, "consumed", borrow(rp->exit));

	set(did, "processes", blist_json(&rp->procs));
	set(net, "requests", json_integer((json_int_t)rp->net.count));
	set(net, "tunnels", json_integer((json_int_t)rp->tunnels));
	set(net, "bytes_out", json_integer((json_int_t)rp->net_bytes_out));
	set(net, "bytes_in", json_integer((json_int_t)rp->net_bytes_in));
	set(net, "hosts", ctable_json(&rp->hosts, "host", true));
	set(net, "shown", blist_json(&rp->net));
	set(did, "network", net);
	set(did, "files", blist_json(&rp->files));
	set(did, "other_events", ctable_json(&rp->other_events, "event", false));
	set(root, "did", did);

	set(stopped, "network", blist_json(&rp->denied));
	set(sys, "count", json_integer((json_int_t)rp->syscalls_denied));
	set(sys, "by_syscall", ctable_json(&rp->syscalls, "syscall", false));
	set(stopped, "syscalls", sys);
	set(lim, "count", json_integer((json_int_t)rp->limits_hit));
	set(lim, "by_limit", ctable_json(&rp->limits, "limit", false));
	set(stopped, "limits", lim);
	set(root, "stopped", stopped);

	if (json_dumpf(root, out, JSON_INDENT(2) | JSON_ENSURE_ASCII) < 0 || fputc('\n', out) < 0)
		return -EIO;
	return 0;
}

static void report_done(report *rp)
{
	json_decref(rp->start);
	json_decref(rp->exit);
	json_decref(rp->grants.items);
	json_decref(rp->procs.items);
	json_decref(rp->net.items);
	json_decref(rp->files.items);
	json_decref(rp->denied.items);
}

int au_report(FILE *in, FILE *out, bool json)
{
	_cleanup_free_ char *buf = NULL;
	size_t cap = 0;
	_cleanup_free_ report *rp = NULL;
	size_t len = 0;
	bool newline = false;
	int r;

	if (!in || !out)
		return -EINVAL;
	rp = calloc(1, sizeof(*rp));
	if (!rp)
		return -ENOMEM;
	rp->chain_ok = true;
	au_chain_init(&rp->chain, NULL, 0);
	rp->grants.items = json_array();
	rp->procs.items = json_array();
	rp->net.items = json_array();
	rp->files.items = json_array();
	rp->denied.items = json_array();
	if (!rp->grants.items || !rp->procs.items || !rp->net.items || !rp->files.items ||
	    !rp->denied.items) {
		report_done(rp);
		return -ENOMEM;
	}

	for (;;) {
		r = au_read_line(in, &buf, &cap, &len, &newline);
		if (r == 0)
			break;
		if (r == -EMSGSIZE) {
			rp->lines++;
			rp->unreadable++;
			chain_broken(rp, rp->lines, "line too long");
			continue;
		}
		if (r < 0)
			break;
		r = report_line(rp, buf, len, newline);
		if (r < 0)
			break;
	}
	if (r == 0 && rp->chain_ok) {
		char reason[256];

		if (au_chain_end(&rp->chain, reason, sizeof(reason)) < 0)
			chain_broken(rp, rp->lines + 1, reason);
	}
	if (r == 0) {
		if (json)
			r = json_report(out, rp);
		else
			text_report(out, rp);
		if (r == 0 && (fflush(out) != 0 || ferror(out)))
			r = -EIO;
	}
	report_done(rp);
	if (r < 0)
		return r;
	return rp->chain_ok ? 0 : 1;
}
