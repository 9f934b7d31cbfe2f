/* SPDX-License-Identifier: MIT */
/*
 * exec: one more process in a running container, a command of its
 * session, run as the container's user; held until --pid-file is written,
 * its stdio relayed by exec itself or, with --detach, by a relay of its
 * own (rc_supervise()).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/exit-status.h"
#include "base/io.h"
#include "cli/runc/runc.h"

/* The container's process.user ids, from its bundle's config.json: an exec
 * runs as the sandbox's one user, so it may ask for that one only. */
static int container_user(const char *dir, uint32_t *ret_uid, uint32_t *ret_gid)
{
	char path[4200];
	json_t *st, *c = NULL, *u;
	int r = -ENOENT;

	snprintf(path, sizeof(path), "%s/state.json", dir);
	st = json_load_file(path, 0, NULL);
	if (json_is_string(json_object_get(st, "bundle"))) {
		snprintf(path, sizeof(path), "%s/config.json",
			 json_string_value(json_object_get(st, "bundle")));
		c = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	}
	u = json_object_get(json_object_get(c, "process"), "user");
	if (json_is_integer(json_object_get(u, "uid"))) {
		*ret_uid = (uint32_t)json_integer_value(json_object_get(u, "uid"));
		*ret_gid = (uint32_t)json_integer_value(json_object_get(u, "gid"));
		r = 0;
	}
	json_decref(c);
	json_decref(st);
	return r;
}

/* One id of --user: digits only, below (uid_t)-1; the rest in *ret_end. */
static int user_id(const char *s, uint32_t *ret, const char **ret_end)
{
	unsigned long long v = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9' && v <= 0xffffffffull; p++)
		v = v * 10 + (unsigned)(*p - '0');
	if (p == s || v >= 0xffffffffull)
		return -EINVAL;
	*ret = (uint32_t)v;
	*ret_end = p;
	return 0;
}

/* runc's --user UID[:GID] (u, or NULL: a process file's uid and gid): the
 * container's ids, or -EPERM. A missing GID is the container's: there is
 * no other to mean. */
static int exec_user(const char *dir, const char *u, uint32_t uid, uint32_t gid)
{
	uint32_t cu, cg;
	const char *end;

	if (container_user(dir, &cu, &cg) < 0)
		return -ENOENT;
	if (u) {
		gid = cg;
		if (user_id(u, &uid, &end) < 0 ||
		    (*end && (*end != ':' || user_id(end + 1, &gid, &end) < 0 || *end)))
			return -EINVAL;
	}
	return cu == uid && cg == gid ? 0 : -EPERM;
}

/* The command, from --process FILE (its JSON is *ret_json's, which the
 * strings borrow) or from the command line. */
static int exec_request(const char *dir, const exec_opts *o, char **args, json_t **ret_json,
			sx_req *q)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, i;
	json_error_t jerr;
	oci_process proc;
	char err[1024];
	json_t *p, *v;
	char **argv, **env;
	int r;

	*ret_json = NULL;
	if (!o->process) {
		if (!args[0]) {
			rc_err("exec: a command is required (or --process FILE)");
			return -EINVAL;
		}
		if (o->user && exec_user(dir, o->user, 0, 0) < 0) {
			rc_err("--user %s: must be the container's process.user (uid[:gid]): "
			       "the only user sandcap runs its processes as",
			       o->user);
			return -EINVAL;
		}
		*q = (sx_req){.argv = args,
			      .env = o->n_env ? o->env : NULL,
			      .cwd = o->cwd,
			      .tty = o->tty,
			      .hold = true};
		return 0;
	}
	r = io_read_file_at(AT_FDCWD, o->process, OCI_MAX_CONFIG, &buf, &len);
	if (r < 0) {
		rc_err("--process %s: %s", o->process, strerror(-r));
		return r;
	}
	p = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(p)) {
		rc_err("--process %s:%d:%d: %s", o->process, jerr.line, jerr.column,
		       p ? "expected an object" : jerr.text);
		json_decref(p);
		return -EINVAL;
	}
	r = oci_process_parse(p, &proc, err, sizeof(err));
	if (r >= 0 && exec_user(dir, NULL, proc.uid, proc.gid) < 0) {
		snprintf(err, sizeof(err),
			 "$.process.user: must be the container's (uid %u, gid %u asked): the "
			 "only user sandcap runs its processes as",
			 (unsigned)proc.uid, (unsigned)proc.gid);
		r = -EINVAL;
	}
	argv = r < 0 ? NULL : calloc(json_array_size(proc.args) + 1, sizeof(char *));
	env = r < 0 ? NULL : calloc(json_array_size(proc.env) + 1, sizeof(char *));
	if (r < 0 || !argv || !env) {
		rc_err("--process %s: %s", o->process, r == -EINVAL ? err : strerror(ENOMEM));
		free(argv);
		free(env);
		json_decref(p);
		return r < 0 ? r : -ENOMEM;
	}
	json_array_foreach(proc.args, i, v) argv[i] = (char *)json_string_value(v);
	json_array_foreach(proc.env, i, v) env[i] = (char *)json_string_value(v);
	*q = (sx_req){.argv = argv,
		      .env = env,
		      .cwd = proc.cwd,
		      .tty = proc.terminal,
		      .hold = true,
		      .rows = (unsigned short)proc.rows,
		      .cols = (unsigned short)proc.cols};
	*ret_json = p;
	return 0;
}

/* What exec_request() allocated for a process file. */
static void exec_request_done(json_t *pj, sx_req *q)
{
	if (!pj)
		return;
	free((void *)q->argv);
	free((void *)q->env);
	json_decref(pj);
}

/* The command held in the container's session; with a terminal its master
 * goes to --console-socket, or is relayed to and from our stdio. */
static int exec_prepare(const char *id, const exec_opts *o, const sx_req *q, csup *c)
{
	sigset_t fwd;
	int r;

	/* What a relay is sent (runc's pid is the process's: kill(1) of it
	 * reaches the process), passed on to the process's group. */
	sigemptyset(&fwd);
	for (int s = 0; s < 6; s++)
		sigaddset(&fwd, (int[]){SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}[s]);
	if (sigprocmask(SIG_BLOCK, &fwd, NULL) < 0 ||
	    (c->sig_fd = signalfd(-1, &fwd, SFD_CLOEXEC)) < 0)
		return -errno;
	(void)signal(SIGPIPE, SIG_IGN);
	snprintf(c->id, sizeof(c->id), "%s", id);
	r = sx_exec(id, q, &c->h, NULL, 0);
	if (r < 0)
		return r;
	c->started = true;
	c->in_fd = q->tty && o->console ? -1 : STDIN_FILENO;
	if (q->tty && o->console) {
		r = rc_send_console(o->console, c->h.pty_fd);
		c->h.pty_fd = safe_close(c->h.pty_fd);
		if (r < 0) {
			rc_err("--console-socket %s: %s", o->console, strerror(-r));
			return r;
		}
	} else if (q->tty) {
		c->h.stdout_fd = c->h.pty_fd;
		c->h.stdin_fd = fcntl(c->h.pty_fd, F_DUPFD_CLOEXEC, 3);
		c->h.pty_fd = -1;
		if (c->h.stdin_fd < 0)
			return -errno;
	}
	return 0;
}

/* The relay of a detached exec: no child of exec (the shim, a subreaper,
 * adopts it), tells exec its pid, runs the command once exec has written
 * --pid-file (go reaches end of file) and exits with its status. */
static _Noreturn void become_exec_relay(const char *id, const exec_opts *o, const sx_req *q,
					int ready, int go)
{
	csup c = {.listen_fd = -1, .in_fd = -1, .sig_fd = -1};
	char b;
	int r;

	(void)setsid();
	r = exec_prepare(id, o, q, &c);
	if (r < 0) {
		dprintf(ready, "%s", strerror(-r));
		_exit(SC_EXIT_SETUP);
	}
	dprintf(ready, "ok %d", (int)getpid());
	(void)close(ready);
	while (read(go, &b, 1) < 0 && errno == EINTR)
		;
	(void)close(go);
	if (sx_exec_go(&c.h) < 0)
		_exit(SC_EXIT_SETUP);
	_exit(rc_supervise(&c));
}

int rc_do_exec(const char *id, const exec_opts *o, char **args)
{
	char dir[4096], reply[512];
	json_t *pj = NULL;
	sx_req q;
	int ready[2], go[2], code, r;
	ssize_t n;
	pid_t pid;

	r = rc_existing_cdir(id, dir, sizeof(dir));
	if (r)
		return r;
	/* runc's exit code for an exec it cannot start: 255. */
	if (strcmp(rc_container_status(dir, &code), "stopped") == 0) {
		rc_err("cannot exec in a stopped container: %s", id);
		return 255;
	}
	if (rc_container_frozen(dir, id) == 1) {
		rc_err("cannot exec in a paused container: %s", id);
		return 255;
	}
	if (exec_request(dir, o, args, &pj, &q) < 0)
		return SC_EXIT_SETUP;
	if (q.tty && o->detach && !o->console) {
		rc_err("exec --detach with a terminal needs --console-socket");
		exec_request_done(pj, &q);
		return SC_EXIT_SETUP;
	}
	if (!o->detach) {
		csup c = {.listen_fd = -1, .in_fd = -1, .sig_fd = -1};

		r = exec_prepare(id, o, &q, &c);
		if (r >= 0 && o->pid_file)
			r = rc_write_pid_file(o->pid_file, getpid());
		if (r >= 0)
			r = sx_exec_go(&c.h);
		if (r < 0) {
			rc_err("cannot exec in container %s: %s", id, strerror(-r));
			exec_request_done(pj, &q);
			return SC_EXIT_SETUP;
		}
		r = rc_supervise(&c);
		exec_request_done(pj, &q);
		return r;
	}
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0) {
		rc_err("exec: %s", strerror(errno));
		exec_request_done(pj, &q);
		return SC_EXIT_SETUP;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		(void)close(ready[0]);
		(void)close(go[1]);
		if (fork() == 0)
			become_exec_relay(id, o, &q, ready[1], go[0]);
		_exit(0);
	}
	(void)close(ready[1]);
	(void)close(go[0]);
	while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	n = read(ready[0], reply, sizeof(reply) - 1);
	(void)close(ready[0]);
	reply[n > 0 ? n : 0] = '\0';
	exec_request_done(pj, &q);
	r = 0;
	if (strncmp(reply, "ok ", 3) != 0) {
		rc_err("cannot exec in container %s: %s", id, reply[0] ? reply : "its relay ended");
		r = SC_EXIT_SETUP;
	} else if (o->pid_file &&
		   (r = rc_write_pid_file(o->pid_file, (pid_t)atoi(reply + 3))) < 0) {
		rc_err("--pid-file %s: %s", o->pid_file, strerror(-r));
		r = SC_EXIT_SETUP; /* go closes without a byte: the relay runs it */
	}
	if (r == 0)
		(void)io_write_all(go[1], "g", 1);
	(void)close(go[1]);
	return r;
}
