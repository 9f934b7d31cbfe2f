/* SPDX-License-Identifier: MIT */
#include "proxy/limits.h"

#include "policy/plan.h"

void px_bucket_init(px_bucket *b, uint64_t count, uint64_t per_ns, uint64_t capacity,
		    uint64_t now_ns)
{
	b->unlimited = count == 0 || count == PLAN_UNLIMITED || per_ns == 0;
	b->count = count;
	b->per_ns = per_ns;
	b->capacity = capacity ? capacity : 1;
	b->tokens = b->capacity;
	b->last_ns = now_ns;
}

static void refill(px_bucket *b, uint64_t now_ns)
{
	unsigned __int128 add;
	uint64_t elapsed;

	if (now_ns <= b->last_ns)
		return;
	elapsed = now_ns - b->last_ns;
	add = (unsigned __int128)elapsed * b->count / b->per_ns;
	if (add == 0)
		return; /* keep last_ns: the fraction of a token is not lost */
	if (add >= b->capacity - b->tokens) {
		b->tokens = b->capacity;
		b->last_ns = now_ns;
		return;
	}
	b->tokens += (uint64_t)add;
	/* advance by exactly the time those whole tokens took */
	b->last_ns += (uint64_t)(add * b->per_ns / b->count);
}

uint64_t px_bucket_take(px_bucket *b, uint64_t want, uint64_t now_ns)
{
	if (b->unlimited)
		return want;
	refill(b, now_ns);
	if (want > b->tokens)
		want = b->tokens;
	b->tokens -= want;
	return want;
}

uint64_t px_bucket_take_min(px_bucket *b, uint64_t want, uint64_t min_grant, uint64_t now_ns)
{
	uint64_t floor = want < min_grant ? want : min_grant;

	if (b->unlimited)
		return want;
	if (floor > b->capacity)
		floor = b->capacity;
	refill(b, now_ns);
	if (b->tokens < floor)
		return 0;
	return px_bucket_take(b, want, now_ns);
}

bool px_bucket_take_exact(px_bucket *b, uint64_t n, uint64_t now_ns)
{
	if (b->unlimited)
		return true;
	refill(b, now_ns);
	if (b->tokens < n)
		return false;
	b->tokens -= n;
	return true;
}

uint64_t px_bucket_wait_ns(px_bucket *b, uint64_t n, uint64_t now_ns)
{
	unsigned __int128 ns;

	if (b->unlimited)
		return 0;
	refill(b, now_ns);
	if (n > b->capacity)
		n = b->capacity;
	if (b->tokens >= n)
		return 0;
	ns = (unsigned __int128)(n - b->tokens) * b->per_ns / b->count + 1;
	return ns > UINT64_MAX / 2 ? UINT64_MAX / 2 : (uint64_t)ns;
}

void px_bucket_resume(px_bucket *b, const px_bucket *saved, uint64_t now_ns)
{
	b->tokens = saved->tokens < b->capacity ? saved->tokens : b->capacity;
	b->last_ns = saved->last_ns < now_ns ? saved->last_ns : now_ns;
}
