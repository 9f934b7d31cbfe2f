/* SPDX-License-Identifier: MIT */
/* sandcap serve: the API daemon on a unix socket (docs/api.md). */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/exit-status.h"
#include "cli/cli.h"
#include "serve/activation.h"
#include "serve/server.h"

static void serve_usage(FILE *out)
{
	fputs("Usage: sandcap serve [--socket PATH] [--group G] [--policy FILE]...\n"
	      "                     [--pool FILE=N]... [--quota-per-uid N] [--token-key KEY]\n"
	      "                     [--allow-inline-policy]\n"
	      "\n"
	      "Serves the sandbox API (HTTP/1.1 + JSON, docs/api.md) on a unix socket, mode\n"
	      "0660. Callers are told apart by their uid (SO_PEERCRED): each sees only its\n"
	      "own sandboxes. SIGTERM (or any signal whose default would end it) stops every\n"
	      "sandbox, sealing its log. Started by systemd with a socket (sandcap.socket:\n"
	      "LISTEN_PID, LISTEN_FDS), it serves that socket instead of creating one.\n"
	      "\n"
	      "  -s, --socket PATH         the socket to create (with a socket passed by\n"
	      "                            systemd: optional, and must name that one)\n"
	      "  -g, --group G             the socket's group (name or number): who may connect\n"
	      "  -p, --policy FILE         a policy callers may name (by its file name\n"
	      "                            without .json) or send as JSON\n"
	      "  -P, --pool FILE=N         the same, with N sandboxes kept started ahead\n"
	      "  -q, --quota-per-uid N     live sandboxes per uid (default 8; 0: no bound)\n"
	      "  -k, --token-key KEY       accept capability tokens verified with KEY\n"
	      "      --allow-inline-policy accept any policy as JSON from any caller (by\n"
	      "                            default only from root: the daemon runs as root)\n",
	      out);
}

__attribute__((format(printf, 2, 3))) static void serve_log(void *userdata, const char *fmt, ...)
{
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	va_list ap;

	(void)userdata;
	(void)strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	fprintf(stderr, "sandcap serve: %s ", ts);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int parse_unsigned(const char *s, unsigned max, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

static int parse_group(const char *s, gid_t *ret)
{
	struct group *g = getgrnam(s);
	unsigned v;

	if (g) {
		*ret = g->gr_gid;
		return 0;
	}
	if (parse_unsigned(s, 0x7fffffffu, &v) == 0) {
		*ret = (gid_t)v;
		return 0;
	}
	return -ENOENT;
}

int cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'},
	    {"group", required_argument, NULL, 'g'},
	    {"policy", required_argument, NULL, 'p'},
	    {"pool", required_argument, NULL, 'P'},
	    {"quota-per-uid", required_argument, NULL, 'q'},
	    {"token-key", required_argument, NULL, 'k'},
	    {"allow-inline-policy", no_argument, NULL, 'A'},
	    {"ready-fd", required_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	sv_policy_opt pols[SV_MAX_POLICIES];
	char exe[PATH_MAX], session_exe[PATH_MAX], exec_exe[PATH_MAX],
	    passed_path[sizeof(struct sockaddr_un)];
	char passed_name[256];
	const char *why = NULL;
	sv_config cfg = {
	    .gid = (gid_t)-1, .quota = 8, .ready_fd = -1, .log = serve_log, .policies = pols};
	unsigned v;
	ssize_t n;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:g:p:P:q:k:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			cfg.socket_path = optarg;
			break;
		case 'g':
			if (parse_group(optarg, &cfg.gid) < 0) {
				cli_error("serve: --group %s: no such group", optarg);
				return SC_EXIT_SETUP;
			}
			break;
		case 'p':
		case 'P': {
			char *eq = c == 'P' ? strrchr(optarg, '=') : NULL;

			if (cfg.n_policies >= SV_MAX_POLICIES) {
				cli_error("serve: at most %u policies", SV_MAX_POLICIES);
				return SC_EXIT_SETUP;
			}
			if (c == 'P' && (!eq || parse_unsigned(eq + 1, SV_MAX_POOL, &v) < 0)) {
				cli_error("serve: --pool %s: expected FILE=N with N from 0 to %u",
					  optarg, SV_MAX_POOL);
				return SC_EXIT_SETUP;
			}
			if (eq)
				*eq = 0;
			pols[cfg.n_policies++] =
			    (sv_policy_opt){.file = optarg, .pool = eq ? v : 0};
			break;
		}
		case 'q':
			if (parse_unsigned(optarg, 100000, &cfg.quota) < 0) {
				cli_error("serve: --quota-per-uid %s: expected a number of "
					  "sandboxes (0: no bound)",
					  optarg);
				return SC_EXIT_SETUP;
			}
			break;
		case 'k':
			cfg.token_key = optarg;
			break;
		case 'A':
			cfg.allow_inline = true;
			break;
		case 'R':
			if (parse_unsigned(optarg, 0x7fffffffu, &v) < 0) {
				cli_error("serve: --ready-fd %s: expected a file descriptor",
					  optarg);
				return SC_EXIT_SETUP;
			}
			cfg.ready_fd = (int)v;
			break;
		case 'h':
			serve_usage(stdout);
			return 0;
		default:
			cli_error("serve: bad option '%s' (see --help)", argv[optind - 1]);
			return SC_EXIT_SETUP;
		}
	}
	if (optind != argc) {
		cli_error("serve: unexpected argument '%s' (see --help)", argv[optind]);
		return SC_EXIT_SETUP;
	}
	r = sv_activation_socket(&cfg.listen_fd, passed_path, sizeof(passed_path), passed_name,
				 sizeof(passed_name), &why);
	if (r < 0) {
		cli_error("serve: the socket passed by the service manager: %s", why);
		return SC_EXIT_SETUP;
	}
	if (r > 0) {
		/* The manager's unit says where the socket is and who may connect
		 * (ListenStream=, SocketMode=, SocketGroup=): an option that says
		 * otherwise is a mistake, refused rather than half applied. */
		if (cfg.socket_path && strcmp(cfg.socket_path, passed_path) != 0) {
			cli_error("serve: --socket %s, but the socket passed by the service "
				  "manager is %s",
				  cfg.socket_path,
				  passed_path[0] ? passed_path : "not bound to a path");
			return SC_EXIT_SETUP;
		}
		if (cfg.gid != (gid_t)-1) {
			cli_error("serve: --group with a socket passed by the service manager: its "
				  "unit's SocketGroup= and SocketMode= say who may connect");
			return SC_EXIT_SETUP;
		}
		cfg.listen_passed = true;
		cfg.socket_path = passed_path[0]   ? passed_path
				  : passed_name[0] ? passed_name
						   : "fd 3";
	} else if (!cfg.socket_path) {
		cli_error("serve: expected --socket PATH, or a socket passed by systemd "
			  "(LISTEN_FDS; see --help)");
		return SC_EXIT_SETUP;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0) {
		cli_error("serve: /proc/self/exe: %s", strerror(errno));
		return SC_EXIT_SETUP;
	}
	exe[n] = 0;
	cfg.exe = exe;
	cli_session_program(exe, session_exe, sizeof(session_exe));
	cfg.session_exe = session_exe;
	cli_exec_program(exe, exec_exe, sizeof(exec_exe));
	cfg.exec_exe = exec_exe;
	r = sv_serve(&cfg);
	return r < 0 ? SC_EXIT_SETUP : 0;
}
