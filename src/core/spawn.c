/* SPDX-License-Identifier: MIT */
/*
 * The sub-supervisor (`sandcap run --spawned-by FD`, docs/tokens.md,
 * "Delegation"): a mode of the supervisor base whose events all go to the
 * parent's supervisor (core/delegation.c) over FD, and whose sandbox gets
 * back the oom_score_adj this process gave up to report on it.
 */
#include "core/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/cleanup.h"
#include "base/diag.h"
#include "base/io.h"
#include "core/delegation.h"
#include "core/supervisor.h"

typedef struct sub_mode {
	int fd;		   /* to the parent's supervisor */
	int oom_score_adj; /* what the sandbox gets back */
} sub_mode;

/* sc_mode_ops.sink: no log of our own, the parent's supervisor writes it. */
static void sub_sink(void *mode, const char *sandbox_id, const char *event, json_t *data)
{
	sub_mode *m = mode;

	(void)spawn_send_json(m->fd, json_pack("{s:s, s:s, s:o}", "sandbox", sandbox_id, "event",
					       event, "data", data));
}

/* Written with our privilege, this also resets the floor the sandbox could
 * lower itself to without it (oom_score_adj_min, fs/proc/base.c), so a
 * child cannot make itself unkillable as its sub-supervisor is. Before the
 * sandbox runs anything: its processes inherit the value. */
static int sub_child_created(void *mode, pid_t pid, sc_diag *reterr_diag)
{
	sub_mode *m = mode;
	char path[64], num[16];

	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)pid);
	snprintf(num, sizeof(num), "%d", m->oom_score_adj);
	if (io_write_file_at(AT_FDCWD, path, num) < 0)
		return diag_fail(reterr_diag, -EPERM, "oom_score_adj",
				 "cannot reset the sandbox's oom_score_adj");
	return 0;
}

static const sc_mode_ops sub_mode_ops = {
    .sink = sub_sink,
    .on_child_created = sub_child_created,
};

static int memfd_with(const char *name, const char *content, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if ((len && io_write_all(fd, content, len) < 0) || lseek(fd, 0, SEEK_SET) < 0) {
		(void)close(fd);
		return -EIO;
	}
	return fd;
}

/* What the child wrote, at most SPAWN_MAX_OUTPUT bytes of it. */
static json_t *output(int fd, bool *ret_truncated)
{
	_cleanup_free_ char *buf = malloc(SPAWN_MAX_OUTPUT);
	struct stat st;
	ssize_t n;

	*ret_truncated = false;
	if (!buf || fstat(fd, &st) < 0)
		return json_string("");
	n = pread(fd, buf, SPAWN_MAX_OUTPUT, 0);
	if (n < 0)
		n = 0;
	*ret_truncated = st.st_size > n;
	return au_str(buf, (size_t)n, SPAWN_MAX_OUTPUT + 16);
}

static int child_fail(int fd, const char *what, const char *detail)
{
	char msg[1024];

	snprintf(msg, sizeof(msg), "%s%s%s", what, detail[0] ? ": " : "", detail);
	(void)spawn_send_json(fd, json_pack("{s:s}", "error", msg));
	return 125;
}

int spawn_child_main(int fd)
{
	_cleanup_free_ char *buf = NULL, *plan_text = NULL;
	_cleanup_(json_decrefp) json_t *req = NULL;
	_cleanup_(sc_plan_freep) sc_plan *plan = NULL;
	_cleanup_free_ char **argv = NULL;
	_cleanup_close_ int in = -1, out = -1, err = -1;
	json_t *jargv, *jin, *v;
	_cleanup_(sc_run_result_freep) sc_run_result *res = sc_run_result_new();
	sc_run_opts o = {0};
	sub_mode mode = {.fd = fd};
	sc_diag d = {0};
	bool t_out, t_err;
	size_t len = 0, i;
	socklen_t tlen = sizeof(int);
	int r, type = 0;

	/* Only ever started by a supervisor, with its end of a SEQPACKET pair:
	 * this is no way to run a sandbox without a log. */
	if (!res || fd < 3 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) < 0 ||
	    type != SOCK_SEQPACKET || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return 125;
	/* Blocking: the supervisor sends the request once we sit in its cgroup. */
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};

		if (poll(&pfd, 1, -1) >= 0 || errno != EINTR)
			break;
	}
	r = spawn_recv_msg(fd, SPAWN_MAX_MSG, &buf, &len);
	if (r <= 0)
		return 125;
	req = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	jargv = json_object_get(req, "argv");
	jin = json_object_get(req, "stdin");
	plan_text = json_dumps(json_object_get(req, "plan"), JSON_COMPACT);
	if (!json_is_array(jargv) || !plan_text)
		return child_fail(fd, "malformed request from the supervisor", "");
	r = plan_parse(plan_text, strlen(plan_text), &plan, &d);
	if (r < 0)
		return child_fail(fd, "the child's plan does not validate", d.message);
	argv = calloc(json_array_size(jargv) + 1, sizeof(char *));
	if (!argv)
		return 125;
	json_array_foreach(jargv, i, v)
	{
		if (!json_is_string(v))
			return child_fail(fd, "malformed argv", "");
		argv[i] = (char *)json_string_value(v);
	}
	/* The child's 0-2: its stdin, and two files for what it writes. memfd
	 * pages are charged to the writer's memory cgroup, so the child's (and
	 * the parent's) memory limit bounds them. */
	in = memfd_with("spawn-stdin", jin ? json_string_value(jin) : "",
			jin ? json_string_length(jin) : 0);
	out = memfd_with("spawn-stdout", NULL, 0);
	err = memfd_with("spawn-stderr", NULL, 0);
	if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		return child_fail(fd, "cannot set up the child's standard files", "");

	o.plan = plan;
	o.argv = argv;
	o.policy_source = "spawn";
	o.policy_digest = "";
	o.token_id = json_string_value(json_object_get(json_object_get(req, "token"), "id"));
	o.token_caveats =
	    (unsigned)json_integer_value(json_object_get(json_object_get(req, "token"), "caveats"));
	o.token = json_string_value(json_object_get(json_object_get(req, "token"), "text"));
	mode.oom_score_adj = (int)json_integer_value(json_object_get(req, "oom_score_adj"));
	if (!o.token || mode.oom_score_adj < -1000 || mode.oom_score_adj > 1000)
		return child_fail(fd, "malformed request from the supervisor", "");
	o.mode = &sub_mode_ops;
	o.mode_data = &mode;
	r = sc_run(&o, res, &d);
	if (r < 0) {
		char what[sizeof(d.path) + sizeof(d.message) + 4];

		snprintf(what, sizeof(what), "%s%s%s", d.path, d.path[0] ? ": " : "",
			 d.message[0] ? d.message : strerror(-r));
		return child_fail(fd, "cannot set up the child sandbox", what);
	}
	{
		json_t *so = output(out, &t_out), *se = output(err, &t_err);

		(void)spawn_send_json(
		    fd, json_pack("{s:{s:s, s:i, s:i, s:b, s:b, s:o, s:b, s:o, s:b, s:I}}",
				  "result", "sandbox", res->sandbox_id, "status", res->exit_status,
				  "signal", res->signal, "timed_out", res->timed_out, "oom_killed",
				  res->oom_killed, "stdout", so, "stdout_truncated", t_out,
				  "stderr", se, "stderr_truncated", t_err, "wall_ms",
				  (json_int_t)(res->wall_ns / 1000000)));
	}
	return 0;
}
