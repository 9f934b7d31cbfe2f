/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for capability tokens and plan intersection (TAP). Policies are
 * written with ' for " and @ for the test's temporary directory, which holds
 * the grant paths @/a, @/a/x, @/a/y, @/b, @/c, @/n, @/n/in and a key file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "policy/plan.h"
#include "tap.h"
#include "token/token.h"

static char tmpdir[] = "/tmp/test-token-XXXXXX";
static uint8_t key[TK_KEY_LEN];

#define IAT ((time_t)1800000000)
#define TTL 3600

/* ' -> " and @ -> tmpdir. Caller frees. */
static char *J(const char *s)
{
	size_t n = 1, tl = strlen(tmpdir), o = 0;
	char *out;

	for (const char *p = s; *p; p++)
		n += *p == '@' ? tl : 1;
	out = malloc(n);
	if (!out)
		abort();
	for (const char *p = s; *p; p++) {
		if (*p == '@') {
			memcpy(out + o, tmpdir, tl);
			o += tl;
		} else {
			out[o++] = *p == '\'' ? '"' : *p;
		}
	}
	out[o] = '\0';
	return out;
}

static sc_plan *P(const char *tmpl)
{
	_cleanup_free_ char *s = J(tmpl);
	sc_plan *p = NULL;
	sc_diag d = {};

	if (plan_parse(s, strlen(s), &p, &d) < 0) {
		printf("# test policy refused: %s: %s\n# %s\n", d.path, d.message, s);
		abort();
	}
	return p;
}

/* The caveat plan for a fragment template over parent. */
static sc_plan *F(const sc_plan *parent, const char *tmpl)
{
	_cleanup_free_ char *s = J(tmpl);
	json_auto_t *j = json_loads(s, 0, NULL);
	sc_plan *p = NULL;
	sc_diag d = {};

	if (!j || plan_apply_fragment(parent, j, &p, &d) < 0) {
		printf("# fragment refused: %s: %s\n# %s\n", d.path, d.message, s);
		abort();
	}
	return p;
}

static sc_plan *X(const sc_plan *a, const sc_plan *b)
{
	sc_plan *o = NULL;

	if (plan_intersect(a, b, &o) < 0)
		abort();
	return o;
}

static const plan_grant *grant(const sc_plan *p, const char *tmpl)
{
	_cleanup_free_ char *path = J(tmpl);

	for (size_t i = 0; i < p->n_grants; i++)
		if (strcmp(p->grants[i].path, path) == 0)
			return &p->grants[i];
	return NULL;
}

static const plan_egress *egress(const sc_plan *p, const char *host)
{
	for (size_t i = 0; i < p->n_egress; i++)
		if (strcmp(p->egress[i].host, host) == 0)
			return &p->egress[i];
	return NULL;
}

/* ---- hand-made tokens: the test holds the key, so it can sign anything ---- */

static char *b64(const void *in, size_t len)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const uint8_t *p = in;
	char *out = malloc(len * 4 / 3 + 4);
	size_t o = 0, i;

	if (!out)
		abort();
	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		out[o++] = a[v >> 18 & 63];
		out[o++] = a[v >> 12 & 63];
		out[o++] = a[v >> 6 & 63];
		out[o++] = a[v & 63];
	}
	if (len - i >= 1) {
		uint32_t v = (uint32_t)p[i] << 16 | (len - i == 2 ? (uint32_t)p[i + 1] << 8 : 0);

		out[o++] = a[v >> 18 & 63];
		out[o++] = a[v >> 12 & 63];
		if (len - i == 2)
			out[o++] = a[v >> 6 & 63];
	}
	out[o] = '\0';
	return out;
}

static void mac(const uint8_t *k, size_t klen, const char *data, uint8_t out[32])
{
	size_t n = 0;

	if (!EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, k, klen, (const uint8_t *)data,
		       strlen(data), out, 32, &n))
		abort();
}

/* Claims segment of tok + the given caveat JSONs, chained with the key. */
static char *forge(const char *tok, const char *const *caveats, size_t n)
{
	const char *c0 = tok + 4, *dot = strchr(c0, '.');
	size_t cap = strlen(tok) + 1;
	_cleanup_free_ char *claims = strndup(c0, (size_t)(dot - c0));
	uint8_t sig[32];
	char *out, *s;

	for (size_t i = 0; i < n; i++)
		cap += strlen(caveats[i]) * 2 + 8 + strlen(tmpdir) * 16;
	out = malloc(cap);
	if (!out || !claims)
		abort();
	mac(key, sizeof(key), claims, sig);
	snprintf(out, cap, "sc1.%s", claims);
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *cj = J(caveats[i]);
		_cleanup_free_ char *c64 = b64(cj, strlen(cj));

		mac(sig, sizeof(sig), c64, sig);
		strcat(out, ".");
		strcat(out, c64);
	}
	s = b64(sig, sizeof(sig));
	strcat(out, ".");
	strcat(out, s);
	free(s);
	return out;
}

static int verify(const char *tok, time_t now, sc_plan **ret, tk_info *info, sc_diag *d)
{
	sc_plan *p = NULL;
	int r = tk_verify(tok, key, now, &p, info, d);

	if (ret)
		*ret = p;
	else
		sc_plan_free(p);
	return r;
}

static char *mint(const sc_plan *p)
{
	char *tok = NULL;
	sc_diag d = {};

	if (tk_mint(p, key, "t1", IAT, TTL, &tok, &d) < 0) {
		printf("# mint: %s\n", d.message);
		abort();
	}
	return tok;
}

static char *attenuate(const char *tok, const char *tmpl, time_t exp, int *ret_r, sc_diag *d)
{
	_cleanup_free_ char *frag = tmpl ? J(tmpl) : NULL;
	char *out = NULL;

	*ret_r = tk_attenuate(tok, frag, frag ? strlen(frag) : 0, exp, &out, d);
	return out;
}

static const char *base_policy =
    "{'version':1,'name':'t','fs':{'grants':[{'path':'@/a','mode':'rw','at':'/work'},"
    "{'path':'@/b','mode':'ro'}],'workdir':'/work','tmp':{'size':'32M','inodes':1000}},"
    "'net':{'egress':[{'host':'api.example.com','ports':[443],'methods':['GET','POST']},"
    "{'host':'*.pythonhosted.org'}],'allow_private':['10.0.0.0/8'],'rate':'20/s',"
    "'credentials':[{'host':'api.example.com','header':'Authorization','value_env':'TOK',"
    "'format':'Bearer %s'}]},"
    "'limits':{'memory':'256M','cpu':0.5,'pids':64,'wall':'30s'},"
    "'env':{'LANG':'C.UTF-8','A':'1'},'audit':{'exec':true}}";

/* ---- tests ---- */

static void test_mint_verify(void)
{
	_cleanup_(sc_plan_freep) sc_plan *p = P(base_policy), *v = NULL;
	_cleanup_free_ char *tok = mint(p);
	tk_info info = {};
	sc_diag d = {};
	int r;

	ok(strncmp(tok, "sc1.", 4) == 0 && !strchr(tok, '=') && !strchr(tok, '+') &&
	       !strchr(tok, '/'),
	   "token is sc1. + base64url without padding");
	r = verify(tok, IAT + 10, &v, &info, &d);
	ok(r == 0 && plan_equal(v, p), "mint -> verify gives the policy's plan (r=%d %s)", r,
	   d.message);
	ok(strcmp(info.id, "t1") == 0 && info.iat == IAT && info.exp == IAT + TTL &&
	       info.n_caveats == 0,
	   "info: id, iat, exp, no caveats");
}

static void test_tamper_every_byte(const char *tok, const char *what)
{
	static const char alt[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ \n";
	size_t len = strlen(tok), tried = 0, accepted = 0;
	_cleanup_free_ char *m = strdup(tok);

	if (!m)
		abort();
	for (size_t i = 0; i < len; i++) {
		for (const char *c = alt; *c; c++) {
			if (*c == tok[i])
				continue;
			m[i] = *c;
			tried++;
			if (verify(m, IAT + 10, NULL, NULL, NULL) == 0) {
				if (accepted++ < 3)
					printf("# accepted: byte %zu -> '%c'\n", i, *c);
			}
		}
		m[i] = tok[i];
	}
	ok(accepted == 0, "%s: every change of every one of %zu bytes is refused (%zu variants)",
	   what, len, tried);
	/* Truncation and extension. */
	accepted = 0;
	for (size_t n = 0; n < len; n++) {
		m[n] = '\0';
		if (verify(m, IAT + 10, NULL, NULL, NULL) == 0)
			accepted++;
		m[n] = tok[n];
	}
	ok(accepted == 0, "%s: every truncation is refused", what);
}

static void test_refusals(void)
{
	_cleanup_(sc_plan_freep) sc_plan *p = P(base_policy);
	_cleanup_free_ char *tok = mint(p), *tampered = strdup(tok);
	uint8_t other[TK_KEY_LEN];
	sc_diag d = {};
	size_t mid = strlen(tok) / 2;
	int r;

	memcpy(other, key, sizeof(other));
	other[7] ^= 1;
	r = tk_verify(tok, other, IAT + 10, &(sc_plan *){NULL}, NULL, &d);
	ok(r == -EKEYREJECTED && strcmp(d.message, "token signature invalid") == 0,
	   "wrong key: token signature invalid (%s)", d.message);

	tampered[mid] = tampered[mid] == 'A' ? 'B' : 'A';
	r = verify(tampered, IAT + 10, NULL, NULL, &d);
	ok(r == -EKEYREJECTED && strcmp(d.message, "token signature invalid") == 0,
	   "tampered: token signature invalid");

	r = verify(tok, IAT + TTL, NULL, NULL, &d);
	ok(r == -EKEYEXPIRED && strstr(d.message, "token expired at 2027-01-15T") != NULL,
	   "expired at exp: %s", d.message);
	r = verify(tok, IAT + TTL + 1000000, NULL, NULL, &d);
	ok(r == -EKEYEXPIRED, "long expired");
	r = verify(tok, IAT + TTL - 1, NULL, NULL, &d);
	ok(r == 0, "valid one second before exp");

	static const char *const bad[] = {
	    "",
	    "sc1",
	    "sc1.",
	    "sc1..",
	    "sc2.AAAA.AAAA",
	    "sc1.AAAA",
	    "sc1.AAAA.AAAA",
	    "sc1.AA=A.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	    "sc1.AAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB", /* non-canonical tail */
	    "sc1.A.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		r = verify(bad[i], IAT, NULL, NULL, &d);
		ok(r == -EBADMSG && strncmp(d.message, "malformed token: ", 17) == 0,
		   "malformed \"%s\": %s", bad[i], d.message);
	}
}

/* A signed token whose claims are not a valid policy is refused as malformed,
 * after the signature check. */
static void test_signed_garbage(void)
{
	static const char *const claims[] = {
	    "not json",
	    "[]",
	    "{'v':2,'id':'x','iat':1,'exp':2,'policy':{}}",
	    "{'v':1,'id':'x','iat':5,'exp':2,'policy':{'version':1}}",
	    "{'v':1,'id':'x y','iat':1,'exp':2,'policy':{'version':1}}",
	    "{'v':1,'id':'x','iat':1,'exp':2,'policy':{'version':1},'extra':1}",
	};
	for (size_t i = 0; i < ELEMENTSOF(claims); i++) {
		_cleanup_free_ char *cj = J(claims[i]), *c64 = b64(cj, strlen(cj)), *s64 = NULL,
				    *tok = NULL;
		uint8_t sig[32];
		sc_diag d = {};
		int r;

		mac(key, sizeof(key), c64, sig);
		s64 = b64(sig, 32);
		if (asprintf(&tok, "sc1.%s.%s", c64, s64) < 0)
			abort();
		r = verify(tok, 1, NULL, NULL, &d);
		ok(r == -EBADMSG, "signed but malformed claims %zu refused: %s", i, d.message);
	}
}

static void test_attenuate_narrows(void)
{
	_cleanup_(sc_plan_freep) sc_plan *p = P(base_policy);
	_cleanup_free_ char *tok = mint(p);
	sc_plan *v = NULL;
	tk_info info = {};
	sc_diag d = {};
	char *t2;
	int r;

	/* Path dropped, rw -> ro. */
	t2 = attenuate(tok, "{'fs':{'grants':[{'path':'@/a','mode':'ro'}]}}", 0, &r, &d);
	ok(r == 0, "attenuate: keep @/a read-only (%s)", d.message);
	r = verify(t2, IAT + 10, &v, &info, &d);
	ok(r == 0 && v->n_grants == 1 && grant(v, "@/a") && grant(v, "@/a")->mode == GRANT_RO &&
	       strcmp(grant(v, "@/a")->at, "/work") == 0 && !grant(v, "@/b"),
	   "@/b dropped, @/a ro at /work (%s)", d.message);
	ok(r == 0 && v->n_egress == p->n_egress && v->memory == p->memory &&
	       v->n_credentials == 1 && v->n_env == 2 && v->tmp_inodes == 1000,
	   "fields the caveat omits are inherited");
	ok(info.n_caveats == 1, "one caveat");
	test_tamper_every_byte(t2, "attenuated token");
	{
		/* Dropping the caveat but keeping the final signature. */
		_cleanup_free_ char *cut = strdup(t2);
		char *last = strrchr(cut, '.'), *prev;

		*last = '\0';
		prev = strrchr(cut, '.');
		memmove(prev, last - cut + t2, strlen(last - cut + t2) + 1);
		ok(verify(cut, IAT + 10, NULL, NULL, NULL) == -EKEYREJECTED,
		   "removing a caveat is refused");
	}
	sc_plan_free(v);
	v = NULL;

	/* Host dropped, limit lowered; the credential goes with its host. */
	{
		_cleanup_free_ char *t3 =
		    attenuate(t2,
			      "{'net':{'egress':[{'host':'a.pythonhosted.org','ports':[443]}]},"
			      "'limits':{'memory':'128M','wall':'10s'}}",
			      0, &r, &d);

		ok(r == 0, "attenuate twice: one host, lower limits (%s)", d.message);
		r = verify(t3, IAT + 10, &v, &info, &d);
		ok(r == 0 && v->n_egress == 1 &&
		       strcmp(v->egress[0].host, "a.pythonhosted.org") == 0 &&
		       v->egress[0].n_ports == 1 && v->egress[0].ports[0] == 443 &&
		       !egress(v, "api.example.com") && v->n_credentials == 0,
		   "api.example.com and its credential dropped (%s)", d.message);
		ok(r == 0 && v->memory == 128ull << 20 && v->wall_ns == 10000000000ull &&
		       v->pids == 64 && v->n_grants == 1 && grant(v, "@/a")->mode == GRANT_RO,
		   "memory 128M, wall 10s, earlier caveat still applies");
		ok(info.n_caveats == 2, "two caveats");
		sc_plan_free(v);
		v = NULL;
	}

	/* A sub-path keeps the parent's mapping; the earlier expiry counts. */
	{
		_cleanup_free_ char *t4 = attenuate(
		    tok, "{'fs':{'grants':[{'path':'@/a/x','mode':'rw'}],'workdir':'/work/x'}}",
		    IAT + 100, &r, &d);

		ok(r == 0, "attenuate to a sub-path with an earlier expiry (%s)", d.message);
		r = verify(t4, IAT + 10, &v, &info, &d);
		ok(r == 0 && v->n_grants == 1 && grant(v, "@/a/x") &&
		       strcmp(grant(v, "@/a/x")->at, "/work/x") == 0 &&
		       grant(v, "@/a/x")->mode == GRANT_RW && strcmp(v->workdir, "/work/x") == 0,
		   "@/a/x rw at /work/x");
		ok(r == 0 && info.exp == IAT + 100 && v->wall_ns == 30000000000ull,
		   "exp is the caveat's; wall 30s < 90s left");
		sc_plan_free(v);
		v = NULL;
		r = verify(t4, IAT + 95, &v, &info, &d);
		ok(r == 0 && v->wall_ns == 5000000000ull, "remaining lifetime (5 s) caps wall");
		sc_plan_free(v);
		v = NULL;
		r = verify(t4, IAT + 100, NULL, NULL, &d);
		ok(r == -EKEYEXPIRED, "expired at the caveat's exp although the claims live on");
	}
	free(t2);
}

static void test_attenuate_refuses(void)
{
	_cleanup_(sc_plan_freep) sc_plan *p = P(base_policy);
	_cleanup_free_ char *tok = mint(p);
	static const struct {
		const char *frag;
		const char *reason;
	} cases[] = {
	    {"{'fs':{'grants':[{'path':'@/c','mode':'ro'}]}}", "is not inside the token's grants"},
	    {"{'fs':{'grants':[{'path':'@/b','mode':'rw'}]}}", "rw is read-only in the token"},
	    {"{'fs':{'grants':[{'path':'@/a/x','at':'/elsewhere'}]}}", "differs from where"},
	    {"{'fs':{'grants':[{'path':'@/a/x','at':'@/a/x'}]}}", "differs from where"},
	    {"{'net':{'egress':[{'host':'evil.example.com'}]}}", "is not allowed by the token"},
	    {"{'net':{'egress':[{'host':'api.example.com','ports':[80]}]}}",
	     "port 80 is not allowed"},
	    {"{'net':{'egress':[{'host':'api.example.com','ports':[443],'methods':['PUT']}]}}",
	     "method PUT"},
	    {"{'net':{'egress':[{'host':'*.example.org'}]}}", "not allowed by the token"},
	    {"{'net':{'allow_private':['192.168.0.0/16']}}", "allow_private"},
	    {"{'net':{'rate':'100/s'}}", "net.rate"},
	    {"{'net':{'credentials':[{'host':'api.example.com','header':'Authorization',"
	     "'value_env':'OTHER','format':'Bearer %s'}]}}",
	     "credential Authorization"},
	    {"{'net':{'credentials':[{'host':'api.example.com','placeholder_env':'KEY',"
	     "'value_env':'OTHER'}]}}",
	     "credential with the placeholder KEY for api.example.com is not"},
	    {"{'net':{'dns':'1.1.1.1'}}", "net.dns"},
	    {"{'limits':{'memory':'1G'}}", "limits.memory"},
	    {"{'limits':{'wall':null}}", "limits.wall"},
	    {"{'env':{'LANG':'C'}}", "env LANG"},
	    {"{'audit':{'exec':false}}", "audit.exec"},
	    {"{'best_effort':true}", "best_effort"},
	    {"{'identity':{'hostname':'other'}}", "hostname"},
	    {"{'identity':{'uid':0}}", "identity.uid and gid"},
	    {"{'spawn':{'max_children':100}}", "spawn.max_children"},
	};
	sc_diag d = {};
	char *t2;
	int r;

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_free_ char *frag = J(cases[i].frag);

		t2 = attenuate(tok, cases[i].frag, 0, &r, &d);
		ok(r == -EPERM && !t2 && strstr(d.message, cases[i].reason),
		   "attenuate refuses %s: %s", frag, d.message);
		free(t2);
	}
	t2 = attenuate(tok, "{'limits':{'memory':'256M'}}", 0, &r, &d);
	ok(r == -EINVAL && !t2 && strstr(d.message, "narrows nothing"), "no-op caveat: %s",
	   d.message);
	free(t2);
	t2 = attenuate(tok, NULL, IAT + TTL + 5, &r, &d);
	ok(r == -EPERM && !t2 && strstr(d.message, "not earlier"), "later expiry: %s", d.message);
	free(t2);
	t2 = attenuate(tok, "{'fs':{'grants':[{'path':'@/nope'}]}}", 0, &r, &d);
	ok(r < 0 && !t2 && strcmp(d.path, "$.fs.grants[0].path") == 0,
	   "fragment validated by the policy parser: %s: %s", d.path, d.message);
	free(t2);
	t2 = attenuate(tok, "{'fs':{'grant':[]}}", 0, &r, &d);
	ok(r < 0 && !t2 && strstr(d.message, "unknown key"), "unknown key in fragment: %s",
	   d.message);
	free(t2);
}

/* Caveats signed with a valid chain (by the test, which holds the key) that
 * try to widen: the effective set is exactly the parent's for those fields. */
static void test_forged_widening(void)
{
	_cleanup_(sc_plan_freep) sc_plan *p = P(base_policy);
	_cleanup_free_ char *tok = mint(p);
	static const char *const widen[] = {
	    /* every parent grant, @/b now rw, plus @/c */
	    "{'policy':{'fs':{'grants':[{'path':'@/a','mode':'rw','at':'/work'},"
	    "{'path':'@/b','mode':'rw'},{'path':'@/c','mode':'rw'}]}}}",
	    /* every parent host, more ports and methods, plus new hosts */
	    "{'policy':{'net':{'egress':[{'host':'api.example.com','ports':[443,80]},"
	    "{'host':'*.pythonhosted.org','ports':[80,443,8080]},{'host':'evil.com'},"
	    "{'host':'*.example.org'}],'allow_private':['10.0.0.0/8','0.0.0.0/0'],'rate':'1000/s',"
	    "'bandwidth':null,'upstream_ca':'@/ca.pem','dns':'9.9.9.9'}}}",
	    /* higher limits, later expiry */
	    "{'exp':4000000000,'policy':{'limits':{'memory':'1G','cpu':8,'pids':null,'wall':'1h',"
	    "'nofile':65536},'fs':{'tmp':{'size':'1G','inodes':100000}}}}",
	    /* relax auditing, allow degradation, add env, other name/hostname/runtime */
	    "{'policy':{'audit':{'exec':false,'denied_syscalls':false},'best_effort':true,"
	    "'env':{'LANG':'C.UTF-8','A':'1','LD_PRELOAD':'/x.so'},'name':'other',"
	    "'identity':{'hostname':'other'},'spawn':{'max_depth':8,'max_children':200}}}",
	    /* the credential read from another variable, sent over http */
	    "{'policy':{'net':{'credentials':[{'host':'api.example.com','header':'Authorization',"
	    "'value_env':'TOK','format':'Bearer %s','upstream':'http'}]}}}",
	};
	sc_plan *v = NULL;
	tk_info info = {};
	sc_diag d = {};
	int r;

	for (size_t i = 0; i < ELEMENTSOF(widen); i++) {
		_cleanup_free_ char *f = forge(tok, &widen[i], 1);

		r = verify(f, IAT + 10, &v, &info, &d);
		if (i == 4) {
			ok(r == 0 && v->n_credentials == 0,
			   "forged caveat %zu: a changed credential is dropped, not taken (%s)", i,
			   d.message);
		} else {
			ok(r == 0 && plan_equal(v, p),
			   "forged widening caveat %zu: effective set is exactly the parent's (%s)",
			   i, d.message);
		}
		if (i == 2)
			ok(info.exp == IAT + TTL, "a later caveat exp does not extend the token");
		if (r == 0 && !plan_equal(v, p) && i != 4) {
			_cleanup_free_ char *a = plan_to_json(v), *b = plan_to_json(p);

			printf("# got  %s\n# want %s\n", a, b);
		}
		sc_plan_free(v);
		v = NULL;
	}
	/* Stacked: a narrowing then a widening caveat. */
	{
		const char *two[] = {"{'policy':{'fs':{'grants':[{'path':'@/b'}]}}}",
				     "{'policy':{'fs':{'grants':[{'path':'@/a','mode':'rw'},"
				     "{'path':'@/b','mode':'rw'}]}}}"};
		_cleanup_free_ char *f = forge(tok, two, 2);

		r = verify(f, IAT + 10, &v, NULL, &d);
		ok(r == 0 && v->n_grants == 1 && grant(v, "@/b") &&
		       grant(v, "@/b")->mode == GRANT_RO,
		   "a later caveat cannot bring back what an earlier one dropped (%s)", d.message);
		sc_plan_free(v);
		v = NULL;
	}
	/* Too many caveats. */
	{
		const char *many[TK_MAX_CAVEATS + 1];
		_cleanup_free_ char *f = NULL;

		for (size_t i = 0; i < ELEMENTSOF(many); i++)
			many[i] = "{'exp':1800000100}";
		f = forge(tok, many, ELEMENTSOF(many));
		r = verify(f, IAT + 10, NULL, NULL, &d);
		ok(r == -EBADMSG && strstr(d.message, "caveats"), "more than %u caveats: %s",
		   TK_MAX_CAVEATS, d.message);
		free(f);
		f = forge(tok, many, TK_MAX_CAVEATS);
		r = verify(f, IAT + 10, NULL, &info, &d);
		ok(r == 0 && info.exp == IAT + 100 && info.n_caveats == TK_MAX_CAVEATS,
		   "exactly %u caveats accepted (%s)", TK_MAX_CAVEATS, d.message);
	}
	/* Caveat schema. */
	{
		const char *bad[] = {"{}", "{'policy':[]}", "{'exp':-1}", "{'nbf':1}", "[1]"};

		for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
			_cleanup_free_ char *f = forge(tok, &bad[i], 1);

			r = verify(f, IAT + 10, NULL, NULL, &d);
			ok(r == -EBADMSG, "signed caveat %s refused: %s", bad[i], d.message);
		}
	}
}

static void test_intersect(void)
{
	_cleanup_(sc_plan_freep) sc_plan *p = P(base_policy), *pp = X(p, p);
	sc_plan *a, *c, *o;

	ok(plan_equal(pp, p), "intersecting a plan with itself changes nothing");

	/* Nested grants: without @/n/in the rw @/n would uncover it. */
	a = P("{'version':1,'fs':{'grants':[{'path':'@/n','mode':'rw'},{'path':'@/n/"
	      "in','mode':'ro'}]}}");
	c = F(a, "{'fs':{'grants':[{'path':'@/n','mode':'rw'}]}}");
	o = X(a, c);
	ok(o->n_grants == 0, "a grant that would uncover a nested parent grant is dropped");
	{
		char why[256] = "";

		ok(plan_check_narrower(a, c, why, sizeof(why)) == -EPERM && strstr(why, "uncover"),
		   "and attenuate says why: %s", why);
	}
	sc_plan_free(o);
	sc_plan_free(c);
	c = F(a, "{'fs':{'grants':[{'path':'@/n','mode':'rw'},{'path':'@/n/in','mode':'rw'}]}}");
	o = X(a, c);
	ok(o->n_grants == 2 && grant(o, "@/n")->mode == GRANT_RW &&
	       grant(o, "@/n/in")->mode == GRANT_RO,
	   "listing both keeps both, the nested one read-only");
	sc_plan_free(o);
	sc_plan_free(c);
	c = F(a, "{'fs':{'grants':[{'path':'@/n/in','mode':'rw'}]}}");
	o = X(a, c);
	ok(o->n_grants == 1 && grant(o, "@/n/in")->mode == GRANT_RO,
	   "the nested grant alone: most specific parent decides the mode (ro)");
	sc_plan_free(o);
	sc_plan_free(c);
	sc_plan_free(a);

	/* A host path the parent hides under another mount stays hidden. */
	a = P("{'version':1,'fs':{'grants':[{'path':'@/a','mode':'rw','at':'/work'},"
	      "{'path':'@/b','mode':'ro','at':'/work/x'}]}}");
	c = F(a, "{'fs':{'grants':[{'path':'@/a/x','mode':'rw'},{'path':'@/a/y','mode':'rw'}]}}");
	o = X(a, c);
	ok(o->n_grants == 1 && grant(o, "@/a/y") && strcmp(grant(o, "@/a/y")->at, "/work/y") == 0,
	   "@/a/x, shadowed in the parent by @/b at /work/x, is dropped; @/a/y maps to /work/y");
	{
		char why[256] = "";

		ok(plan_check_narrower(a, c, why, sizeof(why)) == -EPERM &&
		       strstr(why, "is not inside the token's grants"),
		   "attenuate refuses the shadowed path: %s", why);
	}
	sc_plan_free(o);
	sc_plan_free(c);
	sc_plan_free(a);

	/* Egress paths: a caveat's paths meet the parent's; none in common: no rule. */
	a = P("{'version':1,'net':{'egress':[{'host':'git.test','paths':['/org/','/pub']}]}}");
	c = F(a, "{'net':{'egress':[{'host':'git.test','paths':['/org/repo.git/','/other/']}]}}");
	o = X(a, c);
	ok(o->n_egress == 1 && o->egress[0].n_paths == 1 &&
	       strcmp(o->egress[0].paths[0], "/org/repo.git/") == 0,
	   "paths: /org/repo.git/ under /org/ kept, /other/ dropped");
	ok(plan_check_narrower(a, c, NULL, 0) == -EPERM, "and /other/ is not narrower");
	sc_plan_free(o);
	sc_plan_free(c);
	c = F(a, "{'net':{'egress':[{'host':'git.test'}]}}");
	o = X(a, c);
	ok(o->n_egress == 1 && o->egress[0].n_paths == 2,
	   "a caveat rule without paths keeps the parent's paths");
	{
		char why[256] = "";

		ok(plan_check_narrower(a, c, why, sizeof(why)) == -EPERM &&
		       strstr(why, "fewer paths"),
		   "and is not narrower: %s", why);
	}
	sc_plan_free(o);
	sc_plan_free(c);
	c = F(a, "{'net':{'egress':[{'host':'git.test','paths':['/pub/x','/org/a/']}]}}");
	ok(plan_check_narrower(a, c, NULL, 0) == 0, "paths under the parent's are narrower");
	sc_plan_free(c);
	c = F(a, "{'net':{'egress':[{'host':'git.test','paths':['/private/']}]}}");
	o = X(a, c);
	ok(o->n_egress == 0, "no path in common: the rule is dropped");
	sc_plan_free(o);
	sc_plan_free(c);
	sc_plan_free(a);

	/* An inspected piece with paths is not dropped for a wider one not inspected. */
	a = P("{'version':1,'net':{'egress':[{'host':'api.test'}]}}");
	c = F(a, "{'net':{'egress':[{'host':'api.test','inspect':true,'paths':['/v1/']},"
		 "{'host':'api.test'}]}}");
	o = X(a, c);
	ok(o->n_egress == 2 && o->egress[0].inspect && o->egress[0].n_paths == 1 &&
	       !o->egress[1].inspect,
	   "inspect and paths: the inspected piece stays first, the other is kept");
	sc_plan_free(o);
	sc_plan_free(c);
	sc_plan_free(a);

	/* Egress: wildcards, ports, methods. */
	a = P("{'version':1,'net':{'egress':[{'host':'*.example.com','ports':[443,8443],"
	      "'methods':['GET','HEAD']},{'host':'api.other.com'},{'host':'10.1.2.3'}]}}");
	c = F(a, "{'net':{'egress':[{'host':'*.a.example.com','ports':[443,80]},"
		 "{'host':'b.example.com','methods':['POST','GET']},{'host':'example.com'},"
		 "{'host':'*.other.com'},{'host':'api.other.com','methods':['PUT']},"
		 "{'host':'10.1.2.3','ports':[22]}]}}");
	o = X(a, c);
	ok(o->n_egress == 3, "egress: %zu rules survive (want 3)", o->n_egress);
	ok(egress(o, "*.a.example.com") && egress(o, "*.a.example.com")->n_ports == 1 &&
	       egress(o, "*.a.example.com")->ports[0] == 443 &&
	       egress(o, "*.a.example.com")->methods == (HTTP_GET | HTTP_HEAD),
	   "narrower wildcard under a wider one: ports and methods intersected");
	ok(egress(o, "b.example.com") && egress(o, "b.example.com")->methods == HTTP_GET &&
	       egress(o, "b.example.com")->n_ports == 1,
	   "exact host under a wildcard: methods {GET} (POST dropped), port 443 only");
	ok(!egress(o, "example.com") && !egress(o, "*.other.com") && !egress(o, "10.1.2.3"),
	   "apex under *.domain, wildcard under exact, no common port: all dropped");
	ok(egress(o, "api.other.com") && egress(o, "api.other.com")->methods == HTTP_PUT,
	   "ANY in the parent keeps the caveat's methods");
	sc_plan_free(o);
	sc_plan_free(c);
	sc_plan_free(a);
	a = P("{'version':1,'net':{'egress':[{'host':'*.a.example.com'}]}}");
	c = F(a, "{'net':{'egress':[{'host':'*.example.com'},{'host':'*.a.example.com'},"
		 "{'host':'*.b.a.example.com'}]}}");
	o = X(a, c);
	ok(o->n_egress == 2 && !egress(o, "*.example.com") && egress(o, "*.b.a.example.com"),
	   "a wildcard survives only under an equal or wider wildcard");
	sc_plan_free(o);
	sc_plan_free(c);
	sc_plan_free(a);

	/* allow_private, rate, caps, audit. */
	a = P("{'version':1,'net':{'egress':[{'host':'x.com'}],'allow_private':['10.0.0.0/8',"
	      "'fd00::/8'],'rate':'1000/m','max_request_body':'1M'},'audit':{'fsync':'always'}}");
	c = F(a, "{'net':{'allow_private':['10.1.0.0/16','10.0.0.0/7','fd12::/16','11.0.0.0/8'],"
		 "'rate':'100/s','max_request_body':'2M'},'audit':{'fsync':'boundaries'}}");
	o = X(a, c);
	ok(o->n_allow_private == 2 && o->allow_private[0].prefix == 16 &&
	       o->allow_private[1].prefix == 16,
	   "allow_private: only sub-CIDRs of the parent's survive");
	ok(o->rate.count == 100 && o->rate.per_ns == 60000000000ull,
	   "rate 100/s vs 1000/m: 100/m, within both bursts and both refills");
	ok(o->max_request_body == 1u << 20 && o->audit_fsync == AUDIT_FSYNC_ALWAYS,
	   "body cap min, fsync stays always");
	sc_plan_free(o);
	sc_plan_free(c);
	c = F(a, "{'net':{'rate':'10/s'}}");
	o = X(a, c);
	ok(o->rate.count == 10 && o->rate.per_ns == 1000000000ull, "rate 10/s within 1000/m");
	sc_plan_free(o);
	sc_plan_free(c);
	c = F(a, "{'net':{'rate':null,'allow_private':[]}}");
	o = X(a, c);
	ok(o->rate.count == 1000 && o->n_allow_private == 0,
	   "unlimited rate keeps the parent's; empty allow_private drops all");
	sc_plan_free(o);
	sc_plan_free(c);
	sc_plan_free(a);

	/* Turning auditing on is allowed. */
	a = P("{'version':1,'audit':{'exec':false}}");
	c = F(a, "{'audit':{'exec':true}}");
	o = X(a, c);
	ok(o->audit_exec && plan_check_narrower(a, c, NULL, 0) == 0, "audit.exec can be turned on");
	sc_plan_free(o);
	sc_plan_free(c);
	sc_plan_free(a);

	/* Fragment merging: tmp string keeps inodes; egress without credentials. */
	{
		_cleanup_(sc_plan_freep) sc_plan *fc =
		    F(p, "{'fs':{'tmp':'16M'},'net':{'egress':[{'host':'a.pythonhosted.org'}]}}");

		ok(fc->tmp_size == 16u << 20 && fc->tmp_inodes == 1000,
		   "\"tmp\": \"16M\" in a fragment keeps the inherited inodes");
		ok(fc->n_credentials == 0 && fc->n_grants == 2,
		   "credentials for hosts the fragment's egress drops are not inherited");
	}
}

static void test_decode_and_mint_args(void)
{
	_cleanup_(sc_plan_freep) sc_plan *p = P(base_policy), *v = NULL;
	_cleanup_free_ char *tok = mint(p), *t2 = NULL, *bad = NULL;
	tk_decoded *dec = NULL;
	sc_diag d = {};
	int r;

	t2 = attenuate(tok, "{'limits':{'pids':8}}", IAT + 600, &r, &d);
	r = tk_decode(t2, &dec, &d);
	ok(r == 0 && dec->n_caveats == 1 && dec->info.exp == IAT + 600 &&
	       strstr(dec->claims_json, "\"id\":\"t1\"") &&
	       strstr(dec->caveats_json[0], "\"pids\":8") && dec->effective &&
	       dec->effective->pids == 8,
	   "decode (unverified): claims, caveat, effective set");
	ok(verify(t2, IAT + 10, &v, NULL, &d) == 0 && dec && plan_equal(v, dec->effective),
	   "decode's effective set equals the verified one");
	dec = tk_decoded_free(dec);

	ok(tk_mint(p, key, "bad id", IAT, TTL, &bad, &d) == -EINVAL && !bad,
	   "mint refuses id with a space");
	ok(tk_mint(p, key, NULL, IAT, 0, &bad, &d) == -EINVAL && !bad, "mint refuses ttl 0");
	ok(tk_mint(p, key, NULL, IAT, TK_MAX_TTL_S + 1, &bad, &d) == -EINVAL && !bad,
	   "mint refuses ttl above the limit");
	r = tk_mint(p, key, NULL, IAT, TTL, &bad, &d);
	r = r == 0 ? tk_decode(bad, &dec, &d) : r;
	ok(r == 0 && strlen(dec->info.id) == 32 && strspn(dec->info.id, "0123456789abcdef") == 32,
	   "default id is 128 random bits in hex (%s)", dec ? dec->info.id : "");
	tk_decoded_free(dec);
}

/* Checking an extension needs base's signature, never the key. */
static void test_extension(void)
{
	_cleanup_(sc_plan_freep) sc_plan *p = P(base_policy), *got = NULL;
	_cleanup_free_ char *root = mint(p), *base = NULL, *child = NULL, *grand = NULL,
			    *other = NULL, *forged = NULL, *cut = NULL;
	tk_info info = {};
	sc_diag d = {};
	int r;

	base = attenuate(root, "{'limits':{'memory':'128M'}}", 0, &r, &d);
	child = attenuate(base, "{'fs':{'grants':[{'path':'@/b','mode':'ro'}]}}", 0, &r, &d);
	grand = attenuate(child, "{'limits':{'pids':8}}", 0, &r, &d);
	other = attenuate(root, "{'limits':{'memory':'100M'}}", 0, &r, &d);
	forged = other ? attenuate(other, "{'limits':{'pids':8}}", 0, &r, &d) : NULL;
	if (!base || !child || !grand || !forged) {
		ok(false, "extension: attenuate: %s", d.message);
		return;
	}
	r = tk_verify_extension(base, child, IAT + 10, &got, &info, &d);
	ok(r == 0 && got && got->n_grants == 1 && got->memory == 128u << 20 &&
	       strcmp(info.id, "t1") == 0 && info.n_caveats == 2,
	   "an extension verifies without the key: the root's id, every caveat counted (%s)",
	   d.message);
	got = sc_plan_free(got);
	r = tk_verify_extension(base, grand, IAT + 10, &got, &info, &d);
	ok(r == 0 && got && got->pids == 8 && got->n_grants == 1 && info.n_caveats == 3,
	   "two levels down: the intersection of every caveat");
	got = sc_plan_free(got);
	r = tk_verify_extension(child, grand, IAT + 10, &got, NULL, &d);
	ok(r == 0, "an extension of an extension verifies against the nearer base");
	got = sc_plan_free(got);
	r = tk_verify_extension(base, forged, IAT + 10, &got, NULL, &d);
	ok(r == -EKEYREJECTED && strstr(d.message, "caveat 1 differs"),
	   "a prefix that differs is refused, though the root key signed it (%s)", d.message);
	ok(verify(forged, IAT + 10, NULL, NULL, NULL) == 0, "...which tk_verify accepts");
	r = tk_verify_extension(base, base, IAT + 10, &got, NULL, &d);
	ok(r == -EKEYREJECTED && strstr(d.message, "does not extend"),
	   "the base itself is not an extension (%s)", d.message);
	r = tk_verify_extension(child, base, IAT + 10, &got, NULL, &d);
	ok(r == -EKEYREJECTED, "a shorter token is not an extension (%s)", d.message);
	/* The grandchild's caveats under the child's signature as base's. */
	cut = strdup(grand);
	memcpy(strrchr(cut, '.') + 1, strrchr(base, '.') + 1, strlen(strrchr(base, '.') + 1));
	r = tk_verify_extension(base, cut, IAT + 10, &got, NULL, &d);
	ok(r == -EKEYREJECTED && strcmp(d.message, "token signature invalid") == 0,
	   "a wrong chain is refused: %s", d.message);
	r = tk_verify_extension(base, child, IAT + TTL, &got, NULL, &d);
	ok(r == -EKEYEXPIRED, "an expired extension is refused");
	ok(!got, "no plan on failure");
}

static void test_keys(void)
{
	_cleanup_free_ char *k = J("@/key"), *k2 = J("@/key2");
	uint8_t buf[TK_KEY_LEN], buf2[TK_KEY_LEN];
	struct stat st;
	sc_diag d = {};
	int fd, r;

	r = tk_key_generate(k);
	ok(r == 0 && stat(k, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_size == 32,
	   "keygen: 32 bytes, mode 0600");
	ok(tk_key_generate(k) == -EEXIST, "keygen refuses to overwrite");
	ok(tk_key_load(k, buf) == 0 && tk_key_load(k, buf2) == 0 && memcmp(buf, buf2, 32) == 0,
	   "key loads");
	(void)chmod(k, 0640);
	r = tk_key_load_diag(k, buf, &d);
	ok(r == -EACCES && strstr(d.message, "group or others"), "group-readable key refused: %s",
	   d.message);
	(void)chmod(k, 0604);
	ok(tk_key_load(k, buf) == -EACCES, "other-readable key refused");
	fd = open(k2, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, buf, 31) != 31)
		abort();
	close(fd);
	r = tk_key_load_diag(k2, buf, &d);
	ok(r == -EBADMSG && strstr(d.message, "31 bytes"), "31-byte key refused: %s", d.message);
	_cleanup_free_ char *ln = J("@/keylink");
	(void)chmod(k, 0600);
	if (symlink(k, ln) < 0)
		abort();
	ok(tk_key_load(ln, buf) == -ELOOP, "symlinked key refused");
}

static void mkd(const char *tmpl)
{
	_cleanup_free_ char *p = J(tmpl);

	if (mkdir(p, 0755) < 0)
		abort();
}

int main(void)
{
	_cleanup_free_ char *ca = NULL;
	int fd;

	if (!mkdtemp(tmpdir))
		return 99;
	mkd("@/a");
	mkd("@/a/x");
	mkd("@/a/y");
	mkd("@/b");
	mkd("@/c");
	mkd("@/n");
	mkd("@/n/in");
	ca = J("@/ca.pem");
	fd = open(ca, O_WRONLY | O_CREAT, 0644);
	if (fd < 0)
		return 99;
	close(fd);
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 7 + 1);

	test_mint_verify();
	{
		_cleanup_(sc_plan_freep) sc_plan *small = P("{'version':1}");
		_cleanup_free_ char *tok = mint(small);

		test_tamper_every_byte(tok, "minimal token");
	}
	test_refusals();
	test_signed_garbage();
	test_attenuate_narrows();
	test_attenuate_refuses();
	test_forged_widening();
	test_intersect();
	test_decode_and_mint_args();
	test_extension();
	test_keys();

	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			tap_diag("could not remove %s", tmpdir);
	}
	return tap_done();
}
