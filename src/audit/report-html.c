/* SPDX-License-Identifier: MIT */
/*
 * `sandcap audit report --html`: one self-contained page (docs/audit.md,
 * "The HTML report"). While the log streams, each kind of record keeps its
 * first HTML_HEAD and last HTML_TAIL rows, with their time, and a count;
 * activity is summed into HTML_BUCKETS intervals whose width doubles as
 * the run goes on. So memory and the page stay bounded whatever the log's
 * length, and a long run keeps its end (the OOM kill, the exit) in view.
 *
 * The page is the CSS and JS of src/audit/html/ (embedded at build time)
 * and the data as JSON in a <script type="application/json"> block, which
 * the script renders with text nodes only: nothing from the log is parsed
 * as HTML. The JSON has '<', '>' and '&' escaped, so no string closes the
 * block or opens a comment, and every non-ASCII character as \uXXXX
 * (U+2028 and U+2029 included). The few strings the server writes into
 * the HTML itself go through put_html(). A Content-Security-Policy with the
 * hashes of our own style and script lets nothing else run and nothing
 * load, should an escape ever be missed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/receipt.h"
#include "audit/report-assets.h"
#include "audit/report.h"
#include "base/base64.h"
#include "base/cleanup.h"
#include "base/sha256.h"
#include "policy/plan.h"

#define HTML_HEAD      750u	   /* first rows kept per kind */
#define HTML_TAIL      250u	   /* last rows kept per kind (a ring) */
#define HTML_STR_MAX   512u	   /* bytes kept of one string */
#define HTML_ARRAY_MAX 32u	   /* elements kept of one array */
#define HTML_OBJ_MAX   16u	   /* members kept of one nested object */
#define HTML_ROW_BYTES 4096u	   /* about the most one row holds, keys included */
#define HTML_BUCKETS   240u	   /* intervals of the activity charts */
#define HTML_WIDTH0_NS 10000000ull /* 10 ms: the first interval width */
#define HTML_SAMPLES   1200u	   /* res.sample points kept (every stride-th) */

typedef enum hk {
	HK_GRANT,
	HK_EXEC,
	HK_EXEC_FAILED,
	HK_REQUEST,
	HK_DENIED,
	HK_DNS,
	HK_WRITE,
	HK_READ,
	HK_FS_DENIED,
	HK_SYSCALL,
	HK_LIMIT,
	HK_COMMAND,
	HK_TRANSFER,
	HK_SPAWN,
	HK_WORKSPACE,
	HK_OTHER,
	_HK_MAX,
} hk;

static const char *const hk_name[_HK_MAX] = {
    [HK_GRANT] = "grant",	[HK_EXEC] = "exec",	[HK_EXEC_FAILED] = "exec_failed",
    [HK_REQUEST] = "request",	[HK_DENIED] = "denied", [HK_DNS] = "dns",
    [HK_WRITE] = "write",	[HK_READ] = "read",	[HK_FS_DENIED] = "fs_denied",
    [HK_SYSCALL] = "syscall",	[HK_LIMIT] = "limit",	[HK_COMMAND] = "command",
    [HK_TRANSFER] = "transfer", [HK_SPAWN] = "spawn",	[HK_WORKSPACE] = "workspace",
    [HK_OTHER] = "other",
};

typedef enum hs {
	HS_EXEC,
	HS_REQUEST,
	HS_BYTES_OUT,
	HS_BYTES_IN,
	HS_REFUSED,
	HS_DNS,
	HS_WRITE,
	_HS_MAX,
} hs;

static const char *const hs_name[_HS_MAX] = {
    [HS_EXEC] = "exec",		[HS_REQUEST] = "request", [HS_BYTES_OUT] = "bytes_out",
    [HS_BYTES_IN] = "bytes_in", [HS_REFUSED] = "refused", [HS_DNS] = "dns",
    [HS_WRITE] = "write",
};

typedef struct hlist {
	json_t *head; /* the first HTML_HEAD rows */
	json_t *tail; /* then a ring of the last HTML_TAIL; next is its oldest */
	size_t next;
	uint64_t count;
} hlist;

struct rp_html {
	hlist lists[_HK_MAX];
	bool have_t0;
	uint64_t t0_ns, width_ns, last_ns;
	uint64_t series[_HS_MAX][HTML_BUCKETS];
	au_table folded; /* limit.hit with "suppressed", by "limit/kind": their sum */
	uint64_t spawns, spawn_denied;
	/* The run's own res.sample records (a sub-sandbox's are not its), as
	 * arrays of [t_us, value per sample_keys]; past HTML_SAMPLES every
	 * other is dropped and only every stride-th kept from then on. */
	json_t *samples;
	uint64_t n_samples, stride;
	char *sample_sandbox;
};

static const char *const sample_keys[] = {"cpu_ns",    "throttled_ns", "memory",    "pids",
					  "bytes_out", "bytes_in",     "oom_kills", NULL};

static void sat_add(uint64_t *a, uint64_t b)
{
	if (__builtin_add_overflow(*a, b, a))
		*a = UINT64_MAX;
}

rp_html *rp_html_new(void)
{
	rp_html *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	for (size_t i = 0; i < _HK_MAX; i++) {
		h->lists[i].head = json_array();
		h->lists[i].tail = json_array();
		if (!h->lists[i].head || !h->lists[i].tail)
			return rp_html_free(h);
	}
	h->width_ns = HTML_WIDTH0_NS;
	h->stride = 1;
	h->samples = json_array();
	if (!h->samples)
		return rp_html_free(h);
	return h;
}

rp_html *rp_html_free(rp_html *h)
{
	if (!h)
		return NULL;
	for (size_t i = 0; i < _HK_MAX; i++) {
		json_decref(h->lists[i].head);
		json_decref(h->lists[i].tail);
	}
	json_decref(h->samples);
	free(h->sample_sandbox);
	free(h);
	return NULL;
}

/* 2026-11-29T08:30:00.123456789Z (au_parse_record checked the form) in
 * nanoseconds since the epoch; false for anything else. */
static bool ts_ns(const char *ts, uint64_t *ret)
{
	unsigned y, mo, d, hh, mi, ss;
	unsigned long ns;
	int64_t yy, era, yoe, doy, doe, days;

	if (!ts ||
	    sscanf(ts, "%4u-%2u-%2uT%2u:%2u:%2u.%9luZ", &y, &mo, &d, &hh, &mi, &ss, &ns) != 7)
		return false;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || hh > 23 || mi > 59 || ss > 60)
		return false;
	/* days from civil (H. Hinnant's algorithm), proleptic Gregorian */
	yy = (int64_t)y - (mo <= 2);
	era = yy / 400;
	yoe = yy - era * 400;
	doy = (153 * ((int64_t)mo + (mo > 2 ? -3 : 9)) + 2) / 5 + (int64_t)d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	days = era * 146097 + doe - 719468;
	*ret =
	    (((uint64_t)days * 24 + hh) * 60 + mi) * 60 * 1000000000ull + ss * 1000000000ull + ns;
	return true;
}

/* Halves the resolution: pairs of intervals become one of twice the width. */
static void series_fold(rp_html *h)
{
	for (size_t s = 0; s < _HS_MAX; s++) {
		for (size_t i = 0; i < HTML_BUCKETS / 2; i++) {
			uint64_t v = h->series[s][2 * i];

			sat_add(&v, h->series[s][2 * i + 1]);
			h->series[s][i] = v;
		}
		memset(&h->series[s][HTML_BUCKETS / 2], 0,
		       sizeof(h->series[s][0]) * (HTML_BUCKETS - HTML_BUCKETS / 2));
	}
	h->width_ns *= 2;
}

static void series_add(rp_html *h, hs s, uint64_t v)
{
	uint64_t off = h->last_ns > h->t0_ns ? h->last_ns - h->t0_ns : 0, i;

	/* A clock stepped back puts its records in the first interval. */
	while ((i = off / h->width_ns) >= HTML_BUCKETS && h->width_ns < (UINT64_MAX >> 2))
		series_fold(h);
	if (i >= HTML_BUCKETS)
		i = HTML_BUCKETS - 1;
	sat_add(&h->series[s][i], v);
}

/* A bounded copy of v: strings cut at HTML_STR_MAX, arrays at
 * HTML_ARRAY_MAX, objects at HTML_OBJ_MAX members, nesting at four levels
 * (a receipt's caveats), and the
 * whole row at about HTML_ROW_BYTES (*budget): past it, "...". */
static json_t *trim(json_t *v, unsigned depth, size_t *budget)
{
	if (*budget == 0)
		return json_string("...");
	if (json_is_string(v)) {
		size_t n = json_string_length(v), max = HTML_STR_MAX;

		if (max > *budget)
			max = *budget;
		*budget -= n < max ? n : max;
		return n > max ? au_str(json_string_value(v), n, max) : json_copy(v);
	}
	*budget = *budget > 8 ? *budget - 8 : 0;
	if (json_is_array(v)) {
		json_t *a = json_array(), *x;
		size_t i;
		char more[48];

		if (!a || depth >= 4)
			return a ? a : json_null();
		json_array_foreach(v, i, x)
		{
			if (i == HTML_ARRAY_MAX || *budget == 0) {
				(void)snprintf(more, sizeof(more), "...(%zu more)",
					       json_array_size(v) - i);
				(void)json_array_append_new(a, json_string(more));
				break;
			}
			(void)json_array_append_new(a, trim(x, depth + 1, budget));
		}
		return a;
	}
	if (json_is_object(v)) {
		json_t *o, *x;
		const char *k;
		size_t n = 0;

		if (depth >= 4)
			return json_string("{...}");
		o = json_object();
		json_object_foreach(v, k, x)
		{
			if (!o || n++ == HTML_OBJ_MAX || *budget == 0)
				break;
			*budget = *budget > strlen(k) ? *budget - strlen(k) : 0;
			(void)json_object_set_new(o, k, trim(x, depth + 1, budget));
		}
		return o ? o : json_null();
	}
	return json_copy(v);
}

static int hlist_add(hlist *l, json_t *row)
{
	int r;

	sat_add(&l->count, 1);
	if (json_array_size(l->head) < HTML_HEAD)
		r = json_array_append_new(l->head, row);
	else if (json_array_size(l->tail) < HTML_TAIL)
		r = json_array_append_new(l->tail, row);
	else {
		r = json_array_set_new(l->tail, l->next, row);
		l->next = (l->next + 1) % HTML_TAIL;
	}
	return r < 0 ? -ENOMEM : 0;
}

/* One row: its kind, seq, time since the first record (microseconds), the
 * event when a kind holds several, the sub-sandbox it is of ("c"), and the
 * listed keys of data (all members when keys is NULL), trimmed. */
static int add_row(rp_html *h, hk k, const au_record *rec, const char *const *keys, bool event,
		   const char *mark)
{
	size_t budget = HTML_ROW_BYTES;
	json_t *row = json_object(), *v;
	const char *name;

	if (!row)
		return -ENOMEM;
	(void)json_object_set_new(row, "k", json_string(hk_name[k]));
	(void)json_object_set_new(row, "s", json_integer((json_int_t)rec->seq));
	(void)json_object_set_new(row, "t",
				  json_integer((json_int_t)((h->last_ns - h->t0_ns) / 1000)));
	if (event)
		(void)json_object_set_new(row, "e", json_string(rec->event));
	if (mark)
		(void)json_object_set_new(row, mark, json_true());
	if (k != HK_SPAWN && json_is_string(v = json_object_get(rec->data, "child")))
		(void)json_object_set_new(row, "c", trim(v, 1, &budget));
	if (keys) {
		for (; *keys; keys++)
			if ((v = json_object_get(rec->data, *keys)))
				(void)json_object_set_new(row, *keys, trim(v, 1, &budget));
	} else {
		size_t n = 0;

		json_object_foreach(rec->data, name, v)
		{
			if (n++ == HTML_OBJ_MAX)
				break;
			/* "k", "s", "t", "e", "c" are the row's own */
			if (strlen(name) > 1)
				(void)json_object_set_new(row, name, trim(v, 1, &budget));
		}
	}
	return hlist_add(&h->lists[k], row);
}

static const char *const grant_keys[] = {"path", "at", "mode", NULL};
static const char *const exec_keys[] = {"pid",	   "ppid",	 "path",  "argv",
					"result",  "errno",	 "error", "truncated",
					"syscall", "dirfd_path", NULL};
static const char *const request_keys[] = {
    "id",	  "method",    "host",	    "port",	   "path",	 "addr",
    "status",	  "bytes_out", "bytes_in",  "duration_ms", "credential", "body_sha256",
    "body_bytes", "via",       "completed", "reason",	   "rule",	 NULL};
static const char *const denied_keys[] = {
    "host",	"port",	      "method", "path", "reason", "detail",	     "addr",
    "protocol", "credential", "via",	"sni",	"pid",	  "normalised_path", NULL};
static const char *const dns_keys[] = {"name", "type", "rcode", "answer", "rule", "reason", NULL};
static const char *const write_keys[] = {"path",   "op",    "type",   "mode",
					 "sha256", "count", "reason", NULL};
static const char *const read_keys[] = {"path", "size",	 "sha256", "hash_skipped",
					"op",	"count", "reason", NULL};
static const char *const fs_denied_keys[] = {"pid",    "op",   "path",	    "errno",
					     "reason", "mode", "truncated", NULL};
static const char *const syscall_keys[] = {"pid", "syscall", "nr", NULL};
static const char *const limit_keys[] = {"limit", "detail", "kind", "suppressed",
					 "value", "id",	    NULL};
static const char *const command_keys[] = {
    "id",     "argv",	     "cwd",	   "tty",	    "status",
    "signal", "duration_ms", "limits_hit", "session_ended", NULL};
static const char *const transfer_keys[] = {"id", "path", "bytes", "result", NULL};
static const char *const spawn_keys[] = {
    "child",  "parent",	   "command",	 "policy_source", "receipt", "reason",	"argv", "status",
    "signal", "timed_out", "oom_killed", "memory_peak",	  "cpu_ns",  "wall_ns", NULL};
static const char *const workspace_keys[] = {"workspace", "sandbox", "grant",	  "outcome",
					     "error",	  "forced",  "part",	  "parts",
					     "files",	  "changes", "conflicts", NULL};

static bool is(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static uint64_t u64_of(json_t *data, const char *key)
{
	uint64_t v = 0;

	return rp_get_u64(data, key, &v) ? v : 0;
}

/* A folded limit.hit: its count summed by limit and kind. */
/* A value unknown (absent, not a count) is null. */
static int add_sample(rp_html *h, const au_record *rec)
{
	json_t *pt;

	if (!rec->sandbox)
		return 0;
	if (!h->sample_sandbox && !(h->sample_sandbox = strdup(rec->sandbox)))
		return -ENOMEM;
	if (!is(rec->sandbox, h->sample_sandbox) || h->n_samples++ % h->stride)
		return 0;
	if (json_array_size(h->samples) >= HTML_SAMPLES) {
		json_t *kept = json_array();

		if (!kept)
			return -ENOMEM;
		for (size_t i = 0; i < json_array_size(h->samples); i += 2)
			(void)json_array_append(kept, json_array_get(h->samples, i));
		json_decref(h->samples);
		h->samples = kept;
		h->stride *= 2;
		if ((h->n_samples - 1) % h->stride)
			return 0;
	}
	pt = json_array();
	if (!pt)
		return -ENOMEM;
	(void)json_array_append_new(pt, json_integer((json_int_t)((h->last_ns - h->t0_ns) / 1000)));
	for (const char *const *k = sample_keys; *k; k++) {
		json_t *v = json_object_get(rec->data, *k);

		(void)json_array_append_new(pt, json_is_integer(v) && json_integer_value(v) >= 0
						    ? json_integer(json_integer_value(v))
						    : json_null());
	}
	return json_array_append_new(h->samples, pt) < 0 ? -ENOMEM : 0;
}

static void fold_count(rp_html *h, json_t *data)
{
	const char *limit = rp_get_str(data, "limit"), *kind = rp_get_str(data, "kind");
	uint64_t n = u64_of(data, "suppressed");
	char key[AU_TALLY_KEY_MAX];
	au_count *c;

	if (!limit || !json_object_get(data, "suppressed"))
		return;
	(void)snprintf(key, sizeof(key), "%s/%s", limit, kind ? kind : "");
	c = au_table_get(&h->folded, key);
	if (c)
		sat_add(&c->count, n);
	series_add(h, HS_REFUSED, n);
}

int rp_html_record(rp_html *h, const au_record *rec)
{
	const char *ev = rec->event;
	json_t *data = rec->data;
	uint64_t t;

	if (ts_ns(rec->ts, &t)) {
		if (!h->have_t0) {
			h->t0_ns = t;
			h->have_t0 = true;
		}
		h->last_ns = t;
	}
	if (is(ev, "fs.grant"))
		return add_row(h, HK_GRANT, rec, grant_keys, false, NULL);
	if (is(ev, "proc.exec")) {
		if (au_exec_failed(data))
			return add_row(h, HK_EXEC_FAILED, rec, exec_keys, false, NULL);
		series_add(h, HS_EXEC, 1);
		return add_row(h, HK_EXEC, rec, exec_keys, false, NULL);
	}
	if (is(ev, "net.request") || is(ev, "net.tunnel.close")) {
		const char *d = rp_get_str(data, "decision");

		series_add(h, HS_BYTES_OUT, u64_of(data, "bytes_out"));
		series_add(h, HS_BYTES_IN, u64_of(data, "bytes_in"));
		/* A refused request is listed once, as its net.denied. */
		if (is(ev, "net.request") && d && !is(d, "allow"))
			return 0;
		series_add(h, HS_REQUEST, 1);
		return add_row(h, HK_REQUEST, rec, request_keys, false,
			       is(ev, "net.tunnel.close") ? "tunnel" : NULL);
	}
	if (is(ev, "net.denied")) {
		series_add(h, HS_REFUSED, 1);
		return add_row(h, HK_DENIED, rec, denied_keys, false, NULL);
	}
	if (is(ev, "net.dns")) {
		const char *rc = rp_get_str(data, "rcode");

		series_add(h, rc && is(rc, "NOERROR") ? HS_DNS : HS_REFUSED, 1);
		return add_row(h, HK_DNS, rec, dns_keys, false, NULL);
	}
	if (is(ev, "fs.write")) {
		const char *op = rp_get_str(data, "op");

		if (!op || !is(op, "truncated"))
			series_add(h, HS_WRITE, 1);
		return add_row(h, HK_WRITE, rec, write_keys, false, NULL);
	}
	if (is(ev, "fs.read"))
		return add_row(h, HK_READ, rec, read_keys, false, NULL);
	if (is(ev, "fs.denied") || is(ev, "syscall.denied")) {
		series_add(h, HS_REFUSED, 1);
		return is(ev, "fs.denied")
			   ? add_row(h, HK_FS_DENIED, rec, fs_denied_keys, false, NULL)
			   : add_row(h, HK_SYSCALL, rec, syscall_keys, false, NULL);
	}
	if (is(ev, "limit.hit")) {
		fold_count(h, data);
		return add_row(h, HK_LIMIT, rec, limit_keys, false, NULL);
	}
	if (is(ev, "res.sample"))
		return add_sample(h, rec);
	if (is(ev, "exec.start") || is(ev, "exec.exit"))
		return add_row(h, HK_COMMAND, rec, command_keys, true, NULL);
	if (is(ev, "file.put") || is(ev, "file.get") || is(ev, "file.list"))
		return add_row(h, HK_TRANSFER, rec, transfer_keys, true, NULL);
	if (strncmp(ev, "spawn.", 6) == 0) {
		if (is(ev, "spawn.start"))
			h->spawns++;
		if (is(ev, "spawn.denied")) {
			h->spawn_denied++;
			series_add(h, HS_REFUSED, 1);
		}
		return add_row(h, HK_SPAWN, rec, spawn_keys, true, NULL);
	}
	if (strncmp(ev, "workspace.apply", 15) == 0)
		return add_row(h, HK_WORKSPACE, rec, workspace_keys, true, NULL);
	/* Shown elsewhere (sandbox.start, sandbox.exit, the seal in the
	 * verdict) or standing for another record (net.request.start). */
	if (is(ev, "sandbox.start") || is(ev, "sandbox.exit") || is(ev, AU_SEAL_EVENT) ||
	    is(ev, AU_CHECKPOINT_EVENT) || is(ev, "net.request.start"))
		return 0;
	return add_row(h, HK_OTHER, rec, NULL, true, NULL);
}

/* --- rendering --- */

/* Text into HTML (element content or a quoted attribute). */
static void put_html(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&':
			(void)fputs("&amp;", out);
			break;
		case '<':
			(void)fputs("&lt;", out);
			break;
		case '>':
			(void)fputs("&gt;", out);
			break;
		case '"':
			(void)fputs("&quot;", out);
			break;
		case '\'':
			(void)fputs("&#39;", out);
			break;
		default:
			(void)fputc(*s, out);
		}
	}
}

/* jansson's output, made safe inside <script>: '<' '>' '&' only occur in
 * strings (the dump is compact ASCII), where \u003c is the same string. */
static int script_safe(const char *buf, size_t len, void *data)
{
	FILE *out = data;

	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '<' || buf[i] == '>' || buf[i] == '&') {
			if (fprintf(out, "\\u%04x", (unsigned)buf[i]) < 0)
				return -1;
		} else if (fputc(buf[i], out) == EOF)
			return -1;
	}
	return 0;
}

/* 'sha256-BASE64' of an inline script or style, for the CSP. */
static void csp_hash(const char *s, size_t len, char out[8 + B64_LEN(SHA256_BYTES) + 1])
{
	uint8_t md[SHA256_BYTES];
	sha256_ctx c;

	sha256_init(&c);
	sha256_update(&c, s, len);
	sha256_final(&c, md);
	memcpy(out, "sha256-", 7);
	(void)b64_encode(md, SHA256_BYTES, out + 7);
}

/* What a renderer printed to a FILE, as a JSON string (or null). */
typedef void (*text_fn)(FILE *out, const report *rp);
static json_t *captured(text_fn fn, const report *rp)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return json_null();
	fn(f, rp);
	if (fclose(f) != 0 || !buf)
		return json_null();
	/* the text renderers escape everything but printable ASCII */
	return json_stringn(buf, len);
}

/* The policy in plain words: what `sandcap check` prints of the plan the
 * log recorded (plan_describe), or why it cannot be said. */
static void set_policy_text(json_t *d, const report *rp)
{
	json_t *plan = json_object_get(rp->start, "plan");
	_cleanup_free_ char *text = NULL, *buf = NULL;
	sc_plan *p = NULL;
	sc_diag diag = {0};
	size_t len = 0;
	FILE *f;
	char why[832];

	if (!json_is_object(plan)) {
		(void)json_object_set_new(
		    d, "policy_error",
		    json_string(rp->start ? "sandbox.start has no plan"
					  : "no sandbox.start record: the capability set is "
					    "unknown"));
		return;
	}
	text = json_dumps(plan, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text || plan_parse_json(text, strlen(text), &p, &diag) < 0) {
		(void)snprintf(why, sizeof(why), "the recorded plan does not parse: %s%s%s",
			       diag.path, diag.path[0] ? ": " : "", diag.message);
		(void)json_object_set_new(d, "policy_error", au_str(why, strlen(why), sizeof(why)));
		return;
	}
	f = open_memstream(&buf, &len);
	if (f) {
		(void)plan_describe(p, f);
		if (fclose(f) == 0 && buf)
			(void)json_object_set_new(d, "policy_text", au_str(buf, len, len));
	}
	sc_plan_free(p);
}

/* The plan the page shows as tables: credentials are left to the bound,
 * which names them without saying where their values come from. */
static json_t *plan_shown(const report *rp)
{
	json_t *plan = json_object_get(rp->start, "plan"), *copy, *net;

	if (!json_is_object(plan))
		return json_null();
	copy = json_deep_copy(plan);
	net = json_object_get(copy, "net");
	if (json_is_object(net))
		(void)json_object_del(net, "credentials");
	return copy ? copy : json_null();
}

static json_t *table_json(const au_table *t, const char *name)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < t->n; i++) {
		json_t *o =
		    json_pack("{s:s, s:I}", name, t->e[i].key, "count", (json_int_t)t->e[i].count);

		if (o && t->e[i].detail[0])
			(void)json_object_set_new(o, "detail", json_string(t->e[i].detail));
		(void)json_array_append_new(a, o);
	}
	return a ? a : json_null();
}

static json_t *tally_json(const report *rp)
{
	const au_tally *t = &rp->tally;

	return json_pack(
	    "{s:I, s:I, s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o}", "execs",
	    (json_int_t)t->execs, "execs_failed", (json_int_t)t->execs_failed, "files_written",
	    (json_int_t)t->files_written, "files_approx", t->files_approx, "net_denied",
	    (json_int_t)t->net_denied, "requests_over_rate", (json_int_t)t->requests_over_rate,
	    "syscalls_denied", (json_int_t)t->syscalls_denied, "files_denied",
	    (json_int_t)t->files_denied, "limits_hit", (json_int_t)t->limits_hit, "dns_queries",
	    (json_int_t)t->dns_queries, "dns_refused", (json_int_t)t->dns_refused, "syscalls",
	    table_json(&t->syscalls, "syscall"), "limits", table_json(&t->limits, "limit"),
	    "denied_hosts", table_json(&t->denied_hosts, "host"));
}

static json_t *hosts_json(const report *rp)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < rp->hosts.n; i++)
		(void)json_array_append_new(
		    a, json_pack("{s:s, s:I, s:I, s:I}", "host", rp->hosts.e[i].key, "count",
				 (json_int_t)rp->hosts.e[i].count, "bytes_out",
				 (json_int_t)rp->hosts.e[i].bytes_out, "bytes_in",
				 (json_int_t)rp->hosts.e[i].bytes_in));
	return a ? a : json_null();
}

static json_t *folded_json(const rp_html *h)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < h->folded.n; i++) {
		const char *key = h->folded.e[i].key, *slash = strchr(key, '/');

		(void)json_array_append_new(a,
					    json_pack("{s:s%, s:s, s:I}", "limit", key,
						      slash ? (size_t)(slash - key) : strlen(key),
						      "kind", slash ? slash + 1 : "", "suppressed",
						      (json_int_t)h->folded.e[i].count));
	}
	return a ? a : json_null();
}

static json_t *series_json(const rp_html *h)
{
	json_t *o = json_object();
	size_t n = h->have_t0 ? (size_t)((h->last_ns - h->t0_ns) / h->width_ns) + 1 : 0;

	if (!o)
		return json_null();
	if (n > HTML_BUCKETS)
		n = HTML_BUCKETS;
	(void)json_object_set_new(o, "width_us", json_integer((json_int_t)(h->width_ns / 1000)));
	(void)json_object_set_new(o, "n", json_integer((json_int_t)n));
	for (size_t s = 0; s < _HS_MAX; s++) {
		json_t *a = json_array();

		for (size_t i = 0; a && i < n; i++)
			(void)json_array_append_new(a, json_integer((json_int_t)h->series[s][i]));
		(void)json_object_set_new(o, hs_name[s], a ? a : json_array());
	}
	return o;
}

/* Every kept row, each kind's head then its ring from the oldest; and per
 * kind how many were recorded and kept. */
static int rows_json(const rp_html *h, json_t *d)
{
	json_t *rows = json_array(), *kinds = json_object();

	if (!rows || !kinds) {
		json_decref(rows);
		json_decref(kinds);
		return -ENOMEM;
	}
	for (size_t k = 0; k < _HK_MAX; k++) {
		const hlist *l = &h->lists[k];
		size_t nt = json_array_size(l->tail);

		(void)json_array_extend(rows, l->head);
		for (size_t i = 0; i < nt; i++)
			(void)json_array_append(rows, json_array_get(l->tail, (l->next + i) % nt));
		(void)json_object_set_new(kinds, hk_name[k],
					  json_pack("{s:I, s:I}", "count", (json_int_t)l->count,
						    "kept",
						    (json_int_t)(json_array_size(l->head) + nt)));
	}
	(void)json_object_set_new(d, "rows", rows);
	(void)json_object_set_new(d, "kinds", kinds);
	return 0;
}

/* The verdict: intact, incomplete (cut off, or writing failed), tampered
 * (at which line, the record seq line-1), or live (still being written);
 * and what the keys given vouch for. As a title and lines of text. */
static json_t *verdict_json(const report *rp, const au_report_opts *o)
{
	const au_chain *c = &rp->chain;
	json_t *lines = json_array();
	const char *state, *title;
	char buf[768];

	if (!lines)
		return json_null();
	if (!rp->chain_ok && o->live && rp->cut_off) {
		state = "live";
		title = "Live: the log is still being written; this is what it holds so far";
	} else if (!rp->chain_ok && rp->cut_off) {
		state = "incomplete";
		title = "Incomplete: the log ends without its seal (cut off?)";
	} else if (!rp->chain_ok) {
		state = "tampered";
		title = "NOT INTACT: the chain breaks; anything from there on may be forged";
	} else if (rp->failure) {
		state = "incomplete";
		title = "Incomplete: intact, but the log records that writing failed";
	} else {
		state = "intact";
		title = "Intact: every record chains to the next, and the log is sealed";
	}
	if (!rp->chain_ok) {
		(void)snprintf(buf, sizeof(buf),
			       "%s at line %" PRIu64 " (record seq %" PRIu64 "): %s",
			       rp->cut_off ? "Ends" : "Broken", rp->err_line,
			       rp->err_line ? rp->err_line - 1 : 0, rp->err_reason);
		(void)json_array_append_new(lines, au_str(buf, strlen(buf), sizeof(buf)));
	}
	if (rp->failure) {
		(void)snprintf(
		    buf, sizeof(buf),
		    "Writing failed (%s) after %" PRIu64 " records; not written: %s; %s",
		    rp_get_str(rp->failure, "error") ? rp_get_str(rp->failure, "error") : "?",
		    u64_of(rp->failure, "records"),
		    rp_get_str(rp->failure, "event") ? rp_get_str(rp->failure, "event") : "?",
		    rp_get_str(rp->failure, "action") ? rp_get_str(rp->failure, "action") : "?");
		(void)json_array_append_new(lines, au_str(buf, strlen(buf), sizeof(buf)));
	}
	if (rp->too_long[0]) {
		(void)snprintf(buf, sizeof(buf), "Reading stopped after line %" PRIu64 ": %s",
			       rp->lines, rp->too_long);
		(void)json_array_append_new(lines, au_str(buf, strlen(buf), sizeof(buf)));
	}
	if (o->key)
		(void)json_array_append_new(
		    lines,
		    json_string(c->hmac_checked ? "Seal HMAC verified with the key given"
						: "Seal HMAC NOT verified with the key given"));
	else if (rp->keyed)
		(void)json_array_append_new(
		    lines, json_string("Sealed with an HMAC (not checked here: give --key)"));
	if (o->pub && c->sig_checked) {
		(void)snprintf(buf, sizeof(buf),
			       "Signed by key %s: the seal and %" PRIu64
			       " checkpoint(s) verified with the public key given",
			       c->key_id, c->checkpoints);
		(void)json_array_append_new(lines, au_str(buf, strlen(buf), sizeof(buf)));
	} else if (o->pub) {
		if (c->have_checkpoint)
			(void)snprintf(buf, sizeof(buf),
				       "Signature NOT verified to the end; records 0 to %" PRIu64
				       " are vouched for by a checkpoint signed by key %s",
				       c->checkpoint_seq, c->key_id);
		else
			(void)snprintf(buf, sizeof(buf),
				       "Signature NOT verified with the public key given; no "
				       "record is vouched for by it");
		(void)json_array_append_new(lines, au_str(buf, strlen(buf), sizeof(buf)));
	} else if (c->key_id[0]) {
		(void)snprintf(buf, sizeof(buf),
			       "Signed by key %s (not checked here: give --pubkey)", c->key_id);
		(void)json_array_append_new(lines, au_str(buf, strlen(buf), sizeof(buf)));
	} else if (rp->chain_ok && !rp->keyed)
		(void)json_array_append_new(
		    lines, json_string("Sealed without a key: compare the last hash with the one "
				       "the run printed"));
	if (rp->records) {
		char hex[AU_HASH_HEX + 1];

		au_hex(rp->last_hash, AU_HASH_BYTES, hex);
		(void)snprintf(buf, sizeof(buf), "Last hash %s", hex);
		(void)json_array_append_new(lines, au_str(buf, strlen(buf), sizeof(buf)));
	}
	return json_pack("{s:s, s:s, s:o}", "state", state, "title", title, "lines", lines);
}

static json_t *start_json(const report *rp)
{
	static const char *const keys[] = {"command",	    "layers",	     "not_enforced",
					   "policy_source", "policy_digest", "token",
					   "transparent",   "setup",	     NULL};
	size_t budget = 64u << 10;
	json_t *o;

	if (!rp->start)
		return json_null();
	o = json_object();
	for (const char *const *k = keys; o && *k; k++)
		if (json_object_get(rp->start, *k))
			(void)json_object_set_new(o, *k,
						  trim(json_object_get(rp->start, *k), 0, &budget));
	return o ? o : json_null();
}

/* After the pass: the receipts of sub-sandboxes, recomputed from the log
 * read once more (null without sub-sandboxes or a way to read it again). */
static json_t *receipts_json(const rp_html *h, FILE *in, const au_report_opts *o)
{
	au_receipts_info ri = {0};
	char reason[512] = "";
	size_t line = 0;
	int r;

	if (!h->spawns || !o->rewindable || fseek(in, 0, SEEK_SET) != 0)
		return json_null();
	clearerr(in);
	r = au_receipts_check(in, &ri, &line, reason, sizeof(reason));
	if (r == -EBADMSG)
		return json_pack("{s:s, s:I}", "error", reason, "line", (json_int_t)line);
	if (r < 0)
		return json_null();
	return json_pack("{s:I, s:I, s:i}", "checked", (json_int_t)ri.checked, "spawns",
			 (json_int_t)h->spawns, "max_depth", (int)ri.max_depth);
}

static json_t *page_data(const report *rp, FILE *in, const au_report_opts *o)
{
	const rp_html *h = rp->html;
	json_t *d = json_object();

	if (!d || rows_json(h, d) < 0) {
		json_decref(d);
		return NULL;
	}
	(void)json_object_set_new(d, "sandbox", json_string(rp->sandbox));
	(void)json_object_set_new(d, "first_ts", json_string(rp->first_ts));
	(void)json_object_set_new(d, "last_ts", json_string(rp->last_ts));
	(void)json_object_set_new(d, "records", json_integer((json_int_t)rp->records));
	(void)json_object_set_new(d, "unreadable", json_integer((json_int_t)rp->unreadable));
	(void)json_object_set_new(d, "live", json_boolean(o->live));
	(void)json_object_set_new(d, "verdict", verdict_json(rp, o));
	(void)json_object_set_new(d, "exit_text", captured(rp_exit_text, rp));
	(void)json_object_set_new(d, "exit", rp->exit ? json_deep_copy(rp->exit) : json_null());
	(void)json_object_set_new(d, "start", start_json(rp));
	(void)json_object_set_new(d, "plan", plan_shown(rp));
	set_policy_text(d, rp);
	(void)json_object_set_new(d, "commands", json_integer((json_int_t)rp->commands.count));
	(void)json_object_set_new(d, "hosts", hosts_json(rp));
	(void)json_object_set_new(d, "hosts_other", json_integer((json_int_t)rp->hosts.other_keys));
	(void)json_object_set_new(d, "tally", tally_json(rp));
	(void)json_object_set_new(d, "net_bytes_out", json_integer((json_int_t)rp->net_bytes_out));
	(void)json_object_set_new(d, "net_bytes_in", json_integer((json_int_t)rp->net_bytes_in));
	(void)json_object_set_new(d, "direct_attempts",
				  json_integer((json_int_t)rp->direct_attempts));
	(void)json_object_set_new(d, "spawn_denied", json_integer((json_int_t)h->spawn_denied));
	(void)json_object_set_new(d, "folded", folded_json(h));
	(void)json_object_set_new(d, "series", series_json(h));
	{
		json_t *keys = json_array();

		for (const char *const *k = sample_keys; keys && *k; k++)
			(void)json_array_append_new(keys, json_string(*k));
		(void)json_object_set_new(d, "samples",
					  json_pack("{s:o, s:O, s:I, s:I}", "keys",
						    keys ? keys : json_array(), "points",
						    h->samples, "count", (json_int_t)h->n_samples,
						    "stride", (json_int_t)h->stride));
	}
	(void)json_object_set_new(d, "bound", rp_bound(rp));
	(void)json_object_set_new(d, "bound_text", captured(rp_bound_text, rp));
	(void)json_object_set_new(d, "text", captured(rp_text, rp));
	(void)json_object_set_new(d, "receipts", receipts_json(h, in, o));
	(void)json_object_set_new(d, "caps",
				  json_pack("{s:i, s:i, s:i}", "head", (int)HTML_HEAD, "tail",
					    (int)HTML_TAIL, "str", (int)HTML_STR_MAX));
	return d;
}

int rp_html_render(FILE *out, const report *rp, FILE *in, const au_report_opts *o)
{
	_cleanup_json_ json_t *d = page_data(rp, in, o);
	json_t *v = d ? json_object_get(d, "verdict") : NULL, *x;
	char css_hash[64], js_hash[64];
	size_t i;

	if (!d)
		return -ENOMEM;
	csp_hash(rp_html_css, rp_html_css_len, css_hash);
	csp_hash(rp_html_js, rp_html_js_len, js_hash);
	(void)fprintf(out,
		      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
		      "'none'; style-src '%s'; script-src '%s'; img-src data:; base-uri 'none'; "
		      "form-action 'none'\">\n"
		      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		      "<meta name=\"generator\" content=\"sandcap %s\">\n<title>Audit report: ",
		      css_hash, js_hash, SANDCAP_VERSION);
	put_html(out, rp->sandbox[0] ? rp->sandbox : "(unknown)");
	(void)fputs("</title>\n<style>", out);
	(void)fwrite(rp_html_css, 1, rp_html_css_len, out);
	(void)fputs("</style></head>\n<body>\n<header><h1>Audit report: sandbox ", out);
	put_html(out, rp->sandbox[0] ? rp->sandbox : "(unknown)");
	/* The verdict is in the HTML itself: it shows without the script. */
	(void)fputs("</h1>\n<div class=\"verdict ", out);
	put_html(out, rp_get_str(v, "state"));
	(void)fputs("\" id=\"verdict\" data-state=\"", out);
	put_html(out, rp_get_str(v, "state"));
	(void)fputs("\"><b>", out);
	put_html(out, rp_get_str(v, "title"));
	(void)fputs("</b>", out);
	json_array_foreach(json_object_get(v, "lines"), i, x)
	{
		(void)fputs("<p>", out);
		put_html(out, json_string_value(x));
		(void)fputs("</p>", out);
	}
	(void)fputs("</div>\n<noscript><p>The rest of this page is drawn by its script: allow "
		    "JavaScript for this file, or read <code>sandcap audit report</code>.</p>"
		    "</noscript>\n</header>\n<main id=\"sc-main\"></main>\n"
		    "<script type=\"application/json\" id=\"sc-data\">",
		    out);
	if (json_dump_callback(d, script_safe, out, JSON_COMPACT | JSON_ENSURE_ASCII) < 0)
		return -EIO;
	(void)fputs("</script>\n<script>", out);
	(void)fwrite(rp_html_js, 1, rp_html_js_len, out);
	(void)fputs("</script>\n</body></html>\n", out);
	return ferror(out) ? -EIO : 0;
}
