/* SPDX-License-Identifier: MIT */
/* TAP tests for what a transparent connection's first bytes are read with:
 * the SNI of a ClientHello (a real one, made by OpenSSL) and the
 * origin-form to absolute-form rewrite of an HTTP head. */
#include <errno.h>
#include <openssl/ssl.h>
#include <string.h>

#include "proxy/origin.h"
#include "proxy/sni.h"
#include "tap.h"

/* The first flight of an OpenSSL client for server name sni (NULL: none). */
static size_t client_hello(const char *sni, uint8_t *out, size_t cap)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *s = SSL_new(ctx);
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	int n;

	SSL_set_bio(s, rb, wb);
	if (sni)
		SSL_set_tlsext_host_name(s, sni);
	SSL_set_connect_state(s);
	(void)SSL_do_handshake(s);
	n = BIO_read(wb, out, (int)cap);
	SSL_free(s);
	SSL_CTX_free(ctx);
	return n > 0 ? (size_t)n : 0;
}

static int rewrite(char *buf, size_t *len, const char *head)
{
	const char *why;

	*len = strlen(head);
	memcpy(buf, head, *len + 1);
	return px_origin_to_absolute(buf, len, 4096, "api.example.com", 8080, &why);
}

int main(void)
{
	uint8_t ch[4096];
	char name[PX_MAX_HOST + 1], buf[4096];
	const char *why;
	size_t n, len;
	int r;

	n = client_hello("API.example.com", ch, sizeof(ch));
	ok(n > 100, "OpenSSL made a ClientHello (%zu bytes)", n);
	r = px_sni_parse(ch, n, name, &why);
	ok(r == PX_SNI_FOUND && strcmp(name, "api.example.com") == 0,
	   "its SNI is found, lower-cased");
	ok(px_sni_parse(ch, n - 1, name, &why) == PX_SNI_NEED_MORE &&
	       px_sni_parse(ch, 3, name, &why) == 0,
	   "a record not all here: read more");
	n = client_hello(NULL, ch, sizeof(ch));
	ok(px_sni_parse(ch, n, name, &why) == PX_SNI_ABSENT, "a ClientHello without SNI: absent");
	ok(px_sni_parse((const uint8_t *)"GET / HTTP/1.1\r\n", 16, name, &why) == -EBADMSG,
	   "not TLS: refused");
	n = client_hello("api.example.com", ch, sizeof(ch));
	ch[5] = 2; /* ServerHello */
	ok(px_sni_parse(ch, n, name, &why) == -EBADMSG, "another handshake message: refused");
	n = client_hello("api.example.com", ch, sizeof(ch));
	ch[8]++; /* the handshake length no longer matches the record's */
	ok(px_sni_parse(ch, n, name, &why) == -EBADMSG, "a length that does not add up: refused");
	n = client_hello("bad name!", ch, sizeof(ch));
	ok(n > 0 && px_sni_parse(ch, n, name, &why) == -EBADMSG,
	   "a server name that is not a host name: refused");

	ok(rewrite(buf, &len, "GET /data.json HTTP/1.1\r\nHost: api.example.com:8080\r\n\r\n") ==
		   1 &&
	       strcmp(buf, "GET http://api.example.com:8080/data.json HTTP/1.1\r\nHost: "
			   "api.example.com:8080\r\n\r\n") == 0 &&
	       len == strlen(buf),
	   "origin-form becomes absolute-form with the name and port");
	ok(rewrite(buf, &len, "GET / HTTP/1.1\r\nhost:  API.example.com \r\n\r\n") == 1,
	   "Host without port, any case, spaces around: matches");
	ok(rewrite(buf, &len, "GET / HTTP/1.0\r\n\r\n") == 1, "no Host (HTTP/1.0): for the name");
	ok(rewrite(buf, &len, "GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n") == -EACCES,
	   "Host naming another host: refused");
	ok(rewrite(buf, &len, "GET / HTTP/1.1\r\nHost: api.example.com:9\r\n\r\n") == -EACCES,
	   "Host naming another port: refused");
	ok(rewrite(buf, &len,
		   "GET / HTTP/1.1\r\nHost: api.example.com\r\nHost: evil.example\r\n\r\n") ==
	       -EACCES,
	   "two Host headers: refused");
	ok(rewrite(buf, &len, "GET / HTTP/1.1\r\nHost: api.example.com.evil\r\n\r\n") == -EACCES,
	   "a name that only starts with the name: refused");
	ok(rewrite(buf, &len, "GET http://evil.example/ HTTP/1.1\r\n\r\n") == -EBADMSG,
	   "absolute-form (it could name any host): refused");
	ok(rewrite(buf, &len, "GET / HTTP/1.1\r\nHost: api.example.com\r\n") == 0,
	   "an incomplete head: read more");
	len = 4090;
	memset(buf, 'a', len);
	memcpy(buf, "GET / HTTP/1.1\r\n", 16);
	memcpy(buf + len - 4, "\r\n\r\n", 4);
	ok(px_origin_to_absolute(buf, &len, 4096, "api.example.com", 80, &why) == -EMSGSIZE &&
	       len == 4090,
	   "a head that would not fit is left as it is");
	return tap_done();
}
