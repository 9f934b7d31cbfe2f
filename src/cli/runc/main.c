/* SPDX-License-Identifier: MIT */
/*
 * sandcap-runc's main (runc.h says what each file does): the global
 * options and each command's, as runc reads them; the commands that need
 * no container (spec, features, list); the log.
 */
#include <dirent.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/exit-status.h"
#include "cli/runc/runc.h"
#include "proxy/programs.h"

#define DEFAULT_ROOT "/run/sandcap-runc"

const char *rc_root = DEFAULT_ROOT, *rc_log, *rc_log_format = "text", *rc_policy;

/* To standard error, and to --log (one JSON object a line with --log-format
 * json, as containerd reads it). */
void rc_err(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "sandcap-runc: %s\n", msg);
	if (rc_log) {
		FILE *f = fopen(rc_log, "ae");
		char ts[40];
		time_t t = time(NULL);

		if (!f)
			return;
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
		if (strcmp(rc_log_format, "json") == 0) {
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

/* Every container under --root: runc's table (ID PID STATUS BUNDLE CREATED
 * OWNER), its ids alone (quiet), or --format json, an array of states. */
static int do_list(const char *format, bool quiet)
{
	json_t *all = json_array();
	struct dirent **names = NULL;
	int n = scandir(rc_root, &names, NULL, alphasort);
	size_t i;
	json_t *st;

	if (strcmp(format, "json") != 0 && strcmp(format, "table") != 0) {
		rc_err("--format %s: expected table or json", format);
		json_decref(all);
		return 2;
	}
	for (int k = 0; k < n; k++) {
		char dir[4096];

		if (sc_session_name_valid(names[k]->d_name) &&
		    (size_t)snprintf(dir, sizeof(dir), "%s/%s", rc_root, names[k]->d_name) <
			sizeof(dir) &&
		    (st = rc_container_state(names[k]->d_name, dir)))
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
		rc_err("%s exists already", path);
		json_decref(spec);
		return 1;
	}
	r = spec ? json_dump_file(spec, path, JSON_INDENT(2)) : -1;
	json_decref(spec);
	if (r < 0) {
		rc_err("%s: cannot write it", path);
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
			rc_root = optarg;
			break;
		case 'l':
			rc_log = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
				rc_err("--log-format %s: expected text or json", optarg);
				return 2;
			}
			rc_log_format = optarg;
			break;
		case 's':
			rc_err("--systemd-cgroup is not supported: sandcap makes and removes each "
			       "container's cgroup itself (docs/oci.md)");
			return 2;
		case 'd':
			break;
		case 'p':
			rc_policy = optarg;
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
	/* docker update, ctr task update: runc update [--resources FILE] ID,
	 * refused before its options are read, with the reason. */
	if (strcmp(name, "update") == 0) {
		rc_err("update: a container's resources cannot be changed once it is created: "
		       "its limits are its spec's, as its audit log's sandbox.start records "
		       "them (docs/oci.md)");
		return 1;
	}
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
				rc_err("--env %s: expected KEY=VALUE, at most %d", optarg,
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
	if (setenv("SANDCAP_RUNTIME_DIR", rc_root, 1) < 0)
		return SC_EXIT_SETUP;
	if (strcmp(name, "spec") == 0)
		return do_spec(strcmp(bundle, ".") ? bundle : NULL);
	if (strcmp(name, "features") == 0)
		return do_features();
	if (strcmp(name, "list") == 0)
		return do_list(format, quiet);
	if (optind >= argc) {
		rc_err("%s: a container id is required", name);
		return 2;
	}
	if (strcmp(name, "create") == 0)
		return rc_do_create(argv[optind], bundle, pid_file, console, false, false);
	if (strcmp(name, "run") == 0)
		return rc_do_create(argv[optind], bundle, pid_file, console, true, detach);
	if (strcmp(name, "start") == 0)
		return rc_start(argv[optind]);
	if (strcmp(name, "exec") == 0) {
		eo.pid_file = pid_file;
		eo.console = console;
		eo.detach = detach;
		return rc_do_exec(argv[optind], &eo, argv + optind + 1);
	}
	if (strcmp(name, "ps") == 0)
		return rc_do_ps(argv[optind], format, argv + optind + 1);
	if (strcmp(name, "state") == 0)
		return rc_do_state(argv[optind]);
	if (strcmp(name, "kill") == 0)
		return rc_do_kill(argv[optind], optind + 1 < argc ? argv[optind + 1] : NULL, all);
	if (strcmp(name, "delete") == 0)
		return rc_do_delete(argv[optind], force);
	if (strcmp(name, "pause") == 0 || strcmp(name, "resume") == 0)
		return rc_do_pause(argv[optind], name[0] == 'p');
	rc_err("%s: unknown command", name);
	usage(stderr);
	return 2;
}
