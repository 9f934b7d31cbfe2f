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
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/prune.h"
#include "base/cleanup.h"
#include "cli/cli.h"
#include "compat/syscalls.h"
#include "core/supervisor.h"
#include "session/session.h"
#include "workspace/workspace.h"

#define APPLY_FILES_PER_RECORD 2000u /* keeps a workspace.apply record far below AU_LINE_MAX */

static void usage(FILE *out)
{
	fprintf(out, "Usage: sandcap workspace list [--json]\n"
		     "       sandcap workspace diff ID [--stat | --patch] [--json]\n"
		     "       sandcap workspace apply ID [--force] [--json]\n"
		     "       sandcap workspace discard ID\n"
		     "       sandcap workspace prune --older-than AGE [--dry-run]\n"
		     "\n"
		     "The changes a sandbox made to its \"cow\" grants, kept under the state\n"
		     "directory when it ended. diff compares them with the host folder as it is\n"
		     "now; apply writes them there (refused when a path it touches changed on\n"
		     "the host since the sandbox started, unless --force) and records it in a\n"
		     "sealed log chained to the run's, what it will write before it starts;\n"
		     "an apply killed or stopped half-way is resumed by the next one. discard\n"
		     "removes the workspace. prune removes every workspace kept or last\n"
		     "applied more than AGE ago (30d, 12h, 90m, 45s), except one being applied;\n"
		     "--dry-run lists them and removes nothing. A run whose cow grant it never\n"
		     "wrote keeps no workspace. --json: diff and apply print one JSON object\n"
		     "(the changes, with --patch the patch; what apply wrote, conflicts).\n");
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
	if (c->op == WS_ADDED && c->origin)
		printf(" (in the folder at the start, gone from it now)");
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
static void content_diff(int upper, int lower, const ws_change *c, FILE *patch, size_t *add,
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
			fprintf(patch, "Binary files %s%s and %s%s differ\n", old_file ? "a/" : "",
				old_file ? old : "/dev/null", new_file ? "b/" : "",
				new_file ? c->path : "/dev/null");
		return;
	}
	if (asprintf(&an, "%s%s", old_file ? "a/" : "", old_file ? old : "/dev/null") < 0 ||
	    asprintf(&bn, "%s%s", new_file ? "b/" : "", new_file ? c->path : "/dev/null") < 0)
		return;
	(void)ws_text_diff(a ? a : "", al, b ? b : "", bl, an, bn, patch, add, del);
}

/* A workspace: one kept under the state directory, or a running session's. */
typedef struct ws_target {
	int dir;   /* kept: its directory; -1 for a live one */
	int upper; /* its upper layer (kept: upper/; live: the session's tmpfs) */
	ws_meta m;
	char session[SC_SESSION_NAME_MAX + 1]; /* live: the session, else "" */
} ws_target;

static void target_done(ws_target *t)
{
	t->dir = safe_close(t->dir);
	t->upper = safe_close(t->upper);
	ws_meta_done(&t->m);
}

/* The session that has workspace id, or whose name is id (and that has one
 * workspace): its name in session, the workspace's id in wid. */
static int find_live(const char *id, char *session, char *wid, sc_diag *d)
{
	_cleanup_json_ json_t *a = NULL;
	json_t *v, *w;
	size_t i, k;

	if (sc_session_list(&a) < 0)
		return -ENOENT;
	json_array_foreach(a, i, v)
	{
		const char *name = json_string_value(json_object_get(v, "name"));
		json_t *ids = json_object_get(v, "workspaces");

		if (!name)
			continue;
		json_array_foreach(ids, k, w)
		{
			const char *x = json_string_value(w);

			if (x && (strcmp(x, id) == 0 ||
				  (strcmp(name, id) == 0 && json_array_size(ids) == 1))) {
				snprintf(session, SC_SESSION_NAME_MAX + 1, "%s", name);
				snprintf(wid, WS_ID_MAX + 1, "%s", x);
				return 0;
			}
		}
		if (strcmp(name, id) == 0)
			return diag_fail(d, -ENOENT, "workspace",
					 json_array_size(ids)
					     ? "session %s has %zu workspaces: name one (sandcap "
					       "session list --json)"
					     : "session %s has no cow workspace",
					 id, json_array_size(ids));
	}
	return -ENOENT;
}

static int open_live(const char *id, ws_target *t, sc_diag *d)
{
	_cleanup_json_ json_t *meta = NULL;
	_cleanup_free_ char *text = NULL;
	char wid[WS_ID_MAX + 1], why[128];
	int r = find_live(id, t->session, wid, d);

	if (r < 0)
		return r;
	r = sc_session_workspace(t->session, wid, &meta, &t->upper);
	if (r < 0)
		return diag_fail(d, r, "workspace", "session %s: workspace %s: %s", t->session, wid,
				 strerror(-r));
	text = json_dumps(meta, JSON_COMPACT);
	r = text ? ws_meta_parse(text, strlen(text), &t->m, why, sizeof(why)) : -ENOMEM;
	if (r < 0)
		return diag_fail(d, r, "workspace", "session %s: workspace %s: %s", t->session, wid,
				 r == -ENOMEM ? strerror(ENOMEM) : why);
	return 0;
}

/* id: a kept workspace, else a running session's (by its id or the
 * session's name). */
static int open_target(const char *state, const char *id, ws_target *t, sc_diag *d)
{
	sc_diag live = {0};
	int r;

	*t = (ws_target){.dir = -1, .upper = -1};
	r = ws_open(state, id, &t->dir, &t->m, d);
	if (r == -ENOENT || r == -EINVAL) {
		int x = open_live(id, t, &live);

		if (x >= 0)
			return 0;
		if (live.message[0])
			*d = live;
		return r;
	}
	if (r < 0)
		return r;
	t->upper = openat(t->dir, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (t->upper < 0) {
		r = diag_fail(d, -errno, "workspace", "workspace %s: upper: %s", id,
			      strerror(errno));
		target_done(t);
	}
	return r;
}

static json_t *path_json(const char *p);

/* One change for diff --json: what the text form says, as keys. */
static json_t *change_json(const ws_change *c)
{
	json_t *o =
	    json_pack("{s:s#, s:o, s:s, s:i, s:i}", "op", (char[]){ws_op_letter(c->op)}, 1, "path",
		      path_json(c->path), "type", type_word(c->type ? c->type : c->old_type),
		      "mode", (int)c->mode, "old_mode", (int)c->old_mode);

	if (o && c->from)
		(void)json_object_set_new(o, "from", path_json(c->from));
	if (o && c->old_type && c->type && c->old_type != c->type)
		(void)json_object_set_new(o, "old_type", json_string(type_word(c->old_type)));
	if (o && c->link)
		(void)json_object_set_new(o, "link", path_json(c->link));
	if (o && c->op == WS_ADDED && c->origin)
		(void)json_object_set_new(o, "gone_from_host", json_true());
	return o;
}

/* diff --json: {"workspace", "grant", "changes": [...], "patch"?, "refused"}
 * on stdout; the same changes, in the same order, as the text form. */
static int cmd_diff(const char *id, int mode /* 0 list, 1 stat, 2 patch */, bool json)
{
	_cleanup_close_ int root = -1;
	_cleanup_json_ json_t *changes = NULL;
	_cleanup_free_ char *patch = NULL;
	size_t patch_len = 0;
	FILE *out = stdout;
	char state[PATH_MAX];
	ws_changes ch = {0};
	ws_target t;
	ws_meta m = {0};
	sc_diag d = {0};
	size_t tadd = 0, tdel = 0;
	int r, upper;

	if (state_dir(state, sizeof(state)) < 0)
		return 1;
	r = open_target(state, id, &t, &d);
	if (r < 0)
		return report(r, &d);
	m = t.m;
	upper = t.upper;
	r = ws_open_grant_root(&m, &root, &d);
	if (r < 0) {
		target_done(&t);
		return report(r, &d);
	}
	r = ws_changes_compute(upper, root, &ch);
	if (r < 0) {
		cli_error("workspace %s: cannot compare it with %s: %s", id, m.grant_path,
			  strerror(-r));
		target_done(&t);
		return 1;
	}
	if (json) {
		changes = json_array();
		if (mode == 2)
			out = open_memstream(&patch, &patch_len);
		if (!changes || !out) {
			cli_error("workspace %s: %s", id, strerror(ENOMEM));
			ws_changes_done(&ch);
			target_done(&t);
			return 1;
		}
	}
	for (size_t i = 0; i < ch.n; i++) {
		const ws_change *c = &ch.v[i];
		size_t add = 0, del = 0;
		bool bin = false,
		     content = (c->type == 'f' || c->old_type == 'f') && c->op != WS_MODE;

		if (json) {
			json_t *o = change_json(c);

			if (o && mode == 1 && content) {
				content_diff(upper, root, c, NULL, &add, &del, &bin);
				(void)json_object_set_new(o, "binary", json_boolean(bin));
				(void)json_object_set_new(o, "added",
							  json_integer((json_int_t)add));
				(void)json_object_set_new(o, "removed",
							  json_integer((json_int_t)del));
			}
			(void)json_array_append_new(changes, o);
			if (mode != 2)
				continue;
		} else if (mode == 0) {
			print_change(c);
			continue;
		}
		if (mode == 1) {
			if (content)
				content_diff(upper, root, c, NULL, &add, &del, &bin);
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
		fprintf(out, "diff --sandcap a/");
		fput_path(c->from ? c->from : c->path, out);
		fprintf(out, " b/");
		fput_path(c->path, out);
		fputc('\n', out);
		if (c->op == WS_RENAMED) {
			fprintf(out, "rename from ");
			fput_path(c->from, out);
			fprintf(out, "\nrename to ");
			fput_path(c->path, out);
			fputc('\n', out);
		}
		if (c->op == WS_ADDED)
			fprintf(out, "new %s mode %04o\n", type_word(c->type), (unsigned)c->mode);
		else if (c->op == WS_DELETED)
			fprintf(out, "deleted %s mode %04o\n", type_word(c->old_type),
				(unsigned)c->old_mode);
		else if (c->old_mode != c->mode || c->old_type != c->type)
			fprintf(out, "old mode %04o (%s)\nnew mode %04o (%s)\n",
				(unsigned)c->old_mode, type_word(c->old_type), (unsigned)c->mode,
				type_word(c->type));
		if (c->old_link && c->op != WS_ADDED) {
			fprintf(out, "old symlink -> ");
			fput_path(c->old_link, out);
			fputc('\n', out);
		}
		if (c->link) {
			fprintf(out, "symlink -> ");
			fput_path(c->link, out);
			fputc('\n', out);
		}
		if (content)
			content_diff(upper, root, c, out, &add, &del, &bin);
	}
	if (mode == 1 && !json)
		printf(" %zu change(s), %zu insertion(s)(+), %zu deletion(s)(-)\n", ch.n, tadd,
		       tdel);
	if (json) {
		_cleanup_json_ json_t *o = NULL;
		_cleanup_free_ char *text = NULL;

		if (out != stdout)
			(void)fclose(out);
		o = json_pack("{s:s, s:o, s:O, s:I}", "workspace", t.m.id, "grant",
			      path_json(m.grant_path), "changes", changes, "refused",
			      (json_int_t)ch.refused);
		if (o && mode == 2)
			(void)json_object_set_new(o, "patch",
						  au_str(patch ? patch : "", patch_len, patch_len));
		text = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (!text) {
			cli_error("workspace %s: %s", id, strerror(ENOMEM));
			ws_changes_done(&ch);
			target_done(&t);
			return 1;
		}
		printf("%s\n", text);
	}
	if (ch.refused) {
		fprintf(stderr,
			"sandcap: workspace %s: %zu entr(ies) not listed, their paths longer than "
			"apply can name (PATH_MAX); the first: ",
			id, ch.refused);
		fput_path(ch.refused_first, stderr);
		fputc('\n', stderr);
	}
	ws_changes_done(&ch);
	target_done(&t);
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

/* Lists of paths go into records in parts: at most this many entries and
 * (at four bytes a byte of an encoded path, the worst) bytes a record. */
#define APPLY_BYTES_PER_RECORD (512u << 10)

typedef struct chunker {
	json_t *chunks; /* arrays of at most one record's entries */
	json_t *cur;
	size_t bytes;
} chunker;

static void chunk_add(chunker *c, json_t *item, const char *path)
{
	size_t bytes = 4 * strlen(path) + 64;

	if (!c->chunks)
		c->chunks = json_array();
	if (!c->cur || json_array_size(c->cur) >= APPLY_FILES_PER_RECORD ||
	    c->bytes + bytes > APPLY_BYTES_PER_RECORD) {
		c->cur = json_array();
		(void)json_array_append_new(c->chunks, c->cur);
		c->bytes = 0;
	}
	(void)json_array_append_new(c->cur, item);
	c->bytes += bytes;
}

static json_t *path_json(const char *p)
{
	return au_str(p, strlen(p), AU_STR_MAX_BYTES);
}

/* One apply: its record (a log of its own) and what it resumes. */
typedef struct apply_ctx {
	const char *state;
	ws_meta *m;
	int dir; /* a kept workspace's directory, else -1 */
	bool force;
	const ws_intent *prior; /* an unfinished apply's, or NULL */
	ws_intent next;		/* this one's, once stored */
	au_log *log;		/* opened before the first write */
	char log_path[PATH_MAX + 64];
	char run_hash[AU_HASH_HEX + 1];
} apply_ctx;

/* The run's log, verified first: its final hash. */
static void run_final_hash(const ws_meta *m, char hash[AU_HASH_HEX + 1])
{
	au_verify_info info = {0};
	char reason[256] = "";
	size_t line = 0;

	hash[0] = '\0';
	if (m->audit_log[0]) {
		_cleanup_fclose_ FILE *f = fopen(m->audit_log, "re");

		if (f && au_verify_ex(f, NULL, 0, &info, &line, reason, sizeof(reason)) >= 0)
			snprintf(hash, AU_HASH_HEX + 1, "%s", info.last_hash);
	}
}

/* What every record of an apply says first. */
static json_t *apply_header(const apply_ctx *x)
{
	const ws_meta *m = x->m;

	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:s}", "workspace", m->id, "sandbox",
			 m->sandbox, "grant", m->grant_path, "run_log", m->audit_log,
			 "run_final_hash", x->run_hash, "run_log_intact", x->run_hash[0] != 0,
			 "forced", x->force, "resumes",
			 x->prior && x->prior->log ? x->prior->log : "");
}

static json_t *conflicts_json(const ws_apply_result *res)
{
	json_t *a = json_array();

	for (size_t i = 0; i < res->n_conflicts; i++)
		(void)json_array_append_new(a, path_json(res->conflicts[i]));
	return a;
}

static const char *intent_op(const ws_change *c)
{
	if (c->op == WS_DELETED)
		return "delete";
	switch (c->type) {
	case 'd':
		return c->op == WS_MODE ? "mode" : "mkdir";
	case 'l':
		return "symlink";
	case 'p':
		return "fifo";
	default:
		return "write";
	}
}

/* Emits the parts of chunks a and then b (arrays), each record's two
 * lists under ka and kb. */
static int emit_parts(apply_ctx *x, const char *event, json_t *extra, const char *ka, json_t *a,
		      const char *kb, json_t *b)
{
	size_t na = json_array_size(a), nb = json_array_size(b), parts = na + nb ? na + nb : 1;
	int r = 0;

	for (size_t k = 0; r >= 0 && k < parts; k++) {
		json_t *o = apply_header(x);

		if (!o)
			return -ENOMEM;
		(void)json_object_update(o, extra);
		(void)json_object_set_new(
		    o, ka, k < na ? json_incref(json_array_get(a, k)) : json_array());
		if (kb)
			(void)json_object_set_new(
			    o, kb,
			    k >= na && nb ? json_incref(json_array_get(b, k - na)) : json_array());
		if (k > 0)
			(void)json_object_set_new(o, "conflicts", json_array());
		(void)json_object_set_new(o, "part", json_integer((json_int_t)k + 1));
		(void)json_object_set_new(o, "parts", json_integer((json_int_t)parts));
		r = au_emit(x->log, event, o);
	}
	return r;
}

/*
 * Before the first write: the log of this apply with its intent (every
 * path it will change, and what an unfinished apply before it wrote),
 * durable, and the intent that a later apply resumes from.
 */
static int record_intent(const ws_changes *ch, const ws_apply_result *res, void *userdata)
{
	apply_ctx *x = userdata;
	chunker changes = {0}, in_place = {0};
	_cleanup_json_ json_t *extra = NULL;
	int r, fd = -1, dirfd = -1;

	run_final_hash(x->m, x->run_hash);
	r = open_apply_log(x->state, x->m->id, &x->log, x->log_path, sizeof(x->log_path));
	if (r < 0)
		return r;
	for (size_t i = 0; i < ch->n; i++) {
		const ws_change *c = &ch->v[i];

		chunk_add(&changes,
			  json_pack("{s:o, s:s}", "path", path_json(c->path), "op", intent_op(c)),
			  c->path);
		if (c->from)
			chunk_add(
			    &changes,
			    json_pack("{s:o, s:s}", "path", path_json(c->from), "op", "delete"),
			    c->from);
	}
	r = ws_intent_build(ch, res->conflicts, res->n_conflicts, x->prior, &x->next);
	for (size_t i = 0; r >= 0 && i < x->next.n; i++)
		if (x->next.v[i].flag == WS_INTENT_IN_PLACE)
			chunk_add(&in_place, path_json(x->next.v[i].path), x->next.v[i].path);
	extra =
	    json_pack("{s:o, s:I}", "conflicts", conflicts_json(res), "pid", (json_int_t)getpid());
	if (r >= 0)
		r = extra ? emit_parts(x, "workspace.apply.intent", extra, "changes",
				       changes.chunks, "in_place", in_place.chunks)
			  : -ENOMEM;
	json_decref(changes.chunks);
	json_decref(in_place.chunks);
	if (r >= 0)
		r = au_sync_detach(x->log, &fd, &dirfd);
	if (r >= 0 && (fsync(fd) < 0 || (dirfd >= 0 && fsync(dirfd) < 0)))
		r = -errno;
	(void)safe_close(fd);
	(void)safe_close(dirfd);
	if (r >= 0) {
		free(x->next.log);
		x->next.log = strdup(x->log_path);
		r = x->next.log ? ws_intent_store(x->state, x->m->id, &x->next) : -ENOMEM;
	}
	if (r >= 0 && x->dir >= 0) {
		/* Until it has finished: `workspace list` says so. */
		snprintf(x->m->state, sizeof(x->m->state), "applying");
		(void)ws_meta_store(x->dir, x->m);
	}
	return r;
}

/*
 * After the apply, whether it finished or failed: workspace.apply records
 * (what was written, in parts) into the log its intent went to, sealed
 * (docs/audit.md, "workspace.apply").
 */
static int record_apply(apply_ctx *x, const ws_apply_result *res, int err, const char *why)
{
	chunker files = {0};
	_cleanup_json_ json_t *extra = NULL;
	int r;

	for (size_t i = 0; i < res->n; i++) {
		const ws_applied *a = &res->v[i];
		json_t *o = json_pack("{s:o, s:s}", "path", path_json(a->path), "op", a->op);

		if (o && a->sha256[0])
			(void)json_object_set_new(o, "sha256", json_string(a->sha256));
		chunk_add(&files, o, a->path);
	}
	extra = json_pack("{s:o, s:s, s:s}", "conflicts", conflicts_json(res), "outcome",
			  err < 0 ? "failed" : "applied", "error", err < 0 ? why : "");
	r = extra ? emit_parts(x, "workspace.apply", extra, "files", files.chunks, NULL, NULL)
		  : -ENOMEM;
	json_decref(files.chunks);
	if (r >= 0)
		r = au_seal(x->log);
	x->log = au_close(x->log);
	return r;
}

/* A running session's workspace was applied: from now on only host changes
 * after t0 (the apply's end, so that what it wrote is not one) are
 * conflicts; the session's log says so. */
static void tell_session(const ws_target *t, const ws_apply_result *res, bool force,
			 const struct timespec *t0, const char *log_path)
{
	_cleanup_json_ json_t *req = json_pack(
	    "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:b, s:s}", "op", "workspace-applied", "workspace",
	    t->m.id, "epoch_sec", (json_int_t)t0->tv_sec, "epoch_nsec", (json_int_t)t0->tv_nsec,
	    "paths", (json_int_t)res->n, "conflicts", (json_int_t)res->n_conflicts, "changed",
	    (json_int_t)res->n_changed, "forced", force, "record", log_path);
	int r = req ? sc_session_workspace_applied(t->session, req) : -ENOMEM;

	if (r < 0)
		cli_error("session %s could not be told (its next apply may list conflicts): %s",
			  t->session, strerror(-r));
}

/* An unfinished apply of the workspace, to resume (0), or none (1). */
static int load_prior(const char *state, const ws_meta *m, ws_intent *prior)
{
	int r = ws_intent_load(state, m->id, prior);

	if (r == -ENOENT)
		return 1;
	if (r < 0) {
		cli_error("workspace %s: the record of an unfinished apply cannot be read (%s); "
			  "applying as if there were none",
			  m->id, strerror(-r));
		return 1;
	}
	fprintf(stderr,
		"sandcap: workspace %s: resuming the unfinished apply recorded in %s (%zu "
		"path(s) listed)\n",
		m->id, prior->log ? prior->log : "?", prior->n);
	return 0;
}

/*
 * The first tick of the clock inode times are taken from (the coarse one)
 * after every write of ours: each of our ctimes is before it, and a host
 * change from now on is at or after it. A fine-grained clock would put
 * the epoch after a host change made in the same tick, which would then
 * not be a conflict. Waits one tick at most (a few milliseconds).
 */
static void epoch_after_writes(struct timespec *ret)
{
	struct timespec now, next;

	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	for (int i = 0; i < 1000; i++) {
		clock_gettime(CLOCK_REALTIME_COARSE, &next);
		if (next.tv_sec != now.tv_sec || next.tv_nsec != now.tv_nsec)
			break;
		(void)nanosleep(&(struct timespec){.tv_nsec = 500000}, NULL);
	}
	*ret = next;
}

/* apply --json: what it did, on stdout, whatever its exit code. */
static void print_apply_json(const ws_target *t, const ws_apply_result *res, int rc,
			     const char *why, const char *record)
{
	_cleanup_json_ json_t *o = NULL, *paths = json_array(), *changed = json_array();
	_cleanup_free_ char *text = NULL;

	for (size_t i = 0; paths && i < res->n; i++)
		(void)json_array_append_new(
		    paths,
		    json_pack("{s:o, s:s}", "path", path_json(res->v[i].path), "op", res->v[i].op));
	for (size_t i = 0; changed && i < res->n_changed; i++)
		(void)json_array_append_new(changed, path_json(res->changed[i]));
	o = json_pack("{s:s, s:s, s:i, s:s, s:O, s:o, s:O, s:s, s:s}", "workspace", t->m.id,
		      "outcome",
		      rc == 0	? "applied"
		      : rc == 2 ? "conflicts"
				: "failed",
		      "exit_code", rc, "session", t->session, "paths", paths, "conflicts",
		      conflicts_json(res), "changed_during_apply", changed, "record", record,
		      "error", rc ? why : "");
	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	if (text)
		printf("%s\n", text);
}

static int cmd_apply(const char *id, bool force, bool json)
{
	char state[PATH_MAX];
	ws_apply_result res = {0};
	ws_intent prior = {0};
	struct timespec t0;
	ws_target t;
	apply_ctx x = {0};
	sc_diag d = {0};
	int r, rc = 0;

	if (state_dir(state, sizeof(state)) < 0)
		return 1;
	r = open_target(state, id, &t, &d);
	if (r < 0)
		return report(r, &d);
	/* One apply at a time: the second would see the first's writes as
	 * conflicts, or write the same files twice. */
	if (flock(t.dir >= 0 ? t.dir : t.upper, LOCK_EX | LOCK_NB) < 0) {
		cli_error("workspace %s is being applied by another sandcap (%s)", t.m.id,
			  strerror(errno));
		if (json)
			print_apply_json(&t, &res, 1, "being applied by another sandcap", "");
		target_done(&t);
		return 1;
	}
	if (!t.session[0] && strcmp(t.m.state, "applied") == 0) {
		cli_error("workspace %s was applied already (discard it, or it would be "
			  "applied twice)",
			  id);
		if (json)
			print_apply_json(&t, &res, 1, "applied already", "");
		target_done(&t);
		return 1;
	}
	x.state = state;
	x.m = &t.m;
	x.dir = t.dir;
	x.force = force;
	x.prior = load_prior(state, &t.m, &prior) == 0 ? &prior : NULL;
	r = ws_apply(t.upper, &t.m, force, x.prior, record_intent, &x, &res, &d);
	/* After every write of ours: the live workspace's next epoch. */
	epoch_after_writes(&t0);
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
		cli_error("%s (%zu path(s) were applied before it; apply again to resume)",
			  d.message, res.n);
		rc = 1;
	}
	for (size_t i = 0; i < res.n_changed; i++) {
		fprintf(stderr, "  changed during apply (apply again for its new content): ");
		fput_path(res.changed[i], stderr);
		fputc('\n', stderr);
	}
	if (x.log) {
		int y = record_apply(&x, &res, r, d.message);

		if (y < 0) {
			cli_error("applied, but the record could not be completed: %s",
				  strerror(-y));
			rc = 1;
		} else if (r >= 0) {
			size_t in_place = 0;

			for (size_t i = 0; i < x.next.n; i++)
				in_place += x.next.v[i].flag == WS_INTENT_IN_PLACE;
			fprintf(stderr, "sandcap: workspace %s: %zu path(s) applied to %s%s",
				t.m.id, res.n, t.m.grant_path,
				res.n_conflicts ? " (over conflicts: --force)" : "");
			if (x.prior)
				fprintf(stderr, "; %zu written by the unfinished apply before",
					in_place);
			fputc('\n', stderr);
		}
		fprintf(stderr, "  record: %s\n", x.log_path);
		if (r >= 0 && y >= 0)
			(void)ws_intent_remove(state, t.m.id);
		if (t.session[0] && r >= 0) {
			tell_session(&t, &res, force, &t0, y < 0 ? "" : x.log_path);
		} else if (r >= 0 && y >= 0) {
			snprintf(t.m.state, sizeof(t.m.state), "applied");
			(void)ws_meta_store(t.dir, &t.m);
		}
	}
	if (json)
		print_apply_json(&t, &res, rc, d.message, x.log_path);
	ws_intent_done(&x.next);
	ws_intent_done(&prior);
	ws_apply_result_done(&res);
	target_done(&t);
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

typedef struct prune_tally {
	const char *dir;
	bool dry_run;
	uint64_t removed, removed_bytes, busy, young, failed;
} prune_tally;

static void prune_print(const ws_pruned *w, void *userdata)
{
	prune_tally *t = userdata;
	char age[48];

	cli_age_text(time(NULL) - w->mtime, age, sizeof(age));
	switch (w->verdict) {
	case WS_PRUNE_REMOVED:
		t->removed++;
		t->removed_bytes += w->bytes;
		printf("%s %s/%s (%s, %llu entries, %llu bytes, last written %s ago)\n",
		       t->dry_run ? "would remove" : "removed", t->dir, w->id, w->state,
		       (unsigned long long)w->files, (unsigned long long)w->bytes, age);
		break;
	case WS_PRUNE_KEPT_BUSY:
		t->busy++;
		printf("kept %s/%s (being applied)\n", t->dir, w->id);
		break;
	case WS_PRUNE_KEPT_YOUNG:
		t->young++;
		break;
	case WS_PRUNE_FAILED:
	case _WS_PRUNE_VERDICT_MAX:
	case _WS_PRUNE_VERDICT_INVALID:
		t->failed++;
		cli_error("%s/%s: %s", t->dir, w->id, strerror(-w->err));
		break;
	}
}

/* sandcap workspace prune --older-than AGE [--dry-run]: as `audit prune`. */
static int cmd_prune(int argc, char **argv)
{
	char state[PATH_MAX - 16], dir[PATH_MAX];
	const char *age = NULL;
	prune_tally t = {0};
	uint64_t secs = 0;
	time_t now;
	int r;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--older-than") == 0 && i + 1 < argc)
			age = argv[++i];
		else if (strncmp(argv[i], "--older-than=", 13) == 0)
			age = argv[i] + 13;
		else if (strcmp(argv[i], "--dry-run") == 0)
			t.dry_run = true;
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			cli_error("workspace prune: unexpected argument '%s' (see 'sandcap "
				  "workspace --help')",
				  argv[i]);
			return SC_EXIT_SETUP;
		}
	}
	if (!age) {
		cli_error("workspace prune: --older-than AGE is required (e.g. --older-than 30d)");
		return SC_EXIT_SETUP;
	}
	r = pr_parse_age(age, &secs);
	if (r < 0 || secs == 0) {
		cli_error("workspace prune: --older-than '%s': expected a positive age with a "
			  "unit, d, h, m or s (e.g. 30d, 12h)%s",
			  age, r == -ERANGE ? " (too large)" : "");
		return SC_EXIT_SETUP;
	}
	if (state_dir(state, sizeof(state)) < 0)
		return SC_EXIT_SETUP;
	snprintf(dir, sizeof(dir), "%s/workspaces", state);
	t.dir = dir;
	now = time(NULL);
	r = ws_prune(state, secs >= (uint64_t)now ? 0 : now - (time_t)secs, t.dry_run, prune_print,
		     &t);
	if (r < 0) {
		cli_error("workspace prune: %s: %s", dir, strerror(-r));
		return SC_EXIT_SETUP;
	}
	printf("%s %llu workspace%s (%llu bytes) older than %s; kept %llu being applied, %llu "
	       "younger%s\n",
	       t.dry_run ? "would remove" : "removed", (unsigned long long)t.removed,
	       t.removed == 1 ? "" : "s", (unsigned long long)t.removed_bytes, age,
	       (unsigned long long)t.busy, (unsigned long long)t.young,
	       t.failed ? "; some could not be removed" : "");
	return t.failed ? 1 : 0;
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
	if (strcmp(verb, "prune") == 0)
		return cmd_prune(argc, argv);
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 &&
		    (strcmp(verb, "list") == 0 || strcmp(verb, "diff") == 0 ||
		     strcmp(verb, "apply") == 0))
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
		return cmd_diff(id, mode, json);
	if (strcmp(verb, "apply") == 0)
		return cmd_apply(id, force, json);
	if (strcmp(verb, "discard") == 0)
		return cmd_discard(id);
	cli_error("unknown workspace command '%s' (see 'sandcap workspace --help')", verb);
	return SC_EXIT_SETUP;
}
