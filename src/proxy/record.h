/* SPDX-License-Identifier: MIT */
/*
 * The one writer of the records every forwarded request makes
 * (net.request.start, net.request): one flat JSON event datagram written
 * straight into a caller's buffer, which px_events_emit_record() sends.
 * Building them as jansson objects and dumping them was a sixth of the
 * worker's time per small request. The output is what
 * json_dumps(JSON_COMPACT) makes of the same object, keys in the order
 * written: strings escaped as jansson escapes them, valid UTF-8 as it is.
 * A byte that is not valid UTF-8 (the agent's bytes, which jansson would
 * refuse whole) is written as U+FFFD, so the record is kept. A record
 * longer than the buffer fails whole, never cut.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct px_record {
	char *buf;
	size_t size, len;
	bool failed;
	bool first; /* no key written yet */
} px_record;

/* Starts {"event":EVENT,"data":{ in buf. */
void px_record_start(px_record *r, char *buf, size_t size, const char *event);
void px_record_str(px_record *r, const char *key, const char *value);
void px_record_uint(px_record *r, const char *key, uint64_t value);
void px_record_true(px_record *r, const char *key);
void px_record_null(px_record *r, const char *key);
/* Closes both objects and ends the string with a NUL: the datagram's
 * length, or -EINVAL when it did not fit the buffer. */
int px_record_end(px_record *r);
