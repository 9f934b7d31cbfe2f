/* SPDX-License-Identifier: MIT */
/* Where sessions keep their state, and the sweep of what dead ones left. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "session/session.h"
#include "session/wire.h"

static int mkdir_0700(const char *path)
{
	struct stat st;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	/* Ours, and only ours: the control sockets below grant everything. */
	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

int sc_session_dir(bool create, char *buf, size_t len)
{
	const char *over = getenv("SANDCAP_RUNTIME_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char base[4096];
	int n, r;

	if (over && over[0] == '/')
		n = snprintf(base, sizeof(base), "%s", over);
	else if (geteuid() == 0)
		n = snprintf(base, sizeof(base), "/run/sandcap");
	else if (xdg && xdg[0] == '/')
		n = snprintf(base, sizeof(base), "%s/sandcap", xdg);
	else
		return -ENOENT;
	if (n < 0 || (size_t)n >= sizeof(base))
		return -ENAMETOOLONG;
	n = snprintf(buf, len, "%s/sessions", base);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (!create)
		return 0;
	r = mkdir_0700(base);
	return r < 0 ? r : mkdir_0700(buf);
}

bool sc_session_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > SC_SESSION_NAME_MAX || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* Everything a session's directory may hold (ss_files). */
static void remove_session_dir(int dirfd, const char *name)
{
	_cleanup_close_ int fd =
	    openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0)
		for (size_t i = 0; i < ELEMENTSOF(ss_files); i++)
			(void)unlinkat(fd, ss_files[i], 0);
	(void)unlinkat(dirfd, name, AT_REMOVEDIR);
}

int ss_lock_held(int dirfd, const char *name)
{
	char path[300];
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof(path), "%s/" SS_LOCK, name);
	fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? 1 : -errno;
	return 0;
}

/*
 * A supervisor holds an exclusive flock on its directory's lock file for
 * as long as it lives; the kernel drops it when it dies, however it dies.
 * A directory without a held lock is a dead one's (its sandbox died with
 * it: pid 1 has PR_SET_PDEATHSIG), or one being created: a directory is
 * only taken as stale once it is older than SS_STALE_S, as cgroups are.
 */
unsigned sc_session_sweep(void)
{
	char dir[4096];
	_cleanup_close_ int dfd = -1;
	unsigned removed = 0;
	DIR *d;
	struct dirent *e;

	if (sc_session_dir(false, dir, sizeof(dir)) < 0)
		return 0;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	d = fdopendir(dup(dfd));
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		struct stat st;

		if (!sc_session_name_valid(e->d_name))
			continue;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (ss_lock_held(dfd, e->d_name) != 0)
			continue;
		if (faccessat(dfd, e->d_name, F_OK, 0) == 0 &&
		    time(NULL) - st.st_mtime < SS_STALE_S) {
			char lock[300];
			struct stat lst;

			/* Being created: no lock file yet. A lock file that
			 * exists but is not held is a dead supervisor's. */
			snprintf(lock, sizeof(lock), "%s/" SS_LOCK, e->d_name);
			if (fstatat(dfd, lock, &lst, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
		}
		remove_session_dir(dfd, e->d_name);
		removed++;
	}
	(void)closedir(d);
	return removed;
}
