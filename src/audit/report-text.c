/* SPDX-License-Identifier: MIT */
/* The plain-text report: one screen for a typical run. Every string from
 * the log is printed through put_safe(). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/report.h"
#include "base/cleanup.h"

/* Bytes from the sandbox: printable ASCII as is, everything else \xNN. */
static void put_safe(FILE *out, const char *s)
{
	au_fputs_safe(s, out);
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

/* The bound (report-bound.c) in words. */
/* A size of the bound, or "unbounded". */
static void put_bound_size(FILE *out, json_t *v)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		put_size(out, (uint64_t)json_integer_value(v));
	else
		(void)fputs("unbounded", out);
}

void rp_bound_text(FILE *out, const report *rp)
{
	_cleanup_json_ json_t *b = rp_bound(rp);
	json_t *v, *x;
	size_t i, j;

	if (!json_is_object(b))
		return;
	(void)fputs("\nThe bound (what was enforced)\n  egress    ", out);
	(void)fputs(json_string_value(json_object_get(b, "egress")), out);
	if (json_is_integer(json_object_get(b, "max_bytes_out"))) {
		(void)fputs("\n  budget    at most ", out);
		put_bound_size(out, json_object_get(b, "max_bytes_out"));
		(void)fputs(" could leave, ", out);
	} else {
		(void)fputs("\n  budget    no bound on what could leave (no net.egress_budget); ",
			    out);
	}
	put_bound_size(out, json_object_get(b, "bytes_out"));
	(void)fputs(" did", out);
	if (json_is_false(json_object_get(b, "within_budget")))
		(void)fputs(" (MORE THAN THE BOUND)", out);
	(void)fputc('\n', out);
	if (json_is_string(json_object_get(b, "outside_budget"))) {
		(void)fputs("  outside   ", out);
		au_fputs_safe(json_string_value(json_object_get(b, "outside_budget")), out);
		(void)fputc('\n', out);
	}
	json_array_foreach(json_object_get(b, "reachable"), i, v)
	{
		(void)fputs(i ? "            " : "  reachable ", out);
		au_fputs_safe(json_string_value(json_object_get(v, "host")), out);
		(void)fputs(" ports", out);
		json_array_foreach(json_object_get(v, "ports"), j, x)(void)
		    fprintf(out, "%s%" JSON_INTEGER_FORMAT, j ? "," : " ", json_integer_value(x));
		(void)fputc('\n', out);
	}
	json_array_foreach(json_object_get(b, "private_addresses"), i, v)
	{
		(void)fputs(i ? "," : "  private   ", out);
		au_fputs_safe(json_string_value(v), out);
	}
	if (json_array_size(json_object_get(b, "private_addresses")))
		(void)fputc('\n', out);
	json_array_foreach(json_object_get(b, "contacted"), i, v)
	{
		(void)fputs(i ? "            " : "  contacted ", out);
		au_fputs_safe(json_string_value(json_object_get(v, "host")), out);
		(void)fprintf(out, ": %" JSON_INTEGER_FORMAT " request%s\n",
			      json_integer_value(json_object_get(v, "requests")),
			      json_integer_value(json_object_get(v, "requests")) == 1 ? "" : "s");
	}
	(void)fprintf(out, "  sockets   %s\n", json_string_value(json_object_get(b, "sockets")));
	(void)fprintf(out, "  direct    %" JSON_INTEGER_FORMAT " attempt%s around the proxy\n",
		      json_integer_value(json_object_get(b, "direct_attempts")),
		      json_integer_value(json_object_get(b, "direct_attempts")) == 1 ? "" : "s");
	(void)fprintf(out, "  dns       %s", json_string_value(json_object_get(b, "dns")));
	if (json_integer_value(json_object_get(b, "dns_queries")))
		(void)fprintf(out,
			      "; %" JSON_INTEGER_FORMAT " queries, %" JSON_INTEGER_FORMAT
			      " not answered",
			      json_integer_value(json_object_get(b, "dns_queries")),
			      json_integer_value(json_object_get(b, "dns_refused")));
	(void)fputc('\n', out);
	json_array_foreach(json_object_get(b, "credentials"), i, v)
	{
		(void)fputs(i ? "            " : "  credentials ", out);
		au_fputs_safe(json_string_value(json_object_get(v, "name")), out);
		(void)fputs(": ", out);
		if (json_is_string(json_object_get(v, "header")))
			au_fputs_safe(json_string_value(json_object_get(v, "header")), out);
		else
			(void)fputs("placeholder", out);
		(void)fputs(" for ", out);
		au_fputs_safe(json_string_value(json_object_get(v, "host")), out);
		(void)fprintf(out,
			      ", used by %" JSON_INTEGER_FORMAT " request%s (%" JSON_INTEGER_FORMAT
			      " bytes out), %" JSON_INTEGER_FORMAT " refused\n",
			      json_integer_value(json_object_get(v, "requests")),
			      json_integer_value(json_object_get(v, "requests")) == 1 ? "" : "s",
			      json_integer_value(json_object_get(v, "bytes_out")),
			      json_integer_value(json_object_get(v, "refused")));
	}
	if (!json_array_size(json_object_get(b, "credentials")))
		(void)fputs("  credentials none\n", out);
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
	if (json_is_array(v) && json_array_size(v) == 0 && rp->commands.count) {
		(void)fprintf(out,
			      "  command   none of its own: a session, %" PRIu64
			      " command%s run in it (below)\n",
			      rp->commands.count, rp->commands.count == 1 ? "" : "s");
	} else if (v) {
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
		const char *at = rp_get_str(x, "at"), *path = rp_get_str(x, "path");

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
		put_safe(out, json_is_string(x) ? json_string_value(x) : rp_get_str(x, "host"));
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
					put_safe(out, rp_get_str(x, "host"));
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

/* How the run ended, and why: the one line "exit" shows. */
void rp_exit_text(FILE *out, const report *rp)
{
	json_t *x = rp->exit;
	uint64_t v, w;

	if (!x) {
		(void)fputs("unknown (no sandbox.exit record)", out);
		return;
	}
	if (json_is_true(json_object_get(x, "timed_out")))
		(void)fputs("killed by the wall-clock limit", out);
	else if (json_is_true(json_object_get(x, "oom_killed")) &&
		 !(rp_get_u64(x, "signal", &v) && v == 0 && rp_get_u64(x, "status", &w)))
		(void)fputs("killed by the memory limit (OOM)", out);
	else if (json_is_true(json_object_get(x, "oom_killed")))
		/* The command ended by itself; one of its processes did not. */
		(void)fprintf(out,
			      "status %" PRIu64 "; a process was killed by the memory "
			      "limit (OOM)",
			      w);
	else if (rp_get_u64(x, "signal", &v) && v > 0)
		(void)fprintf(out, "killed by signal %" PRIu64, v);
	else if (rp_get_u64(x, "status", &v))
		(void)fprintf(out, "status %" PRIu64, v);
	else if (rp_get_str(x, "error")) {
		/* A run refused during setup: the command never ran. */
		(void)fputs("refused at ", out);
		put_safe(out, rp_get_str(x, "error"));
		if (rp_get_str(x, "detail")) {
			(void)fputs(": ", out);
			put_safe(out, rp_get_str(x, "detail"));
		}
		(void)fputs(" (the command did not run)", out);
	} else
		(void)fputs("unknown", out);
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
		rp_exit_text(out, rp);
		(void)fputc('\n', out);
		if (rp_get_u64(x, "cpu_ns", &v)) {
			(void)fputs("  cpu       ", out);
			put_secs(out, v);
			if (rp_get_u64(x, "throttled_ns", &w) && w > 0) {
				(void)fputs(" (throttled ", out);
				put_secs(out, w);
				(void)fputc(')', out);
			}
			(void)fputc('\n', out);
		}
		if (rp_get_u64(x, "memory_peak", &v)) {
			json_t *lim = json_object_get(
			    json_object_get(json_object_get(rp->start, "plan"), "limits"),
			    "memory");

			(void)fputs("  memory    peak ", out);
			put_size(out, v);
			if (rp_get_u64(
				json_object_get(json_object_get(rp->start, "plan"), "limits"),
				"memory", &limit) &&
			    limit != PLAN_UNLIMITED) {
				(void)fputs(" of ", out);
				put_size(out, limit);
			} else if (json_is_string(lim)) {
				(void)fputs(" of ", out);
				put_safe(out, json_string_value(lim));
			}
			if (rp_get_u64(x, "oom_kills", &w) && w > 0)
				(void)fprintf(out, ", %" PRIu64 " OOM kill%s", w,
					      w == 1 ? "" : "s");
			(void)fputc('\n', out);
		}
		if (rp_get_u64(x, "wall_ns", &v)) {
			(void)fputs("  wall      ", out);
			put_secs(out, v);
			(void)fputc('\n', out);
		}
	}
	/* The proxy's own totals when the exit record has them, else ours. */
	if (!rp_get_u64(x, "bytes_out", &v))
		v = rp->net_bytes_out;
	if (!rp_get_u64(x, "bytes_in", &w))
		w = rp->net_bytes_in;
	(void)fputs("  network   ", out);
	put_size(out, v);
	(void)fputs(" out, ", out);
	put_size(out, w);
	(void)fputs(" in", out);
	if (!rp_get_u64(x, "requests_allowed", &v))
		v = rp->net.count;
	if (!rp_get_u64(x, "requests_denied", &w))
		w = rp->denied.count;
	(void)fprintf(out, "; %" PRIu64 " request%s allowed, %" PRIu64 " denied\n", v,
		      v == 1 ? "" : "s", w);
}

/* " (S)" for a non-empty string s. */
static void put_paren(FILE *out, const char *s)
{
	if (!s || !s[0])
		return;
	(void)fputs(" (", out);
	put_safe(out, s);
	(void)fputc(')', out);
}

/* A session's commands, with their ends, and its file transfers. */
static void text_session(FILE *out, const report *rp)
{
	json_t *x, *v;
	size_t i;

	if (rp->commands.count) {
		(void)fprintf(out, "  commands  %" PRIu64 " run, %" PRIu64 " ended\n",
			      rp->commands.count, rp->commands_ended);
		json_array_foreach(rp->commands.items, i, x)
		{
			(void)fputs("    #", out);
			put_scalar(out, json_object_get(x, "id"));
			(void)fputc(' ', out);
			put_words(out, json_object_get(x, "argv"));
			if ((v = json_object_get(x, "status"))) {
				(void)fputs(" -> exit ", out);
				put_scalar(out, v);
				if (json_is_integer(json_object_get(x, "signal"))) {
					(void)fputs(" (signal ", out);
					put_scalar(out, json_object_get(x, "signal"));
					(void)fputc(')', out);
				}
				if ((v = json_object_get(x, "duration_ms"))) {
					(void)fputs(", ", out);
					put_scalar(out, v);
					(void)fputs(" ms", out);
				}
				if (json_array_size(json_object_get(x, "limits_hit"))) {
					(void)fputs(", limit ", out);
					put_words(out, json_object_get(x, "limits_hit"));
				}
			} else {
				(void)fputs(" (no end recorded)", out);
			}
			(void)fputc('\n', out);
		}
		put_more(out, &rp->commands);
	}
	if (!rp->file_ops.count)
		return;
	(void)fprintf(out, "  transfers %" PRIu64 " (put, get, ls through the walls)\n",
		      rp->file_ops.count);
	json_array_foreach(rp->file_ops.items, i, x)
	{
		(void)fputs("    ", out);
		put_safe(out, rp_get_str(x, "op"));
		(void)fputc(' ', out);
		put_safe(out, rp_get_str(x, "path"));
		if ((v = json_object_get(x, "bytes"))) {
			(void)fputs(": ", out);
			put_scalar(out, v);
			(void)fputs(" bytes", out);
		}
		put_paren(out, rp_get_str(x, "result"));
		(void)fputc('\n', out);
	}
	put_more(out, &rp->file_ops);
}

static void text_reads(FILE *out, const report *rp)
{
	json_t *x, *v;
	size_t i;

	if (!rp->reads.count && !rp->reads_truncated)
		return;
	(void)fprintf(out, "  reads     %" PRIu64 " file%s read\n", rp->reads.count,
		      rp->reads.count == 1 ? "" : "s");
	json_array_foreach(rp->reads.items, i, x)
	{
		(void)fputs("    ", out);
		put_safe(out, rp_get_str(x, "path"));
		if ((v = json_object_get(x, "size"))) {
			(void)fputs(" (", out);
			put_scalar(out, v);
			(void)fputs(" bytes)", out);
		}
		if (rp_get_str(x, "sha256")) {
			(void)fputs(" sha256 ", out);
			put_safe(out, rp_get_str(x, "sha256"));
		} else if (rp_get_str(x, "hash_skipped")) {
			(void)fputs(" not hashed: ", out);
			put_safe(out, rp_get_str(x, "hash_skipped"));
		}
		(void)fputc('\n', out);
	}
	put_more(out, &rp->reads);
	if (rp->reads_truncated)
		(void)fprintf(out, "    incomplete: %" PRIu64 " reads not recorded\n",
			      rp->reads_unrecorded);
}

static void text_dns(FILE *out, const report *rp)
{
	json_t *x;
	size_t i;

	if (!rp->tally.dns_queries)
		return;
	(void)fprintf(out,
		      "  dns       %" PRIu64 " quer%s, %" PRIu64 " answered, %" PRIu64 " refused\n",
		      rp->tally.dns_queries, rp->tally.dns_queries == 1 ? "y" : "ies",
		      rp->tally.dns_queries - rp->tally.dns_refused, rp->tally.dns_refused);
	json_array_foreach(rp->dns.items, i, x)
	{
		(void)fputs("    ", out);
		put_safe(out, rp_get_str(x, "name"));
		(void)fputc(' ', out);
		put_safe(out, rp_get_str(x, "type"));
		(void)fputs(" -> ", out);
		put_safe(out, rp_get_str(x, "rcode"));
		if (rp_get_str(x, "answer") && rp_get_str(x, "answer")[0]) {
			(void)fputc(' ', out);
			put_safe(out, rp_get_str(x, "answer"));
		}
		put_paren(out, rp_get_str(x, "reason"));
		(void)fputc('\n', out);
	}
	put_more(out, &rp->dns);
}

/* The cow workspaces kept at the end (sandbox.exit). */
static void text_workspaces(FILE *out, const report *rp)
{
	json_t *ws = json_object_get(rp->exit, "workspaces"), *x;
	size_t i;

	json_array_foreach(ws, i, x)
	{
		(void)fputs(i ? "            " : "  workspace ", out);
		put_safe(out, rp_get_str(x, "id"));
		(void)fputs(": ", out);
		put_scalar(out, json_object_get(x, "files"));
		(void)fputs(" entries, ", out);
		put_scalar(out, json_object_get(x, "bytes"));
		(void)fputs(" bytes (sandcap workspace diff)\n", out);
	}
}

static void text_did(FILE *out, const report *rp)
{
	json_t *x;
	size_t i;

	(void)fputs("\nWhat it did\n", out);
	(void)fprintf(out, "  processes %" PRIu64 " executed", rp->procs.count);
	if (rp->failed.count)
		(void)fprintf(out, ", %" PRIu64 " exec attempt%s failed (not listed)",
			      rp->failed.count, rp->failed.count == 1 ? "" : "s");
	(void)fputc('\n', out);
	json_array_foreach(rp->procs.items, i, x)
	{
		(void)fputs("    ", out);
		if (json_object_get(x, "pid")) {
			(void)fputc('[', out);
			put_scalar(out, json_object_get(x, "pid"));
			(void)fputs("] ", out);
		}
		put_safe(out, rp_get_str(x, "path"));
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
		const au_count *c = &rp->hosts.e[i];

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
	if (rp->tally.credentials.n) {
		(void)fputs("    credentials:\n", out);
		au_credentials_text(&rp->tally.credentials, "      ", out);
	}
	json_array_foreach(rp->net.items, i, x)
	{
		json_t *v;

		(void)fputs("    ", out);
		if ((v = json_object_get(x, "method"))) {
			put_scalar(out, v);
			(void)fputc(' ', out);
		}
		put_safe(out, rp_get_str(x, "host"));
		if ((v = json_object_get(x, "port"))) {
			(void)fputc(':', out);
			put_scalar(out, v);
		}
		put_safe(out, rp_get_str(x, "path"));
		if ((v = json_object_get(x, "status"))) {
			(void)fputs(" -> ", out);
			put_scalar(out, v);
		}
		if (json_is_false(json_object_get(x, "completed")))
			(void)fputs(" (sent; the proxy worker ended before its outcome)", out);
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

	/* Distinct paths, as the end-of-run summary counts them. */
	(void)fprintf(out, "  files     %s%" PRIu64 " written",
		      rp->tally.files_approx ? "at least " : "", rp->tally.files_written);
	if (rp->files.count != rp->tally.files_written)
		(void)fprintf(out, " (%" PRIu64 " fs.write records)", rp->files.count);
	(void)fputc('\n', out);
	json_array_foreach(rp->files.items, i, x)
	{
		(void)fputs("    ", out);
		put_safe(out, rp_get_str(x, "path"));
		if (rp_get_str(x, "op")) {
			(void)fputs(" (", out);
			put_safe(out, rp_get_str(x, "op"));
			(void)fputc(')', out);
		}
		if (rp_get_str(x, "sha256")) {
			(void)fputs(" sha256 ", out);
			put_safe(out, rp_get_str(x, "sha256"));
		}
		(void)fputc('\n', out);
	}
	put_more(out, &rp->files);
	if (rp->files_truncated)
		(void)fprintf(out,
			      "    incomplete: %" PRIu64
			      " writes not recorded (caps, queue overflow or unplaced)\n",
			      rp->files_unrecorded);
	text_session(out, rp);
	text_reads(out, rp);
	text_dns(out, rp);
	text_workspaces(out, rp);
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

static void text_ctable(FILE *out, const au_table *t, bool details)
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

/* The denials the list above cut off, by host, most denied first. */
static void text_by_host(FILE *out, const au_table *t)
{
	const au_count *e[AU_TALLY_KEYS];
	size_t n = au_table_sorted(t, e);

	(void)fputs("    by host:", out);
	for (size_t i = 0; i < n; i++) {
		(void)fputs(i ? ", " : " ", out);
		put_safe(out, e[i]->key);
		(void)fprintf(out, " x%" PRIu64, e[i]->count);
		if (e[i]->detail[0]) {
			(void)fputs(" (", out);
			put_safe(out, e[i]->detail);
			(void)fputs(e[i]->mixed ? ", ...)" : ")", out);
		}
	}
	if (t->other_count)
		(void)fprintf(out, ", and %" PRIu64 " to other hosts", t->other_count);
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
		if (rp_get_str(x, "protocol")) {
			/* A direct attempt around the proxy, not a request. */
			(void)fputs("direct ", out);
			put_safe(out, rp_get_str(x, "protocol"));
			(void)fputc(' ', out);
		}
		if ((v = json_object_get(x, "method"))) {
			put_scalar(out, v);
			(void)fputc(' ', out);
		}
		put_safe(out, rp_get_str(x, "host"));
		if ((v = json_object_get(x, "port"))) {
			(void)fputc(':', out);
			put_scalar(out, v);
		}
		put_safe(out, rp_get_str(x, "path"));
		if (rp_get_str(x, "reason")) {
			(void)fputs(" (", out);
			put_safe(out, rp_get_str(x, "reason"));
			(void)fputc(')', out);
		}
		(void)fputc('\n', out);
	}
	put_more(out, &rp->denied);
	if (rp->denied.count > json_array_size(rp->denied.items))
		text_by_host(out, &rp->tally.denied_hosts);
	/* Refused writes: folded ones are in the count, not the list. */
	(void)fprintf(out, "  files     %" PRIu64 " write%s refused\n", rp->tally.files_denied,
		      rp->tally.files_denied == 1 ? "" : "s");
	json_array_foreach(rp->files_denied.items, i, x)
	{
		(void)fputs("    ", out);
		put_safe(out, rp_get_str(x, "op"));
		(void)fputc(' ', out);
		put_safe(out, rp_get_str(x, "path"));
		if (rp_get_str(x, "mode")) {
			(void)fputs(" mode ", out);
			put_safe(out, rp_get_str(x, "mode"));
		}
		(void)fputs(" (", out);
		put_safe(out, rp_get_str(x, "errno"));
		(void)fputs(", ", out);
		put_safe(out, rp_get_str(x, "reason"));
		(void)fputs(")\n", out);
	}
	put_more(out, &rp->files_denied);
	(void)fprintf(out, "  syscalls  %" PRIu64 " denied", rp->tally.syscalls_denied);
	if (rp->tally.syscalls_denied)
		(void)fputc(':', out);
	text_ctable(out, &rp->tally.syscalls, false);
	(void)fprintf(out, "  limits    %" PRIu64 " hit", rp->tally.limits_hit);
	text_ctable(out, &rp->tally.limits, true);
}

void rp_text(FILE *out, const report *rp)
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
	if (rp->failure) {
		uint64_t n = 0;

		(void)fputs("Log: INCOMPLETE: writing failed (", out);
		put_safe(out,
			 rp_get_str(rp->failure, "error") ? rp_get_str(rp->failure, "error") : "?");
		(void)fputs(") after ", out);
		(void)fprintf(out, "%" PRIu64, rp_get_u64(rp->failure, "records", &n) ? n : 0);
		(void)fputs(" records; not written: ", out);
		put_safe(out,
			 rp_get_str(rp->failure, "event") ? rp_get_str(rp->failure, "event") : "?");
		(void)fputs("; ", out);
		put_safe(out, rp_get_str(rp->failure, "action") ? rp_get_str(rp->failure, "action")
								: "?");
		(void)fputc('\n', out);
	}
	if (rp->unreadable)
		(void)fprintf(out, "Unreadable lines: %" PRIu64 " (%s)\n", rp->unreadable,
			      rp->stopped ? "the last one not read to its end" : "skipped");
	if (rp->too_long[0])
		(void)fprintf(out, "Stopped after line %" PRIu64 ": %s\n", rp->lines, rp->too_long);
	if (rp->records) {
		au_hex(rp->last_hash, AU_HASH_BYTES, hex);
		(void)fprintf(out, "Last hash: %s\n", hex);
	}
	text_access(out, rp);
	text_consumed(out, rp);
	text_did(out, rp);
	text_stopped(out, rp);
	rp_bound_text(out, rp);
}
