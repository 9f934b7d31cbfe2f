/* SPDX-License-Identifier: MIT */
/*
 * Zeroed memory straight from mmap, for the large tables a supervisor keeps
 * for its sandbox's whole life (the exec listener's buffers, the writes
 * watcher's caches). A page never written stays the shared zero page, so
 * a table sized for the worst case costs only what a run really uses; from
 * the heap, the same table is private memory in every supervisor
 * (docs/performance.md, "Density").
 */
#pragma once

#include <stddef.h>

/* NULL when the mapping fails. */
void *pages_alloc(size_t size);
/* p may be NULL; size as given to pages_alloc. */
void pages_free(void *p, size_t size);
