/* SPDX-License-Identifier: MIT */
/* TAP tests for the pool of idle upstream connections (real sockets). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/pool.h"
#include "tap.h"

static px_pool_key key(const char *host, uint16_t port, bool tls, int cred)
{
	px_pool_key k = {.port = port, .tls = tls, .cred = cred};

	strncpy(k.host, host, sizeof(k.host) - 1);
	return k;
}

/* A connected pair: [0] is what the pool keeps, [1] is the origin's end. */
static int pair(int sv[2])
{
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
}

static int bail(const char *what)
{
	ok(false, "%s: %s", what, strerror(errno));
	return tap_done();
}

static bool is_closed(int fd)
{
	return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

static void *dropped_watch;

static void on_drop(void *watch, void *userdata)
{
	(void)userdata;
	dropped_watch = watch;
}

/* Watched idle connections: epoll tells the caller, the pool does not look. */
static void test_watched(void)
{
	static px_pool p = {.on_drop = on_drop};
	px_pool_key a = key("api.test", 80, false, -1);
	px_addr addr = {0}, got_addr;
	int s[2], t[2], fd = -1;
	int w1, w2; /* stand-ins for the caller's watches */
	void *w = NULL;
	SSL *ssl;

	if (pair(s) < 0 || pair(t) < 0) {
		ok(false, "socketpair");
		return;
	}
	px_pool_put(&p, &a, s[0], NULL, &addr, 1000, &w1);
	px_pool_put(&p, &a, t[0], NULL, &addr, 1001, &w2);
	ok(!px_pool_drop_watch(&p, &fd) && p.n == 2, "an unknown watch drops nothing");
	ok(px_pool_drop_watch(&p, &w2) && is_closed(t[0]) && dropped_watch == &w2 && p.n == 1,
	   "a report on an idle connection closes it and hands its watch back");
	close(s[1]); /* unseen by epoll yet: the pool trusts the last report */
	ok(px_pool_take(&p, &a, 2000, &fd, &ssl, &got_addr, &w) && fd == s[0] && w == &w1,
	   "a watched connection is taken without a look at the socket, with its watch");
	close(fd);
	px_pool_put(&p, &a, fd = dup(t[1]), NULL, &addr, 3000, &w1);
	dropped_watch = NULL;
	px_pool_clear(&p);
	ok(dropped_watch == &w1 && is_closed(fd), "clear hands back the watches too");
	close(t[1]);
}

int main(void)
{
	static px_pool p;
	px_pool_key a = key("api.test", 443, true, 0), other_cred = key("api.test", 443, true, 1),
		    plain = key("api.test", 443, false, 0), none = key("api.test", 443, true, -1);
	px_addr addr = {.family = AF_INET, .addr = {127, 0, 0, 1}}, got_addr = {0};
	int s1[2], s2[2], s3[2], fd = -1;
	SSL *ssl = NULL;

	if (pair(s1) < 0 || pair(s2) < 0 || pair(s3) < 0)
		return bail("socketpair");
	px_pool_put(&p, &a, s1[0], NULL, &addr, 1000, NULL);
	ok(!px_pool_take(&p, &other_cred, 1000, &fd, &ssl, &got_addr, NULL) &&
	       !px_pool_take(&p, &plain, 1000, &fd, &ssl, &got_addr, NULL) &&
	       !px_pool_take(&p, &none, 1000, &fd, &ssl, &got_addr, NULL),
	   "another credential, plain instead of TLS, no credential: not the same connection");
	ok(px_pool_take(&p, &a, 2000, &fd, &ssl, &got_addr, NULL) && fd == s1[0] && !ssl &&
	       got_addr.family == AF_INET && got_addr.addr[0] == 127 && p.n == 0,
	   "the same key takes it, with the address it goes to");
	ok(!px_pool_take(&p, &a, 2000, &fd, &ssl, &got_addr, NULL), "taken: not there twice");

	px_pool_put(&p, &a, s1[0], NULL, &addr, 1000, NULL);
	close(s1[1]);
	ok(!px_pool_take(&p, &a, 2000, &fd, &ssl, &got_addr, NULL) && is_closed(s1[0]) && p.n == 0,
	   "one the origin closed is closed, not taken");

	px_pool_put(&p, &a, s2[0], NULL, &addr, 1000, NULL);
	(void)!write(s2[1], "x", 1);
	ok(!px_pool_take(&p, &a, 2000, &fd, &ssl, &got_addr, NULL) && is_closed(s2[0]),
	   "one with stray bytes from the origin is closed, not taken");
	close(s2[1]);

	px_pool_put(&p, &a, s3[0], NULL, &addr, 1000, NULL);
	ok(px_pool_expire(&p, 1000 + PX_POOL_IDLE_NS - 1) == 1000 + PX_POOL_IDLE_NS && p.n == 1,
	   "not idle long enough: kept, the next expiry said");
	ok(px_pool_expire(&p, 1000 + PX_POOL_IDLE_NS) == 0 && p.n == 0 && is_closed(s3[0]),
	   "idle for PX_POOL_IDLE_NS: closed");
	close(s3[1]);

	{
		int fds[PX_POOL_MAX + 1][2];
		bool first_closed, newest;

		for (unsigned i = 0; i < PX_POOL_PER_KEY + 1; i++) {
			if (pair(fds[i]) < 0)
				return bail("socketpair");
			px_pool_put(&p, &a, fds[i][0], NULL, &addr, 100 + i, NULL);
		}
		first_closed = is_closed(fds[0][0]);
		newest = px_pool_take(&p, &a, 200, &fd, &ssl, &got_addr, NULL) &&
			 fd == fds[PX_POOL_PER_KEY][0];
		ok(first_closed && p.n == PX_POOL_PER_KEY - 1 && newest,
		   "at most %u per key: the oldest gives way; the newest is taken first",
		   PX_POOL_PER_KEY);
		close(fd);
		px_pool_clear(&p);
		ok(p.n == 0 && is_closed(fds[1][0]), "clear closes them all");
		for (unsigned i = 0; i < PX_POOL_PER_KEY + 1; i++)
			close(fds[i][1]);

		for (unsigned i = 0; i < PX_POOL_MAX + 1; i++) {
			char host[32];
			px_pool_key k;

			if (pair(fds[i]) < 0)
				return bail("socketpair");
			(void)snprintf(host, sizeof(host), "h%u.test", i);
			k = key(host, 80, false, -1);
			px_pool_put(&p, &k, fds[i][0], NULL, &addr, 100 + i, NULL);
		}
		ok(p.n == PX_POOL_MAX && is_closed(fds[0][0]) && !is_closed(fds[1][0]),
		   "at most %u in all: the oldest of any key gives way", PX_POOL_MAX);
		px_pool_clear(&p);
		for (unsigned i = 0; i < PX_POOL_MAX + 1; i++)
			close(fds[i][1]);
	}
	test_watched();
	return tap_done();
}
