/* SPDX-License-Identifier: MIT */
/* Scope-bound cleanup; ownership moves with TAKE_PTR/TAKE_FD. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void closep(const int *fd)
{
	if (*fd >= 0)
		(void)close(*fd); /* never retried: on Linux the fd is gone either way */
}

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void fclosep(FILE **f)
{
	if (*f)
		(void)fclose(*f);
}

#define _cleanup_close_	 _cleanup_(closep)
#define _cleanup_free_	 _cleanup_(freep)
#define _cleanup_fclose_ _cleanup_(fclosep)
/* json_decrefp() comes with jansson (>= 2.9), which the user includes. */
#define _cleanup_json_ _cleanup_(json_decrefp)

#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int *_p = &(fd);                                                                   \
		int _v = *_p;                                                                      \
		*_p = -1;                                                                          \
		_v;                                                                                \
	})

#define TAKE_PTR(ptr)                                                                              \
	({                                                                                         \
		__typeof__(ptr) *_pp = &(ptr);                                                     \
		__typeof__(ptr) _v = *_pp;                                                         \
		*_pp = NULL;                                                                       \
		_v;                                                                                \
	})

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/* For a large buffer on the stack that is always written before it is read
 * (the target of a read()): the build zeroes locals otherwise
 * (-ftrivial-auto-var-init=zero), which costs a memset of the whole buffer
 * on every call. Used sparingly, each time with the reason. */
#ifdef __has_attribute
#if __has_attribute(uninitialized)
#define _noinit_ __attribute__((uninitialized))
#endif
#endif
#ifndef _noinit_
#define _noinit_
#endif

/* Closes fd if valid and returns -1, for "fd = safe_close(fd)". */
static inline int safe_close(int fd)
{
	if (fd >= 0)
		(void)close(fd);
	return -1;
}
