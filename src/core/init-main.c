/* SPDX-License-Identifier: MIT */
/* sandcap-init: a small static binary, so pid 1 starts in well under a
 * millisecond and carries no library of the supervisor into the sandbox. */
#include "core/init.h"

int main(int argc, char **argv)
{
	return init_main(argc, argv);
}
