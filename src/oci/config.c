/* SPDX-License-Identifier: MIT */
/* config.json onto a sandcap policy (oci/config.h). */
#include "oci/config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "oci/fields.h"
#include "ns/ns.h"

#define AGENT_ID 1000 /* the spec's uid and gid: the agent's default (docs/policy.md) */

/* An optional member that is refused unless empty (null, "", [], {}, 0, false). */
static bool empty(json_t *v)
{
	return !v || json_is_null(v) || json_is_false(v) ||
	       (json_is_string(v) && json_string_length(v) == 0) ||
	       (json_is_array(v) && json_array_size(v) == 0) ||
	       (json_is_object(v) && json_object_size(v) == 0) ||
	       (json_is_integer(v) && json_integer_value(v) == 0);
}

static const char *str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v)
		   ? json_string_value(v)
		   : NULL;
}

static int path_in_bundle(const char *bundle, const char *p, char *buf, size_t len)
{
	int n = p[0] == '/' ? snprintf(buf, len, "%s", p) : snprintf(buf, len, "%s/%s", bundle, p);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	/* "rootfs/" and "./rootfs": the policy wants the path in normal form. */
	for (size_t l = strlen(buf); l > 1 && buf[l - 1] == '/'; l--)
		buf[l - 1] = '\0';
	for (char *d; (d = strstr(buf, "/./"));)
		memmove(d, d + 2, strlen(d + 2) + 1);
	return 0;
}

/* ---- process ---- */

/* limits.pids, lowered to n: both an rlimit and linux.resources bound it. */
static int lower_pids(json_t *limits, json_int_t n)
{
	json_t *cur = json_object_get(limits, "pids");

	if (cur && json_integer_value(cur) <= n)
		return 0;
	return json_object_set_new(limits, "pids", json_integer(n)) < 0 ? -ENOMEM : 0;
}

static int map_rlimits(json_t *rl, json_t *limits, char *err, size_t len)
{
	static const char *const keys[] = {"type", "soft", "hard", NULL};
	size_t i;
	json_t *v;

	if (!json_is_array(rl))
		return oci_refuse(err, len, "$.process.rlimits: expected an array");
	json_array_foreach(rl, i, v)
	{
		const char *type = str(v, "type");
		json_t *soft = json_object_get(v, "soft"), *hard = json_object_get(v, "hard");
		char where[64];
		int r;

		snprintf(where, sizeof(where), "$.process.rlimits[%zu]", i);
		r = oci_only_keys(v, where, keys, err, len);
		if (r < 0)
			return r;
		if (!type || !json_is_integer(soft) || !json_is_integer(hard) ||
		    json_integer_value(soft) < 1 ||
		    json_integer_value(hard) < json_integer_value(soft))
			return oci_refuse(
			    err, len,
			    "%s: expected {\"type\", \"soft\", \"hard\"} with 1 <= soft <= hard",
			    where);
		/* sandcap sets one value as both limits: the soft one, the smaller. */
		if (strcmp(type, "RLIMIT_NOFILE") == 0)
			r = json_object_set_new(limits, "nofile",
						json_integer(json_integer_value(soft)));
		else if (strcmp(type, "RLIMIT_FSIZE") == 0)
			r = json_object_set_new(limits, "fsize",
						json_integer(json_integer_value(soft)));
		/* Every process inside is the agent's: the cgroup's task count
		 * (threads too, as RLIMIT_NPROC counts them) bounds them all.
		 * Above the kernel's largest pid_max it bounds nothing. */
		else if (strcmp(type, "RLIMIT_NPROC") == 0)
			r = json_integer_value(soft) > 4194304
				? 0
				: lower_pids(limits, json_integer_value(soft));
		else
			return oci_refuse(
			    err, len,
			    "%s.type: %.32s is not supported (RLIMIT_NOFILE, RLIMIT_FSIZE and "
			    "RLIMIT_NPROC are)",
			    where, type);
		if (r < 0)
			return -ENOMEM;
	}
	return 0;
}

/* An id of process.user: 0 to 2^32 - 2 ((uid_t)-1 is no id). */
static bool user_id(json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 0 &&
	       json_integer_value(v) <= 4294967294;
}

static int map_user(json_t *u, oci_process *proc, char *err, size_t len)
{
	static const char *const keys[] = {"uid",   "gid",	"additionalGids",
					   "umask", "username", NULL};
	json_t *uid = json_object_get(u, "uid"), *gid = json_object_get(u, "gid"), *v, *g;
	int r = oci_only_keys(u, "$.process.user", keys, err, len);
	size_t i;

	if (r < 0)
		return r;
	/* Whatever the ids, the process is the sandbox's one unprivileged host
	 * id with no capability; 0 too, root only by name (docs/oci.md). A
	 * missing gid is 0, as runc has it. */
	if (!user_id(uid))
		return oci_refuse(err, len, "$.process.user.uid: expected an id, 0 to 4294967294");
	if (gid && !user_id(gid))
		return oci_refuse(err, len, "$.process.user.gid: expected an id, 0 to 4294967294");
	proc->uid = (uint32_t)json_integer_value(uid);
	proc->gid = gid ? (uint32_t)json_integer_value(gid) : 0;
	/* containerd's CRI lists the primary group there too: that one is
	 * the agent's gid already; another group is refused. */
	v = json_object_get(u, "additionalGids");
	if (v && !json_is_array(v))
		return oci_refuse(err, len, "$.process.user.additionalGids: expected an array");
	json_array_foreach(
	    v, i,
	    g) if (!json_is_integer(g) || !gid ||
		   json_integer_value(g) !=
		       json_integer_value(gid)) return oci_refuse(err, len,
								  "$.process.user.additionalGids[%"
								  "zu]: only the primary gid "
								  "(process.user.gid) is supported",
								  i);
	if (json_object_get(u, "umask") && (!json_is_integer(json_object_get(u, "umask")) ||
					    json_integer_value(json_object_get(u, "umask")) != 022))
		return oci_refuse(err, len, "$.process.user.umask: only 18 (0022) is supported");
	return 0;
}

static int map_process(json_t *p, json_t *policy, json_t *limits, oci_process *proc, char *err,
		       size_t len)
{
	static const char *const keys[] = {
	    "terminal", "consoleSize",	   "user",	  "args", "env", "cwd", "capabilities",
	    "rlimits",	"noNewPrivileges", "oomScoreAdj", NULL};
	json_t *args = json_object_get(p, "args"), *env = json_object_get(p, "env"), *v, *cs;
	const char *cwd = str(p, "cwd");
	size_t i;
	int r = oci_only_keys(p, "$.process", keys, err, len);

	if (r < 0)
		return r;
	if (!json_is_array(args) || json_array_size(args) == 0)
		return oci_refuse(err, len,
				  "$.process.args: expected an array of at least one string");
	json_array_foreach(args, i, v) if (
	    !json_is_string(v) ||
	    strlen(json_string_value(v)) !=
		json_string_length(
		    v)) return oci_refuse(err, len,
					  "$.process.args[%zu]: expected a string without NUL", i);
	if (env && (!json_is_array(env) || json_array_size(env) > 256))
		return oci_refuse(err, len,
				  "$.process.env: expected an array of at most 256 strings");
	json_array_foreach(env, i, v)
	{
		const char *s = json_string_value(v), *eq = s ? strchr(s, '=') : NULL;

		if (!s || strlen(s) != json_string_length(v) || !eq || eq == s)
			return oci_refuse(err, len, "$.process.env[%zu]: expected \"KEY=VALUE\"",
					  i);
		for (const char *c = s; c < eq; c++)
			if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
			      (c > s && *c >= '0' && *c <= '9')))
				return oci_refuse(
				    err, len,
				    "$.process.env[%zu]: a name is [A-Za-z_][A-Za-z0-9_]*", i);
	}
	if (!cwd || cwd[0] != '/')
		return oci_refuse(err, len, "$.process.cwd: expected an absolute path");
	if (json_object_get(p, "terminal") && !json_is_boolean(json_object_get(p, "terminal")))
		return oci_refuse(err, len, "$.process.terminal: expected true or false");
	r = map_user(json_object_get(p, "user"), proc, err, len);
	if (r < 0)
		return r;
	v = json_object_get(policy, "identity");
	if (!v && json_object_set_new(policy, "identity", v = json_object()) < 0)
		return -ENOMEM;
	if (json_object_set_new(v, "uid", json_integer(proc->uid)) < 0 ||
	    json_object_set_new(v, "gid", json_integer(proc->gid)) < 0)
		return -ENOMEM;
	if (json_object_get(p, "rlimits")) {
		r = map_rlimits(json_object_get(p, "rlimits"), limits, err, len);
		if (r < 0)
			return r;
	}
	/* capabilities and noNewPrivileges: whatever they ask, the process
	 * has no capability and no_new_privs (docs/oci.md). */
	*proc = (oci_process){.args = args,
			      .env = env,
			      .cwd = cwd,
			      .terminal = json_is_true(json_object_get(p, "terminal")),
			      .uid = proc->uid,
			      .gid = proc->gid};
	v = json_object_get(p, "oomScoreAdj");
	if (v) {
		if (!json_is_integer(v) || json_integer_value(v) < -1000 ||
		    json_integer_value(v) > 1000)
			return oci_refuse(err, len,
					  "$.process.oomScoreAdj: expected -1000 to 1000");
		/* The agent is never the OOM killer's last choice: what the
		 * kubelet would lower (a pause container's -998, a guaranteed
		 * pod's -997) stays 0, the default (docs/oci.md). */
		proc->has_oom_score_adj = true;
		proc->oom_score_adj = json_integer_value(v) > 0 ? (int)json_integer_value(v) : 0;
	}
	cs = json_object_get(p, "consoleSize");
	if (cs) {
		json_t *h = json_object_get(cs, "height"), *w = json_object_get(cs, "width");

		if (!json_is_integer(h) || !json_is_integer(w) || json_integer_value(h) < 0 ||
		    json_integer_value(h) > 65535 || json_integer_value(w) < 0 ||
		    json_integer_value(w) > 65535)
			return oci_refuse(
			    err, len,
			    "$.process.consoleSize: expected {\"height\", \"width\"} of 0-65535");
		proc->rows = (unsigned)json_integer_value(h);
		proc->cols = (unsigned)json_integer_value(w);
	}
	if (strcmp(cwd, "/") != 0 &&
	    json_object_set_new(json_object_get(policy, "fs"), "workdir", json_string(cwd)) < 0)
		return -ENOMEM;
	return 0;
}

int oci_process_parse(json_t *p, oci_process *ret_proc, char *err, size_t err_len)
{
	/* Checked as config.json's is; what it would set in a policy is the
	 * container's already (its rlimits, its directory as the workdir). */
	json_t *policy = json_pack("{s:{}}", "fs"), *limits = json_object();
	int r = policy && limits ? map_process(p, policy, limits, ret_proc, err, err_len) : -ENOMEM;

	json_decref(policy);
	json_decref(limits);
	return r;
}

/* ---- mounts ---- */

/* The mounts every container gets, which sandcap makes itself: its own
 * /proc (masked, partly read-only), /dev (a few nodes, its devpts, shm),
 * /tmp, /run (a tmpfs where the image has the directory) and no /sys. */
static bool standard_mount(const char *dest, const char *type)
{
	static const struct {
		const char *dest, *type;
	} std[] = {
	    {"/proc", "proc"},
	    {"/dev", "tmpfs"},
	    {"/dev/pts", "devpts"},
	    {"/dev/shm", "tmpfs"},
	    {"/dev/mqueue", "mqueue"},
	    {"/sys", "sysfs"},
	    {"/sys/fs/cgroup", "cgroup"},
	    {"/sys/fs/cgroup", "cgroup2"},
	    {"/tmp", "tmpfs"},
	    {"/run", "tmpfs"},
	};

	for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++)
		if (strcmp(dest, std[i].dest) == 0 && strcmp(type, std[i].type) == 0)
			return true;
	return false;
}

static int map_bind(json_t *m, size_t i, const char *bundle, const char *dest, json_t *grants,
		    char *err, size_t len)
{
	static const char *const accepted[] = {"bind",	 "rbind", "ro",	       "rw",
					       "nosuid", "nodev", "rprivate",  "private",
					       "rslave", "slave", "recursive", NULL};
	json_t *opts = json_object_get(m, "options"), *v, *g;
	const char *source = str(m, "source");
	char path[4096];
	bool ro = false;
	size_t j;

	if (!source || !source[0])
		return oci_refuse(err, len, "$.mounts[%zu].source: a bind mount needs a source", i);
	json_array_foreach(opts, j, v)
	{
		const char *o = json_string_value(v);
		bool ok = false;

		for (size_t k = 0; o && accepted[k]; k++)
			ok = ok || strcmp(o, accepted[k]) == 0;
		if (!ok)
			return oci_refuse(
			    err, len,
			    "$.mounts[%zu].options[%zu]: %.64s is not supported on a bind "
			    "(ro, rw, nosuid, nodev and the propagation ones are; every "
			    "bind is nosuid and nodev)",
			    i, j, o ? o : "a non-string");
		if (strcmp(o, "ro") == 0)
			ro = true;
		else if (strcmp(o, "rw") == 0)
			ro = false;
	}
	if (path_in_bundle(bundle, source, path, sizeof(path)) < 0)
		return oci_refuse(err, len, "$.mounts[%zu].source: too long", i);
	g = json_pack("{s:s, s:s, s:s}", "path", path, "at", dest, "mode", ro ? "ro" : "rw");
	return g && json_array_append_new(grants, g) == 0 ? 0 : -ENOMEM;
}

static int map_mounts(json_t *mounts, const char *bundle, json_t *grants, char *err, size_t len)
{
	static const char *const keys[] = {"destination", "type", "source", "options", NULL};
	size_t i, j;
	json_t *m, *v;

	if (!json_is_array(mounts))
		return oci_refuse(err, len, "$.mounts: expected an array");
	json_array_foreach(mounts, i, m)
	{
		const char *dest = str(m, "destination"), *type = str(m, "type");
		json_t *opts = json_object_get(m, "options");
		bool bind = type && strcmp(type, "bind") == 0;
		char where[64];
		int r;

		snprintf(where, sizeof(where), "$.mounts[%zu]", i);
		r = oci_only_keys(m, where, keys, err, len);
		if (r < 0)
			return r;
		if (!dest || dest[0] != '/')
			return oci_refuse(err, len, "%s.destination: expected an absolute path",
					  where);
		if (opts && !json_is_array(opts))
			return oci_refuse(err, len, "%s.options: expected an array of strings",
					  where);
		json_array_foreach(opts, j, v)
		{
			const char *o = json_string_value(v);

			bind = bind || (o && (strcmp(o, "bind") == 0 || strcmp(o, "rbind") == 0));
		}
		/* The CRI's pod /dev/shm (podman's too) is a host tmpfs bound in,
		 * noexec in the pause container: each sandbox has its own instead
		 * (nosuid, nodev, noexec, docs/oci.md). */
		if (bind && strcmp(dest, "/dev/shm") == 0)
			continue;
		if (bind)
			r = map_bind(m, i, bundle, dest, grants, err, len);
		else if (!type)
			r = oci_refuse(err, len, "%s.type: expected a string", where);
		else if (!standard_mount(dest, type))
			r = oci_refuse(
			    err, len,
			    "%s.type: a %.32s mount at %.256s is not supported (bind mounts "
			    "are, and the standard proc, tmpfs, devpts, mqueue, sysfs and "
			    "cgroup ones, which sandcap makes itself)",
			    where, type, dest);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- linux ---- */

/* The namespaces a container may join (oci_joins): the pod's network, and
 * the ipc and uts its containers share (docs/oci.md, "Kubernetes"). */
static const char *const joinable[OCI_NS_MAX] = {"network", "ipc", "uts"};

static int joinable_type(const char *type)
{
	for (int k = 0; type && k < OCI_NS_MAX; k++)
		if (strcmp(type, joinable[k]) == 0)
			return k;
	return -1;
}

static int map_namespaces(json_t *nss, char *err, size_t len)
{
	static const char *const types[] = {"pid",   "network", "ipc",	  "uts",
					    "mount", "user",	"cgroup", NULL};
	static const char *const keys[] = {"type", "path", NULL};
	size_t i;
	json_t *n;

	if (!json_is_array(nss))
		return oci_refuse(err, len, "$.linux.namespaces: expected an array");
	/* sandcap makes each of these of its own, whether listed or not. */
	json_array_foreach(nss, i, n)
	{
		const char *type = str(n, "type"), *path;
		char where[64];
		bool ok = false;
		int r;

		snprintf(where, sizeof(where), "$.linux.namespaces[%zu]", i);
		r = oci_only_keys(n, where, keys, err, len);
		if (r < 0)
			return r;
		for (size_t k = 0; type && types[k]; k++)
			ok = ok || strcmp(type, types[k]) == 0;
		if (!ok)
			return oci_refuse(
			    err, len,
			    "%s.type: %.32s is not a namespace sandcap makes (pid, network, "
			    "ipc, uts, mount, user, cgroup)",
			    where, type ? type : "(none)");
		if (!json_object_get(n, "path"))
			continue;
		/* The agent keeps its own pid, mount, user and cgroup namespaces:
		 * joining one would put it beside processes it must not see. */
		if (joinable_type(type) < 0)
			return oci_refuse(err, len,
					  "%s.path: joining an existing %s namespace is not "
					  "supported (network, ipc and uts may be joined)",
					  where, type);
		path = str(n, "path");
		if (!path || path[0] != '/')
			return oci_refuse(err, len, "%s.path: expected an absolute path", where);
	}
	return 0;
}

void oci_config_joins(json_t *config, oci_joins *ret)
{
	json_t *nss = json_object_get(json_object_get(config, "linux"), "namespaces"), *n;
	size_t i;

	memset(ret, 0, sizeof(*ret));
	json_array_foreach(nss, i, n)
	{
		int k = joinable_type(str(n, "type"));

		if (k >= 0 && str(n, "path")) {
			ret->path[k] = str(n, "path");
			ret->index[k] = i;
		}
	}
}

/* The kubelet lists every huge-page size of the node, limit 0 unless the
 * pod asks for some: sandcap sets no hugetlb limit, so only 0 is taken, and
 * sandcap-runc refuses it on a host whose pools are not empty (oci/config.h). */
static int map_hugepages(json_t *a, char *err, size_t len)
{
	static const char *const keys[] = {"pageSize", "limit", NULL};
	json_t *h;
	size_t i;

	if (a && !json_is_array(a))
		return oci_refuse(err, len, "$.linux.resources.hugepageLimits: expected an array");
	json_array_foreach(a, i, h)
	{
		char where[64];
		json_t *lim = json_object_get(h, "limit");
		int r;

		snprintf(where, sizeof(where), "$.linux.resources.hugepageLimits[%zu]", i);
		r = oci_only_keys(h, where, keys, err, len);
		if (r < 0)
			return r;
		if (!str(h, "pageSize"))
			return oci_refuse(err, len, "%s.pageSize: expected a string", where);
		if (!json_is_integer(lim) || json_integer_value(lim) != 0)
			return oci_refuse(err, len,
					  "%s.limit: only 0 is supported (sandcap sets no "
					  "huge-page limit)",
					  where);
	}
	return 0;
}

/* docker sends blockIO with weight 0 ("not set") for every container:
 * sandcap sets no I/O weight, so only values that set nothing are taken. */
static int map_blockio(json_t *b, char *err, size_t len)
{
	static const char *const keys[] = {"weight",
					   "leafWeight",
					   "weightDevice",
					   "throttleReadBpsDevice",
					   "throttleWriteBpsDevice",
					   "throttleReadIOPSDevice",
					   "throttleWriteIOPSDevice",
					   NULL};
	const char *k;
	json_t *v;
	int r;

	if (!b)
		return 0;
	if (!json_is_object(b))
		return oci_refuse(err, len, "$.linux.resources.blockIO: expected an object");
	r = oci_only_keys(b, "$.linux.resources.blockIO", keys, err, len);
	if (r < 0)
		return r;
	json_object_foreach(b, k, v) if (!empty(v) && oci_spec_name(k)) return oci_refuse(
	    err, len,
	    "$.linux.resources.blockIO.%s: only 0 or empty is supported (sandcap sets no I/O "
	    "weight or throttle)",
	    k);
	return 0;
}

static int map_resources(json_t *res, json_t *limits, char *err, size_t len)
{
	static const char *const keys[] = {"memory",	     "cpu",	"pids", "devices",
					   "hugepageLimits", "blockIO", NULL};
	static const char *const mem_keys[] = {"limit", "swap", "disableOOMKiller", NULL};
	static const char *const cpu_keys[] = {"quota", "period", "shares", NULL};
	static const char *const pids_keys[] = {"limit", NULL};
	json_t *mem = json_object_get(res, "memory"), *cpu = json_object_get(res, "cpu"),
	       *pids = json_object_get(res, "pids"), *v;
	int r = oci_only_keys(res, "$.linux.resources", keys, err, len);

	if (r < 0)
		return r;
	/* devices: the device cgroup's rules; sandcap's /dev holds only
	 * null, zero, full, random, urandom, tty and its own pts. */
	r = map_hugepages(json_object_get(res, "hugepageLimits"), err, len);
	if (r < 0)
		return r;
	r = map_blockio(json_object_get(res, "blockIO"), err, len);
	if (r < 0)
		return r;
	if (mem) {
		json_t *lim = json_object_get(mem, "limit"), *swap = json_object_get(mem, "swap");

		r = oci_only_keys(mem, "$.linux.resources.memory", mem_keys, err, len);
		if (r < 0)
			return r;
		if (lim && (!json_is_integer(lim) || json_integer_value(lim) < (4 << 20)))
			return oci_refuse(
			    err, len,
			    "$.linux.resources.memory.limit: expected bytes, at least 4 MiB");
		/* swap is runc's memory and swap together. sandcap's limit counts
		 * swap too, so limit bounds both at least as tightly as a swap
		 * at or above it (docker's default is twice the limit) or -1. */
		if (swap && !(json_is_integer(swap) && lim &&
			      (json_integer_value(swap) >= json_integer_value(lim) ||
			       json_integer_value(swap) == -1)))
			return oci_refuse(err, len,
					  "$.linux.resources.memory.swap: expected -1 or at least "
					  "limit (sandcap's "
					  "limit bounds memory and swap together)");
		/* false is the kernel's default: the OOM killer ends what
		 * outgrows the limit. Disabling it would hang the sandbox. */
		v = json_object_get(mem, "disableOOMKiller");
		if (v && !json_is_false(v))
			return oci_refuse(
			    err, len,
			    "$.linux.resources.memory.disableOOMKiller: only false is "
			    "supported");
		if (lim && json_object_set_new(limits, "memory",
					       json_integer(json_integer_value(lim))) < 0)
			return -ENOMEM;
	}
	if (cpu) {
		json_t *quota = json_object_get(cpu, "quota"),
		       *period = json_object_get(cpu, "period");
		json_int_t q = json_integer_value(quota),
			   p = period ? json_integer_value(period) : 100000;

		r = oci_only_keys(cpu, "$.linux.resources.cpu", cpu_keys, err, len);
		if (r < 0)
			return r;
		if (period && (!json_is_integer(period) || p < 1000 || p > 1000000))
			return oci_refuse(
			    err, len, "$.linux.resources.cpu.period: expected 1000 to 1000000 us");
		/* shares is a weight against other cgroups, not a bound: sandcap
		 * does not set it (docs/oci.md). */
		if (quota && !(json_is_integer(quota) && q == -1)) {
			double cores;

			if (!json_is_integer(quota) || q < 1000)
				return oci_refuse(
				    err, len,
				    "$.linux.resources.cpu.quota: expected -1 or at least "
				    "1000 us per period");
			cores = (double)q / (double)p;
			if (cores > 1024)
				return oci_refuse(err, len,
						  "$.linux.resources.cpu.quota: above 1024 cores");
			/* sandcap's quota is in steps of a thousandth of a core. */
			cores = (double)((json_int_t)(cores * 1000 + 0.5)) / 1000;
			if (cores < 0.001)
				cores = 0.001;
			if (json_object_set_new(limits, "cpu", json_real(cores)) < 0)
				return -ENOMEM;
		}
	}
	if (pids) {
		r = oci_only_keys(pids, "$.linux.resources.pids", pids_keys, err, len);
		if (r < 0)
			return r;
		v = json_object_get(pids, "limit");
		if (!json_is_integer(v) || json_integer_value(v) == 0 ||
		    json_integer_value(v) > 4194304)
			return oci_refuse(
			    err, len, "$.linux.resources.pids.limit: expected -1 or 1 to 4194304");
		if (json_integer_value(v) > 0 &&
		    (r = lower_pids(limits, json_integer_value(v))) < 0)
			return r;
	}
	return 0;
}

/* Paths sandcap hides or makes read-only itself: those under /proc it
 * masks (ns/mounts.c), anything under /sys (there is no /sys). */
static bool covered(const char *path, bool masked)
{
	const char *const *list = masked ? ns_proc_masked : ns_proc_readonly;

	if (strcmp(path, "/sys") == 0 || strncmp(path, "/sys/", 5) == 0)
		return true;
	if (strncmp(path, "/proc/", 6) != 0)
		return false;
	for (size_t i = 0; list[i]; i++)
		if (strcmp(path + 6, list[i]) == 0)
			return true;
	/* A masked path may also be one sandcap makes read-only or hides. */
	for (size_t i = 0; !masked && ns_proc_masked[i]; i++)
		if (strcmp(path + 6, ns_proc_masked[i]) == 0)
			return true;
	return false;
}

static int map_paths(json_t *a, const char *name, bool masked, char *err, size_t len)
{
	size_t i;
	json_t *v;

	if (!json_is_array(a))
		return oci_refuse(err, len, "$.linux.%s: expected an array", name);
	json_array_foreach(a, i, v)
	{
		const char *p = json_string_value(v);

		if (!p || !covered(p, masked))
			return oci_refuse(
			    err, len,
			    "$.linux.%s[%zu]: %.256s is not a path sandcap %s (docs/oci.md)", name,
			    i, p ? p : "a non-string", masked ? "masks" : "makes read-only");
	}
	return 0;
}

/* sandcap sets no sysctl. It takes the two docker (20.10 on) and podman
 * put in every container's spec, and leaves them unset: the sandbox's own
 * network namespace keeps the kernel's defaults, ping_group_range "1 0"
 * (no ICMP socket for anyone) and ip_unprivileged_port_start 1024 (no port
 * below it for the agent), which is stricter than any value asked. */
static int map_sysctl(json_t *sysctl, char *err, size_t len)
{
	const char *k;
	json_t *v;

	if (!json_is_object(sysctl))
		return oci_refuse(err, len, "$.linux.sysctl: expected an object");
	json_object_foreach(sysctl, k, v)
	{
		long lo, hi;
		char end;

		if (strcmp(k, "net.ipv4.ip_unprivileged_port_start") == 0) {
			if (!json_is_string(v) ||
			    sscanf(json_string_value(v), "%ld%c", &lo, &end) != 1 || lo < 0 ||
			    lo > 65535)
				return oci_refuse(
				    err, len, "$.linux.sysctl[\"%s\"]: expected a port, 0 to 65535",
				    k);
			continue;
		}
		if (strcmp(k, "net.ipv4.ping_group_range") != 0)
			return oci_refuse(err, len, "$.linux.sysctl[\"%.64s\"]: not supported", k);
		if (!json_is_string(v) ||
		    sscanf(json_string_value(v), "%ld %ld%c", &lo, &hi, &end) != 2)
			return oci_refuse(err, len,
					  "$.linux.sysctl[\"%s\"]: expected \"FIRST LAST\"", k);
	}
	return 0;
}

static int map_linux(json_t *l, json_t *limits, char *err, size_t len)
{
	static const char *const keys[] = {"namespaces",    "resources",	 "maskedPaths",
					   "readonlyPaths", "cgroupsPath",	 "uidMappings",
					   "gidMappings",   "devices",		 "seccomp",
					   "sysctl",	    "rootfsPropagation", NULL};
	json_t *v;
	int r = oci_only_keys(l, "$.linux", keys, err, len);

	if (r < 0)
		return r;
	if ((v = json_object_get(l, "namespaces")) && (r = map_namespaces(v, err, len)) < 0)
		return r;
	if ((v = json_object_get(l, "resources")) && (r = map_resources(v, limits, err, len)) < 0)
		return r;
	if ((v = json_object_get(l, "maskedPaths")) &&
	    (r = map_paths(v, "maskedPaths", true, err, len)) < 0)
		return r;
	if ((v = json_object_get(l, "readonlyPaths")) &&
	    (r = map_paths(v, "readonlyPaths", false, err, len)) < 0)
		return r;
	/* cgroupsPath: where to place the cgroup; sandcap makes its own. */
	if (!empty(json_object_get(l, "uidMappings")) || !empty(json_object_get(l, "gidMappings")))
		return oci_refuse(
		    err, len,
		    "$.linux.%s: sandcap maps its own ids (process.user's inside, one "
		    "unprivileged id on the host)",
		    empty(json_object_get(l, "uidMappings")) ? "gidMappings" : "uidMappings");
	if (!empty(json_object_get(l, "devices")))
		return oci_refuse(err, len,
				  "$.linux.devices: device nodes of the container's own are "
				  "not supported");
	if ((v = json_object_get(l, "sysctl")) && (r = map_sysctl(v, err, len)) < 0)
		return r;
	/* seccomp: a second filter, oci_seccomp_compile()'s (oci/seccomp.h). */
	v = json_object_get(l, "rootfsPropagation");
	if (v && !(json_is_string(v) && (strcmp(json_string_value(v), "private") == 0 ||
					 strcmp(json_string_value(v), "rprivate") == 0)))
		return oci_refuse(err, len, "$.linux.rootfsPropagation: only private is supported");
	return 0;
}

/* ---- hooks ---- */

/* A prestart hook that is docker's libnetwork-setkey (docker adds it to
 * every container that gets a network namespace of its own), or NULL. */
static bool network_hook(json_t *h)
{
	json_t *args = json_object_get(h, "args");

	return json_is_object(h) && str(h, "path") && str(h, "path")[0] == '/' &&
	       json_is_string(json_array_get(args, 0)) &&
	       strcmp(json_string_value(json_array_get(args, 0)), "libnetwork-setkey") == 0;
}

json_t *oci_network_hook(json_t *config)
{
	json_t *pre = json_object_get(json_object_get(config, "hooks"), "prestart");

	return json_array_size(pre) == 1 && network_hook(json_array_get(pre, 0))
		   ? json_array_get(pre, 0)
		   : NULL;
}

/* A hook is a program run as root on the host, for the container: only
 * docker's network one is taken, and run with the container supervisor's
 * pid (docs/oci.md, "Docker"); any other is refused. */
static int map_hooks(json_t *hooks, char *err, size_t len)
{
	static const char *const hook_keys[] = {"path", "args", "env", "timeout", NULL};
	const char *k;
	json_t *v, *h, *e;
	size_t i;
	int r;

	if (!hooks || empty(hooks))
		return 0;
	if (!json_is_object(hooks))
		return oci_refuse(err, len, "$.hooks: expected an object");
	json_object_foreach(hooks, k, v)
	{
		if (empty(v) || !oci_spec_name(k))
			continue;
		if (strcmp(k, "prestart") != 0 || !json_is_array(v) || json_array_size(v) != 1 ||
		    !network_hook(json_array_get(v, 0)))
			return oci_refuse(err, len,
					  "$.hooks.%s: hooks are not supported (docker's "
					  "libnetwork-setkey prestart hook alone is)",
					  k);
		h = json_array_get(v, 0);
		r = oci_only_keys(h, "$.hooks.prestart[0]", hook_keys, err, len);
		if (r < 0)
			return r;
		json_array_foreach(
		    json_object_get(h, "args"), i,
		    e) if (!json_is_string(e)) return oci_refuse(err, len,
								 "$.hooks.prestart[0].args[%zu]: "
								 "expected a string",
								 i);
		e = json_object_get(h, "env");
		if (e && !json_is_array(e))
			return oci_refuse(err, len, "$.hooks.prestart[0].env: expected an array");
		json_array_foreach(e, i, v) if (!json_is_string(v)) return oci_refuse(
		    err, len, "$.hooks.prestart[0].env[%zu]: expected a string", i);
		e = json_object_get(h, "timeout");
		if (e && (!json_is_integer(e) || json_integer_value(e) < 1))
			return oci_refuse(
			    err, len, "$.hooks.prestart[0].timeout: expected seconds, at least 1");
	}
	return 0;
}

/* ---- the annotation's policy ---- */

static int map_extra(json_t *extra, json_t *policy, char *err, size_t len)
{
	static const char *const keys[] = {"version", "net", "audit", NULL};
	int r = oci_only_keys_strict(extra, "$.annotations[\"" OCI_ANNOTATION_POLICY "\"]", keys,
				     err, len);
	json_t *v;

	if (r < 0)
		return r;
	if ((v = json_object_get(extra, "net")) && json_object_set(policy, "net", v) < 0)
		return -ENOMEM;
	if ((v = json_object_get(extra, "audit")) && json_object_set(policy, "audit", v) < 0)
		return -ENOMEM;
	return 0;
}

int oci_config_policy(json_t *config, const char *bundle, const char *id, json_t *extra,
		      bool need_process, json_t **ret_policy, oci_process *ret_proc, char *err,
		      size_t len)
{
	static const char *const keys[] = {"ociVersion", "root",	"mounts", "process",
					   "hostname",	 "annotations", "linux",  "domainname",
					   "hooks",	 NULL};
	json_t *root = json_object_get(config, "root"), *v;
	const char *ver = str(config, "ociVersion"), *rpath = str(root, "path"), *host;
	json_t *policy = NULL, *limits;
	char path[4096];
	bool writable;
	int r;

	*ret_policy = NULL;
	memset(ret_proc, 0, sizeof(*ret_proc));
	r = oci_only_keys(config, "$", keys, err, len);
	if (r < 0)
		return r;
	if (!ver || strncmp(ver, "1.", 2) != 0)
		return oci_refuse(err, len, "$.ociVersion: expected a runtime-spec 1.x version");
	if (!rpath || !rpath[0])
		return oci_refuse(err, len, "$.root.path: expected the root filesystem's path");
	r = oci_only_keys(root, "$.root", (const char *const[]){"path", "readonly", NULL}, err,
			  len);
	if (r < 0)
		return r;
	/* readonly false (the default): a private layer over the image, as
	 * large as /tmp, takes the writes (docs/oci.md). */
	v = json_object_get(root, "readonly");
	if (v && !json_is_boolean(v))
		return oci_refuse(err, len, "$.root.readonly: expected true or false");
	writable = !json_is_true(v);
	if (path_in_bundle(bundle, rpath, path, sizeof(path)) < 0)
		return oci_refuse(err, len, "$.root.path: too long");
	r = map_hooks(json_object_get(config, "hooks"), err, len);
	if (r < 0)
		return r;
	if (!empty(json_object_get(config, "domainname")))
		return oci_refuse(err, len, "$.domainname: not supported");
	v = json_object_get(config, "annotations");
	if (v && !json_is_object(v))
		return oci_refuse(err, len, "$.annotations: expected an object");
	policy =
	    json_pack("{s:i, s:s, s:{s:{s:s, s:b}, s:[]}, s:{}}", "version", 1, "name", id, "fs",
		      "runtime", "rootfs", path, "writable", writable, "grants", "limits");
	if (!policy)
		return -ENOMEM;
	limits = json_object_get(policy, "limits");
	host = str(config, "hostname");
	if (host && host[0] && (v = json_object_get(config, "linux"))) {
		oci_joins j;

		/* A joined uts namespace has the hostname of whoever made it
		 * (a pod's, set by its pause container): changing it would
		 * change it for the whole pod. */
		oci_config_joins(config, &j);
		if (j.path[OCI_NS_UTS]) {
			json_decref(policy);
			return oci_refuse(err, len,
					  "$.hostname: a container that joins a uts namespace "
					  "($.linux.namespaces[%zu].path) has its hostname",
					  j.index[OCI_NS_UTS]);
		}
	}
	if (host && host[0] &&
	    json_object_set_new(policy, "identity", json_pack("{s:s}", "hostname", host)) < 0)
		r = -ENOMEM;
	if (r >= 0 && (v = json_object_get(config, "mounts")))
		r = map_mounts(v, bundle, json_object_get(json_object_get(policy, "fs"), "grants"),
			       err, len);
	if (r >= 0 && (v = json_object_get(config, "process")))
		r = map_process(v, policy, limits, ret_proc, err, len);
	else if (r >= 0 && need_process)
		r = oci_refuse(err, len, "$.process: required");
	if (r >= 0 && (v = json_object_get(config, "linux")))
		r = map_linux(v, limits, err, len);
	if (r >= 0 && extra)
		r = map_extra(extra, policy, err, len);
	if (r < 0) {
		json_decref(policy);
		memset(ret_proc, 0, sizeof(*ret_proc));
		return r;
	}
	*ret_policy = policy;
	return 0;
}

json_t *oci_default_spec(void)
{
	return json_pack(
	    "{s:s, s:{s:b, s:{s:i, s:i}, s:[s], s:[s, s], s:s, s:{s:[s], s:[s], s:[s], s:[s]},"
	    " s:[{s:s, s:i, s:i}], s:b},"
	    " s:{s:s, s:b}, s:s,"
	    " s:[{s:s, s:s, s:s}, {s:s, s:s, s:s, s:[s, s, s, s]}, {s:s, s:s, s:s, s:[s, s, s, s, "
	    "s]},"
	    " {s:s, s:s, s:s, s:[s, s, s, s]}],"
	    " s:{s:[{s:s}, {s:s}, {s:s}, {s:s}, {s:s}], s:[s, s, s, s], s:[s, s, s, s]}}",
	    "ociVersion", OCI_VERSION, "process", "terminal", 1, "user", "uid", AGENT_ID, "gid",
	    AGENT_ID, "args", "sh", "env",
	    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm",
	    "cwd", "/", "capabilities", "bounding", "CAP_AUDIT_WRITE", "effective",
	    "CAP_AUDIT_WRITE", "permitted", "CAP_AUDIT_WRITE", "ambient", "CAP_AUDIT_WRITE",
	    "rlimits", "type", "RLIMIT_NOFILE", "hard", 1024, "soft", 1024, "noNewPrivileges", 1,
	    "root", "path", "rootfs", "readonly", 1, "hostname", "sandcap", "mounts", "destination",
	    "/proc", "type", "proc", "source", "proc", "destination", "/dev", "type", "tmpfs",
	    "source", "tmpfs", "options", "nosuid", "strictatime", "mode=755", "size=65536k",
	    "destination", "/dev/pts", "type", "devpts", "source", "devpts", "options", "nosuid",
	    "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "destination", "/dev/shm",
	    "type", "tmpfs", "source", "shm", "options", "nosuid", "noexec", "nodev", "mode=1777",
	    "linux", "namespaces", "type", "pid", "type", "network", "type", "ipc", "type", "uts",
	    "type", "mount", "maskedPaths", "/proc/kcore", "/proc/keys", "/proc/timer_list",
	    "/sys/firmware", "readonlyPaths", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys");
}
