/* SPDX-License-Identifier: MIT */
#include "proxy/synthetic.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#define V4_NET	  UINT32_C(0xc6120000) /* 198.18.0.0 */
#define V4_PREFIX 15u

static const uint8_t v6_net[8] = {0xfd, 0x73, 0x61, 0x6e, 0x64, 0x63, 0x61, 0x70};
static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

_Static_assert(PX_SYNTH_MAX < (1u << (32 - V4_PREFIX)) - 2, "synthetic IPv4 range too small");

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static int find(const px_synth_table *t, const char *name, uint32_t h)
{
	uint32_t n = __atomic_load_n(&t->n, __ATOMIC_ACQUIRE);

	if (n > PX_SYNTH_MAX)
		n = PX_SYNTH_MAX;
	for (uint32_t i = 0; i < n; i++)
		if (t->e[i].hash == h && strcmp(t->e[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

int px_synthetic_assign(px_synth_table *t, const char *name, uint32_t *ret_index)
{
	size_t len = strlen(name);
	uint32_t h = fnv1a(name);
	int i;

	if (len == 0 || len > PX_MAX_HOST)
		return -EINVAL;
	i = find(t, name, h);
	if (i >= 0) {
		*ret_index = (uint32_t)i;
		return 0;
	}
	if (t->n >= PX_SYNTH_MAX)
		return -ENOSPC;
	memcpy(t->e[t->n].name, name, len + 1);
	t->e[t->n].hash = h;
	*ret_index = t->n;
	/* a successor that maps the table sees only complete entries */
	__atomic_store_n(&t->n, t->n + 1, __ATOMIC_RELEASE);
	return 0;
}

void px_synthetic_addr(uint32_t index, int family, px_addr *ret)
{
	uint32_t host = index + 1; /* .0 is the network */

	memset(ret, 0, sizeof(*ret));
	ret->family = family;
	if (family == AF_INET) {
		uint32_t v = V4_NET + host;

		ret->addr[0] = (uint8_t)(v >> 24);
		ret->addr[1] = (uint8_t)(v >> 16);
		ret->addr[2] = (uint8_t)(v >> 8);
		ret->addr[3] = (uint8_t)v;
		return;
	}
	memcpy(ret->addr, v6_net, sizeof(v6_net));
	ret->addr[12] = (uint8_t)(host >> 24);
	ret->addr[13] = (uint8_t)(host >> 16);
	ret->addr[14] = (uint8_t)(host >> 8);
	ret->addr[15] = (uint8_t)host;
}

/* The IPv4 address in a (AF_INET, or IPv4-mapped IPv6), or 0 with *is_v4 false. */
static uint32_t v4_of(const px_addr *a, bool *is_v4)
{
	const uint8_t *p = a->addr;

	*is_v4 = true;
	if (a->family == AF_INET6 && memcmp(p, v4_mapped, sizeof(v4_mapped)) == 0)
		p += 12;
	else if (a->family != AF_INET) {
		*is_v4 = false;
		return 0;
	}
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

bool px_synthetic_in_range(const px_addr *a)
{
	uint32_t mask = ~UINT32_C(0) << (32 - V4_PREFIX);
	bool is_v4;
	uint32_t v = v4_of(a, &is_v4);

	if (is_v4)
		return (v & mask) == V4_NET;
	return a->family == AF_INET6 && memcmp(a->addr, v6_net, sizeof(v6_net)) == 0;
}

/* 1 + the index a stands for, or 0 when a cannot be an assigned address. */
static uint32_t host_part(const px_addr *a)
{
	const uint8_t *p = a->addr;
	bool is_v4;
	uint32_t v = v4_of(a, &is_v4);

	if (!px_synthetic_in_range(a))
		return 0;
	if (is_v4)
		return v & ~(~UINT32_C(0) << (32 - V4_PREFIX));
	for (int i = 8; i < 12; i++)
		if (p[i])
			return 0;
	return ((uint32_t)p[12] << 24) | ((uint32_t)p[13] << 16) | ((uint32_t)p[14] << 8) | p[15];
}

const char *px_synthetic_name(const px_synth_table *t, const px_addr *a)
{
	uint32_t host = host_part(a);
	uint32_t n = __atomic_load_n(&t->n, __ATOMIC_ACQUIRE);

	if (host == 0 || host > n || host > PX_SYNTH_MAX)
		return NULL;
	return t->e[host - 1].name;
}
