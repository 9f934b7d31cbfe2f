/* SPDX-License-Identifier: MIT */
/*
 * A session's supervisor: sc_run() with a pid 1 that waits for commands
 * (core/init-session.c), and this server in its event loop. Clients are
 * the host user (the socket is 0600 in a 0700 directory, and SO_PEERCRED
 * is checked); pid 1's channel is ours; what the sandbox writes into the
 * pipes and the pty never passes through here.
 */
#include "session/server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/cleanup.h"
#include "base/exit-status.h"
#include "base/io.h"
#include "base/unix-addr.h"
#include "cgroup/cgroup.h"
#include "compat/syscalls.h"
#include "core/ctl.h"
#include "session/exec-wire.h"
#include "session/request.h"
#include "session/wire.h"
#include "workspace/grants.h"
#include "workspace/workspace.h"

typedef enum conn_state { C_REQUEST, C_EXEC, C_FILE, C_STOP } conn_state;

typedef struct ss_conn {
	struct ss_conn *next;
	int fd; /* -1 once the client has gone */
	conn_state state;
	ss_op op;
	uint32_t id;	     /* the request's number on pid 1's channel */
	int timer;	     /* limits.exec_wall, or -1 */
	uint64_t timer_left; /* what was left of it when the session was paused (0: none) */
	uint64_t t0;	     /* CLOCK_MONOTONIC ns */
	pid_t pid;	     /* in the sandbox, from CTL_STARTED */
	bool wall_hit;	     /* limits.exec_wall killed it */
	uint64_t oom0;	     /* the cgroup's OOM kills when it started (UINT64_MAX: unknown) */
	bool done;	     /* CTL_DONE came (file operations) */
	bool fixed;	     /* its requests are ctl messages: an exec (session/exec-wire.h) */
	bool detached;	     /* SX_DETACH: no client; it runs until it ends or is killed */
	bool tty;
	json_t *argv;	    /* an exec's, as recorded: for the list of commands */
	json_t *cwd;	    /* the same */
	int64_t started_ms; /* CLOCK_REALTIME */
	int done_err;
	uint64_t bytes;
	char *path; /* file operations, for the record */
	char *to;   /* a rename's new path */
	/* A held exec (SX_HOLD): its message to pid 1 and the sandbox's ends
	 * of its fds, sent on CTL_GO. */
	char *held;
	ctl_hdr held_hdr;
	int held_fds[3];
	size_t n_held;
} ss_conn;

struct ss_server {
	const sc_session_start_opts *o;
	char name[SC_SESSION_NAME_MAX + 1];
	char dir[4096];
	int lock_fd, ready_fd, listen_fd, idle_fd;
	sc_host h; /* what the supervisor base lends us (on_started) */
	bool attached, ready, stopping, gone;
	bool main_sent; /* init_adopted: the first exec went as the main command */
	bool begun;	/* its limits run: from the start, or a pooled one's hand-out */
	uint64_t started_ns;
	uint64_t limits_ns; /* when its limits began (0: at the start) */
	uint32_t next_id;
	uint64_t commands; /* execs started */
	/* Paused (cgroup frozen): since paused_ns; wall_left what was left of
	 * limits.wall then (UINT64_MAX: not armed); paused_total the time
	 * paused before, which counts against no limit. */
	bool paused;
	uint64_t paused_ns, wall_left, paused_total;
	size_t active; /* execs and file operations running */
	size_t n_conns;
	time_t started;
	uint64_t t0;
	ss_conn *conns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void arm(int tfd, uint64_t ns)
{
	struct itimerspec its = {.it_value = {.tv_sec = (time_t)(ns / 1000000000ULL),
					      .tv_nsec = (long)(ns % 1000000000ULL)}};

	(void)timerfd_settime(tfd, 0, &its, NULL);
}

static int ep_add(ss_server *s, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN,
				 .data.u64 = (uint64_t)s->h.tag << 32 | (uint32_t)fd};

	return epoll_ctl(s->h.ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static void ep_del(ss_server *s, int fd)
{
	if (fd >= 0 && s->attached)
		(void)epoll_ctl(s->h.ep, EPOLL_CTL_DEL, fd, NULL);
}

static void emit(ss_server *s, const char *event, json_t *data)
{
	if (s->attached && s->h.emit)
		(void)s->h.emit(s->h.userdata, event, data);
	else
		json_decref(data);
}

static void send_error(int fd, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void send_error(int fd, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	json_t *o;

	if (fd < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o = json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg);
	if (o)
		(void)ss_send(fd, o, NULL, 0);
	json_decref(o);
}

/* An error code as the fixed form carries it: an errno. */
static int code_errno(const char *code)
{
	if (strcmp(code, "bad_request") == 0)
		return EINVAL;
	if (strcmp(code, "stopping") == 0)
		return ESHUTDOWN;
	if (strcmp(code, "busy") == 0)
		return EBUSY;
	if (strcmp(code, "paused") == 0)
		return EAGAIN;
	for (int e = 1; e < 4096; e++)
		if (strerrorname_np(e) && strcmp(code, strerrorname_np(e)) == 0)
			return e;
	return EIO;
}

/* An error for c's request, in the form its client speaks. */
static void conn_error(ss_conn *c, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void conn_error(ss_conn *c, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (c->fd < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->fixed) {
		ctl_hdr h = {.type = CTL_STARTED,
			     .id = c->id,
			     .err = code_errno(code),
			     .len = (uint32_t)strlen(msg) + 1};

		(void)ctl_send(c->fd, &h, msg, NULL, 0);
	} else {
		send_error(c->fd, code, "%s", msg);
	}
}

/* No command running and no request for limits.idle: the session stops. */
static void idle_rearm(ss_server *s)
{
	if (s->idle_fd < 0 || s->o->plan->idle_ns == PLAN_UNLIMITED || !s->begun)
		return;
	arm(s->idle_fd, s->active == 0 && !s->stopping && !s->paused ? s->o->plan->idle_ns : 0);
}

/*
 * A pooled session's limits (limits.wall, limits.idle) start here: at its
 * hand-out ("begin") or its first other request, whichever comes first,
 * so that the time it waited in the pool counts against neither.
 */
static void begin_limits(ss_server *s)
{
	if (s->begun)
		return;
	s->begun = true;
	s->limits_ns = now_ns();
	emit(
	    s, "session.begin",
	    json_pack("{s:I}", "waited_ms", (json_int_t)((now_ns() - s->started_ns) / 1000000ULL)));
	if (s->h.start_wall)
		s->h.start_wall(s->h.userdata);
	idle_rearm(s);
}

static void close_ctl(ss_server *s)
{
	if (s->h.ctl >= 0) {
		ep_del(s, s->h.ctl);
		s->h.ctl = safe_close(s->h.ctl);
	}
}

/* Closing pid 1's channel ends it (core/init-session.c): the kernel kills
 * what is left in the pid namespace, and sc_run() writes the end. */
static void end_session(ss_server *s)
{
	/* pid 1 must run to see its channel close. */
	if (s->paused && s->h.cg && cg_freeze(s->h.cg, false) >= 0)
		s->paused = false;
	s->stopping = true;
	idle_rearm(s);
	/* An adopted pid 1 says its status as it goes (CTL_END): it is told
	 * that nothing more comes, and heard until it has gone. */
	if (s->o->init_adopted && !s->gone && s->h.ctl >= 0 && shutdown(s->h.ctl, SHUT_WR) == 0)
		return;
	close_ctl(s);
}

static void conn_free(ss_server *s, ss_conn *c)
{
	for (ss_conn **p = &s->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	ep_del(s, c->fd);
	ep_del(s, c->timer);
	(void)safe_close(c->fd);
	(void)safe_close(c->timer);
	free(c->path);
	free(c->to);
	free(c->held);
	json_decref(c->argv);
	json_decref(c->cwd);
	for (size_t i = 0; i < c->n_held; i++)
		(void)safe_close(c->held_fds[i]);
	free(c);
	s->n_conns--;
}

static ss_conn *conn_by_id(ss_server *s, uint32_t id)
{
	for (ss_conn *c = s->conns; c; c = c->next)
		if ((c->state == C_EXEC || c->state == C_FILE) && c->id == id)
			return c;
	return NULL;
}

static int ctl_signal(ss_server *s, uint32_t id, int sig)
{
	ctl_hdr h = {.type = CTL_SIGNAL, .id = id, .value = sig};

	return s->h.ctl >= 0 ? ctl_send(s->h.ctl, &h, NULL, NULL, 0) : -EPIPE;
}

/* ---- the end of a command or a file operation ---- */

static const char *op_event(ss_op op)
{
	static const char *const ev[_SS_OP_MAX] = {
	    [SS_OP_PUT] = "file.put",	    [SS_OP_GET] = "file.get",
	    [SS_OP_STAT] = "file.stat",	    [SS_OP_MKDIR] = "file.mkdir",
	    [SS_OP_REMOVE] = "file.remove", [SS_OP_RENAME] = "file.rename",
	    [SS_OP_WATCH] = "file.watch",
	};

	return op >= 0 && op < _SS_OP_MAX && ev[op] ? ev[op] : "file.list";
}

static void finish_file(ss_server *s, ss_conn *c, int err)
{
	json_t *rec;

	/* A watch runs until its watcher goes (then it is killed): its end. */
	if (!err && !c->done && !(c->op == SS_OP_WATCH && c->fd < 0))
		err = EIO; /* the worker died before it could say */
	if (!err)
		err = c->done_err;
	rec = json_pack("{s:I, s:o, s:I, s:s}", "id", (json_int_t)c->id, "path",
			au_str(c->path, strlen(c->path), AU_STR_MAX_BYTES), "bytes",
			(json_int_t)c->bytes, "result",
			err ? (strerrorname_np(err) ? strerrorname_np(err) : "error") : "ok");
	if (rec && c->to)
		(void)json_object_set_new(rec, "to",
					  au_str(c->to, strlen(c->to), AU_STR_MAX_BYTES));
	emit(s, op_event(c->op), rec);
	if (err) {
		conn_error(c, strerrorname_np(err) ? strerrorname_np(err) : "EIO", "%s: %s",
			   c->path, strerror(err));
	} else if (c->fd >= 0) {
		json_t *o = json_pack("{s:b, s:I}", "ok", 1, "bytes", (json_int_t)c->bytes);

		(void)ss_send(c->fd, o, NULL, 0);
		json_decref(o);
	}
}

/* OOM kills in the session's cgroup so far; UINT64_MAX when there is no
 * memory limit (a kill is then not the policy's) or none can be read. */
static uint64_t oom_kills(ss_server *s)
{
	cg_stats st;

	if (!s->h.cg || s->o->plan->memory == PLAN_UNLIMITED || cg_read_stats(s->h.cg, &st) < 0)
		return UINT64_MAX;
	return st.oom_kills;
}

/*
 * Whether the memory limit OOM-killed a process while the command ran: the
 * command itself or one of its children. One cgroup holds the whole
 * session, so a kill while several commands run counts for each of them.
 */
static bool oom_during(ss_server *s, const ss_conn *c)
{
	uint64_t now = c->oom0 == UINT64_MAX ? UINT64_MAX : oom_kills(s);

	return now != UINT64_MAX && now > c->oom0;
}

/* status: a wait status, or -1 when the session ended first. */
static void finish_exec(ss_server *s, ss_conn *c, int status, bool timed_out, int err)
{
	uint64_t ms = (now_ns() - c->t0) / 1000000ULL;
	int code, sig = 0;
	json_t *hits = json_array();
	bool oom;

	if (err) {
		code = SC_EXIT_SETUP;
	} else if (c->wall_hit) {
		code = SC_EXIT_TIMEOUT;
		sig = SIGKILL;
		(void)json_array_append_new(hits, json_string("exec_wall"));
		emit(s, "limit.hit",
		     json_pack("{s:s, s:s, s:I}", "limit", "exec_wall", "detail",
			       "limits.exec_wall reached: the command's process group was killed",
			       "id", (json_int_t)c->id));
	} else if (status < 0) {
		code = timed_out ? SC_EXIT_TIMEOUT : SC_EXIT_SIGNAL_BASE + SIGKILL;
		sig = SIGKILL;
		if (timed_out)
			(void)json_array_append_new(hits, json_string("wall"));
	} else if (WIFEXITED(status)) {
		code = WEXITSTATUS(status);
	} else {
		sig = WTERMSIG(status);
		code = SC_EXIT_SIGNAL_BASE + sig;
	}
	oom = !err && oom_during(s, c);
	if (oom) {
		(void)json_array_append_new(hits, json_string("memory"));
		emit(s, "limit.hit",
		     json_pack("{s:s, s:s, s:I}", "limit", "memory", "detail",
			       sig == SIGKILL
				   ? "OOM kill in the session's cgroup: the command was "
				     "killed by the memory limit"
				   : "OOM kill in the session's cgroup while the command "
				     "ran: a process was killed by the memory limit",
			       "id", (json_int_t)c->id));
	}
	emit(s, "exec.exit",
	     json_pack("{s:I, s:i, s:i, s:o, s:I, s:O, s:b}", "id", (json_int_t)c->id, "pid",
		       (int)c->pid, "status", code, "signal", sig ? json_integer(sig) : json_null(),
		       "duration_ms", (json_int_t)ms, "limits_hit", hits, "session_ended",
		       status < 0 && !err));
	if (c->fd >= 0) {
		ctl_hdr h = {.type = CTL_EXITED,
			     .id = c->id,
			     .value = code,
			     .err = err,
			     .mode = (uint32_t)sig,
			     .flags = (c->wall_hit ? SX_EXEC_WALL : 0) | (oom ? SX_MEMORY : 0) |
				      (status < 0 && timed_out && !err ? SX_WALL : 0) |
				      (status < 0 && !err ? SX_SESSION_ENDED : 0),
			     .bytes = ms};

		(void)ctl_send(c->fd, &h, NULL, NULL, 0);
	}
	json_decref(hits);
}

static void finish(ss_server *s, ss_conn *c, int status, bool timed_out, int err)
{
	if (c->op == SS_OP_EXEC)
		finish_exec(s, c, status, timed_out, err);
	else
		finish_file(s, c, status < 0 && !err ? EPIPE : err);
	s->active--;
	conn_free(s, c);
	idle_rearm(s);
}

static void hello(ss_server *s);

/* ---- pid 1's channel ---- */

static void handle_ctl(ss_server *s, int flags)
{
	static char payload[CTL_MAX_PAYLOAD + 1];

	for (;;) {
		int fds[CTL_MAX_FDS];
		size_t n_fds;
		ctl_hdr h;
		ss_conn *c;
		int r;

		if (flags & MSG_DONTWAIT)
			(void)fcntl(s->h.ctl, F_SETFL, O_NONBLOCK);
		r = ctl_recv(s->h.ctl, &h, payload, sizeof(payload), fds, 0, &n_fds);
		if (r == -EPIPE) {
			end_session(s); /* pid 1 is going */
			close_ctl(s);
			return;
		}
		if (r < 0)
			return; /* EAGAIN, or nothing we sent for */
		c = conn_by_id(s, h.id);
		switch ((ctl_type)h.type) {
		case CTL_HELLO:
			hello(s);
			break;
		case CTL_STARTED:
			if (!c)
				break;
			c->pid = h.value;
			if (h.err)
				finish(s, c, 0, false, h.err > 0 && h.err < 4096 ? h.err : EPROTO);
			break;
		case CTL_DONE:
			if (c) {
				c->done = true;
				c->done_err = h.err > 0 && h.err < 4096 ? h.err : 0;
				c->bytes = h.bytes;
			}
			break;
		case CTL_EXITED:
			if (c)
				finish(s, c, h.value, false, 0);
			break;
		case CTL_END:
			if (s->h.init_exit)
				s->h.init_exit(s->h.userdata, h.value);
			break;
		case CTL_EXEC:
		case CTL_PUT:
		case CTL_GET:
		case CTL_LIST:
		case CTL_SIGNAL:
		case CTL_GO:
		case CTL_STAT:
		case CTL_MKDIR:
		case CTL_REMOVE:
		case CTL_RENAME:
		case CTL_WATCH:
		case _CTL_TYPE_MAX:
			break;
		}
		if (!(flags & MSG_DONTWAIT))
			return;
	}
}

/* ---- requests ---- */

/*
 * The sandbox's own pty, opened by us in its devpts through pid 1's root
 * (never a path of the host, never by following what the agent may have
 * linked): only the slave goes in, the master to the client.
 */
static int open_sandbox_pty(ss_server *s, unsigned rows, unsigned cols, int *ret_master,
			    int *ret_slave)
{
	struct sc_open_how how = {.flags = O_RDWR | O_NOCTTY | O_CLOEXEC,
				  .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS |
					     RESOLVE_NO_MAGICLINKS};
	char root_path[64];
	_cleanup_close_ int root = -1, master = -1;
	struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
	struct stat st;
	int unlock = 0, slave;

	snprintf(root_path, sizeof(root_path), "/proc/%d/root", (int)s->h.pid);
	root = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	master = sys_openat2(root, "/dev/pts/ptmx", &how);
	if (master < 0)
		return -errno;
	if (fstat(master, &st) < 0)
		return -errno;
	if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != 5 || minor(st.st_rdev) != 2)
		return -ENOTTY;
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
		return -errno;
	slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return -errno;
	if (rows && cols)
		(void)ioctl(master, TIOCSWINSZ, &ws);
	*ret_master = TAKE_FD(master);
	*ret_slave = slave;
	return 0;
}

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		(void)safe_close(fds[i]);
}

/* cwd\0 argv...\0 env...\0, as core/ctl.h has it. */
static char *exec_payload(const ss_request *q, size_t *ret_len)
{
	size_t len = strlen(q->cwd) + 1;
	char *buf, *p;

	for (size_t i = 0; i < q->n_argv; i++)
		len += strlen(q->argv[i]) + 1;
	for (size_t i = 0; i < q->n_env; i++)
		len += strlen(q->env[i]) + 1;
	if (len > CTL_MAX_PAYLOAD)
		return NULL;
	buf = malloc(len);
	if (!buf)
		return NULL;
	p = stpcpy(buf, q->cwd) + 1;
	for (size_t i = 0; i < q->n_argv; i++)
		p = stpcpy(p, q->argv[i]) + 1;
	for (size_t i = 0; i < q->n_env; i++)
		p = stpcpy(p, q->env[i]) + 1;
	*ret_len = len;
	return buf;
}

/* limits.exec_wall, from the moment pid 1 is asked to run it. */
static void exec_clock(ss_server *s, ss_conn *c)
{
	c->t0 = now_ns();
	c->oom0 = oom_kills(s);
	if (s->o->plan->exec_wall_ns == PLAN_UNLIMITED)
		return;
	c->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (c->timer >= 0) {
		arm(c->timer, s->o->plan->exec_wall_ns);
		(void)ep_add(s, c->timer);
	}
}

static int start_exec(ss_server *s, ss_conn *c, const ss_request *q)
{
	_cleanup_free_ char *payload = NULL;
	int in_fds[3] = {-1, -1, -1}, out_fds[3] = {-1, -1, -1};
	size_t n = q->tty ? 1 : 3, len = 0;
	ctl_hdr h = {.type = CTL_EXEC,
		     .id = c->id,
		     .flags = q->tty ? CTL_TTY : 0,
		     .n_argv = (uint32_t)q->n_argv};
	json_t *env_names;
	int r;

	payload = exec_payload(q, &len);
	if (!payload)
		return -E2BIG;
	h.len = (uint32_t)len;
	/* An adopted pid 1 ends with the session's first command. */
	if (s->o->init_adopted && !s->main_sent) {
		h.flags |= CTL_MAIN;
		s->main_sent = true;
	}
	if (q->detach) {
		/* Ours to hold: nothing of the client's, nothing to read back. */
		for (int i = 0; i < 3; i++) {
			in_fds[i] = open("/dev/null", (i ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
			if (in_fds[i] < 0) {
				r = -errno;
				close_all(in_fds, 3);
				return r;
			}
		}
	} else if (q->tty) {
		r = open_sandbox_pty(s, q->rows, q->cols, &out_fds[0], &in_fds[0]);
		if (r < 0)
			return r;
	} else {
		/* The sandbox gets only these pipes: stdin's read end, the write
		 * ends of stdout and stderr. */
		for (int i = 0; i < 3; i++) {
			int p[2];

			if (pipe2(p, O_CLOEXEC) < 0) {
				r = -errno;
				close_all(in_fds, 3);
				close_all(out_fds, 3);
				return r;
			}
			in_fds[i] = i == 0 ? p[0] : p[1];
			out_fds[i] = i == 0 ? p[1] : p[0];
		}
	}
	/* Its record before it can run (its own proc.exec follows). */
	env_names = json_array();
	for (size_t i = 0; env_names && i < q->n_env; i++)
		(void)json_array_append_new(env_names,
					    au_str(q->env[i], strcspn(q->env[i], "="), 256));
	c->argv = au_argv(q->argv, q->n_argv);
	c->cwd = au_str(q->cwd, strlen(q->cwd), AU_STR_MAX_BYTES);
	c->tty = q->tty;
	c->detached = q->detach;
	{
		struct timespec ts;

		(void)clock_gettime(CLOCK_REALTIME, &ts);
		c->started_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	}
	{
		json_t *rec = json_pack("{s:I, s:O, s:O, s:b, s:o}", "id", (json_int_t)c->id,
					"argv", c->argv, "cwd", c->cwd, "tty", q->tty, "env",
					env_names ? env_names : json_null());

		if (rec && q->detach)
			(void)json_object_set_new(rec, "detached", json_true());
		emit(s, "exec.start", rec);
	}
	if (q->hold) {
		c->held = TAKE_PTR(payload);
		c->held_hdr = h;
		memcpy(c->held_fds, in_fds, sizeof(in_fds));
		c->n_held = n;
	} else {
		r = ctl_send(s->h.ctl, &h, payload, in_fds, n);
		close_all(in_fds, 3);
		if (r < 0) {
			close_all(out_fds, 3);
			return r;
		}
	}
	{
		ctl_hdr a = {.type = CTL_STARTED, .id = c->id};

		r = ctl_send(c->fd, &a, NULL, out_fds, q->detach ? 0 : n);
	}
	close_all(out_fds, 3);
	c->state = C_EXEC;
	s->commands++;
	if (!q->hold)
		exec_clock(s, c);
	if (q->detach) {
		/* Its connection ends here; the command does not. */
		ep_del(s, c->fd);
		c->fd = safe_close(c->fd);
	} else if (r < 0) /* the client went away: so does the command */
		(void)ctl_signal(s, c->id, SIGKILL);
	return 0;
}

/* A held command runs now: pid 1 gets what start_exec kept. */
static int release_exec(ss_server *s, ss_conn *c)
{
	int r;

	if (!c->held)
		return -EALREADY;
	r = ctl_send(s->h.ctl, &c->held_hdr, c->held, c->held_fds, c->n_held);
	close_all(c->held_fds, c->n_held);
	c->n_held = 0;
	free(c->held);
	c->held = NULL;
	if (r >= 0)
		exec_clock(s, c);
	return r;
}

static ctl_type file_ctl(ss_op op)
{
	static const ctl_type t[_SS_OP_MAX] = {
	    [SS_OP_PUT] = CTL_PUT,     [SS_OP_GET] = CTL_GET,	    [SS_OP_STAT] = CTL_STAT,
	    [SS_OP_MKDIR] = CTL_MKDIR, [SS_OP_REMOVE] = CTL_REMOVE, [SS_OP_RENAME] = CTL_RENAME,
	    [SS_OP_WATCH] = CTL_WATCH,
	};

	return op >= 0 && op < _SS_OP_MAX && t[op] ? t[op] : CTL_LIST;
}

static int start_file(ss_server *s, ss_conn *c, const ss_request *q)
{
	size_t lp = strlen(q->path) + 1, lt = q->to ? strlen(q->to) + 1 : 0;
	ctl_hdr h = {
	    .type = file_ctl(q->op), .id = c->id, .mode = q->mode, .len = (uint32_t)(lp + lt)};
	bool in = q->op == SS_OP_PUT; /* put: the sandbox reads; the others write (or nothing) */
	_cleanup_free_ char *payload = malloc(lp + lt);
	int p[2], r;
	json_t *o;

	c->path = strdup(q->path);
	c->to = q->to ? strdup(q->to) : NULL;
	if (!c->path || !payload || (q->to && !c->to))
		return -ENOMEM;
	memcpy(payload, q->path, lp);
	if (lt)
		memcpy(payload + lp, q->to, lt);
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	r = ctl_send(s->h.ctl, &h, payload, in ? &p[0] : &p[1], 1);
	(void)close(in ? p[0] : p[1]);
	if (r < 0) {
		(void)close(in ? p[1] : p[0]);
		return r;
	}
	o = json_pack("{s:b, s:I}", "ok", 1, "id", (json_int_t)c->id);
	r = o ? ss_send(c->fd, o, in ? &p[1] : &p[0], 1) : -ENOMEM;
	json_decref(o);
	(void)close(in ? p[1] : p[0]);
	c->state = C_FILE;
	if (r < 0)
		(void)ctl_signal(s, c->id, SIGKILL);
	return 0;
}

/*
 * The session's wall clock (limits.wall) ends seconds from now: a caller
 * extends or shortens a live session's life (the API's timeout). Never
 * past the policy's own limits.wall from the start of the limits: the
 * policy is the bound, a timeout only a shorter one.
 */
static void set_timeout(ss_server *s, ss_conn *c, uint64_t seconds)
{
	uint64_t ns = seconds * 1000000000ULL, wall = s->o->plan->wall_ns;
	uint64_t ran = now_ns() - (s->limits_ns ? s->limits_ns : s->started_ns) - s->paused_total -
		       (s->paused ? now_ns() - s->paused_ns : 0);
	json_t *o;

	if (!s->h.set_wall) {
		conn_error(c, "EOPNOTSUPP", "this supervisor cannot move its wall clock");
		return;
	}
	if (wall != PLAN_UNLIMITED && (ran >= wall || ns > wall - ran)) {
		conn_error(c, "ERANGE",
			   "the policy's limits.wall (%llu s) ends this session in %llu s: a "
			   "timeout of %llu s would pass it",
			   (unsigned long long)(wall / 1000000000ULL),
			   (unsigned long long)(ran >= wall ? 0 : (wall - ran) / 1000000000ULL),
			   (unsigned long long)seconds);
		return;
	}
	if (s->paused)
		s->wall_left = ns; /* from the resume */
	else
		s->h.set_wall(s->h.userdata, ns);
	emit(s, "session.timeout", json_pack("{s:I}", "seconds", (json_int_t)seconds));
	o = json_pack("{s:b, s:I}", "ok", 1, "seconds", (json_int_t)seconds);
	if (o)
		(void)ss_send(c->fd, o, NULL, 0);
	json_decref(o);
}

/* The commands running (held ones do not run yet). */
static void list_commands(ss_server *s, ss_conn *me)
{
	json_t *a = json_array(), *o;

	for (ss_conn *c = s->conns; c && a; c = c->next) {
		if (c->state != C_EXEC || c->held)
			continue;
		(void)json_array_append_new(
		    a,
		    json_pack("{s:I, s:O, s:O, s:b, s:b, s:i, s:I}", "id", (json_int_t)c->id,
			      "argv", c->argv ? c->argv : json_null(), "cwd",
			      c->cwd ? c->cwd : json_null(), "tty", c->tty, "detached", c->detached,
			      "pid", (int)c->pid, "started_ms", (json_int_t)c->started_ms));
	}
	o = a ? json_pack("{s:b, s:o}", "ok", 1, "commands", a) : NULL;
	if (o)
		(void)ss_send(me->fd, o, NULL, 0);
	else
		conn_error(me, "ENOMEM", "out of memory");
	json_decref(o);
}

/* A signal for a running command's process group, from any client of the
 * session (a detached command has no connection of its own). */
static void kill_command(ss_server *s, ss_conn *me, uint32_t id, int sig)
{
	ss_conn *c = conn_by_id(s, id);
	json_t *o;
	int r;

	if (!c || c->state != C_EXEC || c->held) {
		conn_error(me, "ESRCH", "no command %u runs in session %s", id, s->name);
		return;
	}
	r = ctl_signal(s, id, sig);
	if (r < 0) {
		conn_error(me, "EPIPE", "cannot signal command %u: %s", id, strerror(-r));
		return;
	}
	emit(s, "exec.kill", json_pack("{s:I, s:i}", "id", (json_int_t)id, "signal", sig));
	o = json_pack("{s:b, s:I, s:i}", "ok", 1, "id", (json_int_t)id, "signal", sig);
	if (o)
		(void)ss_send(me->fd, o, NULL, 0);
	json_decref(o);
}

static uint64_t timer_left(int tfd)
{
	struct itimerspec its = {0};

	if (tfd < 0 || timerfd_gettime(tfd, &its) < 0)
		return 0;
	return (uint64_t)its.it_value.tv_sec * 1000000000ULL + (uint64_t)its.it_value.tv_nsec;
}

/*
 * Pause: every process of the sandbox frozen (the cgroup freezer), and its
 * clocks stopped with it: limits.wall (its deadline moves by the time
 * paused), each command's limits.exec_wall and limits.idle. Resume thaws
 * and lets them run on from where they stood.
 */
static void pause_session(ss_server *s, ss_conn *c, bool pause)
{
	uint64_t now = now_ns();
	json_t *o;
	int r;

	if (pause == s->paused)
		goto answer;
	if (!s->h.cg || !s->h.hold_wall) {
		conn_error(c, "EOPNOTSUPP", "session %s has no cgroup to freeze", s->name);
		return;
	}
	r = cg_freeze(s->h.cg, pause);
	if (r < 0) {
		conn_error(c, strerrorname_np(-r) ? strerrorname_np(-r) : "EIO",
			   "cannot %s session %s: %s", pause ? "freeze" : "thaw", s->name,
			   strerror(-r));
		return;
	}
	if (pause) {
		s->paused = true;
		s->paused_ns = now;
		s->wall_left = s->h.hold_wall(s->h.userdata);
		for (ss_conn *x = s->conns; x; x = x->next)
			if (x->state == C_EXEC && x->timer >= 0) {
				x->timer_left = timer_left(x->timer);
				arm(x->timer, 0);
			}
		idle_rearm(s);
		emit(s, "session.pause",
		     json_pack("{s:o}", "wall_left_ms",
			       s->wall_left == UINT64_MAX
				   ? json_null()
				   : json_integer((json_int_t)(s->wall_left / 1000000ULL))));
	} else {
		s->paused = false;
		s->paused_total += now - s->paused_ns;
		if (s->wall_left != UINT64_MAX)
			s->h.set_wall(s->h.userdata, s->wall_left);
		for (ss_conn *x = s->conns; x; x = x->next)
			if (x->state == C_EXEC && x->timer >= 0 && x->timer_left) {
				arm(x->timer, x->timer_left);
				x->timer_left = 0;
			}
		idle_rearm(s);
		emit(s, "session.resume",
		     json_pack("{s:I}", "paused_ms",
			       (json_int_t)((now - s->paused_ns) / 1000000ULL)));
	}
answer:
	o = json_pack("{s:b, s:b}", "ok", 1, "paused", s->paused);
	if (o)
		(void)ss_send(c->fd, o, NULL, 0);
	json_decref(o);
}

static json_t *info_json(ss_server *s)
{
	cg_stats st;
	uint64_t mem = UINT64_MAX;
	char started[32];
	struct tm tm;
	json_t *o;

	if (s->h.cg && cg_read_stats(s->h.cg, &st) >= 0)
		mem = st.memory_peak;
	gmtime_r(&s->started, &tm);
	strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", &tm);
	o = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:I, s:o, s:I, s:I, s:s}", "name", s->name,
		      "pid", (int)getpid(), "sandbox", s->h.sandbox_id ? s->h.sandbox_id : "",
		      "policy", s->o->policy_source ? s->o->policy_source : "", "audit",
		      s->h.audit_path ? s->h.audit_path : "", "started", started, "age_s",
		      (json_int_t)(time(NULL) - s->started), "memory_peak",
		      mem == UINT64_MAX ? json_null() : json_integer((json_int_t)mem), "commands",
		      (json_int_t)s->commands, "running", (json_int_t)s->active, "state",
		      s->stopping ? "stopping"
		      : s->paused ? "paused"
				  : "running");
	if (o)
		(void)json_object_set_new(o, "workspaces",
					  ws_run_ids_json(s->h.ws, s->h.sandbox_id));
	/* net.serve: where the host reaches each port ({"PORT": "127.0.0.1:N"}) */
	if (o && s->h.serve)
		(void)json_object_set_new(o, "serve", json_deep_copy(s->h.serve));
	/* pid 1 in the host's pid namespace: what is in the sandbox (sandcap-runc ps). */
	if (o)
		(void)json_object_set_new(o, "init_pid", json_integer((json_int_t)s->h.pid));
	return o;
}

/*
 * A live cow workspace (docs/sessions.md, "Workspaces"): its meta and a
 * new open directory of its upper layer, for the client to diff or apply
 * it; and, once applied, its new epoch and a record in the session's log.
 */
static void serve_workspace(ss_server *s, ss_conn *c, const ss_request *q)
{
	ws_cow *w = ws_run_cow(s->h.ws, s->h.sandbox_id, q->workspace);
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *text = NULL;
	json_t *o;
	ws_meta m;

	if (!w) {
		conn_error(c, "ENOENT", "session %s has no workspace %s", s->name, q->workspace);
		return;
	}
	if (q->op == SS_OP_APPLIED) {
		struct timespec t = {.tv_sec = (time_t)q->epoch_sec,
				     .tv_nsec = (long)q->epoch_nsec};

		ws_cow_set_epoch(w, &t);
		emit(s, "workspace.applied",
		     json_pack("{s:s, s:I, s:I, s:I, s:b, s:o}", "workspace", q->workspace, "paths",
			       (json_int_t)q->paths, "conflicts", (json_int_t)q->conflicts,
			       "changed_during_apply", (json_int_t)q->changed, "forced", q->forced,
			       "record", au_str(q->record, strlen(q->record), AU_STR_MAX_BYTES)));
		o = json_pack("{s:b}", "ok", true);
	} else {
		ws_cow_meta(w, s->h.sandbox_id, s->h.audit_path, &m);
		fd = openat(ws_cow_upper_fd(w), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		text = ws_meta_to_json(&m);
		if (fd < 0 || !text) {
			conn_error(c, "EIO", "workspace %s: %s", q->workspace,
				   fd < 0 ? strerror(errno) : "out of memory");
			return;
		}
		o = json_pack("{s:b, s:o}", "ok", true, "meta", json_loads(text, 0, NULL));
	}
	if (o)
		(void)ss_send(c->fd, o, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
	json_decref(o);
}

/*
 * The next request on c into *q: 1, or 0 when nothing is there yet, or
 * -EPIPE at the client's end, or -EINVAL with a message in err for what
 * is not a request (not one JSON object or one ctl message, or one that
 * does not check). A connection keeps the form of its first request.
 */
static int conn_read(ss_conn *c, ss_request *q, char *err, size_t len)
{
	_cleanup_free_ char *buf = malloc(SS_MAX_MSG + 1);
	json_t *msg = NULL;
	int fds[SS_MAX_FDS];
	size_t n_fds;
	ssize_t n;
	bool fixed;
	int r;

	q->root = NULL;
	q->raw = NULL;
	if (!buf)
		return -ENOMEM;
	n = ss_recv_raw(c->fd, MSG_DONTWAIT, buf, fds, 0, &n_fds);
	if (n == -EAGAIN)
		return 0;
	if (n == -EBADMSG) {
		snprintf(err, len, "a request is at most %u bytes", SS_MAX_MSG);
		return -EINVAL;
	}
	if (n < 0)
		return -EPIPE;
	fixed = n == 0 || buf[0] != '{';
	if (c->state == C_REQUEST) {
		c->fixed = fixed;
	} else if (fixed != c->fixed) {
		snprintf(err, len, "a connection keeps the form of its first request");
		return -EINVAL;
	}
	if (fixed) {
		r = ss_request_parse_ctl(buf, (size_t)n, q, err, len);
		if (r >= 0)
			buf = NULL; /* q's now */
		return r < 0 ? r : 1;
	}
	msg = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(msg)) {
		json_decref(msg);
		snprintf(err, len, "a request is one JSON object");
		return -EINVAL;
	}
	r = ss_request_parse(msg, q, err, len);
	json_decref(msg);
	return r < 0 ? r : 1;
}

/* One request per connection; its answer, and later its result. */
static void handle_request(ss_server *s, ss_conn *c)
{
	_cleanup_free_ ss_request *q = calloc(1, sizeof(*q));
	char err[256];
	int r = q ? conn_read(c, q, err, sizeof(err)) : -ENOMEM;

	if (r == 0)
		return;
	if (r < 0) {
		if (r == -EINVAL)
			conn_error(c, "bad_request", "%s", err);
		conn_free(s, c);
		return;
	}
	if (q->op != SS_OP_INFO && q->op != SS_OP_COMMANDS) {
		begin_limits(s);
		idle_rearm(s); /* a request is activity; being listed is not */
	}
	if (s->paused && (q->op == SS_OP_EXEC || q->op == SS_OP_PUT || q->op == SS_OP_GET ||
			  q->op == SS_OP_LS || q->op == SS_OP_STAT || q->op == SS_OP_MKDIR ||
			  q->op == SS_OP_REMOVE || q->op == SS_OP_RENAME || q->op == SS_OP_WATCH)) {
		conn_error(c, "paused", "session %s is paused (resume it first)", s->name);
		conn_free(s, c);
		ss_request_done(q);
		return;
	}
	if (s->stopping && q->op != SS_OP_INFO && q->op != SS_OP_STOP && q->op != SS_OP_COMMANDS) {
		conn_error(c, "stopping", "session %s is stopping", s->name);
		conn_free(s, c);
		ss_request_done(q);
		return;
	}
	c->op = q->op;
	c->id = ++s->next_id;
	c->t0 = now_ns();
	c->oom0 = UINT64_MAX;
	switch (q->op) {
	case SS_OP_EXEC:
	case SS_OP_PUT:
	case SS_OP_GET:
	case SS_OP_LS:
	case SS_OP_STAT:
	case SS_OP_MKDIR:
	case SS_OP_REMOVE:
	case SS_OP_RENAME:
	case SS_OP_WATCH:
		r = q->op == SS_OP_EXEC ? start_exec(s, c, q) : start_file(s, c, q);
		if (r < 0) {
			conn_error(c, strerrorname_np(-r) ? strerrorname_np(-r) : "error",
				   "cannot start it in session %s: %s", s->name, strerror(-r));
			conn_free(s, c);
		} else {
			s->active++;
			idle_rearm(s);
		}
		break;
	case SS_OP_INFO: {
		json_t *o = info_json(s);

		if (o)
			(void)ss_send(c->fd, o, NULL, 0);
		json_decref(o);
		conn_free(s, c);
		break;
	}
	case SS_OP_BEGIN: {
		json_t *o = json_pack("{s:b}", "ok", 1);

		if (o)
			(void)ss_send(c->fd, o, NULL, 0);
		json_decref(o);
		conn_free(s, c);
		break;
	}
	case SS_OP_TIMEOUT:
		set_timeout(s, c, q->seconds);
		conn_free(s, c);
		break;
	case SS_OP_COMMANDS:
		list_commands(s, c);
		conn_free(s, c);
		break;
	case SS_OP_PAUSE:
	case SS_OP_RESUME:
		pause_session(s, c, q->op == SS_OP_PAUSE);
		conn_free(s, c);
		break;
	case SS_OP_KILL:
		kill_command(s, c, q->id, q->signal);
		conn_free(s, c);
		break;
	case SS_OP_STOP:
		/* Answered with the summary once the log is sealed (ss_serve). */
		c->state = C_STOP;
		ep_del(s, c->fd);
		end_session(s);
		break;
	case SS_OP_SIGNAL:
	case SS_OP_GO:
		conn_error(c, "bad_request", "\"%s\" is sent on an exec's connection",
			   q->op == SS_OP_GO ? "go" : "signal");
		conn_free(s, c);
		break;
	case SS_OP_WORKSPACE:
	case SS_OP_APPLIED:
		serve_workspace(s, c, q);
		conn_free(s, c);
		break;
	case _SS_OP_MAX:
	case _SS_OP_INVALID:
		conn_free(s, c);
		break;
	}
	ss_request_done(q);
}

/* On a running command's connection: a signal for it, or the end of the
 * client, which ends the command too. */
static void handle_running(ss_server *s, ss_conn *c)
{
	_cleanup_free_ ss_request *q = calloc(1, sizeof(*q));
	char err[256];
	int r = q ? conn_read(c, q, err, sizeof(err)) : -ENOMEM;

	if (r == 0)
		return;
	if ((r == -EPIPE || r == -ENOMEM) && c->held) {
		/* It never ran: nothing to wait for. */
		s->active--;
		conn_free(s, c);
		idle_rearm(s);
		return;
	}
	if (r == -EPIPE || r == -ENOMEM) {
		ep_del(s, c->fd);
		c->fd = safe_close(c->fd);
		(void)ctl_signal(s, c->id, SIGKILL);
		return;
	}
	if (r > 0 && q->op == SS_OP_GO && c->state == C_EXEC) {
		r = release_exec(s, c);
		if (r == -EALREADY)
			conn_error(c, "bad_request", "the command runs already");
		else if (r < 0)
			conn_error(c, "EPIPE", "cannot start the command: %s", strerror(-r));
	} else if (r > 0 && q->op == SS_OP_SIGNAL) {
		if (!c->held) /* a held command does not run yet */
			(void)ctl_signal(s, c->id, q->signal);
	} else
		conn_error(c, "bad_request", "only a signal (or go) while it runs");
	if (r > 0)
		ss_request_done(q);
}

static void handle_accept(ss_server *s)
{
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		struct ucred cred;
		socklen_t len = sizeof(cred);
		ss_conn *c;

		if (fd < 0)
			return;
		/* Only the user the session runs as (or root) may drive it. */
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
		    (cred.uid != geteuid() && cred.uid != 0) || s->n_conns >= SS_MAX_CLIENTS) {
			if (s->n_conns >= SS_MAX_CLIENTS)
				send_error(fd, "busy", "more than %u connections", SS_MAX_CLIENTS);
			(void)close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			(void)close(fd);
			return;
		}
		c->fd = fd;
		c->timer = -1;
		c->next = s->conns;
		s->conns = c;
		s->n_conns++;
		(void)ep_add(s, fd);
	}
}

/*
 * limits.exec_wall ran out for the command whose timer is fd. A supervisor
 * held (SIGSTOP) past the limit sees the timer and the command's end at
 * once: what pid 1 said is read first, so that a command that ended in time
 * is not called killed.
 */
static void exec_wall_reached(ss_server *s, int fd)
{
	for (;;) {
		struct pollfd p = {.fd = s->h.ctl, .events = POLLIN};

		if (s->h.ctl < 0 || poll(&p, 1, 0) != 1 || !(p.revents & POLLIN))
			break;
		handle_ctl(s, 0);
	}
	for (ss_conn *c = s->conns; c; c = c->next)
		if (c->timer == fd && c->state == C_EXEC) {
			c->wall_hit = true;
			(void)ctl_signal(s, c->id, SIGKILL);
			return;
		}
}

/* sc_mode_ops.on_fd_ready */
static void ss_fd_ready(void *mode, int fd, uint32_t events)
{
	ss_server *s = mode;
	uint64_t ticks;

	(void)events;
	if (fd == s->listen_fd && s->ready) {
		handle_accept(s);
		return;
	}
	if (fd == s->h.ctl) {
		handle_ctl(s, 0);
		return;
	}
	if (fd == s->idle_fd) {
		(void)!read(s->idle_fd, &ticks, sizeof(ticks));
		if (s->active == 0 && !s->stopping) {
			emit(s, "limit.hit",
			     json_pack("{s:s, s:s}", "limit", "idle", "detail",
				       "limits.idle reached: no command and no request"));
			end_session(s);
		}
		return;
	}
	for (ss_conn *c = s->conns; c; c = c->next) {
		if (fd == c->timer) {
			(void)!read(c->timer, &ticks, sizeof(ticks));
			exec_wall_reached(s, fd);
			return;
		}
		if (fd == c->fd) {
			if (c->state == C_REQUEST)
				handle_request(s, c);
			else if (c->state == C_EXEC || c->state == C_FILE)
				handle_running(s, c);
			return;
		}
	}
}

/* pid 1 said hello: the session is ready. Its description, for the
 * directory and for the caller of sc_session_start(). */
static void announce(ss_server *s)
{
	_cleanup_free_ char *text = NULL;
	json_t *o = info_json(s);
	_cleanup_close_ int fd = -1;

	s->ready = true;
	if (o) {
		json_object_del(o, "age_s");
		json_object_del(o, "memory_peak");
		json_object_del(o, "commands");
		json_object_del(o, "running");
		json_object_del(o, "state");
		text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	}
	json_decref(o);
	fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && text) {
		_cleanup_close_ int m = openat(
		    fd, SS_META, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);

		if (m >= 0)
			(void)io_write_all(m, text, strlen(text));
	}
	if (s->ready_fd >= 0) {
		if (text)
			(void)io_write_all(s->ready_fd, text, strlen(text));
		s->ready_fd = safe_close(s->ready_fd);
	}
}

/* sc_mode_ops.on_started */
static void ss_started(void *mode, const sc_host *h)
{
	ss_server *s = mode;

	s->h = *h;
	s->attached = true;
	s->t0 = now_ns();
	/* Clients are served from pid 1's CTL_HELLO on: until then the
	 * sandbox is still being set up (or refused; then EOF). */
	(void)ep_add(s, s->h.ctl);
}

/* pid 1 runs the session loop: serve. */
static void hello(ss_server *s)
{
	if (s->ready)
		return;
	(void)ep_add(s, s->listen_fd);
	if (s->idle_fd >= 0)
		(void)ep_add(s, s->idle_fd);
	idle_rearm(s);
	announce(s);
}

/* sc_mode_ops.on_sandbox_gone */
static void ss_gone(void *mode, bool timed_out)
{
	ss_server *s = mode;

	if (s->h.ctl >= 0)
		handle_ctl(s, MSG_DONTWAIT); /* what pid 1 said before it ended */
	s->gone = true;
	s->stopping = true;
	for (ss_conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		if (c->state == C_EXEC || c->state == C_FILE)
			finish(s, c, -1, timed_out, 0);
	}
	end_session(s);
	ep_del(s, s->listen_fd);
	ep_del(s, s->idle_fd);
	s->attached = false;
}

/* A session's pid 1 serves the commands we send it. */
static const sc_mode_ops ss_mode = {
    .command_server = true,
    .on_started = ss_started,
    .on_fd_ready = ss_fd_ready,
    .on_sandbox_gone = ss_gone,
};

/* ---- the process ---- */

/* "a b" -> ["a", "b"]: the kept workspaces. */
static json_t *ids_json(const char *ids)
{
	json_t *a = json_array();

	while (a && *ids) {
		size_t n = strcspn(ids, " ");

		if (n)
			(void)json_array_append_new(a, json_stringn(ids, n));
		ids += n + (ids[n] == ' ');
	}
	return a;
}

static json_t *summary_json(ss_server *s, int r, const sc_run_result *res, const sc_diag *d)
{
	json_t *o;

	if (r < 0)
		return json_pack("{s:s, s:s, s:s}", "name", s->name, "error", d->path, "detail",
				 d->message);
	o = json_pack("{s:s, s:s, s:i, s:f, s:f, s:o, s:I, s:I, s:s, s:s, s:s, s:b}", "name",
		      s->name, "sandbox", res->sandbox_id, "exit_status", res->exit_status,
		      "wall_s", (double)res->wall_ns / 1e9, "cpu_s", (double)res->cpu_ns / 1e9,
		      "memory_peak",
		      res->memory_peak == UINT64_MAX ? json_null()
						     : json_integer((json_int_t)res->memory_peak),
		      "commands", (json_int_t)s->commands, "execs", (json_int_t)res->tally.execs,
		      "audit", res->audit_path, "audit_hash", res->audit_hash, "audit_state",
		      !res->audit_sealed ? "unsealed"
		      : res->audit_error ? "failed"
					 : "sealed",
		      "timed_out", res->timed_out);
	if (o) {
		const au_count *e[AU_TALLY_KEYS];
		size_t n = au_table_sorted(&res->tally.limits, e);
		json_t *hits = json_array();

		for (size_t i = 0; hits && i < n; i++)
			(void)json_array_append_new(hits, json_string(e[i]->key));
		(void)json_object_set_new(o, "limits_hit", hits ? hits : json_null());
		(void)json_object_set_new(o, "workspaces", ids_json(res->workspaces));
	}
	return o;
}

static int listen_at(const char *dir, int *ret_fd)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	mode_t old;
	int r;

	if (fd < 0)
		return -errno;
	old = umask(0177); /* the socket 0600 */
	r = unix_bind_in(fd, dir, SS_SOCKET);
	if (r == 0 && listen(fd, 128) < 0)
		r = -errno;
	umask(old);
	if (r < 0)
		return r;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int ss_serve(const sc_session_start_opts *o, const char *name, int dirfd, int lock_fd, int ready_fd)
{
	ss_server s = {.o = o,
		       .lock_fd = lock_fd,
		       .ready_fd = ready_fd,
		       .listen_fd = -1,
		       .idle_fd = -1,
		       .begun = !o->pooled,
		       .started_ns = now_ns()};
	sc_run_opts ro = {.plan = o->plan,
			  .audit_path = o->audit_path,
			  .audit_key = o->audit_key,
			  .audit_key_len = o->audit_key_len,
			  .policy_source = o->policy_source,
			  .policy_digest = o->policy_digest,
			  .mode = &ss_mode,
			  .mode_data = &s,
			  .defer_wall = o->pooled,
			  .init_adopted = o->init_adopted};
	sc_run_result *res = sc_run_result_new();
	sc_diag d = {0};
	char path[64];
	int r;

	snprintf(s.name, sizeof(s.name), "%s", name);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dirfd);
	if (!res || !realpath(path, s.dir)) {
		sc_run_result_free(res);
		return SC_EXIT_SETUP;
	}
	s.started = time(NULL);
	r = listen_at(s.dir, &s.listen_fd);
	if (r < 0) {
		dprintf(ready_fd, "cannot listen on %s/%s: %s", s.dir, SS_SOCKET, strerror(-r));
		sc_run_result_free(res);
		return SC_EXIT_SETUP;
	}
	if (o->plan->idle_ns != PLAN_UNLIMITED)
		s.idle_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	r = sc_run(&ro, res, &d);
	if (!s.ready && s.ready_fd >= 0)
		dprintf(s.ready_fd, "cannot set up the sandbox: %s%s%s", d.path,
			d.path[0] ? ": " : "",
			d.message[0] ? d.message : strerror(r < 0 ? -r : EIO));
	/* The log is sealed: whoever asked for the stop gets its end. */
	{
		json_t *sum = summary_json(&s, r, res, &d);

		for (ss_conn *c = s.conns, *next; c; c = next) {
			next = c->next;
			if (c->state == C_STOP && sum) {
				json_t *m = json_pack("{s:b, s:O}", "ok", 1, "summary", sum);

				if (m)
					(void)ss_send(c->fd, m, NULL, 0);
				json_decref(m);
			}
			conn_free(&s, c);
		}
		json_decref(sum);
	}
	for (size_t i = 0; i < ELEMENTSOF(ss_files); i++)
		(void)unlinkat(dirfd, ss_files[i], 0);
	{
		char parent[4096], *slash;

		snprintf(parent, sizeof(parent), "%s", s.dir);
		slash = strrchr(parent, '/');
		if (slash) {
			*slash = '\0';
			(void)rmdir(s.dir);
		}
	}
	(void)safe_close(s.listen_fd);
	(void)safe_close(s.idle_fd);
	(void)safe_close(s.ready_fd);
	r = r < 0 ? SC_EXIT_SETUP : res->exit_status;
	sc_run_result_free(res);
	return r;
}
