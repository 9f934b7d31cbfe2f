/* SPDX-License-Identifier: MIT */
/* What `sandcap audit report` collects while streaming (the model), and
 * the renderers above it. Internal to src/audit. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "audit/audit-internal.h"
#include "audit/tally.h"

#define REPORT_LIST_MAX	  8u   /* items kept per list */
#define REPORT_STR_MAX	  160u /* bytes kept of one string */
#define REPORT_ARGV_MAX	  16u  /* argv elements kept per process */
#define REPORT_PLAN_ITEMS 12u  /* grants / egress rules shown in text */
#define REPORT_KEY_MAX	  96u

/* The HTML page's own collection (report-html.c): longer lists, with
 * times, and activity over time. */
typedef struct rp_html rp_html;

typedef struct blist {
	json_t *items; /* at most REPORT_LIST_MAX trimmed objects */
	uint64_t count;
} blist;

typedef struct report {
	uint64_t lines;
	uint64_t records;    /* lines that parsed as records */
	uint64_t unreadable; /* lines that did not */
	au_chain chain;
	bool chain_ok;
	bool stopped;	    /* reading stopped at a line that did not end */
	bool cut_off;	    /* the break is an end cut off (unsealed, a torn last line) */
	char too_long[160]; /* reading stopped at AU_LOG_MAX_LINES/BYTES: why */
	uint64_t err_line;
	char err_reason[256];
	char sandbox[AU_SANDBOX_ID_MAX + 1];
	char first_ts[AU_TS_LEN + 1];
	char last_ts[AU_TS_LEN + 1];
	uint8_t last_hash[AU_HASH_BYTES];
	bool sealed, keyed;

	json_t *start;	    /* sandbox.start data: one line, so bounded by AU_LINE_MAX */
	json_t *exit;	    /* sandbox.exit data */
	json_t *failure;    /* audit.error data: the log says a record was not written */
	blist grants;	    /* fs.grant */
	blist procs;	    /* proc.exec of programs that ran */
	blist failed;	    /* proc.exec attempts that did not run (au_exec_failed) */
	blist net;	    /* net.request, allowed */
	blist files;	    /* fs.write */
	blist denied;	    /* net.denied and denied net.request */
	blist files_denied; /* fs.denied: writes and setid modes refused */
	blist commands;	    /* a session's exec.start, completed by its exec.exit */
	uint64_t commands_ended;
	blist file_ops; /* a session's file.put, file.get, file.list */
	blist dns;	/* net.dns */
	blist reads;	/* fs.read */
	bool reads_truncated;
	uint64_t reads_unrecorded;
	au_table hosts; /* allowed traffic per host */
	au_table other_events;
	au_tally tally; /* the numbers the end-of-run summary shows too */
	uint64_t net_bytes_out, net_bytes_in, tunnels;
	/* connects and datagrams around the proxy, refused by the netns:
	 * net.denied with a protocol, and those limit.hit net.attempts counted */
	uint64_t direct_attempts;
	bool files_truncated;	   /* an fs.write with op "truncated" was seen */
	uint64_t files_unrecorded; /* the sum of their counts */
	rp_html *html;		   /* NULL unless the page is asked for */
} report;

/* ---- the model (report-model.c) ---- */

bool rp_get_u64(json_t *obj, const char *key, uint64_t *ret);
const char *rp_get_str(json_t *obj, const char *key);
/* Empty lists, the chain unbroken; 0 or -ENOMEM (rp_done() then too). The
 * chain's keys are the caller's to set (au_chain_init). */
int rp_init(report *rp);
/* One line of the log (newline: it ended with one): 1 with its record in
 * *ret_rec, the caller's to clear; 0 when the line is no record (counted,
 * the chain broken there); -ENOMEM. */
int rp_add_line(report *rp, const char *line, size_t len, bool newline, au_record *ret_rec);
/* The chain's first break: its line and why (later ones are not kept). */
void rp_chain_broken(report *rp, uint64_t line, const char *reason);
/* Frees what rp holds, but not rp->html. */
void rp_done(report *rp);
/* The bound that was enforced (report-bound.c): a new JSON object, or
 * null before sandbox.start. */
json_t *rp_bound(const report *rp);

/* The renderers, above the model: text (report-text.c), of which the
 * bound's section, JSON (report-json.c). */
void rp_text(FILE *out, const report *rp);
void rp_bound_text(FILE *out, const report *rp);
int rp_json(FILE *out, const report *rp);
/* The exit line of "What it consumed": how the run ended, and why. */
void rp_exit_text(FILE *out, const report *rp);

/* The page (report-html.c). rp_html_new: NULL without memory. Each record
 * read goes to rp_html_record (line: its 1-based line); rp_html_render
 * writes the page once the log is read; in is read again (rewound) only
 * for receipts, when o->rewindable. -ENOMEM, -EIO. */
rp_html *rp_html_new(void);
rp_html *rp_html_free(rp_html *h);
int rp_html_record(rp_html *h, const au_record *rec);
int rp_html_render(FILE *out, const report *rp, FILE *in, const au_report_opts *o);
