/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <time.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "base/sha256.h"
#include "cli/cli.h"
#include "token/token.h"

void cli_sha256_hex(const void *buf, size_t len, char out[65])
{
	uint8_t md[SHA256_BYTES];

	sha256_parts(buf, len, "", 0, "", 0, md);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

int cli_report_diag(const char *file, const sc_diag *d)
{
	if (d->line > 0)
		cli_error("%s:%d:%d: %s", file, d->line, d->column, d->message);
	else if (d->path[0])
		cli_error("%s: %s: %s", file, d->path, d->message);
	else
		cli_error("%s: %s", file, d->message);
	return 0;
}

int cli_load_policy_sets(const char *file, char *const *sets, size_t n_sets, sc_plan **ret_plan,
			 char ret_digest[65])
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	sc_diag d = {0};
	int r;

	r = io_read_file_at(AT_FDCWD, file, POLICY_MAX_BYTES, &buf, &len);
	if (r < 0) {
		cli_error("%s: cannot read policy: %s", file,
			  r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
		return r;
	}
	if (n_sets > 0) {
		/* --set KEY=VALUE edits the JSON before validation, so the
		 * result is checked exactly like a policy file. */
		json_error_t jerr;
		json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
		char *out;

		if (!root) {
			cli_error("%s:%d:%d: %s", file, jerr.line, jerr.column, jerr.text);
			return -EINVAL;
		}
		for (size_t i = 0; i < n_sets; i++) {
			r = cli_apply_set(root, sets[i]);
			if (r < 0) {
				json_decref(root);
				return r;
			}
		}
		out = json_dumps(root, JSON_COMPACT);
		json_decref(root);
		if (!out)
			return -ENOMEM;
		free(buf);
		buf = out;
		len = strlen(out);
	}
	if (ret_digest)
		cli_sha256_hex(buf, len, ret_digest);
	r = plan_parse(buf, len, ret_plan, &d);
	if (r < 0) {
		cli_report_diag(file, &d);
		return r;
	}
	return 0;
}

int cli_load_policy(const char *file, sc_plan **ret_plan, char ret_digest[65])
{
	return cli_load_policy_sets(file, NULL, 0, ret_plan, ret_digest);
}

int cli_apply_set(json_t *root, const char *assignment)
{
	char key[512];
	const char *eq = strchr(assignment, '=');
	json_t *node = root, *value;
	char *save = NULL, *part, *next;

	if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof(key)) {
		cli_error("--set %s: expected KEY=VALUE, e.g. limits.memory=64M", assignment);
		return -EINVAL;
	}
	memcpy(key, assignment, (size_t)(eq - assignment));
	key[eq - assignment] = '\0';
	/* A value that is valid JSON (number, true, [..], {..}) is taken as such;
	 * anything else is a string. */
	value = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
	if (!value)
		value = json_string(eq + 1);
	if (!value)
		return -ENOMEM;
	part = strtok_r(key, ".", &save);
	while (part) {
		next = strtok_r(NULL, ".", &save);
		if (!json_is_object(node)) {
			cli_error("--set %s: '%s' is not inside an object", assignment, part);
			json_decref(value);
			return -EINVAL;
		}
		if (!next)
			return json_object_set_new(node, part, value) < 0 ? -ENOMEM : 0;
		if (!json_object_get(node, part))
			json_object_set_new(node, part, json_object());
		node = json_object_get(node, part);
		part = next;
	}
	json_decref(value);
	return -EINVAL;
}

int cli_load_token(const char *file, const char *keyfile, sc_plan **ret_plan, tk_info *ret_info,
		   char ret_digest[65], char **ret_token)
{
	_cleanup_free_ char *tok = NULL;
	uint8_t key[TK_KEY_LEN];
	sc_diag d = {0};
	int r;

	if (!keyfile) {
		cli_error("--token needs --key FILE");
		return -EINVAL;
	}
	r = io_read_file_at(AT_FDCWD, file, TK_MAX_TOKEN_BYTES, &tok, NULL);
	if (r < 0) {
		cli_error("%s: cannot read token: %s", file, strerror(-r));
		return r;
	}
	tok[strcspn(tok, "\r\n")] = '\0';
	r = tk_key_load_diag(keyfile, key, &d);
	if (r < 0) {
		cli_report_diag(keyfile, &d);
		return r;
	}
	r = tk_verify(tok, key, time(NULL), ret_plan, ret_info, &d);
	OPENSSL_cleanse(key, sizeof(key));
	if (r < 0) {
		cli_report_diag(file, &d);
		return r;
	}
	if (ret_digest)
		cli_sha256_hex(tok, strlen(tok), ret_digest);
	if (ret_token)
		*ret_token = TAKE_PTR(tok);
	return 0;
}
