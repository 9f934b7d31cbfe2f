/* SPDX-License-Identifier: MIT */
/*
 * Real cgroups, no mocks: creates sandbox cgroups under our own cgroup,
 * runs children in them and checks what the kernel enforced and counted.
 * Needs root (skips with 77 otherwise). On a v1 host this tests cg-v1.c;
 * tests/vm/guest-cgroup.sh runs the same binary in a cgroup2-only VM to
 * test cg-v2.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "cgroup/cg-internal.h"
#include "cgroup/cgroup.h"
#include "compat/syscalls.h"
#include "tap.h"

#define MIB		(1024ull * 1024ull)
#define TEST_MEMORY	(32 * MIB)
#define TEST_CPU_MILLIS 200u
#define TEST_PIDS	8u
#define MAX_PATHS	8

static sc_plan test_plan(uint64_t memory, uint64_t cpu_millis, uint64_t pids)
{
	sc_plan p;

	memset(&p, 0, sizeof(p));
	p.version = 1;
	p.memory = memory;
	p.cpu_millis = cpu_millis;
	p.pids = pids;
	p.wall_ns = PLAN_UNLIMITED;
	p.nofile = 1024;
	p.fsize = PLAN_UNLIMITED;
	return p;
}

static void test_name(char *buf, size_t len, const char *what)
{
	(void)snprintf(buf, len, "sandcap-test-%d-%s", (int)getpid(), what);
}

/* Where the kernel says pid lives, as absolute host paths of directories
 * whose last component is name: one per v1 hierarchy, or the v2 one. */
typedef struct cg_paths {
	char path[MAX_PATHS][512];
	size_t n;
} cg_paths;

static int find_paths(pid_t pid, const char *name, cg_paths *ret)
{
	char file[64], *buf = NULL, *line, *save = NULL;
	size_t nlen = strlen(name);
	int r;

	(void)snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	r = io_read_file_at(AT_FDCWD, file, 1 << 16, &buf, NULL);
	if (r < 0)
		return r;
	ret->n = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		size_t plen;
		char ctrl[128];

		if (!c2)
			continue;
		plen = strlen(c2 + 1);
		if (plen < nlen + 1 || strcmp(c2 + 1 + plen - nlen, name) != 0 ||
		    c2[plen - nlen] != '/' || ret->n >= MAX_PATHS)
			continue;
		(void)snprintf(ctrl, sizeof(ctrl), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
		if (ctrl[0] == '\0')
			(void)snprintf(ret->path[ret->n++], sizeof(ret->path[0]), "%s%s", CG_ROOT,
				       c2 + 1);
		else {
			char *comma = strchr(ctrl, ',');

			if (comma)
				*comma = '\0';
			(void)snprintf(ret->path[ret->n++], sizeof(ret->path[0]), "%s/%s%s",
				       CG_ROOT, ctrl, c2 + 1);
		}
	}
	free(buf);
	return 0;
}

/* Reads the file in whichever of the paths has it; trailing newline cut. */
static int read_in(const cg_paths *p, const char *file, char *out, size_t outlen)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		char full[700], *buf = NULL;
		size_t len = 0;

		(void)snprintf(full, sizeof(full), "%s/%s", p->path[i], file);
		if (io_read_file_at(AT_FDCWD, full, 1 << 16, &buf, &len) < 0)
			continue;
		while (len > 0 && buf[len - 1] == '\n')
			buf[--len] = '\0';
		(void)snprintf(out, outlen, "%s", buf);
		free(buf);
		return 0;
	}
	return -ENOENT;
}

static bool file_is(const cg_paths *p, const char *file, const char *want)
{
	char got[256] = "";

	if (read_in(p, file, got, sizeof(got)) < 0)
		return false;
	if (strcmp(got, want) != 0) {
		printf("# %s: got \"%s\", want \"%s\"\n", file, got, want);
		return false;
	}
	return true;
}

static bool file_exists(const cg_paths *p, const char *file)
{
	char got[256];

	return read_in(p, file, got, sizeof(got)) == 0;
}

static bool none_exist(const cg_paths *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (access(p->path[i], F_OK) == 0 || errno != ENOENT) {
			printf("# still there: %s\n", p->path[i]);
			return false;
		}
	return true;
}

static bool all_exist(const cg_paths *p)
{
	for (size_t i = 0; i < p->n; i++)
		if (access(p->path[i], F_OK) < 0) {
			printf("# gone: %s\n", p->path[i]);
			return false;
		}
	return p->n > 0;
}

/* Does dir/cgroup.procs list any process? */
static bool file_is_dir_with_procs(const char *dir)
{
	char file[800], *buf = NULL;
	bool any;

	(void)snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
	if (io_read_file_at(AT_FDCWD, file, 1 << 16, &buf, NULL) < 0)
		return true;
	any = buf[0] != '\0';
	free(buf);
	return any;
}

typedef int (*child_fn)(void);

/*
 * Starts fn in the cgroup. With CLONE_INTO_CGROUP (v2) the child is born
 * there; otherwise it is forked, attached by the parent, and released
 * through a pipe only after the attach, as the supervisor does.
 */
static pid_t spawn_in(cg_handle *h, child_fn fn, bool use_clone_fd, const char *name,
		      cg_paths *ret_paths)
{
	int gate[2];
	pid_t pid;
	char c = 0;

	if (use_clone_fd) {
		struct sc_clone_args args = {
		    .flags = CLONE_INTO_CGROUP,
		    .exit_signal = SIGCHLD,
		    .cgroup = (uint64_t)cg_clone_fd(h),
		};

		pid = sys_clone3(&args);
		if (pid == 0)
			_exit(fn());
		return pid;
	}
	if (!h) { /* a plain child, left where we are */
		pid = fork();
		if (pid == 0)
			_exit(fn());
		return pid;
	}
	if (pipe2(gate, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		(void)close(gate[1]);
		if (read(gate[0], &c, 1) != 1)
			_exit(90);
		_exit(fn());
	}
	(void)close(gate[0]);
	if (pid > 0) {
		int r = cg_attach(h, pid);

		if (r < 0)
			printf("# cg_attach: %s\n", strerror(-r));
		else {
			/* Look while the child is held: it may exit soon after. */
			if (ret_paths && find_paths(pid, name, ret_paths) < 0)
				ret_paths->n = 0;
			(void)!write(gate[1], &c, 1);
		}
	}
	(void)close(gate[1]);
	return pid;
}

static int child_alloc(void)
{
	size_t i;

	/* Touch four times the limit, a MiB at a time. */
	for (i = 0; i < 4 * TEST_MEMORY / MIB; i++) {
		char *p =
		    mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return 3;
		memset(p, 0x5a, MIB);
	}
	return 0; /* survived: the limit did not hold */
}

static int child_forker(void)
{
	unsigned i;

	/* Fork until pids.max refuses; the grandchildren stay to hold the
	 * slots and are left for cg_kill_all. */
	for (i = 0; i < 4 * TEST_PIDS; i++) {
		pid_t p = fork();

		if (p == 0) {
			for (;;)
				pause();
		}
		if (p < 0)
			return errno == EAGAIN ? 0 : 4;
	}
	return 5; /* never refused */
}

static int child_spin(void)
{
	struct timespec start, now;
	uint64_t x = 0;

	(void)clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		for (unsigned i = 0; i < 100000; i++) {
			x += i;
			__asm__ volatile("" : "+r"(x)); /* keep the loop */
		}
		(void)clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) <
		 1000000000L);
	return 0;
}

static int child_pause(void)
{
	for (;;)
		pause();
	return 0; /* not reached */
}

static int wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

static void reap_orphans(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static void test_pure(void)
{
	uint64_t q = 0, p = 0, v = 0;

	int r;

	r = cg_cpu_quota(200, &q, &p);
	ok(r == 0 && q == 20000 && p == 100000, "cpu 0.2 -> quota %" PRIu64 " period %" PRIu64, q,
	   p);
	r = cg_cpu_quota(5, &q, &p);
	ok(r == 0 && q == 5000 && p == 1000000,
	   "cpu 0.005 keeps the ratio with a 1 s period (%" PRIu64 "/%" PRIu64 ")", q, p);
	ok(cg_cpu_quota(0, &q, &p) == -EINVAL, "cpu 0 is refused");
	ok(cg_cpu_quota(UINT64_MAX - 1, &q, &p) == -ERANGE, "cpu quota overflow is refused");
	ok(cg_parse_u64("18446744073709551615\n", 21, &v) == 0 && v == UINT64_MAX, "parse u64 max");
	ok(cg_parse_u64("18446744073709551616", 20, &v) == -ERANGE, "parse u64 overflow");
	ok(cg_parse_u64("12a", 3, &v) == -EINVAL && cg_parse_u64("", 0, &v) == -EINVAL,
	   "parse u64 rejects junk");
}

static void test_bad_input(void)
{
	sc_plan plan = test_plan(PLAN_UNLIMITED, PLAN_UNLIMITED, PLAN_UNLIMITED);
	cg_handle *h = NULL;

	ok(cg_create(&plan, "../escape", &h) == -EINVAL && !h, "name with / and .. refused");
	ok(cg_create(&plan, "cgroup.procs", &h) == -EINVAL && !h,
	   "name colliding with an interface file refused");
	ok(cg_create(&plan, "", &h) == -EINVAL && !h, "empty name refused");
	ok(cg_destroy(NULL) == NULL, "cg_destroy(NULL) is a no-op");
}

static void test_limits_written(cg_version v)
{
	sc_plan plan = test_plan(TEST_MEMORY, TEST_CPU_MILLIS, 16);
	cg_handle *h = NULL;
	cg_paths paths = {.n = 0};
	char name[64];
	pid_t pid;
	int r;

	test_name(name, sizeof(name), "limits");
	r = cg_create(&plan, name, &h);
	ok(r == 0, "cg_create with memory, cpu and pids limits (%s)", strerror(-r));
	if (r < 0)
		return;
	ok(cg_handle_version(h) == v, "handle version matches cg_detect");
	ok(v == CG_V2 ? cg_clone_fd(h) >= 0 : cg_clone_fd(h) == -1,
	   "cg_clone_fd: a directory on v2, -1 on v1 (%d)", cg_clone_fd(h));
	{
		cg_handle *dup = NULL;

		r = cg_create(&plan, name, &dup);
		ok(r == -EEXIST && !dup, "a second cgroup of the same name is refused (%s)",
		   strerror(-r));
		dup = cg_destroy(dup);
	}
	/* Attach explicitly even on v2, to test cg_attach there too. */
	pid = spawn_in(h, child_pause, false, name, &paths);
	ok(pid > 0 && paths.n > 0, "attached child is in %zu hierarchies under %s", paths.n, name);
	for (size_t i = 0; i < paths.n; i++)
		printf("# %s\n", paths.path[i]);
	if (v == CG_V1) {
		ok(paths.n >= 3, "v1: moved in memory, cpu and pids");
		ok(file_is(&paths, "memory.limit_in_bytes", "33554432"), "memory.limit_in_bytes");
		ok(!file_exists(&paths, "memory.memsw.limit_in_bytes") ||
		       file_is(&paths, "memory.memsw.limit_in_bytes", "33554432"),
		   "memory.memsw.limit_in_bytes equals the limit (no swap escape)");
		ok(file_is(&paths, "cpu.cfs_period_us", "100000"), "cpu.cfs_period_us");
		ok(file_is(&paths, "cpu.cfs_quota_us", "20000"), "cpu.cfs_quota_us");
	} else {
		ok(paths.n == 1, "v2: one directory");
		ok(file_is(&paths, "memory.max", "33554432"), "memory.max");
		ok(!file_exists(&paths, "memory.swap.max") ||
		       file_is(&paths, "memory.swap.max", "0"),
		   "memory.swap.max is 0");
		ok(!file_exists(&paths, "memory.oom.group") ||
		       file_is(&paths, "memory.oom.group", "1"),
		   "memory.oom.group is 1");
		ok(file_is(&paths, "cpu.max", "20000 100000"), "cpu.max");
	}
	ok(file_is(&paths, "pids.max", "16"), "pids.max");
	if (pid > 0) {
		int st;

		r = cg_kill_all(h);
		st = wait_child(pid);
		ok(r == 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		   "cg_kill_all kills the child (%s)", strerror(-r));
	}
	h = cg_destroy(h);
	ok(h == NULL && none_exist(&paths), "cg_destroy removes every directory");
}

static void test_unlimited(void)
{
	sc_plan plan = test_plan(PLAN_UNLIMITED, PLAN_UNLIMITED, PLAN_UNLIMITED);
	cg_handle *h = NULL;
	cg_paths paths = {.n = 0};
	char name[64];
	pid_t pid;
	int r;

	test_name(name, sizeof(name), "unlimited");
	r = cg_create(&plan, name, &h);
	ok(r == 0, "cg_create without limits (%s)", strerror(-r));
	if (r < 0)
		return;
	pid = spawn_in(h, child_pause, false, name, &paths);
	if (cg_handle_version(h) == CG_V2)
		ok(pid > 0 && paths.n > 0 && file_is(&paths, "pids.max", "max"),
		   "PLAN_UNLIMITED writes nothing: pids.max stays \"max\"");
	else {
		char got[64];

		ok(pid > 0 && paths.n > 0 && read_in(&paths, "pids.max", got, sizeof(got)) < 0 &&
		       read_in(&paths, "memory.limit_in_bytes", got, sizeof(got)) == 0,
		   "v1 without limits: a memory directory, no pids directory");
	}
	h = cg_destroy(h); /* with the child still running inside */
	ok(pid > 0 && WIFSIGNALED(wait_child(pid)) && none_exist(&paths),
	   "cg_destroy kills a live child and removes the directories");
}

static void test_oom(cg_version v)
{
	sc_plan plan = test_plan(TEST_MEMORY, PLAN_UNLIMITED, PLAN_UNLIMITED);
	cg_handle *h = NULL;
	cg_stats st;
	char name[64];
	pid_t pid;
	int r, status;

	test_name(name, sizeof(name), "oom");
	r = cg_create(&plan, name, &h);
	ok(r == 0, "cg_create memory 32M (%s)", strerror(-r));
	if (r < 0)
		return;
	/* On v2 the child is born in the cgroup via clone3(CLONE_INTO_CGROUP). */
	pid = spawn_in(h, child_alloc, v == CG_V2, NULL, NULL);
	status = pid > 0 ? wait_child(pid) : -1;
	ok(pid > 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	   "allocating 128M under a 32M limit gets SIGKILLed (status 0x%x)", (unsigned)status);
	r = cg_read_stats(h, &st);
	ok(r == 0, "cg_read_stats (%s)", strerror(-r));
	ok(r == 0 && st.oom_kills != UINT64_MAX && st.oom_kills >= 1,
	   "oom_kills read back from the cgroup: %" PRIu64, st.oom_kills);
	/* v1's memory.failcnt stays 0 on some kernels even across an OOM
	 * kill (seen on 6.18), so there it must only be readable; v2's
	 * memory.events "max" is reliable. */
	ok(r == 0 && st.memory_max_hits != UINT64_MAX && (v == CG_V1 || st.memory_max_hits >= 1),
	   "memory_max_hits: %" PRIu64, st.memory_max_hits);
	if (st.memory_peak != UINT64_MAX)
		ok(st.memory_peak > TEST_MEMORY / 2 && st.memory_peak <= TEST_MEMORY,
		   "memory_peak %" PRIu64 " is near and not above the limit", st.memory_peak);
	else
		tap_skip("memory_peak", "not available on this kernel");
	h = cg_destroy(h);
}

static void test_pids(void)
{
	sc_plan plan = test_plan(PLAN_UNLIMITED, PLAN_UNLIMITED, TEST_PIDS);
	cg_handle *h = NULL;
	cg_paths paths = {.n = 0};
	cg_stats st;
	char name[64];
	pid_t pid;
	int r, status;

	test_name(name, sizeof(name), "pids");
	r = cg_create(&plan, name, &h);
	ok(r == 0, "cg_create pids %u (%s)", TEST_PIDS, strerror(-r));
	if (r < 0)
		return;
	pid = spawn_in(h, child_forker, false, name, &paths);
	status = pid > 0 ? wait_child(pid) : -1;
	ok(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "fork fails with EAGAIN at pids.max (status 0x%x)", (unsigned)status);
	r = cg_read_stats(h, &st);
	ok(r == 0 && st.pids_max_hits != UINT64_MAX && st.pids_max_hits >= 1,
	   "pids_max_hits read back: %" PRIu64, st.pids_max_hits);
	ok(file_is(&paths, "pids.current", "7"), "the %u grandchildren still hold their slots",
	   TEST_PIDS - 1);
	r = cg_kill_all(h);
	reap_orphans();
	ok(r == 0 && file_is(&paths, "cgroup.procs", ""),
	   "cg_kill_all empties the cgroup of orphans (%s)", strerror(-r));
	h = cg_destroy(h);
	ok(none_exist(&paths), "cg_destroy removes every directory");
}

static void test_cpu(void)
{
	sc_plan plan = test_plan(PLAN_UNLIMITED, TEST_CPU_MILLIS, PLAN_UNLIMITED);
	cg_handle *h = NULL;
	cg_stats before, after;
	char name[64];
	pid_t pid;
	int r, status;

	test_name(name, sizeof(name), "cpu");
	r = cg_create(&plan, name, &h);
	ok(r == 0, "cg_create cpu 0.2 (%s)", strerror(-r));
	if (r < 0)
		return;
	r = cg_read_stats(h, &before);
	pid = spawn_in(h, child_spin, false, NULL, NULL);
	status = pid > 0 ? wait_child(pid) : -1;
	ok(r == 0 && pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "busy child ran 1 s of wall time");
	r = cg_read_stats(h, &after);
	ok(r == 0 && after.nr_throttled != UINT64_MAX && after.nr_throttled > before.nr_throttled,
	   "throttled periods: %" PRIu64, after.nr_throttled - before.nr_throttled);
	ok(r == 0 && after.throttled_ns != UINT64_MAX && after.throttled_ns > before.throttled_ns,
	   "throttled time: %" PRIu64 " ms", (after.throttled_ns - before.throttled_ns) / 1000000);
	/* 0.2 of a core over 1 s, plus a period of slack for the start. */
	ok(r == 0 && after.cpu_usage_ns != UINT64_MAX && after.cpu_usage_ns > 0 &&
	       after.cpu_usage_ns < 400000000ull,
	   "cpu usage %" PRIu64 " ms stays near the 200 ms quota", after.cpu_usage_ns / 1000000);
	h = cg_destroy(h);
}

static int child_check_cgroupns(void)
{
	char *buf = NULL;
	int r;

	/* Born in the sandbox cgroup, which is the root of its new cgroup
	 * namespace: the v2 line reads "0::/". */
	if (getpid() != 1)
		return 10;
	r = io_read_file_at(AT_FDCWD, "/proc/self/cgroup", 4096, &buf, NULL);
	if (r < 0)
		return 11;
	r = strcmp(buf, "0::/\n") == 0 ? 0 : 12;
	free(buf);
	return r;
}

/* v2 only: the way the supervisor starts the sandbox, clone3 into the
 * cgroup together with every new namespace. */
static void test_v2_clone_with_namespaces(void)
{
	sc_plan plan = test_plan(TEST_MEMORY, TEST_CPU_MILLIS, TEST_PIDS);
	cg_handle *h = NULL;
	char name[64];
	pid_t pid;
	int r, status;

	test_name(name, sizeof(name), "ns");
	r = cg_create(&plan, name, &h);
	if (r < 0) {
		ok(false, "cg_create (%s)", strerror(-r));
		return;
	}
	struct sc_clone_args args = {
	    .flags = CLONE_INTO_CGROUP | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET |
		     CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP,
	    .exit_signal = SIGCHLD,
	    .cgroup = (uint64_t)cg_clone_fd(h),
	};
	pid = sys_clone3(&args);
	if (pid == 0)
		_exit(child_check_cgroupns());
	status = pid > 0 ? wait_child(pid) : -1;
	ok(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "v2: clone3(CLONE_INTO_CGROUP | all namespaces) starts pid 1 at the root of its "
	   "cgroup namespace (status 0x%x, %s)",
	   (unsigned)status, pid < 0 ? strerror(errno) : "");
	h = cg_destroy(h);
}

static int write_pid(const char *dir, pid_t pid)
{
	char file[600], num[24];

	(void)snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
	(void)snprintf(num, sizeof(num), "%d", (int)pid);
	return io_write_file_at(AT_FDCWD, file, num);
}

/*
 * v2 only: when the supervisor shares its cgroup with a process that is not
 * its own, cg_create may move only itself out of the way, so the "no
 * internal process" rule still forbids enabling controllers: -EBUSY, and
 * no sandbox cgroup appears.
 */
static void test_v2_shared_cgroup(void)
{
	sc_plan plan = test_plan(TEST_MEMORY, PLAN_UNLIMITED, PLAN_UNLIMITED);
	char *own = NULL, home[512], shared[600], leaf[700], made[800], name[64];
	cg_handle *h = NULL;
	pid_t sleeper;
	int r;

	if (cg_self_path(NULL, &own) < 0) {
		ok(false, "own cgroup path");
		return;
	}
	(void)snprintf(home, sizeof(home), "%s%s", CG_ROOT, strcmp(own, "/") == 0 ? "" : own);
	free(own);
	/* Beside our "supervisor" leaf if cg_create made one, where the
	 * controllers are available; else below us. */
	(void)snprintf(shared, sizeof(shared), "%s", home);
	if (strlen(shared) > 11 && strcmp(shared + strlen(shared) - 11, "/supervisor") == 0)
		shared[strlen(shared) - 11] = '\0';
	(void)snprintf(shared + strlen(shared), sizeof(shared) - strlen(shared),
		       "/sandcap-test-%d-shared", (int)getpid());
	(void)snprintf(leaf, sizeof(leaf), "%s/supervisor", shared);
	test_name(name, sizeof(name), "busy");
	(void)snprintf(made, sizeof(made), "%s/%s", shared, name);
	if (mkdir(shared, 0755) < 0) {
		ok(false, "mkdir %s: %s", shared, strerror(errno));
		return;
	}
	sleeper = spawn_in(NULL, child_pause, false, NULL, NULL);
	r = sleeper > 0 ? write_pid(shared, sleeper) : -ECHILD;
	if (r >= 0)
		r = write_pid(shared, getpid());
	if (r >= 0) {
		r = cg_create(&plan, name, &h);
		ok(r == -EBUSY && !h && access(made, F_OK) < 0,
		   "v2: cg_create in a cgroup shared with a foreign process: -EBUSY (%s)",
		   strerror(-r));
		h = cg_destroy(h);
	} else
		ok(false, "set up the shared cgroup: %s", strerror(-r));
	(void)write_pid(home, getpid());
	if (sleeper > 0) {
		(void)kill(sleeper, SIGKILL);
		(void)wait_child(sleeper);
	}
	(void)rmdir(leaf);
	ok(rmdir(shared) == 0, "shared cgroup removed after the check");
}

/* The nested cgroup a sub-sandbox's supervisor makes inside ours: this
 * child creates one under its own cgroup and moves itself into it, so the
 * outer cgroup holds no process directly. */
static int nest_ready[2] = {-1, -1};

static int child_nest(void)
{
	sc_plan plan = test_plan(PLAN_UNLIMITED, PLAN_UNLIMITED, PLAN_UNLIMITED);
	cg_handle *inner = NULL;
	char c = 1;

	if (cg_create(&plan, "nested", &inner) < 0 || cg_attach(inner, getpid()) < 0)
		return 3;
	(void)!write(nest_ready[1], &c, 1);
	for (;;)
		pause();
}

static void test_nested_v1(void)
{
	sc_plan plan = test_plan(PLAN_UNLIMITED, PLAN_UNLIMITED, PLAN_UNLIMITED);
	cg_handle *h = NULL;
	cg_paths paths = {.n = 0};
	char name[64], c = 0;
	pid_t pid;
	int r;

	test_name(name, sizeof(name), "nest");
	r = cg_create(&plan, name, &h);
	ok(r == 0, "cg_create for nesting (%s)", strerror(-r));
	if (r < 0 || pipe2(nest_ready, O_CLOEXEC) < 0)
		return;
	pid = spawn_in(h, child_nest, false, name, &paths);
	ok(pid > 0 && read(nest_ready[0], &c, 1) == 1 && c == 1,
	   "a process in the cgroup creates a nested one and moves into it");
	h = cg_destroy(h);
	ok(pid > 0 && WIFSIGNALED(wait_child(pid)) && none_exist(&paths),
	   "cg_destroy kills the process of the nested cgroup and removes both");
	(void)close(nest_ready[0]);
	(void)close(nest_ready[1]);
}

/*
 * Delegation (cg_attach_delegate): a sub-supervisor placed by the sandbox's
 * supervisor creates its child's cgroup under its own, which must end up
 * nested in the sandbox's. v2 keeps the sandbox's processes in <name>/agent
 * and the sub-supervisor in <name>/child-N/supervisor.
 */
static int deleg_gate[2] = {-1, -1}, deleg_ready[2] = {-1, -1}, deleg_go[2] = {-1, -1};

static int child_sub(void)
{
	sc_plan plan = test_plan(PLAN_UNLIMITED, PLAN_UNLIMITED, PLAN_UNLIMITED);
	cg_handle *inner = NULL;
	char c = 0;
	pid_t gc;

	if (read(deleg_gate[0], &c, 1) != 1)
		return 2;
	if (cg_create(&plan, "inner", &inner) < 0)
		return 3;
	gc = fork();
	if (gc == 0) {
		for (;;)
			pause();
	}
	if (gc < 0 || cg_attach(inner, gc) < 0)
		return 4;
	if (write(deleg_ready[1], &gc, sizeof(gc)) != sizeof(gc))
		return 5;
	if (read(deleg_go[0], &c, 1) != 1)
		return 6;
	inner = cg_destroy(inner); /* kills gc, removes inner */
	(void)wait_child(gc);
	return 0;
}

/* /proc/PID/cgroup holds a line ending in suffix. */
static bool in_cgroup(pid_t pid, const char *suffix)
{
	char file[64], want[300], *buf = NULL;
	bool found;

	(void)snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	(void)snprintf(want, sizeof(want), "%s\n", suffix);
	if (io_read_file_at(AT_FDCWD, file, 1 << 16, &buf, NULL) < 0)
		return false;
	found = strstr(buf, want) != NULL;
	if (!found)
		printf("# pid %d not in ...%s:\n%s", (int)pid, suffix, buf);
	free(buf);
	return found;
}

static void test_delegate(cg_version v)
{
	sc_plan plan = test_plan(TEST_MEMORY, PLAN_UNLIMITED, 4 * TEST_PIDS);
	cg_handle *h = NULL;
	cg_paths paths = {.n = 0};
	char name[64], want[200], dir[700] = "";
	cg_stats st;
	pid_t agent, sub, gc = 0;
	int r, status;

	plan.spawn_max_depth = 1;
	test_name(name, sizeof(name), "deleg");
	r = cg_create(&plan, name, &h);
	ok(r == 0, "cg_create for a plan with spawn (%s)", strerror(-r));
	if (r < 0)
		return;
	agent = spawn_in(h, child_pause, v == CG_V2, name, &paths);
	(void)snprintf(want, sizeof(want), "/%s%s", name, v == CG_V2 ? "/agent" : "");
	ok(agent > 0 && in_cgroup(agent, want), "the sandbox's processes are in ...%s", want);
	if (v == CG_V2) {
		char *own = NULL;

		/* Our own path, or <own>/supervisor's parent after a move. */
		if (cg_self_path(NULL, &own) == 0) {
			size_t n = strlen(own);

			if (n > 11 && strcmp(own + n - 11, "/supervisor") == 0)
				own[n - 11] = '\0';
			(void)snprintf(dir, sizeof(dir), "%s%s/%s", CG_ROOT,
				       strcmp(own, "/") == 0 ? "" : own, name);
			free(own);
		}
		ok(access(dir, F_OK) == 0 && !file_is_dir_with_procs(dir),
		   "v2: %s itself holds no process", dir);
	}
	if (pipe2(deleg_gate, O_CLOEXEC) < 0 || pipe2(deleg_ready, O_CLOEXEC) < 0 ||
	    pipe2(deleg_go, O_CLOEXEC) < 0) {
		ok(false, "pipes");
		h = cg_destroy(h);
		return;
	}
	sub = fork();
	if (sub == 0)
		_exit(child_sub());
	r = sub > 0 ? cg_attach_delegate(h, 1, sub) : -ECHILD;
	ok(r == 0, "cg_attach_delegate (%s)", strerror(-r));
	(void)!write(deleg_gate[1], "g", 1);
	if (r == 0 && read(deleg_ready[0], &gc, sizeof(gc)) == sizeof(gc)) {
		(void)snprintf(want, sizeof(want), "/%s%s", name,
			       v == CG_V2 ? "/child-1/supervisor" : "");
		ok(in_cgroup(sub, want), "the sub-supervisor is in ...%s", want);
		(void)snprintf(want, sizeof(want), "/%s%s/inner", name,
			       v == CG_V2 ? "/child-1" : "");
		ok(in_cgroup(gc, want), "the cgroup it creates is nested: ...%s", want);
		ok(cg_read_stats(h, &st) == 0 && st.memory_peak != 0,
		   "the sandbox's stats read with a child nested");
	} else
		ok(false, "the sub-supervisor made its child's cgroup");
	(void)!write(deleg_go[1], "g", 1);
	status = sub > 0 ? wait_child(sub) : -1;
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "the sub-supervisor removed its child's cgroup (status 0x%x)", (unsigned)status);
	cg_release_delegate(h, 1);
	if (v == CG_V2) {
		char child[800];

		(void)snprintf(child, sizeof(child), "%s/child-1", dir);
		ok(access(child, F_OK) < 0 && errno == ENOENT, "v2: cg_release_delegate removes %s",
		   child);
	}
	h = cg_destroy(h);
	ok(agent > 0 && WIFSIGNALED(wait_child(agent)) && none_exist(&paths) &&
	       (!dir[0] || (access(dir, F_OK) < 0 && errno == ENOENT)),
	   "cg_destroy kills the sandbox and removes its cgroup");
	for (int i = 0; i < 2; i++) {
		(void)close(deleg_gate[i]);
		(void)close(deleg_ready[i]);
		(void)close(deleg_go[i]);
	}
}

/* Sets every directory of p a few minutes back, as a sandbox that has run
 * that long; false when the file system does not take it. */
static bool age(const cg_paths *p)
{
	struct timespec t[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = time(NULL) - 600}};
	struct stat st;

	for (size_t i = 0; i < p->n; i++)
		if (utimensat(AT_FDCWD, p->path[i], t, 0) < 0 || stat(p->path[i], &st) < 0 ||
		    st.st_mtime > t[1].tv_sec)
			return false;
	return true;
}

/*
 * The sweep at each start removes cgroups left empty by a supervisor that
 * died; a live supervisor's cgroup, empty for a moment after its sandbox
 * ended (before it reads the figures and removes it), is not one: its
 * handle's lock keeps the sweep out.
 */
static void test_sweep_spares_live(void)
{
	sc_plan plan = test_plan(PLAN_UNLIMITED, PLAN_UNLIMITED, PLAN_UNLIMITED);
	cg_handle *live = NULL, *next = NULL;
	cg_paths paths = {.n = 0}, dead = {.n = 0};
	char name[64], dead_name[64], next_name[64], prefix[64];
	pid_t pid;
	int status = -1;

	test_name(name, sizeof(name), "sweep-live");
	test_name(dead_name, sizeof(dead_name), "sweep-dead");
	test_name(next_name, sizeof(next_name), "sweep-next");
	test_name(prefix, sizeof(prefix), "sweep-");
	if (cg_create(&plan, name, &live) < 0) {
		ok(false, "cg_create for the sweep");
		return;
	}
	pid = spawn_in(live, child_pause, false, name, &paths);
	if (pid > 0)
		(void)kill(pid, SIGKILL);
	(void)wait_child(pid);
	/* A supervisor that dies with its cgroup still there. */
	pid = fork();
	if (pid == 0) {
		cg_handle *h = NULL;

		_exit(cg_create(&plan, dead_name, &h) == 0 ? 0 : 1);
	}
	(void)waitpid(pid, &status, 0);
	dead = paths;
	for (size_t i = 0; i < dead.n; i++) {
		char *at = strstr(dead.path[i], name);

		if (at)
			memcpy(at, dead_name, strlen(dead_name)); /* same length */
	}
	if (paths.n == 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !age(&paths) ||
	    !age(&dead)) {
		tap_skip("the sweep", "the cgroups could not be made or aged");
		live = cg_destroy(live);
		return;
	}
	if (cg_create(&plan, next_name, &next) == 0)
		(void)cg_sweep_stale(next, prefix);
	ok(all_exist(&paths), "the sweep leaves a live supervisor's empty cgroup alone");
	ok(none_exist(&dead), "... and removes the one whose supervisor died");
	next = cg_destroy(next);
	live = cg_destroy(live);
	ok(none_exist(&paths), "the live one goes with its handle");
}

int main(void)
{
	char reason[1024];
	cg_version v = _CG_VERSION_INVALID;
	int r;

	if (geteuid() != 0) {
		tap_skip_all("needs root to create cgroups");
	}
	/* Orphaned grandchildren come back to us, so nothing outlives the
	 * test as a zombie holding a cgroup. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	r = cg_detect(&v, reason, sizeof(reason));
	ok(r == 0, "cg_detect: %s", reason);
	if (r < 0) {
		printf("Bail out! no usable cgroup hierarchy\n");
		return 1;
	}
	printf("# testing cgroup v%d\n", v == CG_V2 ? 2 : 1);
	test_pure();
	test_bad_input();
	test_limits_written(v);
	test_unlimited();
	test_oom(v);
	test_pids();
	test_cpu();
	if (v == CG_V1)
		test_nested_v1();
	test_delegate(v);
	test_sweep_spares_live();
	if (v == CG_V2) {
		test_v2_clone_with_namespaces();
		test_v2_shared_cgroup();
	}
	reap_orphans();
	return tap_done();
}
