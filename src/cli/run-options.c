/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>

#include "audit/audit.h"
#include "base/cleanup.h"
#include "cli/front.h"
#include "cli/run-options.h"

/* What an option's argument does to cli_run_args. */
typedef enum run_opt_kind {
	OPT_STRING,   /* stored as it is */
	OPT_FLAG,     /* no argument: sets a bool */
	OPT_SET,      /* appended to sets[] */
	OPT_RECORDS,  /* a count of records */
	OPT_INTERVAL, /* seconds, stored as ms */
	OPT_HELP,
} run_opt_kind;

/* In the order getopt_long lists them when an abbreviation is ambiguous. */
static const struct {
	const char *name;
	cli_opt group; /* 0: every command */
	run_opt_kind kind;
	size_t field; /* offsetof the member of cli_run_args it sets */
} run_options[] = {
    {"policy", CLI_OPT_POLICY, OPT_STRING, offsetof(cli_run_args, policy)},
    {"token", CLI_OPT_TOKEN, OPT_STRING, offsetof(cli_run_args, token)},
    {"key", CLI_OPT_TOKEN, OPT_STRING, offsetof(cli_run_args, keyfile)},
    {"name", CLI_OPT_NAME, OPT_STRING, offsetof(cli_run_args, name)},
    {"audit", CLI_OPT_AUDIT, OPT_STRING, offsetof(cli_run_args, audit)},
    {"audit-key", CLI_OPT_AUDIT_KEY, OPT_STRING, offsetof(cli_run_args, audit_key)},
    {"audit-sign", CLI_OPT_AUDIT_SIGN, OPT_STRING, offsetof(cli_run_args, audit_sign)},
    {"audit-checkpoint-records", CLI_OPT_AUDIT_SIGN, OPT_RECORDS,
     offsetof(cli_run_args, checkpoint_records)},
    {"audit-checkpoint-interval", CLI_OPT_AUDIT_SIGN, OPT_INTERVAL,
     offsetof(cli_run_args, checkpoint_ms)},
    {"set", CLI_OPT_SET, OPT_SET, 0},
    {"json", CLI_OPT_JSON, OPT_FLAG, offsetof(cli_run_args, json)},
    {"quiet", CLI_OPT_QUIET, OPT_FLAG, offsetof(cli_run_args, quiet)},
    {"pooled", CLI_OPT_POOLED, OPT_FLAG, offsetof(cli_run_args, pooled)},
    {"help", 0, OPT_HELP, 0},
    {"spawned-by", CLI_OPT_SPAWNED_BY, OPT_STRING, offsetof(cli_run_args, spawned_by)},
};

/* --audit-checkpoint-records N, --audit-checkpoint-interval SECONDS (ms). */
static int parse_checkpoint(bool records, const char *arg, uint64_t *ret)
{
	char *end = NULL;
	double v;

	errno = 0;
	if (records) {
		unsigned long long n = strtoull(arg, &end, 10);

		if (errno || end == arg || *end || arg[0] == '-') {
			cli_error("--audit-checkpoint-records '%s': expected a number of records "
				  "(0 for none by count)",
				  arg);
			return -EINVAL;
		}
		*ret = n;
		return 0;
	}
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= 0 && v <= 86400)) {
		cli_error("--audit-checkpoint-interval '%s': expected seconds from 0 to 86400 "
			  "(e.g. 5 or 0.5; 0 for none by time)",
			  arg);
		return -EINVAL;
	}
	*ret = (uint64_t)(v * 1000 + 0.5);
	return 0;
}

/* Stores one option's value; -EINVAL after saying what was wrong. */
static int run_args_store(cli_run_args *a, run_opt_kind kind, size_t field, char *arg)
{
	void *member = (char *)a + field;

	switch (kind) {
	case OPT_STRING:
		*(const char **)member = arg;
		return 0;
	case OPT_FLAG:
		*(bool *)member = true;
		return 0;
	case OPT_SET:
		if (a->n_sets >= CLI_MAX_SETS) {
			cli_error("more than %d --set options", CLI_MAX_SETS);
			return -EINVAL;
		}
		a->sets[a->n_sets++] = arg;
		return 0;
	case OPT_RECORDS:
	case OPT_INTERVAL:
		return parse_checkpoint(kind == OPT_RECORDS, arg, member);
	case OPT_HELP:
		break;
	}
	return -EINVAL;
}

int cli_run_args_parse(int argc, char **argv, unsigned accepted, bool in_order,
		       void (*usage)(FILE *out), cli_run_args *ret)
{
	struct option opts[ELEMENTSOF(run_options) + 1] = {0};
	size_t n = 0;
	int c;

	*ret = (cli_run_args){
	    .checkpoint_records = AU_CHECKPOINT_RECORDS_DEF,
	    .checkpoint_ms = AU_CHECKPOINT_MS_DEF,
	};
	/* getopt_long returns the index in run_options + 1 ('h' for -h). */
	_Static_assert(ELEMENTSOF(run_options) < '?', "indexes would be taken for '?'");
	for (size_t i = 0; i < ELEMENTSOF(run_options); i++)
		if (!run_options[i].group || (accepted & run_options[i].group))
			opts[n++] = (struct option){
			    run_options[i].name,
			    run_options[i].kind == OPT_FLAG || run_options[i].kind == OPT_HELP
				? no_argument
				: required_argument,
			    NULL, run_options[i].kind == OPT_HELP ? 'h' : (int)i + 1};
	optind = 1;
	while ((c = getopt_long(argc, argv, in_order ? "+h" : "h", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c < 1 || (size_t)c > ELEMENTSOF(run_options)) {
			usage(stderr);
			return -EINVAL;
		}
		if (run_args_store(ret, run_options[c - 1].kind, run_options[c - 1].field, optarg) <
		    0)
			return -EINVAL;
		/* Started by a supervisor for a request on its spawn socket:
		 * everything else comes over that socket. */
		if (ret->spawned_by)
			return 0;
	}
	return 0;
}
