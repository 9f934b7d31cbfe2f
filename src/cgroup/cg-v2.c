/* SPDX-License-Identifier: MIT */
/*
 * cgroup v2 (Documentation/admin-guide/cgroup-v2.rst). One directory,
 * <own>/<name>, where <own> is the supervisor's cgroup from
 * /proc/self/cgroup. Its fd serves clone3(CLONE_INTO_CGROUP), so the
 * sandbox starts inside its limits without a window. A plan with spawn
 * adds the leaf <name>/agent for the sandbox's processes and, per child,
 * <name>/child-N (docs/cgroups.md).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "cgroup/cg-internal.h"

/* The leaf the supervisor moves into when its own cgroup must become an
 * inner node (see v2_enable_controllers). */
#define CG_V2_SUPERVISOR_LEAF "supervisor"
/* With delegation: the leaf of the sandbox's own processes, and the prefix
 * of its children's cgroups, all three siblings under the sandbox's. */
#define CG_V2_AGENT_LEAF   "agent"
#define CG_V2_CHILD_PREFIX "child-"

static const char *const v2_controllers[] = {"memory", "cpu", "pids"};

__attribute__((format(printf, 3, 4))) static void v2_reason(char *reason, size_t len,
							    const char *fmt, ...)
{
	va_list ap;

	if (len == 0)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(reason, len, fmt, ap);
	va_end(ap);
}

/* Opens the v2 mount and the supervisor's own cgroup in it. */
static int v2_open_own(int *ret_ownfd, char **ret_path, char *reason, size_t reason_len)
{
	_cleanup_close_ int rootfd = -1;
	_cleanup_free_ char *path = NULL, *mroot = NULL, *sopts = NULL;
	const char *rel;
	struct statfs sfs;
	int r;

	rootfd = open(CG_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		r = -errno;
		v2_reason(reason, reason_len, "cgroup v2: cannot open %s", CG_ROOT);
		return r;
	}
	if (fstatfs(rootfd, &sfs) < 0)
		return -errno;
	if (sfs.f_type != CGROUP2_SUPER_MAGIC) {
		v2_reason(reason, reason_len, "cgroup v2: %s is not a cgroup2 mount", CG_ROOT);
		return -ENOENT;
	}
	r = cg_self_path(NULL, &path);
	if (r < 0) {
		v2_reason(reason, reason_len, "cgroup v2: %s",
			  "no \"0::\" line in /proc/self/cgroup");
		return r;
	}
	r = cg_mount_of(rootfd, &mroot, &sopts);
	if (r < 0) {
		v2_reason(reason, reason_len, "cgroup v2: %s not found in /proc/self/mountinfo",
			  CG_ROOT);
		return r;
	}
	r = cg_strip_mount_root(mroot, path, &rel);
	if (r < 0) {
		v2_reason(reason, reason_len,
			  "cgroup v2: our cgroup %s is outside the mounted hierarchy", path);
		return r;
	}
	r = cg_open_below(rootfd, rel, ret_ownfd);
	if (r < 0) {
		v2_reason(reason, reason_len, "cgroup v2: cannot open our cgroup %s", path);
		return r;
	}
	if (ret_path)
		*ret_path = TAKE_PTR(path);
	return 0;
}

static int v2_probe(char *reason, size_t reason_len)
{
	_cleanup_close_ int ownfd = -1;
	_cleanup_free_ char *path = NULL, *ctrls = NULL;
	char missing[64] = "";
	size_t i;
	int r;

	r = v2_open_own(&ownfd, &path, reason, reason_len);
	if (r < 0)
		return r;
	r = io_read_file_at(ownfd, "cgroup.controllers", CG_MAX_FILE_BYTES, &ctrls, NULL);
	if (r < 0) {
		v2_reason(reason, reason_len, "cgroup v2: cannot read %s/cgroup.controllers", path);
		return r;
	}
	for (i = 0; i < ELEMENTSOF(v2_controllers); i++)
		if (!cg_has_token(ctrls, v2_controllers[i])) {
			(void)strncat(missing, " ", sizeof(missing) - strlen(missing) - 1);
			(void)strncat(missing, v2_controllers[i],
				      sizeof(missing) - strlen(missing) - 1);
		}
	if (missing[0]) {
		if (reason_len > 0)
			(void)snprintf(reason, reason_len,
				       "cgroup v2: our cgroup %s lacks the controller(s)%s "
				       "(all of memory, cpu, pids are needed)",
				       path, missing);
		return -ENOENT;
	}
	if (reason_len > 0)
		(void)snprintf(reason, reason_len,
			       "cgroup v2: %s is cgroup2 and our cgroup %s offers memory, cpu "
			       "and pids; the sandbox cgroup is created below it",
			       CG_ROOT, path);
	return 0;
}

/* Moves this process into <own>/supervisor. */
static int v2_move_self_to_leaf(int ownfd)
{
	_cleanup_close_ int leaffd = -1;

	if (mkdirat(ownfd, CG_V2_SUPERVISOR_LEAF, 0755) < 0 && errno != EEXIST)
		return -errno;
	leaffd =
	    openat(ownfd, CG_V2_SUPERVISOR_LEAF, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (leaffd < 0)
		return -errno;
	return cg_write_procs(leaffd, getpid());
}

/* "+memory +cpu +pids", less what subtree_control of dirfd already has. */
static int v2_missing_controllers(int dirfd, char *want, size_t want_len)
{
	_cleanup_free_ char *sub = NULL;
	size_t i;
	int r;

	want[0] = '\0';
	r = io_read_file_at(dirfd, "cgroup.subtree_control", CG_MAX_FILE_BYTES, &sub, NULL);
	if (r < 0)
		return r;
	for (i = 0; i < ELEMENTSOF(v2_controllers); i++)
		if (!cg_has_token(sub, v2_controllers[i])) {
			if (want[0])
				(void)strncat(want, " ", want_len - strlen(want) - 1);
			(void)strncat(want, "+", want_len - strlen(want) - 1);
			(void)strncat(want, v2_controllers[i], want_len - strlen(want) - 1);
		}
	return 0;
}

/*
 * The sandbox cgroup needs memory, cpu and pids enabled in the parent's
 * cgroup.subtree_control. cgroup v2 forbids processes in a non-root cgroup
 * that distributes controllers to children ("no internal process" rule,
 * cgroup-v2.rst), so writing it fails with EBUSY while the supervisor
 * itself lives there. We then move the supervisor into a leaf sibling,
 * <own>/supervisor, and enable the controllers; the sandbox cgroups become
 * its siblings. We move only ourselves: other processes sharing our cgroup
 * (a login shell, say) are not ours to relocate, so then EBUSY stands and
 * the caller must start us in a cgroup of our own (e.g. a systemd scope
 * with Delegate=yes). The move is not undone at exit: the parent keeps its
 * controllers enabled, so it could not hold us again anyway.
 */
static int v2_enable_controllers(int ownfd)
{
	char want[64];
	int r;

	r = v2_missing_controllers(ownfd, want, sizeof(want));
	if (r < 0 || !want[0])
		return r;
	r = io_write_file_at(ownfd, "cgroup.subtree_control", want);
	if (r != -EBUSY)
		return r;
	r = v2_move_self_to_leaf(ownfd);
	if (r < 0)
		return r;
	return io_write_file_at(ownfd, "cgroup.subtree_control", want);
}

/* In a cgroup that holds no process yet: nothing to move. */
static int v2_enable_in_empty(int dirfd)
{
	char want[64];
	int r;

	r = v2_missing_controllers(dirfd, want, sizeof(want));
	if (r < 0 || !want[0])
		return r;
	return io_write_file_at(dirfd, "cgroup.subtree_control", want);
}

/*
 * The cgroup the sandboxes go under. A supervisor that already sits in
 * <base>/supervisor (moved there by an earlier cg_create, or started by
 * one) uses <base>, so repeated runs stay siblings instead of nesting one
 * level deeper each time.
 */
static int v2_open_base(int *ret_basefd)
{
	_cleanup_close_ int ownfd = -1;
	_cleanup_free_ char *path = NULL;
	const char *slash;
	int r;

	r = v2_open_own(&ownfd, &path, NULL, 0);
	if (r < 0)
		return r;
	slash = strrchr(path, '/');
	/* Also "/supervisor": the root of a cgroup namespace is not exempt
	 * from the rule, so we may have made that leaf there. */
	if (slash && strcmp(slash + 1, CG_V2_SUPERVISOR_LEAF) == 0) {
		_cleanup_close_ int parentfd =
		    openat(ownfd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		_cleanup_free_ char *sub = NULL;
		size_t i;
		bool all = true;

		if (parentfd < 0)
			return -errno;
		r = io_read_file_at(parentfd, "cgroup.subtree_control", CG_MAX_FILE_BYTES, &sub,
				    NULL);
		if (r < 0)
			return r;
		for (i = 0; i < ELEMENTSOF(v2_controllers); i++)
			all = all && cg_has_token(sub, v2_controllers[i]);
		if (all) {
			*ret_basefd = TAKE_FD(parentfd);
			return 0;
		}
	}
	*ret_basefd = TAKE_FD(ownfd);
	return 0;
}

/* OOM policy: on OOM, kill the whole of the cgroup rather than one
 * process of it: a half-killed agent is an inconsistent one
 * (cgroup-v2.rst). Absent before 4.19. */
static int v2_oom_group(int dirfd)
{
	return cg_optional(io_write_file_at(dirfd, "memory.oom.group", "1"));
}

/* oom_group: false when the sandbox's processes live in a leaf below
 * dirfd, which then gets it: set here, an OOM kill caused by a child would
 * take the parent with it (mem_cgroup_get_oom_group() picks the highest
 * cgroup with oom.group up to the one whose limit was hit). */
static int v2_write_limits(int dirfd, const sc_plan *plan, bool oom_group)
{
	int r;

	if (plan->memory != PLAN_UNLIMITED) {
		r = cg_write_u64(dirfd, "memory.max", plan->memory);
		if (r < 0)
			return r;
		/* Without this the sandbox could grow past memory.max into
		 * swap. The file is absent when the kernel has no swap
		 * accounting, and then there is no swap to escape into. */
		r = cg_optional(io_write_file_at(dirfd, "memory.swap.max", "0"));
		if (r < 0)
			return r;
	}
	r = oom_group ? v2_oom_group(dirfd) : 0;
	if (r < 0)
		return r;
	if (plan->cpu_millis != PLAN_UNLIMITED) {
		uint64_t quota, period;
		char buf[48];

		r = cg_cpu_quota(plan->cpu_millis, &quota, &period);
		if (r < 0)
			return r;
		(void)snprintf(buf, sizeof(buf), "%" PRIu64 " %" PRIu64, quota, period);
		r = io_write_file_at(dirfd, "cpu.max", buf);
		if (r < 0)
			return r;
	}
	if (plan->pids != PLAN_UNLIMITED) {
		r = cg_write_u64(dirfd, "pids.max", plan->pids);
		if (r < 0)
			return r;
	}
	return 0;
}

static int v2_create(cg_handle *h, const sc_plan *plan)
{
	cg_dir *d = &h->dirs[0];
	bool delegating;
	int r;

	r = v2_open_base(&d->parentfd);
	if (r < 0)
		return r;
	h->n_dirs = 1;
	r = v2_enable_controllers(d->parentfd);
	if (r < 0)
		return r;
	r = cg_mkdir_open(d->parentfd, h->name, d);
	if (r < 0)
		return r;
	delegating = plan->spawn_max_depth > 0;
	r = v2_write_limits(d->dirfd, plan, !delegating);
	if (r < 0 || !delegating)
		return r;
	/*
	 * Children's cgroups must be nested in ours for our limits to bound
	 * them, and v2 lets a non-root cgroup distribute controllers only
	 * while it holds no process ("no internal process" rule): our
	 * processes go to the leaf <name>/agent, each child's supervisor to
	 * <name>/child-N (v2_delegate). Controllers first: the cgroup is
	 * still empty.
	 */
	r = v2_enable_in_empty(d->dirfd);
	if (r < 0)
		return r;
	if (mkdirat(d->dirfd, CG_V2_AGENT_LEAF, 0755) < 0)
		return -errno;
	h->leaffd =
	    openat(d->dirfd, CG_V2_AGENT_LEAF, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (h->leaffd < 0)
		return -errno;
	return v2_oom_group(h->leaffd);
}

/* Where the sandbox's own processes live. */
static int v2_procs_fd(const cg_handle *h)
{
	return h->leaffd >= 0 ? h->leaffd : h->dirs[0].dirfd;
}

static int v2_clone_fd(const cg_handle *h)
{
	return v2_procs_fd(h);
}

static int v2_attach(cg_handle *h, pid_t pid)
{
	return cg_write_procs(v2_procs_fd(h), pid);
}

/*
 * <name>/child-<slot>, with the controllers enabled, and the sub-supervisor
 * in its leaf <name>/child-<slot>/supervisor: v2_open_base() of the
 * sub-supervisor then picks <name>/child-<slot>, and the child sandbox's
 * cgroup lands beside that leaf, inside our limits.
 */
static int v2_delegate(cg_handle *h, unsigned slot, pid_t pid)
{
	_cleanup_close_ int childfd = -1, leaffd = -1;
	char name[32];
	int r;

	if (h->leaffd < 0)
		return -EOPNOTSUPP; /* created for a plan without spawn */
	(void)snprintf(name, sizeof(name), CG_V2_CHILD_PREFIX "%u", slot);
	if (mkdirat(h->dirs[0].dirfd, name, 0755) < 0)
		return -errno;
	childfd = openat(h->dirs[0].dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (childfd < 0) {
		r = -errno;
		goto fail;
	}
	r = v2_enable_in_empty(childfd);
	if (r < 0)
		goto fail;
	if (mkdirat(childfd, CG_V2_SUPERVISOR_LEAF, 0755) < 0) {
		r = -errno;
		goto fail;
	}
	leaffd =
	    openat(childfd, CG_V2_SUPERVISOR_LEAF, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = leaffd < 0 ? -errno : cg_write_procs(leaffd, pid);
	if (r >= 0)
		return 0;
fail:
	if (childfd >= 0)
		cg_tree_rmdir_children(childfd);
	(void)unlinkat(h->dirs[0].dirfd, name, AT_REMOVEDIR);
	return r;
}

static void v2_undelegate(cg_handle *h, unsigned slot)
{
	_cleanup_close_ int childfd = -1;
	char name[32];

	if (h->leaffd < 0)
		return;
	(void)snprintf(name, sizeof(name), CG_V2_CHILD_PREFIX "%u", slot);
	childfd = openat(h->dirs[0].dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (childfd < 0)
		return;
	/* A directory still populated stays (EBUSY): cg_destroy kills and
	 * removes the whole tree. */
	cg_tree_rmdir_children(childfd);
	(void)unlinkat(h->dirs[0].dirfd, name, AT_REMOVEDIR);
}

static uint64_t us_to_ns(uint64_t us)
{
	uint64_t ns;

	return __builtin_mul_overflow(us, 1000u, &ns) ? UINT64_MAX - 1 : ns;
}

static int v2_entry_fds(const cg_handle *h, int *fds, size_t max)
{
	if (max < 1)
		return -ENOBUFS;
	fds[0] = openat(v2_procs_fd(h), "cgroup.procs", O_WRONLY | O_CLOEXEC);
	return fds[0] < 0 ? -errno : 1;
}

static int v2_read_stats(cg_handle *h, cg_stats *ret)
{
	int fd = h->dirs[0].dirfd;
	uint64_t v;
	int r;

	r = cg_read_keyed(fd, "cpu.stat", "usage_usec", &v);
	if (r >= 0)
		ret->cpu_usage_ns = us_to_ns(v);
	else if (cg_optional(r) < 0)
		return r;
	r = cg_read_keyed(fd, "cpu.stat", "throttled_usec", &v);
	if (r >= 0)
		ret->throttled_ns = us_to_ns(v);
	else if (cg_optional(r) < 0)
		return r;
	r = cg_optional(cg_read_keyed(fd, "cpu.stat", "nr_throttled", &ret->nr_throttled));
	if (r < 0)
		return r;
	/* memory.peak appeared in 5.19; without it the peak stays unknown. */
	r = cg_optional(cg_read_u64(fd, "memory.peak", &ret->memory_peak));
	if (r < 0)
		return r;
	/* CPU, the peak and limit hits are the whole sandbox's, children
	 * included (the limits are on this cgroup). OOM kills are those of
	 * the sandbox's own processes, in its leaf: a child's OOM kill is
	 * reported as the child's, as on v1, where the counter is local. */
	r = cg_optional(
	    cg_read_keyed(v2_procs_fd(h), "memory.events", "oom_kill", &ret->oom_kills));
	if (r < 0)
		return r;
	r = cg_optional(cg_read_keyed(fd, "memory.events", "max", &ret->memory_max_hits));
	if (r < 0)
		return r;
	r = cg_optional(cg_read_keyed(fd, "pids.events", "max", &ret->pids_max_hits));
	if (r < 0)
		return r;
	r = cg_optional(cg_read_u64(fd, "memory.current", &ret->memory_current));
	if (r < 0)
		return r;
	return cg_optional(cg_read_u64(fd, "pids.current", &ret->pids_current));
}

static int v2_is_empty(cg_handle *h)
{
	uint64_t populated;
	int r;

	r = cg_read_keyed(h->dirs[0].dirfd, "cgroup.events", "populated", &populated);
	if (r < 0)
		return r;
	return populated == 0;
}

static int v2_kill_all(cg_handle *h)
{
	int fd = h->dirs[0].dirfd;
	unsigned waited;
	size_t seen = 0;
	int r, empty;

	/* cgroup.kill (5.14) kills atomically, forks included. Older kernels:
	 * signal what is listed until nothing is; pids.max bounds how fast a
	 * fork loop can refill the list. */
	r = io_write_file_at(fd, "cgroup.kill", "1");
	if (r < 0 && r != -ENOENT)
		return r;
	for (waited = 0; waited <= CG_DESTROY_WAIT_MS; waited += CG_POLL_STEP_MS) {
		if (r == -ENOENT) {
			int k = cg_tree_kill(fd, &seen);

			if (k < 0)
				return k;
		}
		/* The kill is asynchronous: the caller is promised an empty
		 * cgroup, as on v1, so wait for "populated 0". */
		empty = v2_is_empty(h);
		if (empty != 0)
			return empty < 0 ? empty : 0;
		cg_poll_sleep();
	}
	return -EBUSY;
}

/* cgroup.freeze (5.2) of the sandbox's cgroup, its children included;
 * "frozen" in cgroup.events says when every task has stopped. */
static int v2_freeze(cg_handle *h, bool frozen)
{
	int fd = h->dirs[0].dirfd;
	int r = io_write_file_at(fd, "cgroup.freeze", frozen ? "1" : "0");

	if (r == -ENOENT)
		return -EOPNOTSUPP;
	for (unsigned waited = 0; r >= 0 && waited <= CG_DESTROY_WAIT_MS;
	     waited += CG_POLL_STEP_MS) {
		uint64_t v = 0;

		r = cg_read_keyed(fd, "cgroup.events", "frozen", &v);
		if (r >= 0 && (v == 1) == frozen)
			return 0;
		cg_poll_sleep();
	}
	return r < 0 ? r : -EBUSY;
}

const cg_ops cg_v2_ops = {
    .version = CG_V2,
    .probe = v2_probe,
    .entry_fds = v2_entry_fds,
    .create = v2_create,
    .clone_fd = v2_clone_fd,
    .attach = v2_attach,
    .delegate = v2_delegate,
    .undelegate = v2_undelegate,
    .read_stats = v2_read_stats,
    .kill_all = v2_kill_all,
    .freeze = v2_freeze,
};

int cg_delegated(char *reason, size_t reason_len)
{
	_cleanup_close_ int ownfd = -1;
	_cleanup_free_ char *path = NULL;
	int r;

	r = v2_probe(reason, reason_len);
	if (r < 0)
		return r;
	r = v2_open_own(&ownfd, &path, reason, reason_len);
	if (r < 0)
		return r;
	/* What cg_create() writes: a directory below ours, our controllers
	 * for it, and (on EBUSY) ourselves into a leaf. */
	if (faccessat(ownfd, ".", W_OK, AT_EACCESS) < 0 ||
	    faccessat(ownfd, "cgroup.subtree_control", W_OK, AT_EACCESS) < 0 ||
	    faccessat(ownfd, "cgroup.procs", W_OK, AT_EACCESS) < 0) {
		r = -errno;
		v2_reason(reason, reason_len,
			  "cgroup v2: our cgroup %s is not delegated to us (we may not write it)",
			  path);
		return r;
	}
	v2_reason(reason, reason_len, "cgroup v2: our cgroup %s is delegated to us", path);
	return 0;
}
