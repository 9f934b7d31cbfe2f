/* SPDX-License-Identifier: MIT */
/*
 * Judging a write before the kernel does, so that a refused one leaves a
 * record (fs.denied). The walls themselves are the mount tree (the runtime
 * and ro grants are read-only mounts) and Landlock (writes only beneath
 * /tmp, /dev/shm and the rw and cow grants); this file asks the same two
 * questions of the path the call named, looked up as the target would: from
 * its root (/proc/PID/root, RESOLVE_IN_ROOT) and its working directory or
 * dirfd, read while it waits in the call.
 *
 * The listener refuses a write judged refused itself, with the errno of the
 * wall, so that the record and the answer are the same fact; anything not
 * judged with certainty (a magic link, a name the call needs to exist that
 * does not, a device) goes on to the kernel, which refuses or not as
 * before. A hostile target that changes the path between our look and the
 * kernel's can only make the kernel refuse a write we let through, without
 * a record: it never gets a write past a wall, and nothing is recorded that
 * did not happen.
 */
#include "seccomp/writes.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "compat/syscalls.h"

#define SW_PROC_MAX 64u
/* Directories walked up looking for a writable place (Landlock walks the
 * same hierarchy); a deeper path is left to the kernel. */
#define SW_MAX_DEPTH 4096u

/* clang-format off */
const sf_write_call sf_write_calls[SF_N_WRITE_CALLS] = {
    /* name          what         dirfd path dirfd2 path2 flags node */
    {"open",       SW_OPEN,   -1, 0, -1, -1, 1, -1},
    {"openat",     SW_OPEN,    0, 1, -1, -1, 2, -1},
    {"creat",      SW_OPEN,   -1, 0, -1, -1, -1, -1},
    {"truncate",   SW_FILE,   -1, 0, -1, -1, -1, -1},
    {"chmod",      SW_FILE,   -1, 0, -1, -1, -1, -1},
    {"fchmod",     SW_FILE,    0, -1, -1, -1, -1, -1},
    {"fchmodat",   SW_FILE,    0, 1, -1, -1, -1, -1},
    {"fchmodat2",  SW_FILE,    0, 1, -1, -1, 3, -1},
    {"mkdir",      SW_CREATE, -1, 0, -1, -1, -1, -1},
    {"mkdirat",    SW_CREATE,  0, 1, -1, -1, -1, -1},
    {"mknod",      SW_CREATE, -1, 0, -1, -1, -1, 1},
    {"mknodat",    SW_CREATE,  0, 1, -1, -1, -1, 2},
    {"symlink",    SW_CREATE, -1, 1, -1, -1, -1, -1},
    {"symlinkat",  SW_CREATE,  1, 2, -1, -1, -1, -1},
    {"link",       SW_CREATE, -1, 1, -1, -1, -1, -1},
    {"linkat",     SW_CREATE,  2, 3, -1, -1, -1, -1},
    {"unlink",     SW_REMOVE, -1, 0, -1, -1, -1, -1},
    {"unlinkat",   SW_REMOVE,  0, 1, -1, -1, -1, -1},
    {"rmdir",      SW_REMOVE, -1, 0, -1, -1, -1, -1},
    {"rename",     SW_REMOVE, -1, 0, -1, 1, -1, -1},
    {"renameat",   SW_REMOVE,  0, 1, 2, 3, -1, -1},
    {"renameat2",  SW_REMOVE,  0, 1, 2, 3, -1, -1},
};
/* clang-format on */

int sf_target_dir(pid_t pid, const char *name, int rootfd, char *ret_text, size_t size)
{
	char proc[SW_PROC_MAX];
	struct sc_open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				  .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	struct stat a, b;
	_cleanup_close_ int fd = -1, again = -1;
	ssize_t n;

	(void)snprintf(proc, sizeof(proc), "/proc/%d/%s", pid, name);
	fd = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
	n = fd >= 0 ? readlink(proc, ret_text, size) : -1;
	if (n <= 0 || (size_t)n >= size || ret_text[0] != '/')
		return -1;
	ret_text[n] = '\0';
	/* The text is the directory's path from the target's root when the
	 * directory lies inside it: checked, by identity. */
	again = sys_openat2(rootfd, ret_text, &how);
	if (again < 0 || fstat(fd, &a) < 0 || fstat(again, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino)
		return -1;
	return 0;
}

static int sw_open_in_root(int rootfd, const char *path, int flags)
{
	struct sc_open_how how = {.flags = (uint64_t)(O_PATH | O_CLOEXEC | flags),
				  .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};

	return sys_openat2(rootfd, path, &how);
}

void sf_wstate_reset(sf_wstate *w, const sf_walls *walls)
{
	if (w->found && w->rootfd >= 0)
		(void)close(w->rootfd);
	memset(w, 0, sizeof(*w));
	w->walls = walls;
	w->rootfd = -1;
}

/* The writable places' identities, found once under the target's root. */
static void sw_find_roots(sf_wstate *w, int rootfd)
{
	w->found = true;
	w->n_mounts = 0;
	w->n = 0;
	for (size_t i = 0; w->walls && i < w->walls->n_writable && w->n < SF_MAX_WRITABLE; i++) {
		_cleanup_close_ int fd = sw_open_in_root(rootfd, w->walls->writable[i], 0);
		struct stat st;

		if (fd >= 0 && fstat(fd, &st) == 0)
			w->roots[w->n++] = (struct sf_wroot){st.st_dev, st.st_ino};
	}
}

static bool sw_is_root(const sf_wstate *w, const struct stat *st)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->roots[i].dev == st->st_dev && w->roots[i].ino == st->st_ino)
			return true;
	return false;
}

/* Whether Landlock lets a write reach fd (file or directory): it or a
 * directory above it is a writable place. dirfd is the directory a file is
 * in (-1 when fd is a directory). Walked by "..", which crosses mounts
 * upward as Landlock's walk does; ends at the target's root. *ret_known
 * false: not known for sure (a file whose directory is unknown, a failed
 * step), and true is returned: the kernel decides. */
static bool sw_beneath_writable(const sf_wstate *w, int fd, int dirfd, const struct stat *root,
				bool *ret_known)
{
	_cleanup_close_ int cur = -1;
	struct stat st;

	*ret_known = false;
	if (fstat(fd, &st) < 0)
		return true;
	if (sw_is_root(w, &st)) {
		*ret_known = true;
		return true;
	}
	cur = fcntl(S_ISDIR(st.st_mode) ? fd : dirfd, F_DUPFD_CLOEXEC, 0);
	if (cur < 0)
		return true;
	for (unsigned i = 0; i < SW_MAX_DEPTH; i++) {
		struct stat up_st;
		int up;

		if (fstat(cur, &st) < 0)
			return true;
		if (sw_is_root(w, &st)) {
			*ret_known = true;
			return true;
		}
		if (st.st_dev == root->st_dev && st.st_ino == root->st_ino) {
			*ret_known = true;
			return false;
		}
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0)
			return true;
		if (fstat(up, &up_st) < 0) {
			(void)close(up);
			return true;
		}
		if (up_st.st_dev == st.st_dev && up_st.st_ino == st.st_ino) {
			(void)close(up);
			*ret_known = true;
			return false; /* the top of the target's mount tree */
		}
		(void)close(cur);
		cur = up;
	}
	return true;
}

/*
 * The verdict on an object that exists: fd the file or directory written,
 * dirfd the directory it is in (-1 when fd is a directory, or unknown).
 * Kept per mount (see writes.h), so that most calls cost one statx.
 */
static int sw_verdict(sf_wstate *w, int fd, int dirfd, const struct stat *root)
{
	struct statx stx;
	struct statvfs vfs;
	int verdict = 0;
	bool known = true;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MNT_ID, &stx) < 0)
		return 0;
	/* Devices, FIFOs and sockets are opened for writing on any mount;
	 * the character devices have Landlock rules of their own. */
	if (!S_ISREG(stx.stx_mode) && !S_ISDIR(stx.stx_mode) && !S_ISLNK(stx.stx_mode))
		return 0;
	if (stx.stx_mask & STATX_MNT_ID)
		for (size_t i = 0; i < w->n_mounts; i++)
			if (w->mounts[i].id == stx.stx_mnt_id)
				return w->mounts[i].verdict;
	if (fstatvfs(fd, &vfs) < 0)
		return 0;
	if (vfs.f_flag & ST_RDONLY)
		verdict = EROFS;
	else if (w->walls && w->walls->landlock)
		verdict = sw_beneath_writable(w, fd, dirfd, root, &known) ? 0 : EACCES;
	if (known && (stx.stx_mask & STATX_MNT_ID) && w->n_mounts < SF_WMOUNTS)
		w->mounts[w->n_mounts++] = (struct sf_wmount){stx.stx_mnt_id, verdict};
	return verdict;
}

/* procfs makes no files: the kernel answers a create there before any
 * wall (ENOENT), and so it is left to it. */
static bool sw_no_create(int dirfd)
{
	struct statfs sfs;

	return fstatfs(dirfd, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC;
}

/* Splits full into its directory (in dir) and last name; false for a
 * path ending in "/" (a directory is meant) or in "." or "..": those the
 * kernel judges itself. */
static bool sw_split(const char *full, char *dir, size_t size, const char **ret_name)
{
	size_t len = strlen(full), dlen;
	const char *slash = memrchr(full, '/', len);

	if (!slash || len >= size)
		return false;
	*ret_name = slash + 1;
	if (**ret_name == '\0' || strcmp(*ret_name, ".") == 0 || strcmp(*ret_name, "..") == 0)
		return false;
	dlen = slash == full ? 1 : (size_t)(slash - full);
	memcpy(dir, full, dlen);
	dir[dlen] = '\0';
	return true;
}

/* The verdict on a file that exists at full: its directory is looked up
 * only when its mount's verdict is not known yet. */
static int sw_verdict_file(sf_wstate *w, const char *full, int fd)
{
	char dir[PATH_MAX];
	const char *name;
	_cleanup_close_ int dirfd = -1;
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_MNT_ID, &stx) == 0 &&
	    (stx.stx_mask & STATX_MNT_ID))
		for (size_t i = 0; i < w->n_mounts; i++)
			if (w->mounts[i].id == stx.stx_mnt_id)
				return sw_verdict(w, fd, -1, &w->root);
	if (sw_split(full, dir, sizeof(dir), &name))
		dirfd = sw_open_in_root(w->rootfd, dir, O_DIRECTORY);
	return sw_verdict(w, fd, dirfd, &w->root);
}

/* The path from the target's root: the string when absolute, else joined
 * to its working directory or dirfd. */
static int sw_full_path(pid_t pid, int rootfd, const sf_wpath *p, char *full, size_t size)
{
	char base[PATH_MAX], name[24];
	int n;

	if (p->given[0] == '/') {
		n = snprintf(full, size, "%s", p->given);
		return n < 0 || (size_t)n >= size ? -1 : 0;
	}
	(void)snprintf(name, sizeof(name), p->dirfd == AT_FDCWD ? "cwd" : "fd/%d", p->dirfd);
	if (sf_target_dir(pid, name, rootfd, base, sizeof(base)) < 0)
		return -1;
	n = snprintf(full, size, "%s%s%s", base, strcmp(base, "/") == 0 ? "" : "/", p->given);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* fchmod(fd) and an empty path with AT_EMPTY_PATH: the fd's own object,
 * judged by its mount only (its directory is not known for sure). */
static int sw_judge_fd(pid_t pid, int fd_nr, char *ret_full, size_t size)
{
	char proc[SW_PROC_MAX];
	_cleanup_close_ int fd = -1;
	struct statvfs vfs;
	struct stat st;
	ssize_t n;

	(void)snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", pid, fd_nr);
	n = readlink(proc, ret_full, size - 1);
	ret_full[n > 0 ? n : 0] = '\0';
	fd = open(proc, O_PATH | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || fstatvfs(fd, &vfs) < 0)
		return 0;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return 0;
	return (vfs.f_flag & ST_RDONLY) ? EROFS : 0;
}

/* The target's pid in its own pid namespace (the last of NStgid), or -1. */
static long sw_ns_pid(pid_t pid)
{
	char proc[SW_PROC_MAX], buf[2048];
	_cleanup_close_ int fd = -1;
	const char *line, *end;
	ssize_t n;

	(void)snprintf(proc, sizeof(proc), "/proc/%d/status", pid);
	fd = open(proc, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	line = strstr(buf, "\nNStgid:");
	end = line ? strchr(line + 1, '\n') : NULL;
	if (!end)
		return -1;
	while (end > line && (end[-1] < '0' || end[-1] > '9'))
		end--;
	while (end > line && end[-1] >= '0' && end[-1] <= '9')
		end--;
	return strtol(end, NULL, 10);
}

/* The path to walk for full: /proc/self is the target's own directory in
 * its procfs, which the supervisor (in no pid of that namespace) must name
 * by number. */
static const char *sw_walk_path(pid_t pid, const char *full, char *buf, size_t size)
{
	long nspid;
	int n;

	if (strncmp(full, "/proc/self/", 11) != 0 || (nspid = sw_ns_pid(pid)) <= 0)
		return full;
	n = snprintf(buf, size, "/proc/%ld/%s", nspid, full + 11);
	return n < 0 || (size_t)n >= size ? full : buf;
}

/* The judgement by the path from the target's root, looked up whole:
 * for what the quick one below leaves (a last name that is a link to
 * follow, a relative path that climbs with "..", O_TMPFILE). */
static int sw_judge_by_path(sf_wstate *w, pid_t pid, sf_wobj obj, const sf_wpath *p, char *ret_full,
			    size_t size)
{
	char dir[PATH_MAX], walk[PATH_MAX];
	_cleanup_close_ int fd = -1, dirfd = -1;
	const char *name, *full;
	const struct stat *root;
	struct stat st;
	int rootfd;
	int acc = p->flags & O_ACCMODE;

	rootfd = w->rootfd;
	root = &w->root;
	if (sw_full_path(pid, rootfd, p, ret_full, size) < 0) {
		(void)snprintf(ret_full, size, "%s", p->given);
		return 0;
	}
	full = sw_walk_path(pid, ret_full, walk, sizeof(walk));

	switch (obj) {
	case SW_FILE:
		fd = sw_open_in_root(rootfd, full,
				     p->flags != -1 && (p->flags & AT_SYMLINK_NOFOLLOW) ? O_NOFOLLOW
											: 0);
		if (fd < 0)
			return 0;
		return sw_verdict_file(w, full, fd);
	case SW_OPEN: {
		int flags = p->flags == -1 ? O_CREAT | O_WRONLY | O_TRUNC : p->flags;
		bool nofollow =
		    (flags & O_NOFOLLOW) || (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL);

		if ((flags & __O_TMPFILE) == __O_TMPFILE) {
			fd = sw_open_in_root(rootfd, full, O_DIRECTORY);
			return fd < 0 ? 0 : sw_verdict(w, fd, -1, root);
		}
		fd = sw_open_in_root(rootfd, full, nofollow ? O_NOFOLLOW : 0);
		if (fd >= 0) {
			/* An existing file: written only when opened for it. */
			if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
				return 0; /* EEXIST */
			if (acc == O_RDONLY && !(flags & O_TRUNC))
				return 0;
			if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode))
				return 0; /* EISDIR */
			return sw_verdict_file(w, full, fd);
		}
		if (errno != ENOENT || !(flags & O_CREAT))
			return 0;
		if (!sw_split(full, dir, sizeof(dir), &name))
			return 0;
		dirfd = sw_open_in_root(rootfd, dir, O_DIRECTORY);
		/* A dangling symlink would be followed to a place of its own. */
		if (dirfd < 0 || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
		    errno != ENOENT || sw_no_create(dirfd))
			return 0;
		return sw_verdict(w, dirfd, -1, root);
	}
	case SW_CREATE:
	case SW_REMOVE: {
		bool exists;

		if (!sw_split(full, dir, sizeof(dir), &name))
			return 0;
		dirfd = sw_open_in_root(rootfd, dir, O_DIRECTORY);
		if (dirfd < 0)
			return 0;
		exists = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
		if (!exists && errno != ENOENT)
			return 0;
		/* EEXIST and ENOENT are the kernel's to answer. A read-only
		 * mount refuses a removal before its name is looked up. */
		if (obj == SW_CREATE && (exists || sw_no_create(dirfd)))
			return 0;
		if (obj == SW_REMOVE && !exists) {
			struct statvfs vfs;

			return fstatvfs(dirfd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY) ? EROFS : 0;
		}
		return sw_verdict(w, dirfd, -1, root);
	}
	}
	return 0;
}

/* The verdict on an object that exists, named by dirfd and name, from its
 * statx: by its mount's verdict when known, else opened and judged. */
static int sw_verdict_named(sf_wstate *w, int dirfd, const char *name, const struct statx *stx)
{
	_cleanup_close_ int fd = -1;

	if (!S_ISREG(stx->stx_mode) && !S_ISDIR(stx->stx_mode))
		return 0;
	if (stx->stx_mask & STATX_MNT_ID)
		for (size_t i = 0; i < w->n_mounts; i++)
			if (w->mounts[i].id == stx->stx_mnt_id)
				return w->mounts[i].verdict;
	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? 0 : sw_verdict(w, fd, dirfd, &w->root);
}

/*
 * The directory a path's last name is in, opened the quick way: an absolute
 * path's directory from the target's root; a relative one's from its
 * working directory or dirfd (/proc/PID/cwd, /proc/PID/fd/N: the object
 * itself), beneath it. -1 when that cannot be done so (a "..", an absolute
 * link on the way, a last name that is "", "." or ".."): the caller then
 * looks the path up whole.
 */
static int sw_open_dir(sf_wstate *w, pid_t pid, const sf_wpath *p, const char **ret_name)
{
	char proc[SW_PROC_MAX], dir[PATH_MAX];
	struct sc_open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				  .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
	const char *slash = strrchr(p->given, '/'), *name = slash ? slash + 1 : p->given;
	size_t dlen = slash ? (size_t)(slash - p->given) : 0;
	_cleanup_close_ int base = -1;

	if (*name == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    dlen >= sizeof(dir) || strncmp(p->given, "/proc/self/", 11) == 0)
		return -1;
	*ret_name = name;
	memcpy(dir, p->given, dlen);
	dir[dlen] = '\0';
	if (p->given[0] == '/')
		return sw_open_in_root(w->rootfd, dlen ? dir : "/", O_DIRECTORY);
	if (strstr(p->given, ".."))
		return -1;
	if (p->dirfd == AT_FDCWD)
		(void)snprintf(proc, sizeof(proc), "/proc/%d/cwd", pid);
	else
		(void)snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", pid, p->dirfd);
	base = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (base < 0 || dlen == 0)
		return TAKE_FD(base);
	return sys_openat2(base, dir, &how);
}

/* The quick judgement: one lookup of the directory, a statx of the name.
 * 1 when it cannot tell (see sw_open_dir, and a link to follow). */
static int sw_judge_quick(sf_wstate *w, pid_t pid, sf_wobj obj, const sf_wpath *p, int *ret)
{
	_cleanup_close_ int dirfd = -1;
	const char *name = NULL;
	struct statx stx;
	bool exists;
	int flags = p->flags;

	*ret = 0;
	if (obj == SW_OPEN && flags == -1)
		flags = O_CREAT | O_WRONLY | O_TRUNC; /* creat */
	if (obj == SW_OPEN && (flags & __O_TMPFILE) == __O_TMPFILE)
		return 1;
	dirfd = sw_open_dir(w, pid, p, &name);
	if (dirfd < 0)
		return 1;
	exists = statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC,
		       STATX_TYPE | STATX_MNT_ID, &stx) == 0;
	if (!exists && errno != ENOENT)
		return 0; /* ENOTDIR, EACCES...: the kernel's */
	switch (obj) {
	case SW_OPEN:
		if (!exists) {
			if (!(flags & O_CREAT))
				return 0; /* ENOENT */
			*ret = sw_verdict(w, dirfd, -1, &w->root);
			if (*ret && sw_no_create(dirfd))
				*ret = 0;
			return 0;
		}
		if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
			return 0; /* EEXIST */
		if (S_ISLNK(stx.stx_mode))
			return (flags & O_NOFOLLOW) ? 0 : 1; /* ELOOP, or follow it */
		if ((flags & O_ACCMODE) == O_RDONLY && !(flags & O_TRUNC))
			return 0;
		if (S_ISDIR(stx.stx_mode))
			return 0; /* EISDIR */
		*ret = sw_verdict_named(w, dirfd, name, &stx);
		return 0;
	case SW_FILE:
		if (!exists)
			return 0;
		if (S_ISLNK(stx.stx_mode))
			return p->flags != -1 && (p->flags & AT_SYMLINK_NOFOLLOW) ? 0 : 1;
		*ret = sw_verdict_named(w, dirfd, name, &stx);
		return 0;
	case SW_CREATE:
		if (exists || sw_no_create(dirfd))
			return 0;
		*ret = sw_verdict(w, dirfd, -1, &w->root);
		return 0;
	case SW_REMOVE:
		if (!exists) {
			struct statvfs vfs;

			*ret = fstatvfs(dirfd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY) ? EROFS : 0;
			return 0;
		}
		*ret = sw_verdict(w, dirfd, -1, &w->root);
		return 0;
	}
	return 1;
}

int sf_write_judge(sf_wstate *w, pid_t pid, sf_wobj obj, const sf_wpath *p, char *ret_full,
		   size_t size)
{
	char proc[SW_PROC_MAX];
	int verdict;

	ret_full[0] = '\0';
	if (p->given[0] == '\0') {
		if (obj == SW_FILE && (p->dirfd >= 0) &&
		    (p->flags == -1 || (p->flags & AT_EMPTY_PATH)))
			return sw_judge_fd(pid, p->dirfd, ret_full, size);
		return 0; /* ENOENT, the kernel's */
	}
	if (!w->found) {
		_cleanup_close_ int fd0 = -1;

		(void)snprintf(proc, sizeof(proc), "/proc/%d/root", pid);
		fd0 = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd0 < 0 || fstat(fd0, &w->root) < 0)
			return 0;
		sw_find_roots(w, fd0);
		w->rootfd = TAKE_FD(fd0);
	}
	if (sw_judge_quick(w, pid, obj, p, &verdict) != 0)
		return sw_judge_by_path(w, pid, obj, p, ret_full, size);
	/* The path for the record, only for a refusal. */
	if (verdict && sw_full_path(pid, w->rootfd, p, ret_full, size) < 0)
		(void)snprintf(ret_full, size, "%s", p->given);
	return verdict;
}
