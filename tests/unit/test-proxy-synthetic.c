/* SPDX-License-Identifier: MIT */
/* TAP tests for the synthetic addresses the sandbox resolver hands out. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/synthetic.h"
#include "tap.h"

static px_addr ip(const char *s)
{
	px_addr a = {.family = strchr(s, ':') ? AF_INET6 : AF_INET};

	if (inet_pton(a.family, s, a.addr) != 1)
		abort();
	return a;
}

static bool is(const px_addr *a, const char *s)
{
	px_addr b = ip(s);

	return a->family == b.family && memcmp(a->addr, b.addr, 16) == 0;
}

static const char *name_of(const px_synth_table *t, const char *s)
{
	px_addr a = ip(s);

	return px_synthetic_name(t, &a);
}

int main(void)
{
	px_synth_table *t = calloc(1, sizeof(*t));
	uint32_t i1 = 99, i2 = 99, i3 = 99;
	px_addr a;
	char name[32];
	int r = 0;

	if (!t)
		return 1;
	ok(px_synthetic_assign(t, "api.example.com", &i1) == 0 && i1 == 0, "the first name gets 0");
	ok(px_synthetic_assign(t, "git.example.com", &i2) == 0 && i2 == 1, "the next name gets 1");
	ok(px_synthetic_assign(t, "api.example.com", &i3) == 0 && i3 == 0,
	   "a name asked again keeps its index");
	px_synthetic_addr(i1, AF_INET, &a);
	ok(is(&a, "198.18.0.1"), "index 0 is 198.18.0.1");
	px_synthetic_addr(i2, AF_INET6, &a);
	ok(is(&a, "fd73:616e:6463:6170::2"), "index 1 is fd73:616e:6463:6170::2");
	px_synthetic_addr(PX_SYNTH_MAX - 1, AF_INET, &a);
	ok(is(&a, "198.18.16.0"), "the last index stays inside 198.18.0.0/15");

	ok(name_of(t, "198.18.0.1") && strcmp(name_of(t, "198.18.0.1"), "api.example.com") == 0,
	   "198.18.0.1 maps back to its name");
	ok(name_of(t, "fd73:616e:6463:6170::2") &&
	       strcmp(name_of(t, "fd73:616e:6463:6170::2"), "git.example.com") == 0,
	   "the IPv6 address maps back to its name");
	ok(name_of(t, "::ffff:198.18.0.2") &&
	       strcmp(name_of(t, "::ffff:198.18.0.2"), "git.example.com") == 0,
	   "an IPv4-mapped address (a dual-stack listener) maps back too");
	ok(!name_of(t, "198.18.0.3"), "an address in range never handed out maps to nothing");
	ok(!name_of(t, "198.18.0.0"), "the network address maps to nothing");
	ok(!name_of(t, "fd73:616e:6463:6170:1::1"), "an IPv6 address with high host bits: nothing");
	ok(!name_of(t, "1.2.3.4") && !name_of(t, "198.20.0.1") && !name_of(t, "::1"),
	   "addresses outside the ranges map to nothing");

	a = ip("198.19.255.255");
	ok(px_synthetic_in_range(&a), "198.19.255.255 is in range");
	a = ip("198.17.255.255");
	ok(!px_synthetic_in_range(&a), "198.17.255.255 is not");
	a = ip("::ffff:198.18.9.9");
	ok(px_synthetic_in_range(&a), "the mapped form is in range");
	a = ip("fd73:616e:6463:6171::1");
	ok(!px_synthetic_in_range(&a), "the next /64 is not");

	ok(px_synthetic_assign(t, "", &i1) == -EINVAL, "an empty name is refused");
	for (uint32_t i = 2; i < PX_SYNTH_MAX && r == 0; i++) {
		snprintf(name, sizeof(name), "n%u.example.com", i);
		r = px_synthetic_assign(t, name, &i1);
	}
	ok(r == 0 && t->n == PX_SYNTH_MAX, "the table fills to PX_SYNTH_MAX");
	ok(px_synthetic_assign(t, "one-more.example.com", &i1) == -ENOSPC,
	   "a name past the table is refused (-ENOSPC)");
	ok(px_synthetic_assign(t, "git.example.com", &i1) == 0 && i1 == 1,
	   "a name already known still gets its address when the table is full");
	free(t);
	return tap_done();
}
