/* SPDX-License-Identifier: MIT */
/*
 * The supervisor: host namespaces, owns the cgroup, the audit log, the wall
 * clock and the proxy worker. One epoll loop, and one thread that serves the
 * seccomp listener (emit() serialises the two); every byte from the child,
 * the seccomp listener and the proxy worker is treated as hostile.
 */
#include "core/run.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/fsread.h"
#include "audit/fswatch.h"
#include "base/cleanup.h"
#include "base/diag.h"
#include "base/io.h"
#include "base/pages.h"
#include "base/sibling.h"
#include "base/signals.h"
#include "cgroup/cgroup.h"
#include "compat/syscalls.h"
#include "core/child.h"
#include "core/denials.h"
#include "core/init.h"
#include "core/pty.h"
#include "core/spawn.h"
#include "core/sync.h"
#include "host/host.h"
#include "ns/ns.h"
#include "policy/agent-env.h"
#include "landlock/landlock.h"
#include "proxy/attempt.h"
#include "proxy/programs.h"
#include "proxy/proxy.h"
#include "seccomp/seccomp.h"
#include "workspace/grants.h"
#include "session/server.h"

#define STATE_DIR_DEFAULT "/var/lib/sandcap"
#define CGROUP_PREFIX	  "sandcap-"		 /* + the sandbox id */
#define GRACE_NS	  (3ULL * 1000000000ULL) /* after SIGINT/SIGTERM, before SIGKILL */
#define MAX_ENV		  (AGENT_ENV_OWN_MAX + POLICY_MAX_ENV + POLICY_MAX_CREDENTIALS + 1)
#define MAX_EVENT_BYTES	  65536
#define PROXY_DRAIN_NS	  (500ULL * 1000000ULL) /* bound on the worker's last reports */

enum {
	EV_SYNC = 1,
	EV_PIDFD,
	EV_SIGNAL,
	EV_WALL,
	EV_GRACE,
	EV_NOTIFY,
	EV_PROXY,
	EV_PTY,
	EV_FSWATCH,
	EV_SPAWN,
	EV_SESSION,
	EV_SAMPLE
};

/*
 * audit.max_rate (docs/policy.md, "How fast the log grows"): a bucket of
 * log bytes, a second's worth, that every record written draws from, into
 * debt if need be; the exec listener waits until it is out of debt before
 * it records (and so lets run) the next exec. Under the emit lock.
 */
typedef struct log_pace {
	uint64_t rate; /* bytes per second; 0: no pacing */
	int64_t tokens;
	uint64_t last_ns;
} log_pace;

typedef struct supervisor {
	const sc_run_opts *o;
	const sc_plan *plan;
	sc_run_result *res;
	sc_diag *diag;

	au_log *audit;
	log_pace pace;
	cg_handle *cg;
	ns_source *sources;
	pty_relay *pty;
	fw_watch *fw;
	const char *fw_mode; /* for sandbox.start; owned by fw */
	fr_watch *fr;	     /* fs.read (audit.reads) */
	const char *fr_mode; /* for sandbox.start; static */
	spawn_server *spawn; /* delegation socket, when the plan allows spawn */
	ws_run *ws;	     /* cow grants and rw quotas, when the plan has them */
	json_t *ws_exit;     /* the kept workspaces, for sandbox.exit */
	char ws_not_enforced[256];

	int ep, sync, pidfd, sigfd, wallfd, gracefd, samplefd, notify_fd, proxy_fd;
	sf_listener *listener;	   /* the seccomp listener's thread */
	pthread_mutex_t emit_lock; /* the listener thread emits too */
	pid_t pid, proxy_pid;
	px_seed proxy_seed;	 /* to start another worker on the same listener */
	json_t *px_open;	 /* net.request.start without its net.request, by id */
	px_extras *proxy_extras; /* the sandbox CA and placeholders, or NULL */
	uid_t id_base;
	bool unpriv;		/* no root: one user namespace mapping us to the agent */
	bool cg_early;		/* cgroup made before clone3, which places the child in it */
	char not_enforced[320]; /* what best_effort let go, for sandbox.start */
	char transparent[300];	/* "on", or "off: why" (sandbox.start); "" without egress */

	/* What the child is given: pid 1's binary, argv and environment, the
	 * terminals it gets a pty for, the child's end of the sync pair. */
	int exe_fd, tty_mask, child_sync;
	/* A session: the control channel to pid 1 (core/ctl.h), our end and
	 * the child's, and its fd number for pid 1's argv. */
	int ctl, child_ctl;
	char ctl_arg[16];
	char **init_argv;
	char *env[MAX_ENV];
	sigset_t saved_mask; /* restored once the run is over */
	bool mask_saved;

	bool started;	    /* sandbox.start written */
	bool audit_stopped; /* a record could not be written: the sandbox was stopped */
	bool start_written; /* sandbox.start and the grants are in the log */
	bool ready;	    /* the child did every setup step (SYNC_READY) */
	unsigned layers;    /* sync_layer bits: what the child put in place */
	bool cg_joined;	    /* the sandbox is in its cgroup (clone3 or cg_attach) */
	bool setup_failed;
	bool exited;
	int wait_status;
	int landlock_abi;
	char landlock[256];
	uint64_t t0;
	px_attempt_limit raw_sockets; /* raw/packet socket() attempts (attempt-raw.c) */
	/* What the listener judges writes by (seccomp.h, sf_walls). */
	sf_walls walls;
	const char *writable[SF_MAX_WRITABLE];
	dn_state denials; /* fs.denied and syscall.denied, folded (denials.h) */
} supervisor;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void pace_init(log_pace *p, uint64_t rate)
{
	p->rate = rate == PLAN_UNLIMITED || rate > INT64_MAX ? 0 : rate;
	p->tokens = (int64_t)p->rate;
	p->last_ns = now_ns();
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

static bool path_inside(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
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
static int audit_open(supervisor *s)
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

		if (realpath(p->grants[i].path, g) && (path_inside(real, g)))
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
static void audit_open_after_failure(supervisor *s)
{
	sc_diag saved = *s->diag;

	if (!s->o->event_sink && audit_open(s) < 0)
		s->audit = NULL;
	*s->diag = saved;
}

static void kill_sandbox(supervisor *s);

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
	kill_sandbox(s);
	if (s->proxy_pid > 0)
		(void)kill(s->proxy_pid, SIGKILL);
	(void)au_emit_failure(s->audit, !s->start_written	? "run refused"
					: s->res->audit_stopped ? "sandbox stopped"
								: "sandbox had ended");
}

/* 0 once the record is written (or handed on), else -errno: then the
 * sandbox has been stopped. Records of a failed log are counted, not
 * written. */
static int emit_locked(supervisor *s, const char *event, json_t *data)
{
	uint64_t before;
	int r;

	au_tally_event(&s->res->tally, event, data); /* the summary's numbers */
	if (s->o->event_sink) {
		s->o->event_sink(s->res->sandbox_id, event, data, s->o->event_sink_data);
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

static int emit(supervisor *s, const char *event, json_t *data)
{
	int r;

	pthread_mutex_lock(&s->emit_lock);
	r = emit_locked(s, event, data);
	pthread_mutex_unlock(&s->emit_lock);
	return r;
}

/* The records of the end (limit.hit, sandbox.exit): into the log's
 * reserve, so that they are written even after a failure. */
static void emit_final(supervisor *s, const char *event, json_t *data)
{
	pthread_mutex_lock(&s->emit_lock);
	if (s->o->event_sink || !s->audit) {
		(void)emit_locked(s, event, data);
	} else {
		au_tally_event(&s->res->tally, event, data);
		if (au_emit_final(s->audit, event, data) < 0) {
			s->res->audit_unrecorded++;
			audit_failed(s);
		}
	}
	pthread_mutex_unlock(&s->emit_lock);
}

static int ep_add(supervisor *s, int fd, uint32_t tag);

static void start_listener(supervisor *s, int fd);

/*
 * What is in place, from what each step reported (the child's sync_layer
 * bits, the cgroup, the proxy): a refused run claims nothing beyond the
 * step it reached. A layer not put in place is absent.
 */
static json_t *layers_json(supervisor *s)
{
	unsigned l = s->layers;
	json_t *o = json_object();
	char ns[64];

	if (!o)
		return NULL;
	if (s->pid > 0) {
		snprintf(ns, sizeof(ns), "%smount pid net%s%s", l & LAYER_USERNS ? "user " : "",
			 s->plan->shared_ipc_uts ? "" : " ipc uts",
			 l & LAYER_CGROUPNS ? " cgroup" : "");
		(void)json_object_set_new(o, "namespaces", json_string(ns));
		if (s->plan->shared_ipc_uts)
			(void)json_object_set_new(o, "ipc_uts", json_string("shared (a pod's)"));
	}
	if (l & LAYER_MOUNTS)
		(void)json_object_set_new(
		    o, "mounts",
		    json_string("tmpfs root, pivot_root, read-only runtime, nosuid nodev grants"));
	/* In the cgroup: placed by clone3 or by us, or it moved itself in. */
	(void)json_object_set_new(
	    o, "cgroup",
	    json_string(s->cg && (s->cg_joined || (l & LAYER_CGROUP)) ? s->res->cgroup : "none"));
	if (l & LAYER_CAPS)
		(void)json_object_set_new(o, "capabilities", json_string("none"));
	if (l & LAYER_NNP)
		(void)json_object_set_new(o, "no_new_privs", json_true());
	if (l & LAYER_LANDLOCK)
		(void)json_object_set_new(
		    o, "landlock",
		    json_pack("{s:i, s:s}", "abi", s->landlock_abi, "status", s->landlock));
	if (l & LAYER_SECCOMP)
		(void)json_object_set_new(o, "seccomp",
					  json_string(!(l & LAYER_SECCOMP_NOTIFY)
							  ? "active"
							  : "active, with user notification"));
	/* A second filter on top (sandcap-runc: the spec's linux.seccomp). */
	if ((l & LAYER_SECCOMP) && s->plan->extra_filter)
		(void)json_object_set_new(
		    o, "seccomp_second",
		    json_pack("{s:I}", "instructions", (json_int_t)s->plan->n_extra_filter));
	if (s->plan->n_egress == 0 && s->pid > 0)
		(void)json_object_set_new(o, "proxy", json_string("no network"));
	else if (s->proxy_pid > 0)
		(void)json_object_set_new(o, "proxy", json_string("active"));
	(void)json_object_set_new(o, "fs_write", json_string(s->fw_mode ? s->fw_mode : "none"));
	if (s->plan->audit_reads)
		(void)json_object_set_new(o, "fs_read",
					  json_string(s->fr_mode ? s->fr_mode : "none"));
	if (s->unpriv && (l & LAYER_USERNS)) {
		char id[160];

		snprintf(id, sizeof(id),
			 "unprivileged: the agent (%u:%u inside) is the invoking user %u:%u, "
			 "plain bind grants",
			 (unsigned)NS_AGENT_UID, (unsigned)NS_AGENT_GID, (unsigned)geteuid(),
			 (unsigned)getegid());
		(void)json_object_set_new(o, "identity", json_string(id));
	}
	return o;
}

/* The names of the layers in place, for the summary. A cgroup of "none"
 * is none. */
static void layers_names(json_t *layers, char *buf, size_t len)
{
	const char *k;
	json_t *v;
	size_t n = 0;

	buf[0] = '\0';
	json_object_foreach(layers, k, v)
	{
		if (json_is_string(v) && strcmp(json_string_value(v), "none") == 0 &&
		    strcmp(k, "capabilities") != 0)
			continue;
		/* json_object_foreach() steps on from k: name is a copy. */
		const char *name = k;

		if (strcmp(k, "proxy") == 0 && json_is_string(v) &&
		    strcmp(json_string_value(v), "no network") == 0)
			name = "no-network"; /* the netns has only lo */
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? " " : "", name);
	}
	if (n >= len && len > 0)
		buf[len - 1] = '\0';
}

/*
 * sandbox.start and the grants, then the first boundary. With listener_fd
 * (else -1), the seccomp listener starts once they are written, so that
 * its first record, pid 1's exec, follows them. The fsync happens outside
 * the lock: the listener answers and records execs meanwhile, and pid 1's
 * exec does not wait for the disk.
 */
static void emit_start(supervisor *s, int listener_fd)
{
	_cleanup_free_ char *plan_json = NULL;
	json_t *data, *layers;
	size_t argc;
	int fd, dirfd;

	if (s->started) {
		/* Execs are answered only once their records can be written. */
		if (listener_fd >= 0 && s->start_written)
			start_listener(s, listener_fd);
		else if (listener_fd >= 0)
			(void)close(listener_fd);
		return;
	}
	s->started = true;
	plan_json = plan_to_json(s->plan);
	layers = layers_json(s);
	layers_names(layers, s->res->layers, sizeof(s->res->layers));
	for (argc = 0; s->o->argv && s->o->argv[argc]; argc++)
		;
	data = json_pack("{s:o, s:o, s:s, s:s, s:o, s:o}", "plan",
			 plan_json ? json_loads(plan_json, 0, NULL) : json_null(), "command",
			 au_argv((const char *const *)s->o->argv, argc), "policy_source",
			 s->o->policy_source ? s->o->policy_source : "", "policy_digest",
			 s->o->policy_digest ? s->o->policy_digest : "", "token",
			 s->o->token_id ? json_pack("{s:s, s:i}", "id", s->o->token_id, "caveats",
						    (int)s->o->token_caveats)
					: json_null(),
			 "layers", layers);
	if (data && s->not_enforced[0])
		(void)json_object_set_new(data, "not_enforced", json_pack("[s]", s->not_enforced));
	if (data && s->ws_not_enforced[0]) {
		json_t *ne = json_object_get(data, "not_enforced");

		if (!ne)
			(void)json_object_set_new(data, "not_enforced", ne = json_array());
		(void)json_array_append_new(ne, json_string(s->ws_not_enforced));
	}
	if (data) {
		json_t *gs = ws_run_start_json(s->ws); /* a reference of ours, or NULL */

		if (gs)
			(void)json_object_set_new(data, "grant_storage", gs);
	}
	if (data && s->transparent[0])
		(void)json_object_set_new(data, "transparent", json_string(s->transparent));
	/* How far setup got: "complete", or the step that refused the run. */
	if (data) {
		char setup[64];

		if (s->ready)
			snprintf(setup, sizeof(setup), "complete");
		else
			snprintf(setup, sizeof(setup), "refused at %.40s",
				 s->diag->path[0] ? s->diag->path : "an unknown step");
		(void)json_object_set_new(data, "setup", json_string(setup));
	}
	pthread_mutex_lock(&s->emit_lock);
	emit_locked(s, "sandbox.start", data);
	for (size_t i = 0; i < s->plan->n_grants; i++) {
		const plan_grant *g = &s->plan->grants[i];

		emit_locked(s, "fs.grant",
			    json_pack("{s:s, s:s, s:s}", "path", g->path, "at", g->at, "mode",
				      plan_grant_mode_name(g->mode)));
	}
	if (s->audit_stopped) {
		/* Nothing of the sandbox has run: a refused run. Without a
		 * listener its exec fails (ENOSYS), and it is being killed.
		 * A run refused already keeps its own reason. */
		if (!s->setup_failed)
			diag_fail(s->diag, au_failed(s->audit, NULL, NULL), "audit",
				  "cannot write the start of audit log %s: %s", s->res->audit_path,
				  strerror(-au_failed(s->audit, NULL, NULL)));
		s->setup_failed = true;
		if (listener_fd >= 0)
			(void)close(listener_fd);
	} else {
		s->start_written = true;
		if (listener_fd >= 0)
			start_listener(s, listener_fd);
	}
	(void)au_sync_detach(s->audit, &fd, &dirfd);
	pthread_mutex_unlock(&s->emit_lock);
	if (fd >= 0)
		(void)fsync(fd);
	if (dirfd >= 0)
		(void)fsync(dirfd);
	(void)safe_close(fd);
	(void)safe_close(dirfd);
	/* Only now: fs.write records must follow sandbox.start in the log, and
	 * the kernel keeps the events queued meanwhile. */
	if (fw_fd(s->fw) >= 0)
		(void)ep_add(s, fw_fd(s->fw), EV_FSWATCH);
}

/* The exec listener waits for room in the log's bucket: the agent's exec
 * (or refused call) waits with it, and no record is lost. */
static void pace_wait(supervisor *s)
{
	for (;;) {
		struct timespec ts = {0};
		uint64_t w;

		pthread_mutex_lock(&s->emit_lock);
		w = s->audit_stopped ? 0 : pace_wait_ns(&s->pace, now_ns());
		pthread_mutex_unlock(&s->emit_lock);
		if (w == 0)
			return;
		ts.tv_nsec = (long)(w < 100000000ull ? w : 100000000ull);
		(void)nanosleep(&ts, NULL);
	}
}

/* dn_emit_fn: a record of the listener's thread, under emit_lock. */
static int emit_denial(void *userdata, const char *event, json_t *data)
{
	return emit_locked(userdata, event, data);
}

static int on_event(const char *event, json_t *data, void *userdata)
{
	supervisor *s = userdata;
	int r;

	pace_wait(s);
	pthread_mutex_lock(&s->emit_lock);
	if (strcmp(event, "syscall.denied") == 0 && s->plan->n_egress > 0) {
		json_t *denied, *limit;

		/* a raw socket is a direct attempt: recorded as such, rate-limited */
		r = px_raw_socket_event(&s->raw_sockets, data, now_ns(), &denied, &limit);
		if (r != 0) {
			json_decref(data);
			if (limit && (r = emit_locked(s, "limit.hit", limit)) < 0)
				json_decref(denied);
			else if (denied)
				r = emit_locked(s, "net.denied", denied);
			pthread_mutex_unlock(&s->emit_lock);
			return r < 0 ? r : 0;
		}
	}
	if (strcmp(event, "syscall.denied") == 0) {
		s->res->syscalls_denied++;
		r = dn_syscall_denied(&s->denials, data, now_ns());
	} else if (strcmp(event, "fs.denied") == 0) {
		r = dn_fs_denied(&s->denials, data, now_ns());
	} else {
		r = emit_locked(s, event, data);
	}
	pthread_mutex_unlock(&s->emit_lock);
	return r;
}

static int ep_add(supervisor *s, int fd, uint32_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)tag << 32 | (uint32_t)fd};

	return epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static void kill_sandbox(supervisor *s)
{
	if (s->pidfd >= 0)
		(void)sys_pidfd_send_signal(s->pidfd, SIGKILL);
	if (s->cg)
		(void)cg_kill_all(s->cg);
}

static void arm(int tfd, uint64_t ns)
{
	struct itimerspec its = {.it_value = {.tv_sec = (time_t)(ns / 1000000000ULL),
					      .tv_nsec = (long)(ns % 1000000000ULL)}};

	(void)timerfd_settime(tfd, 0, &its, NULL);
}

/*
 * The seccomp listener gets a thread of its own, blocked in NOTIF_RECV: a
 * notification's round trip then costs no trip through our event loop.
 * Only on Linux 6.6 and later: before, NOTIF_RECV keeps waiting after the
 * last process under the filter is gone (6.6 made it return ENOENT), so
 * the thread could never end. Otherwise the event loop serves the
 * listener, and sees the hang-up with poll.
 */
static void start_listener(supervisor *s, int fd)
{
	size_t n = ll_writable(s->plan, s->writable, SF_MAX_WRITABLE);

	/* Landlock's status begins "fs=1" when it confines files (child.c,
	 * step_landlock). */
	s->walls = (sf_walls){
	    .landlock = (s->layers & LAYER_LANDLOCK) && strncmp(s->landlock, "fs=1", 4) == 0,
	    .n_writable = n,
	    .writable = s->writable,
	};
	if (sf_listener_start(fd, &s->walls, on_event, s, &s->listener) < 0) {
		s->notify_fd = fd;
		(void)ep_add(s, s->notify_fd, EV_NOTIFY);
	}
}

static void handle_sync(supervisor *s)
{
	sync_msg m;
	int fds[SYNC_MAX_FDS];
	size_t n_fds = 0;
	int r = sync_recv_fds(s->sync, &m, fds, SYNC_MAX_FDS, &n_fds);
	int fd = n_fds > 0 ? fds[0] : -1;

	/* only the listener message carries more than one fd */
	for (size_t i = 1; i < n_fds && (r < 0 || m.type != SYNC_LISTENER); i++)
		fds[i] = safe_close(fds[i]);

	if (r == -EPIPE || r == -ECONNRESET) {
		/* The socket closed on exec: pid 1 is running our init. */
		(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, s->sync, NULL);
		s->sync = safe_close(s->sync);
		return;
	}
	if (r < 0) {
		s->setup_failed = true;
		diag_fail(s->diag, r, "protocol", "malformed message from the sandbox child");
		kill_sandbox(s);
		(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, s->sync, NULL);
		s->sync = safe_close(s->sync);
		(void)safe_close(fd);
		return;
	}
	switch ((sync_type)m.type) {
	case SYNC_USERNS: {
		char um[96], gm[96];

		if (s->unpriv)
			break; /* mapped before "go"; a second request is not ours to grant */

		snprintf(um, sizeof(um), "0 %u 1\n%u %u 1\n%u %u 1\n", (unsigned)s->id_base,
			 (unsigned)NS_AGENT_UID, (unsigned)s->id_base + 1, (unsigned)NS_NOBODY_UID,
			 (unsigned)s->id_base + 2);
		snprintf(gm, sizeof(gm), "0 %u 1\n%u %u 1\n%u %u 1\n", (unsigned)s->id_base,
			 (unsigned)NS_AGENT_GID, (unsigned)s->id_base + 1, (unsigned)NS_NOBODY_GID,
			 (unsigned)s->id_base + 2);
		r = ns_write_id_maps(s->pid, um, gm);
		if (r < 0) {
			s->setup_failed = true;
			diag_fail(s->diag, r, "userns", "cannot write the id maps: %s",
				  strerror(-r));
			kill_sandbox(s);
			break;
		}
		m = (sync_msg){.type = SYNC_MAPPED};
		(void)sync_send(s->sync, &m, -1);
		break;
	}
	case SYNC_LISTENER:
		if (fd < 0 || s->proxy_fd < 0 || s->proxy_seed.listen_fd >= 0) {
			for (size_t i = 1; i < n_fds; i++)
				(void)close(fds[i]);
			break;
		}
		m.what[sizeof(m.what) - 1] = 0;
		snprintf(s->transparent, sizeof(s->transparent), "%s%s",
			 m.value == 1 && n_fds > 1 ? "on" : "off: ", m.value == 1 ? "" : m.what);
		/* The worker started in prepare_inspection(). One that cannot
		 * take them (it died) is replaced, from the seed, on its EOF
		 * (proxy_lost). */
		r = px_seed_take_sockets(&s->proxy_seed, TAKE_FD(fd), fds + 1, n_fds - 1);
		if (r >= 0 && px_hand_sockets(&s->proxy_seed, s->proxy_fd) < 0)
			(void)kill(s->proxy_pid, SIGKILL);
		if (r < 0) {
			s->setup_failed = true;
			diag_fail(s->diag, r, "proxy", "cannot start the egress proxy: %s%s",
				  strerror(-r), px_program_hint(r));
			kill_sandbox(s);
			break;
		}
		(void)ep_add(s, s->proxy_fd, EV_PROXY);
		break;
	case SYNC_LAYERS:
		/* The child's mounts are built: its /tmp is there to watch. */
		(void)fw_watch_tmp(s->fw, s->pid);
		/* Its reads too; a thread only now, after the fork of the child. */
		if (fr_start(s->plan, s->pid, on_event, s, &s->fr, &s->fr_mode) < 0)
			s->fr_mode = "none (out of memory)";
		s->landlock_abi = m.value;
		snprintf(s->landlock, sizeof(s->landlock), "%s", m.what);
		break;
	case SYNC_READY:
		if (s->ready)
			break;
		s->ready = true;
		s->layers = m.layers;
		if (fd >= 0 &&
		    (!(m.layers & LAYER_SECCOMP_NOTIFY) || s->notify_fd >= 0 || s->listener))
			fd = safe_close(fd);
		/* sandbox.start goes first: pid 1's exec is the listener's
		 * first record. */
		emit_start(s, TAKE_FD(fd));
		break;
	case SYNC_FAILED:
		s->setup_failed = true;
		if (!s->ready)
			s->layers = m.layers;
		m.err = m.err > 0 && m.err < 4096 ? m.err : EPROTO;
		diag_fail(s->diag, -m.err, m.step, "%s%s%s", m.what, m.what[0] ? ": " : "",
			  strerror(m.err));
		host_explain_refusal(s->diag, -m.err, s->unpriv); /* a chroot, a sysctl... */
		break;
	case SYNC_PTY:
		/* The sandbox's own pty: relayed to the host terminal. */
		if (fd >= 0 && s->pty && isatty(fd))
			(void)pty_relay_attach(s->pty, TAKE_FD(fd), s->ep, EV_PTY);
		break;
	case SYNC_GO:
	case SYNC_MAPPED:
	case SYNC_CGROUP:
	case _SYNC_TYPE_MAX:
		break;
	}
	(void)safe_close(fd);
}

/* Bounds what a worker can make the supervisor hold: more than it ever has
 * connections open (PX_MAX_CONNS, a stream each). */
#define PX_OPEN_MAX 8192u

static void request_key(const json_t *data, char *key, size_t size)
{
	json_int_t id = json_integer_value(json_object_get(data, "id"));

	snprintf(key, size, "%lld", id > 0 ? (long long)id : 0LL);
}

/* A request the worker sends upstream next: held until its completion. */
static void request_opened(supervisor *s, const json_t *data)
{
	char key[24];
	json_t *copy;

	request_key(data, key, sizeof(key));
	if (strcmp(key, "0") == 0)
		return;
	if (!s->px_open)
		s->px_open = json_object();
	if (!s->px_open || json_object_size(s->px_open) >= PX_OPEN_MAX)
		return;
	copy = json_deep_copy(data);
	if (copy)
		(void)json_object_del(copy, "events_dropped");
	(void)json_object_set_new(s->px_open, key, copy);
}

static void request_closed(supervisor *s, const json_t *data)
{
	char key[24];

	if (!s->px_open || !json_object_get(data, "id"))
		return;
	request_key(data, key, sizeof(key));
	(void)json_object_del(s->px_open, key);
}

static int by_id(const void *a, const void *b)
{
	json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "id"));
	json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "id"));

	return (x > y) - (x < y);
}

/*
 * The requests whose worker ended before it reported them (killed, or the
 * run ended with them in flight): each gets the completion record the
 * worker could not send, from what its net.request.start said, in id order.
 */
static void complete_open_requests(supervisor *s, const char *reason)
{
	_cleanup_free_ json_t **open = NULL;
	const char *key;
	json_t *v;
	size_t n = 0;

	if (!s->px_open || json_object_size(s->px_open) == 0)
		return;
	open = calloc(json_object_size(s->px_open), sizeof(*open));
	if (!open)
		return;
	json_object_foreach(s->px_open, key, v) open[n++] = json_incref(v);
	json_object_clear(s->px_open);
	qsort(open, n, sizeof(*open), by_id);
	for (size_t i = 0; i < n; i++) {
		json_t *d = open[i];

		(void)json_object_set_new(d, "decision", json_string("allow"));
		(void)json_object_set_new(d, "reason", json_string(reason));
		(void)json_object_set_new(d, "status", json_integer(0));
		(void)json_object_set_new(d, "completed", json_false());
		s->res->requests_allowed++;
		(void)emit(s, "net.request", d);
	}
}

/* One event: 1, 0 when none is waiting, -EPIPE once the worker has closed
 * its end. */
static int handle_proxy_one(supervisor *s)
{
	/* 64 KiB per event: recv() fills what is read, nothing else is read. */
	_noinit_ char buf[MAX_EVENT_BYTES];
	_cleanup_free_ char *event = NULL;
	json_t *data = NULL;
	ssize_t n = recv(s->proxy_fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, s->proxy_fd, NULL);
			return -EPIPE;
		}
		return 0;
	}
	if (px_event_parse(buf, (size_t)n, &event, &data) < 0)
		return 1; /* a worker that speaks nonsense is ignored, never trusted */
	if (strcmp(event, "net.request") == 0 || strcmp(event, "net.tunnel.close") == 0) {
		json_int_t out = json_integer_value(json_object_get(data, "bytes_out"));
		json_int_t in = json_integer_value(json_object_get(data, "bytes_in"));
		const char *decision = json_string_value(json_object_get(data, "decision"));

		s->res->bytes_out += out > 0 ? (uint64_t)out : 0;
		s->res->bytes_in += in > 0 ? (uint64_t)in : 0;
		/* A refused request also comes as net.denied, counted there. */
		if (strcmp(event, "net.request") == 0 &&
		    !(decision && strcmp(decision, "deny") == 0))
			s->res->requests_allowed++;
		if (strcmp(event, "net.request") == 0)
			request_closed(s, data);
	} else if (strcmp(event, "net.request.start") == 0) {
		request_opened(s, data);
	} else if (strcmp(event, "net.denied") == 0) {
		s->res->requests_denied++;
	}
	(void)emit(s, event, data);
	return 1;
}

/* A batch per wake-up, bounded: a worker past its queue waits for us
 * (backpressure), and one system call of epoll per record would slow it. */
static int handle_proxy(supervisor *s)
{
	for (int i = 0; i < 64; i++) {
		int r = handle_proxy_one(s);

		if (r <= 0)
			return r;
	}
	return 0;
}

/*
 * The worker closed its event socket while the sandbox runs: it died (or
 * gave up its socket, which ends it too). Record how, then start another on
 * the same listener, with the same configuration and the counters the dead
 * one left (docs/proxy.md, "A worker that dies"); after PX_MAX_RESTARTS,
 * stop the sandbox: without its proxy it has no network and no record.
 */
static void proxy_lost(supervisor *s)
{
	int status = 0, r = -ECHILD;
	pid_t dead = s->proxy_pid;
	bool restart;

	(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, s->proxy_fd, NULL);
	s->proxy_fd = safe_close(s->proxy_fd);
	/* one that lives on without its socket is of no use: the status of
	 * one already exiting is not changed by this */
	(void)kill(dead, SIGKILL);
	while (waitpid(dead, &status, 0) < 0 && errno == EINTR)
		;
	s->proxy_pid = 0;
	complete_open_requests(s, "proxy-exit");
	restart = !s->exited && s->res->proxy_restarts < PX_MAX_RESTARTS;
	if (restart)
		r = px_spawn(&s->proxy_seed, &s->proxy_pid, &s->proxy_fd);
	emit(s, "proxy.exit",
	     json_pack("{s:i, s:o, s:i, s:i, s:s}", "pid", (int)dead, "status",
		       WIFEXITED(status) ? json_integer(WEXITSTATUS(status)) : json_null(),
		       "signal", WIFSIGNALED(status) ? WTERMSIG(status) : 0, "restarts",
		       (int)s->res->proxy_restarts + (r >= 0), "action",
		       r >= 0	   ? "restarted on the same listener"
		       : restart   ? "cannot start another worker: stopping the sandbox"
		       : s->exited ? "the sandbox had ended"
				   : "restart limit reached: stopping the sandbox"));
	if (r >= 0) {
		s->res->proxy_restarts++;
		(void)ep_add(s, s->proxy_fd, EV_PROXY);
		return;
	}
	if (!s->exited) {
		s->res->proxy_failed = true;
		kill_sandbox(s);
	}
}

/*
 * The sandbox is gone: ask the worker to close and report what is still
 * open (shutdown of our end), and take its last events before sandbox.exit,
 * bounded so that a stuck worker cannot hold the run.
 */
static void drain_proxy(supervisor *s)
{
	uint64_t deadline = now_ns() + PROXY_DRAIN_NS;

	if (s->proxy_fd < 0)
		return;
	/* No successor now: the last copies of the sandbox's sockets are the
	 * worker's, whose exit the run does not wait for (px_worker_stop). */
	px_seed_done(&s->proxy_seed);
	(void)shutdown(s->proxy_fd, SHUT_WR);
	for (;;) {
		uint64_t t = now_ns();
		struct pollfd p = {.fd = s->proxy_fd, .events = POLLIN};

		if (t >= deadline || poll(&p, 1, (int)((deadline - t) / 1000000ULL) + 1) <= 0)
			break;
		if (handle_proxy(s) < 0)
			break;
	}
}

/* pid 1 has ended: its status taken, once. */
static bool pid1_exited(supervisor *s)
{
	siginfo_t si = {0};

	if (!s->exited && waitid(P_PIDFD, (id_t)s->pidfd, &si, WEXITED | WNOHANG) == 0 &&
	    si.si_pid) {
		s->exited = true;
		s->wait_status =
		    si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : (si.si_status & 0x7f);
	}
	return s->exited;
}

/*
 * A signal asks the run to end: the sandbox gets it (pid 1 passes it on to
 * the command) and GRACE_NS to end, then it is killed. Another signal
 * meanwhile (a second Ctrl-C) ends it at once.
 */
static void stop_sandbox(supervisor *s, int sig)
{
	if (s->res->stop_signal) {
		if (!pid1_exited(s)) {
			s->res->forced_kill = true;
			kill_sandbox(s);
		}
		return;
	}
	s->res->stop_signal = sig;
	if (s->pidfd >= 0)
		(void)sys_pidfd_send_signal(s->pidfd, sig);
	arm(s->gracefd, GRACE_NS);
}

static void handle_signal(supervisor *s)
{
	struct signalfd_siginfo si;

	if (io_read_exact(s->sigfd, &si, sizeof(si)) < 0)
		return;
	if (si.ssi_signo == SIGWINCH) {
		pty_resize(s->pty);
		return;
	}
	/* SIGCHLD: the pidfd tells us about pid 1; other children are
	 * reaped at exit. */
	switch (sgn_judge(&si)) {
	case SGN_STOP:
		stop_sandbox(s, (int)si.ssi_signo);
		break;
	case SGN_CRASH:
		sgn_crash((int)si.ssi_signo);
	case SGN_IGNORE:
	case _SGN_VERDICT_MAX:
	case _SGN_VERDICT_INVALID:
		break;
	}
}

/* What came after the end: dropped, but a fault still ends us and no
 * job-control stop is left pending for the restored mask to deliver. */
static void drain_signals(supervisor *s)
{
	struct signalfd_siginfo si;

	while (s->sigfd >= 0 && read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (sgn_judge(&si) == SGN_CRASH)
			sgn_crash((int)si.ssi_signo);
}

/* A signed log gets its time-based checkpoint also while it is quiet
 * (docs/audit.md, "The public-key seal"): the loop wakes for it. */
static int checkpoint_timeout_ms(supervisor *s)
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

/*
 * audit.sample_interval (docs/audit.md, res.sample): the cgroup's CPU
 * time, memory and tasks now, and the bytes through the proxy so far (the
 * requests and tunnels that ended), one record per tick. A field the
 * kernel does not give is left out.
 */
static void sample(supervisor *s)
{
	const sc_run_result *r = s->res;
	json_t *d;
	cg_stats st;

	if (!s->start_written || s->exited || s->audit_stopped)
		return;
	d = json_pack("{s:I, s:I}", "bytes_out", (json_int_t)r->bytes_out, "bytes_in",
		      (json_int_t)r->bytes_in);
	if (!d)
		return;
	if (s->cg && cg_read_stats(s->cg, &st) >= 0) {
		const struct {
			const char *name;
			uint64_t v;
		} f[] = {
		    {"cpu_ns", st.cpu_usage_ns},   {"throttled_ns", st.throttled_ns},
		    {"memory", st.memory_current}, {"pids", st.pids_current},
		    {"oom_kills", st.oom_kills},
		};

		for (size_t i = 0; i < ELEMENTSOF(f); i++)
			if (f[i].v != UINT64_MAX && f[i].v <= INT64_MAX)
				(void)json_object_set_new(d, f[i].name,
							  json_integer((json_int_t)f[i].v));
	}
	(void)emit(s, "res.sample", d);
}

static int event_loop(supervisor *s)
{
	while (!s->exited) {
		struct epoll_event evs[16];
		int n = epoll_wait(s->ep, evs, 16, checkpoint_timeout_ms(s));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			uint64_t ticks;

			switch ((uint32_t)(evs[i].data.u64 >> 32)) {
			case EV_SYNC:
				if (s->sync >= 0)
					handle_sync(s);
				break;
			case EV_PIDFD:
				(void)pid1_exited(s);
				break;
			case EV_SIGNAL:
				handle_signal(s);
				break;
			case EV_WALL:
				(void)!read(s->wallfd, &ticks, sizeof(ticks));
				/* A supervisor held (SIGSTOP) past the deadline
				 * sees the timer and pid 1's end at once: a
				 * command that ended by itself is no timeout. */
				if (pid1_exited(s))
					break;
				s->res->timed_out = true;
				kill_sandbox(s);
				break;
			case EV_SAMPLE:
				(void)!read(s->samplefd, &ticks, sizeof(ticks));
				sample(s);
				break;
			case EV_GRACE:
				(void)!read(s->gracefd, &ticks, sizeof(ticks));
				if (!pid1_exited(s)) {
					s->res->forced_kill = true;
					kill_sandbox(s);
				}
				break;
			case EV_NOTIFY:
				if (evs[i].events & EPOLLIN)
					(void)sf_notify_handle(s->notify_fd, &s->walls, on_event,
							       s);
				else if (evs[i].events & (EPOLLHUP | EPOLLERR))
					/* Every process under the filter is gone; the
					 * hangup would otherwise wake us until the end. */
					(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, s->notify_fd, NULL);
				break;
			case EV_PROXY:
				if (s->proxy_fd >= 0 && handle_proxy(s) == -EPIPE)
					proxy_lost(s);
				break;
			case EV_FSWATCH:
				if (fw_handle(s->fw, on_event, s) < 0)
					(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, fw_fd(s->fw), NULL);
				break;
			case EV_SPAWN:
				spawn_server_dispatch(s->spawn);
				break;
			case EV_SESSION:
				ss_dispatch(s->o->session, (int)(uint32_t)evs[i].data.u64,
					    evs[i].events);
				break;
			case EV_PTY:
				if (pty_pump(s->pty, (int)(uint32_t)evs[i].data.u64) < 0)
					(void)epoll_ctl(s->ep, EPOLL_CTL_DEL,
							(int)(uint32_t)evs[i].data.u64, NULL);
				break;
			default:
				break;
			}
		}
	}
	return 0;
}

/* pid 1's binary: next to ours (build tree, relocated installs), else the
 * configured libexecdir. It must be a regular file only root can change, or,
 * for an unprivileged supervisor, root or the invoking user (whose own build
 * it may be: whoever can change it can already act as that user). */
static int open_init(int *reterr)
{
	int fd = sibling_open(INIT_ARGV0, SANDCAP_LIBEXECDIR, O_RDONLY);

	*reterr = fd < 0 ? fd : 0;
	return fd;
}

static bool plan_has_limits(const sc_plan *p)
{
	return p->memory != PLAN_UNLIMITED || p->cpu_millis != PLAN_UNLIMITED ||
	       p->pids != PLAN_UNLIMITED;
}

/* A run refused during setup: what was set up, the files already written
 * (if the child got that far), and sandbox.exit with the refusal. */
static void emit_refusal(supervisor *s)
{
	if (!s->started)
		emit_start(s, -1);
	(void)fw_finish(s->fw, on_event, s);
	fr_finish(s->fr);
	emit_final(s, "sandbox.exit",
		   json_pack("{s:s, s:s}", "error", s->diag->path, "detail", s->diag->message));
}

static void collect(supervisor *s)
{
	sc_run_result *res = s->res;
	cg_stats st;
	int status = s->wait_status;

	res->wall_ns = now_ns() - s->t0;
	res->memory_peak = UINT64_MAX;
	if (s->cg && cg_read_stats(s->cg, &st) >= 0) {
		res->cpu_ns = st.cpu_usage_ns != UINT64_MAX ? st.cpu_usage_ns : 0;
		res->throttled_ns = st.throttled_ns != UINT64_MAX ? st.throttled_ns : 0;
		res->cpu_throttled = st.nr_throttled != UINT64_MAX && st.nr_throttled > 0;
		res->memory_peak = st.memory_peak;
		res->oom_kills = st.oom_kills != UINT64_MAX ? st.oom_kills : 0;
		res->oom_killed = res->oom_kills > 0;
		res->pids_limited = st.pids_max_hits != UINT64_MAX && st.pids_max_hits > 0;
	}
	if (res->timed_out) {
		res->exit_status = SC_EXIT_TIMEOUT;
		res->signal = SIGKILL;
	} else if (WIFEXITED(status)) {
		/* init exits with the command's status, 128+N for signal N */
		res->exit_status = WEXITSTATUS(status);
		res->signal = res->exit_status > 128 && res->exit_status < 128 + 65
				  ? res->exit_status - 128
				  : 0;
	} else {
		res->signal = WTERMSIG(status);
		res->exit_status = 128 + res->signal;
	}
}

static void emit_exit(supervisor *s)
{
	const sc_run_result *r = s->res;
	json_t *data;
	uint64_t denied;

	if (r->timed_out)
		emit_final(
		    s, "limit.hit",
		    json_pack("{s:s, s:s}", "limit", "wall", "detail", "wall-clock limit reached"));
	if (r->oom_killed)
		emit_final(s, "limit.hit",
			   json_pack("{s:s, s:s}", "limit", "memory", "detail",
				     "OOM kill in the sandbox cgroup"));
	if (r->pids_limited)
		emit_final(s, "limit.hit",
			   json_pack("{s:s, s:s}", "limit", "pids", "detail",
				     "fork refused by pids limit"));
	if (r->cpu_throttled)
		emit_final(s, "limit.hit",
			   json_pack("{s:s, s:s}", "limit", "cpu_throttled", "detail",
				     "CPU quota throttled"));
	/* requests refused over net.rate come folded, counted in limit.hit */
	if (__builtin_add_overflow(r->requests_denied, r->tally.requests_over_rate, &denied))
		denied = UINT64_MAX;
	data =
	    json_pack("{s:i, s:i, s:b, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		      "status", r->exit_status, "signal", r->signal, "timed_out", r->timed_out,
		      "oom_killed", r->oom_killed, "cpu_ns", (json_int_t)r->cpu_ns, "throttled_ns",
		      (json_int_t)r->throttled_ns, "memory_peak",
		      r->memory_peak == UINT64_MAX ? (json_int_t)-1 : (json_int_t)r->memory_peak,
		      "oom_kills", (json_int_t)r->oom_kills, "wall_ns", (json_int_t)r->wall_ns,
		      "bytes_out", (json_int_t)r->bytes_out, "bytes_in", (json_int_t)r->bytes_in,
		      "requests_allowed", (json_int_t)r->requests_allowed, "requests_denied",
		      (json_int_t)denied, "syscalls_denied", (json_int_t)r->syscalls_denied,
		      "files_written", (json_int_t)r->files_written);
	/* Stopped by a signal to us: which, and whether the grace ran out. */
	if (data && r->stop_signal) {
		char name[32];

		sgn_name(r->stop_signal, name, sizeof(name));
		(void)json_object_set_new(
		    data, "stopped_by",
		    json_pack("{s:s, s:b}", "signal", name, "forced_kill", r->forced_kill));
	}
	if (data && s->ws_exit)
		(void)json_object_set_new(data, "workspaces", TAKE_PTR(s->ws_exit));
	if (data && r->workspace_error[0])
		(void)json_object_set_new(data, "workspace_error", json_string(r->workspace_error));
	/* The records refused after the log failed: they are not in it. */
	if (data && s->audit_stopped)
		(void)json_object_set_new(data, "audit_unrecorded",
					  json_integer((json_int_t)r->audit_unrecorded));
	emit_final(s, "sandbox.exit", data);
}

/* The listener's last records go in before anything that follows the
 * sandbox's end. Its thread returns once no process carries the filter:
 * pid 1 reaped (its death took the whole pid namespace with it). */
static void stop_listener(supervisor *s)
{
	if (!s->listener)
		return;
	if (!s->exited) {
		siginfo_t si = {0};

		kill_sandbox(s);
		while (waitid(P_PIDFD, (id_t)s->pidfd, &si, WEXITED) < 0 && errno == EINTR)
			;
		s->exited = true;
		s->wait_status =
		    si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : (si.si_status & 0x7f);
	}
	(void)sf_listener_stop(s->listener);
	s->listener = NULL;
}

static void teardown(supervisor *s)
{
	stop_listener(s);
	if (s->proxy_pid > 0) {
		/* EOF on its event socket ends the worker; make sure. */
		s->proxy_fd = safe_close(s->proxy_fd);
		px_worker_stop(s->proxy_pid);
	}
	s->spawn = spawn_server_free(s->spawn); /* before the cgroup: they live in it */
	/* The overlays and their tmpfs go before the cgroup their pages are
	 * charged to. */
	ns_sources_free(s->sources, s->plan->n_grants);
	s->sources = NULL;
	s->ws = ws_run_free(s->ws);
	json_decref(s->ws_exit);
	s->cg = cg_destroy(s->cg);
	/* We are the subreaper of everything we started: no zombie of ours is
	 * left to the host's init, but a proxy worker still exiting
	 * (px_worker_stop). */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	s->pty = pty_free(s->pty);
	if (s->audit) {
		const char *event = NULL;
		int failed;

		s->res->audit_sealed = au_seal(s->audit) == 0;
		failed = au_failed(s->audit, &event, &s->res->audit_failed_at);
		if (failed < 0) {
			s->res->audit_error = -failed;
			snprintf(s->res->audit_failed_event, sizeof(s->res->audit_failed_event),
				 "%s", event);
		}
		s->res->audit_records = au_records(s->audit);
		snprintf(s->res->audit_hash, sizeof(s->res->audit_hash), "%s",
			 au_last_hash(s->audit));
		s->audit = au_close(s->audit);
	}
	/* After the seal: the fanotify group is closed meanwhile (fswatch.c). */
	s->fw = fw_free(s->fw);
	s->fr = fr_free(s->fr);
	(void)safe_close(s->notify_fd);
	(void)safe_close(s->proxy_fd);
	json_decref(s->px_open);
	px_seed_done(&s->proxy_seed);
	ns_set_sandbox_ca(NULL);
	s->proxy_extras = px_extras_free(s->proxy_extras);
	(void)safe_close(s->sync);
	(void)safe_close(s->pidfd);
	drain_signals(s);
	(void)safe_close(s->sigfd);
	(void)safe_close(s->wallfd);
	(void)safe_close(s->gracefd);
	(void)safe_close(s->samplefd);
	(void)safe_close(s->ep);
	(void)safe_close(s->exe_fd);
	(void)safe_close(s->child_sync);
	(void)safe_close(s->ctl);
	(void)safe_close(s->child_ctl);
	free(s->init_argv);
	if (s->mask_saved)
		sigprocmask(SIG_SETMASK, &s->saved_mask, NULL);
}

/* Written with our privilege, this also resets the floor the sandbox could
 * lower itself to without it (oom_score_adj_min, fs/proc/base.c), so a
 * child cannot make itself unkillable as its sub-supervisor is. Before the
 * sandbox runs anything: its processes inherit the value. */
static int set_oom_score_adj(pid_t pid, int value)
{
	char path[64], num[16];

	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)pid);
	snprintf(num, sizeof(num), "%d", value);
	return io_write_file_at(AT_FDCWD, path, num);
}

/* Events of the server itself (spawn.denied, spawn.error) and of every
 * child, already tagged with its id: into our log like our own. */
static void spawn_emit(const char *event, json_t *data, void *userdata)
{
	emit(userdata, event, data);
}

/*
 * The sandbox's cgroup: fail closed when the policy sets limits
 * (principle 4); with best_effort, run without and say what was let go.
 */
static int make_cgroup(supervisor *s)
{
	const sc_plan *p = s->plan;
	sc_run_result *res = s->res;
	char cgname[64], why[256] = "";
	cg_version cgv;
	bool v1;
	int r;

	snprintf(cgname, sizeof(cgname), CGROUP_PREFIX "%s", res->sandbox_id);
	r = cg_create(p, cgname, &s->cg);
	if (r >= 0) {
		snprintf(res->cgroup, sizeof(res->cgroup), "%s",
			 cg_handle_version(s->cg) == CG_V2 ? "v2" : "v1");
		return 0;
	}
	s->cg = NULL;
	v1 = cg_detect(&cgv, why, sizeof(why)) >= 0 && cgv == CG_V1;
	if (plan_has_limits(p) && !p->best_effort) {
		if (s->unpriv)
			return diag_fail(
			    s->diag, r, "cgroup",
			    "the policy sets limits and, without root, sandcap "
			    "enforces them only in a delegated cgroup v2 subtree it may "
			    "write; there is none here (%s%s). Start sandcap in one "
			    "(e.g. systemd-run --user --scope -p Delegate=yes sandcap "
			    "run ...) or set \"best_effort\": true to run without limits",
			    strerror(-r),
			    v1 ? "; this host uses cgroup v1, which is not delegated" : "");
		return diag_fail(s->diag, r, "cgroup", "cannot create the sandbox cgroup (%s): %s",
				 strerror(-r), why);
	}
	if (plan_has_limits(p)) {
		char *q = s->not_enforced, *end = q + sizeof(s->not_enforced);

		if (p->memory != PLAN_UNLIMITED)
			q += snprintf(q, (size_t)(end - q), "limits.memory, ");
		if (p->cpu_millis != PLAN_UNLIMITED)
			q += snprintf(q, (size_t)(end - q), "limits.cpu, ");
		if (p->pids != PLAN_UNLIMITED)
			q += snprintf(q, (size_t)(end - q), "limits.pids, ");
		q -= 2; /* plan_has_limits: at least one was written */
		snprintf(q, (size_t)(end - q), ": no %scgroup (%s)", s->unpriv ? "delegated " : "",
			 strerror(-r));
		snprintf(res->not_enforced, sizeof(res->not_enforced), "%s", s->not_enforced);
	}
	return 0;
}

/*
 * As root the child stops before its "cgroup" step until it is sent the
 * files that move it into its cgroup: none when clone3 placed it there or
 * best_effort let the cgroup go. Unless made before clone3, the cgroup is
 * made now, while the child builds its mounts. On failure the caller kills
 * the child before it runs anything of the sandbox.
 */
static int cgroup_to_child(supervisor *s)
{
	sync_msg m = {.type = SYNC_CGROUP};
	int fds[SYNC_MAX_FDS];
	int r = 0, n = 0;

	if (!s->cg_early)
		r = make_cgroup(s);
	if (r >= 0 && s->cg && cg_clone_fd(s->cg) < 0) {
		n = cg_entry_fds(s->cg, fds, ELEMENTSOF(fds));
		if (n < 0)
			r = diag_fail(s->diag, n, "cgroup", "cannot open the sandbox cgroup: %s",
				      strerror(-n));
	}
	if (r >= 0) {
		r = sync_send_fds(s->sync, &m, fds, (size_t)n);
		if (r < 0)
			diag_fail(s->diag, r, "cgroup", "cannot hand the cgroup to the sandbox: %s",
				  strerror(-r));
	}
	for (int i = 0; i < n; i++)
		(void)close(fds[i]);
	return r;
}

/* Delegation (core/spawn.h): the socket must exist before the child binds it. */
static int start_spawn_server(supervisor *s)
{
	if (s->plan->spawn_max_depth == 0)
		return 0;
	return spawn_server_new(s->plan, s->res->sandbox_id, s->o->token, spawn_emit, s, &s->spawn,
				s->diag);
}

/* A setup step the supervisor runs failed (diag says which and why): the
 * child, if there is one, dies before it runs anything of the sandbox. */
static int refused(supervisor *s, int err)
{
	s->setup_failed = true;
	kill_sandbox(s);
	return err;
}

/* The sandbox CA for its trust bundle, the placeholders for its environment. */
static int prepare_inspection(supervisor *s)
{
	size_t n = 0;
	int r;

	ns_set_sandbox_ca(NULL);
	if (s->plan->n_egress == 0)
		return 0;
	r = px_extras_new(s->plan, &s->proxy_extras);
	if (r < 0)
		return diag_fail(s->diag, r, "proxy",
				 "cannot make the sandbox CA or placeholders: %s%s", strerror(-r),
				 px_program_hint(r));
	/* The worker starts now, while the sandbox is built, and gets its
	 * sockets when the child has made them (SYNC_LISTENER): its start-up
	 * is not on the way to the command's, nor its end's. */
	r = px_seed_prepare(s->plan, s->proxy_extras, &s->proxy_seed);
	if (r >= 0)
		r = px_spawn(&s->proxy_seed, &s->proxy_pid, &s->proxy_fd);
	if (r < 0)
		return diag_fail(s->diag, r, "proxy", "cannot start the egress proxy: %s%s",
				 strerror(-r), px_program_hint(r));
	ns_set_sandbox_ca(px_extras_ca_pem(s->proxy_extras));
	while (s->env[n])
		n++;
	for (size_t i = 0; px_extras_env(s->proxy_extras, i); i++) {
		if (n + 1 >= ELEMENTSOF(s->env))
			return diag_fail(s->diag, -E2BIG, "env", "too many environment variables");
		s->env[n++] = (char *)px_extras_env(s->proxy_extras, i);
	}
	s->env[n] = NULL;
	return 0;
}

/* Phase 1: the sandbox's id, the mode, and what pid 1 will be given. */
static int prepare(supervisor *s)
{
	const sc_run_opts *o = s->o;
	sc_run_result *res = s->res;
	uint8_t rnd[8];
	size_t argc = 0;
	int r;

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return diag_fail(s->diag, -EIO, "id", "no randomness for the sandbox id");
	snprintf(res->sandbox_id, sizeof(res->sandbox_id), "sc-%02x%02x%02x%02x%02x%02x%02x%02x",
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);

	/* Orphans of our own children (a sub-supervisor's sandbox, helpers) come
	 * back to us rather than to the host's init, and are reaped at teardown. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* Not root: the unprivileged mode (docs/decisions.md), refused up front
	 * where the host forbids what it needs. */
	s->unpriv = geteuid() != 0;
	res->unprivileged = s->unpriv;
	if (s->unpriv) {
		char why[256];

		r = ns_unpriv_userns_check(why, sizeof(why));
		if (r < 0)
			return diag_fail(
			    s->diag, r, "userns",
			    "%s: sandcap run without root needs them (or run it as root)", why);
		if (s->plan->spawn_max_depth > 0)
			return diag_fail(s->diag, -EPERM, "spawn",
					 "delegation (\"spawn\") needs root: without it sandcap "
					 "cannot nest a child's cgroup or id range; drop \"spawn\" "
					 "or run as root");
	}
	while (o->argv && o->argv[argc])
		argc++;
	if (argc == 0 && !o->session)
		return diag_fail(s->diag, -EINVAL, "command", "no command given");
	s->init_argv = calloc(argc + 4, sizeof(char *)); /* + a session's fd */
	if (!s->init_argv)
		return diag_fail(s->diag, -ENOMEM, "command", "out of memory");
	s->init_argv[0] = (char *)INIT_ARGV0;
	/* A session's pid 1 serves the control channel (ctl_arg is filled in
	 * by host_setup, before the clone). */
	s->init_argv[1] = (char *)(o->session ? INIT_SESSION_ARG : "--");
	if (o->session)
		s->init_argv[2] = s->ctl_arg;
	else
		memcpy(s->init_argv + 2, o->argv, argc * sizeof(char *));
	r = agent_env_build(s->plan, s->env, ELEMENTSOF(s->env));
	if (r < 0)
		return diag_fail(s->diag, r, "env", "more than %zu environment variables",
				 ELEMENTSOF(s->env) - AGENT_ENV_OWN_MAX - 1);
	r = prepare_inspection(s);
	if (r < 0)
		return r;
	s->exe_fd = open_init(&r);
	if (s->exe_fd < 0)
		return diag_fail(s->diag, r, "init", "cannot find %s next to sandcap or in %s: %s",
				 INIT_ARGV0, SANDCAP_LIBEXECDIR, strerror(-r));
	return 0;
}

/*
 * Every signal whose default would end or stop us, taken through the
 * signalfd (handle_signal), and SIGCHLD and SIGWINCH (docs/decisions.md,
 * "Signals from outside"). The kernel's own faults are forced past the
 * mask and still crash us.
 */
static void supervisor_sigset(sigset_t *set)
{
	sgn_taken_set(set);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGWINCH);
}

/* Before anything of the run exists on the host: a signal meanwhile
 * waits in the signalfd and stops the sandbox once there is one. */
static int take_signals(supervisor *s)
{
	sigset_t mask;

	supervisor_sigset(&mask);
	sgn_libc_own_ignore();
	sigprocmask(SIG_BLOCK, &mask, &s->saved_mask);
	s->mask_saved = true;
	s->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sigfd < 0)
		return diag_fail(s->diag, -errno, "supervisor", "signalfd: %s", strerror(errno));
	return 0;
}

/* Phase 2: on the host, before the child exists. */
static int host_setup(supervisor *s)
{
	const sc_plan *p = s->plan;
	int pair[2], r;

	r = take_signals(s);
	if (r < 0)
		return r;
	/* Where clone3 can place the child in its cgroup (v2) the cgroup must
	 * exist first. Elsewhere the child moves itself in, and the cgroup is
	 * made while the child builds its mounts, like the audit log. */
	s->cg_early = s->unpriv || cg_clone_into_expected();
	if (s->cg_early) {
		r = make_cgroup(s);
		if (r < 0)
			return r;
	}
	r = start_spawn_server(s);
	if (r < 0)
		return r;
	s->id_base = ns_host_id_base(getpid());
	r = s->unpriv ? ns_open_sources_unpriv(p, &s->sources, s->diag)
		      : ns_open_sources(p, s->id_base + 1, s->id_base + 1, &s->sources, s->diag);
	if (r < 0) {
		host_explain_refusal(s->diag, r, s->unpriv); /* an id mapping needs a userns */
		return r;
	}
	/* Project ids of sandboxes alive at once differ as their pids do. */
	r = ws_run_setup(p, s->sources, s->unpriv, s->id_base + 1, s->res->sandbox_id,
			 0x5c000000u | ((uint32_t)getpid() & 0xffffffu), &s->ws, s->ws_not_enforced,
			 sizeof(s->ws_not_enforced), s->diag);
	if (r < 0)
		return r;
	if (s->ws_not_enforced[0] && !s->res->not_enforced[0])
		snprintf(s->res->not_enforced, sizeof(s->res->not_enforced), "%s",
			 s->ws_not_enforced);
	/* Before the child exists: the listing fallback snapshots the grants now. */
	r = fw_start(p, &s->fw, &s->fw_mode);
	if (r < 0)
		return diag_fail(s->diag, r, "fswatch", "cannot watch the rw grants: %s",
				 strerror(-r));

	r = pty_relay_new(&s->pty, &s->tty_mask);
	if (r < 0)
		return diag_fail(s->diag, r, "terminal", "cannot set up the terminal relay: %s",
				 strerror(-r));

	s->ep = epoll_create1(EPOLL_CLOEXEC);
	s->wallfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	s->gracefd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->ep < 0 || s->wallfd < 0 || s->gracefd < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
		return diag_fail(s->diag, -errno, "supervisor", "%s", strerror(errno));
	s->sync = pair[0];
	s->child_sync = pair[1];
	if (s->o->session) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
			return diag_fail(s->diag, -errno, "session", "%s", strerror(errno));
		s->ctl = pair[0];
		s->child_ctl = pair[1];
		ss_channel_room(pair);
		snprintf(s->ctl_arg, sizeof(s->ctl_arg), "%d", s->child_ctl);
	}
	return 0;
}

/* Phase 3: clone3 into the new namespaces; the child runs child_main(). */
static int start_child(supervisor *s)
{
	struct sc_clone_args ca = {
	    .flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
		     CLONE_PIDFD,
	    .pidfd = (uint64_t)(uintptr_t)&s->pidfd,
	    .exit_signal = SIGCHLD,
	};
	int cfd = s->cg ? cg_clone_fd(s->cg) : -1;

	/* Unprivileged, the user namespace must come first so that it owns
	 * the others: clone(2) creates it before them. */
	if (s->unpriv)
		ca.flags |= CLONE_NEWUSER;
	if (s->plan->shared_ipc_uts)
		ca.flags &= ~(uint64_t)(CLONE_NEWIPC | CLONE_NEWUTS);
	if (cfd >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)cfd;
	}
	s->t0 = now_ns();
	s->pid = sys_clone3(&ca);
	s->cg_joined = s->pid > 0 && cfd >= 0;
	if (s->pid < 0) {
		int r;

		if (s->unpriv && (errno == EPERM || errno == ENOSPC || errno == EUSERS))
			r = diag_fail(s->diag, -errno, "clone",
				      "this host does not let an unprivileged user create a "
				      "user namespace (%s); sandcap run without root needs one",
				      strerror(errno));
		else
			r = diag_fail(s->diag, -errno, "clone",
				      "cannot create the sandbox namespaces: %s", strerror(errno));
		host_explain_refusal(s->diag, r, s->unpriv);
		return r;
	}
	if (s->pid == 0) {
		child_ctx c = {.plan = s->plan,
			       .sources = s->sources,
			       .sync = s->child_sync,
			       .exe_fd = s->exe_fd,
			       .tty_mask = s->tty_mask,
			       .init_argv = s->init_argv,
			       .envp = s->env,
			       .spawn_sock = spawn_server_socket(s->spawn),
			       .cg_sync = !s->unpriv,
			       .unpriv = s->unpriv,
			       .ctl_fd = s->child_ctl};

		(void)close(s->sync);
		(void)safe_close(s->ctl);
		child_main(&c);
	}
	s->child_sync = safe_close(s->child_sync);
	s->child_ctl = safe_close(s->child_ctl);
	return 0;
}

/*
 * Phase 4: what the child waits for before it runs anything of the
 * sandbox. As root it waits for its cgroup, and maps itself through
 * SYNC_USERNS later; unprivileged it waits for "go", its next step needs
 * mapped ids. The audit log is opened meanwhile.
 */
static int hand_off(supervisor *s)
{
	int r = s->unpriv ? 0 : cgroup_to_child(s);

	if (r >= 0 && !s->o->event_sink)
		r = audit_open(s);
	spawn_server_set_cgroup(s->spawn, s->cg);
	/* While the child sets up: what supervisors that were SIGKILLed left
	 * (their sandboxes died with them, see step_parent_death). */
	(void)cg_sweep_stale(s->cg, CGROUP_PREFIX);
	if (!s->unpriv)
		(void)spawn_sweep_stale();
	if (r < 0)
		return r;
	if (s->o->set_oom_score_adj && set_oom_score_adj(s->pid, s->o->oom_score_adj) < 0)
		return diag_fail(s->diag, -EPERM, "oom_score_adj",
				 "cannot reset the sandbox's oom_score_adj");
	if (s->unpriv) {
		sync_msg go = {.type = SYNC_GO};

		r = ns_write_id_maps_unpriv(s->pid, NS_AGENT_UID, NS_AGENT_GID);
		if (r < 0)
			return diag_fail(s->diag, r, "userns", "cannot write the id maps: %s",
					 strerror(-r));
		if (s->cg && cg_clone_fd(s->cg) < 0) {
			r = cg_attach(s->cg, s->pid);
			if (r < 0)
				return diag_fail(s->diag, r, "cgroup",
						 "cannot move the sandbox into its cgroup: %s",
						 strerror(-r));
			s->cg_joined = true;
		}
		(void)sync_send(s->sync, &go, -1);
	}
	return 0;
}

static int session_emit(void *userdata, const char *event, json_t *data)
{
	return emit(userdata, event, data);
}

/* Phase 5: until pid 1 is gone; then what it and the proxy said last. */
static void session_start_wall(void *userdata)
{
	supervisor *s = userdata;

	if (s->plan->wall_ns != PLAN_UNLIMITED)
		arm(s->wallfd, s->plan->wall_ns);
}

static void supervise(supervisor *s)
{
	if (s->plan->wall_ns != PLAN_UNLIMITED && !s->o->defer_wall)
		arm(s->wallfd, s->plan->wall_ns);
	(void)ep_add(s, s->sync, EV_SYNC);
	(void)ep_add(s, s->pidfd, EV_PIDFD);
	(void)ep_add(s, s->sigfd, EV_SIGNAL);
	(void)ep_add(s, s->wallfd, EV_WALL);
	(void)ep_add(s, s->gracefd, EV_GRACE);
	if (s->plan->audit_sample_ns && s->plan->audit_sample_ns != PLAN_UNLIMITED) {
		uint64_t ns = s->plan->audit_sample_ns;
		struct timespec t = {.tv_sec = (time_t)(ns / 1000000000ULL),
				     .tv_nsec = (long)(ns % 1000000000ULL)};
		struct itimerspec its = {.it_value = t, .it_interval = t};

		/* Without a timer the run goes on, unsampled. */
		s->samplefd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (s->samplefd >= 0 && (timerfd_settime(s->samplefd, 0, &its, NULL) < 0 ||
					 ep_add(s, s->samplefd, EV_SAMPLE) < 0))
			s->samplefd = safe_close(s->samplefd);
	}
	if (s->spawn)
		(void)ep_add(s, spawn_server_fd(s->spawn), EV_SPAWN);
	if (s->o->session) {
		ss_host h = {.ep = s->ep,
			     .tag = EV_SESSION,
			     .ctl = TAKE_FD(s->ctl),
			     .pid = s->pid,
			     .cg = s->cg,
			     .sandbox_id = s->res->sandbox_id,
			     .audit_path = s->res->audit_path,
			     .ws = s->ws,
			     .emit = session_emit,
			     .start_wall = session_start_wall,
			     .userdata = s};

		ss_attach(s->o->session, &h);
	}
	/* The sandbox runs: what setup used is not needed for the wait. */
	pages_trim();
	(void)event_loop(s);
	if (s->o->session)
		ss_sandbox_gone(s->o->session, s->res->timed_out);
	stop_listener(s);
	/* Drain what the child said before dying (e.g. SYNC_FAILED). */
	while (s->sync >= 0)
		handle_sync(s);
	pty_drain(s->pty);
	drain_proxy(s);
	complete_open_requests(s, "sandbox-ended");
	{
		uint64_t n = px_attempt_report(&s->raw_sockets, now_ns(), true);

		if (n)
			(void)emit(s, "limit.hit", px_attempt_limit_record(n, false));
	}
	pthread_mutex_lock(&s->emit_lock);
	(void)dn_flush(&s->denials, now_ns(), true);
	pthread_mutex_unlock(&s->emit_lock);
	/* pid 1 never started and the child did not say why (killed during
	 * setup): a refusal, never the status of a command that did not run. */
	if (!s->ready && !s->setup_failed) {
		int st = s->wait_status;

		s->setup_failed = true;
		if (WIFSIGNALED(st))
			diag_fail(s->diag, -ECHILD, "setup",
				  "the sandbox child was killed by signal %d during setup",
				  WTERMSIG(st));
		else
			diag_fail(s->diag, -ECHILD, "setup",
				  "the sandbox child exited with status %d during setup",
				  WEXITSTATUS(st));
	}
}

/* The sandbox is gone: its cow grants' changes go under the state directory. */
static void keep_workspaces(supervisor *s)
{
	char state[PATH_MAX - 64];
	sc_diag d = {0};

	if (!s->ws)
		return;
	if (sc_state_dir(s->unpriv, state, sizeof(state)) < 0 ||
	    ws_run_finish(s->ws, state, s->res->sandbox_id, s->res->audit_path, s->res->workspaces,
			  sizeof(s->res->workspaces), s->res->workspace_note,
			  sizeof(s->res->workspace_note), &s->ws_exit, &d) < 0)
		snprintf(s->res->workspace_error, sizeof(s->res->workspace_error), "%.250s",
			 d.message[0] ? d.message : "no state directory for the workspaces");
}

/* Phase 6: the records that end the log; the run's one return value. */
static int finish(supervisor *s, int r)
{
	if (r >= 0 && !s->setup_failed) {
		collect(s);
		emit_start(s, -1);
		/* The sandbox is gone: every event it caused is queued by now. */
		(void)fw_finish(s->fw, on_event, s);
		fr_finish(s->fr);
		s->res->files_written = s->res->tally.files_written; /* as `audit report` counts */
		keep_workspaces(s);
		emit_exit(s);
		return 0;
	}
	if (!s->res->sandbox_id[0])
		return r; /* refused before anything of the sandbox existed */
	if (!s->audit)
		audit_open_after_failure(s);
	emit_refusal(s);
	if (r >= 0)
		r = s->diag->message[0] ? -EINVAL : -EIO;
	return r;
}

sc_run_result *sc_run_result_new(void)
{
	return pages_alloc(sizeof(sc_run_result));
}

void sc_run_result_free(sc_run_result *res)
{
	pages_free(res, sizeof(*res));
}

int sc_run(const sc_run_opts *o, sc_run_result *res, sc_diag *diag)
{
	supervisor s = {.o = o,
			.plan = o->plan,
			.res = res,
			.diag = diag,
			.ep = -1,
			.sync = -1,
			.pidfd = -1,
			.sigfd = -1,
			.wallfd = -1,
			.gracefd = -1,
			.samplefd = -1,
			.notify_fd = -1,
			.proxy_fd = -1,
			.proxy_seed = PX_SEED_NONE,
			.exe_fd = -1,
			.child_sync = -1,
			.ctl = -1,
			.child_ctl = -1,
			.emit_lock = PTHREAD_MUTEX_INITIALIZER};
	int r;

	res->memory_peak = UINT64_MAX;
	snprintf(res->cgroup, sizeof(res->cgroup), "none");
	dn_init(&s.denials, emit_denial, &s);

	r = prepare(&s);
	if (r >= 0)
		r = host_setup(&s);
	if (r >= 0)
		r = start_child(&s);
	if (r >= 0 && (r = hand_off(&s)) < 0)
		(void)refused(&s, r);
	if (s.pid > 0)
		supervise(&s);
	r = finish(&s, r);
	teardown(&s);
	dn_done(&s.denials);
	return r;
}
