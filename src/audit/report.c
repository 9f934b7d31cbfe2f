/* SPDX-License-Identifier: MIT */
/*
 * `sandcap audit report`: what it could access, what it consumed, what it
 * did, where it was stopped. Streams the log once into the model
 * (report-model.c), the page's own collection beside it (report-html.c),
 * then hands it to the renderer asked for. Every string shown comes from
 * the sandbox and is printed with control and non-ASCII bytes escaped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "audit/report.h"
#include "base/cleanup.h"

/* What rp holds, the page's collection too. */
static void report_done(report *rp)
{
	rp->html = rp_html_free(rp->html);
	rp_done(rp);
}

int au_report(FILE *in, FILE *out, bool json)
{
	au_report_opts o = {.format = json ? AU_REPORT_JSON : AU_REPORT_TEXT};

	return au_report_ex(in, out, &o);
}

int au_report_ex(FILE *in, FILE *out, const au_report_opts *o)
{
	_cleanup_free_ char *buf = NULL;
	size_t cap = 0;
	_cleanup_free_ report *rp = NULL;
	size_t len = 0;
	bool newline = false;
	au_log_bound bound = {0};
	au_record rec;
	int r;

	if (!in || !out || !o || o->format < 0 || o->format >= _AU_REPORT_FORMAT_MAX ||
	    (o->key && (o->key_len < AU_KEY_MIN || o->key_len > AU_KEY_MAX)))
		return -EINVAL;
	rp = calloc(1, sizeof(*rp));
	if (!rp)
		return -ENOMEM;
	/* The page states what the keys verify; the text and JSON say only
	 * what a keyless walk can (audit verify checks the keys). */
	if (o->format == AU_REPORT_HTML) {
		au_chain_init(&rp->chain, o->key, o->key ? o->key_len : 0);
		rp->chain.pub = o->pub;
		rp->html = rp_html_new();
		if (!rp->html)
			return -ENOMEM;
	} else
		au_chain_init(&rp->chain, NULL, 0);
	if (rp_init(rp) < 0) {
		report_done(rp);
		return -ENOMEM;
	}

	for (;;) {
		r = au_read_line(in, &buf, &cap, &len, &newline);
		if (r == 0)
			break;
		if (r == -EMSGSIZE) {
			char reason[96];

			/* Nothing after it is read: an endless line never ends. */
			rp->lines++;
			rp->unreadable++;
			(void)snprintf(reason, sizeof(reason),
				       "longer than %u bytes; not read any further", AU_LINE_MAX);
			rp_chain_broken(rp, rp->lines, reason);
			rp->stopped = true;
			r = 0;
			break;
		}
		if (r < 0)
			break;
		if (au_log_bound_add(&bound, len, newline, rp->too_long, sizeof(rp->too_long)) <
		    0) {
			rp_chain_broken(rp, rp->lines + 1, rp->too_long);
			r = 0;
			break;
		}
		r = rp_add_line(rp, buf, len, newline, &rec);
		if (r > 0) {
			r = rp->html ? rp_html_record(rp->html, &rec) : 0;
			au_record_clear(&rec);
		}
		if (r < 0)
			break;
	}
	if (r == 0 && rp->chain_ok && !rp->stopped && !rp->too_long[0]) {
		char reason[256];

		if (au_chain_end(&rp->chain, reason, sizeof(reason)) < 0) {
			rp_chain_broken(rp, rp->lines + 1, reason);
			rp->cut_off = true; /* unsealed, or empty */
		}
	}
	if (r == 0) {
		if (o->format == AU_REPORT_JSON)
			r = rp_json(out, rp);
		else if (o->format == AU_REPORT_HTML)
			r = rp_html_render(out, rp, in, o);
		else
			rp_text(out, rp);
		if (r == 0 && (fflush(out) != 0 || ferror(out)))
			r = -EIO;
	}
	report_done(rp);
	if (r < 0)
		return r;
	/* A log that records its own failure is not a whole run either. */
	return rp->chain_ok && !rp->failure ? 0 : 1;
}
