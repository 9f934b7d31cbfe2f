/* SPDX-License-Identifier: MIT */
#include "serve/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <limits.h>
#include <malloc.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "base/base64.h"
#include "base/sha256.h"
#include "base/signals.h"
#include "policy/plan.h"
#include "serve/backend.h"
#include "audit/audit.h"
#include "serve/commands.h"
#include "serve/request.h"
#include "serve/table.h"
#include "session/session.h"
#include "token/token.h"

static int64_t now_ms(void)
{
	struct timespec t;

	(void)clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void sha256_hex(const char *s, size_t n, char out[65])
{
	uint8_t md[SHA256_BYTES];

	sha256_parts(s, n, "", 0, "", 0, md);
	for (unsigned i = 0; i < SHA256_BYTES; i++)
		(void)snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* Validates a policy and names it by the SHA-256 of its canonical JSON:
 * two spellings of one policy are the same policy (and share a pool).
 * Without check_host it looks at nothing but buf (plan_parse_json()). */
static int canonical_digest(const char *buf, size_t len, bool check_host, char out[65], sv_error *e)
{
	_cleanup_(sc_plan_freep) sc_plan *p = NULL;
	_cleanup_free_ char *canon = NULL;
	sc_diag d = {0};
	int r = check_host ? plan_parse(buf, len, &p, &d) : plan_parse_json(buf, len, &p, &d);

	if (r < 0)
		return sv_fail(e, 400, "policy_invalid", d.path[0] ? d.path : "$.policy", "%s",
			       d.message[0] ? d.message : strerror(-r));
	canon = plan_to_json(p);
	if (!canon)
		return sv_fail(e, 500, "internal", NULL, "out of memory");
	sha256_hex(canon, strlen(canon), out);
	return 0;
}

/* ---- responses ---- */

static bool alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

static void stop_quietly(sv_daemon *d, const char *name);

/* Takes a started session of pol and hands it out, or returns -EAGAIN
 * when none is ready. */
static int pool_take(sv_daemon *d, sv_pol *pol, sv_session *ret)
{
	int r = -EAGAIN;

	(void)pthread_mutex_lock(&d->pool_lock);
	while (pol->n_ready > 0) {
		sv_session s = pol->ready[--pol->n_ready];

		if (alive(s.pid)) {
			*ret = s;
			r = 0;
			break;
		}
		/* it ended on its own: refilled below */
	}
	(void)pthread_cond_broadcast(&d->pool_cond);
	(void)pthread_mutex_unlock(&d->pool_lock);
	/* Its limits (wall, idle) start at the hand-out, not while it waited. */
	if (r == 0 && sc_session_begin(ret->name) < 0) {
		LOG(d, "pool %s: %s could not be handed out; starting another", pol->name,
		    ret->name);
		stop_quietly(d, ret->name);
		r = -EAGAIN;
	}
	return r;
}

static int start_session(sv_daemon *d, const char *file, const char *label, const char *digest,
			 bool pooled, sv_session *ret, sv_error *e)
{
	_cleanup_json_ json_t *info = NULL;
	char name[SV_NAME_MAX];
	const char *audit;
	int r = sv_new_name("api-", name, sizeof(name));

	if (r < 0)
		return sv_fail(e, 500, "internal", NULL, "no random name: %s", strerror(-r));
	r = sv_session_start(d->cfg->session_exe ?: d->cfg->exe, file, name, pooled, &info, e);
	if (r < 0)
		return r;
	memset(ret, 0, sizeof(*ret));
	(void)snprintf(ret->name, sizeof(ret->name), "%s",
		       json_string_value(json_object_get(info, "name")) ?: name);
	(void)snprintf(ret->policy, sizeof(ret->policy), "%s", label);
	(void)snprintf(ret->digest, sizeof(ret->digest), "%s", digest);
	audit = json_string_value(json_object_get(info, "audit"));
	(void)snprintf(ret->audit, sizeof(ret->audit), "%s", audit ? audit : "");
	ret->pid = (pid_t)json_integer_value(json_object_get(info, "pid"));
	(void)snprintf(ret->sandbox, sizeof(ret->sandbox), "%s",
		       json_string_value(json_object_get(info, "sandbox")) ?: "");
	if (json_is_object(json_object_get(info, "serve"))) {
		_cleanup_free_ char *sv = json_dumps(json_object_get(info, "serve"), JSON_COMPACT);

		if (sv && strlen(sv) < sizeof(ret->serve))
			memcpy(ret->serve, sv, strlen(sv) + 1);
	}
	ret->created_ms = now_ms();
	return 0;
}

static void stop_quietly(sv_daemon *d, const char *name)
{
	sv_error e;

	if (sv_session_stop(d->cfg->exe, name, NULL, &e) < 0)
		LOG(d, "stopping %s: %s", name, e.message);
}

/* Keeps every pool full: one start at a time, never more than its size
 * (ready + starting), and drops sessions that ended on their own. */
static void *pool_main(void *arg)
{
	sv_daemon *d = arg;

	(void)pthread_mutex_lock(&d->pool_lock);
	while (!d->stopping) {
		sv_pol *want = NULL;
		time_t now = time(NULL);

		for (size_t i = 0; i < d->n_pols && !want; i++) {
			sv_pol *p = &d->pols[i];

			for (size_t k = 0; k < p->n_ready;)
				if (!alive(p->ready[k].pid))
					p->ready[k] = p->ready[--p->n_ready];
				else
					k++;
			if (p->n_ready + p->filling < p->size && now >= p->retry_at)
				want = p;
		}
		if (!want) {
			struct timespec until;

			(void)clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += 1;
			(void)pthread_cond_timedwait(&d->pool_cond, &d->pool_lock, &until);
			continue;
		}
		want->filling++;
		(void)pthread_mutex_unlock(&d->pool_lock);
		sv_session s;
		sv_error e;
		int r = start_session(d, want->file, want->name, want->digest, true, &s, &e);

		(void)pthread_mutex_lock(&d->pool_lock);
		want->filling--;
		if (r < 0) {
			LOG(d, "pool %s: %s (retrying in %d s)", want->name, e.message,
			    SV_POOL_RETRY_S);
			want->retry_at = time(NULL) + SV_POOL_RETRY_S;
			continue;
		}
		s.from_pool = true;
		if (d->stopping) {
			(void)pthread_mutex_unlock(&d->pool_lock);
			stop_quietly(d, s.name);
			(void)pthread_mutex_lock(&d->pool_lock);
			break;
		}
		want->ready[want->n_ready++] = s;
	}
	(void)pthread_mutex_unlock(&d->pool_lock);
	return NULL;
}

/* ---- requests ---- */

static sv_pol *find_policy_name(sv_daemon *d, const char *name)
{
	for (size_t i = 0; i < d->n_pols; i++)
		if (!strcmp(d->pols[i].name, name))
			return &d->pols[i];
	return NULL;
}

static sv_pol *find_policy_digest(sv_daemon *d, const char *digest)
{
	for (size_t i = 0; i < d->n_pols; i++)
		if (!strcmp(d->pols[i].digest, digest))
			return &d->pols[i];
	return NULL;
}

/* Writes a policy for `session start` into the daemon's private directory. */
static int write_temp_policy(sv_daemon *d, const char *text, char *path, size_t size)
{
	_cleanup_close_ int fd = -1;
	char name[40];
	int r = sv_new_name("p-", name, sizeof(name));

	if (r < 0)
		return r;
	if ((size_t)snprintf(path, size, "%s/%s.json", d->tmpdir, name) >= size)
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = io_write_all(fd, text, strlen(text));
	if (r < 0)
		(void)unlink(path);
	return r;
}

static int verify_token(sv_daemon *d, const char *token, char **ret_canon, tk_info *info,
			sv_error *e)
{
	_cleanup_(sc_plan_freep) sc_plan *p = NULL;
	sc_diag diag = {0};
	int r;

	if (!d->has_key)
		return sv_fail(e, 400, "tokens_disabled", "$.token",
			       "this daemon takes no tokens (it was started without --token-key)");
	r = tk_verify(token, d->key, time(NULL), &p, info, &diag);
	if (r < 0)
		return sv_fail(e, 403, "token_invalid", diag.path[0] ? diag.path : "$.token", "%s",
			       diag.message[0] ? diag.message : strerror(-r));
	*ret_canon = plan_to_json(p);
	return *ret_canon ? 0 : sv_fail(e, 500, "internal", NULL, "out of memory");
}

/* A JSON object of strings, at most max bytes as JSON, into out. */
static int string_map(json_t *o, const char *key, char *out, size_t max, bool env, sv_error *e)
{
	json_t *m = json_object_get(o, key), *v;
	_cleanup_free_ char *s = NULL;
	char path[96];
	const char *k;

	out[0] = 0;
	if (!m || json_is_null(m))
		return 0;
	(void)snprintf(path, sizeof(path), "$.%s", key);
	if (!json_is_object(m))
		return sv_fail(e, 400, "bad_request", path, "expected an object of strings");
	json_object_foreach(m, k, v)
	{
		if (!json_is_string(v) || !k[0] || strlen(k) > 256 ||
		    (env &&
		     (strchr(k, '=') || strlen(json_string_value(v)) != json_string_length(v))))
			return sv_fail(e, 400, "bad_request", path,
				       "\"%.64s\": expected a name and a string", k);
	}
	s = json_dumps(m, JSON_COMPACT);
	if (!s || strlen(s) >= max)
		return sv_fail(e, 400, "too_large", path, "at most %zu bytes as JSON", max - 1);
	strcpy(out, s);
	return 0;
}

/* A create's timeout, envs and metadata (their use: after the start). */
static int create_options(json_t *body, sv_session *s, sv_error *e)
{
	json_t *t = json_object_get(body, "timeout");
	int r;

	memset(s, 0, sizeof(*s));
	if (t && !json_is_null(t) &&
	    (!json_is_integer(t) || json_integer_value(t) < 1 ||
	     json_integer_value(t) > 10 * 366 * 86400LL))
		return sv_fail(e, 400, "bad_request", "$.timeout",
			       "expected whole seconds from 1 to ten years");
	r = string_map(body, "envs", s->envs, sizeof(s->envs), true, e);
	if (r >= 0)
		r = string_map(body, "metadata", s->metadata, sizeof(s->metadata), false, e);
	return r;
}

/* The session's wall clock ends seconds from now (session op "timeout"). */
static int set_timeout(sv_daemon *d, const char *name, int64_t seconds, sv_error *e)
{
	_cleanup_json_ json_t *req =
	    json_pack("{s:s, s:I}", "op", "timeout", "seconds", (json_int_t)seconds);
	_cleanup_json_ json_t *reply = NULL;
	int r = req ? sc_session_request(name, req, NULL, &reply, NULL, 0, NULL) : -ENOMEM;

	if (r == -EREMOTEIO) {
		json_t *err = json_object_get(reply, "error");

		return sv_fail(e, 400, "bad_request", "$.timeout", "%s",
			       json_string_value(json_object_get(err, "message")) ?: "refused");
	}
	if (r < 0)
		return sv_fail(e, 500, "session_failed", NULL, "the session: %s", strerror(-r));
	sv_table_set_end(&d->table, name, now_ms() + seconds * 1000);
	return 0;
}

/* Resolves the body of a create into the policy file to start from. */
static int create_session(sv_conn *c, const sv_request *req, sv_session *ret, sv_error *e)
{
	sv_daemon *d = c->d;
	_cleanup_json_ json_t *body = NULL;
	_cleanup_free_ char *text = NULL;
	json_error_t je;
	json_t *pol, *tok, *v;
	const char *key, *file = NULL;
	char label[256], digest[65], tmp[PATH_MAX] = "";
	sv_pol *entry = NULL;
	int r;

	body = json_loadb(req->body ? req->body : "", req->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(body))
		return sv_fail(e, 400, "bad_json", "$", "line %d column %d: %s", je.line, je.column,
			       body ? "expected an object" : je.text);
	json_object_foreach(body, key, v)
	{
		if (strcmp(key, "policy") && strcmp(key, "token") && strcmp(key, "timeout") &&
		    strcmp(key, "envs") && strcmp(key, "metadata"))
			return sv_fail(e, 400, "bad_request", "$",
				       "unknown key \"%.64s\" (expected policy or token, timeout, "
				       "envs, metadata)",
				       key);
	}
	r = create_options(body, ret, e);
	if (r < 0)
		return r;
	pol = json_object_get(body, "policy");
	tok = json_object_get(body, "token");
	if (!!pol == !!tok)
		return sv_fail(e, 400, "bad_request", "$", "expected exactly one of policy, token");
	if (json_is_string(pol)) {
		entry = find_policy_name(d, json_string_value(pol));
		if (!entry)
			return sv_fail(e, 404, "unknown_policy", "$.policy",
				       "no policy \"%.128s\" here (GET /v1/policies lists them)",
				       json_string_value(pol));
		(void)snprintf(label, sizeof(label), "%s", entry->name);
	} else if (json_is_object(pol)) {
		bool trusted = c->uid == 0 || d->cfg->allow_inline;

		text = json_dumps(pol, JSON_COMPACT);
		if (!text)
			return sv_fail(e, 500, "internal", NULL, "out of memory");
		/* Authorized first: a caller that may not send its own policy is
		 * told only that, whatever the policy names on the host. Its
		 * policy is parsed without looking at the host (an offered one
		 * was checked at start), so that no answer, nor its absence,
		 * tells whether a path exists. */
		r = canonical_digest(text, strlen(text), trusted, digest, trusted ? e : NULL);
		entry = r < 0 ? NULL : find_policy_digest(d, digest);
		if (!entry && !trusted)
			return sv_fail(e, 403, "forbidden", "$.policy",
				       "inline policies are taken from root only; name one of "
				       "GET /v1/policies or send a token");
		if (r < 0)
			return r;
		(void)snprintf(label, sizeof(label), "%s", entry ? entry->name : "inline");
	} else if (json_is_string(tok)) {
		tk_info info;

		r = verify_token(d, json_string_value(tok), &text, &info, e);
		if (r < 0)
			return r;
		sha256_hex(text, strlen(text), digest);
		entry = find_policy_digest(d, digest);
		(void)snprintf(label, sizeof(label), "token:%s", info.id);
	} else
		return sv_fail(e, 400, "bad_request", pol ? "$.policy" : "$.token",
			       pol ? "expected a policy name or a policy object"
				   : "expected a token string");

	sv_session opts = *ret;

	r = sv_table_reserve(&d->table, c->uid, d->cfg->quota);
	if (r == -EDQUOT)
		return sv_fail(e, 429, "quota_exceeded", NULL,
			       "uid %u has %u live sandboxes, its quota", (unsigned)c->uid,
			       d->cfg->quota);
	if (r < 0)
		return sv_fail(e, 503, "unavailable", NULL, "the daemon holds too many sandboxes");

	if (entry && entry->size && pool_take(d, entry, ret) == 0) {
		ret->uid = c->uid;
		ret->created_ms = now_ms(); /* its life, as the caller's, starts now */
		if (strncmp(label, "token:", 6) == 0)
			(void)snprintf(ret->policy, sizeof(ret->policy), "%s", label);
	} else {
		if (entry && !tok)
			file = entry->file;
		else {
			r = write_temp_policy(d, text, tmp, sizeof(tmp));
			if (r < 0) {
				sv_table_unreserve(&d->table, c->uid);
				return sv_fail(e, 500, "internal", NULL, "writing the policy: %s",
					       strerror(-r));
			}
			file = tmp;
		}
		r = start_session(d, file, label, entry ? entry->digest : digest, false, ret, e);
		if (tmp[0])
			(void)unlink(tmp);
		if (r < 0) {
			sv_table_unreserve(&d->table, c->uid);
			return r;
		}
		ret->uid = c->uid;
	}
	memcpy(ret->envs, opts.envs, sizeof(ret->envs));
	memcpy(ret->metadata, opts.metadata, sizeof(ret->metadata));
	r = sv_table_add(&d->table, ret, 0);
	if (r < 0) {
		stop_quietly(d, ret->name);
		return sv_fail(e, 503, "unavailable", NULL, "the daemon holds too many sandboxes");
	}
	json_t *t = json_object_get(body, "timeout");

	if (json_is_integer(t) && set_timeout(d, ret->name, json_integer_value(t), e) < 0) {
		sv_session gone;

		if (sv_table_remove(&d->table, ret->name, c->uid, &gone) == 0)
			stop_quietly(d, ret->name);
		return -EINVAL;
	}
	if (json_is_integer(t))
		ret->end_ms = now_ms() + json_integer_value(t) * 1000;
	return 0;
}

static int handle_create(sv_conn *c, const sv_request *req)
{
	sv_session s;
	sv_error e;

	if (create_session(c, req, &s, &e) < 0)
		return sv_reply_error(c, &e);
	LOG(c->d, "uid %u created %s (%s%s)", (unsigned)c->uid, s.name, s.policy,
	    s.from_pool ? ", from the pool" : "");
	return sv_reply_json(c, 201, sv_session_json(&s));
}

static int session_or_404(sv_conn *c, const char *id, sv_session *s)
{
	if (sv_table_get(&c->d->table, id, c->uid, s) == 0)
		return 0;
	(void)sv_fail_reply(c, 404, "not_found", NULL, "no such sandbox");
	return -ENOENT;
}

static int handle_stop(sv_conn *c, const char *id)
{
	json_t *info = NULL, *report = NULL, *o;
	sv_session s;
	sv_error e;

	if (sv_table_remove(&c->d->table, id, c->uid, &s) < 0)
		return sv_fail_reply(c, 404, "not_found", NULL, "no such sandbox");
	sv_cmds_forget(c->d->cmds, s.name);
	if (sv_session_stop(c->d->cfg->exe, s.name, &info, &e) < 0) {
		LOG(c->d, "stopping %s: %s", s.name, e.message);
		/* still the caller's, if it still runs: a stop may be tried again */
		if (alive(s.pid))
			(void)sv_table_add(&c->d->table, &s, 0);
		else
			sv_table_end(&c->d->table, &s);
		return sv_reply_error(c, &e);
	}
	sv_table_end(&c->d->table, &s);
	if (s.audit[0])
		(void)sv_audit_report(c->d->cfg->exe, s.audit, &report, NULL);
	o = sv_session_json(&s);
	(void)json_object_set_new(o, "stopped", info ? info : json_true());
	if (report)
		(void)json_object_set_new(o, "report", report);
	LOG(c->d, "uid %u stopped %s", (unsigned)c->uid, s.name);
	return sv_reply_json(c, 200, o);
}

int sv_query_path(sv_conn *c, const sv_request *req, bool required, const char **ret)
{
	const char *p = sv_request_query(req, "path");

	if (!p && !required) {
		*ret = "/";
		return 0;
	}
	if (!p || p[0] != '/' || strlen(p) >= PATH_MAX) {
		(void)sv_fail_reply(c, 400, "bad_path", "?path",
				    "expected ?path=ABSOLUTE-PATH inside the sandbox");
		return -EINVAL;
	}
	*ret = p;
	return 0;
}

static int handle_files(sv_conn *c, const sv_request *req, const sv_session *s, bool put)
{
	const char *path;
	sv_error e;

	if (sv_query_path(c, req, true, &path) < 0)
		return 0;
	if (put) {
		if (sv_session_put(c->d->cfg->exe, s->name, path, req->body, req->body_len, &e) < 0)
			return sv_reply_error(c, &e);
		return sv_reply_json(
		    c, 200,
		    json_pack("{s:s, s:I}", "path", path, "bytes", (json_int_t)req->body_len));
	}
	_cleanup_free_ char *data = NULL;
	size_t len = 0;

	if (sv_session_get(c->d->cfg->exe, s->name, path, &data, &len, &e) < 0)
		return sv_reply_error(c, &e);
	return sv_reply(c, 200, "application/octet-stream", data, len);
}

static int handle_audit(sv_conn *c, const sv_session *s)
{
	json_t *report = NULL;
	sv_error e;

	if (sv_audit_report(c->d->cfg->exe, s->audit, &report, &e) < 0)
		return sv_reply_error(c, &e);
	return sv_reply_json(
	    c, 200,
	    json_pack("{s:s, s:s, s:o}", "id", s->name, "audit", s->audit, "report", report));
}

static int handle_report_html(sv_conn *c, const sv_session *s)
{
	_cleanup_free_ char *html = NULL;
	size_t len = 0;
	sv_error e;

	if (!s->audit[0])
		return sv_fail_reply(c, 404, "not_found", NULL, "this session keeps no audit log");
	if (sv_audit_report_html(c->d->cfg->exe, s->audit, &html, &len, &e) < 0)
		return sv_reply_error(c, &e);
	return sv_reply(c, 200, "text/html; charset=utf-8", html, len);
}

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
static int handle_workspace(sv_conn *c, const sv_request *req, const char *name, const char *verb)
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
	if (sv_workspace_list(exe, sandbox, live && alive(s.pid) ? name : NULL, &list, &e) < 0)
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

/* ---- exec: NDJSON in chunked transfer encoding ---- */

typedef struct exec_stream {
	sv_child child;
	const sv_exec_req *req;
	size_t in_off;
	char *err;
	size_t err_len, err_cap;
	bool saw_final;
	char tail[32]; /* the end of the output so far: did the last line carry exit_code? */
} exec_stream;

/*
 * Relays the exec's NDJSON to the client as it comes, feeding its stdin.
 * Returns 0 when the exec ended, -EPIPE when the client went away (the
 * exec is killed: nobody reads its output, and its sandbox stays usable).
 */
static int relay_exec(sv_conn *c, exec_stream *x)
{
	char buf[SV_READ_CHUNK];

	while (x->child.out >= 0) {
		struct pollfd p[4] = {
		    {.fd = x->child.out, .events = POLLIN},
		    {.fd = x->child.err, .events = POLLIN},
		    {.fd = x->child.in, .events = POLLOUT},
		    {.fd = c->fd, .events = POLLRDHUP},
		};

		if (poll(p, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (p[3].revents & (POLLRDHUP | POLLHUP | POLLERR))
			return -EPIPE;
		if (p[2].revents) {
			ssize_t n = write(x->child.in, x->req->stdin_data + x->in_off,
					  x->req->stdin_len - x->in_off);

			if (n > 0)
				x->in_off += (size_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) ||
			    x->in_off == x->req->stdin_len)
				x->child.in = safe_close(x->child.in);
		}
		if (p[1].revents) {
			ssize_t n = read(x->child.err, buf, sizeof(buf));

			if (n <= 0)
				x->child.err = safe_close(x->child.err);
			else if (x->err_len + (size_t)n < SV_MAX_STDERR) {
				char *np = realloc(x->err, x->err_len + (size_t)n + 1);

				if (np) {
					memcpy(np + x->err_len, buf, (size_t)n);
					x->err_len += (size_t)n;
					np[x->err_len] = 0;
					x->err = np;
				}
			}
		}
		if (p[0].revents) {
			ssize_t n = read(x->child.out, buf, sizeof(buf));

			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				x->child.out = safe_close(x->child.out);
				break;
			}
			if (sv_send_chunk(c->fd, buf, (size_t)n) < 0)
				return -EPIPE;
			if (memmem(buf, (size_t)n, "\"exit_code\"", 11))
				x->saw_final = true;
		}
	}
	return 0;
}

static int handle_exec(sv_conn *c, const sv_request *req, const sv_session *s)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n";
	_cleanup_json_ json_t *body = NULL;
	_cleanup_free_ char **argv = NULL;
	sv_exec_req er = {0};
	exec_stream x = {.child = {.pid = 0, .in = -1, .out = -1, .err = -1}};
	json_error_t je;
	sv_error e;
	int r, st = 0;

	body = json_loadb(req->body ? req->body : "", req->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!body)
		return sv_fail_reply(c, 400, "bad_json", "$", je.text);
	if (sv_exec_req_from_json(body, &er, &e) < 0) {
		sv_exec_req_done(&er);
		return sv_reply_error(c, &e);
	}
	argv = sv_exec_argv(c->d->cfg->exe, s->name, &er);
	r = argv ? sv_child_spawn(c->d->cfg->exec_exe ?: c->d->cfg->exe, argv, er.has_stdin,
				  &x.child)
		 : -ENOMEM;
	if (r < 0) {
		sv_exec_req_done(&er);
		return sv_fail_reply(c, 500, "internal", NULL, strerror(-r));
	}
	sv_table_count_exec(&c->d->table, s->name);
	if (x.child.in >= 0) {
		(void)fcntl(x.child.in, F_SETFL, O_NONBLOCK);
		if (er.stdin_len == 0)
			x.child.in = safe_close(x.child.in);
	}
	x.req = &er;
	r = sv_send_all(c->fd, head, sizeof(head) - 1);
	if (r >= 0)
		r = relay_exec(c, &x);
	if (r < 0) {
		/* the client is gone: end the command rather than let it run unread */
		LOG(c->d, "uid %u left during an exec in %s: the command is stopped",
		    (unsigned)c->uid, s->name);
		sv_child_kill(&x.child, 2000);
		c->keep_alive = false;
	} else {
		(void)sv_child_wait(&x.child, &st);
		if (!x.saw_final) {
			sv_capture cap = {.err = x.err, .err_len = x.err_len, .status = st};
			char msg[512];

			sv_capture_message(&cap, msg, sizeof(msg));
			(void)sv_fail(&e, strstr(msg, "no session") ? 404 : 500, "exec_failed",
				      NULL, "%s", msg);
			r = sv_send_error_line(c->fd, &e);
		}
		if (r >= 0)
			r = sv_send_all(c->fd, "0\r\n\r\n", 5);
		if (r < 0)
			c->keep_alive = false;
	}
	free(x.err);
	sv_exec_req_done(&er);
	return 0;
}

/* ---- commands: execs the daemon holds (serve/commands.h) ---- */

static bool client_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/*
 * Streams a command's NDJSON: {"pid"} first, then its output and its end.
 * The primary reader (the request that started it) going away stops a
 * command in the foreground; a background one goes on.
 */
static int follow_command(sv_conn *c, sv_cmd *cmd, bool primary)
{
	_cleanup_free_ char *buf = malloc(SV_READ_CHUNK * 4);
	char first[64];
	uint64_t off = 0;
	int n = snprintf(first, sizeof(first), "{\"pid\":%u}\n", sv_cmd_pid(cmd));
	int r = buf ? sv_send_ndjson_head(c->fd) : -ENOMEM;

	if (r >= 0)
		r = sv_send_chunk(c->fd, first, (size_t)n);
	while (r >= 0) {
		ssize_t k =
		    sv_cmd_read(c->d->cmds, cmd, &off, buf, SV_READ_CHUNK * 4, 500, primary);

		if (k == -ENODATA)
			break;
		if (k > 0)
			r = sv_send_chunk(c->fd, buf, (size_t)k);
		else if (client_gone(c->fd))
			r = -EPIPE;
	}
	if (r >= 0)
		r = sv_send_all(c->fd, "0\r\n\r\n", 5);
	if (primary)
		sv_cmd_leave(c->d->cmds, cmd);
	if (r < 0)
		c->keep_alive = false;
	return 0;
}

/* "K=V" strings of the session's envs overlaid with the request's. */
static char **command_env(const sv_session *s, json_t *req_env, sv_error *e)
{
	_cleanup_json_ json_t *all = s->envs[0] ? json_loads(s->envs, 0, NULL) : json_object();
	const char *k;
	json_t *v;
	char **env;
	size_t i = 0;

	if (!all)
		return NULL;
	if (req_env && !json_is_null(req_env)) {
		if (!json_is_object(req_env)) {
			(void)sv_fail(e, 400, "bad_request", "$.envs",
				      "expected an object of strings");
			return NULL;
		}
		json_object_foreach(req_env, k, v)
		{
			if (!json_is_string(v) || !k[0] || strchr(k, '=') ||
			    strlen(json_string_value(v)) != json_string_length(v)) {
				(void)sv_fail(e, 400, "bad_request", "$.envs",
					      "\"%.64s\": expected a name and a string", k);
				return NULL;
			}
			(void)json_object_set(all, k, v);
		}
	}
	if (json_object_size(all) > SV_MAX_ENV) {
		(void)sv_fail(e, 400, "bad_request", "$.envs", "at most %u variables", SV_MAX_ENV);
		return NULL;
	}
	env = calloc(json_object_size(all) + 1, sizeof(*env));
	json_object_foreach(all, k, v)
	{
		if (!env || asprintf(&env[i], "%s=%s", k, json_string_value(v)) < 0) {
			for (size_t j = 0; env && j < i; j++)
				free(env[j]);
			free(env);
			(void)sv_fail(e, 500, "internal", NULL, "out of memory");
			return NULL;
		}
		i++;
	}
	return env;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* {"cols": C, "rows": R}, each 1-65535 (a struct winsize). */
static int pty_size(json_t *o, uint16_t *ret_rows, uint16_t *ret_cols)
{
	json_t *c = json_object_get(o, "cols"), *r = json_object_get(o, "rows");

	if (!json_is_object(o) || json_object_size(o) != 2 || !json_is_integer(c) ||
	    !json_is_integer(r) || json_integer_value(c) < 1 || json_integer_value(c) > 65535 ||
	    json_integer_value(r) < 1 || json_integer_value(r) > 65535)
		return -EINVAL;
	*ret_rows = (uint16_t)json_integer_value(r);
	*ret_cols = (uint16_t)json_integer_value(c);
	return 0;
}

/*
 * POST /v1/sessions/ID/commands {"argv", "cwd", "envs", "user", "timeout",
 * "background", "stdin", "tag", "pty"}: the command's NDJSON, {"pid"} first.
 * With "pty": {"cols", "rows"} it runs on a pty of the session's (the
 * tty exec of `sandcap exec -t`): its output is "pty" lines, its input
 * stays open, .../resize sets its size.
 */
static int handle_command_start(sv_conn *c, const sv_request *req, const sv_session *s)
{
	static const char *const keys[] = {"argv",	 "cwd",	  "envs", "user", "timeout",
					   "background", "stdin", "tag",  "pty",  NULL};
	_cleanup_json_ json_t *body = NULL, *info = NULL;
	_cleanup_free_ char **argv = NULL;
	char **env = NULL;
	json_t *a, *v, *t, *cwd, *user, *pty, *envs;
	uint16_t rows = 0, cols = 0;
	const char *k;
	sv_cmd *cmd = NULL;
	json_error_t je;
	char why[600];
	sv_error e;
	size_t n;
	int r;

	body = json_loadb(req->body ? req->body : "", req->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(body))
		return sv_fail_reply(c, 400, "bad_json", "$",
				     body ? "expected an object" : je.text);
	json_object_foreach(body, k, v)
	{
		bool ok = false;

		for (size_t i = 0; keys[i]; i++)
			ok = ok || !strcmp(k, keys[i]);
		if (!ok) {
			(void)sv_fail(&e, 400, "bad_request", "$", "unknown key \"%.64s\"", k);
			return sv_reply_error(c, &e);
		}
	}
	a = json_object_get(body, "argv");
	n = json_array_size(a);
	if (!json_is_array(a) || n < 1 || n > SV_MAX_ARGV)
		return sv_fail_reply(c, 400, "bad_request", "$.argv", "expected 1 to 1024 strings");
	argv = calloc(n + 1, sizeof(*argv));
	if (!argv)
		return sv_fail_reply(c, 500, "internal", NULL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		v = json_array_get(a, i);
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return sv_fail_reply(c, 400, "bad_request", "$.argv", "expected strings");
		argv[i] = (char *)json_string_value(v);
	}
	cwd = json_object_get(body, "cwd");
	if (cwd && !json_is_null(cwd) && (!json_is_string(cwd) || json_string_value(cwd)[0] != '/'))
		return sv_fail_reply(c, 400, "bad_path", "$.cwd", "expected an absolute path");
	/* One user inside: the agent (uid 1000), as every exec of the session. */
	user = json_object_get(body, "user");
	if (user && !json_is_null(user) &&
	    (!json_is_string(user) || strcmp(json_string_value(user), "user")))
		return sv_fail_reply(
		    c, 403, "forbidden", "$.user",
		    "commands run as the sandbox's one user, \"user\" (the agent, no "
		    "capability); there is no root inside");
	t = json_object_get(body, "timeout");
	if (t && !json_is_null(t) &&
	    (!json_is_number(t) || json_number_value(t) < 0 ||
	     json_number_value(t) > 10 * 366 * 86400.0))
		return sv_fail_reply(c, 400, "bad_request", "$.timeout",
				     "expected seconds, 0 for none");
	pty = json_object_get(body, "pty");
	if (pty && !json_is_null(pty) && pty_size(pty, &rows, &cols) < 0)
		return sv_fail_reply(c, 400, "bad_request", "$.pty",
				     "expected {\"cols\": N, \"rows\": N}, each from 1 to 65535");
	env = command_env(s, json_object_get(body, "envs"), &e);
	if (!env)
		return sv_reply_error(c, &e);
	envs = json_object_get(body, "envs");
	info = json_pack("{s:O, s:o, s:o}", "argv", a, "cwd",
			 json_is_string(cwd) ? json_incref(cwd) : json_null(), "envs",
			 envs ? json_incref(envs) : json_object());
	if (json_is_string(json_object_get(body, "tag")))
		(void)json_object_set(info, "tag", json_object_get(body, "tag"));
	if (json_is_object(pty))
		(void)json_object_set_new(info, "pty", json_true());
	sv_cmd_spec spec = {
	    .session = s->name,
	    .uid = c->uid,
	    .argv = argv,
	    .cwd = json_string_value(cwd),
	    .env = env,
	    .info = info,
	    .background = json_is_true(json_object_get(body, "background")),
	    .keep_stdin = json_is_true(json_object_get(body, "stdin")),
	    .timeout_ms = t ? (uint64_t)(json_number_value(t) * 1000.0) : 0,
	    .pty = json_is_object(pty),
	    .rows = rows,
	    .cols = cols,
	};
	r = sv_cmd_start(c->d->cmds, &spec, &cmd, why, sizeof(why));
	free_strv(env);
	if (r == -EUSERS)
		return sv_fail_reply(
		    c, 429, "quota_exceeded", NULL,
		    "this sandbox holds its most commands (64, running and just ended)");
	if (r == -EREMOTEIO)
		return sv_fail_reply(c, 409, "exec_failed", NULL, why);
	if (r < 0)
		return sv_fail_reply(c, r == -ENOENT ? 404 : 500, "exec_failed", NULL,
				     strerror(-r));
	sv_table_count_exec(&c->d->table, s->name);
	r = follow_command(c, cmd, true);
	sv_cmd_put(c->d->cmds, cmd);
	return r;
}

static int parse_pid(sv_conn *c, const char *s, unsigned *ret)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (!s[0] || *end || v == 0 || v > UINT32_MAX) {
		(void)sv_fail_reply(c, 404, "not_found", NULL, "no such command");
		return -EINVAL;
	}
	*ret = (unsigned)v;
	return 0;
}

/* GET/DELETE /v1/sessions/ID/commands/PID, POST .../PID/stdin and
 * .../PID/resize. */
static int handle_command(sv_conn *c, const sv_request *req, const sv_session *s, bool stdin_,
			  bool resize)
{
	const char *m = req->head.method;
	unsigned pid;
	sv_cmd *cmd;
	int r;

	if (parse_pid(c, req->segments[4], &pid) < 0)
		return 0;
	cmd = sv_cmd_find(c->d->cmds, s->name, c->uid, pid);
	if (!cmd)
		return sv_fail_reply(c, 404, "not_found", NULL, "no such command");
	if (resize) {
		_cleanup_json_ json_t *body = json_loadb(req->body ? req->body : "", req->body_len,
							 JSON_REJECT_DUPLICATES, NULL);
		uint16_t rows, cols;

		r = pty_size(body, &rows, &cols);
		if (r < 0)
			r = sv_fail_reply(
			    c, 400, "bad_request", "$",
			    "expected {\"cols\": N, \"rows\": N}, each from 1 to 65535");
		else if ((r = sv_cmd_resize(c->d->cmds, cmd, rows, cols)) == -ENOTTY)
			r = sv_fail_reply(c, 409, "no_pty", NULL,
					  "the command has no pty (start it with \"pty\")");
		else if (r < 0)
			r = sv_fail_reply(c, 404, "not_found", NULL, "the command has ended");
		else
			r = sv_reply_json(c, 200,
					  json_pack("{s:I, s:i, s:i}", "pid", (json_int_t)pid,
						    "cols", (int)cols, "rows", (int)rows));
	} else if (stdin_) {
		const char *eof = sv_request_query(req, "eof");

		r = sv_cmd_stdin(c->d->cmds, cmd, req->body, req->body_len,
				 eof && !strcmp(eof, "1"));
		r = r == -EPIPE	      ? sv_fail_reply(c, 409, "stdin_closed", NULL,
						      "its standard input is closed (start it with "
							    "\"stdin\": true)")
		    : r == -ETIMEDOUT ? sv_fail_reply(c, 408, "timeout", NULL,
						      "the command read nothing for 30 s")
		    : r < 0	      ? sv_fail_reply(c, 500, "internal", NULL, strerror(-r))
				      : sv_reply_json(c, 200,
						      json_pack("{s:I, s:I}", "pid", (json_int_t)pid, "bytes",
								(json_int_t)req->body_len));
	} else if (!strcmp(m, "DELETE")) {
		const char *sig = sv_request_query(req, "signal");
		int n = sig ? atoi(sig) : SIGKILL;

		if (n < 1 || n >= NSIG)
			r = sv_fail_reply(c, 400, "bad_request", "?signal",
					  "expected a signal number");
		else if (sv_cmd_kill(c->d->cmds, cmd, n) < 0)
			r = sv_fail_reply(c, 404, "not_found", NULL, "the command has ended");
		else
			r = sv_reply_json(
			    c, 200, json_pack("{s:I, s:b}", "pid", (json_int_t)pid, "killed", 1));
	} else
		r = follow_command(c, cmd, false);
	sv_cmd_put(c->d->cmds, cmd);
	return r;
}

/* POST /v1/sessions/ID/pause, .../resume: the session's freezer (op
 * "pause"/"resume"), its clocks stopped while paused. */
static int handle_pause(sv_conn *c, const sv_session *s, bool pause)
{
	_cleanup_json_ json_t *req = json_pack("{s:s}", "op", pause ? "pause" : "resume");
	_cleanup_json_ json_t *reply = NULL;
	sv_session now;
	int r = req ? sc_session_request(s->name, req, NULL, &reply, NULL, 0, NULL) : -ENOMEM;

	if (r == -EREMOTEIO)
		return sv_fail_reply(
		    c, 409, "unavailable", NULL,
		    json_string_value(json_object_get(json_object_get(reply, "error"), "message"))
			?: "refused");
	if (r < 0)
		return sv_fail_reply(c, 500, "session_failed", NULL, strerror(-r));
	sv_table_set_paused(&c->d->table, s->name, pause, now_ms());
	if (sv_table_get(&c->d->table, s->name, c->uid, &now) < 0)
		return sv_fail_reply(c, 404, "not_found", NULL, "no such session");
	return sv_reply_json(c, 200, sv_session_json(&now));
}

/* POST /v1/sessions/ID/timeout {"timeout": S}. */
static int handle_timeout(sv_conn *c, const sv_request *req, sv_session *s)
{
	_cleanup_json_ json_t *body = NULL;
	json_error_t je;
	json_t *t;
	sv_error e;

	body = json_loadb(req->body ? req->body : "", req->body_len, JSON_REJECT_DUPLICATES, &je);
	t = json_object_get(body, "timeout");
	if (!json_is_object(body) || json_object_size(body) != 1 || !json_is_integer(t) ||
	    json_integer_value(t) < 1 || json_integer_value(t) > 10 * 366 * 86400LL)
		return sv_fail_reply(c, 400, "bad_request", "$.timeout",
				     "expected {\"timeout\": whole seconds from 1}");
	if (set_timeout(c->d, s->name, json_integer_value(t), &e) < 0)
		return sv_reply_error(c, &e);
	s->end_ms = now_ms() + json_integer_value(t) * 1000;
	return sv_reply_json(c, 200, sv_session_json(s));
}

/* ---- files, through the session's own file operations ---- */

static int handle_health(sv_conn *c)
{
	json_t *pools = json_array();
	sv_daemon *d = c->d;

	(void)pthread_mutex_lock(&d->pool_lock);
	for (size_t i = 0; i < d->n_pols; i++)
		(void)json_array_append_new(
		    pools,
		    json_pack("{s:s, s:s, s:i, s:i, s:i}", "policy", d->pols[i].name, "digest",
			      d->pols[i].digest, "size", (int)d->pols[i].size, "ready",
			      (int)d->pols[i].n_ready, "starting", (int)d->pols[i].filling));
	(void)pthread_mutex_unlock(&d->pool_lock);
	return sv_reply_json(c, 200,
			     json_pack("{s:b, s:s, s:i, s:i, s:o}", "ok", 1, "version",
				       SANDCAP_VERSION, "uid", (int)c->uid, "quota",
				       (int)d->cfg->quota, "policies", pools));
}

static bool is(const sv_request *r, size_t i, const char *s)
{
	return i < r->n_segments && !strcmp(r->segments[i], s);
}

static int method_not_allowed(sv_conn *c, const char *allowed)
{
	char msg[96];

	(void)snprintf(msg, sizeof(msg), "allowed: %s", allowed);
	return sv_fail_reply(c, 405, "method_not_allowed", NULL, msg);
}

static int route(sv_conn *c, sv_request *req)
{
	const char *m = req->head.method;
	sv_session s;

	/* a body left unread (a streamed put not taken) cannot be told from the next request */
	if (req->stream_body && !(req->n_segments == 4 && is(req, 3, "files")))
		c->keep_alive = false;
	if (!is(req, 0, "v1"))
		return sv_fail_reply(c, 404, "not_found", NULL,
				     "no such endpoint (the API is /v1/...)");
	if (req->n_segments == 2 && (is(req, 1, "health") || is(req, 1, "policies")))
		return strcmp(m, "GET") ? method_not_allowed(c, "GET") : handle_health(c);
	if (!is(req, 1, "sessions"))
		return sv_fail_reply(c, 404, "not_found", NULL, "no such endpoint");
	if (req->n_segments == 2) {
		if (!strcmp(m, "GET"))
			return sv_reply_json(
			    c, 200,
			    json_pack("{s:o}", "sessions", sv_table_list(&c->d->table, c->uid)));
		if (!strcmp(m, "POST"))
			return handle_create(c, req);
		return method_not_allowed(c, "GET, POST");
	}
	if (req->n_segments == 3) {
		if (!strcmp(m, "DELETE"))
			return handle_stop(c, req->segments[2]);
		if (strcmp(m, "GET"))
			return method_not_allowed(c, "GET, DELETE");
		if (session_or_404(c, req->segments[2], &s) < 0)
			return 0;
		return sv_reply_json(c, 200, sv_session_json(&s));
	}
	if (req->n_segments >= 5 && req->n_segments <= 6 && is(req, 3, "commands")) {
		bool in = req->n_segments == 6, resize = in && is(req, 5, "resize");

		if (in && !is(req, 5, "stdin") && !resize)
			return sv_fail_reply(c, 404, "not_found", NULL, "no such endpoint");
		if (in ? strcmp(m, "POST") : strcmp(m, "GET") && strcmp(m, "DELETE"))
			return method_not_allowed(c, in ? "POST" : "GET, DELETE");
		if (session_or_404(c, req->segments[2], &s) < 0)
			return 0;
		return handle_command(c, req, &s, in && !resize, resize);
	}
	if ((req->n_segments == 4 || req->n_segments == 5) && is(req, 3, "workspace")) {
		const char *verb = req->n_segments == 5 ? req->segments[4] : NULL;
		bool get = !verb || !strcmp(verb, "diff");

		if (verb && strcmp(verb, "diff") && strcmp(verb, "apply") &&
		    strcmp(verb, "discard"))
			return sv_fail_reply(c, 404, "not_found", NULL, "no such endpoint");
		if (strcmp(m, get ? "GET" : "POST"))
			return method_not_allowed(c, get ? "GET" : "POST");
		return handle_workspace(c, req, req->segments[2], verb);
	}
	if (req->n_segments != 4)
		return sv_fail_reply(c, 404, "not_found", NULL, "no such endpoint");
	if (is(req, 3, "commands")) {
		if (strcmp(m, "GET") && strcmp(m, "POST"))
			return method_not_allowed(c, "GET, POST");
		if (session_or_404(c, req->segments[2], &s) < 0)
			return 0;
		if (!strcmp(m, "POST"))
			return handle_command_start(c, req, &s);
		return sv_reply_json(
		    c, 200,
		    json_pack("{s:o}", "commands", sv_cmds_list(c->d->cmds, s.name, c->uid)));
	}
	if (is(req, 3, "watch")) {
		if (strcmp(m, "GET"))
			return method_not_allowed(c, "GET");
		if (session_or_404(c, req->segments[2], &s) < 0)
			return 0;
		return sv_handle_watch(c, req, &s);
	}
	if (is(req, 3, "pause") || is(req, 3, "resume")) {
		if (strcmp(m, "POST"))
			return method_not_allowed(c, "POST");
		if (session_or_404(c, req->segments[2], &s) < 0)
			return 0;
		return handle_pause(c, &s, is(req, 3, "pause"));
	}
	if (is(req, 3, "timeout")) {
		if (strcmp(m, "POST"))
			return method_not_allowed(c, "POST");
		if (session_or_404(c, req->segments[2], &s) < 0)
			return 0;
		return handle_timeout(c, req, &s);
	}
	if (is(req, 3, "stat") || is(req, 3, "mkdir") || is(req, 3, "rename")) {
		bool get = is(req, 3, "stat");

		if (strcmp(m, get ? "GET" : "POST"))
			return method_not_allowed(c, get ? "GET" : "POST");
		if (session_or_404(c, req->segments[2], &s) < 0)
			return 0;
		return sv_handle_fs(c, req, &s, req->segments[3]);
	}
	if (is(req, 3, "exec")) {
		if (strcmp(m, "POST"))
			return method_not_allowed(c, "POST");
		if (session_or_404(c, req->segments[2], &s) < 0)
			return 0;
		return handle_exec(c, req, &s);
	}
	if (is(req, 3, "files")) {
		if (strcmp(m, "GET") && strcmp(m, "PUT") && strcmp(m, "DELETE"))
			return method_not_allowed(c, "GET, PUT, DELETE");
		if (session_or_404(c, req->segments[2], &s) < 0)
			return 0;
		if (!strcmp(m, "DELETE"))
			return sv_handle_fs(c, req, &s, "remove");
		if (!strcmp(m, "GET"))
			return sv_handle_get_stream(c, req, &s);
		if (req->stream_body)
			return sv_handle_put_stream(c, req, &s);
		return handle_files(c, req, &s, true);
	}
	if (is(req, 3, "report.html")) {
		if (strcmp(m, "GET"))
			return method_not_allowed(c, "GET");
		if (session_or_404(c, req->segments[2], &s) < 0)
			return 0;
		return handle_report_html(c, &s);
	}
	if (is(req, 3, "ls") || is(req, 3, "audit")) {
		if (strcmp(m, "GET"))
			return method_not_allowed(c, "GET");
		if (session_or_404(c, req->segments[2], &s) < 0)
			return 0;
		return is(req, 3, "ls") ? sv_handle_fs(c, req, &s, "ls") : handle_audit(c, &s);
	}
	return sv_fail_reply(c, 404, "not_found", NULL, "no such endpoint");
}

/* ---- who holds what: connections and buffers per uid ---- */

static sv_uid_use *use_of(sv_daemon *d, uid_t uid)
{
	for (size_t i = 0; i < d->n_uses; i++)
		if (d->uses[i].uid == uid)
			return &d->uses[i];
	return NULL;
}

/* The oldest idle connection of uid (own), or of anyone but root. */
static sv_conn *idle_victim(sv_daemon *d, uid_t uid, bool own)
{
	sv_conn *best = NULL;

	for (sv_conn *x = d->conn_list; x; x = x->next)
		if (x->idle && !x->evicted && (own ? x->uid == uid : x->uid != 0) &&
		    (!best || x->idle_since < best->idle_since))
			best = x;
	return best;
}

/* Closes v's connection from under its thread (its poll wakes up to an end
 * of file) and gives its place away at once. */
static void evict(sv_daemon *d, sv_conn *v)
{
	v->evicted = true;
	(void)shutdown(v->fd, SHUT_RDWR);
	use_of(d, v->uid)->evicting++;
	d->evicting++;
}

/*
 * Takes a connection place for c's uid: 0, -EUSERS when the uid holds its
 * share, -EMFILE when every place another uid may take is taken (root has
 * its reserve above that). An idle connection gives its place rather than
 * a new one be refused: the uid's own at its share, else anyone's.
 */
static int conn_admit(sv_daemon *d, sv_conn *c)
{
	sv_uid_use *u;
	sv_conn *v = NULL;
	int r = 0;

	(void)pthread_mutex_lock(&d->use_lock);
	u = use_of(d, c->uid);
	if (d->conns + 1 >= 2 * SV_MAX_CONNECTIONS)
		r = -EMFILE; /* evicted ones still closing: never more than this at once */
	else if (c->uid != 0 && u && u->conns - u->evicting >= SV_MAX_CONNECTIONS_PER_UID) {
		r = -EUSERS;
		v = idle_victim(d, c->uid, true);
	} else if (d->conns - d->evicting >= SV_MAX_CONNECTIONS ||
		   (c->uid != 0 &&
		    d->conns - d->evicting >= SV_MAX_CONNECTIONS - SV_ROOT_RESERVE)) {
		r = -EMFILE;
		v = idle_victim(d, c->uid, false);
	}
	if (v) {
		evict(d, v);
		r = 0;
	}
	if (r == 0) {
		if (!u) {
			u = &d->uses[d->n_uses++];
			*u = (sv_uid_use){.uid = c->uid};
		}
		u->conns++;
		d->conns++;
		c->next = d->conn_list;
		if (c->next)
			c->next->prev = c;
		d->conn_list = c;
	}
	(void)pthread_mutex_unlock(&d->use_lock);
	return r;
}

static void conn_release(sv_daemon *d, sv_conn *c)
{
	sv_uid_use *u;

	(void)pthread_mutex_lock(&d->use_lock);
	u = use_of(d, c->uid);
	if (c->prev)
		c->prev->next = c->next;
	else
		d->conn_list = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->evicted) {
		u->evicting--;
		d->evicting--;
	}
	d->conns--;
	if (--u->conns == 0)
		*u = d->uses[--d->n_uses];
	(void)pthread_mutex_unlock(&d->use_lock);
}

/* Marks c waiting for a request (idle), or busy with one; false when c
 * was evicted meanwhile. */
static bool conn_set_idle(sv_conn *c, bool idle)
{
	bool alive_;

	(void)pthread_mutex_lock(&c->d->use_lock);
	alive_ = !c->evicted;
	c->idle = idle && alive_;
	if (c->idle)
		c->idle_since = sv_mono_ms();
	(void)pthread_mutex_unlock(&c->d->use_lock);
	return alive_;
}

/* Closes every idle connection (at the daemon's end). */
static void close_idle(sv_daemon *d)
{
	(void)pthread_mutex_lock(&d->use_lock);
	for (sv_conn *x = d->conn_list; x; x = x->next)
		if (x->idle && !x->evicted)
			evict(d, x);
	(void)pthread_mutex_unlock(&d->use_lock);
}

static unsigned conns_now(sv_daemon *d)
{
	unsigned n;

	(void)pthread_mutex_lock(&d->use_lock);
	n = d->conns;
	(void)pthread_mutex_unlock(&d->use_lock);
	return n;
}

/* Accounts n more (grow) or fewer bytes of uid's request buffers; a growth
 * beyond uid's share (root has none) or the daemon's is refused. */
static bool buffered_change(sv_daemon *d, uid_t uid, size_t n, bool grow)
{
	sv_uid_use *u;
	bool ok = true;

	(void)pthread_mutex_lock(&d->use_lock);
	u = use_of(d, uid);
	if (!u)
		ok = false;
	else if (!grow) {
		u->buffered -= n;
		d->buffered -= n;
	} else if ((uid != 0 && u->buffered + n > SV_MAX_BUFFERED_PER_UID) ||
		   d->buffered + n > SV_MAX_BUFFERED)
		ok = false;
	else {
		u->buffered += n;
		d->buffered += n;
	}
	(void)pthread_mutex_unlock(&d->use_lock);
	return ok;
}

/* Sets c's buffer to cap bytes (cap > 0, at least c->len), within uid's share. */
static int conn_resize(sv_conn *c, size_t cap)
{
	char *p;

	if (cap == c->cap)
		return 0;
	if (cap > c->cap && !buffered_change(c->d, c->uid, cap - c->cap, true))
		return -ENOBUFS;
	p = realloc(c->buf, cap);
	if (!p) {
		if (cap > c->cap)
			(void)buffered_change(c->d, c->uid, cap - c->cap, false);
		return -ENOMEM;
	}
	if (cap < c->cap)
		(void)buffered_change(c->d, c->uid, c->cap - cap, false);
	c->buf = p;
	c->cap = cap;
	return 0;
}

static void conn_free_buffer(sv_conn *c)
{
	free(c->buf);
	c->buf = NULL;
	(void)buffered_change(c->d, c->uid, c->cap, false);
	c->cap = c->len = 0;
}

/* ---- connections ---- */

static const char *error_code(int status)
{
	switch (status) {
	case 408:
		return "timeout";
	case 413:
		return "too_large";
	case 414:
	case 431:
		return "head_too_large";
	case 404:
		return "not_found";
	case 417:
		return "expectation_failed";
	case 501:
		return "not_implemented";
	case 503:
		return "busy";
	case 505:
		return "http_version";
	default:
		return "bad_request";
	}
}

/* Answers an error and ends the connection; returns -status. */
static int refuse(sv_conn *c, int status, const char *reason)
{
	c->keep_alive = false;
	(void)sv_fail_reply(c, status, error_code(status), NULL, reason);
	return -status;
}

/*
 * Room for more of the request: a head fits the first SV_READ_CHUNK; a
 * body with Content-Length gets exactly its size (its bound was checked
 * from the head); a chunked one grows by doubling up to what its bound and
 * framing allow (sv_request_chunked_progress() refuses it before that).
 */
static int conn_room(sv_conn *c, const sv_request *req)
{
	size_t want = SV_READ_CHUNK, bound;
	int r;

	if (req->head_done && req->head.has_content_length)
		want = req->head.head_len + (size_t)req->head.content_length;
	else if (req->head_done && req->head.chunked) {
		bound = req->head.head_len + req->max_body + SV_MAX_CHUNK_FRAMING + SV_READ_CHUNK;
		want = c->cap * 2 < bound ? c->cap * 2 : bound;
	}
	if (want < SV_READ_CHUNK)
		want = SV_READ_CHUNK;
	if (want <= c->len)
		return refuse(c, 413, "request too large");
	r = conn_resize(c, want > c->cap ? want : c->cap);
	if (r == -ENOBUFS)
		return refuse(c, 503, "too many bytes of requests under way for this uid");
	return r < 0 ? refuse(c, 503, "out of memory") : 0;
}

/* Waits for bytes until deadline: 1 some came (or the end), 0 the deadline passed. */

/*
 * Reads one whole request within its deadlines. 1 got one, 0 the client
 * closed or idled between requests, < 0 answered (with an error) or gone.
 */
static int read_request(sv_conn *c, sv_request *req)
{
	sv_body_progress prog = {0};
	bool sent_continue = false, want_continue, had_head, worth;
	bool started = c->len > 0;
	int64_t deadline = sv_mono_ms() + 1000 * (started ? SV_HEAD_S : SV_IDLE_S);
	const char *reason = NULL;
	int r;

	if (!started && !conn_set_idle(c, true))
		return 0;
	for (;;) {
		worth = c->len > 0;
		if (req->head_done && req->head.has_content_length)
			worth = c->len >= req->head.head_len + req->head.content_length;
		else if (req->head_done && req->head.chunked) {
			r = sv_request_chunked_progress(&prog, c->buf + req->head.head_len,
							c->len - req->head.head_len, req->max_body,
							&reason);
			if (r < 0)
				return refuse(c, -r, reason);
			worth = r == 1;
		}
		if (worth) {
			had_head = req->head_done;
			r = sv_request_parse(c->buf, c->len, SV_MAX_BODY, req, &want_continue,
					     &reason);
			if (r == 1)
				return 1;
			if (r < 0)
				return refuse(c, -r, reason);
			if (req->head_done && !had_head) {
				deadline = sv_mono_ms() + 1000 * SV_BODY_S;
				if (req->head.chunked)
					continue; /* follow what came with the head */
			}
			if (want_continue && !sent_continue) {
				sent_continue = true;
				if (sv_send_all(c->fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
					return -EPIPE;
			}
		}
		if (c->len == c->cap) {
			r = conn_room(c, req);
			if (r < 0)
				return r;
		}
		if (sv_wait_bytes(c->fd, deadline) == 0) {
			if (!started)
				return 0; /* idle: closed without a word */
			return refuse(c, 408,
				      req->head_done ? "no complete body within 60 s of its head"
						     : "no complete head within 10 s");
		}
		ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);

		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return c->len ? -EPIPE : 0;
		if (!started) {
			if (!conn_set_idle(c, false))
				return 0; /* its place was given away */
			started = true;
			deadline = sv_mono_ms() + 1000 * SV_HEAD_S;
		}
		c->len += (size_t)n;
	}
}

static void *conn_main(void *arg)
{
	sv_conn *c = arg;

	for (;;) {
		sv_request *req = calloc(1, sizeof(*req));
		int r;

		if (!req)
			break;
		c->keep_alive = true;
		r = read_request(c, req);
		if (r <= 0) {
			free(req);
			break;
		}
		c->keep_alive = req->head.keep_alive;
		(void)route(c, req);
		memmove(c->buf, c->buf + req->consumed, c->len - req->consumed);
		c->len -= req->consumed;
		sv_request_done(req);
		free(req);
		if (!c->keep_alive)
			break;
		/* A big buffer is not kept for a connection that idles. */
		if (c->cap > SV_READ_CHUNK && c->len <= SV_READ_CHUNK)
			(void)conn_resize(c, SV_READ_CHUNK);
	}
	conn_free_buffer(c);
	/* out of the list before its fd is closed: evict() must never shut
	 * down a number the fd's next owner already has */
	conn_release(c->d, c);
	(void)close(c->fd);
	free(c);
	return NULL;
}

static void accept_one(sv_daemon *d, int lfd)
{
	struct timeval tv = {.tv_sec = SV_IO_TIMEOUT_S};
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	pthread_attr_t attr;
	pthread_t th;
	sv_conn *c;
	int r, fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
		free(c);
		(void)close(fd);
		return;
	}
	*c = (sv_conn){.d = d, .fd = fd, .uid = cred.uid, .pid = cred.pid};
	r = conn_admit(d, c);
	if (r < 0) {
		char msg[96] = "too many connections";

		/* answered from the accepting thread: never waits for the client */
		(void)fcntl(fd, F_SETFL, O_NONBLOCK);
		if (r == -EUSERS)
			(void)snprintf(msg, sizeof(msg), "uid %u holds %u connections, its share",
				       (unsigned)cred.uid, SV_MAX_CONNECTIONS_PER_UID);
		(void)sv_fail_reply(c, 503, "busy", NULL, msg);
		(void)close(fd);
		free(c);
		return;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	(void)pthread_attr_init(&attr);
	(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	(void)pthread_attr_setstacksize(&attr, 256 * 1024);
	if (pthread_create(&th, &attr, conn_main, c) != 0) {
		conn_release(d, c);
		(void)close(fd);
		free(c);
	}
	(void)pthread_attr_destroy(&attr);
}

static int listen_socket(const sv_config *cfg, int *ret)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (strlen(cfg->socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, cfg->socket_path);
	/* A stale socket from a daemon that died is replaced; anything else is not. */
	if (lstat(cfg->socket_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		_cleanup_close_ int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return -EADDRINUSE;
		(void)unlink(cfg->socket_path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* created 0600, opened to the group only once its group is right */
	mode_t old = umask(0177);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));

	(void)umask(old);
	if (r < 0)
		return -errno;
	if ((cfg->gid != (gid_t)-1 && chown(cfg->socket_path, (uid_t)-1, cfg->gid) < 0) ||
	    chmod(cfg->socket_path, 0660) < 0 || listen(fd, 128) < 0) {
		r = -errno;
		(void)unlink(cfg->socket_path);
		return r;
	}
	*ret = TAKE_FD(fd);
	return 0;
}

static int load_policies(sv_daemon *d)
{
	for (size_t i = 0; i < d->cfg->n_policies; i++) {
		const sv_policy_opt *o = &d->cfg->policies[i];
		sv_pol *p = &d->pols[d->n_pols];
		_cleanup_free_ char *buf = NULL;
		const char *base = strrchr(o->file, '/');
		size_t len, n;
		sv_error e;
		int r;

		if (d->n_pols >= SV_MAX_POLICIES) {
			LOG(d, "more than %u policies", SV_MAX_POLICIES);
			return -E2BIG;
		}
		if (!realpath(o->file, p->file)) {
			r = -errno;
			LOG(d, "%s: %s", o->file, strerror(-r));
			return r;
		}
		r = io_read_file_at(AT_FDCWD, p->file, 1 << 20, &buf, &len);
		if (r < 0) {
			LOG(d, "%s: %s", o->file, strerror(-r));
			return r;
		}
		r = canonical_digest(buf, len, true, p->digest, &e);
		if (r < 0) {
			LOG(d, "%s: %s: %s", o->file, e.path, e.message);
			return -EINVAL;
		}
		base = base ? base + 1 : o->file;
		n = strlen(base);
		if (n > 5 && !strcmp(base + n - 5, ".json"))
			n -= 5;
		(void)snprintf(p->name, sizeof(p->name), "%.*s", (int)n, base);
		if (find_policy_name(d, p->name)) {
			LOG(d, "%s: a second policy called %s", o->file, p->name);
			return -EEXIST;
		}
		if (o->pool > SV_MAX_POOL) {
			LOG(d, "%s: a pool of at most %u", o->file, SV_MAX_POOL);
			return -E2BIG;
		}
		p->size = o->pool;
		d->n_pols++;
	}
	return 0;
}

/* Stops every session at once (each `session stop` seals its log). */
static void stop_all(sv_daemon *d)
{
	_cleanup_free_ sv_session *all = NULL;
	size_t n = sv_table_take_all(&d->table, &all), total;

	if (!all)
		return;
	(void)pthread_mutex_lock(&d->pool_lock);
	total = n;
	for (size_t i = 0; i < d->n_pols; i++)
		total += d->pols[i].n_ready;
	sv_session *p = realloc(all, (total ? total : 1) * sizeof(*all));

	if (p) {
		all = p;
		for (size_t i = 0; i < d->n_pols; i++) {
			memcpy(all + n, d->pols[i].ready, d->pols[i].n_ready * sizeof(*all));
			n += d->pols[i].n_ready;
			d->pols[i].n_ready = 0;
		}
	}
	(void)pthread_mutex_unlock(&d->pool_lock);
	if (n) /* the second sweep mostly finds none: said once, not twice */
		LOG(d, "stopping %zu sandbox%s", n, n == 1 ? "" : "es");
	for (size_t i = 0; i < n; i += 32) {
		sv_child kids[32];
		size_t k = 0;

		for (; k < 32 && i + k < n; k++) {
			char *argv[] = {(char *)"sandcap", (char *)"session", (char *)"stop",
					all[i + k].name, NULL};

			if (sv_child_spawn(d->cfg->exe, argv, false, &kids[k]) < 0)
				kids[k].pid = 0;
		}
		for (size_t j = 0; j < k; j++) {
			int st = 0;

			if (kids[j].pid > 0 && sv_child_wait(&kids[j], &st) == 0 &&
			    sv_exit_code(st) != 0)
				LOG(d, "stopping %s: exit status %d", all[i + j].name,
				    sv_exit_code(st));
		}
	}
}

/* A signal read from the signalfd: whether it asks us to stop. */
static bool stop_asked(sv_daemon *d, const struct signalfd_siginfo *si)
{
	char name[32];

	switch (sgn_judge(si)) {
	case SGN_STOP:
		sgn_name((int)si->ssi_signo, name, sizeof(name));
		LOG(d, "%s: stopping", name);
		return true;
	case SGN_CRASH:
		sgn_crash((int)si->ssi_signo);
	case SGN_IGNORE:
	case _SGN_VERDICT_MAX:
	case _SGN_VERDICT_INVALID:
		break;
	}
	return false;
}

int sv_serve(const sv_config *cfg)
{
	_cleanup_free_ sv_daemon *d = calloc(1, sizeof(*d));
	_cleanup_close_ int lfd = -1, sfd = -1;
	pthread_t pool_thread;
	bool pool_started = false;
	sigset_t mask;
	int r;

	if (!d)
		return -ENOMEM;
	d->cfg = cfg;
	/* Signals are taken by the signalfd below, from before the socket
	 * exists: every thread has them blocked (docs/decisions.md, "Signals
	 * from outside"). A write to a closed peer gets EPIPE. */
	sgn_taken_set(&mask);
	(void)pthread_sigmask(SIG_BLOCK, &mask, NULL);
	sgn_libc_own_ignore();
	r = sv_table_init(&d->table);
	if (r < 0)
		return r;
	r = sv_cmds_new(&d->cmds);
	if (r < 0)
		return r;
	(void)pthread_mutex_init(&d->pool_lock, NULL);
	(void)pthread_mutex_init(&d->use_lock, NULL);
	/* Big buffers from mmap and back to the kernel when freed: a burst of
	 * large requests does not stay in the daemon's memory after it. */
	(void)mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	(void)pthread_cond_init(&d->pool_cond, NULL);
	r = load_policies(d);
	if (r < 0)
		goto out;
	if (cfg->token_key) {
		sc_diag diag = {0};

		r = tk_key_load_diag(cfg->token_key, d->key, &diag);
		if (r < 0) {
			LOG(d, "%s: %s", cfg->token_key, diag.message);
			goto out;
		}
		d->has_key = true;
	}
	(void)snprintf(d->tmpdir, sizeof(d->tmpdir), "%s/sandcap-serve.XXXXXX",
		       getenv("TMPDIR") ?: "/tmp");
	if (!mkdtemp(d->tmpdir)) {
		r = -errno;
		LOG(d, "%s: %s", d->tmpdir, strerror(-r));
		goto out;
	}
	if (cfg->listen_passed)
		lfd = cfg->listen_fd;
	else
		r = listen_socket(cfg, &lfd);
	if (r < 0) {
		LOG(d, "%s: %s", cfg->socket_path,
		    r == -EADDRINUSE ? "another daemon is serving it"
		    : r == -EEXIST   ? "exists and is not a socket"
				     : strerror(-r));
		(void)rmdir(d->tmpdir);
		goto out;
	}
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		r = -errno;
		goto out_sock;
	}
	if (d->n_pols && pthread_create(&pool_thread, NULL, pool_main, d) == 0)
		pool_started = true;
	if (cfg->ready_fd >= 0) {
		(void)io_write_all(cfg->ready_fd, "ready\n", 6);
		(void)close(cfg->ready_fd);
	}
	LOG(d, "serving %s%s (%zu policies)", cfg->socket_path,
	    cfg->listen_passed ? ", the socket passed by the service manager" : "", d->n_pols);
	for (;;) {
		struct pollfd p[2] = {{.fd = lfd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if (p[1].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si) && stop_asked(d, &si)) {
				r = 0;
				break;
			}
		}
		if (p[0].revents)
			accept_one(d, lfd);
	}
	if (!cfg->listen_passed)
		(void)unlink(cfg->socket_path);
	lfd = safe_close(lfd);
	(void)pthread_mutex_lock(&d->pool_lock);
	d->stopping = true;
	(void)pthread_cond_broadcast(&d->pool_cond);
	(void)pthread_mutex_unlock(&d->pool_lock);
	if (pool_started)
		(void)pthread_join(pool_thread, NULL);
	stop_all(d);
	/* A create that was under way when the signal came adds its session
	 * after the first sweep: wait for the requests to end (idle
	 * connections have none: closed now), sweep again. */
	close_idle(d);
	for (int i = 0; i < 1000 && conns_now(d) > 0; i++)
		(void)nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	stop_all(d);
	(void)rmdir(d->tmpdir);
	OPENSSL_cleanse(d->key, sizeof(d->key));
	sv_cmds_free(d->cmds);
	sv_table_free(&d->table);
	return r;
out_sock:
	if (!cfg->listen_passed)
		(void)unlink(cfg->socket_path);
	(void)rmdir(d->tmpdir);
out:
	sv_cmds_free(d->cmds);
	sv_table_free(&d->table);
	return r;
}
