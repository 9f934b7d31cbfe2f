/* SPDX-License-Identifier: MIT */
/*
 * The worker's side of "every attempt seen" (docs/proxy.md): the packet
 * socket on the sandbox's lo (ns_attempt_socket()) delivers the kernel's
 * answers to refused attempts; each becomes a net.denied record unless the
 * limiter (attempt.c) counts it instead, and the counted ones are reported
 * as one limit.hit "net.attempts" a second at most.
 */
#include <errno.h>
#include <linux/if_packet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "base/cleanup.h"
#include "proxy/conn.h"
#include "proxy/proxy.h"

#define BATCH 32u
#define SNAP  256u

static void record(px_loop *L, const px_attempt *a)
{
	char addr[INET6_ADDRSTRLEN], detail[PX_MAX_HOST + 160];
	const char *name = a->family ? px_loop_synthetic_name(L, a->family, a->addr) : NULL;
	const char *proto = px_attempt_proto_name(a->proto);
	json_t *d;

	px_attempt_addr_str(a, addr, sizeof(addr));
	(void)snprintf(detail, sizeof(detail),
		       "%s to %s%s%s port %u refused inside the sandbox: only the proxy at "
		       "127.0.0.1:%u leads out",
		       a->proto == PX_ATTEMPT_TCP ? "TCP connect" : "UDP datagram", addr,
		       name ? " = " : "", name ? name : "", (unsigned)a->port,
		       (unsigned)PLAN_PROXY_PORT);
	d = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s}", "host", name ? name : addr, "addr", addr,
		      "port", (int)a->port, "protocol", proto, "reason",
		      px_attempt_reason(a->proto), "detail", detail);
	(void)px_events_emit(L->ev, "net.denied", d);
}

/* What the kernel's queue dropped since the last call (PACKET_STATISTICS
 * reads and clears the counters). */
static void count_drops(px_loop *L)
{
	struct tpacket_stats st = {0};
	socklen_t len = sizeof(st);

	if (getsockopt(L->attempt_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0 &&
	    st.tp_drops > 0) {
		px_attempt_count_unseen(&L->attempts, st.tp_drops);
		L->attempts_unseen += st.tp_drops;
	}
}

void px_attempts_read(px_loop *L)
{
	static uint8_t bufs[BATCH][SNAP];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];

	/* a bounded number of batches per turn: the sandbox cannot starve the loop */
	for (unsigned turn = 0; turn < 16; turn++) {
		int n;

		memset(msgs, 0, sizeof(msgs));
		for (unsigned i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){.iov_base = bufs[i], .iov_len = SNAP};
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(L->attempt_fd, msgs, BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			break;
		for (int i = 0; i < n; i++) {
			px_attempt a;

			if (px_attempt_parse(bufs[i], msgs[i].msg_len, &a) < 0)
				continue;
			if (px_attempt_admit(&L->attempts, &a, L->now_ns))
				record(L, &a);
		}
		if ((unsigned)n < BATCH)
			break;
	}
	count_drops(L);
}

void px_attempts_report(px_loop *L, uint64_t now, bool final)
{
	uint64_t n;

	if (L->attempt_fd >= 0 && final)
		px_attempts_read(L);
	n = px_attempt_report(&L->attempts, now, final);
	if (n == 0)
		return;
	(void)px_events_emit(L->ev, "limit.hit", px_attempt_limit_record(n, L->attempts_unseen));
	L->attempts_unseen = 0;
}
