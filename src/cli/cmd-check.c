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
#include "cli/run-options.h"
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
	cli_run_args a;
	sc_plan *plan = NULL;
	int r;

	r = cli_run_args_parse(argc, argv, CLI_OPT_POLICY | CLI_OPT_TOKEN | CLI_OPT_AUDIT, false,
			       check_usage, &a);
	if (r)
		return r > 0 ? 0 : SC_EXIT_SETUP;
	if (optind < argc || !!a.policy == !!a.token) {
		check_usage(stderr);
		return SC_EXIT_SETUP;
	}
	if (a.token) {
		tk_info info;

		if (cli_load_token(a.token, a.keyfile, &plan, &info, NULL, NULL) < 0)
			return SC_EXIT_SETUP;
		printf("token %s: valid, %u caveat(s), expires %s", info.id, info.n_caveats,
		       ctime(&info.exp));
	} else if (cli_load_policy(a.policy, &plan, NULL) < 0) {
		return SC_EXIT_SETUP;
	}
	(void)cli_check_secrets(plan, a.token ? a.token : cli_policy_name(a.policy), true);
	plan_describe(plan, stdout);
	(void)cli_warn_audit_place(plan, a.audit);
	sc_plan_free(plan);
	return 0;
}
