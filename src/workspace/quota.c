/* SPDX-License-Identifier: MIT */
/*
 * A quota on a rw grant, with the host filesystem's project quotas (ext4
 * with the "project" and "quota" features mounted with prjquota, XFS with
 * prjquota): every file of the grant is tagged with a project id of the
 * sandbox's (FS_IOC_FSSETXATTR, with PROJINHERIT on directories so that
 * new files inherit it), and the project's hard limit is set to what the
 * tree holds now plus the quota, with quotactl_fd(2) on the grant itself:
 * no device path is looked up. The kernel then refuses the write beyond
 * it (EDQUOT inside).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/dqblk_xfs.h>
#include <linux/fs.h>
#include <linux/quota.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "compat/syscalls.h"
#include "workspace/ws-internal.h"

static int quotactl_on(int fd, unsigned cmd, unsigned id, void *addr)
{
	return syscall(__NR_quotactl_fd, fd, QCMD(cmd, PRJQUOTA), id, addr) < 0 ? -errno : 0;
}

ws_quota_support ws_quota_probe(int fd, char *why, size_t why_len)
{
	struct fs_quota_statv st = {.qs_version = FS_QSTATV_VERSION1};
	int r = quotactl_on(fd, Q_XGETQSTATV, 0, &st);

	if (r < 0) {
		snprintf(why, why_len, "%s",
			 r == -ESRCH	? "project quotas are not turned on for its filesystem"
			 : r == -ENOSYS ? "its filesystem has no quota support"
					: "its filesystem has no project quotas");
		return WS_QUOTA_UNSUPPORTED;
	}
	if (!(st.qs_flags & FS_QUOTA_PDQ_ENFD)) {
		snprintf(why, why_len,
			 "project quotas are counted but not enforced there "
			 "(mount it with prjquota)");
		return WS_QUOTA_UNSUPPORTED;
	}
	snprintf(why, why_len, "project quotas are enforced");
	return WS_QUOTA_ENFORCED;
}

static int tag(int fd, uint32_t projid, bool dir)
{
	struct fsxattr fx;

	if (ioctl(fd, FS_IOC_FSGETXATTR, &fx) < 0)
		return -errno;
	fx.fsx_projid = projid;
	if (dir)
		fx.fsx_xflags |= FS_XFLAG_PROJINHERIT;
	return ioctl(fd, FS_IOC_FSSETXATTR, &fx) < 0 ? -errno : 0;
}

/* Tags the tree at fd; symlinks and special files cannot be opened to be
 * tagged and take no blocks worth counting. Nothing is followed. */
static int tag_tree(int fd, uint32_t projid, unsigned depth)
{
	struct dirent *e;
	DIR *d;
	int r;

	if (depth > WS_MAX_DEPTH)
		return -ELOOP;
	r = tag(fd, projid, true);
	if (r < 0)
		return r;
	d = ws_opendir_at(fd, ".");
	if (!d)
		return -errno;
	while (r >= 0 && (e = readdir(d))) {
		_cleanup_close_ int c = -1;
		struct stat st;

		if (ws_is_dot(e->d_name))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
			continue;
		c = openat(dirfd(d), e->d_name,
			   O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
			       (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
		if (c < 0)
			continue;
		r = S_ISDIR(st.st_mode) ? tag_tree(c, projid, depth + 1) : tag(c, projid, false);
	}
	closedir(d);
	return r;
}

int ws_quota_set(int fd, uint32_t projid, uint64_t quota, uint64_t inodes, uint64_t *ret_used)
{
	struct if_dqblk q = {0};
	int r;

	r = tag_tree(fd, projid, 0);
	if (r < 0)
		return r == -ENOTTY || r == -EINVAL ? -EOPNOTSUPP : r;
	r = quotactl_on(fd, Q_GETQUOTA, projid, &q);
	if (r < 0)
		return r;
	/* dqb_bhardlimit counts 1 KiB blocks (linux/quota.h, QIF_BLIMITS). */
	q.dqb_bhardlimit = q.dqb_bsoftlimit = (q.dqb_curspace + quota + 1023) / 1024;
	q.dqb_ihardlimit = q.dqb_isoftlimit =
	    inodes == PLAN_UNLIMITED ? 0 : q.dqb_curinodes + inodes;
	q.dqb_valid = QIF_LIMITS;
	if (ret_used)
		*ret_used = q.dqb_curspace;
	return quotactl_on(fd, Q_SETQUOTA, projid, &q);
}

int ws_quota_clear(int fd, uint32_t projid)
{
	struct if_dqblk q = {.dqb_valid = QIF_LIMITS};

	return quotactl_on(fd, Q_SETQUOTA, projid, &q);
}
