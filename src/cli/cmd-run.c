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
#include "cli/run-options.h"
#include "audit/audit.h"
#include "core/supervisor.h"
#include "core/spawn.h"
#include "token/token.h"

static void run_usage(FILE *out)
{
	fputs("Usage: sandcap run [--policy FILE | --token FILE --key FILE] [--audit FILE "
	      "[--audit-key FILE]\n"
	      "                   [--audit-sign FILE [--audit-checkpoint-records N]\n"
	      "                   [--audit-checkpoint-interval SECONDS]]]\n"
	      "                   [--json] [--quiet] [--set KEY=VALUE]... [--] COMMAND [ARG]...\n"
	      "\n"
	      "Runs COMMAND inside a sandbox that holds exactly the capabilities of the policy.\n"
	      "Without root the sandbox maps its agent to you; limits then need a delegated\n"
	      "cgroup v2 subtree (see `sandcap doctor`).\n"
	      "\n"
	      "  --policy FILE      the capability set, as JSON (docs/policy.md); \"-\" reads it\n"
	      "                     from standard input, which COMMAND then finds at its end\n"
	      "  --token FILE       a capability token instead of a policy; needs --key\n"
	      "  --key FILE         the token root key (32 bytes, mode 0600 or stricter)\n"
	      "  --audit FILE       write the audit log here (default: a new file under\n"
	      "                     $SANDCAP_STATE_DIR/audit; when unset /var/lib/sandcap/audit\n"
	      "                     for root, ~/.local/state/sandcap/audit for other users)\n"
	      "  --audit-key FILE   seal the log with an HMAC under this key\n"
	      "  --audit-sign FILE  sign the seal and checkpoints with this Ed25519 private key\n"
	      "                     (from 'sandcap audit keygen'); 'sandcap audit verify\n"
	      "                     --pubkey' checks them with the public key alone\n"
	      "  --audit-checkpoint-records N\n"
	      "                     a signed checkpoint after every N records (default 1000;\n"
	      "                     0: none by count)\n"
	      "  --audit-checkpoint-interval SECONDS\n"
	      "                     ... and at least every SECONDS while records come (default\n"
	      "                     5, at most 86400, in steps of 0.001; 0: none by time)\n"
	      "  --set KEY=VALUE    override one policy key, e.g. --set limits.wall=10s; VALUE is\n"
	      "                     read as JSON when it is valid JSON (64, true, [80]) and as a\n"
	      "                     string otherwise; the result is validated like the file,\n"
	      "                     and an error in what --set wrote names that --set.\n"
	      "                     Not with --token: attenuate the token instead\n"
	      "  --json             print the end-of-run summary as one JSON object on stderr\n"
	      "  --quiet            no summary unless the command failed (exit status not 0)\n"
	      "\n"
	      "Exit status: the command's own; 128+N when it died of signal N; 124 when the\n"
	      "wall-clock limit ended it; 125 when the sandbox could not be set up; 126 not\n"
	      "executable; 127 not found. A signal to sandcap (SIGINT, SIGTERM, ...) is passed to\n"
	      "the command; 3 s later, or at a second signal, the sandbox is killed (137).\n"
	      "A sandbox whose audit log cannot be written is stopped at once (137 too).\n",
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

/* Only a sealed log that records no failure has a final hash. */
static void summary_audit(FILE *f, const sc_run_result *r)
{
	if (r->audit_error)
		fprintf(f,
			"  audit log FAILED: %s (%s) after %" PRIu64
			" records, %s not written; %s\n",
			strerrorname_np(r->audit_error) ? strerrorname_np(r->audit_error) : "?",
			/* the log's own bound, not the file system's */
			r->audit_error == EFBIG ? "the log reached audit.max_bytes"
						: strerror(r->audit_error),
			r->audit_failed_at, r->audit_failed_event,
			r->audit_stopped ? "sandbox stopped" : "the sandbox had ended");
	if (!r->audit_sealed)
		fprintf(f,
			"  audit: %s is NOT sealed: %" PRIu64
			" records, the last written has hash %s\n",
			r->audit_path, r->audit_records, r->audit_hash);
	else if (r->audit_error)
		fprintf(f,
			"  audit: %s is incomplete: %" PRIu64
			" records, sealed after audit.error (seal hash %s)\n",
			r->audit_path, r->audit_records, r->audit_hash);
	else
		fprintf(f, "  audit: %s (final hash %s)\n", r->audit_path, r->audit_hash);
	if (r->workspaces[0])
		fprintf(f,
			"  workspace: %s (review: sandcap workspace diff ID; then apply or "
			"discard)\n",
			r->workspaces);
	if (r->workspace_error[0])
		fprintf(f, "  workspace NOT kept: %s\n", r->workspace_error);
	if (r->workspace_note[0])
		fprintf(f, "  workspace %s\n", r->workspace_note);
}

/* limit.hit names in words; the supervisor's own are said on their lines. */
static const char *limit_words(const char *limit)
{
	static const struct {
		const char *key, *words;
	} names[] = {
	    {"memory", "memory (OOM kill)"},
	    {"pids", "pids"},
	    {"cpu_throttled", "cpu (throttled)"},
	    {"wall", "wall clock"},
	    {"max_request_body", "request body cap"},
	    {"max_response_body", "response body cap"},
	    {"egress_budget", "egress budget"},
	    {"rate", "request rate"},
	    {"bandwidth", "bandwidth"},
	    {"credential", "credential limits"},
	};

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (strcmp(limit, names[i].key) == 0)
			return names[i].words;
	return NULL;
}

/* The limits the run hit, from its limit.hit records: "  limits hit: ..." */
static void summary_limits(FILE *f, const au_tally *t)
{
	const au_count *e[AU_TALLY_KEYS];
	size_t n = au_table_sorted(&t->limits, e);

	if (n == 0)
		return;
	fputs("  limits hit:", f);
	for (size_t i = 0; i < n; i++) {
		const char *w = limit_words(e[i]->key);

		fputs(i ? ", " : " ", f);
		if (w)
			fputs(w, f);
		else
			au_fputs_safe(e[i]->key, f);
		if (e[i]->count > 1)
			fprintf(f, " x%" PRIu64, e[i]->count);
	}
	if (t->limits.other_count)
		fprintf(f, ", %" PRIu64 " more", t->limits.other_count);
	fputc('\n', f);
}

#define SUMMARY_TOP 3 /* denied hosts named in the text summary */

/* What the proxy refused, most refused hosts first, with their reason. */
static void summary_denied(FILE *f, const au_tally *t)
{
	const au_count *e[AU_TALLY_KEYS];
	size_t n = au_table_sorted(&t->denied_hosts, e);
	uint64_t rest = t->denied_hosts.other_count;

	if (n == 0)
		return;
	fputs("    denied:", f);
	for (size_t i = 0; i < n; i++) {
		if (i == SUMMARY_TOP) {
			rest += e[i]->count;
			continue;
		}
		fputs(i ? ", " : " ", f);
		au_fputs_safe(e[i]->key, f);
		fprintf(f, " x%" PRIu64, e[i]->count);
		if (e[i]->detail[0]) {
			fputs(" (", f);
			au_fputs_safe(e[i]->detail, f);
			fputs(e[i]->mixed ? ", ...)" : ")", f);
		}
	}
	if (rest)
		fprintf(f, ", %" PRIu64 " more to other hosts", rest);
	fputc('\n', f);
}

static void summary_text(const sc_plan *p, const sc_run_result *r)
{
	const au_tally *t = &r->tally;
	FILE *f = stderr;

	fprintf(f, "sandcap: %s ", r->sandbox_id);
	if (r->audit_stopped)
		fprintf(f, "stopped: its audit log could not be written (exit %d)\n",
			r->exit_status);
	else if (r->timed_out)
		fprintf(f, "stopped by the wall-clock limit after %.3f s (exit 124)\n",
			secs(r->wall_ns));
	else if (r->proxy_failed)
		fprintf(f, "stopped: its egress proxy died %u times (exit %d)\n",
			r->proxy_restarts + 1, r->exit_status);
	else if (r->stop_signal)
		fprintf(f, "stopped by signal %d (%s): %s (exit %d)\n", r->stop_signal,
			strsignal(r->stop_signal),
			r->forced_kill ? "killed, the command did not end within the grace"
				       : "the command ended when asked",
			r->exit_status);
	else if (r->oom_killed && r->signal)
		fprintf(f, "OOM-killed: memory limit reached (exit %d)\n", r->exit_status);
	else if (r->oom_killed)
		/* A child was killed, and the command went on and ended by itself. */
		fprintf(f,
			"a process was killed by the memory limit (OOM); the command exited with "
			"status %d\n",
			r->exit_status);
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
	summary_limits(f, t);
	if (p->n_egress) {
		fprintf(f, "  network: %" PRIu64 " allowed, %" PRIu64 " denied, out ",
			t->requests_allowed, t->net_denied);
		print_size(f, t->bytes_out);
		fputs(", in ", f);
		print_size(f, t->bytes_in);
		fputc('\n', f);
		summary_denied(f, t);
		if (t->dns_queries)
			fprintf(f,
				"  dns: %" PRIu64 " quer%s to the sandbox resolver, %" PRIu64
				" answered, %" PRIu64 " refused\n",
				t->dns_queries, t->dns_queries == 1 ? "y" : "ies",
				t->dns_queries - t->dns_refused, t->dns_refused);
		au_credentials_text(&t->credentials, "    credential ", f);
		if (r->proxy_restarts)
			fprintf(f,
				"  egress proxy: died and restarted %u time%s (proxy.exit in the "
				"audit log)\n",
				r->proxy_restarts, r->proxy_restarts == 1 ? "" : "s");
	}
	if (t->files_denied)
		fprintf(f, "  file writes refused: %" PRIu64 " (fs.denied in the audit log)\n",
			t->files_denied);
	if (t->syscalls_denied) {
		const au_count *e[AU_TALLY_KEYS];
		size_t n = au_table_sorted(&t->syscalls, e);

		fprintf(f, "  syscalls denied: %" PRIu64 " (", t->syscalls_denied);
		for (size_t i = 0; i < n; i++) {
			fputs(i ? ", " : "", f);
			au_fputs_safe(e[i]->key, f);
			fprintf(f, " x%" PRIu64, e[i]->count);
		}
		if (t->syscalls.other_count)
			fprintf(f, ", %" PRIu64 " other", t->syscalls.other_count);
		fputs(")\n", f);
	}
	if (t->execs || t->execs_failed) {
		fprintf(f, "  programs run: %" PRIu64, t->execs);
		if (t->execs_failed)
			fprintf(f,
				" (and %" PRIu64 " exec attempt%s that failed, e.g. PATH lookups)",
				t->execs_failed, t->execs_failed == 1 ? "" : "s");
		fputc('\n', f);
	}
	if (t->files_written)
		fprintf(f, "  files written: %s%" PRIu64 " (distinct paths in fs.write records)\n",
			t->files_approx ? "at least " : "", t->files_written);
	if (r->audit_path[0])
		summary_audit(f, r);
}

/* A table as [{KEY: key, "count": n[, DETAIL: detail]}], highest first. */
static json_t *table_json(const au_table *t, const char *key, const char *detail)
{
	const au_count *e[AU_TALLY_KEYS];
	size_t n = au_table_sorted(t, e);
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++) {
		json_t *o =
		    json_pack("{s:s, s:I}", key, e[i]->key, "count", (json_int_t)e[i]->count);

		if (o && detail && e[i]->detail[0])
			(void)json_object_set_new(o, detail, json_string(e[i]->detail));
		if (o)
			(void)json_array_append_new(a, o);
	}
	return a ? a : json_null();
}

static void summary_json(const sc_run_result *r)
{
	const au_tally *t = &r->tally;
	json_t *o = json_pack(
	    "{s:s, s:i, s:i, s:b, s:b, s:b, s:b, s:f, s:f, s:f, s:o, s:I, s:I, s:I, s:I, s:I, s:I, "
	    "s:I, s:s, s:s, s:s}",
	    "sandbox", r->sandbox_id, "exit_status", r->exit_status, "signal", r->signal,
	    "timed_out", r->timed_out, "oom_killed", r->oom_killed, "pids_limited", r->pids_limited,
	    "cpu_throttled", r->cpu_throttled, "wall_s", secs(r->wall_ns), "cpu_s", secs(r->cpu_ns),
	    "throttled_s", secs(r->throttled_ns), "memory_peak",
	    r->memory_peak == UINT64_MAX ? json_null() : json_integer((json_int_t)r->memory_peak),
	    "oom_kills", (json_int_t)r->oom_kills, "bytes_out", (json_int_t)t->bytes_out,
	    "bytes_in", (json_int_t)t->bytes_in, "requests_allowed",
	    (json_int_t)t->requests_allowed, "requests_denied", (json_int_t)t->net_denied,
	    "syscalls_denied", (json_int_t)t->syscalls_denied, "files_written",
	    (json_int_t)t->files_written, "cgroup", r->cgroup, "audit", r->audit_path, "audit_hash",
	    r->audit_hash);
	char *s;

	/* audit_hash is final only when audit_state is "sealed". */
	if (o)
		(void)json_object_set_new(o, "files_denied",
					  json_integer((json_int_t)t->files_denied));
	if (o) {
		(void)json_object_set_new(o, "proxy_restarts", json_integer(r->proxy_restarts));
		(void)json_object_set_new(o, "proxy_failed", json_boolean(r->proxy_failed));
		(void)json_object_set_new(o, "audit_state",
					  json_string(!r->audit_sealed ? "unsealed"
						      : r->audit_error ? "failed"
								       : "sealed"));
		(void)json_object_set_new(o, "audit_records",
					  json_integer((json_int_t)r->audit_records));
		(void)json_object_set_new(
		    o, "audit_error",
		    r->audit_error
			? json_pack("{s:s, s:s, s:I, s:b, s:I}", "error",
				    strerrorname_np(r->audit_error)
					? strerrorname_np(r->audit_error)
					: "?",
				    "not_written", r->audit_failed_event, "after_records",
				    (json_int_t)r->audit_failed_at, "sandbox_stopped",
				    r->audit_stopped, "unrecorded", (json_int_t)r->audit_unrecorded)
			: json_null());
		(void)json_object_set_new(o, "denied_hosts",
					  table_json(&t->denied_hosts, "host", "reason"));
		(void)json_object_set_new(o, "limits_hit",
					  table_json(&t->limits, "limit", "detail"));
		(void)json_object_set_new(o, "credentials", au_credentials_json(&t->credentials));
		(void)json_object_set_new(o, "dns_queries",
					  json_integer((json_int_t)t->dns_queries));
		(void)json_object_set_new(o, "dns_refused",
					  json_integer((json_int_t)t->dns_refused));
		(void)json_object_set_new(o, "syscalls_denied_by_name",
					  table_json(&t->syscalls, "syscall", NULL));
		(void)json_object_set_new(o, "execs", json_integer((json_int_t)t->execs));
		(void)json_object_set_new(o, "execs_failed",
					  json_integer((json_int_t)t->execs_failed));
		(void)json_object_set_new(o, "layers", json_string(r->layers));
		if (r->workspaces[0])
			(void)json_object_set_new(o, "workspaces", json_string(r->workspaces));
		if (r->workspace_error[0])
			(void)json_object_set_new(o, "workspace_error",
						  json_string(r->workspace_error));
		if (r->stop_signal) {
			(void)json_object_set_new(o, "stop_signal", json_integer(r->stop_signal));
			(void)json_object_set_new(o, "forced_kill", json_boolean(r->forced_kill));
		}
	}
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	if (s)
		fprintf(stderr, "%s\n", s);
	free(s);
	json_decref(o);
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

static int run_loaded(char **argv, const cli_run_args *ap, const au_signer *signer);

/* sc_run_opts.on_serve: where the host reaches each served port, before the
 * command starts (also with --quiet: it is how the port is found). */
static void print_serve(void *userdata, uint16_t port, uint16_t host_port)
{
	const sc_plan *plan = userdata;
	bool any = false;

	for (size_t i = 0; i < plan->n_serve; i++)
		if (plan->serve[i].port == port)
			any = plan->serve[i].any_addr;
	fprintf(stderr, "sandcap: port %u served at %s:%u\n", port, any ? "0.0.0.0" : "127.0.0.1",
		host_port);
	fflush(stderr);
}

int cmd_run(int argc, char **argv)
{
	const unsigned accepted = CLI_OPT_POLICY | CLI_OPT_TOKEN | CLI_OPT_AUDIT |
				  CLI_OPT_AUDIT_KEY | CLI_OPT_AUDIT_SIGN | CLI_OPT_SET |
				  CLI_OPT_JSON | CLI_OPT_QUIET | CLI_OPT_SPAWNED_BY;
	cli_run_args a;
	cli_signer signer = {0};
	sigset_t pipe_only;
	int r;

	std_fds_open();
	/* A write to a closed pipe or terminal fails with EPIPE, which is
	 * ignored: the command's status, not 141, is what we exit with. A
	 * SIGPIPE sent to us during the run still stops it (core/supervisor.h); one
	 * sent before the supervisor takes its signals (while the policy is
	 * read) waits, blocked, instead of being dropped as ignored. */
	(void)signal(SIGPIPE, SIG_IGN);
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	(void)sigprocmask(SIG_BLOCK, &pipe_only, NULL);
	r = cli_run_args_parse(argc, argv, accepted, true, run_usage, &a);
	if (r)
		return r > 0 ? 0 : SC_EXIT_SETUP;
	if (a.spawned_by)
		return spawn_child_main(atoi(a.spawned_by));
	if (optind >= argc) {
		cli_error("run: no command given (see 'sandcap run --help')");
		return SC_EXIT_SETUP;
	}
	if (!!a.policy == !!a.token) {
		cli_error("run: give exactly one of --policy FILE or --token FILE");
		return SC_EXIT_SETUP;
	}
	/* First: in sandcap-run this hands the command line over (cli.h). */
	if (a.audit_sign && cli_signer_load(a.audit_sign, &signer) < 0)
		return SC_EXIT_SETUP;
	r = run_loaded(argv, &a, signer.key ? &signer.signer : NULL);
	cli_signer_done(&signer);
	return r;
}

/* cmd_run once its options are parsed and its signer loaded. */
static int run_loaded(char **argv, const cli_run_args *ap, const au_signer *signer)
{
	cli_run_args a = *ap;
	sc_plan *plan = NULL;
	_cleanup_free_ char *token_text = NULL;
	char digest[65] = "";
	uint8_t akey[64];
	size_t akey_len = 0;
	sc_run_opts o = {0};
	_cleanup_(sc_run_result_freep) sc_run_result *res = NULL;
	sc_diag d = {0};
	tk_info info = {0};
	int r;

	if (a.token) {
		if (a.n_sets) {
			cli_error("run: --set applies to policies, not tokens (attenuate the token "
				  "instead)");
			return SC_EXIT_SETUP;
		}
		if (cli_load_token(a.token, a.keyfile, &plan, &info, digest, &token_text) < 0)
			return SC_EXIT_SETUP;
		o.token = token_text;
		o.policy_source = "token";
		o.token_id = info.id;
		o.token_caveats = info.n_caveats;
	} else {
		if (cli_load_policy_sets(a.policy, a.sets, a.n_sets, &plan, digest) < 0)
			return SC_EXIT_SETUP;
		o.policy_source = cli_policy_name(a.policy);
	}
	/* Before anything is set up: the proxy would find a missing secret only
	 * after the sandbox exists. */
	if (cli_check_secrets(plan, a.token ? a.token : cli_policy_name(a.policy), false) < 0) {
		sc_plan_free(plan);
		return SC_EXIT_SETUP;
	}
	if (a.audit_key && cli_read_audit_key(a.audit_key, akey, &akey_len) < 0) {
		sc_plan_free(plan);
		return SC_EXIT_SETUP;
	}
	o.audit_signer = signer;
	o.audit_checkpoint_records = a.checkpoint_records;
	o.audit_checkpoint_ms = a.checkpoint_ms;
	o.plan = plan;
	o.argv = argv + optind;
	o.audit_path = a.audit;
	o.audit_key = akey_len ? akey : NULL;
	o.audit_key_len = akey_len;
	o.policy_digest = digest;
	o.on_serve = print_serve;
	o.serve_userdata = plan;

	res = sc_run_result_new();
	if (!res) {
		cli_error("cannot set up the sandbox: out of memory");
		sc_plan_free(plan);
		return SC_EXIT_SETUP;
	}
	r = sc_run(&o, res, &d);
	if (r < 0) {
		cli_error("cannot set up the sandbox: %s%s%s", d.path, d.path[0] ? ": " : "",
			  d.message[0] ? d.message : strerror(-r));
		/* What was in place when it was refused, once the sandbox
		 * existed: the log says the same (named only if it was written:
		 * a log refused at open, a FIFO or a full disk, holds nothing). */
		if (res->layers[0])
			fprintf(stderr, "  %s refused; in place: %s%s%s\n", res->sandbox_id,
				res->layers, res->audit_records ? "; audit: " : "",
				res->audit_records ? res->audit_path : "");
		sc_plan_free(plan);
		return SC_EXIT_SETUP;
	}
	/* Even with --quiet: a degraded run is something that went wrong. */
	if (res->not_enforced[0])
		cli_error("warning: not enforced (best_effort): %s", res->not_enforced);
	if (res->proxy_restarts && !res->proxy_failed)
		cli_error("warning: the egress proxy died and was restarted %u time%s "
			  "(proxy.exit in the audit log)",
			  res->proxy_restarts, res->proxy_restarts == 1 ? "" : "s");
	if (a.json)
		summary_json(res);
	else if (!a.quiet || res->exit_status != 0 || res->oom_killed || res->timed_out ||
		 res->proxy_failed || res->audit_error ||
		 (res->audit_path[0] && !res->audit_sealed))
		summary_text(plan, res);
	sc_plan_free(plan);
	return res->exit_status;
}
