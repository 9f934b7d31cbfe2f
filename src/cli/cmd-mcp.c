/* SPDX-License-Identifier: MIT */
/*
 * sandcap mcp: an MCP server on stdio (newline-delimited JSON-RPC) whose
 * tools act on one session started from --policy and stopped at the end.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/exit-status.h"
#include "cli/cli.h"
#include "serve/backend.h"
#include "serve/mcp.h"

typedef struct mcp_session {
	const char *exe;
	char name[64];
} mcp_session;

static int op_run(void *ud, const sv_exec_req *req, sv_exec_result *ret, sv_error *e)
{
	mcp_session *s = ud;

	return sv_exec_run(s->exe, s->name, req, MCP_MAX_OUTPUT * 4, ret, e);
}

static int op_write(void *ud, const char *path, const void *data, size_t len, sv_error *e)
{
	mcp_session *s = ud;

	return sv_session_put(s->exe, s->name, path, data, len, e);
}

static int op_read(void *ud, const char *path, char **ret, size_t *ret_len, sv_error *e)
{
	mcp_session *s = ud;

	return sv_session_get(s->exe, s->name, path, ret, ret_len, e);
}

static int op_list(void *ud, const char *path, json_t **ret, sv_error *e)
{
	mcp_session *s = ud;

	return sv_session_ls(s->exe, s->name, path, ret, e);
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void mcp_usage(FILE *out)
{
	fputs("Usage: sandcap mcp --policy FILE\n"
	      "\n"
	      "An MCP server (protocol " MCP_PROTOCOL_VERSION ") on standard input and output,\n"
	      "exposing run_command, write_file, read_file and list_files on one sandbox\n"
	      "started from FILE; the sandbox is stopped (its log sealed) when the input ends.\n"
	      "Its messages (the session's name and log) go to standard error.\n",
	      out);
}

int cmd_mcp(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"policy", required_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	_cleanup_json_ json_t *info = NULL;
	_cleanup_free_ char *line = NULL;
	char exe[PATH_MAX], session_exe[PATH_MAX], policy[PATH_MAX];
	const char *policy_arg = NULL;
	mcp_session s = {.exe = exe};
	mcp_ops ops = {op_run, op_write, op_read, op_list, &s};
	mcp_state st = {0};
	struct sigaction sa = {.sa_handler = on_signal};
	size_t cap = 0;
	sv_error e;
	ssize_t n;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			policy_arg = optarg;
			break;
		case 'h':
			mcp_usage(stdout);
			return 0;
		default:
			cli_error("mcp: bad option '%s' (see --help)", argv[optind - 1]);
			return SC_EXIT_SETUP;
		}
	}
	if (!policy_arg || optind != argc) {
		cli_error("mcp: expected --policy FILE (see --help)");
		return SC_EXIT_SETUP;
	}
	if (!realpath(policy_arg, policy)) {
		cli_error("mcp: %s: %s", policy_arg, strerror(errno));
		return SC_EXIT_SETUP;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0 || sv_new_name("mcp-", s.name, sizeof(s.name)) < 0) {
		cli_error("mcp: /proc/self/exe: %s", strerror(errno));
		return SC_EXIT_SETUP;
	}
	exe[n] = 0;
	cli_session_program(exe, session_exe, sizeof(session_exe));
	if (sv_session_start(session_exe, policy, s.name, false, &info, &e) < 0) {
		cli_error("mcp: %s", e.message);
		return SC_EXIT_SETUP;
	}
	st.sandbox = s.name;
	st.audit = json_string_value(json_object_get(info, "audit"));
	fprintf(stderr, "sandcap mcp: sandbox %s, audit log %s\n", s.name,
		st.audit ? st.audit : "");
	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGINT, &sa, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
	while (!stop_signal && (n = getline(&line, &cap, stdin)) >= 0) {
		_cleanup_free_ char *reply = NULL;

		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		if (n == 0)
			continue;
		if (mcp_handle(&st, &ops, line, (size_t)n, &reply) < 0) {
			cli_error("mcp: out of memory");
			break;
		}
		if (reply && (fprintf(stdout, "%s\n", reply) < 0 || fflush(stdout) != 0))
			break; /* the client is gone */
	}
	if (sv_session_stop(exe, s.name, NULL, &e) < 0) {
		cli_error("mcp: stopping %s: %s", s.name, e.message);
		return SC_EXIT_SETUP;
	}
	fprintf(stderr, "sandcap mcp: sandbox %s stopped, log %s\n", s.name,
		st.audit ? st.audit : "");
	return 0;
}
