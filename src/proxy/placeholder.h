/* SPDX-License-Identifier: MIT */
/*
 * Placeholder secrets (docs/proxy.md, "Placeholder secrets"): the agent's
 * environment holds a random stand-in for a credential; the proxy swaps in
 * the real value only in requests to the credential's host and refuses any
 * other request that carries it. Pure: no I/O (px_placeholder_make reads
 * getrandom(2)).
 */
#pragma once

#include <stddef.h>

#include "proxy/px.h"

#define PX_PLACEHOLDER_MAX 96u

/*
 * A fresh placeholder for the variable name, shaped like a key of that kind
 * where a prefix is conventional ("sk-" for OPENAI_*, "sk-ant-" for
 * ANTHROPIC_*, "ghp_" for GITHUB_ and GH_ names, ...) so that SDKs that check the
 * shape accept it; else random letters and digits. out holds at least
 * PX_PLACEHOLDER_MAX + 1 bytes. Returns 0 or -errno from getrandom.
 */
int px_placeholder_make(const char *name, char *out, size_t size);

/* The first credential whose placeholder occurs in buf, or NULL. */
const px_cred *px_placeholder_find(const px_config *cfg, const char *buf, size_t len);

/* The detail of a tunnel refused for carrying leak's placeholder in cleartext. */
void px_placeholder_tunnel_detail(const px_cred *leak, char *out, size_t size);

/*
 * In the request head built for host (request line, CRLF, headers, CRLF
 * CRLF), replaces the placeholder of every credential for host by its value:
 * in every header value, and in the query string of the request line when
 * the credential has in_query. Reallocates *head. Returns how many were
 * replaced, or -ENOMEM.
 */
int px_placeholder_replace(const px_config *cfg, const char *host, char **head, size_t *len);
/* px_placeholder_replace() of one credential only. */
int px_placeholder_replace_one(const px_cred *cred, char **head, size_t *len);
/*
 * The credential of host whose placeholder px_placeholder_replace() would
 * replace in this head (a header, or the query with in_query), the first
 * one; NULL when the head carries none. The request's credential: its
 * limits are the ones judged and counted.
 */
const px_cred *px_placeholder_used(const px_config *cfg, const char *host, const char *head,
				   size_t len);
