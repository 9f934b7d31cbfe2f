/* SPDX-License-Identifier: MIT */
/* sandcap session start|stop|list|put|get|ls|commands|kill (docs/sessions.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/signals.h"
#include "base/exit-status.h"
#include "cli/cli.h"
#include "cli/run-options.h"
#include "session/session.h"

static void session_usage(FILE *out)
{
	fputs("Usage: sandcap session start --policy FILE [--name NAME] [--audit FILE]\n"
	      "                             [--audit-key FILE] [--set KEY=VALUE]... [--json]\n"
	      "                             [--pooled]\n"
	      "       sandcap session stop NAME [--json]\n"
	      "       sandcap session list [--json]\n"
	      "       sandcap session put NAME PATH [--mode OCTAL] < DATA\n"
	      "       sandcap session get NAME PATH > DATA\n"
	      "       sandcap session ls NAME PATH [--json]\n"
	      "       sandcap session commands NAME [--json]\n"
	      "       sandcap session kill NAME ID [--signal SIG]\n"
	      "       sandcap session pause|resume NAME\n"
	      "\n"
	      "A session is a sandbox that stays up: `start` returns once it is ready and its\n"
	      "supervisor keeps running in the background; `sandcap exec NAME CMD...` runs\n"
	      "commands in it, each under every layer of the policy. Files in rw grants and\n"
	      "/tmp persist between commands. limits.exec_wall bounds one command,\n"
	      "limits.wall the session, limits.idle stops it when idle. `stop` kills what\n"
	      "runs, seals the audit log and prints the summary. put, get and ls are done\n"
	      "inside the sandbox, by a process under its walls: what the policy does not\n"
	      "grant, the kernel refuses. PATH is relative to the policy's fs.workdir.\n"
	      "`commands` lists the commands running (detached ones, `exec --detach`,\n"
	      "included) with their ids; `kill` signals one's process group (default\n"
	      "SIGKILL; a number or a name such as TERM). `pause` freezes every process\n"
	      "of the sandbox and stops its clocks (limits.wall moves by the time paused);\n"
	      "`resume` thaws it.\n",
	      out);
}

static void print_json(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);

	printf("%s\n", s ? s : "null");
	free(s);
}

/* Where the host reaches each port of net.serve, as sandcap run says it. */
static void print_serve(const char *serve)
{
	json_t *o = serve[0] ? json_loads(serve, 0, NULL) : NULL;
	const char *port;
	json_t *v;

	json_object_foreach(o, port, v)
	{
		fprintf(stderr, "sandcap: port %s served at %s\n", port,
			json_string_value(v) ?: "?");
	}
	json_decref(o);
}

static int session_start(int argc, char **argv)
{
	cli_run_args a;
	char digest[65] = "";
	sc_session_start_opts o = {0};
	sc_session_info info;
	uint8_t akey[64];
	size_t akey_len = 0;
	sc_plan *plan = NULL;
	sc_diag d = {0};
	int r;

	r = cli_run_args_parse(argc, argv,
			       CLI_OPT_POLICY | CLI_OPT_NAME | CLI_OPT_AUDIT | CLI_OPT_AUDIT_KEY |
				   CLI_OPT_SET | CLI_OPT_JSON | CLI_OPT_POOLED,
			       true, session_usage, &a);
	if (r)
		return r > 0 ? 0 : SC_EXIT_SETUP;
	o.name = a.name;
	o.audit_path = a.audit;
	o.pooled = a.pooled;
	if (!a.policy || optind != argc) {
		cli_error("session start: give --policy FILE and no command (commands go to "
			  "`sandcap exec NAME`)");
		return SC_EXIT_SETUP;
	}
	if (strcmp(a.policy, "-") == 0) {
		cli_error("session start: --policy - is not for sessions (the supervisor outlives "
			  "this command): give a file");
		return SC_EXIT_SETUP;
	}
	if (cli_load_policy_sets(a.policy, a.sets, a.n_sets, &plan, digest) < 0)
		return SC_EXIT_SETUP;
	if (cli_check_secrets(plan, a.policy, false) < 0 ||
	    (a.audit_key && cli_read_audit_key(a.audit_key, akey, &akey_len) < 0)) {
		sc_plan_free(plan);
		return SC_EXIT_SETUP;
	}
	o.plan = plan;
	o.policy_source = cli_policy_name(a.policy);
	o.policy_digest = digest;
	o.audit_key = akey_len ? akey : NULL;
	o.audit_key_len = akey_len;
	fflush(NULL); /* nothing buffered is written twice by the fork */
	r = sc_session_start(&o, &info, &d);
	sc_plan_free(plan);
	if (r < 0) {
		cli_error("session start: %s%s%s", d.path, d.path[0] ? ": " : "",
			  d.message[0] ? d.message : strerror(-r));
		return SC_EXIT_SETUP;
	}
	if (a.json) {
		json_t *out = json_pack("{s:s, s:i, s:s, s:s, s:s, s:s}", "name", info.name, "pid",
					(int)info.pid, "audit", info.audit_path, "policy", a.policy,
					"sandbox", info.sandbox_id, "started", info.started);
		json_t *ws = json_array();
		char *save = NULL;

		for (char *id = strtok_r(info.workspaces, " ", &save); id;
		     id = strtok_r(NULL, " ", &save))
			(void)json_array_append_new(ws, json_string(id));
		(void)json_object_set_new(out, "workspaces", ws);
		if (info.serve[0])
			(void)json_object_set_new(out, "serve", json_loads(info.serve, 0, NULL));
		print_json(out);
		json_decref(out);
	} else {
		printf("%s\n", info.name);
		print_serve(info.serve);
	}
	return 0;
}

static int not_reached(const char *what, const char *name, int r)
{
	if (r == -ENOENT || r == -ECONNREFUSED)
		cli_error("%s: no session %s (sandcap session list)", what, name);
	else if (r == -EINVAL)
		cli_error("%s: %s is not a session name", what, name);
	else
		cli_error("%s: session %s: %s", what, name, strerror(-r));
	return SC_EXIT_SETUP;
}

/* NAME [PATH] and --json / --mode after or between them. */
static int positional(int argc, char **argv, size_t want, const char **pos, bool *json,
		      unsigned *mode, const char *what)
{
	static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
					     {"mode", required_argument, NULL, 'm'},
					     {"help", no_argument, NULL, 'h'},
					     {}};
	size_t n = 0;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'j':
			if (!json)
				goto bad;
			*json = true;
			break;
		case 'm':
			if (!mode)
				goto bad;
			*mode = (unsigned)strtoul(optarg, &end, 8);
			if (*end || !optarg[0] || *mode > 0777) {
				cli_error("%s: --mode %s: expected an octal mode up to 0777", what,
					  optarg);
				return -EINVAL;
			}
			break;
		case 'h':
			session_usage(stdout);
			return 1;
		default:
			goto bad;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (n == want)
			goto bad;
		pos[n++] = argv[i];
	}
	if (n == want)
		return 0;
bad:
	cli_error("%s: see 'sandcap session --help'", what);
	return -EINVAL;
}

static int session_stop(int argc, char **argv)
{
	const char *name;
	bool json = false;
	json_t *sum = NULL;
	int r = positional(argc, argv, 1, &name, &json, NULL, "session stop");

	if (r)
		return r > 0 ? 0 : SC_EXIT_SETUP;
	r = sc_session_stop(name, &sum);
	if (r < 0)
		return not_reached("session stop", name, r);
	if (json) {
		print_json(sum);
	} else if (sum) {
		const char *err = json_string_value(json_object_get(sum, "error"));

		if (err)
			fprintf(stderr, "sandcap: session %s ended: %s: %s\n", name, err,
				json_string_value(json_object_get(sum, "detail")) ?: "");
		else
			fprintf(
			    stderr,
			    "sandcap: session %s (%s) stopped after %.3f s: %" JSON_INTEGER_FORMAT
			    " commands, cpu %.3f s\n  audit: %s (%s, final hash %s)\n",
			    name, json_string_value(json_object_get(sum, "sandbox")) ?: "?",
			    json_real_value(json_object_get(sum, "wall_s")),
			    json_integer_value(json_object_get(sum, "commands")),
			    json_real_value(json_object_get(sum, "cpu_s")),
			    json_string_value(json_object_get(sum, "audit")) ?: "",
			    json_string_value(json_object_get(sum, "audit_state")) ?: "",
			    json_string_value(json_object_get(sum, "audit_hash")) ?: "");
	}
	json_decref(sum);
	return 0;
}

static void human_size(json_t *v, char *buf, size_t len)
{
	double b = (double)json_integer_value(v);

	if (!json_is_integer(v))
		snprintf(buf, len, "-");
	else if (b >= 1 << 20)
		snprintf(buf, len, "%.1fM", b / (1 << 20));
	else
		snprintf(buf, len, "%.0fK", b / 1024);
}

static int session_list(int argc, char **argv)
{
	bool json = false;
	json_t *a = NULL, *v;
	size_t i;
	int r = positional(argc, argv, 0, NULL, &json, NULL, "session list");

	if (r)
		return r > 0 ? 0 : SC_EXIT_SETUP;
	r = sc_session_list(&a);
	if (r < 0) {
		cli_error("session list: %s", strerror(-r));
		return SC_EXIT_SETUP;
	}
	if (json) {
		print_json(a);
		json_decref(a);
		return 0;
	}
	printf("%-20s %-9s %8s %8s %8s  %s\n", "NAME", "STATE", "AGE", "MEMORY", "COMMANDS",
	       "POLICY");
	json_array_foreach(a, i, v)
	{
		char mem[32];

		human_size(json_object_get(v, "memory_peak"), mem, sizeof(mem));
		printf("%-20s %-9s %7" JSON_INTEGER_FORMAT "s %8s %8" JSON_INTEGER_FORMAT "  %s\n",
		       json_string_value(json_object_get(v, "name")) ?: "?",
		       json_string_value(json_object_get(v, "state")) ?: "?",
		       json_integer_value(json_object_get(v, "age_s")), mem,
		       json_integer_value(json_object_get(v, "commands")),
		       json_string_value(json_object_get(v, "policy")) ?: "");
	}
	json_decref(a);
	return 0;
}

static int file_error(const char *what, const char *name, const char *path, int r)
{
	if (r == -ENOENT && access(path, F_OK) < 0 && errno != ENOENT)
		return not_reached(what, name, r);
	if (r == -ECONNREFUSED || r == -ECONNRESET)
		return not_reached(what, name, r);
	cli_error("%s: %s in session %s: %s", what, path, name, strerror(-r));
	return 1;
}

static int session_put(int argc, char **argv)
{
	const char *pos[2];
	unsigned mode = 0644;
	uint64_t bytes = 0;
	int r = positional(argc, argv, 2, pos, NULL, &mode, "session put");

	if (r)
		return r > 0 ? 0 : SC_EXIT_SETUP;
	r = sc_session_put(pos[0], pos[1], mode, 0, &bytes);
	return r < 0 ? file_error("session put", pos[0], pos[1], r) : 0;
}

static int session_get(int argc, char **argv)
{
	const char *pos[2];
	int r = positional(argc, argv, 2, pos, NULL, NULL, "session get");

	if (r)
		return r > 0 ? 0 : SC_EXIT_SETUP;
	r = sc_session_get(pos[0], pos[1], 1, NULL);
	return r < 0 ? file_error("session get", pos[0], pos[1], r) : 0;
}

static int session_ls(int argc, char **argv)
{
	const char *pos[2];
	bool json = false;
	sc_dir_entry *e = NULL;
	size_t n = 0;
	int r = positional(argc, argv, 2, pos, &json, NULL, "session ls");

	if (r)
		return r > 0 ? 0 : SC_EXIT_SETUP;
	r = sc_session_ls(pos[0], pos[1], &e, &n);
	if (r < 0)
		return file_error("session ls", pos[0], pos[1], r);
	if (json) {
		json_t *a = json_array();

		for (size_t i = 0; a && i < n; i++) {
			char t[2] = {e[i].type, 0};

			(void)json_array_append_new(
			    a, json_pack("{s:s, s:s, s:I, s:i, s:I}", "name", e[i].name, "type", t,
					 "size", (json_int_t)e[i].size, "mode", (int)e[i].mode,
					 "mtime", (json_int_t)e[i].mtime));
		}
		print_json(a);
		json_decref(a);
	} else {
		for (size_t i = 0; i < n; i++)
			printf("%c %04o %10" PRIu64 " %s\n", e[i].type, e[i].mode, e[i].size,
			       e[i].name);
	}
	free(e);
	return 0;
}

static int session_commands(int argc, char **argv)
{
	const char *name;
	bool json = false;
	json_t *a = NULL, *v;
	size_t i;
	int r = positional(argc, argv, 1, &name, &json, NULL, "session commands");

	if (r)
		return r > 0 ? 0 : SC_EXIT_SETUP;
	r = sc_session_commands(name, &a);
	if (r < 0)
		return not_reached("session commands", name, r);
	if (json) {
		print_json(a);
		json_decref(a);
		return 0;
	}
	printf("%-6s %-8s %-8s %s\n", "ID", "PID", "DETACHED", "COMMAND");
	json_array_foreach(a, i, v)
	{
		json_t *arg;
		size_t j;

		printf("%-6" JSON_INTEGER_FORMAT " %-8" JSON_INTEGER_FORMAT " %-8s",
		       json_integer_value(json_object_get(v, "id")),
		       json_integer_value(json_object_get(v, "pid")),
		       json_is_true(json_object_get(v, "detached")) ? "yes" : "no");
		json_array_foreach(json_object_get(v, "argv"), j, arg)
		    printf(" %s", json_string_value(arg) ?: "?");
		printf("\n");
	}
	json_decref(a);
	return 0;
}

static int session_kill(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"signal", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'}, {}};
	int sig = SIGKILL, c, r;
	unsigned long id;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sig = sgn_parse(optarg);
			if (sig < 0) {
				cli_error("session kill: --signal %s: expected a signal (9, KILL, "
					  "SIGTERM)",
					  optarg);
				return SC_EXIT_SETUP;
			}
			break;
		case 'h':
			session_usage(stdout);
			return 0;
		default:
			cli_error("session kill: see 'sandcap session --help'");
			return SC_EXIT_SETUP;
		}
	}
	if (optind + 2 != argc) {
		cli_error("session kill: give NAME and ID (sandcap session commands NAME)");
		return SC_EXIT_SETUP;
	}
	errno = 0;
	id = strtoul(argv[optind + 1], &end, 10);
	if (errno || *end || id == 0 || id > UINT32_MAX || argv[optind + 1][0] == '-') {
		cli_error("session kill: %s: expected a command's id", argv[optind + 1]);
		return SC_EXIT_SETUP;
	}
	r = sc_session_kill(argv[optind], (uint32_t)id, sig);
	if (r == -ESRCH) {
		cli_error("session kill: no command %lu runs in session %s", id, argv[optind]);
		return 1;
	}
	return r < 0 ? not_reached("session kill", argv[optind], r) : 0;
}

static int session_pause_resume(int argc, char **argv, bool pause)
{
	const char *what = pause ? "session pause" : "session resume";
	const char *name;
	int r = positional(argc, argv, 1, &name, NULL, NULL, what);

	if (r)
		return r > 0 ? 0 : SC_EXIT_SETUP;
	r = sc_session_pause(name, pause);
	if (r == -EOPNOTSUPP || r == -EACCES || r == -EPERM || r == -EBUSY) {
		cli_error("%s: session %s: cannot %s it: %s", what, name, pause ? "freeze" : "thaw",
			  strerror(-r));
		return 1;
	}
	return r < 0 ? not_reached(what, name, r) : 0;
}

static int session_pause(int argc, char **argv)
{
	return session_pause_resume(argc, argv, true);
}

static int session_resume(int argc, char **argv)
{
	return session_pause_resume(argc, argv, false);
}

int cmd_session(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} subs[] = {{"start", session_start},	    {"stop", session_stop},
		    {"list", session_list},	    {"put", session_put},
		    {"get", session_get},	    {"ls", session_ls},
		    {"commands", session_commands}, {"kill", session_kill},
		    {"pause", session_pause},	    {"resume", session_resume}};

	/* A client that dies mid-transfer gets EPIPE, not a signal. */
	(void)signal(SIGPIPE, SIG_IGN);
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		session_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? SC_EXIT_SETUP : 0;
	}
	for (size_t i = 0; i < ELEMENTSOF(subs); i++)
		if (strcmp(argv[1], subs[i].name) == 0)
			return subs[i].fn(argc - 1, argv + 1);
	cli_error("session: unknown subcommand '%s' (start, stop, list, put, get, ls, commands, "
		  "kill, pause, resume)",
		  argv[1]);
	return SC_EXIT_SETUP;
}
