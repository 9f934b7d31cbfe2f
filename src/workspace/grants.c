/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's side of cow grants and rw quotas for one run: set up on
 * the host before the sandbox exists (the overlays replace the grants'
 * detached trees, the quotas are set), finished once it is gone (the
 * upper layers are kept, the quotas lifted). run.c calls only these.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "audit/audit.h"
#include "base/diag.h"
#include "compat/syscalls.h"
#include "workspace/grants.h"
#include "workspace/ws-internal.h"

struct ws_run {
	size_t n;
	ws_cow *cow[POLICY_MAX_GRANTS];
	int quota_fd[POLICY_MAX_GRANTS]; /* rw grants whose quota we set, else -1 */
	uint32_t projid;
	json_t *start; /* for sandbox.start: what each grant got */
};

static int grant_diag(sc_diag *d, size_t i, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int grant_diag(sc_diag *d, size_t i, int err, const char *fmt, ...)
{
	char where[64], msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(where, sizeof(where), "$.fs.grants[%zu]", i);
	return diag_fail(d, err, where, "%s", msg);
}

static int setup_cow(ws_run *w, const plan_grant *g, size_t i, ns_source *src, uid_t agent_uid,
		     sc_diag *d)
{
	int mnt, r;

	r = ws_cow_open(g, i, src->fd, agent_uid, (gid_t)agent_uid, &w->cow[i], &mnt, d);
	if (r < 0)
		return r;
	/* The child attaches the overlay where it would have put the grant. */
	(void)close(src->fd);
	src->fd = mnt;
	return 0;
}

static int setup_quota(ws_run *w, const plan_grant *g, size_t i, bool unpriv, char *not_enforced,
		       size_t ne_len, sc_diag *d)
{
	struct sc_open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				  .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int fd = sys_openat2(AT_FDCWD, g->path, &how);
	char why[160];
	int r;

	if (fd < 0)
		return grant_diag(d, i, -errno, "quota of %s: %s", g->path, strerror(errno));
	if (unpriv)
		snprintf(why, sizeof(why), "setting a project quota needs root");
	else if (ws_quota_probe(fd, why, sizeof(why)) == WS_QUOTA_ENFORCED) {
		r = ws_quota_set(fd, w->projid, g->quota, g->inodes, NULL);
		if (r >= 0) {
			w->quota_fd[i] = TAKE_FD(fd);
			return 0;
		}
		snprintf(why, sizeof(why), "cannot set the project quota: %s", strerror(-r));
	}
	if (!g->best_effort)
		return grant_diag(d, i, -EOPNOTSUPP,
				  "rw grant %s has a quota, but %s; use \"mode\": \"cow\" (a "
				  "quota the kernel enforces on a private copy) or set "
				  "\"best_effort\": true in the grant to run without it",
				  g->path, why);
	if (not_enforced[0] == '\0')
		snprintf(not_enforced, ne_len, "fs.grants[%zu].quota: %s", i, why);
	return 1; /* not enforced */
}

/* ".N": a workspace id is the sandbox id and the grant's index. */
static const char *ws_index_suffix(size_t i)
{
	static __thread char buf[24];

	snprintf(buf, sizeof(buf), ".%zu", i);
	return buf;
}

int ws_run_setup(const sc_plan *p, ns_source *sources, bool unpriv, uid_t agent_uid,
		 const char *sandbox_id, uint32_t projid, ws_run **ret, char *not_enforced,
		 size_t ne_len, sc_diag *d)
{
	ws_run *w;
	int r = 0;

	*ret = NULL;
	for (size_t i = 0; i < p->n_grants; i++)
		if (p->grants[i].mode == GRANT_COW || p->grants[i].quota != PLAN_UNLIMITED)
			r = 1;
	if (!r)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->n = p->n_grants;
	w->projid = projid;
	w->start = json_array();
	for (size_t i = 0; i < POLICY_MAX_GRANTS; i++)
		w->quota_fd[i] = -1;
	*ret = w;
	for (size_t i = 0; i < p->n_grants; i++) {
		const plan_grant *g = &p->grants[i];
		json_t *rec = NULL;

		if (g->mode == GRANT_COW) {
			if (unpriv)
				return grant_diag(
				    d, i, -EPERM,
				    "cow grant %s: a cow workspace needs root here (the "
				    "upper layer must outlive the sandbox's user namespace to "
				    "be kept); run as root or use \"rw\"",
				    g->path);
			r = setup_cow(w, g, i, &sources[i], agent_uid, d);
			if (r < 0)
				return r;
			rec = json_pack("{s:s, s:s, s:I, s:s+}", "path", g->path, "mode", "cow",
					"quota", (json_int_t)g->quota, "workspace", sandbox_id,
					ws_index_suffix(i));
		} else if (g->quota != PLAN_UNLIMITED) {
			r = setup_quota(w, g, i, unpriv, not_enforced, ne_len, d);
			if (r < 0)
				return r;
			rec = json_pack("{s:s, s:s, s:I, s:s}", "path", g->path, "mode", "rw",
					"quota", (json_int_t)g->quota, "quota_state",
					r == 0 ? "enforced" : "not_enforced");
		}
		if (rec)
			(void)json_array_append_new(w->start, rec);
	}
	return 0;
}

json_t *ws_run_start_json(const ws_run *w)
{
	return w && json_array_size(w->start) ? json_incref(w->start) : NULL;
}

int ws_run_finish(ws_run *w, const char *state_dir, const char *sandbox_id, const char *audit_log,
		  char *ids, size_t ids_len, char *note, size_t note_len, json_t **ret_json,
		  sc_diag *d)
{
	json_t *arr = json_array();
	size_t n = 0;
	int r = 0;

	ids[0] = '\0';
	note[0] = '\0';
	*ret_json = NULL;
	if (!w) {
		json_decref(arr);
		return 0;
	}
	for (size_t i = 0; i < w->n; i++) {
		ws_meta m;
		json_t *o;
		int x;

		if (w->quota_fd[i] >= 0) {
			(void)ws_quota_clear(w->quota_fd[i], w->projid);
			w->quota_fd[i] = safe_close(w->quota_fd[i]);
		}
		if (!w->cow[i])
			continue;
		x = ws_cow_save(w->cow[i], state_dir, sandbox_id, audit_log, &m, d);
		if (x < 0) {
			r = x;
			continue;
		}
		if (x > 0) {
			/* Empty: not kept, and the record says so. */
			(void)json_array_append_new(arr, json_pack("{s:s, s:i, s:i, s:b}", "id",
								   m.id, "files", 0, "bytes", 0,
								   "kept", false));
			continue;
		}
		n += (size_t)snprintf(ids + n, n < ids_len ? ids_len - n : 0, "%s%s", n ? " " : "",
				      m.id);
		o = json_pack("{s:s, s:I, s:I}", "id", m.id, "files", (json_int_t)m.files, "bytes",
			      (json_int_t)m.bytes);
		if (o && m.refused) {
			/* Kept without these: said in the record and the summary. */
			(void)json_object_set_new(o, "refused",
						  json_integer((json_int_t)m.refused));
			(void)json_object_set_new(
			    o, "refused_first",
			    au_str(m.refused_first, strlen(m.refused_first), AU_STR_MAX_BYTES));
			(void)json_object_set_new(o, "refused_error",
						  json_string(strerror(-m.refused_err)));
			snprintf(note, note_len,
				 "%s kept without %llu subtree(s) (%s), the first: %.60s... (%zu "
				 "bytes)",
				 m.id, (unsigned long long)m.refused,
				 m.refused_err == -ENAMETOOLONG
				     ? "their paths are longer than apply can name, PATH_MAX"
				     : strerror(-m.refused_err),
				 m.refused_first, strlen(m.refused_first));
		}
		(void)json_array_append_new(arr, o);
		ws_meta_done(&m);
	}
	*ret_json = arr;
	return r;
}

ws_run *ws_run_free(ws_run *w)
{
	if (!w)
		return NULL;
	for (size_t i = 0; i < w->n; i++) {
		if (w->quota_fd[i] >= 0) {
			(void)ws_quota_clear(w->quota_fd[i], w->projid);
			(void)close(w->quota_fd[i]);
		}
		ws_cow_free(w->cow[i]);
	}
	json_decref(w->start);
	free(w);
	return NULL;
}

json_t *ws_run_ids_json(const ws_run *w, const char *sandbox_id)
{
	json_t *a = json_array();
	ws_meta m;

	for (size_t i = 0; a && w && i < w->n; i++)
		if (w->cow[i]) {
			ws_cow_meta(w->cow[i], sandbox_id, NULL, &m);
			(void)json_array_append_new(a, json_string(m.id));
		}
	return a;
}

ws_cow *ws_run_cow(ws_run *w, const char *sandbox_id, const char *id)
{
	ws_meta m;

	for (size_t i = 0; w && i < w->n; i++)
		if (w->cow[i]) {
			ws_cow_meta(w->cow[i], sandbox_id, NULL, &m);
			if (strcmp(m.id, id) == 0)
				return w->cow[i];
		}
	return NULL;
}
