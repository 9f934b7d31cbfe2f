/* SPDX-License-Identifier: MIT */
/* The sandbox CA made here: sandcap-main and sandcap-runc (proxy/programs.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/io.h"
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

int px_ca_helper_main(int argc, char **argv)
{
	char *cert = NULL, *key = NULL;
	unsigned long long life = 0;
	char *end = NULL;
	int r;

	if (argc >= 2 && argv[1][0] >= '0' && argv[1][0] <= '9') {
		errno = 0;
		life = strtoull(argv[1], &end, 10);
		if (errno || *end)
			life = 0;
	}
	if (life == 0) {
		fprintf(stderr, "%s: usage: %s LIFETIME_S [NAME]...\n", PX_CA_HELPER_NAME,
			PX_CA_HELPER_NAME);
		return 2;
	}
	r = make_here(life, (const char *const *)argv + 2, (size_t)argc - 2, &cert, &key);
	if (r >= 0)
		r = io_write_all(1, cert, strlen(cert));
	if (r >= 0)
		r = io_write_all(1, key, strlen(key));
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	free(cert);
	if (r < 0) {
		fprintf(stderr, "%s: cannot make the sandbox CA: %s\n", PX_CA_HELPER_NAME,
			strerror(-r));
		return 1;
	}
	return 0;
}
