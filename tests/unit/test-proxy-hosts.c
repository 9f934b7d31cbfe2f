/* SPDX-License-Identifier: MIT */
/* TAP tests for the proxy's copy of /etc/hosts and RFC 6761 localhost. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/hosts.h"
#include "tap.h"

static bool is(const px_addr *a, const char *ip)
{
	uint8_t bin[16] = {0};
	int fam = strchr(ip, ':') ? AF_INET6 : AF_INET;

	return inet_pton(fam, ip, bin) == 1 && a->family == fam &&
	       memcmp(a->addr, bin, fam == AF_INET ? 4 : 16) == 0;
}

static void test_parse(void)
{
	static const char text[] = "# comment line\n"
				   "127.0.0.1\tlocalhost\n"
				   "::1 localhost ip6-localhost   # trailing comment\n"
				   "\n"
				   "   10.1.2.3   API.Internal  api   \r\n"
				   "10.1.2.4 api.internal\n"
				   "10.1.2.3 api.internal\n"
				   "fe80::1%eth0 linklocal.test\n"
				   "not-an-address broken.test\n"
				   "192.0.2.7 dotted.test.\n"
				   "192.0.2.8"; /* no name, no newline at the end */
	px_addr a[4];
	px_hosts *h = NULL;
	size_t n;

	ok(px_hosts_parse(text, strlen(text), &h) == 0 && h, "hosts text parses");
	n = px_hosts_lookup(h, "api.internal", a, 4);
	ok(n == 2 && is(&a[0], "10.1.2.3") && is(&a[1], "10.1.2.4"),
	   "every address of a name, in file order, no duplicates");
	n = px_hosts_lookup(h, "API.INTERNAL", a, 4);
	ok(n == 2, "names compare case-insensitively");
	n = px_hosts_lookup(h, "api", a, 4);
	ok(n == 1 && is(&a[0], "10.1.2.3"), "aliases after the first name");
	n = px_hosts_lookup(h, "localhost", a, 4);
	ok(n == 2 && is(&a[0], "127.0.0.1") && is(&a[1], "::1"), "IPv4 and IPv6 lines");
	ok(px_hosts_lookup(h, "linklocal.test", a, 4) == 0, "address with a zone skipped");
	ok(px_hosts_lookup(h, "broken.test", a, 4) == 0, "line without an address skipped");
	ok(px_hosts_lookup(h, "comment", a, 4) == 0 && px_hosts_lookup(h, "trailing", a, 4) == 0,
	   "comments are not names");
	n = px_hosts_lookup(h, "dotted.test", a, 4);
	ok(n == 1 && is(&a[0], "192.0.2.7"), "a trailing dot names the same host");
	ok(px_hosts_lookup(h, "api.internal", a, 1) == 1, "at most max addresses");
	ok(px_hosts_lookup(NULL, "api.internal", a, 4) == 0, "no hosts file: nothing listed");
	px_hosts_free(h);

	ok(px_hosts_parse("", 0, &h) == 0 && px_hosts_lookup(h, "x", a, 4) == 0, "empty file");
	px_hosts_free(h);
	{
		static const char nul[] = "10.0.0.1 a.test\0b.test\n10.0.0.2 c.test\n";

		ok(px_hosts_parse(nul, sizeof(nul) - 1, &h) == 0 &&
		       px_hosts_lookup(h, "c.test", a, 4) == 1,
		   "a NUL byte does not end the file");
		px_hosts_free(h);
	}
}

static void test_localhost(void)
{
	ok(px_is_localhost("localhost"), "localhost");
	ok(px_is_localhost("LOCALHOST"), "LOCALHOST");
	ok(px_is_localhost("app.localhost") && px_is_localhost("a.b.localhost"),
	   "names under .localhost (RFC 6761 6.3)");
	ok(!px_is_localhost("localhost.example.com"), "not localhost.example.com");
	ok(!px_is_localhost("notlocalhost") && !px_is_localhost("xlocalhost"),
	   "not a name merely ending in localhost");
}

int main(void)
{
	test_parse();
	test_localhost();
	return tap_done();
}
