/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for an OCI bundle's config.json (src/oci/config.c):
 * bytes as sandcap-runc reads them (one JSON object, duplicates refused),
 * mapped onto a policy; what is mapped must be a policy sandcap's parser
 * takes or refuses with a message, and a refusal must name a field; the
 * namespaces it joins are absolute paths. Its
 * linux.seccomp is compiled too (src/oci/seccomp.c), under the same rule.
 */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oci/config.h"
#include "oci/seccomp.h"
#include "policy/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *c, *policy = NULL;
	oci_process proc;
	char err[1024];
	int r;

	if (size > OCI_MAX_CONFIG)
		return 0;
	c = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(c)) {
		json_decref(c);
		return 0;
	}
	err[0] = '\0';
	r = oci_config_policy(c, "/bundle", "fuzz", NULL, size & 1, &policy, &proc, err,
			      sizeof(err));
	if (r == -EINVAL && err[0] != '$')
		abort(); /* every refusal names its field */
	if (r == 0) {
		char *text = json_dumps(policy, JSON_COMPACT | JSON_REAL_PRECISION(10));
		sc_plan *plan = NULL;
		sc_diag d = {0};

		if (proc.args && (!json_is_array(proc.args) || json_array_size(proc.args) == 0))
			abort();
		{
			oci_joins j;

			/* What is joined is an absolute path, only where taken. */
			oci_config_joins(c, &j);
			for (int k = 0; k < OCI_NS_MAX; k++)
				if (j.path[k] && j.path[k][0] != '/')
					abort();
		}
		if (text && plan_parse_json(text, strlen(text), &plan, &d) < 0 && !d.message[0])
			abort();
		sc_plan_free(plan);
		free(text);
	}
	json_decref(policy);
	{
		oci_filter f;

		err[0] = '\0';
		r = oci_seccomp_compile(json_object_get(json_object_get(c, "linux"), "seccomp"), &f,
					err, sizeof(err));
		if (r == -EINVAL && err[0] != '$')
			abort();
		if (r == 0 && f.insns && (f.n_insns == 0 || f.n_insns > OCI_SECCOMP_MAX_INSNS))
			abort();
		oci_filter_done(&f);
	}
	json_decref(c);
	return 0;
}
