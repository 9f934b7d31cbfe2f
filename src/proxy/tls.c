/* SPDX-License-Identifier: MIT */
#include "proxy/tls.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include "base/hex.h"

/* The hashed directory: $SSL_CERT_DIR is not consulted (the worker's
 * environment is empty), so this is OpenSSL's compiled-in default. */
static const char *trust_dir(void)
{
	return X509_get_default_cert_dir();
}

/* "<8 hex digits>.<digits>": a CA link made by c_rehash / openssl rehash. */
static bool is_hash_link(const char *n)
{
	size_t i;

	for (i = 0; i < 8; i++)
		if (hex_value(n[i]) < 0)
			return false;
	if (n[8] != '.' || !isdigit((unsigned char)n[9]))
		return false;
	for (i = 10; n[i]; i++)
		if (!isdigit((unsigned char)n[i]))
			return false;
	return true;
}

static int add_dir(char (*dirs)[PATH_MAX], size_t max, size_t n, const char *dir)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(dirs[i], dir) == 0)
			return (int)n;
	if (n >= max || strlen(dir) >= PATH_MAX)
		return (int)n;
	strcpy(dirs[n], dir);
	return (int)n + 1;
}

/*
 * The directory holding the file link leads to, after at most 8 links
 * (readlink(2) on each: about two per CA on Debian, where realpath(3) on
 * every one costs several milliseconds). Returns 0, or -errno.
 */
static int link_target_dir(const char *link, char *ret_dir)
{
	char p[PATH_MAX], t[PATH_MAX];
	char *slash;

	if (strlen(link) >= sizeof(p))
		return -ENAMETOOLONG;
	strcpy(p, link);
	for (int hop = 0; hop < 8; hop++) {
		ssize_t n = readlink(p, t, sizeof(t) - 1);

		if (n < 0) {
			if (errno != EINVAL)
				return -errno;
			slash = strrchr(p, '/'); /* not a link: the file itself */
			if (!slash || slash == p)
				return -EINVAL;
			*slash = 0;
			strcpy(ret_dir, p);
			return 0;
		}
		t[n] = 0;
		if (t[0] == '/') {
			strcpy(p, t);
			continue;
		}
		slash = strrchr(p, '/');
		if (!slash || (size_t)(slash - p) + 1 + (size_t)n >= sizeof(p))
			return -ENAMETOOLONG;
		strcpy(slash + 1, t);
	}
	return -ELOOP;
}

int px_tls_trust_dirs(char (*dirs)[PATH_MAX], size_t max)
{
	char real[PATH_MAX], link[PATH_MAX], dir[PATH_MAX], seen[PX_TRUST_MAX_DIRS][PATH_MAX];
	size_t n_seen = 0;
	struct dirent *de;
	DIR *d;
	int n = 0;

	if (!realpath(trust_dir(), real))
		return 0;
	n = add_dir(dirs, max, (size_t)n, real);
	d = opendir(real);
	if (!d)
		return n;
	/* Debian's links point into /usr/share/ca-certificates and
	 * /usr/local/share/ca-certificates; Landlock judges the file reached,
	 * so each directory counts with its own links resolved (realpath once) */
	while ((de = readdir(d))) {
		bool known = false;

		if (!is_hash_link(de->d_name) ||
		    (size_t)snprintf(link, sizeof(link), "%s/%s", real, de->d_name) >=
			sizeof(link) ||
		    link_target_dir(link, dir) < 0)
			continue;
		for (size_t i = 0; i < n_seen && !known; i++)
			known = strcmp(seen[i], dir) == 0;
		if (known || n_seen >= PX_TRUST_MAX_DIRS)
			continue;
		strcpy(seen[n_seen++], dir);
		if (realpath(dir, link))
			n = add_dir(dirs, max, (size_t)n, link);
	}
	(void)closedir(d);
	return n;
}

int px_tls_trust_new(const char *extra_ca, bool lazy_system_store, X509_STORE **ret)
{
	X509_STORE *st;

	if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG, NULL) != 1)
		return -ENOMEM;
	st = X509_STORE_new();
	if (!st)
		return -ENOMEM;
	if (lazy_system_store) {
		/* a CA is read when a chain needs it, then cached in the store */
		(void)X509_STORE_load_path(st, trust_dir());
	} else {
		const char *bundle = X509_get_default_cert_file();

		if (bundle && access(bundle, R_OK) == 0)
			(void)X509_STORE_load_file(st, bundle);
	}
	if (extra_ca && X509_STORE_load_file(st, extra_ca) != 1) {
		X509_STORE_free(st);
		ERR_clear_error();
		return -EINVAL;
	}
	/* an empty store fails every handshake: fail closed */
	ERR_clear_error();
	*ret = st;
	return 0;
}

int px_tls_ctx_new(X509_STORE *trust, SSL_CTX **ret)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (!ctx)
		return -ENOMEM;
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		SSL_CTX_free(ctx);
		return -EIO;
	}
	SSL_CTX_set1_cert_store(ctx, trust);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	*ret = ctx;
	return 0;
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

void px_tls_describe_failure(SSL *ssl, char *buf, size_t size)
{
	long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;

	if (v != X509_V_OK)
		(void)snprintf(buf, size,
			       "upstream TLS: the origin's certificate is not accepted: %s",
			       X509_verify_cert_error_string(v));
	else
		(void)snprintf(buf, size, "upstream TLS handshake failed");
}
