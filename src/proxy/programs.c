/* SPDX-License-Identifier: MIT */
/* The worker's program and the sandbox CA, in process or from sandcap-proxy. */
#include "proxy/programs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sibling.h"

int (*px_ca_make_here)(uint64_t lifetime_s, const char *const *names, size_t n_names,
		       char **ret_cert, char **ret_key);

const char *px_program_dir = SANDCAP_LIBEXECDIR;

int px_worker_exe_open(void)
{
	return sibling_open(PX_PROGRAM, px_program_dir, O_PATH);
}

const char *px_program_hint(int r)
{
	static char hint[PATH_MAX + 64];
	char why[PATH_MAX];

	if (r != -ENOENT && r != -EPERM)
		return "";
	(void)snprintf(hint, sizeof(hint), " (%s does this; it is %s)", PX_PROGRAM,
		       sibling_why(px_program_dir, r, why, sizeof(why)));
	return hint;
}

#define KEY_MARK "-----BEGIN PRIVATE KEY-----"

/* Reads the helper's output, at most PX_CA_PEM_MAX bytes. */
static int read_pems(int fd, char **ret, size_t *ret_len)
{
	size_t len = 0;
	char *buf = malloc(PX_CA_PEM_MAX + 1);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf + len, PX_CA_PEM_MAX - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || (len += (size_t)n) == PX_CA_PEM_MAX) {
			buf[len] = '\0';
			if (n < 0 || len == PX_CA_PEM_MAX) {
				explicit_bzero(buf, len);
				free(buf);
				return n < 0 ? -errno : -EFBIG;
			}
			*ret = buf;
			*ret_len = len;
			return 0;
		}
	}
}

static int by_helper(uint64_t lifetime_s, const char *const *names, size_t n_names, char **ret_cert,
		     char **ret_key)
{
	_cleanup_close_ int exe = px_worker_exe_open();
	_cleanup_free_ char **argv = calloc(n_names + 4, sizeof(*argv));
	char life[24], *out = NULL, *key;
	size_t out_len = 0;
	int pipefd[2], status, r;
	pid_t pid;

	if (exe < 0)
		return exe;
	if (!argv)
		return -ENOMEM;
	snprintf(life, sizeof(life), "%" PRIu64, lifetime_s);
	argv[0] = (char *)PX_PROGRAM;
	argv[1] = (char *)PX_CA_ARG;
	argv[2] = life;
	for (size_t i = 0; i < n_names; i++)
		argv[3 + i] = (char *)names[i];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		static char *const no_env[] = {NULL};
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null < 0 || dup2(null, 0) < 0 || dup2(pipefd[1], 1) < 0)
			_exit(127);
		(void)execveat(exe, "", argv, no_env, AT_EMPTY_PATH);
		_exit(127);
	}
	(void)close(pipefd[1]);
	r = pid < 0 ? -errno : read_pems(pipefd[0], &out, &out_len);
	(void)close(pipefd[0]);
	if (pid > 0) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (r >= 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
			r = -EPROTO;
	}
	key = r >= 0 ? strstr(out, KEY_MARK) : NULL;
	if (r >= 0 && (!key || strncmp(out, "-----BEGIN CERTIFICATE-----", 27) != 0 ||
		       strstr(key + 1, "-----BEGIN ")))
		r = -EPROTO;
	if (r >= 0) {
		*ret_key = strdup(key);
		*key = '\0';
		*ret_cert = strdup(out);
		if (!*ret_key || !*ret_cert) {
			if (*ret_key)
				explicit_bzero(*ret_key, strlen(*ret_key));
			free(*ret_key);
			free(*ret_cert);
			r = -ENOMEM;
		}
	}
	if (out) {
		explicit_bzero(out, out_len);
		free(out);
	}
	return r;
}

int px_ca_make(uint64_t lifetime_s, const char *const *names, size_t n_names, char **ret_cert,
	       char **ret_key)
{
	if (px_ca_make_here)
		return px_ca_make_here(lifetime_s, names, n_names, ret_cert, ret_key);
	return by_helper(lifetime_s, names, n_names, ret_cert, ret_key);
}
