/* SPDX-License-Identifier: MIT */
/* Refusals that name the field (oci/fields.h). */
#include "oci/fields.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int oci_refuse(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * Every member name the runtime-spec (1.2, config.md and config-linux.md,
 * and the other platforms' objects) defines, sorted for bsearch(). A name
 * in this list where sandcap does not take it is refused; any other name
 * is ignored, as the spec requires ("MUST ignore unknown properties").
 */
static const char *const spec_names[] = {
    "access",
    "action",
    "additionalGids",
    "allow",
    "ambient",
    "annotations",
    "apparmorProfile",
    "architectures",
    "args",
    "blockIO",
    "bounding",
    "burst",
    "capabilities",
    "cgroupsPath",
    "checkBeforeUpdate",
    "class",
    "classID",
    "closID",
    "commandLine",
    "consoleSize",
    "containerID",
    "cpu",
    "cpus",
    "createContainer",
    "createRuntime",
    "cwd",
    "deadline",
    "defaultAction",
    "defaultErrnoRet",
    "destination",
    "devices",
    "disableOOMKiller",
    "domain",
    "domainname",
    "effective",
    "enableCMT",
    "enableMBM",
    "enableMonitoring",
    "env",
    "errnoRet",
    "execCPUAffinity",
    "fileMode",
    "final",
    "flags",
    "gid",
    "gidMappings",
    "hard",
    "hcaHandles",
    "hcaObjects",
    "height",
    "hooks",
    "hostID",
    "hostname",
    "hugepageLimits",
    "idle",
    "index",
    "inheritable",
    "initial",
    "intelRdt",
    "ioPriority",
    "kernel",
    "kernelTCP",
    "l3CacheSchema",
    "leafWeight",
    "limit",
    "linux",
    "listenerMetadata",
    "listenerPath",
    "major",
    "maskedPaths",
    "memBwSchema",
    "memory",
    "memoryPolicy",
    "mems",
    "minor",
    "mode",
    "mountLabel",
    "mounts",
    "name",
    "names",
    "namespaces",
    "netDevices",
    "network",
    "nice",
    "noNewPrivileges",
    "nodes",
    "ociVersion",
    "oomScoreAdj",
    "op",
    "options",
    "pageSize",
    "path",
    "period",
    "permitted",
    "personality",
    "pids",
    "policy",
    "poststart",
    "poststop",
    "prestart",
    "priorities",
    "priority",
    "process",
    "quota",
    "rate",
    "rdma",
    "rdmas",
    "readonly",
    "readonlyPaths",
    "realtimePeriod",
    "realtimeRuntime",
    "reservation",
    "resources",
    "rlimits",
    "root",
    "rootfsPropagation",
    "runtime",
    "scheduler",
    "schemata",
    "seccomp",
    "selinuxLabel",
    "shares",
    "size",
    "soft",
    "solaris",
    "source",
    "startContainer",
    "swap",
    "swappiness",
    "syscalls",
    "sysctl",
    "terminal",
    "throttleReadBpsDevice",
    "throttleReadIOPSDevice",
    "throttleWriteBpsDevice",
    "throttleWriteIOPSDevice",
    "timeOffsets",
    "timeout",
    "type",
    "uid",
    "uidMappings",
    "umask",
    "unified",
    "useHierarchy",
    "user",
    "username",
    "value",
    "valueTwo",
    "vm",
    "weight",
    "weightDevice",
    "width",
    "windows",
    "zos",
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool oci_spec_name(const char *k)
{
	return bsearch(&k, spec_names, sizeof(spec_names) / sizeof(spec_names[0]),
		       sizeof(spec_names[0]), name_cmp) != NULL;
}

static int only_keys(json_t *o, const char *where, const char *const *allowed, bool strict,
		     char *err, size_t len)
{
	const char *k;
	json_t *v;

	if (!json_is_object(o))
		return oci_refuse(err, len, "%s: expected an object", where);
	json_object_foreach(o, k, v)
	{
		bool ok = !strict && !oci_spec_name(k);

		for (size_t i = 0; allowed[i]; i++)
			ok = ok || strcmp(k, allowed[i]) == 0;
		if (!ok)
			return oci_refuse(err, len, "%s.%.64s: not supported by sandcap-runc",
					  where, k);
	}
	return 0;
}

int oci_only_keys(json_t *o, const char *where, const char *const *allowed, char *err, size_t len)
{
	return only_keys(o, where, allowed, false, err, len);
}

int oci_only_keys_strict(json_t *o, const char *where, const char *const *allowed, char *err,
			 size_t len)
{
	return only_keys(o, where, allowed, true, err, len);
}
