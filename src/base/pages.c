/* SPDX-License-Identifier: MIT */
#include "base/pages.h"

#include <malloc.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* Left below the caller's frame: the calls made from here. */
#define STACK_KEEP (8u << 10)
/* How far below that it is given back: deeper than setup goes. */
#define STACK_SPAN (1u << 20)

void *pages_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void pages_free(void *p, size_t size)
{
	if (p)
		(void)munmap(p, size);
}

void pages_trim(void)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t top = ((uintptr_t)__builtin_frame_address(0) - STACK_KEEP) & ~(page - 1);

	(void)malloc_trim(0);
	/* Below the stack's pages is its unmapped growth room: the kernel keeps
	 * every other mapping at least 128 MiB away (or, with an unlimited
	 * stack, maps them bottom-up from far below), so the span holds stack or
	 * nothing; what is not mapped is skipped (ENOMEM, ignored). */
	(void)madvise((void *)(top - STACK_SPAN), STACK_SPAN, MADV_DONTNEED);
}
