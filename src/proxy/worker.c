/* SPDX-License-Identifier: MIT */
/*
 * The proxy worker process: "sandcap-proxy worker", exec'd fresh by px_spawn() with
 * an empty environment and exactly fds 3 (event socket), 4 (configuration
 * memfd) and 5 (the counters shared with a successor). The listener, the
 * sandbox resolver's socket, the transparent listeners and the attempt
 * socket come later, as one message on the event socket (px_hand_sockets()),
 * so that the worker can start while the sandbox is being built. It parses
 * hostile HTTP, so before it even holds a socket of the sandbox it gives up
 * everything (docs/proxy.md):
 *
 *   1. read the configuration, init c-ares (reads /etc/resolv.conf) and
 *      /etc/hosts; only when a credential has upstream https, OpenSSL: the
 *      last file access it makes, except the CA files of the system store
 *      that OpenSSL reads when a chain needs them (step 4);
 *   2. drop the capability bounding set and ambient set (needs CAP_SETPCAP,
 *      so before the uid change), setgroups(0), setresgid/setresuid to
 *      PX_WORKER_UID, then clear any capability left (capset);
 *   3. no_new_privs (required before unprivileged seccomp and Landlock),
 *      not dumpable (no ptrace/core of a process holding credential values);
 *   4. Landlock: every filesystem right handled, no rule added = no file can
 *      be opened, except reading beneath the CA directories when upstream
 *      TLS is configured; on ABI >= 4 TCP bind is handled too, on ABI >= 6
 *      abstract unix sockets and signals are scoped;
 *   5. seccomp last, so the filter need not allow the setup syscalls above;
 *   6. then it waits for its sockets.
 *
 * PX_WORKER_UID is 65534 ("nobody"). A dedicated uid would keep two workers
 * apart by uid too; they are kept apart by what they can do instead: no
 * filesystem (Landlock), no signals/ptrace/process syscalls (seccomp), not
 * dumpable. When started unprivileged the uid stays as it is; the other
 * layers still apply.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <limits.h>
#include <unistd.h>
#include <grp.h>

#include "base/cleanup.h"
#include "base/fdpass.h"
#include "compat/syscalls.h"
#include "proxy/conn.h"
#include "proxy/cred-limits.h"
#include "proxy/proxy.h"
#include "proxy/relay.h"
#include "proxy/tls.h"

#define PX_WORKER_UID 65534
#define PX_WORKER_GID 65534
#define PX_FD_EVENTS  3
#define PX_FD_CONFIG  4
#define PX_FD_STATE   5

static int read_config(int fd, px_config **ret)
{
	struct stat st;
	_cleanup_free_ char *buf = NULL;
	size_t off = 0;
	int r;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size <= 0 || (uint64_t)st.st_size > PX_CONFIG_MAX_BYTES)
		return -EINVAL;
	buf = malloc((size_t)st.st_size);
	if (!buf)
		return -ENOMEM;
	while (off < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + off, (size_t)st.st_size - off, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		off += (size_t)n;
	}
	r = px_config_parse(buf, off, ret);
	explicit_bzero(buf, off);
	return r;
}

static int drop_privileges(int64_t parent_pid)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {0};

	if (geteuid() == 0) {
		for (unsigned long cap = 0; cap <= 63; cap++)
			if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
				return -errno;
		if (setgroups(0, NULL) < 0)
			return -errno;
		if (setresgid(PX_WORKER_GID, PX_WORKER_GID, PX_WORKER_GID) < 0)
			return -errno;
		if (setresuid(PX_WORKER_UID, PX_WORKER_UID, PX_WORKER_UID) < 0)
			return -errno;
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -errno;
	/* cleared by the uid change above: the worker dies with its supervisor */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	if (getppid() != (pid_t)parent_pid)
		return -ESRCH; /* the supervisor is already gone */
	return 0;
}

/* Index: Landlock ABI version. */
static const uint64_t ll_fs_handled[] = {
    [1] = SC_LANDLOCK_FS_V1,
    [2] = SC_LANDLOCK_FS_V1 | SC_LANDLOCK_ACCESS_FS_REFER,
    [3] = SC_LANDLOCK_FS_V1 | SC_LANDLOCK_ACCESS_FS_REFER | SC_LANDLOCK_ACCESS_FS_TRUNCATE,
    [4] = SC_LANDLOCK_FS_V1 | SC_LANDLOCK_ACCESS_FS_REFER | SC_LANDLOCK_ACCESS_FS_TRUNCATE,
    [5] = SC_LANDLOCK_FS_V1 | SC_LANDLOCK_ACCESS_FS_REFER | SC_LANDLOCK_ACCESS_FS_TRUNCATE |
	  SC_LANDLOCK_ACCESS_FS_IOCTL_DEV,
};

#define PX_LL_RULE_PATH_BENEATH 1
#define PX_LL_READ_FILE		(1ULL << 2)

struct px_ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

static int landlock_abi(void)
{
	int abi = sys_landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	if (abi < 0)
		return (errno == ENOSYS || errno == EOPNOTSUPP) ? 0 : -errno;
	return abi;
}

/*
 * Every filesystem right handled; the only rule, when trust_fds are given,
 * lets the worker read files beneath the CA directories (nothing else: no
 * directory listing, no write). Returns 1 when applied, 0 when the kernel
 * has no Landlock, -errno.
 */
static int apply_landlock(int abi, const int *trust_fds, size_t n_trust)
{
	struct sc_landlock_ruleset_attr attr = {0};
	size_t size;
	int fd, r;

	if (abi == 0)
		return 0;
	attr.handled_access_fs = ll_fs_handled[abi < 5 ? abi : 5];
	size = sizeof(attr.handled_access_fs);
	if (abi >= 4) {
		/* the worker only ever connects; it never binds a TCP port */
		attr.handled_access_net = SC_LANDLOCK_ACCESS_NET_BIND_TCP;
		size = offsetof(struct sc_landlock_ruleset_attr, scoped);
	}
	if (abi >= 6) {
		attr.scoped = SC_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | SC_LANDLOCK_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	fd = sys_landlock_create_ruleset(&attr, size, 0);
	if (fd < 0)
		return -errno;
	for (size_t i = 0; i < n_trust; i++) {
		struct px_ll_path_beneath pb = {.allowed_access = PX_LL_READ_FILE,
						.parent_fd = trust_fds[i]};

		if (syscall(__NR_landlock_add_rule, fd, PX_LL_RULE_PATH_BENEATH, &pb, 0) < 0) {
			r = -errno;
			(void)close(fd);
			return r;
		}
	}
	r = sys_landlock_restrict_self(fd, 0);
	r = r < 0 ? -errno : 1;
	(void)close(fd);
	return r;
}

/*
 * read_files: the worker reads CA files lazily (only with Landlock applied,
 * which confines what it can open to the CA directories): openat(2) for
 * reading and the stat(2) OpenSSL's hashed-directory lookup makes first.
 */
static int apply_seccomp(bool read_files)
{
	static const int allowed[] = {
	    SCMP_SYS(read),	      SCMP_SYS(write),		 SCMP_SYS(readv),
	    SCMP_SYS(writev),	      SCMP_SYS(recvfrom),	 SCMP_SYS(sendto),
	    SCMP_SYS(recvmsg),	      SCMP_SYS(sendmsg),	 SCMP_SYS(recvmmsg),
	    SCMP_SYS(sendmmsg),	      SCMP_SYS(close),		 SCMP_SYS(epoll_wait),
	    SCMP_SYS(epoll_pwait),    SCMP_SYS(epoll_ctl),	 SCMP_SYS(connect),
	    SCMP_SYS(accept4),	      SCMP_SYS(getsockopt),	 SCMP_SYS(setsockopt),
	    SCMP_SYS(getsockname),    SCMP_SYS(getpeername),	 SCMP_SYS(shutdown),
	    SCMP_SYS(fcntl),	      SCMP_SYS(splice),		 SCMP_SYS(pipe2),
	    SCMP_SYS(clock_gettime),  SCMP_SYS(gettimeofday),	 SCMP_SYS(getrandom),
	    SCMP_SYS(munmap),	      SCMP_SYS(mremap),		 SCMP_SYS(brk),
	    SCMP_SYS(madvise),	      SCMP_SYS(exit_group),	 SCMP_SYS(exit),
	    SCMP_SYS(rt_sigreturn),   SCMP_SYS(restart_syscall), SCMP_SYS(futex),
	    SCMP_SYS(getpid),	      SCMP_SYS(gettid),		 SCMP_SYS(poll),
	    SCMP_SYS(rt_sigprocmask),
	};
	/* open flags that could create, change or truncate a file */
	static const uint64_t writing_bits[] = {O_WRONLY, O_RDWR,   O_CREAT,
						O_TRUNC,  O_APPEND, __O_TMPFILE};
	uint64_t writing = 0;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	uint32_t stat_action = read_files ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(EACCES);
	int r = 0;

	if (!ctx)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(writing_bits); i++)
		writing |= writing_bits[i];
	for (size_t i = 0; i < ELEMENTSOF(allowed) && r == 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
	/* sockets: IPv4 and IPv6 only */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_EQ, AF_INET));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_EQ, AF_INET6));
	/* HTTP/2 streams reach their connections through socketpairs (h2.h):
	 * connected to each other only, never to anything outside */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 1,
				     SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
	/* memory for malloc, never executable */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* c-ares sets O_NONBLOCK with FIONBIO on some builds and asks FIONREAD */
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_EQ, FIONBIO));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_EQ, FIONREAD));
	/* libraries that probe files lazily get a clean error, not a kill;
	 * Landlock would refuse them anyway */
	if (r == 0 && read_files)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, writing, 0));
	for (size_t i = 0; i < ELEMENTSOF(writing_bits) && r == 0 && read_files; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, writing_bits[i], writing_bits[i]));
	if (r == 0 && !read_files)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 0);
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 0);
	/* Landlock does not cover stat(): refuse it so paths cannot be probed,
	 * unless the CA lookup needs it */
	if (r == 0)
		r = seccomp_rule_add(ctx, stat_action, SCMP_SYS(newfstatat), 0);
	if (r == 0)
		r = seccomp_rule_add(ctx, stat_action, SCMP_SYS(statx), 0);
	if (r == 0)
		r = seccomp_rule_add(ctx, stat_action, SCMP_SYS(fstat), 0);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}

int px_confine_no_files(int64_t parent_pid)
{
	struct rlimit rl = {0, 0};
	int abi = landlock_abi(), r;

	if (abi < 0)
		return abi;
	(void)setrlimit(RLIMIT_CORE, &rl);
	r = drop_privileges(parent_pid);
	if (r >= 0)
		r = apply_landlock(abi, NULL, 0);
	if (r >= 0)
		r = apply_seccomp(false);
	return r < 0 ? r : 0;
}

static bool needs_tls(const px_config *cfg)
{
	if (cfg->ca_cert)
		return true; /* decrypted requests go on in TLS */
	for (size_t i = 0; i < cfg->n_creds; i++)
		if (cfg->creds[i].upstream_https)
			return true;
	return false;
}

/*
 * Upstream TLS, only for a policy that can use it: with Landlock the system
 * store is read one CA at a time when a chain is verified, from the
 * directories in *trust_fds (O_PATH, for the ruleset); without it, whole
 * now. The context itself is made at the first upstream TLS connection
 * (loop.c, px_tls_ctx_new()). Returns 0 (L->tls_trust NULL when not
 * needed) or -errno.
 */
static int setup_tls(px_loop *L, int abi, int *trust_fds, size_t *n_trust)
{
	char dirs[PX_TRUST_MAX_DIRS][PATH_MAX];
	bool lazy = abi > 0;
	int n;

	*n_trust = 0;
	if (!needs_tls(L->cfg))
		return 0;
	if (lazy) {
		n = px_tls_trust_dirs(dirs, PX_TRUST_MAX_DIRS);
		for (int i = 0; i < n; i++) {
			int fd = open(dirs[i], O_PATH | O_DIRECTORY | O_CLOEXEC);

			if (fd >= 0)
				trust_fds[(*n_trust)++] = fd;
		}
		lazy = *n_trust > 0;
	}
	return px_tls_trust_new(L->cfg->upstream_ca, lazy, &L->tls_trust);
}

/* The attempt socket (ns_attempt_socket()) among the seed's sockets. */
static bool is_packet_socket(int fd)
{
	int domain = 0;
	socklen_t len = sizeof(domain);

	return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_PACKET;
}

/* The counters a predecessor left (PX_SHARED_MAGIC), or fresh ones. */
static int map_shared(px_loop *L, int fd)
{
	const px_config *cfg = L->cfg;
	uint64_t now = px_now_ns(), burst;
	px_shared fresh = {.magic = PX_SHARED_MAGIC}, *sh;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (sh == MAP_FAILED)
		return -errno;
	px_bucket_init(&fresh.rate, cfg->rate.count, cfg->rate.per_ns,
		       cfg->rate.count ? cfg->rate.count : 1, now);
	burst = cfg->bandwidth == PLAN_UNLIMITED ? 1 : cfg->bandwidth / 8;
	if (burst < PX_BW_BURST_MIN)
		burst = PX_BW_BURST_MIN;
	px_bucket_init(&fresh.bw_up, cfg->bandwidth, 1000000000ull, burst, now);
	px_bucket_init(&fresh.bw_down, cfg->bandwidth, 1000000000ull, burst, now);
	fresh.budget_left = cfg->egress_budget;
	fresh.start_ns = now;
	for (size_t i = 0; i < cfg->n_creds && i < POLICY_MAX_CREDENTIALS; i++)
		px_cred_state_init(&fresh.creds[i], &cfg->creds[i], now);
	if (sh->magic == PX_SHARED_MAGIC) {
		if (sh->start_ns < now)
			fresh.start_ns = sh->start_ns;
		for (size_t i = 0; i < cfg->n_creds && i < POLICY_MAX_CREDENTIALS; i++)
			px_cred_state_resume(&fresh.creds[i], &cfg->creds[i], &sh->creds[i], now);
		/* a restart: never more than the policy grants */
		px_bucket_resume(&fresh.rate, &sh->rate, now);
		px_bucket_resume(&fresh.bw_up, &sh->bw_up, now);
		px_bucket_resume(&fresh.bw_down, &sh->bw_down, now);
		if (sh->budget_left < fresh.budget_left)
			fresh.budget_left = sh->budget_left;
		fresh.rate_refused = sh->rate_refused;
		fresh.request_ids = sh->request_ids; /* ids stay unique in the run */
	}
	*sh = fresh;
	L->sh = sh;
	/* the names a predecessor handed out keep their addresses */
	L->synth =
	    mmap(NULL, sizeof(*L->synth), PROT_READ | PROT_WRITE, MAP_SHARED, fd, PX_SYNTH_OFFSET);
	if (L->synth == MAP_FAILED) {
		L->synth = NULL;
		return -errno;
	}
	return 0;
}

/*
 * The listener and the seed's other sockets: one message from the
 * supervisor (px_hand_sockets()), waited for. 1 when they came, 0 at the
 * supervisor's end before them (the sandbox never got its network),
 * -errno.
 */
static int take_sockets(px_loop *L)
{
	int fds[FDPASS_MAX_FDS], others[FDPASS_MAX_FDS];
	char tag;
	struct iovec iov = {.iov_base = &tag, .iov_len = 1};
	size_t n = 0, k = 0;
	int flags = 0;
	ssize_t got = fdpass_recv(L->event_fd, &iov, 1, 0, fds, FDPASS_MAX_FDS, &n, &flags);

	if (got < 0)
		return (int)got;
	if (got == 0 && n == 0)
		return 0;
	if (n == 0 || (flags & (MSG_TRUNC | MSG_CTRUNC))) {
		fdpass_close(fds, n);
		return -EPROTO;
	}
	L->listen_fd = fds[0];
	for (size_t i = 1; i < n; i++) {
		if (is_packet_socket(fds[i]))
			L->attempt_fd = fds[i]; /* the others are the redirection's */
		else
			others[k++] = fds[i];
	}
	if (k > 0) {
		int r = px_redirect_new(L, others, k);

		if (r < 0)
			return r;
	}
	return 1;
}

int px_worker_main(void)
{
	px_loop L = {.epfd = -1};
	px_config *cfg = NULL;
	int trust_fds[PX_TRUST_MAX_DIRS];
	size_t n_trust = 0;
	int r, flags, abi;

	for (int fd = PX_FD_EVENTS; fd <= PX_FD_STATE; fd++)
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
			return 125;
	/*
	 * splice(2) into a socket whose peer has gone, and OpenSSL's write(2),
	 * raise SIGPIPE (only send() takes MSG_NOSIGNAL): one vanished client
	 * must not kill the proxy of the whole sandbox.
	 */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		return 125;
	r = read_config(PX_FD_CONFIG, &cfg);
	(void)close(PX_FD_CONFIG);
	if (r < 0)
		return 125;
	L.cfg = cfg;
	L.listen_fd = -1;
	L.event_fd = PX_FD_EVENTS;
	L.attempt_fd = -1;
	r = map_shared(&L, PX_FD_STATE);
	(void)close(PX_FD_STATE);
	if (r < 0)
		return 125;
	L.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (L.epfd < 0)
		return 125;
	if (px_events_new(L.event_fd, &L.ev) < 0)
		return 125;
	if (px_dns_new(cfg->dns, L.epfd, W_DNS, &L.dns) < 0)
		return 125;
	abi = landlock_abi();
	if (abi < 0)
		return 125;
	if (setup_tls(&L, abi, trust_fds, &n_trust) < 0 || px_inspect_setup(&L) < 0)
		return 125;
	{
		struct rlimit rl = {0, 0};
		struct rlimit nofile = {PX_NOFILE, PX_NOFILE};

		(void)setrlimit(RLIMIT_CORE, &rl);
		/* raise while still privileged; size the connection table to what we got */
		if (setrlimit(RLIMIT_NOFILE, &nofile) < 0)
			(void)getrlimit(RLIMIT_NOFILE, &nofile);
		L.max_conns =
		    nofile.rlim_cur > 64 ? (size_t)(nofile.rlim_cur - 64) / PX_FDS_PER_CONN : 1;
		if (L.max_conns > PX_MAX_CONNS)
			L.max_conns = PX_MAX_CONNS;
	}
	if (drop_privileges(cfg->parent_pid) < 0)
		return 125;
	r = apply_landlock(abi, trust_fds, n_trust);
	for (size_t i = 0; i < n_trust; i++)
		(void)close(trust_fds[i]);
	if (r < 0)
		return 125;
	if (apply_seccomp(n_trust > 0 && r == 1) < 0)
		return 125;
	r = take_sockets(&L);
	if (r <= 0)
		return r < 0 ? 125 : 0;
	flags = fcntl(L.listen_fd, F_GETFL);
	if (flags < 0 || fcntl(L.listen_fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return 125;

	r = px_loop_run(&L);
	return r < 0 ? 1 : 0;
}
