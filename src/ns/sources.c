/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/diag.h"
#include "compat/syscalls.h"
#include "ns/ns.h"

static int diag_grant(sc_diag *d, size_t i, const char *path, int err, const char *why)
{
	char where[64];

	snprintf(where, sizeof(where), "$.fs.grants[%zu].path", i);
	return diag_fail(d, err, where, "%s: %s (%s)", path, why, strerror(-err));
}

/* O_PATH without following any symlink, not even in a parent directory: a
 * path the agent could have swapped for a link since the policy was written
 * must not redirect a grant (openat2(2), RESOLVE_NO_SYMLINKS). */
static int open_no_symlinks(const char *path)
{
	struct sc_open_how how = {
	    .flags = O_PATH | O_CLOEXEC,
	    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd = sys_openat2(AT_FDCWD, path, &how);

	return fd < 0 ? -errno : fd;
}

/* Opens grant i without following symlinks (src->fd, src->is_dir, *st): a
 * directory or a regular file, else -errno with the diagnostic. */
static int open_grant(const plan_grant *g, size_t i, ns_source *src, struct stat *st, sc_diag *d)
{
	src->fd = open_no_symlinks(g->path);
	if (src->fd < 0)
		return diag_grant(d, i, g->path, src->fd,
				  src->fd == -EACCES
				      ? "the invoking user cannot reach it"
				      : "cannot open grant without following symlinks");
	if (fstat(src->fd, st) < 0)
		return diag_grant(d, i, g->path, -errno, "cannot stat grant");
	if (!S_ISDIR(st->st_mode) && !S_ISREG(st->st_mode))
		return diag_grant(d, i, g->path, -EINVAL,
				  "a grant must be a directory or a regular file");
	src->is_dir = S_ISDIR(st->st_mode);
	return 0;
}

/* The tree is cloned here, in the supervisor's mount namespace: open_tree(2)
 * only clones mounts of the caller's namespace, and idmapping needs
 * CAP_SYS_ADMIN in the initial user namespace. The child attaches the
 * detached tree with move_mount(2). Recursive read-only covers submounts. */
static int detach_tree(ns_source *s, grant_mode mode)
{
	struct sc_mount_attr ma = {
	    .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_IDMAP |
			(mode != GRANT_RW ? MOUNT_ATTR_RDONLY : 0),
	    .userns_fd = (uint64_t)s->idmap_fd,
	};
	int tree = sys_open_tree(
	    s->fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);

	if (tree < 0)
		return -errno;
	if (sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma) < 0) {
		int r = -errno;

		/* Filesystems without idmapping (e.g. tmpfs before Linux 6.3) can
		 * still be granted read-only: files show their own owners, which
		 * are unmapped (nobody) inside, and read by "other" permissions. A
		 * rw grant needs the mapping, or the agent could not write. */
		ma.attr_set &= ~(uint64_t)MOUNT_ATTR_IDMAP;
		ma.userns_fd = 0;
		if (r != -EINVAL || mode != GRANT_RO ||
		    sys_mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma) < 0) {
			(void)close(tree);
			return r;
		}
	}
	(void)close(s->fd);
	s->fd = tree;
	return 0;
}

void ns_sources_free(ns_source *s, size_t n)
{
	if (!s)
		return;
	for (size_t i = 0; i < n; i++) {
		(void)safe_close(s[i].fd);
		/* idmap fds are shared between grants of one owner: close once */
		for (size_t j = i + 1; j < n; j++)
			if (s[j].idmap_fd == s[i].idmap_fd)
				s[j].idmap_fd = -1;
		(void)safe_close(s[i].idmap_fd);
	}
	free(s);
}

int ns_open_sources(const sc_plan *plan, uid_t agent_host_uid, gid_t agent_host_gid,
		    ns_source **ret_sources, sc_diag *reterr_diag)
{
	ns_source *s = calloc(plan->n_grants ? plan->n_grants : 1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < plan->n_grants; i++)
		s[i].fd = s[i].idmap_fd = -1;

	for (size_t i = 0; i < plan->n_grants; i++) {
		const plan_grant *g = &plan->grants[i];
		struct stat st;

		r = open_grant(g, i, &s[i], &st, reterr_diag);
		if (r < 0)
			goto fail;

		/* The grant's owner on disk is the agent inside, both ways: files
		 * the agent creates land on the host owned by that owner. */
		for (size_t j = 0; j < i; j++) {
			struct stat o;

			if (s[j].idmap_fd >= 0 && fstat(s[j].fd, &o) == 0 &&
			    o.st_uid == st.st_uid && o.st_gid == st.st_gid) {
				s[i].idmap_fd = s[j].idmap_fd;
				break;
			}
		}
		if (s[i].idmap_fd < 0) {
			char um[64], gm[64];

			snprintf(um, sizeof(um), "%u %u 1\n", (unsigned)st.st_uid,
				 (unsigned)agent_host_uid);
			snprintf(gm, sizeof(gm), "%u %u 1\n", (unsigned)st.st_gid,
				 (unsigned)agent_host_gid);
			s[i].idmap_fd = ns_userns_fd(um, gm);
			if (s[i].idmap_fd < 0) {
				r = diag_grant(reterr_diag, i, g->path, s[i].idmap_fd,
					       "cannot create the id mapping for the grant");
				goto fail;
			}
		}
		r = detach_tree(&s[i], g->mode);
		if (r < 0) {
			r = diag_grant(reterr_diag, i, g->path, r,
				       r == -EINVAL ? "its filesystem does not support idmapped "
						      "mounts, needed for a rw grant"
						    : "cannot create an idmapped bind mount");
			goto fail;
		}
	}
	*ret_sources = s;
	return 0;
fail:
	ns_sources_free(s, plan->n_grants);
	return r;
}

/* faccessat2(2) with the effective ids on the fd itself: the question is
 * whether we (the invoking user) may, not whether the path still leads to
 * it. */
static int may_access(int fd, int mode)
{
	return syscall(SYS_faccessat2, fd, "", mode, AT_EMPTY_PATH | AT_EACCESS) < 0 ? -errno : 0;
}

int ns_open_sources_unpriv(const sc_plan *plan, ns_source **ret_sources, sc_diag *reterr_diag)
{
	ns_source *s = calloc(plan->n_grants ? plan->n_grants : 1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < plan->n_grants; i++)
		s[i].fd = s[i].idmap_fd = -1;

	for (size_t i = 0; i < plan->n_grants; i++) {
		const plan_grant *g = &plan->grants[i];
		struct stat st;
		int mode;

		r = open_grant(g, i, &s[i], &st, reterr_diag);
		if (r < 0)
			goto fail;
		s[i].dev = st.st_dev;
		s[i].ino = st.st_ino;
		/* No idmapped mount makes the agent the owner here: it is the
		 * invoking user, so it gets exactly that user's access. */
		mode = R_OK | (s[i].is_dir ? X_OK : 0) | (g->mode == GRANT_RW ? W_OK : 0);
		r = may_access(s[i].fd, mode);
		if (r < 0) {
			r = diag_grant(reterr_diag, i, g->path, r,
				       g->mode == GRANT_RW
					   ? "the invoking user may not read and write it"
					   : "the invoking user may not read it");
			goto fail;
		}
	}
	*ret_sources = s;
	return 0;
fail:
	ns_sources_free(s, plan->n_grants);
	return r;
}
