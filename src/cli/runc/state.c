/* SPDX-License-Identifier: MIT */
/*
 * The state directory, ROOT/ID: state.json (runc's state), status,
 * pids, lock (held by the container supervisor while it lives), oci.sock,
 * cgroups.made and freezer. A container's status is read from them, so
 * that every sandcap-runc call is a new process (docs/oci.md, "State").
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/exit-status.h"
#include "base/io.h"
#include "cli/runc/runc.h"

int rc_cdir(const char *id, char *buf, size_t len)
{
	if (!sc_session_name_valid(id)) {
		rc_err("%s: a container id is 1 to %d of A-Z a-z 0-9 . _ -, not starting with . "
		       "or -",
		       id, SC_SESSION_NAME_MAX);
		return -EINVAL;
	}
	return (size_t)snprintf(buf, len, "%s/%s", rc_root, id) < len ? 0 : -ENAMETOOLONG;
}

int rc_existing_cdir(const char *id, char *buf, size_t len)
{
	if (rc_cdir(id, buf, len) < 0)
		return SC_EXIT_SETUP;
	if (access(buf, F_OK) < 0) {
		rc_err("container %s does not exist", id);
		return 1;
	}
	return 0;
}

int rc_write_file(const char *dir, const char *name, const char *text)
{
	char path[4200], tmp[4220];
	_cleanup_close_ int fd = -1;
	int r;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = io_write_all(fd, text, strlen(text));
	if (r < 0)
		return r;
	return rename(tmp, path) < 0 ? -errno : 0;
}

json_t *rc_read_json(const char *path)
{
	return json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
}

/* The start time of process pid (proc(5) stat's field 22), or 0 when it
 * is gone or a zombie. */
unsigned long long rc_proc_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	_cleanup_close_ int fd = -1;
	unsigned long long t = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = pid > 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* comm may hold anything */
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	p += 2;
	for (int field = 3; field < 22 && p; field++)
		if ((p = strchr(p, ' ')))
			p++;
	if (p)
		t = strtoull(p, NULL, 10);
	return t;
}

/* The pids file: "INIT START SUPERVISOR", the sandbox's pid 1 (and its
 * start time, so that a reused pid is not taken for it) and the container
 * supervisor. 0 each when missing. */
void rc_read_pids(const char *dir, pid_t *ret_init, unsigned long long *ret_start, pid_t *ret_sup)
{
	char path[4200], buf[128];
	_cleanup_close_ int fd = -1;
	ssize_t n;
	int init = 0, sup = 0;
	unsigned long long start = 0;

	snprintf(path, sizeof(path), "%s/pids", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	buf[n > 0 ? n : 0] = '\0';
	if (sscanf(buf, "%d %llu %d", &init, &start, &sup) != 3)
		init = sup = 0, start = 0;
	*ret_init = init;
	*ret_start = start;
	if (ret_sup)
		*ret_sup = sup;
}

/* "created", "running" or "stopped" (and the exit code), from the
 * supervisor's status file, whether it still holds its lock, and whether
 * pid 1 lives: its end is the container's, as runc's (the supervisor
 * follows it at once, but containerd's shim reaps pid 1 and deletes the
 * container meanwhile). */
const char *rc_container_status(const char *dir, int *ret_code)
{
	static char buf[64];
	char path[4200];
	_cleanup_close_ int fd = -1, lk = -1;
	unsigned long long start;
	pid_t init;
	ssize_t n;

	*ret_code = -1;
	snprintf(path, sizeof(path), "%s/status", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	buf[n > 0 ? n : 0] = '\0';
	if (strncmp(buf, "stopped", 7) == 0) {
		*ret_code = atoi(buf + 7);
		return "stopped";
	}
	snprintf(path, sizeof(path), "%s/lock", dir);
	lk = open(path, O_RDONLY | O_CLOEXEC);
	if (lk < 0 || flock(lk, LOCK_SH | LOCK_NB) == 0)
		return "stopped"; /* its supervisor died */
	rc_read_pids(dir, &init, &start, NULL);
	if (init > 0 && rc_proc_start(init) != start)
		return "stopped"; /* pid 1 has ended */
	return strncmp(buf, "running", 7) == 0 ? "running" : "created";
}

/* DIR/NAME's text (small files of the state directory), "" when missing. */
void rc_read_small(const char *dir, const char *name, char *buf, size_t len)
{
	char path[4200];
	_cleanup_free_ char *s = NULL;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	buf[0] = '\0';
	if (io_read_file_at(AT_FDCWD, path, len - 1, &s, &n) >= 0)
		snprintf(buf, len, "%.*s", (int)n, s);
}

void rc_remove_dir(const char *dir)
{
	char made[4 * PATH_MAX];

	/* The cgroups create made: the sandbox's own, inside, went with it. */
	rc_read_small(dir, "cgroups.made", made, sizeof(made));
	oci_cgroup_remove(made);
	static const char *const files[] = {"state.json",   "status",	      "lock",
					    "oci.sock",	    "state.json.tmp", "status.tmp",
					    "cgroups.made", "freezer",	      "cgroups.made.tmp",
					    "freezer.tmp",  "pids",	      "pids.tmp"};
	char path[4200];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		(void)unlink(path);
	}
	(void)rmdir(dir);
}

/* --root and its parents (containerd's is /run/containerd/runc/NAMESPACE). */
int rc_make_root(void)
{
	char path[4096];

	if ((size_t)snprintf(path, sizeof(path), "%s", rc_root) >= sizeof(path))
		return -ENAMETOOLONG;
	for (char *p = path + 1;; p++) {
		bool end = *p == '\0';

		if (*p != '/' && !end)
			continue;
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
		if (end)
			return 0;
		*p = '/';
	}
}

int rc_write_pid_file(const char *path, pid_t pid)
{
	char tmp[4200], text[32];
	_cleanup_close_ int fd = -1;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	snprintf(text, sizeof(text), "%d", (int)pid);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || io_write_all(fd, text, strlen(text)) < 0 || rename(tmp, path) < 0)
		return -errno;
	return 0;
}

/* The state of container id (its directory dir) with its status, or NULL. */
json_t *rc_container_state(const char *id, const char *dir)
{
	char path[4200];
	json_t *st;
	const char *status;
	int code;

	snprintf(path, sizeof(path), "%s/state.json", dir);
	st = rc_read_json(path);
	if (!st)
		return NULL;
	status = rc_container_status(dir, &code);
	if (strcmp(status, "stopped") != 0 && rc_container_frozen(dir, id) == 1)
		status = "paused";
	(void)json_object_set_new(st, "status", json_string(status));
	if (strcmp(status, "stopped") == 0)
		(void)json_object_set_new(st, "pid", json_integer(0));
	return st;
}
