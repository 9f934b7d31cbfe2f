/* SPDX-License-Identifier: MIT */
/* Where a run's audit log would go, and whether the agent could fill that
 * filesystem (docs/audit.md, "When the log cannot be written"). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "cli/cli.h"
#include "core/supervisor.h"

/* The nearest existing directory at or above the log's directory: the
 * state directory may not be made yet. */
static int nearest_dir(const char *audit_path, char *dir, size_t len, struct stat *ret)
{
	char state[PATH_MAX - 16], *slash;
	int r;

	if (audit_path) {
		snprintf(dir, len, "%s", audit_path);
		slash = strrchr(dir, '/');
		if (!slash)
			snprintf(dir, len, ".");
		else
			slash[slash == dir] = '\0';
	} else {
		r = sc_state_dir(geteuid() != 0, state, sizeof(state));
		if (r < 0)
			return r;
		snprintf(dir, len, "%s/audit", state);
	}
	while (stat(dir, ret) < 0) {
		slash = strrchr(dir, '/');
		if (errno != ENOENT || !slash)
			return -errno;
		slash[slash == dir] = '\0';
	}
	return 0;
}

int cli_warn_audit_place(const sc_plan *p, const char *audit_path)
{
	char dir[PATH_MAX];
	struct stat ad, gd;
	int warned = 0;

	(void)fflush(stdout); /* after what the caller printed */
	if (nearest_dir(audit_path, dir, sizeof(dir), &ad) < 0)
		return 0;
	for (size_t i = 0; i < p->n_grants; i++) {
		const plan_grant *g = &p->grants[i];

		if (g->mode != GRANT_RW || stat(g->path, &gd) < 0 || gd.st_dev != ad.st_dev)
			continue;
		cli_error("warning: the audit log's directory (%s) is on the filesystem of rw "
			  "grant %s: an agent that fills it makes its own run stop (the log keeps "
			  "%u bytes in reserve to record why); put the log on another filesystem "
			  "(--audit FILE or SANDCAP_STATE_DIR)",
			  dir, g->path, AU_RESERVE_BYTES);
		warned++;
	}
	return warned;
}
