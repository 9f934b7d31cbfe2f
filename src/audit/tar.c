/* SPDX-License-Identifier: MIT */
/* Tar archives through a dlopen()ed libarchive (see tar.h for why). */
#include <archive.h>
#include <archive_entry.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/tar.h"
#include "base/cleanup.h"

/* The libarchive functions used, looked up once. */
static struct {
	struct archive *(*write_new)(void);
	int (*write_set_format_pax_restricted)(struct archive *);
	int (*write_add_filter_none)(struct archive *);
	int (*write_open_fd)(struct archive *, int);
	int (*write_header)(struct archive *, struct archive_entry *);
	la_ssize_t (*write_data)(struct archive *, const void *, size_t);
	int (*write_close)(struct archive *);
	int (*write_free)(struct archive *);
	struct archive *(*read_new)(void);
	int (*read_support_format_tar)(struct archive *);
	int (*read_support_filter_none)(struct archive *);
	int (*read_open_memory)(struct archive *, const void *, size_t);
	int (*read_next_header)(struct archive *, struct archive_entry **);
	la_ssize_t (*read_data)(struct archive *, void *, size_t);
	int (*read_free)(struct archive *);
	const char *(*error_string)(struct archive *);
	struct archive_entry *(*entry_new)(void);
	void (*entry_free)(struct archive_entry *);
	void (*entry_set_pathname)(struct archive_entry *, const char *);
	void (*entry_set_size)(struct archive_entry *, la_int64_t);
	void (*entry_set_filetype)(struct archive_entry *, unsigned int);
	void (*entry_set_perm)(struct archive_entry *, __LA_MODE_T);
	void (*entry_set_mtime)(struct archive_entry *, time_t, long);
	const char *(*entry_pathname)(struct archive_entry *);
	la_int64_t (*entry_size)(struct archive_entry *);
	int (*entry_size_is_set)(struct archive_entry *);
	__LA_MODE_T (*entry_filetype)(struct archive_entry *);
} la;
static int la_error;
static pthread_once_t la_once = PTHREAD_ONCE_INIT;

#define SYM(field, name)                                                                           \
	do {                                                                                       \
		*(void **)&la.field = dlsym(h, name);                                              \
		if (!la.field)                                                                     \
			la_error = -ENOSYS;                                                        \
	} while (0)

static void la_load(void)
{
	void *h = dlopen("libarchive.so.13", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		la_error = -ENOSYS;
		return;
	}
	SYM(write_new, "archive_write_new");
	SYM(write_set_format_pax_restricted, "archive_write_set_format_pax_restricted");
	SYM(write_add_filter_none, "archive_write_add_filter_none");
	SYM(write_open_fd, "archive_write_open_fd");
	SYM(write_header, "archive_write_header");
	SYM(write_data, "archive_write_data");
	SYM(write_close, "archive_write_close");
	SYM(write_free, "archive_write_free");
	SYM(read_new, "archive_read_new");
	SYM(read_support_format_tar, "archive_read_support_format_tar");
	SYM(read_support_filter_none, "archive_read_support_filter_none");
	SYM(read_open_memory, "archive_read_open_memory");
	SYM(read_next_header, "archive_read_next_header");
	SYM(read_data, "archive_read_data");
	SYM(read_free, "archive_read_free");
	SYM(error_string, "archive_error_string");
	SYM(entry_new, "archive_entry_new");
	SYM(entry_free, "archive_entry_free");
	SYM(entry_set_pathname, "archive_entry_set_pathname");
	SYM(entry_set_size, "archive_entry_set_size");
	SYM(entry_set_filetype, "archive_entry_set_filetype");
	SYM(entry_set_perm, "archive_entry_set_perm");
	SYM(entry_set_mtime, "archive_entry_set_mtime");
	SYM(entry_pathname, "archive_entry_pathname");
	SYM(entry_size, "archive_entry_size");
	SYM(entry_size_is_set, "archive_entry_size_is_set");
	SYM(entry_filetype, "archive_entry_filetype");
}

static int la_get(char *reason, size_t reason_len)
{
	(void)pthread_once(&la_once, la_load);
	if (la_error)
		(void)snprintf(reason, reason_len,
			       "libarchive (libarchive.so.13) cannot be loaded");
	return la_error;
}

__attribute__((format(printf, 3, 4))) static int say(char *reason, size_t reason_len,
						     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(reason, reason_len, fmt, ap);
	va_end(ap);
	return 0;
}

static int la_fail(struct archive *a, int err, char *reason, size_t reason_len)
{
	const char *s = la.error_string(a);

	say(reason, reason_len, "%s", s ? s : "libarchive error");
	return err;
}

int au_tar_write(int fd, const au_tar_member *m, size_t n, int64_t mtime, char *reason,
		 size_t reason_len)
{
	struct archive *a;
	int r = la_get(reason, reason_len);

	if (r < 0)
		return r;
	a = la.write_new();
	if (!a)
		return -ENOMEM;
	if (la.write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    la.write_add_filter_none(a) != ARCHIVE_OK || la.write_open_fd(a, fd) != ARCHIVE_OK) {
		r = la_fail(a, -EIO, reason, reason_len);
		(void)la.write_free(a);
		return r;
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		struct archive_entry *e = la.entry_new();

		if (!e) {
			r = -ENOMEM;
			break;
		}
		la.entry_set_pathname(e, m[i].name);
		la.entry_set_size(e, (la_int64_t)m[i].len);
		la.entry_set_filetype(e, AE_IFREG);
		la.entry_set_perm(e, 0644);
		la.entry_set_mtime(e, (time_t)mtime, 0);
		if (la.write_header(a, e) != ARCHIVE_OK ||
		    (m[i].len && la.write_data(a, m[i].data, m[i].len) != (la_ssize_t)m[i].len))
			r = la_fail(a, -EIO, reason, reason_len);
		la.entry_free(e);
	}
	if (la.write_close(a) != ARCHIVE_OK && r == 0)
		r = la_fail(a, -EIO, reason, reason_len);
	(void)la.write_free(a);
	return r;
}

int au_tar_read(const void *buf, size_t len, size_t max_member, size_t max_members,
		au_tar_member_cb cb, void *userdata, char *reason, size_t reason_len)
{
	struct archive *a;
	struct archive_entry *e;
	_cleanup_free_ char *data = NULL;
	size_t count = 0;
	int r = la_get(reason, reason_len);

	if (r < 0)
		return r;
	a = la.read_new();
	if (!a)
		return -ENOMEM;
	/* Plain tar: no filter, so no decompression bomb. */
	if (la.read_support_format_tar(a) != ARCHIVE_OK ||
	    la.read_support_filter_none(a) != ARCHIVE_OK ||
	    la.read_open_memory(a, buf, len) != ARCHIVE_OK) {
		r = la_fail(a, -EBADMSG, reason, reason_len);
		(void)la.read_free(a);
		return r;
	}
	for (;;) {
		la_int64_t size;
		size_t got = 0;
		int h = la.read_next_header(a, &e);

		if (h == ARCHIVE_EOF)
			break;
		if (h != ARCHIVE_OK) {
			r = la_fail(a, -EBADMSG, reason, reason_len);
			break;
		}
		if (++count > max_members) {
			say(reason, reason_len, "more than %zu members", max_members);
			r = -E2BIG;
			break;
		}
		if (la.entry_filetype(e) != AE_IFREG) {
			say(reason, reason_len, "member %zu is not a regular file", count);
			r = -EBADMSG;
			break;
		}
		size = la.entry_size_is_set(e) ? la.entry_size(e) : -1;
		if (size < 0 || (uint64_t)size > max_member) {
			say(reason, reason_len, "member %zu is larger than %zu bytes", count,
			    max_member);
			r = -EFBIG;
			break;
		}
		free(data);
		data = malloc((size_t)size + 1);
		if (!data) {
			r = -ENOMEM;
			break;
		}
		while (got < (size_t)size) {
			la_ssize_t k = la.read_data(a, data + got, (size_t)size - got);

			if (k <= 0) {
				r = k < 0 ? la_fail(a, -EBADMSG, reason, reason_len) : -EBADMSG;
				if (k == 0)
					say(reason, reason_len, "member %zu ends early", count);
				break;
			}
			got += (size_t)k;
		}
		if (r < 0)
			break;
		r = cb(la.entry_pathname(e) ? la.entry_pathname(e) : "", data, got, userdata);
		if (r)
			break;
	}
	(void)la.read_free(a);
	return r;
}
