/* SPDX-License-Identifier: MIT */
/*
 * Hard links of the upper layer, by inode: a file the agent linked N times
 * is copied (when kept) and written (when applied) once and linked N - 1
 * times, so neither the state directory nor the host folder holds more
 * than the quota allowed inside. Open addressing; every entry is a link
 * the tmpfs charged an inode for, so their number is bounded by its
 * nr_inodes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "workspace/ws-internal.h"

void ws_links_done(ws_links *l)
{
	for (size_t i = 0; i < l->cap; i++)
		free(l->v[i].rel);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static size_t slot(const ws_links *l, uint64_t ino)
{
	size_t i = (size_t)(ino * 0x9e3779b97f4a7c15ull) & (l->cap - 1);

	while (l->v[i].rel && l->v[i].ino != ino)
		i = (i + 1) & (l->cap - 1);
	return i;
}

const ws_link *ws_links_find(const ws_links *l, uint64_t ino)
{
	size_t i;

	if (!l->cap)
		return NULL;
	i = slot(l, ino);
	return l->v[i].rel ? &l->v[i] : NULL;
}

int ws_links_add(ws_links *l, uint64_t ino, const char *rel, const char *sha256)
{
	size_t i;

	if (2 * (l->n + 1) > l->cap) {
		ws_links old = *l;
		size_t cap = l->cap ? l->cap * 2 : 64;

		l->v = calloc(cap, sizeof(*l->v));
		if (!l->v) {
			*l = old;
			return -ENOMEM;
		}
		l->cap = cap;
		for (size_t k = 0; k < old.cap; k++)
			if (old.v[k].rel)
				l->v[slot(l, old.v[k].ino)] = old.v[k];
		free(old.v);
	}
	i = slot(l, ino);
	if (l->v[i].rel)
		return 0;
	l->v[i].rel = strdup(rel);
	if (!l->v[i].rel)
		return -ENOMEM;
	l->v[i].ino = ino;
	memcpy(l->v[i].sha256, sha256 ? sha256 : "", sha256 ? 65 : 1);
	l->n++;
	return 0;
}
