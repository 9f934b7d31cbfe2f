/* SPDX-License-Identifier: MIT */
/*
 * Worker side of the event channel: one JSON object per SOCK_SEQPACKET
 * message. A datagram the socket cannot take now is queued; past the bound
 * the worker waits for the supervisor to take some (backpressure: the whole
 * loop stops, so the agent waits), never drops a record. Only a record too
 * long for one datagram is counted as dropped, in the next that gets through.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "proxy/record.h"

#define PX_EVENT_QUEUE_MAX 1024u

typedef struct px_events px_events;

int px_events_new(int fd, px_events **ret);
px_events *px_events_free(px_events *ev);
/* Takes ownership of data. Returns 0 (queued or sent) or -EPIPE when the
 * supervisor is gone. */
int px_events_emit(px_events *ev, const char *event, json_t *data);
/* The same for a record written with record.h (started, not ended): the
 * count of dropped events goes into it when one is due; one longer than
 * its buffer is counted as dropped. */
int px_events_emit_record(px_events *ev, px_record *r);
/* Sends queued events; returns 0, -EPIPE. */
int px_events_flush(px_events *ev);
bool px_events_pending(const px_events *ev);
/* Sends everything queued, waiting as long as the supervisor takes: once
 * it returns 0 each record is in the supervisor's socket, where it stays
 * if the worker dies. 0 or -EPIPE. */
int px_events_sync(px_events *ev);
/* On: px_events_emit() only queues (within the same bound) and the caller
 * sends the queue with px_events_flush(), many datagrams per system call;
 * the event loop does at the end of each round. */
void px_events_batch(px_events *ev, bool on);
