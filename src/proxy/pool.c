/* SPDX-License-Identifier: MIT */
#include "proxy/pool.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static bool key_eq(const px_pool_key *a, const px_pool_key *b)
{
	return a->port == b->port && a->tls == b->tls && a->cred == b->cred &&
	       strcmp(a->host, b->host) == 0;
}

static void drop(px_pool *p, size_t i)
{
	px_pool_entry *e = &p->e[i];

	if (e->ssl)
		SSL_free(e->ssl); /* no close_notify: the peer sees the FIN */
	(void)close(e->fd);	  /* and out of the epoll set */
	if (e->watch && p->on_drop)
		p->on_drop(e->watch, p->userdata);
	p->e[i] = p->e[--p->n];
}

/* An idle connection has nothing to read: EOF, an error or stray bytes
 * (an alert, a late answer) mean the origin is done with it. */
static bool still_open(const px_pool_entry *e)
{
	char b;
	ssize_t n = recv(e->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	return n < 0 && errno == EAGAIN;
}

bool px_pool_take(px_pool *p, const px_pool_key *k, uint64_t now, int *ret_fd, SSL **ret_ssl,
		  px_addr *ret_addr, void **ret_watch)
{
	(void)px_pool_expire(p, now);
	for (;;) {
		size_t best = p->n;

		for (size_t i = 0; i < p->n; i++)
			if (key_eq(&p->e[i].key, k) &&
			    (best == p->n || p->e[i].idle_since_ns > p->e[best].idle_since_ns))
				best = i;
		if (best == p->n)
			return false;
		/* a watched one: the epoll_wait(2) that just returned had nothing on it */
		if ((!p->e[best].watch || !ret_watch) && !still_open(&p->e[best])) {
			drop(p, best);
			continue;
		}
		*ret_fd = p->e[best].fd;
		*ret_ssl = p->e[best].ssl;
		*ret_addr = p->e[best].addr;
		if (ret_watch)
			*ret_watch = p->e[best].watch;
		p->e[best] = p->e[--p->n];
		p->reused++;
		return true;
	}
}

static size_t oldest(const px_pool *p, const px_pool_key *k)
{
	size_t o = p->n;

	for (size_t i = 0; i < p->n; i++)
		if ((!k || key_eq(&p->e[i].key, k)) &&
		    (o == p->n || p->e[i].idle_since_ns < p->e[o].idle_since_ns))
			o = i;
	return o;
}

void px_pool_put(px_pool *p, const px_pool_key *k, int fd, SSL *ssl, const px_addr *addr,
		 uint64_t now, void *watch)
{
	size_t same = 0;

	for (size_t i = 0; i < p->n; i++)
		same += key_eq(&p->e[i].key, k);
	if (same >= PX_POOL_PER_KEY)
		drop(p, oldest(p, k));
	else if (p->n >= PX_POOL_MAX)
		drop(p, oldest(p, NULL));
	p->e[p->n] =
	    (px_pool_entry){.key = *k, .fd = fd, .ssl = ssl, .idle_since_ns = now, .watch = watch};
	if (addr)
		p->e[p->n].addr = *addr;
	p->n++;
}

bool px_pool_drop_watch(px_pool *p, const void *watch)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->e[i].watch == watch) {
			drop(p, i);
			return true;
		}
	return false;
}

uint64_t px_pool_expire(px_pool *p, uint64_t now)
{
	uint64_t next = 0;

	for (size_t i = 0; i < p->n;) {
		uint64_t at = p->e[i].idle_since_ns + PX_POOL_IDLE_NS;

		if (at <= now) {
			drop(p, i);
			continue;
		}
		if (!next || at < next)
			next = at;
		i++;
	}
	return next;
}

void px_pool_clear(px_pool *p)
{
	while (p->n)
		drop(p, p->n - 1);
}
