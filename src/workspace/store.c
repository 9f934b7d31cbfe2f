/* SPDX-License-Identifier: MIT */
/*
 * Where workspaces are kept: STATE/workspaces/ID/ with meta.json (what the
 * workspace was made from) and upper/ (a copy of the overlay's upper layer,
 * in overlayfs' own encoding: a whiteout is a 0/0 character device, an
 * opaque directory has trusted.overlay.opaque = "y"). Only root (or the
 * invoking user) can reach the state directory; its contents are still
 * the agent's bytes and read as such.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/diag.h"
#include "base/io.h"
#include "base/sha256.h"
#include "compat/syscalls.h"
#include "workspace/ws-internal.h"

bool ws_id_valid(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > WS_ID_MAX || id[0] == '.' || id[0] == '-')
		return false;
	for (const char *q = id; *q; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
		      (*q >= '0' && *q <= '9') || *q == '.' || *q == '-' || *q == '_'))
			return false;
	return true;
}

bool ws_is_whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

bool ws_is_opaque(int fd)
{
	char v[4];
	ssize_t n = fgetxattr(fd, WS_OPAQUE_XATTR, v, sizeof(v));

	return n == 1 && v[0] == 'y';
}

bool ws_has_origin(int fd)
{
	return fgetxattr(fd, WS_ORIGIN_XATTR, NULL, 0) > 0;
}

int ws_copy_origin(int from, int to)
{
	char v[256]; /* a file handle: MAX_HANDLE_SZ is 128 */
	ssize_t n = fgetxattr(from, WS_ORIGIN_XATTR, v, sizeof(v));

	if (n <= 0)
		return 0;
	return fsetxattr(to, WS_ORIGIN_XATTR, v, (size_t)n, 0) < 0 ? -errno : 0;
}

char ws_type_of(mode_t mode)
{
	return S_ISREG(mode)	? 'f'
	       : S_ISDIR(mode)	? 'd'
	       : S_ISLNK(mode)	? 'l'
	       : S_ISFIFO(mode) ? 'p'
				: 0;
}

int ws_read_all(int fd, size_t max, char **ret, size_t *ret_len)
{
	struct stat st;
	char *buf;
	size_t n = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	while (n < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + n, (size_t)st.st_size - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break; /* shrank meanwhile: what is there */
		n += (size_t)k;
	}
	buf[n] = '\0';
	*ret = buf;
	*ret_len = n;
	return 0;
}

DIR *ws_opendir_at(int dir, const char *name)
{
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		(void)close(fd);
		errno = e;
	}
	return d;
}

bool ws_is_dot(const char *name)
{
	return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

static int ensure_dir(int at, const char *name)
{
	return mkdirat(at, name, 0700) < 0 && errno != EEXIST ? -errno : 0;
}

int ws_store_new(const char *state_dir, const char *id, int *ret_dir, sc_diag *reterr_diag)
{
	_cleanup_close_ int state = -1, all = -1;
	int fd;

	if (!ws_id_valid(id))
		return diag_fail(reterr_diag, -EINVAL, "workspace", "bad workspace id");
	if (mkdir(state_dir, 0700) < 0 && errno != EEXIST)
		return diag_fail(reterr_diag, -errno, "workspace", "cannot create %s: %s",
				 state_dir, strerror(errno));
	state = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (state < 0 || ensure_dir(state, "workspaces") < 0 ||
	    (all = openat(state, "workspaces", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
		0)
		return diag_fail(reterr_diag, -errno, "workspace", "%s/workspaces: %s", state_dir,
				 strerror(errno));
	if (mkdirat(all, id, 0700) < 0)
		return diag_fail(reterr_diag, -errno, "workspace", "%s/workspaces/%s: %s",
				 state_dir, id, strerror(errno));
	fd = openat(all, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return diag_fail(reterr_diag, -errno, "workspace", "%s/workspaces/%s: %s",
				 state_dir, id, strerror(errno));
	*ret_dir = fd;
	return 0;
}

/* Hashes n zero bytes: a hole reads as zeros. */
static void hash_zeros(sha256_ctx *md, uint64_t n)
{
	static const char zeros[65536];

	while (md && n > 0) {
		size_t k = n < sizeof(zeros) ? (size_t)n : sizeof(zeros);

		sha256_update(md, zeros, k);
		n -= k;
	}
}

/* Copies [from, to) of in to the same offsets of out, hashing it; stops
 * early at a shorter in (a live file truncated meanwhile). */
static int copy_range(int in, int out, off_t from, off_t to, sha256_ctx *md, uint64_t *bytes)
{
	char buf[65536];

	if (lseek(out, from, SEEK_SET) < 0)
		return -errno;
	while (from < to) {
		size_t want =
		    (uint64_t)(to - from) < sizeof(buf) ? (size_t)(to - from) : sizeof(buf);
		ssize_t n = pread(in, buf, want, from);
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 1;
		r = io_write_all(out, buf, (size_t)n);
		if (r < 0)
			return r;
		if (md)
			sha256_update(md, buf, (size_t)n);
		*bytes += (uint64_t)n;
		from += n;
	}
	return 0;
}

int ws_copy_data(int in, int out, sha256_ctx *md, uint64_t *bytes)
{
	struct stat st;
	off_t pos = 0, size;

	if (fstat(in, &st) < 0)
		return -errno;
	size = st.st_size;
	/* Only the data is written (SEEK_DATA/SEEK_HOLE): a sparse file takes
	 * on the host what it took in the quota, not its length. */
	while (pos < size) {
		off_t data = lseek(in, pos, SEEK_DATA), hole;
		int r;

		if (data < 0 && errno == ENXIO)
			data = size; /* only a hole is left */
		else if (data < 0 && errno == EINVAL)
			data = pos; /* no hole support: all data */
		else if (data < 0)
			return -errno;
		if (data > size)
			data = size;
		hash_zeros(md, (uint64_t)(data - pos));
		if (data >= size)
			break;
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0 || hole > size)
			hole = size;
		r = copy_range(in, out, data, hole, md, bytes);
		if (r < 0)
			return r;
		if (r > 0) {
			size = data; /* shorter now: what was there */
			break;
		}
		pos = hole;
	}
	return ftruncate(out, size) < 0 ? -errno : 0;
}

static int copy_file(int src, int dst_dir, const char *name, const struct stat *st, uint64_t *bytes)
{
	_cleanup_close_ int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	_cleanup_close_ int out = -1;
	int r;

	if (in < 0)
		return -errno;
	out = openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	r = ws_copy_data(in, out, NULL, bytes);
	if (r < 0)
		return r;
	if (fchown(out, st->st_uid, st->st_gid) < 0 || fchmod(out, st->st_mode & 07777) < 0)
		return -errno;
	return ws_copy_origin(in, out);
}

/* A second name of a file already copied: a link to that copy. */
static int copy_link(int dst_root, const char *first, int dst, const char *name)
{
	const char *base;
	int parent = ws_open_parent(dst_root, first, &base), r = 0;

	if (parent < 0)
		return parent;
	if (linkat(parent, base, dst, name, 0) < 0)
		r = -errno;
	(void)close(parent);
	return r;
}

void ws_refused_add(ws_refused *ref, const char *rel, int err)
{
	if (!ref)
		return;
	if (ref->n++ == 0) {
		ref->first = strdup(rel);
		ref->err = err;
	}
}

void ws_refused_done(ws_refused *ref)
{
	free(ref->first);
	memset(ref, 0, sizeof(*ref));
}

/* A large frame of its own, out of the recursion's. */
static __attribute__((noinline)) int copy_symlink(int src, int dst, const char *name,
						  const struct stat *st)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(src, name, target, sizeof(target) - 1);

	if (n < 0)
		return -errno;
	target[n] = '\0';
	if (symlinkat(target, dst, name) < 0 ||
	    fchownat(dst, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

/* One directory: made in dst, filled, then its markers, owner and mode.
 * A subtree too deep to open (no descriptor left) is refused whole. */
static int copy_dir(int src, int dst, int dst_root, const char *name, const char *me,
		    const struct stat *st, ws_links *links, ws_refused *ref, uint64_t *files,
		    uint64_t *bytes)
{
	_cleanup_close_ int s2 = -1, d2 = -1;
	int r;

	if (mkdirat(dst, name, 0700) < 0)
		return -errno;
	s2 = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d2 = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s2 < 0 || d2 < 0) {
		r = -errno;
		if (r != -EMFILE && r != -ENFILE)
			return r;
		(void)unlinkat(dst, name, AT_REMOVEDIR);
		ws_refused_add(ref, me, r);
		return 0;
	}
	r = ws_copy_tree(s2, d2, dst_root, me, links, ref, files, bytes);
	if (r >= 0 && ws_is_opaque(s2) && fsetxattr(d2, WS_OPAQUE_XATTR, "y", 1, 0) < 0)
		r = -errno;
	if (r >= 0)
		r = ws_copy_origin(s2, d2);
	/* After its entries: a mode without w must not stop them. */
	if (r >= 0 &&
	    (fchown(d2, st->st_uid, st->st_gid) < 0 || fchmod(d2, st->st_mode & 07777) < 0))
		r = -errno;
	return r;
}

int ws_copy_tree(int src, int dst, int dst_root, const char *rel, ws_links *links, ws_refused *ref,
		 uint64_t *files, uint64_t *bytes)
{
	DIR *d;
	struct dirent *e;
	int r = 0;

	d = ws_opendir_at(src, ".");
	if (!d)
		return -errno;
	while (r >= 0 && (errno = 0, e = readdir(d))) {
		const char *name = e->d_name;
		_cleanup_free_ char *me = NULL;
		struct stat st;

		if (ws_is_dot(name))
			continue;
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			break;
		}
		if (asprintf(&me, "%s%s%s", rel, *rel ? "/" : "", name) < 0) {
			r = -ENOMEM;
			break;
		}
		/* Apply names every path below the folder's root in one string:
		 * a longer one could never be applied, so it is not kept. */
		if (strlen(me) > WS_PATH_MAX) {
			ws_refused_add(ref, me, -ENAMETOOLONG);
			continue;
		}
		if (++*files > WS_MAX_CHANGES) {
			r = -E2BIG;
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			r = copy_dir(dirfd(d), dst, dst_root, name, me, &st, links, ref, files,
				     bytes);
		} else if (S_ISREG(st.st_mode)) {
			const ws_link *l = st.st_nlink > 1 ? ws_links_find(links, st.st_ino) : NULL;

			if (l) {
				r = copy_link(dst_root, l->rel, dst, name);
				continue;
			}
			r = copy_file(dirfd(d), dst, name, &st, bytes);
			if (r >= 0 && st.st_nlink > 1)
				r = ws_links_add(links, st.st_ino, me, NULL);
		} else if (S_ISLNK(st.st_mode)) {
			r = copy_symlink(dirfd(d), dst, name, &st);
		} else if (ws_is_whiteout(&st)) {
			if (mknodat(dst, name, S_IFCHR | 0600, makedev(0, 0)) < 0)
				r = -errno;
		} else if (S_ISFIFO(st.st_mode)) {
			if (mknodat(dst, name, S_IFIFO | (st.st_mode & 0777), 0) < 0 ||
			    fchownat(dst, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
				r = -errno;
		}
		/* Sockets and devices cannot be made inside (nodev, seccomp): none. */
	}
	if (r >= 0 && errno)
		r = -errno;
	closedir(d);
	return r;
}

int ws_open_parent(int root, const char *rel, const char **ret_base)
{
	struct sc_open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				  .resolve = WS_RESOLVE};
	const char *slash = strrchr(rel, '/');
	char parent[PATH_MAX];
	int fd;

	*ret_base = slash ? slash + 1 : rel;
	if (!slash) {
		fd = fcntl(root, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	if ((size_t)(slash - rel) >= sizeof(parent))
		return -ENAMETOOLONG;
	memcpy(parent, rel, (size_t)(slash - rel));
	parent[slash - rel] = '\0';
	fd = sys_openat2(root, parent, &how);
	return fd < 0 ? -errno : fd;
}

int ws_remove_at(int dir, const char *name, unsigned depth)
{
	/* depth: informational only; any depth is removed, one descriptor a level. */
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	d = ws_opendir_at(dir, name);
	if (!d)
		return -errno;
	while (r >= 0 && (e = readdir(d)))
		if (!ws_is_dot(e->d_name))
			r = ws_remove_at(dirfd(d), e->d_name, depth + 1);
	closedir(d);
	if (r < 0)
		return r;
	return unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

/* ---- meta.json ---- */

void ws_raise_nofile(void)
{
	struct rlimit rl;

	/* A walk holds a few descriptors a level: deep trees need more than
	 * the usual soft limit (nothing here uses select()). */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

void ws_meta_done(ws_meta *m)
{
	free(m->grant_path);
	free(m->grant_at);
	free(m->audit_log);
	free(m->refused_first);
	m->grant_path = m->grant_at = m->audit_log = m->refused_first = NULL;
}

static json_t *u64_or_null(uint64_t v)
{
	return v == PLAN_UNLIMITED ? json_null() : json_integer((json_int_t)v);
}

char *ws_meta_to_json(const ws_meta *m)
{
	_cleanup_json_ json_t *o = json_pack(
	    "{s:s, s:s, s:{s:s, s:s, s:o, s:o, s:I, s:I}, s:{s:I, s:I}, s:s, s:s, s:I, s:I}", "id",
	    m->id, "sandbox", m->sandbox, "grant", "path", m->grant_path, "at", m->grant_at,
	    "quota", u64_or_null(m->quota), "inodes", u64_or_null(m->inodes), "dev",
	    (json_int_t)m->grant_dev, "ino", (json_int_t)m->grant_ino, "epoch", "sec",
	    (json_int_t)m->epoch.tv_sec, "nsec", (json_int_t)m->epoch.tv_nsec, "audit_log",
	    m->audit_log, "state", m->state, "files", (json_int_t)m->files, "bytes",
	    (json_int_t)m->bytes);

	return o ? json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
}

static int get_str(json_t *o, const char *k, size_t max, char **ret)
{
	json_t *v = json_object_get(o, k);

	if (!json_is_string(v) || json_string_length(v) > max ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return -EBADMSG;
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

static int get_u64(json_t *o, const char *k, bool nullable, uint64_t *ret)
{
	json_t *v = json_object_get(o, k);

	if (nullable && json_is_null(v)) {
		*ret = PLAN_UNLIMITED;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -EBADMSG;
	*ret = (uint64_t)json_integer_value(v);
	return 0;
}

int ws_meta_parse(const char *buf, size_t len, ws_meta *ret, char *why, size_t why_len)
{
	_cleanup_json_ json_t *o = NULL;
	json_t *g, *ep;
	json_error_t err;
	_cleanup_free_ char *id = NULL, *sb = NULL, *state = NULL;
	uint64_t sec = 0, nsec = 0;
	ws_meta m = {0};
	int r;

	if (len > WS_META_MAX) {
		snprintf(why, why_len, "larger than %u bytes", WS_META_MAX);
		return -EBADMSG;
	}
	o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	if (!json_is_object(o)) {
		snprintf(why, why_len, "not a JSON object (%s)", o ? "" : err.text);
		return -EBADMSG;
	}
	g = json_object_get(o, "grant");
	ep = json_object_get(o, "epoch");
	r = json_is_object(g) && json_is_object(ep) ? 0 : -EBADMSG;
	if (r >= 0)
		r = get_str(o, "id", WS_ID_MAX, &id);
	if (r >= 0)
		r = get_str(o, "sandbox", sizeof(m.sandbox) - 1, &sb);
	if (r >= 0)
		r = get_str(o, "state", sizeof(m.state) - 1, &state);
	if (r >= 0)
		r = get_str(g, "path", POLICY_MAX_STRING, &m.grant_path);
	if (r >= 0)
		r = get_str(g, "at", POLICY_MAX_STRING, &m.grant_at);
	if (r >= 0)
		r = get_str(o, "audit_log", POLICY_MAX_STRING, &m.audit_log);
	if (r >= 0)
		r = get_u64(g, "quota", true, &m.quota);
	if (r >= 0)
		r = get_u64(g, "inodes", true, &m.inodes);
	if (r >= 0)
		r = get_u64(g, "dev", false, &m.grant_dev);
	if (r >= 0)
		r = get_u64(g, "ino", false, &m.grant_ino);
	if (r >= 0)
		r = get_u64(ep, "sec", false, &sec);
	if (r >= 0)
		r = get_u64(ep, "nsec", false, &nsec);
	if (r >= 0)
		r = get_u64(o, "files", false, &m.files);
	if (r >= 0)
		r = get_u64(o, "bytes", false, &m.bytes);
	if (r == -ENOMEM) {
		ws_meta_done(&m);
		return r;
	}
	if (r < 0 || !ws_id_valid(id) || m.grant_path[0] != '/' || nsec >= 1000000000u ||
	    sec > INT64_MAX) {
		ws_meta_done(&m);
		snprintf(why, why_len, "a key is missing or has a value of the wrong kind");
		return -EBADMSG;
	}
	snprintf(m.id, sizeof(m.id), "%s", id);
	snprintf(m.sandbox, sizeof(m.sandbox), "%s", sb);
	snprintf(m.state, sizeof(m.state), "%s", state);
	m.epoch.tv_sec = (time_t)sec;
	m.epoch.tv_nsec = (long)nsec;
	*ret = m;
	return 0;
}

int ws_meta_store(int dir, const ws_meta *m)
{
	_cleanup_free_ char *json = ws_meta_to_json(m);
	_cleanup_close_ int fd = -1;
	int r;

	if (!json)
		return -ENOMEM;
	fd = openat(dir, "meta.json.new", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0)
		return -errno;
	r = io_write_all(fd, json, strlen(json));
	if (r >= 0)
		r = io_write_all(fd, "\n", 1);
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (r >= 0 && renameat(dir, "meta.json.new", dir, "meta.json") < 0)
		r = -errno;
	return r;
}

static int workspaces_dir(const char *state_dir, sc_diag *d)
{
	char path[PATH_MAX];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/workspaces", state_dir) >= sizeof(path))
		return diag_fail(d, -ENAMETOOLONG, "workspace", "state directory path too long");
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT
			   ? -ENOENT
			   : diag_fail(d, -errno, "workspace", "%s: %s", path, strerror(errno));
	return fd;
}

static int read_meta(int dir, const char *id, ws_meta *ret, sc_diag *d)
{
	_cleanup_close_ int fd = openat(dir, "meta.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	char why[128];
	size_t n;
	int r;

	if (fd < 0)
		return diag_fail(d, -errno, "workspace", "workspace %s: meta.json: %s", id,
				 strerror(errno));
	r = ws_read_all(fd, WS_META_MAX, &buf, &n);
	if (r < 0)
		return diag_fail(d, r, "workspace", "workspace %s: meta.json: %s", id,
				 strerror(-r));
	r = ws_meta_parse(buf, n, ret, why, sizeof(why));
	if (r < 0)
		return diag_fail(d, r, "workspace", "workspace %s: meta.json: %s", id, why);
	if (strcmp(ret->id, id) != 0) {
		ws_meta_done(ret);
		return diag_fail(d, -EBADMSG, "workspace", "workspace %s: meta.json names %s", id,
				 ret->id);
	}
	return 0;
}

int ws_open(const char *state_dir, const char *id, int *ret_dir, ws_meta *ret_meta, sc_diag *d)
{
	_cleanup_close_ int all = -1, dir = -1;
	int r;

	if (!ws_id_valid(id))
		return diag_fail(d, -EINVAL, "workspace",
				 "'%s' is not a workspace id (see 'sandcap workspace list')", id);
	all = workspaces_dir(state_dir, d);
	if (all == -ENOENT)
		return diag_fail(d, -ENOENT, "workspace", "no workspace %s in %s", id, state_dir);
	if (all < 0)
		return all;
	dir = openat(all, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return diag_fail(d, -errno, "workspace", "no workspace %s in %s/workspaces%s%s", id,
				 state_dir, errno == ENOENT ? "" : ": ",
				 errno == ENOENT ? "" : strerror(errno));
	r = read_meta(dir, id, ret_meta, d);
	if (r < 0)
		return r;
	*ret_dir = TAKE_FD(dir);
	return 0;
}

static int cmp_meta(const void *a, const void *b)
{
	return strcmp(((const ws_meta *)a)->id, ((const ws_meta *)b)->id);
}

int ws_list(const char *state_dir, ws_meta **ret, size_t *ret_n, sc_diag *d)
{
	_cleanup_close_ int all = workspaces_dir(state_dir, d);
	ws_meta *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *dp;

	*ret = NULL;
	*ret_n = 0;
	if (all == -ENOENT)
		return 0;
	if (all < 0)
		return all;
	dp = fdopendir(all);
	if (!dp)
		return -errno;
	all = -1;
	while ((e = readdir(dp))) {
		_cleanup_close_ int dir = -1;
		ws_meta m;

		if (!ws_id_valid(e->d_name))
			continue;
		dir = openat(dirfd(dp), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		/* One that cannot be read is skipped: `diff ID` says why. */
		if (dir < 0 || read_meta(dir, e->d_name, &m, NULL) < 0)
			continue;
		if (n == cap) {
			ws_meta *nv;

			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				ws_meta_done(&m);
				break;
			}
			v = nv;
		}
		v[n++] = m;
	}
	closedir(dp);
	if (n > 1) /* qsort takes no NULL, even for none */
		qsort(v, n, sizeof(*v), cmp_meta);
	*ret = v;
	*ret_n = n;
	return 0;
}

int ws_discard_dir(const char *state_dir, const char *id)
{
	_cleanup_close_ int all = workspaces_dir(state_dir, NULL);

	if (all < 0)
		return all;
	return ws_id_valid(id) ? ws_remove_at(all, id, 0) : -EINVAL;
}

static void prune_one(int all, const char *state_dir, const char *id, time_t cutoff, bool dry_run,
		      ws_pruned *w, ws_meta *m)
{
	_cleanup_close_ int dir = -1;
	struct stat st;

	dir = openat(all, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0) {
		w->err = -errno;
		return;
	}
	if (read_meta(dir, id, m, NULL) == 0) {
		w->state = m->state;
		w->files = m->files;
		w->bytes = m->bytes;
	}
	if (fstatat(dir, "meta.json", &st, AT_SYMLINK_NOFOLLOW) < 0 && fstat(dir, &st) < 0) {
		w->err = -errno;
		return;
	}
	w->mtime = st.st_mtime;
	if (st.st_mtime >= cutoff) {
		w->verdict = WS_PRUNE_KEPT_YOUNG;
		return;
	}
	/* An apply holds its workspace locked until it ends. */
	if (flock(dir, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			w->verdict = WS_PRUNE_KEPT_BUSY;
		else
			w->err = -errno;
		return;
	}
	if (!dry_run) {
		int r = ws_remove_at(all, id, 0);

		if (r < 0) {
			w->err = r;
			return;
		}
		(void)ws_intent_remove(state_dir, id);
	}
	w->verdict = WS_PRUNE_REMOVED;
}

int ws_prune(const char *state_dir, time_t cutoff, bool dry_run,
	     void (*cb)(const ws_pruned *w, void *userdata), void *userdata)
{
	_cleanup_close_ int all = workspaces_dir(state_dir, NULL);
	struct dirent *e;
	DIR *dp;

	if (all == -ENOENT)
		return 0;
	if (all < 0)
		return all;
	dp = ws_opendir_at(all, ".");
	if (!dp)
		return -errno;
	while ((errno = 0, e = readdir(dp))) {
		ws_pruned w = {.id = e->d_name, .state = "incomplete", .verdict = WS_PRUNE_FAILED};
		ws_meta m = {0};
		struct stat st;

		/* .intents and anything that is not a workspace's directory. */
		if (!ws_id_valid(e->d_name) ||
		    fstatat(all, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		prune_one(all, state_dir, e->d_name, cutoff, dry_run, &w, &m);
		cb(&w, userdata);
		ws_meta_done(&m);
	}
	closedir(dp);
	return 0;
}

int ws_discard(const char *state_dir, const char *id, sc_diag *d)
{
	_cleanup_close_ int dir = -1;
	ws_meta m;
	int r;

	r = ws_open(state_dir, id, &dir, &m, d);
	if (r < 0)
		return r;
	ws_meta_done(&m);
	r = ws_discard_dir(state_dir, id);
	if (r >= 0)
		(void)ws_intent_remove(state_dir, id);
	if (r < 0)
		return diag_fail(d, r, "workspace", "cannot remove workspace %s: %s", id,
				 strerror(-r));
	return 0;
}

/* ---- the intents of applies (their format: intent.c) ---- */

int ws_intents_dir(const char *state_dir, bool create)
{
	char path[PATH_MAX];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/workspaces/" WS_INTENT_DIR, state_dir) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	if (create) {
		/* A live session's workspace is not under STATE/workspaces,
		 * which may not exist yet. */
		char *slash = strrchr(path, '/');

		*slash = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
		*slash = '/';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int ws_intent_remove(const char *state_dir, const char *id)
{
	_cleanup_close_ int dir = -1;

	if (!ws_id_valid(id))
		return -EINVAL;
	dir = ws_intents_dir(state_dir, false);
	if (dir == -ENOENT)
		return 0;
	if (dir < 0)
		return dir;
	return unlinkat(dir, id, 0) < 0 && errno != ENOENT ? -errno : 0;
}
