/* SPDX-License-Identifier: MIT */
/*
 * TAP tests for the pure parts of TLS inspection: the sandbox CA and its
 * leaves (verified with OpenSSL as a client would), placeholders (shape,
 * finding, replacing), origin-form requests inside a tunnel, and the
 * configuration round trip of the run's extras.
 */
#include <errno.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/plan.h"
#include "proxy/programs.h"
#include "proxy/ca.h"
#include "proxy/http.h"
#include "proxy/placeholder.h"
#include "proxy/proxy.h"
#include "proxy/px.h"
#include "tap.h"

/* Does leaf verify against ca alone for name, as a TLS client checks it? */
static int verify(X509 *ca, X509 *leaf, const char *name)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	int r = -1;

	if (st && ctx && X509_STORE_add_cert(st, ca) == 1 &&
	    X509_STORE_CTX_init(ctx, st, leaf, NULL) == 1) {
		X509_VERIFY_PARAM *p = X509_STORE_CTX_get0_param(ctx);

		(void)X509_VERIFY_PARAM_set_purpose(p, X509_PURPOSE_SSL_SERVER);
		if (name && strchr(name, ':') == NULL && (name[0] < '0' || name[0] > '9'))
			(void)X509_VERIFY_PARAM_set1_host(p, name, 0);
		else if (name)
			(void)X509_VERIFY_PARAM_set1_ip_asc(p, name);
		r = X509_verify_cert(ctx) == 1 ? 0 : X509_STORE_CTX_get_error(ctx);
	}
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	return r;
}

static X509 *pem_cert(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;

	BIO_free(b);
	return x;
}

static void test_ca(void)
{
	const char *names[] = {"api.example.com", "*.corp.test"};
	px_ca *ca = NULL, *back = NULL, *other = NULL;
	char *cert = NULL, *key = NULL, *other_key = NULL;
	X509 *leaf = NULL, *again = NULL, *root = NULL;
	EVP_PKEY *lk = NULL;
	bool minted = false;

	ok(px_ca_generate(3600, names, 2, &ca) == 0, "a CA is generated");
	if (!ca)
		return;
	ok(px_ca_cert_pem(ca, &cert) == 0 && strstr(cert, "BEGIN CERTIFICATE"),
	   "its certificate as PEM");
	ok(px_ca_key_pem(ca, &key) == 0 && strstr(key, "BEGIN PRIVATE KEY"), "its key as PEM");
	ok(px_ca_load(cert, key, &back) == 0, "the worker loads it back from the two PEMs");
	{
		px_ca *mismatch = NULL;

		ok(px_ca_generate(3600, NULL, 0, &other) == 0 &&
		       px_ca_key_pem(other, &other_key) == 0 &&
		       px_ca_load(cert, other_key, &mismatch) == -EINVAL && !mismatch,
		   "a key that is not the certificate's is refused");
	}
	root = pem_cert(cert);
	ok(root && X509_check_ca(root) == 1 &&
	       EVP_PKEY_get_id(X509_get0_pubkey(root)) == EVP_PKEY_EC,
	   "an EC CA certificate");
	ok(root && X509_cmp_time(X509_get0_notAfter(root), NULL) > 0 &&
	       X509_cmp_current_time(X509_get0_notAfter(root)) > 0,
	   "valid now");
	{
		time_t later = time(NULL) + 7200;

		ok(root && X509_cmp_time(X509_get0_notAfter(root), &later) < 0,
		   "and not beyond its lifetime");
	}
	ok(px_ca_leaf(back, "api.example.com", &leaf, &lk, &minted) == 0 && minted && lk,
	   "a leaf is minted for a host");
	ok(leaf && verify(root, leaf, "api.example.com") == 0,
	   "the leaf verifies against the CA for that name");
	ok(leaf && verify(root, leaf, "other.example.com") == X509_V_ERR_HOSTNAME_MISMATCH,
	   "and not for another name");
	ok(px_ca_leaf(back, "api.example.com", &again, &lk, &minted) == 0 && !minted &&
	       again == leaf,
	   "the second request for a host gets the cached leaf");
	ok(px_ca_leaf(back, "a.corp.test", &again, &lk, &minted) == 0 && minted &&
	       verify(root, again, "a.corp.test") == 0,
	   "a subdomain of a wildcard name verifies");
	ok(px_ca_leaf(back, "evil.test", &again, &lk, &minted) == 0 &&
	       verify(root, again, "evil.test") == X509_V_ERR_PERMITTED_VIOLATION,
	   "a leaf for a name outside the name constraints does not verify");
	ok(px_ca_leaf(back, "", &again, &lk, &minted) == -EINVAL, "an empty host is refused");
	{
		px_ca *ipca = NULL;
		const char *ip[] = {"10.1.2.3"};

		ok(px_ca_generate(3600, ip, 1, &ipca) == 0 &&
		       px_ca_leaf(ipca, "10.1.2.3", &again, &lk, &minted) == 0,
		   "an IP literal gets an IP SAN (and no name constraints)");
		if (ipca) {
			char *ipem = NULL;
			X509 *iroot = NULL;

			(void)px_ca_cert_pem(ipca, &ipem);
			iroot = ipem ? pem_cert(ipem) : NULL;
			ok(iroot && verify(iroot, again, "10.1.2.3") == 0,
			   "which verifies for the address");
			X509_free(iroot);
			free(ipem);
		}
		px_ca_free(ipca);
	}
	X509_free(root);
	px_ca_free(ca);
	px_ca_free(back);
	px_ca_free(other);
	free(cert);
	free(key);
	free(other_key);
}

static void test_placeholder(void)
{
	char a[PX_PLACEHOLDER_MAX + 1], b[PX_PLACEHOLDER_MAX + 1];
	px_cred creds[2] = {
	    {.host = (char *)"api.x.test",
	     .placeholder = a,
	     .secret = (char *)"REAL-A",
	     .placeholder_env = (char *)"OPENAI_API_KEY"},
	    {.host = (char *)"git.x.test",
	     .placeholder = b,
	     .secret = (char *)"REAL-LONGER-B",
	     .placeholder_env = (char *)"GITHUB_TOKEN",
	     .in_query = true},
	};
	px_config cfg = {.creds = creds, .n_creds = 2, .has_placeholders = true};
	char other[PX_PLACEHOLDER_MAX + 1];
	char *head;
	size_t len;

	ok(px_placeholder_make("OPENAI_API_KEY", a, sizeof(a)) == 0 &&
	       strncmp(a, "sk-proj-", 8) == 0 && strlen(a) == 8 + 48,
	   "an OpenAI placeholder looks like a project key: %s", a);
	ok(px_placeholder_make("GITHUB_TOKEN", b, sizeof(b)) == 0 && strncmp(b, "ghp_", 4) == 0 &&
	       strlen(b) == 40,
	   "a GitHub one like a personal token");
	ok(px_placeholder_make("ANTHROPIC_API_KEY", other, sizeof(other)) == 0 &&
	       strncmp(other, "sk-ant-api03-", 13) == 0,
	   "an Anthropic one like an API key");
	ok(px_placeholder_make("MY_SERVICE", other, sizeof(other)) == 0 && strlen(other) == 40 &&
	       strspn(other, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") ==
		   40,
	   "anything else: 40 random letters and digits");
	{
		char again[PX_PLACEHOLDER_MAX + 1];

		ok(px_placeholder_make("MY_SERVICE", again, sizeof(again)) == 0 &&
		       strcmp(again, other) != 0,
		   "two placeholders differ");
	}
	ok(px_placeholder_make("OPENAI_API_KEY", other, 20) == -ENOBUFS,
	   "a short buffer is refused");

	ok(px_placeholder_find(&cfg, "nothing here", 12) == NULL, "no placeholder, none found");
	if (asprintf(&head, "GET /x?t=%s HTTP/1.1\r\nAuthorization: Bearer %s\r\n\r\n", b, a) < 0)
		return;
	ok(px_placeholder_find(&cfg, head, strlen(head)) == &creds[0], "the first one found");

	len = strlen(head);
	ok(px_placeholder_replace(&cfg, "api.x.test", &head, &len) == 1 &&
	       strcmp(head, "GET /x?t=") != 0 && strstr(head, "Authorization: Bearer REAL-A\r\n") &&
	       strstr(head, b) && len == strlen(head),
	   "for its host: the header replaced, another credential's placeholder kept");
	free(head);
	if (asprintf(&head, "GET /x?t=%s&u=%s HTTP/1.1\r\nX-T: %s\r\nX-A: %s\r\n\r\n", b, b, b, a) <
	    0)
		return;
	len = strlen(head);
	ok(px_placeholder_replace(&cfg, "git.x.test", &head, &len) == 3 &&
	       strstr(head, "GET /x?t=REAL-LONGER-B&u=REAL-LONGER-B HTTP/1.1\r\n") == head &&
	       strstr(head, "\r\nX-T: REAL-LONGER-B\r\n") && strstr(head, a) && len == strlen(head),
	   "with in_query: the query string too, every occurrence");
	free(head);
	if (asprintf(&head, "GET /%s HTTP/1.1\r\nX: 1\r\n\r\n", b) < 0)
		return;
	len = strlen(head);
	ok(px_placeholder_replace(&cfg, "git.x.test", &head, &len) == 0 && strstr(head, b),
	   "the path is not the query: left alone");
	free(head);
	len = 0;
	head = strdup("GET / HTTP/1.1\r\n\r\n");
	len = strlen(head);
	ok(px_placeholder_replace(&cfg, "elsewhere.test", &head, &len) == 0 &&
	       strcmp(head, "GET / HTTP/1.1\r\n\r\n") == 0,
	   "another host: nothing replaced");
	free(head);

	/* the request's credential: the one whose placeholder would be replaced */
	if (asprintf(&head, "GET /x?t=%s HTTP/1.1\r\nX: %s\r\n\r\n", a, b) < 0)
		return;
	ok(px_placeholder_used(&cfg, "api.x.test", head, strlen(head)) == NULL,
	   "used: the query of a credential without in_query is not its use");
	ok(px_placeholder_used(&cfg, "git.x.test", head, strlen(head)) == &creds[1],
	   "used: a header carrying it is");
	free(head);
	if (asprintf(&head, "GET /x?t=%s HTTP/1.1\r\n\r\n", b) < 0)
		return;
	ok(px_placeholder_used(&cfg, "git.x.test", head, strlen(head)) == &creds[1] &&
	       px_placeholder_used(&cfg, "api.x.test", head, strlen(head)) == NULL,
	   "used: the query with in_query, for its host only");
	free(head);
	if (asprintf(&head, "GET / HTTP/1.1\r\nA: %s\r\nB: %s\r\n\r\n", a, b) < 0)
		return;
	creds[1].host = (char *)"api.x.test";
	len = strlen(head);
	ok(px_placeholder_replace_one(&creds[1], &head, &len) == 1 && strstr(head, a) &&
	       strstr(head, "B: REAL-LONGER-B\r\n") && len == strlen(head),
	   "replace_one: that credential's placeholder only, another of the host kept");
	creds[1].host = (char *)"git.x.test";
	free(head);
}

static void test_origin_form(void)
{
	px_origin o = {.host = "api.x.test", .host_kind = PX_HOST_NAME, .port = 443};
	const char *reason = NULL;
	px_request req;
	char *head = NULL;
	size_t hl = 0;
	const char *ok1 =
	    "POST /v1/chat?x=1 HTTP/1.1\r\nHost: api.x.test\r\nContent-Length: 2\r\n\r\n";
	int r = px_http_parse_origin_request(ok1, strlen(ok1), &o, &req, &reason);

	ok(r == (int)strlen(ok1) && req.target_kind == PX_TARGET_ORIGIN &&
	       strcmp(req.host, "api.x.test") == 0 && req.port == 443 && req.content_length == 2 &&
	       req.path.len == strlen("/v1/chat?x=1"),
	   "an origin-form request inside a tunnel takes the tunnel's host and port");
	ok(px_http_build_upstream_head(ok1, &req, NULL, NULL, &head, &hl) == 0 &&
	       strncmp(head, "POST /v1/chat?x=1 HTTP/1.1\r\nHost: api.x.test\r\n", 46) == 0,
	   "the upstream head names the host without the default 443");
	free(head);
#define BAD(s, want, what)                                                                         \
	ok(px_http_parse_origin_request(s, strlen(s), &o, &req, &reason) == (want), what)
	BAD("GET /x HTTP/1.1\r\nHost: api.x.test:443\r\n\r\n", 41, "Host with the explicit port");
	BAD("GET /x HTTP/1.1\r\nHost: other.test\r\n\r\n", -400, "Host naming another host: 400");
	BAD("GET /x HTTP/1.1\r\nHost: api.x.test:8443\r\n\r\n", -400,
	    "Host with another port: 400");
	BAD("GET /x HTTP/1.1\r\n\r\n", -400, "HTTP/1.1 without Host: 400");
	BAD("GET http://api.x.test/x HTTP/1.1\r\nHost: api.x.test\r\n\r\n", -400,
	    "an absolute URI inside the tunnel: 400");
	BAD("CONNECT api.x.test:443 HTTP/1.1\r\nHost: api.x.test\r\n\r\n", -400,
	    "CONNECT inside the tunnel: 400");
	BAD("GET * HTTP/1.1\r\nHost: api.x.test\r\n\r\n", -400, "asterisk-form: 400");
#undef BAD
	ok(px_http_parse_request(ok1, strlen(ok1), &req, &reason) == -400,
	   "outside a tunnel origin-form stays refused");
}

static void test_config(void)
{
	const char *json = NULL;
	px_config *c = NULL;
	static const char cfg_json[] =
	    "{\"egress\":[{\"host\":\"a.test\",\"wildcard\":false,\"ports\":[443],\"methods\":0,"
	    "\"paths\":[],\"inspect\":true}],\"allow_private\":[],\"credentials\":[{\"host\":"
	    "\"a.test\",\"header\":null,\"value\":null,\"upstream_https\":true,\"name\":"
	    "\"a.test\",\"max_requests\":null,\"rate_count\":0,\"rate_per_ns\":0,\"max_bytes\":"
	    "null,\"methods\":0,\"paths\":[],\"expires_ns\":null,\"placeholder_env\":\"K\","
	    "\"placeholder\":\"ph\",\"secret\":\"real\",\"in_query\":true}],\"rate_count\":0,"
	    "\"rate_per_ns\":0,\"bandwidth\":null,\"max_request_body\":null,\"max_response_body\":"
	    "null,\"egress_budget\":null,\"upstream_ca\":null,\"dns\":null,\"ca_cert\":null,"
	    "\"ca_key\":null,\"parent_pid\":1}";

	json = cfg_json;
	ok(px_config_parse(json, strlen(json), &c) == 0 && c->egress[0].inspect &&
	       c->has_placeholders && !c->creds[0].header && c->creds[0].in_query &&
	       strcmp(c->creds[0].secret, "real") == 0,
	   "a placeholder-only credential and an inspected rule parse");
	px_config_free(c);
	c = NULL;
	{
		char *bad = strdup(cfg_json);
		char *p = strstr(bad, "\"placeholder\":\"ph\",");

		/* no header and no placeholder: nothing to do with the secret */
		memcpy(p, "\"placeholdeX\":\"ph\",", 19);
		ok(px_config_parse(bad, strlen(bad), &c) == -EINVAL,
		   "a credential with neither header nor placeholder is refused");
		free(bad);
	}
}

/* Supervisor side: the run's extras into the sealed configuration and back. */
static void test_extras(void)
{
	static const char pol[] =
	    "{\"version\": 1, \"net\": {\"egress\": [{\"host\": \"api.x.test\"}],"
	    "\"credentials\": [{\"host\": \"api.x.test\", \"placeholder_env\": "
	    "\"OPENAI_API_KEY\", \"value_env\": \"PX_UNIT_REAL\"}]}}";
	sc_plan *plan = NULL;
	px_extras *x = NULL;
	px_config *c = NULL;
	json_t *j = NULL;
	char *s = NULL;
	const char *env;

	if (plan_parse_json(pol, strlen(pol), &plan, NULL) < 0) {
		ok(false, "test policy parses");
		return;
	}
	setenv("PX_UNIT_REAL", "the-real-value", 1);
	ok(px_extras_new(plan, &x) == 0 && px_extras_ca_pem(x) && px_extras_ca_key(x),
	   "a placeholder credential gets the run a CA");
	env = px_extras_env(x, 0);
	ok(env && strncmp(env, "OPENAI_API_KEY=sk-proj-", 23) == 0 && !px_extras_env(x, 1),
	   "and one placeholder variable for the agent");
	ok(px_config_from_run(plan, x, &j) == 0 && (s = json_dumps(j, JSON_COMPACT)) &&
	       px_config_parse(s, strlen(s), &c) == 0,
	   "the configuration with them round-trips");
	ok(c && c->ca_cert && c->ca_key && c->creds[0].placeholder && env &&
	       strcmp(c->creds[0].placeholder, env + strlen("OPENAI_API_KEY=")) == 0 &&
	       strcmp(c->creds[0].secret, "the-real-value") == 0 && !c->creds[0].header,
	   "the worker gets the same placeholder, the real value and the CA");
	px_config_free(c);
	json_decref(j);
	free(s);
	j = NULL;
	ok(px_config_from_plan(plan, &j) == -EINVAL && !j,
	   "a placeholder credential without the run's extras is refused");
	setenv("PX_UNIT_REAL", "tab\there", 1);
	ok(px_config_from_run(plan, x, &j) == -EINVAL,
	   "a real value with a control character is refused");
	px_extras_forget_key(x);
	ok(!px_extras_ca_key(x) && px_extras_ca_pem(x),
	   "the key is forgotten, the certificate kept");
	unsetenv("PX_UNIT_REAL");
	px_extras_free(x);
	sc_plan_free(plan);
}

int main(void)
{
	px_in_process(); /* the CA is made here, as in sandcap-main */
	test_ca();
	test_placeholder();
	test_origin_form();
	test_config();
	test_extras();
	return tap_done();
}
