/* SPDX-License-Identifier: MIT */
/*
 * The overlay of a cow grant, built by the supervisor with the new mount API
 * before the sandbox exists and handed to the child as a detached mount,
 * like the idmapped tree of a rw grant (ns/sources.c). Layers are given as
 * file descriptors (fsconfig FSCONFIG_SET_FD, overlayfs since Linux 6.13;
 * detached layers since 6.15), so no path of ours is ever looked up again
 * and nothing is mounted in the host's namespace.
 *
 * The upper layer lives on a tmpfs of exactly the quota (size=, nr_inodes=):
 * the kernel refuses the write beyond it with ENOSPC inside the sandbox,
 * and the host folder, the lower layer, is never written (overlayfs(5):
 * "the lower filesystem is never modified").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/diag.h"
#include "compat/syscalls.h"
#include "workspace/ws-internal.h"

struct ws_cow {
	size_t index;
	char *path, *at;
	uint64_t quota, inodes;
	int tmpfs;	       /* the tmpfs itself, not idmapped: owners as stored */
	int upper;	       /* its upper/ directory, O_PATH */
	struct timespec epoch; /* before the sandbox could see the folder */
	uint64_t dev, ino;     /* the host folder */
};

ws_cow *ws_cow_free(ws_cow *c)
{
	if (!c)
		return NULL;
	(void)safe_close(c->upper);
	(void)safe_close(c->tmpfs);
	free(c->path);
	free(c->at);
	free(c);
	return NULL;
}

int ws_cow_upper_fd(const ws_cow *c)
{
	return c ? c->upper : -1;
}

void ws_cow_set_epoch(ws_cow *c, const struct timespec *epoch)
{
	if (epoch->tv_sec > c->epoch.tv_sec ||
	    (epoch->tv_sec == c->epoch.tv_sec && epoch->tv_nsec > c->epoch.tv_nsec))
		c->epoch = *epoch;
}

/* The kernel's own words about a refused fs context (fsopen(2): messages
 * are read from the context's fd), appended to buf. */
static void fs_context_log(int fd, char *buf, size_t len)
{
	size_t n = strlen(buf);
	char line[256];
	ssize_t k;

	while (n + 4 < len && (k = read(fd, line, sizeof(line) - 1)) > 0) {
		line[k] = '\0';
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "; " : "", line);
	}
}

static int fs_set(int fd, const char *key, const char *value, char *log, size_t log_len)
{
	if (sys_fsconfig(fd, SC_FSCONFIG_SET_STRING, key, value, 0) < 0) {
		int r = -errno;

		fs_context_log(fd, log, log_len);
		return r;
	}
	return 0;
}

static int fs_set_fd(int fd, const char *key, int value, char *log, size_t log_len)
{
	if (sys_fsconfig(fd, SC_FSCONFIG_SET_FD, key, NULL, value) < 0) {
		int r = -errno;

		fs_context_log(fd, log, log_len);
		return r;
	}
	return 0;
}

static int fs_create_mount(int fd, char *log, size_t log_len)
{
	int m;

	if (sys_fsconfig(fd, SC_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		int r = -errno;

		fs_context_log(fd, log, log_len);
		return r;
	}
	m = sys_fsmount(fd, SC_FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	return m < 0 ? -errno : m;
}

/* The files and directories the agent's changes may hold. */
static uint64_t agent_inodes(const plan_grant *g)
{
	uint64_t inodes = g->inodes;

	if (inodes == PLAN_UNLIMITED) {
		inodes = g->quota / WS_DEFAULT_INODES_PER;
		if (inodes < WS_MIN_INODES)
			inodes = WS_MIN_INODES;
	}
	return inodes;
}

/* The upper layer's filesystem: size and inodes are the quota. */
static int make_tmpfs(const plan_grant *g, char *log, size_t log_len)
{
	_cleanup_close_ int fs = sys_fsopen("tmpfs", SC_FSOPEN_CLOEXEC);
	uint64_t inodes = agent_inodes(g);
	char num[32];
	int r;

	if (fs < 0)
		return -errno;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)g->quota);
	r = fs_set(fs, "size", num, log, log_len);
	if (r >= 0) {
		/* + 3: the tmpfs root, upper/ and work/ are not the agent's */
		snprintf(num, sizeof(num), "%llu", (unsigned long long)inodes + 3);
		r = fs_set(fs, "nr_inodes", num, log, log_len);
	}
	if (r >= 0)
		r = fs_set(fs, "mode", "0700", log, log_len);
	if (r < 0)
		return r;
	return fs_create_mount(fs, log, log_len);
}

/*
 * The overlay. redirect_dir, index, metacopy and xino off: every change is
 * then a plain entry of the upper layer (a whole file, a whiteout, an
 * opaque directory) that the workspace can be read from without knowing
 * overlay internals beyond those two markers, and nothing is ever written
 * to the lower layer (index=on would store file handles there).
 */
static int make_overlay(int lower, int upper, int work, char *log, size_t log_len)
{
	_cleanup_close_ int fs = sys_fsopen("overlay", SC_FSOPEN_CLOEXEC);
	static const char *const opts[][2] = {
	    {"redirect_dir", "off"}, {"index", "off"}, {"metacopy", "off"}, {"xino", "off"}};
	int r;

	if (fs < 0)
		return -errno;
	r = fs_set_fd(fs, "lowerdir+", lower, log, log_len);
	if (r >= 0)
		r = fs_set_fd(fs, "upperdir", upper, log, log_len);
	if (r >= 0)
		r = fs_set_fd(fs, "workdir", work, log, log_len);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(opts); i++)
		r = fs_set(fs, opts[i][0], opts[i][1], log, log_len);
	if (r < 0)
		return r;
	return fs_create_mount(fs, log, log_len);
}

/*
 * The overlay takes inodes of the tmpfs for itself (its work directory's
 * work/, and whatever a kernel adds): once it is mounted, nr_inodes is set
 * to what is in use plus exactly the agent's share.
 */
static int fit_inodes(int tmpfs, uint64_t inodes, char *log, size_t log_len)
{
	_cleanup_close_ int fs = -1;
	struct statvfs sv;
	char num[32];
	int r;

	if (fstatvfs(tmpfs, &sv) < 0)
		return -errno;
	if (sv.f_ffree == inodes)
		return 0;
	fs = sys_fspick(tmpfs, "", SC_FSPICK_CLOEXEC | SC_FSPICK_EMPTY_PATH);
	if (fs < 0)
		return -errno;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)(sv.f_files - sv.f_ffree + inodes));
	r = fs_set(fs, "nr_inodes", num, log, log_len);
	if (r >= 0 && sys_fsconfig(fs, SC_FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0) < 0) {
		r = -errno;
		fs_context_log(fs, log, log_len);
	}
	return r;
}

static int cow_diag(sc_diag *d, size_t index, const char *path, int err, const char *what,
		    const char *log)
{
	char where[64];

	snprintf(where, sizeof(where), "$.fs.grants[%zu]", index);
	return diag_fail(d, err, where, "cow grant %s: %s: %s%s%s", path, what, strerror(-err),
			 log[0] ? " (kernel: " : "", log[0] ? log : "");
}

int ws_cow_open(const plan_grant *g, size_t index, int lower_tree, uid_t agent_uid, gid_t agent_gid,
		ws_cow **ret, int *ret_mount, sc_diag *reterr_diag)
{
	_cleanup_close_ int upper = -1, work = -1;
	char log[512] = "";
	struct stat st;
	ws_cow *c;
	int r, m;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->tmpfs = c->upper = -1;
	c->index = index;
	c->quota = g->quota;
	c->inodes = g->inodes;
	c->path = strdup(g->path);
	c->at = strdup(g->at);
	if (!c->path || !c->at) {
		ws_cow_free(c);
		return -ENOMEM;
	}
	/* Before the agent could see anything: a host change from here on is
	 * a conflict. The coarse clock is what ctime is stamped from (or
	 * behind it), so no later change can carry an earlier time. */
	clock_gettime(CLOCK_REALTIME_COARSE, &c->epoch);
	if (fstat(lower_tree, &st) < 0) {
		r = cow_diag(reterr_diag, index, g->path, -errno, "cannot stat it", log);
		goto fail;
	}
	if (!S_ISDIR(st.st_mode)) {
		r = cow_diag(reterr_diag, index, g->path, -ENOTDIR,
			     "a cow grant must be a directory", log);
		goto fail;
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;

	c->tmpfs = make_tmpfs(g, log, sizeof(log));
	if (c->tmpfs < 0) {
		r = cow_diag(reterr_diag, index, g->path, c->tmpfs,
			     "cannot make the tmpfs of its quota", log);
		goto fail;
	}
	/* The upper root is the overlay's root: the agent's, with the lower
	 * root's mode, as the agent sees the lower root through its idmapped
	 * tree. What the agent creates is the agent's host id here; apply gives
	 * it the folder owner's (apply.c). The work directory is the mounter's. */
	if (mkdirat(c->tmpfs, "upper", 0700) < 0 || mkdirat(c->tmpfs, "work", 0700) < 0 ||
	    fchownat(c->tmpfs, "upper", agent_uid, agent_gid, AT_SYMLINK_NOFOLLOW) < 0 ||
	    fchmodat(c->tmpfs, "upper", st.st_mode & 07777, 0) < 0) {
		r = cow_diag(reterr_diag, index, g->path, -errno, "cannot prepare the upper layer",
			     log);
		goto fail;
	}
	c->upper = openat(c->tmpfs, "upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	upper = openat(c->tmpfs, "upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	work = openat(c->tmpfs, "work", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->upper < 0 || upper < 0 || work < 0) {
		r = cow_diag(reterr_diag, index, g->path, -errno, "cannot open the upper layer",
			     log);
		goto fail;
	}
	m = make_overlay(lower_tree, upper, work, log, sizeof(log));
	if (m < 0) {
		r = cow_diag(reterr_diag, index, g->path, m,
			     "cannot mount the overlay (overlayfs with layers given as file "
			     "descriptors needs Linux 6.15)",
			     log);
		goto fail;
	}
	r = fit_inodes(c->tmpfs, agent_inodes(g), log, sizeof(log));
	if (r < 0) {
		(void)close(m);
		r = cow_diag(reterr_diag, index, g->path, r,
			     "cannot size the inodes of its upper layer", log);
		goto fail;
	}
	*ret = c;
	*ret_mount = m;
	return 0;
fail:
	ws_cow_free(c);
	return r;
}

void ws_cow_meta(const ws_cow *c, const char *sandbox_id, const char *audit_log, ws_meta *ret)
{
	ws_meta m = {0};

	snprintf(m.id, sizeof(m.id), "%.40s.%zu", sandbox_id, c->index);
	snprintf(m.sandbox, sizeof(m.sandbox), "%s", sandbox_id);
	snprintf(m.state, sizeof(m.state), "kept");
	m.grant_path = c->path;
	m.grant_at = c->at;
	m.audit_log = (char *)(audit_log ? audit_log : "");
	m.quota = c->quota;
	m.inodes = c->inodes;
	m.epoch = c->epoch;
	m.grant_dev = c->dev;
	m.grant_ino = c->ino;
	*ret = m;
}

/* Whether the upper layer holds no entry: the agent changed nothing. */
static bool upper_empty(const ws_cow *c)
{
	DIR *d = ws_opendir_at(c->upper, ".");
	struct dirent *e;
	bool empty = true;

	if (!d)
		return false;
	while (empty && (e = readdir(d)))
		empty = ws_is_dot(e->d_name);
	closedir(d);
	return empty;
}

int ws_cow_save(ws_cow *c, const char *state_dir, const char *sandbox_id, const char *audit_log,
		ws_meta *ret_meta, sc_diag *reterr_diag)
{
	_cleanup_close_ int dir = -1, src = -1, dst = -1;
	ws_meta m;
	int r;

	ws_cow_meta(c, sandbox_id, audit_log, &m);
	if (upper_empty(c)) {
		/* Nothing to review or apply: a run that wrote nothing keeps
		 * nothing. */
		if (ret_meta) {
			*ret_meta = m;
			ret_meta->grant_path = ret_meta->grant_at = ret_meta->audit_log = NULL;
		}
		return 1;
	}
	r = ws_store_new(state_dir, m.id, &dir, reterr_diag);
	if (r < 0)
		return r;
	src = openat(c->upper, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src < 0 || mkdirat(dir, "upper", 0700) < 0 ||
	    (dst = openat(dir, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return diag_fail(reterr_diag, -errno, "workspace", "workspace %s: %s", m.id,
				 strerror(errno));
	{
		ws_links links = {0};
		ws_refused ref = {0};

		ws_raise_nofile();
		r = ws_copy_tree(src, dst, dst, "", &links, &ref, &m.files, &m.bytes);
		ws_links_done(&links);
		m.refused = ref.n;
		m.refused_err = ref.err;
		m.refused_first = TAKE_PTR(ref.first);
	}
	if (r >= 0)
		r = ws_meta_store(dir, &m);
	if (r < 0) {
		/* No half workspace: one without meta.json could not be discarded. */
		(void)ws_discard_dir(state_dir, m.id);
		free(m.refused_first);
		return diag_fail(reterr_diag, r, "workspace",
				 "cannot keep the changes of workspace %s in %s: %s", m.id,
				 state_dir, strerror(-r));
	}
	if (ret_meta) {
		*ret_meta = m;
		ret_meta->grant_path = ret_meta->grant_at = ret_meta->audit_log = NULL;
	} else {
		free(m.refused_first);
	}
	return 0;
}
