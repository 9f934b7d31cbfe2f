/* SPDX-License-Identifier: MIT */
/*
 * sf_probe: does seccomp filtering and user notification really work here?
 * Asking the kernel which actions it knows is not enough (a container
 * runtime's own filter may refuse seccomp(2), or an outer listener makes
 * NEW_LISTENER fail with EBUSY), so the probe does the real thing in a
 * child: install a filter that sends getppid() to a listener, hand the
 * listener to the parent, and check that a CONTINUE answer lets the call
 * through.
 *
 * The child uses a raw BPF program and no malloc, so the probe is safe to
 * run from a process that has threads.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "seccomp/seccomp.h"

#define SF_PROBE_TIMEOUT_MS 2000

enum {
	PROBE_OK = 0,
	PROBE_NNP = 10,
	PROBE_FILTER,
	PROBE_LISTENER,
	PROBE_SEND,
	PROBE_RESULT,
};

static __attribute__((noreturn)) void sf_probe_child(int sock, uint32_t arch, pid_t parent)
{
	struct sock_filter insns[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getppid, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = ELEMENTSOF(insns), .filter = insns};
	long fd;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(PROBE_NNP);
	fd =
	    syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0)
		_exit(errno == EBUSY ? PROBE_LISTENER : PROBE_FILTER);
	if (io_send_fd(sock, (int)fd) < 0)
		_exit(PROBE_SEND);
	(void)close((int)fd);
	/* Blocks until the parent answers; ENOSYS if it closed the listener. */
	_exit(syscall(__NR_getppid) == parent ? PROBE_OK : PROBE_RESULT);
}

int sf_probe(char *reason, size_t reason_len)
{
	_cleanup_close_ int sock_parent = -1, sock_child = -1, listener = -1;
	struct seccomp_notif_sizes sizes = {0};
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	struct pollfd pfd;
	int sv[2], status, r = 0;
	const char *why = NULL;
	bool got_listener = false;
	pid_t child;

	if (!reason || reason_len == 0)
		return -EINVAL;
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0) {
		(void)snprintf(reason, reason_len, "seccomp not in this kernel (CONFIG_SECCOMP)");
		return -EOPNOTSUPP;
	}
	if (syscall(__NR_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0 ||
	    seccomp_api_get() < 5) {
		(void)snprintf(reason, reason_len,
			       "seccomp user notification unavailable (kernel >= 5.5 and "
			       "libseccomp >= 2.5 needed)");
		return -EOPNOTSUPP;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	sock_parent = sv[0];
	sock_child = sv[1];

	child = fork();
	if (child < 0)
		return -errno;
	if (child == 0)
		sf_probe_child(sock_child, seccomp_arch_native(), getppid());
	sock_child = safe_close(sock_child);

	pfd = (struct pollfd){.fd = sock_parent, .events = POLLIN};
	if (poll(&pfd, 1, SF_PROBE_TIMEOUT_MS) == 1)
		listener = io_recv_fd(sock_parent);
	if (listener >= 0) {
		got_listener = true;
		pfd = (struct pollfd){.fd = listener, .events = POLLIN};
		memset(&req, 0, sizeof(req));
		if (poll(&pfd, 1, SF_PROBE_TIMEOUT_MS) == 1 &&
		    ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
			resp = (struct seccomp_notif_resp){
			    .id = req.id,
			    .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE,
			};
			if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
				why = "the kernel refuses SECCOMP_USER_NOTIF_FLAG_CONTINUE";
		} else {
			why = "no notification arrived";
		}
		listener = safe_close(listener); /* unblocks the child if needed */
	}

	/* The child cannot hang: its only blocking call fails once the
	 * listener is closed. Still bound the wait. */
	for (int i = 0; i < SF_PROBE_TIMEOUT_MS / 10; i++) {
		r = (int)waitpid(child, &status, WNOHANG);
		if (r != 0)
			break;
		(void)usleep(10 * 1000);
	}
	if (r == 0) {
		(void)kill(child, SIGKILL);
		(void)waitpid(child, &status, 0);
		why = why ? why : "the probe child hung";
	} else if (r < 0) {
		return -errno;
	} else if (!why) {
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;

		switch (code) {
		case PROBE_OK:
			if (!got_listener)
				why = "the probe child sent no listener";
			break;
		case PROBE_NNP:
			why = "prctl(PR_SET_NO_NEW_PRIVS) failed";
			break;
		case PROBE_FILTER:
			why = "seccomp(SECCOMP_SET_MODE_FILTER) refused (an outer filter?)";
			break;
		case PROBE_LISTENER:
			why = "a filter with a listener is already installed (EBUSY)";
			break;
		case PROBE_SEND:
			why = "could not pass the listener fd";
			break;
		default:
			why = "a notified syscall did not continue";
			break;
		}
	}
	if (why) {
		(void)snprintf(reason, reason_len, "seccomp user notification: %s", why);
		return -EOPNOTSUPP;
	}
	(void)snprintf(reason, reason_len, "active");
	return 0;
}
