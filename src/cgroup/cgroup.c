/* SPDX-License-Identifier: MIT */
/*
 * Backend choice and the helpers both backends share. The public functions
 * only dispatch through the cg_ops table the handle carries
 * (docs/cgroups.md): no code outside cg-v1.c / cg-v2.c knows which hierarchy is in
 * use.
 */
#include "cgroup/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "cgroup/cg-internal.h"
#include "compat/syscalls.h"

/* Most pids pinned by pidfds in one kill pass; the pass repeats anyway. */
#define CG_KILL_BATCH 256u
/* A mountinfo line, and how many fields we need from it. */
#define CG_MOUNTINFO_MAX_BYTES (4u << 20)

/* Set by the first successful cg_select(). */
static const cg_ops *cg_chosen;

/*
 * /proc/self/mountinfo and /proc/self/cgroup as read once for one probe or
 * create: the kernel formats every mount on each read of mountinfo (tens of
 * microseconds), and a v1 probe needs it once per controller. Likewise the
 * directories of our own cgroup that a probe opened, for the create that
 * follows it in cg_create(). Outside a scope every call reads and opens
 * afresh; moving ourselves drops the cgroup text and those directories.
 */
static _Thread_local struct {
	unsigned depth;
	char *mountinfo;
	char *cgroup;
	int own[CG_SNAPSHOT_OWN_SLOTS]; /* valid while depth > 0 */
} cg_snap;

static void cg_snapshot_drop_own(void)
{
	for (size_t i = 0; i < CG_SNAPSHOT_OWN_SLOTS; i++)
		cg_snap.own[i] = safe_close(cg_snap.own[i]);
}

static void cg_snapshot_begin(void)
{
	if (cg_snap.depth++ == 0)
		for (size_t i = 0; i < CG_SNAPSHOT_OWN_SLOTS; i++)
			cg_snap.own[i] = -1;
}

static void cg_snapshot_end(void)
{
	if (--cg_snap.depth > 0)
		return;
	free(cg_snap.mountinfo);
	free(cg_snap.cgroup);
	cg_snap.mountinfo = cg_snap.cgroup = NULL;
	cg_snapshot_drop_own();
}

void cg_snapshot_own_keep(unsigned slot, int fd)
{
	if (cg_snap.depth == 0 || slot >= CG_SNAPSHOT_OWN_SLOTS || cg_snap.own[slot] >= 0)
		return;
	cg_snap.own[slot] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

int cg_snapshot_own_dup(unsigned slot)
{
	if (cg_snap.depth == 0 || slot >= CG_SNAPSHOT_OWN_SLOTS || cg_snap.own[slot] < 0)
		return -1;
	return fcntl(cg_snap.own[slot], F_DUPFD_CLOEXEC, 3);
}

/* path's text, from the snapshot when a scope is open. *ret_owned is
 * what the caller must free (NULL when the snapshot keeps it). */
static int cg_proc_text(const char *path, size_t max, char **slot, const char **ret,
			char **ret_owned)
{
	char *buf = NULL;
	int r;

	*ret_owned = NULL;
	if (cg_snap.depth > 0 && *slot) {
		*ret = *slot;
		return 0;
	}
	r = io_read_file_at(AT_FDCWD, path, max, &buf, NULL);
	if (r < 0)
		return r;
	if (cg_snap.depth > 0)
		*slot = buf;
	else
		*ret_owned = buf;
	*ret = buf;
	return 0;
}

/* Preference order: v2 first, the hierarchy the kernel develops. */
static const cg_ops *const cg_backends[] = {
    &cg_v2_ops,
    &cg_v1_ops,
};

int cg_parse_u64(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;
	size_t i;

	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == ' '))
		len--;
	if (len == 0)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v))
			return -ERANGE;
	}
	*ret = v;
	return 0;
}

int cg_read_keyed(int dirfd, const char *file, const char *key, uint64_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t klen = strlen(key);
	const char *line;
	int r;

	r = io_read_file_at(dirfd, file, CG_MAX_FILE_BYTES, &buf, NULL);
	if (r < 0)
		return r;
	for (line = buf; *line;) {
		const char *eol = strchrnul(line, '\n');

		if ((size_t)(eol - line) > klen && strncmp(line, key, klen) == 0 &&
		    line[klen] == ' ')
			return cg_parse_u64(line + klen + 1, (size_t)(eol - line) - klen - 1, ret);
		line = *eol ? eol + 1 : eol;
	}
	return -ENODATA;
}

int cg_read_u64(int dirfd, const char *file, uint64_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = io_read_file_at(dirfd, file, CG_MAX_FILE_BYTES, &buf, &len);
	if (r < 0)
		return r;
	return cg_parse_u64(buf, len, ret);
}

int cg_write_u64(int dirfd, const char *file, uint64_t v)
{
	char num[24];

	(void)snprintf(num, sizeof(num), "%" PRIu64, v);
	return io_write_file_at(dirfd, file, num);
}

bool cg_has_token(const char *list, const char *word)
{
	size_t wlen = strlen(word);
	const char *p = list;

	while (*p) {
		size_t n = strcspn(p, ", \n");

		if (n == wlen && strncmp(p, word, wlen) == 0)
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

int cg_self_path(const char *ctrl, char **ret_path)
{
	_cleanup_free_ char *owned = NULL;
	const char *buf, *line;
	int r;

	r = cg_proc_text("/proc/self/cgroup", CG_MAX_FILE_BYTES, &cg_snap.cgroup, &buf, &owned);
	if (r < 0)
		return r;
	/* "hierarchy-id:controller-list:path", see cgroups(7). */
	for (line = buf; *line;) {
		char *eol = strchrnul(line, '\n');
		const char *c1 = memchr(line, ':', (size_t)(eol - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;
		bool match;

		if (c2) {
			_cleanup_free_ char *ctrls = strndup(c1 + 1, (size_t)(c2 - c1 - 1));

			if (!ctrls)
				return -ENOMEM;
			if (ctrl)
				match = cg_has_token(ctrls, ctrl);
			else /* the v2 entry: id 0 and an empty controller list */
				match = c1 - line == 1 && line[0] == '0' && ctrls[0] == '\0';
			if (match) {
				char *path = strndup(c2 + 1, (size_t)(eol - c2 - 1));

				if (!path)
					return -ENOMEM;
				if (path[0] != '/') {
					free(path);
					return -EINVAL;
				}
				*ret_path = path;
				return 0;
			}
		}
		line = *eol ? eol + 1 : eol;
	}
	return -ENOENT;
}

int cg_open_below(int rootfd, const char *path, int *ret_fd)
{
	_cleanup_close_ int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	struct stat root_st;
	const char *p = path;
	unsigned depth = 0;

	if (fd < 0)
		return -errno;
	if (fstat(rootfd, &root_st) < 0)
		return -errno;
	for (;;) {
		char comp[CG_NAME_MAX + 1];
		size_t n;
		struct stat st;
		int next;

		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		n = strcspn(p, "/");
		if (n > CG_NAME_MAX)
			return -ENAMETOOLONG;
		if (++depth > CG_MAX_PATH_DEPTH)
			return -ELOOP;
		memcpy(comp, p, n);
		comp[n] = '\0';
		/* A path in our cgroup namespace that climbs out of it reads
		 * "/../.."; we never follow such a path. */
		if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0)
			return -EPERM;
		next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return -errno;
		(void)close(fd);
		fd = next;
		if (fstat(fd, &st) < 0)
			return -errno;
		if (st.st_dev != root_st.st_dev)
			return -EXDEV;
		p += n;
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int cg_mkdir_open(int parentfd, const char *name, cg_dir *d)
{
	if (mkdirat(parentfd, name, 0755) < 0)
		return -errno;
	d->created = true;
	d->dirfd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->dirfd < 0)
		return -errno;
	/* Held while the handle lives, and let go by the kernel when its
	 * supervisor dies: the sweep of stale cgroups leaves a locked one
	 * alone (cg_sweep_one), so that another start never removes a live
	 * sandbox's cgroup while it is empty after its end. */
	(void)flock(d->dirfd, LOCK_EX | LOCK_NB);
	return 0;
}

int cg_write_procs(int dirfd, pid_t pid)
{
	char num[24];

	if (pid < 0)
		return -EINVAL;
	(void)snprintf(num, sizeof(num), "%d", (int)pid);
	if (pid == getpid() || pid == 0) {
		free(cg_snap.cgroup);
		cg_snap.cgroup = NULL;
		if (cg_snap.depth > 0)
			cg_snapshot_drop_own();
	}
	return io_write_file_at(dirfd, "cgroup.procs", num);
}

/* Calls fn for each pid in cgroup.procs; stops at the first error. */
static int cg_procs_foreach(int dirfd, int (*fn)(pid_t pid, void *userdata), void *userdata)
{
	_cleanup_free_ char *buf = NULL;
	const char *line;
	int r;

	r = io_read_file_at(dirfd, "cgroup.procs", CG_MAX_FILE_BYTES, &buf, NULL);
	if (r < 0)
		return r;
	for (line = buf; *line;) {
		const char *eol = strchrnul(line, '\n');
		uint64_t v;

		if (eol > line) {
			r = cg_parse_u64(line, (size_t)(eol - line), &v);
			if (r < 0)
				return r;
			if (v == 0 || v > INT32_MAX)
				return -EINVAL;
			r = fn((pid_t)v, userdata);
			if (r < 0)
				return r;
		}
		line = *eol ? eol + 1 : eol;
	}
	return 0;
}

typedef struct cg_kill_batch {
	pid_t pid[CG_KILL_BATCH];
	int pidfd[CG_KILL_BATCH];
	bool listed[CG_KILL_BATCH];
	size_t n;
	size_t seen;
} cg_kill_batch;

static int cg_pin_one(pid_t pid, void *userdata)
{
	cg_kill_batch *b = userdata;
	int fd;

	b->seen++;
	if (b->n >= CG_KILL_BATCH)
		return 0; /* the caller runs another pass */
	fd = sys_pidfd_open(pid, 0);
	if (fd < 0) {
		if (errno == ESRCH)
			return 0; /* already gone */
		return -errno;
	}
	b->pid[b->n] = pid;
	b->pidfd[b->n] = fd;
	b->listed[b->n] = false;
	b->n++;
	return 0;
}

static int cg_mark_listed(pid_t pid, void *userdata)
{
	cg_kill_batch *b = userdata;
	size_t i;

	for (i = 0; i < b->n; i++)
		if (b->pid[i] == pid)
			b->listed[i] = true;
	return 0;
}

int cg_procs_kill(int dirfd, size_t *ret_seen)
{
	/* Reading a pid and signalling it later races pid reuse: the process
	 * may exit and its number go to an unrelated host process. A pidfd
	 * pins the number (pidfd_open(2)), so a pid still listed in
	 * cgroup.procs after we hold its pidfd is the process we mean. */
	cg_kill_batch *b = calloc(1, sizeof(*b));
	size_t i;
	int r;

	if (!b)
		return -ENOMEM;
	r = cg_procs_foreach(dirfd, cg_pin_one, b);
	if (r >= 0)
		r = cg_procs_foreach(dirfd, cg_mark_listed, b);
	for (i = 0; i < b->n; i++) {
		if (r >= 0 && b->listed[i] && sys_pidfd_send_signal(b->pidfd[i], SIGKILL) < 0 &&
		    errno != ESRCH)
			r = -errno;
		(void)close(b->pidfd[i]);
	}
	if (r >= 0)
		*ret_seen = b->seen;
	free(b);
	return r < 0 ? r : 0;
}

void cg_poll_sleep(void)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)CG_POLL_STEP_MS * 1000000L};

	(void)nanosleep(&ts, NULL);
}

int cg_mount_of(int fd, char **ret_root, char **ret_super_opts)
{
	_cleanup_free_ char *owned = NULL;
	struct stat st;
	const char *buf, *line;
	int r;

	if (fstat(fd, &st) < 0)
		return -errno;
	r = cg_proc_text("/proc/self/mountinfo", CG_MOUNTINFO_MAX_BYTES, &cg_snap.mountinfo, &buf,
			 &owned);
	if (r < 0)
		return r;
	/* proc(5): "id parent major:minor root mountpoint opts [optional...] -
	 * fstype source super-opts". The last matching line wins: it is the
	 * mount on top. */
	_cleanup_free_ char *root = NULL, *sopts = NULL;
	for (line = buf; *line;) {
		char *eol = strchrnul(line, '\n');
		_cleanup_free_ char *l = strndup(line, (size_t)(eol - line));
		char *save = NULL, *tok, *f_root = NULL, *f_sopts = NULL;
		unsigned maj = 0, min = 0;
		int field = 0;
		bool after_dash = false, devmatch = false;
		int post = 0;

		if (!l)
			return -ENOMEM;
		for (tok = strtok_r(l, " ", &save); tok;
		     tok = strtok_r(NULL, " ", &save), field++) {
			if (field == 2)
				devmatch = sscanf(tok, "%u:%u", &maj, &min) == 2 &&
					   makedev(maj, min) == st.st_dev;
			else if (field == 3)
				f_root = tok;
			else if (field >= 6 && !after_dash && strcmp(tok, "-") == 0)
				after_dash = true;
			else if (after_dash && ++post == 3)
				f_sopts = tok;
		}
		if (devmatch && f_root && f_sopts) {
			free(root);
			free(sopts);
			root = strdup(f_root);
			sopts = strdup(f_sopts);
			if (!root || !sopts)
				return -ENOMEM;
		}
		line = *eol ? eol + 1 : eol;
	}
	if (!root)
		return -ENOENT;
	*ret_root = TAKE_PTR(root);
	*ret_super_opts = TAKE_PTR(sopts);
	return 0;
}

int cg_strip_mount_root(const char *mount_root, const char *path, const char **ret)
{
	size_t n = strlen(mount_root);

	if (strcmp(mount_root, "/") == 0) {
		*ret = path;
		return 0;
	}
	/* The hierarchy is bind-mounted from a subtree (a container without a
	 * cgroup namespace): our path must lie inside that subtree. */
	if (strncmp(path, mount_root, n) != 0 || (path[n] != '/' && path[n] != '\0'))
		return -ENOENT;
	*ret = path[n] ? path + n : "/";
	return 0;
}

/* Calls fn for every child cgroup directory of dirfd (names never start
 * with a dot; interface files are not directories). */
static int cg_foreach_child(int dirfd, int (*fn)(int parentfd, const char *name, void *ud),
			    void *ud)
{
	int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	DIR *dir;
	struct dirent *de;
	int r = 0;

	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		r = -errno;
		(void)close(fd);
		return r;
	}
	rewinddir(dir);
	while ((de = readdir(dir))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		r = fn(dirfd, de->d_name, ud);
		if (r < 0)
			break;
	}
	closedir(dir);
	return r;
}

typedef struct cg_tree_walk {
	size_t *seen;
	unsigned depth;
} cg_tree_walk;

static int cg_tree_kill_at(int dirfd, unsigned depth, size_t *seen);

static int cg_tree_kill_one(int parentfd, const char *name, void *ud)
{
	const cg_tree_walk *w = ud;
	_cleanup_close_ int fd =
	    openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (w->depth >= CG_MAX_NEST)
		return -ELOOP;
	return cg_tree_kill_at(fd, w->depth + 1, w->seen);
}

static int cg_tree_kill_at(int dirfd, unsigned depth, size_t *seen)
{
	cg_tree_walk w = {.seen = seen, .depth = depth};
	size_t n = 0;
	int r = cg_procs_kill(dirfd, &n);

	if (r < 0)
		return r;
	*seen += n;
	return cg_foreach_child(dirfd, cg_tree_kill_one, &w);
}

int cg_tree_kill(int dirfd, size_t *ret_seen)
{
	return cg_tree_kill_at(dirfd, 0, ret_seen);
}

static int cg_tree_rmdir_one(int parentfd, const char *name, void *ud)
{
	unsigned *depth = ud;
	_cleanup_close_ int fd =
	    openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

	if (fd >= 0 && *depth < CG_MAX_NEST) {
		(*depth)++;
		(void)cg_foreach_child(fd, cg_tree_rmdir_one, depth);
		(*depth)--;
	}
	(void)unlinkat(parentfd, name, AT_REMOVEDIR);
	return 0;
}

void cg_tree_rmdir_children(int dirfd)
{
	unsigned depth = 0;

	(void)cg_foreach_child(dirfd, cg_tree_rmdir_one, &depth);
}

/* 1 if a process is in dirfd or any cgroup below it, 0 if none. */
static int cg_tree_populated_at(int dirfd, unsigned depth);

static int cg_tree_populated_one(int parentfd, const char *name, void *ud)
{
	const unsigned *depth = ud;
	_cleanup_close_ int fd =
	    openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	int r;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	r = *depth >= CG_MAX_NEST ? -ELOOP : cg_tree_populated_at(fd, *depth + 1);
	/* Stops the walk at the first process found. */
	return r == 0 ? 0 : (r > 0 ? -EEXIST : r);
}

static int cg_tree_populated_at(int dirfd, unsigned depth)
{
	_cleanup_free_ char *procs = NULL;
	int r;

	r = io_read_file_at(dirfd, "cgroup.procs", CG_MAX_FILE_BYTES, &procs, NULL);
	if (r < 0)
		return r;
	if (procs[strspn(procs, "\n")] != '\0')
		return 1;
	r = cg_foreach_child(dirfd, cg_tree_populated_one, &depth);
	return r == -EEXIST ? 1 : r;
}

typedef struct cg_sweep {
	const char *prefix;
	const char *own;
	time_t now;
	unsigned removed;
} cg_sweep;

static int cg_sweep_one(int parentfd, const char *name, void *ud)
{
	cg_sweep *sw = ud;
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (strncmp(name, sw->prefix, strlen(sw->prefix)) != 0 || strcmp(name, sw->own) == 0)
		return 0;
	fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0 || sw->now - st.st_mtime < (time_t)CG_STALE_S)
		return 0;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return 0; /* its supervisor lives (cg_mkdir_open) */
	if (cg_tree_populated_at(fd, 0) != 0)
		return 0; /* in use, or unreadable: not ours to judge */
	cg_tree_rmdir_children(fd);
	if (unlinkat(parentfd, name, AT_REMOVEDIR) == 0)
		sw->removed++;
	return 0;
}

unsigned cg_sweep_stale(const cg_handle *h, const char *prefix)
{
	cg_sweep sw = {.prefix = prefix, .own = h ? h->name : NULL, .now = time(NULL)};
	size_t i;

	if (!h || !prefix || !prefix[0])
		return 0;
	if (h->ops->own_dirs) {
		int fds[_CG_V1_CTRL_MAX];
		size_t n;

		/* One read of mountinfo and of our cgroup for all hierarchies,
		 * not one per hierarchy: this runs at every start. */
		cg_snapshot_begin();
		n = h->ops->own_dirs(fds, ELEMENTSOF(fds));
		cg_snapshot_end();

		for (i = 0; i < n; i++)
			(void)cg_foreach_child(fds[i], cg_sweep_one, &sw);
		cg_close_all(fds, n);
		return sw.removed;
	}
	for (i = 0; i < ELEMENTSOF(h->dirs); i++)
		if (h->dirs[i].parentfd >= 0)
			(void)cg_foreach_child(h->dirs[i].parentfd, cg_sweep_one, &sw);
	return sw.removed;
}

void cg_dirs_release(cg_handle *h)
{
	size_t i;

	h->leaffd = safe_close(h->leaffd);
	h->freezer.dirfd = safe_close(h->freezer.dirfd);
	if (h->freezer.created && h->freezer.parentfd >= 0 && h->name)
		(void)unlinkat(h->freezer.parentfd, h->name, AT_REMOVEDIR);
	h->freezer.created = false;
	h->freezer.parentfd = safe_close(h->freezer.parentfd);
	for (i = 0; i < ELEMENTSOF(h->dirs); i++) {
		cg_dir *d = &h->dirs[i];

		/* A sub-sandbox's cgroup nested in ours was left by a
		 * supervisor that was killed: ours cannot go before it. */
		if (d->created && d->dirfd >= 0)
			cg_tree_rmdir_children(d->dirfd);
		d->dirfd = safe_close(d->dirfd);
		if (d->created && d->parentfd >= 0 && h->name)
			(void)unlinkat(d->parentfd, h->name, AT_REMOVEDIR);
		d->created = false;
		d->parentfd = safe_close(d->parentfd);
	}
}

static void cg_append(char *buf, size_t len, const char *s)
{
	size_t used = strnlen(buf, len);

	if (used + 1 < len)
		(void)snprintf(buf + used, len - used, "%s", s);
}

/* Picks the first usable backend; reason tells why, both on success and
 * on failure (then it lists why each backend was refused). */
static int cg_select(const cg_ops **ret_ops, char *reason, size_t reason_len)
{
	char why[512];
	size_t i;
	int r = -ENOENT;

	if (reason_len > 0)
		reason[0] = '\0';
	cg_snapshot_begin();
	for (i = 0; i < ELEMENTSOF(cg_backends); i++) {
		why[0] = '\0';
		r = cg_backends[i]->probe(why, sizeof(why));
		if (r >= 0) {
			if (reason_len > 0) {
				/* Keep why the preferred backends were refused,
				 * after the choice. */
				char refused[512];

				(void)snprintf(refused, sizeof(refused), "%s", reason);
				reason[0] = '\0';
				cg_append(reason, reason_len, why);
				if (refused[0]) {
					cg_append(reason, reason_len, " (not ");
					cg_append(reason, reason_len, refused);
					cg_append(reason, reason_len, ")");
				}
			}
			*ret_ops = cg_backends[i];
			__atomic_store_n(&cg_chosen, cg_backends[i], __ATOMIC_RELEASE);
			cg_snapshot_end();
			return 0;
		}
		if (reason_len > 0) {
			if (reason[0])
				cg_append(reason, reason_len, "; ");
			cg_append(reason, reason_len, why);
		}
	}
	cg_snapshot_end();
	return r;
}

bool cg_clone_into_expected(void)
{
	struct statfs sfs;

	return statfs(CG_ROOT, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC;
}

int cg_detect(cg_version *ret_version, char *reason, size_t reason_len)
{
	const cg_ops *ops = NULL;
	int r;

	r = cg_select(&ops, reason, reason_len);
	if (r < 0)
		return r;
	*ret_version = ops->version;
	return 0;
}

static bool cg_name_valid(const char *name)
{
	size_t n = strlen(name), i;

	/* A plain directory name that cannot collide with the interface
	 * files ("cgroup.procs", "memory.max"...) which all contain a dot
	 * after a controller name: we forbid dots except inside. */
	if (n == 0 || n > CG_NAME_MAX || name[0] == '.')
		return false;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_'))
			return false;
	}
	return true;
}

static cg_handle *cg_handle_new(const char *name)
{
	cg_handle *h = calloc(1, sizeof(*h));
	size_t i;

	if (!h)
		return NULL;
	for (i = 0; i < ELEMENTSOF(h->dirs); i++) {
		h->dirs[i].parentfd = -1;
		h->dirs[i].dirfd = -1;
		h->alias[i] = -1;
	}
	h->leaffd = -1;
	h->freezer.parentfd = h->freezer.dirfd = -1;
	h->name = strdup(name);
	if (!h->name) {
		free(h);
		return NULL;
	}
	return h;
}

static void cg_handle_free(cg_handle *h)
{
	cg_dirs_release(h);
	free(h->name);
	free(h);
}

int cg_create(const sc_plan *plan, const char *name, cg_handle **ret)
{
	const cg_ops *ops = NULL;
	cg_handle *h;
	int r;

	if (!plan || !name || !ret)
		return -EINVAL;
	if (!cg_name_valid(name))
		return -EINVAL;
	/* The backend is chosen once per process (docs/cgroups.md): the
	 * hierarchy a kernel offers does not change under a running
	 * supervisor. Racing first calls both pick the same table. */
	cg_snapshot_begin();
	ops = __atomic_load_n(&cg_chosen, __ATOMIC_ACQUIRE);
	r = ops ? 0 : cg_select(&ops, NULL, 0);
	if (r < 0) {
		cg_snapshot_end();
		return r;
	}
	h = cg_handle_new(name);
	if (!h) {
		cg_snapshot_end();
		return -ENOMEM;
	}
	h->ops = ops;
	r = ops->create(h, plan);
	cg_snapshot_end();
	if (r < 0) {
		cg_handle_free(h);
		return r;
	}
	*ret = h;
	return 0;
}

int cg_clone_fd(const cg_handle *h)
{
	if (!h)
		return -1;
	return h->ops->clone_fd(h);
}

int cg_attach(cg_handle *h, pid_t pid)
{
	if (!h || pid <= 0)
		return -EINVAL;
	return h->ops->attach(h, pid);
}

int cg_attach_delegate(cg_handle *h, unsigned slot, pid_t pid)
{
	if (!h || pid <= 0)
		return -EINVAL;
	return h->ops->delegate(h, slot, pid);
}

void cg_release_delegate(cg_handle *h, unsigned slot)
{
	if (h)
		h->ops->undelegate(h, slot);
}

int cg_entry_fds(const cg_handle *h, int *fds, size_t max)
{
	if (!h || !fds)
		return -EINVAL;
	return h->ops->entry_fds(h, fds, max);
}

void cg_close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		(void)close(fds[i]);
}

int cg_read_stats(cg_handle *h, cg_stats *ret)
{
	if (!h || !ret)
		return -EINVAL;
	*ret = (cg_stats){
	    .cpu_usage_ns = UINT64_MAX,
	    .throttled_ns = UINT64_MAX,
	    .nr_throttled = UINT64_MAX,
	    .memory_peak = UINT64_MAX,
	    .oom_kills = UINT64_MAX,
	    .memory_max_hits = UINT64_MAX,
	    .pids_max_hits = UINT64_MAX,
	    .memory_current = UINT64_MAX,
	    .pids_current = UINT64_MAX,
	};
	return h->ops->read_stats(h, ret);
}

int cg_freeze(cg_handle *h, bool frozen)
{
	int r;

	if (!h)
		return -EINVAL;
	if (!h->ops->freeze)
		return -EOPNOTSUPP;
	r = h->ops->freeze(h, frozen);
	if (r >= 0)
		h->frozen = frozen;
	return r;
}

/* What is frozen cannot die: thawed before it is killed. */
static void thaw_for_kill(cg_handle *h)
{
	if (h->frozen && h->ops->freeze(h, false) >= 0)
		h->frozen = false;
}

int cg_kill_all(cg_handle *h)
{
	if (!h)
		return -EINVAL;
	thaw_for_kill(h);
	return h->ops->kill_all(h);
}

cg_handle *cg_destroy(cg_handle *h)
{
	if (!h)
		return NULL;
	/* kill_all returns once the cgroup is empty (or after
	 * CG_DESTROY_WAIT_MS): rmdir fails with EBUSY while any process is
	 * left, and then the directory stays rather than blocking us. */
	thaw_for_kill(h);
	(void)h->ops->kill_all(h);
	cg_handle_free(h);
	return NULL;
}

cg_version cg_handle_version(const cg_handle *h)
{
	if (!h)
		return _CG_VERSION_INVALID;
	return h->ops->version;
}

int cg_cpu_quota(uint64_t cpu_millis, uint64_t *ret_quota_us, uint64_t *ret_period_us)
{
	uint64_t quota, period = CG_CPU_PERIOD_US;

	if (cpu_millis == 0)
		return -EINVAL;
	/* quota/period = cpu_millis/1000 */
	if (__builtin_mul_overflow(cpu_millis, (uint64_t)(CG_CPU_PERIOD_US / 1000u), &quota))
		return -ERANGE;
	if (quota < CG_CPU_MIN_QUOTA_US) {
		period = CG_CPU_MAX_PERIOD_US;
		quota = cpu_millis * (CG_CPU_MAX_PERIOD_US / 1000u); /* < 1000 * 1000 */
	}
	*ret_quota_us = quota;
	*ret_period_us = period;
	return 0;
}
