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

void dn_init(dn_state *d, dn_emit_fn emit, void *userdata)
{
	memset(d, 0, sizeof(*d));
	d->emit = emit;
	d->userdata = userdata;
}

void dn_done(dn_state *d)
{
	for (size_t i = 0; i < d->n_syscalls; i++)
		json_decref(d->syscalls[i].first_args);
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

static int syscall_report(dn_state *d, dn_syscall *s, uint64_t now, bool final)
{
	uint64_t n = s->folded;
	char detail[160];
	json_t *rec;

	if (n == 0 || (!final && now < s->report_ns))
		return 0;
	(void)snprintf(detail, sizeof(detail),
		       "%" PRIu64 " more refused %s call%s not recorded one by one", n, s->name,
		       n == 1 ? "" : "s");
	rec = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:o, s:o, s:O?}", "limit", "denied_records",
			"kind", "syscalls", "detail", detail, "syscall", s->name, "nr", s->nr,
			"suppressed", (json_int_t)n, "first", iso(s->first_wall_ns), "last",
			iso(s->last_wall_ns), "args", s->first_args);
	s->folded = 0;
	s->report_ns = now + DN_SEC;
	json_decref(s->first_args);
	s->first_args = NULL;
	return d->emit(d->userdata, "limit.hit", rec);
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
	int r;

	if (s->recorded < DN_SYSCALL_ONE_BY_ONE) {
		s->recorded++;
		r = d->emit(d->userdata, "syscall.denied", data);
		return r < 0 ? r : syscall_report(d, s, now, false);
	}
	s->last_wall_ns = wall_ns();
	if (s->folded++ == 0) {
		s->first_wall_ns = s->last_wall_ns;
		s->first_args = json_incref(json_object_get(data, "args"));
		if (s->report_ns == 0)
			s->report_ns = now + DN_SEC;
	}
	json_decref(data);
	return syscall_report(d, s, now, false);
}

int dn_flush(dn_state *d, uint64_t now, bool final)
{
	int r = fs_report(d, now, final);

	for (size_t i = 0; i < d->n_syscalls && r >= 0; i++)
		r = syscall_report(d, &d->syscalls[i], now, final);
	return r;
}
