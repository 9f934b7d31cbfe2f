/* SPDX-License-Identifier: MIT */
/*
 * Delegation from inside, the supervisor's side: a server on the sandbox's
 * spawn socket, which starts a sub-supervisor per accepted request
 * (core/spawn.c is that sub-supervisor). Protocol and decisions:
 * docs/tokens.md, "Delegation".
 *
 * Everything the agent sends is hostile. The authority of a child is never
 * computed here from the request: the request only becomes a caveat on the
 * parent's token, and the child runs with what tk_verify_extension() makes
 * of the result, which must extend the parent's token byte for byte.
 */
#include "core/delegation.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/receipt.h"
#include "base/cleanup.h"
#include "base/path.h"
#include "base/diag.h"
#include "base/io.h"
#include "compat/syscalls.h"
#include "token/token.h"

#define SPAWN_RUN_DIR "/run/sandcap"
/* A socket directory this old with nobody bound to its socket was left by
 * a supervisor that was killed (spawn_sweep_stale); younger ones may be
 * between mkdtemp and bind. */
#define SPAWN_STALE_S	60
#define SPAWN_SNDBUF	(4 << 20) /* room for one SPAWN_MAX_MSG message and more */
#define SPAWN_REPLY_BUF (1 << 20)

extern char **environ;

enum { TAG_LISTEN = 1, TAG_CONN, TAG_SUB };

typedef struct spawn_slot {
	bool used;
	int conn; /* the agent's connection, -1 once answered */
	int sock; /* to the sub-supervisor, -1 when none */
	pid_t pid;
	bool answered;
	unsigned cg_slot;  /* its place in the parent's cgroup, 0 when none */
	char child_id[40]; /* the child's sandbox id, once it said it */
	json_t *receipt;   /* for the child's spawn.start (audit/receipt.h) */
} spawn_slot;

struct spawn_server {
	const sc_plan *plan;
	char parent_id[40];
	cg_handle *cg;
	spawn_emit_fn emit;
	void *userdata;
	int ep, listen_fd, exe_fd;
	char dir[64];
	char path[96];
	char *base;	       /* the token every child's token extends */
	unsigned base_caveats; /* how many caveats it has */
	unsigned started;      /* children started over the sandbox's life */
	spawn_slot slots[SPAWN_MAX_SLOTS];
};

static int set_sndbuf(int fd, int bytes)
{
	/* FORCE: past wmem_max, we are root; messages are bounded above. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof(bytes)) < 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)) < 0)
		return -errno;
	return 0;
}

/* One whole SEQPACKET message of at most max bytes, NUL-terminated.
 * 0 with *ret NULL on EOF; -EMSGSIZE (message consumed) when too large. */
int spawn_recv_msg(int fd, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	ssize_t n = recv(fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);

	*ret = NULL;
	if (n < 0)
		return -errno;
	if (n == 0) {
		/* EOF, or an empty message: consume it either way. */
		char c;

		n = recv(fd, &c, 1, MSG_DONTWAIT);
		return n < 0 ? -errno : (n == 0 ? 0 : -EBADMSG);
	}
	if ((size_t)n > max) {
		char c;

		(void)recv(fd, &c, 1, MSG_DONTWAIT | MSG_TRUNC);
		return -EMSGSIZE;
	}
	buf = malloc((size_t)n + 1);
	if (!buf)
		return -ENOMEM;
	n = recv(fd, buf, (size_t)n, MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	*ret_len = (size_t)n;
	*ret = TAKE_PTR(buf);
	return 1;
}

int spawn_send_json(int fd, json_t *o)
{
	_cleanup_free_ char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	ssize_t n;

	json_decref(o);
	if (!s)
		return -ENOMEM;
	n = send(fd, s, strlen(s), MSG_NOSIGNAL);
	return n < 0 ? -errno : 0;
}

/* ---- supervisor side ---------------------------------------------------- */

static void slot_close_conn(spawn_server *srv, spawn_slot *sl)
{
	if (sl->conn >= 0)
		(void)epoll_ctl(srv->ep, EPOLL_CTL_DEL, sl->conn, NULL);
	sl->conn = safe_close(sl->conn);
}

static void slot_reap(spawn_slot *sl, bool force)
{
	if (sl->pid <= 0)
		return;
	if (force)
		(void)kill(sl->pid, SIGKILL);
	/* EOF on its socket means it is exiting: this does not wait long. */
	while (waitpid(sl->pid, NULL, 0) < 0 && errno == EINTR)
		;
	sl->pid = 0;
}

static void slot_release(spawn_server *srv, spawn_slot *sl, bool force)
{
	slot_close_conn(srv, sl);
	if (sl->sock >= 0)
		(void)epoll_ctl(srv->ep, EPOLL_CTL_DEL, sl->sock, NULL);
	sl->sock = safe_close(sl->sock);
	slot_reap(sl, force);
	if (sl->cg_slot)
		cg_release_delegate(srv->cg, sl->cg_slot);
	json_decref(sl->receipt);
	*sl = (spawn_slot){.conn = -1, .sock = -1};
}

static void reply(spawn_server *srv, spawn_slot *sl, json_t *o)
{
	if (sl->conn >= 0)
		(void)spawn_send_json(sl->conn, o);
	else
		json_decref(o);
	sl->answered = true;
	slot_close_conn(srv, sl);
}

static void refuse(spawn_server *srv, spawn_slot *sl, bool denied, const char *reason, json_t *req)
{
	json_t *argv = req ? json_object_get(req, "argv") : NULL;
	json_t *policy = req ? json_object_get(req, "policy") : NULL;

	if (denied) {
		/* What was asked is part of the record: it shows intent. */
		srv->emit("spawn.denied",
			  json_pack("{s:s, s:O?, s:O?}", "reason", reason, "argv",
				    json_is_array(argv) ? argv : NULL, "policy",
				    json_is_object(policy) ? policy : NULL),
			  srv->userdata);
	} else if (sl->child_id[0]) {
		srv->emit("spawn.error",
			  json_pack("{s:s, s:s, s:s}", "reason", reason, "child", sl->child_id,
				    "parent", srv->parent_id),
			  srv->userdata);
	} else {
		srv->emit("spawn.error", json_pack("{s:s}", "reason", reason), srv->userdata);
	}
	reply(srv, sl,
	      json_pack("{s:b, s:b, s:s}", "ok", false, "denied", denied, "error", reason));
}

/* Lexically inside dir: absolute, no "." or ".." component, dir or below. */
static bool path_below(const char *path, const char *dir)
{
	size_t n;

	if (path[0] != '/' || strstr(path, "/./") || strstr(path, "/../") || strstr(path, "//"))
		return false;
	n = strlen(path);
	if ((n >= 2 && strcmp(path + n - 2, "/.") == 0) ||
	    (n >= 3 && strcmp(path + n - 3, "/..") == 0))
		return false;
	return path_is_under(path, dir);
}

static bool under_some_grant(const sc_plan *parent, const char *path)
{
	for (size_t i = 0; i < parent->n_grants; i++)
		if (path_below(path, parent->grants[i].path))
			return true;
	return false;
}

/*
 * The fragment goes through the policy parser, which looks at the host (a
 * grant, a CA or a secret file must exist). A host path the parent cannot
 * reach is refused before that, always with the same words, so that a
 * refusal says nothing about what exists on the host.
 */
static int check_host_paths(const sc_plan *parent, json_t *frag, const char **reason)
{
	json_t *fs = json_object_get(frag, "fs"), *net = json_object_get(frag, "net");
	json_t *grants = json_object_get(fs, "grants"), *v, *x;
	size_t i;

	json_array_foreach(grants, i, v)
	{
		const char *path = json_string_value(json_object_get(v, "path"));

		if (path && !under_some_grant(parent, path)) {
			*reason = "a grant's path must lie inside one of the parent's grants";
			return -EPERM;
		}
	}
	x = json_object_get(fs, "runtime");
	if (x && !json_is_string(x)) {
		/* the intersection keeps the parent's runtime whatever is asked */
		const char *rootfs = json_string_value(json_object_get(x, "rootfs"));

		if (!(rootfs && parent->rootfs && strcmp(parent->rootfs, rootfs) == 0)) {
			*reason = "fs.runtime may only name the parent's rootfs";
			return -EPERM;
		}
	}
	x = json_object_get(net, "upstream_ca");
	if (json_is_string(x) &&
	    !(parent->upstream_ca && strcmp(parent->upstream_ca, json_string_value(x)) == 0)) {
		*reason = "net.upstream_ca may only name the parent's CA";
		return -EPERM;
	}
	json_array_foreach(json_object_get(net, "credentials"), i, v)
	{
		const char *vf = json_string_value(json_object_get(v, "value_file"));
		bool known = !vf;

		for (size_t k = 0; vf && k < parent->n_credentials; k++)
			known |= parent->credentials[k].value_file &&
				 strcmp(parent->credentials[k].value_file, vf) == 0;
		if (!known) {
			*reason = "net.credentials may only name the parent's secret files";
			return -EPERM;
		}
	}
	return 0;
}

/*
 * The request's policy fragment, with the child's spawn depth forced below
 * ours. A depth the parent does not have is left as asked so that
 * attenuation refuses it as a widening, with the reason.
 */
static int child_fragment(const spawn_server *srv, json_t *req, char **ret, const char **reason)
{
	json_t *frag = json_object_get(req, "policy");
	json_t *sp, *md;
	json_int_t depth = (json_int_t)srv->plan->spawn_max_depth - 1;
	_cleanup_(json_decrefp) json_t *copy = NULL;

	if (frag && !json_is_object(frag)) {
		*reason = "\"policy\" must be an object";
		return -EINVAL;
	}
	if (frag && check_host_paths(srv->plan, frag, reason) < 0)
		return -EPERM;
	copy = frag ? json_deep_copy(frag) : json_object();
	if (!copy)
		return -ENOMEM;
	sp = json_object_get(copy, "spawn");
	if (!sp) {
		sp = json_object();
		if (json_object_set_new(copy, "spawn", sp) < 0)
			return -ENOMEM;
	}
	if (!json_is_object(sp)) {
		*reason = "\"policy.spawn\" must be an object";
		return -EINVAL;
	}
	md = json_object_get(sp, "max_depth");
	if (md && !json_is_integer(md)) {
		*reason = "\"policy.spawn.max_depth\" must be an integer";
		return -EINVAL;
	}
	if (!md || (json_integer_value(md) >= depth &&
		    json_integer_value(md) <= (json_int_t)srv->plan->spawn_max_depth))
		if (json_object_set_new(sp, "max_depth", json_integer(depth)) < 0)
			return -ENOMEM;
	*ret = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
	return *ret ? 0 : -ENOMEM;
}

/*
 * A token the agent attenuated itself (macaroon-style, no key needed): it
 * must extend ours. Host paths in the caveats it added are checked as a
 * request's are, before anything looks at the host, so that a refusal says
 * nothing about what exists there.
 */
static int agent_token(spawn_server *srv, const char *tok, sc_plan **ret_plan, char *reason,
		       size_t reason_size)
{
	_cleanup_(tk_decoded_freep) tk_decoded *dec = NULL;
	const char *why = NULL;
	sc_diag d = {0};
	int r;

	r = tk_decode(tok, &dec, &d);
	if (r < 0) {
		snprintf(reason, reason_size, "%s", d.message[0] ? d.message : strerror(-r));
		return r == -ENOMEM ? r : -EPERM;
	}
	for (size_t i = srv->base_caveats; i < dec->n_caveats; i++) {
		_cleanup_(json_decrefp) json_t *cav = json_loads(dec->caveats_json[i], 0, NULL);
		json_t *pol = json_object_get(cav, "policy");

		if (json_is_object(pol) && check_host_paths(srv->plan, pol, &why) < 0) {
			snprintf(reason, reason_size, "token caveat %zu: %s", i + 1, why);
			return -EPERM;
		}
	}
	d = (sc_diag){0};
	r = tk_verify_extension(srv->base, tok, time(NULL), ret_plan, NULL, &d);
	if (r < 0) {
		snprintf(reason, reason_size, "%s", d.message[0] ? d.message : strerror(-r));
		return r == -ENOMEM ? r : -EPERM;
	}
	return 0;
}

/*
 * The child's token and effective plan: from our token (or the agent's
 * extension of it), the request's fragment appended as a caveat, then the
 * whole verified as an extension of our token. Whatever was computed on
 * the way, the child gets what verification makes of the signed bytes.
 */
static int child_plan(spawn_server *srv, const char *from, const char *fragment, char **ret_token,
		      sc_plan **ret_plan, tk_info *ret_info, char *reason, size_t reason_size)
{
	_cleanup_free_ char *child_tok = NULL;
	sc_diag d = {0};
	int r;

	if (fragment) {
		r = tk_attenuate(from, fragment, strlen(fragment), 0, &child_tok, &d);
		if (r < 0) {
			snprintf(reason, reason_size, "%s%s%s", d.path[0] ? d.path : "",
				 d.path[0] ? ": " : "", d.message[0] ? d.message : strerror(-r));
			return r == -ENOMEM ? r : -EPERM;
		}
	} else {
		child_tok = strdup(from);
		if (!child_tok)
			return -ENOMEM;
	}
	d = (sc_diag){0};
	r = tk_verify_extension(srv->base, child_tok, time(NULL), ret_plan, ret_info, &d);
	if (r < 0) {
		snprintf(reason, reason_size, "the child's token does not verify: %s",
			 d.message[0] ? d.message : strerror(-r));
		return r == -ENOMEM ? r : -EPERM;
	}
	*ret_token = TAKE_PTR(child_tok);
	return 0;
}

static int validate_request(json_t *req, const char **reason)
{
	json_t *argv = json_object_get(req, "argv"), *in = json_object_get(req, "stdin"), *v;
	const char *k;
	size_t i;

	json_object_foreach(req, k, v)
	{
		if (strcmp(k, "policy") != 0 && strcmp(k, "argv") != 0 && strcmp(k, "stdin") != 0 &&
		    strcmp(k, "token") != 0) {
			*reason =
			    "unknown key in the request (expected policy, argv, stdin, token)";
			return -EINVAL;
		}
	}
	v = json_object_get(req, "token");
	if (v && (!json_is_string(v) || json_string_length(v) > TK_MAX_TOKEN_BYTES ||
		  strlen(json_string_value(v)) != json_string_length(v))) {
		*reason = "\"token\" must be a token string";
		return -EINVAL;
	}
	if (!json_is_array(argv) || json_array_size(argv) == 0 ||
	    json_array_size(argv) > SPAWN_MAX_ARGV) {
		*reason = "\"argv\" must be a non-empty array of at most 256 strings";
		return -EINVAL;
	}
	json_array_foreach(argv, i, v)
	{
		if (!json_is_string(v) || json_string_length(v) > SPAWN_MAX_ARG ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			*reason = "\"argv\" elements must be strings without NUL of at most 4096 "
				  "bytes";
			return -EINVAL;
		}
	}
	if (in && (!json_is_string(in) || json_string_length(in) > SPAWN_MAX_STDIN)) {
		*reason = "\"stdin\" must be a string of at most 65536 bytes";
		return -EINVAL;
	}
	return 0;
}

/* What the sandboxes of a sub-supervisor get back: ours. */
static int own_oom_score_adj(void)
{
	_cleanup_free_ char *buf = NULL;
	long v;

	if (io_read_file_at(AT_FDCWD, "/proc/self/oom_score_adj", 32, &buf, NULL) < 0)
		return 0;
	v = strtol(buf, NULL, 10);
	return v >= -1000 && v <= 1000 ? (int)v : 0;
}

/* fork + exec of our own binary: the sub-supervisor starts fresh, with none
 * of this process's memory (parsed hostile input, the log's state). */
static int start_sub(const spawn_server *srv, pid_t *ret_pid, int *ret_sock)
{
	int pair[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
		return -errno;
	(void)set_sndbuf(pair[0], SPAWN_SNDBUF);
	(void)set_sndbuf(pair[1], SPAWN_SNDBUF);
	pid = fork();
	if (pid < 0) {
		int r = -errno;

		(void)close(pair[0]);
		(void)close(pair[1]);
		return r;
	}
	if (pid == 0) {
		static char *const argv[] = {(char *)"sandcap", (char *)"run",
					     (char *)"--spawned-by", (char *)"3", NULL};
		sigset_t none;
		int null;

		/* It dies with us; the parent's cgroup kill takes its sandbox. */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* In the parent's memory cgroup, the OOM killer must pick the
		 * agents, not the process that reports on them. */
		null = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		if (null >= 0) {
			(void)!write(null, "-1000", 5);
			(void)close(null);
		}
		null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(pair[1], 3) < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
		    dup2(null, 2) < 0)
			_exit(125);
		if (sys_close_range(4, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
			_exit(125);
		syscall(SYS_execveat, srv->exe_fd, "", argv, environ, AT_EMPTY_PATH);
		_exit(125);
	}
	(void)close(pair[1]);
	*ret_pid = pid;
	*ret_sock = pair[0];
	return 0;
}

static void handle_request(spawn_server *srv, spawn_slot *sl)
{
	_cleanup_free_ char *buf = NULL, *fragment = NULL;
	_cleanup_(json_decrefp) json_t *req = NULL;
	_cleanup_(sc_plan_freep) sc_plan *plan = NULL, *agent_plan = NULL;
	_cleanup_free_ char *plan_json = NULL, *child_tok = NULL;
	const char *why = NULL, *from;
	json_t *jtok;
	char reason[1024];
	tk_info info = {0};
	json_error_t jerr;
	json_t *msg;
	size_t len = 0;
	int r, sock = -1;
	pid_t pid = 0;
	struct epoll_event ev = {.events = EPOLLIN};

	r = spawn_recv_msg(sl->conn, SPAWN_MAX_REQUEST, &buf, &len);
	if (r == -EAGAIN || r == -EINTR)
		return;
	if (r == 0 || (r < 0 && r != -EMSGSIZE)) {
		slot_release(srv, sl, false); /* hung up before asking */
		return;
	}
	if (r == -EMSGSIZE) {
		refuse(srv, sl, true, "request larger than 128 KiB", NULL);
		slot_release(srv, sl, false);
		return;
	}
	req = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!req || !json_is_object(req)) {
		snprintf(reason, sizeof(reason), "request is not a JSON object%s%s",
			 req ? "" : ": ", req ? "" : jerr.text);
		refuse(srv, sl, true, reason, NULL);
		slot_release(srv, sl, false);
		return;
	}
	if (json_object_size(req) == 1 && json_is_string(json_object_get(req, "get")) &&
	    strcmp(json_string_value(json_object_get(req, "get")), "token") == 0) {
		/* The agent's own token, to attenuate itself (docs/tokens.md). */
		reply(srv, sl, json_pack("{s:b, s:s}", "ok", true, "token", srv->base));
		slot_release(srv, sl, false);
		return;
	}
	if (validate_request(req, &why) < 0) {
		refuse(srv, sl, true, why, req);
		slot_release(srv, sl, false);
		return;
	}
	if (srv->started >= srv->plan->spawn_max_children) {
		snprintf(reason, sizeof(reason),
			 "spawn.max_children %u reached: no more children may be started",
			 srv->plan->spawn_max_children);
		refuse(srv, sl, true, reason, req);
		slot_release(srv, sl, false);
		return;
	}
	from = srv->base;
	jtok = json_object_get(req, "token");
	if (jtok) {
		r = agent_token(srv, json_string_value(jtok), &agent_plan, reason, sizeof(reason));
		if (r < 0) {
			refuse(srv, sl, r != -ENOMEM, reason, req);
			slot_release(srv, sl, false);
			return;
		}
		from = json_string_value(jtok);
	}
	/* Our caveat: the request's fragment and the child's depth below ours,
	 * unless the agent's own caveats already said all of it. */
	if (!jtok || json_object_get(req, "policy") ||
	    agent_plan->spawn_max_depth >= srv->plan->spawn_max_depth) {
		r = child_fragment(srv, req, &fragment, &why);
		if (r < 0) {
			refuse(srv, sl, r != -ENOMEM, why ? why : strerror(-r), req);
			slot_release(srv, sl, false);
			return;
		}
	}
	r = child_plan(srv, from, fragment, &child_tok, &plan, &info, reason, sizeof(reason));
	if (r < 0) {
		refuse(srv, sl, r != -ENOMEM, reason, req);
		slot_release(srv, sl, false);
		return;
	}
	plan_json = plan_to_json(plan);
	sl->receipt = au_receipt_build(srv->plan, plan, child_tok, srv->base_caveats);
	/* The token's id is the root's: the chain leads back to the token the
	 * outermost sandbox was started with (or its per-run token). */
	msg =
	    json_pack("{s:o, s:O, s:O?, s:s, s:{s:s, s:i, s:s}, s:i}", "plan",
		      plan_json ? json_loads(plan_json, 0, NULL) : NULL, "argv",
		      json_object_get(req, "argv"), "stdin", json_object_get(req, "stdin"),
		      "parent", srv->parent_id, "token", "id", info.id, "caveats",
		      (int)info.n_caveats, "text", child_tok, "oom_score_adj", own_oom_score_adj());
	if (!msg) {
		refuse(srv, sl, false, "out of memory", req);
		slot_release(srv, sl, false);
		return;
	}
	r = start_sub(srv, &pid, &sock);
	if (r < 0) {
		json_decref(msg);
		snprintf(reason, sizeof(reason), "cannot start the sub-supervisor: %s",
			 strerror(-r));
		refuse(srv, sl, false, reason, req);
		slot_release(srv, sl, false);
		return;
	}
	sl->pid = pid;
	sl->sock = sock;
	srv->started++;
	/* Into the parent sandbox's cgroup before it reads its request (and
	 * creates the child's cgroup under its own): the parent's memory, CPU
	 * and pids limits then cover the child too. */
	if (srv->cg) {
		r = cg_attach_delegate(srv->cg, srv->started, pid);
		if (r >= 0)
			sl->cg_slot = srv->started;
		if (r < 0) {
			json_decref(msg);
			snprintf(reason, sizeof(reason),
				 "cannot move the sub-supervisor into the parent's cgroup: %s",
				 strerror(-r));
			refuse(srv, sl, false, reason, req);
			slot_release(srv, sl, true);
			return;
		}
	}
	r = spawn_send_json(sock, msg);
	if (r < 0) {
		snprintf(reason, sizeof(reason), "cannot reach the sub-supervisor: %s",
			 strerror(-r));
		refuse(srv, sl, false, reason, req);
		slot_release(srv, sl, true);
		return;
	}
	/* The answer comes when the child ends; the agent just waits. */
	(void)epoll_ctl(srv->ep, EPOLL_CTL_DEL, sl->conn, NULL);
	ev.data.u64 = (uint64_t)TAG_SUB << 32 | (uint64_t)(sl - srv->slots);
	if (epoll_ctl(srv->ep, EPOLL_CTL_ADD, sock, &ev) < 0) {
		refuse(srv, sl, false, "cannot watch the sub-supervisor", req);
		slot_release(srv, sl, true);
	}
}

/* An event of the child (or of a grandchild, already tagged by its own
 * parent): into our log, with the child's and our ids. */
static void forward_event(spawn_server *srv, spawn_slot *sl, json_t *msg)
{
	const char *sandbox = json_string_value(json_object_get(msg, "sandbox"));
	const char *event = json_string_value(json_object_get(msg, "event"));
	json_t *data = json_object_get(msg, "data");

	if (!sandbox || !event || !json_is_object(data))
		return;
	/* The child's life is not ours: keep sandbox.* for the parent's own. */
	if (strcmp(event, "sandbox.start") == 0)
		event = "spawn.start";
	else if (strcmp(event, "sandbox.exit") == 0)
		event = "spawn.exit";
	if (!json_object_get(data, "child")) {
		/* Our own child's start: with the receipt of what we delegated. */
		if (strcmp(event, "spawn.start") == 0 && sl->receipt)
			(void)json_object_set_new(data, "receipt", TAKE_PTR(sl->receipt));
		(void)json_object_set_new(data, "child", json_string(sandbox));
		(void)json_object_set_new(data, "parent", json_string(srv->parent_id));
	}
	srv->emit(event, json_incref(data), srv->userdata);
}

/* 1: a message was handled; 0: nothing to read now; -1: the slot is gone. */
static int handle_sub(spawn_server *srv, spawn_slot *sl)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_(json_decrefp) json_t *msg = NULL;
	json_t *res;
	size_t len = 0;
	int r = spawn_recv_msg(sl->sock, SPAWN_MAX_MSG, &buf, &len);

	if (r == -EAGAIN || r == -EINTR)
		return 0;
	if (r == -EMSGSIZE)
		return 1;
	if (r <= 0) {
		if (!sl->answered)
			refuse(srv, sl, false,
			       "the child ended without a result (killed with its parent, or by "
			       "the parent's memory limit)",
			       NULL);
		slot_release(srv, sl, false);
		return -1;
	}
	msg = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(msg))
		return 1;
	res = json_object_get(msg, "result");
	if (!sl->child_id[0] && json_is_string(json_object_get(msg, "sandbox")))
		snprintf(sl->child_id, sizeof(sl->child_id), "%s",
			 json_string_value(json_object_get(msg, "sandbox")));
	if (json_object_get(msg, "event")) {
		forward_event(srv, sl, msg);
	} else if (json_is_object(res) && !sl->answered) {
		(void)json_object_set_new(res, "ok", json_true());
		reply(srv, sl, json_incref(res));
	} else if (json_is_string(json_object_get(msg, "error")) && !sl->answered) {
		refuse(srv, sl, false, json_string_value(json_object_get(msg, "error")), NULL);
	}
	return 1;
}

static void handle_listen(spawn_server *srv)
{
	for (;;) {
		int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct epoll_event ev = {.events = EPOLLIN};
		spawn_slot *sl = NULL;

		if (fd < 0)
			return;
		for (size_t i = 0; i < SPAWN_MAX_SLOTS; i++)
			if (!srv->slots[i].used) {
				sl = &srv->slots[i];
				break;
			}
		if (!sl) {
			(void)spawn_send_json(fd, json_pack("{s:b, s:b, s:s}", "ok", false,
							    "denied", false, "error",
							    "too many requests at once"));
			(void)close(fd);
			continue;
		}
		(void)set_sndbuf(fd, SPAWN_REPLY_BUF);
		*sl = (spawn_slot){.used = true, .conn = fd, .sock = -1};
		ev.data.u64 = (uint64_t)TAG_CONN << 32 | (uint64_t)(sl - srv->slots);
		if (epoll_ctl(srv->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			slot_release(srv, sl, false);
	}
}

void spawn_server_dispatch(spawn_server *srv)
{
	struct epoll_event evs[16];
	int n;

	if (!srv)
		return;
	n = epoll_wait(srv->ep, evs, 16, 0);
	for (int i = 0; i < n; i++) {
		uint32_t tag = (uint32_t)(evs[i].data.u64 >> 32);
		uint32_t idx = (uint32_t)evs[i].data.u64;
		spawn_slot *sl = idx < SPAWN_MAX_SLOTS ? &srv->slots[idx] : NULL;

		if (tag == TAG_LISTEN)
			handle_listen(srv);
		else if (tag == TAG_CONN && sl && sl->used && sl->conn >= 0)
			handle_request(srv, sl);
		else if (tag == TAG_SUB && sl && sl->used && sl->sock >= 0)
			(void)handle_sub(srv, sl);
	}
}

/*
 * The token every child's token extends. A parent started from a token:
 * that token (verified by whoever started us), plus a caveat binding what
 * the parent runs with when that is less (the wall clock as an expiry, a
 * plan narrower than the token's). A parent started from a policy: a token
 * of its plan minted under a key drawn here and forgotten at once, since
 * checking an extension needs only the token's own signature.
 */
static int make_base(spawn_server *srv, const char *token, sc_diag *d)
{
	_cleanup_(tk_decoded_freep) tk_decoded *dec = NULL;
	_cleanup_free_ char *pj = NULL;
	int64_t life = TK_MAX_TTL_S;
	time_t now = time(NULL), exp = 0;
	bool same;
	int r;

	if (srv->plan->wall_ns != PLAN_UNLIMITED) {
		uint64_t s = (srv->plan->wall_ns + 999999999ULL) / 1000000000ULL;

		life = s < 1 ? 1 : (s > (uint64_t)TK_MAX_TTL_S ? TK_MAX_TTL_S : (int64_t)s);
	}
	if (!token) {
		uint8_t key[TK_KEY_LEN];

		if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
			return -EIO;
		r = tk_mint(srv->plan, key, srv->parent_id, now, life, &srv->base, d);
		explicit_bzero(key, sizeof(key));
		return r;
	}
	r = tk_decode(token, &dec, d);
	if (r < 0)
		return r;
	if (srv->plan->wall_ns != PLAN_UNLIMITED && now + life < dec->info.exp)
		exp = now + life;
	same = dec->effective && plan_equal(dec->effective, srv->plan);
	if (same && exp == 0) {
		srv->base = strdup(token);
		return srv->base ? 0 : -ENOMEM;
	}
	pj = same ? NULL : plan_to_json(srv->plan);
	if (!same && !pj)
		return -ENOMEM;
	r = tk_attenuate(token, pj, pj ? strlen(pj) : 0, exp, &srv->base, d);
	if (r != -EINVAL || !pj)
		return r;
	/* "Narrows nothing": our plan is the token's set in another
	 * representation. Bind the expiry alone, if any. */
	if (exp == 0) {
		srv->base = strdup(token);
		return srv->base ? 0 : -ENOMEM;
	}
	return tk_attenuate(token, NULL, 0, exp, &srv->base, d);
}

void spawn_server_set_cgroup(spawn_server *srv, cg_handle *cg)
{
	if (srv)
		srv->cg = cg;
}

int spawn_server_new(const sc_plan *plan, const char *sandbox_id, const char *token,
		     spawn_emit_fn emit, void *userdata, spawn_server **ret, sc_diag *d)
{
	_cleanup_free_ spawn_server *srv = calloc(1, sizeof(*srv));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)TAG_LISTEN << 32};
	int r;

	if (!srv)
		return -ENOMEM;
	srv->plan = plan;
	snprintf(srv->parent_id, sizeof(srv->parent_id), "%s", sandbox_id);
	srv->emit = emit;
	srv->userdata = userdata;
	srv->ep = srv->listen_fd = srv->exe_fd = -1;
	for (size_t i = 0; i < SPAWN_MAX_SLOTS; i++)
		srv->slots[i] = (spawn_slot){.conn = -1, .sock = -1};
	{
		_cleanup_(tk_decoded_freep) tk_decoded *dec = NULL;
		sc_diag td = {0};

		r = make_base(srv, token, &td);
		if (r >= 0)
			r = tk_decode(srv->base, &dec, &td);
		if (r < 0) {
			spawn_server_free(TAKE_PTR(srv));
			return diag_fail(d, r, "spawn", "the children's token: %.400s",
					 td.message[0] ? td.message : strerror(-r));
		}
		srv->base_caveats = (unsigned)dec->n_caveats;
	}
	/* The binary we re-exec for each child, pinned now. */
	srv->exe_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (srv->exe_fd < 0) {
		r = -errno;
		goto fail;
	}
	/* A fresh directory only root can enter: nobody on the host can
	 * connect, and the sandbox reaches the socket only through its bind. */
	if (mkdir(SPAWN_RUN_DIR, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		goto fail;
	}
	snprintf(srv->dir, sizeof(srv->dir), SPAWN_RUN_DIR "/spawn-XXXXXX");
	if (!mkdtemp(srv->dir)) {
		srv->dir[0] = '\0';
		r = -errno;
		goto fail;
	}
	snprintf(srv->path, sizeof(srv->path), "%s/spawn.sock", srv->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", srv->path);
	srv->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (srv->listen_fd < 0 || bind(srv->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(srv->path, 0666) < 0 || listen(srv->listen_fd, SPAWN_MAX_SLOTS) < 0) {
		r = -errno;
		goto fail;
	}
	srv->ep = epoll_create1(EPOLL_CLOEXEC);
	if (srv->ep < 0 || epoll_ctl(srv->ep, EPOLL_CTL_ADD, srv->listen_fd, &ev) < 0) {
		r = -errno;
		goto fail;
	}
	*ret = TAKE_PTR(srv);
	return 0;
fail:
	spawn_server_free(TAKE_PTR(srv));
	return diag_fail(d, r, "spawn", "cannot create the spawn socket: %s", strerror(-r));
}

/* Is path a socket someone listens on? /proc/net/unix lists every bound
 * socket of our network namespace with its path (unix(7)); looking there
 * leaves a live server's socket untouched (a connect would be a request). */
static bool socket_is_bound(const char *path)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/net/unix", "re");
	char line[PATH_MAX + 128];
	size_t n = strlen(path);

	if (!f)
		return true; /* cannot tell: leave it */
	while (fgets(line, sizeof(line), f)) {
		char *end = line + strcspn(line, "\n");

		*end = '\0';
		if ((size_t)(end - line) > n && end[-(ptrdiff_t)n - 1] == ' ' &&
		    strcmp(end - n, path) == 0)
			return true;
	}
	return false;
}

unsigned spawn_sweep_stale(void)
{
	_cleanup_close_ int dfd = open(SPAWN_RUN_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
	time_t now = time(NULL);
	unsigned removed = 0;
	struct dirent *e;

	if (!dir)
		return 0;
	dfd = -1; /* the DIR owns it now */
	while ((e = readdir(dir))) {
		char sock[PATH_MAX];
		struct stat st;

		if (strncmp(e->d_name, "spawn-", 6) != 0 ||
		    fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || now - st.st_mtime < SPAWN_STALE_S)
			continue;
		snprintf(sock, sizeof(sock), SPAWN_RUN_DIR "/%s/spawn.sock", e->d_name);
		if (socket_is_bound(sock))
			continue;
		(void)unlink(sock);
		if (unlinkat(dirfd(dir), e->d_name, AT_REMOVEDIR) == 0)
			removed++;
	}
	closedir(dir);
	return removed;
}

const char *spawn_server_socket(const spawn_server *srv)
{
	return srv ? srv->path : NULL;
}

int spawn_server_fd(const spawn_server *srv)
{
	return srv ? srv->ep : -1;
}

spawn_server *spawn_server_free(spawn_server *srv)
{
	if (!srv)
		return NULL;
	for (size_t i = 0; i < SPAWN_MAX_SLOTS; i++) {
		spawn_slot *sl = &srv->slots[i];

		if (!sl->used)
			continue;
		/* A child still running ends with its parent. Once its
		 * supervisor is gone, what it had sent is still queued: into
		 * the log, then the end of the socket says it ended. */
		slot_reap(sl, true);
		while (sl->used && sl->sock >= 0 && handle_sub(srv, sl) > 0)
			;
		if (sl->used)
			slot_release(srv, sl, true);
	}
	if (srv->path[0])
		(void)unlink(srv->path);
	if (srv->dir[0])
		(void)rmdir(srv->dir);
	(void)safe_close(srv->listen_fd);
	(void)safe_close(srv->exe_fd);
	(void)safe_close(srv->ep);
	free(srv->base);
	free(srv);
	return NULL;
}
