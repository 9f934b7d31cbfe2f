/* SPDX-License-Identifier: MIT */
/*
 * `sandcap audit bundle` and `verify --bundle` (docs/audit.md, "Bundles"):
 * one tar archive with everything an auditor checks offline, and its
 * checker. A bundle is untrusted input: its reader is fuzzed.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "audit/audit.h"

#define AU_BUNDLE_FORMAT     "sandcap-audit-bundle"
#define AU_BUNDLE_LOG_MAX    (256u << 20) /* the log member */
#define AU_BUNDLE_MEMBER_MAX (4u << 20)	  /* every other member */

/* The members, in the order they are written. */
#define AU_BUNDLE_MANIFEST "manifest.json"
#define AU_BUNDLE_LOG	   "audit.jsonl"
#define AU_BUNDLE_REPORT   "report.json"
#define AU_BUNDLE_TEXT	   "report.txt"
#define AU_BUNDLE_PUBKEY   "pubkey.pem"
#define AU_BUNDLE_POLICY   "policy.json"
#define AU_BUNDLE_TOKEN	   "token-claims.json"

typedef struct au_bundle_in {
	const char *log;
	size_t log_len;
	const char *pubkey; /* PEM, or NULL */
	size_t pubkey_len;
	const char *policy; /* the policy file's bytes, or NULL */
	size_t policy_len;
	const char *token_claims; /* {"claims":..,"caveats":[..]}, no signature, or NULL */
	size_t token_claims_len;
} au_bundle_in;

/* Loads a public key from PEM bytes (as au_sign_key_load). */
int au_sign_key_parse(const char *pem, size_t len, au_sign_key **ret);

/*
 * Writes the bundle of in to fd. The log must verify first (with the
 * public key when one is given), a policy must be the one whose digest
 * sandbox.start records. 0, or -EBADMSG with the reason, -ENOSYS without
 * libarchive, -EIO, -ENOMEM.
 */
int au_bundle_write(int fd, const au_bundle_in *in, char *reason, size_t reason_len);

typedef struct au_bundle_result {
	au_verify_info info; /* of the log */
	bool pubkey_in_bundle;
	bool policy_checked; /* policy.json is the policy sandbox.start names */
	bool token_checked;  /* token-claims.json is of the token sandbox.start names */
} au_bundle_result;

/*
 * Checks a bundle held in memory: a plain tar of exactly the known members
 * (manifest, log and both reports required), the manifest the one the
 * members give, the log intact and sealed (signed by pub, or by the
 * bundle's own key when pub is NULL; both must then be the same key),
 * the reports those the log gives, the policy or token those sandbox.start
 * names. 0 (the log's info in ret; a log that records a failure is 0 with
 * info.failed), -EBADMSG with the reason, -ENOSYS without libarchive.
 */
int au_bundle_verify(const void *tar, size_t len, const au_sign_key *pub, au_bundle_result *ret,
		     char *reason, size_t reason_len);
