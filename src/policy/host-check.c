/* SPDX-License-Identifier: MIT */
/*
 * Checks of a parsed plan against the host: the paths it names exist and are
 * what they must be, with no symlink where the agent would see through one,
 * and the secrets its credentials name are there. The paths are found by
 * walking the same key table the parser reads policies with, so that every
 * host path in the format is checked and the diagnostic names its JSON path.
 *
 * Nothing is created or modified: paths are opened O_PATH|O_NOFOLLOW and
 * fstat()ed, secret files only read to see that they are not empty.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "policy/parse-internal.h"
#include "policy/plan.h"

/*
 * Walks an absolute, normalised path component by component from "/" with
 * O_PATH|O_NOFOLLOW, which gives openat2(RESOLVE_NO_SYMLINKS) semantics and,
 * unlike it, tells which component is the symlink. Fills *ret_st with the
 * final object's stat.
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

/* A file the supervisor reads (never shown to the agent): symlinks are fine. */
static int check_host_file(pctx *c, const char *path)
{
	struct stat st;
	char q[160];

	quote(path, 128, q, sizeof(q));
	if (stat(path, &st) < 0) {
		if (errno == ENOENT)
			return fail(c, -ENOENT, "file %s does not exist", q);
		return fail(c, -errno, "cannot stat %s: %s", q, strerror(errno));
	}
	if (!S_ISREG(st.st_mode))
		return fail(c, -EINVAL, "%s is not a regular file", q);
	return 0;
}

/* The parser compared the secret's path with the grants as written; a
 * symlink outside them may still lead inside. */
static int check_secret_file(pctx *c, const sc_plan *p, const char *path)
{
	_cleanup_free_ char *real = NULL;
	char q[160], qr[160];
	int r;

	r = check_host_file(c, path);
	if (r < 0)
		return r;
	real = realpath(path, NULL);
	if (!real)
		return fail(c, -errno, "cannot resolve %s: %s", path, strerror(errno));
	if (plan_grant_containing(p, real)) {
		quote(path, 128, q, sizeof(q));
		quote(real, 128, qr, sizeof(qr));
		return fail(c, -EINVAL,
			    "secret file %s is %s, inside a grant, where the sandbox could read it",
			    q, qr);
	}
	return 0;
}

static int check_host_path(pctx *c, const sc_plan *p, host_kind kind, const char *path)
{
	struct stat st;
	char q[160];
	int r;

	switch (kind) {
	case HOST_GRANT:
		r = walk_nofollow(c, path, &st);
		if (r < 0)
			return r;
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
			quote(path, 128, q, sizeof(q));
			return fail(c, -EINVAL, "%s is neither a directory nor a regular file", q);
		}
		return 0;
	case HOST_ROOTFS:
		r = walk_nofollow(c, path, &st);
		if (r < 0)
			return r;
		if (!S_ISDIR(st.st_mode)) {
			quote(path, 128, q, sizeof(q));
			return fail(c, -ENOTDIR, "%s is not a directory", q);
		}
		return 0;
	case HOST_FILE:
		return check_host_file(c, path);
	case HOST_SECRET:
		return check_secret_file(c, p, path);
	case _HOST_KIND_MAX:
	case _HOST_KIND_INVALID:
		break;
	}
	return -EINVAL;
}

/* Every KT_HOST_PATH of table t, whose fields live in base. */
static int check_table(pctx *c, const sc_plan *p, const key_table *t, const void *base)
{
	for (size_t i = 0; i < t->n_keys; i++) {
		const policy_key *k = &t->keys[i];
		const char *s;
		size_t sv;
		int r;

		if (k->type == KT_LIST) {
			const char *arr = *(char *const *)((const char *)base + k->off);
			size_t n = *(const size_t *)((const char *)base + k->count_off);

			for (size_t j = 0; j < n; j++) {
				sv = path_push_key(c, k->name);
				(void)path_push_index(c, j);
				r = check_table(c, p, k->sub, arr + j * k->elem_size);
				if (r < 0)
					return r;
				path_pop(c, sv);
			}
		} else if (k->sub) {
			/* Sections and object forms fill the struct they are in. */
			sv = path_push_key(c, k->name);
			r = check_table(c, p, k->sub, base);
			if (r < 0)
				return r;
			path_pop(c, sv);
		} else if (k->type == KT_HOST_PATH) {
			s = *(char *const *)((const char *)base + k->off);
			if (!s)
				continue;
			sv = path_push_key(c, k->name);
			r = check_host_path(c, p, k->host, s);
			if (r < 0)
				return r;
			path_pop(c, sv);
		}
	}
	return 0;
}

int plan_check_host(const sc_plan *p, sc_diag *reterr_diag)
{
	pctx c = {.path = "$", .plen = 1, .diag = reterr_diag};

	if (reterr_diag)
		memset(reterr_diag, 0, sizeof(*reterr_diag));
	if (!p)
		return -EINVAL;
	return check_table(&c, p, &policy_root, p);
}

/* Only whether anything but line ends is in it; the value is wiped. */
static int secret_file_empty(const char *path, bool *ret_empty)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	bool empty = true;
	int r;

	r = io_read_file_at(AT_FDCWD, path, POLICY_MAX_BYTES, &buf, &len);
	if (r < 0)
		return r;
	for (size_t i = 0; i < len && empty; i++)
		empty = buf[i] == '\n' || buf[i] == '\r';
	explicit_bzero(buf, len);
	*ret_empty = empty;
	return 0;
}

int plan_check_secret(const sc_plan *p, size_t i, sc_diag *reterr_diag)
{
	pctx c = {.path = "$", .plen = 1, .diag = reterr_diag};
	const plan_credential *cr;
	char what[512];
	bool empty = false;
	int r;

	if (reterr_diag)
		memset(reterr_diag, 0, sizeof(*reterr_diag));
	if (!p || i >= p->n_credentials)
		return -EINVAL;
	cr = &p->credentials[i];
	(void)path_push_key(&c, "net");
	(void)path_push_key(&c, "credentials");
	(void)path_push_index(&c, i);
	/* Without a header the value only replaces the placeholder. */
	if (cr->header)
		snprintf(what, sizeof(what), "the %s header the proxy adds for %s", cr->header,
			 cr->host);
	else
		snprintf(what, sizeof(what),
			 "the value the proxy puts in place of %s's placeholder "
			 "in requests to %s",
			 cr->placeholder_env ? cr->placeholder_env : "the", cr->host);
	if (cr->value_env) {
		const char *v = getenv(cr->value_env);

		(void)path_push_key(&c, "value_env");
		if (!v)
			return fail(&c, -ENOKEY, "environment variable %s is not set; it holds %s",
				    cr->value_env, what);
		if (!*v)
			return fail(&c, -ENOKEY, "environment variable %s is empty; it holds %s",
				    cr->value_env, what);
		return 0;
	}
	(void)path_push_key(&c, "value_file");
	r = secret_file_empty(cr->value_file, &empty);
	if (r < 0)
		return fail(&c, r, "cannot read %s, which holds %s: %s", cr->value_file, what,
			    strerror(-r));
	if (empty)
		return fail(&c, -ENOKEY, "%s is empty; it holds %s", cr->value_file, what);
	return 0;
}
