/* SPDX-License-Identifier: MIT */
/*
 * fs.read events for the files the agent opens under its grants (fsread.h
 * has the contract). What it cannot tell, also in docs/audit.md:
 *   - only the first open of each path is recorded: a file rewritten and
 *     read again later keeps its first digest;
 *   - the digest is read from the event's fd when the thread gets to the
 *     event, not at the open itself: a file written between the agent's
 *     open and that read (by the agent through another fd, or by the
 *     host) is hashed as it is then;
 *   - a process that has exited before its event is read cannot be
 *     identified; its open is kept when it lies under a grant;
 *   - other filesystems mounted inside a grant are not marked (the mark
 *     is on the grant's own mount);
 *   - an open of the grant's mount by a host process (through
 *     /proc/PID/root) is filtered by its fsuid, as fswatch.c does.
 * The sandbox's mount namespace is held open until the queue is drained:
 * once its last process exits the kernel detaches its mounts, and an
 * event's path would then read back relative to the grant ("/note.txt"
 * for "/in/note.txt") and match no grant.
 */
#include "audit/fsread.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/fswatch.h"
#include "base/cleanup.h"
#include "base/path.h"
#include "base/sha256.h"
#include "ns/ns.h"

#define FR_READ_BYTES  65536u /* one read() of the fanotify fd */
#define FR_SEEN_SLOTS  8192u  /* distinct paths remembered (open addressing) */
#define FR_PID_CACHE   64u
#define FR_DRAIN_READS 1024u /* reads at the end: host noise cannot hold us */

typedef enum fr_who { FR_GONE, FR_SANDBOX, FR_HOST } fr_who;

struct fr_watch {
	int fan, stop_fd;
	int mnt_ns; /* keeps the sandbox's mounts attached until the drain */
	pthread_t thread;
	bool running;
	bool stopped_by_cb; /* the log failed: record nothing more */
	uid_t id_base;
	pid_t self;
	const sc_plan *plan;
	sf_event_cb cb;
	void *ud;
	uint64_t seen[FR_SEEN_SLOTS]; /* 64-bit hashes of host paths, 0 = free */
	size_t n_seen;
	uint64_t recorded, unrecorded, overflows;
	struct {
		pid_t pid;
		fr_who who;
	} pids[FR_PID_CACHE];
	size_t next_pid;
	uint8_t buf[FR_READ_BYTES] __attribute__((aligned(8)));
};

static fr_who pid_who(fr_watch *w, pid_t pid)
{
	unsigned long fsuid = 0;
	fr_who who;

	if (pid == w->self)
		return FR_HOST;
	for (size_t i = 0; i < FR_PID_CACHE; i++)
		if (w->pids[i].pid == pid && pid > 0)
			return w->pids[i].who;
	if (fw_proc_fsuid(pid, &fsuid) < 0)
		return FR_GONE;
	who = fsuid >= w->id_base && fsuid < (unsigned long)w->id_base + NS_HOST_IDS ? FR_SANDBOX
										     : FR_HOST;
	w->pids[w->next_pid].pid = pid;
	w->pids[w->next_pid].who = who;
	w->next_pid = (w->next_pid + 1) % FR_PID_CACHE;
	return who;
}

static uint64_t path_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h ? h : 1;
}

/* true the first time a path is seen (or when the set is full: then every
 * open counts, an upper bound) */
static bool first_time(fr_watch *w, const char *path)
{
	uint64_t h = path_hash(path);
	size_t i = h % FR_SEEN_SLOTS;

	if (w->n_seen >= FR_SEEN_SLOTS * 3 / 4)
		return true;
	for (; w->seen[i]; i = (i + 1) % FR_SEEN_SLOTS)
		if (w->seen[i] == h)
			return false;
	w->seen[i] = h;
	w->n_seen++;
	return true;
}

/* The grant mounted where a sandbox path lies (the innermost), and the
 * rest of the path. */
static const plan_grant *grant_of(const fr_watch *w, const char *inside, const char **ret_rest)
{
	const plan_grant *best = NULL;
	size_t best_len = 0;

	for (size_t i = 0; i < w->plan->n_grants; i++) {
		const plan_grant *g = &w->plan->grants[i];
		size_t n = strlen(g->at);

		if (path_is_under(inside, g->at) && n >= best_len) {
			best = g;
			best_len = n;
		}
	}
	if (best)
		*ret_rest = inside + (best_len == 1 ? 0 : best_len);
	return best;
}

static void digest_fd(int fd, const struct stat *st, json_t *data)
{
	sha256_ctx md;
	uint8_t buf[65536], out[SHA256_BYTES];
	char hex[65];
	off_t off = 0;

	if (st->st_size > (off_t)FR_HASH_MAX) {
		(void)json_object_set_new(data, "sha256", json_null());
		(void)json_object_set_new(data, "hash_skipped", json_string("larger than 64 MiB"));
		return;
	}
	sha256_init(&md);
	while (off < (off_t)FR_HASH_MAX) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		sha256_update(&md, buf, (size_t)n);
		off += n;
	}
	sha256_final(&md, out);
	for (size_t i = 0; i < sizeof(out); i++)
		(void)snprintf(hex + 2 * i, 3, "%02x", out[i]);
	(void)json_object_set_new(data, "sha256", json_string(hex));
	(void)json_object_set_new(data, "hashed_bytes", json_integer((json_int_t)off));
	return;
fail:
	(void)json_object_set_new(data, "sha256", json_null());
	(void)json_object_set_new(data, "hash_skipped", json_string("read error"));
}

/*
 * The event's fd names the file as the agent opened it: readlink() of it
 * gives the path in the sandbox's mount namespace (the kernel writes a
 * path from that namespace's root, which is not ours), so the grant is
 * found by where it is mounted inside, and the host path follows.
 */
static void on_open(fr_watch *w, const struct fanotify_event_metadata *m)
{
	char link[64], inside[PATH_MAX + 1], host[2 * PATH_MAX + 2];
	const plan_grant *g;
	const char *rest = "";
	struct stat st;
	json_t *data;
	ssize_t n;

	if (pid_who(w, m->pid) == FR_HOST)
		return;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", m->fd);
	n = readlink(link, inside, sizeof(inside) - 1);
	if (n <= 0 || fstat(m->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	inside[n] = '\0';
	g = grant_of(w, inside, &rest);
	if (!g || !first_time(w, inside))
		return;
	if (w->recorded >= FR_MAX_FILES) {
		w->unrecorded++;
		return;
	}
	snprintf(host, sizeof(host), "%s%s", strcmp(g->path, "/") == 0 && rest[0] ? "" : g->path,
		 rest);
	data =
	    json_pack("{s:o, s:o, s:I}", "path", au_str(inside, strlen(inside), AU_STR_MAX_BYTES),
		      "host_path", au_str(host, strlen(host), AU_STR_MAX_BYTES), "size",
		      (json_int_t)st.st_size);
	if (!data)
		return;
	digest_fd(m->fd, &st, data);
	w->recorded++;
	if (w->cb("fs.read", data, w->ud) < 0)
		w->stopped_by_cb = true;
}

/* One read() of events. 1: some were read, 0: none queued, -errno. */
static int read_batch(fr_watch *w)
{
	ssize_t len = read(w->fan, w->buf, sizeof(w->buf));
	const struct fanotify_event_metadata *m = (const void *)w->buf;

	if (len < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	for (; FAN_EVENT_OK(m, len); m = FAN_EVENT_NEXT(m, len)) {
		if (m->vers != FANOTIFY_METADATA_VERSION)
			return -EPROTO;
		if (m->mask & FAN_Q_OVERFLOW)
			w->overflows++;
		else if (m->fd >= 0 && !w->stopped_by_cb)
			on_open(w, m);
		if (m->fd >= 0)
			(void)close(m->fd);
	}
	return 1;
}

static void *reader(void *arg)
{
	fr_watch *w = arg;

	for (;;) {
		struct pollfd p[2] = {{.fd = w->fan, .events = POLLIN},
				      {.fd = w->stop_fd, .events = POLLIN}};

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[0].revents && read_batch(w) < 0)
			break;
	}
	/* The sandbox has ended: what it opened is queued by now. */
	for (unsigned i = 0; i < FR_DRAIN_READS && read_batch(w) > 0; i++)
		;
	return NULL;
}

int fr_start(const sc_plan *plan, pid_t pid, sf_event_cb cb, void *userdata, fr_watch **ret,
	     const char **ret_mode)
{
	char path[PATH_MAX + 64];
	_cleanup_free_ fr_watch *w = NULL;
	int r;

	*ret = NULL;
	if (!plan->audit_reads) {
		*ret_mode = "none";
		return 0;
	}
	if (plan->n_grants == 0) {
		*ret_mode = "none (no grant)";
		return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->plan = plan;
	w->cb = cb;
	w->ud = userdata;
	w->self = getpid();
	w->id_base = ns_host_id_base(getpid());
	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	w->mnt_ns = open(path, O_RDONLY | O_CLOEXEC);
	if (w->mnt_ns < 0) {
		*ret_mode = "none (the sandbox's mount namespace cannot be held)";
		return 0;
	}
	w->fan = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK,
			       O_RDONLY | O_LARGEFILE | O_CLOEXEC | O_NOATIME);
	if (w->fan < 0) {
		(void)close(w->mnt_ns);
		*ret_mode = errno == EPERM ? "none (fanotify needs root)" : "none (no fanotify)";
		return 0;
	}
	/* The grant's own mount in the sandbox's mount namespace, reached
	 * through the child's root: only opens through it are reported, none
	 * of the host's. */
	for (size_t i = 0; i < plan->n_grants; i++) {
		snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, plan->grants[i].at);
		if (fanotify_mark(w->fan, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN, AT_FDCWD, path) <
		    0) {
			(void)close(w->fan);
			(void)close(w->mnt_ns);
			*ret_mode = "none (a grant's mount cannot be marked)";
			return 0;
		}
	}
	w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->stop_fd < 0) {
		(void)close(w->fan);
		(void)close(w->mnt_ns);
		return -errno;
	}
	r = pthread_create(&w->thread, NULL, reader, w);
	if (r != 0) {
		(void)close(w->fan);
		(void)close(w->stop_fd);
		(void)close(w->mnt_ns);
		return -r;
	}
	w->running = true;
	*ret_mode = "fanotify";
	*ret = TAKE_PTR(w);
	return 0;
}

static void stop(fr_watch *w)
{
	uint64_t one = 1;

	if (!w->running)
		return;
	(void)!write(w->stop_fd, &one, sizeof(one));
	(void)pthread_join(w->thread, NULL);
	w->running = false;
}

void fr_finish(fr_watch *w)
{
	if (!w || !w->running)
		return;
	stop(w);
	if (w->stopped_by_cb)
		return;
	if (w->unrecorded)
		(void)w->cb("fs.read",
			    json_pack("{s:s, s:I, s:s}", "op", "truncated", "count",
				      (json_int_t)w->unrecorded, "reason", "file cap"),
			    w->ud);
	if (w->overflows)
		(void)w->cb("fs.read",
			    json_pack("{s:s, s:I, s:s}", "op", "truncated", "count",
				      (json_int_t)w->overflows, "reason",
				      "fanotify queue overflow"),
			    w->ud);
}

fr_watch *fr_free(fr_watch *w)
{
	if (!w)
		return NULL;
	stop(w); /* without records: the log may be sealed by now */
	(void)close(w->fan);
	(void)close(w->mnt_ns);
	(void)close(w->stop_fd);
	free(w);
	return NULL;
}
