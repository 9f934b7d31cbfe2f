/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the parser of packets seen on the sandbox's lo
 * (direct attempts): the agent shapes what it sends, and so what the
 * kernel's RST or ICMP error quotes back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "proxy/attempt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static px_attempt_limit limit;
	static uint64_t now;
	px_attempt a;
	char s[64];

	if (px_attempt_parse(data, size, &a) == 0) {
		if (a.proto != PX_ATTEMPT_TCP && a.proto != PX_ATTEMPT_UDP)
			abort();
		if (a.family != AF_INET && a.family != AF_INET6)
			abort();
		px_attempt_addr_str(&a, s, sizeof(s));
		if (!s[0])
			abort();
		now += 1000000;
		(void)px_attempt_admit(&limit, &a, now);
		(void)px_attempt_report(&limit, now, false);
	}
	return 0;
}
