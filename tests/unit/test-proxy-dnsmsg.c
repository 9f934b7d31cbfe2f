/* SPDX-License-Identifier: MIT */
/* TAP tests for the sandbox resolver's query parser and answer builder. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/dnsmsg.h"
#include "tap.h"

/* A query for name (dotted) of qtype, class IN, with extra bytes appended. */
static size_t query(uint8_t *b, const char *name, uint16_t qtype, uint16_t arcount)
{
	size_t n = 12;
	const char *p = name;

	memset(b, 0, 12);
	b[0] = 0xab;
	b[1] = 0xcd;
	b[2] = 0x01; /* RD */
	b[5] = 1;
	b[11] = (uint8_t)arcount;
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		b[n++] = (uint8_t)l;
		memcpy(b + n, p, l);
		n += l;
		p += l + (dot ? 1 : 0);
	}
	b[n++] = 0;
	b[n++] = (uint8_t)(qtype >> 8);
	b[n++] = (uint8_t)qtype;
	b[n++] = 0;
	b[n++] = 1;
	return n;
}

int main(void)
{
	uint8_t b[600], out[PX_DNSMSG_MAX];
	px_dns_question q;
	px_addr a = {.family = AF_INET, .addr = {198, 18, 0, 7}};
	size_t n, m;
	char tb[16];

	n = query(b, "API.Example.com", PX_DNS_TYPE_A, 0);
	ok(px_dns_parse_query(b, n, &q) == PX_RCODE_NOERROR, "a plain A query parses");
	ok(strcmp(q.name, "api.example.com") == 0 && q.hostname && q.qtype == 1 && q.qclass == 1 &&
	       q.id == 0xabcd && q.rd,
	   "name lower-cased, type, class, id, RD");
	m = px_dns_build_answer(&q, b, PX_RCODE_NOERROR, &a, out);
	ok(m == n + 16 && out[0] == 0xab && out[1] == 0xcd && (out[2] & 0x80) && (out[2] & 1) &&
	       (out[3] & 15) == 0 && out[5] == 1 && out[7] == 1,
	   "the answer: id, QR, RD echoed, NOERROR, one question, one answer");
	ok(memcmp(out + 12, b + 12, n - 12) == 0,
	   "the question is echoed byte for byte (0x20 case)");
	ok(out[n] == 0xc0 && out[n + 1] == 12 && out[n + 3] == 1 && out[n + 11] == 4 &&
	       memcmp(out + n + 12, a.addr, 4) == 0,
	   "the record points to the question's name, type A, 4 bytes of address");
	m = px_dns_build_answer(&q, b, PX_RCODE_NXDOMAIN, NULL, out);
	ok(m == n && (out[3] & 15) == 3 && out[7] == 0, "NXDOMAIN: the question, no answer");

	n = query(b, "x.test", PX_DNS_TYPE_AAAA, 1);
	memcpy(b + n, "\0\0\x29\x10\0\0\0\0\0\0\0", 11); /* an EDNS OPT record */
	ok(px_dns_parse_query(b, n + 11, &q) == PX_RCODE_NOERROR && q.qtype == 28,
	   "an EDNS OPT record is accepted (and ignored)");
	n = query(b, "x.test", PX_DNS_TYPE_A, 0);
	ok(px_dns_parse_query(b, n + 1, &q) == PX_RCODE_FORMERR,
	   "trailing bytes without ARCOUNT: FORMERR");
	b[12] = 0xc0;
	ok(px_dns_parse_query(b, n, &q) == PX_RCODE_FORMERR, "a compression pointer: FORMERR");
	n = query(b, "x.test", PX_DNS_TYPE_A, 0);
	b[5] = 2;
	ok(px_dns_parse_query(b, n, &q) == PX_RCODE_FORMERR, "two questions: FORMERR");
	m = px_dns_build_answer(&q, b, PX_RCODE_FORMERR, NULL, out);
	ok(m == 12 && (out[3] & 15) == 1 && out[5] == 0, "FORMERR carries no question");
	n = query(b, "x.test", PX_DNS_TYPE_A, 0);
	b[2] |= 0x80;
	ok(px_dns_parse_query(b, n, &q) == -EBADMSG, "a response is dropped, never answered");
	b[2] = 0x28; /* opcode 5, UPDATE */
	ok(px_dns_parse_query(b, n, &q) == PX_RCODE_NOTIMP, "another opcode: NOTIMP");
	ok(px_dns_parse_query(b, 11, &q) == -EBADMSG, "shorter than a header: dropped");
	n = query(b, "x.test", PX_DNS_TYPE_A, 0);
	ok(px_dns_parse_query(b, n - 2, &q) == PX_RCODE_FORMERR, "a truncated question: FORMERR");

	n = query(b,
		  "a\x01"
		  "b.test",
		  PX_DNS_TYPE_A, 0);
	ok(px_dns_parse_query(b, n, &q) == PX_RCODE_NOERROR && !q.hostname &&
	       strcmp(q.shown, "a\\x01b.test") == 0,
	   "a label with a control byte: not a host name, shown escaped");
	{
		char big[300];

		memset(big, 'a', sizeof(big));
		for (size_t i = 63; i < sizeof(big); i += 64)
			big[i] = '.';
		big[253] = 0;
		n = query(b, big, PX_DNS_TYPE_A, 0);
		ok(px_dns_parse_query(b, n, &q) == PX_RCODE_NOERROR && strlen(q.name) == 253,
		   "a name of 253 characters parses");
		big[253] = 'a';
		big[254] = 0;
		n = query(b, big, PX_DNS_TYPE_A, 0);
		ok(px_dns_parse_query(b, n, &q) == PX_RCODE_FORMERR, "254 characters: FORMERR");
	}
	n = query(b, "", PX_DNS_TYPE_A, 0);
	ok(px_dns_parse_query(b, n, &q) == PX_RCODE_NOERROR && q.name[0] == 0, "the root name");
	ok(strcmp(px_dns_type_name(28, tb), "AAAA") == 0 &&
	       strcmp(px_dns_type_name(999, tb), "TYPE999") == 0,
	   "type names, RFC 3597 for unknown ones");
	return tap_done();
}
