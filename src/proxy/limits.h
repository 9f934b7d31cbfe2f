/* SPDX-License-Identifier: MIT */
/*
 * Token buckets for the proxy's rate and bandwidth limits. Pure: the caller
 * passes the monotonic time in, so tests need no clock.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef struct px_bucket {
	bool unlimited;
	uint64_t count; /* tokens added per per_ns */
	uint64_t per_ns;
	uint64_t capacity; /* burst */
	uint64_t tokens;
	uint64_t last_ns;
} px_bucket;

/* count == 0 or PLAN_UNLIMITED makes the bucket unlimited. Starts full. */
void px_bucket_init(px_bucket *b, uint64_t count, uint64_t per_ns, uint64_t capacity,
		    uint64_t now_ns);
/* Takes up to want tokens; returns how many were granted (0..want). */
uint64_t px_bucket_take(px_bucket *b, uint64_t want, uint64_t now_ns);
/*
 * Like px_bucket_take(), but grants nothing unless min(want, min_grant) tokens
 * are there: without a floor a paced stream takes a few bytes per loop turn
 * as they trickle in and spins the CPU instead of sleeping.
 */
uint64_t px_bucket_take_min(px_bucket *b, uint64_t want, uint64_t min_grant, uint64_t now_ns);
/* Takes exactly n tokens or none; returns whether it did. */
bool px_bucket_take_exact(px_bucket *b, uint64_t n, uint64_t now_ns);
/* Nanoseconds until at least n tokens are available (0 = now). */
uint64_t px_bucket_wait_ns(px_bucket *b, uint64_t n, uint64_t now_ns);
/*
 * A restarted worker takes over its predecessor's level: b (initialised from
 * the policy) gets saved's tokens and clock, never more than b's capacity
 * nor a clock in the future, so that a restart neither refills nor drains.
 */
void px_bucket_resume(px_bucket *b, const px_bucket *saved, uint64_t now_ns);
