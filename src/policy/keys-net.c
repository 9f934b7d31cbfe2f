/* SPDX-License-Identifier: MIT */
/*
 * The "net" section of the key table and the syntax of its values: egress
 * host patterns, ports, methods, CIDRs, resolver addresses, rates, and the
 * credentials the proxy injects. Pure: nothing here looks at the host.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "base/cleanup.h"
#include "base/parse-num.h"
#include "policy/parse-internal.h"
#include "policy/agent-env.h"
#include "policy/plan.h"
#include "policy/policy-internal.h"
#include "policy/http-path.h"

/* Headers that frame or route the request: injecting them would let a policy
 * desynchronise the proxy and the origin. */
static const char *const reserved_headers[] = {
    "Host",    "Content-Length", "Transfer-Encoding", "Connection",	     "Upgrade", "TE",
    "Trailer", "Keep-Alive",	 "Proxy-Connection",  "Proxy-Authorization", "Expect",
};

/* RFC 1123 host name label rules, for egress patterns (already lower-cased)
 * and identity.hostname (any case). */
const char *dns_name_error(const char *s, size_t max)
{
	size_t len = strlen(s), label = 0, i;
	bool all_digits = true;

	if (len == 0)
		return "is empty";
	if (len > max)
		return "is too long";
	if (s[len - 1] == '.')
		return "ends with \".\"";
	for (i = 0; i <= len; i++) {
		char ch = s[i];

		if (ch == '.' || ch == '\0') {
			if (label == 0)
				return "has an empty label";
			if (label > 63)
				return "has a label longer than 63 characters";
			if (s[i - 1] == '-')
				return "has a label ending with \"-\"";
			if (ch == '\0' && all_digits)
				return "has a numeric last label (not a valid name nor a "
				       "dotted-quad IPv4 address)";
			label = 0;
			all_digits = true;
			continue;
		}
		if (ch == '*')
			return "has \"*\" that is not the whole leftmost label (as in "
			       "\"*.example.com\")";
		if (!(a_alnum(ch) || ch == '-'))
			return "contains a character other than letters, digits, \"-\" and \".\"";
		if (ch == '-' && label == 0)
			return "has a label starting with \"-\"";
		if (!a_digit(ch))
			all_digits = false;
		label++;
	}
	return NULL;
}

static int want_cidr(pctx *c, const json_t *v, plan_cidr *ret);

/*
 * An egress host pattern: an exact DNS name, "*.domain" (subdomains of a
 * domain of at least two labels), an IP literal (IPv6 with or without
 * brackets), or, where wildcards are allowed, a CIDR of IP literals. Stored
 * lower-case; IP literals in inet_ntop form, CIDRs as plan_cidr_format().
 */
static int want_host_pattern(pctx *c, const json_t *v, bool allow_wildcard, char **ret_host,
			     bool *ret_wildcard)
{
	_cleanup_free_ char *h = NULL;
	char addrbuf[INET6_ADDRSTRLEN], q[160];
	unsigned char bin[16];
	const char *s = NULL, *name, *err;
	bool wildcard = false;
	size_t len;
	int r;

	r = want_string(c, v, &s);
	if (r < 0)
		return r;
	len = strlen(s);
	if (len == 0)
		return fail_expected(c, v, "a host name");
	quote(s, 128, q, sizeof(q));
	if (s[0] == '[') {
		char inner[INET6_ADDRSTRLEN];

		if (len < 3 || s[len - 1] != ']' || len - 2 >= sizeof(inner))
			return fail_expected(
			    c, v, "an IPv6 address in brackets, as in \"[2001:db8::1]\"");
		memcpy(inner, s + 1, len - 2);
		inner[len - 2] = '\0';
		if (inet_pton(AF_INET6, inner, bin) != 1)
			return fail_expected(
			    c, v, "an IPv6 address in brackets, as in \"[2001:db8::1]\"");
		h = strdup(inet_ntop(AF_INET6, bin, addrbuf, sizeof(addrbuf)));
	} else if (inet_pton(AF_INET6, s, bin) == 1) {
		h = strdup(inet_ntop(AF_INET6, bin, addrbuf, sizeof(addrbuf)));
	} else if (inet_pton(AF_INET, s, bin) == 1) {
		h = strdup(inet_ntop(AF_INET, bin, addrbuf, sizeof(addrbuf)));
	} else if (strchr(s, '/') && allow_wildcard) {
		plan_cidr cidr;
		char fmt[64];

		r = want_cidr(c, v, &cidr);
		if (r < 0)
			return r;
		plan_cidr_format(&cidr, fmt, sizeof(fmt));
		h = strdup(fmt);
	} else {
		h = strdup(s);
		if (!h)
			return -ENOMEM;
		for (char *p = h; *p; p++)
			*p = a_lower(*p);
		name = h;
		if (strncmp(h, "*.", 2) == 0) {
			if (!allow_wildcard)
				return fail(
				    c, -EINVAL,
				    "host %s: a wildcard is not allowed here, name one host", q);
			wildcard = true;
			name = h + 2;
			if (!strchr(name, '.'))
				return fail(c, -EINVAL,
					    "host %s: a wildcard must cover a domain of at least "
					    "two labels, as in "
					    "\"*.example.com\"",
					    q);
		} else if (strcmp(h, "*") == 0) {
			return fail(c, -EINVAL,
				    "host %s: \"*\" would allow every host; name the hosts", q);
		}
		err = dns_name_error(name, POLICY_MAX_DNS_NAME);
		if (err)
			return fail(c, -EINVAL, "host %s %s", q, err);
	}
	if (!h)
		return -ENOMEM;
	*ret_host = TAKE_PTR(h);
	*ret_wildcard = wildcard;
	return 0;
}

static bool egress_matches(const plan_egress *e, const char *host)
{
	size_t hl, dl;

	if (!e->wildcard)
		return strcmp(e->host, host) == 0;
	/* "*.example.com" matches "a.example.com", not "example.com". */
	hl = strlen(host);
	dl = strlen(e->host + 1); /* ".example.com" */
	return hl > dl && strcmp(host + hl - dl, e->host + 1) == 0;
}

/* "10.0.0.0/8", "fd00::/8"; host bits must be zero so that what is written is
 * what is meant. */
static int want_cidr(pctx *c, const json_t *v, plan_cidr *ret)
{
	char buf[INET6_ADDRSTRLEN + 8], fixed[64];
	const char *s = NULL, *slash, *d;
	plan_cidr cidr = {};
	unsigned prefix = 0, max;
	int r;

	r = want_string(c, v, &s);
	if (r < 0)
		return r;
	slash = strchr(s, '/');
	if (!slash || (size_t)(slash - s) >= INET6_ADDRSTRLEN)
		return fail_expected(c, v, "a CIDR such as \"10.0.0.0/8\" or \"fd00::/8\"");
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	if (inet_pton(AF_INET, buf, cidr.addr) == 1) {
		cidr.family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, cidr.addr) == 1) {
		cidr.family = AF_INET6;
		max = 128;
	} else {
		return fail_expected(c, v, "a CIDR such as \"10.0.0.0/8\" or \"fd00::/8\"");
	}
	d = slash + 1;
	if (!*d || strlen(d) > 3 || (d[0] == '0' && d[1]))
		return fail_expected(c, v, "a CIDR with a prefix length, such as \"10.0.0.0/8\"");
	for (; *d; d++) {
		if (!a_digit(*d))
			return fail_expected(c, v,
					     "a CIDR with a prefix length, such as \"10.0.0.0/8\"");
		prefix = prefix * 10 + (unsigned)(*d - '0');
	}
	if (prefix > max)
		return fail(c, -EINVAL,
			    "prefix length /%u is longer than the %u bits of the address", prefix,
			    max);
	cidr.prefix = prefix;
	for (unsigned bit = prefix; bit < max; bit++)
		if (cidr.addr[bit / 8] & (0x80u >> (bit % 8))) {
			char q[160];

			for (unsigned b = prefix; b < max; b++)
				cidr.addr[b / 8] &= (uint8_t) ~(0x80u >> (b % 8));
			plan_cidr_format(&cidr, fixed, sizeof(fixed));
			quote(s, 64, q, sizeof(q));
			return fail(c, -EINVAL,
				    "%s has host bits set after the prefix; did you mean \"%s\"?",
				    q, fixed);
		}
	*ret = cidr;
	return 0;
}

/* "IP" or "IP:port"; IPv6 with a port in brackets: "[::1]:53". */
static int check_dns(pctx *c, const json_t *v, const char *s)
{
	static const char what[] =
	    "a resolver address \"IP\" or \"IP:port\" (IPv6 with a port as \"[IP]:port\")";
	char addr[INET6_ADDRSTRLEN + 1];
	unsigned char bin[16];
	const char *port = NULL, *colon;
	size_t alen;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end)
			return fail_expected(c, v, what);
		alen = (size_t)(end - s - 1);
		if (alen >= sizeof(addr))
			return fail_expected(c, v, what);
		memcpy(addr, s + 1, alen);
		addr[alen] = '\0';
		if (inet_pton(AF_INET6, addr, bin) != 1)
			return fail_expected(c, v, what);
		if (end[1] == ':')
			port = end + 2;
		else if (end[1] != '\0')
			return fail_expected(c, v, what);
	} else if (inet_pton(AF_INET6, s, bin) == 1) {
		/* bare IPv6, no port */
	} else {
		colon = strchr(s, ':');
		alen = colon ? (size_t)(colon - s) : strlen(s);
		if (alen >= sizeof(addr))
			return fail_expected(c, v, what);
		memcpy(addr, s, alen);
		addr[alen] = '\0';
		if (inet_pton(AF_INET, addr, bin) != 1)
			return fail_expected(c, v, what);
		if (colon)
			port = colon + 1;
	}
	if (port) {
		unsigned long pv = 0;

		if (!*port || strlen(port) > 5 || (port[0] == '0'))
			return fail_expected(c, v, what);
		for (const char *q = port; *q; q++) {
			if (!a_digit(*q))
				return fail_expected(c, v, what);
			pv = pv * 10 + (unsigned long)(*q - '0');
		}
		if (pv < 1 || pv > 65535)
			return fail(c, -EINVAL, "port %lu is not between 1 and 65535", pv);
	}
	return 0;
}

/* A printf-like format with exactly one "%s" and no other conversion ("%%" is
 * a literal percent), and nothing that could split a header line. */
static const char *format_error(const char *f)
{
	unsigned n_s = 0;

	for (; *f; f++) {
		unsigned char ch = (unsigned char)*f;

		if (ch < 0x20 || ch == 0x7f)
			return "contains a control character";
		if (ch != '%')
			continue;
		if (f[1] == '%') {
			f++;
			continue;
		}
		if (f[1] != 's')
			return "has a conversion other than \"%s\" (write \"%%\" for a percent "
			       "sign)";
		n_s++;
		f++;
	}
	if (n_s != 1)
		return "must contain \"%s\" exactly once, where the secret goes";
	return NULL;
}

static bool is_tchar(unsigned char ch)
{
	return a_alnum((char)ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* ---- egress rules ---- */

static int parse_egress_host(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	plan_egress *e = base;

	(void)k;
	return want_host_pattern(c, v, true, &e->host, &e->wildcard);
}

static int parse_ports(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	plan_egress *e = base;
	size_t n, i, j;
	int r;

	(void)k;
	if (!json_is_array(v))
		return fail_expected(c, v, "an array of port numbers");
	n = json_array_size(v);
	if (n == 0)
		return fail(c, -EINVAL, "expected at least one port, got an empty array");
	if (n > POLICY_MAX_PORTS)
		return fail(c, -E2BIG, "%zu ports, more than the limit of %u", n, POLICY_MAX_PORTS);
	for (i = 0; i < n; i++) {
		size_t s = path_push_index(c, i);
		uint64_t port = 0;

		r = want_uint(c, json_array_get(v, i), 1, 65535, &port);
		if (r < 0)
			return r;
		for (j = 0; j < i; j++)
			if (e->ports[j] == port)
				return fail(c, -EINVAL, "port %" PRIu64 " is listed twice", port);
		e->ports[i] = (uint16_t)port;
		path_pop(c, s);
	}
	e->n_ports = n;
	return 0;
}

/* One item of "methods": an index into plan_method_names. */
static const policy_key method_item = {
    .name = "method",
    .type = KT_ENUM,
    .width = sizeof(uint64_t),
    .names = plan_method_names,
    .n_names = PLAN_N_METHODS,
};

/* "methods" of an egress rule or a credential: k->off is the uint32_t bits. */
static int parse_methods(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	uint32_t *field = key_field(k, base), bits = 0;
	size_t n, i;

	if (!json_is_array(v))
		return fail_expected(c, v, "an array of HTTP methods");
	n = json_array_size(v);
	if (n == 0)
		return fail(c, -EINVAL,
			    "expected at least one method, got an empty array (omit \"methods\" to "
			    "allow any)");
	if (n > PLAN_N_METHODS)
		return fail(c, -E2BIG, "%zu methods, but there are only %u", n, PLAN_N_METHODS);
	for (i = 0; i < n; i++) {
		size_t s = path_push_index(c, i);
		uint64_t m = 0;
		int r;

		r = parse_value(c, json_array_get(v, i), &method_item, &m);
		if (r < 0)
			return r;
		if (bits & (1u << m))
			return fail(c, -EINVAL, "method \"%s\" is listed twice",
				    plan_method_names[m]);

		bits |= 1u << m;
		path_pop(c, s);
	}
	*field = bits == PLAN_ALL_METHODS ? HTTP_ANY_METHOD : bits;
	return 0;
}

static int parse_credential_methods(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	const plan_credential *cr = base;
	int r = parse_methods(c, v, k, base);

	if (r == 0 && cr->methods != HTTP_ANY_METHOD && (cr->methods & HTTP_CONNECT))
		return fail(c, -EINVAL,
			    "a credential is never sent through a tunnel: \"CONNECT\" does not "
			    "apply to it");
	return r;
}

/*
 * "paths" of an egress rule or a credential: path prefixes in the normal
 * form requests are compared in (http-path.h), so that what is written is
 * what is matched. k->off is the char ** array, k->count_off its count.
 */
static int parse_paths(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	char ***field = key_field(k, base);
	size_t *count = (size_t *)(void *)((char *)base + k->count_off), n;
	char norm[POLICY_MAX_PATH_PREFIX + 2], q[160], qn[160];
	void *arr;
	int r;

	r = want_array(c, v, "path prefixes", POLICY_MAX_PATHS, sizeof(char *), &arr, &n);
	if (r < 0)
		return r;
	plan_paths_free(*field, *count);
	*field = arr;
	*count = 0;
	if (n == 0)
		return fail(c, -EINVAL,
			    "expected at least one path prefix, got an empty array (omit \"paths\" "
			    "to allow any path)");
	for (size_t i = 0; i < n; i++) {
		size_t sv = path_push_index(c, i);
		const char *why = "";
		const char *s = NULL;

		r = want_string(c, json_array_get(v, i), &s);
		if (r < 0)
			return r;
		quote(s, 128, q, sizeof(q));
		if (s[0] != '/')
			return fail(c, -EINVAL, "path prefix %s does not start with \"/\"", q);
		if (strlen(s) > POLICY_MAX_PATH_PREFIX)
			return fail(c, -E2BIG,
				    "path prefix of %zu bytes is longer than the limit of %u",
				    strlen(s), POLICY_MAX_PATH_PREFIX);
		if (strpbrk(s, "?#"))
			return fail(
			    c, -EINVAL,
			    "path prefix %s has a query or fragment; only the path is matched", q);
		r = http_path_normalise(s, strlen(s), norm, sizeof(norm), &why);
		if (r < 0)
			return fail(c, -EINVAL, "path prefix %s is refused: %s", q, why);
		if (strcmp(norm, s) != 0) {
			quote(norm, 128, qn, sizeof(qn));
			return fail(c, -EINVAL,
				    "path prefix %s is not in normal form (requests are compared "
				    "after resolving \".\", \"..\", \"//\" and decoding %%XX of "
				    "unreserved characters); write %s",
				    q, qn);
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp((*field)[j], s) == 0)
				return fail(c, -EINVAL, "path prefix %s is listed twice", q);
		(*field)[i] = strdup(s);
		if (!(*field)[i])
			return -ENOMEM;
		(*count)++;
		path_pop(c, sv);
	}
	return 0;
}

static void egress_init(void *base)
{
	plan_egress *e = base;

	e->ports[0] = 80;
	e->ports[1] = 443;
	e->n_ports = 2;
	e->methods = HTTP_ANY_METHOD;
}

static const policy_key egress_keys[] = {
    {.name = "host",
     .type = KT_CUSTOM,
     .flags = KEY_REQUIRED,
     .parse = parse_egress_host,
     .doc_type = "string"},
    {.name = "ports",
     .type = KT_CUSTOM,
     .parse = parse_ports,
     .doc_type = "integer",
     .doc_default = "[80, 443]"},
    {.name = "methods",
     .type = KT_CUSTOM,
     .off = offsetof(plan_egress, methods),
     .parse = parse_methods,
     .doc_type = "GET",
     .doc_default = "any"},
    {.name = "paths",
     .type = KT_CUSTOM,
     .off = offsetof(plan_egress, paths),
     .count_off = offsetof(plan_egress, n_paths),
     .parse = parse_paths,
     .doc_type = "path prefix",
     .doc_default = "any path"},
    {.name = "inspect", .type = KT_BOOL, FIELD(plan_egress, inspect), .def = false},
};
static const key_table egress_table = {egress_keys, ELEMENTSOF(egress_keys), .init = egress_init};

/* ---- allow_private, rate, bandwidth ---- */

static int parse_allow_private(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	sc_plan *p = base;
	size_t n;
	void *arr;
	int r;

	(void)k;
	r = want_array(c, v, "CIDRs", POLICY_MAX_CIDRS, sizeof(*p->allow_private), &arr, &n);
	if (r < 0)
		return r;
	free(p->allow_private);
	p->allow_private = arr;
	p->n_allow_private = 0;
	for (size_t i = 0; i < n; i++) {
		size_t s = path_push_index(c, i);
		plan_cidr *cd = &p->allow_private[i];

		r = want_cidr(c, json_array_get(v, i), cd);
		if (r < 0)
			return r;
		for (size_t j = 0; j < i; j++)
			if (p->allow_private[j].family == cd->family &&
			    p->allow_private[j].prefix == cd->prefix &&
			    memcmp(p->allow_private[j].addr, cd->addr, 16) == 0)
				return fail(c, -EINVAL,
					    "the same range is already listed in "
					    "$.net.allow_private[%zu]",
					    j);
		p->n_allow_private = i + 1;
		path_pop(c, s);
	}
	return 0;
}

/* net.rate or a credential's rate: k->off is the plan_rate. */
static int parse_rate_value(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	plan_rate *rate = key_field(k, base);

	if (!json_is_string(v) || parse_rate(json_string_value(v), &rate->count, &rate->per_ns) < 0)
		return fail_expected(c, v, "a request rate such as \"20/s\" or \"100/m\"");
	return 0;
}

/*
 * net.rate: absent is PLAN_NET_RATE_DEFAULT (net_init), so that a sandbox
 * cannot write records faster than its log is bounded (docs/policy.md,
 * "How fast the log grows"); null lifts it.
 */
static int parse_net_rate(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	plan_rate *rate = key_field(k, base);

	if (json_is_null(v)) {
		*rate = (plan_rate){0};
		return 0;
	}
	return parse_rate_value(c, v, k, base);
}

static void net_init(void *base)
{
	sc_plan *p = base;

	p->rate = (plan_rate){.count = PLAN_NET_RATE_DEFAULT, .per_ns = 1000000000ull};
}

static int parse_bandwidth_value(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	uint64_t bw;

	if (!json_is_string(v) || parse_bandwidth(json_string_value(v), &bw) < 0 || bw == 0 ||
	    bw == PLAN_UNLIMITED)
		return fail_expected(c, v, "a bandwidth such as \"1M/s\"");
	store_uint(key_field(k, base), k->width, bw);
	return 0;
}

/* ---- credentials ---- */

static int parse_credential_host(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	plan_credential *cr = base;
	const sc_plan *p = c->plan;
	bool wildcard, found = false;
	char q[160];
	int r;

	(void)k;
	r = want_host_pattern(c, v, false, &cr->host, &wildcard);
	if (r < 0)
		return r;
	/* net.egress comes before net.credentials in the table. */
	for (size_t i = 0; i < p->n_egress && !found; i++)
		found = egress_matches(&p->egress[i], cr->host);
	if (!found) {
		quote(cr->host, 128, q, sizeof(q));
		return fail(
		    c, -EINVAL,
		    "no $.net.egress rule allows host %s, so this credential could never be used",
		    q);
	}
	return 0;
}

static int check_header(pctx *c, const json_t *v, const char *s)
{
	char q[160];

	if (!*s || strlen(s) > POLICY_MAX_HEADER)
		return fail_expected(c, v, "an HTTP header name");
	for (const char *h = s; *h; h++)
		if (!is_tchar((unsigned char)*h))
			return fail_expected(
			    c, v, "an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)");
	for (size_t i = 0; i < ELEMENTSOF(reserved_headers); i++)
		if (strcasecmp(s, reserved_headers[i]) == 0) {
			quote(s, 64, q, sizeof(q));
			return fail(c, -EINVAL,
				    "header %s frames or routes the request and cannot be injected",
				    q);
		}
	return 0;
}

static int check_env_name(pctx *c, const json_t *v, const char *s)
{
	return is_ident(s) ? 0 : fail_expected(c, v, "an environment variable name");
}

/* Lexically; the host check also resolves it (it may be a symlink). */
static int check_secret_path(pctx *c, const json_t *v, const char *s)
{
	char q[160];

	(void)v;
	if (plan_grant_containing(c->plan, s)) {
		quote(s, 128, q, sizeof(q));
		return fail(c, -EINVAL,
			    "secret file %s lies inside a grant, where the sandbox could read it",
			    q);
	}
	return 0;
}

static int check_format(pctx *c, const json_t *v, const char *s)
{
	const char *err = format_error(s);
	char q[160];

	(void)v;
	if (!err)
		return 0;
	quote(s, 64, q, sizeof(q));
	return fail(c, -EINVAL, "format %s %s", q, err);
}

/* "in": where the placeholder is replaced; the headers always. */
static int parse_credential_in(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	plan_credential *cr = base;
	bool header = false;
	size_t i;
	json_t *x;

	(void)k;
	if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > 2)
		return fail_expected(c, v, "[\"header\"] or [\"header\", \"query\"]");
	cr->in_query = false;
	json_array_foreach(v, i, x)
	{
		const char *s = json_is_string(x) ? json_string_value(x) : "";

		if (strcmp(s, "header") == 0 && !header)
			header = true;
		else if (strcmp(s, "query") == 0 && !cr->in_query)
			cr->in_query = true;
		else
			return fail_expected(c, v, "[\"header\"] or [\"header\", \"query\"]");
	}
	if (!header)
		return fail(c, -EINVAL,
			    "a placeholder is always replaced in the headers: \"in\" must list "
			    "\"header\"");
	return 0;
}

static int check_placeholder_env(pctx *c, const json_t *v, const char *s)
{
	char q[160];

	if (!is_ident(s) || strlen(s) > 255)
		return fail_expected(c, v, "an environment variable name");
	if (agent_env_reserved(s)) {
		quote(s, 64, q, sizeof(q));
		return fail(c, -EINVAL, "%s is set by sandcap itself", q);
	}
	return 0;
}

static int credential_finish(pctx *c, const json_t *obj, void *base, size_t index)
{
	plan_credential *cr = base;
	const sc_plan *p = c->plan;
	bool ve = json_object_get(obj, "value_env"), vf = json_object_get(obj, "value_file");

	if (ve == vf)
		return fail(c, -EINVAL,
			    "expected exactly one of \"value_env\" and \"value_file\", got %s",
			    ve ? "both" : "neither");
	if (!cr->header && !cr->placeholder_env)
		return fail(c, -EINVAL,
			    "expected \"header\" (the proxy sets it) or \"placeholder_env\" (the "
			    "proxy replaces a placeholder the agent sends), got neither");
	if (json_object_get(obj, "in") && !cr->placeholder_env)
		return fail(c, -EINVAL,
			    "\"in\" says where a placeholder is replaced: it needs "
			    "\"placeholder_env\"");
	for (size_t i = 0; i < index && cr->placeholder_env; i++)
		if (p->credentials[i].placeholder_env &&
		    strcmp(p->credentials[i].placeholder_env, cr->placeholder_env) == 0)
			return fail(c, -EINVAL,
				    "variable \"%s\" already holds the placeholder of "
				    "$.net.credentials[%zu]",
				    cr->placeholder_env, i);
	for (size_t i = 0; i < index && cr->header; i++)
		if (strcmp(p->credentials[i].host, cr->host) == 0 && p->credentials[i].header &&
		    strcasecmp(p->credentials[i].header, cr->header) == 0)
			return fail(c, -EINVAL,
				    "header \"%s\" for host \"%s\" is already set by "
				    "$.net.credentials[%zu]",
				    cr->header, cr->host, i);
	/* Two credentials of one host may share the default name (the first
	 * one is the one used); a name given must say which one it is. */
	if (cr->name) {
		for (size_t i = 0; i < index; i++)
			if (strcmp(p->credentials[i].name, cr->name) == 0)
				return fail(c, -EINVAL,
					    "name \"%s\" is already used by "
					    "$.net.credentials[%zu] (a name defaults to the host)",
					    cr->name, i);
		return 0;
	}
	cr->name = strdup(cr->host);
	return cr->name ? 0 : -ENOMEM;
}

/* A name for records and reports: short, printable, no spaces. */
static int check_credential_name(pctx *c, const json_t *v, const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > POLICY_MAX_NAME)
		return fail_expected(c, v, "a name of 1 to 64 characters");
	for (const char *h = s; *h; h++)
		if (!a_alnum(*h) && !strchr("._-", *h))
			return fail_expected(c, v,
					     "a name of letters, digits, \".\", \"_\" and \"-\"");
	return 0;
}

static const char *const upstream_names[] = {"https", "http"};
static const int upstream_https[] = {1, 0};

static const policy_key credential_keys[] = {
    {.name = "host",
     .type = KT_CUSTOM,
     .flags = KEY_REQUIRED,
     .parse = parse_credential_host,
     .doc_type = "string"},
    {.name = "header", .type = KT_STRING, FIELD(plan_credential, header), .check = check_header},
    {.name = "value_env",
     .type = KT_STRING,
     FIELD(plan_credential, value_env),
     .check = check_env_name},
    {.name = "value_file",
     .type = KT_HOST_PATH,
     FIELD(plan_credential, value_file),
     .host = HOST_SECRET,
     .check = check_secret_path},
    {.name = "format",
     .type = KT_STRING,
     FIELD(plan_credential, format),
     .def_str = "%s",
     .check = check_format},
    {.name = "upstream",
     .type = KT_ENUM,
     FIELD(plan_credential, upstream_https),
     .def = 1,
     .names = upstream_names,
     .n_names = ELEMENTSOF(upstream_names),
     .values = upstream_https},
    {.name = "name",
     .type = KT_STRING,
     FIELD(plan_credential, name),
     .check = check_credential_name,
     .doc_default = "the host"},
    {.name = "max_requests",
     .type = KT_UINT,
     FIELD(plan_credential, max_requests),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED,
     .min = 1,
     .max = UINT64_C(1) << 53},
    {.name = "rate",
     .type = KT_CUSTOM,
     .off = offsetof(plan_credential, rate),
     .flags = KEY_NULLABLE,
     .parse = parse_rate_value,
     .doc_type = "rate",
     .doc_default = "unlimited"},
    {.name = "max_bytes",
     .type = KT_SIZE,
     FIELD(plan_credential, max_bytes),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED},
    {.name = "methods",
     .type = KT_CUSTOM,
     .off = offsetof(plan_credential, methods),
     .parse = parse_credential_methods,
     .doc_type = "GET",
     .doc_default = "any"},
    {.name = "paths",
     .type = KT_CUSTOM,
     .off = offsetof(plan_credential, paths),
     .count_off = offsetof(plan_credential, n_paths),
     .parse = parse_paths,
     .doc_type = "path prefix",
     .doc_default = "any path"},
    {.name = "expires",
     .type = KT_DURATION,
     FIELD(plan_credential, expires_ns),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED},
    {.name = "placeholder_env",
     .type = KT_STRING,
     FIELD(plan_credential, placeholder_env),
     .check = check_placeholder_env},
    {.name = "in",
     .type = KT_CUSTOM,
     .parse = parse_credential_in,
     .doc_type = "header",
     .doc_default = "[\"header\"]"},
};
static const key_table credential_table = {credential_keys, ELEMENTSOF(credential_keys),
					   .finish = credential_finish};

/* ---- serving ---- */

/* where the listener is: the host's loopback, or every address of a pod's
 * network namespace (index = any_addr) */
static const char *const serve_bind_names[] = {"127.0.0.1", "0.0.0.0"};

static const policy_key serve_item_keys[] = {
    {.name = "port",
     .type = KT_UINT,
     FIELD(plan_serve, port),
     .flags = KEY_REQUIRED,
     .min = 1,
     .max = 65535},
    {.name = "host_port", .type = KT_UINT, FIELD(plan_serve, host_port), .min = 1, .max = 65535},
    {.name = "bind",
     .type = KT_ENUM,
     FIELD(plan_serve, any_addr),
     .names = serve_bind_names,
     .n_names = ELEMENTSOF(serve_bind_names)},
};
static const key_table serve_item_table = {serve_item_keys, ELEMENTSOF(serve_item_keys)};

/*
 * net.serve: the ports of the sandbox's loopback the host may reach, each
 * a number or {"port", "host_port"}. Read after net.listen (table order):
 * a port served needs a server, which needs listen.
 */
static int parse_serve(pctx *c, const json_t *v, const policy_key *k, void *base)
{
	sc_plan *p = base;
	size_t n;
	void *arr;
	int r;

	(void)k;
	if (!json_is_array(v))
		return fail_expected(
		    c, v,
		    "an array of ports, each a number or {\"port\", \"host_port\", \"bind\"}");
	if (json_array_size(v) > 0 && !p->net_listen)
		return fail(
		    c, -EINVAL,
		    "net.serve needs net.listen true (a served port needs a server inside), "
		    "but net.listen is false: drop net.serve or allow listening");
	r = want_array(c, v, "ports", POLICY_MAX_SERVE, sizeof(*p->serve), &arr, &n);
	if (r < 0)
		return r;
	free(p->serve);
	p->serve = arr;
	p->n_serve = 0;
	for (size_t i = 0; i < n; i++) {
		size_t s = path_push_index(c, i);
		const json_t *x = json_array_get(v, i);
		plan_serve *sv = &p->serve[i];
		uint64_t port = 0;

		if (json_is_object(x)) {
			r = parse_object(c, x, &serve_item_table, sv);
		} else if (json_is_integer(x)) {
			r = want_uint(c, x, 1, 65535, &port);
			sv->port = (uint16_t)port;
		} else {
			r = fail_expected(c, x, "a port number or {\"port\": N, \"host_port\": M}");
		}
		if (r < 0)
			return r;
		/* a pod's port is reached where it was asked for, not a random one */
		if (sv->any_addr && !sv->host_port)
			sv->host_port = sv->port;
		if (sv->port == PLAN_PROXY_PORT)
			return fail(
			    c, -EINVAL,
			    "port %u is the egress proxy's inside the sandbox; serve another",
			    (unsigned)PLAN_PROXY_PORT);
		for (size_t j = 0; j < i; j++) {
			if (p->serve[j].port == sv->port)
				return fail(c, -EINVAL,
					    "port %u is already served by $.net.serve[%zu]",
					    (unsigned)sv->port, j);
			if (sv->host_port && p->serve[j].host_port == sv->host_port)
				return fail(c, -EINVAL,
					    "host_port %u is already taken by $.net.serve[%zu]",
					    (unsigned)sv->host_port, j);
		}
		p->n_serve = i + 1;
		path_pop(c, s);
	}
	return 0;
}

/* ---- the section ---- */

static const policy_key net_keys[] = {
    {.name = "egress",
     .type = KT_LIST,
     FIELD(sc_plan, egress),
     .count_off = offsetof(sc_plan, n_egress),
     .elem_size = sizeof(plan_egress),
     .max_items = POLICY_MAX_EGRESS,
     .items = "egress rules",
     .sub = &egress_table},
    {.name = "allow_private",
     .type = KT_CUSTOM,
     .parse = parse_allow_private,
     .doc_type = "CIDR",
     .doc_default = "[]"},
    {.name = "rate",
     .type = KT_CUSTOM,
     .off = offsetof(sc_plan, rate),
     .flags = KEY_NULL_LIFTS,
     .parse = parse_net_rate,
     .doc_type = "rate",
     .doc_default = "\"200/s\""},
    {.name = "bandwidth",
     .type = KT_CUSTOM,
     FIELD(sc_plan, bandwidth),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED,
     .parse = parse_bandwidth_value,
     .doc_type = "bandwidth",
     .doc_default = "unlimited"},
    {.name = "max_request_body",
     .type = KT_SIZE,
     FIELD(sc_plan, max_request_body),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED},
    {.name = "max_response_body",
     .type = KT_SIZE,
     FIELD(sc_plan, max_response_body),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED},
    {.name = "egress_budget",
     .type = KT_SIZE,
     FIELD(sc_plan, egress_budget),
     .flags = KEY_NULLABLE,
     .def = PLAN_UNLIMITED},
    {.name = "credentials",
     .type = KT_LIST,
     FIELD(sc_plan, credentials),
     .count_off = offsetof(sc_plan, n_credentials),
     .elem_size = sizeof(plan_credential),
     .max_items = POLICY_MAX_CREDENTIALS,
     .items = "credentials",
     .sub = &credential_table},
    {.name = "upstream_ca",
     .type = KT_HOST_PATH,
     FIELD(sc_plan, upstream_ca),
     .flags = KEY_NULLABLE,
     .host = HOST_FILE},
    {.name = "listen", .type = KT_BOOL, FIELD(sc_plan, net_listen), .def = true},
    {.name = "serve",
     .type = KT_CUSTOM,
     .parse = parse_serve,
     .doc_type = "port",
     .doc_default = "[]"},
    {.name = "dns",
     .type = KT_STRING,
     FIELD(sc_plan, dns),
     .flags = KEY_NULLABLE,
     .check = check_dns,
     .doc_type = "IP",
     .doc_default = "/etc/resolv.conf"},
};
const key_table net_section = {net_keys, ELEMENTSOF(net_keys), .init = net_init};
