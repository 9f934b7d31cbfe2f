/* SPDX-License-Identifier: MIT */
/* The command line: the only code that prints. One file per verb. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "cli/front.h"
#include "policy/plan.h"

int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_workspace(int argc, char **argv);
int cmd_session(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_mcp(int argc, char **argv);

/* Loads and validates a policy file ("-": standard input); prints
 * "FILE: $.path: message" and returns -errno on failure. ret_digest (65
 * bytes) gets the SHA-256 hex. */
int cli_load_policy(const char *file, sc_plan **ret_plan, char ret_digest[65]);
/* The name a policy file goes by in messages: "<stdin>" for "-". */
const char *cli_policy_name(const char *file);
/* Reads a policy file, or standard input for "-"; prints its own error. */
/* An age in words: "40 days", "5 hours", "12 minutes", "30 seconds". */
void cli_age_text(time_t secs, char *buf, size_t len);
int cli_read_policy(const char *file, size_t max, char **ret_buf, size_t *ret_len);
/* Checks that every credential's secret is there (plan_check_secret()). Prints
 * each one missing, as a warning when warn_only; returns the first error. */
int cli_check_secrets(const sc_plan *p, const char *source, bool warn_only);

#include <jansson.h>
#include <stddef.h>

/* As cli_load_policy, after applying --set KEY=VALUE edits to the JSON. An
 * error at a key a --set wrote is reported as "--set KEY=VALUE: $.path: ...". */
int cli_load_policy_sets(const char *file, char *const *sets, size_t n_sets, sc_plan **ret_plan,
			 char ret_digest[65]);
/* Applies one "a.b.c=VALUE" edit. Prints its own error. */
int cli_apply_set(json_t *root, const char *assignment);
int cli_report_diag(const char *file, const sc_diag *d);
/* Warns (stderr) for each rw grant on the filesystem of the audit log's
 * directory (audit_path, or the default one when NULL). Returns how many. */
int cli_warn_audit_place(const sc_plan *p, const char *audit_path);
void cli_sha256_hex(const void *buf, size_t len, char out[65]);
/* Loads an Ed25519 key of the public-key seal (docs/audit.md), saying
 * what is wrong with the file. 0 or -errno. */
struct au_sign_key;
int cli_load_sign_key(const char *file, bool private, struct au_sign_key **ret);
/*
 * --audit-sign FILE of `sandcap run`: the log's signer, from a private key.
 * sandcap-main loads it (signer.c). sandcap-run links no signature code:
 * its cli_signer_load (signer-handover.c) execs sandcap-main with the
 * arguments it was started with (cli_argv), which runs the command instead.
 * Prints its own error; 0 or -errno.
 */
#include "audit/audit.h"
typedef struct cli_signer {
	struct au_sign_key *key;
	au_signer signer;
} cli_signer;
int cli_signer_load(const char *file, cli_signer *ret);
void cli_signer_done(cli_signer *s);
/* The program for `session start` in a daemon that runs sandcap's
 * subcommands (serve, mcp): the path of sandcap-run, found as the front
 * finds it, whose supervisors hold less memory (docs/architecture.md, "Two
 * programs"); exe when there is none. */
void cli_session_program(const char *exe, char *buf, size_t len);
/* The same for `sandcap exec`: the small front (libc alone, no start-up
 * for OpenSSL and the rest), next to exe or in the bindir; else exe. */
void cli_exec_program(const char *exe, char *buf, size_t len);
/* main()'s argv, for a program that hands its command line over. */
extern char **cli_argv;
/* Loads an audit HMAC key (AU_KEY_FILE_BYTES raw bytes, mode 0600 or
 * stricter) into key; prints its own error. */
int cli_read_audit_key(const char *file, uint8_t *key, size_t *len);

typedef struct tk_info tk_info;
/* Reads a token file, loads the key, verifies; prints its own errors.
 * ret_token (may be NULL): the token's text, for the caller to free. */
int cli_load_token(const char *file, const char *keyfile, sc_plan **ret_plan, tk_info *ret_info,
		   char ret_digest[65], char **ret_token);
