/* SPDX-License-Identifier: MIT */
/* TAP tests for the SOCKS5 handshake parser (src/proxy/socks5.c). */
#include <errno.h>
#include <string.h>

#include "proxy/socks5.h"
#include "tap.h"

#define B(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})

static int greeting(const uint8_t *b, size_t n, bool *noauth)
{
	return px_socks5_parse_greeting(b, n, noauth);
}

static void test_greeting(void)
{
	bool na;

	ok(greeting(B(5, 1, 0), &na) == 3 && na, "one method, no authentication");
	ok(greeting(B(5, 2, 2, 0), &na) == 4 && na, "username/password and no authentication");
	ok(greeting(B(5, 1, 2), &na) == 3 && !na,
	   "only username/password: complete, not acceptable");
	ok(greeting(B(5, 2, 0), &na) == 0, "a method missing: need more");
	ok(greeting(B(5), &na) == 0, "version only: need more");
	ok(greeting((const uint8_t *)"", 0, &na) == 0, "nothing: need more");
	ok(greeting(B(4, 1, 0), &na) == -EBADMSG, "SOCKS4: refused");
	ok(greeting(B(5, 0), &na) == -EBADMSG, "no method at all: refused");
	ok(greeting(B(5, 1, 0, 5, 1, 0, 3), &na) == 3, "bytes after the greeting are not consumed");
}

static int request(const uint8_t *b, size_t n, px_socks5_request *r, const char **why)
{
	return px_socks5_parse_request(b, n, r, why);
}

static void test_request(void)
{
	px_socks5_request r;
	const char *why;
	int n;

	n = request(B(5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90), &r, &why);
	ok(n == 10 && r.host_kind == PX_HOST_IPV4 && strcmp(r.host, "127.0.0.1") == 0 &&
	       r.port == 8080,
	   "IPv4 CONNECT (%d, %s:%u)", n, r.host, r.port);
	n = request(
	    B(5, 1, 0, 3, 11, 'E', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'C', 'o', 'm', 1, 187), &r,
	    &why);
	ok(n == 18 && r.host_kind == PX_HOST_NAME && strcmp(r.host, "example.com") == 0 &&
	       r.port == 443,
	   "domain CONNECT, lower-cased (%d, %s:%u)", n, r.host, r.port);
	n = request(
	    B(5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 22), &r,
	    &why);
	ok(n == 22 && r.host_kind == PX_HOST_IPV6 && strcmp(r.host, "2001:db8::1") == 0 &&
	       r.port == 22,
	   "IPv6 CONNECT (%d, %s)", n, r.host);
	n = request(B(5, 1, 0, 3, 7, '1', '.', '2', '.', '3', '.', '4', 0, 80), &r, &why);
	ok(n == 14 && r.host_kind == PX_HOST_IPV4 && r.addr[0] == 1 && r.addr[3] == 4,
	   "a domain spelling an IPv4 literal is judged as that address");
	n = request(B(5, 1, 0, 3, 3, '[', ':', ']', 0, 80), &r, &why);
	ok(n == -PX_SOCKS5_GENERAL_FAILURE, "a domain with brackets is refused");
	ok(request(B(5, 1, 0, 3, 11, 'e', 'x', 'a'), &r, &why) == 0, "partial domain: need more");
	ok(request(B(5, 1, 0), &r, &why) == 0, "partial header: need more");
	ok(request(B(5, 1, 0, 3), &r, &why) == 0, "no domain length yet: need more");
	ok(request(B(5, 1, 0, 1, 1, 2, 3, 4, 0), &r, &why) == 0, "half a port: need more");
	ok(request(B(5, 2, 0, 1, 1, 2, 3, 4, 0, 80), &r, &why) == -PX_SOCKS5_COMMAND_UNSUPPORTED &&
	       r.command == 2,
	   "BIND: command not supported (0x07)");
	ok(request(B(5, 3, 0, 1, 0, 0, 0, 0, 0, 0), &r, &why) == -PX_SOCKS5_COMMAND_UNSUPPORTED,
	   "UDP ASSOCIATE: command not supported (0x07)");
	ok(request(B(5, 9, 0, 1), &r, &why) == -PX_SOCKS5_COMMAND_UNSUPPORTED,
	   "an unknown command: 0x07");
	ok(request(B(5, 1, 0, 2, 1, 2, 3, 4, 0, 80), &r, &why) == -PX_SOCKS5_ATYP_UNSUPPORTED,
	   "address type 2: not supported (0x08)");
	ok(request(B(4, 1, 0, 1, 1, 2, 3, 4, 0, 80), &r, &why) == -PX_SOCKS5_GENERAL_FAILURE,
	   "version 4 in the request: general failure");
	ok(request(B(5, 1, 1, 1, 1, 2, 3, 4, 0, 80), &r, &why) == -PX_SOCKS5_GENERAL_FAILURE,
	   "reserved byte not 0: general failure");
	ok(request(B(5, 1, 0, 1, 1, 2, 3, 4, 0, 0), &r, &why) == -PX_SOCKS5_GENERAL_FAILURE,
	   "port 0: general failure");
	ok(request(B(5, 1, 0, 3, 0, 0, 80), &r, &why) == -PX_SOCKS5_GENERAL_FAILURE,
	   "an empty domain: general failure");
	ok(request(B(5, 1, 0, 3, 3, 'a', 0, 'b', 0, 80), &r, &why) == -PX_SOCKS5_GENERAL_FAILURE,
	   "a NUL in the domain: general failure");
	ok(request(B(5, 1, 0, 3, 5, 'a', ' ', 'b', '.', 'c', 0, 80), &r, &why) ==
	       -PX_SOCKS5_GENERAL_FAILURE,
	   "a space in the domain: general failure");
	{
		uint8_t big[5 + 255 + 2];

		big[0] = 5, big[1] = 1, big[2] = 0, big[3] = 3, big[4] = 255;
		memset(big + 5, 'a', 255);
		for (int i = 1; i < 4; i++)
			big[5 + 63 * i] = '.';
		big[5 + 255] = 0, big[5 + 256] = 80;
		ok(request(big, sizeof(big), &r, &why) == -PX_SOCKS5_GENERAL_FAILURE,
		   "a 255-byte domain (over 253): general failure");
	}
	n = request(B(5, 1, 0, 1, 1, 2, 3, 4, 0, 80, 'G', 'E', 'T'), &r, &why);
	ok(n == 10, "bytes after the request are left for the tunnel (%d)", n);
}

static void test_reply(void)
{
	uint8_t out[PX_SOCKS5_REPLY_BYTES];
	static const uint8_t want[] = {5, 2, 0, 1, 0, 0, 0, 0, 0, 0};

	px_socks5_reply(PX_SOCKS5_NOT_ALLOWED, out);
	ok(memcmp(out, want, sizeof(want)) == 0, "a reply names nothing of the proxy's side");
	ok(strcmp(px_socks5_command_name(3), "UDP-ASSOCIATE") == 0 &&
	       strcmp(px_socks5_command_name(200), "?") == 0,
	   "command names");
}

int main(void)
{
	test_greeting();
	test_request();
	test_reply();
	return tap_done();
}
