/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
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
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/* One RTM_NEWROUTE "local <family default> dev lo table local", acknowledged. */
static int route_local_default(int nl, int family, int ifindex, uint32_t seq)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		struct rtattr oif;
		int ifindex;
	} req = {
	    .nh = {.nlmsg_len = sizeof(req),
		   .nlmsg_type = RTM_NEWROUTE,
		   .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE,
		   .nlmsg_seq = seq},
	    .rt = {.rtm_family = (unsigned char)family,
		   .rtm_table = RT_TABLE_LOCAL,
		   .rtm_protocol = RTPROT_STATIC,
		   .rtm_scope = RT_SCOPE_HOST,
		   .rtm_type = RTN_LOCAL},
	    .oif = {.rta_len = RTA_LENGTH(sizeof(int)), .rta_type = RTA_OIF},
	    .ifindex = ifindex,
	};
	struct {
		struct nlmsghdr nh;
		struct nlmsgerr err;
		char more[256];
	} ack;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};

	_Static_assert(sizeof(req) == NLMSG_LENGTH(sizeof(struct rtmsg)) + RTA_LENGTH(sizeof(int)),
		       "no padding in the request");
	if (sendto(nl, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(nl, &ack, sizeof(ack), 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if ((size_t)n < NLMSG_LENGTH(sizeof(struct nlmsgerr)) || ack.nh.nlmsg_seq != seq)
			continue;
		return ack.nh.nlmsg_type == NLMSG_ERROR ? ack.err.error : -EPROTO;
	}
}

int ns_net_route_local_all(void)
{
	_cleanup_close_ int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	int lo = (int)if_nametoindex("lo");
	int r;

	if (nl < 0)
		return -errno;
	if (lo <= 0)
		return -ENODEV;
	r = route_local_default(nl, AF_INET, lo, 1);
	if (r < 0)
		return r;
	r = route_local_default(nl, AF_INET6, lo, 2);
	/* a kernel or netns without IPv6 has nothing to route */
	return r == -EAFNOSUPPORT || r == -EOPNOTSUPP ? 0 : r;
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
