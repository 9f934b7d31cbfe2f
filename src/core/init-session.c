/* SPDX-License-Identifier: MIT */
/*
 * pid 1 of a session (docs/sessions.md): no command of its own; it runs
 * what the supervisor sends on the control channel (core/ctl.h), each
 * command forked from here and so under every layer pid 1 is under (the
 * namespaces, the cgroup, the Landlock domain, the seccomp filter, the
 * agent's ids), and reports when each ends. The channel is the
 * supervisor's and trusted; what reaches pid 1 from inside the sandbox (a
 * signal the agent sends) is not, and is ignored.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/exit-status.h"
#include "core/ctl.h"
#include "core/init-exec.h"
#include "core/init.h"

/* Commands and file workers running at once. */
#define SESSION_MAX_CHILDREN 1024
#define SESSION_MAX_ENV	     4096
#define COPY_CHUNK	     65536

typedef struct kid {
	uint32_t id;
	pid_t pid;
} kid;

static kid kids[SESSION_MAX_CHILDREN];
static size_t n_kids;
static int ctl = -1;
/* INIT_SESSION_MAIN_ARG: the main command (CTL_MAIN), once it is started;
 * main_code its exit code once it has ended, else -1. */
static bool main_exits;
static pid_t main_pid;
static int main_code = -1;

static void reply(uint32_t type, uint32_t id, int32_t value, int err, uint64_t bytes)
{
	ctl_hdr h = {.type = type, .id = id, .value = value, .err = err, .bytes = bytes};

	/* Blocking: the supervisor reads every message it is sent. */
	(void)ctl_send(ctl, &h, NULL, NULL, 0);
}

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		(void)close(fds[i]);
}

/* The session's environment (ours, the agent's) with KEY=VALUE of the
 * request replacing the same KEY or added. Child only: it execs or exits. */
static char **merge_env(char **add, size_t n_add)
{
	size_t n = 0, cap;
	char **env;

	while (environ[n])
		n++;
	cap = n + n_add + 1;
	env = calloc(cap, sizeof(char *));
	if (!env)
		return environ;
	memcpy(env, environ, n * sizeof(char *));
	for (size_t i = 0; i < n_add; i++) {
		const char *eq = strchr(add[i], '=');
		size_t klen = eq ? (size_t)(eq - add[i]) + 1 : 0, j;

		if (!eq)
			continue;
		for (j = 0; j < n; j++)
			if (strncmp(env[j], add[i], klen) == 0)
				break;
		env[j] = add[i];
		if (j == n)
			n++;
	}
	env[n] = NULL;
	return env;
}

static _Noreturn void run_command(const ctl_hdr *h, char **v, size_t n_v, int *fds)
{
	sigset_t none;
	const char *cwd = v[0];
	char **argv = v + 1, **env;

	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	if (h->flags & CTL_TTY) {
		if (ioctl(fds[0], TIOCSCTTY, 0) < 0)
			_exit(SC_EXIT_SETUP);
		for (int fd = 0; fd < 3; fd++)
			if (dup2(fds[0], fd) < 0)
				_exit(SC_EXIT_SETUP);
		if (fds[0] > 2)
			(void)close(fds[0]);
	} else {
		for (int fd = 0; fd < 3; fd++)
			if (dup2(fds[fd], fd) < 0)
				_exit(SC_EXIT_SETUP);
		for (int fd = 0; fd < 3; fd++)
			if (fds[fd] > 2)
				(void)close(fds[fd]);
	}
	if (cwd[0] && chdir(cwd) < 0) {
		fprintf(stderr, "sandcap: working directory %s: %s\n", cwd, strerror(errno));
		_exit(SC_EXIT_SETUP);
	}
	env = merge_env(argv + h->n_argv, n_v - 1 - h->n_argv);
	argv[h->n_argv] = NULL;
	init_exec_command(argv, env);
	{
		int err = errno;

		fprintf(stderr, "sandcap: %s: %s\n", argv[0],
			err == ENOENT ? "command not found" : strerror(err));
		_exit(err == ENOENT ? SC_EXIT_NOTFOUND : SC_EXIT_NOEXEC);
	}
}

static int copy_fd(int in, int out, uint64_t *bytes)
{
	char buf[COPY_CHUNK];

	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return w < 0 ? -errno : -EIO;
			off += w;
		}
		*bytes += (uint64_t)n;
	}
}

static int file_put(const char *path, int fd, mode_t mode, uint64_t *bytes)
{
	int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, mode & 07777);
	int r;

	if (out < 0)
		return -errno;
	r = copy_fd(fd, out, bytes);
	if (close(out) < 0 && r >= 0)
		r = -errno;
	return r;
}

static int file_get(const char *path, int fd, uint64_t *bytes)
{
	/* Not blocking in open: a FIFO is refused below, not waited on. */
	int in = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st;
	int r;

	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0)
		r = -errno;
	else if (S_ISDIR(st.st_mode))
		r = -EISDIR;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else
		r = copy_fd(in, fd, bytes);
	(void)close(in);
	return r;
}

static char type_char(mode_t m)
{
	return S_ISREG(m)    ? 'f'
	       : S_ISDIR(m)  ? 'd'
	       : S_ISLNK(m)  ? 'l'
	       : S_ISCHR(m)  ? 'c'
	       : S_ISBLK(m)  ? 'b'
	       : S_ISFIFO(m) ? 'p'
	       : S_ISSOCK(m) ? 's'
			     : '?';
}

static int write_rec(int fd, const char *rec, size_t n, uint64_t *bytes)
{
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, rec + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		off += (size_t)w;
	}
	*bytes += n;
	return 0;
}

/* "TYPE\tSIZE\tMODE\tMTIME\tNAME\0" (session/session.h), NUL included. */
static int format_rec(char *rec, size_t size, const struct stat *st, const char *name)
{
	int n = snprintf(rec, size, "%c\t%llu\t%o\t%lld\t%s", type_char(st->st_mode),
			 (unsigned long long)st->st_size, (unsigned)(st->st_mode & 07777),
			 (long long)st->st_mtime, name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : n + 1;
}

/* One record per entry, names relative to the listed directory; below
 * it to depth levels (symbolic links not followed). */
static int list_dir(int dfd, const char *prefix, unsigned depth, int fd, uint64_t *bytes)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;
	int r = 0;

	if (!d) {
		r = -errno;
		(void)close(dfd);
		return r;
	}
	while ((e = readdir(d)) && r >= 0) {
		char rec[PATH_MAX + 64], name[PATH_MAX];
		struct stat st;
		int n;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			memset(&st, 0, sizeof(st));
		n = snprintf(name, sizeof(name), "%s%s%s", prefix, prefix[0] ? "/" : "", e->d_name);
		if (n < 0 || (size_t)n >= sizeof(name))
			continue;
		n = format_rec(rec, sizeof(rec), &st, name);
		if (n < 0)
			continue;
		r = write_rec(fd, rec, (size_t)n, bytes);
		if (r >= 0 && depth > 1 && S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			/* a subdirectory the walls keep closed is listed, not entered */
			if (sub >= 0)
				r = list_dir(sub, name, depth - 1, fd, bytes);
		}
	}
	(void)closedir(d);
	return r;
}

static int file_list(const char *path, unsigned depth, int fd, uint64_t *bytes)
{
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return -errno;
	return list_dir(dfd, "", depth ? depth : 1, fd, bytes);
}

static int file_stat(const char *path, int fd, uint64_t *bytes)
{
	char rec[PATH_MAX + 64];
	struct stat st;
	int n;

	if (lstat(path, &st) < 0)
		return -errno;
	n = format_rec(rec, sizeof(rec), &st, path);
	return n < 0 ? n : write_rec(fd, rec, (size_t)n, bytes);
}

static int file_mkdir(const char *path, bool parents)
{
	char p[PATH_MAX];

	if (!parents)
		return mkdir(path, 0755) < 0 ? -errno : 0;
	if (strlen(path) >= sizeof(p))
		return -ENAMETOOLONG;
	strcpy(p, path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			if (mkdir(p, 0755) < 0 && errno != EEXIST)
				return -errno;
			*s = '/';
		}
	return mkdir(p, 0755) < 0 ? -errno : 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return (flag == FTW_DP ? rmdir(p) : unlink(p)) < 0 ? -errno : 0;
}

static int file_remove(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) < 0 ? -errno : 0;
	/* depth first, never following a link out of the tree */
	return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

/* What one watch follows: directories (inotify watches), and their depth. */
#define WATCH_MAX_DIRS	8192
#define WATCH_MAX_DEPTH 32

typedef struct watch {
	int ifd, out;
	bool recursive;
	size_t n;
	struct {
		int wd;
		char *rel; /* "" for the root, else "a/b" */
	} dirs[WATCH_MAX_DIRS];
} watch;

static int watch_add(watch *w, const char *root, const char *rel, unsigned depth)
{
	const uint32_t mask = IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM |
			      IN_MOVED_TO | IN_DELETE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW |
			      IN_EXCL_UNLINK;
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int wd;

	if (snprintf(path, sizeof(path), "%s%s%s", root, rel[0] ? "/" : "", rel) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	if (w->n >= WATCH_MAX_DIRS)
		return -ENOSPC;
	wd = inotify_add_watch(w->ifd, path, mask);
	if (wd < 0)
		return -errno;
	w->dirs[w->n].wd = wd;
	w->dirs[w->n].rel = strdup(rel);
	if (!w->dirs[w->n].rel)
		return -ENOMEM;
	w->n++;
	if (!w->recursive || depth >= WATCH_MAX_DEPTH || !(d = opendir(path)))
		return 0;
	while ((e = readdir(d))) {
		char sub[PATH_MAX];

		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", e->d_name) <
		    (int)sizeof(sub))
			(void)watch_add(w, root, sub, depth + 1); /* gone meanwhile: not ours */
	}
	(void)closedir(d);
	return 0;
}

/* One line "TYPE\tNAME\n" (NAME relative to the root): false once the
 * reader is gone. A line of at most PIPE_BUF bytes is written whole. */
static bool watch_line(watch *w, const char *type, const char *rel, const char *name)
{
	char line[PIPE_BUF];
	int n = snprintf(line, sizeof(line), "%s\t%s%s%s\n", type, rel,
			 rel[0] && name[0] ? "/" : "", name);

	if (n < 0 || n >= (int)sizeof(line))
		return true; /* a name too long for one line is left out */
	return write(w->out, line, (size_t)n) == n;
}

/*
 * Changes in a directory (and with mode 1 its subdirectories, each added as
 * it appears), by inotify inside the sandbox: what the agent sees is what is
 * watched, under its walls. "ready" first, once the watches are in place;
 * then create, write, remove, rename (the old name), chmod; "overflow" when
 * the kernel's queue overflowed. Runs until killed or its reader goes.
 */
static int file_watch(const char *path, bool recursive, int out)
{
	static watch w;
	static char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	int r;

	w = (watch){.ifd = inotify_init1(IN_CLOEXEC), .out = out, .recursive = recursive};
	if (w.ifd < 0)
		return -errno;
	r = watch_add(&w, path, "", 0);
	if (r < 0)
		return r;
	if (!watch_line(&w, "ready", "", ""))
		return 0;
	for (;;) {
		ssize_t n = read(w.ifd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			const char *rel = NULL, *type = NULL;

			p += sizeof(*ev) + ev->len;
			for (size_t i = 0; i < w.n && !rel; i++)
				if (w.dirs[i].wd == ev->wd)
					rel = w.dirs[i].rel;
			if (ev->mask & IN_Q_OVERFLOW)
				type = "overflow";
			else if (!rel || !ev->len)
				continue; /* the root itself, or a watch just removed */
			else if (ev->mask & (IN_CREATE | IN_MOVED_TO))
				type = "create";
			else if (ev->mask & IN_MODIFY)
				type = "write";
			else if (ev->mask & IN_DELETE)
				type = "remove";
			else if (ev->mask & IN_MOVED_FROM)
				type = "rename";
			else if (ev->mask & IN_ATTRIB)
				type = "chmod";
			else
				continue;
			if (!watch_line(&w, type, rel ? rel : "", ev->len ? ev->name : ""))
				return 0;
			if (recursive && rel && (ev->mask & IN_ISDIR) &&
			    (ev->mask & (IN_CREATE | IN_MOVED_TO))) {
				char sub[PATH_MAX];

				if (snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "",
					     ev->name) < (int)sizeof(sub))
					(void)watch_add(&w, path, sub, 1);
			}
		}
	}
}

/* A file operation, forked: under the same walls as any command, but our
 * own code, so nothing needs to be installed in the sandbox for it. */
static _Noreturn void run_file_op(const ctl_hdr *h, char *const *v, int fd)
{
	const char *path = v[0];
	uint64_t bytes = 0;
	int r;

	switch ((ctl_type)h->type) {
	case CTL_PUT:
		r = file_put(path, fd, (mode_t)h->mode, &bytes);
		break;
	case CTL_GET:
		r = file_get(path, fd, &bytes);
		break;
	case CTL_STAT:
		r = file_stat(path, fd, &bytes);
		break;
	case CTL_MKDIR:
		r = file_mkdir(path, h->mode == 1);
		break;
	case CTL_REMOVE:
		r = file_remove(path);
		break;
	case CTL_RENAME:
		r = rename(path, v[1]) < 0 ? -errno : 0;
		break;
	case CTL_WATCH:
		r = file_watch(path, h->mode == 1, fd);
		break;
	default:
		r = file_list(path, h->mode, fd, &bytes);
		break;
	}
	(void)close(fd);
	reply(CTL_DONE, h->id, 0, r < 0 ? -r : 0, bytes);
	_exit(0);
}

static void start(const ctl_hdr *h, char *payload, int *fds, size_t n_fds)
{
	static char *v[CTL_MAX_ARGS + SESSION_MAX_ENV + 2];
	size_t n_v = 0;
	bool exec = h->type == CTL_EXEC;
	size_t want = exec && !(h->flags & CTL_TTY) ? 3 : 1;
	int err = 0;
	pid_t pid;

	if (n_fds != want ||
	    ctl_split(payload, h->len, v, (sizeof(v) / sizeof(v[0])) - 1, &n_v) < 0 ||
	    (exec ? (h->n_argv < 1 || h->n_argv > CTL_MAX_ARGS || n_v < 1 + h->n_argv)
		  : n_v != (h->type == CTL_RENAME ? 2u : 1u)))
		err = EPROTO;
	else if (n_kids >= SESSION_MAX_CHILDREN)
		err = EAGAIN;
	if (err) {
		close_fds(fds, n_fds);
		reply(CTL_STARTED, h->id, 0, err, 0);
		return;
	}
	pid = fork();
	if (pid == 0) {
		/* Its own session and process group: a signal or the exec's wall
		 * clock reaches what it started too, and a pty becomes its terminal. */
		(void)setsid();
		if (exec)
			run_command(h, v, n_v, fds);
		run_file_op(h, v, fds[0]);
	}
	close_fds(fds, n_fds);
	if (pid < 0) {
		reply(CTL_STARTED, h->id, 0, errno, 0);
		return;
	}
	kids[n_kids++] = (kid){.id = h->id, .pid = pid};
	if (exec && main_exits && (h->flags & CTL_MAIN) && !main_pid)
		main_pid = pid;
	reply(CTL_STARTED, h->id, pid, 0, 0);
}

static void reap(void)
{
	int status;
	pid_t p;

	while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
		for (size_t i = 0; i < n_kids; i++)
			if (kids[i].pid == p) {
				reply(CTL_EXITED, kids[i].id, status, 0, 0);
				kids[i] = kids[--n_kids];
				break;
			}
		if (main_pid && p == main_pid)
			main_code = WIFEXITED(status) ? WEXITSTATUS(status)
						      : SC_EXIT_SIGNAL_BASE + WTERMSIG(status);
	}
}

/* pid 1 ends with code: said first, for a supervisor that cannot wait for
 * us (sc_run_opts.init_adopted). */
static int pid1_end(int code)
{
	reply(CTL_END, 0, code, 0, 0);
	return code;
}

static void send_signal(const ctl_hdr *h)
{
	for (size_t i = 0; i < n_kids; i++)
		if (kids[i].id == h->id && h->value > 0 && h->value < NSIG &&
		    kill(-kids[i].pid, h->value) < 0 && errno == ESRCH)
			/* Just forked, it has not made its group yet (setsid in
			 * start()): the signal waits, blocked, until it runs. */
			(void)kill(kids[i].pid, h->value);
}

int init_session_main(const char *fd_arg, bool main_ends)
{
	static char payload[CTL_MAX_PAYLOAD + 1];
	sigset_t all;
	char *end;
	long fd = strtol(fd_arg, &end, 10);
	int sfd;

	if (*end || fd < 3 || fd > 1024) {
		fputs("sandcap-init: internal entry point, not for direct use\n", stderr);
		return SC_EXIT_SETUP;
	}
	ctl = (int)fd;
	main_exits = main_ends;
	/* Ours alone: no command we start inherits it. */
	if (fcntl(ctl, F_SETFD, FD_CLOEXEC) < 0)
		return SC_EXIT_SETUP;
	init_block_all(&all);
	sfd = signalfd(-1, &all, SFD_CLOEXEC);
	if (sfd < 0)
		return SC_EXIT_SETUP;
	reply(CTL_HELLO, 0, 0, 0, 0);
	for (;;) {
		struct pollfd p[2] = {{.fd = ctl, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		int fds[CTL_MAX_FDS];
		size_t n_fds;
		ctl_hdr h;
		int r;

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGCHLD)
					reap();
				/* The main command's end is the container's: what
				 * is left dies with us, as with runc's pid 1. */
				if (main_code >= 0)
					return pid1_end(main_code);
				/* From the supervisor (outside our pid namespace,
				 * so no sender pid here): the session ends, and the
				 * kernel kills what is left with us. From inside:
				 * the agent's, not a request we take. */
				else if (si.ssi_pid == 0 && si.ssi_signo != SIGWINCH &&
					 si.ssi_signo != SIGURG && si.ssi_signo != SIGCONT)
					return pid1_end(SC_EXIT_SIGNAL_BASE + (int)si.ssi_signo);
			}
		}
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = ctl_recv(ctl, &h, payload, sizeof(payload), fds, CTL_MAX_FDS, &n_fds);
		if (r == -EPIPE) /* the supervisor ended the session, or died */
			return main_exits ? pid1_end(SC_EXIT_SIGNAL_BASE + SIGKILL) : 0;
		if (r < 0)
			continue;
		switch ((ctl_type)h.type) {
		case CTL_EXEC:
		case CTL_PUT:
		case CTL_GET:
		case CTL_LIST:
		case CTL_STAT:
		case CTL_MKDIR:
		case CTL_REMOVE:
		case CTL_RENAME:
		case CTL_WATCH:
			start(&h, payload, fds, n_fds);
			break;
		case CTL_SIGNAL:
			send_signal(&h);
			close_fds(fds, n_fds);
			break;
		case CTL_HELLO:
		case CTL_STARTED:
		case CTL_DONE:
		case CTL_EXITED:
		case CTL_GO:
		case CTL_END:
		case _CTL_TYPE_MAX:
			close_fds(fds, n_fds);
			break;
		}
	}
}
