/* SPDX-License-Identifier: MIT */
/*
 * Escape probes: each subcommand tries one way out of a sandbox and prints
 *   ESCAPED <name>              exit 0: the attempt worked
 *   HELD <name> (<errno name>)  exit 1: the kernel refused
 *   SKIP <name> (<why>)         exit 2: the probe could not be set up here
 * A probe killed by a signal (e.g. SIGSYS from seccomp) is held as well; the
 * runner (run-escapes.sh) reports it that way.
 *
 * Every probe also runs outside any sandbox, where as root it should mostly
 * ESCAPE: that proves it can tell. Probes that would change the host do the
 * least possible and undo it: the hostname, the clock and the sysctl knobs
 * are written with the value they already have, mounts happen in a private
 * mount namespace or are unmounted at once, ptrace uses PTRACE_SEIZE and
 * detaches, TIOCSTI targets a pty this probe made itself.
 *
 * Standalone on purpose (no sandcap library): build with
 *   cc -O2 -Wall -Wextra -o probe-escape tests/escape/probe-escape.c
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_userfaultfd
#define __NR_userfaultfd 323
#endif

static const char *probe_name;

static int escaped(void)
{
	printf("ESCAPED %s\n", probe_name);
	return 0;
}

static int held(int err)
{
	printf("HELD %s (%s)\n", probe_name, strerrorname_np(err) ?: "?");
	return 1;
}

static int skip(const char *why)
{
	printf("SKIP %s (%s)\n", probe_name, why);
	return 2;
}

/* r < 0 with errno: held; else escaped. */
static int verdict(long r)
{
	return r < 0 ? held(errno) : escaped();
}

static const char *tmpdir(void)
{
	const char *t = getenv("TMPDIR");

	return t && t[0] == '/' ? t : "/tmp";
}

static int p_open_by_handle_at(int argc, char **argv)
{
	struct {
		struct file_handle fh;
		unsigned char buf[MAX_HANDLE_SZ];
	} h = {.fh.handle_bytes = MAX_HANDLE_SZ};
	int mount_id, mfd, fd;

	(void)argc, (void)argv;
	/* The "shocker" primitive: a handle opens a file without a path, so
	 * neither the mount tree nor path-based rules see it. */
	if (name_to_handle_at(AT_FDCWD, "/", &h.fh, &mount_id, 0) < 0)
		return held(errno);
	mfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_CLOEXEC);
	return verdict(fd);
}

static int p_mount(int argc, char **argv)
{
	char dir[256];
	int r, e;

	(void)argc, (void)argv;
	snprintf(dir, sizeof(dir), "%s/probe-mount-XXXXXX", tmpdir());
	if (!mkdtemp(dir))
		return skip("mkdtemp");
	r = mount("probe", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=4k");
	e = errno;
	if (r == 0)
		(void)umount2(dir, MNT_DETACH);
	(void)rmdir(dir);
	errno = e;
	return verdict(r);
}

static int p_chroot(int argc, char **argv)
{
	char dir[256];
	int r;

	(void)argc, (void)argv;
	snprintf(dir, sizeof(dir), "%s/probe-chroot-XXXXXX", tmpdir());
	if (!mkdtemp(dir))
		return skip("mkdtemp");
	r = chroot(dir);
	if (r == 0) {
		int out;

		/* The classic break-out: the cwd stays outside the new root, so
		 * walking up from it reaches the old root again. The verdict is
		 * the first chroot's. */
		for (int i = 0; i < 64 && chdir("..") == 0; i++)
			;
		out = chroot(".");
		(void)out;
	}
	(void)rmdir(dir);
	return verdict(r);
}

static int p_pivot_root(int argc, char **argv)
{
	char dir[256], old[300];
	int r;

	(void)argc, (void)argv;
	/* Only ever in a private mount namespace: pivoting the caller's own
	 * namespace outside a sandbox would pivot the host. */
	if (unshare(CLONE_NEWNS) < 0) {
		int e = errno;

		r = (int)syscall(SYS_pivot_root, "/nonexistent-probe", "/nonexistent-probe");
		return held(r < 0 && errno != ENOENT ? errno : e);
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return held(errno);
	snprintf(dir, sizeof(dir), "%s/probe-pivot-XXXXXX", tmpdir());
	if (!mkdtemp(dir))
		return skip("mkdtemp");
	if (mount("probe", dir, "tmpfs", 0, "size=64k") < 0)
		return held(errno);
	snprintf(old, sizeof(old), "%s/old", dir);
	if (mkdir(old, 0700) < 0)
		return skip("mkdir");
	r = (int)syscall(SYS_pivot_root, dir, old);
	return verdict(r);
}

static int p_mknod(int argc, char **argv)
{
	char dir[256], node[300];
	int r, fd = -1, e;

	(void)argc, (void)argv;
	snprintf(dir, sizeof(dir), "%s/probe-mknod-XXXXXX", tmpdir());
	if (!mkdtemp(dir))
		return skip("mkdtemp");
	snprintf(node, sizeof(node), "%s/null", dir);
	/* A device node is only a way out if it can also be opened (nodev). */
	r = mknod(node, S_IFCHR | 0600, makedev(1, 3));
	if (r == 0)
		fd = open(node, O_WRONLY | O_CLOEXEC);
	e = errno;
	(void)unlink(node);
	(void)rmdir(dir);
	errno = e;
	return verdict(r < 0 ? r : fd);
}

/* Writes a numeric knob with the value it has: proves write access without
 * changing anything. */
static int write_back(const char *const *paths)
{
	int last = ENOENT;

	for (; *paths; paths++) {
		char buf[64];
		ssize_t n;
		int fd = open(*paths, O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			if (errno != ENOENT)
				last = errno;
			continue;
		}
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		fd = open(*paths, O_WRONLY | O_CLOEXEC);
		if (fd < 0) {
			last = errno;
			continue;
		}
		n = write(fd, buf, (size_t)n);
		last = errno;
		close(fd);
		if (n > 0)
			return escaped();
	}
	return held(last);
}

static int p_sys_write(int argc, char **argv)
{
	static const char *const paths[] = {
	    "/sys/kernel/mm/ksm/sleep_millisecs",
	    "/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs",
	    "/sys/kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs",
	    NULL,
	};

	(void)argc, (void)argv;
	return write_back(paths);
}

static int p_proc_sys_write(int argc, char **argv)
{
	static const char *const paths[] = {
	    "/proc/sys/kernel/printk_ratelimit",
	    "/proc/sys/vm/stat_interval",
	    NULL,
	};

	(void)argc, (void)argv;
	return write_back(paths);
}

static int seize(pid_t pid)
{
	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0)
		return held(errno);
	(void)ptrace(PTRACE_DETACH, pid, NULL, NULL);
	return escaped();
}

static int p_ptrace_init(int argc, char **argv)
{
	(void)argc, (void)argv;
	return seize(1);
}

static int p_ptrace_parent(int argc, char **argv)
{
	(void)argc, (void)argv;
	return seize(getppid());
}

static int p_tiocsti(int argc, char **argv)
{
	char c = ' ';
	int m, s;

	(void)argc, (void)argv;
	/* A terminal this process does not control: pushing input into it is
	 * what an agent would do to the operator's terminal. */
	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
		return skip("no pty");
	s = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0)
		return skip("pty slave");
	return verdict(ioctl(s, TIOCSTI, &c));
}

static int p_keyctl(int argc, char **argv)
{
	(void)argc, (void)argv;
	return verdict(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0));
}

static int p_bpf(int argc, char **argv)
{
	union bpf_attr a = {0};

	(void)argc, (void)argv;
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 4;
	a.max_entries = 1;
	return verdict(syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a)));
}

static int p_perf_event_open(int argc, char **argv)
{
	struct perf_event_attr a = {0};

	(void)argc, (void)argv;
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	return verdict(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
}

static int p_userfaultfd(int argc, char **argv)
{
	(void)argc, (void)argv;
	return verdict(syscall(__NR_userfaultfd, O_CLOEXEC));
}

static int p_io_uring_setup(int argc, char **argv)
{
	unsigned char params[120] = {0};

	(void)argc, (void)argv;
	return verdict(syscall(__NR_io_uring_setup, 1, params));
}

static int p_unshare_user(int argc, char **argv)
{
	(void)argc, (void)argv;
	return verdict(unshare(CLONE_NEWUSER));
}

static int p_setns(int argc, char **argv)
{
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

	(void)argc, (void)argv;
	if (fd < 0)
		return held(errno);
	return verdict(setns(fd, 0));
}

static int p_socket_raw(int argc, char **argv)
{
	(void)argc, (void)argv;
	return verdict(socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP));
}

static int p_socket_packet(int argc, char **argv)
{
	(void)argc, (void)argv;
	return verdict(socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
}

static int p_socket_netlink(int argc, char **argv)
{
	(void)argc, (void)argv;
	return verdict(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
}

/* The families beside the route probe glibc makes: the kernel's audit
 * channel, every socket of the namespace, netfilter, device events. */
static int p_socket_netlink_audit(int argc, char **argv)
{
	(void)argc, (void)argv;
	return verdict(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT));
}

static int p_socket_netlink_diag(int argc, char **argv)
{
	(void)argc, (void)argv;
	return verdict(socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
}

static int p_socket_netlink_netfilter(int argc, char **argv)
{
	(void)argc, (void)argv;
	return verdict(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER));
}

static int p_socket_netlink_uevent(int argc, char **argv)
{
	(void)argc, (void)argv;
	return verdict(socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT));
}

/* The kernel reads the protocol as an int: bits above 32 must not make
 * another family look like the route probe, nor the reverse. */
static int p_socket_netlink_high(int argc, char **argv)
{
	(void)argc, (void)argv;
	return verdict(
	    syscall(__NR_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, (1UL << 32) | NETLINK_AUDIT));
}

static int parse_port(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s && !*end && v > 0 && v < 65536 ? (int)v : -1;
}

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sa;
}

static int p_tcp_connect(int argc, char **argv)
{
	struct sockaddr_in sa;
	int port = argc > 0 ? parse_port(argv[0]) : -1, fd;

	if (port < 0)
		return skip("usage: tcp-connect PORT");
	sa = loopback(port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return held(errno);
	return verdict(connect(fd, (struct sockaddr *)&sa, sizeof(sa)));
}

static int p_udp(int argc, char **argv)
{
	struct sockaddr_in sa;
	struct pollfd p;
	char buf[16];
	int port = argc > 0 ? parse_port(argv[0]) : -1, fd;

	if (port < 0)
		return skip("usage: udp PORT");
	sa = loopback(port);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return held(errno);
	/* UDP "works" locally even when nothing is there: only an answer
	 * from the echo server outside proves the datagram got out. */
	if (sendto(fd, "ping", 4, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return held(errno);
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 1000) != 1)
		return held(ETIMEDOUT);
	if (recv(fd, buf, sizeof(buf), 0) != 4 || memcmp(buf, "pong", 4) != 0)
		return held(errno ? errno : EPROTO);
	return escaped();
}

static socklen_t abstract_addr(const char *name, struct sockaddr_un *su)
{
	size_t n = strlen(name);

	*su = (struct sockaddr_un){.sun_family = AF_UNIX};
	if (n >= sizeof(su->sun_path) - 1)
		n = sizeof(su->sun_path) - 2;
	memcpy(su->sun_path + 1, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static int p_abstract_unix(int argc, char **argv)
{
	struct sockaddr_un su;
	socklen_t len;
	int fd;

	if (argc < 1 || !argv[0][0])
		return skip("usage: abstract-unix NAME");
	len = abstract_addr(argv[0], &su);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return held(errno);
	return verdict(connect(fd, (struct sockaddr *)&su, len));
}

static int p_sethostname(int argc, char **argv)
{
	char name[256] = {0};

	(void)argc, (void)argv;
	if (gethostname(name, sizeof(name) - 1) < 0)
		return skip("gethostname");
	/* Inside a UTS namespace of its own this is harmless; the filter still
	 * refuses it. Outside, the same name is written back. */
	return verdict(sethostname(name, strlen(name)));
}

static int p_clock_settime(int argc, char **argv)
{
	struct timespec now;

	(void)argc, (void)argv;
	if (clock_gettime(CLOCK_REALTIME, &now) < 0)
		return skip("clock_gettime");
	return verdict(clock_settime(CLOCK_REALTIME, &now));
}

/* Helper, not a probe: the host-side endpoints for tcp-connect, udp and
 * abstract-unix. Runs until killed. */
static int serve(int argc, char **argv)
{
	struct sockaddr_in ta, ua;
	struct sockaddr_un su;
	socklen_t ulen;
	int tport, uport, t, u, a, one = 1;

	if (argc < 3 || (tport = parse_port(argv[0])) < 0 || (uport = parse_port(argv[1])) < 0) {
		fprintf(stderr, "usage: serve TCPPORT UDPPORT ABSTRACTNAME\n");
		return 2;
	}
	ta = loopback(tport);
	ua = loopback(uport);
	ulen = abstract_addr(argv[2], &su);
	t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	a = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	(void)setsockopt(t, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (t < 0 || u < 0 || a < 0 || bind(t, (struct sockaddr *)&ta, sizeof(ta)) < 0 ||
	    listen(t, 64) < 0 || bind(u, (struct sockaddr *)&ua, sizeof(ua)) < 0 ||
	    bind(a, (struct sockaddr *)&su, ulen) < 0 || listen(a, 64) < 0) {
		perror("serve");
		return 2;
	}
	printf("serving\n");
	fflush(stdout);
	for (;;) {
		struct pollfd p[3] = {{.fd = t, .events = POLLIN},
				      {.fd = u, .events = POLLIN},
				      {.fd = a, .events = POLLIN}};

		if (poll(p, 3, -1) < 0 && errno != EINTR)
			return 2;
		if (p[0].revents & POLLIN) {
			int c = accept4(t, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0)
				close(c);
		}
		if (p[1].revents & POLLIN) {
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			char buf[16];

			if (recvfrom(u, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl) > 0)
				(void)sendto(u, "pong", 4, 0, (struct sockaddr *)&from, fl);
		}
		if (p[2].revents & POLLIN) {
			int c = accept4(a, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0)
				close(c);
		}
	}
}

static const struct probe {
	const char *name;
	int (*fn)(int argc, char **argv);
} probes[] = {
    {"open_by_handle_at", p_open_by_handle_at},
    {"mount", p_mount},
    {"chroot", p_chroot},
    {"pivot_root", p_pivot_root},
    {"mknod", p_mknod},
    {"sys-write", p_sys_write},
    {"proc-sys-write", p_proc_sys_write},
    {"ptrace-init", p_ptrace_init},
    {"ptrace-parent", p_ptrace_parent},
    {"tiocsti", p_tiocsti},
    {"keyctl", p_keyctl},
    {"bpf", p_bpf},
    {"perf_event_open", p_perf_event_open},
    {"userfaultfd", p_userfaultfd},
    {"io_uring_setup", p_io_uring_setup},
    {"unshare-user", p_unshare_user},
    {"setns", p_setns},
    {"socket-raw", p_socket_raw},
    {"socket-packet", p_socket_packet},
    {"socket-netlink", p_socket_netlink},
    {"socket-netlink-audit", p_socket_netlink_audit},
    {"socket-netlink-diag", p_socket_netlink_diag},
    {"socket-netlink-netfilter", p_socket_netlink_netfilter},
    {"socket-netlink-uevent", p_socket_netlink_uevent},
    {"socket-netlink-high", p_socket_netlink_high},
    {"tcp-connect", p_tcp_connect},
    {"udp", p_udp},
    {"abstract-unix", p_abstract_unix},
    {"sethostname", p_sethostname},
    {"clock_settime", p_clock_settime},
};

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "serve") == 0)
		return serve(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "list") == 0) {
		for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
			printf("%s\n", probes[i].name);
		return 0;
	}
	for (size_t i = 0; argc >= 2 && i < sizeof(probes) / sizeof(probes[0]); i++) {
		if (strcmp(argv[1], probes[i].name) == 0) {
			int r;

			probe_name = probes[i].name;
			errno = 0;
			r = probes[i].fn(argc - 2, argv + 2);
			fflush(stdout);
			return r;
		}
	}
	fprintf(stderr, "usage: %s list | serve TCP UDP NAME | PROBE [ARG]\n", argv[0]);
	return 2;
}
