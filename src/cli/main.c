/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/supervisor.h"
#include "proxy/programs.h"

static const struct verb {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} verbs[] = {
    {"run", cmd_run, "run a command inside a sandbox"},
    {"session", cmd_session, "start, list and stop sandboxes that stay up; move files"},
    {"exec", cmd_exec, "run a command in a session"},
    {"check", cmd_check, "validate a policy or token and print its blast radius"},
    {"audit", cmd_audit, "verify, report or prune audit logs"},
    {"token", cmd_token, "mint, attenuate and inspect capability tokens"},
    {"doctor", cmd_doctor, "show what this host can enforce"},
    {"workspace", cmd_workspace, "review, apply or discard the changes of cow grants"},
    {"serve", cmd_serve, "serve the sandbox API on a unix socket (docs/api.md)"},
    {"mcp", cmd_mcp, "an MCP server on stdio with one sandbox's tools"},
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: sandcap COMMAND [OPTIONS]\n"
		     "\n"
		     "Run untrusted code with exactly the capabilities it was granted.\n"
		     "\n"
		     "Commands:\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(out, "  %-9s %s\n", verbs[i].name, verbs[i].summary);
	fprintf(out, "\nRun 'sandcap COMMAND --help' for the options of a command.\n"
		     "Exit status of run: the command's own; 128+N signal N (137 also when\n"
		     "sandcap killed the sandbox: the grace after a signal ran out, the audit\n"
		     "log could not be written); 124 wall clock; 125 sandbox setup failed;\n"
		     "126 not executable; 127 not found.\n");
}

int main(int argc, char **argv)
{
	px_in_process();

	/* The system openssl.cnf only selects providers we don't use; parsing it
	 * costs more than the rest of sandbox start-up together. */
	(void)OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ATEXIT, NULL);

	if (argc < 2) {
		usage(stderr);
		return SC_EXIT_SETUP;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("sandcap %s\n", SANDCAP_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(argv[1], verbs[i].name) == 0)
			return verbs[i].fn(argc - 1, argv + 1);
	cli_error("unknown command '%s' (see 'sandcap --help')", argv[1]);
	return SC_EXIT_SETUP;
}
