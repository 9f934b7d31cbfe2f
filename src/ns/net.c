/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "ns/ns.h"

int ns_loopback_up(void)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {0};

	if (fd < 0)
		return -errno;
	strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return -errno;
	return 0;
}

/* One RTM_NEWROUTE: "local ADDR/0 dev lo table local", family AF_INET or
 * AF_INET6, acknowledged by the kernel (NLM_F_ACK) so a refusal is seen. */
static int add_local_default(int nl, int family, int ifindex, uint32_t seq)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		char attrs[64];
	} req = {0};
	struct {
		struct nlmsghdr nh;
		struct nlmsgerr err;
		char pad[256];
	} ack;
	struct rtattr *ra;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	ssize_t n;

	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.rt));
	req.nh.nlmsg_type = RTM_NEWROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
	req.nh.nlmsg_seq = seq;
	req.rt.rtm_family = (unsigned char)family;
	req.rt.rtm_dst_len = 0;
	req.rt.rtm_table = RT_TABLE_LOCAL;
	req.rt.rtm_protocol = RTPROT_STATIC;
	req.rt.rtm_scope = RT_SCOPE_HOST;
	req.rt.rtm_type = RTN_LOCAL;
	ra = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
	ra->rta_type = RTA_OIF;
	ra->rta_len = RTA_LENGTH(sizeof(int));
	memcpy(RTA_DATA(ra), &ifindex, sizeof(int));
	req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(ra->rta_len);

	if (sendto(nl, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	for (;;) {
		n = recv(nl, &ack, sizeof(ack), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if ((size_t)n < NLMSG_LENGTH(sizeof(struct nlmsgerr)) || ack.nh.nlmsg_seq != seq)
			continue; /* not the answer to this request */
		if (ack.nh.nlmsg_type != NLMSG_ERROR)
			return -EPROTO;
		return ack.err.error; /* 0 or -errno */
	}
}

int ns_local_routes(const char **reterr_what)
{
	_cleanup_close_ int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	int lo = (int)if_nametoindex("lo");
	int r;

	*reterr_what = "rtnetlink";
	if (nl < 0)
		return -errno;
	if (lo <= 0)
		return -ENODEV;
	*reterr_what = "local 0.0.0.0/0 dev lo";
	r = add_local_default(nl, AF_INET, lo, 1);
	if (r < 0)
		return r;
	*reterr_what = "local ::/0 dev lo";
	return add_local_default(nl, AF_INET6, lo, 2);
}

int ns_proxy_listener(unsigned port)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in sa = {
	    .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	int one = 1;

	if (fd < 0)
		return -errno;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* a transparent listener on [::]:port may share the port (the more
	 * specific bind gets 127.0.0.1); only sockets of this uid can join */
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* A socket on the wildcard address: IPv6 dual-stack (IPv4 peers appear as
 * ::ffff:a.b.c.d), or IPv4 alone where the netns has no IPv6. */
static int wildcard_socket(int type, unsigned port, bool reuseport)
{
	_cleanup_close_ int fd = socket(AF_INET6, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
	struct sockaddr_in sa4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int zero = 0, one = 1, fam = 0, r;
	socklen_t l = sizeof(fam);

	if (fd >= 0) {
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	} else {
		if (errno != EAFNOSUPPORT)
			return -errno;
		fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -errno;
	}
	if (type == SOCK_STREAM)
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &fam, &l) < 0)
		return -errno;
	r = fam == AF_INET6 ? bind(fd, (struct sockaddr *)&sa6, sizeof(sa6))
			    : bind(fd, (struct sockaddr *)&sa4, sizeof(sa4));
	if (r < 0)
		return -errno;
	if (type == SOCK_STREAM && listen(fd, 128) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* Adds port to set[0..*n) unless it is there; *n counts past max too. */
static void add_port(uint16_t *set, size_t *n, size_t max, uint16_t port)
{
	for (size_t i = 0; i < *n && i < max; i++)
		if (set[i] == port)
			return;
	if (*n < max)
		set[*n] = port;
	(*n)++;
}

size_t ns_egress_ports(const sc_plan *plan, uint16_t *ports, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < plan->n_egress; i++) {
		const plan_egress *e = &plan->egress[i];

		/* a rule without ports allows 80 and 443 */
		if (e->n_ports == 0) {
			add_port(ports, &n, max, 80);
			add_port(ports, &n, max, 443);
		}
		for (size_t k = 0; k < e->n_ports; k++)
			add_port(ports, &n, max, e->ports[k]);
	}
	return n;
}

int ns_transparent_sockets(const sc_plan *plan, unsigned proxy_port, int *fds, size_t max,
			   size_t *ret_n, const char **reterr_what)
{
	uint16_t ports[NS_TRANSPARENT_MAX_FDS];
	size_t n = 0, n_ports = 0;
	int fd, r = 0;

	if (max > NS_TRANSPARENT_MAX_FDS)
		max = NS_TRANSPARENT_MAX_FDS;

	*ret_n = 0;
	*reterr_what = "udp port 53";
	if (max == 0)
		return -ENOSPC;
	fd = wildcard_socket(SOCK_DGRAM, NS_DNS_PORT, false);
	if (fd < 0)
		return fd;
	fds[n++] = fd;
	n_ports = ns_egress_ports(plan, ports, max - 1);
	if (n_ports > max - 1) {
		*reterr_what = "more allowed ports than transparent listeners";
		r = -E2BIG;
		goto fail;
	}
	*reterr_what = "tcp listener on an allowed port";
	for (size_t i = 0; i < n_ports; i++) {
		/* the proxy's own port is shared with its 127.0.0.1 listener:
		 * the more specific bind gets 127.0.0.1 (SO_REUSEPORT) */
		fd = wildcard_socket(SOCK_STREAM, ports[i], ports[i] == proxy_port);
		if (fd < 0) {
			r = fd;
			goto fail;
		}
		fds[n++] = fd;
	}
	*ret_n = n;
	return 0;
fail:
	while (n > 0)
		(void)close(fds[--n]);
	return r;
}

#define LD_B(k)	      BPF_STMT(BPF_LD | BPF_B | BPF_ABS, (k))
#define LD_H(k)	      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, (k))
#define LD_W(k)	      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (k))
#define LD_BX(k)      BPF_STMT(BPF_LD | BPF_B | BPF_IND, (k))
#define LD_WX(k)      BPF_STMT(BPF_LD | BPF_W | BPF_IND, (k))
#define JEQ(k, t, f)  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define JSET(k, t, f) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (k), (t), (f))
#define RET(k)	      BPF_STMT(BPF_RET | BPF_K, (k))
#define ATTEMPT_SNAP  256u /* the headers, and what an ICMP error quotes */

/*
 * Offsets are from the network header (SOCK_DGRAM). Keeps a received
 * IPv4/IPv6 TCP segment whose flags are exactly RST|ACK among
 * FIN/SYN/RST/PSH/ACK/URG with sequence number 0, and ICMP type 3 code 3 /
 * ICMPv6 type 1 code 4. The worker's parser checks everything again.
 */
static const struct sock_filter attempt_filter[] = {
    /*  0 */ LD_W(SKF_AD_OFF + SKF_AD_PKTTYPE),
    /*  1 */ JEQ(PACKET_HOST, 0, 25),
    /*  2 */ LD_H(SKF_AD_OFF + SKF_AD_PROTOCOL),
    /*  3 */ JEQ(ETH_P_IP, 1, 0),
    /*  4 */ JEQ(ETH_P_IPV6, 10, 22),
    /* IPv4: not a later fragment; X = header length */
    /*  5 */ LD_H(6),
    /*  6 */ JSET(0x1fff, 20, 0),
    /*  7 */ BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),
    /*  8 */ LD_B(9),
    /*  9 */ JEQ(IPPROTO_TCP, 11, 0),
    /* 10 */ JEQ(IPPROTO_ICMP, 0, 16),
    /* 11 */ LD_BX(0),
    /* 12 */ JEQ(3, 0, 14),
    /* 13 */ LD_BX(1),
    /* 14 */ JEQ(3, 11, 12),
    /* IPv6: TCP or ICMPv6 right after the fixed header */
    /* 15 */ LD_B(6),
    /* 16 */ BPF_STMT(BPF_LDX | BPF_IMM, 40),
    /* 17 */ JEQ(IPPROTO_TCP, 3, 0),
    /* 18 */ JEQ(IPPROTO_ICMPV6, 0, 8),
    /* 19 */ LD_H(40),
    /* 20 */ JEQ(0x0104, 5, 6),
    /* TCP at X */
    /* 21 */ LD_BX(13),
    /* 22 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x3f),
    /* 23 */ JEQ(0x14, 0, 3),
    /* 24 */ LD_WX(4),
    /* 25 */ JEQ(0, 0, 1),
    /* 26 */ RET(ATTEMPT_SNAP),
    /* 27 */ RET(0),
};

int ns_attempt_socket(void)
{
	struct sock_fprog prog = {
	    .len = sizeof(attempt_filter) / sizeof(attempt_filter[0]),
	    .filter = (struct sock_filter *)attempt_filter,
	};
	struct sockaddr_ll sll = {
	    .sll_family = AF_PACKET,
	    .sll_protocol = htons(ETH_P_ALL),
	};
	_cleanup_close_ int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;

	if (fd < 0)
		return -errno;
	sll.sll_ifindex = (int)if_nametoindex("lo");
	if (sll.sll_ifindex <= 0)
		return -ENODEV;
	/* the filter first: protocol 0 receives nothing until the bind */
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
		return -errno;
	/* the filter drops the outgoing copies too; this spares running it */
	(void)setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		return -errno;
	return TAKE_FD(fd);
}
