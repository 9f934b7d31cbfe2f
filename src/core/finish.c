/* SPDX-License-Identifier: MIT */
/*
 * The end of a run: what the kernel measured, the records that end the log
 * (limit.hit, sandbox.exit; or the refusal), the kept workspaces, the
 * result, and everything the run made on the host taken down, the cgroup
 * after what is charged to it.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/diag.h"
#include "base/pages.h"
#include "base/signals.h"
#include "core/supervisor-state.h"

/* What came after the end: dropped, but a fault still ends us and no
 * job-control stop is left pending for the restored mask to deliver. */
static void drain_signals(supervisor *s)
{
	struct signalfd_siginfo si;

	while (s->sigfd >= 0 && read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (sgn_judge(&si) == SGN_CRASH)
			sgn_crash((int)si.ssi_signo);
}

/* A run refused during setup: what was set up, the files already written
 * (if the child got that far), and sandbox.exit with the refusal. */
static void emit_refusal(supervisor *s)
{
	if (!s->started)
		sv_emit_start(s, -1);
	(void)fw_finish(s->fw, sv_on_event, s);
	fr_finish(s->fr);
	sv_emit_final(s, "sandbox.exit",
		      json_pack("{s:s, s:s}", "error", s->diag->path, "detail", s->diag->message));
}

static void collect(supervisor *s)
{
	sc_run_result *res = s->res;
	cg_stats st;
	int status = s->wait_status;

	res->wall_ns = sv_now_ns() - s->t0;
	res->memory_peak = UINT64_MAX;
	if (s->cg && cg_read_stats(s->cg, &st) >= 0) {
		res->cpu_ns = st.cpu_usage_ns != UINT64_MAX ? st.cpu_usage_ns : 0;
		res->throttled_ns = st.throttled_ns != UINT64_MAX ? st.throttled_ns : 0;
		res->cpu_throttled = st.nr_throttled != UINT64_MAX && st.nr_throttled > 0;
		res->memory_peak = st.memory_peak;
		res->oom_kills = st.oom_kills != UINT64_MAX ? st.oom_kills : 0;
		res->oom_killed = res->oom_kills > 0;
		res->pids_limited = st.pids_max_hits != UINT64_MAX && st.pids_max_hits > 0;
	}
	if (res->timed_out) {
		res->exit_status = SC_EXIT_TIMEOUT;
		res->signal = SIGKILL;
	} else if (WIFEXITED(status)) {
		/* init exits with the command's status, 128+N for signal N */
		res->exit_status = WEXITSTATUS(status);
		res->signal = res->exit_status > 128 && res->exit_status < 128 + 65
				  ? res->exit_status - 128
				  : 0;
	} else {
		res->signal = WTERMSIG(status);
		res->exit_status = 128 + res->signal;
	}
}

static void emit_exit(supervisor *s)
{
	const sc_run_result *r = s->res;
	const au_tally *t = &r->tally;
	json_t *data;

	if (r->timed_out)
		sv_emit_final(
		    s, "limit.hit",
		    json_pack("{s:s, s:s}", "limit", "wall", "detail", "wall-clock limit reached"));
	if (r->oom_killed)
		sv_emit_final(s, "limit.hit",
			      json_pack("{s:s, s:s}", "limit", "memory", "detail",
					"OOM kill in the sandbox cgroup"));
	if (r->pids_limited)
		sv_emit_final(s, "limit.hit",
			      json_pack("{s:s, s:s}", "limit", "pids", "detail",
					"fork refused by pids limit"));
	if (r->cpu_throttled)
		sv_emit_final(s, "limit.hit",
			      json_pack("{s:s, s:s}", "limit", "cpu_throttled", "detail",
					"CPU quota throttled"));
	/* The counts are the tally's, of every record of the log so far: as the
	 * summary and `audit report` count them (requests refused over
	 * net.rate, folded into a limit.hit, are in net_denied). */
	data =
	    json_pack("{s:i, s:i, s:b, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		      "status", r->exit_status, "signal", r->signal, "timed_out", r->timed_out,
		      "oom_killed", r->oom_killed, "cpu_ns", (json_int_t)r->cpu_ns, "throttled_ns",
		      (json_int_t)r->throttled_ns, "memory_peak",
		      r->memory_peak == UINT64_MAX ? (json_int_t)-1 : (json_int_t)r->memory_peak,
		      "oom_kills", (json_int_t)r->oom_kills, "wall_ns", (json_int_t)r->wall_ns,
		      "bytes_out", (json_int_t)t->bytes_out, "bytes_in", (json_int_t)t->bytes_in,
		      "requests_allowed", (json_int_t)t->requests_allowed, "requests_denied",
		      (json_int_t)t->net_denied, "syscalls_denied", (json_int_t)t->syscalls_denied,
		      "files_written", (json_int_t)t->files_written);
	/* pid 1 was not ours to wait for and said nothing: killed, presumably
	 * by SIGKILL (sc_run_opts.init_adopted). */
	if (data && s->status_presumed)
		(void)json_object_set_new(data, "status_presumed", json_true());
	/* Stopped by a signal to us: which, and whether the grace ran out. */
	if (data && r->stop_signal) {
		char name[32];

		sgn_name(r->stop_signal, name, sizeof(name));
		(void)json_object_set_new(
		    data, "stopped_by",
		    json_pack("{s:s, s:b}", "signal", name, "forced_kill", r->forced_kill));
	}
	if (data && s->ws_exit)
		(void)json_object_set_new(data, "workspaces", TAKE_PTR(s->ws_exit));
	if (data && r->workspace_error[0])
		(void)json_object_set_new(data, "workspace_error", json_string(r->workspace_error));
	/* The records refused after the log failed: they are not in it. */
	if (data && s->audit_stopped)
		(void)json_object_set_new(data, "audit_unrecorded",
					  json_integer((json_int_t)r->audit_unrecorded));
	sv_emit_final(s, "sandbox.exit", data);
}

void sv_teardown(supervisor *s)
{
	sv_stop_listener(s);
	sv_proxy_stop(s);
	sv_serve_stop(s);
	s->spawn = spawn_server_free(s->spawn); /* before the cgroup: they live in it */
	/* The overlays and their tmpfs go before the cgroup their pages are
	 * charged to. */
	ns_sources_free(s->sources, s->plan->n_grants + 1);
	s->sources = NULL;
	s->ws = ws_run_free(s->ws);
	json_decref(s->ws_exit);
	s->pty = pty_free(s->pty);
	/* The seal follows sandbox.exit directly; its fsync runs while we take
	 * down what is left, and is waited for before the run returns. */
	if (s->audit) {
		const char *event = NULL;
		int failed, fd, dirfd;
		off_t size;

		s->res->audit_sealed = au_seal_detach(s->audit, &fd, &dirfd) == 0;
		failed = au_failed(s->audit, &event, &s->res->audit_failed_at);
		if (failed < 0) {
			s->res->audit_error = -failed;
			snprintf(s->res->audit_failed_event, sizeof(s->res->audit_failed_event),
				 "%s", event);
		}
		s->res->audit_records = au_records(s->audit);
		snprintf(s->res->audit_hash, sizeof(s->res->audit_hash), "%s",
			 au_last_hash(s->audit));
		/* The reserve goes back after the seal's fsync, on its thread. */
		if (fd >= 0)
			s->audit = au_close_defer(s->audit, &size);
		else
			s->audit = au_close(s->audit);
		sv_sync_begin(s, fd, dirfd, fd >= 0 ? size : -1);
	}
	/* What supervisors that were SIGKILLed left (their sandboxes died with
	 * them, see step_parent_death): while the seal goes to the disk. */
	(void)cg_sweep_stale(s->cg, SV_CGROUP_PREFIX);
	if (!s->unpriv)
		(void)spawn_sweep_stale();
	s->cg = cg_destroy(s->cg);
	/* We are the subreaper of everything we started: no zombie of ours is
	 * left to the host's init, but a proxy worker still exiting
	 * (px_worker_stop). */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	/* After the seal: the fanotify group is closed meanwhile (fswatch.c). */
	s->fw = fw_free(s->fw);
	s->fr = fr_free(s->fr);
	(void)safe_close(s->notify_fd);
	(void)safe_close(s->sync);
	(void)safe_close(s->pidfd);
	drain_signals(s);
	(void)safe_close(s->sigfd);
	(void)safe_close(s->wallfd);
	(void)safe_close(s->gracefd);
	(void)safe_close(s->samplefd);
	(void)safe_close(s->ep);
	(void)safe_close(s->exe_fd);
	(void)safe_close(s->child_sync);
	(void)safe_close(s->ctl);
	(void)safe_close(s->child_ctl);
	free(s->init_argv);
	/* Every boundary is durable before the run returns; a seal that did
	 * not reach the disk is no seal. (A written seal's fsyncs are the
	 * last boundary.) */
	if (sv_sync_wait(s) < 0)
		s->res->audit_sealed = false;
	if (s->mask_saved)
		sigprocmask(SIG_SETMASK, &s->saved_mask, NULL);
}

/* The sandbox is gone: its cow grants' changes go under the state directory. */
static void keep_workspaces(supervisor *s)
{
	char state[PATH_MAX - 64];
	sc_diag d = {0};

	if (!s->ws)
		return;
	if (sc_state_dir(s->unpriv, state, sizeof(state)) < 0 ||
	    ws_run_finish(s->ws, state, s->res->sandbox_id, s->res->audit_path, s->res->workspaces,
			  sizeof(s->res->workspaces), s->res->workspace_note,
			  sizeof(s->res->workspace_note), &s->ws_exit, &d) < 0)
		snprintf(s->res->workspace_error, sizeof(s->res->workspace_error), "%.250s",
			 d.message[0] ? d.message : "no state directory for the workspaces");
}

int sv_finish(supervisor *s, int r)
{
	if (r >= 0 && !s->setup_failed) {
		collect(s);
		sv_emit_start(s, -1);
		/* The sandbox is gone: every event it caused is queued by now. */
		(void)fw_finish(s->fw, sv_on_event, s);
		fr_finish(s->fr);
		keep_workspaces(s);
		emit_exit(s);
		return 0;
	}
	if (!s->res->sandbox_id[0])
		return r; /* refused before anything of the sandbox existed */
	if (!s->audit)
		sv_audit_open_after_failure(s);
	emit_refusal(s);
	if (r >= 0)
		r = s->diag->message[0] ? -EINVAL : -EIO;
	return r;
}

sc_run_result *sc_run_result_new(void)
{
	return pages_alloc(sizeof(sc_run_result));
}

void sc_run_result_free(sc_run_result *res)
{
	pages_free(res, sizeof(*res));
}
