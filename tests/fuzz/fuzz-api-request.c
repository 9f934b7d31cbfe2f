/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the API daemon's request parser (`sandcap serve`):
 * any caller in the socket's group sends these bytes. Also the chunked
 * body followed as it arrives (in two pieces, split where the first byte
 * says), which must agree with the parse of the whole, the exec request
 * reader and the base64 decoder, which see the request's body.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "serve/backend.h"
#include "serve/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static sv_request req;
	const char *buf = (const char *)data, *reason;
	bool cont;
	int r;

	if (size > 4 * SV_MAX_HEAD)
		return 0;
	r = sv_request_parse(buf, size, 1 << 16, &req, &cont, &reason);
	if ((r == 1 || r == 0) && req.head_done) {
		if (req.max_body > sv_request_body_limit(&req) || req.max_body > 1 << 16)
			abort();
		if (r == 1 && req.body_len > req.max_body)
			abort();
	}
	if ((r == 1 || r == 0) && req.head_done && req.head.chunked) {
		const char *body = buf + req.head.head_len;
		size_t blen = size - req.head.head_len, cut = size ? data[0] % (blen + 1) : 0;
		sv_body_progress prog = {0};
		int p = sv_request_chunked_progress(&prog, body, cut, req.max_body, &reason);

		if (p == 0)
			p = sv_request_chunked_progress(&prog, body, blen, req.max_body, &reason);
		if (prog.fed > blen || prog.data > prog.fed)
			abort();
		/* complete as it came: the whole parses (or passes a bound) */
		if (p == 1 && r == 0)
			abort();
		if (p == 1 && prog.data != req.body_len)
			abort();
		if (p < 0 && p != -400 && p != -413)
			abort();
	}
	if (r == 1) {
		if (req.consumed > size || req.n_segments > SV_MAX_SEGMENTS ||
		    (req.body && strlen(req.body) > req.body_len))
			abort();
		for (size_t i = 0; i < req.n_segments; i++)
			if (!req.segments[i][0] || strchr(req.segments[i], '/'))
				abort();
		(void)sv_request_query(&req, "path");
		if (req.body) {
			json_t *o = json_loadb(req.body, req.body_len, 0, NULL);
			sv_exec_req er;
			sv_error e;

			if (o && sv_exec_req_from_json(o, &er, &e) == 0) {
				char **argv = sv_exec_argv("sandcap", "x", &er);

				if (!argv || er.argc == 0)
					abort();
				free(argv);
			}
			sv_exec_req_done(&er);
			json_decref(o);
		}
		sv_request_done(&req);
	} else if (r < 0 && r != -400 && r != -404 && r != -413 && r != -414 && r != -417 &&
		   r != -431 && r != -501 && r != -505)
		abort();
	{
		uint8_t *d = NULL;
		size_t n;

		if (b64_decode(buf, size, &d, &n) == 0) {
			char *e = malloc(B64_LEN(n) + 1);

			if (!e || b64_encode(d, n, e) != size || memcmp(e, buf, size))
				abort(); /* one encoding per byte string */
			free(e);
			free(d);
		}
	}
	return 0;
}
