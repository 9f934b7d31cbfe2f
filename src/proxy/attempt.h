/* SPDX-License-Identifier: MIT */
/*
 * Direct attempts: connections and datagrams the agent sent around the
 * proxy, seen as the sandbox's network stack refused them (docs/proxy.md,
 * "Every attempt seen"), and the limiter that keeps a flood of them from
 * becoming a flood of records. Pure: no I/O; the caller passes the time.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/limits.h"

typedef enum px_attempt_proto {
	PX_ATTEMPT_TCP,
	PX_ATTEMPT_UDP,
	PX_ATTEMPT_RAW,	   /* socket(AF_INET/AF_INET6, SOCK_RAW or SOCK_PACKET) */
	PX_ATTEMPT_PACKET, /* socket(AF_PACKET, ...) */
	_PX_ATTEMPT_PROTO_MAX,
} px_attempt_proto;

typedef struct px_attempt {
	px_attempt_proto proto;
	int family; /* AF_INET, AF_INET6; 0 for RAW and PACKET */
	uint8_t addr[16];
	uint16_t port;
} px_attempt;

/*
 * One packet seen on the sandbox's lo, from its network header on: a TCP
 * reset answering a SYN that found no listener (RST|ACK with sequence
 * number 0, as the kernel answers one) or an ICMP/ICMPv6 port unreachable
 * quoting the UDP datagram that found no socket. Returns 0 with *ret the
 * destination that was refused, -EINVAL for any other packet.
 */
int px_attempt_parse(const uint8_t *pkt, size_t len, px_attempt *ret);

/* "tcp", "udp", "raw", "packet" */
const char *px_attempt_proto_name(px_attempt_proto p);
/* The reason of its net.denied record: "direct-connect", "udp", "raw-socket". */
const char *px_attempt_reason(px_attempt_proto p);
/* "1.2.3.4", "2001:db8::1"; "" for RAW and PACKET. */
void px_attempt_addr_str(const px_attempt *a, char *buf, size_t size);

/*
 * Which attempts get a record of their own (docs/proxy.md, "Every attempt
 * seen"): the first PX_ATTEMPT_PER_DEST to each destination (protocol,
 * address, port), while the record bucket (PX_ATTEMPT_BURST records, then
 * PX_ATTEMPT_PER_SEC a second) has a token. Every other attempt is counted
 * and reported by px_attempt_report() at most once per second as one
 * limit.hit. Destinations beyond PX_ATTEMPT_DESTS replace the oldest.
 */
#define PX_ATTEMPT_PER_DEST  3u
#define PX_ATTEMPT_DESTS     64u
#define PX_ATTEMPT_BURST     32u
#define PX_ATTEMPT_PER_SEC   2u
#define PX_ATTEMPT_REPORT_NS 1000000000ull

typedef struct px_attempt_limit px_attempt_limit;
struct px_attempt_limit {
	struct {
		px_attempt a;
		uint32_t seen;
	} dest[PX_ATTEMPT_DESTS];
	size_t n_dest, next_evict;
	px_bucket records;
	uint64_t suppressed;	 /* not yet reported */
	uint64_t suppressed_all; /* over the whole run */
	uint64_t report_ns;	 /* not before this */
	bool started;
};

void px_attempt_limit_init(px_attempt_limit *l, uint64_t now_ns);
/* True: record this attempt on its own; false: it was counted. */
bool px_attempt_admit(px_attempt_limit *l, const px_attempt *a, uint64_t now_ns);
/* Attempts that could not be seen one by one (the kernel's queue was full):
 * counted as suppressed. */
void px_attempt_count_unseen(px_attempt_limit *l, uint64_t n);
/* The number to report now (and clears it), 0 when nothing is due: at most
 * once per PX_ATTEMPT_REPORT_NS unless final. */
uint64_t px_attempt_report(px_attempt_limit *l, uint64_t now_ns, bool final);
/* When the next report is due (UINT64_MAX: none pending). */
uint64_t px_attempt_next_report_ns(const px_attempt_limit *l);
