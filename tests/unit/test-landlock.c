/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for src/landlock (TAP). A plan with one read-only and one
 * read-write grant under a private directory (outside /tmp, which the
 * ruleset makes writable); each check forks, restricts the child with the
 * real ruleset and looks at what the kernel answers. Checks that expect a
 * denial also run unrestricted, to prove they can see the difference.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "landlock/landlock.h"
#include "proxy/proxy.h"
#include "tap.h"

static char base[] = "/var/tmp/test-landlock-XXXXXX";
static char ro_dir[128], rw_dir[128], out_dir[128], exe_copy[160], exe_other[160];
static uint16_t tcp_port;
static char abstract_name[64];

static int forced_abi = -1; /* -1: the kernel's */
static plan_grant grants[2];
static plan_egress egress[1];

static int expect_errno(long r, int want)
{
	if (r >= 0)
		return 1;
	return errno == want ? 0 : 2 + (errno & 0x7f);
}

static int open_at(const char *dir, const char *name, int flags)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return open(p, flags | O_CLOEXEC, 0600);
}

static int c_read_ro(void)
{
	char buf[8];
	int fd = open_at(ro_dir, "f", O_RDONLY);

	if (fd < 0)
		return 2 + (errno & 0x7f);
	return read(fd, buf, sizeof(buf)) == 3 ? 0 : 3;
}
static int c_write_ro(void)
{
	return expect_errno(open_at(ro_dir, "f", O_WRONLY), EACCES);
}
static int c_create_ro(void)
{
	return expect_errno(open_at(ro_dir, "new", O_WRONLY | O_CREAT), EACCES);
}
static int c_rw(void)
{
	char a[256], b[256];
	int fd = open_at(rw_dir, "f", O_RDWR | O_TRUNC);

	if (fd < 0 || write(fd, "xyz", 3) != 3)
		return 3;
	close(fd);
	fd = open_at(rw_dir, "new", O_WRONLY | O_CREAT | O_EXCL);
	if (fd < 0)
		return 4;
	close(fd);
	snprintf(a, sizeof(a), "%s/d", rw_dir);
	if (mkdir(a, 0700) < 0)
		return 5;
	snprintf(a, sizeof(a), "%s/new", rw_dir);
	snprintf(b, sizeof(b), "%s/d/moved", rw_dir);
	if (rename(a, b) < 0)
		return 6;
	if (unlink(b) < 0)
		return 7;
	snprintf(a, sizeof(a), "%s/d", rw_dir);
	return rmdir(a) < 0 ? 8 : 0;
}
static int c_read_outside(void)
{
	return expect_errno(open_at(out_dir, "f", O_RDONLY), EACCES);
}
static int c_write_outside(void)
{
	return expect_errno(open_at(out_dir, "f", O_WRONLY), EACCES);
}
static int tcp_connect(uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), r;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (r < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	return 0;
}
static int c_connect_proxy_port(void)
{
	/* Nothing need listen there: refused by the stack is fine, refused by
	 * Landlock (EACCES) is not. */
	return tcp_connect(PLAN_PROXY_PORT) == 0 || errno != EACCES ? 0 : 3;
}
static int c_connect_other_allowed(void)
{
	return tcp_connect(tcp_port) == 0 || errno != EACCES ? 0 : 3;
}
static int c_bind(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return expect_errno(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), EACCES);
}
static int c_bind_listen(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 1) == 0 ? 0 : 1;
}
static int run_exec(const char *path)
{
	int status;
	pid_t p = fork();

	if (p == 0) {
		execl(path, path, (char *)NULL);
		_exit(errno == EACCES ? 126 : 127);
	}
	if (p < 0 || waitpid(p, &status, 0) < 0)
		return 3;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
}
static int c_exec_runtime(void)
{
	return run_exec("/bin/true");
}
static int c_exec_outside(void)
{
	return run_exec(exe_other) == 126 ? 0 : 3;
}
static int c_system_files(void)
{
	char buf[64];
	int fd;

	if ((fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC)) < 0)
		return 3;
	close(fd);
	if ((fd = open("/dev/null", O_WRONLY | O_TRUNC | O_CLOEXEC)) < 0 || write(fd, "x", 1) != 1)
		return 4;
	close(fd);
	if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) < 0 ||
	    read(fd, buf, sizeof(buf)) != sizeof(buf))
		return 5;
	close(fd);
	if ((fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)) < 0 ||
	    read(fd, buf, sizeof(buf)) <= 0)
		return 6;
	close(fd);
	{
		char tmp[] = "/tmp/test-landlock-tmp-XXXXXX";

		if ((fd = mkstemp(tmp)) < 0)
			return 7;
		close(fd);
		unlink(tmp);
	}
	return 0;
}
static int c_proc_write(void)
{
	return expect_errno(open("/proc/self/comm", O_WRONLY | O_CLOEXEC), EACCES);
}
static int c_abstract_unix(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t n = strlen(abstract_name);

	memcpy(sa.sun_path + 1, abstract_name, n);
	return expect_errno(connect(fd, (struct sockaddr *)&sa,
				    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)),
			    EPERM);
}
static int c_signal_parent(void)
{
	return expect_errno(kill(getppid(), 0), EPERM);
}

typedef int (*check_fn)(void);

static int run_check(const sc_plan *plan, check_fn fn, bool restricted, ll_status *ret_st)
{
	int status, pfd[2];
	ll_status st = {0};
	pid_t pid;

	if (pipe(pfd) < 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(pfd[0]);
		if (restricted) {
			int exe = open(exe_copy, O_PATH | O_CLOEXEC);

			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
				_exit(120);
			if ((forced_abi < 0 ? ll_apply(plan, exe, &st)
					    : ll_apply_abi(plan, exe, forced_abi, &st)) < 0)
				_exit(121);
			if (write(pfd[1], &st, sizeof(st)) != sizeof(st))
				_exit(122);
			if (fn == NULL) {
				/* the exe_fd check: run the init binary copy */
				static const char *const argv[] = {"true", NULL};

				syscall(__NR_execveat, exe, "", argv, NULL, AT_EMPTY_PATH);
				_exit(errno == EACCES ? 126 : 127);
			}
		}
		_exit(fn ? fn() : 0);
	}
	close(pfd[1]);
	if (read(pfd[0], &st, sizeof(st)) != sizeof(st))
		memset(&st, 0, sizeof(st));
	if (ret_st)
		*ret_st = st;
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void check(const sc_plan *plan, const char *what, check_fn fn, bool must_differ)
{
	int got = run_check(plan, fn, true, NULL);

	ok(got == 0, "%s (got %d)", what, got);
	if (must_differ) {
		int bare = run_check(plan, fn, false, NULL);

		ok(bare != 0, "  ... and not so without Landlock (got %d)", bare);
	}
}

static int write_file(const char *dir, const char *name, const char *content)
{
	int fd = open_at(dir, name, O_WRONLY | O_CREAT | O_TRUNC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, content, strlen(content));
	close(fd);
	return n == (ssize_t)strlen(content) ? 0 : -1;
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -1;
	close(in);
	close(out);
	return n == 0 ? 0 : -1;
}

static void cleanup(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", base);
	if (system(cmd) != 0)
		tap_diag("could not remove %s", base);
}

/*
 * ABI 8 and 9 cannot run on an older kernel: what ll_apply would ask of one
 * is checked against the kernel's UAPI values (include/uapi/linux/landlock.h):
 * LANDLOCK_RESTRICT_SELF_TSYNC = 1 << 3 from ABI 8, and
 * LANDLOCK_ACCESS_FS_RESOLVE_UNIX = 1 << 16 from ABI 9. Asking a kernel for
 * a right or flag it lacks is EINVAL, so neither may appear below them.
 */
static void test_abi_selection(void)
{
	const uint64_t resolve_unix = 1ULL << 16, ioctl_dev = 1ULL << 15;
	const uint32_t tsync = 1U << 3;
	bool good = true;

	for (int abi = 1; abi <= 7; abi++)
		good =
		    good && !(ll_handled_fs(abi) & resolve_unix) && ll_restrict_flags_for(abi) == 0;
	ok(good, "ABI 1-7: no RESOLVE_UNIX, no TSYNC");
	ok(ll_restrict_flags_for(8) == tsync && !(ll_handled_fs(8) & resolve_unix) &&
	       ll_handled_fs(8) == ll_handled_fs(7),
	   "ABI 8: TSYNC on restrict_self, the rights of ABI 7");
	ok(ll_restrict_flags_for(9) == tsync && (ll_handled_fs(9) & resolve_unix) &&
	       (ll_handled_fs(9) & ~resolve_unix) == ll_handled_fs(8) &&
	       (ll_handled_fs(9) & ioctl_dev),
	   "ABI 9: TSYNC, and RESOLVE_UNIX handled besides ABI 8's rights");
	ok(ll_abi_used(12) == 9 && ll_handled_fs(12) == ll_handled_fs(9) &&
	       ll_restrict_flags_for(12) == tsync && ll_abi_used(0) == 0,
	   "a newer kernel is used at ABI 9");
	ok(strstr(ll_abi_features(9), "pathname unix sockets") &&
	       strstr(ll_abi_features(8), "all threads") &&
	       !strstr(ll_abi_features(7), "all threads"),
	   "the features named per ABI: 7 '%s', 8 '%s', 9 '%s'", ll_abi_features(7),
	   ll_abi_features(8), ll_abi_features(9));
}

int main(void)
{
	sc_plan plan = {
	    .version = 1, .runtime = RUNTIME_HOST, .audit_exec = true, .net_listen = true};
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct sockaddr_un su = {.sun_family = AF_UNIX};
	socklen_t slen = sizeof(sa);
	ll_status st;
	int abi = ll_abi(), lfd, ufd, got;

	test_abi_selection();
	if (abi <= 0) {
		/* The pure checks ran; the rest needs the kernel's Landlock. */
		tap_skip("rulesets on this kernel", "Landlock unavailable (%d)", abi);
		return (tap_done() || getenv("SANDCAP_MUST_WORK")) ? 1 : 0;
	}
	if (!mkdtemp(base))
		tap_skip_all("mkdtemp: %s", strerror(errno));
	snprintf(ro_dir, sizeof(ro_dir), "%s/ro", base);
	snprintf(rw_dir, sizeof(rw_dir), "%s/rw", base);
	snprintf(out_dir, sizeof(out_dir), "%s/outside", base);
	snprintf(exe_copy, sizeof(exe_copy), "%s/init-copy", out_dir);
	snprintf(exe_other, sizeof(exe_other), "%s/other-copy", out_dir);
	if (mkdir(ro_dir, 0755) < 0 || mkdir(rw_dir, 0755) < 0 || mkdir(out_dir, 0755) < 0 ||
	    write_file(ro_dir, "f", "abc") < 0 || write_file(rw_dir, "f", "abc") < 0 ||
	    write_file(out_dir, "f", "abc") < 0 || copy_file("/bin/true", exe_copy) < 0 ||
	    copy_file("/bin/true", exe_other) < 0) {
		int e = errno;

		cleanup();
		tap_skip_all("test tree: %s", strerror(e));
	}

	/* A TCP listener on a port other than the proxy's, and an abstract
	 * unix socket, both outside the child's domain. */
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 8) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &slen) < 0) {
		int e = errno;

		cleanup();
		tap_skip_all("loopback listener: %s", strerror(e));
	}
	tcp_port = ntohs(sa.sin_port);
	snprintf(abstract_name, sizeof(abstract_name), "sandcap-test-landlock-%d", getpid());
	memcpy(su.sun_path + 1, abstract_name, strlen(abstract_name));
	ufd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ufd < 0 ||
	    bind(ufd, (struct sockaddr *)&su,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(abstract_name))) <
		0 ||
	    listen(ufd, 8) < 0) {
		int e = errno;

		cleanup();
		tap_skip_all("abstract socket: %s", strerror(e));
	}

	grants[0] = (plan_grant){.path = ro_dir, .at = ro_dir, .mode = GRANT_RO};
	grants[1] = (plan_grant){.path = rw_dir, .at = rw_dir, .mode = GRANT_RW};
	egress[0] = (plan_egress){.host = (char *)"example.com"};
	plan.grants = grants;
	plan.n_grants = 2;
	plan.egress = egress;
	plan.n_egress = 1;

	got = run_check(&plan, c_read_ro, true, &st);
	ok(got == 0 && st.abi == abi && st.fs, "ll_apply: abi %d fs %d net %d scoped %d (got %d)",
	   st.abi, st.fs, st.net, st.scoped, got);
	if (abi >= 7)
		ok(!st.net && st.scoped && st.degraded[0] == '\0',
		   "ABI %d: complete (no TCP rule with net.listen on), degraded '%s'", abi,
		   st.degraded);

	check(&plan, "read-only grant is readable", c_read_ro, false);
	check(&plan, "read-only grant: writing is EACCES", c_write_ro, true);
	check(&plan, "read-only grant: creating is EACCES", c_create_ro, true);
	check(&plan, "read-write grant: write, create, mkdir, rename, unlink", c_rw, false);
	check(&plan, "outside the grants: reading is EACCES", c_read_outside, true);
	check(&plan, "outside the grants: writing is EACCES", c_write_outside, true);
	check(&plan, "runtime: exec /bin/true", c_exec_runtime, false);
	check(&plan, "exec of a binary outside the grants is EACCES", c_exec_outside, true);
	check(&plan, "/etc, /dev/null, /dev/urandom, /proc/self, /tmp usable", c_system_files,
	      false);
	check(&plan, "/proc/self/comm is not writable", c_proc_write, true);
	got = run_check(&plan, NULL, true, NULL);
	ok(got == 0, "exe_fd (outside the grants) stays executable (got %d)", got);
	if (abi >= 4) {
		check(&plan,
		      "with egress, TCP connect to another port is not refused by Landlock "
		      "(the netns refuses it, and records it)",
		      c_connect_other_allowed, false);
		check(&plan, "TCP connect to the proxy port is not refused by Landlock",
		      c_connect_proxy_port, false);
		check(&plan, "TCP bind and listen on the sandbox's loopback work", c_bind_listen,
		      false);
		plan.net_listen = false;
		check(&plan, "net.listen false: TCP bind is EACCES", c_bind, true);
		plan.net_listen = true;
	}
	if (abi >= 6) {
		check(&plan, "abstract unix socket outside the domain is EPERM", c_abstract_unix,
		      true);
		check(&plan, "signalling a process outside the domain is EPERM", c_signal_parent,
		      true);
	}

	plan.n_egress = 0;
	if (abi >= 4) {
		check(&plan, "without egress TCP connect is the netns's to refuse, not Landlock's",
		      c_connect_proxy_port, false);
		check(&plan, "... and bind and listen work", c_bind_listen, false);
	}

	/* Forced older ABIs: the fail-closed and best-effort paths. */
	plan.n_egress = 1;
	forced_abi = 3;
	got = run_check(&plan, c_bind_listen, true, &st);
	ok(got == 0 && !strstr(st.degraded, "TCP"),
	   "ABI 3, net.listen on: no TCP rule to miss (got %d, '%s')", got, st.degraded);
	plan.net_listen = false;
	got = run_check(&plan, c_read_ro, true, NULL);
	ok(got == 121, "ABI 3 with net.listen off, not best_effort: refused (got %d)", got);
	plan.best_effort = true;
	got = run_check(&plan, c_read_outside, true, &st);
	ok(got == 0 && st.fs && !st.net && !st.scoped && strstr(st.degraded, "TCP") != NULL,
	   "ABI 3 best_effort: fs enforced, degraded '%s' (got %d)", st.degraded, got);
	plan.net_listen = true;
	forced_abi = 0;
	plan.best_effort = false;
	got = run_check(&plan, c_read_ro, true, NULL);
	ok(got == 121, "no Landlock, not best_effort: refused (got %d)", got);
	plan.best_effort = true;
	got = run_check(&plan, c_read_outside, true, &st);
	ok(got == 1 && !st.fs && strstr(st.degraded, "unavailable") != NULL,
	   "no Landlock, best_effort: runs unrestricted, degraded '%s' (got %d)", st.degraded, got);
	forced_abi = -1;
	plan.best_effort = false;
	plan.n_egress = 0;

	/* A grant that does not exist in the view is an error, not a skip. */
	grants[1].at = (char *)"/nonexistent-test-landlock";
	got = run_check(&plan, c_read_ro, true, NULL);
	ok(got == 121, "a missing grant makes ll_apply fail (got %d)", got);

	close(lfd);
	close(ufd);
	cleanup();
	return tap_done();
}
