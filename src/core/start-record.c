/* SPDX-License-Identifier: MIT */
/*
 * sandbox.start (docs/audit.md): the plan, the command, and the layers in
 * place as the setup child's steps reported them, then the grants; the
 * first records of every log, before pid 1's exec.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/diag.h"
#include "core/supervisor-state.h"
#include "core/sync.h"

/*
 * What is in place, from what each step reported (the child's sync_layer
 * bits, the cgroup, the proxy): a refused run claims nothing beyond the
 * step it reached. A layer not put in place is absent.
 */
static json_t *layers_json(supervisor *s)
{
	unsigned l = s->layers;
	json_t *o = json_object();
	char ns[64];

	if (!o)
		return NULL;
	if (s->pid > 0) {
		snprintf(ns, sizeof(ns), "%smount pid net%s%s", l & LAYER_USERNS ? "user " : "",
			 s->plan->shared_ipc_uts ? "" : " ipc uts",
			 l & LAYER_CGROUPNS ? " cgroup" : "");
		(void)json_object_set_new(o, "namespaces", json_string(ns));
		if (s->plan->shared_ipc_uts)
			(void)json_object_set_new(o, "ipc_uts", json_string("shared (a pod's)"));
	}
	if (l & LAYER_MOUNTS)
		(void)json_object_set_new(
		    o, "mounts",
		    json_string(
			s->plan->runtime == RUNTIME_ROOTFS && s->plan->rootfs_writable
			    ? "tmpfs root, pivot_root, writable image root (a private "
			      "bounded layer), nosuid nodev grants"
			    : "tmpfs root, pivot_root, read-only runtime, nosuid nodev grants"));
	/* In the cgroup: placed by clone3 or by us, or it moved itself in. */
	(void)json_object_set_new(
	    o, "cgroup",
	    json_string(s->cg && (s->cg_joined || (l & LAYER_CGROUP)) ? s->res->cgroup : "none"));
	if (l & LAYER_CAPS)
		(void)json_object_set_new(o, "capabilities", json_string("none"));
	if (l & LAYER_NNP)
		(void)json_object_set_new(o, "no_new_privs", json_true());
	if (l & LAYER_LANDLOCK)
		(void)json_object_set_new(
		    o, "landlock",
		    json_pack("{s:i, s:s}", "abi", s->landlock_abi, "status", s->landlock));
	if (l & LAYER_SECCOMP)
		(void)json_object_set_new(o, "seccomp",
					  json_string(!(l & LAYER_SECCOMP_NOTIFY)
							  ? "active"
							  : "active, with user notification"));
	/* A second filter on top (sandcap-runc: the spec's linux.seccomp). */
	if ((l & LAYER_SECCOMP) && s->plan->extra_filter)
		(void)json_object_set_new(
		    o, "seccomp_second",
		    json_pack("{s:I}", "instructions", (json_int_t)s->plan->n_extra_filter));
	if (s->plan->n_egress == 0 && s->pid > 0)
		(void)json_object_set_new(o, "proxy", json_string("no network"));
	else if (s->proxy_pid > 0)
		(void)json_object_set_new(o, "proxy", json_string("active"));
	(void)json_object_set_new(o, "fs_write", json_string(s->fw_mode ? s->fw_mode : "none"));
	if (s->plan->audit_reads)
		(void)json_object_set_new(o, "fs_read",
					  json_string(s->fr_mode ? s->fr_mode : "none"));
	if (s->unpriv && (l & LAYER_USERNS)) {
		char id[160];

		snprintf(id, sizeof(id),
			 "unprivileged: the agent (%u:%u inside) is the invoking user %u:%u, "
			 "plain bind grants",
			 (unsigned)s->plan->agent_uid, (unsigned)s->plan->agent_gid,
			 (unsigned)geteuid(), (unsigned)getegid());
		(void)json_object_set_new(o, "identity", json_string(id));
	}
	return o;
}

/* The names of the layers in place, for the summary. A cgroup of "none"
 * is none. */
static void layers_names(json_t *layers, char *buf, size_t len)
{
	const char *k;
	json_t *v;
	size_t n = 0;

	buf[0] = '\0';
	json_object_foreach(layers, k, v)
	{
		if (json_is_string(v) && strcmp(json_string_value(v), "none") == 0 &&
		    strcmp(k, "capabilities") != 0)
			continue;
		/* json_object_foreach() steps on from k: name is a copy. */
		const char *name = k;

		if (strcmp(k, "proxy") == 0 && json_is_string(v) &&
		    strcmp(json_string_value(v), "no network") == 0)
			name = "no-network"; /* the netns has only lo */
		if (n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? " " : "", name);
	}
	if (n >= len && len > 0)
		buf[len - 1] = '\0';
}

/*
 * sandbox.start and the grants, then the first boundary. With listener_fd
 * (else -1), the seccomp listener starts once they are written, so that
 * its first record, pid 1's exec, follows them. The fsync happens outside
 * the lock and on a thread of its own: the listener answers and records
 * execs meanwhile, pid 1's exec does not wait for the disk, nor the loop
 * for pid 1's end.
 */
void sv_emit_start(supervisor *s, int listener_fd)
{
	_cleanup_free_ char *plan_json = NULL;
	json_t *data, *layers;
	size_t argc;
	int fd, dirfd;

	if (s->started) {
		/* Execs are answered only once their records can be written. */
		if (listener_fd >= 0 && s->start_written)
			sv_start_listener(s, listener_fd);
		else if (listener_fd >= 0)
			(void)close(listener_fd);
		return;
	}
	s->started = true;
	plan_json = plan_to_json(s->plan);
	layers = layers_json(s);
	layers_names(layers, s->res->layers, sizeof(s->res->layers));
	for (argc = 0; s->o->argv && s->o->argv[argc]; argc++)
		;
	data = json_pack("{s:o, s:o, s:s, s:s, s:o, s:o}", "plan",
			 plan_json ? json_loads(plan_json, 0, NULL) : json_null(), "command",
			 au_argv((const char *const *)s->o->argv, argc), "policy_source",
			 s->o->policy_source ? s->o->policy_source : "", "policy_digest",
			 s->o->policy_digest ? s->o->policy_digest : "", "token",
			 s->o->token_id ? json_pack("{s:s, s:i}", "id", s->o->token_id, "caveats",
						    (int)s->o->token_caveats)
					: json_null(),
			 "layers", layers);
	if (data && s->not_enforced[0])
		(void)json_object_set_new(data, "not_enforced", json_pack("[s]", s->not_enforced));
	if (data && s->ws_not_enforced[0]) {
		json_t *ne = json_object_get(data, "not_enforced");

		if (!ne)
			(void)json_object_set_new(data, "not_enforced", ne = json_array());
		(void)json_array_append_new(ne, json_string(s->ws_not_enforced));
	}
	if (data) {
		json_t *gs = ws_run_start_json(s->ws); /* a reference of ours, or NULL */

		if (gs)
			(void)json_object_set_new(data, "grant_storage", gs);
	}
	if (data && s->serve.map)
		(void)json_object_set_new(data, "serve", json_deep_copy(s->serve.map));
	if (data && s->transparent[0])
		(void)json_object_set_new(data, "transparent", json_string(s->transparent));
	/* How far setup got: "complete", or the step that refused the run. */
	if (data) {
		char setup[64];

		if (s->ready)
			snprintf(setup, sizeof(setup), "complete");
		else
			snprintf(setup, sizeof(setup), "refused at %.40s",
				 s->diag->path[0] ? s->diag->path : "an unknown step");
		(void)json_object_set_new(data, "setup", json_string(setup));
	}
	pthread_mutex_lock(&s->emit_lock);
	sv_emit_locked(s, "sandbox.start", data);
	for (size_t i = 0; i < s->plan->n_grants; i++) {
		const plan_grant *g = &s->plan->grants[i];

		sv_emit_locked(s, "fs.grant",
			       json_pack("{s:s, s:s, s:s}", "path", g->path, "at", g->at, "mode",
					 plan_grant_mode_name(g->mode)));
	}
	if (s->audit_stopped) {
		/* Nothing of the sandbox has run: a refused run. Without a
		 * listener its exec fails (ENOSYS), and it is being killed.
		 * A run refused already keeps its own reason. */
		if (!s->setup_failed)
			diag_fail(s->diag, au_failed(s->audit, NULL, NULL), "audit",
				  "cannot write the start of audit log %s: %s", s->res->audit_path,
				  strerror(-au_failed(s->audit, NULL, NULL)));
		s->setup_failed = true;
		if (listener_fd >= 0)
			(void)close(listener_fd);
	} else {
		s->start_written = true;
		if (listener_fd >= 0)
			sv_start_listener(s, listener_fd);
	}
	(void)au_sync_detach(s->audit, &fd, &dirfd);
	pthread_mutex_unlock(&s->emit_lock);
	sv_sync_begin(s, fd, dirfd, -1);
	/* Only now: fs.write records must follow sandbox.start in the log, and
	 * the kernel keeps the events queued meanwhile. */
	if (fw_fd(s->fw) >= 0)
		(void)sv_ep_add(s, fw_fd(s->fw), EV_FSWATCH);
}
