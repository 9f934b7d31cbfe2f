/* SPDX-License-Identifier: MIT */
/*
 * Zeroed memory straight from mmap, for the large tables a supervisor keeps
 * for its sandbox's whole life (the exec listener's buffers, the writes
 * watcher's caches). A page never touched costs nothing, so a table sized
 * for the worst case costs only what a run really uses; from the heap, the
 * same table is private memory in every supervisor (docs/performance.md,
 * "Density"). Touched includes read: on some kernels a read fault backs
 * the page rather than mapping the shared zero page.
 */
#pragma once

#include <stddef.h>

/* NULL when the mapping fails. */
void *pages_alloc(size_t size);
/* p may be NULL; size as given to pages_alloc. */
void pages_free(void *p, size_t size);

/*
 * Gives back what setup touched and a long wait does not need: the heap's
 * free pages (malloc_trim) and the stack below the caller's frame, which
 * the kernel maps again, zeroed, if it is ever used again. For a process
 * about to block for most of its life (a supervisor once its sandbox
 * runs), not one whose other threads run on this stack: there are none.
 */
void pages_trim(void);
