/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the sandbox resolver's query parser and answer builder:
 * every datagram the sandboxed agent sends to port 53 reaches them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/dnsmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static px_dns_question q;
	uint8_t out[PX_DNSMSG_MAX];
	px_addr a = {.family = size & 1 ? AF_INET : AF_INET6};
	size_t n;
	int r;

	if (size > PX_DNSMSG_MAX + 1)
		return 0;
	r = px_dns_parse_query(data, size, &q);
	if (r == -EBADMSG)
		return 0;
	if (r < 0 || r > PX_RCODE_REFUSED)
		abort();
	if (r == PX_RCODE_NOERROR &&
	    (strlen(q.name) > PX_MAX_HOST || q.qsection + 12 > size || q.qsection < 5))
		abort();
	n = px_dns_build_answer(&q, data, (px_dns_rcode)r, r == 0 ? &a : NULL, out);
	if (n < 12 || n > sizeof(out))
		abort();
	return 0;
}
