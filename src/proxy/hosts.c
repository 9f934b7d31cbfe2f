/* SPDX-License-Identifier: MIT */
#include "proxy/hosts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "proxy/http.h"

typedef struct hosts_entry {
	char *name;
	px_addr addr;
} hosts_entry;

struct px_hosts {
	hosts_entry *e;
	size_t n, cap;
};

px_hosts *px_hosts_free(px_hosts *h)
{
	if (!h)
		return NULL;
	for (size_t i = 0; i < h->n; i++)
		free(h->e[i].name);
	free(h->e);
	free(h);
	return NULL;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* The next whitespace-separated word of [*p, end), or NULL at the end. */
static const char *next_word(const char **p, const char *end, size_t *ret_len)
{
	const char *s = *p, *w;

	while (s < end && is_space(*s))
		s++;
	if (s == end)
		return NULL;
	w = s;
	while (s < end && !is_space(*s))
		s++;
	*p = s;
	*ret_len = (size_t)(s - w);
	return w;
}

static int add(px_hosts *h, const px_addr *a, const char *name, size_t len)
{
	char *n;

	if (len > 0 && name[len - 1] == '.')
		len--; /* "host." and "host" are the same name */
	if (len == 0 || len > PX_MAX_HOST || h->n >= PX_HOSTS_MAX)
		return 0;
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 32;
		hosts_entry *e = realloc(h->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		h->e = e;
		h->cap = cap;
	}
	n = strndup(name, len);
	if (!n)
		return -ENOMEM;
	for (char *c = n; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c + 32);
	h->e[h->n].name = n;
	h->e[h->n].addr = *a;
	h->n++;
	return 0;
}

static int parse_line(px_hosts *h, const char *p, const char *end)
{
	const char *hash = memchr(p, '#', (size_t)(end - p)), *w;
	char ip[INET6_ADDRSTRLEN];
	px_addr a = {0};
	size_t len;
	int r;

	if (hash)
		end = hash;
	w = next_word(&p, end, &len);
	if (!w || len >= sizeof(ip))
		return 0;
	memcpy(ip, w, len);
	ip[len] = 0;
	if (inet_pton(AF_INET, ip, a.addr) == 1)
		a.family = AF_INET;
	else if (inet_pton(AF_INET6, ip, a.addr) == 1)
		a.family = AF_INET6;
	else
		return 0; /* includes "fe80::1%eth0": a zone the proxy cannot use */
	while ((w = next_word(&p, end, &len))) {
		r = add(h, &a, w, len);
		if (r < 0)
			return r;
	}
	return 0;
}

int px_hosts_parse(const char *buf, size_t len, px_hosts **ret)
{
	px_hosts *h = calloc(1, sizeof(*h));
	const char *p = buf, *end = buf + len;

	if (!h)
		return -ENOMEM;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		int r = parse_line(h, p, le);

		if (r < 0) {
			px_hosts_free(h);
			return r;
		}
		p = nl ? nl + 1 : end;
	}
	*ret = h;
	return 0;
}

size_t px_hosts_lookup(const px_hosts *h, const char *name, px_addr *out, size_t max)
{
	size_t n = 0;

	if (!h)
		return 0;
	for (size_t i = 0; i < h->n && n < max; i++) {
		bool dup = false;

		if (strcasecmp(h->e[i].name, name) != 0)
			continue;
		for (size_t k = 0; k < n && !dup; k++)
			dup = out[k].family == h->e[i].addr.family &&
			      memcmp(out[k].addr, h->e[i].addr.addr, 16) == 0;
		if (!dup)
			out[n++] = h->e[i].addr;
	}
	return n;
}

bool px_is_localhost(const char *name)
{
	static const char suffix[] = ".localhost";
	size_t n = strlen(name), s = sizeof(suffix) - 1;

	return strcasecmp(name, "localhost") == 0 ||
	       (n > s && strcasecmp(name + n - s, suffix) == 0);
}
