/* SPDX-License-Identifier: MIT */
#include "proxy/allow.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "policy/http-path.h"

int px_parse_ip(const char *s, int *ret_family, uint8_t ret_addr[16])
{
	memset(ret_addr, 0, 16);
	if (inet_pton(AF_INET, s, ret_addr) == 1) {
		*ret_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, ret_addr) == 1) {
		*ret_family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

static bool in4(const uint8_t *a, uint32_t net, unsigned prefix)
{
	uint32_t v = ((uint32_t)a[0] << 24) | ((uint32_t)a[1] << 16) | ((uint32_t)a[2] << 8) | a[3];
	uint32_t mask = prefix == 0 ? 0 : ~UINT32_C(0) << (32 - prefix);

	return (v & mask) == (net & mask);
}

static bool v4_private(const uint8_t *a)
{
	static const struct {
		uint32_t net;
		unsigned prefix;
	} nets[] = {
	    {0x00000000, 8},  /* "this network", incl. 0.0.0.0 unspecified */
	    {0x0a000000, 8},  /* RFC 1918 */
	    {0x64400000, 10}, /* CGNAT, RFC 6598 */
	    {0x7f000000, 8},  /* loopback */
	    {0xa9fe0000, 16}, /* link-local, incl. 169.254.169.254 metadata */
	    {0xac100000, 12}, /* RFC 1918 */
	    {0xc0000000, 24}, /* IETF protocol assignments */
	    {0xc0a80000, 16}, /* RFC 1918 */
	    {0xc6120000, 15}, /* benchmarking */
	    {0xe0000000, 4},  /* multicast */
	    {0xf0000000, 4},  /* reserved, incl. 255.255.255.255 broadcast */
	};

	for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++)
		if (in4(a, nets[i].net, nets[i].prefix))
			return true;
	return false;
}

static bool all_zero(const uint8_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i])
			return false;
	return true;
}

/* Returns the embedded IPv4 address for mapped/compatible/NAT64 forms. */
static const uint8_t *v6_embedded_v4(const uint8_t *a)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};

	if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0 || all_zero(a, 12))
		return a + 12;
	if (a[0] == 0x20 && a[1] == 0x02) /* 6to4: 2002:AABB:CCDD::/48 */
		return a + 2;
	return NULL;
}

bool px_addr_is_private(int family, const uint8_t *a)
{
	const uint8_t *v4;

	if (family == AF_INET)
		return v4_private(a);
	if (family != AF_INET6)
		return true;
	v4 = v6_embedded_v4(a);
	if (v4)
		return v4_private(v4); /* covers :: and ::1 via 0.0.0.0/8 */
	if ((a[0] & 0xfe) == 0xfc)     /* ULA fc00::/7 */
		return true;
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) /* link-local fe80::/10 */
		return true;
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0) /* site-local fec0::/10 (deprecated) */
		return true;
	if (a[0] == 0xff) /* multicast */
		return true;
	if (a[0] == 0 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b && a[4] == 0 && a[5] == 1)
		return true;				     /* local-use NAT64 64:ff9b:1::/48 */
	if (a[0] == 0x01 && a[1] == 0 && all_zero(a + 2, 6)) /* discard 100::/64 */
		return true;
	if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8) /* documentation */
		return true;
	return false;
}

bool px_cidr_contains(const plan_cidr *c, int family, const uint8_t *addr)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	unsigned bits, full, rem;

	/* an IPv4-mapped address is the IPv4 address for this purpose */
	if (family == AF_INET6 && c->family == AF_INET && memcmp(addr, mapped, 12) == 0) {
		family = AF_INET;
		addr += 12;
	}
	if (family != c->family)
		return false;
	bits = c->prefix;
	if (bits > (family == AF_INET ? 32u : 128u))
		return false;
	full = bits / 8;
	rem = bits % 8;
	if (memcmp(addr, c->addr, full) != 0)
		return false;
	if (rem) {
		uint8_t mask = (uint8_t)(0xff << (8 - rem));

		if ((addr[full] & mask) != (c->addr[full] & mask))
			return false;
	}
	return true;
}

bool px_addr_permitted(const px_config *cfg, int family, const uint8_t *addr)
{
	if (!px_addr_is_private(family, addr))
		return true;
	for (size_t i = 0; i < cfg->n_allow_private; i++)
		if (px_cidr_contains(&cfg->allow_private[i], family, addr))
			return true;
	return false;
}

/*
 * A rule naming an address: an IP literal (IPv6 with or without the
 * brackets of a URI) or a CIDR "ADDR/PREFIX". Returns 0 with *ret the
 * range (prefix 32 or 128 for a literal), -EINVAL for a name.
 */
static int parse_rule_range(const char *h, plan_cidr *ret)
{
	char tmp[64];
	const char *slash = strchr(h, '/');
	size_t n = slash ? (size_t)(slash - h) : strlen(h);
	unsigned prefix = 0;

	if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
		h++;
		n -= 2;
	}
	if (n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, h, n);
	tmp[n] = 0;
	if (px_parse_ip(tmp, &ret->family, ret->addr) < 0)
		return -EINVAL;
	if (!slash) {
		ret->prefix = ret->family == AF_INET ? 32 : 128;
		return 0;
	}
	for (const char *p = slash + 1; *p; p++) {
		if (*p < '0' || *p > '9' || prefix > 128)
			return -EINVAL;
		prefix = prefix * 10 + (unsigned)(*p - '0');
	}
	if (slash[1] == 0 || prefix > (ret->family == AF_INET ? 32u : 128u))
		return -EINVAL;
	ret->prefix = prefix;
	return 0;
}

static bool host_matches(const plan_egress *e, const char *host)
{
	const char *pat = e->host;
	size_t hl = strlen(host), pl;

	if (!e->wildcard)
		return strcmp(pat, host) == 0;
	if (strncmp(pat, "*.", 2) == 0)
		pat += 2;
	pl = strlen(pat);
	/* strict subdomain: at least one more label before ".domain" */
	return hl > pl + 1 && host[hl - pl - 1] == '.' && strcmp(host + hl - pl, pat) == 0;
}

static bool port_ok(const plan_egress *e, uint16_t port)
{
	if (e->n_ports == 0)
		return port == 80 || port == 443;
	for (size_t i = 0; i < e->n_ports && i < POLICY_MAX_PORTS; i++)
		if (e->ports[i] == port)
			return true;
	return false;
}

static bool method_ok(const plan_egress *e, uint32_t method_bit, bool is_connect)
{
	if (e->methods == HTTP_ANY_METHOD)
		return true;
	if (is_connect)
		return (e->methods & HTTP_CONNECT) != 0;
	return method_bit != 0 && (e->methods & method_bit) != 0;
}

/*
 * A rule with paths refuses CONNECT: a tunnel would hide the paths, as it
 * hides the methods. Only a request the proxy can read is judged by them,
 * which an inspected rule's decrypted requests are. A CONNECT judged here is
 * a plain tunnel, inspected rule or not: one to be decrypted was taken
 * before (px_inspect_connect()), and one whose client was silent or did not
 * speak TLS (inspect_declined) would carry any path past the rule.
 */
static bool path_ok(const plan_egress *e, bool is_connect, const char *norm_path)
{
	if (e->n_paths == 0)
		return true;
	return !is_connect && http_paths_allow(e->paths, e->n_paths, norm_path);
}

/* How far a rule got, for the reason of a refusal: the nearest miss wins. */
typedef enum miss {
	MISS_HOST,
	MISS_PORT,
	MISS_METHOD,
	MISS_PATH,
	_MISS_MAX,
	_MISS_INVALID = -EINVAL,
} miss;

static int match(const px_config *cfg, const char *host, px_host_kind kind, uint16_t port,
		 uint32_t method_bit, bool is_connect, bool check_paths, const char *norm_path,
		 const char **reterr_reason)
{
	static const char *const reasons[_MISS_MAX] = {
	    [MISS_HOST] = "host-not-allowed",
	    [MISS_PORT] = "port-not-allowed",
	    [MISS_METHOD] = "method-not-allowed",
	    [MISS_PATH] = "path-not-allowed",
	};
	miss nearest = MISS_HOST;
	uint8_t addr[16];
	int fam = 0;

	if (kind == PX_HOST_IPV4 || kind == PX_HOST_IPV6) {
		if (px_parse_ip(host, &fam, addr) < 0) {
			*reterr_reason = "ip-literal";
			return -EACCES;
		}
	}
	for (size_t i = 0; i < cfg->n_egress; i++) {
		const plan_egress *e = &cfg->egress[i];
		plan_cidr range;

		if (fam) {
			/* only a rule naming the address or a range around it, in
			 * the same family: "::ffff:127.0.0.1" is not "127.0.0.1" */
			if (e->wildcard || parse_rule_range(e->host, &range) < 0 ||
			    range.family != fam || !px_cidr_contains(&range, fam, addr))
				continue;
		} else if (!host_matches(e, host))
			continue;
		if (!port_ok(e, port)) {
			if (nearest < MISS_PORT)
				nearest = MISS_PORT;
			continue;
		}
		if (!method_ok(e, method_bit, is_connect)) {
			if (nearest < MISS_METHOD)
				nearest = MISS_METHOD;
			continue;
		}
		if (check_paths && !path_ok(e, is_connect, norm_path)) {
			nearest = MISS_PATH;
			continue;
		}
		return (int)i;
	}
	/* an address no rule names is an "ip-literal" refusal, as before */
	*reterr_reason = fam && nearest == MISS_HOST ? "ip-literal" : reasons[nearest];
	return -EACCES;
}

int px_allow_match(const px_config *cfg, const char *host, px_host_kind kind, uint16_t port,
		   uint32_t method_bit, bool is_connect, const char **reterr_reason)
{
	return match(cfg, host, kind, port, method_bit, is_connect, false, NULL, reterr_reason);
}

int px_allow_match_path(const px_config *cfg, const char *host, px_host_kind kind, uint16_t port,
			uint32_t method_bit, bool is_connect, const char *norm_path,
			const char **reterr_reason)
{
	return match(cfg, host, kind, port, method_bit, is_connect, true, norm_path, reterr_reason);
}

int px_allow_name(const px_config *cfg, const char *name)
{
	plan_cidr range;

	for (size_t i = 0; i < cfg->n_egress; i++) {
		const plan_egress *e = &cfg->egress[i];

		/* an IP-literal rule names no DNS name */
		if (!e->wildcard && parse_rule_range(e->host, &range) == 0)
			continue;
		if (host_matches(e, name))
			return (int)i;
	}
	return -EACCES;
}
