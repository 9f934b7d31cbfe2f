/* SPDX-License-Identifier: MIT */
/*
 * A bounded writer of one flat JSON event datagram into a caller's buffer,
 * for the record every forwarded request makes (net.request): building it
 * as jansson objects and dumping them was a sixth of the worker's time per
 * small request. The output is what json_dumps(JSON_COMPACT) makes of the
 * same object, keys in the order written. Strings are escaped as jansson
 * escapes them; a string with a byte >= 0x80 (whose UTF-8 this writer does
 * not check) or a record longer than the buffer fails the whole record,
 * and the caller builds it with jansson instead.
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
 * length, or -EINVAL (see above). */
int px_record_end(px_record *r);
