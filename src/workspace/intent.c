/* SPDX-License-Identifier: MIT */
/*
 * What an apply set out to change, kept until it has finished: written
 * (and fsynced) before its first write into the host folder, removed when
 * it completes. An apply that was killed or failed leaves it behind, and
 * the next apply resumes from it: the paths it lists may have been written
 * by that apply, so its own directories are not conflicts (apply.c).
 *
 * STATE/workspaces/.intents/ID (store.c keeps the place):
 * "sandcap-apply-intent-1", the apply's log, then one entry a path, a flag
 * byte then the path's bytes as they are, each NUL-terminated (paths are
 * the agent's bytes: no encoding could hold them all).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "workspace/ws-internal.h"

#define INTENT_MAGIC "sandcap-apply-intent-1"
#define INTENT_MAX   ((size_t)WS_MAX_CHANGES * 64u) /* bytes of one intent file */

void ws_intent_done(ws_intent *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].path);
	free(t->v);
	free(t->log);
	memset(t, 0, sizeof(*t));
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const ws_intent_entry *)a)->path, ((const ws_intent_entry *)b)->path);
}

char ws_intent_find(const ws_intent *t, const char *path)
{
	ws_intent_entry key = {.path = (char *)path}, *e;

	if (!t || !t->n)
		return 0;
	e = bsearch(&key, t->v, t->n, sizeof(*t->v), cmp_entry);
	return e ? e->flag : 0;
}

static int add(ws_intent *t, char flag, const char *path)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		ws_intent_entry *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n].path = strdup(path);
	if (!t->v[t->n].path)
		return -ENOMEM;
	t->v[t->n++].flag = flag;
	return 0;
}

/* A conflict over a path to write over one in place: a conflict must be
 * checked again by a plain retry. */
static int rank(char flag)
{
	return flag == WS_INTENT_CONFLICT ? 2 : flag == WS_INTENT_LISTED ? 1 : 0;
}

/* Sorted, one entry a path, with the strongest of its flags. */
static void sort_unique(ws_intent *t)
{
	size_t k = 0;

	if (t->n == 0)
		return; /* t->v may be NULL, which qsort() may not be given */
	qsort(t->v, t->n, sizeof(*t->v), cmp_entry);
	for (size_t i = 0; i < t->n; i++) {
		if (k && strcmp(t->v[k - 1].path, t->v[i].path) == 0) {
			if (rank(t->v[i].flag) > rank(t->v[k - 1].flag))
				t->v[k - 1].flag = t->v[i].flag;
			free(t->v[i].path);
			continue;
		}
		t->v[k++] = t->v[i];
	}
	t->n = k;
}

int ws_intent_build(const ws_changes *ch, char *const *conflicts, size_t n_conflicts,
		    const ws_intent *prior, ws_intent *ret)
{
	ws_intent t = {0};
	int r = 0;

	for (size_t i = 0; r >= 0 && i < ch->n; i++) {
		r = add(&t, WS_INTENT_LISTED, ch->v[i].path);
		if (r >= 0 && ch->v[i].from)
			r = add(&t, WS_INTENT_LISTED, ch->v[i].from);
	}
	for (size_t i = 0; r >= 0 && i < n_conflicts; i++)
		r = add(&t, WS_INTENT_CONFLICT, conflicts[i]);
	/* What the unfinished apply listed and is no change any more: it is in
	 * place (written by that apply). */
	for (size_t i = 0; r >= 0 && prior && i < prior->n; i++)
		r = add(&t, WS_INTENT_IN_PLACE, prior->v[i].path);
	if (r < 0) {
		ws_intent_done(&t);
		return r;
	}
	sort_unique(&t);
	*ret = t;
	return 0;
}

int ws_intent_parse(const char *buf, size_t len, ws_intent *ret)
{
	ws_intent t = {0};
	size_t off;
	int r = 0;

	/* Ours, but read back: every field must end inside the file. */
	if (len < sizeof(INTENT_MAGIC) || memcmp(buf, INTENT_MAGIC, sizeof(INTENT_MAGIC)) != 0 ||
	    !memchr(buf + sizeof(INTENT_MAGIC), '\0', len - sizeof(INTENT_MAGIC)))
		return -EBADMSG;
	off = sizeof(INTENT_MAGIC);
	t.log = strdup(buf + off);
	if (!t.log)
		return -ENOMEM;
	off += strlen(buf + off) + 1;
	while (r >= 0 && off < len) {
		const char *e = buf + off, *end = memchr(e, '\0', len - off);

		if (!end || end - e < 2 ||
		    (e[0] != WS_INTENT_LISTED && e[0] != WS_INTENT_CONFLICT &&
		     e[0] != WS_INTENT_IN_PLACE))
			r = -EBADMSG;
		else
			r = add(&t, e[0], e + 1);
		off = (size_t)(end ? end - buf : (ptrdiff_t)len) + 1;
	}
	if (r < 0) {
		ws_intent_done(&t);
		return r;
	}
	sort_unique(&t);
	*ret = t;
	return 0;
}

int ws_intent_load(const char *state_dir, const char *id, ws_intent *ret)
{
	_cleanup_close_ int dir = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	if (!ws_id_valid(id))
		return -EINVAL;
	dir = ws_intents_dir(state_dir, false);
	if (dir < 0)
		return dir;
	r = io_read_file_at(dir, id, INTENT_MAX, &buf, &len);
	return r < 0 ? r : ws_intent_parse(buf, len, ret);
}

int ws_intent_store(const char *state_dir, const char *id, const ws_intent *t)
{
	_cleanup_close_ int dir = -1, fd = -1;
	char tmp[WS_ID_MAX + 8];
	int r;

	if (!ws_id_valid(id))
		return -EINVAL;
	dir = ws_intents_dir(state_dir, true);
	if (dir < 0)
		return dir;
	snprintf(tmp, sizeof(tmp), "%s.new", id);
	fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = io_write_all(fd, INTENT_MAGIC, sizeof(INTENT_MAGIC));
	if (r >= 0)
		r = io_write_all(fd, t->log ? t->log : "", strlen(t->log ? t->log : "") + 1);
	for (size_t i = 0; r >= 0 && i < t->n; i++) {
		r = io_write_all(fd, &t->v[i].flag, 1);
		if (r >= 0)
			r = io_write_all(fd, t->v[i].path, strlen(t->v[i].path) + 1);
	}
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (r >= 0 && renameat(dir, tmp, dir, id) < 0)
		r = -errno;
	if (r >= 0 && fsync(dir) < 0)
		r = -errno;
	if (r < 0)
		(void)unlinkat(dir, tmp, 0);
	return r;
}
