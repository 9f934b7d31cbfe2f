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
 *
 * No exec runs without its record: the exec waits until the record is
 * written (cb returns 0), and is answered CONTINUE only then. When cb says
 * the record could not be written, the exec is not answered at all: the
 * supervisor stops the sandbox, and the exec ends with its process
 * (docs/audit.md, "When the log cannot be written").
 *
 * Which process the copy came from: the pid of a notification could be
 * reused once its target is gone. SECCOMP_IOCTL_NOTIF_ID_VALID after the
 * reads settles it: it succeeds only while the target still waits in that
 * very syscall, so it was alive, and its pid its own, through every read
 * made before. A stale notification (ENOENT: the target died, or a signal
 * interrupted the syscall, which will be notified again) leaves no record.
 * Between the record and the answer the target can still die or be
 * interrupted: then the record names an exec that did not go on (and a
 * retried one has a record of its own).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/pages.h"
#include "compat/syscalls.h"
#include "seccomp/seccomp.h"
#include "seccomp/writes.h"

#define SF_EXEC_PATH_MAX       4096u
#define SF_EXEC_ARGS_MAX       256u
#define SF_EXEC_ARGV_BYTES_MAX (64u * 1024u)
/* Reads never cross this boundary: a string ending just before an unmapped
 * page must not make the whole read fail. Any larger page size is a
 * multiple of it. */
#define SF_READ_CHUNK	 4096u
#define SF_PROC_PATH_MAX 64u
/* Pages of the target kept during one notification. */
#define SF_MEM_PAGES 4u

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
	size_t cap, o = 0, valid = 0;

	/* Usually all of it is valid (mostly ASCII): then no copy. */
	while (valid < len) {
		size_t k = sf_utf8_seq((const unsigned char *)s + valid, len - valid);

		if (k == 0)
			break;
		valid += k;
	}
	if (valid == len)
		return json_stringn_nocheck(s, len);
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
 * The target's memory, read a page at a time with process_vm_readv(2) (no
 * /proc/PID/mem to open per exec: a path walk and a proc inode each time)
 * and kept for the rest of the notification: the path, the argv array and
 * the argument strings mostly share a page or two (a shell's heap, a
 * program's stack), so a typical exec costs one or two reads in all.
 */
typedef struct sf_page {
	uint64_t base; /* target address of bytes[0], a multiple of SF_READ_CHUNK */
	size_t len;    /* bytes read; 0: empty slot */
	char bytes[SF_READ_CHUNK];
} sf_page;

typedef struct sf_mem {
	pid_t pid;
	unsigned next; /* slot to refill next, round robin */
	sf_page page[SF_MEM_PAGES];
} sf_mem;

static void sf_mem_reset(sf_mem *m, pid_t pid)
{
	m->pid = pid;
	m->next = 0;
	for (size_t i = 0; i < SF_MEM_PAGES; i++)
		m->page[i].len = 0;
}

/* The cached page holding addr, read when missing. A short read keeps what
 * came (a page is mapped or not, but the kernel may stop early). */
static int sf_mem_page(sf_mem *m, uint64_t addr, const sf_page **ret)
{
	uint64_t base = addr - addr % SF_READ_CHUNK;
	struct iovec local, remote;
	sf_page *pg;
	ssize_t n;

	if (addr > INT64_MAX)
		return -EFAULT;
	for (size_t i = 0; i < SF_MEM_PAGES; i++) {
		if (m->page[i].len && m->page[i].base == base) {
			*ret = &m->page[i];
			return 0;
		}
	}
	pg = &m->page[m->next];
	m->next = (m->next + 1) % SF_MEM_PAGES;
	pg->len = 0;
	local = (struct iovec){.iov_base = pg->bytes, .iov_len = SF_READ_CHUNK};
	remote = (struct iovec){.iov_base = (void *)(uintptr_t)base, .iov_len = SF_READ_CHUNK};
	do
		n = process_vm_readv(m->pid, &local, 1, &remote, 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EIO;
	pg->base = base;
	pg->len = (size_t)n;
	*ret = pg;
	return 0;
}

/* The bytes at addr and how many follow them in the same page. */
static int sf_mem_at(sf_mem *m, uint64_t addr, const char **ret, size_t *ret_avail)
{
	const sf_page *pg;
	size_t off;
	int r = sf_mem_page(m, addr, &pg);

	if (r < 0)
		return r;
	off = (size_t)(addr - pg->base);
	if (off >= pg->len)
		return -EIO; /* beyond a short read */
	*ret = pg->bytes + off;
	*ret_avail = pg->len - off;
	return 0;
}

static int sf_read_u64(sf_mem *m, uint64_t addr, uint64_t *ret)
{
	uint8_t v[sizeof(uint64_t)];
	size_t got = 0;

	/* A hostile target may place a pointer across two pages. */
	while (got < sizeof(v)) {
		const char *p;
		size_t avail;
		uint64_t a;
		int r;

		if (__builtin_add_overflow(addr, (uint64_t)got, &a))
			return -EFAULT;
		r = sf_mem_at(m, a, &p, &avail);
		if (r < 0)
			return r;
		if (avail > sizeof(v) - got)
			avail = sizeof(v) - got;
		memcpy(v + got, p, avail);
		got += avail;
	}
	memcpy(ret, v, sizeof(v));
	return 0;
}

/*
 * Reads a NUL-terminated string of at most max bytes at addr in the target.
 * buf has room for max + 1. Returns 0 with *ret_truncated when no NUL came
 * within max bytes, or -errno when the memory is unreadable.
 */
static int sf_read_string(sf_mem *m, uint64_t addr, char *buf, size_t max, size_t *ret_len,
			  bool *ret_truncated)
{
	size_t len = 0;

	while (len < max) {
		const char *p, *nul;
		size_t avail;
		uint64_t a;
		int r;

		if (__builtin_add_overflow(addr, (uint64_t)len, &a))
			return -EFAULT;
		r = sf_mem_at(m, a, &p, &avail);
		if (r < 0)
			return r;
		if (avail > max - len)
			avail = max - len;
		nul = memchr(p, '\0', avail);
		if (nul) {
			memcpy(buf + len, p, (size_t)(nul - p));
			len += (size_t)(nul - p);
			buf[len] = '\0';
			*ret_len = len;
			*ret_truncated = false;
			return 0;
		}
		memcpy(buf + len, p, avail);
		len += avail;
	}
	buf[max] = '\0';
	*ret_len = max;
	*ret_truncated = true;
	return 0;
}

static int sf_argv_ptr(sf_mem *m, uint64_t argv_addr, unsigned i, uint64_t *ret)
{
	uint64_t slot;

	if (__builtin_mul_overflow((uint64_t)i, sizeof(uint64_t), &slot) ||
	    __builtin_add_overflow(argv_addr, slot, &slot))
		return -EFAULT;
	return sf_read_u64(m, slot, ret);
}

/*
 * What one exec asked for, copied out of the target while it waits: the
 * JSON record is built from this only after the answer (sf_exec_json).
 * Arguments are stored back to back with their NULs.
 */
typedef struct sf_exec {
	bool at;
	pid_t pid;
	pid_t ppid; /* the parent's host pid; 0: not known */
	bool truncated;
	bool have_path;
	size_t path_len;
	unsigned argc;
	size_t argv_len;   /* bytes used in argv */
	int dirfd;	   /* execveat's dirfd, AT_FDCWD for none */
	int flags;	   /* execveat's flags */
	ssize_t dirfd_len; /* < 0: not known */
	int result;	   /* 0, or the errno the exec fails with (sf_exec_lookup) */
	char path[SF_EXEC_PATH_MAX + 1];
	char dirfd_path[SF_EXEC_PATH_MAX];
	char argv[SF_EXEC_ARGV_BYTES_MAX + 1];
} sf_exec;

/* Fills path and argv of the exec; gives up (truncated) at the first
 * unreadable byte. */
static void sf_read_exec(sf_mem *m, uint64_t path_addr, uint64_t argv_addr, sf_exec *x)
{
	size_t budget = SF_EXEC_ARGV_BYTES_MAX, len = 0;
	bool t = false;

	x->truncated = false;
	x->have_path = sf_read_string(m, path_addr, x->path, SF_EXEC_PATH_MAX, &len, &t) >= 0;
	x->path_len = x->have_path ? len : 0;
	x->truncated = !x->have_path || t;
	x->argc = 0;
	x->argv_len = 0;

	for (unsigned i = 0; argv_addr != 0; i++) {
		uint64_t ptr = 0;

		if (i >= SF_EXEC_ARGS_MAX) {
			/* Only a further non-NULL pointer makes it truncated. */
			if (sf_argv_ptr(m, argv_addr, i, &ptr) < 0 || ptr != 0)
				x->truncated = true;
			break;
		}
		if (sf_argv_ptr(m, argv_addr, i, &ptr) < 0) {
			x->truncated = true;
			break;
		}
		if (ptr == 0)
			break;
		if (budget == 0) {
			x->truncated = true;
			break;
		}
		/* budget + 1 bytes are left in x->argv for this one and its NUL. */
		if (sf_read_string(m, ptr, x->argv + x->argv_len, budget, &len, &t) < 0) {
			x->truncated = true;
			break;
		}
		x->argc++;
		x->argv_len += len + 1;
		if (t) {
			x->truncated = true;
			break;
		}
		budget -= len + 1 > budget ? budget : len + 1;
	}
}

/* For execveat(dirfd, ...): where dirfd points, read from the link text of
 * /proc/PID/fd/N (readlink never follows it). Only execveat with a dirfd
 * pays for it; a closed or odd fd leaves the record without it. */
static void sf_dirfd_path(pid_t pid, sf_exec *x)
{
	char proc[SF_PROC_PATH_MAX];
	ssize_t n;

	x->dirfd_len = -1;
	if (!x->at || x->dirfd == AT_FDCWD)
		return;
	(void)snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", pid, x->dirfd);
	n = readlink(proc, x->dirfd_path, sizeof(x->dirfd_path));
	if (n >= 0 && (size_t)n < sizeof(x->dirfd_path))
		x->dirfd_len = n;
}

/*
 * Whether the exec can find its file, looked up as the target would: from
 * its root, and its working directory or execveat's dirfd, all read from
 * /proc/PID while it waits in the exec (so they are its own; see the top).
 * Returns the errno the kernel's lookup fails with when that is certain:
 * ENOENT, ENOTDIR or ENAMETOOLONG from the walk, EACCES for a file that is
 * not regular, has no execute bit or lies on a noexec mount. Returns 0 when
 * the file is there and executable, and when the lookup cannot be done the
 * kernel's way (a magic link, a symlink loop, a directory outside the
 * target's root, an unreadable path): the record then claims nothing.
 */
static int sf_exec_lookup(const sf_exec *x)
{
	char proc[SF_PROC_PATH_MAX], full[2 * SF_EXEC_PATH_MAX + 2];
	struct sc_open_how how = {.flags = O_PATH | O_CLOEXEC,
				  .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int rootfd = -1, fd = -1;
	bool fdbase = x->at && x->dirfd != AT_FDCWD;
	struct statfs sfs;
	struct stat st;

	if (!x->have_path || x->path_len >= SF_EXEC_PATH_MAX)
		return 0;
	if (x->path_len == 0) {
		if (!x->at || !(x->flags & AT_EMPTY_PATH))
			return ENOENT; /* the kernel refuses an empty path */
		if (!fdbase)
			return 0;
		(void)snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", x->pid, x->dirfd);
		fd = open(proc, O_PATH | O_CLOEXEC);
	} else {
		(void)snprintf(proc, sizeof(proc), "/proc/%d/root", x->pid);
		rootfd = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rootfd < 0)
			return 0;
		if (x->path[0] == '/') {
			memcpy(full, x->path, x->path_len + 1);
		} else {
			char dir[SF_EXEC_PATH_MAX];
			char name[16];

			(void)snprintf(name, sizeof(name), fdbase ? "fd/%d" : "cwd", x->dirfd);
			if (sf_target_dir(x->pid, name, rootfd, dir, sizeof(dir)) < 0)
				return 0;
			(void)snprintf(full, sizeof(full), "%s/%s", dir, x->path);
		}
		if (x->at && (x->flags & AT_SYMLINK_NOFOLLOW))
			how.flags |= O_NOFOLLOW;
		fd = sys_openat2(rootfd, full, &how);
		if (fd < 0)
			return errno == ENOENT || errno == ENOTDIR || errno == ENAMETOOLONG ? errno
											    : 0;
	}
	if (fd < 0 || fstat(fd, &st) < 0 || fstatfs(fd, &sfs) < 0)
		return 0;
	if (!S_ISREG(st.st_mode) || !(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) ||
	    (sfs.f_flags & ST_NOEXEC))
		return EACCES;
	return 0;
}

static const char *sf_errno_name(int err)
{
	switch (err) {
	case ENOENT:
		return "ENOENT";
	case ENOTDIR:
		return "ENOTDIR";
	case ENAMETOOLONG:
		return "ENAMETOOLONG";
	case EACCES:
		return "EACCES";
	default:
		return "EINVAL";
	}
}

/* The parent's host pid from one read of /proc/PID/stat ("pid (comm) S
 * ppid ..."; comm may hold spaces and parentheses: the last ")" ends it),
 * 0 when it cannot be read. */
static pid_t sf_read_ppid(pid_t pid)
{
	char path[32], buf[512];
	_cleanup_close_ int fd = -1;
	const char *p;
	ssize_t n;
	long v;

	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %ld", &v) != 1 || v <= 0 || v > INT32_MAX)
		return 0;
	return (pid_t)v;
}

/*
 * Copies what the exec asked for out of the target. Whether it was the
 * target's memory is known only once the answer is taken (see the top).
 */
static void sf_exec_read(sf_mem *m, const struct seccomp_notif *req, bool at, sf_exec *x)
{
	x->pid = (pid_t)req->pid;
	x->at = at;
	x->dirfd = at ? (int)req->data.args[0] : AT_FDCWD;
	x->flags = at ? (int)req->data.args[4] : 0;
	sf_mem_reset(m, x->pid);
	sf_read_exec(m, at ? req->data.args[1] : req->data.args[0],
		     at ? req->data.args[2] : req->data.args[1], x);
	sf_dirfd_path(x->pid, x);
	x->ppid = sf_read_ppid(x->pid);
	x->result = sf_exec_lookup(x);
}

/* proc.exec from what sf_exec_read copied. */
static json_t *sf_exec_json(const sf_exec *x)
{
	_cleanup_json_ json_t *data = json_object();
	json_t *argv = json_array();
	const char *a = x->argv;

	if (!data || json_object_set_new(data, "argv", argv) < 0 ||
	    json_object_set_new(data, "pid", json_integer(x->pid)) < 0 ||
	    json_object_set_new(data, "path",
				x->have_path ? sf_json_bytes(x->path, x->path_len) : json_null()) <
		0 ||
	    json_object_set_new(data, "truncated", json_boolean(x->truncated)) < 0)
		return NULL;
	for (unsigned i = 0; i < x->argc; i++) {
		size_t len = strlen(a);

		if (json_array_append_new(argv, sf_json_bytes(a, len)) < 0)
			return NULL;
		a += len + 1;
	}
	if (x->ppid && json_object_set_new(data, "ppid", json_integer(x->ppid)) < 0)
		return NULL;
	if (x->at && json_object_set_new(data, "syscall", json_string("execveat")) < 0)
		return NULL;
	if (x->dirfd_len >= 0 &&
	    json_object_set_new(data, "dirfd_path",
				sf_json_bytes(x->dirfd_path, (size_t)x->dirfd_len)) < 0)
		return NULL;
	if (x->result &&
	    json_object_set_new(data, "result", json_string(sf_errno_name(x->result))) < 0)
		return NULL;
	return TAKE_PTR(data);
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

/*
 * The calls the filter refuses for a mode with S_ISUID or S_ISGID
 * (profile.c, SF_SETID): where their mode, path and directory fd are.
 * -1: the call has no such argument (fchmod names its file by fd only).
 */
typedef struct sf_setid_call {
	const char *name;
	int mode, path, dirfd;
	bool node; /* mknod/mknodat: the mode holds the type too */
	int flags; /* open/openat: the mode counts only when these create */
} sf_setid_call;

static const sf_setid_call sf_setid_calls[] = {
    {"chmod", 1, 0, -1, false, -1},    {"fchmod", 1, -1, 0, false, -1},
    {"creat", 1, 0, -1, false, -1},    {"mkdir", 1, 0, -1, false, -1},
    {"open", 2, 0, -1, false, 1},      {"fchmodat", 2, 1, 0, false, -1},
    {"fchmodat2", 2, 1, 0, false, -1}, {"mkdirat", 2, 1, 0, false, -1},
    {"openat", 3, 1, 0, false, 2},     {"mknod", 1, 0, -1, true, -1},
    {"mknodat", 2, 1, 0, true, -1},
};

#define SF_N_SETID ELEMENTSOF(sf_setid_calls)

/* The call, when this notification is one the filter sent for its mode:
 * the same test as profile.c's (a device node with those bits is refused as
 * a device, syscall.denied). */
static const sf_setid_call *sf_setid_of(const int *nrs, const struct seccomp_notif *req)
{
	for (size_t i = 0; i < SF_N_SETID; i++) {
		const sf_setid_call *c = &sf_setid_calls[i];
		uint32_t mode;

		if (nrs[i] < 0 || req->data.nr != nrs[i])
			continue;
		mode = (uint32_t)req->data.args[c->mode];
		if (!(mode & (S_ISUID | S_ISGID)))
			return NULL;
		/* Not creating: the kernel ignores the mode (profile.c) */
		if (c->flags >= 0 &&
		    !((uint32_t)req->data.args[c->flags] & (O_CREAT | (O_TMPFILE & ~O_DIRECTORY))))
			return NULL;
		if (c->node && (mode & S_IFMT) != 0 && (mode & S_IFMT) != S_IFREG &&
		    (mode & S_IFMT) != S_IFIFO && (mode & S_IFMT) != S_IFSOCK)
			return NULL;
		return c;
	}
	return NULL;
}

/* Where the target's fd or working directory points, from the link text
 * of /proc/PID/NAME; 0 on success. */
static int sf_proc_link(pid_t pid, const char *name, char *buf, size_t size, size_t *ret_len)
{
	char proc[SF_PROC_PATH_MAX];
	ssize_t n;

	(void)snprintf(proc, sizeof(proc), "/proc/%d/%s", pid, name);
	n = readlink(proc, buf, size);
	if (n < 0 || (size_t)n >= size)
		return -1;
	*ret_len = (size_t)n;
	return 0;
}

/*
 * The path a setid call named, as the target sees it: its string joined to
 * the directory it is relative to (its working directory, or the dirfd's
 * link text; fchmod's fd's link text alone). Read into x's buffers while
 * the target waits (the string into x->argv, unused here); have_path false
 * when none could be read.
 */
static void sf_setid_read(sf_mem *m, const struct seccomp_notif *req, const sf_setid_call *c,
			  sf_exec *x)
{
	pid_t pid = (pid_t)req->pid;
	int dirfd = c->dirfd >= 0 ? (int)req->data.args[c->dirfd] : AT_FDCWD;
	char *given = x->argv, name[16];
	size_t len = 0, base = 0;
	bool t = false;
	int n;

	x->pid = pid;
	x->have_path = false;
	x->path_len = 0;
	x->truncated = false;
	given[0] = '\0';
	sf_mem_reset(m, pid);
	if (c->path >= 0) {
		if (sf_read_string(m, req->data.args[c->path], given, SF_EXEC_PATH_MAX, &len, &t) <
		    0)
			return;
		x->truncated = t;
	}
	/* An empty path (AT_EMPTY_PATH) names the dirfd itself. */
	if (c->path >= 0 && len > 0 && given[0] == '/') {
		memcpy(x->path, given, len + 1);
		x->path_len = len;
		x->have_path = true;
		return;
	}
	(void)snprintf(name, sizeof(name), dirfd == AT_FDCWD ? "cwd" : "fd/%d", dirfd);
	if (sf_proc_link(pid, name, x->dirfd_path, sizeof(x->dirfd_path), &base) < 0) {
		/* the string alone, as given */
		memcpy(x->path, given, len + 1);
		x->path_len = len;
		x->have_path = c->path >= 0;
		return;
	}
	n = snprintf(x->path, SF_EXEC_PATH_MAX + 1, "%.*s%s%s", (int)base, x->dirfd_path,
		     len ? "/" : "", given);
	if (n < 0)
		return;
	x->truncated = x->truncated || (size_t)n > SF_EXEC_PATH_MAX;
	x->path_len = (size_t)n > SF_EXEC_PATH_MAX ? SF_EXEC_PATH_MAX : (size_t)n;
	x->have_path = true;
}

/* fs.denied for a refused setid mode. */
static json_t *sf_setid_json(const struct seccomp_notif *req, const sf_setid_call *c,
			     const sf_exec *x)
{
	_cleanup_json_ json_t *data = json_object();
	uint32_t mode = (uint32_t)req->data.args[c->mode];
	char octal[16];

	(void)snprintf(octal, sizeof(octal), "%04o", mode & 07777);
	if (!data || json_object_set_new(data, "pid", json_integer(x->pid)) < 0 ||
	    json_object_set_new(data, "op", json_string(c->name)) < 0 ||
	    json_object_set_new(data, "path",
				x->have_path ? sf_json_bytes(x->path, x->path_len) : json_null()) <
		0 ||
	    json_object_set_new(data, "mode", json_string(octal)) < 0 ||
	    json_object_set_new(data, "errno", json_string("EPERM")) < 0 ||
	    json_object_set_new(data, "reason", json_string("setid")) < 0)
		return NULL;
	if (x->truncated && json_object_set_new(data, "truncated", json_true()) < 0)
		return NULL;
	return TAKE_PTR(data);
}

int sf_notify_sync_wakeup(int notify_fd)
{
	unsigned long flags = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;

	if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, flags) < 0)
		return errno == ENOTTY || errno == EINVAL ? -EOPNOTSUPP : -errno;
	return 0;
}

/* Returns 0 when the answer reached the target, 1 when the notification
 * was stale (ENOENT: the target died or its syscall was interrupted). */
static int sf_respond(int notify_fd, struct seccomp_notif_resp *resp)
{
	for (;;) {
		if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SEND, resp) == 0)
			return 0;
		if (errno == EINTR)
			continue;
		return errno == ENOENT ? 1 : -errno;
	}
}

/* Everything one notification needs, allocated once per listener in one
 * mapping (base/pages.h): the kernel's structures after the context (their
 * sizes are the kernel's, seccomp(2), SECCOMP_GET_NOTIF_SIZES) and the copy
 * of the exec's strings. */
typedef struct sf_ctx {
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;
	size_t req_size, resp_size, map_size;
	int execve_nr, execveat_nr, bind_nr;
	int setid_nr[SF_N_SETID];	/* sf_setid_calls' numbers, -1 unknown */
	int write_nr[SF_N_WRITE_CALLS]; /* sf_write_calls' numbers, -1 unknown */
	sf_wstate writes;
	uint32_t native;
	sf_mem mem;
	sf_exec exec;
} sf_ctx;

static sf_ctx *sf_ctx_free(sf_ctx *c)
{
	if (c) {
		sf_wstate_reset(&c->writes, NULL);
		pages_free(c, c->map_size);
	}
	return NULL;
}

#define SF_ALIGN(n) (((n) + 15u) & ~(size_t)15u)

static int sf_ctx_new(sf_ctx **ret)
{
	struct seccomp_notif_sizes sizes = {0};
	size_t req_size, resp_size, map_size;
	sf_ctx *c;
	int r = sf_notif_sizes(&sizes);

	if (r < 0)
		return r;
	/* The kernel's structures may be larger than our headers': take the
	 * larger of the two. */
	req_size = sizes.seccomp_notif > sizeof(*c->req) ? sizes.seccomp_notif : sizeof(*c->req);
	resp_size = sizes.seccomp_notif_resp > sizeof(*c->resp) ? sizes.seccomp_notif_resp
								: sizeof(*c->resp);
	map_size = SF_ALIGN(sizeof(*c)) + SF_ALIGN(req_size) + resp_size;
	c = pages_alloc(map_size);
	if (!c)
		return -ENOMEM;
	c->map_size = map_size;
	c->req_size = req_size;
	c->resp_size = resp_size;
	c->req = (struct seccomp_notif *)((char *)c + SF_ALIGN(sizeof(*c)));
	c->resp = (struct seccomp_notif_resp *)((char *)c->req + SF_ALIGN(req_size));
	c->execve_nr = seccomp_syscall_resolve_name("execve");
	c->execveat_nr = seccomp_syscall_resolve_name("execveat");
	c->bind_nr = seccomp_syscall_resolve_name("bind");
	for (size_t i = 0; i < SF_N_SETID; i++)
		c->setid_nr[i] = seccomp_syscall_resolve_name(sf_setid_calls[i].name);
	for (size_t i = 0; i < SF_N_WRITE_CALLS; i++)
		c->write_nr[i] = seccomp_syscall_resolve_name(sf_write_calls[i].name);
	c->native = seccomp_arch_native();
	sf_wstate_reset(&c->writes, NULL);
	*ret = c;
	return 0;
}

/* Whether the notification is still its target's, checked after reading
 * the target's memory (see the top): 1, 0 when stale, or -errno. */
static int sf_valid(int notify_fd, uint64_t id)
{
	while (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0) {
		if (errno == EINTR)
			continue;
		return errno == ENOENT ? 0 : -errno;
	}
	return 1;
}

/* Writes data (taken, may be NULL) as event, then answers -err: refused
 * whether or not the record could be written. */
static int sf_refuse(sf_ctx *c, int notify_fd, const char *event, json_t *data, int err,
		     sf_event_cb cb, void *userdata)
{
	int r;

	if (data && cb)
		(void)cb(event, data, userdata);
	else
		json_decref(data);
	c->resp->error = -err;
	r = sf_respond(notify_fd, c->resp);
	return r < 0 ? r : 1;
}

/* Lets the call go on to the kernel and its walls. */
static int sf_continue(sf_ctx *c, int notify_fd)
{
	int r;

	c->resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	r = sf_respond(notify_fd, c->resp);
	return r < 0 ? r : 1;
}

/* A refused setid mode: recorded (when the copy was the target's, see the
 * top) and refused, whether or not the record could be written. */
static int sf_handle_setid(sf_ctx *c, int notify_fd, const sf_setid_call *call, sf_event_cb cb,
			   void *userdata)
{
	int valid;

	sf_setid_read(&c->mem, c->req, call, &c->exec);
	valid = sf_valid(notify_fd, c->req->id);
	if (valid < 0)
		return valid;
	return sf_refuse(c, notify_fd, "fs.denied",
			 valid ? sf_setid_json(c->req, call, &c->exec) : NULL, EPERM, cb, userdata);
}

/* Whether fd of the target process is a TCP socket (MPTCP too, which
 * Landlock treats as TCP): its own copy, taken by pidfd_getfd. */
static bool sf_is_tcp_socket(pid_t pid, int fd)
{
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	_cleanup_close_ int sock = -1;
	int domain = 0, type = 0;
	socklen_t len = sizeof(int);

	if (pidfd < 0 || fd < 0)
		return false;
	sock = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (sock < 0 || getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
	    getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &(socklen_t){sizeof(int)}) < 0)
		return false;
	return (domain == AF_INET || domain == AF_INET6) && type == SOCK_STREAM;
}

/*
 * A bind with net.listen off (profile.c, SF_BIND): Landlock refuses TCP
 * binds, unrecorded; the listener refuses them first, as Landlock would
 * (EACCES), and records a syscall.denied. Any other bind goes on to the
 * kernel, where Landlock still decides (so a race that swaps the fd only
 * meets the wall itself).
 */
static int sf_handle_bind(sf_ctx *c, int notify_fd, sf_event_cb cb, void *userdata)
{
	json_t *data = NULL;
	int valid;

	if (!sf_is_tcp_socket((pid_t)c->req->pid, (int)c->req->data.args[0]))
		return sf_continue(c, notify_fd);
	valid = sf_valid(notify_fd, c->req->id);
	if (valid <= 0)
		return valid < 0 ? valid : 1; /* gone: nobody waits for the answer */
	(void)sf_denied_event(c->req, &data);
	return sf_refuse(c, notify_fd, "syscall.denied", data, EACCES, cb, userdata);
}

/* The call, when this notification is one the filter sent for a write
 * (profile.c, SF_WRITE). */
static const sf_write_call *sf_write_of(const int *nrs, const struct seccomp_notif *req)
{
	for (size_t i = 0; i < SF_N_WRITE_CALLS; i++) {
		const sf_write_call *c = &sf_write_calls[i];
		uint32_t type;

		if (nrs[i] < 0 || req->data.nr != nrs[i])
			continue;
		if (c->node < 0)
			return c;
		/* mknod of a device is refused as such (syscall.denied) */
		type = (uint32_t)req->data.args[c->node] & S_IFMT;
		return type == 0 || type == S_IFREG || type == S_IFIFO || type == S_IFSOCK ? c
											   : NULL;
	}
	return NULL;
}

/* fs.denied for a write a wall refuses. */
static json_t *sf_write_json(pid_t pid, const char *op, const char *path, int err)
{
	_cleanup_json_ json_t *data = json_object();

	if (!data || json_object_set_new(data, "pid", json_integer(pid)) < 0 ||
	    json_object_set_new(data, "op", json_string(op)) < 0 ||
	    json_object_set_new(data, "path", sf_json_bytes(path, strlen(path))) < 0 ||
	    json_object_set_new(data, "errno", json_string(err == EROFS ? "EROFS" : "EACCES")) <
		0 ||
	    json_object_set_new(data, "reason",
				json_string(err == EROFS ? "read-only" : "not-writable")) < 0)
		return NULL;
	return TAKE_PTR(data);
}

/* One path of a write call, read and judged: the wall's errno or 0, and the
 * path from the target's root in x->path. A path that cannot be read, or
 * is longer than PATH_MAX, is the kernel's to refuse (EFAULT,
 * ENAMETOOLONG). */
static int sf_write_path(sf_ctx *c, const sf_write_call *call, int dirfd_arg, int path_arg)
{
	const struct seccomp_notif *req = c->req;
	sf_exec *x = &c->exec;
	size_t len = 0;
	bool t = false;
	sf_wpath p = {
	    .given = x->argv,
	    .dirfd = dirfd_arg >= 0 ? (int)req->data.args[dirfd_arg] : AT_FDCWD,
	    .flags = call->flags >= 0 ? (int)req->data.args[call->flags] : -1,
	};

	x->argv[0] = '\0';
	if (path_arg >= 0 && (sf_read_string(&c->mem, req->data.args[path_arg], x->argv,
					     SF_EXEC_PATH_MAX, &len, &t) < 0 ||
			      t))
		return 0;
	return sf_write_judge(&c->writes, (pid_t)req->pid, call->obj, &p, x->path, sizeof(x->path));
}

/*
 * A write: judged (writes.c); one a wall refuses is recorded (when the copy
 * was the target's, see the top) and refused here with the wall's errno,
 * whether or not the record could be written; any other goes on (CONTINUE)
 * and the kernel decides.
 */
static int sf_handle_write(sf_ctx *c, int notify_fd, const sf_write_call *call, sf_event_cb cb,
			   void *userdata)
{
	int err, valid;

	sf_mem_reset(&c->mem, (pid_t)c->req->pid);
	err = sf_write_path(c, call, call->dirfd, call->path);
	if (err == 0 && call->path2 >= 0)
		err = sf_write_path(c, call, call->dirfd2, call->path2);
	if (err == 0)
		return sf_continue(c, notify_fd);
	valid = sf_valid(notify_fd, c->req->id);
	if (valid <= 0)
		return valid < 0 ? valid : 1; /* stale: no record, and nobody waits */
	return sf_refuse(c, notify_fd, "fs.denied",
			 sf_write_json((pid_t)c->req->pid, call->name, c->exec.path, err), err, cb,
			 userdata);
}

/*
 * Receives (blocking) and answers one notification. Returns 1 when one was
 * handled, 0 when RECV found none (ENOENT: it was withdrawn, or no process
 * uses the filter any more), -errno when the listener itself failed.
 *
 * An exec is recorded first (cb builds, hashes and writes it) and answered
 * CONTINUE only once cb returned 0; when cb fails it stays unanswered (see
 * the top). Records keep the order of the execs: one notification at a
 * time.
 */
static int sf_handle(sf_ctx *c, int notify_fd, sf_event_cb cb, void *userdata)
{
	struct seccomp_notif *req = c->req;
	struct seccomp_notif_resp *resp = c->resp;
	json_t *data = NULL;
	const sf_setid_call *setid;
	const sf_write_call *write;
	bool is_exec = false, at = false;
	int r, r_event = 0;

	for (;;) {
		memset(req, 0, c->req_size); /* RECV wants a zeroed buffer */
		if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_RECV, req) == 0)
			break;
		if (errno == EINTR)
			continue;
		return errno == ENOENT ? 0 : -errno;
	}
	if (req->data.arch == c->native) {
		is_exec = req->data.nr == c->execve_nr || req->data.nr == c->execveat_nr;
		at = req->data.nr == c->execveat_nr;
	}

	memset(resp, 0, c->resp_size);
	resp->id = req->id;
	setid = req->data.arch == c->native ? sf_setid_of(c->setid_nr, req) : NULL;
	if (setid)
		return sf_handle_setid(c, notify_fd, setid, cb, userdata);
	if (req->data.arch == c->native && (int)req->data.nr == c->bind_nr)
		return sf_handle_bind(c, notify_fd, cb, userdata);
	write = req->data.arch == c->native ? sf_write_of(c->write_nr, req) : NULL;
	if (write)
		return sf_handle_write(c, notify_fd, write, cb, userdata);
	if (!is_exec) {
		/* Record first, then refuse: the denial is enforced here. */
		r_event = sf_denied_event(req, &data);
		/* Refused whether or not the record could be written. */
		if (data && cb)
			(void)cb("syscall.denied", data, userdata);
		else
			json_decref(data);
		resp->error = -EPERM;
		r = sf_respond(notify_fd, resp);
		if (r < 0)
			return r;
		return r_event < 0 ? r_event : 1;
	}

	sf_exec_read(&c->mem, req, at, &c->exec);
	r = sf_valid(notify_fd, req->id);
	if (r <= 0) /* stale: what was read may not be the target's */
		return r < 0 ? r : 1;
	data = sf_exec_json(&c->exec);
	if (!data) {
		/* No record, so no exec: it fails, the process goes on. */
		resp->error = -ENOMEM;
		r = sf_respond(notify_fd, resp);
		return r < 0 ? r : -ENOMEM;
	}
	if (cb && cb("proc.exec", data, userdata) < 0)
		return 1; /* not written: left unanswered, the sandbox is being stopped */
	if (!cb)
		json_decref(data);
	resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	r = sf_respond(notify_fd, resp);
	return r < 0 ? r : 1;
}

int sf_notify_handle(int notify_fd, const sf_walls *walls, sf_event_cb cb, void *userdata)
{
	/* One caller at a time (the listener's owner): the context is kept
	 * between calls, so a notification costs no allocation. */
	static sf_ctx *ctx;
	int r;

	if (!ctx) {
		r = sf_ctx_new(&ctx);
		if (r < 0)
			return r;
	}
	if (ctx->writes.walls != walls)
		sf_wstate_reset(&ctx->writes, walls);
	r = sf_handle(ctx, notify_fd, cb, userdata);
	return r < 0 ? r : 0;
}

struct sf_listener {
	sf_ctx *ctx;
	int fd;
	sf_event_cb cb;
	void *userdata;
	pthread_t thread;
	int error;
};

static void *sf_listener_main(void *arg)
{
	sf_listener *l = arg;

	for (;;) {
		int r = sf_handle(l->ctx, l->fd, l->cb, l->userdata);

		if (r == 0) {
			/* RECV returns at once when nobody uses the filter any
			 * more; poll then says POLLHUP (seccomp_notify_poll()). */
			struct pollfd p = {.fd = l->fd, .events = POLLIN};

			if (poll(&p, 1, 0) > 0 && (p.revents & POLLHUP) && !(p.revents & POLLIN))
				break;
			continue;
		}
		if (r == -ENOMEM)
			continue; /* answered: refused, for want of its record */
		if (r < 0) {
			/* A broken listener: closing it makes every pending and
			 * future notified syscall fail with ENOSYS rather than
			 * wait for an answer that cannot come. */
			l->error = r;
			l->fd = safe_close(l->fd);
			break;
		}
	}
	return NULL;
}

int sf_listener_start(int notify_fd, const sf_walls *walls, sf_event_cb cb, void *userdata,
		      sf_listener **ret)
{
	_cleanup_free_ sf_listener *l = calloc(1, sizeof(*l));
	sigset_t all, old;
	int r;

	if (!l)
		return -ENOMEM;
	/* The flag and NOTIF_RECV's return on an orphaned filter came in the
	 * same release (6.6): the flag is how we tell. It is then cleared: on
	 * a busy host the synchronous wake-up puts the target back on the
	 * listener's CPU behind whatever runs there, and a make -j2 took 10 %
	 * longer with it (docs/decisions.md, "The seccomp listener is a
	 * thread of the supervisor"). */
	r = sf_notify_sync_wakeup(notify_fd);
	if (r < 0)
		return r;
	(void)ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, 0ul);
	r = sf_ctx_new(&l->ctx);
	if (r < 0)
		return r;
	sf_wstate_reset(&l->ctx->writes, walls);
	l->fd = notify_fd;
	l->cb = cb;
	l->userdata = userdata;
	/* Signals stay with the caller's thread (its signalfd). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = -pthread_create(&l->thread, NULL, sf_listener_main, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		l->ctx = sf_ctx_free(l->ctx);
		return r;
	}
	*ret = TAKE_PTR(l);
	return 0;
}

int sf_listener_stop(sf_listener *l)
{
	int r;

	if (!l)
		return 0;
	(void)pthread_join(l->thread, NULL);
	r = l->error;
	(void)safe_close(l->fd);
	sf_ctx_free(l->ctx);
	free(l);
	return r;
}
