/* SPDX-License-Identifier: MIT */
/*
 * An OCI bundle's config.json (runtime-spec 1.x) mapped onto a sandcap
 * policy (docs/oci.md, "What config.json may ask"). Pure: no file is read,
 * so it is unit-tested and fuzzed (tests/fuzz/fuzz-oci-config.c). What
 * sandcap cannot honour is refused with the JSON field named
 * ("$.linux.namespaces[2].path: ..."), never ignored.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define OCI_VERSION	      "1.2.0"
#define OCI_ANNOTATION_POLICY "org.sandcap.policy"
#define OCI_MAX_CONFIG	      (4u << 20)

/* The container's process, borrowed from the config it came from. */
typedef struct oci_process {
	json_t *args; /* array of strings, at least one */
	json_t *env;  /* array of "KEY=VALUE" (may be empty) */
	const char *cwd;
	bool terminal;
	unsigned rows, cols; /* consoleSize, 0 when absent */
	int oom_score_adj;   /* oomScoreAdj, 0 to 1000: a negative one is 0 */
	bool has_oom_score_adj;
	uint32_t uid, gid; /* process.user: the agent's ids inside (identity.uid/gid) */
} oci_process;

/* The namespaces a container joins (linux.namespaces[].path), the others
 * being new: only a pod's network, ipc and uts (docs/oci.md, "Kubernetes"). */
enum { OCI_NS_NET, OCI_NS_IPC, OCI_NS_UTS, OCI_NS_MAX };

typedef struct oci_joins {
	const char *path[OCI_NS_MAX]; /* borrowed from the config; NULL: a new one */
	size_t index[OCI_NS_MAX];     /* its place in linux.namespaces, for errors */
} oci_joins;

/*
 * Maps config (an object) of the bundle at bundle (absolute) onto a new
 * policy object named id: the rootfs runtime, binds as grants, limits,
 * hostname; extra, when not NULL, is the annotation's policy, whose net
 * and audit members are taken (anything else in it is refused). need_process:
 * process must be there (create, run). -EINVAL with "$.field: why" in err.
 * linux.seccomp is not looked at: oci_seccomp_compile() (oci/seccomp.h)
 * makes it a filter of its own, which the caller puts in the plan.
 */
int oci_config_policy(json_t *config, const char *bundle, const char *id, json_t *extra,
		      bool need_process, json_t **ret_policy, oci_process *ret_proc, char *err,
		      size_t err_len);

/*
 * Docker's libnetwork-setkey prestart hook of a config oci_config_policy()
 * took (borrowed), or NULL: the only hook taken. It hands docker the
 * network namespace of the state's pid, the container supervisor's own
 * new one, where docker puts the container's interfaces (docs/oci.md).
 */
json_t *oci_network_hook(json_t *config);

/* The paths of the namespaces a config oci_config_policy() took joins. */
void oci_config_joins(json_t *config, oci_joins *ret);

/* The process of an exec (sandcap-runc exec --process FILE), borrowed
 * from p: checked as config.json's process is, fields named "$.process...".
 * Its rlimits are checked, not applied: an exec has the container's. */
int oci_process_parse(json_t *p, oci_process *ret_proc, char *err, size_t err_len);

/* The config `sandcap-runc spec` writes: a read-only root "rootfs",
 * `sh` with a terminal, as the agent (uid 1000), the standard mounts. */
json_t *oci_default_spec(void);
