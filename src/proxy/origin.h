/* SPDX-License-Identifier: MIT */
/*
 * A transparent HTTP client sends origin-form heads ("GET /path HTTP/1.1",
 * the name only in Host). The proxy's parser takes absolute-form, as proxy
 * clients send; this turns the one into the other once the head is complete,
 * after checking that Host names the host the connection is for. Pure: no
 * I/O, bounded, safe on any byte string (docs/proxy.md).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * buf[0..*len) starts with a request head; cap is the buffer's size.
 * Returns
 *   1        rewritten to "METHOD http://name:port/path ..." (*len grown);
 *   0        the head is not complete yet;
 *   -EMSGSIZE the head does not fit once rewritten (left as it is);
 *   -EBADMSG the target is not a path (origin-form) (*reterr_reason);
 *   -EACCES  a Host header names another host or port, or there are two.
 * A head without Host (HTTP/1.0) is for name. name: lower-case.
 */
int px_origin_to_absolute(char *buf, size_t *len, size_t cap, const char *name, uint16_t port,
			  const char **reterr_reason);
