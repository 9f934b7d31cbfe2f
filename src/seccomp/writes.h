/* SPDX-License-Identifier: MIT */
/*
 * Which walls refuse a write the sandbox asked for: the judgement the
 * listener makes for the calls the filter sends it for their intent to
 * write (profile.c, SF_WRITE), so that a refused write is recorded as
 * fs.denied. Internal to src/seccomp/.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "seccomp/seccomp.h"

/* What the call writes, and so what is judged. */
typedef enum sf_wobj {
	SW_OPEN,   /* open/openat/creat: the file, or its directory when it is created */
	SW_FILE,   /* chmod, truncate: the file itself */
	SW_CREATE, /* mkdir, mknod, symlink, link: the directory a new name goes in */
	SW_REMOVE, /* unlink, rmdir, rename: the directory a name leaves (or enters) */
} sf_wobj;

/* One call of the filter's SF_WRITE rules: where its arguments are (-1: it
 * has none). rename and link name a second path, judged after the first. */
typedef struct sf_write_call {
	const char *name;
	sf_wobj obj;
	int dirfd, path;   /* the path, relative to dirfd or the working directory */
	int dirfd2, path2; /* the second path (rename's new name) */
	int flags;	   /* open's flags; for SW_FILE the AT_ flags */
	int node;	   /* mknod's mode: the filter sends only files, FIFOs, sockets */
} sf_write_call;

#define SF_N_WRITE_CALLS 22u
extern const sf_write_call sf_write_calls[SF_N_WRITE_CALLS];

#define SF_WMOUNTS 64u

/* The writable places as the target's root shows them, found once, and the
 * verdict on each mount seen: the mount tree cannot change under the agent
 * (it may not mount, chroot or pivot_root), and every writable place is
 * the root of a mount of its own (/tmp, /dev/shm, each grant), so what is
 * true of a mount's root is true of all of it. */
typedef struct sf_wstate {
	const sf_walls *walls; /* NULL: no Landlock, no writable place known */
	bool found;
	int rootfd; /* the target's root (every process of a sandbox shares it) */
	struct stat root;
	size_t n;
	struct sf_wroot {
		dev_t dev;
		ino_t ino;
	} roots[SF_MAX_WRITABLE];
	size_t n_mounts;
	struct sf_wmount {
		uint64_t id;
		int verdict; /* 0, EROFS or EACCES */
	} mounts[SF_WMOUNTS];
} sf_wstate;

/* Forgets what sf_write_judge found (closes the root it keeps). */
void sf_wstate_reset(sf_wstate *w, const sf_walls *walls);

/* A path a call named, as given and as the target sees it. */
typedef struct sf_wpath {
	const char *given; /* the string read from the target ("" for none) */
	int dirfd;	   /* AT_FDCWD, or the fd it is relative to */
	int flags;	   /* open's flags, or AT_ flags */
} sf_wpath;

/*
 * Whether a wall refuses this write: EROFS (a read-only mount), EACCES
 * (Landlock: not beneath a writable place), or 0 when the write is let
 * through to the kernel, which decides (writable, or not judged here: a
 * name that does or does not exist as the call needs, a device, a magic
 * link, a path the supervisor cannot walk as the target would). The path
 * from the target's root is written to ret_full ("" when not known).
 */
int sf_write_judge(sf_wstate *w, pid_t pid, sf_wobj obj, const sf_wpath *p, char *ret_full,
		   size_t size);

/* The path, from the target's root, of the directory /proc/PID/NAME links
 * to (its cwd, or an fd), checked by identity under rootfd; -1 otherwise. */
int sf_target_dir(pid_t pid, const char *name, int rootfd, char *ret_text, size_t size);
