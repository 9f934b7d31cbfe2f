/* SPDX-License-Identifier: MIT */
/*
 * Our other programs (sandcap-init, sandcap-main): found next to the running
 * binary (the build tree, a relocated install), else in the configured
 * libexecdir. libc only: the small front uses it too (src/cli/front.c).
 */
#pragma once

/* Opens NAME next to /proc/self/exe, else in dir, with flags (O_CLOEXEC and
 * O_NOFOLLOW added). Only a regular file that root or we own and that no
 * one else may write is taken (whoever can change such a file can already
 * act as us): its fd, or -EPERM when only other files were found, else
 * -ENOENT. */
int sibling_open(const char *name, const char *dir, int flags);
