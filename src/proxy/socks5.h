/* SPDX-License-Identifier: MIT */
/*
 * The server side of a SOCKS5 handshake (RFC 1928): the method "no
 * authentication" and the command CONNECT only, to a domain name, an IPv4
 * or an IPv6 address. Strict and bounded (a greeting is at most 257 bytes,
 * a request at most 262); pure: no I/O. docs/proxy.md, "SOCKS5".
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/http.h"

#define PX_SOCKS5_VERSION     5u
#define PX_SOCKS5_REPLY_BYTES 10u

/* Reply codes (RFC 1928, section 6). */
typedef enum px_socks5_rep {
	PX_SOCKS5_SUCCEEDED = 0x00,
	PX_SOCKS5_GENERAL_FAILURE = 0x01,
	PX_SOCKS5_NOT_ALLOWED = 0x02, /* connection not allowed by ruleset */
	PX_SOCKS5_NET_UNREACHABLE = 0x03,
	PX_SOCKS5_HOST_UNREACHABLE = 0x04,
	PX_SOCKS5_REFUSED = 0x05,
	PX_SOCKS5_TTL_EXPIRED = 0x06,
	PX_SOCKS5_COMMAND_UNSUPPORTED = 0x07,
	PX_SOCKS5_ATYP_UNSUPPORTED = 0x08,
} px_socks5_rep;

typedef struct px_socks5_request {
	size_t len;		    /* bytes of the request */
	uint8_t command;	    /* 1 CONNECT (the only one accepted) */
	px_host_kind host_kind;	    /* a domain that is an address literal counts as that */
	char host[PX_MAX_HOST + 1]; /* lower-case name, or the address as text */
	uint8_t addr[16];	    /* for PX_HOST_IPV4 (4 bytes) and PX_HOST_IPV6 */
	uint16_t port;
} px_socks5_request;

/*
 * The client's greeting at buf: VER 5, NMETHODS >= 1, the methods. Returns
 * its length (> 0) with *ret_noauth whether method 0x00 is offered, 0 when
 * more bytes are needed, -EBADMSG when it is not a SOCKS5 greeting.
 */
int px_socks5_parse_greeting(const uint8_t *buf, size_t len, bool *ret_noauth);

/*
 * The request that follows the method selection: VER 5, CMD, RSV 0, ATYP,
 * DST.ADDR, DST.PORT. Returns its length (> 0) with *ret filled, 0 when more
 * bytes are needed, or minus the reply code to answer with before closing:
 * -PX_SOCKS5_GENERAL_FAILURE (malformed: version, reserved byte, an empty,
 * too long or invalid name, port 0), -PX_SOCKS5_COMMAND_UNSUPPORTED (BIND,
 * UDP ASSOCIATE or unknown), -PX_SOCKS5_ATYP_UNSUPPORTED. *reterr_reason
 * then says why, and ret->command is set once the command byte was read.
 */
int px_socks5_parse_request(const uint8_t *buf, size_t len, px_socks5_request *ret,
			    const char **reterr_reason);

/* The reply: VER 5, rep, RSV 0, BND.ADDR 0.0.0.0, BND.PORT 0 (the proxy's
 * own side of the connection is nobody's business inside the sandbox). */
void px_socks5_reply(px_socks5_rep rep, uint8_t out[PX_SOCKS5_REPLY_BYTES]);

/* The name of a command byte, for records: "CONNECT", "BIND", "UDP-ASSOCIATE", "?". */
const char *px_socks5_command_name(uint8_t command);
