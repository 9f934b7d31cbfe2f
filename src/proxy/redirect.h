/* SPDX-License-Identifier: MIT */
/*
 * What the worker serves besides its listener (docs/proxy.md, "DNS inside the
 * sandbox" and "Transparent redirection"): the sandbox resolver's UDP socket
 * and one transparent listener per allowed port, all created in the sandbox's
 * netns. Internal to sandbox-resolver.c and transparent.c.
 */
#pragma once

#include <stdint.h>

#include "proxy/conn.h"
#include "proxy/proxy.h"

#define PX_PEEK_NS	      (200ull * 1000000ull) /* a client that says nothing: server-first */
#define PX_REDIR_REPORT_NS    (1000000000ull)	    /* aggregated reports, at most once per */
#define PX_REDIR_DENIED_PER_S 20u		    /* net.denied of unknown addresses */

typedef struct px_tlisten {
	px_watch w; /* first: the loop's epoll data; type W_TRANSPARENT */
	int fd;
	uint16_t port;
} px_tlisten;

struct px_redirect {
	px_dns_watch dns_w; /* type W_SANDBOX_RESOLVER; fd -1 when there is none */
	px_tlisten listeners[PX_SEED_MAX_SOCKETS];
	size_t n_listeners;
	uint64_t dns_over_rate;	    /* queries refused over net.rate, not yet reported */
	uint64_t denied_unrecorded; /* connections refused past PX_REDIR_DENIED_PER_S */
	uint64_t denied_window_ns;  /* start of the current second of net.denied */
	unsigned denied_in_window;
	uint64_t report_ns; /* the next aggregated report, see px_redirect_tick() */
};
