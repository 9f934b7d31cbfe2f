/* SPDX-License-Identifier: MIT */
#include "proxy/ca.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/cleanup.h"
#include "proxy/http.h"

typedef struct leaf {
	char host[PX_MAX_HOST + 1];
	X509 *cert;
} leaf;

struct px_ca {
	X509 *cert;
	EVP_PKEY *key;
	EVP_PKEY *leaf_key; /* one key for every leaf of this worker, made on first use */
	leaf leaves[PX_CA_MAX_LEAVES];
	size_t n_leaves, next_evict;
};

px_ca *px_ca_free(px_ca *ca)
{
	if (!ca)
		return NULL;
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leaf_key);
	for (size_t i = 0; i < ca->n_leaves; i++)
		X509_free(ca->leaves[i].cert);
	free(ca);
	return NULL;
}

static int random_serial(X509 *x)
{
	BIGNUM *bn = BN_new();
	int ok = bn && BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
		 BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;

	BN_free(bn);
	return ok ? 0 : -ENOMEM;
}

static int add_conf_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -EINVAL;
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok == 1 ? 0 : -ENOMEM;
}

static bool is_ip_literal(const char *s)
{
	unsigned char b[16];

	return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

/* One general name: the IP address for a literal, else the DNS name. */
static GENERAL_NAME *general_name(const char *host)
{
	GENERAL_NAME *g = GENERAL_NAME_new();
	ASN1_IA5STRING *s;

	if (!g)
		return NULL;
	if (is_ip_literal(host)) {
		ASN1_OCTET_STRING *ip = a2i_IPADDRESS(host);

		if (!ip)
			goto fail;
		GENERAL_NAME_set0_value(g, GEN_IPADD, ip);
		return g;
	}
	s = ASN1_IA5STRING_new();
	if (!s || ASN1_STRING_set(s, host, (int)strlen(host)) != 1) {
		ASN1_IA5STRING_free(s);
		goto fail;
	}
	GENERAL_NAME_set0_value(g, GEN_DNS, s);
	return g;
fail:
	GENERAL_NAME_free(g);
	return NULL;
}

/*
 * Critical name constraints: a stolen key could then sign for none but the
 * inspected names. "*.domain" becomes "domain" (the domain and its
 * subdomains: a leading dot is read differently by OpenSSL and GnuTLS).
 */
static int add_name_constraints(X509 *x, const char *const *names, size_t n)
{
	NAME_CONSTRAINTS *nc;
	int r = -ENOMEM;

	for (size_t i = 0; i < n; i++)
		if (is_ip_literal(names[i]))
			return 0;
	if (n == 0)
		return 0;
	nc = NAME_CONSTRAINTS_new();
	if (!nc)
		return -ENOMEM;
	nc->permittedSubtrees = sk_GENERAL_SUBTREE_new_null();
	if (!nc->permittedSubtrees)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const char *name = strncmp(names[i], "*.", 2) == 0 ? names[i] + 2 : names[i];
		GENERAL_SUBTREE *st = GENERAL_SUBTREE_new();

		if (!st)
			goto out;
		GENERAL_NAME_free(st->base);
		st->base = general_name(name);
		if (!st->base || sk_GENERAL_SUBTREE_push(nc->permittedSubtrees, st) <= 0) {
			GENERAL_SUBTREE_free(st);
			goto out;
		}
	}
	r = X509_add1_ext_i2d(x, NID_name_constraints, nc, 1, X509V3_ADD_DEFAULT) == 1 ? 0
										       : -ENOMEM;
out:
	NAME_CONSTRAINTS_free(nc);
	return r;
}

int px_ca_generate(uint64_t lifetime_s, const char *const *names, size_t n_names, px_ca **ret)
{
	px_ca *ca = calloc(1, sizeof(*ca));
	unsigned char id[8];
	char cn[64];
	X509_NAME *subj;
	int r = -ENOMEM;

	if (!ca)
		return -ENOMEM;
	ca->key = EVP_EC_gen("P-256");
	ca->cert = X509_new();
	if (!ca->key || !ca->cert || RAND_bytes(id, sizeof(id)) != 1)
		goto fail;
	(void)snprintf(cn, sizeof(cn), "sandcap sandbox CA %02x%02x%02x%02x%02x%02x%02x%02x", id[0],
		       id[1], id[2], id[3], id[4], id[5], id[6], id[7]);
	subj = X509_get_subject_name(ca->cert);
	if (X509_set_version(ca->cert, X509_VERSION_3) != 1 || random_serial(ca->cert) < 0 ||
	    !X509_gmtime_adj(X509_getm_notBefore(ca->cert), -60) ||
	    !X509_gmtime_adj(X509_getm_notAfter(ca->cert), (long)lifetime_s) ||
	    X509_NAME_add_entry_by_txt(subj, "O", MBSTRING_ASC, (const unsigned char *)"sandcap",
				       -1, -1, 0) != 1 ||
	    X509_NAME_add_entry_by_txt(subj, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
				       0) != 1 ||
	    X509_set_issuer_name(ca->cert, subj) != 1 || X509_set_pubkey(ca->cert, ca->key) != 1)
		goto fail;
	r = add_conf_ext(ca->cert, ca->cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
	if (r >= 0)
		r = add_conf_ext(ca->cert, ca->cert, NID_key_usage, "critical,keyCertSign,cRLSign");
	if (r >= 0)
		r = add_conf_ext(ca->cert, ca->cert, NID_subject_key_identifier, "hash");
	if (r >= 0)
		r = add_name_constraints(ca->cert, names, n_names);
	if (r < 0)
		goto fail;
	r = -ENOMEM;
	if (X509_sign(ca->cert, ca->key, EVP_sha256()) <= 0)
		goto fail;
	*ret = ca;
	return 0;
fail:
	ERR_clear_error();
	px_ca_free(ca);
	return r;
}

static int bio_to_string(BIO *b, char **ret)
{
	char *data;
	long n = BIO_get_mem_data(b, &data);
	char *s;

	if (n <= 0)
		return -ENOMEM;
	s = malloc((size_t)n + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, data, (size_t)n);
	s[n] = 0;
	*ret = s;
	return 0;
}

int px_ca_cert_pem(const px_ca *ca, char **ret_pem)
{
	BIO *b = BIO_new(BIO_s_mem());
	int r = -ENOMEM;

	if (b && PEM_write_bio_X509(b, ca->cert) == 1)
		r = bio_to_string(b, ret_pem);
	BIO_free(b);
	return r;
}

int px_ca_key_pem(const px_ca *ca, char **ret_pem)
{
	/* BIO_s_secmem clears its buffers when freed */
	BIO *b = BIO_new(BIO_s_secmem());
	int r = -ENOMEM;

	if (b && PEM_write_bio_PrivateKey(b, ca->key, NULL, NULL, 0, NULL, NULL) == 1)
		r = bio_to_string(b, ret_pem);
	BIO_free(b);
	return r;
}

int px_ca_load(const char *cert_pem, const char *key_pem, px_ca **ret)
{
	px_ca *ca = calloc(1, sizeof(*ca));
	BIO *cb = BIO_new_mem_buf(cert_pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
	int r = -EINVAL;

	if (!ca || !cb || !kb) {
		r = -ENOMEM;
		goto out;
	}
	ca->cert = PEM_read_bio_X509(cb, NULL, NULL, NULL);
	ca->key = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
	if (!ca->cert || !ca->key || X509_check_private_key(ca->cert, ca->key) != 1)
		goto out;
	*ret = TAKE_PTR(ca);
	r = 0;
out:
	ERR_clear_error();
	BIO_free(cb);
	BIO_free(kb);
	px_ca_free(ca);
	return r;
}

static X509 *mint(px_ca *ca, const char *host)
{
	X509 *x = X509_new();
	GENERAL_NAMES *san = sk_GENERAL_NAME_new_null();
	GENERAL_NAME *g = general_name(host);
	X509_NAME *subj;
	bool ok;

	if (!x || !san || !g || sk_GENERAL_NAME_push(san, g) <= 0)
		goto fail;
	g = NULL;
	subj = X509_get_subject_name(x);
	ok = X509_set_version(x, X509_VERSION_3) == 1 && random_serial(x) == 0 &&
	     X509_set1_notBefore(x, X509_get0_notBefore(ca->cert)) == 1 &&
	     X509_set1_notAfter(x, X509_get0_notAfter(ca->cert)) == 1 &&
	     X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) == 1 &&
	     X509_set_pubkey(x, ca->leaf_key) == 1;
	/* CN is at most 64 characters; the SAN is what clients check */
	if (ok && strlen(host) <= 64)
		ok = X509_NAME_add_entry_by_txt(subj, "CN", MBSTRING_ASC,
						(const unsigned char *)host, -1, -1, 0) == 1;
	ok = ok && X509_add1_ext_i2d(x, NID_subject_alt_name, san, 0, X509V3_ADD_DEFAULT) == 1;
	ok = ok && add_conf_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") == 0 &&
	     add_conf_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") == 0 &&
	     add_conf_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") == 0 &&
	     add_conf_ext(x, ca->cert, NID_subject_key_identifier, "hash") == 0 &&
	     add_conf_ext(x, ca->cert, NID_authority_key_identifier, "keyid:always") == 0 &&
	     X509_sign(x, ca->key, EVP_sha256()) > 0;
	if (!ok)
		goto fail;
	GENERAL_NAMES_free(san);
	return x;
fail:
	ERR_clear_error();
	GENERAL_NAME_free(g);
	GENERAL_NAMES_free(san);
	X509_free(x);
	return NULL;
}

int px_ca_prepare(px_ca *ca)
{
	if (!ca->leaf_key)
		ca->leaf_key = EVP_EC_gen("P-256");
	return ca->leaf_key ? 0 : -ENOMEM;
}

int px_ca_leaf(px_ca *ca, const char *host, X509 **ret_cert, EVP_PKEY **ret_key, bool *ret_minted)
{
	leaf *slot;
	X509 *x;

	if (strlen(host) == 0 || strlen(host) > PX_MAX_HOST)
		return -EINVAL;
	for (size_t i = 0; i < ca->n_leaves; i++)
		if (strcmp(ca->leaves[i].host, host) == 0) {
			*ret_cert = ca->leaves[i].cert;
			*ret_key = ca->leaf_key;
			*ret_minted = false;
			return 0;
		}
	if (px_ca_prepare(ca) < 0)
		return -ENOMEM;
	x = mint(ca, host);
	if (!x)
		return -ENOMEM;
	if (ca->n_leaves < PX_CA_MAX_LEAVES)
		slot = &ca->leaves[ca->n_leaves++];
	else {
		/* full: replace the oldest */
		slot = &ca->leaves[ca->next_evict];
		ca->next_evict = (ca->next_evict + 1) % PX_CA_MAX_LEAVES;
		X509_free(slot->cert);
	}
	strcpy(slot->host, host);
	slot->cert = x;
	*ret_cert = x;
	*ret_key = ca->leaf_key;
	*ret_minted = true;
	return 0;
}
