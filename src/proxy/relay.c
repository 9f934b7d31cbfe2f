/* SPDX-License-Identifier: MIT */
/*
 * The serve relay (relay.h): one thread, one epoll loop, non-blocking
 * sockets, a state x event table per connection as in loop.c. Bytes move
 * with splice(2) through one pipe per direction, never through user space;
 * nothing is parsed, so the relay holds no secret and reads no file.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "policy/plan.h"
#include "proxy/events.h"
#include "proxy/limits.h"
#include "proxy/relay.h"

#define RL_PIPE_SIZE (256u * 1024u)

typedef enum rl_state {
	RL_FREE,
	RL_CONNECTING, /* the connect inside the sandbox is under way */
	RL_RELAY,      /* bytes move both ways */
	_RL_STATE_MAX,
	_RL_STATE_INVALID = -EINVAL,
} rl_state;

typedef enum rl_event {
	RE_READY, /* readable or writable: each side does what it can */
	RE_HUP,	  /* an error or hang-up on one of its sockets */
	RE_TIMEOUT,
	_RE_MAX,
	_RE_INVALID = -EINVAL,
} rl_event;

typedef struct rl_port {
	int fd;
	uint16_t port, host_port;
} rl_port;

typedef struct rl_conn {
	rl_state state;
	int cfd, sfd;		 /* the host's client, the sandbox's server */
	int c2s[2], s2c[2];	 /* pipes: into the sandbox, out of it */
	size_t c2s_len, s2c_len; /* bytes in each */
	bool c_eof, s_eof, c2s_shut, s2c_shut;
	uint32_t cmask, smask; /* what epoll watches on each */
	uint64_t bytes_in, bytes_out, start_ns, deadline_ns;
	const rl_port *port;
	char peer[INET6_ADDRSTRLEN + 8];
} rl_conn;

typedef struct rl_loop {
	int ep;
	px_events *ev;
	rl_port ports[POLICY_MAX_SERVE];
	size_t n_ports;
	rl_conn conns[RL_MAX_CONNS];
	size_t n_open;
	px_bucket records;
	uint64_t suppressed, sup_in, sup_out, report_ns;
	bool ended; /* the supervisor closed its end */
} rl_loop;

/* epoll data: kind << 32 | index << 1 | side */
enum { K_EVENTS = 1, K_LISTEN, K_CONN };
#define TAG(kind, idx, side) ((uint64_t)(kind) << 32 | (uint64_t)(idx) << 1 | (side))

static uint64_t now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One record per connection, while the bucket lasts; then counted. */
static void record(rl_loop *L, rl_conn *c, const char *result, int err)
{
	uint64_t now = now_ns();
	json_t *d;

	if (!px_bucket_take_exact(&L->records, 1, now)) {
		L->suppressed++;
		L->sup_in += c->bytes_in;
		L->sup_out += c->bytes_out;
		return;
	}
	d = json_pack("{s:s, s:i, s:i, s:I, s:I, s:I, s:s}", "peer", c->peer, "port",
		      (int)c->port->port, "host_port", (int)c->port->host_port, "bytes_in",
		      (json_int_t)c->bytes_in, "bytes_out", (json_int_t)c->bytes_out, "duration_ms",
		      (json_int_t)((now - c->start_ns) / 1000000ull), "result", result);
	if (d && err)
		(void)json_object_set_new(d, "detail", json_string(strerror(err)));
	if (d)
		(void)px_events_emit(L->ev, "net.inbound", d);
}

/* The count of records folded since the last report, at most once a second. */
static void report(rl_loop *L, bool final)
{
	char detail[128];
	uint64_t now = now_ns();

	if (L->suppressed == 0 || (!final && now < L->report_ns))
		return;
	snprintf(detail, sizeof(detail), "net.inbound records folded: %llu bytes in, %llu out",
		 (unsigned long long)L->sup_in, (unsigned long long)L->sup_out);
	(void)px_events_emit(L->ev, "limit.hit",
			     json_pack("{s:s, s:s, s:I, s:s}", "limit", "net.inbound", "kind",
				       "connections", "suppressed", (json_int_t)L->suppressed,
				       "detail", detail));
	L->suppressed = L->sup_in = L->sup_out = 0;
	L->report_ns = now + RL_REPORT_NS;
}

static void close_pipe(int p[2])
{
	p[0] = safe_close(p[0]);
	p[1] = safe_close(p[1]);
}

static void finish(rl_loop *L, rl_conn *c, const char *result, int err)
{
	record(L, c, result, err);
	c->cfd = safe_close(c->cfd);
	c->sfd = safe_close(c->sfd);
	close_pipe(c->c2s);
	close_pipe(c->s2c);
	c->state = RL_FREE;
	L->n_open--;
}

static int watch(rl_loop *L, int fd, uint32_t *cur, uint32_t want, uint64_t tag)
{
	struct epoll_event e = {.events = want, .data.u64 = tag};

	if (*cur == want)
		return 0;
	if (epoll_ctl(L->ep, EPOLL_CTL_MOD, fd, &e) < 0)
		return -errno;
	*cur = want;
	return 0;
}

/* A side is read only when its pipe is empty: a pipe can be full with
 * fewer bytes than its size, and a readable socket whose splice says
 * EAGAIN would wake level-triggered epoll again and again. */
static int rewatch(rl_loop *L, rl_conn *c)
{
	size_t i = (size_t)(c - L->conns);
	uint32_t cw = (c->c2s_len == 0 && !c->c_eof ? EPOLLIN : 0) | (c->s2c_len ? EPOLLOUT : 0);
	uint32_t sw = (c->s2c_len == 0 && !c->s_eof ? EPOLLIN : 0) | (c->c2s_len ? EPOLLOUT : 0);
	int r = watch(L, c->cfd, &c->cmask, cw, TAG(K_CONN, i, 0));

	return r < 0 ? r : watch(L, c->sfd, &c->smask, sw, TAG(K_CONN, i, 1));
}

/* src -> pipe -> dst while either moves; 1 when something moved, 0, -errno. */
static int pump(int src, int p[2], int dst, size_t *len, bool *eof, uint64_t *count)
{
	bool moved = false;

	for (int round = 0; round < 16; round++) {
		bool progress = false;
		ssize_t n;

		if (!*eof && *len == 0) {
			n = splice(src, NULL, p[1], NULL, RL_PIPE_SIZE,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				*len += (size_t)n;
				progress = true;
			} else if (n == 0) {
				*eof = true;
				progress = true;
			} else if (errno != EAGAIN && errno != EINTR) {
				return -errno;
			}
		}
		if (*len > 0) {
			n = splice(p[0], NULL, dst, NULL, *len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				*len -= (size_t)n;
				*count += (uint64_t)n;
				progress = true;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				return -errno;
			}
		}
		if (!progress)
			break;
		moved = true;
	}
	return moved;
}

/* Both ways as far as they go, each end's EOF passed on once its pipe is
 * empty; the connection ends when both ways have. */
static void relay_ready(rl_loop *L, rl_conn *c)
{
	int r = pump(c->cfd, c->c2s, c->sfd, &c->c2s_len, &c->c_eof, &c->bytes_in);

	if (r >= 0)
		r = pump(c->sfd, c->s2c, c->cfd, &c->s2c_len, &c->s_eof, &c->bytes_out);
	if (r < 0) {
		finish(L, c, "reset", -r);
		return;
	}
	if (c->c_eof && c->c2s_len == 0 && !c->c2s_shut) {
		(void)shutdown(c->sfd, SHUT_WR);
		c->c2s_shut = true;
	}
	if (c->s_eof && c->s2c_len == 0 && !c->s2c_shut) {
		(void)shutdown(c->cfd, SHUT_WR);
		c->s2c_shut = true;
	}
	if (c->c2s_shut && c->s2c_shut) {
		finish(L, c, "ok", 0);
		return;
	}
	r = rewatch(L, c);
	if (r < 0)
		finish(L, c, "error", -r);
}

/* A hang-up or error: what can still move moves; what cannot is a reset. */
static void relay_hup(rl_loop *L, rl_conn *c)
{
	relay_ready(L, c);
	if (c->state == RL_RELAY)
		finish(L, c, "reset", ECONNRESET);
}

static int start_relay(rl_loop *L, rl_conn *c)
{
	struct epoll_event e = {.events = 0, .data.u64 = TAG(K_CONN, c - L->conns, 0)};

	if (pipe2(c->c2s, O_NONBLOCK | O_CLOEXEC) < 0 || pipe2(c->s2c, O_NONBLOCK | O_CLOEXEC) < 0)
		return -errno;
	(void)fcntl(c->c2s[1], F_SETPIPE_SZ, RL_PIPE_SIZE);
	(void)fcntl(c->s2c[1], F_SETPIPE_SZ, RL_PIPE_SIZE);
	if (epoll_ctl(L->ep, EPOLL_CTL_ADD, c->cfd, &e) < 0)
		return -errno;
	c->cmask = 0;
	c->state = RL_RELAY;
	return rewatch(L, c);
}

/* The connect inside the sandbox is done: refused when nothing listens there. */
static void connect_ready(rl_loop *L, rl_conn *c)
{
	int err = 0, r;
	socklen_t len = sizeof(err);

	if (getsockopt(c->sfd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err) {
		finish(L, c, err == ECONNREFUSED ? "refused" : "error", err);
		return;
	}
	r = start_relay(L, c);
	if (r < 0)
		finish(L, c, "error", -r);
}

static void connect_timeout(rl_loop *L, rl_conn *c)
{
	finish(L, c, "timeout", ETIMEDOUT);
}

static void relay_timeout(rl_loop *L, rl_conn *c)
{
	(void)L;
	c->deadline_ns = 0; /* a relayed connection has no deadline */
}

typedef void rl_action(rl_loop *L, rl_conn *c);

/* Unlisted transitions end the connection. */
static rl_action *const transitions[_RL_STATE_MAX][_RE_MAX] = {
    [RL_CONNECTING] =
	{[RE_READY] = connect_ready, [RE_HUP] = connect_ready, [RE_TIMEOUT] = connect_timeout},
    [RL_RELAY] = {[RE_READY] = relay_ready, [RE_HUP] = relay_hup, [RE_TIMEOUT] = relay_timeout},
};

static void dispatch(rl_loop *L, rl_conn *c, rl_event e)
{
	rl_action *act =
	    c->state > RL_FREE && c->state < _RL_STATE_MAX ? transitions[c->state][e] : NULL;

	if (act)
		act(L, c);
	else if (c->state != RL_FREE)
		finish(L, c, "error", EPROTO);
}

/* One client of the supervisor's side: a socket of the sandbox's netns
 * (where this process lives) connects to the port inside. */
static void accept_one(rl_loop *L, const rl_port *p, int cfd, const struct sockaddr_in *peer)
{
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = htons(p->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct epoll_event e;
	rl_conn *c = NULL;
	char addr[INET_ADDRSTRLEN] = "?";
	size_t i;

	for (i = 0; i < RL_MAX_CONNS && !c; i++)
		if (L->conns[i].state == RL_FREE)
			c = &L->conns[i];
	i--;
	(void)inet_ntop(AF_INET, &peer->sin_addr, addr, sizeof(addr));
	if (!c) {
		rl_conn over = {.port = p, .start_ns = now_ns()};

		snprintf(over.peer, sizeof(over.peer), "%s:%u", addr, ntohs(peer->sin_port));
		record(L, &over, "limit", EMFILE);
		(void)close(cfd);
		return;
	}
	*c = (rl_conn){.state = RL_CONNECTING,
		       .cfd = cfd,
		       .sfd = -1,
		       .c2s = {-1, -1},
		       .s2c = {-1, -1},
		       .port = p,
		       .start_ns = now_ns()};
	c->deadline_ns = c->start_ns + RL_CONNECT_NS;
	snprintf(c->peer, sizeof(c->peer), "%s:%u", addr, ntohs(peer->sin_port));
	L->n_open++;
	c->sfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->sfd < 0) {
		finish(L, c, "error", errno);
		return;
	}
	c->smask = EPOLLOUT;
	e = (struct epoll_event){.events = EPOLLOUT, .data.u64 = TAG(K_CONN, i, 1)};
	if (epoll_ctl(L->ep, EPOLL_CTL_ADD, c->sfd, &e) < 0) {
		finish(L, c, "error", errno);
		return;
	}
	if (connect(c->sfd, (struct sockaddr *)&to, sizeof(to)) < 0 && errno != EINPROGRESS) {
		finish(L, c, errno == ECONNREFUSED ? "refused" : "error", errno);
		return;
	}
	/* done at once or not: the socket's EPOLLOUT says, connect_ready() reads */
}

static void accept_all(rl_loop *L, const rl_port *p)
{
	for (int n = 0; n < 64; n++) {
		struct sockaddr_in peer = {0};
		socklen_t len = sizeof(peer);
		int fd =
		    accept4(p->fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return; /* EAGAIN, or a client gone before we took it */
		accept_one(L, p, fd, &peer);
	}
}

static int next_timeout_ms(const rl_loop *L)
{
	uint64_t now = now_ns(), next = UINT64_MAX;

	for (size_t i = 0; i < RL_MAX_CONNS; i++)
		if (L->conns[i].state == RL_CONNECTING && L->conns[i].deadline_ns < next)
			next = L->conns[i].deadline_ns;
	if (L->suppressed && L->report_ns < next)
		next = L->report_ns;
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)((next - now) / 1000000ull) + 1;
}

static void expire(rl_loop *L)
{
	uint64_t now = now_ns();

	for (size_t i = 0; i < RL_MAX_CONNS; i++)
		if (L->conns[i].state == RL_CONNECTING && L->conns[i].deadline_ns <= now)
			dispatch(L, &L->conns[i], RE_TIMEOUT);
	report(L, false);
}

static int run(rl_loop *L)
{
	struct epoll_event evs[64];

	while (!L->ended) {
		int n = epoll_wait(L->ep, evs, 64, next_timeout_ms(L));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			uint64_t u = evs[i].data.u64;
			uint32_t kind = (uint32_t)(u >> 32), idx = (uint32_t)(u & 0xffffffffu) >> 1;

			if (kind == K_EVENTS)
				L->ended = true;
			else if (kind == K_LISTEN && idx < L->n_ports)
				accept_all(L, &L->ports[idx]);
			else if (kind == K_CONN && idx < RL_MAX_CONNS)
				dispatch(L, &L->conns[idx],
					 evs[i].events & (EPOLLERR | EPOLLHUP) ? RE_HUP : RE_READY);
		}
		expire(L);
		if (px_events_flush(L->ev) < 0)
			return 0; /* the supervisor is gone */
	}
	/* The run ends: what is open is recorded as it stands. */
	for (size_t i = 0; i < RL_MAX_CONNS; i++)
		if (L->conns[i].state != RL_FREE)
			finish(L, &L->conns[i], "sandbox-ended", 0);
	report(L, true);
	(void)px_events_sync(L->ev); /* -EPIPE: the supervisor went first */
	return 0;
}

static int parse_port_arg(const char *s, rl_port *p)
{
	unsigned a = 0, b = 0;
	char end = 0;

	if (sscanf(s, "%u:%u%c", &a, &b, &end) != 2 || a == 0 || a > 65535 || b == 0 || b > 65535)
		return -EINVAL;
	p->port = (uint16_t)a;
	p->host_port = (uint16_t)b;
	return 0;
}

/* argv: "relay", the supervisor's pid, then PORT:HOST_PORT per listener. */
int px_relay_main(int argc, char **argv)
{
	static rl_loop L;
	struct epoll_event e = {.events = EPOLLIN, .data.u64 = TAG(K_EVENTS, 0, 0)};
	long long parent = 0;
	int nsfd, userfd;

	if (argc < 3 || argc - 2 > (int)POLICY_MAX_SERVE)
		return 125;
	parent = atoll(argv[1]);
	L.n_ports = (size_t)argc - 2;
	for (size_t i = 0; i < L.n_ports; i++) {
		L.ports[i].fd = RL_FD_LISTEN + (int)i;
		if (parse_port_arg(argv[2 + i], &L.ports[i]) < 0 ||
		    fcntl(L.ports[i].fd, F_SETFD, FD_CLOEXEC) < 0 ||
		    fcntl(L.ports[i].fd, F_SETFL, O_NONBLOCK) < 0)
			return 125;
	}
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		return 125;
	/* The sandbox's user namespace first (a run without root: it owns the
	 * netns, and joining it gives the rights to join that), then its
	 * network namespace: every socket made from now on is born there. */
	nsfd = RL_FD_NETNS;
	userfd = RL_FD_USERNS;
	if (setns(userfd, CLONE_NEWUSER) < 0 && errno != EINVAL)
		return 125; /* EINVAL: /dev/null, the run has no userns of its own */
	if (setns(nsfd, CLONE_NEWNET) < 0)
		return 125;
	(void)close(nsfd);
	(void)close(userfd);
	/* what the filter does not allow, before it is loaded */
	L.ep = epoll_create1(EPOLL_CLOEXEC);
	if (L.ep < 0 || px_events_new(RL_FD_EVENTS, &L.ev) < 0)
		return 125;
	if (px_confine_no_files(parent) < 0)
		return 125;
	for (size_t i = 0; i < RL_MAX_CONNS; i++)
		L.conns[i] = (rl_conn){.cfd = -1, .sfd = -1, .c2s = {-1, -1}, .s2c = {-1, -1}};
	px_bucket_init(&L.records, RL_RECORDS_PER_S, 1000000000ull, RL_RECORDS_BURST, now_ns());
	px_events_batch(L.ev, true);
	if (epoll_ctl(L.ep, EPOLL_CTL_ADD, RL_FD_EVENTS, &e) < 0)
		return 125;
	for (size_t i = 0; i < L.n_ports; i++) {
		e = (struct epoll_event){.events = EPOLLIN, .data.u64 = TAG(K_LISTEN, i, 0)};
		if (epoll_ctl(L.ep, EPOLL_CTL_ADD, L.ports[i].fd, &e) < 0)
			return 125;
	}
	return run(&L) < 0 ? 1 : 0;
}
