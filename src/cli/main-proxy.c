/* SPDX-License-Identifier: MIT */
/*
 * sandcap-proxy: the code a run needs only for its network, a program of
 * its own (docs/architecture.md, "Programs"), the mode named by its first
 * argument:
 *
 *   sandcap-proxy worker                  the egress proxy worker, as
 *                                         px_spawn() starts it (proxy/proxy.h)
 *   sandcap-proxy ca LIFETIME_S [NAME]... the sandbox CA: its certificate
 *                                         PEM, then its key PEM, on stdout
 *   sandcap-proxy relay PID PORT:HOST...  the serve relay of net.serve, as
 *                                         the supervisor starts it (proxy/relay.h)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/io.h"
#include "proxy/programs.h"
#include "proxy/proxy.h"
#include "proxy/relay.h"

static int ca_main(int argc, char **argv)
{
	char *cert = NULL, *key = NULL;
	unsigned long long life = 0;
	char *end = NULL;
	int r;

	if (argc >= 1 && argv[0][0] >= '0' && argv[0][0] <= '9') {
		errno = 0;
		life = strtoull(argv[0], &end, 10);
		if (errno || *end)
			life = 0;
	}
	if (life == 0) {
		fprintf(stderr, "usage: %s %s LIFETIME_S [NAME]...\n", PX_PROGRAM, PX_CA_ARG);
		return 2;
	}
	px_in_process();
	r = px_ca_make(life, (const char *const *)argv + 1, (size_t)argc - 1, &cert, &key);
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
		fprintf(stderr, "%s: cannot make the sandbox CA: %s\n", PX_PROGRAM, strerror(-r));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	/* _exit: the worker's records went out on the event socket before it
	 * returns; the libraries' own clean-up (OpenSSL's above all) would only
	 * take CPU from the sandboxes around it. */
	if (argc >= 2 && strcmp(argv[1], PX_WORKER_ARG) == 0)
		_exit(px_worker_main());
	if (argc >= 2 && strcmp(argv[1], PX_RELAY_ARG) == 0)
		_exit(px_relay_main(argc - 1, argv + 1));
	if (argc >= 2 && strcmp(argv[1], PX_CA_ARG) == 0)
		return ca_main(argc - 2, argv + 2);
	fprintf(stderr,
		"usage: %s %s | %s LIFETIME_S [NAME]...\n"
		"The egress proxy worker and the sandbox CA of sandcap run; not for use by hand.\n",
		PX_PROGRAM, PX_WORKER_ARG, PX_CA_ARG);
	return 2;
}
