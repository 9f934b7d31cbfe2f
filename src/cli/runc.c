/* SPDX-License-Identifier: MIT */
/*
 * sandcap-runc: an OCI runtime (runtime-spec 1.x) with runc's command
 * line (docs/oci.md). A container is a session (docs/sessions.md) whose
 * command is config.json's process, held from create until start, and a
 * container supervisor of its own that holds that command's connection,
 * relays its stdio, answers start and kill on ROOT/ID/oci.sock and exits
 * with the process's status. The pid in --pid-file and state is the
 * sandbox's pid 1, born the child of whoever adopted the session's
 * supervisor (containerd's shim, conmon), which reaps it: it exits with the
 * process's status as soon as the process ends (sc_session_start_opts.
 * init_adopted).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/signals.h"
#include "base/exit-status.h"
#include "base/fdpass.h"
#include "base/io.h"
#include "base/sha256.h"
#include "base/unix-addr.h"
#include "oci/cgroups.h"
#include "oci/config.h"
#include "oci/hugepages.h"
#include "oci/pod.h"
#include "oci/seccomp.h"
#include "policy/plan.h"
#include "proxy/programs.h"
#include "proxy/proxy.h"
#include "session/exec-wire.h"
#include "session/session.h"

#define DEFAULT_ROOT "/run/sandcap-runc"
#define ANNOT_AUDIT  "org.sandcap.audit"

static const char *g_root = DEFAULT_ROOT, *g_log, *g_log_format = "text", *g_policy;

static void oci_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* To standard error, and to --log (one JSON object a line with --log-format
 * json, as containerd reads it). */
static void oci_err(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "sandcap-runc: %s\n", msg);
	if (g_log) {
		FILE *f = fopen(g_log, "ae");
		char ts[40];
		time_t t = time(NULL);

		if (!f)
			return;
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
		if (strcmp(g_log_format, "json") == 0) {
			json_t *o =
			    json_pack("{s:s, s:s, s:s}", "level", "error", "msg", msg, "time", ts);
			char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

			if (s)
				fprintf(f, "%s\n", s);
			free(s);
			json_decref(o);
		} else {
			fprintf(f, "time=\"%s\" level=error msg=\"%s\"\n", ts, msg);
		}
		fclose(f);
	}
}

/* ---- the state directory: ROOT/ID ---- */

static int cdir(const char *id, char *buf, size_t len)
{
	if (!sc_session_name_valid(id)) {
		oci_err("%s: a container id is 1 to %d of A-Z a-z 0-9 . _ -, not starting with . "
			"or -",
			id, SC_SESSION_NAME_MAX);
		return -EINVAL;
	}
	return (size_t)snprintf(buf, len, "%s/%s", g_root, id) < len ? 0 : -ENAMETOOLONG;
}

static int write_file(const char *dir, const char *name, const char *text)
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

static json_t *read_json(const char *path)
{
	return json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
}

/* The start time of process pid (proc(5) stat's field 22), or 0 when it
 * is gone or a zombie. */
static unsigned long long proc_start(pid_t pid)
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
static void read_pids(const char *dir, pid_t *ret_init, unsigned long long *ret_start,
		      pid_t *ret_sup)
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
static const char *container_status(const char *dir, int *ret_code)
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
	read_pids(dir, &init, &start, NULL);
	if (init > 0 && proc_start(init) != start)
		return "stopped"; /* pid 1 has ended */
	return strncmp(buf, "running", 7) == 0 ? "running" : "created";
}

/* ---- the container supervisor ---- */

typedef struct csup {
	char dir[4096], id[SC_SESSION_NAME_MAX + 1];
	sx_handle h;
	bool started;
	int listen_fd;
	int in_fd;  /* our stdin, relayed to the process's, or -1 */
	int sig_fd; /* an exec's relay: signals it gets, passed on to the process; or -1 */
	int ns_fds[OCI_NS_MAX]; /* create: the pod's namespaces it joins (oci/pod.h), or -1 */
	bool new_net; /* create: a network namespace of its own, docker's (oci/config.h) */
	char cgroup[OCI_CGROUP_PATH_MAX + 1]; /* create: linux.cgroupsPath, or "" */
} csup;

static int container_pids(const char *id, pid_t **ret, size_t *ret_n);
static int init_pid(const char *id);
static int container_frozen(const char *dir, const char *id);
static int container_freeze(const char *dir, const char *id, bool frozen);

static int send_console(const char *sock_path, int master)
{
	_cleanup_close_ int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct iovec iov = {.iov_base = (void *)"/dev/ptmx", .iov_len = 9};
	const char *slash = strrchr(sock_path, '/');
	char dir[PATH_MAX];
	int r;

	if (s < 0)
		return -errno;
	/* DIR/NAME, so that a long path still fits a socket address */
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if ((size_t)snprintf(dir, sizeof(dir), "%.*s", (int)(slash - sock_path), sock_path) >=
		 sizeof(dir))
		return -ENAMETOOLONG;
	r = unix_connect_in(s, slash == sock_path ? "/" : dir, slash ? slash + 1 : sock_path);
	if (r < 0)
		return r;
	return fdpass_send(s, &iov, 1, &master, 1) < 0 ? -EIO : 0;
}

static int listen_ctl(const char *dir, int *ret)
{
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	char path[PATH_MAX];
	int r;

	if (fd < 0)
		return -errno;
	if ((size_t)snprintf(path, sizeof(path), "%s/oci.sock", dir) >= sizeof(path))
		return -ENAMETOOLONG;
	r = unix_bind_in(fd, dir, "oci.sock");
	if (r < 0)
		return r;
	if (chmod(path, 0600) < 0 || listen(fd, 16) < 0)
		return -errno;
	*ret = TAKE_FD(fd);
	return 0;
}

/* One request a connection: "start", "kill SIG" or "killall SIG". */
static void serve_ctl(csup *c)
{
	_cleanup_close_ int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	char buf[64], reply[128] = "ok";
	ssize_t n;
	int sig;

	if (fd < 0)
		return;
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return;
	buf[n] = '\0';
	if (strcmp(buf, "start") == 0) {
		if (c->started)
			snprintf(reply, sizeof(reply), "container %s is running already", c->id);
		else if (sx_exec_go(&c->h) < 0)
			snprintf(reply, sizeof(reply), "container %s: its sandbox is gone", c->id);
		else {
			c->started = true;
			(void)write_file(c->dir, "status", "running");
		}
	} else if (sscanf(buf, "kill %d", &sig) == 1 || sscanf(buf, "killall %d", &sig) == 1) {
		/* Before start, and for --all SIGKILL: the whole sandbox goes. */
		if (!c->started || (buf[4] == 'a' && sig == SIGKILL))
			(void)sc_session_stop(c->id, NULL);
		else if (sx_exec_signal(&c->h, sig) < 0)
			snprintf(reply, sizeof(reply), "container not running: %s", c->id);
	} else {
		snprintf(reply, sizeof(reply), "unknown request");
	}
	(void)send(fd, reply, strlen(reply), MSG_NOSIGNAL);
}

/* Copies what is there from one fd to another; false at end of file. */
static bool relay(int from, int to)
{
	char buf[65536];
	ssize_t n = read(from, buf, sizeof(buf));

	if (n < 0 && errno == EINTR)
		return true;
	if (n <= 0)
		return false;
	(void)io_write_all(to, buf, (size_t)n);
	return true;
}

/* Copies what from holds now, without waiting for its end of file. */
static void drain(int from, int to)
{
	int fl = from >= 0 ? fcntl(from, F_GETFL) : -1;

	if (fl < 0 || fcntl(from, F_SETFL, fl | O_NONBLOCK) < 0)
		return;
	while (relay(from, to))
		;
}

/* Until the process ends: start and kill requests, its stdio. */
static int supervise(csup *c)
{
	sx_result res = {0};
	int r;

	for (;;) {
		struct pollfd p[6] = {{c->listen_fd, POLLIN, 0},
				      {c->h.conn, POLLIN, 0},
				      {c->h.stdout_fd, POLLIN, 0},
				      {c->h.stderr_fd, POLLIN, 0},
				      {c->started ? c->in_fd : -1, POLLIN, 0},
				      {c->sig_fd, POLLIN, 0}};

		if (poll(p, 6, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[0].revents)
			serve_ctl(c);
		if (p[2].revents && !relay(c->h.stdout_fd, STDOUT_FILENO))
			c->h.stdout_fd = safe_close(c->h.stdout_fd);
		if (p[3].revents && !relay(c->h.stderr_fd, STDERR_FILENO))
			c->h.stderr_fd = safe_close(c->h.stderr_fd);
		if (p[4].revents && !relay(c->in_fd, c->h.stdin_fd)) {
			c->in_fd = -1;
			c->h.stdin_fd = safe_close(c->h.stdin_fd);
		}
		if (p[5].revents) {
			struct signalfd_siginfo si;

			if (read(c->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				(void)sx_exec_signal(&c->h, (int)si.ssi_signo);
		}
		if (p[1].revents)
			break;
	}
	r = sx_exec_wait(&c->h, &res);
	if (r < 0)
		oci_err("container %s: its session's supervisor ended before the process did (%s): "
			"the sandbox ended with it",
			c->id, strerror(-r));
	/* What it wrote before its end is in the pipes now; a child it left
	 * behind may hold them open for ever, so take only what is there
	 * (runc's pid 1 ends its namespace at once; the caller stops ours). */
	drain(c->h.stdout_fd, STDOUT_FILENO);
	drain(c->h.stderr_fd, STDERR_FILENO);
	return r < 0 ? SC_EXIT_SETUP : res.exit_code;
}

/* Standard input, output and error onto /dev/null. */
static int stdio_null(void)
{
	_cleanup_close_ int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	for (int i = 0; i < 3; i++)
		if (dup2(fd, i) < 0)
			return -errno;
	return 0;
}

static _Noreturn void become_supervisor(csup *c, const sc_plan *plan, const oci_process *proc,
					const char *console, const char *digest, int ready)
{
	sc_session_start_opts so = {.plan = plan,
				    .name = c->id,
				    .policy_source = "config.json",
				    .policy_digest = digest,
				    .init_adopted = true};
	_cleanup_free_ char **argv = calloc(json_array_size(proc->args) + 1, sizeof(char *));
	_cleanup_free_ char **env = calloc(json_array_size(proc->env) + 1, sizeof(char *));
	sx_req q = {.argv = argv,
		    .env = env,
		    .cwd = strcmp(proc->cwd, "/") == 0 ? "/" : NULL,
		    .tty = proc->terminal,
		    .hold = true,
		    .rows = (unsigned short)proc->rows,
		    .cols = (unsigned short)proc->cols};
	sc_session_info info;
	sc_diag d = {0};
	json_t *v;
	char code[32], made[4 * PATH_MAX];
	size_t i;
	int r;

	const char *what;

	(void)setsid();
	if (!argv || !env)
		_exit(SC_EXIT_SETUP);
	json_array_foreach(proc->args, i, v) argv[i] = (char *)json_string_value(v);
	json_array_foreach(proc->env, i, v) env[i] = (char *)json_string_value(v);
	/* Before the session starts: its supervisor, the proxy worker and
	 * the sandbox inherit these (oci/pod.h). */
	r = plan->shared_ipc_uts ? oci_joins_enter(c->ns_fds, plan->hostname, c->new_net, &what)
				 : 0;
	if (r >= 0 && proc->has_oom_score_adj) {
		snprintf(code, sizeof(code), "%d", proc->oom_score_adj);
		what = "oom_score_adj";
		r = io_write_file_at(AT_FDCWD, "/proc/self/oom_score_adj", code);
	}
	if (r < 0) {
		dprintf(ready, "cannot enter the container's %s namespace: %s", what, strerror(-r));
		_exit(SC_EXIT_SETUP);
	}
	/* The sandbox's cgroup is made under ours: nested in cgroupsPath. */
	made[0] = '\0';
	r = c->cgroup[0] ? oci_cg()->enter(c->cgroup, made, sizeof(made)) : 0;
	if (r >= 0)
		r = write_file(c->dir, "cgroups.made", made);
	if (r < 0) {
		dprintf(ready, "$.linux.cgroupsPath: cannot place the container in %s: %s",
			c->cgroup, strerror(-r));
		oci_cgroup_remove(made);
		_exit(SC_EXIT_SETUP);
	}
	r = sc_session_start(&so, &info, &d);
	if (r < 0) {
		dprintf(ready, "%s%s%s", d.path, d.path[0] ? ": " : "",
			d.message[0] ? d.message : strerror(-r));
		_exit(SC_EXIT_SETUP);
	}
	r = sx_exec(c->id, &q, &c->h, NULL, 0);
	if (r == 0 && proc->terminal) {
		r = console ? send_console(console, c->h.pty_fd) : -EINVAL;
		c->h.pty_fd = safe_close(c->h.pty_fd);
		/* The pty is the process's stdio: what create was given must
		 * reach its end of file when create returns, as runc's does
		 * (containerd's shim waits for it before it takes the console). */
		if (r == 0)
			r = stdio_null();
	}
	if (r < 0) {
		dprintf(ready, "cannot prepare the process: %s",
			r == -EINVAL ? "process.terminal needs --console-socket" : strerror(-r));
		(void)sc_session_stop(c->id, NULL);
		_exit(SC_EXIT_SETUP);
	}
	{
		char path[4200], pids[96];
		json_t *state;
		int init = init_pid(c->id);

		/* pid 1, the shim's (or conmon's) child: what it waits for. */
		r = init < 0 ? init : 0;
		snprintf(pids, sizeof(pids), "%d %llu %d", init, proc_start(init), (int)getpid());
		if (r >= 0)
			r = write_file(c->dir, "pids", pids);
		snprintf(path, sizeof(path), "%s/state.json", c->dir);
		state = read_json(path);
		(void)json_object_set_new(state, "pid", json_integer(init));
		(void)json_object_set_new(json_object_get(state, "annotations"), ANNOT_AUDIT,
					  json_string(info.audit_path));
		if (r >= 0 && json_dump_file(state, path, JSON_COMPACT) < 0)
			r = -EIO;
		json_decref(state);
	}
	if (r >= 0) {
		/* The sandbox's processes (pid 1 alone yet: the command is held)
		 * into the freezer of pause; a host without one cannot pause. */
		_cleanup_free_ pid_t *pids = NULL;
		char fz[OCI_CGROUP_PATH_MAX + 64];
		size_t n = 0, used = strlen(made);

		snprintf(fz, sizeof(fz), "%s", c->cgroup[0] ? c->cgroup : "sandcap-runc");
		if (!c->cgroup[0])
			snprintf(fz + strlen(fz), sizeof(fz) - strlen(fz), "/%s", c->id);
		if (container_pids(c->id, &pids, &n) >= 0 &&
		    oci_cg()->freezer_join(fz, pids, n, made + used, sizeof(made) - used) >= 0)
			(void)write_file(c->dir, "freezer", fz);
		(void)write_file(c->dir, "cgroups.made", made);
		r = write_file(c->dir, "status", "created");
	}
	if (r < 0) {
		dprintf(ready, "%s: cannot write the state: %s", c->dir, strerror(-r));
		(void)sc_session_stop(c->id, NULL);
		_exit(SC_EXIT_SETUP);
	}
	(void)io_write_all(ready, "ok", 2);
	(void)close(ready);
	r = supervise(c);
	snprintf(code, sizeof(code), "stopped %d", r);
	(void)write_file(c->dir, "status", code);
	(void)sc_session_stop(c->id, NULL);
	_exit(r);
}

/* ---- commands ---- */

static int runc_start(const char *id);

/* A bind's source is a host path that runc's mount(2) follows: a link
 * there (docker's /usr/bin/docker-init -> tini-static) is resolved here,
 * by the bundle's author's authority, before the policy's own rule that a
 * grant names no link. One that is missing is left for that rule to name. */
static void resolve_sources(json_t *policy)
{
	json_t *grants = json_object_get(json_object_get(policy, "fs"), "grants"), *g;
	char real[PATH_MAX];
	size_t i;

	json_array_foreach(grants, i, g)
	{
		const char *p = json_string_value(json_object_get(g, "path"));

		if (p && realpath(p, real) && strcmp(p, real) != 0)
			(void)json_object_set_new(g, "path", json_string(real));
	}
}

static int load_config(const char *bundle, const char *id, sc_plan **ret_plan, json_t **ret_config,
		       oci_process *proc, char digest[65])
{
	char path[4200], err[1024];
	_cleanup_free_ char *buf = NULL, *text = NULL;
	size_t len = 0;
	json_error_t jerr;
	json_t *config, *policy = NULL, *extra = NULL;
	const char *annot;
	sc_diag d = {0};
	int r;

	snprintf(path, sizeof(path), "%s/config.json", bundle);
	r = io_read_file_at(AT_FDCWD, path, OCI_MAX_CONFIG, &buf, &len);
	if (r < 0) {
		oci_err("%s: %s", path, strerror(-r));
		return r;
	}
	config = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(config)) {
		oci_err("%s:%d:%d: %s", path, jerr.line, jerr.column,
			config ? "expected an object" : jerr.text);
		json_decref(config);
		return -EINVAL;
	}
	annot = json_string_value(
	    json_object_get(json_object_get(config, "annotations"), OCI_ANNOTATION_POLICY));
	/* --policy is the runtime's (daemon.json's runtimeArgs, one runtime
	 * per policy); an annotation beside it would be a second source of
	 * truth, so both are refused rather than one quietly winning. */
	if (annot && g_policy) {
		oci_err("%s: $.annotations[\"%s\"]: not taken beside --policy %s", path,
			OCI_ANNOTATION_POLICY, g_policy);
		json_decref(config);
		return -EINVAL;
	}
	if (!annot)
		annot = g_policy;
	if (annot) {
		/* Inline JSON, or the path of a policy file. */
		extra = annot[0] == '{' ? json_loads(annot, JSON_REJECT_DUPLICATES, &jerr)
					: json_load_file(annot, JSON_REJECT_DUPLICATES, &jerr);
		if (!json_is_object(extra)) {
			oci_err("%s: $.annotations[\"%s\"]: %s", path, OCI_ANNOTATION_POLICY,
				extra ? "expected a policy object" : jerr.text);
			json_decref(extra);
			json_decref(config);
			return -EINVAL;
		}
	}
	r = oci_config_policy(config, bundle, id, extra, true, &policy, proc, err, sizeof(err));
	json_decref(extra);
	if (r >= 0) {
		r = oci_hugepages_check(config, "/sys/kernel/mm/hugepages", err, sizeof(err));
		if (r < 0)
			json_decref(TAKE_PTR(policy));
	}
	if (r < 0) {
		oci_err("%s: %s", path, r == -EINVAL ? err : strerror(-r));
		json_decref(config);
		return r;
	}
	resolve_sources(policy);
	text = json_dumps(policy, JSON_COMPACT | JSON_REAL_PRECISION(10));
	json_decref(policy);
	if (!text) {
		json_decref(config);
		return -ENOMEM;
	}
	{
		uint8_t md[SHA256_BYTES];

		sha256_parts(text, strlen(text), "", 0, "", 0, md);
		for (unsigned i = 0; i < SHA256_BYTES; i++)
			snprintf(digest + 2 * i, 3, "%02x", md[i]);
	}
	r = sc_plan_parse(text, strlen(text), ret_plan, &d);
	if (r < 0) {
		oci_err("%s: as a sandcap policy: %s%s%s", path, d.path, d.path[0] ? ": " : "",
			d.message);
		json_decref(config);
		return r;
	}
	{
		/* The spec's own profile, on top of sandcap's (docs/oci.md). */
		oci_filter f;

		r = oci_seccomp_compile(
		    json_object_get(json_object_get(config, "linux"), "seccomp"), &f, err,
		    sizeof(err));
		if (r < 0) {
			oci_err("%s: %s", path, r == -EINVAL ? err : strerror(-r));
			sc_plan_free(TAKE_PTR(*ret_plan));
			json_decref(config);
			return r;
		}
		(*ret_plan)->extra_filter = f.insns;
		(*ret_plan)->n_extra_filter = f.n_insns;
		(*ret_plan)->extra_filter_flags = f.flags;
	}
	*ret_config = config;
	return 0;
}

static int write_pid_file(const char *path, pid_t pid)
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

/* DIR/NAME's text (small files of the state directory), "" when missing. */
static void read_small(const char *dir, const char *name, char *buf, size_t len)
{
	char path[4200];
	_cleanup_free_ char *s = NULL;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	buf[0] = '\0';
	if (io_read_file_at(AT_FDCWD, path, len - 1, &s, &n) >= 0)
		snprintf(buf, len, "%.*s", (int)n, s);
}

static void remove_dir(const char *dir)
{
	char made[4 * PATH_MAX];

	/* The cgroups create made: the sandbox's own, inside, went with it. */
	read_small(dir, "cgroups.made", made, sizeof(made));
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
static int make_root(void)
{
	char path[4096];

	if ((size_t)snprintf(path, sizeof(path), "%s", g_root) >= sizeof(path))
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

/* runc's "owner" of a container: the user that made it. */
static const char *owner(void)
{
	struct passwd *pw = getpwuid(geteuid());

	return pw ? pw->pw_name : "";
}

/* create, and run without --detach waiting for the end (detach false). */
static int do_delete(const char *id, bool force);

/*
 * Runs docker's libnetwork-setkey hook (oci_network_hook()) as runc runs a
 * prestart hook: the state on its standard input, within its timeout
 * (default 30 s). Its pid is the container supervisor's, in the network
 * namespace that supervisor made: docker configures that one, never the
 * sandbox's, whose agent has lo only (docs/oci.md, "Docker").
 */
static int run_hook(json_t *hook, const char *id, const char *bundle, pid_t pid)
{
	json_t *args = json_object_get(hook, "args"), *env = json_object_get(hook, "env"), *v;
	json_int_t timeout = json_integer_value(json_object_get(hook, "timeout"));
	size_t na = json_array_size(args), ne = json_array_size(env), i;
	_cleanup_free_ char *state = NULL;
	_cleanup_free_ const char **argv = calloc(na + 1, sizeof(char *));
	_cleanup_free_ const char **envp = calloc(ne + 1, sizeof(char *));
	int p[2], status = 0;
	pid_t child;

	json_t *st = json_pack("{s:s, s:s, s:s, s:i, s:s}", "ociVersion", OCI_VERSION, "id", id,
			       "status", "created", "pid", (int)pid, "bundle", bundle);

	state = st ? json_dumps(st, JSON_COMPACT) : NULL;
	json_decref(st);
	if (!state || !argv || !envp)
		return -ENOMEM;
	json_array_foreach(args, i, v) argv[i] = json_string_value(v);
	json_array_foreach(env, i, v) envp[i] = json_string_value(v);
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	child = fork();
	if (child == 0) {
		if (dup2(p[0], STDIN_FILENO) < 0)
			_exit(127);
		execve(json_string_value(json_object_get(hook, "path")), (char **)argv,
		       (char **)envp);
		_exit(127);
	}
	(void)close(p[0]);
	if (child < 0) {
		(void)close(p[1]);
		return -errno;
	}
	(void)io_write_all(p[1], state, strlen(state));
	(void)close(p[1]);
	for (long ms = 0; ms < (timeout > 0 ? timeout : 30) * 1000; ms += 10) {
		pid_t w = waitpid(child, &status, WNOHANG);

		if (w == child)
			return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
		if (w < 0 && errno != EINTR)
			return -errno;
		(void)usleep(10000);
	}
	(void)kill(child, SIGKILL);
	(void)waitpid(child, NULL, 0);
	return -ETIMEDOUT;
}

/*
 * A network namespace to join that is a container's pid 1's (the agent's
 * own, with lo only: CRI joins a pod's containers to /proc/PID/ns/net of
 * its pause container's pid): that container's supervisor's instead, the
 * pod's, where its proxy's upstream side is (docs/oci.md, "Kubernetes").
 */
static void pod_net(int fds[OCI_NS_MAX])
{
	struct dirent **names = NULL;
	struct stat want, st;
	int n;

	if (fds[OCI_NS_NET] < 0 || fstat(fds[OCI_NS_NET], &want) < 0)
		return;
	n = scandir(g_root, &names, NULL, NULL);
	for (int k = 0; k < n; k++) {
		char dir[4096], path[64];
		unsigned long long start;
		pid_t init, sup;
		int fd;

		if (!sc_session_name_valid(names[k]->d_name) ||
		    (size_t)snprintf(dir, sizeof(dir), "%s/%s", g_root, names[k]->d_name) >=
			sizeof(dir))
			continue;
		read_pids(dir, &init, &start, &sup);
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)init);
		if (init <= 0 || sup <= 0 || stat(path, &st) < 0 || st.st_dev != want.st_dev ||
		    st.st_ino != want.st_ino || proc_start(init) != start)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)sup);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			(void)close(fds[OCI_NS_NET]);
			fds[OCI_NS_NET] = fd;
		}
		break;
	}
	for (int k = 0; k < n; k++)
		free(names[k]);
	free(names);
}

static int do_create(const char *id, const char *bundle_arg, const char *pid_file,
		     const char *console, bool run, bool detach)
{
	_cleanup_(sc_plan_freep) sc_plan *plan = NULL;
	char bundle[4096], dir[4096], path[4200], digest[65], reply[2048];
	oci_process proc;
	json_t *config = NULL, *state, *annotations;
	_cleanup_close_ int lock = -1;
	int ready[2], r;
	ssize_t n;
	pid_t pid;
	csup c = {.listen_fd = -1,
		  .in_fd = STDIN_FILENO,
		  .sig_fd = -1,
		  .ns_fds = {[0 ... OCI_NS_MAX - 1] = -1}};
	oci_joins joins;
	json_t *hook;
	pid_t sup, init;

	if (!realpath(bundle_arg, bundle)) {
		oci_err("--bundle %s: %s", bundle_arg, strerror(errno));
		return SC_EXIT_SETUP;
	}
	if (cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	if (load_config(bundle, id, &plan, &config, &proc, digest) < 0)
		return SC_EXIT_SETUP;
	/* A pod's network, ipc and uts namespaces; as root the container's
	 * supervisor makes the ipc and uts ones that are not joined, so that
	 * the pod's containers can join them (docs/oci.md, "Kubernetes"). */
	{
		json_t *cp = json_object_get(json_object_get(config, "linux"), "cgroupsPath");

		if (cp &&
		    (!json_is_string(cp) || (json_string_length(cp) &&
					     oci_cgroup_path_valid(json_string_value(cp)) < 0))) {
			oci_err("%s/config.json: $.linux.cgroupsPath: expected a cgroup path of at "
				"most %d bytes without . or .. (systemd's slice:prefix:name is not "
				"supported)",
				bundle, OCI_CGROUP_PATH_MAX);
			json_decref(config);
			return SC_EXIT_SETUP;
		}
		snprintf(c.cgroup, sizeof(c.cgroup), "%s", cp ? json_string_value(cp) : "");
	}
	oci_config_joins(config, &joins);
	c.new_net = oci_network_hook(config) && !joins.path[OCI_NS_NET];
	/* new_net: made where the ipc and uts ones are (root only), never
	 * the host's handed to docker. */
	plan->shared_ipc_uts = geteuid() == 0 || c.new_net || joins.path[OCI_NS_NET] ||
			       joins.path[OCI_NS_IPC] || joins.path[OCI_NS_UTS];
	{
		char err[1024];

		r = oci_joins_open(&joins, c.ns_fds, err, sizeof(err));
		if (r < 0) {
			oci_err("%s/config.json: %s", bundle, err);
			json_decref(config);
			return SC_EXIT_SETUP;
		}
		pod_net(c.ns_fds);
		plan->own_netns = c.new_net || oci_joins_own_net(c.ns_fds);
	}
	if (proc.terminal && !console && !run) {
		oci_err("process.terminal is true: create needs --console-socket");
		json_decref(config);
		oci_joins_close(c.ns_fds);
		return SC_EXIT_SETUP;
	}
	if (make_root() < 0) {
		oci_err("--root %s: %s", g_root, strerror(errno));
		json_decref(config);
		oci_joins_close(c.ns_fds);
		return SC_EXIT_SETUP;
	}
	if (mkdir(dir, 0700) < 0) {
		bool exists = errno == EEXIST;

		oci_err(exists ? "container %s exists already" : "%s: %s", id, strerror(errno));
		json_decref(config);
		oci_joins_close(c.ns_fds);
		return exists ? 1 : SC_EXIT_SETUP; /* runc's code for a taken id */
	}
	snprintf(c.dir, sizeof(c.dir), "%s", dir);
	snprintf(c.id, sizeof(c.id), "%s", id);
	annotations = json_object_get(config, "annotations");
	{
		struct timespec ts;
		char date[32];

		(void)clock_gettime(CLOCK_REALTIME, &ts);
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", gmtime(&ts.tv_sec));
		snprintf(path, sizeof(path), "%s.%09ldZ", date, ts.tv_nsec);
	}
	state = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "ociVersion", OCI_VERSION, "id", id,
			  "bundle", bundle, "created", path, "owner", owner(), "annotations",
			  annotations ? json_deep_copy(annotations) : json_object());
	snprintf(path, sizeof(path), "%s/state.json", dir);
	r = state && json_dump_file(state, path, JSON_COMPACT) == 0 ? 0 : -EIO;
	json_decref(state);
	snprintf(path, sizeof(path), "%s/lock", dir);
	lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (r < 0 || lock < 0 || flock(lock, LOCK_EX) < 0 || listen_ctl(dir, &c.listen_fd) < 0 ||
	    pipe2(ready, O_CLOEXEC) < 0) {
		oci_err("%s: cannot create the container's state: %s", dir, strerror(errno));
		remove_dir(dir);
		json_decref(config);
		oci_joins_close(c.ns_fds);
		return SC_EXIT_SETUP;
	}
	if (proc.terminal) /* the pty is the process's stdio, not ours */
		c.in_fd = -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		(void)close(ready[0]);
		/* Not a child of create (containerd's shim, a subreaper, adopts
		 * it); run waits for its own. */
		if (run && !detach)
			become_supervisor(&c, plan, &proc, console, digest, ready[1]);
		if (fork() == 0)
			become_supervisor(&c, plan, &proc, console, digest, ready[1]);
		_exit(0);
	}
	(void)close(ready[1]);
	c.listen_fd = safe_close(c.listen_fd);
	oci_joins_close(c.ns_fds);
	if (pid < 0 || !(run && !detach))
		while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	n = read(ready[0], reply, sizeof(reply) - 1);
	(void)close(ready[0]);
	reply[n > 0 ? n : 0] = '\0';
	hook = c.new_net ? json_incref(oci_network_hook(config)) : NULL;
	json_decref(config);
	if (strcmp(reply, "ok") != 0) {
		oci_err("cannot create container %s: %s", id,
			reply[0] ? reply : "its supervisor ended");
		remove_dir(dir);
		json_decref(hook);
		return SC_EXIT_SETUP;
	}
	{
		unsigned long long start;

		read_pids(dir, &init, &start, &sup);
	}
	/* As runc does, before create returns: the process has not started.
	 * Its pid is the supervisor's, whose network namespace docker sets up. */
	r = hook ? run_hook(hook, id, bundle, sup) : 0;
	json_decref(hook);
	if (r < 0) {
		oci_err("container %s: the prestart hook (libnetwork-setkey): %s", id,
			r == -ETIMEDOUT ? "timed out" : "failed");
		(void)do_delete(id, true);
		return SC_EXIT_SETUP;
	}
	if (pid_file) {
		r = write_pid_file(pid_file, init);
		if (r < 0) {
			oci_err("--pid-file %s: %s", pid_file, strerror(-r));
			return SC_EXIT_SETUP;
		}
	}
	if (!run)
		return 0;
	{
		int status;

		r = runc_start(id);
		if (r != 0 || detach)
			return r;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		remove_dir(dir);
		return WIFEXITED(status) ? WEXITSTATUS(status) : SC_EXIT_SETUP;
	}
}

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

	if (cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	r = ctl_call(dir, req, reply, sizeof(reply));
	if (r == -EREMOTEIO)
		oci_err("%s", reply);
	else if (r < 0 && access(dir, F_OK) < 0)
		oci_err("container %s does not exist", id);
	else if (r < 0 && (r == -ENOTCONN || strcmp(container_status(dir, &code), "stopped") == 0))
		oci_err("container not running: %s", id); /* it ended meanwhile */
	else if (r < 0)
		oci_err("container %s: its supervisor did not answer", id);
	return r < 0 ? 1 : 0;
}

static int runc_start(const char *id)
{
	char dir[4096];
	int code;

	if (cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	if (strcmp(container_status(dir, &code), "created") != 0) {
		oci_err("container %s is not in the created state", id);
		return 1;
	}
	return ctl_request(id, "start");
}

/* The state of container id (its directory dir) with its status, or NULL. */
static json_t *container_state(const char *id, const char *dir)
{
	char path[4200];
	json_t *st;
	const char *status;
	int code;

	snprintf(path, sizeof(path), "%s/state.json", dir);
	st = read_json(path);
	if (!st)
		return NULL;
	status = container_status(dir, &code);
	if (strcmp(status, "stopped") != 0 && container_frozen(dir, id) == 1)
		status = "paused";
	(void)json_object_set_new(st, "status", json_string(status));
	if (strcmp(status, "stopped") == 0)
		(void)json_object_set_new(st, "pid", json_integer(0));
	return st;
}

static int do_state(const char *id)
{
	char dir[4096];
	json_t *st;
	char *out;

	if (cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	st = container_state(id, dir);
	if (!st) {
		oci_err("container %s does not exist", id);
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

static int do_kill(const char *id, const char *sigs, bool all)
{
	char req[32], dir[4096];
	int sig = sgn_parse(sigs ? sigs : "TERM"), code;

	if (sig < 0) {
		oci_err("%s: not a signal (a name such as TERM or SIGKILL, or a number)", sigs);
		return 1;
	}
	if (cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	/* runc's words: containerd's shim takes "container not running" as
	 * a kill that found the process gone (a stopped task it deletes). */
	if (access(dir, F_OK) == 0 && strcmp(container_status(dir, &code), "stopped") == 0) {
		oci_err("container not running: %s", id);
		return 1;
	}
	/* A frozen task takes SIGKILL only once thawed (cgroup v1). */
	if (sig == SIGKILL && container_frozen(dir, id) == 1)
		(void)container_freeze(dir, id, false);
	snprintf(req, sizeof(req), "%s %d", all ? "killall" : "kill", sig);
	return ctl_request(id, req);
}

static int do_delete(const char *id, bool force)
{
	char dir[4096], path[4200];
	const char *status;
	_cleanup_close_ int lk = -1;
	int code;

	if (cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	if (access(dir, F_OK) < 0) {
		if (force)
			return 0;
		oci_err("container %s does not exist", id);
		return 1;
	}
	status = container_status(dir, &code);
	if (strcmp(status, "running") == 0 && !force) {
		oci_err("container %s is running: kill it first, or delete --force", id);
		return 1;
	}
	/* Its supervisor kills the sandbox; should it not answer, the
	 * session is stopped from here, which ends the supervisor's wait. */
	if (strcmp(status, "stopped") != 0) {
		char reply[256];

		if (container_frozen(dir, id) == 1)
			(void)container_freeze(dir, id, false);
		if (ctl_call(dir, "killall 9", reply, sizeof(reply)) < 0)
			(void)sc_session_stop(id, NULL);
	}
	/* Its supervisor's end: the lock is free once it has gone. */
	snprintf(path, sizeof(path), "%s/lock", dir);
	lk = open(path, O_RDONLY | O_CLOEXEC);
	if (lk >= 0)
		(void)flock(lk, LOCK_EX);
	remove_dir(dir);
	return 0;
}

/* ---- exec: one more process in a running container ---- */

typedef struct exec_opts {
	const char *process, *pid_file, *console, *cwd, *user;
	bool tty, detach;
	char *env[SC_SESSION_MAX_ENV + 1];
	size_t n_env;
} exec_opts;

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
			oci_err("exec: a command is required (or --process FILE)");
			return -EINVAL;
		}
		if (o->user && exec_user(dir, o->user, 0, 0) < 0) {
			oci_err("--user %s: must be the container's process.user (uid[:gid]): "
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
		oci_err("--process %s: %s", o->process, strerror(-r));
		return r;
	}
	p = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(p)) {
		oci_err("--process %s:%d:%d: %s", o->process, jerr.line, jerr.column,
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
		oci_err("--process %s: %s", o->process, r == -EINVAL ? err : strerror(ENOMEM));
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
		r = send_console(o->console, c->h.pty_fd);
		c->h.pty_fd = safe_close(c->h.pty_fd);
		if (r < 0) {
			oci_err("--console-socket %s: %s", o->console, strerror(-r));
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
	_exit(supervise(&c));
}

static int do_exec(const char *id, const exec_opts *o, char **args)
{
	char dir[4096], reply[512];
	json_t *pj = NULL;
	sx_req q;
	int ready[2], go[2], code, r;
	ssize_t n;
	pid_t pid;

	if (cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	if (access(dir, F_OK) < 0) {
		oci_err("container %s does not exist", id);
		return 1;
	}
	/* runc's exit code for an exec it cannot start: 255. */
	if (strcmp(container_status(dir, &code), "stopped") == 0) {
		oci_err("cannot exec in a stopped container: %s", id);
		return 255;
	}
	if (container_frozen(dir, id) == 1) {
		oci_err("cannot exec in a paused container: %s", id);
		return 255;
	}
	if (exec_request(dir, o, args, &pj, &q) < 0)
		return SC_EXIT_SETUP;
	if (q.tty && o->detach && !o->console) {
		oci_err("exec --detach with a terminal needs --console-socket");
		exec_request_done(pj, &q);
		return SC_EXIT_SETUP;
	}
	if (!o->detach) {
		csup c = {.listen_fd = -1, .in_fd = -1, .sig_fd = -1};

		r = exec_prepare(id, o, &q, &c);
		if (r >= 0 && o->pid_file)
			r = write_pid_file(o->pid_file, getpid());
		if (r >= 0)
			r = sx_exec_go(&c.h);
		if (r < 0) {
			oci_err("cannot exec in container %s: %s", id, strerror(-r));
			exec_request_done(pj, &q);
			return SC_EXIT_SETUP;
		}
		r = supervise(&c);
		exec_request_done(pj, &q);
		return r;
	}
	if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0) {
		oci_err("exec: %s", strerror(errno));
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
		oci_err("cannot exec in container %s: %s", id,
			reply[0] ? reply : "its relay ended");
		r = SC_EXIT_SETUP;
	} else if (o->pid_file && (r = write_pid_file(o->pid_file, (pid_t)atoi(reply + 3))) < 0) {
		oci_err("--pid-file %s: %s", o->pid_file, strerror(-r));
		r = SC_EXIT_SETUP; /* go closes without a byte: the relay runs it */
	}
	if (r == 0)
		(void)io_write_all(go[1], "g", 1);
	(void)close(go[1]);
	return r;
}

/* ---- ps ---- */

/* The host pids of every process in the container's pid namespace, its
 * pid 1 (sandcap-init) among them, in /proc's order (ascending); *ret
 * malloc'd. */
/* The sandbox's pid 1 as the host sees it, or -errno. */
static int init_pid(const char *id)
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

static int container_pids(const char *id, pid_t **ret, size_t *ret_n)
{
	char path[64], want[64], ns[64];
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	ssize_t l;
	int init = init_pid(id);

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

/* 1 when the container is paused (its freezer frozen), 0 when not, -errno
 * when it has no freezer (create could not make one). */
static int container_frozen(const char *dir, const char *id)
{
	char fz[OCI_CGROUP_PATH_MAX + 64];
	int pid;

	read_small(dir, "freezer", fz, sizeof(fz));
	if (!fz[0])
		return -ENOENT;
	pid = init_pid(id);
	return pid < 0 ? pid : oci_cg()->frozen(fz, pid);
}

static int container_freeze(const char *dir, const char *id, bool frozen)
{
	char fz[OCI_CGROUP_PATH_MAX + 64];
	int pid;

	read_small(dir, "freezer", fz, sizeof(fz));
	if (!fz[0])
		return -ENOENT;
	pid = init_pid(id);
	return pid < 0 ? pid : oci_cg()->freeze(fz, pid, frozen);
}

/* pause and resume: the freezer of the container's cgroup (runc's words). */
static int do_pause(const char *id, bool pause)
{
	char dir[4096];
	int code, r;

	if (cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	if (access(dir, F_OK) < 0) {
		oci_err("container %s does not exist", id);
		return 1;
	}
	if (strcmp(container_status(dir, &code), "stopped") == 0) {
		oci_err("container not running: %s", id);
		return 1;
	}
	r = container_frozen(dir, id);
	if (r >= 0 && r == pause) {
		oci_err(pause ? "container not running: %s (paused)" : "container not paused: %s",
			id);
		return 1;
	}
	if (r >= 0)
		r = container_freeze(dir, id, pause);
	if (r < 0) {
		oci_err("container %s: cannot %s it: %s", id, pause ? "pause" : "resume",
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

static int do_ps(const char *id, const char *format, char **ps_args)
{
	_cleanup_free_ pid_t *pids = NULL;
	char dir[4096];
	size_t n = 0;
	int code, r;

	if (strcmp(format, "json") != 0 && strcmp(format, "table") != 0) {
		oci_err("--format %s: expected table or json", format);
		return 2;
	}
	if (cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	if (access(dir, F_OK) < 0 || strcmp(container_status(dir, &code), "stopped") == 0) {
		oci_err("container %s %s", id,
			access(dir, F_OK) < 0 ? "does not exist" : "is not running");
		return 1;
	}
	r = container_pids(id, &pids, &n);
	if (r < 0) {
		oci_err("container %s: cannot list its processes: %s", id, strerror(-r));
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
		oci_err("ps: %s", r == -ENOMSG	 ? "its output has no PID column"
				  : r == -ECHILD ? "ps failed"
						 : strerror(-r));
		return 1;
	}
	return 0;
}

/* Every container under --root: runc's table (ID PID STATUS BUNDLE CREATED
 * OWNER), its ids alone (quiet), or --format json, an array of states. */
static int do_list(const char *format, bool quiet)
{
	json_t *all = json_array();
	struct dirent **names = NULL;
	int n = scandir(g_root, &names, NULL, alphasort);
	size_t i;
	json_t *st;

	if (strcmp(format, "json") != 0 && strcmp(format, "table") != 0) {
		oci_err("--format %s: expected table or json", format);
		json_decref(all);
		return 2;
	}
	for (int k = 0; k < n; k++) {
		char dir[4096];

		if (sc_session_name_valid(names[k]->d_name) &&
		    (size_t)snprintf(dir, sizeof(dir), "%s/%s", g_root, names[k]->d_name) <
			sizeof(dir) &&
		    (st = container_state(names[k]->d_name, dir)))
			(void)json_array_append_new(all, st);
		free(names[k]);
	}
	free(names);
	if (strcmp(format, "json") == 0) {
		char *s = json_dumps(all, JSON_COMPACT);

		puts(s ? s : "[]");
		free(s);
	} else {
		if (!quiet)
			printf("%-12s%-12s%-12s%-40s%-32s%s\n", "ID", "PID", "STATUS", "BUNDLE",
			       "CREATED", "OWNER");
		json_array_foreach(all, i, st)
		{
			const char *id = json_string_value(json_object_get(st, "id"));

			if (quiet)
				printf("%s\n", id ? id : "");
			else
				printf("%-12s%-12lld%-12s%-40s%-32s%s\n", id ? id : "",
				       (long long)json_integer_value(json_object_get(st, "pid")),
				       json_string_value(json_object_get(st, "status")),
				       json_string_value(json_object_get(st, "bundle")),
				       json_string_value(json_object_get(st, "created")) ?: "",
				       json_string_value(json_object_get(st, "owner")) ?: "");
		}
	}
	json_decref(all);
	return 0;
}

static int do_spec(const char *bundle)
{
	char path[4200];
	json_t *spec = oci_default_spec();
	int r;

	snprintf(path, sizeof(path), "%s/config.json", bundle ? bundle : ".");
	if (access(path, F_OK) == 0) {
		oci_err("%s exists already", path);
		json_decref(spec);
		return 1;
	}
	r = spec ? json_dump_file(spec, path, JSON_INDENT(2)) : -1;
	json_decref(spec);
	if (r < 0) {
		oci_err("%s: cannot write it", path);
		return 1;
	}
	return 0;
}

static int do_features(void)
{
	json_t *o = json_pack(
	    "{s:s, s:s, s:[], s:[s, s, s, s], s:[s, s, s, s, s, s, s, s], s:{s:[s, s, s, s, s, "
	    "s, s],"
	    " s:[], s:{s:b, s:b}, s:{s:b}, s:{s:b}}, s:{s:s}}",
	    "ociVersionMin", "1.0.0", "ociVersionMax", OCI_VERSION, "hooks", "mountOptions", "bind",
	    "rbind", "ro", "rw", "mountTypes", "bind", "proc", "tmpfs", "devpts", "mqueue", "sysfs",
	    "cgroup", "cgroup2", "linux", "namespaces", "pid", "network", "ipc", "uts", "mount",
	    "user", "cgroup", "capabilities", "cgroup", "v1", 1, "v2", 1, "seccomp", "enabled", 0,
	    "apparmor", "enabled", 0, "annotations", "org.sandcap.policy",
	    "a sandcap policy (JSON, or a path) whose net and audit apply");
	char *s;

	/* A spec's profile is a second filter (oci/seccomp.h): what it maps. */
	(void)json_object_set_new(
	    json_object_get(o, "linux"), "seccomp",
	    json_pack("{s:b, s:[s, s, s, s, s, s, s], s:[s, s, s, s, s, s, s], s:[s]}", "enabled",
		      1, "actions", "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL",
		      "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG",
		      "SCMP_ACT_TRAP", "operators", "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT",
		      "SCMP_CMP_LE", "SCMP_CMP_LT", "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE", "archs",
		      "SCMP_ARCH_X86_64"));
	s = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
	json_decref(o);
	if (!s)
		return 1;
	puts(s);
	free(s);
	return 0;
}

static void usage(FILE *f)
{
	fputs("usage: sandcap-runc [--root DIR] [--log FILE] [--log-format text|json]\n"
	      "                    [--policy FILE] COMMAND\n"
	      "  spec [--bundle DIR]\n"
	      "  create [--bundle DIR] [--pid-file FILE] [--console-socket SOCK] [--no-pivot] ID\n"
	      "  start ID\n"
	      "  run [--bundle DIR] [--pid-file FILE] [--console-socket SOCK] [--detach]\n"
	      "      [--no-pivot] ID\n"
	      "  exec [--process FILE] [--tty] [--console-socket SOCK] [--pid-file FILE]\n"
	      "       [--detach] [--env K=V]... [--cwd DIR] [--user UID[:GID]] ID [CMD ARG...]\n"
	      "  ps [--format table|json] ID [PS-ARGS...]\n"
	      "  state ID\n"
	      "  kill [--all|-a] ID [SIGNAL]\n"
	      "  delete [--force|-f] ID\n"
	      "  pause ID\n"
	      "  resume ID\n"
	      "  list [--quiet|-q] [--format|-f table|json]\n"
	      "  features\n",
	      f);
}

int main(int argc, char **argv)
{
	static const struct option global[] = {{"root", required_argument, NULL, 'r'},
					       {"log", required_argument, NULL, 'l'},
					       {"log-format", required_argument, NULL, 'f'},
					       {"systemd-cgroup", no_argument, NULL, 's'},
					       {"debug", no_argument, NULL, 'd'},
					       {"policy", required_argument, NULL, 'p'},
					       {"help", no_argument, NULL, 'h'},
					       {NULL, 0, NULL, 0}};
	static const struct option cmd[] = {{"bundle", required_argument, NULL, 'b'},
					    {"pid-file", required_argument, NULL, 'P'},
					    {"console-socket", required_argument, NULL, 'c'},
					    {"no-pivot", no_argument, NULL, 'n'},
					    {"no-new-keyring", no_argument, NULL, 'K'},
					    {"detach", no_argument, NULL, 'D'},
					    {"force", no_argument, NULL, 'F'},
					    {"all", no_argument, NULL, 'a'},
					    {"process", required_argument, NULL, 'p'},
					    {"tty", no_argument, NULL, 't'},
					    {"cwd", required_argument, NULL, 'C'},
					    {"env", required_argument, NULL, 'e'},
					    {"user", required_argument, NULL, 'u'},
					    {"no-new-privs", no_argument, NULL, 'N'},
					    {"format", required_argument, NULL, 'f'},
					    {"quiet", no_argument, NULL, 'q'},
					    {NULL, 0, NULL, 0}};
	const char *bundle = ".", *pid_file = NULL, *console = NULL, *name, *format = "table";
	bool detach = false, force = false, all = false, quiet = false;
	const char *shorts;
	exec_opts eo = {0};
	int c;

	px_in_process();
	/* Global options first, then the command and its own. */
	while ((c = getopt_long(argc, argv, "+h", global, NULL)) != -1) {
		switch (c) {
		case 'r':
			g_root = optarg;
			break;
		case 'l':
			g_log = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
				oci_err("--log-format %s: expected text or json", optarg);
				return 2;
			}
			g_log_format = optarg;
			break;
		case 's':
			oci_err("--systemd-cgroup is not supported: sandcap makes and removes each "
				"container's cgroup itself (docs/oci.md)");
			return 2;
		case 'd':
			break;
		case 'p':
			g_policy = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	name = argv[optind];
	argc -= optind;
	argv += optind;
	optind = 1;
	/* runc's short options, which differ by command: -f is delete's
	 * --force, and list's and ps's --format. */
	shorts = strcmp(name, "delete") == 0 ? "+f"
		 : strcmp(name, "kill") == 0 ? "+a"
		 : strcmp(name, "list") == 0 ? "+qf:"
		 : strcmp(name, "ps") == 0   ? "+f:"
					     : "+b:dtp:e:u:";
	while ((c = getopt_long(argc, argv, shorts, cmd, NULL)) != -1) {
		switch (c) {
		case 'b':
			bundle = optarg;
			break;
		case 'P':
			pid_file = optarg;
			break;
		case 'c':
			console = optarg;
			break;
		case 'n':
			/* runc's pivot_root fallback for a root on ramfs; sandcap's
			 * root is a tmpfs of its own, where pivot_root works. */
			break;
		case 'p':
			eo.process = optarg;
			break;
		case 't':
			eo.tty = true;
			break;
		case 'C':
			eo.cwd = optarg;
			break;
		case 'e':
			if (eo.n_env >= SC_SESSION_MAX_ENV || !strchr(optarg, '=') ||
			    optarg[0] == '=') {
				oci_err("--env %s: expected KEY=VALUE, at most %d", optarg,
					SC_SESSION_MAX_ENV);
				return 2;
			}
			eo.env[eo.n_env++] = optarg;
			break;
		case 'u':
			eo.user = optarg;
			break;
		case 'N':
			break; /* always set */
		case 'f':
			if (optarg)
				format = optarg;
			else
				force = true; /* delete -f */
			break;
		case 'q':
			quiet = true;
			break;
		case 'K':
			break; /* sandcap's filter refuses the keyring calls anyway */
		case 'D':
		case 'd':
			detach = true;
			break;
		case 'F':
			force = true;
			break;
		case 'a':
			all = true;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	/* sc_session_dir() puts the sessions under --root. */
	if (setenv("SANDCAP_RUNTIME_DIR", g_root, 1) < 0)
		return SC_EXIT_SETUP;
	if (strcmp(name, "spec") == 0)
		return do_spec(strcmp(bundle, ".") ? bundle : NULL);
	if (strcmp(name, "features") == 0)
		return do_features();
	if (strcmp(name, "list") == 0)
		return do_list(format, quiet);
	if (optind >= argc) {
		oci_err("%s: a container id is required", name);
		return 2;
	}
	if (strcmp(name, "create") == 0)
		return do_create(argv[optind], bundle, pid_file, console, false, false);
	if (strcmp(name, "run") == 0)
		return do_create(argv[optind], bundle, pid_file, console, true, detach);
	if (strcmp(name, "start") == 0)
		return runc_start(argv[optind]);
	if (strcmp(name, "exec") == 0) {
		eo.pid_file = pid_file;
		eo.console = console;
		eo.detach = detach;
		return do_exec(argv[optind], &eo, argv + optind + 1);
	}
	if (strcmp(name, "ps") == 0)
		return do_ps(argv[optind], format, argv + optind + 1);
	if (strcmp(name, "state") == 0)
		return do_state(argv[optind]);
	if (strcmp(name, "kill") == 0)
		return do_kill(argv[optind], optind + 1 < argc ? argv[optind + 1] : NULL, all);
	if (strcmp(name, "delete") == 0)
		return do_delete(argv[optind], force);
	if (strcmp(name, "pause") == 0 || strcmp(name, "resume") == 0)
		return do_pause(argv[optind], name[0] == 'p');
	oci_err("%s: unknown command", name);
	usage(stderr);
	return 2;
}
