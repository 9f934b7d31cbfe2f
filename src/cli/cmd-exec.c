/* SPDX-License-Identifier: MIT */
/*
 * sandcap exec NAME CMD...: a command in a session (docs/sessions.md). The
 * supervisor makes the pipes (or the pty) and hands us our ends: the
 * sandbox never holds anything of ours. We relay our stdio to them.
 * libc only, through session/exec-wire.h (the exec of the protocol): this
 * is also the small front's whole work (src/cli/front.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/exit-status.h"
#include "base/io.h"
#include "cli/front.h"
#include "session/exec-wire.h"

#define CHUNK 16384

static void exec_usage(FILE *out)
{
	fputs(
	    "Usage: sandcap exec [-i] [-t] [-d] [--cwd DIR] [--env KEY=VALUE]... [--ndjson]\n"
	    "                    NAME [--] COMMAND [ARG]...\n"
	    "\n"
	    "Runs COMMAND in session NAME (sandcap session start), under every layer of the\n"
	    "session's policy, in its namespaces, cgroup, Landlock domain and seccomp filter.\n"
	    "\n"
	    "  -i, --interactive  relay standard input (otherwise the command reads end of file)\n"
	    "  -t, --tty          a pty inside the sandbox; with a terminal here, raw mode and\n"
	    "                     window-size changes forwarded, Ctrl-C reaches the command\n"
	    "  -d, --detach       the session holds the command: print its id and return at\n"
	    "                     once; it reads end of file, its output is discarded\n"
	    "                     (`sandcap session commands NAME`, `sandcap session kill`)\n"
	    "  --cwd DIR          working directory inside (default: the policy's fs.workdir)\n"
	    "  --env KEY=VALUE    set a variable over the session's environment (repeatable)\n"
	    "  --ndjson           stdout carries one JSON object per line:\n"
	    "                     {\"stream\": \"stdout\"|\"stderr\", \"data\": BASE64} chunks and "
	    "last\n"
	    "                     {\"exit_code\", \"signal\", \"limits_hit\", \"duration_ms\"}\n"
	    "\n"
	    "Exit status: the command's; 128+N when it died of signal N; 124 when\n"
	    "limits.exec_wall (or the session's limits.wall) ended it; 125 when it could not be\n"
	    "started (no such session, --cwd missing); 126 not executable; 127 not found.\n",
	    out);
}

typedef struct relay {
	bool ndjson;
	int in;	      /* our stdin, or -1 */
	int to;	      /* the command's stdin (or the pty), -1 once closed */
	int out, err; /* its stdout and stderr, -1 at end of file */
	int pty;
} relay;

/* {"stream": "stdout", "data": BASE64}, as jansson's JSON_COMPACT writes it
 * (nothing in it needs escaping). */
static int ndjson_chunk(const char *stream, const char *buf, size_t n)
{
	static const char tail[] = "\"}\n";
	char head[40];
	int hl = snprintf(head, sizeof(head), "{\"stream\":\"%s\",\"data\":\"", stream);
	_cleanup_free_ char *line = malloc((size_t)hl + B64_LEN(n) + sizeof(tail));
	size_t len;

	if (!line)
		return -ENOMEM;
	memcpy(line, head, (size_t)hl);
	len = (size_t)hl + b64_encode(buf, n, line + hl);
	memcpy(line + len, tail, sizeof(tail));
	return io_write_all(1, line, len + sizeof(tail) - 1);
}

/* One readable fd of the command: to where it goes. <= 0 at its end. */
static int pump_out(relay *rl, int fd, const char *stream, int dest)
{
	char buf[CHUNK];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0)
		return 0; /* EIO on a pty master: the last slave holder is gone */
	if (rl->ndjson)
		(void)ndjson_chunk(stream, buf, (size_t)n);
	else
		(void)io_write_all(dest, buf, (size_t)n);
	return 1;
}

static void pump_in(relay *rl)
{
	char buf[CHUNK];
	ssize_t n = read(rl->in, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0 || io_write_all(rl->to, buf, (size_t)n) < 0) {
		rl->in = -1;
		if (rl->pty < 0)
			rl->to = safe_close(rl->to); /* end of file for the command */
	}
}

/* Drains what is readable without waiting: output written before the
 * command ended is in the pipe by the time its result is sent. */
static void drain(relay *rl, int *fd, const char *stream, int dest)
{
	if (*fd < 0)
		return;
	(void)fcntl(*fd, F_SETFL, O_NONBLOCK);
	while (pump_out(rl, *fd, stream, dest) > 0) {
		struct pollfd p = {.fd = *fd, .events = POLLIN};

		if (poll(&p, 1, 0) <= 0)
			break;
	}
}

static void winsize_to(int pty)
{
	struct winsize ws;

	if (ioctl(0, TIOCGWINSZ, &ws) == 0)
		(void)ioctl(pty, TIOCSWINSZ, &ws);
}

/* The last line of --ndjson: {"exit_code", "signal", "limits_hit",
 * "duration_ms"}, as jansson's JSON_COMPACT writes it. */
static void ndjson_result(const sx_result *res)
{
	const char *wall = res->flags & SX_EXEC_WALL ? "\"exec_wall\""
			   : res->flags & SX_WALL    ? "\"wall\""
						     : "";
	char sig[16];

	snprintf(sig, sizeof(sig), "%d", res->signal);
	printf("{\"exit_code\":%d,\"signal\":%s,\"limits_hit\":[%s%s%s],\"duration_ms\":%" PRIu64
	       "}\n",
	       res->exit_code, res->signal ? sig : "null", wall,
	       wall[0] && (res->flags & SX_MEMORY) ? "," : "",
	       res->flags & SX_MEMORY ? "\"memory\"" : "", res->duration_ms);
}

int cmd_exec(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"interactive", no_argument, NULL, 'i'}, {"tty", no_argument, NULL, 't'},
	    {"detach", no_argument, NULL, 'd'},	     {"cwd", required_argument, NULL, 'C'},
	    {"env", required_argument, NULL, 'e'},   {"ndjson", no_argument, NULL, 'J'},
	    {"help", no_argument, NULL, 'h'},	     {}};
	char *env[SX_MAX_ENV + 1], why[600];
	size_t n_env = 0;
	bool interactive = false;
	sx_req q = {0};
	sx_handle h;
	sx_result res;
	relay rl = {.in = -1, .to = -1, .out = -1, .err = -1, .pty = -1};
	struct termios saved;
	bool raw = false;
	sigset_t mask;
	int sfd, c, r;
	const char *name;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+itdC:e:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			interactive = true;
			break;
		case 't':
			q.tty = true;
			break;
		case 'd':
			q.detach = true;
			break;
		case 'C':
			q.cwd = optarg;
			break;
		case 'e':
			if (n_env >= SX_MAX_ENV || !strchr(optarg, '=') || optarg[0] == '=') {
				cli_error("exec: --env %s: expected KEY=VALUE (at most %u)", optarg,
					  SX_MAX_ENV);
				return SC_EXIT_SETUP;
			}
			env[n_env++] = optarg;
			break;
		case 'J':
			rl.ndjson = true;
			break;
		case 'h':
			exec_usage(stdout);
			return 0;
		default:
			exec_usage(stderr);
			return SC_EXIT_SETUP;
		}
	}
	if (optind + 2 > argc) {
		cli_error("exec: give a session name and a command (see 'sandcap exec --help')");
		return SC_EXIT_SETUP;
	}
	name = argv[optind++];
	if (strcmp(argv[optind], "--") == 0 && ++optind >= argc) {
		cli_error("exec: no command after --");
		return SC_EXIT_SETUP;
	}
	if (q.detach && (q.tty || interactive || rl.ndjson)) {
		cli_error("exec: --detach takes no -i, -t or --ndjson (nothing is relayed)");
		return SC_EXIT_SETUP;
	}
	env[n_env] = NULL;
	q.argv = argv + optind;
	q.env = n_env ? env : NULL;
	if (q.tty && isatty(0)) {
		struct winsize ws;

		if (ioctl(0, TIOCGWINSZ, &ws) == 0) {
			q.rows = ws.ws_row;
			q.cols = ws.ws_col;
		}
	}
	(void)signal(SIGPIPE, SIG_IGN);
	r = sx_exec(name, &q, &h, why, sizeof(why));
	if (r < 0) {
		if (r == -ENOENT || r == -ECONNREFUSED)
			cli_error("exec: no session %s (sandcap session list)", name);
		else if (r == -EINVAL)
			cli_error("exec: %s is no session name", name);
		else if (r == -EREMOTEIO)
			cli_error("exec: session %s refused the command: %s", name, why);
		else
			cli_error("exec: session %s: %s", name, strerror(-r));
		return SC_EXIT_SETUP;
	}
	if (q.detach) {
		printf("%" PRIu32 "\n", h.id);
		return 0;
	}
	/* Signals to us are the command's (as `run` passes them on); SIGWINCH
	 * resizes its pty. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGWINCH);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (q.tty) {
		rl.pty = rl.to = rl.out = h.pty_fd;
		rl.in = interactive || isatty(0) ? 0 : -1;
		if (isatty(0) && tcgetattr(0, &saved) == 0) {
			struct termios t = saved;

			cfmakeraw(&t);
			raw = tcsetattr(0, TCSANOW, &t) == 0;
		}
	} else {
		rl.to = h.stdin_fd;
		rl.out = h.stdout_fd;
		rl.err = h.stderr_fd;
		if (interactive)
			rl.in = 0;
		else
			rl.to = safe_close(rl.to);
	}
	for (;;) {
		struct pollfd p[5] = {{.fd = h.conn, .events = POLLIN},
				      {.fd = rl.out, .events = POLLIN},
				      {.fd = rl.err, .events = POLLIN},
				      {.fd = rl.in, .events = POLLIN},
				      {.fd = sfd, .events = POLLIN}};

		if (poll(p, 5, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents && pump_out(&rl, rl.out, "stdout", 1) <= 0) {
			if (rl.pty >= 0)
				rl.pty = rl.to = -1; /* closed with h.pty_fd below */
			if (rl.out != h.pty_fd)
				(void)close(rl.out);
			rl.out = -1;
		}
		if (p[2].revents && pump_out(&rl, rl.err, "stderr", 2) <= 0)
			rl.err = safe_close(rl.err);
		if (p[3].revents && rl.to >= 0)
			pump_in(&rl);
		else if (p[3].revents)
			rl.in = -1;
		if (p[4].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGWINCH && q.tty)
					winsize_to(h.pty_fd);
				else if (si.ssi_signo != SIGWINCH)
					(void)sx_exec_signal(&h, (int)si.ssi_signo);
			}
		}
		if (p[0].revents)
			break; /* the result, or the supervisor went away */
	}
	drain(&rl, &rl.out, "stdout", 1);
	drain(&rl, &rl.err, "stderr", 2);
	r = sx_exec_wait(&h, &res);
	if (raw)
		(void)tcsetattr(0, TCSANOW, &saved);
	(void)safe_close(h.pty_fd);
	(void)safe_close(h.stdout_fd == rl.out ? -1 : rl.out);
	(void)safe_close(rl.err);
	(void)safe_close(rl.pty >= 0 ? -1 : rl.to);
	(void)safe_close(sfd);
	if (r < 0) {
		cli_error("exec: session %s ended without the command's result: %s", name,
			  strerror(-r));
		return SC_EXIT_SETUP;
	}
	if (rl.ndjson)
		ndjson_result(&res);
	else if (res.err > 0)
		cli_error("exec: session %s could not start the command: %s", name,
			  strerror(res.err));
	else if (res.flags & SX_EXEC_WALL)
		cli_error("exec: stopped by limits.exec_wall after %" PRIu64 " ms (exit 124)",
			  res.duration_ms);
	else if (res.flags & SX_SESSION_ENDED)
		cli_error("exec: session %s ended while the command ran (%s)", name,
			  res.flags & SX_WALL ? "limits.wall" : "stopped");
	else if ((res.flags & SX_MEMORY) && res.signal == SIGKILL)
		cli_error("exec: killed by the memory limit (OOM) (exit %d)", res.exit_code);
	else if (res.flags & SX_MEMORY)
		cli_error("exec: a process was killed by the memory limit (OOM); the command "
			  "exited with status %d",
			  res.exit_code);
	return res.exit_code;
}
