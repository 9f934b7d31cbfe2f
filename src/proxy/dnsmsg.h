/* SPDX-License-Identifier: MIT */
/*
 * The sandbox resolver's wire format (RFC 1035 4.1): a strict parser for the
 * one question of a query the agent sent, and the builder of its answer. Pure:
 * no I/O, safe on any byte string (the query comes from the sandbox).
 *
 * Why hand-written: Debian 12's c-ares (1.18) parses answers only
 * (ares_parse_*_reply); its message parser ares_dns_parse() came in 1.21.
 * A query is small and has one shape; what is not that shape is refused.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/dns.h"
#include "proxy/http.h"

#define PX_DNSMSG_MAX	 512u /* a query or answer; no EDNS larger sizes are offered */
#define PX_DNSMSG_TTL	 60u  /* seconds; the addresses are stable for the sandbox's life */
#define PX_DNS_TYPE_A	 1u
#define PX_DNS_TYPE_AAAA 28u
#define PX_DNS_CLASS_IN	 1u

typedef enum px_dns_rcode {
	PX_RCODE_NOERROR = 0,
	PX_RCODE_FORMERR = 1,
	PX_RCODE_SERVFAIL = 2,
	PX_RCODE_NXDOMAIN = 3,
	PX_RCODE_NOTIMP = 4,
	PX_RCODE_REFUSED = 5,
} px_dns_rcode;

typedef struct px_dns_question {
	uint16_t id;
	bool rd;		    /* recursion desired: echoed */
	size_t qsection;	    /* bytes from 12: the question as sent, echoed in the answer */
	char name[PX_MAX_HOST + 1]; /* lower-case, no final dot; "" for the root */
	bool hostname;		    /* only letters, digits, '-' and '_' in its labels */
	char shown[4 * PX_MAX_HOST + 1]; /* for the record: other bytes as \xHH */
	uint16_t qtype, qclass;
} px_dns_question;

/*
 * Parses a query. Returns:
 *   PX_RCODE_NOERROR  *q is filled;
 *   PX_RCODE_FORMERR  not one well-formed question (q->id is valid, answer it);
 *   PX_RCODE_NOTIMP   an opcode other than QUERY (q->id is valid);
 *   -EBADMSG          shorter than a header, or a response: drop it, unanswered.
 * Accepted: QR=0, opcode 0, QDCOUNT 1, ANCOUNT 0, NSCOUNT 0, ARCOUNT 0 or 1
 * (an EDNS OPT record, ignored), a name of labels of 1..63 bytes, at most
 * PX_MAX_HOST characters in text form, no compression pointer.
 */
int px_dns_parse_query(const uint8_t *buf, size_t len, px_dns_question *q);

/*
 * Builds the answer to q (whose query is buf) into out (PX_DNSMSG_MAX bytes):
 * the header with rcode, the question echoed, and for answer != NULL one
 * record of its family (A or AAAA, class IN, PX_DNSMSG_TTL). A FORMERR or
 * NOTIMP answer carries no question. Returns the length.
 */
size_t px_dns_build_answer(const px_dns_question *q, const uint8_t *buf, px_dns_rcode rcode,
			   const px_addr *answer, uint8_t *out);

/* "A", "AAAA", "MX"... or "TYPE<n>" (RFC 3597), into buf of 16 bytes. */
const char *px_dns_type_name(uint16_t qtype, char buf[16]);
const char *px_dns_rcode_name(px_dns_rcode rcode);
