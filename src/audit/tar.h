/* SPDX-License-Identifier: MIT */
/*
 * Plain tar archives of in-memory members, through libarchive, loaded with
 * dlopen() only when an archive is made or read: linked in, it (and the
 * shared libcrypto, libxml2 and compressors it depends on) would cost every
 * `sandcap run` its start-up time (docs/decisions.md).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef struct au_tar_member {
	const char *name;
	const void *data;
	size_t len;
} au_tar_member;

/* Writes the members, in order, as a POSIX (pax restricted) tar archive of
 * regular files, mode 0644, mtime mtime, to fd. -ENOSYS when libarchive
 * cannot be loaded, -EIO (with libarchive's message in reason). */
int au_tar_write(int fd, const au_tar_member *m, size_t n, int64_t mtime, char *reason,
		 size_t reason_len);

/* Called for each regular-file member read; data is valid during the call.
 * A non-zero return stops the reading and is returned. */
typedef int (*au_tar_member_cb)(const char *name, const void *data, size_t len, void *userdata);

/*
 * Reads an archive from memory (untrusted): plain tar only (no
 * compression), every member a regular file of at most max_member bytes
 * (-EFBIG), at most max_members of them (-E2BIG), anything else -EBADMSG
 * with the reason. -ENOSYS when libarchive cannot be loaded.
 */
int au_tar_read(const void *buf, size_t len, size_t max_member, size_t max_members,
		au_tar_member_cb cb, void *userdata, char *reason, size_t reason_len);
