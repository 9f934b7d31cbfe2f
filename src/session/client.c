/* SPDX-License-Identifier: MIT */
/* The client side of sessions (session/session.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/diag.h"
#include "base/exit-status.h"
#include "base/io.h"
#include "compat/syscalls.h"
#include "session/server.h"
#include "session/session.h"
#include "session/wire.h"

#define START_REPLY_MAX 16384

static _Noreturn void become_supervisor(const sc_session_start_opts *o, const char *name, int dirfd,
					int lock_fd, int ready_fd)
{
	int keep[3] = {dirfd, lock_fd, ready_fd}, high[3];
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	/* Detached: a session of its own, no terminal, nothing of the
	 * caller's stdio (the audit log is where it reports), and no other
	 * fd of the caller's (a daemon's listening socket, say): ours become
	 * 3-5, everything above is closed. */
	(void)setsid();
	if (null < 0)
		_exit(SC_EXIT_SETUP);
	for (int fd = 0; fd < 3; fd++)
		(void)dup2(null, fd);
	for (int i = 0; i < 3; i++)
		if ((high[i] = fcntl(keep[i], F_DUPFD_CLOEXEC, 64)) < 0)
			_exit(SC_EXIT_SETUP);
	for (int i = 0; i < 3; i++)
		if (dup3(high[i], 3 + i, O_CLOEXEC) < 0)
			_exit(SC_EXIT_SETUP);
	(void)sys_close_range(6, ~0U, 0);
	_exit(ss_serve(o, name, 3, 4, 5));
}

static int link_lock(int lock, int dirfd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", lock);
	return linkat(AT_FDCWD, path, dirfd, SS_LOCK, AT_SYMLINK_FOLLOW) < 0 ? -1 : 0;
}

/* A runtime directory that is not ours alone: what it is, and what it must be. */
static int runtime_dir_refused(sc_diag *d, const char *dir)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return diag_fail(d, -EPERM, "runtime", "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return diag_fail(d, -EPERM, "runtime", "%s: not a directory", dir);
	return diag_fail(d, -EPERM, "runtime",
			 "%s: has mode %04o and owner uid %u; it must be a directory of uid %u "
			 "with mode 0700 (its sessions' control sockets grant everything)",
			 dir, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
			 (unsigned)geteuid());
}

int sc_session_start(const sc_session_start_opts *o, sc_session_info *ret, sc_diag *d)
{
	char dir[4096], name[SC_SESSION_NAME_MAX + 1];
	_cleanup_close_ int dfd = -1, sfd = -1, lock = -1, rd = -1;
	_cleanup_free_ char *reply = NULL;
	int ready[2], r;
	size_t len = 0;
	pid_t pid;
	json_t *info;

	memset(ret, 0, sizeof(*ret));
	if (o->name) {
		if (!sc_session_name_valid(o->name))
			return diag_fail(d, -EINVAL, "name",
					 "%s: a session name is 1 to %d of A-Z a-z 0-9 . _ -, not "
					 "starting with . or -",
					 o->name, SC_SESSION_NAME_MAX);
		snprintf(name, sizeof(name), "%s", o->name);
	} else {
		uint8_t rnd[4];

		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			return diag_fail(d, -EIO, "name", "no randomness for a session name");
		snprintf(name, sizeof(name), "s-%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3]);
	}
	r = sc_session_dir(true, dir, sizeof(dir));
	if (r == -EPERM)
		return runtime_dir_refused(d, dir);
	if (r < 0)
		return diag_fail(d, r, "runtime",
				 r == -ENOENT ? "no runtime directory: set XDG_RUNTIME_DIR"
					      : "%s: %s",
				 dir, strerror(-r));
	(void)sc_session_sweep(); /* what dead supervisors left */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return diag_fail(d, -errno, "runtime", "%s: %s", dir, strerror(errno));
	if (mkdirat(dfd, name, 0700) < 0)
		return diag_fail(d, -errno, "name",
				 errno == EEXIST
				     ? "session %s exists already (sandcap session list)"
				     : "cannot create session %s: %s",
				 name, strerror(errno));
	sfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd >= 0)
		lock = openat(sfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	/* Held by the supervisor (the fork shares it) for as long as it lives,
	 * and locked before it has its name: a sweep never sees it unheld. */
	if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) < 0 || link_lock(lock, sfd) < 0 ||
	    pipe2(ready, O_CLOEXEC) < 0) {
		r = -errno;
		(void)unlinkat(sfd, SS_LOCK, 0);
		(void)unlinkat(dfd, name, AT_REMOVEDIR);
		return diag_fail(d, r, "runtime", "cannot create session %s: %s", name,
				 strerror(-r));
	}
	/* Twice, so that the supervisor is nobody's child here: the caller
	 * may live long (a daemon) and must not collect a zombie. */
	pid = fork();
	if (pid == 0) {
		(void)close(ready[0]);
		if (fork() == 0)
			become_supervisor(o, name, sfd, lock, ready[1]);
		_exit(0);
	}
	(void)close(ready[1]);
	rd = ready[0];
	if (pid < 0) {
		r = -errno;
		(void)unlinkat(sfd, SS_LOCK, 0);
		(void)unlinkat(dfd, name, AT_REMOVEDIR);
		return diag_fail(d, r, "fork", "cannot start the session supervisor: %s",
				 strerror(-r));
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	lock = safe_close(lock);
	/* The supervisor writes its description once pid 1 serves, or why
	 * not; end of file without either: it died. */
	r = io_read_all(rd, START_REPLY_MAX, &reply, &len);
	if (r < 0 || len == 0)
		return diag_fail(d, r < 0 ? r : -ECHILD, "session",
				 "the session supervisor ended before the sandbox was ready");
	info = reply[0] == '{' ? json_loadb(reply, len, 0, NULL) : NULL;
	if (!json_is_object(info)) {
		json_decref(info);
		return diag_fail(d, -EIO, "session", "%.*s", (int)(len > 900 ? 900 : len), reply);
	}
	snprintf(ret->name, sizeof(ret->name), "%s", name);
	ret->pid = (pid_t)json_integer_value(json_object_get(info, "pid"));
	snprintf(ret->sandbox_id, sizeof(ret->sandbox_id), "%s",
		 json_string_value(json_object_get(info, "sandbox")) ?: "");
	snprintf(ret->audit_path, sizeof(ret->audit_path), "%s",
		 json_string_value(json_object_get(info, "audit")) ?: "");
	snprintf(ret->started, sizeof(ret->started), "%s",
		 json_string_value(json_object_get(info, "started")) ?: "");
	ret->workspaces[0] = '\0';
	ret->serve[0] = '\0';
	if (json_is_object(json_object_get(info, "serve"))) {
		char *sv =
		    json_dumps(json_object_get(info, "serve"), JSON_COMPACT | JSON_SORT_KEYS);

		if (sv && strlen(sv) < sizeof(ret->serve))
			memcpy(ret->serve, sv, strlen(sv) + 1);
		free(sv);
	}
	for (size_t i = 0, n = 0; i < json_array_size(json_object_get(info, "workspaces")); i++) {
		const char *id =
		    json_string_value(json_array_get(json_object_get(info, "workspaces"), i));

		if (id && n < sizeof(ret->workspaces))
			n += (size_t)snprintf(ret->workspaces + n, sizeof(ret->workspaces) - n,
					      "%s%s", n ? " " : "", id);
	}
	json_decref(info);
	return 0;
}

int sc_session_recv(int conn, json_t **ret)
{
	int fds[SS_MAX_FDS];
	size_t n;

	return ss_recv(conn, 0, ret, fds, 0, &n);
}

int sc_session_request(const char *name, json_t *req, int *ret_conn, json_t **ret_reply, int *fds,
		       size_t max_fds, size_t *ret_n_fds)
{
	_cleanup_close_ int conn = -1;
	size_t n = 0;
	json_t *reply = NULL;
	int r = ss_connect(name, &conn);

	*ret_reply = NULL;
	if (ret_n_fds)
		*ret_n_fds = 0;
	if (r < 0)
		return r;
	r = ss_send(conn, req, NULL, 0);
	if (r >= 0)
		r = ss_recv(conn, 0, &reply, fds, max_fds, &n);
	if (r < 0)
		return r == -EPIPE ? -ECONNRESET : r;
	*ret_reply = reply;
	if (ret_n_fds)
		*ret_n_fds = n;
	else
		for (size_t i = 0; i < n; i++)
			(void)close(fds[i]);
	if (json_object_get(reply, "error")) {
		if (ret_n_fds)
			for (size_t i = 0; i < n; i++)
				(void)close(fds[i]);
		if (ret_n_fds)
			*ret_n_fds = 0;
		return -EREMOTEIO;
	}
	if (ret_conn)
		*ret_conn = TAKE_FD(conn);
	return 0;
}

/* The errno an {"error": {"code": "EACCES", ...}} names, else -EIO. */
static int reply_errno(json_t *reply)
{
	const char *code =
	    json_string_value(json_object_get(json_object_get(reply, "error"), "code"));

	for (int e = 1; code && e < 134; e++)
		if (strerrorname_np(e) && strcmp(code, strerrorname_np(e)) == 0)
			return -e;
	return -EIO;
}

/* The result that ends a file operation. */
static int file_result(int conn, uint64_t *ret_bytes)
{
	json_t *m = NULL;
	int r = sc_session_recv(conn, &m);

	if (r < 0)
		return r == -EPIPE ? -ECONNRESET : r;
	if (json_object_get(m, "error"))
		r = reply_errno(m);
	else if (ret_bytes)
		*ret_bytes = (uint64_t)json_integer_value(json_object_get(m, "bytes"));
	json_decref(m);
	return r;
}

static int file_request(const char *name, const char *op, const char *path, unsigned mode,
			int *ret_conn, int *ret_fd)
{
	json_t *req = json_pack("{s:s, s:s}", "op", op, "path", path), *reply = NULL;
	size_t n = 0;
	int r;

	if (!req)
		return -ENOMEM;
	if (strcmp(op, "put") == 0)
		(void)json_object_set_new(req, "mode", json_integer(mode));
	r = sc_session_request(name, req, ret_conn, &reply, ret_fd, 1, &n);
	if (r == -EREMOTEIO)
		r = reply_errno(reply);
	json_decref(req);
	json_decref(reply);
	if (r >= 0 && n != 1) {
		*ret_conn = safe_close(*ret_conn);
		return -EPROTO;
	}
	return r;
}

static int copy_all(int in, int out)
{
	char buf[65536];

	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : 0;
		int r = io_write_all(out, buf, (size_t)n);

		if (r < 0)
			return r;
	}
}

int sc_session_put(const char *name, const char *path, unsigned mode, int data_fd,
		   uint64_t *ret_bytes)
{
	_cleanup_close_ int conn = -1, fd = -1;
	int r = file_request(name, "put", path, mode, &conn, &fd);

	if (r < 0)
		return r;
	r = copy_all(data_fd, fd);
	fd = safe_close(fd);
	/* EPIPE: the sandbox refused the file; its result says why. */
	if (r < 0 && r != -EPIPE)
		return r;
	return file_result(conn, ret_bytes);
}

int sc_session_get(const char *name, const char *path, int out_fd, uint64_t *ret_bytes)
{
	_cleanup_close_ int conn = -1, fd = -1;
	int r = file_request(name, "get", path, 0, &conn, &fd);

	if (r < 0)
		return r;
	r = copy_all(fd, out_fd);
	if (r < 0)
		return r;
	return file_result(conn, ret_bytes);
}

int sc_dir_entry_parse(const char *rec, size_t len, sc_dir_entry *e)
{
	char buf[512], *f[5], *save = NULL, *p = buf;
	unsigned long long size;
	long long mtime;
	unsigned mode;

	if (len == 0 || len >= sizeof(buf))
		return -EPROTO;
	memcpy(buf, rec, len);
	buf[len] = '\0';
	for (int i = 0; i < 4; i++) {
		f[i] = strtok_r(i ? NULL : p, "\t", &save);
		if (!f[i])
			return -EPROTO;
	}
	f[4] = save; /* the name, tabs and all */
	if (!f[4] || !f[4][0] || strlen(f[0]) != 1 || sscanf(f[1], "%llu", &size) != 1 ||
	    sscanf(f[2], "%o", &mode) != 1 || sscanf(f[3], "%lld", &mtime) != 1 ||
	    strlen(f[4]) >= sizeof(e->name))
		return -EPROTO;
	e->type = f[0][0];
	e->size = size;
	e->mode = mode;
	e->mtime = mtime;
	snprintf(e->name, sizeof(e->name), "%s", f[4]);
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const sc_dir_entry *)a)->name, ((const sc_dir_entry *)b)->name);
}

int sc_session_ls(const char *name, const char *path, sc_dir_entry **ret, size_t *ret_n)
{
	_cleanup_close_ int conn = -1, fd = -1;
	_cleanup_free_ char *buf = NULL;
	sc_dir_entry *v = NULL;
	size_t len = 0, n = 0, cap = 0;
	int r = file_request(name, "ls", path, 0, &conn, &fd);

	*ret = NULL;
	*ret_n = 0;
	if (r < 0)
		return r;
	r = io_read_all(fd, 256u << 20, &buf, &len);
	if (r < 0)
		return r;
	r = file_result(conn, NULL);
	if (r < 0)
		return r;
	for (size_t i = 0; i < len;) {
		size_t l = strnlen(buf + i, len - i);

		if (n == cap) {
			sc_dir_entry *nv = reallocarray(v, cap ? cap * 2 : 64, sizeof(*v));

			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		if (sc_dir_entry_parse(buf + i, l, &v[n]) >= 0)
			n++;
		i += l + 1;
	}
	if (n)
		qsort(v, n, sizeof(*v), entry_cmp);
	*ret = v;
	*ret_n = n;
	return 0;
}

int sc_session_begin(const char *name)
{
	json_t *req = json_pack("{s:s}", "op", "begin"), *m = NULL;
	_cleanup_close_ int conn = -1;
	int r;

	if (!req)
		return -ENOMEM;
	r = ss_connect(name, &conn);
	if (r >= 0)
		r = ss_send(conn, req, NULL, 0);
	json_decref(req);
	if (r >= 0)
		r = sc_session_recv(conn, &m);
	if (r >= 0 && !json_is_true(json_object_get(m, "ok")))
		r = -EREMOTEIO;
	json_decref(m);
	return r == -EPIPE ? -ECONNRESET : r;
}

/* One JSON request answered {"ok": true, ...}: *ret (may be NULL) gets the
 * answer; an error answer is its errno (reply_errno). Consumes req. */
static int one_request(const char *name, json_t *req, json_t **ret)
{
	json_t *reply = NULL;
	int r;

	if (ret)
		*ret = NULL;
	if (!req)
		return -ENOMEM;
	r = sc_session_request(name, req, NULL, &reply, NULL, 0, NULL);
	json_decref(req);
	if (r == -EREMOTEIO)
		r = reply_errno(reply);
	else if (r >= 0 && !json_is_true(json_object_get(reply, "ok")))
		r = -EPROTO;
	if (r >= 0 && ret)
		*ret = json_incref(reply);
	json_decref(reply);
	return r;
}

int sc_session_commands(const char *name, json_t **ret_array)
{
	json_t *reply = NULL;
	int r = one_request(name, json_pack("{s:s}", "op", "commands"), &reply);

	*ret_array = NULL;
	if (r >= 0 && !json_is_array(json_object_get(reply, "commands")))
		r = -EPROTO;
	if (r >= 0)
		*ret_array = json_incref(json_object_get(reply, "commands"));
	json_decref(reply);
	return r;
}

int sc_session_kill(const char *name, uint32_t id, int sig)
{
	return one_request(
	    name, json_pack("{s:s, s:I, s:i}", "op", "kill", "id", (json_int_t)id, "signal", sig),
	    NULL);
}

int sc_session_pause(const char *name, bool pause)
{
	return one_request(name, json_pack("{s:s}", "op", pause ? "pause" : "resume"), NULL);
}

int sc_session_stop(const char *name, json_t **ret_summary)
{
	json_t *req = json_pack("{s:s}", "op", "stop"), *reply = NULL, *m = NULL;
	_cleanup_close_ int conn = -1;
	int r;

	if (ret_summary)
		*ret_summary = NULL;
	if (!req)
		return -ENOMEM;
	r = ss_connect(name, &conn);
	if (r >= 0)
		r = ss_send(conn, req, NULL, 0);
	json_decref(req);
	if (r < 0)
		return r;
	/* The answer comes once the sandbox is gone and its log sealed. */
	r = sc_session_recv(conn, &m);
	json_decref(reply);
	if (r < 0)
		return r == -EPIPE ? -ECONNRESET : r;
	if (json_object_get(m, "error")) {
		json_decref(m);
		return -EREMOTEIO;
	}
	if (ret_summary)
		*ret_summary = json_incref(json_object_get(m, "summary"));
	json_decref(m);
	return 0;
}

int sc_session_list(json_t **ret)
{
	char dir[4096];
	json_t *a = json_array();
	DIR *d;
	struct dirent *e;
	int r;

	*ret = NULL;
	if (!a)
		return -ENOMEM;
	(void)sc_session_sweep();
	r = sc_session_dir(false, dir, sizeof(dir));
	d = r >= 0 ? opendir(dir) : NULL;
	while (d && (e = readdir(d))) {
		json_t *req, *info = NULL;

		if (!sc_session_name_valid(e->d_name) || ss_lock_held(dirfd(d), e->d_name) != 1)
			continue;
		req = json_pack("{s:s}", "op", "info");
		if (req && sc_session_request(e->d_name, req, NULL, &info, NULL, 0, NULL) >= 0)
			(void)json_array_append_new(a, info);
		else {
			json_decref(info);
			/* Alive (its lock is held) but not answering yet: starting. */
			(void)json_array_append_new(
			    a, json_pack("{s:s, s:s}", "name", e->d_name, "state", "starting"));
		}
		json_decref(req);
	}
	if (d)
		(void)closedir(d);
	*ret = a;
	return 0;
}

int sc_session_workspace(const char *name, const char *id, json_t **ret_meta, int *ret_upper)
{
	json_t *req = json_pack("{s:s, s:s}", "op", "workspace", "workspace", id), *reply = NULL;
	_cleanup_close_ int conn = -1;
	int fd = -1;
	size_t n = 0;
	int r;

	if (!req)
		return -ENOMEM;
	r = sc_session_request(name, req, &conn, &reply, &fd, 1, &n);
	json_decref(req);
	if (r == -EREMOTEIO)
		r = reply_errno(reply);
	if (r >= 0 && (n != 1 || !json_is_object(json_object_get(reply, "meta"))))
		r = -EPROTO;
	if (r < 0) {
		if (n == 1)
			(void)close(fd);
		json_decref(reply);
		return r;
	}
	*ret_meta = json_incref(json_object_get(reply, "meta"));
	*ret_upper = fd;
	json_decref(reply);
	return 0;
}

int sc_session_workspace_applied(const char *name, json_t *req)
{
	_cleanup_close_ int conn = -1;
	json_t *reply = NULL;
	size_t n = 0;
	int r = sc_session_request(name, req, &conn, &reply, NULL, 0, &n);

	if (r == -EREMOTEIO)
		r = reply_errno(reply);
	json_decref(reply);
	return r;
}
