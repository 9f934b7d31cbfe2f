/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the proxy's request-head parser, the upstream head
 * rewriter, the response-head parser and the chunked framing tracker: all
 * of them see bytes the sandboxed agent (or an origin it picked) controls.
 * The same input also goes to px_event_parse(), the supervisor's validator of
 * datagrams from the (less trusted) worker, and, as a request decrypted from
 * an inspected tunnel, to the origin-form parser and the placeholder
 * replacement.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/http.h"
#include "proxy/placeholder.h"
#include "proxy/proxy.h"

#define FUZZ_MAX_INPUT (PX_MAX_HEAD * 2)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* As inside an inspected tunnel: origin-form, then the placeholder swapped. */
static void fuzz_inspected(const char *buf, size_t size)
{
	static px_request req;
	static px_cred cred = {.host = (char *)"api.x.test",
			       .name = (char *)"K",
			       .placeholder = (char *)"sk-PH",
			       .secret = (char *)"the-real-and-longer-value",
			       .in_query = true};
	static px_config cfg = {.creds = &cred, .n_creds = 1, .has_placeholders = true};
	static const px_origin origin = {
	    .host = "api.x.test", .host_kind = PX_HOST_NAME, .port = 443};
	const char *reason;
	char *head = NULL;
	size_t len;
	bool used;
	int r = px_http_parse_origin_request(buf, size, &origin, &req, &reason);

	if (r <= 0)
		return;
	if (req.target_kind != PX_TARGET_ORIGIN || strcmp(req.host, "api.x.test") != 0)
		abort();
	(void)px_placeholder_find(&cfg, buf, size);
	if (px_http_build_upstream_head(buf, &req, NULL, NULL, &head, &len) < 0)
		return;
	/* the credential judged is the one swapped in: both see the same places */
	used = px_placeholder_used(&cfg, req.host, head, len) != NULL;
	r = px_placeholder_replace(&cfg, req.host, &head, &len);
	if (r >= 0 && ((r > 0) != used || len != strlen(head) || len < 4 ||
		       memcmp(head + len - 4, "\r\n\r\n", 4) != 0))
		abort();
	free(head);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static px_request req;
	px_response resp;
	px_chunked ch = {0};
	const char *buf = (const char *)data;
	const char *reason;
	size_t used;
	uint64_t d;
	int r;

	if (size > FUZZ_MAX_INPUT)
		return 0;
	r = px_http_parse_request(buf, size, &req, &reason);
	if (r > 0) {
		char *head = NULL;
		size_t len;

		if ((size_t)r > size || req.head_len != (size_t)r)
			abort();
		if (px_http_build_upstream_head(buf, &req, "Authorization", "Bearer x", &head,
						&len) == 0) {
			/* the rewritten head must itself be a valid origin-form head */
			if (len < 4 || memcmp(head + len - 4, "\r\n\r\n", 4) != 0)
				abort();
			free(head);
		}
		/* whatever follows the head is fed to the body framer */
		used = 0;
		if (px_chunked_feed(&ch, buf + r, size - (size_t)r, &used, &d) >= 0 &&
		    used > size - (size_t)r)
			abort();
	} else if (r < 0 && r != -400 && r != -414 && r != -417 && r != -431 && r != -501 &&
		   r != -505)
		abort();
	fuzz_inspected(buf, size);
	r = px_http_parse_response(buf, size, size & 1, &resp, &reason);
	if (r > 0) {
		char *head = NULL;
		size_t len;

		if (px_http_build_client_response_head(buf, &resp, true, &head, &len) == 0)
			free(head);
	}
	memset(&ch, 0, sizeof(ch));
	(void)px_chunked_feed(&ch, buf, size, &used, &d);
	{
		char *name = NULL;
		json_t *obj = NULL;

		if (px_event_parse(buf, size, &name, &obj) == 0) {
			if (!name || !json_is_object(obj))
				abort();
			free(name);
			json_decref(obj);
		}
	}
	return 0;
}
