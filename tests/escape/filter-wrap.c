/* SPDX-License-Identifier: MIT */
/*
 * Test-only wrapper: runs a command under sandcap's second wall alone
 * (Landlock + seccomp, as ll_apply and sf_apply build them), optionally in
 * fresh net/UTS/IPC namespaces standing in for the first wall. Used to try
 * the escape probes and to measure the filters' overhead before the full
 * `sandcap run` exists; it accepts the same "run [--policy FILE] --" prefix
 * (the policy is ignored) so run-escapes.sh can drive it.
 *
 *   filter-wrap [run] [--policy FILE] [--no-ns] [--no-landlock] [--no-seccomp]
 *               [--seccomp-allow-all] [--audit] [--exec-notify-floor]
 *               [--exec-notify-read] [--ro DIR]... [--rw DIR]...
 *               [--egress] -- CMD [ARG]...
 *
 * The directory of CMD is granted read-only so that it can be executed.
 * --audit serves the exec/denied notifications in a parent process and
 * prints each event as one JSON line on stderr. --seccomp-allow-all installs,
 * instead of sandcap's profile, a filter of one instruction that allows
 * everything: what any seccomp filter costs on this kernel (the floor the
 * benchmarks compare the profile with).
 *
 * --exec-notify-floor: instead of the profile, a filter that sends only
 * execve and execveat to a listener in a parent process, which answers each
 * with "continue" (no synchronous wake-up, as sandcap serves it) and does
 * nothing else: what the kernel's user-notification round trip alone costs
 * per exec. --exec-notify-read: the same filter, served by sandcap's own
 * handler (sf_notify_handle), which also copies the path and argv out of
 * the target and builds the record, then drops it: exec auditing without
 * the log's hash and write.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "compat/syscalls.h"
#include "landlock/landlock.h"
#include "seccomp/seccomp.h"

#define WRAP_MAX_GRANTS 16

static int print_event(const char *event, json_t *data, void *userdata)
{
	json_t *line = json_pack("{s:s, s:o}", "event", event, "data", data);
	char *s = line ? json_dumps(line, JSON_COMPACT) : NULL;

	(void)userdata;
	if (s)
		fprintf(stderr, "%s\n", s);
	free(s);
	json_decref(line);
	return 0;
}

static int lo_up(void)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0 ||
	    (ifr.ifr_flags |= IFF_UP, ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

/* A filter that allows every syscall: the kernel's fixed cost of seccomp. */
static int seccomp_allow_all(void)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = {.len = 1, .filter = &allow};

	return syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0 ? -errno : 0;
}

/* execve and execveat to the listener, everything else allowed. */
static int seccomp_notify_exec(void)
{
	struct sock_filter insns[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 1, 0),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = ELEMENTSOF(insns), .filter = insns};
	long fd =
	    syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);

	return fd < 0 ? -errno : (int)fd;
}

/* --exec-notify-floor and --exec-notify-read: answers until no process
 * carries the filter any more; returns the child's wait status. */
static int serve_exec(pid_t child, int listener, bool read)
{
	int status = 0;

	if (read) {
		/* sandcap's listener thread, with no record to write. */
		sf_listener *l = NULL;
		int r = sf_listener_start(listener, NULL, NULL, NULL, &l);

		if (r < 0) {
			fprintf(stderr, "filter-wrap: listener: %s\n", strerror(-r));
			(void)kill(child, SIGKILL);
		}
		(void)waitpid(child, &status, 0);
		(void)sf_listener_stop(l);
		return status;
	}
	for (;;) {
		struct seccomp_notif req;
		struct seccomp_notif_resp resp;

		memset(&req, 0, sizeof(req));
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		resp = (struct seccomp_notif_resp){.id = req.id,
						   .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE};
		(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	(void)waitpid(child, &status, 0);
	return status;
}

/* Serves the listener until the child exits; returns its wait status. */
static int serve(pid_t child, int listener)
{
	int pidfd = sys_pidfd_open(child, 0), status = 0;

	for (;;) {
		struct pollfd p[2] = {{.fd = listener, .events = POLLIN},
				      {.fd = pidfd, .events = POLLIN}};

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents & POLLIN) {
			int r = sf_notify_handle(listener, NULL, print_event, NULL);

			if (r < 0)
				fprintf(stderr, "filter-wrap: notify: %s\n", strerror(-r));
			continue;
		}
		if (p[1].revents || (p[0].revents & (POLLHUP | POLLERR)))
			break;
	}
	(void)waitpid(child, &status, 0);
	return status;
}

int main(int argc, char **argv)
{
	plan_grant grants[WRAP_MAX_GRANTS + 1];
	plan_egress egress = {.host = (char *)"proxy"};
	sc_plan plan = {.version = 1, .runtime = RUNTIME_HOST};
	bool ns = true, landlock = true, seccomp = true, audit = false, allow_all = false;
	int exec_notify = 0; /* 1: floor, 2: read */
	char *cmd_dir;
	int i = 1, sv[2] = {-1, -1};
	pid_t child = 0;

	if (i < argc && strcmp(argv[i], "run") == 0)
		i++;
	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc)
			i++;
		else if (strcmp(argv[i], "--no-ns") == 0)
			ns = false;
		else if (strcmp(argv[i], "--no-landlock") == 0)
			landlock = false;
		else if (strcmp(argv[i], "--no-seccomp") == 0)
			seccomp = false;
		else if (strcmp(argv[i], "--seccomp-allow-all") == 0)
			allow_all = true;
		else if (strcmp(argv[i], "--audit") == 0)
			audit = true;
		else if (strcmp(argv[i], "--exec-notify-floor") == 0)
			exec_notify = 1;
		else if (strcmp(argv[i], "--exec-notify-read") == 0)
			exec_notify = 2;
		else if (strcmp(argv[i], "--egress") == 0)
			plan.egress = &egress, plan.n_egress = 1;
		else if ((strcmp(argv[i], "--ro") == 0 || strcmp(argv[i], "--rw") == 0) &&
			 i + 1 < argc && plan.n_grants < WRAP_MAX_GRANTS) {
			grants[plan.n_grants++] = (plan_grant){
			    .path = argv[i + 1],
			    .at = argv[i + 1],
			    .mode = argv[i][3] == 'w' ? GRANT_RW : GRANT_RO,
			};
			i++;
		} else {
			fprintf(stderr, "filter-wrap: bad argument %s\n", argv[i]);
			return 125;
		}
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: filter-wrap [options] -- CMD [ARG]...\n");
		return 125;
	}
	i++;
	cmd_dir = dirname(strdup(argv[i]));
	grants[plan.n_grants++] = (plan_grant){.path = cmd_dir, .at = cmd_dir, .mode = GRANT_RO};
	plan.grants = grants;
	plan.audit_exec = plan.audit_denied_syscalls = audit;

	if (ns) {
		if (unshare(CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC) < 0 || lo_up() < 0) {
			perror("filter-wrap: namespaces");
			return 125;
		}
	}
	if (audit || exec_notify) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
			return 125;
		child = fork();
		if (child < 0)
			return 125;
		if (child > 0) {
			int listener, status;

			close(sv[1]);
			listener = io_recv_fd(sv[0]);
			if (listener < 0) {
				(void)waitpid(child, &status, 0);
				return 125;
			}
			status = exec_notify ? serve_exec(child, listener, exec_notify == 2)
					     : serve(child, listener);
			if (WIFSIGNALED(status))
				return 128 + WTERMSIG(status);
			return WEXITSTATUS(status);
		}
		close(sv[0]);
	}

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		perror("filter-wrap: no_new_privs");
		return 125;
	}
	if (landlock) {
		ll_status st;
		int r = ll_apply(&plan, -1, &st);

		if (r < 0) {
			fprintf(stderr, "filter-wrap: landlock: %s\n", strerror(-r));
			return 125;
		}
	}
	if (exec_notify) {
		int fd = seccomp_notify_exec();

		if (fd < 0) {
			fprintf(stderr, "filter-wrap: seccomp: %s\n", strerror(-fd));
			return 125;
		}
		if (io_send_fd(sv[1], fd) < 0)
			return 125;
		close(fd);
		close(sv[1]);
	} else if (seccomp && allow_all) {
		int r = seccomp_allow_all();

		if (r < 0) {
			fprintf(stderr, "filter-wrap: seccomp: %s\n", strerror(-r));
			return 125;
		}
	} else if (seccomp) {
		int fd = -1, r = sf_apply(&plan, &fd);

		if (r < 0) {
			fprintf(stderr, "filter-wrap: seccomp: %s\n", strerror(-r));
			return 125;
		}
		if (fd >= 0) {
			if (io_send_fd(sv[1], fd) < 0)
				return 125;
			close(fd);
			close(sv[1]);
		}
	}
	execv(argv[i], argv + i);
	fprintf(stderr, "filter-wrap: exec %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
