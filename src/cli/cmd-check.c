/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/exit-status.h"
#include "base/io.h"
#include "cli/cli.h"
#include "token/token.h"

static void check_usage(FILE *out)
{
	fputs(
	    "Usage: sandcap check --policy FILE [--audit FILE]\n"
	    "       sandcap check --token FILE --key FILE [--audit FILE]\n"
	    "\n"
	    "Validates the capability set and prints its blast radius: every path the\n"
	    "sandbox sees and how, where it may connect, and its limits. Exit 0 when valid,\n"
	    "125 with the file, the JSON path and what was expected otherwise. A credential\n"
	    "whose secret is missing here (an unset or empty value_env variable, an empty\n"
	    "value_file) is a warning: 'sandcap run' refuses it. Warns when the audit log\n"
	    "(--audit FILE, else the default directory) would share a filesystem with a rw\n"
	    "grant.\n"
	    "\n"
	    "  --policy FILE    the policy, as JSON (docs/policy.md); \"-\" reads standard input\n"
	    "  --token FILE     a capability token instead; needs --key\n"
	    "  --key FILE       the token root key\n"
	    "  --audit FILE     the audit log a run would write\n",
	    out);
}

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"policy", required_argument, NULL, 'p'}, {"token", required_argument, NULL, 't'},
	    {"key", required_argument, NULL, 'k'},    {"audit", required_argument, NULL, 'a'},
	    {"help", no_argument, NULL, 'h'},	      {}};
	const char *policy = NULL, *token = NULL, *keyfile = NULL, *audit = NULL;
	sc_plan *plan = NULL;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
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
		case 'h':
			check_usage(stdout);
			return 0;
		default:
			check_usage(stderr);
			return SC_EXIT_SETUP;
		}
	}
	if (optind < argc || !!policy == !!token) {
		check_usage(stderr);
		return SC_EXIT_SETUP;
	}
	if (token) {
		tk_info info;

		if (cli_load_token(token, keyfile, &plan, &info, NULL, NULL) < 0)
			return SC_EXIT_SETUP;
		printf("token %s: valid, %u caveat(s), expires %s", info.id, info.n_caveats,
		       ctime(&info.exp));
	} else if (cli_load_policy(policy, &plan, NULL) < 0) {
		return SC_EXIT_SETUP;
	}
	(void)cli_check_secrets(plan, token ? token : cli_policy_name(policy), true);
	plan_describe(plan, stdout);
	(void)cli_warn_audit_place(plan, audit);
	sc_plan_free(plan);
	return 0;
}
