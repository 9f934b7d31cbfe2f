/* SPDX-License-Identifier: MIT */
#include "proxy/placeholder.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static const struct shape {
	const char *prefix_of_name; /* the variable name starts with this */
	const char *prefix;	    /* the placeholder starts with this */
	size_t random_len;
} shapes[] = {
    {"ANTHROPIC", "sk-ant-api03-", 80},
    {"OPENAI", "sk-proj-", 48},
    {"GITHUB", "ghp_", 36},
    {"GH_", "ghp_", 36},
    {"GITLAB", "glpat-", 20},
    {"HF_", "hf_", 34},
    {"HUGGING", "hf_", 34},
    {"SLACK", "xoxb-", 40},
    {"GROQ", "gsk_", 52},
};

int px_placeholder_make(const char *name, char *out, size_t size)
{
	static const char alnum[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	const char *prefix = "";
	size_t len = 40, n = 0;

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		if (strncmp(name, shapes[i].prefix_of_name, strlen(shapes[i].prefix_of_name)) ==
		    0) {
			prefix = shapes[i].prefix;
			len = shapes[i].random_len;
			break;
		}
	if (strlen(prefix) + len > PX_PLACEHOLDER_MAX || size <= strlen(prefix) + len)
		return -ENOBUFS;
	strcpy(out, prefix);
	n = strlen(prefix);
	while (len > 0) {
		unsigned char b[64];
		ssize_t got = getrandom(b, sizeof(b), 0);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (ssize_t i = 0; i < got && len > 0; i++) {
			/* 62 * 4 = 248: reject the top of the range, no bias */
			if (b[i] >= 248)
				continue;
			out[n++] = alnum[b[i] % 62];
			len--;
		}
	}
	out[n] = 0;
	return 0;
}

const px_cred *px_placeholder_find(const px_config *cfg, const char *buf, size_t len)
{
	for (size_t i = 0; i < cfg->n_creds; i++) {
		const px_cred *c = &cfg->creds[i];

		if (c->placeholder && memmem(buf, len, c->placeholder, strlen(c->placeholder)))
			return c;
	}
	return NULL;
}

/* Replaces every occurrence of from in [start, end) of *buf; returns the count. */
static int replace_in(char **buf, size_t *len, size_t start, size_t *end, const char *from,
		      const char *to)
{
	size_t fl = strlen(from), tl = strlen(to), off = start;
	int count = 0;

	while (off + fl <= *end) {
		char *hit = memmem(*buf + off, *end - off, from, fl);
		char *nb;
		size_t at;

		if (!hit)
			break;
		at = (size_t)(hit - *buf);
		if (tl > fl) {
			nb = realloc(*buf, *len + (tl - fl) + 1);
			if (!nb)
				return -ENOMEM;
			*buf = nb;
		}
		memmove(*buf + at + tl, *buf + at + fl, *len - at - fl + 1);
		memcpy(*buf + at, to, tl);
		*len = *len + tl - fl;
		*end = *end + tl - fl;
		off = at + tl;
		count++;
	}
	return count;
}

/* Where c's placeholder is replaced in a head: [*ret_q, *ret_qend) is the
 * query string of the request line (empty without in_query or a query);
 * the headers run from *ret_hdr to the end. -EINVAL without a line. */
static int regions(const px_cred *c, const char *head, size_t len, size_t *ret_hdr, size_t *ret_q,
		   size_t *ret_qend)
{
	const char *eol = memchr(head, '\n', len);
	size_t end, query;

	if (!eol)
		return -EINVAL;
	*ret_hdr = (size_t)(eol - head) + 1;
	*ret_q = *ret_qend = 0;
	if (!c->in_query)
		return 0;
	/* the query string: from '?' to the space before the version */
	end = (size_t)(eol - head);
	for (query = 0; query < end && head[query] != '?'; query++)
		;
	while (end > query && head[end] != ' ')
		end--;
	if (query < end) {
		*ret_q = query;
		*ret_qend = end;
	}
	return 0;
}

const px_cred *px_placeholder_used(const px_config *cfg, const char *host, const char *head,
				   size_t len)
{
	for (size_t i = 0; i < cfg->n_creds; i++) {
		const px_cred *c = &cfg->creds[i];
		size_t pl, hdr, q, qend;

		if (!c->placeholder || strcmp(c->host, host) != 0 ||
		    regions(c, head, len, &hdr, &q, &qend) < 0)
			continue;
		pl = strlen(c->placeholder);
		if (memmem(head + hdr, len - hdr, c->placeholder, pl) ||
		    (qend > q && memmem(head + q, qend - q, c->placeholder, pl)))
			return c;
	}
	return NULL;
}

int px_placeholder_replace_one(const px_cred *c, char **head, size_t *len)
{
	size_t hdr, q, qend, end;
	int total, r;

	if (!c->placeholder || regions(c, *head, *len, &hdr, &q, &qend) < 0)
		return 0;
	/* the headers: everything after the request line */
	end = *len;
	total = replace_in(head, len, hdr, &end, c->placeholder, c->secret);
	if (total < 0 || qend <= q)
		return total;
	r = replace_in(head, len, q, &qend, c->placeholder, c->secret);
	return r < 0 ? r : total + r;
}

int px_placeholder_replace(const px_config *cfg, const char *host, char **head, size_t *len)
{
	int total = 0;

	for (size_t i = 0; i < cfg->n_creds; i++) {
		int r;

		if (strcmp(cfg->creds[i].host, host) != 0)
			continue;
		r = px_placeholder_replace_one(&cfg->creds[i], head, len);
		if (r < 0)
			return r;
		total += r;
	}
	return total;
}

void px_placeholder_tunnel_detail(const px_cred *leak, char *out, size_t size)
{
	(void)snprintf(
	    out, size,
	    "cleartext in the tunnel carries the placeholder of %s, which is only for %s",
	    leak->placeholder_env, leak->host);
}
