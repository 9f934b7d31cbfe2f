/* SPDX-License-Identifier: MIT */
/*
 * The exit statuses of sandcap and of pid 1 of the sandbox, as
 * documented in sandcap(1), "EXIT STATUS". Anything below 124 is the
 * command's own.
 */
#pragma once

enum sc_exit_status {
	SC_EXIT_OK = 0,
	SC_EXIT_TIMEOUT = 124,	   /* the wall-clock limit ended the command */
	SC_EXIT_SETUP = 125,	   /* the sandbox could not be set up; any usage error */
	SC_EXIT_NOEXEC = 126,	   /* the command is not executable */
	SC_EXIT_NOTFOUND = 127,	   /* the command was not found */
	SC_EXIT_SIGNAL_BASE = 128, /* + N: the command died of signal N */
};
