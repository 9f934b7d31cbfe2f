/* SPDX-License-Identifier: MIT */
#include "serve/table.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A reservation is an entry without a name: it counts, nobody can find it. */

int sv_table_init(sv_table *t)
{
	memset(t, 0, sizeof(*t));
	return -pthread_mutex_init(&t->lock, NULL);
}

void sv_table_free(sv_table *t)
{
	free(t->s);
	free(t->ended);
	(void)pthread_mutex_destroy(&t->lock);
}

static size_t count_uid(const sv_table *t, uid_t uid)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++)
		n += t->s[i].uid == uid;
	return n;
}

static int append_locked(sv_table *t, const sv_session *s)
{
	if (t->n >= SV_MAX_SESSIONS)
		return -ENOSPC;
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 16;
		sv_session *p = realloc(t->s, nc * sizeof(*p));

		if (!p)
			return -ENOMEM;
		t->s = p;
		t->cap = nc;
	}
	t->s[t->n++] = *s;
	return 0;
}

int sv_table_reserve(sv_table *t, uid_t uid, unsigned quota)
{
	sv_session r = {.uid = uid};
	int ret;

	(void)pthread_mutex_lock(&t->lock);
	if (quota && count_uid(t, uid) >= quota)
		ret = -EDQUOT;
	else
		ret = append_locked(t, &r);
	(void)pthread_mutex_unlock(&t->lock);
	return ret;
}

static void remove_at(sv_table *t, size_t i)
{
	t->s[i] = t->s[--t->n];
}

void sv_table_unreserve(sv_table *t, uid_t uid)
{
	(void)pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++)
		if (t->s[i].uid == uid && !t->s[i].name[0]) {
			remove_at(t, i);
			break;
		}
	(void)pthread_mutex_unlock(&t->lock);
}

int sv_table_add(sv_table *t, const sv_session *s, unsigned quota)
{
	int ret = -EDQUOT;

	(void)pthread_mutex_lock(&t->lock);
	/* a reservation of this uid becomes the session */
	for (size_t i = 0; i < t->n; i++)
		if (t->s[i].uid == s->uid && !t->s[i].name[0]) {
			t->s[i] = *s;
			ret = 0;
			break;
		}
	if (ret < 0 && !(quota && count_uid(t, s->uid) >= quota))
		ret = append_locked(t, s);
	(void)pthread_mutex_unlock(&t->lock);
	return ret;
}

static ssize_t find(const sv_table *t, const char *name, uid_t uid)
{
	if (!name[0])
		return -1;
	for (size_t i = 0; i < t->n; i++)
		if (t->s[i].uid == uid && !strcmp(t->s[i].name, name))
			return (ssize_t)i;
	return -1;
}

int sv_table_get(sv_table *t, const char *name, uid_t uid, sv_session *ret)
{
	ssize_t i;

	(void)pthread_mutex_lock(&t->lock);
	i = find(t, name, uid);
	if (i >= 0)
		*ret = t->s[i];
	(void)pthread_mutex_unlock(&t->lock);
	return i >= 0 ? 0 : -ENOENT;
}

int sv_table_remove(sv_table *t, const char *name, uid_t uid, sv_session *ret)
{
	ssize_t i;

	(void)pthread_mutex_lock(&t->lock);
	i = find(t, name, uid);
	if (i >= 0) {
		*ret = t->s[i];
		remove_at(t, (size_t)i);
	}
	(void)pthread_mutex_unlock(&t->lock);
	return i >= 0 ? 0 : -ENOENT;
}

void sv_table_end(sv_table *t, const sv_session *s)
{
	sv_ended *e;

	if (!s->name[0] || !s->sandbox[0])
		return;
	(void)pthread_mutex_lock(&t->lock);
	if (!t->ended)
		t->ended = calloc(SV_MAX_ENDED, sizeof(*t->ended));
	if (t->ended) {
		e = &t->ended[t->next_ended];
		t->next_ended = (t->next_ended + 1) % SV_MAX_ENDED;
		if (t->n_ended < SV_MAX_ENDED)
			t->n_ended++;
		memcpy(e->name, s->name, sizeof(e->name));
		memcpy(e->sandbox, s->sandbox, sizeof(e->sandbox));
		e->uid = s->uid;
	}
	(void)pthread_mutex_unlock(&t->lock);
}

int sv_table_owner(sv_table *t, const char *name, uid_t uid, char *ret_sandbox, size_t size,
		   bool *ret_live, sv_session *ret)
{
	int r = -ENOENT;
	ssize_t i;

	(void)pthread_mutex_lock(&t->lock);
	i = find(t, name, uid);
	if (i >= 0) {
		*ret = t->s[i];
		(void)snprintf(ret_sandbox, size, "%s", t->s[i].sandbox);
		*ret_live = true;
		r = 0;
	}
	for (size_t k = 0; r < 0 && name[0] && k < t->n_ended; k++)
		if (t->ended[k].uid == uid && !strcmp(t->ended[k].name, name)) {
			(void)snprintf(ret_sandbox, size, "%s", t->ended[k].sandbox);
			*ret_live = false;
			r = 0;
		}
	(void)pthread_mutex_unlock(&t->lock);
	return r;
}

void sv_table_count_exec(sv_table *t, const char *name)
{
	(void)pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->s[i].name, name))
			t->s[i].execs++;
	(void)pthread_mutex_unlock(&t->lock);
}

size_t sv_table_take_all(sv_table *t, sv_session **ret)
{
	size_t n = 0;

	(void)pthread_mutex_lock(&t->lock);
	*ret = malloc((t->n ? t->n : 1) * sizeof(sv_session));
	if (*ret) {
		for (size_t i = 0; i < t->n; i++)
			if (t->s[i].name[0])
				(*ret)[n++] = t->s[i];
		t->n = 0;
	}
	(void)pthread_mutex_unlock(&t->lock);
	return n;
}

json_t *sv_session_json(const sv_session *s)
{
	struct timespec now;
	int64_t now_ms;

	(void)clock_gettime(CLOCK_REALTIME, &now);
	now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	json_t *o =
	    json_pack("{s:s, s:i, s:s, s:s, s:s, s:I, s:I, s:I, s:b, s:i}", "id", s->name, "uid",
		      (int)s->uid, "policy", s->policy, "policy_digest", s->digest, "audit",
		      s->audit, "pid", (json_int_t)s->pid, "created_ms", (json_int_t)s->created_ms,
		      "age_ms", (json_int_t)(now_ms - s->created_ms), "from_pool", s->from_pool,
		      "execs", (int)s->execs);

	if (o)
		(void)json_object_set_new(o, "metadata",
					  s->metadata[0] ? json_loads(s->metadata, 0, NULL)
							 : json_object());
	if (o && s->serve[0])
		(void)json_object_set_new(o, "serve", json_loads(s->serve, 0, NULL));
	if (o && s->end_ms)
		(void)json_object_set_new(o, "end_ms", json_integer(s->end_ms));
	if (o)
		(void)json_object_set_new(o, "state",
					  json_string(s->paused_ms ? "paused" : "running"));
	return o;
}

void sv_table_set_paused(sv_table *t, const char *name, bool paused, int64_t now_ms)
{
	(void)pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++) {
		sv_session *s = &t->s[i];

		if (strcmp(s->name, name) || paused == (s->paused_ms != 0))
			continue;
		if (!paused && s->end_ms)
			s->end_ms += now_ms - s->paused_ms;
		s->paused_ms = paused ? now_ms : 0;
	}
	(void)pthread_mutex_unlock(&t->lock);
}

void sv_table_set_end(sv_table *t, const char *name, int64_t end_ms)
{
	(void)pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->s[i].name, name))
			t->s[i].end_ms = end_ms;
	(void)pthread_mutex_unlock(&t->lock);
}

json_t *sv_table_list(sv_table *t, uid_t uid)
{
	json_t *a = json_array();

	if (!a)
		return NULL;
	(void)pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->n; i++)
		if (t->s[i].uid == uid && t->s[i].name[0])
			(void)json_array_append_new(a, sv_session_json(&t->s[i]));
	(void)pthread_mutex_unlock(&t->lock);
	return a;
}
