/* SPDX-License-Identifier: MIT */
/* The container's cgroup and its freezer (oci/cgroups.h). */
#include "oci/cgroups.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"

#define CG_ROOT "/sys/fs/cgroup"
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* The v1 hierarchies a sandbox is measured by (docs/cgroups.md). */
static const char *const v1_measured[] = {"memory", "cpu", "cpuacct", "pids", "blkio"};

int oci_cgroup_path_valid(const char *path)
{
	size_t len = strlen(path);
	const char *p = path;

	if (len == 0 || len > OCI_CGROUP_PATH_MAX || strchr(path, ':'))
		return -EINVAL;
	while (*p) {
		size_t n;

		p += strspn(p, "/");
		n = strcspn(p, "/");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return -EINVAL;
		p += n;
	}
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	(void)nanosleep(&ts, NULL);
}

/* mkdir -p base/path, each directory made appended to made. v2: the
 * controllers a sandbox needs enabled in each parent, base included. */
static int mkdirs(const char *base, const char *path, bool v2, char *made, size_t made_len)
{
	char dir[PATH_MAX];
	size_t blen;
	char *parent_end;

	path += strspn(path, "/");
	if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", base, path) >= sizeof(dir))
		return -ENAMETOOLONG;
	blen = strlen(base);
	parent_end = dir + blen;
	for (char *p = dir + blen + 1;; p++) {
		bool end = *p == '\0';

		if (*p != '/' && !end)
			continue;
		*p = '\0';
		if (p > dir + blen + 1 && p[-1] != '/') {
			if (v2) {
				char ctl[PATH_MAX + 32];

				/* Not checked: a parent that holds processes refuses
				 * (EBUSY, cgroup-v2.rst "no internal process"), and
				 * the sandbox's cgroup then fails, naming what is
				 * missing. */
				snprintf(ctl, sizeof(ctl), "%.*s/cgroup.subtree_control",
					 (int)(parent_end - dir), dir);
				(void)io_write_file_at(AT_FDCWD, ctl, "+memory +cpu +pids");
			}
			parent_end = p;
			if (mkdir(dir, 0755) == 0) {
				size_t used = strlen(made);

				if ((size_t)snprintf(made + used, made_len - used, "%s\n", dir) >=
				    made_len - used)
					return -ENAMETOOLONG;
			} else if (errno != EEXIST) {
				return -errno;
			}
		}
		if (end)
			return 0;
		*p = '/';
	}
}

static int join(const char *dir, pid_t pid)
{
	char file[PATH_MAX + 32], text[32];

	snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
	snprintf(text, sizeof(text), "%d", (int)pid);
	return io_write_file_at(AT_FDCWD, file, text);
}

static int v1_enter(const char *path, char *made, size_t made_len)
{
	int entered = 0;

	for (size_t i = 0; i < sizeof(v1_measured) / sizeof(v1_measured[0]); i++) {
		char base[64], dir[PATH_MAX];
		int r;

		snprintf(base, sizeof(base), CG_ROOT "/%s", v1_measured[i]);
		path += strspn(path, "/");
		if (access(base, F_OK) < 0)
			continue; /* not mounted, or co-mounted under another name */
		r = mkdirs(base, path, false, made, made_len);
		if (r >= 0) {
			snprintf(dir, sizeof(dir), "%s/%s", base, path);
			r = join(dir, 0);
		}
		if (r < 0)
			return r;
		entered++;
	}
	return entered ? 0 : -ENOENT;
}

static int v1_freezer_join(const char *path, const pid_t *pids, size_t n, char *made,
			   size_t made_len)
{
	char dir[PATH_MAX];
	int r = mkdirs(CG_ROOT "/freezer", path, false, made, made_len);

	snprintf(dir, sizeof(dir), CG_ROOT "/freezer/%s", path);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = join(dir, pids[i]);
	return r;
}

static int v1_state(const char *path, char *buf, size_t len)
{
	char file[PATH_MAX];
	_cleanup_free_ char *s = NULL;
	size_t n = 0;
	int r;

	snprintf(file, sizeof(file), CG_ROOT "/freezer/%s/freezer.state", path);
	r = io_read_file_at(AT_FDCWD, file, 64, &s, &n);
	if (r < 0)
		return r;
	snprintf(buf, len, "%.*s", (int)strcspn(s, "\n"), s);
	return 0;
}

static int v1_frozen(const char *path, pid_t pid)
{
	char st[32];
	int r = v1_state(path, st, sizeof(st));

	(void)pid;
	return r < 0 ? r : strcmp(st, "FROZEN") == 0;
}

static int v1_freeze(const char *path, pid_t pid, bool frozen)
{
	const char *want = frozen ? "FROZEN" : "THAWED";
	char file[PATH_MAX], st[32];

	(void)pid;
	snprintf(file, sizeof(file), CG_ROOT "/freezer/%s/freezer.state", path);
	/* FREEZING until every task is frozen; written again, as runc does,
	 * since a task forked meanwhile can leave it there. */
	for (int i = 0; i < 200; i++) {
		int r = io_write_file_at(AT_FDCWD, file, want);

		if (r < 0)
			return r;
		r = v1_state(path, st, sizeof(st));
		if (r < 0)
			return r;
		if (strcmp(st, want) == 0)
			return 0;
		sleep_ms(10);
	}
	return -EBUSY;
}

/* Into the leaf path/supervisor: path itself holds no process, so its
 * controllers can be enabled for the sandbox's cgroup, which sandcap's
 * v2 backend makes beside that leaf (cg-v2.c, v2_open_base). */
static int v2_enter(const char *path, char *made, size_t made_len)
{
	char leaf[PATH_MAX], dir[PATH_MAX + 16];
	int r;

	if ((size_t)snprintf(leaf, sizeof(leaf), "%s/supervisor", path) >= sizeof(leaf))
		return -ENAMETOOLONG;
	r = mkdirs(CG_ROOT, leaf, true, made, made_len);
	snprintf(dir, sizeof(dir), CG_ROOT "/%s", leaf);
	return r < 0 ? r : join(dir, 0);
}

static int v2_freezer_join(const char *path, const pid_t *pids, size_t n, char *made,
			   size_t made_len)
{
	(void)path, (void)pids, (void)n, (void)made, (void)made_len;
	return 0;
}

/* The v2 cgroup of pid, from /proc/PID/cgroup's "0::" line. */
static int v2_dir(pid_t pid, char *buf, size_t len)
{
	char file[64];
	_cleanup_free_ char *s = NULL;
	size_t n = 0;
	char *p;
	int r;

	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	r = io_read_file_at(AT_FDCWD, file, 65536, &s, &n);
	if (r < 0)
		return r;
	p = strstr(s, "0::");
	if (!p || (p != s && p[-1] != '\n'))
		return -ENOENT;
	p += 3;
	return (size_t)snprintf(buf, len, CG_ROOT "%.*s", (int)strcspn(p, "\n"), p) < len
		   ? 0
		   : -ENAMETOOLONG;
}

static int v2_frozen(const char *path, pid_t pid)
{
	char dir[PATH_MAX], file[PATH_MAX + 32];
	_cleanup_free_ char *s = NULL;
	size_t n = 0;
	int r = v2_dir(pid, dir, sizeof(dir));

	(void)path;
	if (r < 0)
		return r;
	snprintf(file, sizeof(file), "%s/cgroup.events", dir);
	r = io_read_file_at(AT_FDCWD, file, 4096, &s, &n);
	if (r < 0)
		return r;
	return strstr(s, "frozen 1") != NULL;
}

static int v2_freeze(const char *path, pid_t pid, bool frozen)
{
	char dir[PATH_MAX], file[PATH_MAX + 32];
	int r = v2_dir(pid, dir, sizeof(dir));

	if (r < 0)
		return r;
	snprintf(file, sizeof(file), "%s/cgroup.freeze", dir);
	r = io_write_file_at(AT_FDCWD, file, frozen ? "1" : "0");
	for (int i = 0; r >= 0 && i < 200; i++) {
		r = v2_frozen(path, pid);
		if (r >= 0 && (r == 1) == frozen)
			return 0;
		sleep_ms(10);
	}
	return r < 0 ? r : -EBUSY;
}

static const oci_cg_ops v1_ops = {v1_enter, v1_freezer_join, v1_freeze, v1_frozen};
static const oci_cg_ops v2_ops = {v2_enter, v2_freezer_join, v2_freeze, v2_frozen};

const oci_cg_ops *oci_cg(void)
{
	struct statfs sfs;

	return statfs(CG_ROOT, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC ? &v2_ops : &v1_ops;
}

void oci_cgroup_remove(const char *made)
{
	const char *end = made + strlen(made);

	/* Listed parents first, so from the end: children first. */
	while (end > made) {
		const char *start = end - 1;
		char dir[PATH_MAX];

		while (start > made && start[-1] != '\n')
			start--;
		snprintf(dir, sizeof(dir), "%.*s", (int)(end - start - (end[-1] == '\n')), start);
		end = start;
		for (int i = 0; dir[0] && i < 200 && rmdir(dir) < 0 && errno == EBUSY; i++)
			sleep_ms(10);
	}
}
