/* SPDX-License-Identifier: MIT */
/*
 * The daemon's own state, shared by its files (not an interface of
 * src/serve): the daemon and a connection (server.c), answering a request
 * (reply.c) and the file endpoints (http-files.c).
 */
#pragma once

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "serve/backend.h"
#include "serve/commands.h"
#include "serve/request.h"
#include "serve/server.h"
#include "serve/table.h"
#include "token/token.h"

#define SV_IO_TIMEOUT_S 30 /* a client that does not read an answer for this long is gone */
/* A connection is held only while it makes progress: without a request
 * under way it is closed after SV_IDLE_S; a head must be whole within
 * SV_HEAD_S of its first byte, and a body within SV_BODY_S of its head.
 * Deadlines for the whole, since a timeout per read is reset by every byte
 * a slow client trickles. */
#define SV_IDLE_S	10
#define SV_HEAD_S	10
#define SV_BODY_S	60
#define SV_READ_CHUNK	65536u
#define SV_POOL_RETRY_S 5
/* A refill waits until hand-outs pause this long (or its pool is empty):
 * a session start takes the CPU the first commands of the sessions just
 * handed out need, and serving those is what the pool is for. */
#define SV_POOL_QUIET_MS 25

typedef struct sv_pol {
	char name[128];
	char file[PATH_MAX];
	char digest[65];
	unsigned size;
	sv_session ready[SV_MAX_POOL];
	size_t n_ready;
	unsigned filling;
	time_t retry_at; /* after a failed start */
} sv_pol;

typedef struct sv_uid_use {
	uid_t uid;
	unsigned conns;
	unsigned evicting; /* of conns, closing: their places already given away */
	size_t buffered;
} sv_uid_use;

struct sv_conn;

typedef struct sv_daemon {
	const sv_config *cfg;
	sv_table table;
	sv_pol pols[SV_MAX_POLICIES];
	size_t n_pols;
	pthread_mutex_t pool_lock;
	pthread_cond_t pool_cond;
	int64_t last_handout_ms; /* CLOCK_REALTIME, as pool_cond's waits */
	bool stopping;
	char tmpdir[PATH_MAX]; /* inline policies, written for `session start` */
	/* who holds the connections and the request buffers */
	pthread_mutex_t use_lock;
	sv_uid_use uses[2 * SV_MAX_CONNECTIONS]; /* conns < 2 * SV_MAX_CONNECTIONS */
	size_t n_uses;
	unsigned conns, evicting;
	size_t buffered;
	struct sv_conn *conn_list;
	uint8_t key[TK_KEY_LEN];
	bool has_key;
	sv_cmds *cmds;
} sv_daemon;

typedef struct sv_conn {
	sv_daemon *d;
	int fd;
	uid_t uid;
	pid_t pid;
	char *buf;
	size_t len, cap;
	bool keep_alive;
	/* under d->use_lock: */
	struct sv_conn *prev, *next;
	bool idle;    /* waiting for the first byte of a request */
	bool evicted; /* its place given to a new connection: it closes */
	int64_t idle_since;
} sv_conn;

#define LOG(d, ...)                                                                                \
	do {                                                                                       \
		if ((d)->cfg->log)                                                                 \
			(d)->cfg->log((d)->cfg->log_data, __VA_ARGS__);                            \
	} while (0)

/* ---- answers (reply.c) ---- */
int sv_send_all(int fd, const void *buf, size_t len);
/* One whole answer; keep-alive as the request asked. */
int sv_reply(sv_conn *c, int status, const char *ctype, const void *body, size_t len);
/* o as the JSON body (taken). */
int sv_reply_json(sv_conn *c, int status, json_t *o);
json_t *sv_error_json(const sv_error *e);
int sv_reply_error(sv_conn *c, const sv_error *e);
int sv_fail_reply(sv_conn *c, int status, const char *code, const char *path, const char *msg);
/* A chunk of a chunked answer, and an error as the stream's last line. */
/* The head of a streamed answer: NDJSON lines, chunked. */
int sv_send_ndjson_head(int fd);
int sv_send_chunk(int fd, const char *data, size_t len);
int sv_send_error_line(int fd, const sv_error *e);
int64_t sv_mono_ms(void);
/* Waits until fd has bytes or the deadline (sv_mono_ms) passes. */
int sv_wait_bytes(int fd, int64_t deadline);

/* ---- what server.c lends the endpoints ---- */
int sv_query_path(sv_conn *c, const sv_request *req, bool required, const char **ret);
/* Whether pid is there (EPERM counts: it is, and not ours to signal). */
bool sv_pid_alive(pid_t pid);

/* ---- commands (http-commands.c) ---- */
int sv_handle_exec(sv_conn *c, const sv_request *req, const sv_session *s);
int sv_handle_command_start(sv_conn *c, const sv_request *req, const sv_session *s);
/* GET/DELETE .../commands/PID, POST .../PID/stdin and .../PID/resize. */
int sv_handle_command(sv_conn *c, const sv_request *req, const sv_session *s, bool stdin_,
		      bool resize);

/* ---- workspaces (http-workspace.c) ---- */
int sv_handle_workspace(sv_conn *c, const sv_request *req, const char *name, const char *verb);

/* ---- the file endpoints (http-files.c) ---- */
int sv_handle_watch(sv_conn *c, const sv_request *req, const sv_session *s);
int sv_handle_fs(sv_conn *c, const sv_request *req, const sv_session *s, const char *op);
int sv_handle_get_stream(sv_conn *c, const sv_request *req, const sv_session *s);
int sv_handle_put_stream(sv_conn *c, sv_request *req, const sv_session *s);
