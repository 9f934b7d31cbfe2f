/* SPDX-License-Identifier: MIT */
/*
 * What entered the agent: the SHA-256 and size of each response body as
 * the proxy hands it to the client (docs/audit.md, net.request). Fed where
 * body bytes leave for the client, so the digest covers exactly what the
 * agent received: for a chunked response its chunked encoding too, for a
 * body cut at max_response_body the part that was sent.
 */
#include <openssl/evp.h>

#include "base/sha256.h"
#include "proxy/conn.h"

/* Fetched once: EVP_sha256() would look the implementation up again for
 * every request's digest. */
static const EVP_MD *sha256_md(void)
{
	static EVP_MD *md;

	if (!md)
		md = EVP_MD_fetch(NULL, "SHA256", NULL);
	return md ? md : EVP_sha256();
}

void px_resp_digest_feed(conn *c, const void *buf, size_t n)
{
	if (c->resp_md_failed)
		return;
	if (!c->resp_md_live) {
		/* the context is kept for the connection's next requests */
		if (!c->resp_md)
			c->resp_md = EVP_MD_CTX_new();
		if (!c->resp_md || EVP_DigestInit_ex2(c->resp_md, sha256_md(), NULL) != 1) {
			/* Without memory the record says so: no digest, not a wrong one. */
			c->resp_md_failed = true;
			return;
		}
		c->resp_md_live = true;
	}
	if (EVP_DigestUpdate(c->resp_md, buf, n) != 1)
		c->resp_md_failed = true;
	c->resp_md_bytes += n;
}

int px_resp_digest_end(conn *c, char hex[2 * SHA256_BYTES + 1], uint64_t *ret_bytes)
{
	static const char digits[] = "0123456789abcdef";
	uint8_t md[SHA256_BYTES];
	unsigned len = 0;
	int r = 1;

	if (!c->resp_head_done)
		return 0;
	if (c->resp_md_failed)
		r = -1;
	else if (!c->resp_md_live)
		/* No body byte reached the client: the digest of nothing. */
		sha256_parts("", 0, "", 0, "", 0, md);
	else if (EVP_DigestFinal_ex(c->resp_md, md, &len) != 1 || len != sizeof(md))
		r = -1;
	for (size_t i = 0; r > 0 && i < SHA256_BYTES; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[r > 0 ? 2 * SHA256_BYTES : 0] = '\0';
	*ret_bytes = c->resp_md_bytes;
	px_resp_digest_reset(c);
	return r;
}

void px_resp_digest_reset(conn *c)
{
	c->resp_md_live = false;
	c->resp_md_failed = false;
	c->resp_md_bytes = 0;
}

void px_resp_digest_free(conn *c)
{
	px_resp_digest_reset(c);
	EVP_MD_CTX_free(c->resp_md);
	c->resp_md = NULL;
}
