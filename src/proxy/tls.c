/* SPDX-License-Identifier: MIT */
#include "proxy/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

int px_tls_ctx_new(const char *extra_ca, SSL_CTX **ret)
{
	const char *bundle = X509_get_default_cert_file();
	SSL_CTX *ctx;
	int loaded = 0;

	if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG, NULL) != 1)
		return -ENOMEM;
	ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		return -ENOMEM;
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
		goto fail;
	if (bundle && access(bundle, R_OK) == 0 && SSL_CTX_load_verify_file(ctx, bundle) == 1)
		loaded++;
	if (extra_ca) {
		if (SSL_CTX_load_verify_file(ctx, extra_ca) != 1) {
			SSL_CTX_free(ctx);
			ERR_clear_error();
			return -EINVAL;
		}
		loaded++;
	}
	ERR_clear_error();
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	(void)loaded; /* an empty store fails every handshake: fail closed */
	*ret = ctx;
	return 0;
fail:
	SSL_CTX_free(ctx);
	return -EIO;
}

int px_tls_new(SSL_CTX *ctx, int fd, const char *host, SSL **ret)
{
	unsigned char tmp[16];
	bool is_ip = inet_pton(AF_INET, host, tmp) == 1 || inet_pton(AF_INET6, host, tmp) == 1;
	SSL *ssl = SSL_new(ctx);

	if (!ssl)
		return -ENOMEM;
	if (SSL_set_fd(ssl, fd) != 1)
		goto fail;
	if (is_ip) {
		X509_VERIFY_PARAM *p = SSL_get0_param(ssl);

		if (X509_VERIFY_PARAM_set1_ip_asc(p, host) != 1)
			goto fail;
	} else {
		/* SNI, and the name the certificate must carry */
		if (SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1)
			goto fail;
		SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	}
	SSL_set_verify(ssl, SSL_VERIFY_PEER, NULL);
	SSL_set_connect_state(ssl);
	*ret = ssl;
	return 0;
fail:
	SSL_free(ssl);
	ERR_clear_error();
	return -EIO;
}

int px_tls_result(SSL *ssl, int ret, int *want_read, int *want_write)
{
	int e;

	*want_read = 0;
	*want_write = 0;
	if (ret > 0)
		return ret;
	e = SSL_get_error(ssl, ret);
	switch (e) {
	case SSL_ERROR_WANT_READ:
		*want_read = 1;
		return -EAGAIN;
	case SSL_ERROR_WANT_WRITE:
		*want_write = 1;
		return -EAGAIN;
	case SSL_ERROR_ZERO_RETURN:
		return -ECONNRESET;
	default:
		ERR_clear_error();
		return -EPROTO;
	}
}
