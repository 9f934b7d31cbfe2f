/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the SOCKS5 handshake parser: the greeting and the
 * request the agent sends to the proxy's listener, fed as one stream the
 * way the worker does (the request starts where the greeting ends).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/socks5.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	px_socks5_request req;
	const char *why;
	bool noauth;
	int g, r;

	if (size > 1024)
		return 0;
	g = px_socks5_parse_greeting(data, size, &noauth);
	if (g > 0 && ((size_t)g > size || (size_t)g > 257))
		abort();
	if (g <= 0)
		g = 0;
	r = px_socks5_parse_request(data + g, size - (size_t)g, &req, &why);
	if (r > 0) {
		if ((size_t)r > size - (size_t)g || (size_t)r != req.len || req.port == 0 ||
		    strlen(req.host) == 0 || strlen(req.host) > PX_MAX_HOST)
			abort();
	} else if (r < 0 && r != -PX_SOCKS5_GENERAL_FAILURE &&
		   r != -PX_SOCKS5_COMMAND_UNSUPPORTED && r != -PX_SOCKS5_ATYP_UNSUPPORTED)
		abort();
	else if (r < 0 && !why)
		abort();
	return 0;
}
