/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for src/seccomp (TAP). Each check forks a child, loads the real
 * filter into it and looks at what the kernel answers; the notification
 * tests run the real listener in the parent.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>
#include <netdb.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "compat/syscalls.h"
#include "seccomp/profile.h"
#include "seccomp/programs.h"
#include "seccomp/seccomp.h"
#include "tap.h"

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef SYS_sysfs
#define SYS_sysfs 139
#endif
#define X32_SYSCALL_BIT 0x40000000

static sc_plan plain_plan(void)
{
	return (sc_plan){.version = 1};
}

/* A check run inside the filtered child returns 0 when the kernel answered
 * as expected, else a small code explaining what it got. */
typedef int (*check_fn)(void);

/* Encodes "failed with errno e" / "succeeded" as an exit code. */
static int expect_errno(long r, int want)
{
	if (r >= 0)
		return 1;
	return errno == want ? 0 : 2 + (errno & 0x7f);
}

/* Returns the child's exit status, 128+signal when killed, -1 on setup
 * failure. filtered=false runs the same check without a filter, to prove the
 * check can tell the difference. */
static int run_check(const sc_plan *plan, check_fn fn, bool filtered)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = -1;

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(120);
		if (filtered && sf_apply(plan, &fd) < 0)
			_exit(121);
		_exit(fn());
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static int c_unshare(void)
{
	return expect_errno(unshare(CLONE_NEWUSER), EPERM);
}
static int c_mount(void)
{
	/* A target that does not exist: without the filter this is ENOENT,
	 * never a mount on the host. */
	return expect_errno(mount("none", "/nonexistent-test-seccomp", "tmpfs", 0, NULL), EPERM);
}
static int c_bpf(void)
{
	return expect_errno(syscall(__NR_bpf, 0, NULL, 0), EPERM);
}
static int c_keyctl(void)
{
	return expect_errno(
	    syscall(__NR_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0), EPERM);
}
static int c_ptrace(void)
{
	return expect_errno(ptrace(PTRACE_TRACEME, 0, NULL, NULL), EPERM);
}
static int c_io_uring(void)
{
	char params[120] = {0};

	return expect_errno(syscall(__NR_io_uring_setup, 1, params), EPERM);
}
static int c_packet(void)
{
	return expect_errno(socket(AF_PACKET, SOCK_RAW, 0), EPERM);
}
static int c_raw(void)
{
	return expect_errno(socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, 1), EPERM);
}
static int c_netlink(void)
{
	return expect_errno(socket(AF_NETLINK, SOCK_DGRAM, NETLINK_SOCK_DIAG), EPERM);
}
static int c_netlink_audit(void)
{
	return expect_errno(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT), EPERM);
}
static int c_netlink_uevent(void)
{
	return expect_errno(socket(AF_NETLINK, SOCK_DGRAM, NETLINK_KOBJECT_UEVENT), EPERM);
}
/* glibc's interface probe (getaddrinfo with AI_ADDRCONFIG, getifaddrs). */
static int c_netlink_route(void)
{
	return expect_errno(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE),
			    EAFNOSUPPORT);
}
/* ...after which glibc assumes both families and still answers, also for
 * AF_INET (allowing the probe would show only lo, and glibc would then
 * refuse every AF_INET lookup with EAI_NONAME). */
static int c_addrconfig(void)
{
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_ADDRCONFIG | AI_NUMERICHOST};
	struct addrinfo *res = NULL;
	int r = getaddrinfo("127.0.0.1", "80", &hints, &res);

	if (res)
		freeaddrinfo(res);
	return r == 0 ? 0 : 20;
}
static int c_family_upper_bits(void)
{
	/* The kernel reads an int: 0x1_00000011 is AF_PACKET to it. */
	return expect_errno(syscall(__NR_socket, 0x100000011L, SOCK_RAW, 0), EPERM);
}
static int c_clone_newnet(void)
{
	long r = syscall(__NR_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);

	if (r == 0)
		_exit(0);
	return expect_errno(r, EPERM);
}
static int c_clone3(void)
{
	struct sc_clone_args a = {.exit_signal = SIGCHLD};
	pid_t p = sys_clone3(&a);

	if (p == 0)
		_exit(0);
	return expect_errno(p, ENOSYS);
}
static int c_unknown(void)
{
	/* sysfs(2) exists in the kernel but not in the profile. */
	return expect_errno(syscall(SYS_sysfs, 3), ENOSYS);
}
static int c_setns(void)
{
	return expect_errno(syscall(__NR_setns, 0, 0), EPERM);
}
static int c_chroot(void)
{
	return expect_errno(chroot("/"), EPERM);
}
static int c_tiocsti(void)
{
	char c = 'x';

	return expect_errno(ioctl(-1, TIOCSTI, &c), EPERM);
}
static int c_tiocsti_high(void)
{
	char c = 'x';

	/* Upper 32 bits set: the kernel's cmd is still TIOCSTI. */
	return expect_errno(syscall(__NR_ioctl, -1, 0x100000000UL | TIOCSTI, &c), EPERM);
}
static int c_ioctl_ok(void)
{
	int p[2], n = -1;

	if (pipe(p) < 0 || write(p[1], "abc", 3) != 3)
		return 3;
	if (ioctl(p[0], FIONREAD, &n) < 0 || n != 3)
		return 4;
	return 0;
}
static int c_tiocsetd(void)
{
	int ldisc = 0;

	return expect_errno(ioctl(-1, TIOCSETD, &ldisc), EPERM);
}
static int c_personality(void)
{
	return expect_errno(personality(ADDR_NO_RANDOMIZE), EPERM);
}
static int c_personality_query(void)
{
	return personality(0xffffffff) < 0 ? 3 : 0;
}
static int c_mknod_chr(void)
{
	return expect_errno(mknodat(AT_FDCWD, "/nonexistent-dir/x", S_IFCHR | 0600, makedev(1, 3)),
			    EPERM);
}
static int c_chmod_setuid(void)
{
	return expect_errno(syscall(__NR_chmod, "/nonexistent-dir/x", 04755), EPERM);
}
static int c_openat_setgid(void)
{
	return expect_errno(
	    syscall(__NR_openat, AT_FDCWD, "/nonexistent-dir/x", O_CREAT | O_WRONLY, 02644), EPERM);
}
static int c_mknod_setuid(void)
{
	return expect_errno(mknodat(AT_FDCWD, "/nonexistent-dir/x", S_IFREG | 04755, 0), EPERM);
}
static int c_openat2(void)
{
	struct sc_open_how how = {.flags = O_RDONLY};

	return expect_errno(syscall(__NR_openat2, AT_FDCWD, "/", &how, sizeof(how)), ENOSYS);
}
static int c_chmod_plain(void)
{
	char dir[] = "/tmp/test-seccomp-XXXXXX";
	int r;

	if (!mkdtemp(dir))
		return 3;
	r = chmod(dir, 01777) == 0 && chmod(dir, 0755) == 0 ? 0 : 4;
	(void)rmdir(dir);
	return r;
}
static int c_mkfifo(void)
{
	char dir[] = "/tmp/test-seccomp-XXXXXX", path[64];
	int r;

	if (!mkdtemp(dir))
		return 3;
	snprintf(path, sizeof(path), "%s/fifo", dir);
	r = mkfifo(path, 0600);
	(void)unlink(path);
	(void)rmdir(dir);
	return r == 0 ? 0 : 4;
}
static int c_sockets_ok(void)
{
	int fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 3;
	close(fd);
	fd = socket(AF_INET6, SOCK_DGRAM, 0);
	if (fd < 0 && errno != EAFNOSUPPORT)
		return 4;
	if (fd >= 0)
		close(fd);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd < 0)
		return 5;
	close(fd);
	return 0;
}
static int spawn_wait(const char *const argv[])
{
	int status;
	pid_t p = fork();

	if (p < 0)
		return 3;
	if (p == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (waitpid(p, &status, 0) < 0)
		return 4;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
static int c_fork_exec_true(void)
{
	return spawn_wait((const char *const[]){"/bin/true", NULL});
}
static int c_python(void)
{
	return spawn_wait((const char *const[]){
	    "/usr/bin/python3", "-c",
	    "import threading, subprocess, json, os, tempfile, socket\n"
	    "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
	    "assert subprocess.run(['/bin/true']).returncode == 0\n"
	    "with tempfile.TemporaryDirectory() as d:\n"
	    "    open(os.path.join(d, 'f'), 'w').write(json.dumps([1, 2]))\n"
	    "a, b = socket.socketpair(); a.send(b'x'); assert b.recv(1) == b'x'\n",
	    NULL});
}
static int c_sh_pipe(void)
{
	return spawn_wait((const char *const[]){
	    "/bin/sh", "-c", "echo hello | tr h j | grep -q jello && test \"$(echo x)\" = x",
	    NULL});
}
static char work_dir[] = "/tmp/test-seccomp-work-XXXXXX";

static int c_gcc(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "cd %s && printf 'int main(void){return 7;}\\n' > a.c && cc -O2 -o a a.c && "
		 "{ ./a; test $? = 7; }",
		 work_dir);
	return spawn_wait((const char *const[]){"/bin/sh", "-c", cmd, NULL});
}
static int c_git(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "cd %s && HOME=%s && export HOME && git init -q r && cd r && "
		 "git config user.email a@b && git config user.name n && echo x > f && "
		 "git add f && git commit -qm m && test \"$(git log --oneline | wc -l)\" = 1",
		 work_dir, work_dir);
	return spawn_wait((const char *const[]){"/bin/sh", "-c", cmd, NULL});
}
static int c_node(void)
{
	return spawn_wait((const char *const[]){
	    "/usr/bin/node", "-e",
	    "const {Worker} = require('worker_threads');"
	    "const cp = require('child_process');"
	    "if (cp.execSync('echo hi').toString() !== 'hi\\n') process.exit(3);"
	    "new Worker('process.exit(0)', {eval: true}).on('exit', c => process.exit(c));",
	    NULL});
}
static int c_x32(void)
{
	(void)syscall(X32_SYSCALL_BIT | __NR_getpid);
	return 3; /* must have been killed */
}
static int c_int80(void)
{
	long ret = 20; /* i386 getpid */

	__asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
	return 3;
}

/* Without the filter, the result must be... */
#define BARE_ANY     0 /* anything: the check is about things that work */
#define BARE_DIFFERS 1 /* different: proves the check can see the filter */
#define BARE_ROOT    2 /* different, when run as root (needs privilege bare) */

typedef struct check {
	const char *what;
	check_fn fn;
	int want;	   /* exit status wanted under the filter */
	int differs_bare;  /* BARE_*: how the same check fares without the filter */
	const char *needs; /* a program that must exist, or NULL */
} check;

static const check checks[] = {
    {"unshare(CLONE_NEWUSER) is EPERM", c_unshare, 0, BARE_ROOT},
    {"mount is EPERM", c_mount, 0, BARE_DIFFERS},
    {"bpf is EPERM", c_bpf, 0, BARE_ROOT},
    {"keyctl is EPERM", c_keyctl, 0, BARE_DIFFERS},
    {"ptrace is EPERM", c_ptrace, 0, BARE_DIFFERS},
    {"io_uring_setup is EPERM", c_io_uring, 0, BARE_ROOT},
    {"socket(AF_PACKET) is EPERM", c_packet, 0, BARE_ROOT},
    {"socket(AF_INET, SOCK_RAW) is EPERM", c_raw, 0, BARE_ROOT},
    {"socket(AF_NETLINK, NETLINK_SOCK_DIAG) is EPERM", c_netlink, 0, BARE_DIFFERS},
    {"socket(AF_NETLINK, NETLINK_AUDIT) is EPERM", c_netlink_audit, 0, BARE_DIFFERS},
    {"socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT) is EPERM", c_netlink_uevent, 0, BARE_DIFFERS},
    {"socket(AF_NETLINK, NETLINK_ROUTE) is EAFNOSUPPORT", c_netlink_route, 0, BARE_DIFFERS},
    {"getaddrinfo(AF_INET, AI_ADDRCONFIG) answers after that", c_addrconfig, 0, BARE_ANY},
    {"socket family with upper bits set is EPERM", c_family_upper_bits, 0, BARE_ROOT},
    {"clone(CLONE_NEWNET) is EPERM", c_clone_newnet, 0, BARE_ROOT},
    {"clone3 is ENOSYS", c_clone3, 0, BARE_DIFFERS},
    {"a syscall unknown to the profile is ENOSYS", c_unknown, 0, BARE_DIFFERS},
    {"setns is EPERM", c_setns, 0, BARE_DIFFERS},
    {"chroot is EPERM", c_chroot, 0, BARE_ROOT},
    {"ioctl TIOCSTI is EPERM", c_tiocsti, 0, BARE_DIFFERS},
    {"ioctl TIOCSTI with upper bits is EPERM", c_tiocsti_high, 0, BARE_DIFFERS},
    {"ioctl TIOCSETD is EPERM", c_tiocsetd, 0, BARE_DIFFERS},
    {"other ioctls work", c_ioctl_ok, 0, BARE_ANY},
    {"personality(ADDR_NO_RANDOMIZE) is EPERM", c_personality, 0, BARE_DIFFERS},
    {"personality query works", c_personality_query, 0, BARE_ANY},
    {"mknod of a char device is EPERM", c_mknod_chr, 0, BARE_DIFFERS},
    {"mkfifo works", c_mkfifo, 0, BARE_ANY},
    {"chmod with S_ISUID is EPERM", c_chmod_setuid, 0, BARE_DIFFERS},
    {"openat(O_CREAT) with S_ISGID is EPERM", c_openat_setgid, 0, BARE_DIFFERS},
    {"mknodat of a regular file with S_ISUID is EPERM", c_mknod_setuid, 0, BARE_DIFFERS},
    {"openat2 is ENOSYS (its mode cannot be read)", c_openat2, 0, BARE_DIFFERS},
    {"chmod 1777 and 0755 work", c_chmod_plain, 0, BARE_ANY},
    {"inet, inet6 and unix sockets work", c_sockets_ok, 0, BARE_ANY},
    {"fork + exec /bin/true works", c_fork_exec_true, 0, BARE_ANY},
    {"python3 with threads, subprocess, files and sockets works", c_python, 0, BARE_ANY},
    {"sh -c with a pipe and a subshell works", c_sh_pipe, 0, BARE_ANY},
    {"cc compiles and runs a C program", c_gcc, 0, BARE_ANY, "/usr/bin/cc"},
    {"git init, add, commit, log", c_git, 0, BARE_ANY, "/usr/bin/git"},
    {"node with a worker thread and a child process", c_node, 0, BARE_ANY, "/usr/bin/node"},
    {"an x32 syscall kills the process", c_x32, 128 + SIGSYS, BARE_DIFFERS},
    {"an int $0x80 syscall kills the process", c_int80, 128 + SIGSYS, BARE_DIFFERS},
};

/* ---- notifications ---- */

typedef struct events {
	json_t *list;
} events;

static int collect(const char *event, json_t *data, void *userdata)
{
	events *ev = userdata;

	json_array_append_new(ev->list, json_pack("{s:s, s:o}", "event", event, "data", data));
	return 0;
}

/* How the parent serves the listener: sf_notify_handle from a poll loop, or
 * the listener thread (sf_listener_start). */
static bool serve_with_thread;

static int wait_child(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs fn in a child under the auditing filter while the parent serves the
 * listener; returns the child's status and fills ev. */
static int run_notified_as(bool audit_exec, bool audit_denied, check_fn fn, events *ev)
{
	sc_plan plan = plain_plan();
	int sv[2], status = -1, listener, pidfd;
	pid_t pid;

	plan.audit_exec = audit_exec;
	plan.audit_denied_syscalls = audit_denied;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int fd = -1;

		close(sv[0]);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(120);
		if (sf_apply(&plan, &fd) < 0 || fd < 0)
			_exit(121);
		if (io_send_fd(sv[1], fd) < 0)
			_exit(122);
		close(fd);
		_exit(fn());
	}
	close(sv[1]);
	listener = io_recv_fd(sv[0]);
	close(sv[0]);
	if (serve_with_thread && listener >= 0) {
		sf_listener *l = NULL;
		int r, st;

		r = sf_notify_sync_wakeup(listener);
		if (r < 0 && r != -EOPNOTSUPP)
			tap_diag("sf_notify_sync_wakeup: %s", strerror(-r));
		r = sf_listener_start(listener, NULL, collect, ev, &l);
		if (r < 0) {
			tap_diag("sf_listener_start: %s", strerror(-r));
			close(listener);
			(void)wait_child(pid);
			return -1;
		}
		/* The thread ends by itself once the child is reaped. */
		st = wait_child(pid);
		r = sf_listener_stop(l);
		if (r < 0)
			tap_diag("sf_listener_stop: %s", strerror(-r));
		return r < 0 ? -1 : st;
	}
	pidfd = sys_pidfd_open(pid, 0);
	for (;;) {
		struct pollfd p[2] = {{.fd = listener, .events = POLLIN},
				      {.fd = pidfd, .events = POLLIN}};

		if (poll(p, 2, 10000) <= 0)
			break;
		if (p[0].revents & POLLIN) {
			int r = sf_notify_handle(listener, NULL, collect, ev);

			if (r < 0)
				tap_diag("sf_notify_handle: %s", strerror(-r));
			continue;
		}
		if (p[1].revents)
			break;
		if (p[0].revents & (POLLHUP | POLLERR))
			break;
	}
	if (listener >= 0)
		close(listener);
	if (pidfd >= 0)
		close(pidfd);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int run_notified(check_fn fn, events *ev)
{
	return run_notified_as(true, true, fn, ev);
}

static int n_unshare_then_echo(void)
{
	int null = open("/dev/null", O_WRONLY);

	if (unshare(CLONE_NEWUSER) == 0 || errno != EPERM)
		return 10;
	if (null >= 0)
		dup2(null, 1);
	execl("/bin/echo", "/bin/echo", "a", "b", (char *)NULL);
	return 11;
}

#define MANY_ARGS 300
static int n_many_args(void)
{
	static const char *argv[MANY_ARGS + 2];

	argv[0] = "/bin/true";
	for (int i = 1; i <= MANY_ARGS; i++)
		argv[i] = "x";
	argv[MANY_ARGS + 1] = NULL;
	execv(argv[0], (char *const *)argv);
	return 11;
}

static int n_bad_pointers(void)
{
	/* Hostile: argv points at unmapped memory. The listener must still
	 * answer (the kernel then fails the exec with EFAULT). */
	long r = syscall(__NR_execve, "/bin/true", (char **)8, NULL);

	return r < 0 && errno == EFAULT ? 0 : 12;
}

static int n_long_path(void)
{
	static char path[5000];

	memset(path, 'p', sizeof(path) - 1);
	path[0] = '/';
	execl(path, path, (char *)NULL);
	return errno == ENAMETOOLONG ? 0 : 12;
}

static int n_huge_argv(void)
{
	static char big[30000];
	static const char *argv[5];

	memset(big, 'b', sizeof(big) - 1);
	argv[0] = "/bin/true";
	argv[1] = argv[2] = argv[3] = big;
	execv(argv[0], (char *const *)argv);
	return 11;
}

/* The route probe is refused unrecorded; another netlink family still
 * reaches the listener and is recorded. */
static int n_netlink(void)
{
	if (socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE) >= 0 ||
	    errno != EAFNOSUPPORT)
		return 14;
	if (socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT) >= 0 || errno != EPERM)
		return 15;
	return 0;
}

static int n_sh_pipe(void)
{
	return c_sh_pipe();
}

/* The argv array straddles a page boundary (its first pointer half in each
 * page, misaligned) and an argument runs across the next one. */
static int n_page_edges(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)(3 * pg), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	char *ptrs[3];

	if (m == MAP_FAILED)
		return 13;
	strcpy(m + 100, "/bin/true");
	strcpy(m + 2 * pg - 3, "edge-arg");
	ptrs[0] = m + 100;
	ptrs[1] = m + 2 * pg - 3;
	ptrs[2] = NULL;
	memcpy(m + pg - 4, ptrs, sizeof(ptrs));
	syscall(__NR_execve, m + 100, (char **)(m + pg - 4), NULL);
	return 11;
}

/* Each argument on a page of its own: more pages than the listener keeps. */
#define SPREAD_ARGS 11
static int n_spread_args(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)(SPREAD_ARGS * pg), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *argv[SPREAD_ARGS + 1];

	if (m == MAP_FAILED)
		return 13;
	for (int i = 0; i < SPREAD_ARGS; i++) {
		argv[i] = m + i * pg + 8 * i;
		snprintf(argv[i], 32, i == 0 ? "/bin/true" : "arg-%d", i);
	}
	argv[SPREAD_ARGS] = NULL;
	execv(argv[0], argv);
	return 11;
}

/* Refused as a setid mode, then as a device (syscall.denied, not fs.denied). */
static int n_setid(void)
{
	if (chdir("/tmp") < 0)
		return 13;
	if (syscall(__NR_fchmodat, AT_FDCWD, "no-such-file", 06755) == 0 || errno != EPERM)
		return 14;
	if (mknodat(AT_FDCWD, "/nonexistent-dir/x", S_IFCHR | 04600, makedev(1, 3)) == 0 ||
	    errno != EPERM)
		return 15;
	return 0;
}

static json_t *find_event(json_t *list, const char *event, size_t nth)
{
	size_t i;
	json_t *e;

	json_array_foreach(list, i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "event")), event) == 0 &&
		    nth-- == 0)
			return json_object_get(e, "data");
	}
	return NULL;
}

static void test_notifications(void)
{
	events ev = {.list = json_array()};
	json_t *d;
	int st;

	st = run_notified(n_unshare_then_echo, &ev);
	ok(st == 0, "audited child: unshare refused with EPERM, echo ran (status %d)", st);
	d = find_event(ev.list, "syscall.denied", 0);
	ok(d && strcmp(json_string_value(json_object_get(d, "syscall")) ?: "", "unshare") == 0 &&
	       json_integer_value(json_object_get(d, "nr")) == __NR_unshare,
	   "syscall.denied names unshare");
	ok(d && strcmp(json_string_value(json_array_get(json_object_get(d, "args"), 0)) ?: "",
		       "0x10000000") == 0,
	   "syscall.denied carries the flags argument (CLONE_NEWUSER)");
	d = find_event(ev.list, "proc.exec", 0);
	{
		json_t *want = json_pack("[s,s,s]", "/bin/echo", "a", "b");

		ok(d &&
		       strcmp(json_string_value(json_object_get(d, "path")) ?: "", "/bin/echo") ==
			   0 &&
		       json_equal(json_object_get(d, "argv"), want) &&
		       json_is_false(json_object_get(d, "truncated")) &&
		       json_integer_value(json_object_get(d, "pid")) > 0,
		   "proc.exec has path /bin/echo and argv [/bin/echo, a, b]");
		json_decref(want);
	}
	if (tap_failed) {
		char *s = json_dumps(ev.list, 0);
		tap_diag("events: %s", s);
		free(s);
	}
	json_decref(ev.list);

	ev.list = json_array();
	st = run_notified(n_setid, &ev);
	d = find_event(ev.list, "fs.denied", 0);
	ok(st == 0 && d &&
	       strcmp(json_string_value(json_object_get(d, "op")) ?: "", "fchmodat") == 0 &&
	       strcmp(json_string_value(json_object_get(d, "mode")) ?: "", "6755") == 0 &&
	       strcmp(json_string_value(json_object_get(d, "path")) ?: "", "/tmp/no-such-file") ==
		   0 &&
	       strcmp(json_string_value(json_object_get(d, "reason")) ?: "", "setid") == 0,
	   "fchmodat 06755: fs.denied with op, mode 6755, the path joined to the cwd (status %d)",
	   st);
	d = find_event(ev.list, "syscall.denied", 0);
	ok(d && strcmp(json_string_value(json_object_get(d, "syscall")) ?: "", "mknodat") == 0 &&
	       !find_event(ev.list, "fs.denied", 1),
	   "a device node with S_ISUID is a syscall.denied, not an fs.denied");
	json_decref(ev.list);

	ev.list = json_array();
	st = run_notified(n_many_args, &ev);
	d = find_event(ev.list, "proc.exec", 0);
	ok(st == 0 && d && json_array_size(json_object_get(d, "argv")) == 256 &&
	       json_is_true(json_object_get(d, "truncated")),
	   "301 arguments: 256 recorded, truncated (status %d)", st);
	json_decref(ev.list);

	ev.list = json_array();
	st = run_notified(n_bad_pointers, &ev);
	d = find_event(ev.list, "proc.exec", 0);
	ok(st == 0 && d && json_is_true(json_object_get(d, "truncated")) &&
	       json_array_size(json_object_get(d, "argv")) == 0,
	   "unreadable argv: answered, recorded as truncated (status %d)", st);
	json_decref(ev.list);

	ev.list = json_array();
	st = run_notified(n_long_path, &ev);
	d = find_event(ev.list, "proc.exec", 0);
	ok(st == 0 && d && strlen(json_string_value(json_object_get(d, "path")) ?: "") == 4096 &&
	       json_is_true(json_object_get(d, "truncated")),
	   "a 5000-byte path: 4096 recorded, truncated (status %d)", st);
	json_decref(ev.list);

	ev.list = json_array();
	st = run_notified(n_huge_argv, &ev);
	d = find_event(ev.list, "proc.exec", 0);
	{
		json_t *argv = d ? json_object_get(d, "argv") : NULL;
		size_t total = 0, i;
		json_t *a;

		/* The budget counts the NUL of every complete argument; the
		 * truncated last one gets what is left. */
		json_array_foreach(argv, i, a) total += strlen(json_string_value(a));
		ok(st == 0 && argv && json_array_size(argv) == 4 &&
		       total + json_array_size(argv) - 1 == 64 * 1024 &&
		       json_is_true(json_object_get(d, "truncated")),
		   "90 KB of argv: 64 KiB recorded in %zu args, truncated (status %d)",
		   json_array_size(argv), st);
	}
	json_decref(ev.list);

	ev.list = json_array();
	st = run_notified_as(true, false, n_unshare_then_echo, &ev);
	ok(st == 0 && find_event(ev.list, "proc.exec", 0) &&
	       !find_event(ev.list, "syscall.denied", 0),
	   "audit.exec alone: exec recorded, denial not sent to the listener (status %d)", st);
	json_decref(ev.list);

	ev.list = json_array();
	st = run_notified_as(false, true, n_unshare_then_echo, &ev);
	ok(st == 0 && !find_event(ev.list, "proc.exec", 0) &&
	       find_event(ev.list, "syscall.denied", 0),
	   "audit.denied_syscalls alone: denial recorded, exec not (status %d)", st);
	json_decref(ev.list);

	ev.list = json_array();
	st = run_notified(n_page_edges, &ev);
	d = find_event(ev.list, "proc.exec", 0);
	{
		json_t *want = json_pack("[s,s]", "/bin/true", "edge-arg");

		ok(st == 0 && d && json_equal(json_object_get(d, "argv"), want) &&
		       json_is_false(json_object_get(d, "truncated")),
		   "argv array and an argument across page boundaries: read whole (status %d)", st);
		json_decref(want);
	}
	json_decref(ev.list);

	ev.list = json_array();
	st = run_notified(n_spread_args, &ev);
	d = find_event(ev.list, "proc.exec", 0);
	{
		json_t *argv = d ? json_object_get(d, "argv") : NULL;
		bool good = json_array_size(argv) == SPREAD_ARGS;

		for (int i = 1; good && i < SPREAD_ARGS; i++) {
			char want[32];

			snprintf(want, sizeof(want), "arg-%d", i);
			good = strcmp(json_string_value(json_array_get(argv, (size_t)i)) ?: "",
				      want) == 0;
		}
		ok(st == 0 && good && json_is_false(json_object_get(d, "truncated")),
		   "%d arguments on %d pages: all recorded in order (status %d)", SPREAD_ARGS,
		   SPREAD_ARGS, st);
	}
	json_decref(ev.list);

	ev.list = json_array();
	st = run_notified(n_netlink, &ev);
	d = find_event(ev.list, "syscall.denied", 0);
	ok(st == 0 && d && !find_event(ev.list, "syscall.denied", 1) &&
	       strcmp(json_string_value(json_object_get(d, "syscall")) ?: "", "socket") == 0 &&
	       strcmp(json_string_value(json_array_get(json_object_get(d, "args"), 2)) ?: "",
		      "0x9") == 0,
	   "netlink: the route probe is refused unrecorded, NETLINK_AUDIT is recorded (status %d, "
	   "%zu events)",
	   st, json_array_size(ev.list));
	json_decref(ev.list);

	ev.list = json_array();
	st = run_notified(n_sh_pipe, &ev);
	ok(st == 0 && find_event(ev.list, "proc.exec", 2) != NULL,
	   "sh pipeline under audit works and its execs are recorded (status %d, %zu events)", st,
	   json_array_size(ev.list));
	json_decref(ev.list);
}

/* ---- pure: the complement expansion and the table's shape ---- */

static unsigned matches(const sf_cmp_list *l, uint32_t v)
{
	unsigned n = 0;

	for (unsigned i = 0; i < l->n; i++)
		n += ((v & (uint32_t)l->cmp[i].datum_a) == (uint32_t)l->cmp[i].datum_b);
	return n;
}

static void test_expand_one(const char *what, sf_arg a)
{
	sf_cmp_list l;
	uint32_t x = 0x12345678u;
	bool good = sf_expand(&a, &l) == 0 && l.n > 0;
	unsigned bad_at = 0;

	/* Every value must match exactly one rule if it is not excluded and
	 * none if it is: the listed values, their neighbours, the extremes and
	 * pseudo-random ones. */
	for (unsigned i = 0; good && i < 200000; i++) {
		uint32_t v;
		bool excluded = false;

		if (i < a.n * 3)
			v = a.values[i / 3] + (uint32_t)(i % 3) - 1u;
		else if (i < a.n * 3 + 2)
			v = i % 2 ? 0xffffffffu : 0;
		else
			v = x = x * 1664525u + 1013904223u;
		for (unsigned j = 0; j < a.n; j++)
			excluded = excluded || (v & a.mask) == (a.values[j] & a.mask);
		if (matches(&l, v) != (excluded ? 0u : 1u)) {
			good = false;
			bad_at = v;
		}
	}
	ok(good, "NOT_IN expansion of %s: %u disjoint rules cover the complement exactly%s", what,
	   l.n, good ? "" : " (wrong)");
	if (!good)
		tap_diag("first wrong value 0x%x", bad_at);
}

static void test_expand(void)
{
	test_expand_one("ioctl cmds",
			(sf_arg){SF_NOT_IN, 1, 0xffffffffu, 3, {TIOCSTI, 0x541C, TIOCSETD}});
	test_expand_one("personality", (sf_arg){SF_NOT_IN, 0, 0xffffffffu, 2, {0, 0xffffffffu}});
	test_expand_one("socket families", (sf_arg){SF_NOT_IN, 0, 0xffffffffu, 4, {1, 2, 10, 16}});
	test_expand_one("netlink protocols", (sf_arg){SF_NOT_IN, 2, 0xffffffffu, 1, {0}});
	test_expand_one("clone namespace flags", (sf_arg){SF_NOT_IN, 0, 0x7e020000u, 1, {0}});
}

/* libseccomp lets an unconditional rule silently override conditional
 * rules of the same syscall: the table must never mix them. */
static void test_table_shape(void)
{
	bool good = true;

	for (size_t i = 0; i < sf_profile_len; i++) {
		for (const char *const *n = sf_profile[i].names; *n; n++) {
			bool uncond =
			    sf_profile[i].a.how == SF_ANY && sf_profile[i].b.how == SF_ANY;

			for (size_t j = i + 1; j < sf_profile_len; j++) {
				for (const char *const *m = sf_profile[j].names; *m; m++) {
					bool u2 = sf_profile[j].a.how == SF_ANY &&
						  sf_profile[j].b.how == SF_ANY;

					if (strcmp(*n, *m) == 0 && (uncond || u2)) {
						tap_diag("%s: unconditional rule next to another",
							 *n);
						good = false;
					}
				}
			}
		}
	}
	ok(good, "no syscall has an unconditional rule beside other rules");
}

/*
 * The kernel (5.11+) runs the filter once per syscall number when it is
 * loaded, with only the number and the architecture known, and keeps a
 * bitmap of the numbers that reach RET_ALLOW that way: those never run the
 * filter again (kernel/seccomp.c, seccomp_is_const_allow). This is that
 * emulation; an argument load or an unknown instruction makes the outcome
 * depend on more than the number, and the syscall is evaluated every time.
 */
#define SF_CONST_UNKNOWN UINT32_MAX

static uint32_t const_action(const sf_program *p, uint32_t nr)
{
	uint32_t a = 0;

	for (unsigned pc = 0; pc < p->len; pc++) {
		const struct sock_filter *in = &p->insns[pc];
		bool taken;

		switch (in->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (in->k == offsetof(struct seccomp_data, nr))
				a = nr;
			else if (in->k == offsetof(struct seccomp_data, arch))
				a = sf_programs_arch;
			else
				return SF_CONST_UNKNOWN;
			break;
		case BPF_RET | BPF_K:
			return in->k;
		case BPF_JMP | BPF_JA:
			pc += in->k;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
		case BPF_JMP | BPF_JGE | BPF_K:
		case BPF_JMP | BPF_JGT | BPF_K:
		case BPF_JMP | BPF_JSET | BPF_K:
			switch (BPF_OP(in->code)) {
			case BPF_JEQ:
				taken = a == in->k;
				break;
			case BPF_JGE:
				taken = a >= in->k;
				break;
			case BPF_JGT:
				taken = a > in->k;
				break;
			default:
				taken = (a & in->k) != 0;
				break;
			}
			pc += taken ? in->jt : in->jf;
			break;
		case BPF_ALU | BPF_AND | BPF_K:
			a &= in->k;
			break;
		default:
			return SF_CONST_UNKNOWN;
		}
	}
	return SF_CONST_UNKNOWN;
}

/* Every syscall the table allows without a condition must be in the
 * kernel's cache, in every variant: the cost of the filter on a
 * syscall-heavy program is then the kernel's entry work alone, not a run
 * of the BPF program. Refused ones must never be. */
static void test_cacheable(void)
{
	for (unsigned v = 0; v < SF_N_VARIANTS; v++) {
		unsigned n_allow = 0, bad = 0;

		for (size_t i = 0; i < sf_profile_len; i++) {
			const sf_rule *rule = &sf_profile[i];
			bool uncond = rule->a.how == SF_ANY && rule->b.how == SF_ANY;
			bool allows = rule->action == SF_ALLOW ||
				      (rule->action == SF_EXEC && !(v & SF_V_AUDIT_EXEC)) ||
				      (rule->action == SF_WRITE && !(v & SF_V_AUDIT_DENIED)) ||
				      (rule->action == SF_LISTEN && !(v & SF_V_NO_LISTEN)) ||
				      (rule->action == SF_BIND &&
				       !((v & SF_V_NO_LISTEN) && (v & SF_V_AUDIT_DENIED)));

			for (const char *const *name = rule->names; *name; name++) {
				int nr = seccomp_syscall_resolve_name(*name);
				uint32_t act;

				if (nr == __NR_SCMP_ERROR || nr < 0)
					continue;
				act = const_action(&sf_programs[v], (uint32_t)nr);
				if (allows && uncond) {
					n_allow++;
					if (act != SECCOMP_RET_ALLOW) {
						tap_diag("variant %u: %s is not cached (0x%x)", v,
							 *name, act);
						bad++;
					}
				} else if (act == SECCOMP_RET_ALLOW) {
					tap_diag("variant %u: %s is cached as allowed", v, *name);
					bad++;
				}
			}
		}
		ok(bad == 0 && n_allow > 200,
		   "variant %u: the %u unconditionally allowed syscalls skip the filter "
		   "(kernel action cache), no refused one does",
		   v, n_allow);
	}
}

static void test_filter_size(void)
{
	sc_plan plan = plain_plan();
	scmp_filter_ctx ctx = NULL;
	int r, fd;
	off_t bytes = -1;

	plan.audit_exec = plan.audit_denied_syscalls = true;
	r = sf_build(sf_variant_of(&plan), &ctx);
	fd = memfd_create("bpf", MFD_CLOEXEC);
	if (r == 0 && fd >= 0 && seccomp_export_bpf(ctx, fd) == 0)
		bytes = lseek(fd, 0, SEEK_END);
	ok(bytes > 0 && bytes / 8 < 4096, "filter compiles to %lld BPF instructions (< 4096)",
	   (long long)(bytes / 8));
	if (ctx)
		seccomp_release(ctx);
	if (fd >= 0)
		close(fd);
}

/* A process carries one listener: a second filter that wants one is
 * refused with EBUSY (seccomp.h), one without a listener still stacks. */
static void test_second_listener(void)
{
	int status = -1;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		sc_plan audit = plain_plan(), quiet = plain_plan();
		int fd = -1, fd2 = -1;

		audit.audit_exec = audit.audit_denied_syscalls = true;
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || sf_apply(&audit, &fd) < 0 ||
		    fd < 0)
			_exit(1);
		if (sf_apply(&audit, &fd2) != -EBUSY)
			_exit(2);
		if (sf_apply(&quiet, &fd2) < 0 || fd2 != -1)
			_exit(3);
		_exit(0);
	}
	if (pid > 0 && waitpid(pid, &status, 0) < 0)
		status = -1;
	ok(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "a second listener is refused with EBUSY, a filter without one stacks (status %d)",
	   status);
}

/* sandcap loads the programs generated at build time; libseccomp, here and
 * now, must produce exactly the same bytes for every variant, or the two
 * have drifted (a changed table without a rebuild, another libseccomp). */
static void test_precompiled(void)
{
	for (unsigned v = 0; v < SF_N_VARIANTS; v++) {
		scmp_filter_ctx ctx = NULL;
		struct sock_filter *insns = NULL;
		size_t len = 0;
		const sf_program *p = &sf_programs[v];
		int r = sf_build(v, &ctx);

		if (r == 0)
			r = sf_export(ctx, &insns, &len);
		ok(r == 0 && len == p->len && memcmp(insns, p->insns, len * sizeof(*insns)) == 0,
		   "variant %u: precompiled program (%u instructions) is what libseccomp "
		   "builds now (%zu, r=%d)",
		   v, p->len, len, r);
		ok(p->notify == ((v & (SF_V_AUDIT_EXEC | SF_V_AUDIT_DENIED)) != 0),
		   "variant %u: loaded %s a listener", v, p->notify ? "with" : "without");
		free(insns);
		if (ctx)
			seccomp_release(ctx);
	}
	ok(sf_programs_arch == seccomp_arch_native(), "programs are for this architecture");
	test_second_listener();
	ok(sf_build(SF_N_VARIANTS, &(scmp_filter_ctx){NULL}) == -EINVAL,
	   "sf_build refuses an unknown variant");
}

int main(void)
{
	sc_plan plan = plain_plan();
	char reason[256];
	int r;

	r = sf_probe(reason, sizeof(reason));
	if (r < 0) {
		printf("1..0 # SKIP %s\n", reason);
		return getenv("SANDCAP_MUST_WORK") ? 1 : 77;
	}
	ok(r == 0 && strcmp(reason, "active") == 0, "sf_probe: %s", reason);
	if (!mkdtemp(work_dir))
		tap_skip_all("mkdtemp: %s", strerror(errno));

	for (size_t i = 0; i < ELEMENTSOF(checks); i++) {
		int got;

		if (checks[i].needs && access(checks[i].needs, X_OK) < 0) {
			tap_skip(checks[i].what, "no %s", checks[i].needs);
			continue;
		}
		got = run_check(&plan, checks[i].fn, true);
		/* A host without the entry at all (a guest kernel with no int
		 * $0x80 gate faults it, filter or not; under ASan the fault is
		 * exit status 1): no such syscall can get past the filter
		 * either, which is what the check is for. These checks return 3
		 * only when the syscall came back. */
		if (checks[i].want == 128 + SIGSYS && got != checks[i].want && got != 3 &&
		    run_check(&plan, checks[i].fn, false) == got) {
			ok(true, "%s (got %d: the host faults it without the filter too)",
			   checks[i].what, got);
			continue;
		}
		ok(got == checks[i].want, "%s (got %d)", checks[i].what, got);
		if (checks[i].differs_bare == BARE_ROOT && geteuid() != 0) {
			tap_skip("  ...", "the comparison without the filter needs root");
		} else if (checks[i].differs_bare != BARE_ANY) {
			int bare = run_check(&plan, checks[i].fn, false);

			ok(bare != checks[i].want, "  ... and not so without the filter (got %d)",
			   bare);
		}
	}
	test_expand();
	test_table_shape();
	test_filter_size();
	test_cacheable();
	test_precompiled();
	test_notifications();
	tap_diag("the same, served by the listener thread");
	serve_with_thread = true;
	test_notifications();
	{
		/* Any listener will do: the flag is the listener's. */
		sc_plan p = plain_plan();
		int sv[2], fd = -1, sr = -1;
		pid_t pid;

		p.audit_exec = true;
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0) {
			fflush(stdout);
			pid = fork();
			if (pid == 0) {
				if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
				    sf_apply(&p, &fd) < 0 || io_send_fd(sv[1], fd) < 0)
					_exit(1);
				_exit(0);
			}
			fd = io_recv_fd(sv[0]);
			if (fd >= 0)
				sr = sf_notify_sync_wakeup(fd);
			(void)wait_child(pid);
			close(sv[0]);
			close(sv[1]);
			if (fd >= 0)
				close(fd);
		}
		ok(sr == 0 || sr == -EOPNOTSUPP, "sf_notify_sync_wakeup: %s",
		   sr == 0 ? "set" : strerror(-sr));
	}

	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", work_dir);
		if (system(cmd) != 0)
			tap_diag("could not remove %s", work_dir);
	}
	return tap_done();
}
