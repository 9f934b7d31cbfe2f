/* SPDX-License-Identifier: MIT */
/* TAP tests for L7 path rules (normalising, prefix matching, the allowlist
 * with paths) and credential limits. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/path.h"
#include "proxy/allow.h"
#include "proxy/cred-limits.h"
#include "proxy/px.h"
#include "policy/http-path.h"
#include "tap.h"

#define SEC 1000000000ull

/* want NULL: refused, and the reason must contain why */
static void norm(const char *in, const char *want, const char *why)
{
	char out[256];
	const char *reason = "";
	int r = http_path_normalise(in, strlen(in), out, sizeof(out), &reason);

	if (want)
		ok(r >= 0 && strcmp(out, want) == 0 && (size_t)r == strlen(want),
		   "%s normalises to %s (got %s)", in, want, r >= 0 ? out : reason);
	else
		ok(r == -EINVAL && strstr(reason, why), "%s is refused: %s (got %d %s)", in, why, r,
		   r < 0 ? reason : out);
}

static void test_normalise(void)
{
	char big[5000], out[64];
	const char *reason = "";

	norm("", "/", NULL);
	norm("/", "/", NULL);
	norm("/v1/models", "/v1/models", NULL);
	norm("/v1/models?x=/../admin", "/v1/models", NULL);
	norm("/v1/../admin", "/admin", NULL);
	norm("/v1/%2e%2e/admin", "/admin", NULL);
	norm("/v1/%2E%2E/admin", "/admin", NULL);
	norm("/v1/.%2e/admin", "/admin", NULL);
	norm("/v1//x", "/v1/x", NULL);
	norm("//v1///x//", "/v1/x/", NULL);
	norm("/./v1/", "/v1/", NULL);
	norm("/v1/.", "/v1/", NULL);
	norm("/v1/..", "/", NULL);
	norm("/v1/x/../../y", "/y", NULL);
	norm("/v1/", "/v1/", NULL);
	norm("/v1", "/v1", NULL);
	norm("/%7Euser/%41%62c", "/~user/Abc", NULL);
	norm("/a%20b/%c3%a9", "/a%20b/%C3%A9", NULL);
	norm("/a%3fb", "/a%3Fb", NULL);
	norm("/...", "/...", NULL);
	norm("/..a/b..", "/..a/b..", NULL);
	norm("/a;x/b", "/a;x/b", NULL);
	norm("/v1/%2Fadmin", NULL, "encoded \"/\"");
	norm("/v1/%2fadmin", NULL, "encoded \"/\"");
	norm("/v1/%5cadmin", NULL, "encoded \"\\\"");
	norm("/v1\\..\\admin", NULL, "\"\\\"");
	norm("/v1/%00", NULL, "NUL");
	norm("/v1/%zz", NULL, "two hex digits");
	norm("/v1/%4", NULL, "two hex digits");
	norm("/v1/%", NULL, "two hex digits");
	norm("/..", NULL, "above the root");
	norm("/v1/../../admin", NULL, "above the root");
	norm("/%2e%2e/admin", NULL, "above the root");
	norm("/v1/..;/admin", NULL, "parameters");
	norm("/v1/.;x/admin", NULL, "parameters");
	norm("/v1/..%3b/admin", NULL, "parameters");
	norm("v1/x", NULL, "does not start");
	norm("*", NULL, "does not start");

	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = 0;
	ok(http_path_normalise(big, strlen(big), out, sizeof(out), &reason) == -ENAMETOOLONG,
	   "an overlong path does not fit: -ENAMETOOLONG");
	ok(http_path_normalise("/abc", 4, out, 4, &reason) == -ENAMETOOLONG &&
	       http_path_normalise("/abc", 4, out, 5, &reason) == 4,
	   "the output size counts the NUL");
	/* a long run of ".." stays bounded and refused */
	big[0] = '/';
	for (size_t i = 1; i + 3 < sizeof(big); i += 3)
		memcpy(big + i, "../", 3);
	ok(http_path_normalise(big, strlen(big), out, sizeof(out), &reason) == -EINVAL,
	   "a path of \"..\" segments is refused");
}

static void test_under(void)
{
	char *list[] = {(char *)"/v1/", (char *)"/info/refs"};

	ok(path_is_under("/v1/x", "/v1/") && path_is_under("/v1/", "/v1/") &&
	       !path_is_under("/v1", "/v1/"),
	   "prefix \"/v1/\": /v1/x and /v1/, not /v1");
	ok(path_is_under("/v1", "/v1") && path_is_under("/v1/x", "/v1") &&
	       !path_is_under("/v1x", "/v1") && !path_is_under("/v", "/v1"),
	   "prefix \"/v1\": /v1 and /v1/x, not /v1x");
	ok(path_is_under("/anything", "/") && path_is_under("/", "/"), "prefix \"/\" is all");
	ok(http_paths_allow(list, 0, "/x") && http_paths_allow(list, 0, NULL), "no list: any path");
	ok(http_paths_allow(list, 2, "/info/refs") && !http_paths_allow(list, 2, "/info/refsx") &&
	       !http_paths_allow(list, 2, "/admin") && !http_paths_allow(list, 2, NULL),
	   "a list: under one of them; a path that did not normalise is under none");
}

static void test_allow_paths(void)
{
	/* "clone but not push" on git smart HTTP */
	char *refs[] = {(char *)"/repo.git/info/refs"};
	char *pack[] = {(char *)"/repo.git/git-upload-pack"};
	char *v1[] = {(char *)"/v1/"};
	plan_egress eg[] = {
	    {.host = (char *)"git.test",
	     .ports = {80},
	     .n_ports = 1,
	     .methods = HTTP_GET,
	     .paths = refs,
	     .n_paths = 1},
	    {.host = (char *)"git.test",
	     .ports = {80},
	     .n_ports = 1,
	     .methods = HTTP_POST,
	     .paths = pack,
	     .n_paths = 1},
	    {.host = (char *)"open.test", .ports = {80}, .n_ports = 1},
	    {.host = (char *)"api.test",
	     .ports = {443},
	     .n_ports = 1,
	     .paths = v1,
	     .n_paths = 1,
	     .inspect = true},
	    {.host = (char *)"tunnel.test",
	     .ports = {443},
	     .n_ports = 1,
	     .paths = v1,
	     .n_paths = 1},
	};
	px_config cfg = {.egress = eg, .n_egress = 5};
	const char *reason = NULL;

	ok(px_allow_match_path(&cfg, "git.test", PX_HOST_NAME, 80, HTTP_GET, false,
			       "/repo.git/info/refs", &reason) == 0,
	   "GET info/refs: rule 0");
	ok(px_allow_match_path(&cfg, "git.test", PX_HOST_NAME, 80, HTTP_POST, false,
			       "/repo.git/git-upload-pack", &reason) == 1,
	   "POST git-upload-pack: rule 1");
	reason = NULL;
	ok(px_allow_match_path(&cfg, "git.test", PX_HOST_NAME, 80, HTTP_POST, false,
			       "/repo.git/git-receive-pack", &reason) == -EACCES &&
	       reason && strcmp(reason, "path-not-allowed") == 0,
	   "POST git-receive-pack (push): path-not-allowed");
	reason = NULL;
	ok(px_allow_match_path(&cfg, "git.test", PX_HOST_NAME, 80, HTTP_PUT, false,
			       "/repo.git/info/refs", &reason) == -EACCES &&
	       reason && strcmp(reason, "method-not-allowed") == 0,
	   "PUT: method-not-allowed");
	reason = NULL;
	ok(px_allow_match_path(&cfg, "git.test", PX_HOST_NAME, 80, HTTP_GET, false, NULL,
			       &reason) == -EACCES &&
	       reason && strcmp(reason, "path-not-allowed") == 0,
	   "a path that did not normalise: path-not-allowed");
	reason = NULL;
	ok(px_allow_match_path(&cfg, "git.test", PX_HOST_NAME, 80, HTTP_CONNECT, true, NULL,
			       &reason) == -EACCES,
	   "CONNECT to a host whose rules have paths is refused");
	ok(px_allow_match_path(&cfg, "open.test", PX_HOST_NAME, 80, HTTP_DELETE, false, NULL,
			       &reason) == 2,
	   "a rule without paths takes any path, even one that did not normalise");
	ok(px_allow_match(&cfg, "git.test", PX_HOST_NAME, 80, HTTP_POST, false, &reason) == 1,
	   "px_allow_match() alone does not look at paths");
	reason = NULL;
	ok(px_allow_match_path(&cfg, "api.test", PX_HOST_NAME, 443, HTTP_CONNECT, true, NULL,
			       &reason) == -EACCES &&
	       reason && strcmp(reason, "path-not-allowed") == 0,
	   "an inspected rule with paths refuses a CONNECT judged as a plain tunnel (its "
	   "decrypted requests are judged one by one)");
	reason = NULL;
	ok(px_allow_match_path(&cfg, "api.test", PX_HOST_NAME, 443, HTTP_GET, false, "/admin",
			       &reason) == -EACCES &&
	       reason && strcmp(reason, "path-not-allowed") == 0,
	   "... and one of them outside the paths is path-not-allowed");
	ok(px_allow_match_path(&cfg, "api.test", PX_HOST_NAME, 443, HTTP_GET, false, "/v1/models",
			       &reason) == 3,
	   "... one under them passes");
	ok(px_allow_match_path(&cfg, "tunnel.test", PX_HOST_NAME, 443, HTTP_CONNECT, true, NULL,
			       &reason) == -EACCES,
	   "the same rule not inspected refuses CONNECT");
}

static void test_cred_limits(void)
{
	char *v1[] = {(char *)"/v1/"};
	px_cred cr = {.name = (char *)"k",
		      .max_requests = 3,
		      .max_bytes = PLAN_UNLIMITED,
		      .methods = HTTP_ANY_METHOD,
		      .expires_ns = PLAN_UNLIMITED};
	px_cred_state st, saved;
	px_cred_use u = {.method_bit = HTTP_GET, .path = "/v1/x", .sized = true, .bytes = 100};
	const char *limit = NULL;
	char detail[256];
	int admitted = 0, r = 0;

	px_cred_state_init(&st, &cr, 0);
	for (int i = 0; i < 5; i++) {
		r = px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail));
		if (r == 0)
			admitted++;
		else
			break;
	}
	ok(admitted == 3 && r == 429 && strcmp(limit, "max_requests") == 0 && st.requests == 3,
	   "max_requests 3: three admitted, the fourth 429 max_requests (%s)", detail);

	/* a restart goes on with the count */
	saved = st;
	px_cred_state_resume(&st, &cr, &saved, 10 * SEC);
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 429,
	   "a restarted worker keeps the count");
	saved.requests = UINT64_MAX - 1;
	px_cred_state_resume(&st, &cr, &saved, 10 * SEC);
	ok(st.requests == 3, "... clamped to max_requests on take-over");

	cr.max_requests = PLAN_UNLIMITED;
	cr.max_bytes = 250;
	px_cred_state_init(&st, &cr, 0);
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 0,
	   "max_bytes 250: a 100-byte request fits");
	px_cred_bytes_sent(&st, 100);
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 0,
	   "a second 100-byte request fits (200 of 250)");
	px_cred_bytes_sent(&st, 100);
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 429 &&
	       strcmp(limit, "max_bytes") == 0,
	   "a third is refused up front: 300 > 250 (%s)", detail);
	ok(px_cred_bytes_room(&cr, &st, 100) == 50 && px_cred_bytes_room(&cr, &st, 10) == 10,
	   "the room left: 50 bytes");
	px_cred_bytes_sent(&st, 50);
	u.sized = false;
	u.bytes = 10;
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 429 &&
	       px_cred_bytes_room(&cr, &st, 100) == 0,
	   "spent: a chunked request is refused too");
	u.sized = true;
	u.bytes = 100;

	cr.max_bytes = PLAN_UNLIMITED;
	cr.methods = HTTP_GET | HTTP_HEAD;
	cr.paths = v1;
	cr.n_paths = 1;
	px_cred_state_init(&st, &cr, 0);
	u.method_bit = HTTP_POST;
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 403 &&
	       strcmp(limit, "methods") == 0 && strstr(detail, "POST"),
	   "methods GET, HEAD: POST 403 (%s)", detail);
	u.method_bit = HTTP_GET;
	u.path = "/admin";
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 403 &&
	       strcmp(limit, "paths") == 0,
	   "paths /v1/: /admin 403");
	u.path = NULL;
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 403,
	   "paths /v1/: a path that did not normalise 403");
	u.path = "/v1/models";
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 0 && st.requests == 1,
	   "GET /v1/models admitted; refusals counted nothing");

	cr.expires_ns = 30 * SEC;
	u.start_ns = 100 * SEC;
	u.now_ns = 129 * SEC;
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 0,
	   "expires 30 s: at 29 s admitted");
	u.now_ns = 130 * SEC;
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 403 &&
	       strcmp(limit, "expires") == 0,
	   "at 30 s expired (%s)", detail);

	cr.expires_ns = PLAN_UNLIMITED;
	cr.rate = (plan_rate){2, 60 * SEC};
	px_cred_state_init(&st, &cr, 0);
	u.now_ns = 0;
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 0 &&
	       px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 0 &&
	       px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 429 &&
	       strcmp(limit, "rate") == 0,
	   "rate 2/m: two, then 429 rate");
	u.now_ns = 30 * SEC;
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 0,
	   "after 30 s one more token");
	/* a restart does not refill the bucket */
	saved = st;
	px_cred_state_resume(&st, &cr, &saved, 31 * SEC);
	ok(px_cred_admit(&cr, &st, &u, &limit, detail, sizeof(detail)) == 429,
	   "a restarted worker does not refill the rate bucket");
}

int main(void)
{
	test_normalise();
	test_under();
	test_allow_paths();
	test_cred_limits();
	return tap_done();
}
