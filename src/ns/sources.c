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

/*
 * An image's root (fs.runtime.rootfs), cloned here as a grant is: read-only,
 * nosuid, nodev, and idmapped with the sandbox's own maps (ns_id_maps), so
 * that its files show their owners inside as they are on disk (root's as
 * root's, the agent's uid as the agent's) and, with a writable root, the
 * agent writes where those owners may. A filesystem that cannot be
 * idmapped is cloned plain (its owners then unmapped, "nobody", inside).
 */
static int open_image(const sc_plan *plan, uid_t id_base, ns_source *img, sc_diag *d)
{
	char um[NS_ID_MAP_MAX], gm[NS_ID_MAP_MAX];
	struct stat st;
	int r;

	img->fd = open_no_symlinks(plan->rootfs);
	if (img->fd < 0 || fstat(img->fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		r = img->fd < 0 ? img->fd : S_ISDIR(st.st_mode) ? -errno : -ENOTDIR;
		return diag_fail(d, r, "$.fs.runtime.rootfs", "%s: %s", plan->rootfs, strerror(-r));
	}
	img->is_dir = true;
	ns_id_maps(plan, id_base, um, gm);
	img->idmap_fd = ns_userns_fd(um, gm);
	if (img->idmap_fd < 0)
		return diag_fail(d, img->idmap_fd, "$.fs.runtime.rootfs",
				 "cannot create the id mapping for the image: %s",
				 strerror(-img->idmap_fd));
	r = detach_tree(img, GRANT_RO);
	if (r < 0)
		return diag_fail(d, r, "$.fs.runtime.rootfs", "%s: cannot clone it: %s",
				 plan->rootfs, strerror(-r));
	return 0;
}

int ns_open_sources(const sc_plan *plan, uid_t id_base, ns_source **ret_sources,
		    sc_diag *reterr_diag)
{
	ns_source *s = calloc(plan->n_grants + 1, sizeof(*s));
	uid_t agent_host_uid = id_base + 1;
	gid_t agent_host_gid = id_base + 1;
	int r;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i <= plan->n_grants; i++)
		s[i].fd = s[i].idmap_fd = -1;
	if (plan->runtime == RUNTIME_ROOTFS) {
		r = open_image(plan, id_base, &s[plan->n_grants], reterr_diag);
		if (r < 0)
			goto fail;
	}

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
	ns_sources_free(s, plan->n_grants + 1);
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
	ns_source *s = calloc(plan->n_grants + 1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i <= plan->n_grants; i++)
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
	ns_sources_free(s, plan->n_grants + 1);
	return r;
}
