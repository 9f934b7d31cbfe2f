/* SPDX-License-Identifier: MIT */
/* The options the commands that start a sandbox share (run, session start,
 * check): each is defined once, in run-options.c. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_MAX_SETS 64

/* Which of the shared options a command accepts; --help always. */
typedef enum cli_opt {
	CLI_OPT_POLICY = 1 << 0,     /* --policy FILE */
	CLI_OPT_TOKEN = 1 << 1,	     /* --token FILE, --key FILE */
	CLI_OPT_NAME = 1 << 2,	     /* --name NAME */
	CLI_OPT_AUDIT = 1 << 3,	     /* --audit FILE */
	CLI_OPT_AUDIT_KEY = 1 << 4,  /* --audit-key FILE */
	CLI_OPT_AUDIT_SIGN = 1 << 5, /* --audit-sign FILE, --audit-checkpoint-{records,interval} */
	CLI_OPT_SET = 1 << 6,	     /* --set KEY=VALUE, up to CLI_MAX_SETS */
	CLI_OPT_JSON = 1 << 7,	     /* --json */
	CLI_OPT_QUIET = 1 << 8,	     /* --quiet */
	CLI_OPT_SPAWNED_BY = 1 << 9, /* internal: a sub-sandbox's supervisor (core/spawn.h) */
	CLI_OPT_POOLED = 1 << 10,    /* --pooled: a session's limits wait for `session begin` */
} cli_opt;

typedef struct cli_run_args {
	const char *policy, *token, *keyfile, *name, *audit, *audit_key, *audit_sign;
	uint64_t checkpoint_records, checkpoint_ms;
	char *sets[CLI_MAX_SETS];
	size_t n_sets;
	bool json, quiet, pooled;
	const char *spawned_by; /* set: the rest of the command line was not read */
} cli_run_args;

/*
 * Reads the options in `accepted` from argv (optind is left at the first
 * operand); in_order stops at the first operand, as `run -- CMD` needs.
 * Returns 0, 1 after printing usage(stdout) for --help, or -EINVAL after
 * printing what was wrong (usage(stderr) for an unknown option).
 */
int cli_run_args_parse(int argc, char **argv, unsigned accepted, bool in_order,
		       void (*usage)(FILE *out), cli_run_args *ret);
