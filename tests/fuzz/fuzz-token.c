/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for capability tokens: the decoder, verification with a
 * fixed key, verification as an extension of a token minted here (no key),
 * and attenuation. Random bytes almost never carry a valid HMAC,
 * so each input is also tried re-signed: its last segment replaced by the
 * correct signature over the others, which takes the fuzzer past the
 * signature check into the claims, caveat and intersection code.
 *
 * Input that does not start with "sc1." is taken as the JSON of a caveat:
 * appended, correctly chained, to a token minted here for a rich policy, and
 * offered to "attenuate" as a fragment. That drives the fragment merge and the
 * intersection with structured input instead of base64 noise.
 */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
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
	if (len - i == 1) {
		uint32_t v = (uint32_t)in[i] << 16;

		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
	} else if (len - i == 2) {
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

/* Grants only paths every test host has. */
static const char base_policy[] =
    "{\"version\":1,\"fs\":{\"grants\":[{\"path\":\"/tmp\",\"mode\":\"rw\",\"at\":\"/work\"},"
    "{\"path\":\"/usr/share\",\"mode\":\"ro\"},{\"path\":\"/usr/share/doc\",\"mode\":\"rw\","
    "\"at\":\"/usr/share/doc\"}]},\"net\":{\"egress\":[{\"host\":\"api.example.com\",\"ports\":"
    "[443],\"methods\":[\"GET\",\"POST\"]},{\"host\":\"*.example.org\"},{\"host\":\"10.0.0.1\"}],"
    "\"allow_private\":[\"10.0.0.0/8\",\"fd00::/8\"],\"rate\":\"10/s\",\"credentials\":[{\"host\":"
    "\"api.example.com\",\"header\":\"Authorization\",\"value_env\":\"T\"}]},\"limits\":{"
    "\"memory\":\"64M\",\"wall\":\"10s\",\"pids\":10},\"env\":{\"A\":\"b\"},\"spawn\":{"
    "\"max_depth\":2}}";

static sc_plan *base_plan;

static char *base_token(void)
{
	static char *tok;
	sc_diag d;

	if (tok)
		return tok;
	if (plan_parse(base_policy, strlen(base_policy), &base_plan, &d) < 0 ||
	    tk_mint(base_plan, fuzz_key, "fuzz", FUZZ_NOW - 100, 3600, &tok, &d) < 0)
		abort();
	return tok;
}

/* The property tokens exist for: whatever the caveat, nothing wider. */
static void assert_within_base(const sc_plan *p)
{
	char why[512];

	if (plan_check_narrower(base_plan, p, why, sizeof(why)) != 0) {
		fprintf(stderr, "effective set wider than the token: %s\n", why);
		abort();
	}
}

/* The base token + one caveat holding json, chained with the fuzz key. */
static char *with_caveat(const char *json, size_t len)
{
	const char *base = base_token(), *last = strrchr(base, '.');
	size_t head = (size_t)(last - base);
	char *out, *c64;

	c64 = malloc(len / 3 * 4 + 8);
	out = c64 ? malloc(head + 1 + len / 3 * 4 + 8 + 1 + 64) : NULL;
	if (!out) {
		free(c64);
		return NULL;
	}
	b64((const uint8_t *)json, len, c64);
	memcpy(out, base, head);
	out[head] = '.';
	strcpy(out + head + 1, c64);
	strcat(out, ".x"); /* replaced by resign() */
	free(c64);
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

	if (strncmp(tok, "sc1.", 4) != 0) {
		_cleanup_free_ char *t = NULL, *signed_tok = NULL, *out = NULL;

		if (size > TK_MAX_CAVEAT_BYTES)
			return 0;
		t = with_caveat((const char *)data, size);
		signed_tok = t ? resign(t) : NULL;
		if (signed_tok) {
			int rv = tk_verify(signed_tok, fuzz_key, FUZZ_NOW, &p, &info, &d);

			if (rv == 0) {
				assert_within_base(p);
				p = sc_plan_free(p);
			}
			/* Chained from the base's signature, it is an extension of
			 * the base: checked without the key, the same verdict. */
			if ((tk_verify_extension(base_token(), signed_tok, FUZZ_NOW, &p, &info,
						 &d) == 0) != (rv == 0)) {
				fprintf(stderr, "tk_verify and tk_verify_extension disagree\n");
				abort();
			}
			p = sc_plan_free(p);
		}
		/* The same bytes as the policy of a caveat. */
		{
			_cleanup_free_ char *wrapped = NULL, *t2 = NULL, *s2 = NULL;

			if (asprintf(&wrapped, "{\"policy\":%s}", tok) < 0)
				return 0;
			t2 = with_caveat(wrapped, strlen(wrapped));
			s2 = t2 ? resign(t2) : NULL;
			if (s2 && tk_verify(s2, fuzz_key, FUZZ_NOW, &p, &info, &d) == 0) {
				assert_within_base(p);
				p = sc_plan_free(p);
			}
		}
		if (tk_attenuate(base_token(), (const char *)data, size, 0, &out, &d) == 0) {
			/* What attenuate accepted must verify and stay within the base. */
			if (tk_verify(out, fuzz_key, FUZZ_NOW, &p, &info, &d) != 0) {
				fprintf(stderr, "attenuated token refused: %s\n", d.message);
				abort();
			}
			assert_within_base(p);
			p = sc_plan_free(p);
		}
		return 0;
	}

	if (tk_verify(tok, fuzz_key, FUZZ_NOW, &p, &info, &d) == 0)
		p = sc_plan_free(p);
	if (tk_decode(tok, &dec, &d) == 0)
		dec = tk_decoded_free(dec);
	/* Hostile bytes offered as an extension of the base, as an agent may. */
	if (tk_verify_extension(base_token(), tok, FUZZ_NOW, &p, &info, &d) == 0) {
		assert_within_base(p);
		p = sc_plan_free(p);
	}
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
