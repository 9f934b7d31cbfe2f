/* SPDX-License-Identifier: MIT */
/* The command line: the only code that prints. One file per verb. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "policy/plan.h"

int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

/* "sandcap: " + message on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Loads and validates a policy file; prints "FILE: $.path: message" and
 * returns -errno on failure. ret_digest (65 bytes) gets the SHA-256 hex. */
int cli_load_policy(const char *file, sc_plan **ret_plan, char ret_digest[65]);
