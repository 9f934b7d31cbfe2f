/* SPDX-License-Identifier: MIT */
/*
 * Capability tokens (docs/tokens.md): claims + caveats, each link
 * sig_i = HMAC-SHA256(sig_{i-1}, caveat_i), sig_0 = HMAC-SHA256(key, claims).
 * The effective plan is the intersection of the claims and every caveat.
 *
 * Wire format (ASCII, one line):
 *   sc1.<b64url(claims JSON)>[.<b64url(caveat JSON)>]....<b64url(32-byte signature)>
 * base64url without padding; the HMACs run over the exact base64url text of
 * each segment, so any change to any byte of the token changes the chain.
 *
 * Nothing here prints. Every function returns >= 0 or -errno; the ones with a
 * reterr_diag fill its message on failure (path stays empty unless it names a
 * key inside a caveat's policy fragment).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "policy/intersect.h"
#include "policy/plan.h"

#define TK_KEY_LEN 32
#define TK_SIG_LEN 32 /* HMAC-SHA256 */

#define TK_PREFIX	    "sc1"
#define TK_MAX_TOKEN_BYTES  (256u << 10) /* whole token text */
#define TK_MAX_CAVEATS	    16u		 /* links after the claims */
#define TK_MAX_CAVEAT_BYTES (64u << 10)	 /* one decoded caveat */
#define TK_MAX_ID	    63u
#define TK_MAX_TTL_S	    (366LL * 24 * 3600)	     /* a year: tokens are not for archiving */
#define TK_MAX_TIME	    ((time_t)253402300799LL) /* 9999-12-31T23:59:59Z */

typedef struct tk_info {
	char id[64];
	unsigned n_caveats;
	time_t iat;
	time_t exp; /* effective: the earliest of the claims' and the caveats' */
} tk_info;

/* Reads a 32-byte key file. -EACCES when the file is readable or writable by
 * group or others (mode & 077), -EBADMSG when it does not hold exactly 32
 * bytes, -ELOOP for a symlink, else -errno from open/read. */
int tk_key_load(const char *path, uint8_t key[TK_KEY_LEN]);
/* Same, with a sentence for each refusal in reterr_diag->message. */
int tk_key_load_diag(const char *path, uint8_t key[TK_KEY_LEN], sc_diag *reterr_diag);
/* Creates path with O_CREAT|O_EXCL, mode 0600, holding 32 bytes of RAND_bytes.
 * -EEXIST if it exists (never overwrites). */
int tk_key_generate(const char *path);

/* Verifies token against key at time now and returns the effective plan
 * (limits.wall capped by the remaining lifetime). Errors: -EBADMSG "malformed
 * token: ...", -EKEYREJECTED "token signature invalid", -EKEYEXPIRED "token
 * expired at ...", -EINVAL when the effective set does not validate on this
 * host (e.g. a granted path is gone). The signature is checked before any
 * JSON is parsed. */
int tk_verify(const char *token, const uint8_t key[TK_KEY_LEN], time_t now, sc_plan **ret_plan,
	      tk_info *ret_info, sc_diag *reterr_diag);

/*
 * Verifies token as an extension of base without the root key
 * (macaroon-style): token must be base's text without its signature, byte
 * for byte, followed by one or more caveats chained from base's signature,
 * which only holders of base know. base must already be trusted (verified
 * with the key, or minted by the caller). The effective plan and info are
 * then computed from the whole chain as tk_verify() does (info.id is the
 * root's id, info.n_caveats counts every caveat). Errors as tk_verify();
 * -EKEYREJECTED "the token does not extend the parent's token" when the
 * prefix differs or nothing was appended; -EINVAL for a malformed base.
 */
int tk_verify_extension(const char *base, const char *token, time_t now, sc_plan **ret_plan,
			tk_info *ret_info, sc_diag *reterr_diag);

/* Mints a token for plan: claims {"v":1,"id","iat","exp","policy"} with
 * exp = iat + ttl_s. id NULL = 128 random bits in hex. -EINVAL for a bad id
 * (1..63 of [A-Za-z0-9._-]) or ttl outside 1 s .. TK_MAX_TTL_S. */
int tk_mint(const sc_plan *plan, const uint8_t key[TK_KEY_LEN], const char *id, time_t iat,
	    int64_t ttl_s, char **ret_token, sc_diag *reterr_diag);

/*
 * Appends a caveat to token without the key. fragment is a policy JSON
 * object that may omit any key (omitted = inherited from the token's current
 * effective set), or NULL; exp is an absolute expiry (0 = keep). Refuses,
 * with the reason in reterr_diag, a caveat that lists anything wider than the
 * token's current set (-EPERM) or that narrows nothing (-EINVAL). The
 * signature of the input token is not checked (there is no key here);
 * verification recomputes the intersection independently.
 */
int tk_attenuate(const char *token, const char *fragment, size_t fragment_len, time_t exp,
		 char **ret_token, sc_diag *reterr_diag);

/* A token taken apart WITHOUT checking its signature, for "token inspect". */
typedef struct tk_decoded {
	tk_info info;
	char *claims_json;   /* decoded claims, as signed */
	char **caveats_json; /* decoded caveats, as signed */
	size_t n_caveats;
	sc_plan *effective; /* NULL when it could not be computed; see effective_diag */
	int effective_error;
	sc_diag effective_diag;
} tk_decoded;

int tk_decode(const char *token, tk_decoded **ret, sc_diag *reterr_diag);
tk_decoded *tk_decoded_free(tk_decoded *d); /* NULL-safe, returns NULL */
static inline void tk_decoded_freep(tk_decoded **d)
{
	tk_decoded_free(*d);
}
