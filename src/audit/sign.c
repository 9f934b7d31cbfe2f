/* SPDX-License-Identifier: MIT */
/*
 * The public-key seal: Ed25519 keys in PEM files (OpenSSL 3 EVP), and the
 * signature of a checkpoint or seal record (docs/audit.md, "The public-key
 * seal"). What is signed is built in record.c (au_cover_message): every
 * field of the record, so a checkpoint cannot pass for a seal, nor either
 * for another log's, nor be edited.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit-internal.h"
#include "audit/bundle.h"
#include "base/cleanup.h"
#include "base/io.h"
#include "base/sha256.h"

struct au_sign_key {
	EVP_PKEY *pkey;
	bool private;
	char id[AU_HASH_HEX + 1]; /* hex SHA-256 of the raw 32-byte public key */
};

/* A PEM key file is a few hundred bytes; more is not a key. */
#define AU_PEM_MAX 8192u

static void pkey_freep(EVP_PKEY **p)
{
	EVP_PKEY_free(*p);
}

static void bio_freep(BIO **b)
{
	BIO_free(*b);
}

static void md_ctx_freep(EVP_MD_CTX **c)
{
	EVP_MD_CTX_free(*c);
}

static void pkey_ctx_freep(EVP_PKEY_CTX **c)
{
	EVP_PKEY_CTX_free(*c);
}

au_sign_key *au_sign_key_free(au_sign_key *k)
{
	if (k) {
		EVP_PKEY_free(k->pkey);
		free(k);
	}
	return NULL;
}

const char *au_sign_key_id(const au_sign_key *k)
{
	return k ? k->id : NULL;
}

bool au_sign_key_is_private(const au_sign_key *k)
{
	return k && k->private;
}

static int key_wrap(EVP_PKEY *pkey, bool private, au_sign_key **ret)
{
	au_sign_key *k;
	uint8_t raw[32], id[AU_HASH_BYTES];
	size_t raw_len = sizeof(raw);

	if (!EVP_PKEY_is_a(pkey, "ED25519"))
		return -EPROTOTYPE;
	if (EVP_PKEY_get_raw_public_key(pkey, raw, &raw_len) != 1 || raw_len != sizeof(raw))
		return -EINVAL;
	sha256_parts(raw, raw_len, "", 0, "", 0, id);
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->pkey = pkey;
	k->private = private;
	au_hex(id, AU_HASH_BYTES, k->id);
	*ret = k;
	return 0;
}

/* Reads a PEM file of at most AU_PEM_MAX bytes. A private key must be a
 * regular file that group and others cannot access, and not a symlink. */
static int read_pem(const char *path, bool private, char *buf, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t len = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	/* A signing key others can read is a key others can sign with. */
	if (private && (st.st_mode & 077))
		return -EACCES;
	for (;;) {
		ssize_t n = read(fd, buf + len, AU_PEM_MAX - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == AU_PEM_MAX)
			return -EFBIG;
	}
	*ret_len = len;
	return 0;
}

static int key_parse(const char *pem, size_t len, bool private, au_sign_key **ret)
{
	_cleanup_(pkey_freep) EVP_PKEY *pkey = NULL;
	_cleanup_(bio_freep) BIO *bio = NULL;
	int r;

	if (len > AU_PEM_MAX)
		return -EFBIG;
	bio = BIO_new_mem_buf(pem, (int)len);
	if (!bio)
		return -ENOMEM;
	pkey = private ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL)
		       : PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	if (!pkey)
		return -EBADMSG;
	r = key_wrap(pkey, private, ret);
	if (r < 0)
		return r;
	pkey = NULL; /* owned by *ret */
	return 0;
}

int au_sign_key_parse(const char *pem, size_t len, au_sign_key **ret)
{
	if (!pem || !ret)
		return -EINVAL;
	return key_parse(pem, len, false, ret);
}

int au_sign_key_load(const char *path, bool private, au_sign_key **ret)
{
	char buf[AU_PEM_MAX];
	size_t len = 0;
	int r;

	if (!path || !ret)
		return -EINVAL;
	r = read_pem(path, private, buf, &len);
	if (r == 0)
		r = key_parse(buf, len, private, ret);
	explicit_bzero(buf, sizeof(buf));
	return r;
}

/* Writes a PEM to a new file (O_EXCL: an existing key is never replaced). */
static int write_new(const char *path, mode_t mode, const char *pem, size_t len)
{
	_cleanup_close_ int fd = -1;
	int r;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
	if (fd < 0)
		return -errno;
	r = io_write_all(fd, pem, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r < 0)
		(void)unlink(path);
	return r;
}

static int pem_of(EVP_PKEY *pkey, bool private, char **ret, size_t *ret_len)
{
	_cleanup_(bio_freep) BIO *bio = BIO_new(BIO_s_mem());
	char *data;
	long n;

	if (!bio)
		return -ENOMEM;
	if ((private ? PEM_write_bio_PrivateKey(bio, pkey, NULL, NULL, 0, NULL, NULL)
		     : PEM_write_bio_PUBKEY(bio, pkey)) != 1)
		return -EIO;
	n = BIO_get_mem_data(bio, &data);
	if (n <= 0)
		return -EIO;
	*ret = malloc((size_t)n);
	if (!*ret)
		return -ENOMEM;
	memcpy(*ret, data, (size_t)n);
	*ret_len = (size_t)n;
	return 0;
}

int au_keygen(const char *priv_path, const char *pub_path, char ret_id[AU_HASH_HEX + 1])
{
	_cleanup_(pkey_ctx_freep) EVP_PKEY_CTX *ctx = NULL;
	_cleanup_free_ char *pub = NULL;
	au_sign_key *k = NULL;
	EVP_PKEY *pkey = NULL;
	char *priv = NULL;
	size_t priv_len = 0, pub_len = 0;
	int r;

	if (!priv_path || !pub_path)
		return -EINVAL;
	ctx = EVP_PKEY_CTX_new_from_name(NULL, "ED25519", NULL);
	if (!ctx)
		return -ENOSYS;
	if (EVP_PKEY_keygen_init(ctx) != 1 || EVP_PKEY_keygen(ctx, &pkey) != 1)
		return -EIO;
	r = key_wrap(pkey, true, &k);
	if (r < 0) {
		EVP_PKEY_free(pkey);
		return r;
	}
	r = pem_of(k->pkey, true, &priv, &priv_len);
	if (r == 0)
		r = pem_of(k->pkey, false, &pub, &pub_len);
	if (r == 0)
		r = write_new(priv_path, 0600, priv, priv_len);
	if (r == 0) {
		r = write_new(pub_path, 0644, pub, pub_len);
		if (r < 0)
			(void)unlink(priv_path); /* half a pair is no use */
	}
	if (r == 0 && ret_id)
		memcpy(ret_id, k->id, sizeof(k->id));
	if (priv) {
		explicit_bzero(priv, priv_len);
		free(priv);
	}
	au_sign_key_free(k);
	return r;
}

/*
 * The rule of logs sealed before the signature covered the record itself:
 * "sandcap-audit-sig-v1" NUL kind NUL sandbox NUL records (decimal) NUL
 * final_hash (32 raw bytes). Only checked, never signed any more.
 */
static size_t sig_message_v1(const char *kind, const char *sandbox, uint64_t records,
			     const uint8_t final_hash[AU_HASH_BYTES], uint8_t *out, size_t cap)
{
	int n = snprintf((char *)out, cap, "sandcap-audit-sig-v1%c%s%c%s%c%" PRIu64 "%c", 0, kind,
			 0, sandbox, 0, records, 0);

	if (n < 0 || (size_t)n + AU_HASH_BYTES > cap)
		return 0;
	memcpy(out + n, final_hash, AU_HASH_BYTES);
	return (size_t)n + AU_HASH_BYTES;
}

#define AU_SIG_MSG_MAX (64 + AU_SANDBOX_ID_MAX + AU_HASH_BYTES)

int au_sign(const au_sign_key *k, const uint8_t *msg, size_t len, uint8_t ret_sig[AU_SIG_BYTES])
{
	_cleanup_(md_ctx_freep) EVP_MD_CTX *md = EVP_MD_CTX_new();
	size_t sig_len = AU_SIG_BYTES;

	if (!k || !k->private || !msg || len == 0)
		return -EINVAL;
	if (!md)
		return -ENOMEM;
	if (EVP_DigestSignInit(md, NULL, NULL, NULL, k->pkey) != 1 ||
	    EVP_DigestSign(md, ret_sig, &sig_len, msg, len) != 1 || sig_len != AU_SIG_BYTES)
		return -EIO;
	return 0;
}

static int sign_key(const void *k, const uint8_t *msg, size_t len, uint8_t ret_sig[AU_SIG_BYTES])
{
	return au_sign(k, msg, len, ret_sig);
}

int au_signer_of(const au_sign_key *k, au_signer *ret)
{
	if (!k || !au_sign_key_is_private(k))
		return -EINVAL;
	*ret = (au_signer){.key = k, .sign = sign_key};
	snprintf(ret->key_id, sizeof(ret->key_id), "%s", au_sign_key_id(k));
	return 0;
}

int au_sig_check(const au_sign_key *k, const uint8_t *msg, size_t len,
		 const uint8_t sig[AU_SIG_BYTES])
{
	_cleanup_(md_ctx_freep) EVP_MD_CTX *md = EVP_MD_CTX_new();

	if (!k || !msg || len == 0)
		return -EINVAL;
	if (!md)
		return -ENOMEM;
	if (EVP_DigestVerifyInit(md, NULL, NULL, NULL, k->pkey) != 1)
		return -EIO;
	return EVP_DigestVerify(md, sig, AU_SIG_BYTES, msg, len) == 1 ? 0 : -EBADMSG;
}

int au_sig_check_v1(const au_sign_key *k, const char *kind, const char *sandbox, uint64_t records,
		    const uint8_t final_hash[AU_HASH_BYTES], const uint8_t sig[AU_SIG_BYTES])
{
	uint8_t msg[AU_SIG_MSG_MAX];
	size_t len = sig_message_v1(kind, sandbox, records, final_hash, msg, sizeof(msg));

	return len ? au_sig_check(k, msg, len, sig) : -EINVAL;
}
