/* SPDX-License-Identifier: MIT */
/* A session's workspaces over the API: `sandcap workspace` on its cow
 * grants, live or kept after it stopped (docs/api.md, "Workspaces"). */
#include "serve/daemon.h"

#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "serve/backend.h"
#include "serve/request.h"
#include "serve/table.h"

/* ---- workspaces: `sandcap workspace` on the session's cow grants ---- */

/* Whether id is one of sandbox's workspaces: SANDBOX.N. */
static bool own_workspace(const char *sandbox, const char *id)
{
	size_t n = strlen(sandbox);

	if (!sandbox[0] || strncmp(id, sandbox, n) || id[n] != '.' || !id[n + 1])
		return false;
	return strspn(id + n + 1, "0123456789") == strlen(id + n + 1);
}

/*
 * /v1/sessions/ID/workspace[/diff|/apply|/discard]: the session's owner
 * only, while it runs or after it stopped (the daemon remembers whose its
 * kept workspaces are). ?workspace=SANDBOX.N picks one; without it the
 * session must have exactly one.
 */
int sv_handle_workspace(sv_conn *c, const sv_request *req, const char *name, const char *verb)
{
	const char *exe = c->d->cfg->exe, *wid = sv_request_query(req, "workspace");
	_cleanup_json_ json_t *list = NULL, *res = NULL;
	json_t *v, *entry = NULL;
	char sandbox[64];
	sv_session s;
	bool live = false;
	sv_error e;
	size_t i;
	int r, code = 0;

	if (sv_table_owner(&c->d->table, name, c->uid, sandbox, sizeof(sandbox), &live, &s) < 0)
		return sv_fail_reply(c, 404, "not_found", NULL, "no such sandbox");
	if (!sandbox[0])
		return sv_fail_reply(c, 404, "no_workspace", NULL, "this session has no workspace");
	if (wid && !own_workspace(sandbox, wid))
		return sv_fail_reply(c, 404, "no_workspace", "?workspace",
				     "no such workspace of this session (GET .../workspace lists "
				     "them)");
	if (sv_workspace_list(exe, sandbox, live && sv_pid_alive(s.pid) ? name : NULL, &list, &e) <
	    0)
		return sv_reply_error(c, &e);
	if (!verb)
		return sv_reply_json(c, 200,
				     json_pack("{s:s, s:O}", "id", name, "workspaces", list));
	json_array_foreach(list, i, v)
	{
		if (!wid || !strcmp(json_string_value(json_object_get(v, "id")) ?: "", wid))
			entry = v;
	}
	if (!wid && json_array_size(list) > 1)
		return sv_fail_reply(c, 400, "bad_request", "?workspace",
				     "this session has more than one workspace: name one "
				     "(?workspace=ID, GET .../workspace lists them)");
	if (!entry)
		return sv_fail_reply(c, 404, "no_workspace", NULL,
				     "no such workspace: this session's cow grants kept no change, "
				     "or it was discarded");
	wid = json_string_value(json_object_get(entry, "id"));
	if (!strcmp(verb, "diff")) {
		const char *patch = sv_request_query(req, "patch"),
			   *stat = sv_request_query(req, "stat");

		r = sv_workspace_diff(exe, wid,
				      patch && strcmp(patch, "0") ? "--patch"
				      : stat && strcmp(stat, "0") ? "--stat"
								  : NULL,
				      &res, &e);
		return r < 0 ? sv_reply_error(c, &e) : sv_reply_json(c, 200, json_incref(res));
	}
	if (!strcmp(verb, "discard")) {
		if (!strcmp(json_string_value(json_object_get(entry, "state")) ?: "", "live"))
			return sv_fail_reply(c, 409, "live", NULL,
					     "the session still runs: its workspace is kept "
					     "when it stops, and can be discarded then");
		if (sv_workspace_discard(exe, wid, &e) < 0)
			return sv_reply_error(c, &e);
		LOG(c->d, "uid %u discarded workspace %s of %s", (unsigned)c->uid, wid, name);
		return sv_reply_json(c, 200,
				     json_pack("{s:s, s:b}", "workspace", wid, "discarded", 1));
	}
	const char *force = sv_request_query(req, "force");

	r = sv_workspace_apply(exe, wid, force && strcmp(force, "0"), &res, &code, &e);
	LOG(c->d, "uid %u applied workspace %s of %s: exit %d", (unsigned)c->uid, wid, name, code);
	if (r >= 0)
		return sv_reply_json(c, 200, json_incref(res));
	/* the CLI's outcome, conflicts listed, with the error */
	_cleanup_json_ json_t *o = sv_error_json(&e);
	json_t *err = json_object_get(o, "error");

	if (err) {
		(void)json_object_set_new(err, "exit_code", json_integer(code));
		if (res)
			(void)json_object_set(err, "conflicts",
					      json_object_get(res, "conflicts") ?: json_array());
	}
	if (o && res)
		(void)json_object_set(o, "result", res);
	return sv_reply_json(c, e.status, json_incref(o));
}
