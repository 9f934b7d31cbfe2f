/* SPDX-License-Identifier: MIT */
/* Unit tests for src/base/sha256.c: SHA-256 in parts, HMAC-SHA256 by hand
 * against RFC 4231's vectors and against OpenSSL's own HMAC (TAP). */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/sha256.h"
#include "tap.h"

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void hmac_vector(const char *name, const void *key, size_t key_len, const void *msg,
			size_t msg_len, const char *want)
{
	uint8_t mac[SHA256_BYTES];
	char got[2 * SHA256_BYTES + 1];

	hmac_sha256(key, key_len, msg, msg_len, mac);
	hex(mac, sizeof(mac), got);
	ok(strcmp(got, want) == 0, "RFC 4231 %s", name);
	if (strcmp(got, want) != 0)
		tap_diag("got %s", got);
}

int main(void)
{
	uint8_t k20[20], k131[131], d50[50], k25[25];
	uint8_t a[SHA256_BYTES], b[SHA256_BYTES];
	sha256_ctx c;
	static uint8_t buf[4096];
	bool all_same = true;

	/* FIPS 180-2's "abc", in one part and byte by byte. */
	sha256_parts("abc", 3, "", 0, "", 0, a);
	sha256_init(&c);
	for (const char *p = "abc"; *p; p++)
		sha256_update(&c, p, 1);
	sha256_final(&c, b);
	{
		char got[65];

		hex(a, sizeof(a), got);
		ok(strcmp(got,
			  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
		   "SHA-256 of \"abc\"");
	}
	ok(memcmp(a, b, sizeof(a)) == 0, "the same hash fed in parts");

	memset(k20, 0x0b, sizeof(k20));
	hmac_vector("case 1", k20, sizeof(k20), "Hi There", 8,
		    "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	hmac_vector("case 2 (a short key)", "Jefe", 4, "what do ya want for nothing?", 28,
		    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(k20, 0xaa, sizeof(k20));
	memset(d50, 0xdd, sizeof(d50));
	hmac_vector("case 3", k20, sizeof(k20), d50, sizeof(d50),
		    "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
	for (size_t i = 0; i < sizeof(k25); i++)
		k25[i] = (uint8_t)(i + 1);
	memset(d50, 0xcd, sizeof(d50));
	hmac_vector("case 4", k25, sizeof(k25), d50, sizeof(d50),
		    "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
	memset(k131, 0xaa, sizeof(k131));
	hmac_vector("case 6 (a key longer than a block)", k131, sizeof(k131),
		    "Test Using Larger Than Block-Size Key - Hash Key First", 54,
		    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	hmac_vector("case 7", k131, sizeof(k131),
		    "This is a test using a larger than block-size key and a larger than "
		    "block-size data. The key needs to be hashed before being used by the "
		    "HMAC algorithm.",
		    152, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");

	/* Every key length around the block size, against OpenSSL's HMAC. */
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 31 + 7);
	for (size_t klen = 0; klen <= 130; klen++) {
		size_t mlen = (klen * 37) % sizeof(buf), n = 0;

		hmac_sha256(buf + 1000, klen, buf, mlen, a);
		if (!EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, buf + 1000, klen, buf, mlen, b,
			       sizeof(b), &n) ||
		    n != sizeof(b) || memcmp(a, b, sizeof(a)) != 0) {
			all_same = false;
			tap_diag("key length %zu differs", klen);
		}
	}
	ok(all_same, "the same MAC as OpenSSL's for keys of 0 to 130 bytes");
	/* The key may be the output (a token's chain does that). */
	memcpy(a, buf, sizeof(a));
	hmac_sha256(buf, sizeof(a), "x", 1, b);
	hmac_sha256(a, sizeof(a), "x", 1, a);
	ok(memcmp(a, b, sizeof(a)) == 0, "the key and the output may be the same buffer");

	ok(mem_equal_ct("abcd", "abcd", 4) && !mem_equal_ct("abcd", "abce", 4) &&
	       mem_equal_ct("", "x", 0),
	   "constant-time comparison");
	return tap_done();
}
