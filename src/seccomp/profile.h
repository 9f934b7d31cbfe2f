/* SPDX-License-Identifier: MIT */
/*
 * The seccomp profile as data: profile.c holds the table, apply.c compiles it
 * with libseccomp. Internal to src/seccomp/.
 */
#pragma once

#include <errno.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/plan.h"

typedef enum sf_action {
	SF_ALLOW,  /* allowed */
	SF_EXEC,   /* allowed; with audit_exec the listener records it first */
	SF_DENY,   /* EPERM; with audit_denied_syscalls the listener records and refuses */
	SF_ENOSYS, /* ENOSYS like every unknown syscall; listed to document the choice */
	_SF_ACTION_MAX,
	_SF_ACTION_INVALID = -EINVAL,
} sf_action;

typedef enum sf_match {
	SF_ANY,	   /* no condition on this argument */
	SF_IN,	   /* (arg & mask) is one of values */
	SF_NOT_IN, /* (arg & mask) is none of values */
} sf_match;

#define SF_MAX_VALUES 4u

/* A condition on one syscall argument. Only the low 32 bits are compared:
 * every argument we inspect is an int or unsigned int in the kernel, which
 * ignores the upper half of the register. */
typedef struct sf_arg {
	sf_match how;
	unsigned arg;
	uint32_t mask;
	unsigned n;
	uint32_t values[SF_MAX_VALUES];
} sf_arg;

typedef struct sf_rule {
	sf_action action;
	const char *const *names; /* NULL-terminated */
	sf_arg a, b;		  /* both must hold */
	const char *why;
} sf_rule;

extern const sf_rule sf_profile[];
extern const size_t sf_profile_len;

/* Builds (does not load) the filter for plan: for tests and for inspecting
 * it with seccomp_export_pfc(). The caller releases ret_ctx with
 * seccomp_release(). Returns 0, -EOPNOTSUPP when auditing is asked for and
 * libseccomp lacks user notification, or a libseccomp -errno. */

int sf_build(const sc_plan *plan, scmp_filter_ctx *ret_ctx);
