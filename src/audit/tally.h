/* SPDX-License-Identifier: MIT */
/*
 * What a run did, counted from its audit events: one definition shared by
 * the end-of-run summary (the supervisor feeds every event it writes) and
 * by `sandcap audit report` (fed from the log), so that both say the same
 * numbers. Bounded: tables keep AU_TALLY_KEYS keys, the set of written paths
 * AU_TALLY_PATHS entries, whatever the number of events.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define AU_TALLY_KEYS	    16u	  /* keys kept per table */
#define AU_TALLY_KEY_MAX    96u	  /* bytes kept of a key */
#define AU_TALLY_DETAIL_MAX 160u  /* bytes kept of a detail */
#define AU_TALLY_PATHS	    8192u /* hash slots for distinct written paths */

typedef struct au_count {
	char key[AU_TALLY_KEY_MAX];
	uint64_t count;
	uint64_t bytes_out;
	uint64_t bytes_in;
	char detail[AU_TALLY_DETAIL_MAX]; /* the first detail seen for the key */
	bool mixed;			  /* later events of the key had other details */
	uint64_t refused;		  /* au_tally.credentials: requests refused */
} au_count;

typedef struct au_table {
	au_count e[AU_TALLY_KEYS];
	size_t n;
	uint64_t other_keys;  /* keys that did not fit (an upper bound) */
	uint64_t other_count; /* their events */
} au_table;

typedef struct au_tally {
	uint64_t execs;		     /* proc.exec records of programs that ran */
	uint64_t execs_failed;	     /* proc.exec attempts the kernel refused (au_exec_failed) */
	uint64_t files_written;	     /* distinct paths named by fs.write records */
	bool files_approx;	     /* the path set was full: later paths counted without dedup */
	uint64_t net_denied;	     /* net.denied records, and requests refused over net.rate */
	uint64_t requests_over_rate; /* those refused over net.rate (folded: no record each) */
	au_table denied_hosts;	     /* net.denied by host, detail: the reason */
	uint64_t syscalls_denied;
	uint64_t files_denied; /* fs.denied records, and those folded into a count */
	au_table syscalls;     /* syscall.denied by name */
	uint64_t limits_hit;
	au_table limits; /* limit.hit by limit, detail: its detail */
	/* by credential name: allowed net.request records that carried it
	 * (count, bytes), net.denied records that name it (refused) */
	au_table credentials;
	/* What went through the proxy: net.request records not refused
	 * ("decision" not "deny"), bytes of net.request and net.tunnel.close. */
	uint64_t requests_allowed;
	uint64_t bytes_out, bytes_in;
	uint64_t dns_queries;		/* net.dns records and queries refused over net.rate */
	uint64_t dns_refused;		/* those not answered NOERROR */
	uint64_t paths[AU_TALLY_PATHS]; /* 64-bit hashes of written paths, 0 = free */
	size_t n_paths;
} au_tally;

/* Counts one event (data is only read). Events of any name may be passed;
 * those that count nothing are ignored. */
void au_tally_event(au_tally *t, const char *event, json_t *data);

/*
 * A proc.exec record of an attempt that did not run a program: the record
 * is taken before the kernel runs the exec, and a shell or execvp trying
 * each PATH directory leaves one per miss. Such a record carries the
 * outcome as "result" (anything but "ok" or "success", e.g. "ENOENT"), a
 * non-zero "errno", a non-null "error", "failed": true or "ok": false; a
 * record without any of them is a program that ran.
 */
bool au_exec_failed(json_t *data);

/* The entry of key (NULL: "?"), added when there is room; NULL when the
 * table is full, counted in other_keys and other_count. */
au_count *au_table_get(au_table *t, const char *key);
/* One more event of key; detail, if any, is kept from the first one. */
void au_table_count(au_table *t, const char *key, const char *detail);

/* au_count pointers of t ordered by count, highest first (ties keep their
 * order of arrival); returns how many (t->n). out holds AU_TALLY_KEYS. */
size_t au_table_sorted(const au_table *t, const au_count **out);

/* A table key or detail is printed by the renderers with this: printable
 * ASCII as is, every other byte as \xNN (the strings come from the agent). */
void au_fputs_safe(const char *s, FILE *out);

/*
 * The credentials table as [{"name", "requests", "bytes_out", "bytes_in",
 * "refused"}], most used first: the run summary's and `sandcap audit
 * report`'s "credentials". NULL only without memory.
 */
json_t *au_credentials_json(const au_table *t);
/* One line per credential, "    NAME: N requests, X out, Y in, M refused\n"
 * after prefix (nothing when the table is empty). */
void au_credentials_text(const au_table *t, const char *prefix, FILE *out);
