/* SPDX-License-Identifier: MIT */
/*
 * Idle upstream connections kept for reuse (docs/proxy.md, "Upstream
 * connections"): a bounded pool per worker, keyed by everything that makes
 * two requests' connections interchangeable: the host (the name TLS verified
 * and the Host header), port, plain or TLS, and the credential the requests
 * carried, so a connection never serves requests of two credentials. An
 * idle socket stays in the worker's epoll set with its watch (EPOLLIN and
 * EPOLLRDHUP: an EOF, an error or stray bytes mean the origin is done with
 * it, px_pool_drop_watch()), so that neither putting nor taking it costs a
 * system call; one put without a watch is checked for EOF when taken. One
 * idle longer than PX_POOL_IDLE_NS is closed.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <openssl/ssl.h>

#include "proxy/dns.h"
#include "proxy/http.h"

#define PX_POOL_MAX	64u /* idle connections per worker */
#define PX_POOL_PER_KEY 16u
#define PX_POOL_IDLE_NS (15ull * 1000000000ull)

typedef struct px_pool_key {
	char host[PX_MAX_HOST + 1];
	uint16_t port;
	bool tls;
	int cred; /* index of the credential the requests carry, -1 for none */
} px_pool_key;

typedef struct px_pool_entry {
	px_pool_key key;
	int fd;
	SSL *ssl; /* NULL for plain */
	px_addr addr;
	uint64_t idle_since_ns;
	void *watch; /* the caller's epoll registration of fd, or NULL */
} px_pool_entry;

/* A watch whose fd the pool closed: events already fetched may name it. */
typedef void px_pool_drop_fn(void *watch, void *userdata);

typedef struct px_pool {
	px_pool_entry e[PX_POOL_MAX];
	size_t n;
	uint64_t reused;	  /* requests sent on a pooled connection */
	px_pool_drop_fn *on_drop; /* NULL: no watches */
	void *userdata;
} px_pool;

/* The most recently pooled connection for k that is still open, moved to
 * the caller (fd, ssl, the address it goes to, its watch when ret_watch is
 * not NULL). false when there is none. */
bool px_pool_take(px_pool *p, const px_pool_key *k, uint64_t now, int *ret_fd, SSL **ret_ssl,
		  px_addr *ret_addr, void **ret_watch);
/* Keeps fd (and ssl, and the watch epoll reports it with, or NULL) for k,
 * or closes them: the oldest idle one of k gives way beyond
 * PX_POOL_PER_KEY, the oldest of all beyond PX_POOL_MAX. */
void px_pool_put(px_pool *p, const px_pool_key *k, int fd, SSL *ssl, const px_addr *addr,
		 uint64_t now, void *watch);
/* epoll reported something on an idle connection: it is closed. false when
 * no idle connection has this watch (taken or closed since). */
bool px_pool_drop_watch(px_pool *p, const void *watch);
/* Closes the connections idle for PX_POOL_IDLE_NS; the next expiry or 0. */
uint64_t px_pool_expire(px_pool *p, uint64_t now);
void px_pool_clear(px_pool *p);
