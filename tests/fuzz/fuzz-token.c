/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for capability tokens: the decoder, verification with a
 * fixed key, and attenuation. Random bytes almost never carry a valid HMAC,
 * so each input is also tried re-signed: its last segment replaced by the
 * correct signature over the others, which takes the fuzzer past the
 * signature check into the claims, caveat and intersection code.
 */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "policy/plan.h"
#include "token/token.h"

/* Inside the corpus tokens' lifetime (tests/fuzz/corpus/token/). */
#define FUZZ_NOW ((time_t)1800000100)

static const uint8_t fuzz_key[TK_KEY_LEN] = {
    1,	2,  3,	4,  5,	6,  7,	8,  9,	10, 11, 12, 13, 14, 15, 16,
    17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
};

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void b64(const uint8_t *in, size_t len, char *out)
{
	size_t o = 0, i;

	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];

		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = alphabet[v >> 6 & 63];
		out[o++] = alphabet[v & 63];
	}
	if (len - i == 2) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;

		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = alphabet[v >> 6 & 63];
	}
	out[o] = '\0';
}

/* "sc1.A.B.X" -> "sc1.A.B.<HMAC chain over A, B>"; NULL if not that shape. */
static char *resign(const char *tok)
{
	const char *p, *last = strrchr(tok, '.');
	uint8_t sig[32];
	char s64[64];
	size_t n = 0;
	char *out;

	if (strncmp(tok, "sc1.", 4) != 0 || !last || last < tok + 4)
		return NULL;
	p = tok + 4;
	for (bool first = true; p < last; first = false) {
		const char *dot = memchr(p, '.', (size_t)(last - p));
		size_t len = dot ? (size_t)(dot - p) : (size_t)(last - p);

		if (!EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, first ? fuzz_key : sig,
			       first ? sizeof(fuzz_key) : sizeof(sig), (const uint8_t *)p, len, sig,
			       sizeof(sig), &n))
			return NULL;
		p += len + 1;
	}
	if (n != sizeof(sig))
		return NULL;
	b64(sig, sizeof(sig), s64);
	out = malloc((size_t)(last - tok) + 1 + strlen(s64) + 1);
	if (!out)
		return NULL;
	memcpy(out, tok, (size_t)(last - tok) + 1);
	strcpy(out + (last - tok) + 1, s64);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char frag[] = "{\"limits\":{\"memory\":\"64M\"},\"fs\":{\"tmp\":\"1M\"}}";
	_cleanup_free_ char *tok = NULL, *re = NULL, *att = NULL;
	tk_decoded *dec = NULL;
	sc_plan *p = NULL;
	tk_info info;
	sc_diag d;

	if (size > TK_MAX_TOKEN_BYTES + 16)
		return 0;
	tok = malloc(size + 1);
	if (!tok)
		return 0;
	memcpy(tok, data, size);
	tok[size] = '\0';

	if (tk_verify(tok, fuzz_key, FUZZ_NOW, &p, &info, &d) == 0)
		p = sc_plan_free(p);
	if (tk_decode(tok, &dec, &d) == 0)
		dec = tk_decoded_free(dec);
	re = resign(tok);
	if (re && tk_verify(re, fuzz_key, FUZZ_NOW, &p, &info, &d) == 0) {
		/* A verified plan must serialise and must be the policy parser's. */
		_cleanup_free_ char *j = plan_to_json(p);

		if (!j)
			abort();
		p = sc_plan_free(p);
		if (tk_attenuate(re, frag, strlen(frag), 0, &att, &d) == 0) {
			free(att);
			att = NULL;
		}
	}
	return 0;
}
