/* SPDX-License-Identifier: MIT */
/*
 * Which program does the proxy's OpenSSL work (docs/architecture.md, "Two
 * programs"). sandcap-main and sandcap-runc link it: they call
 * px_in_process() first, then exec themselves as the worker and make the
 * sandbox CA in process. sandcap-run, the supervisor of `sandcap run`,
 * links none of it, so that no OpenSSL table is private memory in every
 * supervisor; it has sandcap-main (base/sibling.h) be the worker and make
 * the CA, run as "sandcap-ca".
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define PX_FULL_PROGRAM	  "sandcap-main"
#define PX_CA_HELPER_NAME "sandcap-ca"
#define PX_CA_PEM_MAX	  65536u

/* This program holds the worker and the CA code (in-process.c). */
void px_in_process(void);

/* The program to exec as the worker: an O_PATH fd, or -errno. */
int px_worker_exe_open(void);

/*
 * The sandbox CA (proxy/ca.h: px_ca_generate, then both PEMs): the
 * certificate and the private key as PEM, allocated; the caller wipes the
 * key before freeing it. In process after px_in_process(), else from
 * sandcap-main run as sandcap-ca.
 */
int px_ca_make(uint64_t lifetime_s, const char *const *names, size_t n_names, char **ret_cert,
	       char **ret_key);

/* For a message about r from the two above: where sandcap-main was looked
 * for, when that is what failed; "" otherwise. */
const char *px_program_hint(int r);

/* sandcap-ca LIFETIME_S [NAME]...: writes the CA's certificate PEM, then
 * its key PEM, to standard output (in-process.c). */
int px_ca_helper_main(int argc, char **argv);

/* Set by px_in_process(). */
extern int (*px_ca_make_here)(uint64_t lifetime_s, const char *const *names, size_t n_names,
			      char **ret_cert, char **ret_key);
