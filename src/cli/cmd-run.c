/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "cli/cli.h"
#include "audit/audit.h"
#include "core/run.h"
#include "core/spawn.h"
#include "token/token.h"

#define MAX_SETS 64

static void run_usage(FILE *out)
{
	fputs(
	    "Usage: sandcap run [--policy FILE | --token FILE --key FILE] [--audit FILE "
	    "[--audit-key FILE]]\n"
	    "                   [--json] [--quiet] [--set KEY=VALUE]... [--] COMMAND [ARG]...\n"
	    "\n"
	    "Runs COMMAND inside a sandbox that holds exactly the capabilities of the policy.\n"
	    "Without root the sandbox maps its agent to you; limits then need a delegated\n"
	    "cgroup v2 subtree (see `sandcap doctor`).\n"
	    "\n"
	    "  --policy FILE      the capability set, as JSON (see README, \"Policy reference\")\n"
	    "  --token FILE       a capability token instead of a policy; needs --key\n"
	    "  --key FILE         the token root key (32 bytes, mode 0600 or stricter)\n"
	    "  --audit FILE       write the audit log here (default: a new file under\n"
	    "                     $SANDCAP_STATE_DIR/audit; when unset /var/lib/sandcap/audit\n"
	    "                     for root, ~/.local/state/sandcap/audit for other users)\n"
	    "  --audit-key FILE   seal the log with an HMAC under this key\n"
	    "  --set KEY=VALUE    override one policy key, e.g. --set limits.wall=10s; VALUE is\n"
	    "                     read as JSON when it is valid JSON (64, true, [80]) and as a\n"
	    "                     string otherwise; the result is validated like the file.\n"
	    "                     Not with --token: attenuate the token instead\n"
	    "  --json             print the end-of-run summary as one JSON object on stderr\n"
	    "  --quiet            no summary unless something went wrong\n"
	    "\n"
	    "Exit status: the command's own; 128+N when it died of signal N; 124 when the\n"
	    "wall-clock limit ended it; 125 when the sandbox could not be set up; 126 not\n"
	    "executable; 127 not found. A signal to sandcap (SIGINT, SIGTERM, ...) is passed to\n"
	    "the command; 3 s later, or at a second signal, the sandbox is killed (137).\n",
	    out);
}

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static void print_size(FILE *f, uint64_t b)
{
	if (b >= (1ULL << 30))
		fprintf(f, "%.1f GiB", (double)b / (double)(1ULL << 30));
	else if (b >= (1ULL << 20))
		fprintf(f, "%.1f MiB", (double)b / (double)(1ULL << 20));
	else if (b >= 1024)
		fprintf(f, "%.1f KiB", (double)b / 1024.0);
	else
		fprintf(f, "%" PRIu64 " B", b);
}

static void summary_text(const sc_plan *p, const sc_run_result *r)
{
	FILE *f = stderr;

	fprintf(f, "sandcap: %s ", r->sandbox_id);
	if (r->timed_out)
		fprintf(f, "stopped by the wall-clock limit after %.3f s (exit 124)\n",
			secs(r->wall_ns));
	else if (r->stop_signal)
		fprintf(f, "stopped by signal %d (%s): %s (exit %d)\n", r->stop_signal,
			strsignal(r->stop_signal),
			r->forced_kill ? "killed, the command did not end within the grace"
				       : "the command ended when asked",
			r->exit_status);
	else if (r->oom_killed)
		fprintf(f, "OOM-killed: memory limit reached (exit %d)\n", r->exit_status);
	else if (r->signal)
		fprintf(f, "command died of signal %d (%s) (exit %d)\n", r->signal,
			strsignal(r->signal), r->exit_status);
	else
		fprintf(f, "command exited with status %d\n", r->exit_status);
	fprintf(f, "  wall %.3f s, cpu %.3f s", secs(r->wall_ns), secs(r->cpu_ns));
	if (r->throttled_ns || r->cpu_throttled)
		fprintf(f, ", throttled %.3f s", secs(r->throttled_ns));
	if (r->memory_peak != UINT64_MAX) {
		fputs(", peak memory ", f);
		print_size(f, r->memory_peak);
		if (p->memory != PLAN_UNLIMITED) {
			fputs(" of ", f);
			print_size(f, p->memory);
		}
	}
	fprintf(f, " (cgroup %s)\n", r->cgroup);
	if (r->oom_kills || r->pids_limited || r->cpu_throttled)
		fprintf(f, "  limits hit:%s%s%s\n", r->oom_kills ? " memory (OOM kill)" : "",
			r->pids_limited ? " pids" : "", r->cpu_throttled ? " cpu (throttled)" : "");
	if (p->n_egress) {
		fprintf(f, "  network: %" PRIu64 " allowed, %" PRIu64 " denied, out ",
			r->requests_allowed, r->requests_denied);
		print_size(f, r->bytes_out);
		fputs(", in ", f);
		print_size(f, r->bytes_in);
		fputc('\n', f);
	}
	if (r->syscalls_denied)
		fprintf(f, "  syscalls denied: %" PRIu64 "\n", r->syscalls_denied);
	if (r->files_written)
		fprintf(f, "  files written: %" PRIu64 " (fs.write records in the audit log)\n",
			r->files_written);
	if (r->audit_path[0])
		fprintf(f, "  audit: %s (final hash %s)\n", r->audit_path, r->audit_hash);
}

static void summary_json(const sc_run_result *r)
{
	json_t *o = json_pack(
	    "{s:s, s:i, s:i, s:b, s:b, s:b, s:b, s:f, s:f, s:f, s:o, s:I, s:I, s:I, s:I, s:I, s:I, "
	    "s:I, s:s, s:s, s:s}",
	    "sandbox", r->sandbox_id, "exit_status", r->exit_status, "signal", r->signal,
	    "timed_out", r->timed_out, "oom_killed", r->oom_killed, "pids_limited", r->pids_limited,
	    "cpu_throttled", r->cpu_throttled, "wall_s", secs(r->wall_ns), "cpu_s", secs(r->cpu_ns),
	    "throttled_s", secs(r->throttled_ns), "memory_peak",
	    r->memory_peak == UINT64_MAX ? json_null() : json_integer((json_int_t)r->memory_peak),
	    "oom_kills", (json_int_t)r->oom_kills, "bytes_out", (json_int_t)r->bytes_out,
	    "bytes_in", (json_int_t)r->bytes_in, "requests_allowed",
	    (json_int_t)r->requests_allowed, "requests_denied", (json_int_t)r->requests_denied,
	    "syscalls_denied", (json_int_t)r->syscalls_denied, "files_written",
	    (json_int_t)r->files_written, "cgroup", r->cgroup, "audit", r->audit_path, "audit_hash",
	    r->audit_hash);
	char *s;

	if (o)
		(void)json_object_set_new(o, "layers", json_string(r->layers));
	if (o && r->stop_signal) {
		(void)json_object_set_new(o, "stop_signal", json_integer(r->stop_signal));
		(void)json_object_set_new(o, "forced_kill", json_boolean(r->forced_kill));
	}
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);

	if (s)
		fprintf(stderr, "%s\n", s);
	free(s);
	json_decref(o);
}

static int read_key(const char *file, uint8_t *key, size_t *len)
{
	int r = au_key_load(file, key);

	if (r < 0) {
		cli_error("%s: cannot use as an audit key: %s", file,
			  r == -EACCES	 ? "readable or writable by group or others (chmod 600 it)"
			  : r == -EINVAL ? "a key file holds exactly 32 raw bytes"
					 : strerror(-r));
		return r;
	}
	*len = AU_KEY_FILE_BYTES;
	return 0;
}

/* A closed 0-2 (`2>&-`) is /dev/null instead: the next file we opened
 * would take its number, and the summary or the sandbox's output would be
 * written into the audit log or a socket. */
static void std_fds_open(void)
{
	for (int fd = 0; fd < 3; fd++) {
		int n;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		n = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (n >= 0 && n != fd) {
			(void)dup2(n, fd);
			(void)close(n);
		} else if (n == fd) {
			(void)fcntl(fd, F_SETFD, 0);
		}
	}
}

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {{"policy", required_argument, NULL, 'p'},
					     {"token", required_argument, NULL, 't'},
					     {"key", required_argument, NULL, 'k'},
					     {"audit", required_argument, NULL, 'a'},
					     {"audit-key", required_argument, NULL, 'K'},
					     {"set", required_argument, NULL, 's'},
					     {"json", no_argument, NULL, 'j'},
					     {"quiet", no_argument, NULL, 'q'},
					     {"help", no_argument, NULL, 'h'},
					     /* internal: a sub-sandbox's supervisor */
					     {"spawned-by", required_argument, NULL, 'S'},
					     {}};
	const char *policy = NULL, *token = NULL, *keyfile = NULL, *audit = NULL, *audit_key = NULL;
	char *sets[MAX_SETS];
	size_t n_sets = 0;
	bool json = false, quiet = false;
	sc_plan *plan = NULL;
	_cleanup_free_ char *token_text = NULL;
	char digest[65] = "";
	uint8_t akey[64];
	size_t akey_len = 0;
	sc_run_opts o = {0};
	sc_run_result res;
	sc_diag d = {0};
	tk_info info = {0};
	int c, r;

	std_fds_open();
	/* A write to a closed pipe or terminal fails with EPIPE, which is
	 * ignored: the command's status, not 141, is what we exit with. A
	 * SIGPIPE sent to us during the run still stops it (core/run.h). */
	(void)signal(SIGPIPE, SIG_IGN);
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			policy = optarg;
			break;
		case 't':
			token = optarg;
			break;
		case 'k':
			keyfile = optarg;
			break;
		case 'a':
			audit = optarg;
			break;
		case 'K':
			audit_key = optarg;
			break;
		case 's':
			if (n_sets >= MAX_SETS) {
				cli_error("more than %d --set options", MAX_SETS);
				return SC_EXIT_SETUP;
			}
			sets[n_sets++] = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			run_usage(stdout);
			return 0;
		case 'S':
			/* Started by a supervisor for a request on its spawn socket:
			 * everything else comes over that socket (core/spawn.h). */
			return spawn_child_main(atoi(optarg));
		default:
			run_usage(stderr);
			return SC_EXIT_SETUP;
		}
	}
	if (optind >= argc) {
		cli_error("run: no command given (see 'sandcap run --help')");
		return SC_EXIT_SETUP;
	}
	if (!!policy == !!token) {
		cli_error("run: give exactly one of --policy FILE or --token FILE");
		return SC_EXIT_SETUP;
	}
	if (token) {
		if (n_sets) {
			cli_error("run: --set applies to policies, not tokens (attenuate the token "
				  "instead)");
			return SC_EXIT_SETUP;
		}
		if (cli_load_token(token, keyfile, &plan, &info, digest, &token_text) < 0)
			return SC_EXIT_SETUP;
		o.token = token_text;
		o.policy_source = "token";
		o.token_id = info.id;
		o.token_caveats = info.n_caveats;
	} else {
		if (cli_load_policy_sets(policy, sets, n_sets, &plan, digest) < 0)
			return SC_EXIT_SETUP;
		o.policy_source = policy;
	}
	if (audit_key && read_key(audit_key, akey, &akey_len) < 0) {
		sc_plan_free(plan);
		return SC_EXIT_SETUP;
	}
	o.plan = plan;
	o.argv = argv + optind;
	o.audit_path = audit;
	o.audit_key = akey_len ? akey : NULL;
	o.audit_key_len = akey_len;
	o.policy_digest = digest;

	r = sc_run(&o, &res, &d);
	if (r < 0) {
		cli_error("cannot set up the sandbox: %s%s%s", d.path, d.path[0] ? ": " : "",
			  d.message[0] ? d.message : strerror(-r));
		/* What was in place when it was refused, once the sandbox
		 * existed: the log says the same. */
		if (res.layers[0])
			fprintf(stderr, "  %s refused; in place: %s%s%s\n", res.sandbox_id,
				res.layers, res.audit_path[0] ? "; audit: " : "", res.audit_path);
		sc_plan_free(plan);
		return SC_EXIT_SETUP;
	}
	/* Even with --quiet: a degraded run is something that went wrong. */
	if (res.not_enforced[0])
		cli_error("warning: not enforced (best_effort): %s", res.not_enforced);
	if (json)
		summary_json(&res);
	else if (!quiet || res.exit_status >= 124 || res.oom_killed || res.timed_out)
		summary_text(plan, &res);
	sc_plan_free(plan);
	return res.exit_status;
}
