/* SPDX-License-Identifier: MIT */
/*
 * Our other programs (sandcap-init, sandcap-main): found next to the running
 * binary (the build tree, a relocated install), else in the configured
 * libexecdir. libc only: the small front uses it too (src/cli/front.c).
 */
#pragma once

#include <stddef.h>

/* Opens NAME next to /proc/self/exe, else in dir, with flags (O_CLOEXEC and
 * O_NOFOLLOW added). Only a regular file that root or we own and that no
 * one else may write is taken (whoever can change such a file can already
 * act as us): its fd, or -EPERM when only other files were found, else
 * -ENOENT. */
int sibling_open(const char *name, const char *dir, int flags);

/* Why sibling_open(name, dir) failed with err, the one wording every
 * caller gives after the program's name: "not next to this program or in
 * DIR", or that what was found there may not be taken. Written to buf;
 * returns buf. */
const char *sibling_why(const char *dir, int err, char *buf, size_t size);
