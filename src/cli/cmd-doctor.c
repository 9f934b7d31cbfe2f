/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "cgroup/cgroup.h"
#include "cli/cli.h"
#include "compat/syscalls.h"
#include "host/host.h"
#include "workspace/workspace.h"

/* In a child: as run would, so without root together with a user namespace. */
static bool can_unshare(int flags)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return false;
	if (pid == 0)
		_exit(unshare(flags | (geteuid() != 0 ? CLONE_NEWUSER : 0)) == 0 ? 0 : 1);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Whether an ordinary user may create a user namespace here: tried for
 * real, as ourselves or, when root, as nobody (65534). */
static bool can_userns_unprivileged(void)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return false;
	if (pid == 0) {
		if (geteuid() == 0 &&
		    (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		     setresuid(65534, 65534, 65534) < 0))
			_exit(1);
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void line(const char *what, bool ok, const char *detail)
{
	printf("  %-22s %-9s %s\n", what, ok ? "yes" : "NO", detail ? detail : "");
}

/* With a policy: whether each rw grant's quota would be enforced (as run
 * probes it, workspace/grants.c), or why not. */
static void doctor_grant_quotas(const sc_plan *plan, bool unpriv)
{
	for (size_t i = 0; plan && i < plan->n_grants; i++) {
		const plan_grant *g = &plan->grants[i];
		struct sc_open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
					  .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
		_cleanup_close_ int fd = -1;
		char why[256], detail[PATH_MAX + 300];
		bool ok = false;

		if (g->mode != GRANT_RW || g->quota == PLAN_UNLIMITED)
			continue;
		fd = sys_openat2(AT_FDCWD, g->path, &how);
		if (fd < 0)
			snprintf(why, sizeof(why), "cannot open it: %s", strerror(errno));
		else if (unpriv)
			snprintf(why, sizeof(why), "setting a project quota needs root");
		else
			ok = ws_quota_probe(fd, why, sizeof(why)) == WS_QUOTA_ENFORCED;
		snprintf(detail, sizeof(detail), "fs.grants[%zu] %.200s: %s%s", i, g->path, why,
			 ok ? ""
			 : g->best_effort
			     ? " (best_effort: runs without it, recorded as not_enforced)"
			     : " (run refuses it)");
		line("rw grant quota", ok, detail);
	}
}

/* Not part of "all": only policies with cow grants or rw quotas need them. */
static void doctor_workspaces(bool unpriv, const sc_plan *plan)
{
	_cleanup_close_ int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char reason[256], cwdname[PATH_MAX] = ".";
	bool ok = !unpriv && access("/sys/module/overlay", F_OK) == 0;

	if (!ok && !unpriv) {
		FILE *f = fopen("/proc/filesystems", "re");
		char l[128];

		while (f && fgets(l, sizeof(l), f))
			ok |= strstr(l, "\toverlay") != NULL;
		if (f)
			fclose(f);
	}
	line("cow grants", ok,
	     unpriv ? "need root (the upper layer must outlive the user namespace)"
	     : ok   ? "overlayfs over each grant, upper layer on a tmpfs of the quota"
		    : "no overlayfs in this kernel");
	if (!getcwd(cwdname, sizeof(cwdname)))
		snprintf(cwdname, sizeof(cwdname), ".");
	ok =
	    cwd >= 0 && ws_quota_probe(cwd, reason, sizeof(reason)) == WS_QUOTA_ENFORCED && !unpriv;
	{
		char detail[PATH_MAX + 300];

		snprintf(detail, sizeof(detail), "here (%.200s): %s%s", cwdname, reason,
			 unpriv ? "; setting one needs root" : "");
		line("rw grant quotas", ok, detail);
	}
	doctor_grant_quotas(plan, unpriv);
}

int cmd_doctor(int argc, char **argv)
{
	static const struct {
		const char *name;
		int flag;
	} nss[] = {
	    {"user namespace", CLONE_NEWUSER},	   {"mount namespace", CLONE_NEWNS},
	    {"pid namespace", CLONE_NEWPID},	   {"network namespace", CLONE_NEWNET},
	    {"ipc namespace", CLONE_NEWIPC},	   {"uts namespace", CLONE_NEWUTS},
	    {"cgroup namespace", CLONE_NEWCGROUP},
	};
	char reason[512] = "", mode[128], userns_why[320];
	const char *policy = NULL, *audit = NULL;
	bool all = true, ok, unpriv, userns_ok;
	sc_plan *plan = NULL;
	cg_version v;
	int abi;

	/* With a policy, also where its audit log would go (cmd-check.c too). */
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--policy") == 0)
			policy = argv[i + 1];
		else if (strcmp(argv[i], "--audit") == 0)
			audit = argv[i + 1];
	}
	if (policy && cli_load_policy(policy, &plan, NULL) < 0)
		return 125;
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		puts("Usage: sandcap doctor [--policy FILE [--audit FILE]]\n\n"
		     "Shows which isolation layers this host can enforce and whether\n"
		     "`sandcap run` can enforce a full policy here, in the mode it would\n"
		     "use: as root, or unprivileged (a user namespace mapping you to the\n"
		     "agent; limits then need a delegated cgroup v2 subtree).\n\n"
		     "Exit status: 0 when every layer is available, 1 when some is not\n"
		     "(policies may then set \"best_effort\": true to run degraded).\n"
		     "\"transparent egress\" (the sandbox resolver and the redirection of clients\n"
		     "that ignore the proxy variables) is no layer and leaves the status\n"
		     "alone: where it is NO, those clients fail and proxy variables work.\n"
		     "With --policy, also warns when the audit log (--audit FILE, else the\n"
		     "default directory) would share a filesystem with a rw grant, and says\n"
		     "whether each rw grant's quota would be enforced.");
		sc_plan_free(plan);
		return 0;
	}
	printf("sandcap doctor: what this host can enforce\n\n");
	printf("  %-22s %-9s %s\n", "layer", "available", "detail");
	unpriv = geteuid() != 0;
	snprintf(mode, sizeof(mode),
		 unpriv ? "unprivileged (uid %u): the agent is you; limits need a delegated cgroup"
			: "root: a host id range per sandbox, idmapped grants",
		 (unsigned)geteuid());
	line("run mode", true, mode);
	/* The probes say why; the attempt says whether. */
	userns_ok = host_why_userns(true, userns_why, sizeof(userns_why)) >= 0;
	if (userns_ok && !can_userns_unprivileged()) {
		userns_ok = false;
		snprintf(userns_why, sizeof(userns_why),
			 "the sysctls allow it, but creating one as an ordinary user was refused");
	}
	line("unprivileged userns", userns_ok, userns_why);
	if (unpriv)
		all &= userns_ok;
	for (size_t i = 0; i < ELEMENTSOF(nss); i++) {
		ok = can_unshare(nss[i].flag);
		reason[0] = '\0';
		if (!ok && nss[i].flag == CLONE_NEWUSER)
			(void)host_why_userns(unpriv, reason, sizeof(reason));
		line(nss[i].name, ok, reason);
		all &= ok;
	}
	ok = host_why_cgroup(unpriv, reason, sizeof(reason)) >= 0;
	if (unpriv)
		line("delegated cgroup", ok, reason);
	else
		line(ok ? (cg_detect(&v, mode, sizeof(mode)) >= 0 && v == CG_V2 ? "cgroup v2"
										: "cgroup v1")
			: "cgroups",
		     ok, reason);
	all &= ok;
	/* The ABI in use, and why there is none. */
	ok = host_why_landlock(&abi, reason, sizeof(reason)) >= 0 && abi > 0;
	line("landlock", ok, reason);
	all &= ok;
	reason[0] = '\0';
	ok = host_why_seccomp(reason, sizeof(reason)) >= 0;
	line("seccomp + user notif", ok, reason);
	all &= ok;
	doctor_workspaces(unpriv, plan);
	/* not a wall: without it, clients that use the proxy variables still work */
	line("transparent egress", host_why_transparent(unpriv, reason, sizeof(reason)) >= 0,
	     reason);
	if (unpriv && !userns_ok)
		fprintf(stderr, "sandcap: error: %s: sandcap run cannot work without root here\n",
			userns_why);
	printf("\n%s\n", all ? "run can enforce a full policy on this host."
			     : "run cannot enforce every layer here: see the NO lines above "
			       "(policies may set \"best_effort\": true to run degraded, recorded "
			       "in the audit log).");
	if (plan)
		(void)cli_warn_audit_place(plan, audit);
	sc_plan_free(plan);
	return all ? 0 : 1;
}
