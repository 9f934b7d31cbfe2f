/* SPDX-License-Identifier: MIT */
/* SOCKS5 handshake parser (socks5.h). */
#include "proxy/socks5.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#define ATYP_IPV4   1u
#define ATYP_DOMAIN 3u
#define ATYP_IPV6   4u
#define CMD_CONNECT 1u

int px_socks5_parse_greeting(const uint8_t *buf, size_t len, bool *ret_noauth)
{
	size_t n;

	*ret_noauth = false;
	if (len < 1)
		return 0;
	if (buf[0] != PX_SOCKS5_VERSION)
		return -EBADMSG;
	if (len < 2)
		return 0;
	n = buf[1];
	if (n == 0)
		return -EBADMSG;
	if (len < 2 + n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (buf[2 + i] == 0x00)
			*ret_noauth = true;
	return (int)(2 + n);
}

static int fail(const char **reterr_reason, const char *why, px_socks5_rep rep)
{
	*reterr_reason = why;
	return -(int)rep;
}

/* A domain from ATYP 3: a name as the HTTP parser takes it, or an address
 * literal spelled as text (then judged as that address). */
static int take_domain(const uint8_t *s, size_t n, px_socks5_request *ret)
{
	int family = 0;

	if (n == 0 || n > PX_MAX_HOST || memchr(s, 0, n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = (char)s[i];

		ret->host[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	ret->host[n] = 0;
	if (px_http_parse_host(ret->host, n, &ret->host_kind) < 0)
		return -EINVAL;
	if (ret->host_kind == PX_HOST_IPV4)
		family = AF_INET;
	else if (ret->host_kind == PX_HOST_IPV6)
		family = AF_INET6;
	if (family && inet_pton(family, ret->host, ret->addr) != 1)
		return -EINVAL;
	return 0;
}

int px_socks5_parse_request(const uint8_t *buf, size_t len, px_socks5_request *ret,
			    const char **reterr_reason)
{
	size_t alen, off;

	memset(ret, 0, sizeof(*ret));
	*reterr_reason = NULL;
	if (len < 4)
		return 0;
	ret->command = buf[1];
	if (buf[0] != PX_SOCKS5_VERSION)
		return fail(reterr_reason, "SOCKS version is not 5", PX_SOCKS5_GENERAL_FAILURE);
	if (buf[2] != 0)
		return fail(reterr_reason, "reserved byte is not 0", PX_SOCKS5_GENERAL_FAILURE);
	if (buf[1] != CMD_CONNECT)
		return fail(reterr_reason, "only the CONNECT command is supported",
			    PX_SOCKS5_COMMAND_UNSUPPORTED);
	switch (buf[3]) {
	case ATYP_IPV4:
		alen = 4;
		off = 4;
		break;
	case ATYP_IPV6:
		alen = 16;
		off = 4;
		break;
	case ATYP_DOMAIN:
		if (len < 5)
			return 0;
		alen = buf[4];
		off = 5;
		break;
	default:
		return fail(reterr_reason, "unknown address type", PX_SOCKS5_ATYP_UNSUPPORTED);
	}
	if (len < off + alen + 2)
		return 0;
	if (buf[3] == ATYP_DOMAIN) {
		if (take_domain(buf + off, alen, ret) < 0)
			return fail(reterr_reason, "invalid domain name",
				    PX_SOCKS5_GENERAL_FAILURE);
	} else {
		int family = buf[3] == ATYP_IPV4 ? AF_INET : AF_INET6;

		memcpy(ret->addr, buf + off, alen);
		ret->host_kind = buf[3] == ATYP_IPV4 ? PX_HOST_IPV4 : PX_HOST_IPV6;
		if (!inet_ntop(family, ret->addr, ret->host, sizeof(ret->host)))
			return fail(reterr_reason, "invalid address", PX_SOCKS5_GENERAL_FAILURE);
	}
	ret->port = (uint16_t)(buf[off + alen] << 8 | buf[off + alen + 1]);
	if (ret->port == 0)
		return fail(reterr_reason, "port 0", PX_SOCKS5_GENERAL_FAILURE);
	ret->len = off + alen + 2;
	return (int)ret->len;
}

void px_socks5_reply(px_socks5_rep rep, uint8_t out[PX_SOCKS5_REPLY_BYTES])
{
	memset(out, 0, PX_SOCKS5_REPLY_BYTES);
	out[0] = PX_SOCKS5_VERSION;
	out[1] = (uint8_t)rep;
	out[3] = ATYP_IPV4;
}

const char *px_socks5_command_name(uint8_t command)
{
	switch (command) {
	case 1:
		return "CONNECT";
	case 2:
		return "BIND";
	case 3:
		return "UDP-ASSOCIATE";
	default:
		return "?";
	}
}
