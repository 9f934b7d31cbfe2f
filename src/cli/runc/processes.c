/* SPDX-License-Identifier: MIT */
/*
 * The container's processes: its pid 1 and every process in its pid
 * namespace, ps, and pause and resume (the freezer of its cgroup).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/exit-status.h"
#include "cli/runc/runc.h"

/* The sandbox's pid 1 as the host sees it, or -errno. */
int rc_init_pid(const char *id)
{
	json_t *req = json_pack("{s:s}", "op", "info"), *reply = NULL;
	int r, init;

	r = req ? sc_session_request(id, req, NULL, &reply, NULL, 0, NULL) : -ENOMEM;
	json_decref(req);
	init = (int)json_integer_value(json_object_get(reply, "init_pid"));
	json_decref(reply);
	if (r < 0)
		return r;
	return init > 0 ? init : -EPROTO;
}

/* The host pids of every process in the container's pid namespace, its
 * pid 1 (sandcap-init) among them, in /proc's order (ascending); *ret
 * malloc'd. */
int rc_container_pids(const char *id, pid_t **ret, size_t *ret_n)
{
	char path[64], want[64], ns[64];
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	ssize_t l;
	int init = rc_init_pid(id);

	if (init < 0)
		return init;
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", init);
	l = readlink(path, want, sizeof(want) - 1);
	if (l < 0)
		return -errno;
	want[l] = '\0';
	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (pid <= 0 || *end)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/ns/pid", pid);
		l = readlink(path, ns, sizeof(ns) - 1);
		if (l < 0 || (size_t)l != strlen(want) || memcmp(ns, want, (size_t)l) != 0)
			continue; /* another namespace's, or gone meanwhile */
		if (n == cap) {
			pid_t *p = cap < (1u << 22)
				       ? realloc(pids, (cap = cap ? 2 * cap : 64) * sizeof(*pids))
				       : NULL;

			if (!p) {
				closedir(d);
				return -ENOMEM;
			}
			pids = p;
		}
		pids[n++] = (pid_t)pid;
	}
	closedir(d);
	*ret = TAKE_PTR(pids);
	*ret_n = n;
	return 0;
}

/* The container's freezer path and its pid 1, or -errno (-ENOENT: it has no
 * freezer, create could not make one). */
static int freezer_of(const char *dir, const char *id, char *fz, size_t len)
{
	rc_read_small(dir, "freezer", fz, len);
	return fz[0] ? rc_init_pid(id) : -ENOENT;
}

/* 1 when the container is paused (its freezer frozen), 0 when not, -errno
 * when it has no freezer. */
int rc_container_frozen(const char *dir, const char *id)
{
	char fz[OCI_CGROUP_PATH_MAX + 64];
	int pid = freezer_of(dir, id, fz, sizeof(fz));

	return pid < 0 ? pid : oci_cg()->frozen(fz, pid);
}

int rc_container_freeze(const char *dir, const char *id, bool frozen)
{
	char fz[OCI_CGROUP_PATH_MAX + 64];
	int pid = freezer_of(dir, id, fz, sizeof(fz));

	return pid < 0 ? pid : oci_cg()->freeze(fz, pid, frozen);
}

/* pause and resume: the freezer of the container's cgroup (runc's words). */
int rc_do_pause(const char *id, bool pause)
{
	char dir[4096];
	int code, r;

	r = rc_existing_cdir(id, dir, sizeof(dir));
	if (r)
		return r;
	if (strcmp(rc_container_status(dir, &code), "stopped") == 0) {
		rc_err("container not running: %s", id);
		return 1;
	}
	r = rc_container_frozen(dir, id);
	if (r >= 0 && r == pause) {
		rc_err(pause ? "container not running: %s (paused)" : "container not paused: %s",
		       id);
		return 1;
	}
	if (r >= 0)
		r = rc_container_freeze(dir, id, pause);
	if (r < 0) {
		rc_err("container %s: cannot %s it: %s", id, pause ? "pause" : "resume",
		       r == -ENOENT ? "it has no freezer cgroup" : strerror(-r));
		return 1;
	}
	return 0;
}

/* runc's table: ps(1) (ps_args, default -ef), its lines of those pids. */
static int ps_table(const pid_t *pids, size_t n, char **ps_args)
{
	static char ps[] = "ps", ef[] = "-ef";
	char *argv[64] = {ps};
	size_t a = 1, col = 0;
	bool header = true;
	char line[8192];
	int pipefd[2], status;
	FILE *f;
	pid_t pid;

	if (!ps_args[0])
		argv[a++] = ef;
	for (; *ps_args && a < 63; ps_args++)
		argv[a++] = *ps_args;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		if (dup2(pipefd[1], STDOUT_FILENO) < 0)
			_exit(127);
		execvp("ps", argv);
		_exit(127);
	}
	(void)close(pipefd[1]);
	f = pid > 0 ? fdopen(pipefd[0], "re") : NULL;
	if (!f) {
		(void)close(pipefd[0]);
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		char copy[8192], *tok, *save = NULL;
		size_t i = 0;
		long v = -1;

		snprintf(copy, sizeof(copy), "%s", line);
		for (tok = strtok_r(copy, " \t\n", &save); tok;
		     tok = strtok_r(NULL, " \t\n", &save), i++) {
			if (header && strcmp(tok, "PID") == 0)
				col = i + 1;
			else if (!header && i + 1 == col)
				v = strtol(tok, NULL, 10);
		}
		if (header) {
			header = false;
			fputs(line, stdout);
			continue;
		}
		for (size_t k = 0; k < n; k++)
			if (pids[k] == v) {
				fputs(line, stdout);
				break;
			}
	}
	fclose(f);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!col)
		return -ENOMSG; /* no PID column: the ps arguments hid it */
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}

int rc_do_ps(const char *id, const char *format, char **ps_args)
{
	_cleanup_free_ pid_t *pids = NULL;
	char dir[4096];
	size_t n = 0;
	int code, r;

	if (strcmp(format, "json") != 0 && strcmp(format, "table") != 0) {
		rc_err("--format %s: expected table or json", format);
		return 2;
	}
	if (rc_cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	if (access(dir, F_OK) < 0 || strcmp(rc_container_status(dir, &code), "stopped") == 0) {
		rc_err("container %s %s", id,
		       access(dir, F_OK) < 0 ? "does not exist" : "is not running");
		return 1;
	}
	r = rc_container_pids(id, &pids, &n);
	if (r < 0) {
		rc_err("container %s: cannot list its processes: %s", id, strerror(-r));
		return 1;
	}
	if (strcmp(format, "json") == 0) {
		json_t *a = json_array();
		char *s;

		for (size_t i = 0; a && i < n; i++)
			(void)json_array_append_new(a, json_integer(pids[i]));
		s = a ? json_dumps(a, JSON_COMPACT) : NULL;
		json_decref(a);
		if (!s)
			return 1;
		puts(s);
		free(s);
		return 0;
	}
	r = ps_table(pids, n, ps_args);
	if (r < 0) {
		rc_err("ps: %s", r == -ENOMSG	? "its output has no PID column"
				 : r == -ECHILD ? "ps failed"
						: strerror(-r));
		return 1;
	}
	return 0;
}
