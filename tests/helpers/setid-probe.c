/* SPDX-License-Identifier: MIT */
/*
 * Tries every way the agent could leave a setuid or setgid file in DIR (a
 * rw grant, test-setuid.sh), each with raw syscalls so that libc's
 * wrappers and fallbacks do not choose for us, and prints one line per
 * attempt:
 *   NAME refused ERRNO      the kernel or the filter refused it
 *   NAME done               it went through (a setid attempt that must not)
 *   NAME ok                 an ordinary mode that must keep working
 *   NAME fail ERRNO         ... and did not
 * Static (tests/helpers/meson.build), so that it runs in a busybox OCI root
 * as well. Usage: setid-probe DIR
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif

#define SETID_MODE 06755

static int dirfd_ = -1;
static const char *dir_;

static void result(const char *name, long r, int setid)
{
	if (r >= 0)
		printf("%s %s\n", name, setid ? "done" : "ok");
	else
		printf("%s %s %s\n", name, setid ? "refused" : "fail", strerrorname_np(errno));
	fflush(stdout);
}

static char *at(const char *name)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s/%s", dir_, name);
	return buf;
}

/* An ordinary file the chmod probes work on; its fd, or -1. */
static int plain(const char *name)
{
	return (int)syscall(SYS_openat, dirfd_, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0755);
}

static void p_chmod(void)
{
	int fd = plain("chmod");

	close(fd);
	result("chmod", syscall(SYS_chmod, at("chmod"), SETID_MODE), 1);
	/* umode_t is 16 bits: the kernel drops the rest, the filter must not be fooled */
	result("chmod-high-bits", syscall(SYS_chmod, at("chmod"), 0x10000L | SETID_MODE), 1);
	result("chmod-setgid", syscall(SYS_chmod, at("chmod"), 02755), 1);
	result("chmod-setuid", syscall(SYS_chmod, at("chmod"), 04755), 1);
	result("chmod-plus-x", syscall(SYS_chmod, at("chmod"), 0755), 0);
	result("chmod-sticky", syscall(SYS_chmod, at("chmod"), 01755), 0);
}

static void p_fchmod(void)
{
	int fd = plain("fchmod");

	result("fchmod", syscall(SYS_fchmod, fd, SETID_MODE), 1);
	result("fchmod-plain", syscall(SYS_fchmod, fd, 0700), 0);
	close(fd);
	close(plain("fchmodat"));
	result("fchmodat", syscall(SYS_fchmodat, dirfd_, "fchmodat", SETID_MODE), 1);
	result("fchmodat-plain", syscall(SYS_fchmodat, dirfd_, "fchmodat", 0750), 0);
	close(plain("fchmodat2"));
	result("fchmodat2", syscall(__NR_fchmodat2, dirfd_, "fchmodat2", SETID_MODE, 0), 1);
	/* AT_EMPTY_PATH on an O_PATH fd of the file */
	fd = (int)syscall(SYS_openat, dirfd_, "fchmodat2", O_PATH | O_CLOEXEC, 0);
	result("fchmodat2-empty-path",
	       syscall(__NR_fchmodat2, fd, "", SETID_MODE, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW), 1);
	close(fd);
}

static void p_create(void)
{
	struct open_how how = {.flags = O_CREAT | O_WRONLY | O_CLOEXEC, .mode = SETID_MODE};
	long fd;

	result("open",
	       fd = syscall(SYS_open, at("open"), O_CREAT | O_WRONLY | O_CLOEXEC, SETID_MODE), 1);
	result(
	    "openat",
	    fd = syscall(SYS_openat, dirfd_, "openat", O_CREAT | O_WRONLY | O_CLOEXEC, SETID_MODE),
	    1);
	result("creat", fd = syscall(SYS_creat, at("creat"), SETID_MODE), 1);
	result("openat2", fd = syscall(SYS_openat2, dirfd_, "openat2", &how, sizeof(how)), 1);
	result("openat-plain",
	       fd = syscall(SYS_openat, dirfd_, "plain", O_CREAT | O_WRONLY | O_CLOEXEC, 0755), 0);
	if (fd >= 0)
		close((int)fd);
	/* Without O_CREAT or O_TMPFILE the kernel never reads the mode: what
	 * is left in its register (here setid bits) must not refuse the open. */
	result("open-read-stray-mode", fd = syscall(SYS_open, at("plain"), O_RDONLY, SETID_MODE),
	       0);
	if (fd >= 0)
		close((int)fd);
	result("openat-write-stray-mode",
	       fd = syscall(SYS_openat, dirfd_, "plain", O_WRONLY | O_TRUNC, SETID_MODE), 0);
	if (fd >= 0)
		close((int)fd);
	(void)fd;
}

/* O_TMPFILE, then linked in: the mode at open, or an fchmod before the link. */
static void p_tmpfile(void)
{
	char proc[64];
	long fd;

	result("tmpfile-open",
	       fd = syscall(SYS_openat, dirfd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, SETID_MODE),
	       1);
	if (fd >= 0 && syscall(SYS_linkat, fd, "", dirfd_, "tmpfile-open", AT_EMPTY_PATH) < 0)
		printf("tmpfile-open-link fail %s\n", strerrorname_np(errno));
	fd = syscall(SYS_openat, dirfd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0755);
	if (fd < 0) {
		result("tmpfile-fchmod", fd, 1);
		return;
	}
	result("tmpfile-fchmod", syscall(SYS_fchmod, fd, SETID_MODE), 1);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%ld", fd);
	result("tmpfile-link",
	       syscall(SYS_linkat, AT_FDCWD, proc, dirfd_, "tmpfile-link", AT_SYMLINK_FOLLOW), 0);
	close((int)fd);
}

static void p_nodes(void)
{
	result("mkdir", syscall(SYS_mkdir, at("mkdir"), SETID_MODE), 1);
	result("mkdirat", syscall(SYS_mkdirat, dirfd_, "mkdirat", SETID_MODE), 1);
	result("mkdir-plain", syscall(SYS_mkdir, at("mkdir-plain"), 0755), 0);
	result("mknod", syscall(SYS_mknod, at("mknod"), S_IFREG | SETID_MODE, 0), 1);
	result("mknod-type-0", syscall(SYS_mknod, at("mknod0"), SETID_MODE, 0), 1);
	result("mknodat", syscall(SYS_mknodat, dirfd_, "mknodat", S_IFREG | SETID_MODE, 0), 1);
	result("mknodat-fifo", syscall(SYS_mknodat, dirfd_, "fifo", S_IFIFO | 02644, 0), 1);
	result("mknodat-plain", syscall(SYS_mknodat, dirfd_, "mknod-plain", S_IFREG | 0644, 0), 0);
}

/* File capabilities are a setuid of their own: security.capability granting
 * CAP_SETUID, in the v2 layout. */
static void p_fcaps(void)
{
	struct vfs_cap_data cap = {
	    .magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE,
	    .data = {{.permitted = 1u << CAP_SETUID}},
	};

	close(plain("fcaps"));
	result("setxattr-capability",
	       syscall(SYS_setxattr, at("fcaps"), "security.capability", &cap, sizeof(cap), 0), 1);
}

/* An existing setuid program of the image, hard-linked into the grant (a
 * rename is not tried: run on the host, it would move the program). */
static void p_existing(void)
{
	static const char *const progs[] = {"/usr/bin/passwd", "/usr/bin/su",	  "/bin/su",
					    "/usr/bin/mount",  "/usr/bin/newgrp", NULL};
	struct stat st;

	for (const char *const *p = progs; *p; p++) {
		if (stat(*p, &st) < 0 || !(st.st_mode & (S_ISUID | S_ISGID)))
			continue;
		result("link-existing", syscall(SYS_link, *p, at("linked")), 1);
		return;
	}
	printf("link-existing none\n");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: setid-probe DIR\n");
		return 2;
	}
	dir_ = argv[1];
	umask(0);
	dirfd_ = open(dir_, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd_ < 0) {
		perror(dir_);
		return 2;
	}
	p_chmod();
	p_fchmod();
	p_create();
	p_tmpfile();
	p_nodes();
	p_fcaps();
	p_existing();
	result("io_uring_setup", syscall(__NR_io_uring_setup, 1, NULL), 1);
	return 0;
}
