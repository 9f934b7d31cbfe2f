/* SPDX-License-Identifier: MIT */
#include "serve/commands.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "session/exec-wire.h"

#define READ_CHUNK     49152u
#define DRAIN_MS       200 /* output still coming once it exited (a child holds the pipe) */
#define STDIN_STALL_MS 30000
#define SV_CMD_MAX     4096u /* in the whole daemon */

struct sv_cmd {
	sv_cmd *next;
	unsigned refs;
	unsigned pid;
	char session[64];
	uid_t uid;
	json_t *info;
	bool background, ended, primary_on;
	bool pty; /* h.stdout_fd and h.stdin_fd are the pty master */
	int64_t started_ms, ended_ms;
	sx_handle h;
	pthread_mutex_t in_lock; /* h.stdin_fd */
	char *buf;		 /* NDJSON lines [base, base + len) of the output */
	size_t len;
	uint64_t base, primary_off;
	uint64_t timeout_ms;
	bool timed_out;
	sv_cmds *t;
};

struct sv_cmds {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	sv_cmd *list;
	unsigned next_pid, n;
	unsigned live; /* in the table or held by a reader or caller */
};

static int64_t now_ms(int clock)
{
	struct timespec ts;

	(void)clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sv_cmds_new(sv_cmds **ret)
{
	sv_cmds *t = calloc(1, sizeof(*t));
	pthread_condattr_t a;

	if (!t)
		return -ENOMEM;
	(void)pthread_mutex_init(&t->lock, NULL);
	(void)pthread_condattr_init(&a);
	(void)pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	(void)pthread_cond_init(&t->cond, &a);
	(void)pthread_condattr_destroy(&a);
	*ret = t;
	return 0;
}

static void cmd_free(sv_cmd *c)
{
	(void)safe_close(c->h.conn);
	(void)safe_close(c->h.stdin_fd);
	(void)safe_close(c->h.stdout_fd);
	(void)safe_close(c->h.stderr_fd);
	(void)pthread_mutex_destroy(&c->in_lock);
	json_decref(c->info);
	free(c->buf);
	free(c);
}

/* Under t->lock. */
static void unref(sv_cmds *t, sv_cmd *c)
{
	if (--c->refs == 0) {
		cmd_free(c);
		t->live--;
		(void)pthread_cond_broadcast(&t->cond); /* sv_cmds_free may wait */
	}
}

void sv_cmd_put(sv_cmds *t, sv_cmd *c)
{
	if (!c)
		return;
	(void)pthread_mutex_lock(&t->lock);
	unref(t, c);
	(void)pthread_mutex_unlock(&t->lock);
}

void sv_cmds_free(sv_cmds *t)
{
	if (!t)
		return;
	struct timespec until;

	sv_cmds_forget(t, NULL);
	/* The sessions are stopped: each reader sees its command end and lets
	 * go. One still reading after two seconds keeps the table (the daemon
	 * ends anyway). */
	(void)clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += 2;
	(void)pthread_mutex_lock(&t->lock);
	while (t->live > 0 && pthread_cond_timedwait(&t->cond, &t->lock, &until) == 0)
		;
	if (t->live > 0) {
		(void)pthread_mutex_unlock(&t->lock);
		return;
	}
	(void)pthread_mutex_unlock(&t->lock);
	(void)pthread_mutex_destroy(&t->lock);
	(void)pthread_cond_destroy(&t->cond);
	free(t);
}

unsigned sv_cmd_pid(const sv_cmd *c)
{
	return c->pid;
}

/* Drops from the table (under t->lock) what ended long enough ago, or
 * every command of session (NULL: all) when forget. */
static void sweep(sv_cmds *t, const char *session, bool forget)
{
	int64_t now = now_ms(CLOCK_MONOTONIC);

	for (sv_cmd **p = &t->list; *p;) {
		sv_cmd *c = *p;
		bool drop = forget ? (!session || !strcmp(c->session, session))
				   : c->ended && now - c->ended_ms > SV_CMD_LINGER_MS;

		if (!drop) {
			p = &c->next;
			continue;
		}
		*p = c->next;
		t->n--;
		if (!c->ended)
			(void)sx_exec_signal(&c->h, SIGKILL);
		unref(t, c);
	}
}

void sv_cmds_forget(sv_cmds *t, const char *session)
{
	(void)pthread_mutex_lock(&t->lock);
	sweep(t, session, true);
	(void)pthread_cond_broadcast(&t->cond);
	(void)pthread_mutex_unlock(&t->lock);
}

/* Appends one line (under t->lock): the oldest lines make room, but never
 * those the primary reader has not read (it waits for it instead). */
static void append(sv_cmds *t, sv_cmd *c, const char *line, size_t n)
{
	while (c->len + n > SV_CMD_KEEP) {
		size_t need = c->len + n - SV_CMD_KEEP,
		       can = c->primary_on ? c->primary_off - c->base : c->len, cut;
		const char *nl;

		if (can == 0) {
			(void)pthread_cond_wait(&t->cond, &t->lock);
			continue;
		}
		cut = can;
		if (need < can && (nl = memchr(c->buf + need - 1, '\n', can - need + 1)))
			cut = (size_t)(nl - c->buf) + 1;
		memmove(c->buf, c->buf + cut, c->len - cut);
		c->len -= cut;
		c->base += cut;
	}
	if (!c->buf) {
		c->buf = malloc(SV_CMD_KEEP);
		if (!c->buf)
			return; /* the output is lost, the command goes on */
	}
	memcpy(c->buf + c->len, line, n);
	c->len += n;
	(void)pthread_cond_broadcast(&t->cond);
}

static void append_output(sv_cmds *t, sv_cmd *c, const char *stream, const char *data, size_t n)
{
	static const char pre[] = "{\"stream\":\"";
	char line[sizeof(pre) + 16 + B64_LEN(READ_CHUNK) + 16];
	size_t at = (size_t)snprintf(line, sizeof(line), "%s%s\",\"data\":\"", pre, stream);

	at += b64_encode(data, n, line + at);
	memcpy(line + at, "\"}\n", 3);
	(void)pthread_mutex_lock(&t->lock);
	append(t, c, line, at + 3);
	(void)pthread_mutex_unlock(&t->lock);
}

static void append_end(sv_cmds *t, sv_cmd *c, json_t *o)
{
	_cleanup_free_ char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	size_t n = s ? strlen(s) : 0;

	json_decref(o);
	(void)pthread_mutex_lock(&t->lock);
	if (s) {
		s[n] = '\n'; /* over the NUL: the length is n + 1 */
		append(t, c, s, n + 1);
	}
	c->ended = true;
	c->ended_ms = now_ms(CLOCK_MONOTONIC);
	(void)pthread_cond_broadcast(&t->cond);
	(void)pthread_mutex_unlock(&t->lock);
}

static json_t *result_json(const sv_cmd *c, const sx_result *res)
{
	json_t *hits = json_array();

	if (res->err)
		return json_pack("{s:{s:s, s:s}}", "error", "code", "exec_failed", "message",
				 strerror(res->err));
	if (res->flags & SX_EXEC_WALL)
		(void)json_array_append_new(hits, json_string("exec_wall"));
	if (res->flags & SX_WALL)
		(void)json_array_append_new(hits, json_string("wall"));
	if (res->flags & SX_MEMORY)
		(void)json_array_append_new(hits, json_string("memory"));
	if (c->timed_out)
		(void)json_array_append_new(hits, json_string("timeout"));
	return json_pack("{s:I, s:i, s:I, s:o, s:I}", "pid", (json_int_t)c->pid, "exit_code",
			 res->exit_code, "signal", (json_int_t)res->signal, "limits_hit", hits,
			 "duration_ms", (json_int_t)res->duration_ms);
}

/* Reads the command's output and its end; one thread per command. */
static void *reader_main(void *arg)
{
	sv_cmd *c = arg;
	sv_cmds *t = c->t;
	_cleanup_free_ char *buf = malloc(READ_CHUNK);
	int64_t deadline = c->timeout_ms ? now_ms(CLOCK_MONOTONIC) + (int64_t)c->timeout_ms : 0;
	int64_t drain_until = 0;
	sx_handle w = {.conn = dup(c->h.conn)};
	sx_result res = {0};
	bool exited = false, lost = false;

	while (buf && (!exited || c->h.stdout_fd >= 0 || c->h.stderr_fd >= 0)) {
		struct pollfd p[3] = {{.fd = c->h.stdout_fd, .events = POLLIN},
				      {.fd = c->h.stderr_fd, .events = POLLIN},
				      {.fd = exited ? -1 : w.conn, .events = POLLIN}};
		int64_t now = now_ms(CLOCK_MONOTONIC), wait = -1;
		int n;

		if (exited)
			wait = drain_until - now;
		else if (deadline && !c->timed_out)
			wait = deadline - now;
		if (wait == 0 || (wait < 0 && (exited || (deadline && !c->timed_out)))) {
			if (exited)
				break;
			c->timed_out = true;
			(void)pthread_mutex_lock(&t->lock);
			(void)sx_exec_signal(&c->h, SIGKILL);
			(void)pthread_mutex_unlock(&t->lock);
			continue;
		}
		n = poll(p, 3, wait > 60000 ? 60000 : (int)wait);
		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2 && n > 0; i++) {
			int *fd = i ? &c->h.stderr_fd : &c->h.stdout_fd;
			ssize_t k;

			if (!p[i].revents)
				continue;
			k = read(*fd, buf, READ_CHUNK);
			if (k < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (k <= 0) {
				(void)pthread_mutex_lock(&t->lock);
				*fd = safe_close(*fd);
				(void)pthread_mutex_unlock(&t->lock);
			} else
				append_output(t, c,
					      c->pty ? "pty"
					      : i    ? "stderr"
						     : "stdout",
					      buf, (size_t)k);
		}
		if (n > 0 && p[2].revents) {
			int r = sx_exec_wait(&w, &res);

			exited = true;
			lost = r < 0;
			drain_until = now_ms(CLOCK_MONOTONIC) + DRAIN_MS;
		}
	}
	(void)safe_close(w.conn);
	if (lost || !exited)
		append_end(t, c,
			   json_pack("{s:{s:s, s:s}}", "error", "code", "session_failed", "message",
				     "the session ended before the command did"));
	else
		append_end(t, c, result_json(c, &res));
	sv_cmd_put(t, c);
	return NULL;
}

int sv_cmd_start(sv_cmds *t, const sv_cmd_spec *s, sv_cmd **ret, char *why, size_t why_len)
{
	sx_req q = {.argv = s->argv,
		    .cwd = s->cwd,
		    .env = s->env,
		    .tty = s->pty,
		    .rows = s->rows,
		    .cols = s->cols};
	pthread_attr_t attr;
	pthread_t th;
	unsigned mine = 0;
	sv_cmd *c;
	int r;

	(void)pthread_mutex_lock(&t->lock);
	sweep(t, NULL, false);
	for (sv_cmd *x = t->list; x; x = x->next)
		mine += !strcmp(x->session, s->session);
	r = mine >= SV_CMD_MAX_PER_SESSION || t->n >= SV_CMD_MAX ? -EUSERS : 0;
	(void)pthread_mutex_unlock(&t->lock);
	if (r < 0)
		return r;
	if (strlen(s->session) >= sizeof(c->session))
		return -ENAMETOOLONG;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	r = sx_exec(s->session, &q, &c->h, why, why_len);
	if (r < 0) {
		free(c);
		return r;
	}
	(void)pthread_mutex_init(&c->in_lock, NULL);
	if (s->pty) {
		/* One master for both ways: read by the reader, written by stdin. */
		c->pty = true;
		c->h.stdout_fd = TAKE_FD(c->h.pty_fd);
		c->h.stdin_fd = fcntl(c->h.stdout_fd, F_DUPFD_CLOEXEC, 3);
		if (c->h.stdin_fd < 0) {
			r = -errno;
			(void)sx_exec_signal(&c->h, SIGKILL);
			cmd_free(c);
			return r;
		}
	}
	strcpy(c->session, s->session);
	c->uid = s->uid;
	c->info = json_incref(s->info);
	c->background = s->background;
	c->primary_on = true;
	c->timeout_ms = s->timeout_ms;
	c->started_ms = now_ms(CLOCK_REALTIME);
	c->t = t;
	if (!s->keep_stdin && !s->pty)
		c->h.stdin_fd = safe_close(c->h.stdin_fd);
	else
		(void)fcntl(c->h.stdin_fd, F_SETFL, O_NONBLOCK);
	c->refs = 3; /* the table, the reader, the caller */
	(void)pthread_mutex_lock(&t->lock);
	t->live++;
	c->pid = ++t->next_pid;
	c->next = t->list;
	t->list = c;
	t->n++;
	(void)pthread_mutex_unlock(&t->lock);
	(void)pthread_attr_init(&attr);
	(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	(void)pthread_attr_setstacksize(&attr, 256 * 1024);
	if (pthread_create(&th, &attr, reader_main, c) != 0) {
		(void)pthread_attr_destroy(&attr);
		(void)pthread_mutex_lock(&t->lock);
		for (sv_cmd **p = &t->list; *p; p = &(*p)->next)
			if (*p == c) {
				*p = c->next;
				t->n--;
				break;
			}
		(void)sx_exec_signal(&c->h, SIGKILL);
		c->refs = 1;
		unref(t, c);
		(void)pthread_mutex_unlock(&t->lock);
		return -EAGAIN;
	}
	(void)pthread_attr_destroy(&attr);
	*ret = c;
	return 0;
}

sv_cmd *sv_cmd_find(sv_cmds *t, const char *session, uid_t uid, unsigned pid)
{
	sv_cmd *found = NULL;

	(void)pthread_mutex_lock(&t->lock);
	sweep(t, NULL, false);
	for (sv_cmd *c = t->list; c && !found; c = c->next)
		if (c->pid == pid && c->uid == uid && !strcmp(c->session, session)) {
			c->refs++;
			found = c;
		}
	(void)pthread_mutex_unlock(&t->lock);
	return found;
}

ssize_t sv_cmd_read(sv_cmds *t, sv_cmd *c, uint64_t *off, char *buf, size_t max, int wait_ms,
		    bool primary)
{
	struct timespec until;
	ssize_t r = 0;
	size_t avail, n;

	(void)clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	(void)pthread_mutex_lock(&t->lock);
	if (*off < c->base)
		*off = c->base; /* dropped before this reader came: it starts later */
	while (*off == c->base + c->len && !c->ended)
		if (pthread_cond_timedwait(&t->cond, &t->lock, &until) == ETIMEDOUT)
			break;
	avail = (size_t)(c->base + c->len - *off);
	if (avail == 0)
		r = c->ended ? -ENODATA : 0;
	else {
		const char *from = c->buf + (*off - c->base);

		n = avail < max ? avail : max;
		if (n < avail) { /* whole lines only */
			const char *nl = memrchr(from, '\n', n);

			n = nl ? (size_t)(nl - from) + 1 : 0;
		}
		memcpy(buf, from, n);
		*off += n;
		r = (ssize_t)n;
	}
	if (primary) {
		c->primary_off = *off;
		(void)pthread_cond_broadcast(&t->cond);
	}
	(void)pthread_mutex_unlock(&t->lock);
	return r;
}

void sv_cmd_leave(sv_cmds *t, sv_cmd *c)
{
	(void)pthread_mutex_lock(&t->lock);
	c->primary_on = false;
	if (!c->background && !c->ended)
		(void)sx_exec_signal(&c->h, SIGKILL);
	(void)pthread_cond_broadcast(&t->cond);
	(void)pthread_mutex_unlock(&t->lock);
}

int sv_cmd_kill(sv_cmds *t, sv_cmd *c, int sig)
{
	int r;

	(void)pthread_mutex_lock(&t->lock);
	r = c->ended ? -ESRCH : sx_exec_signal(&c->h, sig);
	(void)pthread_mutex_unlock(&t->lock);
	return r;
}

int sv_cmd_stdin(sv_cmds *t, sv_cmd *c, const void *data, size_t len, bool eof)
{
	const char *p = data;
	int r = 0;

	(void)t;
	(void)pthread_mutex_lock(&c->in_lock);
	if (c->h.stdin_fd < 0)
		r = -EPIPE;
	while (r == 0 && len > 0) {
		struct pollfd pf = {.fd = c->h.stdin_fd, .events = POLLOUT};
		ssize_t n;

		if (poll(&pf, 1, STDIN_STALL_MS) == 0) {
			r = -ETIMEDOUT;
			break;
		}
		n = write(c->h.stdin_fd, p, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		p += n;
		len -= (size_t)n;
	}
	/* A pty's input stays open (its master also resizes): end of file
	 * there is the line discipline's ^D, a byte the caller sends. */
	if ((eof && !c->pty) || r == -EPIPE)
		c->h.stdin_fd = safe_close(c->h.stdin_fd);
	(void)pthread_mutex_unlock(&c->in_lock);
	return r;
}

int sv_cmd_resize(sv_cmds *t, sv_cmd *c, uint16_t rows, uint16_t cols)
{
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	int r = 0;

	(void)t;
	if (!c->pty)
		return -ENOTTY;
	(void)pthread_mutex_lock(&c->in_lock);
	if (c->h.stdin_fd < 0)
		r = -EPIPE;
	else if (ioctl(c->h.stdin_fd, TIOCSWINSZ, &ws) < 0)
		r = -errno;
	(void)pthread_mutex_unlock(&c->in_lock);
	return r;
}

json_t *sv_cmds_list(sv_cmds *t, const char *session, uid_t uid)
{
	json_t *a = json_array();

	(void)pthread_mutex_lock(&t->lock);
	sweep(t, NULL, false);
	for (sv_cmd *c = t->list; c && a; c = c->next) {
		json_t *o;

		if (c->ended || c->uid != uid || strcmp(c->session, session))
			continue;
		o = json_deep_copy(c->info);
		if (!o)
			o = json_object();
		(void)json_object_set_new(o, "pid", json_integer(c->pid));
		(void)json_object_set_new(o, "background", json_boolean(c->background));
		(void)json_object_set_new(o, "started_ms", json_integer(c->started_ms));
		(void)json_array_append_new(a, o);
	}
	(void)pthread_mutex_unlock(&t->lock);
	return a;
}
