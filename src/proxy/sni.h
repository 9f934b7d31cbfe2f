/* SPDX-License-Identifier: MIT */
/*
 * The server name (SNI, RFC 6066 3) of a TLS ClientHello, read from the first
 * bytes a client sends on a transparent connection (docs/proxy.md). Pure:
 * no I/O, strict, bounded, safe on any byte string.
 *
 * Why hand-written: OpenSSL reads a ClientHello only inside a server
 * handshake (SSL_client_hello_get0_ext from a callback), which would make the
 * worker a TLS server for every connection it only has to look at. The part
 * needed here is a few length-prefixed fields.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "proxy/http.h"

#define PX_TLS_RECORD_MAX 16384u /* a record's payload, RFC 8446 5.1 */

typedef enum px_sni_result {
	PX_SNI_NEED_MORE = 0, /* the first record is not all here yet */
	PX_SNI_FOUND = 1,     /* *name set */
	PX_SNI_ABSENT = 2,    /* a complete ClientHello without a host name */
} px_sni_result;

/*
 * buf holds the first bytes of the connection. Returns a px_sni_result, or
 * -EBADMSG (with *reterr_reason) when they are not one ClientHello in one
 * TLS handshake record: a record of another type, a hello split over
 * records, a length that does not add up, more than one server_name
 * extension, or a host name that is not letters, digits, '-', '_' and dots.
 * name (PX_MAX_HOST + 1 bytes) gets the name lower-case.
 */
int px_sni_parse(const uint8_t *buf, size_t len, char *name, const char **reterr_reason);
