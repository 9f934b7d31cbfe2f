/* SPDX-License-Identifier: MIT */
/*
 * Credential limits: whether one more request may carry a credential, and
 * how many more bytes may go upstream with it (docs/proxy.md, "Credential
 * limits"). Pure: the caller passes the time and the counters (which live in
 * the memfd shared across worker restarts, px_shared).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/px.h"

/* What a request would use of the credential. */
typedef struct px_cred_use {
	uint32_t method_bit; /* http_method bit, 0 for an extension method */
	const char *path;    /* normalised (policy/http-path.h), NULL when it did not normalise */
	bool sized;	     /* the request's size upstream is known (Content-Length) */
	uint64_t bytes;	     /* head as sent upstream, plus the body when sized */
	uint64_t start_ns;   /* when the run started (px_shared.start_ns) */
	uint64_t now_ns;
} px_cred_use;

/* A fresh counter set for cr at now_ns (the rate bucket starts full). */
void px_cred_state_init(px_cred_state *st, const px_cred *cr, uint64_t now_ns);
/* A restarted worker goes on with what its predecessor counted, never less
 * than was used nor a rate level above the policy's. */
void px_cred_state_resume(px_cred_state *st, const px_cred *cr, const px_cred_state *saved,
			  uint64_t now_ns);

/*
 * Admits the request or says which limit refuses it. Checked in this order:
 * expires, methods, paths (403: no retry helps), then max_requests,
 * max_bytes, rate (429). Returns 0 with st updated (one more request, a rate
 * token taken), or the HTTP status, with *ret_limit the key ("max_requests",
 * ...) and detail a sentence for the record. Nothing is counted on refusal.
 */
int px_cred_admit(const px_cred *cr, px_cred_state *st, const px_cred_use *u,
		  const char **ret_limit, char *detail, size_t size);

/* How many of want bytes may still go upstream with the credential. */
uint64_t px_cred_bytes_room(const px_cred *cr, const px_cred_state *st, uint64_t want);
/* n bytes went upstream with it. */
void px_cred_bytes_sent(px_cred_state *st, uint64_t n);
