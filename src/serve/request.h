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
#include <stdint.h>

#include "proxy/http.h"

#define SV_MAX_HEAD	   16384u
#define SV_MAX_BODY	   (64u << 20) /* a file put or an exec's stdin */
#define SV_MAX_CREATE_BODY (1u << 20)  /* a create: the policy limit (POLICY_MAX_BYTES) */
#define SV_MAX_OTHER_BODY  4096u       /* the requests that take no body */
/* A file put streamed to the sandbox: bounded there (limits.fsize, the disk), not here. */
#define SV_MAX_STREAM_BODY (1ull << 40)
/* Chunk framing a chunked body may add to its data: a client sending tiny
 * chunks is refused before its framing costs us more than this. */
#define SV_MAX_CHUNK_FRAMING (1u << 20)
#define SV_MAX_SEGMENTS	     8u
#define SV_MAX_QUERY	     8u
#define SV_MAX_TARGET_DECODE 4096u

typedef struct sv_param {
	const char *name, *value; /* decoded, NUL-terminated, inside sv_request.decoded */
} sv_param;

typedef struct sv_request {
	px_request head;
	bool head_done; /* the head parsed (set also when 0 is returned for the body) */
	/* A file put with Content-Length: complete at its head, its body left
	 * to the handler to stream (consumed counts the head only). */
	bool stream_body;
	size_t max_body; /* the bound of this request's body: sv_request_body_limit() */
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

/*
 * The largest body the endpoint of a parsed head takes: SV_MAX_BODY for a
 * file put and an exec (the data and the stdin), SV_MAX_CREATE_BODY for a
 * create, SV_MAX_OTHER_BODY for the rest. Known from the head, so a body
 * beyond it is refused before it is read.
 */
size_t sv_request_body_limit(const sv_request *r);

/* A chunked body followed as it arrives, so that it is refused as soon as
 * it passes its bound rather than once it is whole. Zeroed per request. */
typedef struct sv_body_progress {
	px_chunked ch;
	size_t fed;    /* bytes of body (framing included) fed so far */
	uint64_t data; /* of which chunk data */
} sv_body_progress;

/*
 * Feeds body[p->fed..len) (body: the bytes after the head) to p. Returns 1
 * when the body is complete, 0 when more is needed, -413 when its data (the
 * chunk sizes announced included) passes max_body or its framing passes
 * SV_MAX_CHUNK_FRAMING, -400 for bad framing, with a static reason.
 */
int sv_request_chunked_progress(sv_body_progress *p, const char *body, size_t len, size_t max_body,
				const char **reterr_reason);
/* The decoded value of query parameter name, or NULL. */
const char *sv_request_query(const sv_request *r, const char *name);
