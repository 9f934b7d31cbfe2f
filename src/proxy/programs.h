/* SPDX-License-Identifier: MIT */
/*
 * Which program does the proxy's OpenSSL work (docs/architecture.md,
 * "Programs"). The worker is always sandcap-proxy (found as base/sibling.h
 * finds our programs), run as "sandcap-proxy worker". The sandbox CA is
 * made in process by the programs that link the CA code and call
 * px_in_process() first (sandcap-main, sandcap-runc); sandcap-run, the
 * supervisor of `sandcap run`, links none of it, so that no OpenSSL table
 * is private memory in every supervisor, and has "sandcap-proxy ca" make it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define PX_PROGRAM    "sandcap-proxy"
#define PX_WORKER_ARG "worker"
#define PX_CA_ARG     "ca"
#define PX_CA_PEM_MAX 65536u

/* Where PX_PROGRAM is looked for when it is not next to the running
 * binary: SANDCAP_LIBEXECDIR, unless a test launcher set another. */
extern const char *px_program_dir;

/* This program holds the CA code (in-process.c). */
void px_in_process(void);

/* The program to exec as the worker: an O_PATH fd, or -errno. */
int px_worker_exe_open(void);

/*
 * The sandbox CA (proxy/ca.h: px_ca_generate, then both PEMs): the
 * certificate and the private key as PEM, allocated; the caller wipes the
 * key before freeing it. In process after px_in_process(), else from
 * "sandcap-proxy ca".
 */
int px_ca_make(uint64_t lifetime_s, const char *const *names, size_t n_names, char **ret_cert,
	       char **ret_key);

/* For a message about r from the two above: where sandcap-proxy was
 * looked for, when that is what failed; "" otherwise. */
const char *px_program_hint(int r);

/* Set by px_in_process(). */
extern int (*px_ca_make_here)(uint64_t lifetime_s, const char *const *names, size_t n_names,
			      char **ret_cert, char **ret_key);
