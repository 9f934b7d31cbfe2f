/* SPDX-License-Identifier: MIT */
/*
 * The daemon's sessions: which uid owns each one, and a bounded count per
 * uid. Thread-safe (one mutex); lookups copy the entry out, so that a
 * request never holds a pointer into the table while it talks to a session.
 */
#pragma once

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SV_MAX_SESSIONS 4096u
#define SV_NAME_MAX	64u

typedef struct sv_session {
	char name[SV_NAME_MAX];
	uid_t uid;
	char policy[256]; /* the name a caller gave it, "inline" or "token" */
	char digest[65];  /* SHA-256 of its canonical JSON */
	char audit[4096];
	pid_t pid;	    /* its supervisor */
	int64_t created_ms; /* CLOCK_REALTIME */
	bool from_pool;
	unsigned execs;
	int64_t end_ms;	     /* its timeout ends it then (CLOCK_REALTIME); 0: none set */
	int64_t paused_ms;   /* paused since (CLOCK_REALTIME); 0: running */
	char metadata[1024]; /* the caller's, a JSON object; "" for none */
	char envs[2048];     /* every command's environment, a JSON object; "" */
	char serve[512];     /* net.serve: {"PORT": "127.0.0.1:N"} as JSON; "" for none */
	char sandbox[64];    /* its sandbox id: its workspaces are SANDBOX.N */
} sv_session;

/* A session stopped through the daemon: whose its kept workspaces are. */
#define SV_MAX_ENDED 4096u
typedef struct sv_ended {
	char name[SV_NAME_MAX];
	char sandbox[64];
	uid_t uid;
} sv_ended;

typedef struct sv_table {
	pthread_mutex_t lock;
	sv_session *s;
	size_t n, cap;
	sv_ended *ended; /* a ring of the last SV_MAX_ENDED */
	size_t n_ended, next_ended;
} sv_table;

int sv_table_init(sv_table *t);
void sv_table_free(sv_table *t);
/* Adds s unless its uid already has quota live sessions (-EDQUOT) or the
 * table is full (-ENOSPC); quota 0 means no per-uid bound. */
int sv_table_add(sv_table *t, const sv_session *s, unsigned quota);
/* Reserves a slot for uid (counted against its quota) before the session
 * exists; sv_table_add() with reserved=... fills it. */
int sv_table_reserve(sv_table *t, uid_t uid, unsigned quota);
void sv_table_unreserve(sv_table *t, uid_t uid);
/* Copies out the session called name if uid owns it; -ENOENT otherwise
 * (another uid's session does not exist for this one). */
int sv_table_get(sv_table *t, const char *name, uid_t uid, sv_session *ret);
int sv_table_remove(sv_table *t, const char *name, uid_t uid, sv_session *ret);
/* s was stopped: its owner keeps its workspaces (the oldest of more than
 * SV_MAX_ENDED are forgotten). */
void sv_table_end(sv_table *t, const sv_session *s);
/* The session called name if uid owns it, live or ended: its sandbox id,
 * and whether it is still in the table. -ENOENT otherwise. */
int sv_table_owner(sv_table *t, const char *name, uid_t uid, char *ret_sandbox, size_t size,
		   bool *ret_live, sv_session *ret);
void sv_table_count_exec(sv_table *t, const char *name);
/* Its timeout moved: it ends at end_ms. */
void sv_table_set_end(sv_table *t, const char *name, int64_t end_ms);
/* Paused (at now_ms) or resumed: a resume moves end_ms by the time paused,
 * as the session's own wall clock. */
void sv_table_set_paused(sv_table *t, const char *name, bool paused, int64_t now_ms);
/* Removes and returns every session (for shutdown). Caller frees *ret. */
size_t sv_table_take_all(sv_table *t, sv_session **ret);
/* [{"id",...}] of uid's sessions. */
json_t *sv_table_list(sv_table *t, uid_t uid);
json_t *sv_session_json(const sv_session *s);
