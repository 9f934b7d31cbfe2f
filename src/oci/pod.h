/* SPDX-License-Identifier: MIT */
/*
 * A pod's namespaces (docs/oci.md, "Kubernetes"): what a container joins
 * (oci_joins, from config.json) is opened and checked when it is created,
 * and entered by its container supervisor before the session starts, so
 * that the session's supervisor, its proxy worker and the sandbox inherit
 * them. The agent never joins the pod's network namespace: it keeps its
 * own, with lo only; the proxy's upstream side is in the pod's. The ipc
 * and uts namespaces are the pod's for the agent too (plan->shared_ipc_uts).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "oci/config.h"

/*
 * Opens each path of j: it must be a namespace of its type, and an ipc or
 * uts one not the host's (the kernel's initial one, /proc/1's, or this
 * process's own). fds[k] is -1 where nothing is joined. -EINVAL with "$.linux.namespaces[N].path:
 * why" in err; nothing is left open then.
 */
int oci_joins_open(const oci_joins *j, int fds[OCI_NS_MAX], char *err, size_t err_len);

/*
 * In the container supervisor: enters the network namespace fds names, if
 * any, or with new_net makes a new one (docker's, oci_network_hook()); enters the ipc and uts ones,
 * or makes new ones, setting hostname (and no domain name) in a new uts namespace. Closes fds.
 * -errno, *ret_what naming the step.
 */
int oci_joins_enter(int fds[OCI_NS_MAX], const char *hostname, bool new_net, const char **ret_what);

void oci_joins_close(int fds[OCI_NS_MAX]);

/* Whether fds joins a network namespace that is not the host's (by the
 * same test as an ipc or uts one): a pod's, where net.serve may listen on
 * every address (plan->own_netns). */
bool oci_joins_own_net(int fds[OCI_NS_MAX]);
