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

static json_t *hex_string(const uint8_t md[SHA256_BYTES])
{
	static const char digits[] = "0123456789abcdef";
	char hex[2 * SHA256_BYTES + 1];

	for (size_t i = 0; i < SHA256_BYTES; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[2 * SHA256_BYTES] = '\0';
	return json_string(hex);
}

void px_resp_digest_feed(conn *c, const void *buf, size_t n)
{
	if (!c->resp_md) {
		c->resp_md = EVP_MD_CTX_new();
		if (!c->resp_md || EVP_DigestInit_ex(c->resp_md, EVP_sha256(), NULL) != 1) {
			/* Without memory the record says so: no digest, not a wrong one. */
			EVP_MD_CTX_free(c->resp_md);
			c->resp_md = NULL;
			c->resp_md_failed = true;
			return;
		}
	}
	if (EVP_DigestUpdate(c->resp_md, buf, n) != 1)
		c->resp_md_failed = true;
	c->resp_md_bytes += n;
}

void px_resp_digest_add(conn *c, json_t *data)
{
	uint8_t md[SHA256_BYTES];
	unsigned len = 0;

	if (!data || !c->resp_head_done)
		return;
	if (c->resp_md_failed) {
		(void)json_object_set_new(data, "body_sha256", json_null());
	} else if (!c->resp_md) {
		/* No body byte reached the client: the digest of nothing. */
		sha256_parts("", 0, "", 0, "", 0, md);
		(void)json_object_set_new(data, "body_sha256", hex_string(md));
	} else if (EVP_DigestFinal_ex(c->resp_md, md, &len) == 1 && len == sizeof(md)) {
		(void)json_object_set_new(data, "body_sha256", hex_string(md));
	} else {
		(void)json_object_set_new(data, "body_sha256", json_null());
	}
	(void)json_object_set_new(data, "body_bytes", json_integer((json_int_t)c->resp_md_bytes));
	px_resp_digest_free(c);
}

void px_resp_digest_free(conn *c)
{
	EVP_MD_CTX_free(c->resp_md);
	c->resp_md = NULL;
	c->resp_md_failed = false;
	c->resp_md_bytes = 0;
}
