/* SPDX-License-Identifier: MIT */
/* Retention of the per-run audit logs (prune.h has the contract). */
#include "audit/prune.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/cleanup.h"
#include "base/parse-num.h"

#define PR_TAIL_BYTES 4096 /* a seal record is far shorter */
#define PR_SUFFIX     ".jsonl"

int pr_parse_age(const char *s, uint64_t *ret_seconds)
{
	size_t n = s ? strlen(s) : 0;
	uint64_t v = 0, ns;
	int r;

	if (n >= 2 && s[n - 1] == 'd') {
		for (size_t i = 0; i + 1 < n; i++) {
			if (s[i] < '0' || s[i] > '9')
				return -EINVAL;
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v))
				return -ERANGE;
		}
		if (__builtin_mul_overflow(v, 86400, &v))
			return -ERANGE;
		*ret_seconds = v;
		return 0;
	}
	r = parse_duration_ns(s, &ns);
	if (r < 0)
		return r;
	*ret_seconds = ns / 1000000000ULL;
	return 0;
}

/* Whether the last line of the file is an audit.seal record. */
static bool ends_sealed(int fd, off_t size)
{
	char buf[PR_TAIL_BYTES + 1];
	off_t off = size > PR_TAIL_BYTES ? size - PR_TAIL_BYTES : 0;
	ssize_t n = pread(fd, buf, (size_t)(size - off), off);
	char *last;

	if (n <= 1 || buf[n - 1] != '\n')
		return false;
	buf[n - 1] = '\0';
	last = strrchr(buf, '\n');
	last = last ? last + 1 : buf;
	return strstr(last, "\"event\":\"" AU_SEAL_EVENT "\"") != NULL;
}

static void examine(int dfd, const char *name, time_t cutoff, bool dry_run, pr_log *l)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	*l = (pr_log){.name = name, .verdict = PR_FAILED};
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		l->err = -errno;
		return;
	}
	l->size = st.st_size;
	l->mtime = st.st_mtime;
	l->sealed = ends_sealed(fd, st.st_size);
	if (st.st_mtime >= cutoff) {
		l->verdict = PR_KEPT_YOUNG;
		return;
	}
	/* A writer holds its log locked until it is closed. */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK) {
			l->verdict = PR_KEPT_RUNNING;
		} else {
			l->err = -errno;
		}
		return;
	}
	if (!dry_run && unlinkat(dfd, name, 0) < 0) {
		l->err = -errno;
		return;
	}
	l->verdict = PR_REMOVED;
}

static void closedirp(DIR **d)
{
	if (*d)
		(void)closedir(*d);
}

int pr_prune(const char *dir, time_t cutoff, bool dry_run, pr_cb cb, void *userdata)
{
	_cleanup_(closedirp) DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return -errno;
	while ((errno = 0, de = readdir(d))) {
		size_t n = strlen(de->d_name), k = strlen(PR_SUFFIX);
		struct stat st;
		pr_log l;

		if (n <= k || strcmp(de->d_name + n - k, PR_SUFFIX) != 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		examine(dirfd(d), de->d_name, cutoff, dry_run, &l);
		cb(&l, userdata);
	}
	return errno ? -errno : 0;
}
