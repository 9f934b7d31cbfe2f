/* SPDX-License-Identifier: MIT */
/*
 * Supervisor side of the seccomp user notification (seccomp_unotify(2)):
 * records every exec and every refused dangerous syscall of the sandbox.
 *
 * The target is hostile. Every pointer it passed is read through
 * with process_vm_readv() and a bound; a read that fails just ends the
 * record (truncated: true); whatever happens, the notification is answered
 * so that the target never hangs on us: CONTINUE for exec, -EPERM for the
 * rest.
 *
 * TOCTOU: proc.exec is a record, not an enforcement point. After we read the
 * path and argv and answer CONTINUE, the kernel reads them again from the
 * target's memory, which another thread of the target may have rewritten
 * in between (seccomp_unotify(2), "Caveats"). What is enforced is enforced
 * by the mount tree, Landlock and the filter itself; this log says what a
 * process asked to run, which is what an honest process runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "seccomp/seccomp.h"

#define SF_EXEC_PATH_MAX       4096u
#define SF_EXEC_ARGS_MAX       256u
#define SF_EXEC_ARGV_BYTES_MAX (64u * 1024u)
/* Reads never cross this boundary: a string ending just before an unmapped
 * page must not make the whole read fail. Any larger page size is a
 * multiple of it. */
#define SF_READ_CHUNK	 4096u
#define SF_PROC_PATH_MAX 64u

/* json_decrefp() comes with jansson >= 2.9. */
#define _cleanup_json_ _cleanup_(json_decrefp)

static int sf_notif_sizes(struct seccomp_notif_sizes *ret)
{
	static struct seccomp_notif_sizes cached;

	if (cached.seccomp_notif == 0) {
		struct seccomp_notif_sizes s = {0};

		if (syscall(__NR_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &s) < 0)
			return -errno;
		cached = s;
	}
	*ret = cached;
	return 0;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 if invalid. */
static size_t sf_utf8_seq(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* A JSON string of bytes from the target: invalid UTF-8 bytes become U+FFFD
 * so that the record stays valid JSON. */
static json_t *sf_json_bytes(const char *s, size_t len)
{
	_cleanup_free_ char *out = NULL;
	size_t cap, o = 0;

	if (__builtin_mul_overflow(len, (size_t)3, &cap) || __builtin_add_overflow(cap, 1, &cap))
		return NULL;
	out = malloc(cap);
	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t k = sf_utf8_seq((const unsigned char *)s + i, len - i);

		if (k == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, s + i, k);
		o += k;
		i += k;
	}
	return json_stringn(out, o);
}

/*
 * Reads a NUL-terminated string of at most max bytes at addr in the target.
 * buf has room for max + 1. Returns 0 with *ret_truncated when no NUL came
 * within max bytes, or -errno when the memory is unreadable.
 */
/*
 * Reads len bytes at addr of the target with process_vm_readv(2): no
 * /proc/PID/mem to open per exec (a path walk and a proc inode each time).
 * Short reads stop at the first unmapped page, like pread on /proc/PID/mem.
 */
static ssize_t sf_peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};

	return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

static int sf_read_string(pid_t pid, uint64_t addr, char *buf, size_t max, size_t *ret_len,
			  bool *ret_truncated)
{
	size_t len = 0;

	while (len < max) {
		uint64_t a;
		size_t chunk;
		ssize_t n;
		char *nul;

		if (__builtin_add_overflow(addr, (uint64_t)len, &a) || a > INT64_MAX)
			return -EFAULT;
		chunk = SF_READ_CHUNK - (size_t)(a % SF_READ_CHUNK);
		if (chunk > max - len)
			chunk = max - len;
		n = sf_peek(pid, a, buf + len, chunk);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		nul = memchr(buf + len, '\0', (size_t)n);
		if (nul) {
			*ret_len = (size_t)(nul - buf);
			*ret_truncated = false;
			return 0;
		}
		len += (size_t)n;
	}
	buf[max] = '\0';
	*ret_len = max;
	*ret_truncated = true;
	return 0;
}

static int sf_read_u64(pid_t pid, uint64_t addr, uint64_t *ret)
{
	uint64_t v;
	ssize_t n;

	if (addr > INT64_MAX - sizeof(v))
		return -EFAULT;
	do
		n = sf_peek(pid, addr, &v, sizeof(v));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(v))
		return -EIO;
	*ret = v;
	return 0;
}

static bool sf_id_valid(int notify_fd, uint64_t id)
{
	return ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

/*
 * argv[i] of the target, read 32 pointers (at most up to a page end) at a
 * time: one process_vm_readv per batch rather than per argument.
 */
typedef struct sf_ptrs {
	uint64_t base;	/* address of vals[0] */
	unsigned count; /* valid entries */
	uint64_t vals[32];
} sf_ptrs;

static int sf_argv_ptr(pid_t pid, sf_ptrs *c, uint64_t argv_addr, unsigned i, uint64_t *ret)
{
	uint64_t slot;
	size_t want;
	ssize_t n;

	if (__builtin_mul_overflow((uint64_t)i, sizeof(uint64_t), &slot) ||
	    __builtin_add_overflow(argv_addr, slot, &slot) || slot > INT64_MAX - sizeof(c->vals))
		return -EFAULT;
	if (c->count && slot >= c->base && (slot - c->base) / 8 < c->count &&
	    (slot - c->base) % 8 == 0) {
		*ret = c->vals[(slot - c->base) / 8];
		return 0;
	}
	want = SF_READ_CHUNK - (size_t)(slot % SF_READ_CHUNK);
	if (want > sizeof(c->vals))
		want = sizeof(c->vals);
	if (want < sizeof(uint64_t))
		return sf_read_u64(pid, slot, ret); /* a pointer straddling two pages */
	do
		n = sf_peek(pid, slot, c->vals, want);
	while (n < 0 && errno == EINTR);
	if (n < (ssize_t)sizeof(uint64_t))
		return n < 0 ? -errno : -EIO;
	c->base = slot;
	c->count = (unsigned)((size_t)n / sizeof(uint64_t));
	*ret = c->vals[0];
	return 0;
}

/* Fills path and argv of the exec; gives up (truncated) at the first
 * unreadable byte. */
static int sf_read_exec(pid_t pid, uint64_t path_addr, uint64_t argv_addr, json_t *data)
{
	/* One listener per supervisor, one notification at a time. */
	static char buf[SF_EXEC_ARGV_BYTES_MAX + 1];
	json_t *argv = json_array();
	size_t budget = SF_EXEC_ARGV_BYTES_MAX, len = 0;
	bool truncated = false, t = false;
	int r;

	if (json_object_set_new(data, "argv", argv) < 0)
		return -ENOMEM;

	r = sf_read_string(pid, path_addr, buf, SF_EXEC_PATH_MAX, &len, &t);
	if (r < 0) {
		truncated = true;
		if (json_object_set_new(data, "path", json_null()) < 0)
			return -ENOMEM;
	} else {
		truncated = truncated || t;
		if (json_object_set_new(data, "path", sf_json_bytes(buf, len)) < 0)
			return -ENOMEM;
	}

	sf_ptrs ptrs = {0};

	for (unsigned i = 0; argv_addr != 0; i++) {
		uint64_t ptr = 0;

		if (i >= SF_EXEC_ARGS_MAX) {
			/* Only a further non-NULL pointer makes it truncated. */
			if (sf_argv_ptr(pid, &ptrs, argv_addr, i, &ptr) < 0 || ptr != 0)
				truncated = true;
			break;
		}
		if (sf_argv_ptr(pid, &ptrs, argv_addr, i, &ptr) < 0) {
			truncated = true;
			break;
		}
		if (ptr == 0)
			break;
		if (budget == 0) {
			truncated = true;
			break;
		}
		r = sf_read_string(pid, ptr, buf, budget, &len, &t);
		if (r < 0) {
			truncated = true;
			break;
		}
		if (json_array_append_new(argv, sf_json_bytes(buf, len)) < 0)
			return -ENOMEM;
		if (t) {
			truncated = true;
			break;
		}
		budget -= len + 1 > budget ? budget : len + 1;
	}
	if (json_object_set_new(data, "truncated", json_boolean(truncated)) < 0)
		return -ENOMEM;
	return 0;
}

/* For execveat(dirfd, ...): where dirfd points, read from the link text of
 * /proc/PID/fd/N (readlink never follows it). */
static int sf_dirfd_path(pid_t pid, int dirfd, json_t *data)
{
	char proc[SF_PROC_PATH_MAX], target[SF_EXEC_PATH_MAX];
	ssize_t n;

	(void)snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", pid, dirfd);
	n = readlink(proc, target, sizeof(target));
	if (n < 0 || (size_t)n >= sizeof(target))
		return 0; /* closed or odd fd: the record simply lacks it */
	if (json_object_set_new(data, "dirfd_path", sf_json_bytes(target, (size_t)n)) < 0)
		return -ENOMEM;
	return 0;
}

/* Builds proc.exec. Returns 0 with *ret_data = NULL when the notification
 * went stale (target died or the syscall was interrupted and will be
 * retried, i.e. notified again): then there is nothing true to record. */
static int sf_exec_event(int notify_fd, const struct seccomp_notif *req, bool at, json_t **ret_data)
{
	_cleanup_json_ json_t *data = json_object();
	pid_t pid = (pid_t)req->pid;
	int r;

	*ret_data = NULL;
	if (!data || json_object_set_new(data, "pid", json_integer(pid)) < 0)
		return -ENOMEM;
	if (at && json_object_set_new(data, "syscall", json_string("execveat")) < 0)
		return -ENOMEM;

	/* The pid may be reused between RECV and the reads: only when ID_VALID
	 * succeeds after them did they certainly read the target. */
	r = sf_read_exec(pid, at ? req->data.args[1] : req->data.args[0],
			 at ? req->data.args[2] : req->data.args[1], data);
	if (r < 0)
		return r;
	if (at && (int)req->data.args[0] != AT_FDCWD) {
		r = sf_dirfd_path(pid, (int)req->data.args[0], data);
		if (r < 0)
			return r;
	}
	if (!sf_id_valid(notify_fd, req->id))
		return 0;
	*ret_data = TAKE_PTR(data);
	return 0;
}

static int sf_denied_event(const struct seccomp_notif *req, json_t **ret_data)
{
	_cleanup_json_ json_t *data = json_object();
	_cleanup_free_ char *name = seccomp_syscall_resolve_num_arch(req->data.arch, req->data.nr);

	json_t *args = json_array();

	if (!data || json_object_set_new(data, "pid", json_integer((pid_t)req->pid)) < 0 ||
	    json_object_set_new(data, "syscall", name ? json_string(name) : json_null()) < 0 ||
	    json_object_set_new(data, "nr", json_integer(req->data.nr)) < 0 ||
	    json_object_set_new(data, "args", args) < 0)
		return -ENOMEM;
	/* The raw registers, as hex strings (they are u64; JSON integers are
	 * not): the socket family, ioctl command or clone flags that made the
	 * call dangerous. Pointers are not followed. */
	for (size_t i = 0; i < ELEMENTSOF(req->data.args); i++) {
		char hex[sizeof("0x") + 16];

		(void)snprintf(hex, sizeof(hex), "0x%llx", (unsigned long long)req->data.args[i]);
		if (json_array_append_new(args, json_string(hex)) < 0)
			return -ENOMEM;
	}
	*ret_data = TAKE_PTR(data);
	return 0;
}

static int sf_respond(int notify_fd, struct seccomp_notif_resp *resp)
{
	for (;;) {
		if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SEND, resp) == 0)
			return 0;
		if (errno == EINTR)
			continue;
		/* ENOENT: the target died or its syscall was interrupted. */
		return errno == ENOENT ? 0 : -errno;
	}
}

int sf_notify_handle(int notify_fd, sf_event_cb cb, void *userdata)
{
	_cleanup_free_ struct seccomp_notif *req = NULL;
	_cleanup_free_ struct seccomp_notif_resp *resp = NULL;
	struct seccomp_notif_sizes sizes = {0};
	json_t *data = NULL;
	const char *event;
	bool is_exec = false, at = false;
	uint32_t native = seccomp_arch_native();
	size_t req_size, resp_size;
	int r, r_event;

	r = sf_notif_sizes(&sizes);
	if (r < 0)
		return r;
	/* The kernel's structures may be larger than our headers' (seccomp(2),
	 * SECCOMP_GET_NOTIF_SIZES); allocate the larger of the two. */
	req_size = sizes.seccomp_notif > sizeof(*req) ? sizes.seccomp_notif : sizeof(*req);
	resp_size =
	    sizes.seccomp_notif_resp > sizeof(*resp) ? sizes.seccomp_notif_resp : sizeof(*resp);
	req = calloc(1, req_size);
	resp = calloc(1, resp_size);
	if (!req || !resp)
		return -ENOMEM;

	for (;;) {
		if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_RECV, req) == 0)
			break;
		if (errno == EINTR) {
			memset(req, 0, req_size); /* RECV wants a zeroed buffer */
			continue;
		}
		/* ENOENT: the target went away between poll and RECV. */
		return errno == ENOENT ? 0 : -errno;
	}

	if (req->data.arch == native) {
		static int execve_nr = -1, execveat_nr = -1;

		if (execve_nr < 0) {
			execve_nr = seccomp_syscall_resolve_name("execve");
			execveat_nr = seccomp_syscall_resolve_name("execveat");
		}

		is_exec = req->data.nr == execve_nr || req->data.nr == execveat_nr;
		at = req->data.nr == execveat_nr;
	}

	resp->id = req->id;
	if (is_exec) {
		event = "proc.exec";
		r_event = sf_exec_event(notify_fd, req, at, &data);
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	} else {
		event = "syscall.denied";
		r_event = sf_denied_event(req, &data);
		resp->error = -EPERM;
	}
	/* Record first, then let the syscall proceed (or fail). */
	if (data) {
		if (cb)
			cb(event, data, userdata);
		else
			json_decref(data);
	}
	r = sf_respond(notify_fd, resp);
	if (r < 0)
		return r;
	return r_event < 0 ? r_event : 0;
}
