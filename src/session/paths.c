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
