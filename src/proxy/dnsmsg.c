/* SPDX-License-Identifier: MIT */
#include "proxy/dnsmsg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define HDR 12u

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static bool host_char(uint8_t ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
}

/* The name at buf[off..len): labels into q->name and q->shown; *ret_end past
 * the terminating zero label. */
static int parse_name(const uint8_t *buf, size_t len, size_t off, px_dns_question *q,
		      size_t *ret_end)
{
	size_t n = 0, s = 0;

	q->hostname = true;
	for (;;) {
		uint8_t l;

		if (off >= len)
			return -EBADMSG;
		l = buf[off++];
		if (l == 0)
			break;
		if (l > 63 || len - off < l)
			return -EBADMSG; /* also compression pointers (0xc0) and 0x40/0x80 */
		if (n + (n > 0) + l > PX_MAX_HOST)
			return -EBADMSG;
		if (n > 0) {
			q->name[n++] = '.';
			q->shown[s++] = '.';
		}
		for (uint8_t i = 0; i < l; i++) {
			uint8_t ch = buf[off + i];

			if (ch >= 'A' && ch <= 'Z')
				ch = (uint8_t)(ch - 'A' + 'a');
			if (!host_char(ch)) {
				q->hostname = false;
				s += (size_t)snprintf(q->shown + s, 5, "\\x%02x", ch);
			} else
				q->shown[s++] = (char)ch;
			q->name[n++] = (char)ch;
		}
		off += l;
	}
	q->name[n] = 0;
	q->shown[s] = 0;
	*ret_end = off;
	return 0;
}

int px_dns_parse_query(const uint8_t *buf, size_t len, px_dns_question *q)
{
	size_t end;
	uint16_t flags;

	memset(q, 0, sizeof(*q));
	if (len < HDR)
		return -EBADMSG;
	q->id = get16(buf);
	flags = get16(buf + 2);
	if (flags & 0x8000)
		return -EBADMSG; /* a response: never answer one (no reflection loops) */
	q->rd = (flags & 0x0100) != 0;
	if (((flags >> 11) & 0xf) != 0)
		return PX_RCODE_NOTIMP;
	if (len > PX_DNSMSG_MAX || get16(buf + 4) != 1 || get16(buf + 6) != 0 ||
	    get16(buf + 8) != 0 || get16(buf + 10) > 1)
		return PX_RCODE_FORMERR;
	if (parse_name(buf, len, HDR, q, &end) < 0 || len - end < 4)
		return PX_RCODE_FORMERR;
	q->qtype = get16(buf + end);
	q->qclass = get16(buf + end + 2);
	q->qsection = end + 4 - HDR;
	/* what follows is the OPT record ARCOUNT announced, or nothing */
	if (get16(buf + 10) == 0 && end + 4 != len)
		return PX_RCODE_FORMERR;
	return PX_RCODE_NOERROR;
}

size_t px_dns_build_answer(const px_dns_question *q, const uint8_t *buf, px_dns_rcode rcode,
			   const px_addr *answer, uint8_t *out)
{
	bool with_q = rcode != PX_RCODE_FORMERR && rcode != PX_RCODE_NOTIMP;
	size_t n = HDR;

	memset(out, 0, HDR);
	put16(out, q->id);
	/* QR, opcode QUERY, AA (the sandbox resolver is the authority on what
	 * exists here), RD echoed, RA */
	out[2] = (uint8_t)(0x80 | 0x04 | (q->rd ? 0x01 : 0));
	out[3] = (uint8_t)(0x80 | (rcode & 0xf));
	if (!with_q)
		return n;
	put16(out + 4, 1);
	memcpy(out + n, buf + HDR, q->qsection);
	n += q->qsection;
	if (!answer)
		return n;
	put16(out + 6, 1);
	put16(out + n, 0xc000 | HDR); /* the name: a pointer to the question's */
	put16(out + n + 2, answer->family == AF_INET ? PX_DNS_TYPE_A : PX_DNS_TYPE_AAAA);
	put16(out + n + 4, PX_DNS_CLASS_IN);
	put16(out + n + 6, 0);
	put16(out + n + 8, PX_DNSMSG_TTL);
	put16(out + n + 10, answer->family == AF_INET ? 4 : 16);
	n += 12;
	memcpy(out + n, answer->addr, answer->family == AF_INET ? 4 : 16);
	return n + (answer->family == AF_INET ? 4 : 16);
}

const char *px_dns_type_name(uint16_t qtype, char buf[16])
{
	static const struct {
		uint16_t t;
		const char *name;
	} names[] = {{1, "A"},	 {2, "NS"},	 {5, "CNAME"}, {6, "SOA"},    {12, "PTR"},
		     {15, "MX"}, {16, "TXT"},	 {28, "AAAA"}, {33, "SRV"},   {35, "NAPTR"},
		     {43, "DS"}, {48, "DNSKEY"}, {64, "SVCB"}, {65, "HTTPS"}, {255, "ANY"}};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].t == qtype)
			return names[i].name;
	(void)snprintf(buf, 16, "TYPE%u", qtype);
	return buf;
}

const char *px_dns_rcode_name(px_dns_rcode rcode)
{
	switch (rcode) {
	case PX_RCODE_NOERROR:
		return "NOERROR";
	case PX_RCODE_FORMERR:
		return "FORMERR";
	case PX_RCODE_SERVFAIL:
		return "SERVFAIL";
	case PX_RCODE_NXDOMAIN:
		return "NXDOMAIN";
	case PX_RCODE_NOTIMP:
		return "NOTIMP";
	case PX_RCODE_REFUSED:
		return "REFUSED";
	}
	return "?";
}
