/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "cli/cli.h"
#include "token/token.h"

static void check_usage(FILE *out)
{
	fputs("Usage: sandcap check --policy FILE\n"
	      "       sandcap check --token FILE --key FILE\n"
	      "\n"
	      "Validates the capability set and prints its blast radius: every path the\n"
	      "sandbox sees and how, where it may connect, and its limits. Exit 0 when valid,\n"
	      "125 with the file, the JSON path and what was expected otherwise.\n",
	      out);
}

int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {{"policy", required_argument, NULL, 'p'},
					     {"token", required_argument, NULL, 't'},
					     {"key", required_argument, NULL, 'k'},
					     {"help", no_argument, NULL, 'h'},
					     {}};
	const char *policy = NULL, *token = NULL, *keyfile = NULL;
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
		case 'h':
			check_usage(stdout);
			return 0;
		default:
			check_usage(stderr);
			return 125;
		}
	}
	if (optind < argc || !!policy == !!token) {
		check_usage(stderr);
		return 125;
	}
	if (token) {
		_cleanup_free_ char *tok = NULL;
		uint8_t key[TK_KEY_LEN];
		tk_info info;
		sc_diag d = {0};
		int r;

		if (!keyfile) {
			cli_error("check: --token needs --key FILE");
			return 125;
		}
		r = io_read_file_at(AT_FDCWD, token, 1 << 20, &tok, NULL);
		if (r < 0) {
			cli_error("%s: cannot read token: %s", token, strerror(-r));
			return 125;
		}
		tok[strcspn(tok, "\r\n")] = '\0';
		if (tk_key_load_diag(keyfile, key, &d) < 0) {
			cli_report_diag(keyfile, &d);
			return 125;
		}
		if (tk_verify(tok, key, time(NULL), &plan, &info, &d) < 0) {
			cli_report_diag(token, &d);
			return 125;
		}
		printf("token %s: valid, %u caveat(s), expires %s", info.id, info.n_caveats,
		       ctime(&info.exp));
	} else if (cli_load_policy(policy, &plan, NULL) < 0) {
		return 125;
	}
	plan_describe(plan, stdout);
	sc_plan_free(plan);
	return 0;
}
