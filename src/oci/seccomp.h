/* SPDX-License-Identifier: MIT */
/*
 * A spec's linux.seccomp (runtime-spec config-linux.md, "Seccomp")
 * compiled with libseccomp into a second filter, which the sandbox loads on
 * top of sandcap's own (docs/oci.md, "A seccomp profile of the
 * container's own"). Stacked filters are all run and the strictest answer
 * wins (seccomp(2), "Filter return values"), so the container gets the
 * intersection of both, never more than sandcap's allowlist. Pure but for
 * a memfd the program is exported through; unit-tested and fuzzed
 * (tests/fuzz/fuzz-oci-config.c). What cannot be honoured is refused with
 * the field named ("$.linux.seccomp.syscalls[3].action: ...").
 */
#pragma once

#include <jansson.h>
#include <stddef.h>

#define OCI_SECCOMP_MAX_RULES 4096u /* syscalls[] entries */
#define OCI_SECCOMP_MAX_NAMES 1024u /* names of one entry */
#define OCI_SECCOMP_MAX_INSNS 4096u /* BPF_MAXINSNS: one filter's bound in the kernel */

typedef struct oci_filter {
	void *insns;	/* struct sock_filter[n_insns], malloc'd */
	size_t n_insns; /* 0: no profile */
	unsigned flags; /* SECCOMP_FILTER_FLAG_* for seccomp(2) */
} oci_filter;

/*
 * Compiles seccomp (the value of $.linux.seccomp; NULL or empty: no filter,
 * *ret zeroed) for this machine's architecture. Syscall names libseccomp
 * does not know are skipped, as runc does (profiles list newer calls).
 * -EINVAL with "$.linux.seccomp...: why" in err; -ENOMEM, -E2BIG.
 */
int oci_seccomp_compile(json_t *seccomp, oci_filter *ret, char *err, size_t err_len);
void oci_filter_done(oci_filter *f);
