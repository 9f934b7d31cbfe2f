/* SPDX-License-Identifier: MIT */
/* A spec's linux.seccomp onto a BPF program of its own (oci/seccomp.h). */
#include "oci/seccomp.h"

#include <ctype.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "oci/fields.h"
#include "seccomp/profile.h"

#define WHERE	  "$.linux.seccomp"
#define MAX_ERRNO 4095 /* the largest errno a filter may return (seccomp(2)) */

/* errnoRet (or defaultErrnoRet) of an SCMP_ACT_ERRNO: EPERM when absent. */
static int errno_ret(json_t *v, const char *where, unsigned *ret, char *err, size_t len)
{
	if (!v) {
		*ret = EPERM;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > MAX_ERRNO)
		return oci_refuse(err, len, "%s: expected an errno, 0 to %d", where, MAX_ERRNO);
	*ret = (unsigned)json_integer_value(v);
	return 0;
}

/* An action of the spec's, with its errnoRet (the member named where_errno). */
static int map_action(json_t *act, json_t *eret, const char *where, const char *where_errno,
		      uint32_t *ret, char *err, size_t len)
{
	const char *a = json_string_value(act);
	unsigned e;
	int r;

	if (!a)
		return oci_refuse(err, len, "%s: expected an action (SCMP_ACT_...)", where);
	if (strcmp(a, "SCMP_ACT_ERRNO") == 0) {
		r = errno_ret(eret, where_errno, &e, err, len);
		*ret = SCMP_ACT_ERRNO(e);
		return r;
	}
	if (eret)
		return oci_refuse(err, len, "%s: only with SCMP_ACT_ERRNO", where_errno);
	if (strcmp(a, "SCMP_ACT_ALLOW") == 0)
		*ret = SCMP_ACT_ALLOW;
	else if (strcmp(a, "SCMP_ACT_LOG") == 0)
		*ret = SCMP_ACT_LOG;
	else if (strcmp(a, "SCMP_ACT_TRAP") == 0)
		*ret = SCMP_ACT_TRAP;
	else if (strcmp(a, "SCMP_ACT_KILL") == 0 || strcmp(a, "SCMP_ACT_KILL_THREAD") == 0)
		*ret = SCMP_ACT_KILL_THREAD;
	else if (strcmp(a, "SCMP_ACT_KILL_PROCESS") == 0)
		*ret = SCMP_ACT_KILL_PROCESS;
	else if (strcmp(a, "SCMP_ACT_NOTIFY") == 0)
		return oci_refuse(err, len,
				  "%s: SCMP_ACT_NOTIFY is not supported: a process carries one "
				  "listener, and sandcap's own filter has it",
				  where);
	else if (strcmp(a, "SCMP_ACT_TRACE") == 0)
		return oci_refuse(err, len,
				  "%s: SCMP_ACT_TRACE is not supported: nothing traces a "
				  "sandcap container",
				  where);
	else
		return oci_refuse(err, len, "%s: %.64s is not an action", where, a);
	return 0;
}

static int map_op(const char *op, enum scmp_compare *ret)
{
	static const struct {
		const char *name;
		enum scmp_compare op;
	} ops[] = {{"SCMP_CMP_NE", SCMP_CMP_NE},
		   {"SCMP_CMP_LT", SCMP_CMP_LT},
		   {"SCMP_CMP_LE", SCMP_CMP_LE},
		   {"SCMP_CMP_EQ", SCMP_CMP_EQ},
		   {"SCMP_CMP_GE", SCMP_CMP_GE},
		   {"SCMP_CMP_GT", SCMP_CMP_GT},
		   {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};

	for (size_t i = 0; op && i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(op, ops[i].name) == 0) {
			*ret = ops[i].op;
			return 0;
		}
	return -EINVAL;
}

/* syscalls[i].args onto comparisons; *ret_repeat when two name one argument. */
static int map_args(json_t *args, const char *where, struct scmp_arg_cmp cmp[6], unsigned *ret_n,
		    bool *ret_repeat, char *err, size_t len)
{
	static const char *const keys[] = {"index", "value", "valueTwo", "op", NULL};
	unsigned seen = 0;
	size_t i;
	json_t *a;

	*ret_n = 0;
	*ret_repeat = false;
	if (!args)
		return 0;
	if (!json_is_array(args) || json_array_size(args) > 6)
		return oci_refuse(err, len, "%s.args: expected an array of at most 6", where);
	json_array_foreach(args, i, a)
	{
		json_t *idx = json_object_get(a, "index"), *val = json_object_get(a, "value"),
		       *two = json_object_get(a, "valueTwo");
		char w[96];
		enum scmp_compare op;
		int r;

		snprintf(w, sizeof(w), "%s.args[%zu]", where, i);
		r = oci_only_keys(a, w, keys, err, len);
		if (r < 0)
			return r;
		if (!json_is_integer(idx) || json_integer_value(idx) < 0 ||
		    json_integer_value(idx) > 5)
			return oci_refuse(err, len, "%s.index: expected 0 to 5", w);
		/* Unsigned 64-bit in the spec: jansson holds it as a signed one. */
		if (!json_is_integer(val) || (two && !json_is_integer(two)))
			return oci_refuse(err, len, "%s: expected integer value and valueTwo", w);
		if (map_op(json_string_value(json_object_get(a, "op")), &op) < 0)
			return oci_refuse(err, len,
					  "%s.op: expected SCMP_CMP_NE, _LT, _LE, _EQ, _GE, "
					  "_GT or _MASKED_EQ",
					  w);
		if (seen & (1u << json_integer_value(idx)))
			*ret_repeat = true;
		seen |= 1u << json_integer_value(idx);
		cmp[i] = (struct scmp_arg_cmp){
		    .arg = (unsigned)json_integer_value(idx),
		    .op = op,
		    .datum_a = (scmp_datum_t)json_integer_value(val),
		    .datum_b = two ? (scmp_datum_t)json_integer_value(two) : 0,
		};
	}
	*ret_n = (unsigned)i;
	return 0;
}

static int map_syscall(scmp_filter_ctx ctx, uint32_t def, json_t *s, size_t i, char *err,
		       size_t len)
{
	static const char *const keys[] = {"names", "action", "errnoRet", "args", NULL};
	json_t *names = json_object_get(s, "names"), *n;
	char where[64], wa[80], we[80];
	struct scmp_arg_cmp cmp[6];
	unsigned n_cmp;
	bool repeat;
	uint32_t act;
	size_t j;
	int r;

	snprintf(where, sizeof(where), WHERE ".syscalls[%zu]", i);
	snprintf(wa, sizeof(wa), "%s.action", where);
	snprintf(we, sizeof(we), "%s.errnoRet", where);
	r = oci_only_keys(s, where, keys, err, len);
	if (r < 0)
		return r;
	if (!json_is_array(names) || json_array_size(names) == 0 ||
	    json_array_size(names) > OCI_SECCOMP_MAX_NAMES)
		return oci_refuse(err, len, "%s.names: expected 1 to %u syscall names", where,
				  OCI_SECCOMP_MAX_NAMES);
	r = map_action(json_object_get(s, "action"), json_object_get(s, "errnoRet"), wa, we, &act,
		       err, len);
	if (r < 0)
		return r;
	r = map_args(json_object_get(s, "args"), where, cmp, &n_cmp, &repeat, err, len);
	if (r < 0)
		return r;
	json_array_foreach(names, j, n)
	{
		const char *name = json_string_value(n);
		int nr;

		if (!name || strlen(name) != json_string_length(n))
			return oci_refuse(err, len, "%s.names[%zu]: expected a syscall name", where,
					  j);
		nr = seccomp_syscall_resolve_name(name);
		/* Unknown here (a newer kernel's, another architecture's): runc
		 * skips it too. The default already answers what the rule would. */
		if (nr == __NR_SCMP_ERROR || act == def)
			continue;
		/* libseccomp takes one comparison per argument in a rule; runc's
		 * answer to several on one argument is a rule for each. */
		if (repeat) {
			for (unsigned k = 0; k < n_cmp && r >= 0; k++)
				r = seccomp_rule_add_array(ctx, act, nr, 1, &cmp[k]);
		} else {
			r = seccomp_rule_add_array(ctx, act, nr, n_cmp, n_cmp ? cmp : NULL);
		}
		if (r < 0)
			return oci_refuse(err, len,
					  "%s.names[%zu]: libseccomp refuses the rule for %s: %s",
					  where, j, name, strerror(-r));
	}
	return 0;
}

static int map_flags(json_t *flags, unsigned *ret, char *err, size_t len)
{
	size_t i;
	json_t *v;

	*ret = 0;
	if (!flags)
		return 0;
	if (!json_is_array(flags))
		return oci_refuse(err, len, WHERE ".flags: expected an array");
	json_array_foreach(flags, i, v)
	{
		const char *f = json_string_value(v);

		if (f && strcmp(f, "SECCOMP_FILTER_FLAG_LOG") == 0)
			*ret |= SECCOMP_FILTER_FLAG_LOG;
		else if (f && strcmp(f, "SECCOMP_FILTER_FLAG_TSYNC") == 0)
			; /* loaded before the sandbox has a second thread: all have it */
		else if (f && strcmp(f, "SECCOMP_FILTER_FLAG_SPEC_ALLOW") == 0)
			return oci_refuse(err, len,
					  WHERE
					  ".flags[%zu]: SECCOMP_FILTER_FLAG_SPEC_ALLOW is not "
					  "supported: it turns the speculative store bypass "
					  "mitigation off",
					  i);
		else
			return oci_refuse(err, len,
					  WHERE ".flags[%zu]: %.64s is not supported "
						"(SECCOMP_FILTER_FLAG_LOG and _TSYNC are)",
					  i, f ? f : "a non-string");
	}
	return 0;
}

static int map_arches(scmp_filter_ctx ctx, json_t *arches, char *err, size_t len)
{
	size_t i;
	json_t *v;

	if (!arches)
		return 0;
	if (!json_is_array(arches))
		return oci_refuse(err, len, WHERE ".architectures: expected an array");
	json_array_foreach(arches, i, v)
	{
		const char *a = json_string_value(v);
		char name[32];
		uint32_t token;
		int r;

		if (!a || strncmp(a, "SCMP_ARCH_", 10) != 0 || strlen(a) >= 10 + sizeof(name))
			return oci_refuse(err, len,
					  WHERE ".architectures[%zu]: expected SCMP_ARCH_...", i);
		for (size_t k = 0; (name[k] = (char)tolower((unsigned char)a[10 + k])); k++)
			;
		token = seccomp_arch_resolve_name(name);
		if (!token)
			return oci_refuse(err, len, WHERE ".architectures[%zu]: %.40s is unknown",
					  i, a);
		/* The native one is there; another one's calls reach sandcap's
		 * filter first, which kills foreign ABIs. */
		r = seccomp_arch_add(ctx, token);
		if (r < 0 && r != -EEXIST)
			return oci_refuse(err, len, WHERE ".architectures[%zu]: %s", i,
					  strerror(-r));
	}
	return 0;
}

static void ctx_releasep(scmp_filter_ctx *c)
{
	if (*c)
		seccomp_release(*c);
}

int oci_seccomp_compile(json_t *seccomp, oci_filter *ret, char *err, size_t err_len)
{
	static const char *const keys[] = {
	    "defaultAction", "defaultErrnoRet",	 "architectures", "flags",
	    "listenerPath",  "listenerMetadata", "syscalls",	  NULL};
	_cleanup_(ctx_releasep) scmp_filter_ctx ctx = NULL;
	json_t *calls, *s;
	uint32_t def;
	unsigned flags;
	size_t i;
	int r;

	*ret = (oci_filter){0};
	if (!seccomp || json_is_null(seccomp) ||
	    (json_is_object(seccomp) && json_object_size(seccomp) == 0))
		return 0;
	r = oci_only_keys(seccomp, WHERE, keys, err, err_len);
	if (r < 0)
		return r;
	if (json_string_length(json_object_get(seccomp, "listenerPath")) ||
	    json_string_length(json_object_get(seccomp, "listenerMetadata")))
		return oci_refuse(err, err_len,
				  WHERE ".%s: not supported: sandcap's own filter has the "
					"sandbox's one listener",
				  json_string_length(json_object_get(seccomp, "listenerPath"))
				      ? "listenerPath"
				      : "listenerMetadata");
	r = map_action(json_object_get(seccomp, "defaultAction"),
		       json_object_get(seccomp, "defaultErrnoRet"), WHERE ".defaultAction",
		       WHERE ".defaultErrnoRet", &def, err, err_len);
	if (r < 0)
		return r;
	r = map_flags(json_object_get(seccomp, "flags"), &flags, err, err_len);
	if (r < 0)
		return r;
	ctx = seccomp_init(def);
	if (!ctx)
		return -ENOMEM;
	r = map_arches(ctx, json_object_get(seccomp, "architectures"), err, err_len);
	if (r < 0)
		return r;
	calls = json_object_get(seccomp, "syscalls");
	if (calls && (!json_is_array(calls) || json_array_size(calls) > OCI_SECCOMP_MAX_RULES))
		return oci_refuse(err, err_len, WHERE ".syscalls: expected an array of at most %u",
				  OCI_SECCOMP_MAX_RULES);
	json_array_foreach(calls, i, s)
	{
		r = map_syscall(ctx, def, s, i, err, err_len);
		if (r < 0)
			return r;
	}
	{
		struct sock_filter *insns = NULL;
		size_t n = 0;

		r = sf_export(ctx, &insns, &n);
		if (r == -E2BIG)
			return oci_refuse(err, err_len,
					  WHERE ": compiles to more than %u BPF instructions",
					  OCI_SECCOMP_MAX_INSNS);
		if (r < 0)
			return r;
		*ret = (oci_filter){.insns = insns, .n_insns = n, .flags = flags};
	}
	return 0;
}

void oci_filter_done(oci_filter *f)
{
	free(f->insns);
	*f = (oci_filter){0};
}
