/* SPDX-License-Identifier: MIT */
/*
 * The policy parser: JSON (DESIGN.md section 4) -> validated, immutable sc_plan.
 *
 * Everything here treats its input as hostile: every count has a named limit,
 * every string a length limit, every key is known or refused. On failure the
 * diagnostic names the JSON path of the offending value and says what was
 * expected and what was found, in a form that reads well after "FILE: ".
 *
 * Canonical input forms accepted beyond the human ones (so that the output of
 * plan_to_json() parses back to an equal plan):
 *   - sizes may be JSON integers, meaning bytes (same as the digits string);
 *   - null is accepted where the default is "unlimited" or "none" (the limits,
 *     net.rate, net.bandwidth, the body caps, net.egress_budget,
 *     net.upstream_ca, net.dns) and means exactly that default;
 *   - an egress "methods" list naming every method means "any method".
 * Durations are never integers (a bare number has no unit that makes sense);
 * the canonical form writes them as "<N>ms".
 *
 * Filesystem access: lstat-like checks only (open with O_PATH|O_NOFOLLOW and
 * fstat), no writes, so the parser can be fuzzed.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/parse-num.h"
#include "policy/plan.h"
#include "policy/agent-env.h"
#include "policy/policy-internal.h"

/* Limits of single values, beyond the counts in plan.h. */
#define POLICY_MAX_CPU		  1024u	       /* cores */
#define POLICY_MIN_MEMORY	  (4ull << 20) /* below this nothing useful starts */
#define POLICY_MAX_PIDS		  4194304u     /* PID_MAX_LIMIT, include/linux/threads.h */
#define POLICY_MAX_NOFILE	  1048576u     /* default fs.nr_open */
#define POLICY_MAX_TMP_INODES	  (1ull << 32)
#define POLICY_MAX_SPAWN_DEPTH	  8u
#define POLICY_MAX_SPAWN_CHILDREN 256u
#define POLICY_MAX_NAME		  64u
#define POLICY_MAX_HOSTNAME	  64u /* HOST_NAME_MAX */
#define POLICY_MAX_DNS_NAME	  253u
#define POLICY_MAX_HEADER	  256u

#define PLAN_DEFAULT_TMP_SIZE	    (64ull << 20)
#define PLAN_DEFAULT_TMP_INODES	    8192u
#define PLAN_DEFAULT_NOFILE	    1024u
#define PLAN_DEFAULT_SPAWN_CHILDREN 8u

const char *const plan_method_names[] = {
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT",
};

/* Headers that frame or route the request: injecting them would let a policy
 * desynchronise the proxy and the origin. */
static const char *const reserved_headers[] = {
    "Host",    "Content-Length", "Transfer-Encoding", "Connection",	     "Upgrade", "TE",
    "Trailer", "Keep-Alive",	 "Proxy-Connection",  "Proxy-Authorization", "Expect",
};

typedef struct pctx {
	char path[1024]; /* JSON path of the value being parsed */
	size_t plen;
	sc_diag *diag;
} pctx;

/* ---- diagnostics ---- */

static size_t path_push(pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t path_push(pctx *c, const char *fmt, ...)
{
	size_t saved = c->plen;
	va_list ap;
	int n;

	if (c->plen >= sizeof(c->path) - 1)
		return saved;
	va_start(ap, fmt);
	n = vsnprintf(c->path + c->plen, sizeof(c->path) - c->plen, fmt, ap);
	va_end(ap);
	if (n < 0)
		c->path[c->plen] = '\0';
	else if ((size_t)n >= sizeof(c->path) - c->plen)
		c->plen = sizeof(c->path) - 1;
	else
		c->plen += (size_t)n;
	return saved;
}

static void path_pop(pctx *c, size_t saved)
{
	c->plen = saved;
	c->path[saved] = '\0';
}

/*
 * ASCII classes: <ctype.h> depends on the locale the CLI may set, and a byte
 * that is a letter in Latin-1 must not become valid in a host name.
 */
static bool a_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool a_alpha(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static bool a_alnum(char ch)
{
	return a_alpha(ch) || a_digit(ch);
}

static char a_lower(char ch)
{
	return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

static bool is_ident(const char *s)
{
	if (!(a_alpha(*s) || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!(a_alnum(*s) || *s == '_'))
			return false;
	return true;
}

/* Writes s quoted as a JSON string, control characters escaped, cut at max
 * characters with "..." so that hostile input cannot flood a terminal. */
static void quote(const char *s, size_t max, char *buf, size_t size)
{
	size_t o = 0, i;

	if (size < 16) {
		if (size)
			buf[0] = '\0';
		return;
	}
	buf[o++] = '"';
	for (i = 0; s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];

		/* Room for the longest escape (6), "..." and the closing quote. */
		if (i >= max || o + 12 >= size) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (ch == '"' || ch == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			o += (size_t)snprintf(buf + o, size - o, "\\u%04x", ch);
		} else {
			buf[o++] = (char)ch;
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
}

static size_t path_push_key(pctx *c, const char *key)
{
	char q[160];

	if (is_ident(key) && strlen(key) <= 64)
		return path_push(c, ".%s", key);
	quote(key, 64, q, sizeof(q));
	return path_push(c, "[%s]", q);
}

static size_t path_push_index(pctx *c, size_t i)
{
	return path_push(c, "[%zu]", i);
}

/* What was found, for "got ...". */
static void describe_json(const json_t *v, char *buf, size_t size)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		quote(json_string_value(v), 64, buf, size);
		return;
	case JSON_INTEGER:
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return;
	case JSON_REAL:
		snprintf(buf, size, "%g", json_real_value(v));
		return;
	case JSON_TRUE:
		snprintf(buf, size, "true");
		return;
	case JSON_FALSE:
		snprintf(buf, size, "false");
		return;
	case JSON_NULL:
		snprintf(buf, size, "null");
		return;
	case JSON_ARRAY:
		snprintf(buf, size, "an array");
		return;
	case JSON_OBJECT:
		snprintf(buf, size, "an object");
		return;
	}
	snprintf(buf, size, "an unknown value");
}

static void diag_set(pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void diag_set(pctx *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->diag)
		return;
	memset(c->diag, 0, sizeof(*c->diag));
	if (c->plen < sizeof(c->diag->path)) {
		memcpy(c->diag->path, c->path, c->plen + 1);
	} else {
		/* Keep the tail: it names the offending key. */
		size_t keep = sizeof(c->diag->path) - 4;

		memcpy(c->diag->path, "...", 3);
		memcpy(c->diag->path + 3, c->path + c->plen - keep, keep + 1);
	}
	va_start(ap, fmt);
	(void)vsnprintf(c->diag->message, sizeof(c->diag->message), fmt, ap);
	va_end(ap);
}

/*
 * Fills the diagnostic and evaluates to err, which is always negative
 * (callers test r < 0). A macro so that err is read before the message is
 * formatted (it may be -errno) and so that analysers see the return value.
 */
#define fail(c, err, ...)                                                                          \
	({                                                                                         \
		int _e = (err);                                                                    \
		diag_set((c), __VA_ARGS__);                                                        \
		_e < 0 ? _e : -EINVAL;                                                             \
	})

/* "expected WHAT, got FOUND" */
static int fail_expected(pctx *c, const json_t *v, const char *what)
{
	char got[160];

	describe_json(v, got, sizeof(got));
	return fail(c, -EINVAL, "expected %s, got %s", what, got);
}

/*
 * An array of at most max items, each elem_size bytes: checks the type and
 * the limit and allocates zeroed storage (NULL for an empty array).
 */
static int want_array(pctx *c, json_t *x, const char *items, size_t max, size_t elem_size,
		      void **ret, size_t *ret_n)
{
	char what[64];
	size_t n;

	if (!json_is_array(x)) {
		(void)snprintf(what, sizeof(what), "an array of %s", items);
		return fail_expected(c, x, what);
	}
	n = json_array_size(x);
	if (n > max)
		return fail(c, -E2BIG, "%zu %s, more than the limit of %zu", n, items, max);
	*ret = NULL;
	if (n) {
		*ret = calloc(n, elem_size);
		if (!*ret)
			return -ENOMEM;
	}
	*ret_n = n;
	return 0;
}

/* ---- primitive values ---- */

static int check_keys(pctx *c, json_t *obj, const char *const *allowed, size_t n)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v)
	{
		char list[512] = "", q[160];
		size_t i, o = 0;
		bool ok = false;

		for (i = 0; i < n; i++)
			if (strcmp(key, allowed[i]) == 0)
				ok = true;
		if (ok)
			continue;
		for (i = 0; i < n && o < sizeof(list); i++)
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "",
					      allowed[i]);
		(void)path_push_key(c, key);
		quote(key, 64, q, sizeof(q));
		return fail(c, -EINVAL, "unknown key %s (expected one of: %s)", q, list);
	}
	return 0;
}

static int want_object(pctx *c, json_t *v, const char *const *allowed, size_t n)
{
	if (!json_is_object(v))
		return fail_expected(c, v, "an object");
	return check_keys(c, v, allowed, n);
}

static int want_string(pctx *c, const json_t *v, const char **ret)
{
	size_t len;

	if (!json_is_string(v))
		return fail_expected(c, v, "a string");
	len = json_string_length(v);
	if (len > POLICY_MAX_STRING)
		return fail(c, -E2BIG, "string of %zu bytes is longer than the limit of %u", len,
			    POLICY_MAX_STRING);
	/* jansson refuses \u0000 unless JSON_ALLOW_NUL, so strlen == len. */
	*ret = json_string_value(v);
	return 0;
}

static int want_uint(pctx *c, const json_t *v, uint64_t min, uint64_t max, uint64_t *ret)
{
	char what[96];
	json_int_t i;

	snprintf(what, sizeof(what), "an integer from %" PRIu64 " to %" PRIu64, min, max);
	if (!json_is_integer(v))
		return fail_expected(c, v, what);
	i = json_integer_value(v);
	if (i < 0 || (uint64_t)i < min || (uint64_t)i > max)
		return fail_expected(c, v, what);
	*ret = (uint64_t)i;
	return 0;
}

static int want_bool(pctx *c, const json_t *v, bool *ret)
{
	if (!json_is_boolean(v))
		return fail_expected(c, v, "true or false");
	*ret = json_is_true(v);
	return 0;
}

/* One of names[]; *ret is the index. */
static int want_enum(pctx *c, const json_t *v, const char *const *names, size_t n, int *ret)
{
	char what[256];
	size_t o = 0, i;

	if (json_is_string(v))
		for (i = 0; i < n; i++)
			if (strcmp(json_string_value(v), names[i]) == 0) {
				*ret = (int)i;
				return 0;
			}
	if (n == 2) {
		snprintf(what, sizeof(what), "\"%s\" or \"%s\"", names[0], names[1]);
	} else {
		o = (size_t)snprintf(what, sizeof(what), "one of");
		for (i = 0; i < n && o < sizeof(what); i++)
			o += (size_t)snprintf(what + o, sizeof(what) - o, "%s \"%s\"", i ? "," : "",
					      names[i]);
	}
	return fail_expected(c, v, what);
}

#define SIZE_WHAT     "a size such as \"64M\" (a number of bytes with an optional unit K, M, G or T)"
#define DURATION_WHAT "a duration such as \"30s\" (a number with a unit ms, s, m or h)"

/* A size: "64M", "4096", or (canonical form) a JSON integer of bytes. */
static int want_size(pctx *c, const json_t *v, bool nullable, uint64_t *ret)
{
	uint64_t x;
	int r;

	if (nullable && json_is_null(v)) {
		*ret = PLAN_UNLIMITED;
		return 0;
	}
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return fail_expected(c, v, SIZE_WHAT);
		x = (uint64_t)json_integer_value(v);
	} else if (json_is_string(v)) {
		r = parse_size(json_string_value(v), &x);
		if (r == -ERANGE)
			return fail_expected(c, v, "a size below 8E");
		if (r < 0)
			return fail_expected(c, v, SIZE_WHAT);
	} else {
		return fail_expected(c, v, SIZE_WHAT);
	}
	/* Canonical output writes sizes as JSON integers, which are signed 64-bit. */
	if (x > (uint64_t)INT64_MAX)
		return fail_expected(c, v, "a size below 8E");
	*ret = x;
	return 0;
}

static int want_duration(pctx *c, const json_t *v, bool nullable, uint64_t *ret)
{
	uint64_t x;
	int r;

	if (nullable && json_is_null(v)) {
		*ret = PLAN_UNLIMITED;
		return 0;
	}
	if (!json_is_string(v))
		return fail_expected(c, v, DURATION_WHAT);
	r = parse_duration_ns(json_string_value(v), &x);
	if (r == -ERANGE || (r >= 0 && x == PLAN_UNLIMITED))
		return fail_expected(c, v, "a duration below 584 years");
	if (r < 0)
		return fail_expected(c, v, DURATION_WHAT);
	*ret = x;
	return 0;
}

/* ---- paths ---- */

static bool path_is_under(const char *p, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strcmp(prefix, "/") == 0)
		return true;
	return strncmp(p, prefix, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/*
 * An absolute path, normalised: repeated "/" and "." components dropped, no
 * trailing "/". ".." is refused rather than resolved: lexically resolving it
 * would disagree with the kernel whenever a component is a symlink.
 */
static int want_abs_path(pctx *c, const json_t *v, char **ret)
{
	_cleanup_free_ char *out = NULL;
	const char *s = NULL, *p;
	char q[160];
	size_t o = 0;
	int r;

	r = want_string(c, v, &s);
	if (r < 0)
		return r;
	if (s[0] != '/')
		return fail_expected(c, v, "an absolute path (starting with \"/\")");
	if (strlen(s) >= PATH_MAX)
		return fail(c, -ENAMETOOLONG, "path is longer than %d bytes", PATH_MAX - 1);
	/* Legal in file names, but never meant in a policy, and they would let a
	 * path rewrite the terminal that shows "sandcap check". */
	for (p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			quote(s, 128, q, sizeof(q));
			return fail(c, -EINVAL, "path %s contains a control character", q);
		}
	out = malloc(strlen(s) + 2);
	if (!out)
		return -ENOMEM;
	for (p = s; *p;) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n == 1 && p[0] == '.') {
			p += n;
			continue;
		}
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			quote(s, 128, q, sizeof(q));
			return fail(c, -EINVAL, "path %s contains \"..\"; write the path it means",
				    q);
		}
		out[o++] = '/';
		memcpy(out + o, p, n);
		o += n;
		p += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	*ret = TAKE_PTR(out);
	return 0;
}

/*
 * Walks an absolute, normalised path component by component from "/" with
 * O_PATH|O_NOFOLLOW, which gives openat2(RESOLVE_NO_SYMLINKS) semantics and,
 * unlike it, tells which component is the symlink. Fills *ret_st with the
 * final object's stat. Nothing is created or modified.
 */
static int walk_nofollow(pctx *c, const char *path, struct stat *ret_st)
{
	_cleanup_close_ int dfd = -1;
	char comp[PATH_MAX], q[160];
	const char *p = path;
	struct stat st;

	dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fail(c, -errno, "cannot open \"/\": %s", strerror(errno));
	if (fstat(dfd, &st) < 0)
		return fail(c, -errno, "cannot stat \"/\": %s", strerror(errno));
	while (*p) {
		size_t n;
		int fd;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n >= NAME_MAX + 1)
			return fail(c, -ENAMETOOLONG,
				    "a component of the path is longer than %d bytes", NAME_MAX);
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		if (!S_ISDIR(st.st_mode)) {
			size_t plen = (size_t)(p - path) - n - 1;

			snprintf(comp, sizeof(comp), "%.*s", (int)plen, path);
			quote(comp, 128, q, sizeof(q));
			return fail(c, -ENOTDIR, "%s is not a directory", q);
		}
		fd = openat(dfd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;

			quote(path, 128, q, sizeof(q));
			if (e == ENOENT)
				return fail(c, -ENOENT, "%s does not exist", q);
			return fail(c, -e, "cannot open %s: %s", q, strerror(e));
		}
		(void)safe_close(dfd);
		dfd = fd;
		if (fstat(dfd, &st) < 0)
			return fail(c, -errno, "cannot stat: %s", strerror(errno));
		if (S_ISLNK(st.st_mode)) {
			snprintf(comp, sizeof(comp), "%.*s", (int)(p - path), path);
			quote(comp, 128, q, sizeof(q));
			return fail(c, -ELOOP,
				    "%s is a symbolic link; symlinks are not followed in grants, "
				    "name the real path",
				    q);
		}
	}
	*ret_st = st;
	return 0;
}

/* A host file that the supervisor reads (not a grant): must exist and be a
 * regular file; symlinks are fine here, the agent never sees this path. */
static int want_host_file(pctx *c, const json_t *v, char **ret)
{
	_cleanup_free_ char *p = NULL;
	struct stat st;
	char q[160];
	int r;

	r = want_abs_path(c, v, &p);
	if (r < 0)
		return r;
	quote(p, 128, q, sizeof(q));
	if (stat(p, &st) < 0) {
		if (errno == ENOENT)
			return fail(c, -ENOENT, "file %s does not exist", q);
		return fail(c, -errno, "cannot stat %s: %s", q, strerror(errno));
	}
	if (!S_ISREG(st.st_mode))
		return fail(c, -EINVAL, "%s is not a regular file", q);
	*ret = TAKE_PTR(p);
	return 0;
}

/* ---- names ---- */

static bool valid_env_name(const char *s)
{
	return is_ident(s);
}

/* RFC 1123 host name label rules; lower_only for egress patterns (already
 * lower-cased), any case for identity.hostname. */
static const char *dns_name_error(const char *s, size_t max)
{
	size_t len = strlen(s), label = 0, i;
	bool all_digits = true;

	if (len == 0)
		return "is empty";
	if (len > max)
		return "is too long";
	if (s[len - 1] == '.')
		return "ends with \".\"";
	for (i = 0; i <= len; i++) {
		char ch = s[i];

		if (ch == '.' || ch == '\0') {
			if (label == 0)
				return "has an empty label";
			if (label > 63)
				return "has a label longer than 63 characters";
			if (s[i - 1] == '-')
				return "has a label ending with \"-\"";
			if (ch == '\0' && all_digits)
				return "has a numeric last label (not a valid name nor a "
				       "dotted-quad IPv4 address)";
			label = 0;
			all_digits = true;
			continue;
		}
		if (ch == '*')
			return "has \"*\" that is not the whole leftmost label (as in "
			       "\"*.example.com\")";
		if (!(a_alnum(ch) || ch == '-'))
			return "contains a character other than letters, digits, \"-\" and \".\"";
		if (ch == '-' && label == 0)
			return "has a label starting with \"-\"";
		if (!a_digit(ch))
			all_digits = false;
		label++;
	}
	return NULL;
}

/*
 * An egress host pattern: an exact DNS name, "*.domain" (subdomains of a
 * domain of at least two labels), or an IP literal (IPv6 with or without
 * brackets). Stored lower-case; IP literals in inet_ntop form.
 */
static int want_host_pattern(pctx *c, const json_t *v, bool allow_wildcard, char **ret_host,
			     bool *ret_wildcard)
{
	_cleanup_free_ char *h = NULL;
	char addrbuf[INET6_ADDRSTRLEN], q[160];
	unsigned char bin[16];
	const char *s = NULL, *name, *err;
	bool wildcard = false;
	size_t len;
	int r;

	r = want_string(c, v, &s);
	if (r < 0)
		return r;
	len = strlen(s);
	if (len == 0)
		return fail_expected(c, v, "a host name");
	quote(s, 128, q, sizeof(q));
	if (s[0] == '[') {
		char inner[INET6_ADDRSTRLEN];

		if (len < 3 || s[len - 1] != ']' || len - 2 >= sizeof(inner))
			return fail_expected(
			    c, v, "an IPv6 address in brackets, as in \"[2001:db8::1]\"");
		memcpy(inner, s + 1, len - 2);
		inner[len - 2] = '\0';
		if (inet_pton(AF_INET6, inner, bin) != 1)
			return fail_expected(
			    c, v, "an IPv6 address in brackets, as in \"[2001:db8::1]\"");
		h = strdup(inet_ntop(AF_INET6, bin, addrbuf, sizeof(addrbuf)));
	} else if (inet_pton(AF_INET6, s, bin) == 1) {
		h = strdup(inet_ntop(AF_INET6, bin, addrbuf, sizeof(addrbuf)));
	} else if (inet_pton(AF_INET, s, bin) == 1) {
		h = strdup(inet_ntop(AF_INET, bin, addrbuf, sizeof(addrbuf)));
	} else {
		h = strdup(s);
		if (!h)
			return -ENOMEM;
		for (char *p = h; *p; p++)
			*p = a_lower(*p);
		name = h;
		if (strncmp(h, "*.", 2) == 0) {
			if (!allow_wildcard)
				return fail(
				    c, -EINVAL,
				    "host %s: a wildcard is not allowed here, name one host", q);
			wildcard = true;
			name = h + 2;
			if (!strchr(name, '.'))
				return fail(c, -EINVAL,
					    "host %s: a wildcard must cover a domain of at least "
					    "two labels, as in "
					    "\"*.example.com\"",
					    q);
		} else if (strcmp(h, "*") == 0) {
			return fail(c, -EINVAL,
				    "host %s: \"*\" would allow every host; name the hosts", q);
		}
		err = dns_name_error(name, POLICY_MAX_DNS_NAME);
		if (err)
			return fail(c, -EINVAL, "host %s %s", q, err);
	}
	if (!h)
		return -ENOMEM;
	*ret_host = TAKE_PTR(h);
	*ret_wildcard = wildcard;
	return 0;
}

static bool egress_matches(const plan_egress *e, const char *host)
{
	size_t hl, dl;

	if (!e->wildcard)
		return strcmp(e->host, host) == 0;
	/* "*.example.com" matches "a.example.com", not "example.com". */
	hl = strlen(host);
	dl = strlen(e->host + 1); /* ".example.com" */
	return hl > dl && strcmp(host + hl - dl, e->host + 1) == 0;
}

/* ---- sections ---- */

static int parse_runtime(pctx *c, json_t *v, sc_plan *p)
{
	static const char *const keys[] = {"rootfs"};
	struct stat st;
	json_t *r_v;
	size_t s;
	int r;

	if (json_is_string(v)) {
		if (strcmp(json_string_value(v), "host") != 0)
			return fail_expected(c, v, "\"host\" or {\"rootfs\": \"/path\"}");
		p->runtime = RUNTIME_HOST;
		return 0;
	}
	if (!json_is_object(v))
		return fail_expected(c, v, "\"host\" or {\"rootfs\": \"/path\"}");
	r = check_keys(c, v, keys, ELEMENTSOF(keys));
	if (r < 0)
		return r;
	r_v = json_object_get(v, "rootfs");
	if (!r_v)
		return fail(c, -EINVAL, "missing required key \"rootfs\"");
	s = path_push_key(c, "rootfs");
	r = want_abs_path(c, r_v, &p->rootfs);
	if (r < 0)
		return r;
	if (strcmp(p->rootfs, "/") == 0)
		return fail(c, -EINVAL,
			    "the host root \"/\" cannot be the sandbox's root; use \"host\"");
	r = walk_nofollow(c, p->rootfs, &st);
	if (r < 0)
		return r;
	if (!S_ISDIR(st.st_mode))
		return fail_expected(c, r_v, "a directory");
	path_pop(c, s);
	p->runtime = RUNTIME_ROOTFS;
	return 0;
}

static int parse_tmp(pctx *c, json_t *v, sc_plan *p)
{
	static const char *const keys[] = {"size", "inodes"};
	json_t *x;
	size_t s;
	int r;

	if (json_is_string(v) || json_is_integer(v)) {
		r = want_size(c, v, false, &p->tmp_size);
	} else if (json_is_object(v)) {
		r = check_keys(c, v, keys, ELEMENTSOF(keys));
		if (r < 0)
			return r;
		x = json_object_get(v, "size");
		if (x) {
			s = path_push_key(c, "size");
			r = want_size(c, x, false, &p->tmp_size);
			if (r < 0)
				return r;
			if (p->tmp_size == 0)
				return fail_expected(c, x, "a size above 0");
			path_pop(c, s);
		}
		x = json_object_get(v, "inodes");
		if (x) {
			s = path_push_key(c, "inodes");
			r = want_uint(c, x, 16, POLICY_MAX_TMP_INODES, &p->tmp_inodes);
			if (r < 0)
				return r;
			path_pop(c, s);
		}
		return 0;
	} else {
		return fail_expected(
		    c, v, "a size such as \"64M\" or {\"size\": \"64M\", \"inodes\": 8192}");
	}
	if (r < 0)
		return r;
	if (p->tmp_size == 0)
		return fail_expected(c, v, "a size above 0");
	return 0;
}

/* Where grants may not appear inside: these are the sandbox's own. */
static const char *grant_at_error(const char *at)
{
	static const char *const under[] = {"/proc", "/dev", "/sys"};
	static const char *const exact[] = {"/etc", "/usr"};

	if (strcmp(at, "/") == 0)
		return "cannot replace the sandbox's root \"/\"";
	for (size_t i = 0; i < ELEMENTSOF(under); i++)
		if (path_is_under(at, under[i]))
			return "may not be in /proc, /dev or /sys, which the sandbox builds itself";
	for (size_t i = 0; i < ELEMENTSOF(exact); i++)
		if (strcmp(at, exact[i]) == 0)
			return "may not replace /etc or /usr, which the runtime provides";
	return NULL;
}

static int parse_grant(pctx *c, json_t *v, sc_plan *p, plan_grant *g)
{
	static const char *const keys[] = {"path", "mode", "at"};
	static const char *const modes[] = {"ro", "rw"};
	struct stat st;
	char q[160];
	const char *err;
	json_t *x;
	size_t s;
	int r, m = 0;

	r = want_object(c, v, keys, ELEMENTSOF(keys));
	if (r < 0)
		return r;
	x = json_object_get(v, "path");
	if (!x)
		return fail(c, -EINVAL, "missing required key \"path\"");
	s = path_push_key(c, "path");
	r = want_abs_path(c, x, &g->path);
	if (r < 0)
		return r;
	quote(g->path, 128, q, sizeof(q));
	if (strcmp(g->path, "/") == 0)
		return fail(
		    c, -EINVAL,
		    "granting \"/\" would expose the whole host; grant the directories needed");
	if (path_is_under(g->path, "/proc") || path_is_under(g->path, "/sys") ||
	    path_is_under(g->path, "/dev"))
		return fail(c, -EINVAL,
			    "%s is a kernel interface of the host and cannot be granted", q);
	r = walk_nofollow(c, g->path, &st);
	if (r < 0)
		return r;
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return fail(c, -EINVAL, "%s is neither a directory nor a regular file", q);
	path_pop(c, s);

	g->mode = GRANT_RO; /* least privilege when absent */
	x = json_object_get(v, "mode");
	if (x) {
		s = path_push_key(c, "mode");
		r = want_enum(c, x, modes, ELEMENTSOF(modes), &m);
		if (r < 0)
			return r;
		g->mode = (grant_mode)m;
		path_pop(c, s);
	}

	x = json_object_get(v, "at");
	if (x) {
		s = path_push_key(c, "at");
		r = want_abs_path(c, x, &g->at);
		if (r < 0)
			return r;
		err = grant_at_error(g->at);
		if (err) {
			quote(g->at, 128, q, sizeof(q));
			return fail(c, -EINVAL, "%s %s", q, err);
		}
		path_pop(c, s);
	} else {
		g->at = strdup(g->path);
		if (!g->at)
			return -ENOMEM;
		err = grant_at_error(g->at);
		if (err) {
			(void)path_push_key(c, "path");
			return fail(
			    c, -EINVAL,
			    "%s would appear at the same path inside, where it %s; add \"at\"", q,
			    err);
		}
	}

	/* Duplicates and contradictions with the grants before this one. */
	for (size_t i = 0; i < p->n_grants; i++) {
		const plan_grant *o = &p->grants[i];

		if (strcmp(o->path, g->path) == 0) {
			(void)path_push_key(c, "path");
			if (o->mode != g->mode)
				return fail(
				    c, -EINVAL,
				    "%s is granted \"%s\" here but \"%s\" in $.fs.grants[%zu]", q,
				    modes[g->mode], modes[o->mode], i);
			return fail(c, -EINVAL, "%s is already granted in $.fs.grants[%zu]", q, i);
		}
		if (strcmp(o->at, g->at) == 0) {
			char qa[160];

			(void)path_push_key(c, json_object_get(v, "at") ? "at" : "path");
			quote(g->at, 128, qa, sizeof(qa));
			return fail(c, -EINVAL,
				    "%s inside the sandbox is already used by $.fs.grants[%zu]", qa,
				    i);
		}
	}
	return 0;
}

static int parse_fs(pctx *c, json_t *v, sc_plan *p)
{
	static const char *const keys[] = {"runtime", "grants", "tmp", "workdir"};
	json_t *x;
	size_t s;
	int r;

	r = want_object(c, v, keys, ELEMENTSOF(keys));
	if (r < 0)
		return r;
	x = json_object_get(v, "runtime");
	if (x) {
		s = path_push_key(c, "runtime");
		r = parse_runtime(c, x, p);
		if (r < 0)
			return r;
		path_pop(c, s);
	}
	x = json_object_get(v, "grants");
	if (x) {
		size_t n, i;
		void *arr;

		s = path_push_key(c, "grants");
		r = want_array(c, x, "grants", POLICY_MAX_GRANTS, sizeof(*p->grants), &arr, &n);
		if (r < 0)
			return r;
		p->grants = arr;
		for (i = 0; i < n; i++) {
			size_t s2 = path_push_index(c, i);

			r = parse_grant(c, json_array_get(x, i), p, &p->grants[i]);
			if (r < 0) {
				/* Keep what was allocated freeable by sc_plan_free(). */
				p->n_grants = i + 1;
				return r;
			}
			p->n_grants = i + 1;
			path_pop(c, s2);
		}
		path_pop(c, s);
	}
	x = json_object_get(v, "tmp");
	if (x) {
		s = path_push_key(c, "tmp");
		r = parse_tmp(c, x, p);
		if (r < 0)
			return r;
		path_pop(c, s);
	}
	x = json_object_get(v, "workdir");
	if (x) {
		s = path_push_key(c, "workdir");
		free(p->workdir);
		p->workdir = NULL;
		r = want_abs_path(c, x, &p->workdir);
		if (r < 0)
			return r;
		path_pop(c, s);
	}
	return 0;
}

static int parse_ports(pctx *c, json_t *v, plan_egress *e)
{
	size_t n, i, j;
	int r;

	if (!json_is_array(v))
		return fail_expected(c, v, "an array of port numbers");
	n = json_array_size(v);
	if (n == 0)
		return fail(c, -EINVAL, "expected at least one port, got an empty array");
	if (n > POLICY_MAX_PORTS)
		return fail(c, -E2BIG, "%zu ports, more than the limit of %u", n, POLICY_MAX_PORTS);
	for (i = 0; i < n; i++) {
		size_t s = path_push_index(c, i);
		uint64_t port = 0;

		r = want_uint(c, json_array_get(v, i), 1, 65535, &port);
		if (r < 0)
			return r;
		for (j = 0; j < i; j++)
			if (e->ports[j] == port)
				return fail(c, -EINVAL, "port %" PRIu64 " is listed twice", port);
		e->ports[i] = (uint16_t)port;
		path_pop(c, s);
	}
	e->n_ports = n;
	return 0;
}

static int parse_methods(pctx *c, json_t *v, plan_egress *e)
{
	uint32_t bits = 0;
	size_t n, i;
	int r, m = 0;

	if (!json_is_array(v))
		return fail_expected(c, v, "an array of HTTP methods");
	n = json_array_size(v);
	if (n == 0)
		return fail(c, -EINVAL,
			    "expected at least one method, got an empty array (omit \"methods\" to "
			    "allow any)");
	if (n > PLAN_N_METHODS)
		return fail(c, -E2BIG, "%zu methods, but there are only %u", n, PLAN_N_METHODS);
	for (i = 0; i < n; i++) {
		size_t s = path_push_index(c, i);

		r = want_enum(c, json_array_get(v, i), plan_method_names, PLAN_N_METHODS, &m);
		if (r < 0)
			return r;
		if (bits & (1u << m))
			return fail(c, -EINVAL, "method \"%s\" is listed twice",
				    plan_method_names[m]);
		bits |= 1u << m;
		path_pop(c, s);
	}
	e->methods = bits == PLAN_ALL_METHODS ? HTTP_ANY_METHOD : bits;
	return 0;
}

static int parse_egress_rule(pctx *c, json_t *v, plan_egress *e)
{
	static const char *const keys[] = {"host", "ports", "methods"};
	json_t *x;
	size_t s;
	int r;

	r = want_object(c, v, keys, ELEMENTSOF(keys));
	if (r < 0)
		return r;
	x = json_object_get(v, "host");
	if (!x)
		return fail(c, -EINVAL, "missing required key \"host\"");
	s = path_push_key(c, "host");
	r = want_host_pattern(c, x, true, &e->host, &e->wildcard);
	if (r < 0)
		return r;
	path_pop(c, s);

	e->ports[0] = 80;
	e->ports[1] = 443;
	e->n_ports = 2;
	x = json_object_get(v, "ports");
	if (x) {
		s = path_push_key(c, "ports");
		r = parse_ports(c, x, e);
		if (r < 0)
			return r;
		path_pop(c, s);
	}
	e->methods = HTTP_ANY_METHOD;
	x = json_object_get(v, "methods");
	if (x) {
		s = path_push_key(c, "methods");
		r = parse_methods(c, x, e);
		if (r < 0)
			return r;
		path_pop(c, s);
	}
	return 0;
}

/* "10.0.0.0/8", "fd00::/8"; host bits must be zero so that what is written is
 * what is meant. */
static int want_cidr(pctx *c, const json_t *v, plan_cidr *ret)
{
	char buf[INET6_ADDRSTRLEN + 8], fixed[64];
	const char *s = NULL, *slash, *d;
	plan_cidr cidr = {};
	unsigned prefix = 0, max;
	int r;

	r = want_string(c, v, &s);
	if (r < 0)
		return r;
	slash = strchr(s, '/');
	if (!slash || (size_t)(slash - s) >= INET6_ADDRSTRLEN)
		return fail_expected(c, v, "a CIDR such as \"10.0.0.0/8\" or \"fd00::/8\"");
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	if (inet_pton(AF_INET, buf, cidr.addr) == 1) {
		cidr.family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, cidr.addr) == 1) {
		cidr.family = AF_INET6;
		max = 128;
	} else {
		return fail_expected(c, v, "a CIDR such as \"10.0.0.0/8\" or \"fd00::/8\"");
	}
	d = slash + 1;
	if (!*d || strlen(d) > 3 || (d[0] == '0' && d[1]))
		return fail_expected(c, v, "a CIDR with a prefix length, such as \"10.0.0.0/8\"");
	for (; *d; d++) {
		if (!a_digit(*d))
			return fail_expected(c, v,
					     "a CIDR with a prefix length, such as \"10.0.0.0/8\"");
		prefix = prefix * 10 + (unsigned)(*d - '0');
	}
	if (prefix > max)
		return fail(c, -EINVAL,
			    "prefix length /%u is longer than the %u bits of the address", prefix,
			    max);
	cidr.prefix = prefix;
	for (unsigned bit = prefix; bit < max; bit++)
		if (cidr.addr[bit / 8] & (0x80u >> (bit % 8))) {
			char q[160];

			for (unsigned b = prefix; b < max; b++)
				cidr.addr[b / 8] &= (uint8_t) ~(0x80u >> (b % 8));
			plan_cidr_format(&cidr, fixed, sizeof(fixed));
			quote(s, 64, q, sizeof(q));
			return fail(c, -EINVAL,
				    "%s has host bits set after the prefix; did you mean \"%s\"?",
				    q, fixed);
		}
	*ret = cidr;
	return 0;
}

/* "IP" or "IP:port"; IPv6 with a port in brackets: "[::1]:53". */
static int want_dns(pctx *c, const json_t *v, char **ret)
{
	static const char what[] =
	    "a resolver address \"IP\" or \"IP:port\" (IPv6 with a port as \"[IP]:port\")";
	char addr[INET6_ADDRSTRLEN + 1];
	unsigned char bin[16];
	const char *s = NULL, *port = NULL, *colon;
	size_t alen;
	int r;

	r = want_string(c, v, &s);
	if (r < 0)
		return r;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end)
			return fail_expected(c, v, what);
		alen = (size_t)(end - s - 1);
		if (alen >= sizeof(addr))
			return fail_expected(c, v, what);
		memcpy(addr, s + 1, alen);
		addr[alen] = '\0';
		if (inet_pton(AF_INET6, addr, bin) != 1)
			return fail_expected(c, v, what);
		if (end[1] == ':')
			port = end + 2;
		else if (end[1] != '\0')
			return fail_expected(c, v, what);
	} else if (inet_pton(AF_INET6, s, bin) == 1) {
		/* bare IPv6, no port */
	} else {
		colon = strchr(s, ':');
		alen = colon ? (size_t)(colon - s) : strlen(s);
		if (alen >= sizeof(addr))
			return fail_expected(c, v, what);
		memcpy(addr, s, alen);
		addr[alen] = '\0';
		if (inet_pton(AF_INET, addr, bin) != 1)
			return fail_expected(c, v, what);
		if (colon)
			port = colon + 1;
	}
	if (port) {
		unsigned long pv = 0;

		if (!*port || strlen(port) > 5 || (port[0] == '0'))
			return fail_expected(c, v, what);
		for (const char *q = port; *q; q++) {
			if (!a_digit(*q))
				return fail_expected(c, v, what);
			pv = pv * 10 + (unsigned long)(*q - '0');
		}
		if (pv < 1 || pv > 65535)
			return fail(c, -EINVAL, "port %lu is not between 1 and 65535", pv);
	}
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

/* A printf-like format with exactly one "%s" and no other conversion ("%%" is
 * a literal percent), and nothing that could split a header line. */
static const char *format_error(const char *f)
{
	unsigned n_s = 0;

	for (; *f; f++) {
		unsigned char ch = (unsigned char)*f;

		if (ch < 0x20 || ch == 0x7f)
			return "contains a control character";
		if (ch != '%')
			continue;
		if (f[1] == '%') {
			f++;
			continue;
		}
		if (f[1] != 's')
			return "has a conversion other than \"%s\" (write \"%%\" for a percent "
			       "sign)";
		n_s++;
		f++;
	}
	if (n_s != 1)
		return "must contain \"%s\" exactly once, where the secret goes";
	return NULL;
}

static bool is_tchar(unsigned char ch)
{
	return a_alnum((char)ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static int parse_credential(pctx *c, json_t *v, sc_plan *p, plan_credential *cr)
{
	static const char *const keys[] = {"host",	 "header", "value_env",
					   "value_file", "format", "upstream"};
	static const char *const upstreams[] = {"https", "http"};
	const char *s = NULL, *err;
	bool wildcard, found = false;
	char q[160];
	json_t *x, *ve, *vf;
	size_t sv;
	int r, m = 0;

	r = want_object(c, v, keys, ELEMENTSOF(keys));
	if (r < 0)
		return r;

	x = json_object_get(v, "host");
	if (!x)
		return fail(c, -EINVAL, "missing required key \"host\"");
	sv = path_push_key(c, "host");
	r = want_host_pattern(c, x, false, &cr->host, &wildcard);
	if (r < 0)
		return r;
	for (size_t i = 0; i < p->n_egress && !found; i++)
		found = egress_matches(&p->egress[i], cr->host);
	if (!found) {
		quote(cr->host, 128, q, sizeof(q));
		return fail(
		    c, -EINVAL,
		    "no $.net.egress rule allows host %s, so this credential could never be used",
		    q);
	}
	path_pop(c, sv);

	x = json_object_get(v, "header");
	if (!x)
		return fail(c, -EINVAL, "missing required key \"header\"");
	sv = path_push_key(c, "header");
	r = want_string(c, x, &s);
	if (r < 0)
		return r;
	if (!*s || strlen(s) > POLICY_MAX_HEADER)
		return fail_expected(c, x, "an HTTP header name");
	for (const char *h = s; *h; h++)
		if (!is_tchar((unsigned char)*h))
			return fail_expected(
			    c, x, "an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)");
	for (size_t i = 0; i < ELEMENTSOF(reserved_headers); i++)
		if (strcasecmp(s, reserved_headers[i]) == 0) {
			quote(s, 64, q, sizeof(q));
			return fail(c, -EINVAL,
				    "header %s frames or routes the request and cannot be injected",
				    q);
		}
	cr->header = strdup(s);
	if (!cr->header)
		return -ENOMEM;
	path_pop(c, sv);

	ve = json_object_get(v, "value_env");
	vf = json_object_get(v, "value_file");
	if (!!ve == !!vf)
		return fail(c, -EINVAL,
			    "expected exactly one of \"value_env\" and \"value_file\", got %s",
			    ve ? "both" : "neither");
	if (ve) {
		sv = path_push_key(c, "value_env");
		r = want_string(c, ve, &s);
		if (r < 0)
			return r;
		if (!valid_env_name(s))
			return fail_expected(c, ve, "an environment variable name");
		cr->value_env = strdup(s);
		if (!cr->value_env)
			return -ENOMEM;
		path_pop(c, sv);
	} else {
		sv = path_push_key(c, "value_file");
		r = want_host_file(c, vf, &cr->value_file);
		if (r < 0)
			return r;
		if (plan_grant_containing(p, cr->value_file)) {
			quote(cr->value_file, 128, q, sizeof(q));
			return fail(
			    c, -EINVAL,
			    "secret file %s lies inside a grant, where the sandbox could read it",
			    q);
		}
		path_pop(c, sv);
	}

	x = json_object_get(v, "format");
	if (x) {
		sv = path_push_key(c, "format");
		r = want_string(c, x, &s);
		if (r < 0)
			return r;
		err = format_error(s);
		if (err) {
			quote(s, 64, q, sizeof(q));
			return fail(c, -EINVAL, "format %s %s", q, err);
		}
		cr->format = strdup(s);
		path_pop(c, sv);
	} else {
		cr->format = strdup("%s");
	}
	if (!cr->format)
		return -ENOMEM;

	cr->upstream_https = true;
	x = json_object_get(v, "upstream");
	if (x) {
		sv = path_push_key(c, "upstream");
		r = want_enum(c, x, upstreams, ELEMENTSOF(upstreams), &m);
		if (r < 0)
			return r;
		cr->upstream_https = m == 0;
		path_pop(c, sv);
	}

	for (size_t i = 0; i < p->n_credentials; i++)
		if (strcmp(p->credentials[i].host, cr->host) == 0 &&
		    strcasecmp(p->credentials[i].header, cr->header) == 0)
			return fail(c, -EINVAL,
				    "header \"%s\" for host \"%s\" is already set by "
				    "$.net.credentials[%zu]",
				    cr->header, cr->host, i);
	return 0;
}

static int parse_net(pctx *c, json_t *v, sc_plan *p)
{
	static const char *const keys[] = {
	    "egress",	     "allow_private",	 "rate",
	    "bandwidth",     "max_request_body", "max_response_body",
	    "egress_budget", "credentials",	 "upstream_ca",
	    "dns",
	};
	json_t *x;
	size_t s, n, i;
	void *arr;
	int r;

	r = want_object(c, v, keys, ELEMENTSOF(keys));
	if (r < 0)
		return r;

	x = json_object_get(v, "egress");
	if (x) {
		s = path_push_key(c, "egress");
		r = want_array(c, x, "egress rules", POLICY_MAX_EGRESS, sizeof(*p->egress), &arr,
			       &n);
		if (r < 0)
			return r;
		p->egress = arr;
		for (i = 0; i < n; i++) {
			size_t s2 = path_push_index(c, i);

			p->n_egress = i + 1;
			r = parse_egress_rule(c, json_array_get(x, i), &p->egress[i]);
			if (r < 0)
				return r;
			path_pop(c, s2);
		}
		path_pop(c, s);
	}

	x = json_object_get(v, "allow_private");
	if (x) {
		s = path_push_key(c, "allow_private");
		r = want_array(c, x, "CIDRs", POLICY_MAX_CIDRS, sizeof(*p->allow_private), &arr,
			       &n);
		if (r < 0)
			return r;
		p->allow_private = arr;
		for (i = 0; i < n; i++) {
			size_t s2 = path_push_index(c, i);
			plan_cidr *cd = &p->allow_private[i];

			r = want_cidr(c, json_array_get(x, i), cd);
			if (r < 0)
				return r;
			for (size_t j = 0; j < i; j++)
				if (p->allow_private[j].family == cd->family &&
				    p->allow_private[j].prefix == cd->prefix &&
				    memcmp(p->allow_private[j].addr, cd->addr, 16) == 0)
					return fail(c, -EINVAL,
						    "the same range is already listed in "
						    "$.net.allow_private[%zu]",
						    j);
			p->n_allow_private = i + 1;
			path_pop(c, s2);
		}
		path_pop(c, s);
	}

	x = json_object_get(v, "rate");
	if (x) {
		s = path_push_key(c, "rate");
		if (!json_is_null(x)) {
			if (!json_is_string(x) ||
			    parse_rate(json_string_value(x), &p->rate.count, &p->rate.per_ns) < 0)
				return fail_expected(
				    c, x, "a request rate such as \"20/s\" or \"100/m\"");
		}
		path_pop(c, s);
	}
	x = json_object_get(v, "bandwidth");
	if (x) {
		s = path_push_key(c, "bandwidth");
		if (!json_is_null(x)) {
			uint64_t bw;

			if (!json_is_string(x) || parse_bandwidth(json_string_value(x), &bw) < 0 ||
			    bw == 0 || bw == PLAN_UNLIMITED)
				return fail_expected(c, x, "a bandwidth such as \"1M/s\"");
			p->bandwidth = bw;
		}
		path_pop(c, s);
	}

	static const struct {
		const char *key;
		size_t off;
	} caps[] = {
	    {"max_request_body", offsetof(sc_plan, max_request_body)},
	    {"max_response_body", offsetof(sc_plan, max_response_body)},
	    {"egress_budget", offsetof(sc_plan, egress_budget)},
	};
	for (i = 0; i < ELEMENTSOF(caps); i++) {
		x = json_object_get(v, caps[i].key);
		if (!x)
			continue;
		s = path_push_key(c, caps[i].key);
		r = want_size(c, x, true, (uint64_t *)((char *)p + caps[i].off));
		if (r < 0)
			return r;
		path_pop(c, s);
	}

	x = json_object_get(v, "upstream_ca");
	if (x && !json_is_null(x)) {
		s = path_push_key(c, "upstream_ca");
		r = want_host_file(c, x, &p->upstream_ca);
		if (r < 0)
			return r;
		path_pop(c, s);
	}
	x = json_object_get(v, "dns");
	if (x && !json_is_null(x)) {
		s = path_push_key(c, "dns");
		r = want_dns(c, x, &p->dns);
		if (r < 0)
			return r;
		path_pop(c, s);
	}

	/* Last: credentials refer to egress rules and grants. */
	x = json_object_get(v, "credentials");
	if (x) {
		s = path_push_key(c, "credentials");
		r = want_array(c, x, "credentials", POLICY_MAX_CREDENTIALS, sizeof(*p->credentials),
			       &arr, &n);
		if (r < 0)
			return r;
		p->credentials = arr;
		for (i = 0; i < n; i++) {
			size_t s2 = path_push_index(c, i);
			plan_credential tmp = {};

			r = parse_credential(c, json_array_get(x, i), p, &tmp);
			p->credentials[i] = tmp;
			p->n_credentials = i + 1;
			if (r < 0)
				return r;
			path_pop(c, s2);
		}
		path_pop(c, s);
	}
	return 0;
}

static int parse_limits(pctx *c, json_t *v, sc_plan *p)
{
	static const char *const keys[] = {"memory", "cpu", "pids", "wall", "nofile", "fsize"};
	json_t *x;
	size_t s;
	int r;

	r = want_object(c, v, keys, ELEMENTSOF(keys));
	if (r < 0)
		return r;

	x = json_object_get(v, "memory");
	if (x) {
		s = path_push_key(c, "memory");
		r = want_size(c, x, true, &p->memory);
		if (r < 0)
			return r;
		if (p->memory < POLICY_MIN_MEMORY)
			return fail_expected(c, x, "a memory limit of at least \"4M\"");
		path_pop(c, s);
	}
	x = json_object_get(v, "cpu");
	if (x) {
		s = path_push_key(c, "cpu");
		if (!json_is_null(x)) {
			double d;

			if (!json_is_number(x))
				return fail_expected(c, x, "a number of cores such as 0.5");
			d = json_number_value(x);
			if (!(d > 0) || d > POLICY_MAX_CPU)
				return fail_expected(c, x,
						     "a number of cores above 0 and at most 1024");
			/* Round to the nearest thousandth; d is positive, so no libm. */
			p->cpu_millis = (uint64_t)(d * 1000.0 + 0.5);
			if (p->cpu_millis == 0)
				return fail_expected(c, x, "a number of cores of at least 0.001");
		}
		path_pop(c, s);
	}
	x = json_object_get(v, "pids");
	if (x) {
		s = path_push_key(c, "pids");
		if (!json_is_null(x)) {
			r = want_uint(c, x, 1, POLICY_MAX_PIDS, &p->pids);
			if (r < 0)
				return r;
		}
		path_pop(c, s);
	}
	x = json_object_get(v, "wall");
	if (x) {
		s = path_push_key(c, "wall");
		r = want_duration(c, x, true, &p->wall_ns);
		if (r < 0)
			return r;
		if (p->wall_ns == 0)
			return fail_expected(c, x, "a duration above 0");
		path_pop(c, s);
	}
	x = json_object_get(v, "nofile");
	if (x) {
		s = path_push_key(c, "nofile");
		r = want_uint(c, x, 1, POLICY_MAX_NOFILE, &p->nofile);
		if (r < 0)
			return r;
		path_pop(c, s);
	}
	x = json_object_get(v, "fsize");
	if (x) {
		s = path_push_key(c, "fsize");
		r = want_size(c, x, true, &p->fsize);
		if (r < 0)
			return r;
		if (p->fsize == 0)
			return fail_expected(c, x, "a size above 0");
		path_pop(c, s);
	}
	return 0;
}

static int cmp_env(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t lx = strcspn(x, "="), ly = strcspn(y, "=");
	int r = strncmp(x, y, lx < ly ? lx : ly);

	if (r)
		return r;
	return lx < ly ? -1 : lx > ly;
}

static int parse_env(pctx *c, json_t *v, sc_plan *p)
{
	const char *key;
	json_t *x;
	size_t n;

	if (!json_is_object(v))
		return fail_expected(c, v, "an object of \"NAME\": \"value\" strings");
	n = json_object_size(v);
	if (n > POLICY_MAX_ENV)
		return fail(c, -E2BIG, "%zu variables, more than the limit of %u", n,
			    POLICY_MAX_ENV);
	if (n) {
		p->env = calloc(n, sizeof(*p->env));
		if (!p->env)
			return -ENOMEM;
	}
	json_object_foreach(v, key, x)
	{
		size_t s = path_push_key(c, key);
		const char *val = NULL;
		char q[160];
		int r;

		quote(key, 64, q, sizeof(q));
		if (strchr(key, '='))
			return fail(c, -EINVAL, "variable name %s contains \"=\"", q);
		if (!valid_env_name(key) || strlen(key) > 255)
			return fail(c, -EINVAL,
				    "%s is not a valid variable name (letters, digits and \"_\", "
				    "not starting with a digit)",
				    q);
		if (agent_env_reserved(key))
			return fail(c, -EINVAL,
				    "%s is set by sandcap itself and cannot be overridden", q);
		r = want_string(c, x, &val);
		if (r < 0)
			return r;
		if (p->n_env >= n)
			return -EINVAL;
		if (asprintf(&p->env[p->n_env], "%s=%s", key, val) < 0) {
			p->env[p->n_env] = NULL;
			return -ENOMEM;
		}
		p->n_env++;
		path_pop(c, s);
	}
	/* Sorted by name: order has no meaning in an environment, and a canonical
	 * order makes plans comparable. */
	if (p->n_env > 1)
		qsort(p->env, p->n_env, sizeof(*p->env), cmp_env);
	return 0;
}

static int parse_identity(pctx *c, json_t *v, sc_plan *p)
{
	static const char *const keys[] = {"hostname"};
	const char *s = NULL, *err;
	char q[160];
	json_t *x;
	size_t sv;
	int r;

	r = want_object(c, v, keys, ELEMENTSOF(keys));
	if (r < 0)
		return r;
	x = json_object_get(v, "hostname");
	if (!x)
		return 0;
	sv = path_push_key(c, "hostname");
	r = want_string(c, x, &s);
	if (r < 0)
		return r;
	err = dns_name_error(s, POLICY_MAX_HOSTNAME);
	if (err) {
		quote(s, 64, q, sizeof(q));
		return fail(c, -EINVAL, "hostname %s %s", q, err);
	}
	free(p->hostname);
	p->hostname = strdup(s);
	if (!p->hostname)
		return -ENOMEM;
	path_pop(c, sv);
	return 0;
}

static int parse_audit(pctx *c, json_t *v, sc_plan *p)
{
	static const char *const keys[] = {"exec", "denied_syscalls", "fsync"};
	static const char *const fsyncs[] = {"boundaries", "always"};
	json_t *x;
	size_t s;
	int r, m = 0;

	r = want_object(c, v, keys, ELEMENTSOF(keys));
	if (r < 0)
		return r;
	x = json_object_get(v, "exec");
	if (x) {
		s = path_push_key(c, "exec");
		r = want_bool(c, x, &p->audit_exec);
		if (r < 0)
			return r;
		path_pop(c, s);
	}
	x = json_object_get(v, "denied_syscalls");
	if (x) {
		s = path_push_key(c, "denied_syscalls");
		r = want_bool(c, x, &p->audit_denied_syscalls);
		if (r < 0)
			return r;
		path_pop(c, s);
	}
	x = json_object_get(v, "fsync");
	if (x) {
		s = path_push_key(c, "fsync");
		r = want_enum(c, x, fsyncs, ELEMENTSOF(fsyncs), &m);
		if (r < 0)
			return r;
		p->audit_fsync = (audit_fsync)m;
		path_pop(c, s);
	}
	return 0;
}

static int parse_spawn(pctx *c, json_t *v, sc_plan *p)
{
	static const char *const keys[] = {"max_depth", "max_children"};
	uint64_t u = 0;
	json_t *x;
	size_t s;
	int r;

	r = want_object(c, v, keys, ELEMENTSOF(keys));
	if (r < 0)
		return r;
	x = json_object_get(v, "max_depth");
	if (x) {
		s = path_push_key(c, "max_depth");
		r = want_uint(c, x, 0, POLICY_MAX_SPAWN_DEPTH, &u);
		if (r < 0)
			return r;
		p->spawn_max_depth = (unsigned)u;
		path_pop(c, s);
	}
	x = json_object_get(v, "max_children");
	if (x) {
		s = path_push_key(c, "max_children");
		r = want_uint(c, x, 0, POLICY_MAX_SPAWN_CHILDREN, &u);
		if (r < 0)
			return r;
		p->spawn_max_children = (unsigned)u;
		path_pop(c, s);
	}
	return 0;
}

static int parse_name(pctx *c, json_t *v, sc_plan *p)
{
	const char *s = NULL;
	int r;

	r = want_string(c, v, &s);
	if (r < 0)
		return r;
	/* The name ends up in cgroup and log names: keep it to a safe alphabet. */
	if (!*s || strlen(s) > POLICY_MAX_NAME || s[0] == '.' || s[0] == '-')
		goto bad;
	for (const char *q = s; *q; q++)
		if (!(a_alnum(*q) || *q == '-' || *q == '_' || *q == '.'))
			goto bad;
	free(p->name);
	p->name = strdup(s);
	return p->name ? 0 : -ENOMEM;
bad:
	return fail_expected(c, v,
			     "a name of 1 to 64 letters, digits, \"-\", \"_\" and \".\", not "
			     "starting with \"-\" or \".\"");
}

static int plan_defaults(sc_plan *p)
{
	p->version = 1;
	p->runtime = RUNTIME_HOST;
	p->tmp_size = PLAN_DEFAULT_TMP_SIZE;
	p->tmp_inodes = PLAN_DEFAULT_TMP_INODES;
	p->bandwidth = PLAN_UNLIMITED;
	p->max_request_body = PLAN_UNLIMITED;
	p->max_response_body = PLAN_UNLIMITED;
	p->egress_budget = PLAN_UNLIMITED;
	p->memory = PLAN_UNLIMITED;
	p->cpu_millis = PLAN_UNLIMITED;
	p->pids = PLAN_UNLIMITED;
	p->wall_ns = PLAN_UNLIMITED;
	p->nofile = PLAN_DEFAULT_NOFILE;
	p->fsize = PLAN_UNLIMITED;
	p->audit_exec = true;
	p->audit_denied_syscalls = true;
	p->audit_fsync = AUDIT_FSYNC_BOUNDARIES;
	p->spawn_max_children = PLAN_DEFAULT_SPAWN_CHILDREN;
	p->name = strdup("sandbox");
	p->workdir = strdup("/tmp");
	p->hostname = strdup("sandbox");
	if (!p->name || !p->workdir || !p->hostname)
		return -ENOMEM;
	return 0;
}

static int parse_root(pctx *c, json_t *root, sc_plan *p)
{
	static const char *const keys[] = {
	    "version", "name",	   "fs",    "net",	   "limits",
	    "env",     "identity", "audit", "best_effort", "spawn",
	};
	static const struct {
		const char *key;
		int (*fn)(pctx *c, json_t *v, sc_plan *p);
	} sections[] = {
	    {"name", parse_name},     {"fs", parse_fs},	      {"net", parse_net},
	    {"limits", parse_limits}, {"env", parse_env},     {"identity", parse_identity},
	    {"audit", parse_audit},   {"spawn", parse_spawn},
	};
	uint64_t version;
	json_t *x;
	size_t s;
	int r;

	r = want_object(c, root, keys, ELEMENTSOF(keys));
	if (r < 0)
		return r;
	x = json_object_get(root, "version");
	if (!x)
		return fail(c, -EINVAL,
			    "missing required key \"version\" (this parser reads version 1)");
	s = path_push_key(c, "version");
	if (!json_is_integer(x) || json_integer_value(x) != 1)
		return fail_expected(c, x, "1 (the only policy version this sandcap knows)");
	version = 1;
	p->version = (int)version;
	path_pop(c, s);

	for (size_t i = 0; i < ELEMENTSOF(sections); i++) {
		x = json_object_get(root, sections[i].key);
		if (!x)
			continue;
		s = path_push_key(c, sections[i].key);
		r = sections[i].fn(c, x, p);
		if (r < 0)
			return r;
		path_pop(c, s);
	}
	x = json_object_get(root, "best_effort");
	if (x) {
		s = path_push_key(c, "best_effort");
		r = want_bool(c, x, &p->best_effort);
		if (r < 0)
			return r;
		path_pop(c, s);
	}
	return 0;
}

static void plan_freep_local(sc_plan **p)
{
	sc_plan_free(*p);
}

int plan_parse(const char *buf, size_t len, sc_plan **ret_plan, sc_diag *reterr_diag)
{
	_cleanup_(json_decrefp) json_t *root = NULL;
	_cleanup_(plan_freep_local) sc_plan *p = NULL;
	pctx c = {.path = "$", .plen = 1, .diag = reterr_diag};
	json_error_t jerr;
	int r;

	if (reterr_diag)
		memset(reterr_diag, 0, sizeof(*reterr_diag));
	if (!ret_plan || (!buf && len))
		return fail(&c, -EINVAL, "no policy given");
	if (len > POLICY_MAX_BYTES)
		return fail(&c, -E2BIG, "policy is %zu bytes, more than the limit of %u", len,
			    POLICY_MAX_BYTES);

	root = json_loadb(buf ? buf : "", len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (reterr_diag) {
			memset(reterr_diag, 0, sizeof(*reterr_diag));
			snprintf(reterr_diag->message, sizeof(reterr_diag->message), "%s",
				 jerr.text);
			reterr_diag->line = jerr.line > 0 ? jerr.line : 0;
			reterr_diag->column = jerr.column > 0 ? jerr.column : 0;
		}
		return -EBADMSG;
	}

	p = calloc(1, sizeof(*p));
	if (!p)
		return fail(&c, -ENOMEM, "%s", strerror(ENOMEM));
	r = plan_defaults(p);
	if (r < 0)
		return fail(&c, r, "%s", strerror(-r));
	r = parse_root(&c, root, p);
	if (r < 0) {
		/* Every refusal explains itself; only allocation failures get here
		 * without a message. */
		if (reterr_diag && !reterr_diag->message[0])
			(void)fail(&c, r, "%s", strerror(-r));
		return r;
	}
	*ret_plan = TAKE_PTR(p);
	return 0;
}

SC_PUBLIC int sc_plan_parse(const char *buf, size_t len, sc_plan **ret_plan, sc_diag *reterr_diag)
{
	return plan_parse(buf, len, ret_plan, reterr_diag);
}

SC_PUBLIC sc_plan *sc_plan_free(sc_plan *p)
{
	if (!p)
		return NULL;
	free(p->name);
	free(p->rootfs);
	for (size_t i = 0; i < p->n_grants; i++) {
		free(p->grants[i].path);
		free(p->grants[i].at);
	}
	free(p->grants);
	free(p->workdir);
	for (size_t i = 0; i < p->n_egress; i++)
		free(p->egress[i].host);
	free(p->egress);
	free(p->allow_private);
	for (size_t i = 0; i < p->n_credentials; i++) {
		free(p->credentials[i].host);
		free(p->credentials[i].header);
		free(p->credentials[i].value_env);
		free(p->credentials[i].value_file);
		free(p->credentials[i].format);
	}
	free(p->credentials);
	free(p->upstream_ca);
	free(p->dns);
	for (size_t i = 0; i < p->n_env; i++)
		free(p->env[i]);
	free(p->env);
	free(p->hostname);
	free(p);
	return NULL;
}

const plan_grant *plan_grant_containing(const sc_plan *p, const char *host_path)
{
	if (!p || !host_path)
		return NULL;
	for (size_t i = 0; i < p->n_grants; i++)
		if (path_is_under(host_path, p->grants[i].path))
			return &p->grants[i];
	return NULL;
}

void plan_cidr_format(const plan_cidr *c, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN];

	if (!inet_ntop(c->family == AF_INET ? AF_INET : AF_INET6, c->addr, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	snprintf(buf, size, "%s/%u", a, c->prefix);
}
