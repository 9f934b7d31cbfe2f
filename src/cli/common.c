/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/cleanup.h"
#include "base/io.h"
#include "base/sha256.h"
#include "base/sibling.h"
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

const char *cli_policy_name(const char *file)
{
	return strcmp(file, "-") == 0 ? "<stdin>" : file;
}

int cli_read_policy(const char *file, size_t max, char **ret_buf, size_t *ret_len)
{
	int r;

	if (strcmp(file, "-") == 0)
		r = io_read_all(STDIN_FILENO, max, ret_buf, ret_len);
	else
		r = io_read_file_at(AT_FDCWD, file, max, ret_buf, ret_len);
	if (r == -EFBIG)
		cli_error("%s: cannot read policy: larger than %zu bytes, the most a policy may be",
			  cli_policy_name(file), max);
	else if (r < 0)
		cli_error("%s: cannot read policy: %s", cli_policy_name(file), strerror(-r));
	return r;
}

/* "limits.memory" as the JSON path a diagnostic would name: "$.limits.memory". */
static void set_json_path(const char *assignment, char *buf, size_t size)
{
	size_t o = 0, klen = strcspn(assignment, "=");
	const char *p = assignment, *end = assignment + klen;

	o += (size_t)snprintf(buf, size, "$");
	while (p < end && o < size) {
		size_t n = strcspn(p, ".=");
		bool ident = n > 0 && n <= 64 && !(p[0] >= '0' && p[0] <= '9');

		for (size_t i = 0; i < n && ident; i++)
			ident = (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
				(p[i] >= '0' && p[i] <= '9') || p[i] == '_';
		if (ident) {
			o += (size_t)snprintf(buf + o, size - o, ".%.*s", (int)n, p);
		} else {
			o += (size_t)snprintf(buf + o, size - o, "[\"");
			for (size_t i = 0; i < n && o + 4 < size; i++) {
				if (p[i] == '"' || p[i] == '\\')
					buf[o++] = '\\';
				buf[o++] = p[i];
			}
			o += (size_t)snprintf(buf + o, size - o, "\"]");
		}
		p += n;
		if (*p == '.')
			p++;
	}
	if (o >= size)
		buf[size - 1] = '\0';
}

/* The last --set whose key is path or one of its parents, or NULL. */
static const char *set_of_path(char *const *sets, size_t n_sets, const char *path)
{
	for (size_t i = n_sets; i-- > 0;) {
		char sp[512];
		size_t n;

		set_json_path(sets[i], sp, sizeof(sp));
		n = strlen(sp);
		if (strncmp(path, sp, n) == 0 &&
		    (path[n] == '\0' || path[n] == '.' || path[n] == '['))
			return sets[i];
	}
	return NULL;
}

/* The last --set whose key lies below path (it made the object or array
 * the error is about), or NULL. */
static const char *set_below_path(char *const *sets, size_t n_sets, const char *path)
{
	size_t n = strlen(path);

	for (size_t i = n_sets; i-- > 0;) {
		char sp[512];

		set_json_path(sets[i], sp, sizeof(sp));
		if (strncmp(sp, path, n) == 0 && (sp[n] == '.' || sp[n] == '['))
			return sets[i];
	}
	return NULL;
}

/* True when the policy text is valid without any --set. */
static bool file_alone_valid(const char *buf, size_t len)
{
	_cleanup_(sc_plan_freep) sc_plan *plan = NULL;
	sc_diag d = {0};

	return plan_parse(buf, len, &plan, &d) == 0;
}

int cli_load_policy_sets(const char *file, char *const *sets, size_t n_sets, sc_plan **ret_plan,
			 char ret_digest[65])
{
	_cleanup_free_ char *buf = NULL, *orig = NULL;
	const char *name = cli_policy_name(file), *set;
	size_t orig_len = 0;
	size_t len = 0;
	sc_diag d = {0};
	int r;

	r = cli_read_policy(file, POLICY_MAX_BYTES, &buf, &len);
	if (r < 0)
		return r;
	if (n_sets > 0) {
		/* --set KEY=VALUE edits the JSON before validation, so the
		 * result is checked exactly like a policy file. */
		json_error_t jerr;
		json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
		char *out;

		if (!root) {
			cli_error("%s:%d:%d: %s", name, jerr.line, jerr.column, jerr.text);
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
		orig = TAKE_PTR(buf);
		orig_len = len;
		buf = out;
		len = strlen(out);
	}
	if (ret_digest)
		cli_sha256_hex(buf, len, ret_digest);
	r = plan_parse(buf, len, ret_plan, &d);
	if (r < 0) {
		/* Blame what wrote the value: a --set, or the file. */
		set = d.path[0] ? set_of_path(sets, n_sets, d.path) : NULL;
		/* An error about an object a --set wrote into: that --set's,
		 * when the file was valid without it. */
		if (!set && d.path[0] && orig) {
			set = set_below_path(sets, n_sets, d.path);
			if (set && !file_alone_valid(orig, orig_len))
				set = NULL;
		}
		if (set) {
			char what[600];

			snprintf(what, sizeof(what), "--set %s", set);
			cli_report_diag(what, &d);
		} else if (n_sets > 0 && d.line == 0) {
			char what[600];

			snprintf(what, sizeof(what), "%s (as changed by --set)", name);
			cli_report_diag(what, &d);
		} else {
			cli_report_diag(name, &d);
		}
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
	/* strtok_r would skip empty components: "." would set nothing at all. */
	if (key[0] == '.' || key[strlen(key) - 1] == '.' || strstr(key, "..")) {
		cli_error("--set %s: KEY is a dotted path of policy keys such as limits.memory, "
			  "and \"%s\" has an empty component",
			  assignment, key);
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		cli_error("--set %s: the policy is not a JSON object", assignment);
		return -EINVAL;
	}
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
		if (!next)
			return json_object_set_new(node, part, value) < 0 ? -ENOMEM : 0;
		if (!json_object_get(node, part))
			json_object_set_new(node, part, json_object());
		node = json_object_get(node, part);
		if (!json_is_object(node)) {
			cli_error("--set %s: \"%s\" holds %s, not an object with keys to set",
				  assignment, part, json_is_array(node) ? "an array" : "a value");
			json_decref(value);
			return -EINVAL;
		}
		part = next;
	}
	json_decref(value);
	return -EINVAL;
}

int cli_check_secrets(const sc_plan *p, const char *source, bool warn_only)
{
	int ret = 0;

	for (size_t i = 0; i < p->n_credentials; i++) {
		sc_diag d = {0};
		int r = plan_check_secret(p, i, &d);

		if (r >= 0)
			continue;
		if (warn_only)
			cli_error("warning: %s: %s: %s ('sandcap run' refuses to start without it)",
				  source, d.path, d.message);
		else
			cli_error("%s: %s: %s", source, d.path, d.message);
		if (!ret)
			ret = r;
	}
	return ret;
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
	explicit_bzero(key, sizeof(key));
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

int cli_read_audit_key(const char *file, uint8_t *key, size_t *len)
{
	int r = au_key_load(file, key);

	if (r < 0) {
		cli_error("%s: cannot use as an audit key: %s", file,
			  r == -EACCES	 ? "readable or writable by group or others (chmod 600 it)"
			  : r == -EINVAL ? "a key file holds exactly 32 raw bytes"
					 : strerror(-r));
		return r;
	}
	*len = AU_KEY_FILE_BYTES;
	return 0;
}

static void program_path(const char *name, const char *dir, const char *exe, char *buf, size_t len)
{
	_cleanup_close_ int fd = sibling_open(name, dir, O_PATH);
	char link[64];
	ssize_t n = -1;

	/* Its path, as exe is: a process exec'd through /proc/self/fd/N would
	 * be named "N" in ps. */
	if (fd >= 0 && len > 1) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, buf, len - 1);
	}
	if (n > 0 && (size_t)n < len - 1)
		buf[n] = '\0';
	else
		snprintf(buf, len, "%s", exe);
}

void cli_session_program(const char *exe, char *buf, size_t len)
{
	program_path("sandcap-run", SANDCAP_LIBEXECDIR, exe, buf, len);
}

void cli_exec_program(const char *exe, char *buf, size_t len)
{
	program_path("sandcap", SANDCAP_BINDIR, exe, buf, len);
}
