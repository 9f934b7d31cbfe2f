/* SPDX-License-Identifier: MIT */
/*
 * One request to the API daemon (`sandcap serve`), parsed from the bytes a
 * client sent: the head with the proxy's strict parser (proxy/http.h), the
 * body de-chunked or taken by Content-Length, the target split into path
 * segments and query parameters, percent-decoded. Pure: no I/O; every size
 * is bounded; the caller of the socket is hostile.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "proxy/http.h"

#define SV_MAX_HEAD	     16384u
#define SV_MAX_BODY	     (64u << 20) /* a file put or an exec's stdin */
#define SV_MAX_SEGMENTS	     8u
#define SV_MAX_QUERY	     8u
#define SV_MAX_TARGET_DECODE 4096u

typedef struct sv_param {
	const char *name, *value; /* decoded, NUL-terminated, inside sv_request.decoded */
} sv_param;

typedef struct sv_request {
	px_request head;
	size_t consumed; /* bytes of input this request took (head + framed body) */
	char *body;	 /* de-chunked, malloc'd, NUL-terminated; NULL when none */
	size_t body_len;
	const char *segments[SV_MAX_SEGMENTS]; /* "/v1/sessions/x" -> "v1","sessions","x" */
	size_t n_segments;
	sv_param query[SV_MAX_QUERY];
	size_t n_query;
	char decoded[SV_MAX_TARGET_DECODE]; /* storage of segments and query */
} sv_request;

/*
 * Parses one request at the start of buf. Returns 1 when complete (*ret
 * filled, ret->body owned by the caller: sv_request_done()), 0 when more
 * bytes are needed, or a negative HTTP status (-400, -404 for a target that
 * cannot name anything, -413, -414, -417, -431, -501, -505) with a static
 * reason. When more bytes are needed and a body is coming, *ret_want_continue
 * tells whether the client waits for "100 Continue".
 */
int sv_request_parse(const char *buf, size_t len, size_t max_body, sv_request *ret,
		     bool *ret_want_continue, const char **reterr_reason);
void sv_request_done(sv_request *r);
/* The decoded value of query parameter name, or NULL. */
const char *sv_request_query(const sv_request *r, const char *name);
