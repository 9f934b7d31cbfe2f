/* SPDX-License-Identifier: MIT */
/*
 * cgroup v1 (Documentation/admin-guide/cgroup-v1/). One directory per
 * hierarchy: <mount>/<own>/<name> for memory, cpu, cpuacct and pids, where
 * <own> is the supervisor's cgroup in that hierarchy (they differ: here the
 * memory cgroup may be /process_api/<id> while cpu is /). A controller
 * co-mounted with another (cpu,cpuacct) shares its directory. There is no
 * clone3(CLONE_INTO_CGROUP) on v1: the caller attaches the child before it
 * runs anything of the sandbox.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "cgroup/cg-internal.h"

static const struct {
	const char *name;
	const char *marker; /* a file every non-root cgroup of it has */
	bool required;
} v1_ctrls[_CG_V1_CTRL_MAX] = {
    [CG_V1_MEMORY] = {"memory", "memory.limit_in_bytes", true},
    [CG_V1_CPU] = {"cpu", "cpu.cfs_quota_us", true},
    /* Only for cpu_usage_ns; without it the usage is reported unknown. */
    [CG_V1_CPUACCT] = {"cpuacct", "cpuacct.usage", false},
    [CG_V1_PIDS] = {"pids", "pids.max", true},
};

static void v1_reason(char *reason, size_t len, const char *what, const char *ctrl)
{
	if (len > 0)
		(void)snprintf(reason, len, "cgroup v1: %s %s", what, ctrl);
}

/*
 * Opens the supervisor's own cgroup in the hierarchy of ctrl, mounted at
 * /sys/fs/cgroup/<ctrl> (a symlink such as cpu -> cpu,cpuacct is followed
 * for this one component only). The mount must be a v1 cgroup whose super
 * options name ctrl, so a stray directory cannot pose as a controller.
 */
static int v1_open_own_named(const char *ctrl, int *ret_ownfd, char **ret_path, char *reason,
			     size_t reason_len)
{
	_cleanup_close_ int rootfd = -1, mountfd = -1;
	_cleanup_free_ char *path = NULL, *mroot = NULL, *sopts = NULL;
	const char *rel;
	struct statfs sfs;
	int r;

	rootfd = open(CG_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		r = -errno;
		v1_reason(reason, reason_len, "cannot open", CG_ROOT);
		return r;
	}
	mountfd = openat(rootfd, ctrl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mountfd < 0) {
		r = -errno;
		v1_reason(reason, reason_len, "no hierarchy mounted at " CG_ROOT "/", ctrl);
		return r;
	}
	if (fstatfs(mountfd, &sfs) < 0)
		return -errno;
	if (sfs.f_type != CGROUP_SUPER_MAGIC) {
		v1_reason(reason, reason_len, "not a v1 cgroup mount: " CG_ROOT "/", ctrl);
		return -ENOENT;
	}
	r = cg_mount_of(mountfd, &mroot, &sopts);
	if (r < 0) {
		v1_reason(reason, reason_len, "not in /proc/self/mountinfo: " CG_ROOT "/", ctrl);
		return r;
	}
	if (!cg_has_token(sopts, ctrl)) {
		v1_reason(reason, reason_len, "mount does not carry the controller", ctrl);
		return -ENOENT;
	}
	r = cg_self_path(ctrl, &path);
	if (r < 0) {
		v1_reason(reason, reason_len, "/proc/self/cgroup has no line for", ctrl);
		return r;
	}
	r = cg_strip_mount_root(mroot, path, &rel);
	if (r < 0) {
		v1_reason(reason, reason_len, "our cgroup lies outside the mount of", ctrl);
		return r;
	}
	r = cg_open_below(mountfd, rel, ret_ownfd);
	if (r < 0) {
		v1_reason(reason, reason_len, "cannot open our cgroup of", ctrl);
		return r;
	}
	if (ret_path)
		*ret_path = TAKE_PTR(path);
	return 0;
}

static int v1_open_own(cg_v1_ctrl c, int *ret_ownfd, char **ret_path, char *reason,
		       size_t reason_len)
{
	return v1_open_own_named(v1_ctrls[c].name, ret_ownfd, ret_path, reason, reason_len);
}

static int v1_probe(char *reason, size_t reason_len)
{
	_cleanup_free_ char *mem_path = NULL;
	bool have_acct = false, have_memsw = false;
	size_t i;
	int r;

	for (i = 0; i < _CG_V1_CTRL_MAX; i++) {
		_cleanup_close_ int fd = -1;
		_cleanup_free_ char *path = NULL;

		r = v1_open_own((cg_v1_ctrl)i, &fd, &path, reason, reason_len);
		if (r < 0) {
			if (!v1_ctrls[i].required)
				continue;
			return r;
		}
		if (i == CG_V1_CPUACCT)
			have_acct = true;
		if (i == CG_V1_MEMORY) {
			have_memsw = faccessat(fd, "memory.memsw.limit_in_bytes", F_OK, 0) == 0;
			mem_path = TAKE_PTR(path);
		}
		cg_snapshot_own_keep((unsigned)i, fd);
	}
	if (reason_len > 0)
		(void)snprintf(reason, reason_len,
			       "cgroup v1: %s is not cgroup2; the v1 hierarchies memory, cpu%s and "
			       "pids are mounted under it; our memory cgroup is %s; swap %s",
			       CG_ROOT, have_acct ? ", cpuacct" : "", mem_path,
			       have_memsw ? "limited with memory.memsw"
					  : "accounting absent (memory.swappiness=0 instead)");
	return 0;
}

/* The directory serving controller c, or -1. */
static int v1_fd(const cg_handle *h, cg_v1_ctrl c)
{
	if (h->dirs[c].dirfd >= 0)
		return h->dirs[c].dirfd;
	if (h->alias[c] >= 0)
		return h->dirs[h->alias[c]].dirfd;
	return -1;
}

static int v1_write_limits(cg_handle *h, const sc_plan *plan)
{
	int r;

	if (plan->memory != PLAN_UNLIMITED) {
		int fd = v1_fd(h, CG_V1_MEMORY);

		r = cg_write_u64(fd, "memory.limit_in_bytes", plan->memory);
		if (r < 0)
			return r;
		/* memory+swap: with the same value, nothing can spill to
		 * swap. Must follow limit_in_bytes, which it may not be
		 * below. Absent without swap accounting (swapaccount=0). */
		r = cg_write_u64(fd, "memory.memsw.limit_in_bytes", plan->memory);
		if (r == -ENOENT)
			r = cg_optional(io_write_file_at(fd, "memory.swappiness", "0"));
		if (r < 0)
			return r;
	}
	if (plan->cpu_millis != PLAN_UNLIMITED) {
		int fd = v1_fd(h, CG_V1_CPU);
		uint64_t quota, period;

		r = cg_cpu_quota(plan->cpu_millis, &quota, &period);
		if (r < 0)
			return r;
		r = cg_write_u64(fd, "cpu.cfs_period_us", period);
		if (r < 0)
			return r;
		r = cg_write_u64(fd, "cpu.cfs_quota_us", quota);
		if (r < 0)
			return r;
	}
	if (plan->pids != PLAN_UNLIMITED) {
		r = cg_write_u64(v1_fd(h, CG_V1_PIDS), "pids.max", plan->pids);
		if (r < 0)
			return r;
	}
	return 0;
}

/* memory and cpuacct account every run (peak memory, CPU time); cpu and
 * pids only serve a limit, and each v1 directory costs a mkdir and rmdir
 * of about 0.1 ms on every start. */
static bool v1_needed(cg_v1_ctrl c, const sc_plan *plan)
{
	switch (c) {
	case CG_V1_CPU:
		return plan->cpu_millis != PLAN_UNLIMITED;
	case CG_V1_PIDS:
		return plan->pids != PLAN_UNLIMITED;
	case CG_V1_MEMORY:
	case CG_V1_CPUACCT:
	case _CG_V1_CTRL_MAX:
	case _CG_V1_CTRL_INVALID:
		break;
	}
	return true;
}

static int v1_create(cg_handle *h, const sc_plan *plan)
{
	dev_t devs[_CG_V1_CTRL_MAX] = {0};
	size_t i, j;
	int r;

	for (i = 0; i < _CG_V1_CTRL_MAX; i++) {
		_cleanup_close_ int ownfd = -1;
		struct stat st;

		if (!v1_needed((cg_v1_ctrl)i, plan))
			continue;
		ownfd = cg_snapshot_own_dup((unsigned)i);
		r = ownfd >= 0 ? 0 : v1_open_own((cg_v1_ctrl)i, &ownfd, NULL, NULL, 0);
		if (r < 0) {
			if (!v1_ctrls[i].required)
				continue;
			return r;
		}
		if (fstat(ownfd, &st) < 0)
			return -errno;
		devs[i] = st.st_dev;
		/* Each v1 hierarchy is its own superblock, so equal st_dev
		 * means co-mounted controllers: one directory serves both. */
		for (j = 0; j < i; j++)
			if ((h->dirs[j].dirfd >= 0) && devs[j] == st.st_dev)
				break;
		if (j < i) {
			h->alias[i] = (int)j;
			continue;
		}
		h->dirs[i].parentfd = TAKE_FD(ownfd);
		r = cg_mkdir_open(h->dirs[i].parentfd, h->name, &h->dirs[i]);
		if (r < 0)
			return r;
		if (faccessat(h->dirs[i].dirfd, v1_ctrls[i].marker, F_OK, 0) < 0)
			return -errno;
	}
	h->n_dirs = _CG_V1_CTRL_MAX;
	return v1_write_limits(h, plan);
}

static int v1_clone_fd(const cg_handle *h)
{
	(void)h;
	return -1;
}

static int v1_attach(cg_handle *h, pid_t pid)
{
	size_t i;
	int r;

	/* Memory first: it is the limit a fast allocator would race. */
	for (i = 0; i < _CG_V1_CTRL_MAX; i++) {
		if (h->dirs[i].dirfd < 0)
			continue;
		r = cg_write_procs(h->dirs[i].dirfd, pid);
		if (r < 0)
			return r;
	}
	return 0;
}

/* v1 allows processes beside child cgroups: the sub-supervisor joins the
 * sandbox cgroup, and the child's cgroup, created under its own, is nested. */
static int v1_delegate(cg_handle *h, unsigned slot, pid_t pid)
{
	(void)slot;
	return v1_attach(h, pid);
}

static void v1_undelegate(cg_handle *h, unsigned slot)
{
	/* The child's cgroup is removed by its own supervisor, or with ours. */
	(void)h;
	(void)slot;
}

/* Reads one value where the controller is available; 0 when it is not. */
/*
 * "0" written to a hierarchy's tasks file moves only the calling thread;
 * the kernel then takes no cgroup_threadgroup_rwsem (cgroup_procs_write_start:
 * a single thread that is current cannot exit or exec under it), so the
 * move needs no RCU grace period. The caller is single-threaded, so its
 * whole process moves.
 */
/* "tasks", not "cgroup.procs": a thread moving itself skips the threadgroup lock. */
static int v1_entry_fds(const cg_handle *h, int *fds, size_t max)
{
	size_t i, n = 0;

	for (i = 0; i < _CG_V1_CTRL_MAX; i++) {
		if (h->dirs[i].dirfd < 0)
			continue;
		if (n == max) {
			cg_close_all(fds, n);
			return -ENOBUFS;
		}
		fds[n] = openat(h->dirs[i].dirfd, "tasks", O_WRONLY | O_CLOEXEC);
		if (fds[n] < 0) {
			int r = -errno;

			cg_close_all(fds, n);
			return r;
		}
		n++;
	}
	return (int)n;
}

static int v1_read(const cg_handle *h, cg_v1_ctrl c, const char *file, const char *key,
		   uint64_t *ret)
{
	int fd = v1_fd(h, c);

	if (fd < 0)
		return 0;
	return cg_optional(key ? cg_read_keyed(fd, file, key, ret) : cg_read_u64(fd, file, ret));
}

/*
 * Times a charge hit the limit. With memsw equal to the limit the kernel
 * charges memory+swap first (mm/memcontrol.c, try_charge), so the hits
 * land in memory.memsw.failcnt; count both counters.
 */
static int v1_read_failcnt(const cg_handle *h, uint64_t *ret)
{
	uint64_t mem = UINT64_MAX, memsw = UINT64_MAX;
	int r;

	r = v1_read(h, CG_V1_MEMORY, "memory.failcnt", NULL, &mem);
	if (r >= 0)
		r = v1_read(h, CG_V1_MEMORY, "memory.memsw.failcnt", NULL, &memsw);
	if (r < 0)
		return r;
	if (mem == UINT64_MAX)
		return 0;
	if (memsw != UINT64_MAX && __builtin_add_overflow(mem, memsw, &mem))
		mem = UINT64_MAX - 1;
	*ret = mem;
	return 0;
}

static int v1_read_stats(cg_handle *h, cg_stats *ret)
{
	int r;

	r = v1_read(h, CG_V1_CPUACCT, "cpuacct.usage", NULL, &ret->cpu_usage_ns);
	if (r >= 0)
		r = v1_read(h, CG_V1_CPU, "cpu.stat", "throttled_time", &ret->throttled_ns);
	if (r >= 0)
		r = v1_read(h, CG_V1_CPU, "cpu.stat", "nr_throttled", &ret->nr_throttled);
	if (r >= 0)
		r = v1_read(h, CG_V1_MEMORY, "memory.max_usage_in_bytes", NULL, &ret->memory_peak);
	/* The oom_kill counter of memory.oom_control exists since 4.13. */
	if (r >= 0)
		r = v1_read(h, CG_V1_MEMORY, "memory.oom_control", "oom_kill", &ret->oom_kills);
	if (r >= 0)
		r = v1_read_failcnt(h, &ret->memory_max_hits);
	if (r >= 0)
		r = v1_read(h, CG_V1_PIDS, "pids.events", "max", &ret->pids_max_hits);
	if (r >= 0)
		r = v1_read(h, CG_V1_MEMORY, "memory.usage_in_bytes", NULL, &ret->memory_current);
	if (r >= 0)
		r = v1_read(h, CG_V1_PIDS, "pids.current", NULL, &ret->pids_current);
	return r;
}

/*
 * v1 has no cgroup.kill, and we do not require the freezer: signal every
 * listed process, again and again until none is listed. A fork loop can
 * only refill the list as fast as pids.max allows, and each pass kills
 * everything it saw, so this converges. Every hierarchy is scanned: a
 * process can be moved out of one by hand but stay in another.
 */
static int v1_kill_all(cg_handle *h)
{
	unsigned waited;
	size_t i;
	int r;

	for (waited = 0; waited <= CG_DESTROY_WAIT_MS; waited += CG_POLL_STEP_MS) {
		size_t total = 0;

		for (i = 0; i < _CG_V1_CTRL_MAX; i++) {
			size_t seen = 0;

			if (h->dirs[i].dirfd < 0)
				continue;
			r = cg_tree_kill(h->dirs[i].dirfd, &seen);
			if (r < 0)
				return r;
			total += seen;
		}
		if (total == 0)
			return 0;
		cg_poll_sleep();
	}
	return -EBUSY;
}

/* A run without cpu or pids limits makes no directory there, but one that
 * was killed may have left one: the sweep looks in every hierarchy. */
static size_t v1_own_dirs(int *fds, size_t max)
{
	dev_t devs[_CG_V1_CTRL_MAX];
	size_t n = 0;

	for (size_t i = 0; i < _CG_V1_CTRL_MAX && n < max; i++) {
		int fd = -1;
		struct stat st;
		bool seen = false;

		if (v1_open_own((cg_v1_ctrl)i, &fd, NULL, NULL, 0) < 0)
			continue;
		if (fstat(fd, &st) < 0) {
			(void)close(fd);
			continue;
		}
		for (size_t j = 0; j < n; j++)
			seen = seen || devs[j] == st.st_dev;
		if (seen) {
			(void)close(fd);
			continue;
		}
		devs[n] = st.st_dev;
		fds[n++] = fd;
	}
	return n;
}

/* Moves what cgroup.procs of from lists into to; how many were not there. */
static int v1_move_procs(int from, int to, size_t *ret_moved)
{
	_cleanup_free_ char *list = NULL, *there = NULL;
	size_t n = 0, m = 0;
	int r = io_read_file_at(from, "cgroup.procs", CG_MAX_FILE_BYTES, &list, &n);

	*ret_moved = 0;
	if (r >= 0)
		r = io_read_file_at(to, "cgroup.procs", CG_MAX_FILE_BYTES, &there, &m);
	if (r < 0)
		return r;
	for (char *p = list, *save = NULL, *tok; (tok = strtok_r(p, "\n", &save)); p = NULL) {
		char key[24];
		uint64_t pid;

		if (cg_parse_u64(tok, strlen(tok), &pid) < 0 || pid == 0 || pid > INT32_MAX)
			continue;
		snprintf(key, sizeof(key), "\n%s\n", tok);
		/* whole lines only: pid 12 is not in "312\n" */
		if (there && (strncmp(there, key + 1, strlen(key + 1)) == 0 || strstr(there, key)))
			continue;
		r = cg_write_procs(to, (pid_t)pid);
		if (r < 0 && r != -ESRCH)
			return r;
		*ret_moved += r >= 0;
	}
	return 0;
}

static int v1_freezer_state(int fd, const char *want)
{
	_cleanup_free_ char *st = NULL;
	size_t n = 0;
	int r = io_read_file_at(fd, "freezer.state", 64, &st, &n);

	return r < 0 ? r : strncmp(st, want, strlen(want)) == 0;
}

/*
 * The freezer is a hierarchy of its own on v1: the sandbox's processes are
 * moved into a cgroup of its name there, pass after pass until none is left
 * behind (a process forked before its parent moved shows up in the next
 * list; one forked after is born there). Then FROZEN, written until the
 * state says so (FREEZING while a task is on its way), as runc does.
 */
static int v1_freeze(cg_handle *h, bool frozen)
{
	const char *want = frozen ? "FROZEN" : "THAWED";
	int src = -1, r = 0;

	if (h->freezer.dirfd < 0) {
		if (!frozen)
			return 0;
		r = v1_open_own_named("freezer", &h->freezer.parentfd, NULL, NULL, 0);
		if (r < 0)
			return r == -ENOENT ? -EOPNOTSUPP : r;
		r = cg_mkdir_open(h->freezer.parentfd, h->name, &h->freezer);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < _CG_V1_CTRL_MAX && src < 0; i++)
		src = h->dirs[i].dirfd;
	for (unsigned pass = 0; frozen && src >= 0; pass++) {
		size_t moved = 0;

		if (pass >= 64)
			return -EBUSY;
		r = v1_move_procs(src, h->freezer.dirfd, &moved);
		if (r < 0)
			return r;
		if (moved == 0)
			break;
	}
	for (unsigned waited = 0; waited <= CG_DESTROY_WAIT_MS; waited += CG_POLL_STEP_MS) {
		r = io_write_file_at(h->freezer.dirfd, "freezer.state", want);
		if (r >= 0)
			r = v1_freezer_state(h->freezer.dirfd, want);
		if (r != 0)
			return r < 0 ? r : 0;
		cg_poll_sleep();
	}
	return -EBUSY;
}

const cg_ops cg_v1_ops = {
    .version = CG_V1,
    .probe = v1_probe,
    .entry_fds = v1_entry_fds,
    .create = v1_create,
    .clone_fd = v1_clone_fd,
    .attach = v1_attach,
    .delegate = v1_delegate,
    .undelegate = v1_undelegate,
    .read_stats = v1_read_stats,
    .kill_all = v1_kill_all,
    .own_dirs = v1_own_dirs,
    .freeze = v1_freeze,
};
