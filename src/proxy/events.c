/* SPDX-License-Identifier: MIT */
#include "proxy/events.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/cleanup.h"
#include "proxy/proxy.h"

struct px_events {
	int fd;
	char *queue[PX_EVENT_QUEUE_MAX];
	size_t head, count;
	uint64_t dropped;
	bool dead;
	bool batch; /* px_events_batch() */
};

#define PX_EVENT_BATCH 64u /* datagrams per sendmmsg(2) */

int px_events_new(int fd, px_events **ret)
{
	px_events *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return -ENOMEM;
	ev->fd = fd;
	*ret = ev;
	return 0;
}

px_events *px_events_free(px_events *ev)
{
	if (!ev)
		return NULL;
	for (size_t i = 0; i < ev->count; i++)
		free(ev->queue[(ev->head + i) % PX_EVENT_QUEUE_MAX]);
	free(ev);
	return NULL;
}

static int send_one(px_events *ev, const char *msg)
{
	for (;;) {
		ssize_t n = send(ev->fd, msg, strlen(msg), MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n >= 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == ENOBUFS)
			return -EAGAIN;
		ev->dead = true;
		return -EPIPE;
	}
}

/* Up to PX_EVENT_BATCH queued datagrams in one system call: 1 sent, 0 when
 * the socket is full, -EPIPE. */
static int send_batch(px_events *ev)
{
	struct mmsghdr m[PX_EVENT_BATCH];
	struct iovec iov[PX_EVENT_BATCH];
	unsigned n = ev->count < PX_EVENT_BATCH ? (unsigned)ev->count : PX_EVENT_BATCH;
	int sent;

	for (unsigned i = 0; i < n; i++) {
		char *msg = ev->queue[(ev->head + i) % PX_EVENT_QUEUE_MAX];

		iov[i] = (struct iovec){msg, strlen(msg)};
		m[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
	}
	do
		sent = sendmmsg(ev->fd, m, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	if (sent < 0) {
		if (errno == EAGAIN || errno == ENOBUFS)
			return 0;
		ev->dead = true;
		return -EPIPE;
	}
	for (int i = 0; i < sent; i++) {
		free(ev->queue[ev->head]);
		ev->queue[ev->head] = NULL;
		ev->head = (ev->head + 1) % PX_EVENT_QUEUE_MAX;
		ev->count--;
	}
	return sent == (int)n ? 1 : 0;
}

int px_events_flush(px_events *ev)
{
	while (ev->count > 0) {
		int r = send_batch(ev);

		if (r <= 0)
			return r;
	}
	return 0;
}

/* Blocks until the socket can take a datagram: the supervisor is behind and
 * the worker waits for it (backpressure), never drops. 0 or -EPIPE. */
static int wait_writable(px_events *ev)
{
	struct pollfd p = {.fd = ev->fd, .events = POLLOUT};

	for (;;) {
		int n = poll(&p, 1, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0 && (p.revents & POLLOUT))
			return 0; /* a peer that shut its end still reads: send says */
		ev->dead = true;
		return -EPIPE;
	}
}

int px_events_sync(px_events *ev)
{
	if (ev->dead)
		return -EPIPE;
	for (;;) {
		int r = px_events_flush(ev);

		if (r < 0)
			return r;
		if (ev->count == 0)
			return 0;
		r = wait_writable(ev);
		if (r < 0)
			return r;
	}
}

/* Room for one more queued datagram, waiting for the supervisor if need be. */
static int make_room(px_events *ev)
{
	while (ev->count >= PX_EVENT_QUEUE_MAX) {
		int r = px_events_flush(ev);

		if (r < 0)
			return r;
		if (ev->count < PX_EVENT_QUEUE_MAX)
			break;
		r = wait_writable(ev);
		if (r < 0)
			return r;
	}
	return 0;
}

void px_events_batch(px_events *ev, bool on)
{
	ev->batch = on;
}

bool px_events_pending(const px_events *ev)
{
	return ev->count > 0;
}

/* Sends *msg now (unless batching or behind others) or queues it (taken).
 * A full queue waits for the supervisor instead of dropping: the worker
 * stops answering and forwarding until its records are taken. A count of
 * dropped events (records too long for a datagram) travels with it. */
static int deliver(px_events *ev, char **msg)
{
	int r;

	if (!ev->batch) {
		r = px_events_flush(ev);
		if (r < 0)
			return r;
		if (ev->count == 0) {
			r = send_one(ev, *msg);
			if (r == 0)
				ev->dropped = 0;
			if (r != -EAGAIN)
				return r;
		}
	}
	r = make_room(ev);
	if (r < 0)
		return r;
	ev->dropped = 0;
	ev->queue[(ev->head + ev->count) % PX_EVENT_QUEUE_MAX] = TAKE_PTR(*msg);
	ev->count++;
	return 0;
}

int px_events_emit(px_events *ev, const char *event, json_t *data)
{
	_cleanup_free_ char *msg = NULL;
	json_t *root;

	if (ev->dead) {
		json_decref(data);
		return -EPIPE;
	}
	if (!data)
		return -ENOMEM;
	if (ev->dropped > 0) {
		(void)json_object_set_new(data, "events_dropped",
					  json_integer((json_int_t)ev->dropped));
	}
	root = json_pack("{s:s, s:o}", "event", event, "data", data);
	if (!root)
		return -ENOMEM;
	msg = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (!msg)
		return -ENOMEM;
	if (strlen(msg) > PX_EVENT_MAX_BYTES) {
		ev->dropped++;
		return 0;
	}
	return deliver(ev, &msg);
}

int px_events_emit_record(px_events *ev, px_record *r)
{
	_cleanup_free_ char *m = NULL; /* deliver() takes it only when it queues it */
	int n;

	if (ev->dead)
		return -EPIPE;
	if (ev->dropped > 0)
		px_record_uint(r, "events_dropped", ev->dropped);
	n = px_record_end(r);
	if (n < 0 || (size_t)n > PX_EVENT_MAX_BYTES) {
		ev->dropped++;
		return 0;
	}
	m = strndup(r->buf, (size_t)n);
	if (!m)
		return -ENOMEM;
	return deliver(ev, &m);
}

/* ---- supervisor side ---- */

static const struct event_schema {
	const char *name;
	const char *keys[24];
} schemas[] = {
    {"net.request.start",
     {"id", "method", "host", "port", "path", "addr", "rule", "via", "credential", "inspected",
      "events_dropped", NULL}},
    {"net.request", {"id",	    "method",	  "host",	    "port",
		     "path",	    "addr",	  "decision",	    "rule",
		     "reason",	    "status",	  "bytes_out",	    "bytes_in",
		     "duration_ms", "via",	  "credential",	    "inspected",
		     "body_sha256", "body_bytes", "events_dropped", NULL}},
    {"net.denied",
     {"method", "host", "port", "path", "addr", "reason", "detail", "head_hex", "via", "protocol",
      "normalised_path", "credential", "inspected", "sni", "events_dropped", NULL}},
    {"net.tunnel.close",
     {"host", "port", "addr", "bytes_out", "bytes_in", "duration_ms", "reason", "via",
      "events_dropped", NULL}},
    {"net.inbound",
     {"peer", "port", "host_port", "bytes_in", "bytes_out", "duration_ms", "result", "detail",
      "events_dropped", NULL}},
    {"net.dns", {"name", "type", "rcode", "answer", "rule", "reason", "events_dropped", NULL}},
    {"limit.hit", {"limit", "detail", "suppressed", "kind", "events_dropped", NULL}},
};

static bool key_known(const struct event_schema *s, const char *key)
{
	for (size_t i = 0; s->keys[i]; i++)
		if (strcmp(s->keys[i], key) == 0)
			return true;
	return false;
}

int px_event_parse(const char *buf, size_t len, char **ret_event, json_t **ret_data)
{
	json_t *root, *ev, *data, *v;
	const struct event_schema *schema = NULL;
	const char *key;
	char *name;

	if (len == 0 || len > PX_EVENT_MAX_BYTES)
		return -EBADMSG;
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(root) || json_object_size(root) != 2)
		goto bad;
	ev = json_object_get(root, "event");
	data = json_object_get(root, "data");
	if (!json_is_string(ev) || !json_is_object(data))
		goto bad;
	for (size_t i = 0; i < sizeof(schemas) / sizeof(schemas[0]); i++)
		if (strcmp(json_string_value(ev), schemas[i].name) == 0)
			schema = &schemas[i];
	if (!schema)
		goto bad;
	json_object_foreach(data, key, v)
	{
		if (!key_known(schema, key))
			goto bad;
		if (json_is_string(v)) {
			const char *s = json_string_value(v);
			size_t sl = json_string_length(v);

			if (sl > PX_EVENT_MAX_STRING || strlen(s) != sl)
				goto bad;
		} else if (json_is_integer(v)) {
			if (json_integer_value(v) < 0)
				goto bad;
		} else if (!json_is_null(v) && !json_is_boolean(v))
			goto bad;
	}
	name = strdup(schema->name);
	if (!name) {
		json_decref(root);
		return -ENOMEM;
	}
	*ret_data = json_incref(data);
	*ret_event = name;
	json_decref(root);
	return 0;
bad:
	json_decref(root);
	return -EBADMSG;
}
