/* SPDX-License-Identifier: MIT */
/* sandcap workspace list | diff | apply | discard: the kept changes of cow grants. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/cleanup.h"
#include "cli/cli.h"
#include "compat/syscalls.h"
#include "core/run.h"
#include "workspace/workspace.h"

#define APPLY_FILES_PER_RECORD 2000u /* keeps a workspace.apply record far below AU_LINE_MAX */

static void usage(FILE *out)
{
	fprintf(out, "Usage: sandcap workspace list [--json]\n"
		     "       sandcap workspace diff ID [--stat | --patch]\n"
		     "       sandcap workspace apply ID [--force]\n"
		     "       sandcap workspace discard ID\n"
		     "\n"
		     "The changes a sandbox made to its \"cow\" grants, kept under the state\n"
		     "directory when it ended. diff compares them with the host folder as it is\n"
		     "now; apply writes them there (refused when a path it touches changed on\n"
		     "the host since the sandbox started, unless --force) and records it in a\n"
		     "sealed log chained to the run's; discard removes the workspace.\n");
}

static int state_dir(char *buf, size_t len)
{
	int r = sc_state_dir(geteuid() != 0, buf, len);

	if (r < 0)
		cli_error("no state directory (set HOME, XDG_STATE_HOME or SANDCAP_STATE_DIR)");
	return r;
}

static int report(int r, const sc_diag *d)
{
	cli_error("%s", d->message[0] ? d->message : strerror(-r));
	return 1;
}

static int cmd_list(bool json)
{
	char state[PATH_MAX];
	ws_meta *v = NULL;
	size_t n = 0;
	sc_diag d = {0};
	int r;

	if (state_dir(state, sizeof(state)) < 0)
		return 1;
	r = ws_list(state, &v, &n, &d);
	if (r < 0)
		return report(r, &d);
	if (json) {
		json_t *a = json_array();
		char *s;

		for (size_t i = 0; i < n; i++)
			(void)json_array_append_new(
			    a, json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "id", v[i].id,
					 "sandbox", v[i].sandbox, "path", v[i].grant_path, "at",
					 v[i].grant_at, "state", v[i].state, "files",
					 (json_int_t)v[i].files, "bytes", (json_int_t)v[i].bytes));
		s = json_dumps(a, JSON_COMPACT);
		printf("%s\n", s ? s : "[]");
		free(s);
		json_decref(a);
	} else {
		for (size_t i = 0; i < n; i++)
			printf("%-24s %-8s %6llu entries %10llu bytes  %s (seen at %s)\n", v[i].id,
			       v[i].state, (unsigned long long)v[i].files,
			       (unsigned long long)v[i].bytes, v[i].grant_path, v[i].grant_at);
	}
	for (size_t i = 0; i < n; i++)
		ws_meta_done(&v[i]);
	free(v);
	return 0;
}

/* The agent's bytes are printed as they are, except control characters. */
static void fput_path(const char *p, FILE *f)
{
	for (; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", (unsigned char)*p);
		else
			fputc(*p, f);
}

static void put_path(const char *p)
{
	fput_path(p, stdout);
}

static const char *type_word(char t)
{
	return t == 'd' ? "directory" : t == 'l' ? "symlink" : t == 'p' ? "FIFO" : "file";
}

static void print_change(const ws_change *c)
{
	printf("%c  ", ws_op_letter(c->op));
	if (c->op == WS_RENAMED) {
		put_path(c->from);
		printf(" -> ");
	}
	put_path(c->path);
	if (c->type == 'd' && c->op != WS_DELETED)
		putchar('/');
	if (c->op == WS_DELETED && c->old_type == 'd')
		putchar('/');
	if (c->type == 'l') {
		printf(" -> ");
		put_path(c->link);
		printf(" (symlink)");
	}
	if (c->op == WS_MODIFIED && c->old_type && c->old_type != c->type)
		printf(" (%s, was a %s)", type_word(c->type), type_word(c->old_type));
	if (c->op != WS_DELETED && c->op != WS_ADDED && c->old_mode != c->mode)
		printf(" (mode %04o -> %04o)", (unsigned)c->old_mode, (unsigned)c->mode);
	putchar('\n');
}

static int read_rel(int root, const char *rel, char **ret, size_t *ret_len)
{
	struct sc_open_how how = {.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
				  .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					     RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int fd = sys_openat2(root, rel, &how);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -EINVAL;
	return ws_read_all(fd, WS_DIFF_MAX_BYTES + 1, ret, ret_len);
}

/* One file's content diff, for --patch (out) or --stat (out NULL). */
static void content_diff(int upper, int lower, const ws_change *c, bool patch, size_t *add,
			 size_t *del, bool *binary)
{
	_cleanup_free_ char *a = NULL, *b = NULL, *an = NULL, *bn = NULL;
	size_t al = 0, bl = 0;
	const char *old = c->from ? c->from : c->path;
	bool old_file = c->old_type == 'f' && c->op != WS_ADDED;
	bool new_file = c->type == 'f' && c->op != WS_DELETED;

	*add = *del = 0;
	*binary = false;
	if ((old_file && read_rel(lower, old, &a, &al) < 0) ||
	    (new_file && read_rel(upper, c->path, &b, &bl) < 0)) {
		*binary = true;
		return;
	}
	if ((a && !ws_is_text(a, al)) || (b && !ws_is_text(b, bl))) {
		*binary = true;
		if (patch)
			printf("Binary files %s%s and %s%s differ\n", old_file ? "a/" : "",
			       old_file ? old : "/dev/null", new_file ? "b/" : "",
			       new_file ? c->path : "/dev/null");
		return;
	}
	if (asprintf(&an, "%s%s", old_file ? "a/" : "", old_file ? old : "/dev/null") < 0 ||
	    asprintf(&bn, "%s%s", new_file ? "b/" : "", new_file ? c->path : "/dev/null") < 0)
		return;
	(void)ws_text_diff(a ? a : "", al, b ? b : "", bl, an, bn, patch ? stdout : NULL, add, del);
}

static int cmd_diff(const char *id, int mode /* 0 list, 1 stat, 2 patch */)
{
	_cleanup_close_ int dir = -1, root = -1, upper = -1;
	char state[PATH_MAX];
	ws_changes ch = {0};
	ws_meta m = {0};
	sc_diag d = {0};
	size_t tadd = 0, tdel = 0;
	int r;

	if (state_dir(state, sizeof(state)) < 0)
		return 1;
	r = ws_open(state, id, &dir, &m, &d);
	if (r >= 0)
		r = ws_open_grant_root(&m, &root, &d);
	if (r < 0) {
		ws_meta_done(&m);
		return report(r, &d);
	}
	upper = openat(dir, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = upper < 0 ? -errno : ws_changes_compute(upper, root, &ch);
	if (r < 0) {
		cli_error("workspace %s: cannot compare it with %s: %s", id, m.grant_path,
			  strerror(-r));
		ws_meta_done(&m);
		return 1;
	}
	for (size_t i = 0; i < ch.n; i++) {
		const ws_change *c = &ch.v[i];
		size_t add = 0, del = 0;
		bool bin = false,
		     content = (c->type == 'f' || c->old_type == 'f') && c->op != WS_MODE;

		if (mode == 0) {
			print_change(c);
			continue;
		}
		if (mode == 1) {
			if (content)
				content_diff(upper, root, c, false, &add, &del, &bin);
			printf(" %c ", ws_op_letter(c->op));
			put_path(c->path);
			if (bin)
				printf(" | binary\n");
			else if (content)
				printf(" | +%zu -%zu\n", add, del);
			else
				printf(" | %s\n", type_word(c->type ? c->type : c->old_type));
			tadd += add;
			tdel += del;
			continue;
		}
		printf("diff --sandcap a/");
		put_path(c->from ? c->from : c->path);
		printf(" b/");
		put_path(c->path);
		putchar('\n');
		if (c->op == WS_RENAMED) {
			printf("rename from ");
			put_path(c->from);
			printf("\nrename to ");
			put_path(c->path);
			putchar('\n');
		}
		if (c->op == WS_ADDED)
			printf("new %s mode %04o\n", type_word(c->type), (unsigned)c->mode);
		else if (c->op == WS_DELETED)
			printf("deleted %s mode %04o\n", type_word(c->old_type),
			       (unsigned)c->old_mode);
		else if (c->old_mode != c->mode || c->old_type != c->type)
			printf("old mode %04o (%s)\nnew mode %04o (%s)\n", (unsigned)c->old_mode,
			       type_word(c->old_type), (unsigned)c->mode, type_word(c->type));
		if (c->old_link && c->op != WS_ADDED) {
			printf("old symlink -> ");
			put_path(c->old_link);
			putchar('\n');
		}
		if (c->link) {
			printf("symlink -> ");
			put_path(c->link);
			putchar('\n');
		}
		if (content)
			content_diff(upper, root, c, true, &add, &del, &bin);
	}
	if (mode == 1)
		printf(" %zu change(s), %zu insertion(s)(+), %zu deletion(s)(-)\n", ch.n, tadd,
		       tdel);
	ws_changes_done(&ch);
	ws_meta_done(&m);
	return 0;
}

/* A new log next to the run's: STATE/audit/ID.apply[.N].jsonl. */
static int open_apply_log(const char *state, const char *id, au_log **ret, char *path, size_t len)
{
	char dir[PATH_MAX];
	int r = -EEXIST;

	if ((size_t)snprintf(dir, sizeof(dir), "%.3900s/audit", state) >= sizeof(dir))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	for (unsigned n = 1; n < 1000 && r == -EEXIST; n++) {
		if (n == 1)
			snprintf(path, len, "%.3950s/%.64s.apply.jsonl", dir, id);
		else
			snprintf(path, len, "%.3950s/%.64s.apply.%u.jsonl", dir, id, n);
		r = au_open(path, NULL, 0, id, AUDIT_FSYNC_BOUNDARIES, ret);
	}
	return r;
}

/*
 * The record of an apply: workspace.apply records (the files in chunks),
 * each naming the run's log and its final hash (verified first), in a log
 * of their own, sealed (docs/audit.md, "workspace.apply").
 */
static int record_apply(const char *state, const ws_meta *m, const ws_apply_result *res, bool force,
			char *log_path, size_t len)
{
	au_verify_info info = {0};
	char reason[256] = "";
	size_t line = 0;
	au_log *log = NULL;
	int r;

	if (m->audit_log[0]) {
		_cleanup_fclose_ FILE *f = fopen(m->audit_log, "re");

		if (!f || au_verify_ex(f, NULL, 0, &info, &line, reason, sizeof(reason)) < 0)
			snprintf(info.last_hash, sizeof(info.last_hash), "%s", "");
	}
	r = open_apply_log(state, m->id, &log, log_path, len);
	if (r < 0)
		return r;
	for (size_t k = 0; k == 0 || k < res->n; k += APPLY_FILES_PER_RECORD) {
		json_t *files = json_array(), *conf = json_array();

		for (size_t i = k; i < res->n && i < k + APPLY_FILES_PER_RECORD; i++) {
			const ws_applied *a = &res->v[i];
			json_t *o = json_pack("{s:o, s:s}", "path",
					      au_str(a->path, strlen(a->path), AU_STR_MAX_BYTES),
					      "op", a->op);

			if (o && a->sha256[0])
				(void)json_object_set_new(o, "sha256", json_string(a->sha256));
			(void)json_array_append_new(files, o);
		}
		for (size_t i = 0; k == 0 && i < res->n_conflicts; i++)
			(void)json_array_append_new(
			    conf,
			    au_str(res->conflicts[i], strlen(res->conflicts[i]), AU_STR_MAX_BYTES));
		r = au_emit(log, "workspace.apply",
			    json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:o, s:o, s:I, s:I}",
				      "workspace", m->id, "sandbox", m->sandbox, "grant",
				      m->grant_path, "run_log", m->audit_log, "run_final_hash",
				      info.last_hash, "run_log_intact", info.last_hash[0] != 0,
				      "forced", force, "conflicts", conf, "files", files, "part",
				      (json_int_t)(k / APPLY_FILES_PER_RECORD + 1), "parts",
				      (json_int_t)(res->n ? (res->n + APPLY_FILES_PER_RECORD - 1) /
								APPLY_FILES_PER_RECORD
							  : 1)));
		if (r < 0 || res->n == 0)
			break;
	}
	if (r >= 0)
		r = au_seal(log);
	au_close(log);
	return r;
}

static int cmd_apply(const char *id, bool force)
{
	_cleanup_close_ int dir = -1, upper = -1;
	char state[PATH_MAX], log_path[PATH_MAX + 64];
	ws_apply_result res = {0};
	ws_meta m = {0};
	sc_diag d = {0};
	int r, rc = 0;

	if (state_dir(state, sizeof(state)) < 0)
		return 1;
	r = ws_open(state, id, &dir, &m, &d);
	if (r < 0)
		return report(r, &d);
	/* One apply at a time: the second would see the first's writes as
	 * conflicts, or write the same files twice. */
	if (flock(dir, LOCK_EX | LOCK_NB) < 0) {
		cli_error("workspace %s is being applied by another sandcap (%s)", id,
			  strerror(errno));
		ws_meta_done(&m);
		return 1;
	}
	if (strcmp(m.state, "applied") == 0) {
		cli_error("workspace %s was applied already (discard it, or it would be "
			  "applied twice)",
			  id);
		ws_meta_done(&m);
		return 1;
	}
	upper = openat(dir, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (upper < 0) {
		cli_error("workspace %s: upper: %s", id, strerror(errno));
		ws_meta_done(&m);
		return 1;
	}
	r = ws_apply(upper, &m, force, &res, &d);
	if (r == -EBUSY) {
		cli_error("%s", d.message);
		for (size_t i = 0; i < res.n_conflicts; i++) {
			fprintf(stderr, "  conflict: ");
			fput_path(res.conflicts[i], stderr);
			fputc('\n', stderr);
		}
		rc = 2;
	} else if (r < 0) {
		/* What was written before the failure is recorded all the same. */
		cli_error("%s (%zu path(s) were applied before it)", d.message, res.n);
		rc = 1;
	}
	if (r != -EBUSY) {
		int x = record_apply(state, &m, &res, force, log_path, sizeof(log_path));

		if (x < 0) {
			cli_error("applied, but the record could not be written: %s", strerror(-x));
			rc = 1;
		} else {
			fprintf(stderr, "sandcap: workspace %s: %zu path(s) applied to %s%s\n", id,
				res.n, m.grant_path,
				res.n_conflicts ? " (over conflicts: --force)" : "");
			fprintf(stderr, "  record: %s\n", log_path);
		}
		if (r >= 0) {
			snprintf(m.state, sizeof(m.state), "applied");
			(void)ws_meta_store(dir, &m);
		}
	}
	ws_apply_result_done(&res);
	ws_meta_done(&m);
	return rc;
}

static int cmd_discard(const char *id)
{
	char state[PATH_MAX];
	sc_diag d = {0};
	int r;

	if (state_dir(state, sizeof(state)) < 0)
		return 1;
	r = ws_discard(state, id, &d);
	if (r < 0)
		return report(r, &d);
	fprintf(stderr, "sandcap: workspace %s discarded\n", id);
	return 0;
}

int cmd_workspace(int argc, char **argv)
{
	const char *verb = argc > 1 ? argv[1] : NULL;
	bool json = false, force = false;
	int mode = 0;
	const char *id = NULL;

	if (!verb || strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0) {
		usage(verb ? stdout : stderr);
		return verb ? 0 : SC_EXIT_SETUP;
	}
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 && strcmp(verb, "list") == 0)
			json = true;
		else if (strcmp(argv[i], "--stat") == 0 && strcmp(verb, "diff") == 0)
			mode = 1;
		else if (strcmp(argv[i], "--patch") == 0 && strcmp(verb, "diff") == 0)
			mode = 2;
		else if (strcmp(argv[i], "--force") == 0 && strcmp(verb, "apply") == 0)
			force = true;
		else if (argv[i][0] != '-' && !id)
			id = argv[i];
		else {
			cli_error("workspace %s: unexpected argument '%s' (see 'sandcap workspace "
				  "--help')",
				  verb, argv[i]);
			return SC_EXIT_SETUP;
		}
	}
	if (strcmp(verb, "list") == 0 && !id)
		return cmd_list(json);
	if (!id) {
		cli_error("workspace %s: which workspace? (see 'sandcap workspace list')", verb);
		return SC_EXIT_SETUP;
	}
	if (strcmp(verb, "diff") == 0)
		return cmd_diff(id, mode);
	if (strcmp(verb, "apply") == 0)
		return cmd_apply(id, force);
	if (strcmp(verb, "discard") == 0)
		return cmd_discard(id);
	cli_error("unknown workspace command '%s' (see 'sandcap workspace --help')", verb);
	return SC_EXIT_SETUP;
}
