/* SPDX-License-Identifier: MIT */
/*
 * Why a layer is missing on this host: one sentence naming the cause, when
 * it is knowable (a chroot, a sysctl, AppArmor, a kernel built without
 * seccomp or Landlock, Landlock left out of lsm=, no delegated cgroup).
 * Used by `sandcap doctor` and by the supervisor when it refuses a run, so
 * both say the same. Library code: never prints; fills why (NUL-terminated,
 * "" when nothing is known) and returns 0 when the layer is there, else
 * -errno.
 *
 * The probes read /proc and /sys and ask the kernel; the *_explain
 * functions only turn what a probe saw into the sentence, so that tests can
 * feed them any errno.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"

/*
 * 1 when this process runs inside a chroot: its "/" is not the root of its
 * mount namespace (the kernel then refuses it user namespaces); 0 when it
 * is; -errno when it cannot be told (no /proc). It is judged against the
 * oldest ancestor in the same mount namespace (pid 1 on a plain host):
 * host_chroot_judge decides from the text of /proc/self/mountinfo and of
 * that process's mountinfo (NULL when there is none).
 */
int host_in_chroot(void);
int host_chroot_judge(const char *self_mountinfo, const char *init_mountinfo);

/* User namespaces, as the run would create them (unpriv: as an ordinary
 * user): a chroot, user.max_user_namespaces = 0, and without root
 * kernel.unprivileged_userns_clone = 0 or AppArmor's
 * kernel.apparmor_restrict_unprivileged_userns. */
int host_why_userns(bool unpriv, char *why, size_t len);

/* Landlock: *ret_abi gets the kernel's ABI (0 when absent). */
int host_why_landlock(int *ret_abi, char *why, size_t len);
/* create_ruleset's VERSION answer (ret, and err when ret < 0) and the
 * active LSM list (NULL when unknown). */
int host_landlock_explain(int ret, int err, const char *lsm, char *why, size_t len);

/* seccomp with user notification (runs sf_probe for the real test). */
int host_why_seccomp(char *why, size_t len);
/* prctl(PR_GET_SECCOMP)'s errno (0: it answered) and the errno of
 * seccomp(SECCOMP_GET_ACTION_AVAIL, SECCOMP_RET_USER_NOTIF) (0: available). */
int host_seccomp_explain(int get_seccomp_err, int notif_err, char *why, size_t len);

/* A cgroup the run can use: any hierarchy as root, a delegated cgroup v2
 * subtree without. */
int host_why_cgroup(bool unpriv, char *why, size_t len);

/* Transparent redirection (docs/proxy.md): in a fresh network namespace (with
 * a user namespace when unpriv), the local routes on lo and a connect to a
 * synthetic IPv4 and IPv6 address reaching a wildcard listener, tried for
 * real. 0, or -EOPNOTSUPP with why naming the step that failed. Where it
 * cannot be set up, the proxy variables still work. */
int host_why_transparent(bool unpriv, char *why, size_t len);

/*
 * A refused setup: appends "; " and the host's reason to d->message when
 * the step (d->path: "userns", "clone", "mounts", "landlock", "seccomp",
 * "cgroup", or a grant's "$.fs.grants[N]...", whose id mapping needs a user
 * namespace) failed with err (-errno) for a reason the probes can name.
 */
void host_explain_refusal(sc_diag *d, int err, bool unpriv);
