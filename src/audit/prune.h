/* SPDX-License-Identifier: MIT */
/*
 * Retention of the per-run audit logs under the state directory
 * (docs/audit.md, "Retention"): removes the logs last written before a
 * cutoff, except those a running sandbox still writes. A writer holds an
 * exclusive flock() on its log from au_open() to au_close() (writer.c), so
 * a log whose lock cannot be taken belongs to a running sandbox; one whose
 * lock can be taken was closed, sealed or not (a crashed run's log is
 * unsealed and unlocked). Library code: never prints.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

typedef enum pr_verdict {
	PR_REMOVED,	 /* removed (with dry_run: would be) */
	PR_KEPT_RUNNING, /* older than the cutoff, but its writer holds it */
	PR_KEPT_YOUNG,	 /* written since the cutoff */
	PR_FAILED,	 /* could not be examined or removed: err says why */
	_PR_VERDICT_MAX,
	_PR_VERDICT_INVALID = -EINVAL,
} pr_verdict;

typedef struct pr_log {
	const char *name; /* the file's name in the directory */
	pr_verdict verdict;
	int err;     /* -errno for PR_FAILED */
	bool sealed; /* its last record is audit.seal */
	off_t size;
	time_t mtime;
} pr_log;

typedef void (*pr_cb)(const pr_log *log, void *userdata);

/* "30d", "12h", "90m", "45s": days, or a duration parse_duration_ns()
 * takes. -EINVAL or -ERANGE. */
int pr_parse_age(const char *s, uint64_t *ret_seconds);

/*
 * Every "*.jsonl" regular file directly in dir, not following symlinks:
 * one call of cb each, in directory order. Logs modified before cutoff and
 * not locked are removed (unlinked while we hold their lock), unless
 * dry_run. Returns 0, or -errno when dir cannot be read.
 */
int pr_prune(const char *dir, time_t cutoff, bool dry_run, pr_cb cb, void *userdata);
