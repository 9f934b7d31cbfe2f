/* SPDX-License-Identifier: MIT */
/*
 * Raw and packet sockets the agent asked for (docs/proxy.md, "Every
 * attempt seen"). seccomp refuses them and its listener reports each as a
 * syscall.denied; the supervisor records them as net.denied "raw-socket"
 * instead, through the same limiter as the direct attempts, so that a loop
 * of socket(AF_PACKET, ...) cannot fill the log.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/attempt.h"
#include "proxy/proxy.h"

#ifndef SOCK_PACKET
#define SOCK_PACKET 10
#endif

static bool arg(json_t *args, size_t i, uint64_t *ret)
{
	const char *s = json_string_value(json_array_get(args, i));
	char *end;

	if (!s || strncmp(s, "0x", 2) != 0)
		return false;
	errno = 0;
	*ret = strtoull(s + 2, &end, 16);
	return errno == 0 && end != s + 2 && *end == 0;
}

static const char *family_name(uint32_t family)
{
	switch (family) {
	case AF_INET:
		return "AF_INET";
	case AF_INET6:
		return "AF_INET6";
	case AF_PACKET:
		return "AF_PACKET";
	default:
		return "?";
	}
}

int px_raw_socket_event(px_attempt_limit *l, json_t *data, uint64_t now_ns, json_t **ret_denied,
			json_t **ret_limit)
{
	const char *name = json_string_value(json_object_get(data, "syscall"));
	json_t *args = json_object_get(data, "args");
	uint64_t family, type, proto, n;
	px_attempt a = {0};
	char detail[160];

	*ret_denied = *ret_limit = NULL;
	if (!name || strcmp(name, "socket") != 0 || !arg(args, 0, &family) ||
	    !arg(args, 1, &type) || !arg(args, 2, &proto))
		return 0;
	/* the kernel reads int arguments: the upper halves mean nothing */
	family &= UINT32_MAX;
	type &= UINT32_MAX & ~(uint64_t)(SOCK_NONBLOCK | SOCK_CLOEXEC);
	proto &= UINT32_MAX;
	if (family == AF_PACKET)
		a.proto = PX_ATTEMPT_PACKET;
	else if ((family == AF_INET || family == AF_INET6) &&
		 (type == SOCK_RAW || type == SOCK_PACKET))
		a.proto = PX_ATTEMPT_RAW;
	else
		return 0;
	a.port = (uint16_t)proto; /* one destination per protocol number */
	if (px_attempt_admit(l, &a, now_ns)) {
		(void)snprintf(detail, sizeof(detail),
			       "socket(%s, %s, %" PRIu64 ") refused: raw and packet sockets "
			       "forge packets and sniff the namespace",
			       family_name((uint32_t)family),
			       type == SOCK_RAW	     ? "SOCK_RAW"
			       : type == SOCK_DGRAM  ? "SOCK_DGRAM"
			       : type == SOCK_PACKET ? "SOCK_PACKET"
						     : "?",
			       proto);
		char host[32];

		/* what the summary names it by */
		(void)snprintf(host, sizeof(host), "socket(%s)", family_name((uint32_t)family));
		*ret_denied =
		    json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:O?}", "host", host, "addr", "",
			      "port", 0, "protocol", px_attempt_proto_name(a.proto), "reason",
			      "raw-socket", "detail", detail, "pid", json_object_get(data, "pid"));
		if (!*ret_denied)
			return -ENOMEM;
	}
	n = px_attempt_report(l, now_ns, false);
	if (n)
		*ret_limit = px_attempt_limit_record(n, false);
	return 1;
}

json_t *px_attempt_limit_record(uint64_t n, bool some_unseen)
{
	char detail[200];

	(void)snprintf(detail, sizeof(detail),
		       "%" PRIu64 " more refused direct attempt%s not recorded one by one%s", n,
		       n == 1 ? "" : "s",
		       some_unseen ? " (some dropped by the kernel's queue unread)" : "");
	return json_pack("{s:s, s:s, s:I}", "limit", "net.attempts", "detail", detail, "suppressed",
			 (json_int_t)n);
}
