/* SPDX-License-Identifier: MIT */
/* TAP tests for allowlist matching, the private-address classifier and token buckets. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/allow.h"
#include "proxy/events.h"
#include "proxy/limits.h"
#include "proxy/proxy.h"
#include "proxy/record.h"
#include "proxy/px.h"
#include "tap.h"

static bool priv(const char *s)
{
	uint8_t a[16];
	int fam;

	if (px_parse_ip(s, &fam, a) < 0) {
		tap_diag("bad literal %s", s);
		return false;
	}
	return px_addr_is_private(fam, a);
}

static void test_private(void)
{
	static const char *const private_addrs[] = {
	    "127.0.0.1",
	    "127.255.255.254",
	    "10.1.2.3",
	    "172.16.0.1",
	    "172.31.255.255",
	    "192.168.1.1",
	    "169.254.169.254",
	    "169.254.0.1",
	    "100.64.0.1",
	    "100.127.255.255",
	    "224.0.0.1",
	    "239.255.255.250",
	    "0.0.0.0",
	    "255.255.255.255",
	    "240.0.0.1",
	    "::",
	    "::1",
	    "fc00::1",
	    "fd12:3456::1",
	    "fe80::1",
	    "ff02::1",
	    "::ffff:127.0.0.1",
	    "::ffff:169.254.169.254",
	    "::ffff:10.0.0.1",
	    "::127.0.0.1",
	    "::10.0.0.1",
	    "64:ff9b::a9fe:a9fe",
	    "64:ff9b::7f00:1",
	    "2002:7f00:1::",
	    "2002:a9fe:a9fe::1",
	    "fec0::1",
	    "64:ff9b:1::1",
	};
	static const char *const public_addrs[] = {
	    "8.8.8.8",	       "1.1.1.1",	  "93.184.216.34",  "172.32.0.1",
	    "172.15.255.255",  "100.128.0.1",	  "100.63.255.255", "169.253.0.1",
	    "192.169.0.1",     "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808",
	    "2002:808:808::1", "::808:808",
	};

	for (size_t i = 0; i < sizeof(private_addrs) / sizeof(private_addrs[0]); i++)
		ok(priv(private_addrs[i]), "%s is private", private_addrs[i]);
	for (size_t i = 0; i < sizeof(public_addrs) / sizeof(public_addrs[0]); i++)
		ok(!priv(public_addrs[i]), "%s is public", public_addrs[i]);
}

static plan_cidr cidr(const char *s, unsigned prefix)
{
	plan_cidr c = {0};

	c.family = strchr(s, ':') ? AF_INET6 : AF_INET;
	(void)inet_pton(c.family, s, c.addr);
	c.prefix = prefix;
	return c;
}

static bool permitted(const px_config *cfg, const char *s)
{
	uint8_t a[16];
	int fam;

	(void)px_parse_ip(s, &fam, a);
	return px_addr_permitted(cfg, fam, a);
}

static void test_cidr(void)
{
	plan_cidr cs[2] = {cidr("127.0.0.0", 8), cidr("fd00::", 8)};
	px_config cfg = {.allow_private = cs, .n_allow_private = 2};

	ok(permitted(&cfg, "127.0.0.1"), "allow_private 127/8 covers 127.0.0.1");
	ok(permitted(&cfg, "::ffff:127.0.0.1"), "and its IPv4-mapped form");
	ok(!permitted(&cfg, "10.0.0.1"), "but not 10.0.0.1");
	ok(!permitted(&cfg, "169.254.169.254"), "nor the metadata address");
	ok(permitted(&cfg, "fd12::1"), "IPv6 CIDR");
	ok(!permitted(&cfg, "fc00::1"), "IPv6 CIDR boundary");
	ok(permitted(&cfg, "8.8.8.8"), "public is permitted");
	cs[0] = cidr("10.1.2.0", 23);
	ok(permitted(&cfg, "10.1.3.255") && !permitted(&cfg, "10.1.4.0"), "non-octet prefix");
}

static void test_match(void)
{
	plan_egress eg[4] = {0};
	plan_cidr cs[1] = {cidr("127.0.0.1", 32)};
	px_config cfg = {.egress = eg, .n_egress = 4, .allow_private = cs, .n_allow_private = 1};
	const char *why = NULL;

	eg[0].host = (char *)"api.example.com";
	eg[0].ports[0] = 443;
	eg[0].n_ports = 1;
	eg[0].methods = HTTP_GET | HTTP_POST;
	eg[1].host = (char *)"*.pythonhosted.org";
	eg[1].wildcard = true;
	eg[2].host = (char *)"93.184.216.34";
	eg[3].host = (char *)"connect.test";
	eg[3].methods = HTTP_CONNECT;

	ok(px_allow_match(&cfg, "api.example.com", PX_HOST_NAME, 443, HTTP_GET, false, &why) == 0,
	   "exact host, port, method");
	ok(px_allow_match(&cfg, "api.example.com", PX_HOST_NAME, 80, HTTP_GET, false, &why) < 0 &&
	       strcmp(why, "port-not-allowed") == 0,
	   "wrong port refused");
	ok(px_allow_match(&cfg, "api.example.com", PX_HOST_NAME, 443, HTTP_DELETE, false, &why) <
		   0 &&
	       strcmp(why, "method-not-allowed") == 0,
	   "wrong method refused");
	ok(px_allow_match(&cfg, "api.example.com", PX_HOST_NAME, 443, 0, true, &why) < 0,
	   "CONNECT refused when methods are listed without CONNECT");
	ok(px_allow_match(&cfg, "x.api.example.com", PX_HOST_NAME, 443, HTTP_GET, false, &why) < 0,
	   "exact rule does not match subdomain");
	ok(px_allow_match(&cfg, "files.pythonhosted.org", PX_HOST_NAME, 443, HTTP_GET, false,
			  &why) == 1,
	   "wildcard matches subdomain");
	ok(px_allow_match(&cfg, "a.b.pythonhosted.org", PX_HOST_NAME, 80, 0, true, &why) == 1,
	   "wildcard matches deeper subdomain, default ports, any method incl. CONNECT");
	ok(px_allow_match(&cfg, "pythonhosted.org", PX_HOST_NAME, 443, HTTP_GET, false, &why) < 0,
	   "wildcard does not match the domain itself");
	ok(px_allow_match(&cfg, "evilpythonhosted.org", PX_HOST_NAME, 443, HTTP_GET, false, &why) <
	       0,
	   "wildcard is not a suffix match");
	ok(px_allow_match(&cfg, "files.pythonhosted.org", PX_HOST_NAME, 8080, HTTP_GET, false,
			  &why) < 0,
	   "default ports are 80 and 443 only");
	ok(px_allow_match(&cfg, "93.184.216.34", PX_HOST_IPV4, 80, HTTP_GET, false, &why) == 2,
	   "explicitly listed IP literal");
	ok(px_allow_match(&cfg, "93.184.216.35", PX_HOST_IPV4, 80, HTTP_GET, false, &why) < 0 &&
	       strcmp(why, "ip-literal") == 0,
	   "other IP literal refused");
	ok(px_allow_match(&cfg, "127.0.0.1", PX_HOST_IPV4, 80, HTTP_GET, false, &why) < 0 &&
	       strcmp(why, "ip-literal") == 0,
	   "allow_private allows no IP literal by itself, not even on port 80");
	ok(px_allow_match(&cfg, "127.0.0.2", PX_HOST_IPV4, 443, HTTP_DELETE, false, &why) < 0,
	   "... nor on 443 with any method");
	ok(px_allow_match(&cfg, "connect.test", PX_HOST_NAME, 443, 0, true, &why) == 3,
	   "CONNECT listed explicitly");
	ok(px_allow_match(&cfg, "connect.test", PX_HOST_NAME, 443, HTTP_GET, false, &why) < 0,
	   "CONNECT-only rule refuses GET");
	eg[2].host = (char *)"[2001:db8::1]";
	ok(px_allow_match(&cfg, "2001:db8::1", PX_HOST_IPV6, 80, HTTP_GET, false, &why) == 2,
	   "bracketed IPv6 rule matches");
	ok(px_allow_match(&cfg, "2001:db8:0:0::1", PX_HOST_IPV6, 80, HTTP_GET, false, &why) == 2,
	   "IPv6 literals compare as addresses, not strings");
	eg[2].host = (char *)"93.184.216.34";
	ok(px_allow_match(&cfg, "nothing.test", PX_HOST_NAME, 443, HTTP_GET, false, &why) < 0 &&
	       strcmp(why, "host-not-allowed") == 0,
	   "unknown host refused");

	/* a rule naming a range of addresses */
	eg[2].host = (char *)"10.1.0.0/16";
	ok(px_allow_match(&cfg, "10.1.200.3", PX_HOST_IPV4, 443, HTTP_GET, false, &why) == 2,
	   "CIDR rule matches an address inside it");
	ok(px_allow_match(&cfg, "10.2.0.1", PX_HOST_IPV4, 443, HTTP_GET, false, &why) < 0 &&
	       strcmp(why, "ip-literal") == 0,
	   "CIDR rule does not match outside it");
	ok(px_allow_match(&cfg, "10.1.0.1", PX_HOST_IPV4, 8080, HTTP_GET, false, &why) < 0 &&
	       strcmp(why, "port-not-allowed") == 0,
	   "CIDR rule keeps its ports");
	eg[2].host = (char *)"fd00::/8";
	ok(px_allow_match(&cfg, "fd12::5", PX_HOST_IPV6, 80, HTTP_GET, false, &why) == 2,
	   "IPv6 CIDR rule");
	eg[2].host = (char *)"93.184.216.34";
}

/* The reason of a refusal is the nearest miss, whatever the rule order. */
static void test_reasons(void)
{
	plan_egress eg[3] = {0};
	px_config cfg = {.egress = eg, .n_egress = 3};
	const char *why = NULL;

	eg[0].host = (char *)"127.0.0.1";
	eg[0].ports[0] = 18081;
	eg[0].n_ports = 1;
	eg[0].methods = HTTP_GET;
	eg[1].host = (char *)"127.0.0.1";
	eg[1].ports[0] = 9999;
	eg[1].n_ports = 1;
	eg[2].host = (char *)"api.test";
	eg[2].ports[0] = 18081;
	eg[2].n_ports = 1;
	eg[2].methods = HTTP_GET;
	ok(px_allow_match(&cfg, "127.0.0.1", PX_HOST_IPV4, 18081, HTTP_POST, false, &why) < 0 &&
	       strcmp(why, "method-not-allowed") == 0,
	   "method refused on a listed port says method-not-allowed, not port-not-allowed");
	ok(px_allow_match(&cfg, "127.0.0.1", PX_HOST_IPV4, 80, HTTP_POST, false, &why) < 0 &&
	       strcmp(why, "port-not-allowed") == 0,
	   "an unlisted port of a listed address says port-not-allowed");
	ok(px_allow_match(&cfg, "api.test", PX_HOST_NAME, 18081, HTTP_DELETE, false, &why) < 0 &&
	       strcmp(why, "method-not-allowed") == 0,
	   "same for a name");
	ok(px_allow_match(&cfg, "api.test", PX_HOST_NAME, 18081, 0, true, &why) < 0 &&
	       strcmp(why, "method-not-allowed") == 0,
	   "CONNECT to a GET-only rule: method-not-allowed");
}

static void test_buckets(void)
{
	px_bucket b;
	const uint64_t s = 1000000000ull;

	px_bucket_init(&b, 5, s, 5, 0);
	int n = 0;
	for (int i = 0; i < 10; i++)
		n += px_bucket_take_exact(&b, 1, 0);
	ok(n == 5, "rate bucket: burst of 5");
	ok(!px_bucket_take_exact(&b, 1, s / 10), "no token after 100 ms at 5/s");
	ok(px_bucket_take_exact(&b, 1, s / 5), "one token after 200 ms");
	ok(px_bucket_wait_ns(&b, 1, s / 5) > 0, "wait reported when empty");
	px_bucket_init(&b, 1 << 20, s, 1 << 17, 0);
	ok(px_bucket_take(&b, 1 << 20, 0) == 1 << 17, "bandwidth: burst capped");
	ok(px_bucket_take(&b, 1 << 20, s / 2) == 1 << 17, "refill capped at capacity");
	ok(px_bucket_take(&b, 1 << 20, s / 2 + s / 16) == 1 << 16, "refill by elapsed time");
	px_bucket_init(&b, 1 << 20, s, 1 << 17, 0);
	(void)px_bucket_take(&b, 1 << 17, 0);
	ok(px_bucket_take_min(&b, 1 << 20, 16384, s / 1000) == 0,
	   "floor: 1 KiB of tokens is not enough for a 16 KiB minimum");
	ok(px_bucket_take_min(&b, 1 << 20, 16384, s / 50) >= 16384, "floor reached after 20 ms");
	ok(px_bucket_take_min(&b, 100, 16384, s) == 100, "small wants are not held to the floor");
	px_bucket_init(&b, 0, s, 1, 0);
	ok(px_bucket_take(&b, 12345, 0) == 12345, "count 0 = unlimited");

	/* a restarted worker takes over the level its predecessor left */
	{
		px_bucket old, fresh;

		px_bucket_init(&old, 5, s, 5, 0);
		for (int i = 0; i < 5; i++)
			(void)px_bucket_take_exact(&old, 1, 0);
		px_bucket_init(&fresh, 5, s, 5, s / 10);
		px_bucket_resume(&fresh, &old, s / 10);
		ok(!px_bucket_take_exact(&fresh, 1, s / 10), "resume: a spent bucket stays spent");
		ok(px_bucket_take_exact(&fresh, 1, s / 5),
		   "resume: and refills at the policy's rate");
		old.tokens = 1000;
		old.last_ns = 5 * s;
		px_bucket_init(&fresh, 5, s, 5, s);
		px_bucket_resume(&fresh, &old, s);
		ok(fresh.tokens == 5 && fresh.last_ns == s,
		   "resume: never above capacity nor a clock in the future");
	}
}

static void test_format(void)
{
	char *v = NULL;

	ok(px_format_secret("Bearer %s", "abc", &v) == 0 && strcmp(v, "Bearer abc") == 0,
	   "format with %%s");
	free(v);
	ok(px_format_secret("100%% %s", "x", &v) == 0 && strcmp(v, "100% x") == 0, "%s",
	   "%% literal");
	free(v);
	ok(px_format_secret("%s %s", "x", &v) < 0, "two %%s refused");
	ok(px_format_secret("%d", "x", &v) < 0, "other conversions refused");
	ok(px_format_secret("%s", "a\r\nX-Injected: 1", &v) < 0, "CRLF in secret refused");
}

static int ev(const char *s)
{
	char *name = NULL;
	json_t *data = NULL;
	int r = px_event_parse(s, strlen(s), &name, &data);

	free(name);
	json_decref(data);
	return r;
}

static void test_events(void)
{
	char big[PX_EVENT_MAX_BYTES + 64];

	ok(ev("{\"event\":\"net.request\",\"data\":{\"method\":\"GET\",\"host\":\"a.test\","
	      "\"port\":80,\"decision\":\"allow\",\"bytes_out\":1}}") == 0,
	   "net.request accepted");
	ok(ev("{\"event\":\"limit.hit\",\"data\":{\"limit\":\"rate\",\"detail\":\"5/s\"}}") == 0,
	   "limit.hit accepted");
	ok(ev("{\"event\":\"sandbox.exit\",\"data\":{}}") < 0, "foreign event name refused");
	ok(ev("{\"event\":\"net.denied\",\"data\":{\"evil\":1}}") < 0, "unknown key refused");
	ok(ev("{\"event\":\"net.denied\",\"data\":{\"host\":{\"a\":1}}}") < 0,
	   "nested value refused");
	ok(ev("{\"event\":\"net.denied\",\"data\":{\"port\":-1}}") < 0, "negative number refused");
	ok(ev("{\"event\":\"net.request\",\"data\":{\"host\":\"a\",\"inspected\":true}}") == 0,
	   "a decrypted request's \"inspected\": true accepted");
	ok(ev("{\"event\":\"net.tunnel.close\",\"data\":{\"inspected\":true}}") < 0,
	   "\"inspected\" only where it is known");
	ok(ev("{\"event\":\"net.inbound\",\"data\":{\"peer\":\"127.0.0.1:5\",\"port\":8000,"
	      "\"host_port\":41000,\"bytes_in\":1,\"bytes_out\":2,\"duration_ms\":3,"
	      "\"result\":\"ok\"}}") == 0,
	   "net.inbound accepted (the serve relay's)");
	ok(ev("{\"event\":\"net.inbound\",\"data\":{\"host\":\"a.test\"}}") < 0,
	   "net.inbound takes only its own keys");
	ok(ev("{\"event\":\"net.denied\",\"data\":{\"host\":\"a\",\"host\":\"b\"}}") < 0,
	   "duplicate key refused");
	ok(ev("{\"event\":\"net.denied\",\"data\":[]}") < 0, "non-object data refused");
	ok(ev("{\"event\":\"net.denied\",\"data\":{},\"x\":1}") < 0, "extra top-level key refused");
	ok(ev("{\"event\":\"net.denied\",\"data\":{\"host\":\"a\\u0000b\"}}") < 0,
	   "NUL inside a string refused");
	{
		static const char pre[] = "{\"event\":\"net.denied\",\"data\":{\"host\":\"";

		memset(big, 'a', sizeof(big));
		memcpy(big, pre, strlen(pre));
		strcpy(big + 200, "\"}}");
		ok(ev(big) == 0, "the same datagram, short, is accepted");
		memset(big + 200, 'a', 4);
		strcpy(big + sizeof(big) - 4, "\"}}");
	}
	ok(ev(big) < 0, "oversized datagram refused");
}

static void test_config_roundtrip(void)
{
	char *paths[] = {(char *)"/v1/", (char *)"/info/refs"};
	plan_egress eg = {.host = (char *)"*.a.test",
			  .wildcard = true,
			  .ports = {8080},
			  .n_ports = 1,
			  .methods = HTTP_GET,
			  .paths = paths,
			  .n_paths = 2};
	plan_cidr cs = cidr("127.0.0.0", 8);
	plan_credential cr = {.host = (char *)"a.test",
			      .header = (char *)"Authorization",
			      .value_env = (char *)"PX_UNIT_SECRET",
			      .format = (char *)"Bearer %s",
			      .upstream_https = true,
			      .name = (char *)"a-key",
			      .max_requests = 3,
			      .rate = {2, 60000000000ull},
			      .max_bytes = PLAN_UNLIMITED,
			      .methods = HTTP_GET | HTTP_HEAD,
			      .paths = paths + 1,
			      .n_paths = 1,
			      .expires_ns = 5000000000ull};
	sc_plan plan = {.egress = &eg,
			.n_egress = 1,
			.allow_private = &cs,
			.n_allow_private = 1,
			.rate = {5, 1000000000ull},
			.bandwidth = PLAN_UNLIMITED,
			.max_request_body = 1024,
			.max_response_body = PLAN_UNLIMITED,
			.egress_budget = 1 << 20,
			.credentials = &cr,
			.n_credentials = 1,
			.dns = (char *)"127.0.0.1:53"};
	json_t *j = NULL;
	px_config *c = NULL;
	char *s;

	unsetenv("PX_UNIT_SECRET");
	ok(px_config_from_plan(&plan, &j) == -ENOKEY, "missing secret: -ENOKEY");
	setenv("PX_UNIT_SECRET", "tok", 1);
	ok(px_config_from_plan(&plan, &j) == 0, "config serialised");
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	ok(s && px_config_parse(s, strlen(s), &c) == 0, "config parsed back");
	ok(c && c->n_egress == 1 && c->egress[0].wildcard && c->egress[0].ports[0] == 8080 &&
	       c->egress[0].methods == HTTP_GET,
	   "egress round-trips");
	ok(c && c->n_allow_private == 1 && c->allow_private[0].prefix == 8, "CIDR round-trips");
	ok(c && c->rate.count == 5 && c->bandwidth == PLAN_UNLIMITED &&
	       c->max_request_body == 1024 && c->egress_budget == 1 << 20,
	   "limits round-trip");
	ok(c && c->n_creds == 1 && strcmp(c->creds[0].value, "Bearer tok") == 0 &&
	       c->creds[0].upstream_https,
	   "credential value formatted by the supervisor");
	ok(c && c->n_egress == 1 && c->egress[0].n_paths == 2 &&
	       strcmp(c->egress[0].paths[1], "/info/refs") == 0,
	   "egress paths round-trip");
	ok(c && c->n_creds == 1 && strcmp(c->creds[0].name, "a-key") == 0 &&
	       c->creds[0].max_requests == 3 && c->creds[0].rate.count == 2 &&
	       c->creds[0].rate.per_ns == 60000000000ull &&
	       c->creds[0].max_bytes == PLAN_UNLIMITED &&
	       c->creds[0].methods == (HTTP_GET | HTTP_HEAD) && c->creds[0].n_paths == 1 &&
	       strcmp(c->creds[0].paths[0], "/info/refs") == 0 &&
	       c->creds[0].expires_ns == 5000000000ull,
	   "credential limits round-trip");
	ok(c && c->dns && strcmp(c->dns, "127.0.0.1:53") == 0, "dns round-trips");
	px_config_free(c);
	free(s);
	c = NULL;
	ok(px_config_parse("{\"egress\":[]}", 12, &c) < 0, "incomplete config refused");
	unsetenv("PX_UNIT_SECRET");
}

/* The hand-written record is byte for byte what jansson makes of it. */
static void test_record(void)
{
	char all[128], buf[PX_EVENT_MAX_BYTES], small[40];
	json_t *d = json_object(), *root;
	char *want = NULL, *name = NULL;
	json_t *back = NULL;
	px_record r;
	int n;

	for (int i = 1; i < 128; i++)
		all[i - 1] = (char)i;
	all[127] = 0;
	px_record_start(&r, buf, sizeof(buf), "net.request");
	px_record_str(&r, "path", "/a\"b\\c?d=\"e\"");
	px_record_str(&r, "every ASCII byte", all);
	px_record_str(&r, "empty", "");
	px_record_uint(&r, "status", 0);
	px_record_uint(&r, "bytes_in", UINT64_C(9223372036854775807));
	px_record_uint(&r, "port", 8080);
	px_record_null(&r, "body_sha256");
	px_record_true(&r, "inspected");
	n = px_record_end(&r);
	(void)json_object_set_new(d, "path", json_string("/a\"b\\c?d=\"e\""));
	(void)json_object_set_new(d, "every ASCII byte", json_string(all));
	(void)json_object_set_new(d, "empty", json_string(""));
	(void)json_object_set_new(d, "status", json_integer(0));
	(void)json_object_set_new(d, "bytes_in", json_integer(INT64_MAX));
	(void)json_object_set_new(d, "port", json_integer(8080));
	(void)json_object_set_new(d, "body_sha256", json_null());
	(void)json_object_set_new(d, "inspected", json_true());
	root = json_pack("{s:s, s:o}", "event", "net.request", "data", d);
	want = json_dumps(root, JSON_COMPACT);
	ok(n > 0 && want && strcmp(buf, want) == 0,
	   "record: escapes, integers, null and true as json_dumps(JSON_COMPACT) writes them");
	free(want);
	json_decref(root);

	px_record_start(&r, buf, sizeof(buf), "net.request");
	px_record_str(&r, "method", "GET");
	px_record_uint(&r, "port", 80);
	n = px_record_end(&r);
	ok(n > 0 && px_event_parse(buf, (size_t)n, &name, &back) == 0 &&
	       strcmp(name, "net.request") == 0 &&
	       strcmp(json_string_value(json_object_get(back, "method")), "GET") == 0 &&
	       json_integer_value(json_object_get(back, "port")) == 80,
	   "record: the supervisor's parser takes it");
	free(name);
	json_decref(back);

	px_record_start(&r, buf, sizeof(buf), "net.request");
	px_record_str(&r, "path", "/caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	n = px_record_end(&r);
	d = json_pack("{s:s}", "path", "/caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	root = json_pack("{s:s, s:o}", "event", "net.request", "data", d);
	want = json_dumps(root, JSON_COMPACT);
	ok(n > 0 && want && strcmp(buf, want) == 0, "record: UTF-8 as json_dumps writes it");
	free(want);
	json_decref(root);
	/* a lone continuation byte, an overlong "/", a surrogate, a cut sequence */
	px_record_start(&r, buf, sizeof(buf), "net.request");
	px_record_str(&r, "path",
		      "/a\x80"
		      "b\xc0\xaf"
		      "c\xed\xa0\x80"
		      "d\xe2\x82");
	n = px_record_end(&r);
	ok(n > 0 &&
	       strstr(buf, "\"/a\\ufffdb\\ufffd\\ufffdc\\ufffd\\ufffd\\ufffdd\\ufffd\\ufffd\"") &&
	       px_event_parse(buf, (size_t)n, &name, &back) == 0,
	   "record: what is not UTF-8 is U+FFFD, byte by byte, and the record is kept");
	free(name);
	json_decref(back);
	name = NULL;
	back = NULL;
	px_record_start(&r, small, sizeof(small), "net.request");
	px_record_str(&r, "path", "/a-path-longer-than-the-buffer");
	ok(px_record_end(&r) == -EINVAL, "record: longer than its buffer fails, not cut");
}

static void test_event_queue(void)
{
	int sv[2], sent = 0, got = 0;
	px_events *e = NULL;
	char buf[PX_EVENT_MAX_BYTES + 1];
	int sndbuf = 4096;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ||
	    px_events_new(sv[0], &e) < 0) {
		ok(0, "event socket");
		return;
	}
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	/* more than the socket holds: the rest must queue, in order */
	for (int i = 0; i < 200; i++)
		if (px_events_emit(e, "limit.hit",
				   json_pack("{s:s, s:i}", "limit", "rate", "detail", i)) == 0)
			sent++;
	ok(sent == 200 && px_events_pending(e), "events beyond the socket buffer are queued");
	for (;;) {
		ssize_t n = recv(sv[1], buf, sizeof(buf) - 1, MSG_DONTWAIT);
		char *name = NULL;
		json_t *data = NULL;

		if (n <= 0) {
			if (px_events_flush(e) < 0 || !px_events_pending(e)) {
				n = recv(sv[1], buf, sizeof(buf) - 1, MSG_DONTWAIT);
				if (n <= 0)
					break;
			} else
				continue;
		}
		if (px_event_parse(buf, (size_t)n, &name, &data) == 0 &&
		    json_integer_value(json_object_get(data, "detail")) == got)
			got++;
		free(name);
		json_decref(data);
	}
	ok(got == 200, "every queued event arrives, in order, and validates");
	{
		char big[PX_EVENT_MAX_BYTES + 64], rbuf[PX_EVENT_MAX_BYTES + 1];
		char *name = NULL;
		json_t *data = NULL;
		px_record r;
		ssize_t n;

		/* one too long for a datagram: counted, and the count sent with the next */
		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		px_record_start(&r, rbuf, sizeof(rbuf), "net.request");
		px_record_str(&r, "path", big);
		ok(px_events_emit_record(e, &r) == 0, "a record too long is dropped, not cut");
		px_record_start(&r, rbuf, sizeof(rbuf), "net.request");
		px_record_str(&r, "method", "GET");
		ok(px_events_emit_record(e, &r) == 0 && px_events_sync(e) == 0, "the next is sent");
		n = recv(sv[1], buf, sizeof(buf) - 1, MSG_DONTWAIT);
		ok(n > 0 && px_event_parse(buf, (size_t)n, &name, &data) == 0 &&
		       json_integer_value(json_object_get(data, "events_dropped")) == 1,
		   "with \"events_dropped\": 1");
		free(name);
		json_decref(data);
	}
	close(sv[1]);
	ok(px_events_emit(e, "limit.hit", json_pack("{s:s}", "limit", "rate")) == -EPIPE,
	   "emit after the supervisor is gone: -EPIPE");
	px_events_free(e);
	close(sv[0]);
}

/* What the sandbox resolver answers: names a rule's host pattern matches. */
static void test_allow_name(void)
{
	plan_egress eg[3] = {{.host = (char *)"api.a.test"},
			     {.host = (char *)"*.b.test", .wildcard = true},
			     {.host = (char *)"10.0.0.0/8"}};
	px_config cfg = {.egress = eg, .n_egress = 3};
	char *name = NULL;
	json_t *data = NULL;
	static const char dns_ev[] =
	    "{\"event\":\"net.dns\",\"data\":{\"name\":\"x.test\",\"type\":\"A\","
	    "\"rcode\":\"NXDOMAIN\",\"answer\":\"\",\"rule\":\"\",\"reason\":\"name-not-allowed\"}"
	    "}";

	ok(px_allow_name(&cfg, "api.a.test") == 0, "an exact name is answered (rule 0)");
	ok(px_allow_name(&cfg, "x.y.b.test") == 1, "a name under *.b.test is answered (rule 1)");
	ok(px_allow_name(&cfg, "b.test") == -EACCES, "*.b.test does not cover b.test itself");
	ok(px_allow_name(&cfg, "10.0.0.0/8") == -EACCES && px_allow_name(&cfg, "a.test") == -EACCES,
	   "an IP-literal rule names no DNS name; other names are refused");
	ok(px_event_parse(dns_ev, strlen(dns_ev), &name, &data) == 0 &&
	       strcmp(name, "net.dns") == 0,
	   "the supervisor accepts a net.dns event");
	free(name);
	json_decref(data);
}

int main(void)
{
	test_allow_name();
	test_event_queue();
	test_record();
	test_events();
	test_config_roundtrip();
	test_private();
	test_cidr();
	test_match();
	test_reasons();
	test_buckets();
	test_format();
	return tap_done();
}
