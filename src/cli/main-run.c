/* SPDX-License-Identifier: MIT */
/*
 * sandcap-run: the supervisor of `sandcap run` and of sessions
 * (docs/architecture.md, "Two programs"). The same code as sandcap-main's
 * `run` and `session`, linked without what only other commands need
 * (OpenSSL beyond SHA-256, c-ares, nghttp2): a supervisor lives as long as
 * its sandbox, and the loader's relocations of those libraries' tables
 * would be private memory in every one of them.
 * What a run needs of them is done by sandcap-main: the proxy worker and
 * the sandbox CA (proxy/programs.h), and --audit-sign, for which the
 * whole command line is handed over (cli/signer-handover.c).
 */
#include <string.h>

#include "cli/cli.h"
#include "core/supervisor.h"

int main(int argc, char **argv)
{
	cli_argv = argv;
	if (argc > 1 && strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "session") == 0)
		return cmd_session(argc - 1, argv + 1);
	cli_error("sandcap-run runs only 'run' and 'session' (use sandcap)");
	return SC_EXIT_SETUP;
}
