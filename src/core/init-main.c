/* SPDX-License-Identifier: MIT */
/* sandcap-init: a small static binary, so pid 1 starts in well under a
 * millisecond and carries no library of the supervisor into the sandbox.
 * Which pid 1 it is: a session's, or one command's. */
#include <string.h>

#include "core/init.h"

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], INIT_SESSION_ARG) == 0)
		return init_session_main(argv[2], false);
	if (argc == 3 && strcmp(argv[1], INIT_SESSION_MAIN_ARG) == 0)
		return init_session_main(argv[2], true);
	return init_main(argc, argv);
}
