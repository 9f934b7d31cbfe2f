/* SPDX-License-Identifier: MIT */
/*
 * create and run: the bundle's config.json into a plan (src/oci/config.c),
 * the state directory made, the container supervisor forked, docker's
 * prestart hook run; run then starts the container and, without --detach,
 * waits for its end.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/exit-status.h"
#include "base/io.h"
#include "base/sha256.h"
#include "cli/runc/runc.h"
#include "oci/hugepages.h"
#include "oci/seccomp.h"

/* A bind's source is a host path that runc's mount(2) follows: a link
 * there (docker's /usr/bin/docker-init -> tini-static) is resolved here,
 * by the bundle's author's authority, before the policy's own rule that a
 * grant names no link. One that is missing is left for that rule to name. */
static void resolve_sources(json_t *policy)
{
	json_t *grants = json_object_get(json_object_get(policy, "fs"), "grants"), *g;
	char real[PATH_MAX];
	size_t i;

	json_array_foreach(grants, i, g)
	{
		const char *p = json_string_value(json_object_get(g, "path"));

		if (p && realpath(p, real) && strcmp(p, real) != 0)
			(void)json_object_set_new(g, "path", json_string(real));
	}
}

static int load_config(const char *bundle, const char *id, sc_plan **ret_plan, json_t **ret_config,
		       oci_process *proc, char digest[65])
{
	char path[4200], err[1024];
	_cleanup_free_ char *buf = NULL, *text = NULL;
	size_t len = 0;
	json_error_t jerr;
	json_t *config, *policy = NULL, *extra = NULL;
	const char *annot;
	sc_diag d = {0};
	int r;

	snprintf(path, sizeof(path), "%s/config.json", bundle);
	r = io_read_file_at(AT_FDCWD, path, OCI_MAX_CONFIG, &buf, &len);
	if (r < 0) {
		rc_err("%s: %s", path, strerror(-r));
		return r;
	}
	config = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(config)) {
		rc_err("%s:%d:%d: %s", path, jerr.line, jerr.column,
		       config ? "expected an object" : jerr.text);
		json_decref(config);
		return -EINVAL;
	}
	annot = json_string_value(
	    json_object_get(json_object_get(config, "annotations"), OCI_ANNOTATION_POLICY));
	/* --policy is the runtime's (daemon.json's runtimeArgs, one runtime
	 * per policy); an annotation beside it would be a second source of
	 * truth, so both are refused rather than one quietly winning. */
	if (annot && rc_policy) {
		rc_err("%s: $.annotations[\"%s\"]: not taken beside --policy %s", path,
		       OCI_ANNOTATION_POLICY, rc_policy);
		json_decref(config);
		return -EINVAL;
	}
	if (!annot)
		annot = rc_policy;
	if (annot) {
		/* Inline JSON, or the path of a policy file. */
		extra = annot[0] == '{' ? json_loads(annot, JSON_REJECT_DUPLICATES, &jerr)
					: json_load_file(annot, JSON_REJECT_DUPLICATES, &jerr);
		if (!json_is_object(extra)) {
			rc_err("%s: $.annotations[\"%s\"]: %s", path, OCI_ANNOTATION_POLICY,
			       extra ? "expected a policy object" : jerr.text);
			json_decref(extra);
			json_decref(config);
			return -EINVAL;
		}
	}
	r = oci_config_policy(config, bundle, id, extra, true, &policy, proc, err, sizeof(err));
	json_decref(extra);
	if (r >= 0) {
		r = oci_hugepages_check(config, "/sys/kernel/mm/hugepages", err, sizeof(err));
		if (r < 0)
			json_decref(TAKE_PTR(policy));
	}
	if (r < 0) {
		rc_err("%s: %s", path, r == -EINVAL ? err : strerror(-r));
		json_decref(config);
		return r;
	}
	resolve_sources(policy);
	text = json_dumps(policy, JSON_COMPACT | JSON_REAL_PRECISION(10));
	json_decref(policy);
	if (!text) {
		json_decref(config);
		return -ENOMEM;
	}
	{
		uint8_t md[SHA256_BYTES];

		sha256_parts(text, strlen(text), "", 0, "", 0, md);
		for (unsigned i = 0; i < SHA256_BYTES; i++)
			snprintf(digest + 2 * i, 3, "%02x", md[i]);
	}
	r = sc_plan_parse(text, strlen(text), ret_plan, &d);
	if (r < 0) {
		rc_err("%s: as a sandcap policy: %s%s%s", path, d.path, d.path[0] ? ": " : "",
		       d.message);
		json_decref(config);
		return r;
	}
	{
		/* The spec's own profile, on top of sandcap's (docs/oci.md). */
		oci_filter f;

		r = oci_seccomp_compile(
		    json_object_get(json_object_get(config, "linux"), "seccomp"), &f, err,
		    sizeof(err));
		if (r < 0) {
			rc_err("%s: %s", path, r == -EINVAL ? err : strerror(-r));
			sc_plan_free(TAKE_PTR(*ret_plan));
			json_decref(config);
			return r;
		}
		(*ret_plan)->extra_filter = f.insns;
		(*ret_plan)->n_extra_filter = f.n_insns;
		(*ret_plan)->extra_filter_flags = f.flags;
	}
	*ret_config = config;
	return 0;
}

/* runc's "owner" of a container: the user that made it. */
static const char *owner(void)
{
	struct passwd *pw = getpwuid(geteuid());

	return pw ? pw->pw_name : "";
}

/*
 * Runs docker's libnetwork-setkey hook (oci_network_hook()) as runc runs a
 * prestart hook: the state on its standard input, within its timeout
 * (default 30 s). Its pid is the container supervisor's, in the network
 * namespace that supervisor made: docker configures that one, never the
 * sandbox's, whose agent has lo only (docs/oci.md, "Docker").
 */
static int run_hook(json_t *hook, const char *id, const char *bundle, pid_t pid)
{
	json_t *args = json_object_get(hook, "args"), *env = json_object_get(hook, "env"), *v;
	json_int_t timeout = json_integer_value(json_object_get(hook, "timeout"));
	size_t na = json_array_size(args), ne = json_array_size(env), i;
	_cleanup_free_ char *state = NULL;
	_cleanup_free_ const char **argv = calloc(na + 1, sizeof(char *));
	_cleanup_free_ const char **envp = calloc(ne + 1, sizeof(char *));
	int p[2], status = 0;
	pid_t child;

	json_t *st = json_pack("{s:s, s:s, s:s, s:i, s:s}", "ociVersion", OCI_VERSION, "id", id,
			       "status", "created", "pid", (int)pid, "bundle", bundle);

	state = st ? json_dumps(st, JSON_COMPACT) : NULL;
	json_decref(st);
	if (!state || !argv || !envp)
		return -ENOMEM;
	json_array_foreach(args, i, v) argv[i] = json_string_value(v);
	json_array_foreach(env, i, v) envp[i] = json_string_value(v);
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	child = fork();
	if (child == 0) {
		if (dup2(p[0], STDIN_FILENO) < 0)
			_exit(127);
		execve(json_string_value(json_object_get(hook, "path")), (char **)argv,
		       (char **)envp);
		_exit(127);
	}
	(void)close(p[0]);
	if (child < 0) {
		(void)close(p[1]);
		return -errno;
	}
	(void)io_write_all(p[1], state, strlen(state));
	(void)close(p[1]);
	for (long ms = 0; ms < (timeout > 0 ? timeout : 30) * 1000; ms += 10) {
		pid_t w = waitpid(child, &status, WNOHANG);

		if (w == child)
			return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
		if (w < 0 && errno != EINTR)
			return -errno;
		(void)usleep(10000);
	}
	(void)kill(child, SIGKILL);
	(void)waitpid(child, NULL, 0);
	return -ETIMEDOUT;
}

/*
 * A network namespace to join that is a container's pid 1's (the agent's
 * own, with lo only: CRI joins a pod's containers to /proc/PID/ns/net of
 * its pause container's pid): that container's supervisor's instead, the
 * pod's, where its proxy's upstream side is (docs/oci.md, "Kubernetes").
 */
static void pod_net(int fds[OCI_NS_MAX])
{
	struct dirent **names = NULL;
	struct stat want, st;
	int n;

	if (fds[OCI_NS_NET] < 0 || fstat(fds[OCI_NS_NET], &want) < 0)
		return;
	n = scandir(rc_root, &names, NULL, NULL);
	for (int k = 0; k < n; k++) {
		char dir[4096], path[64];
		unsigned long long start;
		pid_t init, sup;
		int fd;

		if (!sc_session_name_valid(names[k]->d_name) ||
		    (size_t)snprintf(dir, sizeof(dir), "%s/%s", rc_root, names[k]->d_name) >=
			sizeof(dir))
			continue;
		rc_read_pids(dir, &init, &start, &sup);
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)init);
		if (init <= 0 || sup <= 0 || stat(path, &st) < 0 || st.st_dev != want.st_dev ||
		    st.st_ino != want.st_ino || rc_proc_start(init) != start)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)sup);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			(void)close(fds[OCI_NS_NET]);
			fds[OCI_NS_NET] = fd;
		}
		break;
	}
	for (int k = 0; k < n; k++)
		free(names[k]);
	free(names);
}

/* create, and run without --detach waiting for the end (detach false). */
int rc_do_create(const char *id, const char *bundle_arg, const char *pid_file, const char *console,
		 bool run, bool detach)
{
	_cleanup_(sc_plan_freep) sc_plan *plan = NULL;
	char bundle[4096], dir[4096], path[4200], digest[65], reply[2048];
	oci_process proc;
	json_t *config = NULL, *state, *annotations;
	_cleanup_close_ int lock = -1;
	int ready[2], r;
	ssize_t n;
	pid_t pid;
	csup c = {.listen_fd = -1,
		  .in_fd = STDIN_FILENO,
		  .sig_fd = -1,
		  .ns_fds = {[0 ... OCI_NS_MAX - 1] = -1}};
	oci_joins joins;
	json_t *hook;
	pid_t sup, init;

	if (!realpath(bundle_arg, bundle)) {
		rc_err("--bundle %s: %s", bundle_arg, strerror(errno));
		return SC_EXIT_SETUP;
	}
	if (rc_cdir(id, dir, sizeof(dir)) < 0)
		return SC_EXIT_SETUP;
	if (load_config(bundle, id, &plan, &config, &proc, digest) < 0)
		return SC_EXIT_SETUP;
	/* A pod's network, ipc and uts namespaces; as root the container's
	 * supervisor makes the ipc and uts ones that are not joined, so that
	 * the pod's containers can join them (docs/oci.md, "Kubernetes"). */
	{
		json_t *cp = json_object_get(json_object_get(config, "linux"), "cgroupsPath");

		if (cp &&
		    (!json_is_string(cp) || (json_string_length(cp) &&
					     oci_cgroup_path_valid(json_string_value(cp)) < 0))) {
			rc_err("%s/config.json: $.linux.cgroupsPath: expected a cgroup path of at "
			       "most %d bytes without . or .. (systemd's slice:prefix:name is not "
			       "supported)",
			       bundle, OCI_CGROUP_PATH_MAX);
			json_decref(config);
			return SC_EXIT_SETUP;
		}
		snprintf(c.cgroup, sizeof(c.cgroup), "%s", cp ? json_string_value(cp) : "");
	}
	oci_config_joins(config, &joins);
	c.new_net = oci_network_hook(config) && !joins.path[OCI_NS_NET];
	/* new_net: made where the ipc and uts ones are (root only), never
	 * the host's handed to docker. */
	plan->shared_ipc_uts = geteuid() == 0 || c.new_net || joins.path[OCI_NS_NET] ||
			       joins.path[OCI_NS_IPC] || joins.path[OCI_NS_UTS];
	{
		char err[1024];

		r = oci_joins_open(&joins, c.ns_fds, err, sizeof(err));
		if (r < 0) {
			rc_err("%s/config.json: %s", bundle, err);
			json_decref(config);
			return SC_EXIT_SETUP;
		}
		pod_net(c.ns_fds);
		plan->own_netns = c.new_net || oci_joins_own_net(c.ns_fds);
	}
	if (proc.terminal && !console && !run) {
		rc_err("process.terminal is true: create needs --console-socket");
		json_decref(config);
		oci_joins_close(c.ns_fds);
		return SC_EXIT_SETUP;
	}
	if (rc_make_root() < 0) {
		rc_err("--root %s: %s", rc_root, strerror(errno));
		json_decref(config);
		oci_joins_close(c.ns_fds);
		return SC_EXIT_SETUP;
	}
	if (mkdir(dir, 0700) < 0) {
		bool exists = errno == EEXIST;

		rc_err(exists ? "container %s exists already" : "%s: %s", id, strerror(errno));
		json_decref(config);
		oci_joins_close(c.ns_fds);
		return exists ? 1 : SC_EXIT_SETUP; /* runc's code for a taken id */
	}
	snprintf(c.dir, sizeof(c.dir), "%s", dir);
	snprintf(c.id, sizeof(c.id), "%s", id);
	annotations = json_object_get(config, "annotations");
	{
		struct timespec ts;
		char date[32];

		(void)clock_gettime(CLOCK_REALTIME, &ts);
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", gmtime(&ts.tv_sec));
		snprintf(path, sizeof(path), "%s.%09ldZ", date, ts.tv_nsec);
	}
	state = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "ociVersion", OCI_VERSION, "id", id,
			  "bundle", bundle, "created", path, "owner", owner(), "annotations",
			  annotations ? json_deep_copy(annotations) : json_object());
	snprintf(path, sizeof(path), "%s/state.json", dir);
	r = state && json_dump_file(state, path, JSON_COMPACT) == 0 ? 0 : -EIO;
	json_decref(state);
	snprintf(path, sizeof(path), "%s/lock", dir);
	lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (r < 0 || lock < 0 || flock(lock, LOCK_EX) < 0 || rc_listen_ctl(dir, &c.listen_fd) < 0 ||
	    pipe2(ready, O_CLOEXEC) < 0) {
		rc_err("%s: cannot create the container's state: %s", dir, strerror(errno));
		rc_remove_dir(dir);
		json_decref(config);
		oci_joins_close(c.ns_fds);
		return SC_EXIT_SETUP;
	}
	if (proc.terminal) /* the pty is the process's stdio, not ours */
		c.in_fd = -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		(void)close(ready[0]);
		/* Not a child of create (containerd's shim, a subreaper, adopts
		 * it); run waits for its own. */
		if (run && !detach)
			rc_become_supervisor(&c, plan, &proc, console, digest, ready[1]);
		if (fork() == 0)
			rc_become_supervisor(&c, plan, &proc, console, digest, ready[1]);
		_exit(0);
	}
	(void)close(ready[1]);
	c.listen_fd = safe_close(c.listen_fd);
	oci_joins_close(c.ns_fds);
	if (pid < 0 || !(run && !detach))
		while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	n = read(ready[0], reply, sizeof(reply) - 1);
	(void)close(ready[0]);
	reply[n > 0 ? n : 0] = '\0';
	hook = c.new_net ? json_incref(oci_network_hook(config)) : NULL;
	json_decref(config);
	if (strcmp(reply, "ok") != 0) {
		rc_err("cannot create container %s: %s", id,
		       reply[0] ? reply : "its supervisor ended");
		rc_remove_dir(dir);
		json_decref(hook);
		return SC_EXIT_SETUP;
	}
	{
		unsigned long long start;

		rc_read_pids(dir, &init, &start, &sup);
	}
	/* As runc does, before create returns: the process has not started.
	 * Its pid is the supervisor's, whose network namespace docker sets up. */
	r = hook ? run_hook(hook, id, bundle, sup) : 0;
	json_decref(hook);
	if (r < 0) {
		rc_err("container %s: the prestart hook (libnetwork-setkey): %s", id,
		       r == -ETIMEDOUT ? "timed out" : "failed");
		(void)rc_do_delete(id, true);
		return SC_EXIT_SETUP;
	}
	if (pid_file) {
		r = rc_write_pid_file(pid_file, init);
		if (r < 0) {
			rc_err("--pid-file %s: %s", pid_file, strerror(-r));
			return SC_EXIT_SETUP;
		}
	}
	if (!run)
		return 0;
	{
		int status;

		r = rc_start(id);
		if (r != 0 || detach)
			return r;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		rc_remove_dir(dir);
		return WIFEXITED(status) ? WEXITSTATUS(status) : SC_EXIT_SETUP;
	}
}
