/* SPDX-License-Identifier: MIT */
/*
 * Compiles the profile table (profile.c) with libseccomp. This runs at build
 * time (sf-gen.c writes the programs apply.c loads) and in tests; sandcap
 * itself never compiles a filter.
 *
 * libseccomp cannot express "not equal" on one argument (two comparisons of
 * the same argument in a rule are rejected) and silently lets an
 * unconditional rule override conditional ones with a different action. So
 * every SF_NOT_IN condition is expanded here into disjoint masked-equality
 * rules covering exactly the complement of the listed values, and no
 * syscall ever mixes an unconditional rule with conditional ones.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "seccomp/profile.h"

static int sf_push(sf_cmp_list *l, unsigned arg, uint32_t mask, uint32_t value)
{
	if (l->n >= SF_MAX_EXPANSION)
		return -E2BIG;
	l->cmp[l->n++] = (struct scmp_arg_cmp){
	    .arg = arg,
	    .op = SCMP_CMP_MASKED_EQ,
	    .datum_a = mask,
	    .datum_b = value,
	};
	return 0;
}

/*
 * Emits masked-equality tests that together match every value of
 * (x & a->mask) except a->values. Walks the mask's bits from the top like a
 * binary trie: a branch holding no excluded value becomes one test on the
 * bits decided so far; a branch that narrows down to an excluded value
 * emits nothing.
 */
static int sf_complement(sf_cmp_list *l, const sf_arg *a, uint32_t bits_left, uint32_t decided,
			 uint32_t prefix, const uint32_t *set, unsigned n_set)
{
	uint32_t set0[SF_MAX_VALUES], set1[SF_MAX_VALUES];
	unsigned n0 = 0, n1 = 0;
	uint32_t bit;
	int r;

	if (n_set == 0) {
		if (decided == 0)
			return -EINVAL; /* nothing excluded: use SF_ANY instead */
		return sf_push(l, a->arg, decided, prefix);
	}
	if (bits_left == 0)
		return 0;
	bit = UINT32_C(1) << (31 - __builtin_clz(bits_left));
	for (unsigned i = 0; i < n_set; i++) {
		if (set[i] & bit)
			set1[n1++] = set[i];
		else
			set0[n0++] = set[i];
	}
	r = sf_complement(l, a, bits_left & ~bit, decided | bit, prefix, set0, n0);
	if (r < 0)
		return r;
	return sf_complement(l, a, bits_left & ~bit, decided | bit, prefix | bit, set1, n1);
}

int sf_expand(const sf_arg *a, sf_cmp_list *ret)
{
	uint32_t set[SF_MAX_VALUES];
	unsigned n_set = 0;
	int r;

	ret->n = 0;
	ret->none = false;
	switch (a->how) {
	case SF_ANY:
		ret->none = true;
		ret->n = 1;
		return 0;
	case SF_IN:
		for (unsigned i = 0; i < a->n && i < SF_MAX_VALUES; i++) {
			r = sf_push(ret, a->arg, a->mask, a->values[i] & a->mask);
			if (r < 0)
				return r;
		}
		return 0;
	case SF_NOT_IN:
		/* Deduplicate after masking so the trie sees a set. */
		for (unsigned i = 0; i < a->n && i < SF_MAX_VALUES; i++) {
			uint32_t v = a->values[i] & a->mask;
			bool seen = false;

			for (unsigned j = 0; j < n_set; j++)
				seen = seen || set[j] == v;
			if (!seen)
				set[n_set++] = v;
		}
		return sf_complement(ret, a, a->mask, 0, 0, set, n_set);
	}
	return -EINVAL;
}

static uint32_t sf_action_of(sf_action act, unsigned variant, bool *ret_skip)
{
	*ret_skip = false;
	switch (act) {
	case SF_ALLOW:
		return SCMP_ACT_ALLOW;
	case SF_EXEC:
		return (variant & SF_V_AUDIT_EXEC) ? SCMP_ACT_NOTIFY : SCMP_ACT_ALLOW;
	case SF_DENY:
	case SF_SETID:
		return (variant & SF_V_AUDIT_DENIED) ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(EPERM);
	case SF_WRITE:
		return (variant & SF_V_AUDIT_DENIED) ? SCMP_ACT_NOTIFY : SCMP_ACT_ALLOW;
	case SF_LISTEN:
		if (!(variant & SF_V_NO_LISTEN))
			return SCMP_ACT_ALLOW;
		return (variant & SF_V_AUDIT_DENIED) ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(EPERM);
	case SF_BIND:
		return (variant & SF_V_NO_LISTEN) && (variant & SF_V_AUDIT_DENIED) ? SCMP_ACT_NOTIFY
										   : SCMP_ACT_ALLOW;
	case SF_NOFAMILY:
		return SCMP_ACT_ERRNO(EAFNOSUPPORT);
	case SF_ENOSYS:
	case _SF_ACTION_MAX:
	case _SF_ACTION_INVALID:
		break;
	}
	/* The filter's default already is ENOSYS: nothing to add. */
	*ret_skip = true;
	return SCMP_ACT_ERRNO(ENOSYS);
}

static int sf_add_rule(scmp_filter_ctx ctx, const sf_rule *rule, unsigned variant)
{
	sf_cmp_list la, lb; /* 2 x 3 KiB */
	bool skip;
	uint32_t action = sf_action_of(rule->action, variant, &skip);
	int r;

	if (skip)
		return 0;
	r = sf_expand(&rule->a, &la);
	if (r < 0)
		return r;
	r = sf_expand(&rule->b, &lb);
	if (r < 0)
		return r;

	for (const char *const *name = rule->names; *name; name++) {
		int nr = seccomp_syscall_resolve_name(*name);

		/* Unknown to libseccomp, or a pseudo-number (a syscall this
		 * architecture does not have): stays ENOSYS. */
		if (nr == __NR_SCMP_ERROR || nr < 0)
			continue;
		for (unsigned i = 0; i < la.n; i++) {
			for (unsigned j = 0; j < lb.n; j++) {
				struct scmp_arg_cmp c[2];
				unsigned n = 0;

				if (!la.none)
					c[n++] = la.cmp[i];
				if (!lb.none)
					c[n++] = lb.cmp[j];
				r = seccomp_rule_add_exact_array(ctx, action, nr, n, c);
				if (r < 0)
					return r;
			}
		}
	}
	return 0;
}

static void sf_releasep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

int sf_build(unsigned variant, scmp_filter_ctx *ret_ctx)
{
	_cleanup_(sf_releasep) scmp_filter_ctx ctx = NULL;
	int r;

	if (variant >= SF_N_VARIANTS || !ret_ctx)
		return -EINVAL;
	if ((variant & (SF_V_AUDIT_EXEC | SF_V_AUDIT_DENIED)) && seccomp_api_get() < 5)
		return -EOPNOTSUPP; /* libseccomp or kernel without user notification */

	ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
	if (!ctx)
		return -ENOMEM;
	/* Foreign ABIs (i386 via int $0x80, x32) are not in the filter: kill. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0)
		return r;
	/* Binary search over syscall numbers instead of a linear chain. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r < 0)
		return r;
	r = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	if (r < 0)
		return r;

	for (size_t i = 0; i < sf_profile_len; i++) {
		r = sf_add_rule(ctx, &sf_profile[i], variant);
		if (r < 0)
			return r;
	}
	*ret_ctx = TAKE_PTR(ctx);
	return 0;
}

int sf_export(scmp_filter_ctx ctx, struct sock_filter **ret_insns, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ struct sock_filter *insns = NULL;
	struct stat st;
	size_t len;
	ssize_t n;
	int r;

	if (!ctx || !ret_insns || !ret_len)
		return -EINVAL;
	/* libseccomp 2.5 exports only to a file descriptor. */
	fd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return r;
	if (fstat(fd, &st) < 0)
		return -errno;
	/* The kernel loads at most BPF_MAXINSNS instructions. */
	if (st.st_size <= 0 || st.st_size % sizeof(*insns) != 0 ||
	    (size_t)st.st_size / sizeof(*insns) > BPF_MAXINSNS)
		return -E2BIG;
	len = (size_t)st.st_size / sizeof(*insns);
	insns = calloc(len, sizeof(*insns));
	if (!insns)
		return -ENOMEM;
	n = pread(fd, insns, len * sizeof(*insns), 0);
	if (n < 0)
		return -errno;
	if ((size_t)n != len * sizeof(*insns))
		return -EIO;
	*ret_insns = TAKE_PTR(insns);
	*ret_len = len;
	return 0;
}
