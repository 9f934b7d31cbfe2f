/* SPDX-License-Identifier: MIT */
/*
 * fs.write events for the agent's rw grants (fswatch.h has the contract).
 *
 * fanotify. The grant mounts live in the sandbox's private mount namespace,
 * and directory-entry events (create, delete, move) cannot be asked of a
 * FAN_MARK_MOUNT mark (fanotify_mark(2): they need file handles), so the
 * supervisor, host root in the host namespaces, puts a FAN_MARK_FILESYSTEM
 * mark on the filesystem of each rw grant with FAN_REPORT_DFID_NAME: every
 * event names its parent directory by file handle plus the entry's name. A
 * filesystem mark sees the whole filesystem, so each event is filtered:
 *   1. by process: the event's pid (a host pid: we read in the host pid
 *      namespace) must belong to the sandbox, i.e. its fsuid is one of the
 *      sandbox's host ids (ns_host_id_base(getpid()) and the NS_HOST_IDS
 *      after it, see src/ns/ns.h); our own pid is always dropped;
 *   2. by place: the directory handle is opened with open_by_handle_at()
 *      against an O_PATH fd of the grant and its host path read back from
 *      /proc/self/fd; the entry must lie in a rw grant's host subtree.
 * Residual limits (docs/audit.md says the same):
 *   - a process that has exited before we read its event can no longer be
 *     identified; its event is kept when it lies in a grant, so a short-lived
 *     host process writing into a grant during the run is attributed to the
 *     sandbox (a living one is not). A pid reused within the run may be
 *     judged by its former owner (verdicts are cached per pid).
 *   - entries of a directory deleted or moved before we read their events
 *     cannot be placed (the handle no longer opens) and are not reported;
 *     the directory's own deletion or move is.
 *   - a directory handle is turned into a path when the event is read: an
 *     entry of a directory renamed in between is reported under the new name.
 *   - the kernel merges events on the same name from the same process that
 *     are still queued; a merged mask is reported in the order create,
 *     rename_to, modify, attrib, rename_from, delete.
 *   - other filesystems mounted inside a grant (they are cloned with it) are
 *     marked too, up to FW_MAX_SUBMOUNTS; those that cannot be marked are
 *     counted in the mode string ("N submounts not watched").
 *   - when two rw grants nest on the host, a write is reported under the
 *     innermost one.
 * The queue has the kernel's default bound; an overflow is reported as one
 * "truncated" record.
 *
 * listing. When fanotify cannot watch a grant (no fanotify, no file handles
 * on that filesystem, forced with SANDCAP_FSWATCH=listing), the grant is
 * walked before the run and after it, without following symlinks and within
 * FW_LIST_MAX_DEPTH and FW_LIST_MAX_ENTRIES; the difference gives create,
 * modify (size or mtime), attrib (mode, owner, ctime), delete, and
 * rename_from/rename_to when an inode left one name and appeared under
 * another. The after-walk runs on a tree the agent controlled: as root, but
 * through openat(O_NOFOLLOW) and fstatat(AT_SYMLINK_NOFOLLOW) only.
 */
#include "audit/fswatch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/cleanup.h"
#include "base/pages.h"
#include "base/path.h"
#include "compat/syscalls.h"
#include "ns/ns.h"

#define FW_READ_BYTES	  65536u /* one read() of the fanotify fd */
#define FW_READS_PER_CALL 8u	 /* reads per fw_handle(): keeps the loop responsive */
#define FW_DRAIN_READS	  4096u	 /* reads in fw_finish(): host noise cannot hold us */
#define FW_HANDLE_MAX	  128u	 /* MAX_HANDLE_SZ */
#define FW_DIR_CACHE	  128u	 /* resolved directory handles */
#define FW_PID_CACHE	  64u	 /* pids already judged */
#define FW_COALESCE_SLOTS 256u	 /* recently reported modify/attrib paths */
#define FW_MAX_SUBMOUNTS  64u	 /* other filesystems mounted inside rw grants */
#define FW_MARK_MASK                                                                               \
	(FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_MODIFY | FAN_ATTRIB |       \
	 FAN_ONDIR)

typedef struct fw_entry {
	char *rel; /* relative to the grant; "" for the grant itself */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
} fw_entry;

typedef struct fw_list {
	fw_entry *e;
	size_t n, cap;
	bool truncated;
} fw_list;

typedef struct fw_grant {
	const plan_grant *g;
	int fd; /* the grant's host path, opened read-only */
	bool fanotify;
	fsid_t fsid;
	fw_list before;
} fw_grant;

/* A filesystem mounted inside a rw grant (the grant tree is cloned with its
 * submounts, so the agent writes there too). */
typedef struct fw_sub {
	fsid_t fsid;
	int fd;
} fw_sub;

typedef struct fw_dir {
	uint64_t used; /* 0: free slot */
	fsid_t fsid;
	int type;
	unsigned len;
	unsigned char handle[FW_HANDLE_MAX];
	char *host; /* host path of the directory, NULL when it could not be opened */
} fw_dir;

typedef enum fw_who {
	FW_HOST,    /* a host process: not reported */
	FW_SANDBOX, /* alive, and runs as one of the sandbox's host ids */
	FW_GONE,    /* exited before we looked: judged by place alone */
} fw_who;

typedef struct fw_pid {
	pid_t pid;
	fw_who who;
} fw_pid;

typedef struct fw_recent {
	uint64_t t;
	const char *op; /* static */
	char *path;
	int mode; /* the mode its last record carried, -1 none */
} fw_recent;

struct fw_watch {
	fw_grant *grants; /* the rw grants */
	size_t n_grants;
	int fan;
	uid_t id_base;
	pid_t self;
	char mode[256];
	uint64_t emitted, dropped, unplaced, tick, listed;
	/* distinct paths reported, as 64-bit hashes (0 = free): every one took
	 * a record, so FW_MAX_EVENTS of them at most */
	uint64_t paths[2 * FW_MAX_EVENTS];
	uint64_t n_paths;
	bool overflowed;
	uint64_t fsize, tmp_size; /* the plan's limits.fsize and fs.tmp size */
	int tmp;		  /* the sandbox's /tmp (fw_watch_tmp), or -1 */
	fsid_t tmp_fsid;
	bool fsize_hit, tmp_full; /* each limit.hit is emitted once */
	pthread_t closer;	  /* closes the group meanwhile; joined by fw_free() */
	bool closing;
	char *buf; /* FW_READ_BYTES, 8-byte aligned */
	fw_dir dirs[FW_DIR_CACHE];
	fw_pid pids[FW_PID_CACHE];
	size_t next_pid;
	fw_recent recent[FW_COALESCE_SLOTS];
	size_t next_recent;
	fw_sub subs[FW_MAX_SUBMOUNTS];
	size_t n_subs;
	unsigned subs_unwatched;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static bool fsid_eq(const fsid_t *a, const void *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

/* "dir" + "/" + "name" without doubling the slash at "/"; NULL on ENOMEM. */
static char *path_join(const char *dir, const char *name)
{
	char *p = NULL;

	if (!name || !name[0])
		return strdup(dir);
	if (!dir[0])
		return strdup(name);
	if (asprintf(&p, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", name) < 0)
		return NULL;
	return p;
}

/* FNV-1a: only to count distinct paths; a collision under-counts by one. */
static void count_path(fw_watch *w, const char *path)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (; *path; path++)
		h = (h ^ (unsigned char)*path) * 0x100000001b3ULL;
	h = h ? h : 1;
	for (i = h % ELEMENTSOF(w->paths); w->paths[i]; i = (i + 1) % ELEMENTSOF(w->paths))
		if (w->paths[i] == h)
			return;
	w->paths[i] = h;
	w->n_paths++;
}

/* The permission bits and S_ISUID/S_ISGID/S_ISVTX of rel in the grant now,
 * -1 when it is gone. Looked up beneath the grant: the agent may have put a
 * symlink where a directory was. */
static int rel_mode(const fw_grant *g, const char *rel)
{
	struct sc_open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
				  .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (g->fd < 0)
		return -1;
	if (!rel[0])
		return fstat(g->fd, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
	fd = sys_openat2(g->fd, rel, &how);
	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	return (int)(st.st_mode & 07777);
}

static json_t *mode_json(int mode)
{
	char octal[16];

	if (mode < 0)
		return json_null();
	(void)snprintf(octal, sizeof(octal), "%04o", (unsigned)mode);
	return json_string(octal);
}

static void emit(fw_watch *w, sf_event_cb cb, void *ud, const fw_grant *g, const char *rel,
		 const char *op, bool is_dir)
{
	_cleanup_free_ char *inside = NULL, *host = NULL;
	bool gone = strcmp(op, "delete") == 0 || strcmp(op, "rename_from") == 0;
	json_t *data;

	if (w->emitted >= FW_MAX_EVENTS) {
		w->dropped++;
		return;
	}
	inside = path_join(g->g->at, rel);
	host = path_join(g->g->path, rel);
	if (!inside || !host) {
		w->dropped++;
		return;
	}
	/* Names come from the agent: au_str keeps the record valid UTF-8. */
	/* The mode it has as the record is written: a file's last record
	 * carries its final mode (coalesce keeps a record whose mode moved). */
	data = json_pack("{s:o, s:o, s:s, s:s, s:o}", "path",
			 au_str(inside, strlen(inside), AU_STR_MAX_BYTES), "host_path",
			 au_str(host, strlen(host), AU_STR_MAX_BYTES), "op", op, "type",
			 is_dir ? "dir" : "file", "mode", mode_json(gone ? -1 : rel_mode(g, rel)));
	if (!data) {
		w->dropped++;
		return;
	}
	w->emitted++;
	count_path(w, inside);
	cb("fs.write", data, ud);
}

/* modify and attrib repeat as fast as a loop can write: one per path per
 * FW_COALESCE_NS. True when this one should be left out. */
static bool coalesce(fw_watch *w, const fw_grant *g, const char *rel, const char *op)
{
	uint64_t now = mono_ns();
	int mode = rel_mode(g, rel);
	_cleanup_free_ char *key = path_join(g->g->at, rel);
	fw_recent *slot;

	if (!key)
		return false;
	for (size_t i = 0; i < FW_COALESCE_SLOTS; i++) {
		fw_recent *r = &w->recent[i];

		if (r->path && strcmp(r->op, op) == 0 && strcmp(r->path, key) == 0) {
			/* a changed mode is recorded: it may be the last change */
			if (now - r->t < FW_COALESCE_NS && r->mode == mode)
				return true;
			r->t = now;
			r->mode = mode;
			return false;
		}
	}
	slot = &w->recent[w->next_recent];
	w->next_recent = (w->next_recent + 1) % FW_COALESCE_SLOTS;
	free(slot->path);
	*slot = (fw_recent){.t = now, .op = op, .path = TAKE_PTR(key), .mode = mode};
	return false;
}

/* Any other op on a path ends its coalescing window: a file deleted and
 * created again is a new file, whose first modify is reported. */
static void forget(fw_watch *w, const fw_grant *g, const char *rel)
{
	_cleanup_free_ char *key = path_join(g->g->at, rel);

	for (size_t i = 0; key && i < FW_COALESCE_SLOTS; i++)
		if (w->recent[i].path && strcmp(w->recent[i].path, key) == 0) {
			free(w->recent[i].path);
			w->recent[i].path = NULL;
		}
}

static void emit_op(fw_watch *w, sf_event_cb cb, void *ud, const fw_grant *g, const char *rel,
		    const char *op, bool is_dir)
{
	if (strcmp(op, "modify") == 0 || strcmp(op, "attrib") == 0) {
		if (coalesce(w, g, rel, op))
			return;
	} else {
		forget(w, g, rel);
	}
	emit(w, cb, ud, g, rel, op, is_dir);
}

static void emit_truncated(sf_event_cb cb, void *ud, const char *reason, uint64_t count)
{
	json_t *data = json_pack("{s:s, s:I, s:s}", "op", "truncated", "count", (json_int_t)count,
				 "reason", reason);

	if (data)
		cb("fs.write", data, ud);
}

/* ---- listing ---------------------------------------------------------- */

static void list_clear(fw_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].rel);
	free(l->e);
	*l = (fw_list){0};
}

static int list_add(fw_watch *w, fw_list *l, const char *rel, const struct stat *st)
{
	fw_entry *e;

	if (w->listed >= FW_LIST_MAX_ENTRIES) {
		l->truncated = true;
		return 0;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64, bytes;
		fw_entry *n;

		if (__builtin_mul_overflow(cap, sizeof(*l->e), &bytes))
			return -EOVERFLOW;
		n = realloc(l->e, bytes);
		if (!n)
			return -ENOMEM;
		l->e = n;
		l->cap = cap;
	}
	e = &l->e[l->n];
	*e = (fw_entry){.rel = strdup(rel),
			.mode = st->st_mode,
			.uid = st->st_uid,
			.gid = st->st_gid,
			.dev = st->st_dev,
			.ino = st->st_ino,
			.size = st->st_size,
			.mtime = st->st_mtim,
			.ctime = st->st_ctim};
	if (!e->rel)
		return -ENOMEM;
	l->n++;
	w->listed++;
	return 0;
}

/* dfd is an open directory (consumed); rel its path relative to the grant. */
static int walk_dir(fw_watch *w, fw_list *l, int dfd, const char *rel, unsigned depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int r = 0;

	if (!d) {
		(void)close(dfd);
		l->truncated = true; /* unreadable: what is inside is not listed */
		return 0;
	}
	while ((de = readdir(d))) {
		_cleanup_free_ char *child = NULL;
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		child = path_join(rel, de->d_name);
		if (!child) {
			r = -ENOMEM;
			break;
		}
		if (strlen(child) >= PATH_MAX) {
			l->truncated = true;
			continue;
		}
		r = list_add(w, l, child, &st);
		if (r < 0)
			break;
		if (l->truncated && w->listed >= FW_LIST_MAX_ENTRIES)
			break;
		if (S_ISDIR(st.st_mode)) {
			int cfd;

			if (depth + 1 >= FW_LIST_MAX_DEPTH) {
				l->truncated = true;
				continue;
			}
			cfd = openat(dirfd(d), de->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (cfd < 0)
				continue;
			r = walk_dir(w, l, cfd, child, depth + 1);
			if (r < 0)
				break;
		}
	}
	(void)closedir(d);
	return r;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const fw_entry *)a)->rel, ((const fw_entry *)b)->rel);
}

static int snapshot(fw_watch *w, const fw_grant *g, fw_list *ret)
{
	fw_list l = {0};
	struct stat st;
	int r;

	/* The grant itself, reopened by its fd: the agent may have replaced
	 * nothing above it, but its content is the agent's. */
	if (fstatat(g->fd, "", &st, AT_EMPTY_PATH) < 0)
		return -errno;
	r = list_add(w, &l, "", &st);
	if (r >= 0 && S_ISDIR(st.st_mode)) {
		int dfd = openat(g->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (dfd < 0)
			l.truncated = true;
		else
			r = walk_dir(w, &l, dfd, "", 0);
	}
	if (r < 0) {
		list_clear(&l);
		return r;
	}
	if (l.n > 1)
		qsort(l.e, l.n, sizeof(*l.e), entry_cmp);
	*ret = l;
	return 0;
}

static bool ts_ne(struct timespec a, struct timespec b)
{
	return a.tv_sec != b.tv_sec || a.tv_nsec != b.tv_nsec;
}

static int ino_cmp(const void *a, const void *b)
{
	const fw_entry *x = *(fw_entry *const *)a, *y = *(fw_entry *const *)b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

static int diff(fw_watch *w, sf_event_cb cb, void *ud, const fw_grant *g, const fw_list *a,
		const fw_list *b)
{
	_cleanup_free_ const fw_entry **gone = NULL, **born = NULL;
	_cleanup_free_ bool *born_used = NULL;
	size_t i = 0, j = 0, n_gone = 0, n_born = 0;

	gone = calloc(a->n + 1, sizeof(*gone));
	born = calloc(b->n + 1, sizeof(*born));
	born_used = calloc(b->n + 1, sizeof(*born_used));
	if (!gone || !born || !born_used)
		return -ENOMEM;
	while (i < a->n || j < b->n) {
		int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->e[i].rel, b->e[j].rel);

		if (c < 0) {
			gone[n_gone++] = &a->e[i++];
		} else if (c > 0) {
			born[n_born++] = &b->e[j++];
		} else {
			const fw_entry *x = &a->e[i++], *y = &b->e[j++];
			bool dir = S_ISDIR(y->mode);

			if ((x->mode & S_IFMT) != (y->mode & S_IFMT) || x->ino != y->ino ||
			    x->dev != y->dev) {
				/* replaced under the same name */
				gone[n_gone++] = x;
				born[n_born++] = y;
				continue;
			}
			/* A directory's size and times move with its entries,
			 * which are reported themselves. */
			if (!dir && (x->size != y->size || ts_ne(x->mtime, y->mtime)))
				emit_op(w, cb, ud, g, y->rel, "modify", false);
			else if (x->mode != y->mode || x->uid != y->uid || x->gid != y->gid ||
				 (!dir && ts_ne(x->ctime, y->ctime)))
				emit_op(w, cb, ud, g, y->rel, "attrib", dir);
		}
	}
	/* An inode that left one name and appeared under another was renamed. */
	if (n_born > 1)
		qsort(born, n_born, sizeof(*born), ino_cmp);
	for (i = 0; i < n_gone; i++) {
		const fw_entry *x = gone[i], **hit;

		hit = bsearch(&x, born, n_born, sizeof(*born), ino_cmp);
		/* bsearch may land on any of several equal keys: take the first free */
		while (hit && hit > born && ino_cmp(hit - 1, &x) == 0)
			hit--;
		while (hit && hit < born + n_born && ino_cmp(hit, &x) == 0 && born_used[hit - born])
			hit++;
		if (hit && hit < born + n_born && ino_cmp(hit, &x) == 0 &&
		    ((*hit)->mode & S_IFMT) == (x->mode & S_IFMT)) {
			born_used[hit - born] = true;
			emit(w, cb, ud, g, x->rel, "rename_from", S_ISDIR(x->mode));
			emit(w, cb, ud, g, (*hit)->rel, "rename_to", S_ISDIR(x->mode));
			if (!S_ISDIR(x->mode) &&
			    (x->size != (*hit)->size || ts_ne(x->mtime, (*hit)->mtime)))
				emit(w, cb, ud, g, (*hit)->rel, "modify", false);
			gone[i] = NULL;
		}
	}
	for (i = 0; i < n_born; i++)
		if (!born_used[i])
			emit(w, cb, ud, g, born[i]->rel, "create", S_ISDIR(born[i]->mode));
	for (i = 0; i < n_gone; i++)
		if (gone[i])
			emit(w, cb, ud, g, gone[i]->rel, "delete", S_ISDIR(gone[i]->mode));
	return 0;
}

/* ---- fanotify --------------------------------------------------------- */

int fw_proc_fsuid(pid_t pid, unsigned long *ret_fsuid)
{
	char path[64], line[256];
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f)) {
		unsigned long ruid, euid, suid;

		if (sscanf(line, "Uid: %lu %lu %lu %lu", &ruid, &euid, &suid, ret_fsuid) == 4)
			return 0;
	}
	return -ESRCH;
}

/* Whose event is it? The fsuid is what the kernel checked the write with. */
static fw_who pid_who(fw_watch *w, pid_t pid)
{
	unsigned long fsuid = 0;
	fw_who who;

	if (pid == w->self)
		return FW_HOST;
	for (size_t i = 0; i < FW_PID_CACHE; i++)
		if (w->pids[i].pid == pid && pid > 0)
			return w->pids[i].who;
	if (fw_proc_fsuid(pid, &fsuid) < 0)
		return FW_GONE;
	who = fsuid >= w->id_base && fsuid < (unsigned long)w->id_base + NS_HOST_IDS ? FW_SANDBOX
										     : FW_HOST;
	w->pids[w->next_pid] = (fw_pid){.pid = pid, .who = who};
	w->next_pid = (w->next_pid + 1) % FW_PID_CACHE;
	return who;
}

static void dirs_flush(fw_watch *w)
{
	for (size_t i = 0; i < FW_DIR_CACHE; i++) {
		free(w->dirs[i].host);
		w->dirs[i] = (fw_dir){0};
	}
}

/* Host path of the directory a file handle names, or NULL. Owned by the cache. */
static const char *dir_path(fw_watch *w, const void *fsid, const struct file_handle *fh)
{
	fw_dir *slot = &w->dirs[0];
	int mount_fd = -1, fd;

	for (size_t i = 0; i < FW_DIR_CACHE; i++) {
		fw_dir *d = &w->dirs[i];

		if (d->used && d->type == fh->handle_type && d->len == fh->handle_bytes &&
		    fsid_eq(&d->fsid, fsid) && memcmp(d->handle, fh->f_handle, d->len) == 0) {
			d->used = ++w->tick;
			return d->host;
		}
		if (d->used < slot->used)
			slot = d;
	}
	for (size_t i = 0; i < w->n_grants && mount_fd < 0; i++)
		if (w->grants[i].fanotify && fsid_eq(&w->grants[i].fsid, fsid))
			mount_fd = w->grants[i].fd;
	for (size_t i = 0; i < w->n_subs && mount_fd < 0; i++)
		if (fsid_eq(&w->subs[i].fsid, fsid))
			mount_fd = w->subs[i].fd;
	if (mount_fd < 0)
		return NULL; /* a filesystem we did not mark */
	free(slot->host);
	*slot = (fw_dir){.used = ++w->tick, .type = fh->handle_type, .len = fh->handle_bytes};
	memcpy(&slot->fsid, fsid, sizeof(slot->fsid));
	memcpy(slot->handle, fh->f_handle, fh->handle_bytes);
	/* The handle is opened against the grant's mount, so /proc/self/fd
	 * shows the directory's path as the host sees it. */
	fd = open_by_handle_at(mount_fd, (struct file_handle *)fh, O_PATH | O_CLOEXEC);
	if (fd >= 0) {
		char link[64], target[PATH_MAX];
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		(void)close(fd);
		if (n > 0) {
			target[n] = '\0';
			/* an unlinked directory reads back as "... (deleted)" */
			if (target[0] == '/' && !strstr(target, " (deleted)"))
				slot->host = strdup(target);
		}
	}
	return slot->host;
}

/* The innermost rw grant (watched by fanotify) holding host_path. */
static const fw_grant *grant_of(const fw_watch *w, const char *host, const char **ret_rel)
{
	const fw_grant *best = NULL;
	size_t best_len = 0;

	for (size_t i = 0; i < w->n_grants; i++) {
		const fw_grant *g = &w->grants[i];
		size_t n = strlen(g->g->path);

		if (!g->fanotify || n < best_len)
			continue;
		if (path_is_under(host, g->g->path)) {
			best = g;
			best_len = n;
		}
	}
	if (best)
		*ret_rel = host[best_len] == '/' ? host + best_len + 1 : host + best_len;
	return best;
}

/* limit.hit for limits.fsize: a file of the sandbox at the limit. The
 * kernel cuts a write that crosses RLIMIT_FSIZE at the limit and refuses the
 * next one (SIGXFSZ, EFBIG), so a file grows to exactly the limit only when
 * a write was cut there, or wrote exactly up to it. */
static void check_fsize(fw_watch *w, sf_event_cb cb, void *ud, const struct stat *st,
			const char *where)
{
	json_t *data;

	if (w->fsize_hit || w->fsize == PLAN_UNLIMITED || !S_ISREG(st->st_mode) ||
	    (uint64_t)st->st_size < w->fsize)
		return;
	data = json_pack("{s:s, s:I, s:o}", "limit", "fsize", "value", (json_int_t)w->fsize,
			 "detail", au_str(where, strlen(where), AU_STR_MAX_BYTES));
	if (!data)
		return;
	w->fsize_hit = true;
	cb("limit.hit", data, ud);
}

/* limit.hit for fs.tmp: the sandbox's tmpfs has no free block or inode
 * left, so the kernel refuses the next allocation in it (ENOSPC). */
static void check_tmp(fw_watch *w, sf_event_cb cb, void *ud)
{
	struct statfs sfs;
	json_t *data;
	bool blocks;

	if (w->tmp < 0 || w->tmp_full || fstatfs(w->tmp, &sfs) < 0)
		return;
	blocks = sfs.f_bavail == 0;
	if (!blocks && sfs.f_ffree != 0)
		return;
	data = json_pack("{s:s, s:I, s:s}", "limit", "tmp_full", "value", (json_int_t)w->tmp_size,
			 "detail",
			 blocks ? "/tmp is full: no free block left (ENOSPC)"
				: "/tmp is full: no free inode left (ENOSPC)");
	if (!data)
		return;
	w->tmp_full = true;
	cb("limit.hit", data, ud);
}

/* An event on the sandbox's /tmp: not an fs.write (it is gone at exit), but
 * it may have hit a limit. */
static void on_tmp_event(fw_watch *w, const struct file_handle *fh, const char *name,
			 sf_event_cb cb, void *ud)
{
	_cleanup_close_ int dfd = -1;
	struct stat st;

	check_tmp(w, cb, ud);
	if (w->fsize_hit || w->fsize == PLAN_UNLIMITED || !name[0])
		return;
	dfd = open_by_handle_at(w->tmp, (struct file_handle *)fh, O_PATH | O_CLOEXEC);
	if (dfd >= 0 && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		_cleanup_free_ char *where = NULL;

		if (asprintf(&where, "a file in /tmp reached limits.fsize: %s", name) >= 0)
			check_fsize(w, cb, ud, &st, where);
	}
}

/* m: an aligned copy of the record's metadata; rec: the record itself in the
 * read buffer. Records are only 4-byte aligned (names have any length), so
 * every structure is copied out before use. */
static void on_fan_event(fw_watch *w, const struct fanotify_event_metadata *m, const char *rec,
			 sf_event_cb cb, void *ud)
{
	static const struct {
		uint64_t bit;
		const char *op;
	} order[] = {
	    {FAN_CREATE, "create"}, {FAN_MOVED_TO, "rename_to"},     {FAN_MODIFY, "modify"},
	    {FAN_ATTRIB, "attrib"}, {FAN_MOVED_FROM, "rename_from"}, {FAN_DELETE, "delete"},
	};
	const char *p = rec + m->metadata_len, *end = rec + m->event_len, *info = NULL;
	struct fanotify_event_info_header h = {0};
	struct {
		struct file_handle fh;
		unsigned char bytes[FW_HANDLE_MAX];
	} handle;
	const size_t fixed = sizeof(struct fanotify_event_info_fid) + sizeof(struct file_handle);
	fsid_t fsid;
	const char *name = "", *dir, *rel;
	_cleanup_free_ char *host = NULL;
	const fw_grant *g;
	fw_who who;
	bool is_dir = m->mask & FAN_ONDIR;

	/* Find the directory record; every length is the kernel's, checked anyway. */
	while ((size_t)(end - p) >= sizeof(h)) {
		memcpy(&h, p, sizeof(h));
		if (h.len < sizeof(h) || h.len > (size_t)(end - p))
			return;
		if ((h.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME ||
		     h.info_type == FAN_EVENT_INFO_TYPE_DFID) &&
		    h.len >= fixed) {
			info = p;
			break;
		}
		p += h.len;
	}
	if (!info)
		return;
	memcpy(&fsid, info + offsetof(struct fanotify_event_info_fid, fsid), sizeof(fsid));
	memcpy(&handle.fh, info + sizeof(struct fanotify_event_info_fid), sizeof(handle.fh));
	if (handle.fh.handle_bytes > FW_HANDLE_MAX || fixed + handle.fh.handle_bytes > h.len)
		return;
	memcpy(handle.bytes, info + fixed, handle.fh.handle_bytes);
	if (h.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME) {
		size_t room = h.len - fixed - handle.fh.handle_bytes;

		name = info + fixed + handle.fh.handle_bytes;
		if (strnlen(name, room) == room)
			return; /* not terminated */
		if (strcmp(name, ".") == 0)
			name = "";
	}
	if (w->tmp >= 0 && fsid_eq(&w->tmp_fsid, &fsid)) {
		on_tmp_event(w, &handle.fh, name, cb, ud);
		return;
	}
	who = pid_who(w, m->pid);
	if (who == FW_HOST)
		goto out;
	dir = dir_path(w, &fsid, &handle.fh);
	host = dir ? path_join(dir, name) : NULL;
	g = host ? grant_of(w, host, &rel) : NULL;
	if (!g) {
		/* A write of a living sandbox process whose directory we cannot
		 * name (gone, or its path too long) may have been in a grant: it
		 * is counted. One we can name outside every grant went through
		 * an fd the sandbox was given (its stdout redirected to a file,
		 * say): not a write in a grant, and not a lost one either. */
		if (who == FW_SANDBOX && !host)
			w->unplaced++;
		goto out;
	}
	for (size_t i = 0; i < ELEMENTSOF(order); i++)
		if (m->mask & order[i].bit)
			emit_op(w, cb, ud, g, rel, order[i].op, is_dir);
	if ((m->mask & FAN_MODIFY) && !w->fsize_hit && w->fsize != PLAN_UNLIMITED) {
		struct stat st;

		if (lstat(host, &st) == 0) {
			_cleanup_free_ char *where = NULL;

			if (asprintf(&where, "a file reached limits.fsize: %s%s%s", g->g->at,
				     rel[0] ? "/" : "", rel) >= 0)
				check_fsize(w, cb, ud, &st, where);
		}
	}
out:
	/* A moved or deleted directory changes the paths cached under it. */
	if (is_dir && (m->mask & (FAN_MOVED_FROM | FAN_MOVED_TO | FAN_DELETE)))
		dirs_flush(w);
}

/* Reads at most max_reads batches; 1 when the queue may hold more. */
static int drain(fw_watch *w, sf_event_cb cb, void *ud, unsigned max_reads)
{
	for (unsigned i = 0; i < max_reads; i++) {
		ssize_t n = read(w->fan, w->buf, FW_READ_BYTES);
		size_t off = 0;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		if (n == 0)
			return 0;
		/* FAN_EVENT_OK/FAN_EVENT_NEXT, on an aligned copy of each record */
		while ((size_t)n - off >= FAN_EVENT_METADATA_LEN) {
			struct fanotify_event_metadata m;

			memcpy(&m, w->buf + off, sizeof(m));
			if (m.event_len < FAN_EVENT_METADATA_LEN || m.event_len > (size_t)n - off ||
			    m.metadata_len < FAN_EVENT_METADATA_LEN || m.metadata_len > m.event_len)
				return -EPROTO;
			if (m.vers != FANOTIFY_METADATA_VERSION)
				return -EPROTO;
			if (m.fd >= 0)
				(void)close(m.fd); /* not in FID mode; be safe */
			if (m.mask & FAN_Q_OVERFLOW)
				w->overflowed = true;
			else
				on_fan_event(w, &m, w->buf + off, cb, ud);
			off += m.event_len;
		}
	}
	return 1;
}

/* ---- setup ------------------------------------------------------------ */

static const char *why(int err)
{
	switch (err) {
	case ENOSYS:
		return "fanotify not in this kernel";
	case EPERM:
		return "fanotify not permitted: filesystem marks need CAP_SYS_ADMIN";
	case EINVAL:
		return "fanotify lacks FAN_REPORT_DFID_NAME";
	case ENODEV:
	case EOPNOTSUPP:
		return "filesystem without file handles";
	case EXDEV:
		return "subvolume with its own fsid";
	default:
		return "fanotify mark failed";
	}
}

static int setup_fanotify(fw_watch *w, fw_grant *g, int *reterr)
{
	struct statfs sfs;

	if (w->fan < 0) {
		w->fan = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK |
					   FAN_REPORT_DFID_NAME,
				       O_RDONLY | O_CLOEXEC | O_LARGEFILE);
		if (w->fan < 0) {
			*reterr = errno;
			return -1;
		}
	}
	if (fstatfs(g->fd, &sfs) < 0) {
		*reterr = errno;
		return -1;
	}
	memcpy(&g->fsid, &sfs.f_fsid, sizeof(g->fsid));
	/* The grant's own fd names the filesystem; marking twice is harmless. */
	if (fanotify_mark(w->fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FW_MARK_MASK, g->fd, NULL) <
	    0) {
		*reterr = errno;
		return -1;
	}
	g->fanotify = true;
	return 0;
}

/* mountinfo writes space, tab, newline and backslash as \\ooo. */
static void unescape_octal(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

static bool fsid_known(const fw_watch *w, const fsid_t *fsid)
{
	for (size_t i = 0; i < w->n_grants; i++)
		if (w->grants[i].fanotify && fsid_eq(&w->grants[i].fsid, fsid))
			return true;
	for (size_t i = 0; i < w->n_subs; i++)
		if (fsid_eq(&w->subs[i].fsid, fsid))
			return true;
	return false;
}

/* Marks the filesystems mounted below the fanotify grants (in our mount
 * namespace, which is where the grant trees were cloned from). */
static void mark_submounts(fw_watch *w)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		struct sc_open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC,
					  .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
		char *save = NULL, *mp = strtok_r(line, " ", &save);
		const char *rel = NULL;
		struct statfs sfs;
		fsid_t fsid;
		int fd;

		/* id parent major:minor root mount-point ... */
		for (int k = 0; k < 4 && mp; k++)
			mp = strtok_r(NULL, " ", &save);
		if (!mp)
			continue;
		unescape_octal(mp);
		if (!grant_of(w, mp, &rel) || !rel[0])
			continue; /* not strictly below a fanotify grant */
		fd = sys_openat2(AT_FDCWD, mp, &how);
		if (fd < 0)
			continue; /* covered by another mount, or gone */
		if (fstatfs(fd, &sfs) < 0) {
			(void)close(fd);
			continue;
		}
		memcpy(&fsid, &sfs.f_fsid, sizeof(fsid));
		if (fsid_known(w, &fsid)) {
			(void)close(fd);
			continue;
		}
		if (w->n_subs == FW_MAX_SUBMOUNTS ||
		    fanotify_mark(w->fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FW_MARK_MASK, fd,
				  NULL) < 0) {
			w->subs_unwatched++;
			(void)close(fd);
			continue;
		}
		w->subs[w->n_subs++] = (fw_sub){.fsid = fsid, .fd = fd};
	}
}

int fw_start(const sc_plan *plan, fw_watch **ret, const char **ret_mode)
{
	fw_watch *w = pages_alloc(sizeof(*w));
	const char *env = getenv("SANDCAP_FSWATCH");
	bool forced = env && strcmp(env, "listing") == 0;
	size_t n_fan = 0, n_list = 0;
	int err = 0;

	*ret_mode = "none";
	if (!w)
		return -ENOMEM;
	w->fan = -1;
	w->tmp = -1;
	w->fsize = plan->fsize;
	w->tmp_size = plan->tmp_size;
	w->self = getpid();
	w->id_base = ns_host_id_base(w->self);
	w->grants = calloc(plan->n_grants + 1, sizeof(*w->grants));
	w->buf = pages_alloc(FW_READ_BYTES);
	if (!w->grants || !w->buf) {
		fw_free(w);
		return -ENOMEM;
	}
	for (size_t i = 0; i < plan->n_grants; i++) {
		fw_grant *g = &w->grants[w->n_grants];
		int r;

		if (plan->grants[i].mode != GRANT_RW)
			continue;
		g->g = &plan->grants[i];
		/* O_NOFOLLOW: grant paths hold no symlink (the policy says so).
		 * Not O_PATH: fanotify_mark() and open_by_handle_at() refuse
		 * those (fdget() skips FMODE_PATH files). */
		g->fd = open(g->g->path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
		if (g->fd < 0)
			continue; /* ns_open_sources reports a missing grant */
		w->n_grants++;
		if (!forced && setup_fanotify(w, g, &err) == 0) {
			n_fan++;
			continue;
		}
		r = snapshot(w, g, &g->before);
		if (r == -ENOMEM) {
			fw_free(w);
			return r;
		}
		n_list++;
	}
	if (n_fan) {
		mark_submounts(w);
		*ret_mode = "fanotify";
	}
	if (n_list || w->subs_unwatched) {
		char sub[64] = "";

		if (w->subs_unwatched)
			snprintf(sub, sizeof(sub), ", %u submounts not watched", w->subs_unwatched);
		if (n_list)
			snprintf(w->mode, sizeof(w->mode), "%slisting%s (%s)%s",
				 n_fan ? "fanotify, " : "", n_fan ? " for some grants" : "",
				 forced ? "forced by SANDCAP_FSWATCH" : why(err), sub);
		else
			snprintf(w->mode, sizeof(w->mode), "fanotify%s", sub);
		*ret_mode = w->mode;
	}
	if (!n_fan)
		w->fan = safe_close(w->fan);
	*ret = w;
	return 0;
}

static void *close_fd(void *arg)
{
	(void)close((int)(intptr_t)arg);
	return NULL;
}

/*
 * Closing a fanotify group that had marks waits in the kernel until its
 * marks are destroyed: fsnotify_destroy_group() flushes the mark reaper,
 * which waits for an SRCU grace period (fsnotify_mark_srcu). Measured on
 * 6.18, 2 cores: about 0.05 ms in most runs, 12-25 ms in about one run in
 * five (a grace period already in progress, or readers: every write on a
 * marked filesystem enters that SRCU). So the group is closed on a thread,
 * started as soon as the sandbox's events are read, while the supervisor
 * tears the rest down and seals the log; fw_free() joins it, so nothing of
 * the watch outlives the run. If no thread can be made, fw_free() closes it.
 */
static void start_close(fw_watch *w)
{
	if (w->fan < 0)
		return;
	if (pthread_create(&w->closer, NULL, close_fd, (void *)(intptr_t)w->fan) == 0)
		w->closing = true;
	else
		(void)close(w->fan);
	w->fan = -1;
}

int fw_watch_tmp(fw_watch *w, pid_t pid)
{
	char path[64];
	struct statfs sfs;
	int fd;

	if (!w || w->tmp >= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/root/tmp", (int)pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstatfs(fd, &sfs) < 0) {
		(void)close(fd);
		return -errno;
	}
	memcpy(&w->tmp_fsid, &sfs.f_fsid, sizeof(w->tmp_fsid));
	w->tmp = fd;
	/* A group of its own costs its close (see start_close()): made only
	 * when limits.fsize asks for it; without one, /tmp is checked once,
	 * after the run. */
	if (w->fan < 0 && w->fsize != PLAN_UNLIMITED)
		w->fan = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK |
					   FAN_REPORT_DFID_NAME,
				       O_RDONLY | O_CLOEXEC | O_LARGEFILE);
	if (w->fan >= 0 && fanotify_mark(w->fan, FAN_MARK_ADD | FAN_MARK_FILESYSTEM,
					 FAN_MODIFY | FAN_CREATE, fd, NULL) < 0)
		return -errno;
	return 0;
}

int fw_fd(const fw_watch *w)
{
	return w ? w->fan : -1;
}

int fw_handle(fw_watch *w, sf_event_cb cb, void *userdata)
{
	int r;

	if (!w || w->fan < 0)
		return 0;
	r = drain(w, cb, userdata, FW_READS_PER_CALL);
	return r < 0 ? r : 0;
}

int fw_finish(fw_watch *w, sf_event_cb cb, void *userdata)
{
	if (!w)
		return 0;
	/* Every event of the sandbox was queued by the syscall that caused it,
	 * so after the sandbox ended the queue holds all of them. */
	if (w->fan >= 0) {
		/* The marks go now: the host's later writes are not queued (the
		 * drain reads the sandbox's events only), and their destruction
		 * starts while we drain. Queued events stay queued. */
		(void)fanotify_mark(w->fan, FAN_MARK_FLUSH | FAN_MARK_FILESYSTEM, 0, AT_FDCWD,
				    NULL);
		(void)drain(w, cb, userdata, FW_DRAIN_READS);
		start_close(w);
	}
	w->listed = 0; /* the entry cap is per snapshot of all grants */
	for (size_t i = 0; i < w->n_grants; i++) {
		fw_grant *g = &w->grants[i];
		fw_list after = {0};
		int r;

		if (g->fanotify)
			continue;
		r = snapshot(w, g, &after);
		if (r >= 0) {
			if (g->before.truncated || after.truncated)
				emit_truncated(cb, userdata, "listing caps reached", 0);
			r = diff(w, cb, userdata, g, &g->before, &after);
		}
		list_clear(&after);
		if (r < 0)
			emit_truncated(cb, userdata, "listing failed", 0);
	}
	check_tmp(w, cb, userdata); /* the sandbox has ended: /tmp as it left it */
	if (w->overflowed)
		emit_truncated(cb, userdata, "fanotify queue overflow", 0);
	if (w->unplaced)
		emit_truncated(cb, userdata, "directory gone before the event was read",
			       w->unplaced);
	if (w->dropped)
		emit_truncated(cb, userdata, "event cap", w->dropped);
	return (int)w->n_paths;
}

fw_watch *fw_free(fw_watch *w)
{
	if (!w)
		return NULL;
	for (size_t i = 0; i < w->n_grants; i++) {
		(void)safe_close(w->grants[i].fd);
		list_clear(&w->grants[i].before);
	}
	dirs_flush(w);
	for (size_t i = 0; i < FW_COALESCE_SLOTS; i++)
		free(w->recent[i].path);
	for (size_t i = 0; i < w->n_subs; i++)
		(void)safe_close(w->subs[i].fd);
	(void)safe_close(w->tmp);
	if (w->closing)
		(void)pthread_join(w->closer, NULL);
	else
		(void)safe_close(w->fan);
	free(w->grants);
	pages_free(w->buf, FW_READ_BYTES);
	pages_free(w, sizeof(*w));
	return NULL;
}
