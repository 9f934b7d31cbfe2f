/* SPDX-License-Identifier: MIT */
/* Direct attempts: the packet parser and the record limiter (attempt.h). */
#include "proxy/attempt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define IP4_MIN	       20u
#define IP6_LEN	       40u
#define TCP_MIN	       20u
#define UDP_LEN	       8u
#define ICMP_HDR       8u
#define TCP_RST_ACK    0x14u
#define TCP_FLAGS_MASK 0x3fu /* FIN SYN RST PSH ACK URG */
#define MAX_EXT_HDRS   8u

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int found(px_attempt *ret, px_attempt_proto proto, int family, const uint8_t *addr,
		 uint16_t port)
{
	ret->proto = proto;
	ret->family = family;
	memcpy(ret->addr, addr, family == AF_INET ? 4 : 16);
	ret->port = port;
	return 0;
}

/* A reset the kernel sent for a SYN that found no socket: the refused
 * destination is the reset's source. */
static int from_reset(const uint8_t *tcp, size_t len, int family, const uint8_t *src,
		      px_attempt *ret)
{
	if (len < TCP_MIN)
		return -EINVAL;
	if ((tcp[13] & TCP_FLAGS_MASK) != TCP_RST_ACK || be32(tcp + 4) != 0)
		return -EINVAL;
	return found(ret, PX_ATTEMPT_TCP, family, src, be16(tcp));
}

/* The datagram an ICMP error quotes: its destination (IPv4). */
static int quoted_udp4(const uint8_t *q, size_t len, px_attempt *ret)
{
	size_t ihl;

	if (len < IP4_MIN || q[0] >> 4 != 4)
		return -EINVAL;
	ihl = (size_t)(q[0] & 15u) * 4;
	if (ihl < IP4_MIN || len < ihl + UDP_LEN || q[9] != IPPROTO_UDP)
		return -EINVAL;
	if ((be16(q + 6) & 0x1fffu) != 0)
		return -EINVAL; /* not the first fragment: no UDP header */
	return found(ret, PX_ATTEMPT_UDP, AF_INET, q + 16, be16(q + ihl + 2));
}

/* The same for IPv6, past the extension headers a UDP socket may carry. */
static int quoted_udp6(const uint8_t *q, size_t len, px_attempt *ret)
{
	size_t off = IP6_LEN;
	uint8_t next;

	if (len < IP6_LEN || q[0] >> 4 != 6)
		return -EINVAL;
	next = q[6];
	for (unsigned i = 0; i < MAX_EXT_HDRS && next != IPPROTO_UDP; i++) {
		if (next != IPPROTO_HOPOPTS && next != IPPROTO_ROUTING && next != IPPROTO_DSTOPTS)
			return -EINVAL;
		if (len < off + 8)
			return -EINVAL;
		next = q[off];
		off += ((size_t)q[off + 1] + 1) * 8;
	}
	if (next != IPPROTO_UDP || len < off + UDP_LEN)
		return -EINVAL;
	return found(ret, PX_ATTEMPT_UDP, AF_INET6, q + 24, be16(q + off + 2));
}

static int parse4(const uint8_t *p, size_t len, px_attempt *ret)
{
	size_t ihl = (size_t)(p[0] & 15u) * 4;

	if (len < IP4_MIN || ihl < IP4_MIN || len < ihl)
		return -EINVAL;
	if ((be16(p + 6) & 0x1fffu) != 0)
		return -EINVAL;
	if (p[9] == IPPROTO_TCP)
		return from_reset(p + ihl, len - ihl, AF_INET, p + 12, ret);
	if (p[9] == IPPROTO_ICMP && len >= ihl + ICMP_HDR && p[ihl] == 3 && p[ihl + 1] == 3)
		return quoted_udp4(p + ihl + ICMP_HDR, len - ihl - ICMP_HDR, ret);
	return -EINVAL;
}

static int parse6(const uint8_t *p, size_t len, px_attempt *ret)
{
	if (len < IP6_LEN)
		return -EINVAL;
	if (p[6] == IPPROTO_TCP)
		return from_reset(p + IP6_LEN, len - IP6_LEN, AF_INET6, p + 8, ret);
	if (p[6] == IPPROTO_ICMPV6 && len >= IP6_LEN + ICMP_HDR && p[IP6_LEN] == 1 &&
	    p[IP6_LEN + 1] == 4)
		return quoted_udp6(p + IP6_LEN + ICMP_HDR, len - IP6_LEN - ICMP_HDR, ret);
	return -EINVAL;
}

int px_attempt_parse(const uint8_t *pkt, size_t len, px_attempt *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (len < 1)
		return -EINVAL;
	switch (pkt[0] >> 4) {
	case 4:
		return parse4(pkt, len, ret);
	case 6:
		return parse6(pkt, len, ret);
	default:
		return -EINVAL;
	}
}

const char *px_attempt_proto_name(px_attempt_proto p)
{
	static const char *const names[] = {"tcp", "udp", "raw", "packet"};

	return (unsigned)p < _PX_ATTEMPT_PROTO_MAX ? names[p] : "?";
}

const char *px_attempt_reason(px_attempt_proto p)
{
	switch (p) {
	case PX_ATTEMPT_TCP:
		return "direct-connect";
	case PX_ATTEMPT_UDP:
		return "udp";
	case PX_ATTEMPT_RAW:
	case PX_ATTEMPT_PACKET:
	case _PX_ATTEMPT_PROTO_MAX:
	default:
		return "raw-socket";
	}
}

void px_attempt_addr_str(const px_attempt *a, char *buf, size_t size)
{
	if (size == 0)
		return;
	buf[0] = 0;
	if (a->family == AF_INET || a->family == AF_INET6)
		(void)inet_ntop(a->family, a->addr, buf, (socklen_t)size);
}

void px_attempt_limit_init(px_attempt_limit *l, uint64_t now_ns)
{
	memset(l, 0, sizeof(*l));
	px_bucket_init(&l->records, PX_ATTEMPT_PER_SEC, 1000000000ull, PX_ATTEMPT_BURST, now_ns);
	l->started = true;
}

static bool same_dest(const px_attempt *a, const px_attempt *b)
{
	return a->proto == b->proto && a->family == b->family && a->port == b->port &&
	       memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

static void suppress(px_attempt_limit *l, uint64_t n)
{
	if (__builtin_add_overflow(l->suppressed, n, &l->suppressed))
		l->suppressed = UINT64_MAX;
	if (__builtin_add_overflow(l->suppressed_all, n, &l->suppressed_all))
		l->suppressed_all = UINT64_MAX;
}

bool px_attempt_admit(px_attempt_limit *l, const px_attempt *a, uint64_t now_ns)
{
	size_t i;

	if (!l->started)
		px_attempt_limit_init(l, now_ns);
	for (i = 0; i < l->n_dest; i++)
		if (same_dest(&l->dest[i].a, a))
			break;
	if (i == l->n_dest) {
		if (l->n_dest < PX_ATTEMPT_DESTS)
			l->n_dest++;
		else
			i = l->next_evict++ % PX_ATTEMPT_DESTS;
		l->dest[i].a = *a;
		l->dest[i].seen = 0;
	}
	if (l->dest[i].seen < UINT32_MAX)
		l->dest[i].seen++;
	if (l->dest[i].seen <= PX_ATTEMPT_PER_DEST && px_bucket_take_exact(&l->records, 1, now_ns))
		return true;
	suppress(l, 1);
	return false;
}

void px_attempt_count_unseen(px_attempt_limit *l, uint64_t n)
{
	suppress(l, n);
}

uint64_t px_attempt_report(px_attempt_limit *l, uint64_t now_ns, bool final)
{
	uint64_t n = l->suppressed;

	if (n == 0 || (!final && now_ns < l->report_ns))
		return 0;
	l->suppressed = 0;
	l->report_ns = now_ns + PX_ATTEMPT_REPORT_NS;
	return n;
}

uint64_t px_attempt_next_report_ns(const px_attempt_limit *l)
{
	return l->suppressed ? l->report_ns : UINT64_MAX;
}
