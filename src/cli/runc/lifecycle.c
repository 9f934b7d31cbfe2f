/* SPDX-License-Identifier: MIT */
/*
 * start, state, kill and delete: a request to the container supervisor on
 * ROOT/ID/oci.sock, or the state directory read.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/exit-status.h"
#include "base/signals.h"
#include "base/unix-addr.h"
#include "cli/runc/runc.h"

/* One request to the container's supervisor: 0 ("ok"), -ENOTCONN (none
 * listens), -EPIPE (it ended without an answer) or -EREMOTEIO (reply says
 * why). Never prints. */
static int ctl_call(const char *dir, const char *req, char *reply, size_t len)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ssize_t n;

	reply[0] = '\0';
	if (fd < 0 || unix_connect_in(fd, dir, "oci.sock") < 0)
		return -ENOTCONN;
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0 || (n = recv(fd, reply, len - 1, 0)) <= 0)
		return -EPIPE;
	reply[n] = '\0';
	return strcmp(reply, "ok") == 0 ? 0 : -EREMOTEIO;
}

static int ctl_request(const char *id, const char *req)
{
	char dir[4096], reply[256];
	int r, code;

	if (rc_cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	r = ctl_call(dir, req, reply, sizeof(reply));
	if (r == -EREMOTEIO)
		rc_err("%s", reply);
	else if (r < 0 && access(dir, F_OK) < 0)
		rc_err("container %s does not exist", id);
	else if (r < 0 &&
		 (r == -ENOTCONN || strcmp(rc_container_status(dir, &code), "stopped") == 0))
		rc_err("container not running: %s", id); /* it ended meanwhile */
	else if (r < 0)
		rc_err("container %s: its supervisor did not answer", id);
	return r < 0 ? 1 : 0;
}

int rc_start(const char *id)
{
	char dir[4096];
	int code;

	if (rc_cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	if (strcmp(rc_container_status(dir, &code), "created") != 0) {
		rc_err("container %s is not in the created state", id);
		return 1;
	}
	return ctl_request(id, "start");
}

int rc_do_state(const char *id)
{
	char dir[4096];
	json_t *st;
	char *out;

	if (rc_cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	st = rc_container_state(id, dir);
	if (!st) {
		rc_err("container %s does not exist", id);
		return 1;
	}
	out = json_dumps(st, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(st);
	if (!out)
		return 1;
	puts(out);
	free(out);
	return 0;
}

int rc_do_kill(const char *id, const char *sigs, bool all)
{
	char req[32], dir[4096];
	int sig = sgn_parse(sigs ? sigs : "TERM"), code;

	if (sig < 0) {
		rc_err("%s: not a signal (a name such as TERM or SIGKILL, or a number)", sigs);
		return 1;
	}
	if (rc_cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	/* runc's words: containerd's shim takes "container not running" as
	 * a kill that found the process gone (a stopped task it deletes). */
	if (access(dir, F_OK) == 0 && strcmp(rc_container_status(dir, &code), "stopped") == 0) {
		rc_err("container not running: %s", id);
		return 1;
	}
	/* A frozen task takes SIGKILL only once thawed (cgroup v1). */
	if (sig == SIGKILL && rc_container_frozen(dir, id) == 1)
		(void)rc_container_freeze(dir, id, false);
	snprintf(req, sizeof(req), "%s %d", all ? "killall" : "kill", sig);
	return ctl_request(id, req);
}

int rc_do_delete(const char *id, bool force)
{
	char dir[4096], path[4200];
	const char *status;
	_cleanup_close_ int lk = -1;
	int code;

	if (rc_cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	if (access(dir, F_OK) < 0) {
		if (force)
			return 0;
		rc_err("container %s does not exist", id);
		return 1;
	}
	status = rc_container_status(dir, &code);
	if (strcmp(status, "running") == 0 && !force) {
		rc_err("container %s is running: kill it first, or delete --force", id);
		return 1;
	}
	/* Its supervisor kills the sandbox; should it not answer, the
	 * session is stopped from here, which ends the supervisor's wait. */
	if (strcmp(status, "stopped") != 0) {
		char reply[256];

		if (rc_container_frozen(dir, id) == 1)
			(void)rc_container_freeze(dir, id, false);
		if (ctl_call(dir, "killall 9", reply, sizeof(reply)) < 0)
			(void)sc_session_stop(id, NULL);
	}
	/* Its supervisor's end: the lock is free once it has gone. */
	snprintf(path, sizeof(path), "%s/lock", dir);
	lk = open(path, O_RDONLY | O_CLOEXEC);
	if (lk >= 0)
		(void)flock(lk, LOCK_EX);
	rc_remove_dir(dir);
	return 0;
}
