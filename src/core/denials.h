/* SPDX-License-Identifier: MIT */
/*
 * Refusals the seccomp listener reports, folded so that an agent that
 * repeats them cannot fill the host's disk (docs/audit.md, "Folded
 * records"): each is written as its own record while it is rare, and
 * counted past that, the counts written as one record a second and at the
 * end. The records plus the counts are exactly what the agent did.
 *
 *   fs.denied       64 records, then ten a second; the rest counted in a
 *                   limit.hit denied_records of kind "files"
 *   syscall.denied  the first ten of each syscall; the rest counted per
 *                   syscall in a limit.hit denied_records of kind
 *                   "syscalls" with the syscall, the times of the first
 *                   and last counted and the arguments of the first
 *   proc.exec       of an attempt that ran no program (a PATH lookup that
 *                   missed, a refused or malformed exec): the first 32;
 *                   the rest counted in a limit.hit denied_records of kind
 *                   "execs" with the times of the first and last counted
 *                   and the first's path and result
 *
 * A count is written a second after its first, then after 2, 4, 8... up
 * to 60 seconds while the agent keeps repeating it, and at the end: a
 * flood of many kinds costs a few records per kind and minute, not one per
 * kind and second.
 *
 * Not thread-safe: the caller holds its lock around every call.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "proxy/limits.h"

/* Writes one record (takes data); returns 0 or -errno. */
typedef int (*dn_emit_fn)(void *userdata, const char *event, json_t *data);

#define DN_SYSCALLS 128u /* more than the profile refuses (profile.c, SF_DENY) */

/* Repeats of one kind past its records one by one, counted. */
typedef struct dn_fold {
	uint64_t recorded;    /* records written one by one */
	uint64_t folded;      /* counted since the last fold record */
	uint64_t report_ns;   /* when the count is written next */
	uint64_t interval_ns; /* the wait after that: doubles, to a minute */
	uint64_t first_wall_ns, last_wall_ns;
	json_t *first; /* what the fold record keeps of the first counted */
} dn_fold;

typedef struct dn_syscall {
	int nr;
	char name[32];
	dn_fold fold;
} dn_syscall;

typedef struct dn_state {
	dn_emit_fn emit;
	void *userdata;
	bool started;
	px_bucket fs_records;
	uint64_t fs_folded, fs_report_ns;
	size_t n_syscalls;
	dn_syscall syscalls[DN_SYSCALLS];
	dn_fold execs_failed;
} dn_state;

void dn_init(dn_state *d, dn_emit_fn emit, void *userdata);
/* An fs.denied: written or counted. Takes data. */
int dn_fs_denied(dn_state *d, json_t *data, uint64_t now_ns);
/* A syscall.denied: written or counted. Takes data. */
int dn_syscall_denied(dn_state *d, json_t *data, uint64_t now_ns);
/* A proc.exec of an attempt that ran no program: written or counted.
 * Takes data. */
int dn_exec_failed(dn_state *d, json_t *data, uint64_t now_ns);
/* The counts not written yet: those due (a second since the last), or all
 * of them (final, at the end of the run). */
int dn_flush(dn_state *d, uint64_t now_ns, bool final);
void dn_done(dn_state *d);
