/* SPDX-License-Identifier: MIT */
/*
 * The sandbox resolver (docs/proxy.md, "DNS inside the sandbox"): each query
 * the agent sends to port 53 of any address is answered here, from the egress
 * rules alone. An allowed name gets its synthetic address (synthetic.h), any
 * other name NXDOMAIN; nothing is ever looked up for the agent, so nothing
 * real reaches it by DNS. Every query within net.rate is a net.dns record;
 * past it the answer is REFUSED and the count is reported as one limit.hit
 * per second.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/allow.h"
#include "proxy/dnsmsg.h"
#include "proxy/redirect.h"

typedef struct verdict {
	px_dns_rcode rcode;
	px_addr addr;
	bool has_addr;
	const char *reason; /* "" when answered as asked */
	int rule;
} verdict;

static verdict judge(px_loop *L, const px_dns_question *q)
{
	verdict v = {.rcode = PX_RCODE_NOERROR, .reason = "", .rule = -1};
	uint32_t index;
	int r;

	if (q->qclass != PX_DNS_CLASS_IN) {
		v.rcode = PX_RCODE_REFUSED;
		v.reason = "class-not-in";
		return v;
	}
	v.rule = q->hostname ? px_allow_name(L->cfg, q->name) : -EACCES;
	if (v.rule < 0) {
		/* definite, so that clients do not retry: the name does not exist here */
		v.rcode = PX_RCODE_NXDOMAIN;
		v.reason = "name-not-allowed";
		return v;
	}
	if (q->qtype != PX_DNS_TYPE_A && q->qtype != PX_DNS_TYPE_AAAA)
		return v; /* NOERROR, no data: the name exists, with addresses only */
	r = px_synthetic_assign(L->synth, q->name, &index);
	if (r < 0) {
		v.rcode = PX_RCODE_REFUSED;
		v.reason = r == -ENOSPC ? "too-many-names" : "bad-name";
		return v;
	}
	px_synthetic_addr(index, q->qtype == PX_DNS_TYPE_A ? AF_INET : AF_INET6, &v.addr);
	v.has_addr = true;
	return v;
}

static void record(px_loop *L, const px_dns_question *q, const verdict *v)
{
	char type[16], addr[INET6_ADDRSTRLEN] = "";

	if (v->has_addr)
		(void)inet_ntop(v->addr.family, v->addr.addr, addr, sizeof(addr));
	(void)px_events_emit(L->ev, "net.dns",
			     json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "name", q->shown, "type",
				       px_dns_type_name(q->qtype, type), "rcode",
				       px_dns_rcode_name(v->rcode), "answer", addr, "rule",
				       v->rule >= 0 ? L->cfg->egress[v->rule].host : "", "reason",
				       v->reason));
}

/* The answer to one datagram into out; 0 when it gets none. */
static size_t answer(px_loop *L, const uint8_t *in, size_t n, uint8_t *out)
{
	px_dns_question q;
	verdict v = {.reason = "malformed-query", .rule = -1};
	int r = px_dns_parse_query(in, n, &q);

	if (r == -EBADMSG)
		return 0; /* too short to answer, or a response: never reflected */
	if (!px_bucket_take_exact(&L->sh->rate, 1, px_now_ns())) {
		L->redir->dns_over_rate++;
		return px_dns_build_answer(&q, in, r == 0 ? PX_RCODE_REFUSED : (px_dns_rcode)r,
					   NULL, out);
	}
	if (r != PX_RCODE_NOERROR) {
		v.rcode = (px_dns_rcode)r;
		record(L, &q, &v);
		return px_dns_build_answer(&q, in, v.rcode, NULL, out);
	}
	v = judge(L, &q);
	record(L, &q, &v);
	return px_dns_build_answer(&q, in, v.rcode, v.has_addr ? &v.addr : NULL, out);
}

/* The answer leaves from the address the query was sent to (IP(V6)_PKTINFO):
 * a client that asked 8.8.8.8 takes an answer only from 8.8.8.8. */
static void fix_pktinfo(struct msghdr *mh)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			pi.ipi6_ifindex = 0;
			memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		} else if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(cm), sizeof(pi));
			pi.ipi_spec_dst = pi.ipi_addr;
			pi.ipi_ifindex = 0;
			memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		}
	}
}

void px_sandbox_resolver_read(px_loop *L, int fd)
{
	/* bounded per wake-up: a flood of queries must not starve the tunnels */
	for (int k = 0; k < 64; k++) {
		uint8_t in[PX_DNSMSG_MAX + 1], out[PX_DNSMSG_MAX];
		struct sockaddr_storage peer;
		union {
			char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
			struct cmsghdr align;
		} cb;
		struct iovec iov = {.iov_base = in, .iov_len = sizeof(in)};
		struct msghdr mh = {.msg_name = &peer,
				    .msg_namelen = sizeof(peer),
				    .msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cb.buf,
				    .msg_controllen = sizeof(cb.buf)};
		ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);
		size_t len;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		len = answer(L, in, (size_t)n, out);
		if (len == 0)
			continue;
		iov.iov_base = out;
		iov.iov_len = len;
		if (mh.msg_flags & MSG_CTRUNC)
			mh.msg_controllen = 0;
		fix_pktinfo(&mh);
		/* a full socket buffer loses the answer, as UDP may: the client asks again */
		(void)sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
}
