/* SPDX-License-Identifier: MIT */
/*
 * What a workspace changes: its upper layer read against the host folder as
 * it is now, entry by entry, nothing followed. Overlayfs' encoding
 * (overlayfs(5)): an upper entry hides the lower one of the same name; a
 * 0/0 character device is a whiteout (the lower entry was deleted); a
 * directory with trusted.overlay.opaque = "y" hides everything below it in
 * the lower layer. With redirect_dir=off a renamed lower directory is a copy
 * plus a whiteout, and a renamed file always is: renames are found again by
 * content (a deleted file whose bytes reappear under a new name).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "compat/syscalls.h"
#include "workspace/ws-internal.h"

#define RENAME_MAX_PAIRS (1u << 16) /* content comparisons for rename detection */

void ws_changes_done(ws_changes *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].path);
		free(c->v[i].from);
		free(c->v[i].link);
		free(c->v[i].old_link);
	}
	free(c->v);
	free(c->refused_first);
	c->v = NULL;
	c->refused_first = NULL;
	c->n = c->cap = c->refused = 0;
}

char ws_op_letter(ws_op op)
{
	static const char letters[] = "AMmDR";

	return op >= 0 && (size_t)op < ELEMENTSOF(letters) - 1 ? letters[op] : '?';
}

static char *join(const char *rel, const char *name)
{
	char *p;

	if (!*rel)
		return strdup(name);
	return asprintf(&p, "%s/%s", rel, name) < 0 ? NULL : p;
}

static int read_link(int dir, const char *name, char **ret)
{
	char buf[PATH_MAX];
	ssize_t n = readlinkat(dir, name, buf, sizeof(buf) - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	*ret = strdup(buf);
	return *ret ? 0 : -ENOMEM;
}

static ws_change *push(ws_changes *c, ws_op op, char *path)
{
	ws_change *x;

	if (!path)
		return NULL;
	if (c->n >= WS_MAX_CHANGES) {
		free(path);
		errno = E2BIG;
		return NULL;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		ws_change *v = realloc(c->v, cap * sizeof(*v));

		if (!v) {
			free(path);
			errno = ENOMEM;
			return NULL;
		}
		c->v = v;
		c->cap = cap;
	}
	x = &c->v[c->n++];
	memset(x, 0, sizeof(*x));
	x->op = op;
	x->path = path;
	return x;
}

static int fail_push(void)
{
	return errno == E2BIG ? -E2BIG : -ENOMEM;
}

/* Whether two regular files hold the same bytes. */
static int same_content(int a, int b)
{
	char x[65536], y[65536];

	for (;;) {
		ssize_t n = read(a, x, sizeof(x)), m;
		size_t got = 0;

		if (n < 0)
			return -errno;
		while (got < (size_t)n) {
			m = read(b, y + got, (size_t)n - got);
			if (m < 0)
				return -errno;
			if (m == 0)
				return 0;
			got += (size_t)m;
		}
		if (memcmp(x, y, (size_t)n) != 0)
			return 0;
		if (n == 0)
			return read(b, y, 1) == 0;
	}
}

static int open_file_at(int dir, const char *name)
{
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int files_differ(int up, int low, const char *name, const struct stat *us,
			const struct stat *ls)
{
	_cleanup_close_ int a = -1, b = -1;
	int r;

	if (us->st_size != ls->st_size)
		return 1;
	a = open_file_at(up, name);
	b = open_file_at(low, name);
	if (a < 0 || b < 0)
		return a < 0 ? a : b;
	r = same_content(a, b);
	return r < 0 ? r : !r;
}

/* Every entry of the lower directory ldir/name (recursively) as deleted,
 * the directory first. */
static int add_deleted(ws_changes *out, int ldir, const char *name, char *path,
		       const struct stat *st, unsigned depth)
{
	ws_change *x = push(out, WS_DELETED, path);
	struct dirent *e;
	DIR *d;
	int r = 0;

	if (!x)
		return fail_push();
	x->old_type = ws_type_of(st->st_mode) ? ws_type_of(st->st_mode) : '?';
	x->old_mode = st->st_mode & 07777;
	x->old_size = (uint64_t)st->st_size;
	if (S_ISLNK(st->st_mode) && read_link(ldir, name, &x->old_link) < 0)
		x->old_link = NULL;
	if (!S_ISDIR(st->st_mode))
		return 0;
	d = ws_opendir_at(ldir, name);
	if (!d)
		return errno == EACCES ? 0 : -errno;
	while (r >= 0 && (e = readdir(d))) {
		struct stat cs;
		const char *parent = out->v[out->n - 1].path;
		char *cp;

		if (ws_is_dot(e->d_name))
			continue;
		if (fstatat(dirfd(d), e->d_name, &cs, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		cp = join(parent, e->d_name);
		/* Deeper than a path can name: removed with its directory. */
		if (cp && strlen(cp) > WS_PATH_MAX) {
			free(cp);
			continue;
		}
		r = add_deleted(out, dirfd(d), e->d_name, cp, &cs, depth + 1);
	}
	closedir(d);
	return r;
}

static int walk(ws_changes *out, int up, int low, const char *rel, bool opaque, unsigned depth);

/* An entry too deep for apply to name: counted, not listed. */
static int refuse(ws_changes *out, const char *rel, const char *name)
{
	if (out->refused++ == 0) {
		out->refused_first = join(rel, name);
		if (!out->refused_first)
			return -ENOMEM;
	}
	return 0;
}

/* One entry of the upper layer. low: the lower directory at the same place,
 * or -1 when there is none. */
static int visit(ws_changes *out, int up, int low, const char *rel, const char *name, bool opaque)
{
	struct stat us, ls;
	bool have_low;
	char ut, lt;
	ws_change *x;
	int r;

	if (fstatat(up, name, &us, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (strlen(rel) + 1 + strlen(name) > WS_PATH_MAX)
		return refuse(out, rel, name);
	have_low = low >= 0 && fstatat(low, name, &ls, AT_SYMLINK_NOFOLLOW) == 0;
	if (ws_is_whiteout(&us))
		return have_low ? add_deleted(out, low, name, join(rel, name), &ls, 0) : 0;
	ut = ws_type_of(us.st_mode);
	if (!ut)
		return 0; /* nothing else can be made inside */
	lt = have_low ? (ws_type_of(ls.st_mode) ? ws_type_of(ls.st_mode) : '?') : 0;

	if (ut == 'd') {
		_cleanup_close_ int su = -1, sl = -1;
		bool op;

		su = openat(up, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (su < 0)
			return -errno;
		op = opaque || ws_is_opaque(su);
		if (lt == 'd') {
			sl = openat(low, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if ((us.st_mode & 07777) != (ls.st_mode & 07777)) {
				x = push(out, WS_MODE, join(rel, name));
				if (!x)
					return fail_push();
				x->type = x->old_type = 'd';
				x->mode = us.st_mode & 07777;
				x->old_mode = ls.st_mode & 07777;
			}
		} else {
			x = push(out, lt ? WS_MODIFIED : WS_ADDED, join(rel, name));
			if (!x)
				return fail_push();
			x->type = 'd';
			x->old_type = lt;
			x->origin = !lt && ws_has_origin(su);
			x->mode = us.st_mode & 07777;
			x->old_mode = have_low ? ls.st_mode & 07777 : 0;
		}
		{
			_cleanup_free_ char *sub = join(rel, name);

			if (!sub)
				return -ENOMEM;
			return walk(out, su, sl, sub, op, 0);
		}
	}

	if (ut == 'f' && lt == 'f') {
		r = files_differ(up, low, name, &us, &ls);
		if (r < 0)
			return r;
		if (!r && (us.st_mode & 07777) == (ls.st_mode & 07777))
			return 0; /* copied up, not changed (e.g. opened for writing) */
		x = push(out, r ? WS_MODIFIED : WS_MODE, join(rel, name));
	} else if (ut == 'l' && lt == 'l') {
		_cleanup_free_ char *a = NULL, *b = NULL;

		if (read_link(up, name, &a) < 0 || read_link(low, name, &b) < 0)
			return -errno;
		if (strcmp(a, b) == 0)
			return 0;
		x = push(out, WS_MODIFIED, join(rel, name));
	} else if (ut == 'p' && lt == 'p') {
		if ((us.st_mode & 07777) == (ls.st_mode & 07777))
			return 0;
		x = push(out, WS_MODE, join(rel, name));
	} else {
		x = push(out, lt ? WS_MODIFIED : WS_ADDED, join(rel, name));
	}
	if (!x)
		return fail_push();
	x->type = ut;
	x->old_type = lt;
	x->mode = us.st_mode & 07777;
	x->size = ut == 'f' ? (uint64_t)us.st_size : 0;
	if (have_low) {
		x->old_mode = ls.st_mode & 07777;
		x->old_size = lt == 'f' ? (uint64_t)ls.st_size : 0;
	}
	if (ut == 'f' && !lt) {
		_cleanup_close_ int f = open_file_at(up, name);

		x->origin = f >= 0 && ws_has_origin(f);
	}
	if (ut == 'l' && read_link(up, name, &x->link) < 0)
		return -errno;
	if (lt == 'l' && read_link(low, name, &x->old_link) < 0)
		return -errno;
	return 0;
}

static int walk(ws_changes *out, int up, int low, const char *rel, bool opaque, unsigned depth)
{
	struct dirent *e;
	DIR *d;
	int r = 0;

	(void)depth; /* any depth: one descriptor a level and tree */
	d = ws_opendir_at(up, ".");
	if (!d)
		return -errno;
	while (r >= 0 && (errno = 0, e = readdir(d)))
		if (!ws_is_dot(e->d_name))
			r = visit(out, dirfd(d), low, rel, e->d_name, opaque);
	if (r >= 0 && errno)
		r = -errno;
	closedir(d);
	if (r < 0 || !opaque || low < 0)
		return r;

	/* Opaque: what the lower directory has and the upper does not is gone. */
	d = ws_opendir_at(low, ".");
	if (!d)
		return -errno;
	while (r >= 0 && (e = readdir(d))) {
		struct stat st;

		if (ws_is_dot(e->d_name))
			continue;
		if (fstatat(up, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (strlen(rel) + 1 + strlen(e->d_name) > WS_PATH_MAX)
			continue; /* cannot be named: goes with its directory */
		r = add_deleted(out, dirfd(d), e->d_name, join(rel, e->d_name), &st, 0);
	}
	closedir(d);
	return r;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(((const ws_change *)a)->path, ((const ws_change *)b)->path);
}

static int open_beneath(int root, const char *rel)
{
	struct sc_open_how how = {
	    .flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd = sys_openat2(root, rel, &how);

	return fd < 0 ? -errno : fd;
}

/* A deleted file whose exact bytes were added under another name: renamed. */
static int find_renames(ws_changes *c, int upper, int lower)
{
	size_t pairs = 0;

	for (size_t i = 0; i < c->n; i++) {
		ws_change *a = &c->v[i];

		if (a->op != WS_ADDED || a->type != 'f' || a->size == 0)
			continue;
		for (size_t j = 0; j < c->n && pairs < RENAME_MAX_PAIRS; j++) {
			ws_change *d = &c->v[j];
			_cleanup_close_ int x = -1, y = -1;
			int same;

			if (d->op != WS_DELETED || d->old_type != 'f' || d->old_size != a->size)
				continue;
			pairs++;
			x = open_beneath(upper, a->path);
			y = open_beneath(lower, d->path);
			if (x < 0 || y < 0)
				continue;
			same = same_content(x, y);
			if (same < 0)
				return same;
			if (!same)
				continue;
			a->op = WS_RENAMED;
			a->origin = false;
			a->from = d->path;
			a->old_mode = d->old_mode;
			a->old_type = 'f';
			a->old_size = d->old_size;
			d->path = NULL; /* dropped below */
			break;
		}
	}
	return 0;
}

int ws_changes_compute(int upper, int lower, ws_changes *ret)
{
	ws_changes c = {0};
	size_t kept = 0;
	int r;

	ws_raise_nofile();
	r = walk(&c, upper, lower, "", false, 0);
	if (r >= 0)
		r = find_renames(&c, upper, lower);
	if (r < 0) {
		ws_changes_done(&c);
		return r;
	}
	/* The deleted halves of renames have no path left: drop them. */
	for (size_t i = 0; i < c.n; i++) {
		if (c.v[i].path) {
			c.v[kept++] = c.v[i];
			continue;
		}
		free(c.v[i].link);
		free(c.v[i].old_link);
	}
	c.n = kept;
	if (c.n > 1) /* c.v may be NULL, which qsort() may not be given */
		qsort(c.v, c.n, sizeof(*c.v), cmp_path);
	*ret = c;
	return 0;
}
