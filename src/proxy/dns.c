/* SPDX-License-Identifier: MIT */
#include "proxy/dns.h"

#include <fcntl.h>

#include <ares.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "base/io.h"
#include "proxy/hosts.h"

struct px_dns_query {
	px_dns_cb cb;
	void *userdata;
};

struct px_dns {
	ares_channel ch;
	px_hosts *hosts;
	int epfd;
	int watch_type;
	px_dns_watch watches[PX_DNS_MAX_SOCKETS];
};

static void sock_state_cb(void *data, ares_socket_t fd, int readable, int writable)
{
	px_dns *d = data;
	px_dns_watch *w = NULL, *free_slot = NULL;
	struct epoll_event ev = {0};

	for (size_t i = 0; i < PX_DNS_MAX_SOCKETS; i++) {
		if (d->watches[i].fd == fd)
			w = &d->watches[i];
		else if (d->watches[i].fd < 0 && !free_slot)
			free_slot = &d->watches[i];
	}
	if (!readable && !writable) {
		if (w) {
			(void)epoll_ctl(d->epfd, EPOLL_CTL_DEL, fd, NULL);
			w->fd = -1;
		}
		return;
	}
	ev.events = (readable ? EPOLLIN : 0u) | (writable ? EPOLLOUT : 0u);
	if (w) {
		ev.data.ptr = w;
		(void)epoll_ctl(d->epfd, EPOLL_CTL_MOD, fd, &ev);
		return;
	}
	if (!free_slot)
		return; /* c-ares times the query out; bounded by PX_DNS_MAX_SOCKETS */
	free_slot->fd = fd;
	ev.data.ptr = free_slot;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		free_slot->fd = -1;
}

static int set_server(px_dns *d, const char *server)
{
	char buf[80];
	const char *colon = strrchr(server, ':');
	unsigned char tmp[16];

	/* "IP[:port]"; a bare IPv6 address has colons but no port */
	if (strlen(server) >= sizeof(buf) - 2)
		return -EINVAL;
	if (inet_pton(AF_INET6, server, tmp) == 1)
		(void)snprintf(buf, sizeof(buf), "[%s]", server);
	else if (colon || inet_pton(AF_INET, server, tmp) == 1 || server[0] == '[')
		(void)snprintf(buf, sizeof(buf), "%s", server);
	else
		return -EINVAL;
	return ares_set_servers_ports_csv(d->ch, buf) == ARES_SUCCESS ? 0 : -EINVAL;
}

/* A host without /etc/hosts resolves with DNS alone, as its programs do. */
static int read_hosts(const char *path, px_hosts **ret)
{
	char *buf = NULL;
	size_t len = 0;
	int r = io_read_file_at(AT_FDCWD, path, PX_HOSTS_MAX_BYTES, &buf, &len);

	if (r == -ENOENT) {
		*ret = NULL;
		return 0;
	}
	if (r < 0)
		return r;
	r = px_hosts_parse(buf, len, ret);
	free(buf);
	return r;
}

int px_dns_new(const char *server, int epfd, int watch_type, px_dns **ret)
{
	struct ares_options opts = {0};
	px_dns *d;
	int r;

	if (ares_library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS)
		return -ENOMEM;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	r = read_hosts(PX_HOSTS_PATH, &d->hosts);
	if (r < 0) {
		free(d);
		return r;
	}
	d->epfd = epfd;
	d->watch_type = watch_type;
	for (size_t i = 0; i < PX_DNS_MAX_SOCKETS; i++) {
		d->watches[i].fd = -1;
		d->watches[i].type = watch_type;
		d->watches[i].dns = d;
	}
	opts.sock_state_cb = sock_state_cb;
	opts.sock_state_cb_data = d;
	/* c-ares would open /etc/hosts at every query, which the confined
	 * worker cannot: the copy read above answers first */
	opts.lookups = (char *)"b";
	opts.timeout = 2000;
	opts.tries = 2;
	r = ares_init_options(&d->ch, &opts,
			      ARES_OPT_SOCK_STATE_CB | ARES_OPT_LOOKUPS | ARES_OPT_TIMEOUTMS |
				  ARES_OPT_TRIES);
	if (r != ARES_SUCCESS) {
		px_hosts_free(d->hosts);
		free(d);
		return r == ARES_ENOMEM ? -ENOMEM : -EIO;
	}
	if (server) {
		r = set_server(d, server);
		if (r < 0) {
			ares_destroy(d->ch);
			px_hosts_free(d->hosts);
			free(d);
			return r;
		}
	}
	*ret = d;
	return 0;
}

static int ares_errno(int status)
{
	switch (status) {
	case ARES_SUCCESS:
	case ARES_ENODATA:
		return -ENODATA; /* the name exists, without an address */
	case ARES_ENOTFOUND:
		return -ENOENT;
	case ARES_ETIMEOUT:
		return -ETIMEDOUT;
	case ARES_ENOMEM:
		return -ENOMEM;
	case ARES_EBADNAME:
		return -EINVAL;
	default:
		return -EIO; /* SERVFAIL, REFUSED, no server reachable */
	}
}

static void addrinfo_cb(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	px_dns_query *q = arg;
	px_addr addrs[PX_DNS_MAX_ADDRS];
	size_t n = 0;

	(void)timeouts;
	if (status == ARES_SUCCESS && res) {
		for (struct ares_addrinfo_node *a = res->nodes; a && n < PX_DNS_MAX_ADDRS;
		     a = a->ai_next) {
			if (a->ai_family == AF_INET &&
			    a->ai_addrlen >= sizeof(struct sockaddr_in)) {
				addrs[n].family = AF_INET;
				memset(addrs[n].addr, 0, 16);
				memcpy(addrs[n].addr,
				       &((struct sockaddr_in *)(void *)a->ai_addr)->sin_addr, 4);
				n++;
			} else if (a->ai_family == AF_INET6 &&
				   a->ai_addrlen >= sizeof(struct sockaddr_in6)) {
				addrs[n].family = AF_INET6;
				memcpy(addrs[n].addr,
				       &((struct sockaddr_in6 *)(void *)a->ai_addr)->sin6_addr, 16);
				n++;
			}
		}
	}
	if (res)
		ares_freeaddrinfo(res);
	if (q->cb) {
		if (status == ARES_SUCCESS && n > 0)
			q->cb(q->userdata, 0, addrs, n);
		else
			q->cb(q->userdata, ares_errno(status), NULL, 0);
	}
	free(q);
}

int px_dns_resolve(px_dns *d, const char *name, px_dns_cb cb, void *userdata,
		   px_dns_query **ret_query)
{
	struct ares_addrinfo_hints hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	px_addr addrs[PX_DNS_MAX_ADDRS];
	px_dns_query *q;
	size_t n;

	/* /etc/hosts first, then RFC 6761 localhost, then DNS */
	n = px_hosts_lookup(d->hosts, name, addrs, PX_DNS_MAX_ADDRS);
	if (n == 0 && px_is_localhost(name)) {
		addrs[0] = (px_addr){.family = AF_INET, .addr = {127, 0, 0, 1}};
		addrs[1] = (px_addr){.family = AF_INET6, .addr = {[15] = 1}};
		n = 2;
	}
	if (n > 0) {
		*ret_query = NULL;
		cb(userdata, 0, addrs, n);
		return 0;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->cb = cb;
	q->userdata = userdata;
	*ret_query = q;
	/* may call back synchronously (e.g. on a bad name): caller is ready for that */
	ares_getaddrinfo(d->ch, name, NULL, &hints, addrinfo_cb, q);
	return 0;
}

void px_dns_cancel(px_dns_query *q)
{
	if (q)
		q->cb = NULL;
}

void px_dns_process(px_dns *d, int fd, uint32_t events)
{
	ares_process_fd(d->ch, (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) ? fd : ARES_SOCKET_BAD,
			(events & EPOLLOUT) ? fd : ARES_SOCKET_BAD);
}

int px_dns_timeout_ms(px_dns *d)
{
	struct timeval tv, *t = ares_timeout(d->ch, NULL, &tv);

	if (!t)
		return -1;
	return (int)(t->tv_sec * 1000 + (t->tv_usec + 999) / 1000);
}

void px_dns_process_timeouts(px_dns *d)
{
	ares_process_fd(d->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
}
