/* SPDX-License-Identifier: MIT */
/* Credential limits (cred-limits.h). */
#include "proxy/cred-limits.h"

#include <inttypes.h>
#include <stdio.h>

#include "policy/policy-internal.h"
#include "policy/http-path.h"

void px_cred_state_init(px_cred_state *st, const px_cred *cr, uint64_t now_ns)
{
	st->requests = 0;
	st->bytes = 0;
	px_bucket_init(&st->rate, cr->rate.count, cr->rate.per_ns,
		       cr->rate.count ? cr->rate.count : 1, now_ns);
}

void px_cred_state_resume(px_cred_state *st, const px_cred *cr, const px_cred_state *saved,
			  uint64_t now_ns)
{
	px_cred_state_init(st, cr, now_ns);
	/* never past the policy's limits, whatever the memfd holds */
	st->requests = saved->requests < cr->max_requests ? saved->requests : cr->max_requests;
	st->bytes = saved->bytes < cr->max_bytes ? saved->bytes : cr->max_bytes;
	px_bucket_resume(&st->rate, &saved->rate, now_ns);
}

static const char *method_name(uint32_t bit)
{
	for (unsigned m = 0; m < PLAN_N_METHODS; m++)
		if (bit == 1u << m)
			return plan_method_names[m];
	return "this";
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int px_cred_admit(const px_cred *cr, px_cred_state *st, const px_cred_use *u,
		  const char **ret_limit, char *detail, size_t size)
{
	if (cr->expires_ns != PLAN_UNLIMITED && u->now_ns - u->start_ns >= cr->expires_ns) {
		*ret_limit = "expires";
		(void)snprintf(detail, size, "credential %s expired %" PRIu64 " s after the start",
			       cr->name, cr->expires_ns / 1000000000u);
		return 403;
	}
	if (cr->methods != HTTP_ANY_METHOD && !(u->method_bit & cr->methods)) {
		*ret_limit = "methods";
		(void)snprintf(detail, size, "credential %s is not for %s requests", cr->name,
			       method_name(u->method_bit));
		return 403;
	}
	if (!http_paths_allow(cr->paths, cr->n_paths, u->path)) {
		*ret_limit = "paths";
		(void)snprintf(detail, size, "credential %s is not for this path", cr->name);
		return 403;
	}
	if (cr->max_requests != PLAN_UNLIMITED && st->requests >= cr->max_requests) {
		*ret_limit = "max_requests";
		(void)snprintf(detail, size, "credential %s used for its %" PRIu64 " requests",
			       cr->name, cr->max_requests);
		return 429;
	}
	if (cr->max_bytes != PLAN_UNLIMITED &&
	    (st->bytes >= cr->max_bytes || sat_add(st->bytes, u->bytes) > cr->max_bytes)) {
		*ret_limit = "max_bytes";
		(void)snprintf(detail, size,
			       "credential %s: %" PRIu64 " of its %" PRIu64
			       " bytes sent, this request needs %s%" PRIu64,
			       cr->name, st->bytes, cr->max_bytes, u->sized ? "" : "at least ",
			       u->bytes);
		return 429;
	}
	if (!px_bucket_take_exact(&st->rate, 1, u->now_ns)) {
		*ret_limit = "rate";
		(void)snprintf(detail, size, "credential %s: %" PRIu64 " per %" PRIu64 " s",
			       cr->name, cr->rate.count, cr->rate.per_ns / 1000000000u);
		return 429;
	}
	st->requests++;
	return 0;
}

uint64_t px_cred_bytes_room(const px_cred *cr, const px_cred_state *st, uint64_t want)
{
	uint64_t left;

	if (cr->max_bytes == PLAN_UNLIMITED)
		return want;
	left = st->bytes >= cr->max_bytes ? 0 : cr->max_bytes - st->bytes;
	return want < left ? want : left;
}

void px_cred_bytes_sent(px_cred_state *st, uint64_t n)
{
	st->bytes = sat_add(st->bytes, n);
}
