/* SPDX-License-Identifier: MIT */
/* The sandbox CA made here: sandcap-main, sandcap-runc and sandcap-proxy (proxy/programs.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/ca.h"
#include "proxy/programs.h"

static int make_here(uint64_t lifetime_s, const char *const *names, size_t n_names, char **ret_cert,
		     char **ret_key)
{
	px_ca *ca = NULL;
	int r;

	r = px_ca_generate(lifetime_s, names, n_names, &ca);
	if (r < 0)
		return r;
	r = px_ca_cert_pem(ca, ret_cert);
	if (r >= 0) {
		r = px_ca_key_pem(ca, ret_key);
		if (r < 0) {
			free(*ret_cert);
			*ret_cert = NULL;
		}
	}
	px_ca_free(ca);
	return r;
}

void px_in_process(void)
{
	px_ca_make_here = make_here;
}
