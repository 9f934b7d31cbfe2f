/* SPDX-License-Identifier: MIT */
/*
 * Unit tests (TAP) for config.json mapped onto a sandcap policy
 * (src/oci/config.c): what each field becomes, what is refused and with
 * which field named, and that the policy it makes is one sandcap takes.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci/config.h"
#include "oci/fields.h"
#include "oci/hugepages.h"
#include "oci/seccomp.h"
#include "policy/plan.h"
#include "tap.h"

/* The spec's default config, changed by a JSON object merged over it
 * member by member at the top level and under process and linux. */
static json_t *config_with(const char *patch)
{
	json_t *c = oci_default_spec(), *p = patch ? json_loads(patch, 0, NULL) : json_object();
	const char *k;
	json_t *v;

	json_object_foreach(p, k, v)
	{
		json_t *cur = json_object_get(c, k);

		if ((strcmp(k, "process") == 0 || strcmp(k, "linux") == 0) && json_is_object(cur))
			(void)json_object_update(cur, v);
		else
			(void)json_object_set(c, k, v);
	}
	json_decref(p);
	return c;
}

static json_t *map(const char *patch, json_t *extra, char *err, size_t len, oci_process *proc)
{
	json_t *c = config_with(patch), *policy = NULL;
	int r = oci_config_policy(c, "/b", "c1", extra, true, &policy, proc, err, len);

	/* proc borrows from c: only err and the policy are looked at. */
	json_decref(c);
	return r < 0 ? NULL : policy;
}

static void refused(const char *patch, const char *want)
{
	char err[512] = "";
	oci_process proc;
	json_t *p = map(patch, NULL, err, sizeof(err), &proc);

	ok(!p && strstr(err, want), "refused, naming the field: %.70s", want);
	if (p || !strstr(err, want))
		tap_diag("  got \"%s\"", err);
	json_decref(p);
}

static const char *at(json_t *o, const char *path)
{
	static char buf[256];
	char copy[256], *save = NULL;

	snprintf(copy, sizeof(copy), "%s", path);
	for (char *t = strtok_r(copy, ".", &save); t && o; t = strtok_r(NULL, ".", &save))
		o = json_is_array(o) ? json_array_get(o, (size_t)atoi(t)) : json_object_get(o, t);
	if (json_is_string(o))
		return json_string_value(o);
	if (json_is_integer(o)) {
		snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(o));
		return buf;
	}
	if (json_is_real(o)) {
		snprintf(buf, sizeof(buf), "%g", json_real_value(o));
		return buf;
	}
	return "";
}

static void mapping(void)
{
	char err[512];
	oci_process proc;
	json_t *c = config_with(
	    "{\"process\": {\"args\": [\"sh\", \"-c\", \"x\"], \"cwd\": \"/work\", \"terminal\": "
	    "false, \"env\": [\"A=1\"], \"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"soft\": "
	    "512, \"hard\": 4096}, {\"type\": \"RLIMIT_FSIZE\", \"soft\": 1048576, \"hard\": "
	    "1048576}]}, \"root\": {\"path\": \"./rootfs/\", \"readonly\": true},"
	    " \"mounts\": [{\"destination\": \"/proc\", \"type\": \"proc\"}, {\"destination\": "
	    "\"/data\", \"type\": \"none\", \"source\": \"/srv/data\", \"options\": [\"rbind\", "
	    "\"ro\"]}, {\"destination\": \"/out\", \"type\": \"bind\", \"source\": \"out\"}],"
	    " \"linux\": {\"resources\": {\"memory\": {\"limit\": 67108864}, \"cpu\": {\"quota\": "
	    "50000, \"period\": 100000, \"shares\": 1024}, \"pids\": {\"limit\": 64}}, "
	    "\"cgroupsPath\": \"/default/c1\"}}");
	json_t *p = NULL, *extra;
	char *text;
	sc_plan *plan = NULL;
	sc_diag d = {0};
	int r = oci_config_policy(c, "/b", "c1", NULL, true, &p, &proc, err, sizeof(err));

	ok(r == 0, "a config within what sandcap does is mapped");
	if (r < 0)
		tap_diag("  %s", err);
	ok(strcmp(at(p, "fs.runtime.rootfs"), "/b/rootfs") == 0,
	   "root.path, relative, is the bundle's: %s", at(p, "fs.runtime.rootfs"));
	ok(strcmp(at(p, "fs.grants.0.path"), "/srv/data") == 0 &&
	       strcmp(at(p, "fs.grants.0.at"), "/data") == 0 &&
	       strcmp(at(p, "fs.grants.0.mode"), "ro") == 0,
	   "an rbind ro mount is a ro grant");
	ok(strcmp(at(p, "fs.grants.1.path"), "/b/out") == 0 &&
	       strcmp(at(p, "fs.grants.1.mode"), "rw") == 0,
	   "a bind without ro is rw, its relative source the bundle's");
	ok(json_array_size(json_object_get(json_object_get(p, "fs"), "grants")) == 2,
	   "proc is sandcap's own: no grant");
	ok(strcmp(at(p, "fs.workdir"), "/work") == 0, "process.cwd is the workdir");
	ok(strcmp(at(p, "limits.memory"), "67108864") == 0, "memory.limit");
	ok(strcmp(at(p, "limits.cpu"), "0.5") == 0, "cpu quota/period: 0.5 cores");
	ok(strcmp(at(p, "limits.pids"), "64") == 0, "pids.limit");
	ok(strcmp(at(p, "limits.nofile"), "512") == 0, "RLIMIT_NOFILE: the soft limit");
	ok(strcmp(at(p, "limits.fsize"), "1048576") == 0, "RLIMIT_FSIZE");
	ok(strcmp(at(p, "identity.hostname"), "sandcap") == 0, "hostname");
	ok(strcmp(at(p, "identity.uid"), "1000") == 0 && strcmp(at(p, "identity.gid"), "1000") == 0,
	   "process.user: the agent's ids");
	ok(json_is_false(
	       json_object_get(json_object_get(json_object_get(p, "fs"), "runtime"), "writable")),
	   "root.readonly true: a read-only root");
	ok(json_array_size(proc.args) == 3 && !proc.terminal && strcmp(proc.cwd, "/work") == 0 &&
	       json_array_size(proc.env) == 1,
	   "the process: args, env, cwd, terminal");
	text = json_dumps(p, JSON_COMPACT | JSON_REAL_PRECISION(10));
	r = plan_parse_json(text, strlen(text), &plan, &d);
	ok(r == 0 && plan && plan->cpu_millis == 500 && plan->pids == 64,
	   "the policy made is one sandcap's parser takes");
	if (r < 0)
		tap_diag("  %s: %s", d.path, d.message);
	sc_plan_free(plan);
	free(text);
	json_decref(p);

	extra = json_loads("{\"version\": 1, \"net\": {\"egress\": [{\"host\": \"example.com\"}]}, "
			   "\"audit\": {\"reads\": true}}",
			   0, NULL);
	r = oci_config_policy(c, "/b", "c1", extra, true, &p, &proc, err, sizeof(err));
	ok(r == 0 && strcmp(at(p, "net.egress.0.host"), "example.com") == 0 &&
	       json_is_true(json_object_get(json_object_get(p, "audit"), "reads")),
	   "org.sandcap.policy adds net and audit");
	json_decref(p);
	json_decref(extra);
	extra = json_loads("{\"fs\": {\"grants\": [{\"path\": \"/\"}]}}", 0, NULL);
	r = oci_config_policy(c, "/b", "c1", extra, true, &p, &proc, err, sizeof(err));
	ok(r == -EINVAL && strstr(err, "org.sandcap.policy\"].fs: not supported"),
	   "org.sandcap.policy cannot widen the view: %s", err);
	json_decref(extra);
	json_decref(c);

	c = config_with("{\"process\": null}");
	json_object_del(c, "process");
	r = oci_config_policy(c, "/b", "c1", NULL, false, &p, &proc, err, sizeof(err));
	ok(r == 0, "no process: fine where none is needed (state, delete)");
	json_decref(p);
	r = oci_config_policy(c, "/b", "c1", NULL, true, &p, &proc, err, sizeof(err));
	ok(r == -EINVAL && strstr(err, "$.process: required"), "no process: refused for create");
	json_decref(c);

	c = config_with(
	    "{\"process\": {\"rlimits\": [{\"type\": \"RLIMIT_NPROC\", \"soft\": 100, "
	    "\"hard\": 200}]}, \"linux\": {\"resources\": {\"pids\": {\"limit\": 500}}, "
	    "\"sysctl\": {\"net.ipv4.ping_group_range\": \"0 0\"}}}");
	r = oci_config_policy(c, "/b", "c1", NULL, true, &p, &proc, err, sizeof(err));
	ok(r == 0 && strcmp(at(p, "limits.pids"), "100") == 0,
	   "RLIMIT_NPROC and pids.limit: the lower bounds the cgroup's tasks (%s)",
	   r == 0 ? at(p, "limits.pids") : err);
	ok(r == 0, "podman's ping_group_range \"0 0\" (no gid of the sandbox's): accepted");
	json_decref(p);
	json_decref(c);
	c = config_with(
	    "{\"process\": {\"rlimits\": [{\"type\": \"RLIMIT_NPROC\", \"soft\": 900, "
	    "\"hard\": 900}]}, \"linux\": {\"resources\": {\"pids\": {\"limit\": 64}}}}");
	r = oci_config_policy(c, "/b", "c1", NULL, true, &p, &proc, err, sizeof(err));
	ok(r == 0 && strcmp(at(p, "limits.pids"), "64") == 0,
	   "a lower pids.limit stays under a larger RLIMIT_NPROC");
	json_decref(p);
	json_decref(c);

	c = config_with("{\"process\": {\"capabilities\": {\"bounding\": [\"CAP_SYS_ADMIN\"]}, "
			"\"noNewPrivileges\": false}}");
	r = oci_config_policy(c, "/b", "c1", NULL, true, &p, &proc, err, sizeof(err));
	ok(r == 0, "capabilities and noNewPrivileges asked: accepted, dropped and set whatever "
		   "they say");
	json_decref(p);
	json_decref(c);
}

static void refusals(void)
{
	refused("{\"linux\": {\"namespaces\": [{\"type\": \"ipc\"}, {\"type\": \"pid\", "
		"\"path\": \"/proc/9/ns/pid\"}]}}",
		"$.linux.namespaces[1].path: joining an existing pid namespace is not supported");
	refused("{\"linux\": {\"namespaces\": [{\"type\": \"mount\", \"path\": \"/m\"}]}}",
		"$.linux.namespaces[0].path: joining an existing mount namespace");
	refused("{\"linux\": {\"namespaces\": [{\"type\": \"user\", \"path\": \"/u\"}]}}",
		"$.linux.namespaces[0].path: joining an existing user namespace");
	refused("{\"linux\": {\"namespaces\": [{\"type\": \"cgroup\", \"path\": \"/c\"}]}}",
		"$.linux.namespaces[0].path: joining an existing cgroup namespace");
	refused("{\"linux\": {\"namespaces\": [{\"type\": \"network\", \"path\": \"netns\"}]}}",
		"$.linux.namespaces[0].path: expected an absolute path");
	refused("{\"linux\": {\"namespaces\": [{\"type\": \"uts\", \"path\": 7}]}}",
		"$.linux.namespaces[0].path: expected an absolute path");
	refused("{\"hostname\": \"app\", \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, "
		"{\"type\": \"uts\", \"path\": \"/proc/9/ns/uts\"}]}}",
		"$.hostname: a container that joins a uts namespace ($.linux.namespaces[1].path)");
	refused("{\"linux\": {\"namespaces\": [{\"type\": \"time\"}]}}",
		"$.linux.namespaces[0].type: time is not a namespace sandcap makes");
	refused(
	    "{\"mounts\": [{\"destination\": \"/mnt\", \"type\": \"nfs\", \"source\": \"h:/x\"}]}",
	    "$.mounts[0].type: a nfs mount at /mnt is not supported");
	refused("{\"mounts\": [{\"destination\": \"/x\", \"type\": \"tmpfs\"}]}",
		"$.mounts[0].type: a tmpfs mount at /x");
	refused("{\"mounts\": [{\"destination\": \"/x\", \"type\": \"bind\", \"source\": \"/y\", "
		"\"options\": [\"bind\", \"noexec\"]}]}",
		"$.mounts[0].options[1]: noexec is not supported on a bind");
	refused("{\"mounts\": [{\"destination\": \"x\", \"type\": \"bind\", \"source\": \"/y\"}]}",
		"$.mounts[0].destination: expected an absolute path");
	refused("{\"process\": {\"user\": {\"uid\": -1, \"gid\": 33}}}",
		"$.process.user.uid: expected an id");
	refused("{\"process\": {\"user\": {\"uid\": 33, \"gid\": 4294967295}}}",
		"$.process.user.gid: expected an id");
	refused(
	    "{\"process\": {\"user\": {\"uid\": 1000, \"gid\": 1000, \"additionalGids\": [5]}}}",
	    "$.process.user.additionalGids");
	refused("{\"process\": {\"args\": []}}", "$.process.args: expected an array");
	refused("{\"process\": {\"cwd\": \"rel\"}}", "$.process.cwd: expected an absolute path");
	refused("{\"process\": {\"env\": [\"NOEQUALS\"]}}", "$.process.env[0]: expected");
	refused("{\"process\": {\"apparmorProfile\": \"x\"}}",
		"$.process.apparmorProfile: not supported");
	refused("{\"process\": {\"rlimits\": [{\"type\": \"RLIMIT_CORE\", \"soft\": 0, \"hard\": "
		"0}]}}",
		"$.process.rlimits[0]: expected");
	refused(
	    "{\"process\": {\"rlimits\": [{\"type\": \"RLIMIT_AS\", \"soft\": 1, \"hard\": 1}]}}",
	    "$.process.rlimits[0].type: RLIMIT_AS is not supported");
	refused(
	    "{\"linux\": {\"uidMappings\": [{\"containerID\": 0, \"hostID\": 0, \"size\": 1}]}}",
	    "$.linux.uidMappings");
	refused("{\"linux\": {\"resources\": {\"memory\": {\"limit\": 67108864, \"swap\": "
		"33554432}}}}",
		"$.linux.resources.memory.swap");
	refused("{\"linux\": {\"resources\": {\"memory\": {\"disableOOMKiller\": true}}}}",
		"$.linux.resources.memory.disableOOMKiller");
	refused("{\"linux\": {\"resources\": {\"blockIO\": {\"weight\": 500}}}}",
		"$.linux.resources.blockIO.weight: only 0 or empty");
	refused("{\"linux\": {\"resources\": {\"blockIO\": {\"throttleReadBpsDevice\": "
		"[{\"major\": 8, \"minor\": 0, \"rate\": 1}]}}}}",
		"$.linux.resources.blockIO.throttleReadBpsDevice");
	refused("{\"linux\": {\"sysctl\": {\"net.ipv4.ip_unprivileged_port_start\": \"x\"}}}",
		"expected a port");
	refused("{\"hooks\": {\"prestart\": [{\"path\": \"/x\", \"args\": "
		"[\"libnetwork-setkey\"]}, {\"path\": \"/y\"}]}}",
		"$.hooks.prestart: hooks are not supported");
	refused("{\"hooks\": {\"poststart\": [{\"path\": \"/proc/1/exe\", \"args\": "
		"[\"libnetwork-setkey\"]}]}}",
		"$.hooks.poststart");
	refused("{\"linux\": {\"resources\": {\"pids\": {\"limit\": 0}}}}",
		"$.linux.resources.pids.limit");
	refused("{\"linux\": {\"maskedPaths\": [\"/proc/kcore\", \"/etc/shadow\"]}}",
		"$.linux.maskedPaths[1]: /etc/shadow is not a path sandcap masks");
	refused("{\"linux\": {\"readonlyPaths\": [\"/home\"]}}",
		"$.linux.readonlyPaths[0]: /home is not a path sandcap makes read-only");
	refused("{\"linux\": {\"sysctl\": {\"net.ipv4.ip_forward\": \"1\"}}}",
		"$.linux.sysctl[\"net.ipv4.ip_forward\"]: not supported");
	refused("{\"hooks\": {\"prestart\": [{\"path\": \"/x\"}]}}", "$.hooks");
	refused("{\"ociVersion\": \"2.0.0\"}", "$.ociVersion");
	refused("{\"root\": {}}", "$.root.path");
	refused("{\"vm\": {}}", "$.vm: not supported");
	/* A property the spec defines, where sandcap does not take it: refused. */
	refused("{\"process\": {\"selinuxLabel\": \"x\"}}",
		"$.process.selinuxLabel: not supported");
	refused("{\"linux\": {\"resources\": {\"memory\": {\"reservation\": 1}}}}",
		"$.linux.resources.memory.reservation: not supported");
	refused("{\"linux\": {\"personality\": {\"domain\": \"LINUX32\"}}}",
		"$.linux.personality: not supported");
}

/* A property the spec does not define is ignored (runtime-spec config.md:
 * "MUST ignore unknown properties"), at every level. */
/* What docker 20.10 puts in every container's spec: values that set
 * nothing, its default sysctls, its network hook (docs/oci.md, "Docker"). */
static void docker_defaults(void)
{
	char err[512];
	oci_process proc;
	json_t *p = NULL,
	       *c = config_with("{\"linux\": {\"resources\": {\"memory\": {\"limit\": 67108864, "
				"\"swap\": 134217728, \"disableOOMKiller\": false}, \"cpu\": "
				"{\"shares\": 0}, \"blockIO\": {\"weight\": 0}}, \"sysctl\": "
				"{\"net.ipv4.ip_unprivileged_port_start\": \"0\", "
				"\"net.ipv4.ping_group_range\": \"0 2147483647\"}}, \"hooks\": "
				"{\"prestart\": [{\"path\": \"/proc/42/exe\", \"args\": "
				"[\"libnetwork-setkey\", \"-exec-root=/run/docker\", \"ID\", "
				"\"abc\"]}]}}");
	int r = oci_config_policy(c, "/b", "c1", NULL, true, &p, &proc, err, sizeof(err));

	ok(r == 0, "docker's defaults are taken: %s", r == 0 ? "" : err);
	ok(r == 0 && strcmp(at(p, "limits.memory"), "67108864") == 0,
	   "--memory 64m (swap twice it): the limit bounds memory and swap together");
	ok(oci_network_hook(c) &&
	       strcmp(json_string_value(json_object_get(oci_network_hook(c), "path")),
		      "/proc/42/exe") == 0,
	   "docker's libnetwork-setkey hook is the network hook");
	json_decref(p);
	json_decref(c);
	c = config_with("{}");
	ok(!oci_network_hook(c), "no hook: no network hook");
	json_decref(c);
}

static void unknown_properties(void)
{
	char err[512] = "";
	oci_process proc;
	json_t *p = map("{\"org.example.future\": 1, \"process\": {\"futureField\": true}, "
			"\"linux\": {\"futureLinux\": {}, \"resources\": {\"pids\": {\"limit\": "
			"64, \"futurePids\": 1}}}}",
			NULL, err, sizeof(err), &proc);

	ok(p != NULL, "properties the spec does not define are ignored");
	if (!p)
		tap_diag("  got \"%s\"", err);
	ok(p && json_integer_value(json_object_get(json_object_get(p, "limits"), "pids")) == 64,
	   "... and what beside them is taken still is");
	json_decref(p);
	ok(oci_spec_name("cgroupsPath") && !oci_spec_name("futureField"),
	   "the spec's names are known, others not");
}

/* Compiles profile (JSON text); NULL on a refusal, with err. */
static int profile(const char *text, oci_filter *f, char *err, size_t len)
{
	json_t *j = json_loads(text, 0, NULL);
	int r = oci_seccomp_compile(j, f, err, len);

	json_decref(j);
	return r;
}

/* In a child under f (and no_new_privs): mkdir's errno (0 when it worked),
 * or -1 when the child did not exit normally. */
static int mkdir_errno_under(const oci_filter *f, const char *dir)
{
	struct sock_fprog prog = {.len = (unsigned short)f->n_insns, .filter = f->insns};
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, f->flags, &prog) < 0)
			_exit(200);
		_exit(mkdir(dir, 0700) < 0 ? errno : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void seccomp_profiles(void)
{
	char err[512] = "", dir[64];
	oci_filter f;
	int r;

	r = oci_seccomp_compile(NULL, &f, err, sizeof(err));
	ok(r == 0 && !f.insns, "no linux.seccomp: no second filter");
	r = profile("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": "
		    "[\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\"], \"flags\": "
		    "[\"SECCOMP_FILTER_FLAG_LOG\"], \"syscalls\": [{\"names\": [\"mkdir\", "
		    "\"mkdirat\", \"no_such_call_here\"], \"action\": \"SCMP_ACT_ERRNO\", "
		    "\"errnoRet\": 122}, {\"names\": [\"getpid\"], \"action\": "
		    "\"SCMP_ACT_ALLOW\"}, {\"names\": [\"personality\"], \"action\": "
		    "\"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"value\": 8, \"op\": "
		    "\"SCMP_CMP_NE\"}, {\"index\": 0, \"value\": 0, \"op\": "
		    "\"SCMP_CMP_GT\"}]}]}",
		    &f, err, sizeof(err));
	ok(r == 0 && f.n_insns > 0 && f.flags == SECCOMP_FILTER_FLAG_LOG,
	   "a profile compiles (an unknown name skipped, a rule as the default dropped, two "
	   "conditions on one argument)");
	if (r < 0)
		tap_diag("  %s", err);
	snprintf(dir, sizeof(dir), "/tmp/test-oci-seccomp.%d", (int)getpid());
	ok(r == 0 && mkdir_errno_under(&f, dir) == 122,
	   "under it mkdir fails with errnoRet (EDQUOT)");
	(void)rmdir(dir);
	oci_filter_done(&f);
	r = profile("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38, "
		    "\"syscalls\": [{\"names\": [\"mkdir\"], \"action\": \"SCMP_ACT_ALLOW\"}]}",
		    &f, err, sizeof(err));
	ok(r == 0 && f.n_insns > 0, "a default-deny profile compiles");
	oci_filter_done(&f);

	static const struct {
		const char *profile, *want;
	} bad[] = {
	    {"{\"defaultAction\": \"SCMP_ACT_NOTIFY\"}",
	     "$.linux.seccomp.defaultAction: SCMP_ACT_NOTIFY is not supported"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"/run/l.sock\"}",
	     "$.linux.seccomp.listenerPath: not supported"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": "
	     "[\"read\"], \"action\": \"SCMP_ACT_ALLOW\"}, {\"names\": [\"mkdir\"], "
	     "\"action\": \"SCMP_ACT_NOTIFY\"}]}",
	     "$.linux.seccomp.syscalls[1].action: SCMP_ACT_NOTIFY is not supported"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": "
	     "[\"mkdir\"], \"action\": \"SCMP_ACT_TRACE\"}]}",
	     "$.linux.seccomp.syscalls[0].action: SCMP_ACT_TRACE is not supported"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"flags\": "
	     "[\"SECCOMP_FILTER_FLAG_SPEC_ALLOW\"]}",
	     "$.linux.seccomp.flags[0]: SECCOMP_FILTER_FLAG_SPEC_ALLOW is not supported"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": "
	     "[\"mkdir\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 6, "
	     "\"value\": 0, \"op\": \"SCMP_CMP_EQ\"}]}]}",
	     "$.linux.seccomp.syscalls[0].args[0].index: expected 0 to 5"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": "
	     "[\"mkdir\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, "
	     "\"value\": 0, \"op\": \"SCMP_CMP_XX\"}]}]}",
	     "$.linux.seccomp.syscalls[0].args[0].op: expected"},
	    {"{\"defaultAction\": \"SCMP_ACT_KILL\", \"syscalls\": [{\"names\": "
	     "[\"mkdir\"], \"action\": \"SCMP_ACT_ALLOW\", \"errnoRet\": 1}]}",
	     "$.linux.seccomp.syscalls[0].errnoRet: only with SCMP_ACT_ERRNO"},
	    {"{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 5000}",
	     "$.linux.seccomp.defaultErrnoRet: expected an errno"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": "
	     "[\"SCMP_ARCH_VAX\"]}",
	     "$.linux.seccomp.architectures[0]: SCMP_ARCH_VAX is unknown"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [], "
	     "\"action\": \"SCMP_ACT_ERRNO\"}]}",
	     "$.linux.seccomp.syscalls[0].names: expected 1 to"},
	    {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": "
	     "[\"mkdir\"], \"action\": \"SCMP_ACT_ERRNO\", \"comment\": \"x\", \"value\": 1}]}",
	     "$.linux.seccomp.syscalls[0].value: not supported"},
	    {"{\"syscalls\": []}", "$.linux.seccomp.defaultAction: expected an action"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		r = profile(bad[i].profile, &f, err, sizeof(err));
		ok(r == -EINVAL && strstr(err, bad[i].want) && !f.insns,
		   "seccomp refused, naming the field: %.60s", bad[i].want);
		if (r != -EINVAL || !strstr(err, bad[i].want))
			tap_diag("  got %d \"%s\"", r, err);
	}
}

/* An exec's process file (sandcap-runc exec --process), as containerd's
 * shim writes it: the container's process with other args. */
static void exec_process(void)
{
	json_t *p = json_loads("{\"args\": [\"sh\", \"-c\", \"id\"], \"env\": [\"A=1\"], \"cwd\": "
			       "\"/work\", \"terminal\": true, \"consoleSize\": {\"height\": 5, "
			       "\"width\": 7}, \"user\": {\"uid\": 0, \"gid\": 0}, \"rlimits\": "
			       "[{\"type\": \"RLIMIT_NOFILE\", \"soft\": 1024, \"hard\": 1024}], "
			       "\"capabilities\": {\"bounding\": [\"CAP_KILL\"]}, "
			       "\"noNewPrivileges\": true}",
			       0, NULL);
	char err[512] = "";
	oci_process proc;
	int r = oci_process_parse(p, &proc, err, sizeof(err));

	ok(r == 0 && json_array_size(proc.args) == 3 && strcmp(proc.cwd, "/work") == 0 &&
	       proc.terminal && proc.rows == 5 && proc.cols == 7,
	   "an exec's process file: args, cwd, terminal and its size");
	if (r < 0)
		tap_diag("  %s", err);
	json_object_set_new(json_object_get(p, "user"), "uid", json_integer(33));
	r = oci_process_parse(p, &proc, err, sizeof(err));
	ok(r == 0 && proc.uid == 33, "an exec's process file: its uid, for the caller to check");
	json_object_set_new(json_object_get(p, "user"), "uid", json_string("33"));
	r = oci_process_parse(p, &proc, err, sizeof(err));
	ok(r == -EINVAL && strstr(err, "$.process.user.uid: expected an id"),
	   "an exec's process file with a uid not a number: refused, the field named");
	json_decref(p);
}

/* An image's own user, root included, and its root writable unless the
 * spec says readonly. */
static void image_user(void)
{
	json_t *c = config_with("{\"process\": {\"user\": {\"uid\": 65532, \"gid\": 65532, "
				"\"additionalGids\": [65532]}}, \"root\": {\"path\": \"rootfs\"}}");
	json_t *p = NULL, *rt;
	oci_process proc;
	char err[512] = "";
	int r = oci_config_policy(c, "/b", "c1", NULL, true, &p, &proc, err, sizeof(err));

	ok(r == 0 && strcmp(at(p, "identity.uid"), "65532") == 0 &&
	       strcmp(at(p, "identity.gid"), "65532") == 0 && proc.uid == 65532,
	   "uid and gid 65532: the agent's ids (%s)", err);
	rt = json_object_get(json_object_get(p, "fs"), "runtime");
	ok(json_is_true(json_object_get(rt, "writable")), "no root.readonly: a writable root");
	json_decref(p);
	json_decref(c);
	c = config_with("{\"process\": {\"user\": {\"uid\": 0, \"gid\": 0}}, "
			"\"root\": {\"path\": \"rootfs\", \"readonly\": false}}");
	r = oci_config_policy(c, "/b", "c1", NULL, true, &p, &proc, err, sizeof(err));
	ok(r == 0 && strcmp(at(p, "identity.uid"), "0") == 0 &&
	       json_is_true(json_object_get(json_object_get(json_object_get(p, "fs"), "runtime"),
					    "writable")),
	   "uid 0 and readonly false: root by name, a writable root (%s)", err);
	json_decref(p);
	json_decref(c);
	refused("{\"root\": {\"path\": \"rootfs\", \"readonly\": 1}}",
		"$.root.readonly: expected true or false");
}

/* A pod's container: the network, ipc and uts paths taken, named with
 * their place for errors; the others new. */
static void pod_joins(void)
{
	json_t *c = config_with(
	    "{\"hostname\": \"\", \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, "
	    "{\"type\": \"network\", \"path\": \"/proc/9/ns/net\"}, {\"type\": \"mount\"}, "
	    "{\"type\": \"ipc\", \"path\": \"/proc/9/ns/ipc\"}, {\"type\": \"uts\", "
	    "\"path\": \"/proc/9/ns/uts\"}]}}");
	json_t *p = NULL;
	oci_process proc;
	oci_joins j;
	char err[512] = "";
	int r = oci_config_policy(c, "/b", "c1", NULL, true, &p, &proc, err, sizeof(err));

	ok(r == 0, "a pod container's network, ipc and uts paths: accepted (%s)", err);
	oci_config_joins(c, &j);
	ok(j.path[OCI_NS_NET] && strcmp(j.path[OCI_NS_NET], "/proc/9/ns/net") == 0 &&
	       j.index[OCI_NS_NET] == 1,
	   "the network path, at [1]");
	ok(j.path[OCI_NS_IPC] && strcmp(j.path[OCI_NS_IPC], "/proc/9/ns/ipc") == 0 &&
	       j.index[OCI_NS_IPC] == 3,
	   "the ipc path, at [3]");
	ok(j.path[OCI_NS_UTS] && strcmp(j.path[OCI_NS_UTS], "/proc/9/ns/uts") == 0 &&
	       j.index[OCI_NS_UTS] == 4,
	   "the uts path, at [4]");
	ok(!json_object_get(json_object_get(p, "identity"), "hostname"),
	   "an empty hostname sets none");
	json_decref(p);
	json_decref(c);
	/* The CRI's pause container: its pod /dev/shm bound noexec. */
	c = config_with("{\"mounts\": [{\"destination\": \"/dev/shm\", \"type\": \"bind\", "
			"\"source\": \"/run/shm-of-pod\", \"options\": [\"rbind\", \"ro\", "
			"\"nosuid\", \"nodev\", \"noexec\"]}]}");
	r = oci_config_policy(c, "/b", "c1", NULL, true, &p, &proc, err, sizeof(err));
	ok(r == 0 && json_array_size(json_object_get(json_object_get(p, "fs"), "grants")) == 0,
	   "a bind at /dev/shm (noexec too): sandcap's own /dev/shm, no grant (%s)", err);
	json_decref(p);
	json_decref(c);
	c = config_with(NULL);
	oci_config_joins(c, &j);
	ok(!j.path[OCI_NS_NET] && !j.path[OCI_NS_IPC] && !j.path[OCI_NS_UTS],
	   "the default spec joins nothing");
	json_decref(c);
}

/* What containerd's CRI puts in every spec: honoured or mapped (docs/oci.md,
 * "Kubernetes"). */
static void cri_process(void)
{
	char err[512] = "";
	oci_process proc;
	json_t *p;

	p = map("{\"process\": {\"oomScoreAdj\": -998}}", NULL, err, sizeof(err), &proc);
	ok(p && proc.has_oom_score_adj && proc.oom_score_adj == 0,
	   "oomScoreAdj -998 (a pause container's): 0, the agent is not favoured (%s)", err);
	json_decref(p);
	p = map("{\"process\": {\"oomScoreAdj\": 1000}}", NULL, err, sizeof(err), &proc);
	ok(p && proc.has_oom_score_adj && proc.oom_score_adj == 1000,
	   "oomScoreAdj 1000 (a best-effort pod's): honoured (%s)", err);
	json_decref(p);
	p = map(NULL, NULL, err, sizeof(err), &proc);
	ok(p && !proc.has_oom_score_adj, "no oomScoreAdj: left as it is");
	json_decref(p);
	refused("{\"process\": {\"oomScoreAdj\": 1001}}",
		"$.process.oomScoreAdj: expected -1000 to 1000");
	refused("{\"process\": {\"oomScoreAdj\": \"0\"}}",
		"$.process.oomScoreAdj: expected -1000 to 1000");
	p = map("{\"process\": {\"user\": {\"uid\": 0, \"gid\": 0, \"additionalGids\": [0]}}}",
		NULL, err, sizeof(err), &proc);
	ok(p != NULL, "additionalGids holding only the primary gid (the CRI's [0]): taken (%s)",
	   err);
	json_decref(p);
	refused("{\"process\": {\"user\": {\"uid\": 0, \"gid\": 0, \"additionalGids\": [0, "
		"1000]}}}",
		"$.process.user.additionalGids[1]: only the primary gid");
	refused("{\"process\": {\"user\": {\"uid\": 0, \"additionalGids\": [0]}}}",
		"$.process.user.additionalGids[0]: only the primary gid");
	refused("{\"process\": {\"user\": {\"uid\": 0, \"gid\": 0, \"additionalGids\": 0}}}",
		"$.process.user.additionalGids: expected an array");
}

/* The kubelet's huge-page limits of 0: taken from the config, and checked
 * against the host's pools (a directory made here as /sys/kernel/mm/hugepages). */
static void hugepages(void)
{
	static const char *const hp =
	    "{\"linux\": {\"resources\": {\"hugepageLimits\": [{\"pageSize\": \"2MB\", "
	    "\"limit\": 0}, {\"pageSize\": \"1GB\", \"limit\": 0}]}}}";
	char dir[] = "/tmp/test-oci-hp.XXXXXX", path[128], err[512] = "";
	oci_process proc;
	json_t *p = map(hp, NULL, err, sizeof(err), &proc), *c = config_with(hp),
	       *none = config_with(NULL);
	FILE *f;

	ok(p != NULL, "hugepageLimits of 0 (the kubelet's for every size): taken (%s)", err);
	json_decref(p);
	refused("{\"linux\": {\"resources\": {\"hugepageLimits\": [{\"pageSize\": \"2MB\", "
		"\"limit\": 2097152}]}}}",
		"$.linux.resources.hugepageLimits[0].limit: only 0 is supported");
	refused("{\"linux\": {\"resources\": {\"hugepageLimits\": [{\"limit\": 0}]}}}",
		"$.linux.resources.hugepageLimits[0].pageSize: expected a string");
	if (!mkdtemp(dir))
		return;
	snprintf(path, sizeof(path), "%s/hugepages-2048kB", dir);
	(void)mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/hugepages-2048kB/nr_hugepages", dir);
	f = fopen(path, "w");
	if (f) {
		fputs("0\n", f);
		fclose(f);
	}
	ok(oci_hugepages_check(c, dir, err, sizeof(err)) == 0,
	   "limits of 0 on a host whose pools are empty: they hold (%s)", err);
	f = fopen(path, "w");
	if (f) {
		fputs("4\n", f);
		fclose(f);
	}
	ok(oci_hugepages_check(c, dir, err, sizeof(err)) == -EINVAL &&
	       strstr(err, "$.linux.resources.hugepageLimits: this host has huge pages") &&
	       strstr(err, "hugepages-2048kB"),
	   "limits of 0 on a host with huge pages: refused, the pool named (%s)", err);
	ok(oci_hugepages_check(none, dir, err, sizeof(err)) == 0,
	   "no huge-page limit: nothing to check");
	ok(oci_hugepages_check(c, "/nonexistent-hugepages", err, sizeof(err)) == 0,
	   "a kernel without huge pages: the limits hold");
	(void)unlink(path);
	snprintf(path, sizeof(path), "%s/hugepages-2048kB", dir);
	(void)rmdir(path);
	(void)rmdir(dir);
	json_decref(c);
	json_decref(none);
}

int main(void)
{
	mapping();
	pod_joins();
	image_user();
	refusals();
	docker_defaults();
	unknown_properties();
	seccomp_profiles();
	exec_process();
	cri_process();
	hugepages();
	{
		json_t *s = oci_default_spec();

		ok(s && strcmp(json_string_value(json_object_get(s, "ociVersion")), OCI_VERSION) ==
			    0,
		   "the default spec");
		json_decref(s);
	}
	return tap_done();
}
