/* SPDX-License-Identifier: MIT */
/*
 * The run's audit log (docs/audit.md): where it goes, opened out of every
 * grant's reach, every record written through sv_emit() (or handed to the
 * mode's sink), paced by audit.max_rate, and what happens when one cannot
 * be written: the sandbox stops.
 */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/diag.h"
#include "base/path.h"
#include "core/supervisor-state.h"

#define STATE_DIR_DEFAULT "/var/lib/sandcap"
/* fsync needs little stack; a thread's pages count in every supervisor. */
#define SYNC_STACK_BYTES (64u << 10)
#define SYNC_GUARD_BYTES ((size_t)sysconf(_SC_PAGESIZE))

static void pace_init(log_pace *p, uint64_t rate)
{
	p->rate = rate == PLAN_UNLIMITED || rate > INT64_MAX ? 0 : rate;
	p->tokens = (int64_t)p->rate;
	p->last_ns = sv_now_ns();
}

static void pace_refill(log_pace *p, uint64_t now)
{
	unsigned __int128 add;

	if (!p->rate || now <= p->last_ns)
		return;
	add = (unsigned __int128)(now - p->last_ns) * p->rate / 1000000000ull;
	if (add == 0)
		return;
	p->last_ns = now;
	if (add >= (unsigned __int128)((int64_t)p->rate - p->tokens))
		p->tokens = (int64_t)p->rate;
	else
		p->tokens += (int64_t)add;
}

/* The debt stops at a second's worth: records of other sources (the
 * proxy's, bounded by net.rate) never hold an exec for longer than that. */
static void pace_charge(log_pace *p, uint64_t bytes)
{
	int64_t floor = -(int64_t)p->rate;

	if (!p->rate)
		return;
	if (bytes > p->rate || p->tokens - (int64_t)bytes < floor)
		p->tokens = floor;
	else
		p->tokens -= (int64_t)bytes;
}

/* Nanoseconds until the bucket is out of debt (0: now). */
static uint64_t pace_wait_ns(log_pace *p, uint64_t now)
{
	pace_refill(p, now);
	if (!p->rate || p->tokens >= 0)
		return 0;
	return (uint64_t)((unsigned __int128)(uint64_t)-p->tokens * 1000000000ull / p->rate) + 1;
}

/* mkdir -p, each directory we create 0700 (the XDG base directory
 * specification asks that of the state directory). */
static int mkdir_parents(const char *path)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *q = buf + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*q = '/';
	}
	return mkdir(buf, 0700) < 0 && errno != EEXIST ? -errno : 0;
}

/*
 * Where per-run logs go without --audit: SANDCAP_STATE_DIR, else root's
 * /var/lib/sandcap, else a user's XDG state directory ($XDG_STATE_HOME, or
 * ~/.local/state), which only that user can write.
 */
int sc_state_dir(bool unpriv, char *buf, size_t len)
{
	const char *state = getenv("SANDCAP_STATE_DIR");
	const char *xdg = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	int n;

	if (state && *state)
		n = snprintf(buf, len, "%s", state);
	else if (!unpriv)
		n = snprintf(buf, len, "%s", STATE_DIR_DEFAULT);
	else if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/sandcap", xdg);
	else {
		if (!home || home[0] != '/') {
			struct passwd *pw = getpwuid(geteuid());

			home = pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
		}
		if (!home)
			return -ENOENT;
		n = snprintf(buf, len, "%s/.local/state/sandcap", home);
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The log must be unreachable from inside: refuse a path in any grant. */
int sv_audit_open(supervisor *s)
{
	const sc_plan *p = s->plan;
	char dir[PATH_MAX], real[PATH_MAX], state[PATH_MAX - 16];
	const char *path = s->o->audit_path;
	char *slash;
	int r;

	if (!path) {
		r = sc_state_dir(s->unpriv, state, sizeof(state));
		if (r < 0)
			return diag_fail(
			    s->diag, r, "audit",
			    "no state directory for the audit log (set HOME, "
			    "XDG_STATE_HOME or SANDCAP_STATE_DIR, or give --audit FILE)");
		snprintf(dir, sizeof(dir), "%s/audit", state);
		/* A user's ~/.local/state may not exist yet; root's parent does. */
		r = s->unpriv ? mkdir_parents(state) : (mkdir(state, 0700) < 0 ? -errno : 0);
		if (r < 0 && r != -EEXIST)
			return diag_fail(s->diag, r, "audit",
					 "cannot create state directory %s: %s", state,
					 strerror(-r));
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return diag_fail(s->diag, -errno, "audit", "cannot create %s: %s", dir,
					 strerror(errno));
		if ((size_t)snprintf(s->res->audit_path, sizeof(s->res->audit_path),
				     "%.4000s/%s.jsonl", dir,
				     s->res->sandbox_id) >= sizeof(s->res->audit_path))
			return diag_fail(s->diag, -ENAMETOOLONG, "audit",
					 "state directory path too long");
	} else {
		snprintf(s->res->audit_path, sizeof(s->res->audit_path), "%s", path);
	}
	snprintf(dir, sizeof(dir), "%s", s->res->audit_path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	if (!realpath(dir, real))
		return diag_fail(s->diag, -errno, "audit", "audit log directory %s: %s", dir,
				 strerror(errno));
	for (size_t i = 0; i < p->n_grants; i++) {
		char g[PATH_MAX];

		if (realpath(p->grants[i].path, g) && path_is_under(real, g))
			return diag_fail(
			    s->diag, -EINVAL, "audit",
			    "audit log %s lies inside grant %s: the agent could reach it",
			    s->res->audit_path, p->grants[i].path);
	}
	r = au_open(s->res->audit_path, s->o->audit_key, s->o->audit_key_len, s->res->sandbox_id,
		    p->audit_fsync, &s->audit);
	if (r == -EINVAL || r == -ELOOP) {
		struct stat st;

		if (lstat(s->res->audit_path, &st) == 0 && !S_ISREG(st.st_mode))
			return diag_fail(
			    s->diag, r, "audit",
			    "audit log %s is %s, not a regular file: give the path of a "
			    "new file",
			    s->res->audit_path, au_file_type(st.st_mode));
	}
	if (r == -ENOSPC || r == -EDQUOT)
		return diag_fail(
		    s->diag, r, "audit",
		    "audit log %s: its filesystem has no room for the %u bytes the log "
		    "keeps in reserve (%s): free space there or choose another --audit",
		    s->res->audit_path, AU_RESERVE_BYTES, strerror(-r));
	if (r < 0)
		return diag_fail(s->diag, r, "audit", "cannot open audit log %s: %s",
				 s->res->audit_path, strerror(-r));
	if (s->o->audit_signer)
		(void)au_set_signer(s->audit, s->o->audit_signer, s->o->audit_checkpoint_records,
				    s->o->audit_checkpoint_ms * 1000000ull);
	au_set_max_bytes(s->audit, p->audit_max_bytes);
	pace_init(&s->pace, p->audit_max_rate);
	return 0;
}

/* A run refused before its log was open still leaves one, which says how
 * it ended; the refusal's message stays the one reported. */
void sv_audit_open_after_failure(supervisor *s)
{
	sc_diag saved = *s->diag;

	if (!SV_HOOK(s, sink) && sv_audit_open(s) < 0)
		s->audit = NULL;
	*s->diag = saved;
}

/*
 * A record could not be written (docs/audit.md, "When the log cannot be
 * written"): nothing of the sandbox may go on without it. Its processes
 * are killed before this returns (an exec waiting for its record dies
 * waiting), the proxy worker too, so that no request is forwarded
 * unrecorded; then the reason goes into the log's reserve. Under the
 * emit lock, from whichever thread failed.
 */
static void audit_failed(supervisor *s)
{
	if (s->audit_stopped)
		return;
	s->audit_stopped = true;
	/* Before sandbox.start nothing of the sandbox has run: a refusal. */
	s->res->audit_stopped = s->start_written && s->pid > 0 && !s->exited;
	sv_kill_sandbox(s);
	if (s->proxy_pid > 0)
		(void)kill(s->proxy_pid, SIGKILL);
	(void)au_emit_failure(s->audit, !s->start_written	? "run refused"
					: s->res->audit_stopped ? "sandbox stopped"
								: "sandbox had ended");
}

/* 0 once the record is written (or handed on), else -errno: then the
 * sandbox has been stopped. Records of a failed log are counted, not
 * written. */
int sv_emit_locked(supervisor *s, const char *event, json_t *data)
{
	uint64_t before;
	int r;

	au_tally_event(&s->res->tally, event, data); /* the summary's numbers */
	if (SV_HOOK(s, sink)) {
		s->o->mode->sink(s->o->mode_data, s->res->sandbox_id, event, data);
		return 0;
	}
	if (!s->audit) {
		json_decref(data);
		return 0;
	}
	before = au_bytes(s->audit);
	r = au_emit(s->audit, event, data);
	if (r >= 0) {
		pace_charge(&s->pace, au_bytes(s->audit) - before);
		return 0;
	}
	/* Whatever kept it out (a refused record too): not without it. */
	s->res->audit_unrecorded++;
	audit_failed(s);
	return r;
}

int sv_emit(supervisor *s, const char *event, json_t *data)
{
	int r;

	pthread_mutex_lock(&s->emit_lock);
	r = sv_emit_locked(s, event, data);
	pthread_mutex_unlock(&s->emit_lock);
	return r;
}

/* The records of the end (limit.hit, sandbox.exit): into the log's
 * reserve, so that they are written even after a failure. */
void sv_emit_final(supervisor *s, const char *event, json_t *data)
{
	pthread_mutex_lock(&s->emit_lock);
	if (SV_HOOK(s, sink) || !s->audit) {
		(void)sv_emit_locked(s, event, data);
	} else {
		au_tally_event(&s->res->tally, event, data);
		if (au_emit_final(s->audit, event, data) < 0) {
			s->res->audit_unrecorded++;
			audit_failed(s);
		}
	}
	pthread_mutex_unlock(&s->emit_lock);
}

/* The exec listener waits for room in the log's bucket: the agent's exec
 * (or refused call) waits with it, and no record is lost. */
void sv_pace_wait(supervisor *s)
{
	for (;;) {
		struct timespec ts = {0};
		uint64_t w;

		pthread_mutex_lock(&s->emit_lock);
		w = s->audit_stopped ? 0 : pace_wait_ns(&s->pace, sv_now_ns());
		pthread_mutex_unlock(&s->emit_lock);
		if (w == 0)
			return;
		ts.tv_nsec = (long)(w < 100000000ull ? w : 100000000ull);
		(void)nanosleep(&ts, NULL);
	}
}

/* A signed log gets its time-based checkpoint also while it is quiet
 * (docs/audit.md, "The public-key seal"): the loop wakes for it. */
int sv_checkpoint_timeout_ms(supervisor *s)
{
	uint64_t ns;

	if (!s->audit || !s->o->audit_signer || s->o->audit_checkpoint_ms == 0)
		return -1;
	pthread_mutex_lock(&s->emit_lock);
	if (au_checkpoint_due(s->audit) < 0) {
		s->res->audit_unrecorded++; /* the checkpoint: a record like any other */
		audit_failed(s);
	}
	ns = au_checkpoint_wait_ns(s->audit);
	pthread_mutex_unlock(&s->emit_lock);
	if (ns == UINT64_MAX)
		ns = s->o->audit_checkpoint_ms * 1000000ull;
	return (int)(ns / 1000000ull) + 1;
}

static int sync_fds(int fd, int dirfd, off_t truncate_to)
{
	int r = 0;

	if (fd >= 0 && fsync(fd) < 0)
		r = -errno;
	if (dirfd >= 0 && fsync(dirfd) < 0 && r == 0)
		r = -errno;
	/* The reserve given back after the fsync, not before: the two take
	 * the same inode lock, and the seal is what must reach the disk. */
	if (fd >= 0 && truncate_to >= 0 && ftruncate(fd, truncate_to) < 0) {
		/* Only the space stays allocated; the records are intact. */
	}
	(void)safe_close(fd);
	(void)safe_close(dirfd);
	return r;
}

/* No malloc here: a thread's first one would give it an arena of its
 * own, pages that every supervisor would keep. */
static void *sync_thread(void *arg)
{
	sv_sync *y = arg;
	uint64_t one = 1;

	y->r = sync_fds(y->fd, y->dirfd, y->truncate_to);
	if (y->done_fd >= 0)
		(void)!write(y->done_fd, &one, sizeof(one));
	return NULL;
}

/* Our own stack, so that it can be unmapped once joined (glibc keeps the
 * stacks it made, touched pages and all); a guard page below it. */
static bool sync_spawn(sv_sync *y)
{
	pthread_attr_t attr;
	char *mem;
	bool ok = false;

	mem = mmap(NULL, SYNC_STACK_BYTES + SYNC_GUARD_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (mem == MAP_FAILED)
		return false;
	if (mprotect(mem, SYNC_GUARD_BYTES, PROT_NONE) == 0 && pthread_attr_init(&attr) == 0) {
		ok = pthread_attr_setstack(&attr, mem + SYNC_GUARD_BYTES, SYNC_STACK_BYTES) == 0 &&
		     pthread_create(&y->thread, &attr, sync_thread, y) == 0;
		(void)pthread_attr_destroy(&attr);
	}
	if (!ok) {
		(void)munmap(mem, SYNC_STACK_BYTES + SYNC_GUARD_BYTES);
		return false;
	}
	y->stack = mem;
	return true;
}

static void sync_join(sv_sync *y)
{
	if (!y->running)
		return;
	(void)pthread_join(y->thread, NULL);
	(void)munmap(y->stack, SYNC_STACK_BYTES + SYNC_GUARD_BYTES);
	y->stack = NULL;
	y->running = false;
}

void sv_sync_begin(supervisor *s, int fd, int dirfd, off_t truncate_to)
{
	sv_sync *y;

	if (fd < 0 && dirfd < 0)
		return;
	if (s->n_syncs == SV_SYNCS) {
		/* Every slot is taken: this boundary waits here, and the last
		 * slot reports it. */
		int r = sync_fds(fd, dirfd, truncate_to);

		y = &s->syncs[SV_SYNCS - 1];
		sync_join(y);
		y->r = r;
		return;
	}
	/* While the loop runs, the thread wakes it when done (EV_SYNCED). */
	if (!s->exited && s->ep >= 0 && s->synced_fd < 0) {
		s->synced_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (s->synced_fd >= 0 && sv_ep_add(s, s->synced_fd, EV_SYNCED) < 0)
			s->synced_fd = safe_close(s->synced_fd);
	}
	y = &s->syncs[s->n_syncs++];
	*y = (sv_sync){.fd = fd,
		       .dirfd = dirfd,
		       .truncate_to = truncate_to,
		       .done_fd = s->exited ? -1 : s->synced_fd};
	/* The thread inherits our mask: every signal stays the signalfd's. */
	y->running = sync_spawn(y);
	if (!y->running)
		y->r = sync_fds(fd, dirfd, truncate_to);
}

void sv_sync_reap(supervisor *s)
{
	uint64_t n;

	(void)!read(s->synced_fd, &n, sizeof(n));
	for (unsigned i = 0; i < s->n_syncs; i++)
		if (s->syncs[i].running && pthread_tryjoin_np(s->syncs[i].thread, NULL) == 0) {
			/* Joined: what is left is the stack. */
			s->syncs[i].running = false;
			(void)munmap(s->syncs[i].stack, SYNC_STACK_BYTES + SYNC_GUARD_BYTES);
			s->syncs[i].stack = NULL;
		}
}

int sv_sync_wait(supervisor *s)
{
	for (unsigned i = 0; i < s->n_syncs; i++)
		sync_join(&s->syncs[i]);
	s->synced_fd = safe_close(s->synced_fd);
	return s->n_syncs ? s->syncs[s->n_syncs - 1].r : 0;
}
