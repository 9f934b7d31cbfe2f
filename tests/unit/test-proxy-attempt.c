/* SPDX-License-Identifier: MIT */
/* TAP tests for direct attempts: the packet parser and the record limiter (src/proxy/attempt.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/attempt.h"
#include "proxy/proxy.h"
#include "tap.h"

/* An IPv4 header (20 bytes) from src to dst carrying proto. */
static size_t ip4(uint8_t *p, uint8_t proto, const char *src, const char *dst)
{
	memset(p, 0, 20);
	p[0] = 0x45;
	p[8] = 64;
	p[9] = proto;
	(void)inet_pton(AF_INET, src, p + 12);
	(void)inet_pton(AF_INET, dst, p + 16);
	return 20;
}

static size_t ip6(uint8_t *p, uint8_t next, const char *src, const char *dst)
{
	memset(p, 0, 40);
	p[0] = 0x60;
	p[6] = next;
	p[7] = 64;
	(void)inet_pton(AF_INET6, src, p + 8);
	(void)inet_pton(AF_INET6, dst, p + 24);
	return 40;
}

static size_t tcp(uint8_t *p, uint16_t sport, uint16_t dport, uint32_t seq, uint8_t flags)
{
	memset(p, 0, 20);
	p[0] = (uint8_t)(sport >> 8), p[1] = (uint8_t)sport;
	p[2] = (uint8_t)(dport >> 8), p[3] = (uint8_t)dport;
	p[4] = (uint8_t)(seq >> 24), p[5] = (uint8_t)(seq >> 16), p[6] = (uint8_t)(seq >> 8),
	p[7] = (uint8_t)seq;
	p[12] = 0x50;
	p[13] = flags;
	return 20;
}

static size_t udp(uint8_t *p, uint16_t sport, uint16_t dport)
{
	memset(p, 0, 8);
	p[0] = (uint8_t)(sport >> 8), p[1] = (uint8_t)sport;
	p[2] = (uint8_t)(dport >> 8), p[3] = (uint8_t)dport;
	return 8;
}

static void test_parse(void)
{
	uint8_t pkt[256];
	char s[INET6_ADDRSTRLEN];
	px_attempt a;
	size_t n;

	n = ip4(pkt, IPPROTO_TCP, "1.2.3.4", "1.2.3.4");
	n += tcp(pkt + n, 9999, 40000, 0, 0x14);
	ok(px_attempt_parse(pkt, n, &a) == 0 && a.proto == PX_ATTEMPT_TCP && a.port == 9999,
	   "an IPv4 reset of a SYN: tcp to its source port");
	px_attempt_addr_str(&a, s, sizeof(s));
	ok(strcmp(s, "1.2.3.4") == 0 && strcmp(px_attempt_reason(a.proto), "direct-connect") == 0,
	   "... at its source address (%s)", s);
	tcp(pkt + 20, 9999, 40000, 12345, 0x14);
	ok(px_attempt_parse(pkt, n, &a) == -EINVAL, "a reset with a sequence number: not a SYN's");
	tcp(pkt + 20, 9999, 40000, 0, 0x04);
	ok(px_attempt_parse(pkt, n, &a) == -EINVAL, "RST without ACK: not a SYN's");
	tcp(pkt + 20, 9999, 40000, 0, 0x12);
	ok(px_attempt_parse(pkt, n, &a) == -EINVAL, "SYN|ACK: not a refusal");
	ok(px_attempt_parse(pkt, 30, &a) == -EINVAL, "a cut TCP header");
	pkt[6] = 0x00, pkt[7] = 0x10;
	tcp(pkt + 20, 9999, 40000, 0, 0x14);
	ok(px_attempt_parse(pkt, n, &a) == -EINVAL, "a later fragment");
	pkt[7] = 0;

	/* ICMP port unreachable quoting a UDP datagram to 1.2.3.4:9999 */
	n = ip4(pkt, IPPROTO_ICMP, "1.2.3.4", "1.2.3.4");
	memset(pkt + n, 0, 8);
	pkt[n] = 3, pkt[n + 1] = 3;
	n += 8;
	n += ip4(pkt + n, IPPROTO_UDP, "1.2.3.4", "1.2.3.4");
	n += udp(pkt + n, 5555, 9999);
	ok(px_attempt_parse(pkt, n, &a) == 0 && a.proto == PX_ATTEMPT_UDP && a.port == 9999 &&
	       a.family == AF_INET,
	   "ICMP port unreachable: udp to the quoted destination");
	ok(px_attempt_parse(pkt, n - 1, &a) == -EINVAL, "... with the UDP header cut: refused");
	pkt[21] = 1;
	ok(px_attempt_parse(pkt, n, &a) == -EINVAL, "ICMP host unreachable is not a port refusal");
	pkt[21] = 3;
	pkt[28 + 9] = IPPROTO_TCP;
	ok(px_attempt_parse(pkt, n, &a) == -EINVAL, "ICMP quoting TCP: not a UDP refusal");
	pkt[28] = 0x4f;
	pkt[28 + 9] = IPPROTO_UDP;
	ok(px_attempt_parse(pkt, n, &a) == -EINVAL, "a quoted header longer than the quote");

	n = ip6(pkt, IPPROTO_TCP, "2001:db8::7", "2001:db8::7");
	n += tcp(pkt + n, 443, 40000, 0, 0x14);
	ok(px_attempt_parse(pkt, n, &a) == 0 && a.family == AF_INET6 && a.port == 443,
	   "an IPv6 reset of a SYN");
	px_attempt_addr_str(&a, s, sizeof(s));
	ok(strcmp(s, "2001:db8::7") == 0, "... at its source (%s)", s);

	n = ip6(pkt, IPPROTO_ICMPV6, "::1", "::1");
	memset(pkt + n, 0, 8);
	pkt[n] = 1, pkt[n + 1] = 4;
	n += 8;
	n += ip6(pkt + n, IPPROTO_DSTOPTS, "::1", "2001:db8::9");
	memset(pkt + n, 0, 8);
	pkt[n] = IPPROTO_UDP; /* one 8-byte destination options header */
	n += 8;
	n += udp(pkt + n, 5555, 53);
	ok(px_attempt_parse(pkt, n, &a) == 0 && a.proto == PX_ATTEMPT_UDP && a.port == 53,
	   "ICMPv6 port unreachable past an extension header");
	px_attempt_addr_str(&a, s, sizeof(s));
	ok(strcmp(s, "2001:db8::9") == 0, "... to the quoted destination (%s)", s);
	ok(px_attempt_parse(pkt, 1, &a) == -EINVAL &&
	       px_attempt_parse((const uint8_t *)"", 0, &a) == -EINVAL,
	   "one byte, no byte");
	pkt[0] = 0x50;
	ok(px_attempt_parse(pkt, n, &a) == -EINVAL, "IP version 5");
}

static void test_limit(void)
{
	px_attempt_limit l;
	px_attempt a = {.proto = PX_ATTEMPT_UDP, .family = AF_INET, .port = 9999};
	uint64_t t = 1000000000ull, recorded = 0, rep;
	unsigned i;

	px_attempt_limit_init(&l, t);
	for (i = 0; i < 10; i++)
		recorded += px_attempt_admit(&l, &a, t);
	ok(recorded == PX_ATTEMPT_PER_DEST, "one destination: the first %u recorded (%llu)",
	   PX_ATTEMPT_PER_DEST, (unsigned long long)recorded);
	rep = px_attempt_report(&l, t, false);
	ok(rep == 10 - PX_ATTEMPT_PER_DEST, "the rest reported as a number (%llu)",
	   (unsigned long long)rep);
	a.port = 1;
	ok(!px_attempt_admit(&l, (a.port = 9999, &a), t + 1), "the same destination stays counted");
	ok(px_attempt_report(&l, t + 2, false) == 0, "at most one report a second");
	ok(px_attempt_report(&l, t + PX_ATTEMPT_REPORT_NS, false) == 1, "the next second: 1");
	ok(px_attempt_next_report_ns(&l) == UINT64_MAX, "nothing pending");

	/* 10,000 attempts to distinct destinations in one instant */
	recorded = 0;
	px_attempt_limit_init(&l, t);
	for (i = 0; i < 10000; i++) {
		a.port = (uint16_t)(i % 60000 + 1);
		a.addr[0] = (uint8_t)(i / 60000);
		recorded += px_attempt_admit(&l, &a, t);
	}
	rep = px_attempt_report(&l, t, true);
	ok(recorded == PX_ATTEMPT_BURST && rep == 10000 - PX_ATTEMPT_BURST,
	   "a flood to distinct destinations: %u recorded, the rest counted (%llu, %llu)",
	   PX_ATTEMPT_BURST, (unsigned long long)recorded, (unsigned long long)rep);
	a.port = 7;
	ok(px_attempt_admit(&l, &a, t + 500000000ull), "the bucket refills: 2 a second");
	px_attempt_count_unseen(&l, 5);
	ok(px_attempt_next_report_ns(&l) != UINT64_MAX &&
	       px_attempt_report(&l, t + 2 * PX_ATTEMPT_REPORT_NS, false) == 5 &&
	       l.suppressed_all == 10000 - PX_ATTEMPT_BURST + 5,
	   "attempts the kernel dropped are counted with the others");
	ok(strcmp(px_attempt_proto_name(PX_ATTEMPT_PACKET), "packet") == 0 &&
	       strcmp(px_attempt_reason(PX_ATTEMPT_RAW), "raw-socket") == 0,
	   "names");
}

/* A syscall.denied record of socket(family, type, proto) as the seccomp
 * listener writes it, given to px_raw_socket_event(). */
static int raw_event(px_attempt_limit *l, const char *syscall, unsigned family, unsigned type,
		     unsigned proto, uint64_t now, json_t **denied, json_t **limit)
{
	char a0[16], a1[16], a2[16];
	json_t *data;
	int r;

	(void)snprintf(a0, sizeof(a0), "0x%x", family);
	(void)snprintf(a1, sizeof(a1), "0x%x", type);
	(void)snprintf(a2, sizeof(a2), "0x%x", proto);
	data =
	    json_pack("{s:s, s:[s,s,s], s:i}", "syscall", syscall, "args", a0, a1, a2, "pid", 42);
	r = px_raw_socket_event(l, data, now, denied, limit);
	json_decref(data);
	return r;
}

static const char *str_of(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static void test_raw_socket(void)
{
	const uint64_t t = 5000000000ull;
	px_attempt_limit l;
	json_t *denied, *limit;
	unsigned recorded = 0;
	uint64_t counted = 0;
	int r;

	px_attempt_limit_init(&l, t);
	r = raw_event(&l, "socket", AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0x300, t, &denied, &limit);
	ok(r == 1 && denied && !limit && strcmp(str_of(denied, "host"), "socket(AF_PACKET)") == 0 &&
	       strcmp(str_of(denied, "protocol"), "packet") == 0 &&
	       strcmp(str_of(denied, "reason"), "raw-socket") == 0 &&
	       json_integer_value(json_object_get(denied, "pid")) == 42 &&
	       strncmp(str_of(denied, "detail"), "socket(AF_PACKET, SOCK_RAW, 768) refused", 40) ==
		   0,
	   "socket(AF_PACKET, SOCK_RAW|SOCK_CLOEXEC): net.denied raw-socket, the flags left out "
	   "(%s)",
	   str_of(denied, "detail"));
	json_decref(denied);
	r = raw_event(&l, "socket", AF_INET, SOCK_PACKET, 3, t, &denied, &limit);
	ok(r == 1 && denied && strcmp(str_of(denied, "protocol"), "raw") == 0 &&
	       strncmp(str_of(denied, "detail"), "socket(AF_INET, SOCK_PACKET, 3)", 31) == 0,
	   "socket(AF_INET, SOCK_PACKET): a raw socket, named so (%s)", str_of(denied, "detail"));
	json_decref(denied);
	r = raw_event(&l, "socket", AF_INET, SOCK_STREAM, 0, t, &denied, &limit);
	ok(r == 0 && !denied, "another socket is not a raw-socket attempt");
	r = raw_event(&l, "connect", AF_PACKET, SOCK_RAW, 0, t, &denied, &limit);
	ok(r == 0 && !denied, "nor another system call");
	/* a loop of packet sockets: a few records, the rest one limit.hit a second */
	px_attempt_limit_init(&l, t);
	for (unsigned i = 0; i < 500; i++) {
		(void)raw_event(&l, "socket", AF_PACKET, SOCK_RAW, 0, t + i * 1000000ull, &denied,
				&limit);
		recorded += denied != NULL;
		if (limit)
			counted +=
			    (uint64_t)json_integer_value(json_object_get(limit, "suppressed"));
		json_decref(denied);
		json_decref(limit);
	}
	counted += px_attempt_report(&l, t + 500000000ull, true);
	ok(recorded == PX_ATTEMPT_PER_DEST && counted == 500 - PX_ATTEMPT_PER_DEST,
	   "500 packet sockets: %u recorded, %llu counted", recorded, (unsigned long long)counted);
}

int main(void)
{
	test_parse();
	test_limit();
	test_raw_socket();
	return tap_done();
}
