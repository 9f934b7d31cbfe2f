/* SPDX-License-Identifier: MIT */
/*
 * Writing a workspace into its host folder. The upper layer is the agent's
 * work: every name in it is resolved below the folder's root fd with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV), so no
 * symlink (the agent's or the host's) and no mount point is crossed; the
 * last component is always acted on with *at calls that do not follow it
 * (a symlink is created as a symlink, a file is written beside its place
 * and renamed over it, so a reader sees the old file or the new one).
 * Everything written belongs to the folder's owner, and set-user-ID and
 * set-group-ID bits are dropped: the agent's files must not gain the
 * owner's privilege on the host.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/diag.h"
#include "base/io.h"
#include "base/sha256.h"
#include "compat/syscalls.h"
#include "workspace/ws-internal.h"

void ws_apply_result_done(ws_apply_result *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].path);
	for (size_t i = 0; i < r->n_conflicts; i++)
		free(r->conflicts[i]);
	for (size_t i = 0; i < r->n_changed; i++)
		free(r->changed[i]);
	free(r->v);
	free(r->conflicts);
	free(r->changed);
	memset(r, 0, sizeof(*r));
}

static int open_upper(int upper, const char *rel, int flags)
{
	struct sc_open_how how = {.flags = (uint64_t)flags | O_NOFOLLOW | O_CLOEXEC,
				  .resolve = WS_RESOLVE};
	int fd = sys_openat2(upper, rel, &how);

	return fd < 0 ? -errno : fd;
}

static bool after_epoch(const struct stat *st, const struct timespec *epoch)
{
	return st->st_ctim.tv_sec > epoch->tv_sec ||
	       (st->st_ctim.tv_sec == epoch->tv_sec && st->st_ctim.tv_nsec >= epoch->tv_nsec);
}

/*
 * Whether the host's rel changed since the epoch: its ctime is at or after
 * it (every change of content, mode, owner, name or links stamps ctime, and
 * userspace cannot set it back). A path that cannot be reached without a
 * symlink or mount point is a conflict too.
 */
static int host_changed(int root, const char *rel, const struct timespec *epoch)
{
	_cleanup_close_ int parent = -1;
	const char *base;
	struct stat st;

	parent = ws_open_parent(root, rel, &base);
	if (parent == -ENOENT)
		return 0;
	if (parent < 0)
		return 1;
	if (fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	return after_epoch(&st, epoch);
}

/*
 * An entry the sandbox found in the folder and changed, gone from the host
 * now: deleted (or moved away) there since the start. What is left of its
 * path, the nearest directory that still exists, was changed then: its
 * ctime is at or after the epoch. Another change in that directory since
 * the start is reported all the same (--force overrides).
 */
static int host_deleted(int root, const char *rel, const struct timespec *epoch)
{
	char dir[PATH_MAX];
	struct stat st;

	if (snprintf(dir, sizeof(dir), "%s", rel) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	for (char *slash; (slash = strrchr(dir, '/'));) {
		struct sc_open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
					  .resolve = WS_RESOLVE};
		_cleanup_close_ int fd = -1;

		*slash = '\0';
		fd = sys_openat2(root, dir, &how);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0 || fstat(fd, &st) < 0)
			return 1; /* behind a symlink or a mount point now */
		return after_epoch(&st, epoch);
	}
	if (fstat(root, &st) < 0)
		return -errno;
	return after_epoch(&st, epoch);
}

static int add_path(char ***list, size_t *n, const char *path)
{
	char **v = realloc(*list, (*n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	*list = v;
	v[*n] = strdup(path);
	if (!v[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* Whether the file at fd changed between the two stats (written, truncated,
 * its mode changed): ctime moves with each of them. */
static bool moved(const struct stat *a, const struct stat *b)
{
	return a->st_size != b->st_size || a->st_ctim.tv_sec != b->st_ctim.tv_sec ||
	       a->st_ctim.tv_nsec != b->st_ctim.tv_nsec;
}

static int add_applied(ws_apply_result *r, const char *path, const char *op, const char *sha)
{
	ws_applied *v = realloc(r->v, (r->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	r->v = v;
	v[r->n].path = strdup(path);
	if (!v[r->n].path)
		return -ENOMEM;
	v[r->n].op = op;
	snprintf(v[r->n].sha256, sizeof(v[r->n].sha256), "%s", sha ? sha : "");
	r->n++;
	return 0;
}

/* Copies upper's rel into the temporary tmp in parent, hashing it. */
static int write_beside(int upper, const char *rel, int parent, const char *tmp,
			const struct stat *owner, char sha[65], bool *ret_changed)
{
	_cleanup_close_ int in = open_upper(upper, rel, O_RDONLY | O_NONBLOCK), out = -1;
	sha256_ctx md;
	uint8_t dig[SHA256_BYTES];
	struct stat st, after;
	uint64_t written = 0;
	int r = 0;

	*ret_changed = false;
	if (in < 0)
		return in;
	if (fstat(in, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	out = openat(parent, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	sha256_init(&md);
	r = ws_copy_data(in, out, &md, &written);
	sha256_final(&md, dig);
	/* A live upper layer: the agent may be writing it now. */
	if (r >= 0 && fstat(in, &after) == 0 && moved(&st, &after))
		*ret_changed = true;
	if (r >= 0 &&
	    (fchown(out, owner->st_uid, owner->st_gid) < 0 || fchmod(out, st.st_mode & 01777) < 0))
		r = -errno;
	if (r < 0) {
		(void)unlinkat(parent, tmp, 0);
		return r;
	}
	for (unsigned i = 0; i < SHA256_BYTES; i++)
		snprintf(sha + 2 * i, 3, "%02x", dig[i]);
	return 0;
}

/* Puts tmp in parent in place of base: what is there (a directory too) goes. */
static int put_in_place(int parent, const char *tmp, const char *base)
{
	struct stat st;
	int r;

	if (fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
		r = ws_remove_at(parent, base, 0);
		if (r < 0) {
			(void)unlinkat(parent, tmp, 0);
			return r;
		}
	}
	if (renameat(parent, tmp, parent, base) < 0) {
		r = -errno;
		(void)unlinkat(parent, tmp, 0);
		return r;
	}
	return 0;
}

static int apply_one(int upper, int root, const struct stat *owner, const ws_change *c,
		     unsigned seq, ws_links *links, ws_apply_result *res)
{
	_cleanup_close_ int parent = -1;
	const char *base;
	char tmp[64], sha[65] = "";
	struct stat st, us;
	int r;

	parent = ws_open_parent(root, c->path, &base);
	if (parent == -ENOENT && c->op == WS_DELETED)
		return 0; /* below a directory deleted just before */
	if (parent < 0)
		return parent;
	snprintf(tmp, sizeof(tmp), ".sandcap-apply.%d.%u", (int)getpid(), seq);

	if (c->op == WS_DELETED) {
		r = ws_remove_at(parent, base, 0);
		return r < 0 ? r : add_applied(res, c->path, "delete", NULL);
	}
	if (c->type == 'd') {
		if (fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
		    unlinkat(parent, base, 0) < 0)
			return -errno;
		if (mkdirat(parent, base, 0700) < 0 && errno != EEXIST)
			return -errno;
		return add_applied(res, c->path, c->op == WS_MODE ? "mode" : "mkdir", NULL);
	}
	if (c->type == 'f') {
		const ws_link *l = NULL;
		struct stat fs;
		_cleanup_close_ int uf = open_upper(upper, c->path, O_PATH);

		/* Another name of a file applied already: linked to it. */
		if (uf >= 0 && fstat(uf, &fs) == 0 && fs.st_nlink > 1)
			l = ws_links_find(links, fs.st_ino);
		if (l) {
			_cleanup_close_ int lp = -1;
			const char *lbase;

			lp = ws_open_parent(root, l->rel, &lbase);
			if (lp < 0)
				return lp;
			if (linkat(lp, lbase, parent, tmp, 0) < 0)
				return -errno;
			snprintf(sha, sizeof(sha), "%s", l->sha256);
			r = put_in_place(parent, tmp, base);
			return r < 0 ? r : add_applied(res, c->path, "link", sha);
		}
		bool changed = false;

		r = write_beside(upper, c->path, parent, tmp, owner, sha, &changed);
		if (r == -ENOENT) /* removed by the agent since the listing */
			return add_path(&res->changed, &res->n_changed, c->path);
		if (r >= 0 && changed)
			r = add_path(&res->changed, &res->n_changed, c->path);
		if (r >= 0)
			r = put_in_place(parent, tmp, base);
		if (r >= 0 && uf >= 0 && fs.st_nlink > 1)
			r = ws_links_add(links, fs.st_ino, c->path, sha);
		return r < 0 ? r : add_applied(res, c->path, "write", sha);
	}
	if (c->type == 'l') {
		_cleanup_close_ int up = -1;
		const char *ubase;

		up = ws_open_parent(upper, c->path, &ubase);
		if (up < 0)
			return up;
		if (fstatat(up, ubase, &us, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		if (!S_ISLNK(us.st_mode) || !c->link)
			return -EINVAL;
		if (symlinkat(c->link, parent, tmp) < 0)
			return -errno;
		if (fchownat(parent, tmp, owner->st_uid, owner->st_gid, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			(void)unlinkat(parent, tmp, 0);
			return r;
		}
		r = put_in_place(parent, tmp, base);
		return r < 0 ? r : add_applied(res, c->path, "symlink", NULL);
	}
	if (c->type == 'p') {
		if (mknodat(parent, tmp, S_IFIFO | (c->mode & 0777), 0) < 0)
			return -errno;
		r = put_in_place(parent, tmp, base);
		return r < 0 ? r : add_applied(res, c->path, "fifo", NULL);
	}
	return -EINVAL;
}

/* Directory owners and modes last, deepest first: a directory made
 * read-only must not stop what goes below it. Each is opened without
 * following a link (fchmodat(2) would follow one put there meanwhile). */
static int apply_dir_modes(int upper, int root, const struct stat *owner, const ws_changes *ch)
{
	for (size_t i = ch->n; i-- > 0;) {
		const ws_change *c = &ch->v[i];
		_cleanup_close_ int parent = -1, up = -1, dir = -1;
		const char *base, *ubase;
		struct stat us;

		if (c->type != 'd' || c->op == WS_DELETED)
			continue;
		up = ws_open_parent(upper, c->path, &ubase);
		parent = ws_open_parent(root, c->path, &base);
		if (up < 0 || parent < 0)
			return up < 0 ? up : parent;
		if (fstatat(up, ubase, &us, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		dir = openat(parent, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dir < 0 || fchown(dir, owner->st_uid, owner->st_gid) < 0 ||
		    fchmod(dir, us.st_mode & 01777) < 0)
			return -errno;
	}
	return 0;
}

int ws_open_grant_root(const ws_meta *m, int *ret, sc_diag *d)
{
	struct sc_open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				  .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = sys_openat2(AT_FDCWD, m->grant_path, &how);
	struct stat st;

	if (fd < 0)
		return diag_fail(d, -errno, "workspace", "%s: %s", m->grant_path, strerror(errno));
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_dev != m->grant_dev ||
	    (uint64_t)st.st_ino != m->grant_ino) {
		(void)close(fd);
		return diag_fail(d, -ESTALE, "workspace",
				 "%s is no longer the folder workspace %s was made from (it was "
				 "replaced or moved)",
				 m->grant_path, m->id);
	}
	*ret = fd;
	return 0;
}

static bool host_is_dir(int root, const char *rel)
{
	_cleanup_close_ int parent = -1;
	const char *base;
	struct stat st;

	parent = ws_open_parent(root, rel, &base);
	return parent >= 0 && fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(st.st_mode);
}

/* Whether path (c's, or its old name when from) changed on the host since
 * the epoch; prior: see ws_apply(). */
static int is_conflict(int root, const ws_change *c, const char *path, bool from, const ws_meta *m,
		       const ws_intent *prior)
{
	char f = ws_intent_find(prior, path);
	bool ours = f && f != WS_INTENT_CONFLICT;

	if (ours && host_is_dir(root, path))
		return 0;
	if (from || c->op != WS_ADDED)
		return host_changed(root, path, &m->epoch);
	if (!c->origin || ours)
		return 0;
	return host_deleted(root, path, &m->epoch);
}

static bool is_temp_name(const char *name)
{
	static const char prefix[] = ".sandcap-apply.";

	return strncmp(name, prefix, sizeof(prefix) - 1) == 0 &&
	       strspn(name + sizeof(prefix) - 1, "0123456789.") ==
		   strlen(name) - (sizeof(prefix) - 1);
}

/* The temporary files an apply killed before its renames left beside the
 * places it wrote: in the directories of the paths it listed. */
static void remove_temps(int root, const ws_intent *prior)
{
	const char *last = NULL;
	size_t last_len = 0;

	for (size_t i = 0; i < prior->n; i++) {
		const char *p = prior->v[i].path, *slash = strrchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : 0;
		_cleanup_close_ int dir = -1;
		const char *base;
		struct dirent *e;
		DIR *dp;

		if (last && len == last_len && memcmp(p, last, len) == 0)
			continue;
		last = p;
		last_len = len;
		dir = ws_open_parent(root, p, &base);
		dp = dir >= 0 ? ws_opendir_at(dir, ".") : NULL;
		if (!dp)
			continue;
		while ((e = readdir(dp)))
			if (is_temp_name(e->d_name))
				(void)unlinkat(dirfd(dp), e->d_name, 0);
		closedir(dp);
	}
}

int ws_apply(int upper, const ws_meta *m, bool force, const ws_intent *prior,
	     ws_before_write_fn before_write, void *userdata, ws_apply_result *ret, sc_diag *d)
{
	_cleanup_close_ int root = -1;
	ws_changes ch = {0};
	ws_apply_result res = {0};
	ws_links links = {0};
	struct stat owner;
	int r;

	r = ws_open_grant_root(m, &root, d);
	if (r < 0)
		return r;
	/* Everything applied is the folder owner's: in the upper layer it is
	 * the agent's host id, which means nothing on the host. */
	if (fstat(root, &owner) < 0)
		return diag_fail(d, -errno, "workspace", "%s: %s", m->grant_path, strerror(errno));
	r = ws_changes_compute(upper, root, &ch);
	if (r < 0)
		return diag_fail(d, r, "workspace", "cannot read workspace %s: %s", m->id,
				 strerror(-r));
	for (size_t i = 0; i < ch.n && r >= 0; i++) {
		const ws_change *c = &ch.v[i];
		int x = is_conflict(root, c, c->path, false, m, prior);

		if (x == 0 && c->from)
			x = is_conflict(root, c, c->from, true, m, prior);
		if (x < 0)
			r = x;
		else if (x)
			r = add_path(&res.conflicts, &res.n_conflicts, c->path);
	}
	if (r >= 0 && res.n_conflicts && !force)
		r = diag_fail(d, -EBUSY, "workspace",
			      "%zu path(s) changed on the host since the sandbox started; nothing "
			      "was applied (--force writes over them)",
			      res.n_conflicts);
	if (r >= 0 && before_write) {
		r = before_write(&ch, &res, userdata);
		if (r < 0)
			diag_fail(d, r, "workspace",
				  "cannot record what the apply will write: %s; nothing was "
				  "applied",
				  strerror(-r));
	}
	if (r >= 0 && prior)
		remove_temps(root, prior);
	for (size_t i = 0; i < ch.n && r >= 0; i++) {
		r = apply_one(upper, root, &owner, &ch.v[i], (unsigned)i, &links, &res);
		if (r < 0)
			diag_fail(d, r, "workspace", "cannot apply %s: %s", ch.v[i].path,
				  strerror(-r));
	}
	/* A renamed file's old name goes once the new one is in place. */
	for (size_t i = 0; i < ch.n && r >= 0; i++) {
		_cleanup_close_ int parent = -1;
		const char *base;

		if (ch.v[i].op != WS_RENAMED)
			continue;
		parent = ws_open_parent(root, ch.v[i].from, &base);
		r = parent < 0 ? parent : ws_remove_at(parent, base, 0);
		if (r >= 0)
			r = add_applied(&res, ch.v[i].from, "delete", NULL);
		if (r < 0)
			diag_fail(d, r, "workspace", "cannot remove %s: %s", ch.v[i].from,
				  strerror(-r));
	}
	if (r >= 0) {
		r = apply_dir_modes(upper, root, &owner, &ch);
		if (r < 0)
			diag_fail(d, r, "workspace", "cannot set directory modes: %s",
				  strerror(-r));
	}
	if (r >= 0 && syncfs(root) < 0)
		r = diag_fail(d, -errno, "workspace", "syncfs %s: %s", m->grant_path,
			      strerror(errno));
	ws_changes_done(&ch);
	ws_links_done(&links);
	*ret = res;
	return r;
}
