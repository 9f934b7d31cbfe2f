/* SPDX-License-Identifier: MIT */
/*
 * Strict HTTP/1.x message-head parsing for the egress proxy. Pure functions:
 * no I/O, no allocation except where stated, safe on any byte string (the
 * request head comes from the sandboxed agent and is hostile; the response
 * head comes from an origin the agent picked, equally hostile).
 *
 * Why hand-written: Debian 12 ships no libllhttp-dev (only node-llhttp, the
 * JavaScript sources), and the proxy needs a *stricter* profile than a
 * general-purpose parser offers by default: any framing ambiguity that could
 * let two parties disagree on where a message ends (CL+TE, duplicate CL,
 * bare CR or LF, obs-fold, NUL) is rejected instead of being repaired.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PX_MAX_REQUEST_LINE   8192u  /* longer: 414 */
#define PX_MAX_HEAD	      32768u /* whole request head; longer: 431 */
#define PX_MAX_RESPONSE_HEAD  65536u
#define PX_MAX_HEADERS	      128u /* more: 431 */
#define PX_MAX_HOST	      253u /* DNS name limit */
#define PX_MAX_METHOD	      32u
#define PX_MAX_CONTENT_LENGTH (UINT64_C(1) << 62)
#define PX_MAX_CHUNK_TRAILER  8192u

typedef enum px_target_kind {
	PX_TARGET_ABSOLUTE,  /* http://host[:port]/path */
	PX_TARGET_AUTHORITY, /* CONNECT host:port */
	PX_TARGET_ORIGIN,    /* /path, inside an inspected tunnel: host and port from its CONNECT */
	_PX_TARGET_KIND_MAX,
	_PX_TARGET_KIND_INVALID = -22,
} px_target_kind;

typedef enum px_host_kind {
	PX_HOST_NAME,
	PX_HOST_IPV4,
	PX_HOST_IPV6,
	_PX_HOST_KIND_MAX,
	_PX_HOST_KIND_INVALID = -22,
} px_host_kind;

typedef struct px_span {
	uint32_t off;
	uint32_t len;
} px_span;

typedef struct px_header {
	px_span name;
	px_span value; /* OWS trimmed */
} px_header;

typedef struct px_request {
	size_t head_len; /* bytes of the head including the final CRLF CRLF */
	bool line_ok;	 /* the request line parsed: method, target, host, port, path are set */
	char method[PX_MAX_METHOD + 1];
	uint32_t method_bit; /* http_method bit from plan.h, 0 for an extension method */
	px_target_kind target_kind;
	px_host_kind host_kind;
	char host[PX_MAX_HOST + 1]; /* lower-case; IPv6 without brackets */
	uint16_t port;
	px_span path; /* origin-form (path + query) within the buffer; len 0 means "/" */
	int minor;    /* HTTP/1.minor: 0 or 1 */
	px_header headers[PX_MAX_HEADERS];
	size_t n_headers;
	bool has_content_length;
	uint64_t content_length;
	bool chunked;
	bool keep_alive;      /* the client may send another request on this connection */
	bool expect_continue; /* "Expect: 100-continue" */
} px_request;

/* A bare host (no port, no brackets): an IPv4 literal (no leading zeros), an
 * IPv6 literal or a DNS name, as a request target's host is checked.
 * Returns 0 with *ret_kind, or -EINVAL. */
int px_http_parse_host(const char *s, size_t n, px_host_kind *ret_kind);

/*
 * Parses the request head at the start of buf. Returns:
 *   > 0   the request is complete; *ret filled; value = ret->head_len
 *   0     incomplete, read more (no error seen so far)
 *   < 0   a negative HTTP status to answer with (-400, -414, -431, -501, -505)
 * *reterr_reason points to a static short reason on failure. After a failure
 * in the headers ret->line_ok is true and the request line's fields are
 * valid (what was asked for, to record); ret->method may be set without it.
 */
int px_http_parse_request(const char *buf, size_t len, px_request *ret, const char **reterr_reason);

/* The destination of an inspected tunnel, as its CONNECT named it. */
typedef struct px_origin {
	char host[PX_MAX_HOST + 1];
	px_host_kind host_kind;
	uint16_t port;
} px_origin;

/*
 * The same for a request decrypted from an inspected tunnel to origin: the
 * target must be origin-form ("/path?query"; no CONNECT, no absolute URI),
 * host and port are origin's, and a Host header is required in HTTP/1.1
 * and must name origin (its default port is origin's).
 */
int px_http_parse_origin_request(const char *buf, size_t len, const px_origin *origin,
				 px_request *ret, const char **reterr_reason);

/*
 * Builds the head sent upstream: origin-form request line, a Host header
 * generated from the target, the end-to-end headers of req, the credential
 * header (replacing any header of that name the client sent) when
 * cred_name is not NULL, and "Connection: close". Allocates *ret_head.
 * Returns 0 or -ENOMEM / -E2BIG.
 */
int px_http_build_upstream_head(const char *buf, const px_request *req, const char *cred_name,
				const char *cred_value, char **ret_head, size_t *ret_len);

typedef struct px_response {
	size_t head_len;
	int status;
	int minor;
	bool has_content_length;
	uint64_t content_length;
	bool chunked;
	bool close_delimited; /* body ends when the origin closes */
	bool no_body;	      /* 1xx, 204, 304 or a response to HEAD */
	bool conn_close;      /* "Connection: close", or HTTP/1.0: the origin is done after it */
} px_response;

/*
 * Parses a response head. Same return convention as the request parser, with
 * -502 for anything malformed. request_was_head tells whether a body follows.
 */
int px_http_parse_response(const char *buf, size_t len, bool request_was_head, px_response *ret,
			   const char **reterr_reason);

/*
 * Re-emits the response head for the client: drops hop-by-hop headers and adds
 * "Connection: close" when close is true. Allocates *ret_head.
 */
int px_http_build_client_response_head(const char *buf, const px_response *resp, bool close,
				       char **ret_head, size_t *ret_len);

/* Incremental, strict chunked-body framing tracker (bytes pass through). */
typedef enum px_chunk_state {
	PX_CHUNK_SIZE,
	PX_CHUNK_SIZE_EXT,
	PX_CHUNK_SIZE_LF,
	PX_CHUNK_DATA,
	PX_CHUNK_DATA_CR,
	PX_CHUNK_DATA_LF,
	PX_CHUNK_TRAILER_START,
	PX_CHUNK_TRAILER_LINE,
	PX_CHUNK_TRAILER_LF,
	PX_CHUNK_FINAL_LF,
	PX_CHUNK_DONE,
	_PX_CHUNK_STATE_MAX,
	_PX_CHUNK_STATE_INVALID = -22,
} px_chunk_state;

typedef struct px_chunked {
	px_chunk_state state;
	uint64_t remaining; /* data bytes left in the current chunk */
	unsigned size_digits;
	size_t trailer_bytes;
	bool last_chunk;
} px_chunked;

/*
 * Feeds bytes to the tracker. *ret_consumed is how many belong to this body
 * (stops at the end of the message); *ret_data is how many were chunk data.
 * Returns 1 when the body is complete, 0 when more is needed, -EBADMSG.
 */
int px_chunked_feed(px_chunked *st, const char *buf, size_t len, size_t *ret_consumed,
		    uint64_t *ret_data);

/* Formats a complete local response (status line, headers, short text body). */
int px_http_local_response(int status, const char *deny_reason, const char *text, bool close,
			   char *out, size_t out_size);
const char *px_http_status_text(int status);

/*
 * The same strict head parser for an origin server (the `sandcap serve`
 * API): an origin-form target ("/path?query"), Host not checked (a unix
 * socket has no authority to compare it with), the same framing rules
 * (no CL+TE, no duplicate CL, no obs-fold, no bare CR/LF, no NUL), at most
 * max_head bytes of head. Fills method, path (the whole target), minor,
 * headers, content_length, chunked, keep_alive, expect_continue; returns as
 * px_http_parse_request().
 */
int px_http_parse_server_request(const char *buf, size_t len, size_t max_head, px_request *ret,
				 const char **reterr_reason);
