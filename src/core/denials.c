/* SPDX-License-Identifier: MIT */
/* Refusals folded into counted records: see denials.h. */
#include "core/denials.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define DN_SEC		      1000000000ull
#define DN_FS_PER_SEC	      10u
#define DN_FS_BURST	      64u
#define DN_SYSCALL_ONE_BY_ONE 10u
#define DN_EXEC_ONE_BY_ONE    32u
#define DN_FOLD_MAX_NS	      (60u * DN_SEC)

void dn_init(dn_state *d, dn_emit_fn emit, void *userdata)
{
	memset(d, 0, sizeof(*d));
	d->emit = emit;
	d->userdata = userdata;
}

void dn_done(dn_state *d)
{
	for (size_t i = 0; i < d->n_syscalls; i++)
		json_decref(d->syscalls[i].fold.first);
	json_decref(d->execs_failed.first);
	d->execs_failed.first = NULL;
	d->n_syscalls = 0;
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * DN_SEC + (uint64_t)ts.tv_nsec;
}

/* The records' own form of a time: 2026-11-29T08:30:00.123456789Z. */
static json_t *iso(uint64_t ns)
{
	time_t sec = (time_t)(ns / DN_SEC);
	struct tm tm;
	char buf[64];

	if (!gmtime_r(&sec, &tm))
		return json_null();
	(void)snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09" PRIu64 "Z",
		       tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		       tm.tm_sec, (uint64_t)(ns % DN_SEC));
	return json_string(buf);
}

static int fs_report(dn_state *d, uint64_t now, bool final)
{
	uint64_t n = d->fs_folded;
	char detail[160];

	if (n == 0 || (!final && now < d->fs_report_ns))
		return 0;
	d->fs_folded = 0;
	d->fs_report_ns = now + DN_SEC;
	(void)snprintf(detail, sizeof(detail),
		       "%" PRIu64 " more refused file write%s not recorded one by one", n,
		       n == 1 ? "" : "s");
	return d->emit(d->userdata, "limit.hit",
		       json_pack("{s:s, s:s, s:s, s:I}", "limit", "denied_records", "kind", "files",
				 "detail", detail, "suppressed", (json_int_t)n));
}

int dn_fs_denied(dn_state *d, json_t *data, uint64_t now)
{
	int r = 0;

	if (!d->started) {
		px_bucket_init(&d->fs_records, DN_FS_PER_SEC, DN_SEC, DN_FS_BURST, now);
		d->started = true;
	}
	if (px_bucket_take_exact(&d->fs_records, 1, now)) {
		r = d->emit(d->userdata, "fs.denied", data);
	} else {
		json_decref(data);
		d->fs_folded++;
	}
	return r < 0 ? r : fs_report(d, now, false);
}

/* The count of f not written yet, as a limit.hit of kind, when due (or
 * final); what says what was counted is in fields (taken). */
static int fold_report(dn_state *d, dn_fold *f, const char *kind, json_t *fields, uint64_t now,
		       bool final)
{
	json_t *rec;

	if (f->folded == 0 || (!final && now < f->report_ns)) {
		json_decref(fields);
		return 0;
	}
	rec = json_pack("{s:s, s:s, s:I, s:o, s:o}", "limit", "denied_records", "kind", kind,
			"suppressed", (json_int_t)f->folded, "first", iso(f->first_wall_ns), "last",
			iso(f->last_wall_ns));
	if (rec && fields)
		(void)json_object_update_missing(rec, fields);
	json_decref(fields);
	f->folded = 0;
	f->interval_ns = f->interval_ns * 2 < DN_FOLD_MAX_NS ? f->interval_ns * 2 : DN_FOLD_MAX_NS;
	f->report_ns = now + f->interval_ns;
	json_decref(f->first);
	f->first = NULL;
	return d->emit(d->userdata, "limit.hit", rec);
}

/* One more of f: true when it is to be written one by one (the first
 * one_by_one), else counted, keeping first (taken) of the first counted. */
static bool fold_take(dn_fold *f, uint64_t one_by_one, json_t *first, uint64_t now)
{
	if (f->recorded < one_by_one) {
		f->recorded++;
		json_decref(first);
		return true;
	}
	f->last_wall_ns = wall_ns();
	if (f->folded++ == 0) {
		f->first_wall_ns = f->last_wall_ns;
		f->first = first;
		if (f->report_ns == 0) {
			f->interval_ns = DN_SEC;
			f->report_ns = now + DN_SEC;
		}
	} else {
		json_decref(first);
	}
	return false;
}

static int syscall_report(dn_state *d, dn_syscall *s, uint64_t now, bool final)
{
	uint64_t n = s->fold.folded;
	char detail[160];

	if (n == 0 || (!final && now < s->fold.report_ns))
		return 0;
	(void)snprintf(detail, sizeof(detail),
		       "%" PRIu64 " more refused %s call%s not recorded one by one", n, s->name,
		       n == 1 ? "" : "s");
	return fold_report(d, &s->fold, "syscalls",
			   json_pack("{s:s, s:s, s:i, s:O?}", "detail", detail, "syscall", s->name,
				     "nr", s->nr, "args", s->fold.first),
			   now, final);
}

static int execs_report(dn_state *d, uint64_t now, bool final)
{
	dn_fold *f = &d->execs_failed;
	uint64_t n = f->folded;
	char detail[160];

	if (n == 0 || (!final && now < f->report_ns))
		return 0;
	(void)snprintf(detail, sizeof(detail),
		       "%" PRIu64
		       " more exec attempt%s that ran no program not recorded one by one",
		       n, n == 1 ? "" : "s");
	return fold_report(d, f, "execs",
			   json_pack("{s:s, s:O?, s:O?}", "detail", detail, "path",
				     json_object_get(f->first, "path"), "result",
				     json_object_get(f->first, "result")),
			   now, final);
}

static dn_syscall *syscall_slot(dn_state *d, int nr, const char *name)
{
	for (size_t i = 0; i < d->n_syscalls; i++)
		if (d->syscalls[i].nr == nr)
			return &d->syscalls[i];
	if (d->n_syscalls == DN_SYSCALLS)
		return &d->syscalls[DN_SYSCALLS - 1]; /* the rest share the last */
	d->syscalls[d->n_syscalls] = (dn_syscall){.nr = nr};
	(void)snprintf(d->syscalls[d->n_syscalls].name, sizeof(d->syscalls[0].name), "%s",
		       name ? name : "?");
	return &d->syscalls[d->n_syscalls++];
}

int dn_syscall_denied(dn_state *d, json_t *data, uint64_t now)
{
	json_t *nr = json_object_get(data, "nr");
	dn_syscall *s = syscall_slot(d, json_is_integer(nr) ? (int)json_integer_value(nr) : -1,
				     json_string_value(json_object_get(data, "syscall")));
	int r = 0;

	if (fold_take(&s->fold, DN_SYSCALL_ONE_BY_ONE, json_incref(json_object_get(data, "args")),
		      now))
		r = d->emit(d->userdata, "syscall.denied", json_incref(data));
	json_decref(data);
	return r < 0 ? r : syscall_report(d, s, now, false);
}

int dn_exec_failed(dn_state *d, json_t *data, uint64_t now)
{
	int r = 0;

	if (fold_take(&d->execs_failed, DN_EXEC_ONE_BY_ONE, json_incref(data), now))
		r = d->emit(d->userdata, "proc.exec", json_incref(data));
	json_decref(data);
	return r < 0 ? r : execs_report(d, now, false);
}

int dn_flush(dn_state *d, uint64_t now, bool final)
{
	int r = fs_report(d, now, final);

	for (size_t i = 0; i < d->n_syscalls && r >= 0; i++)
		r = syscall_report(d, &d->syscalls[i], now, final);
	return r < 0 ? r : execs_report(d, now, final);
}
