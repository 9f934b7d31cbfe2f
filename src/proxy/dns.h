/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous name resolution with c-ares, driven by the worker's epoll loop
 * (ARES_OPT_SOCK_STATE_CB registers c-ares' sockets). A name is looked up as
 * the host's programs do: in the host's /etc/hosts (a copy read at setup: the
 * worker has no filesystem access afterwards), then RFC 6761 localhost, then
 * DNS.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define PX_DNS_MAX_ADDRS   16u
#define PX_DNS_MAX_SOCKETS 16u

typedef struct px_addr {
	int family;
	uint8_t addr[16];
} px_addr;

typedef struct px_dns px_dns;
typedef struct px_dns_query px_dns_query;

/* status 0 and n >= 1 addresses, or a negative errno: -ENOENT no such name,
 * -ENODATA the name has no address, -ETIMEDOUT, -EIO the server failed. */
typedef void (*px_dns_cb)(void *userdata, int status, const px_addr *addrs, size_t n);

/* Watch registration: the loop's epoll data for a c-ares socket. */
typedef struct px_dns_watch {
	int type; /* set by the loop */
	px_dns *dns;
	int fd;
} px_dns_watch;

/* server: "IP[:port]" or NULL for /etc/resolv.conf; /etc/hosts and
 * resolv.conf are read now, before any sandboxing. watch_type is stored in
 * each px_dns_watch for the loop. The worker keeps it until it exits. */
int px_dns_new(const char *server, int epfd, int watch_type, px_dns **ret);
/* Answers from /etc/hosts and for localhost come before this returns (then
 * *ret_query is NULL), as may errors; DNS answers come later. */
int px_dns_resolve(px_dns *d, const char *name, px_dns_cb cb, void *userdata,
		   px_dns_query **ret_query);
/* The owner is gone: the callback will not be called. */
void px_dns_cancel(px_dns_query *q);
void px_dns_process(px_dns *d, int fd, uint32_t epoll_events);
/* Milliseconds until c-ares needs px_dns_process_timeouts(), -1 if idle. */
int px_dns_timeout_ms(px_dns *d);
void px_dns_process_timeouts(px_dns *d);
