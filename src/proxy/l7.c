/* SPDX-License-Identifier: MIT */
/*
 * The L7 part of the request judgement: the egress rules' paths and the
 * limits of the credential the request would carry. Called once per request
 * head from judge_request() in loop.c, for plain requests and for requests
 * read from an inspected tunnel alike: it looks only at the parsed head.
 * The rules themselves are pure (policy/http-path.c, cred-limits.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "proxy/allow.h"
#include "proxy/conn.h"
#include "proxy/cred-limits.h"
#include "policy/http-path.h"

static px_cred_state *cred_state(conn *c)
{
	size_t i = (size_t)(c->cred - c->L->cfg->creds);

	return i < POLICY_MAX_CREDENTIALS ? &c->L->sh->creds[i] : NULL;
}

/* The request's size as it will go upstream: the head exactly as
 * px_forward_start() builds it, plus a Content-Length body. */
static uint64_t upstream_bytes(conn *c)
{
	_cleanup_free_ char *head = NULL;
	size_t len = 0;

	if (px_forward_build_head(c, &head, &len) < 0)
		return UINT64_MAX; /* cannot be built: refused below or by the forward path */
	return (uint64_t)len + (c->req.has_content_length ? c->req.content_length : 0);
}

static int judge_cred(conn *c, const char *norm_path)
{
	px_cred_state *st = cred_state(c);
	px_cred_use u = {
	    .method_bit = c->req.method_bit,
	    .path = norm_path,
	    .sized = !c->req.chunked,
	    .start_ns = c->L->sh->start_ns,
	    .now_ns = px_now_ns(),
	};
	const char *limit = NULL;
	char detail[PX_MAX_HOST + 192];
	int status;

	if (!st)
		return 0;
	u.bytes = c->cred->max_bytes == PLAN_UNLIMITED ? 0 : upstream_bytes(c);
	status = px_cred_admit(c->cred, st, &u, &limit, detail, sizeof(detail));
	if (status == 0)
		return 0;
	/* the credential is not sent: the request is refused whole */
	c->cred_refused = c->cred->name;
	c->cred = NULL;
	if (status == 429)
		px_limit_hit(c->L, "credential", detail);
	px_conn_deny(c, status, "credential-limit", detail, false);
	return -EACCES;
}

int px_l7_judge(conn *c, int rule)
{
	const px_config *cfg = c->L->cfg;
	char norm[PX_MAX_REQUEST_LINE + 1];
	const char *norm_path = NULL, *why = NULL, *reason = NULL;
	int r;

	if (!c->is_connect) {
		r = http_path_normalise(c->cin + c->req.path.off, c->req.path.len, norm,
					sizeof(norm), &why);
		if (r >= 0) {
			norm_path = norm;
			/* the record keeps PX_LOG_PATH bytes, as of the path */
			size_t n = (size_t)r < PX_LOG_PATH ? (size_t)r : PX_LOG_PATH;

			memcpy(c->norm_path, norm, n);
			c->norm_path[n] = 0;
		} else if (r == -ENAMETOOLONG)
			why = "the path is too long";
	}
	r = px_allow_match_path(cfg, c->host, c->req.host_kind, c->up_port, c->req.method_bit,
				c->is_connect, norm_path, &reason);
	if (r < 0) {
		px_conn_deny(c, 403, reason,
			     c->is_connect ? "a rule with paths refuses CONNECT: a tunnel would "
					     "hide the paths"
			     : why	   ? why
					   : "the path is not under the rule's paths",
			     false);
		return -EACCES;
	}
	if (r != rule && (size_t)r < cfg->n_egress)
		(void)snprintf(c->rule, sizeof(c->rule), "%s", cfg->egress[r].host);
	if (c->cred && !c->is_connect)
		return judge_cred(c, norm_path);
	return 0;
}

uint64_t px_l7_cred_room(conn *c, uint64_t want)
{
	px_cred_state *st = c->cred ? cred_state(c) : NULL;

	return st ? px_cred_bytes_room(c->cred, st, want) : want;
}

void px_l7_cred_sent(conn *c, uint64_t n)
{
	px_cred_state *st = c->cred ? cred_state(c) : NULL;

	if (st)
		px_cred_bytes_sent(st, n);
}
