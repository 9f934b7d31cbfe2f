/* SPDX-License-Identifier: MIT */
/*
 * The agent's filter, compiled by libseccomp at build time: sf-gen runs
 * sf_build() and seccomp_export_bpf() for every variant and writes the
 * programs as C (programs.c in the build directory). Internal to
 * src/seccomp/.
 */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <stdint.h>

#include "seccomp/profile.h"

typedef struct sf_program {
	const struct sock_filter *insns;
	unsigned short len;
	/* Some path returns SECCOMP_RET_USER_NOTIF: load it with a listener,
	 * as libseccomp does for a filter that uses SCMP_ACT_NOTIFY. */
	bool notify;
} sf_program;

/* Indexed by variant (sf_variant bits). */
extern const sf_program sf_programs[SF_N_VARIANTS];
/* The AUDIT_ARCH_* value the programs check first; libseccomp's native
 * architecture where the generator ran (the target's, built for it). */
extern const uint32_t sf_programs_arch;
