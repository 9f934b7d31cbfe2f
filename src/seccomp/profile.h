/* SPDX-License-Identifier: MIT */
/*
 * The seccomp profile as data: profile.c holds the table, compile.c compiles
 * it with libseccomp (at build time, see sf-gen.c), apply.c loads the result.
 * Internal to src/seccomp/.
 */
#pragma once

#include <errno.h>
#include <linux/filter.h>
#include <stdbool.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/plan.h"

typedef enum sf_action {
	SF_ALLOW,    /* allowed */
	SF_EXEC,     /* allowed; with audit_exec the listener records it first */
	SF_DENY,     /* EPERM; with audit_denied_syscalls the listener records and refuses */
	SF_ENOSYS,   /* ENOSYS like every unknown syscall; listed to document the choice */
	SF_SETID,    /* EPERM as SF_DENY; the listener records it as fs.denied: a mode
		      * with S_ISUID or S_ISGID (notify.c, sf_setid_call) */
	SF_WRITE,    /* allowed; with audit_denied_syscalls the listener first judges
		      * whether a wall refuses the write, and if so refuses it and
		      * records fs.denied (writes.c) */
	SF_LISTEN,   /* allowed; with net.listen off refused as SF_DENY */
	SF_BIND,     /* allowed; with net.listen off and audit_denied_syscalls the
		      * listener refuses a TCP bind as Landlock would (EACCES) and
		      * records it, so that the refusal is in the log (notify.c) */
	SF_NOFAMILY, /* EAFNOSUPPORT, never recorded: as a kernel without that socket
		      * family would answer (docs/decisions.md, the netlink probe) */
	_SF_ACTION_MAX,
	_SF_ACTION_INVALID = -EINVAL,
} sf_action;

typedef enum sf_match {
	SF_ANY,	   /* no condition on this argument */
	SF_IN,	   /* (arg & mask) is one of values */
	SF_NOT_IN, /* (arg & mask) is none of values */
} sf_match;

#define SF_MAX_VALUES 12u

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

/* The widest expansion of one condition: a NOT_IN over 32 bits of two
 * values that differ in the top bit is 62 comparisons. */
#define SF_MAX_EXPANSION 128u

typedef struct sf_cmp_list {
	unsigned n;
	bool none; /* SF_ANY: a single entry without comparison */
	struct scmp_arg_cmp cmp[SF_MAX_EXPANSION];
} sf_cmp_list;

/* Expands one condition into libseccomp comparisons, any one of which must
 * hold: SF_IN gives one masked equality per value; SF_NOT_IN gives disjoint
 * masked equalities that together cover exactly the complement of the
 * values (libseccomp has no "not equal" it can combine). Returns 0,
 * -E2BIG past SF_MAX_EXPANSION, -EINVAL for an empty NOT_IN. */
int sf_expand(const sf_arg *a, sf_cmp_list *ret);

extern const sf_rule sf_profile[];
extern const size_t sf_profile_len;

/*
 * The filter depends on nothing but these bits of the plan (and the
 * architecture): sf_build takes a variant, not a plan, so that it cannot read
 * anything else, and every variant is compiled once at build time
 * (sf-gen.c) into the programs sf_apply loads.
 */
typedef enum sf_variant {
	SF_V_AUDIT_EXEC = 1 << 0,   /* plan->audit_exec */
	SF_V_AUDIT_DENIED = 1 << 1, /* plan->audit_denied_syscalls */
	SF_V_NO_LISTEN = 1 << 2,    /* !plan->net_listen */
	SF_N_VARIANTS = 1 << 3,	    /* every combination of the bits above */
} sf_variant;

unsigned sf_variant_of(const sc_plan *plan);

/* Builds (does not load) the filter of one variant with libseccomp: for the
 * build-time generator, for tests, and for inspecting it with
 * seccomp_export_pfc(). The caller releases ret_ctx with seccomp_release().
 * Returns 0, -EINVAL for a variant >= SF_N_VARIANTS, -EOPNOTSUPP when
 * auditing is asked for and libseccomp lacks user notification, or a
 * libseccomp -errno. */
int sf_build(unsigned variant, scmp_filter_ctx *ret_ctx);

/* The BPF program libseccomp generates for ctx (seccomp_export_bpf), in a
 * malloc'd array of *ret_len instructions the caller frees. */
int sf_export(scmp_filter_ctx ctx, struct sock_filter **ret_insns, size_t *ret_len);
