/* SPDX-License-Identifier: MIT */
#include "serve/child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"

extern char **environ;

int sv_child_spawn(const char *exe, char *const argv[], bool pipe_in, sv_child *ret)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	pid_t pid;
	int r;

	if ((pipe_in && pipe2(in, O_CLOEXEC) < 0) || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(err, O_CLOEXEC) < 0) {
		r = -errno;
		goto fail;
	}
	(void)posix_spawn_file_actions_init(&fa);
	(void)posix_spawnattr_init(&attr);
	if (pipe_in)
		(void)posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	else
		(void)posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	(void)posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	(void)posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	sigemptyset(&none);
	sigfillset(&all);
	(void)posix_spawnattr_setsigmask(&attr, &none);
	(void)posix_spawnattr_setsigdefault(&attr, &all);
	(void)posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	r = -posix_spawn(&pid, exe, &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (r < 0)
		goto fail;
	if (pipe_in)
		(void)close(in[0]);
	(void)close(out[1]);
	(void)close(err[1]);
	ret->pid = pid;
	ret->in = pipe_in ? in[1] : -1;
	ret->out = out[0];
	ret->err = err[0];
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		safe_close(in[i]);
		safe_close(out[i]);
		safe_close(err[i]);
	}
	return r;
}

static void close_ends(sv_child *c)
{
	c->in = safe_close(c->in);
	c->out = safe_close(c->out);
	c->err = safe_close(c->err);
}

int sv_child_wait(sv_child *c, int *ret_status)
{
	int st = 0;

	close_ends(c);
	if (c->pid <= 0)
		return -ECHILD;
	while (waitpid(c->pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	c->pid = 0;
	if (ret_status)
		*ret_status = st;
	return 0;
}

void sv_child_kill(sv_child *c, unsigned grace_ms)
{
	int st;

	close_ends(c);
	if (c->pid <= 0)
		return;
	(void)kill(c->pid, SIGTERM);
	for (unsigned waited = 0; waited < grace_ms; waited += 10) {
		pid_t p = waitpid(c->pid, &st, WNOHANG);

		if (p == c->pid || (p < 0 && errno != EINTR)) {
			c->pid = 0;
			return;
		}
		(void)nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	(void)kill(c->pid, SIGKILL);
	(void)sv_child_wait(c, NULL);
}

/* Appends what fd has to *buf; 0 at EOF, 1 when more may come. */
static int drain(int fd, char **buf, size_t *len, size_t *cap, size_t max)
{
	char tmp[65536];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : -errno;
	if (n == 0)
		return 0;
	if (*len + (size_t)n > max)
		return -EFBIG;
	if (*len + (size_t)n + 1 > *cap) {
		size_t nc = *cap ? *cap : 4096;
		char *p;

		while (nc < *len + (size_t)n + 1)
			nc *= 2;
		p = realloc(*buf, nc);
		if (!p)
			return -ENOMEM;
		*buf = p;
		*cap = nc;
	}
	memcpy(*buf + *len, tmp, (size_t)n);
	*len += (size_t)n;
	(*buf)[*len] = 0;
	return 1;
}

int sv_child_run(const char *exe, char *const argv[], const void *in, size_t in_len, size_t max_out,
		 sv_capture *ret)
{
	sv_child c;
	size_t out_cap = 0, err_cap = 0, in_off = 0;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = sv_child_spawn(exe, argv, in != NULL, &c);
	if (r < 0)
		return r;
	if (c.in >= 0 && in_len == 0)
		c.in = safe_close(c.in);
	if (c.in >= 0)
		(void)fcntl(c.in, F_SETFL, O_NONBLOCK);
	while (c.out >= 0 || c.err >= 0) {
		struct pollfd p[3] = {
		    {.fd = c.out, .events = POLLIN},
		    {.fd = c.err, .events = POLLIN},
		    {.fd = c.in, .events = POLLOUT},
		};

		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if (p[2].revents) {
			ssize_t n = write(c.in, (const char *)in + in_off, in_len - in_off);

			if (n > 0)
				in_off += (size_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) || in_off == in_len)
				c.in = safe_close(c.in);
		}
		if (p[0].revents) {
			r = drain(c.out, &ret->out, &ret->out_len, &out_cap, max_out);
			if (r <= 0)
				c.out = safe_close(c.out);
			if (r < 0)
				break;
		}
		if (p[1].revents) {
			r = drain(c.err, &ret->err, &ret->err_len, &err_cap, SV_MAX_STDERR);
			if (r <= 0)
				c.err = safe_close(c.err);
			/* stderr past its bound is dropped, not an error */
		}
		r = 0;
	}
	if (r < 0) {
		sv_child_kill(&c, 0);
		sv_capture_done(ret);
		return r;
	}
	r = sv_child_wait(&c, &ret->status);
	if (!ret->out)
		ret->out = strdup("");
	if (!ret->err)
		ret->err = strdup("");
	if (!ret->out || !ret->err) {
		sv_capture_done(ret);
		return -ENOMEM;
	}
	return r;
}

void sv_capture_done(sv_capture *c)
{
	free(c->out);
	free(c->err);
	c->out = c->err = NULL;
}

int sv_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 255;
}

void sv_capture_message(const sv_capture *c, char *out, size_t size)
{
	const char *s = c->err ? c->err : "";
	const char *nl;
	size_t n;

	if (!strncmp(s, "sandcap: ", 9))
		s += 9;
	nl = strchr(s, '\n');
	n = nl ? (size_t)(nl - s) : strlen(s);
	if (n == 0) {
		(void)snprintf(out, size, "exited with status %d", sv_exit_code(c->status));
		return;
	}
	(void)snprintf(out, size, "%.*s", (int)n, s);
}
