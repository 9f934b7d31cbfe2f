/* SPDX-License-Identifier: MIT */
/* Counting a run's events for the summary and the report (tally.h). */
#include "audit/tally.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void sat_add(uint64_t *a, uint64_t b)
{
	if (__builtin_add_overflow(*a, b, a))
		*a = UINT64_MAX;
}

static const char *get_str(json_t *data, const char *key)
{
	return json_string_value(json_object_get(data, key));
}

au_count *au_table_get(au_table *t, const char *key)
{
	char k[AU_TALLY_KEY_MAX];

	(void)snprintf(k, sizeof(k), "%s", key ? key : "?");
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->e[i].key, k) == 0)
			return &t->e[i];
	if (t->n == AU_TALLY_KEYS) {
		sat_add(&t->other_keys, 1);
		sat_add(&t->other_count, 1);
		return NULL;
	}
	memset(&t->e[t->n], 0, sizeof(t->e[t->n]));
	strcpy(t->e[t->n].key, k);
	return &t->e[t->n++];
}

void au_table_count(au_table *t, const char *key, const char *detail)
{
	au_count *c = au_table_get(t, key);

	if (!c)
		return;
	sat_add(&c->count, 1);
	if (!detail)
		return;
	if (c->count == 1)
		(void)snprintf(c->detail, sizeof(c->detail), "%s", detail);
	else if (strncmp(c->detail, detail, sizeof(c->detail) - 1) != 0)
		c->mixed = true;
}

/* FNV-1a, only to count distinct paths: a collision under-counts by one. */
static void count_path(au_tally *t, const char *path)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (const char *p = path; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	h = h ? h : 1;
	/* Keep a free slot so that every probe ends; past that, count on. */
	if (t->n_paths >= AU_TALLY_PATHS - 1) {
		t->files_approx = true;
		sat_add(&t->files_written, 1);
		return;
	}
	for (i = h % AU_TALLY_PATHS; t->paths[i]; i = (i + 1) % AU_TALLY_PATHS)
		if (t->paths[i] == h)
			return;
	t->paths[i] = h;
	t->n_paths++;
	sat_add(&t->files_written, 1);
}

bool au_exec_failed(json_t *data)
{
	const char *result = get_str(data, "result");
	json_t *err = json_object_get(data, "errno");
	json_t *error = json_object_get(data, "error");

	if (result)
		return strcmp(result, "ok") != 0 && strcmp(result, "success") != 0;
	if (json_is_integer(err))
		return json_integer_value(err) != 0;
	if (json_is_string(err))
		return json_string_length(err) > 0;
	if (json_is_true(json_object_get(data, "failed")) ||
	    json_is_false(json_object_get(data, "ok")))
		return true;
	return error && !json_is_null(error) && !json_is_false(error);
}

/* A request the proxy let through with a credential: how much it carried. */
static void count_credential_use(au_tally *t, json_t *data)
{
	const char *name = get_str(data, "credential"), *d = get_str(data, "decision");
	json_t *out = json_object_get(data, "bytes_out"), *in = json_object_get(data, "bytes_in");
	au_count *c;

	if (!name || !d || strcmp(d, "allow") != 0)
		return;
	c = au_table_get(&t->credentials, name);
	if (!c)
		return;
	sat_add(&c->count, 1);
	if (json_is_integer(out) && json_integer_value(out) > 0)
		sat_add(&c->bytes_out, (uint64_t)json_integer_value(out));
	if (json_is_integer(in) && json_integer_value(in) > 0)
		sat_add(&c->bytes_in, (uint64_t)json_integer_value(in));
}

/* What went through the proxy: a refused request comes as net.denied too,
 * counted there; a tunnel's bytes come in its net.tunnel.close. */
static void count_traffic(au_tally *t, const char *event, json_t *data)
{
	json_int_t out = json_integer_value(json_object_get(data, "bytes_out"));
	json_int_t in = json_integer_value(json_object_get(data, "bytes_in"));
	const char *d = get_str(data, "decision");

	sat_add(&t->bytes_out, out > 0 ? (uint64_t)out : 0);
	sat_add(&t->bytes_in, in > 0 ? (uint64_t)in : 0);
	if (strcmp(event, "net.request") == 0 && !(d && strcmp(d, "deny") == 0))
		sat_add(&t->requests_allowed, 1);
}

/*
 * Refusals over net.rate have no record each: a limit.hit "rate" counts
 * them in "suppressed" ("kind": "requests" or "dns"); so do refused file
 * writes, repeated refused syscalls and exec attempts that ran no program
 * ("denied_records", "files", "syscalls" with the syscall's name, or
 * "execs"). They count here as
 * the records they stand for would (docs/audit.md, "Folded records").
 */
static void count_folded(au_tally *t, json_t *data)
{
	const char *limit = get_str(data, "limit"), *kind = get_str(data, "kind");
	json_t *n = json_object_get(data, "suppressed");
	uint64_t v;

	if (!limit || !kind || !json_is_integer(n) || json_integer_value(n) <= 0)
		return;
	v = (uint64_t)json_integer_value(n);
	if (strcmp(limit, "denied_records") == 0 && strcmp(kind, "files") == 0)
		sat_add(&t->files_denied, v);
	if (strcmp(limit, "denied_records") == 0 && strcmp(kind, "execs") == 0)
		sat_add(&t->execs_failed, v);
	if (strcmp(limit, "denied_records") == 0 && strcmp(kind, "syscalls") == 0) {
		const char *name = get_str(data, "syscall");
		au_count *c = name ? au_table_get(&t->syscalls, name) : NULL;

		sat_add(&t->syscalls_denied, v);
		if (c)
			sat_add(&c->count, v);
		else
			sat_add(&t->syscalls.other_count, v - 1); /* au_table_get counted one */
	}
	if (strcmp(limit, "rate") != 0)
		return;
	if (strcmp(kind, "requests") == 0) {
		sat_add(&t->net_denied, v);
		sat_add(&t->requests_over_rate, v);
	} else if (strcmp(kind, "dns") == 0) {
		sat_add(&t->dns_queries, v);
		sat_add(&t->dns_refused, v);
	}
}

void au_tally_event(au_tally *t, const char *event, json_t *data)
{
	if (!t || !event)
		return;
	if (strcmp(event, "proc.exec") == 0) {
		sat_add(au_exec_failed(data) ? &t->execs_failed : &t->execs, 1);
	} else if (strcmp(event, "fs.write") == 0) {
		const char *op = get_str(data, "op"), *path = get_str(data, "path");

		/* "truncated" is the watch saying what it left out, not a file. */
		if (path && !(op && strcmp(op, "truncated") == 0))
			count_path(t, path);
	} else if (strcmp(event, "fs.denied") == 0) {
		sat_add(&t->files_denied, 1);
	} else if (strcmp(event, "net.request") == 0) {
		count_traffic(t, event, data);
		count_credential_use(t, data);
	} else if (strcmp(event, "net.tunnel.close") == 0) {
		count_traffic(t, event, data);
	} else if (strcmp(event, "net.denied") == 0) {
		sat_add(&t->net_denied, 1);
		au_table_count(&t->denied_hosts, get_str(data, "host"), get_str(data, "reason"));
		if (get_str(data, "credential")) {
			au_count *c = au_table_get(&t->credentials, get_str(data, "credential"));

			if (c)
				sat_add(&c->refused, 1);
		}
	} else if (strcmp(event, "net.dns") == 0) {
		const char *rc = get_str(data, "rcode");

		sat_add(&t->dns_queries, 1);
		if (!rc || strcmp(rc, "NOERROR") != 0)
			sat_add(&t->dns_refused, 1);
	} else if (strcmp(event, "syscall.denied") == 0) {
		sat_add(&t->syscalls_denied, 1);
		au_table_count(&t->syscalls, get_str(data, "syscall"), NULL);
	} else if (strcmp(event, "limit.hit") == 0) {
		sat_add(&t->limits_hit, 1);
		au_table_count(&t->limits, get_str(data, "limit"), get_str(data, "detail"));
		count_folded(t, data);
	}
}

size_t au_table_sorted(const au_table *t, const au_count **out)
{
	size_t n = 0;

	/* Insertion sort, stable: at most AU_TALLY_KEYS entries. */
	for (size_t i = 0; i < t->n; i++) {
		size_t j = n++;

		while (j > 0 && out[j - 1]->count < t->e[i].count) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = &t->e[i];
	}
	return n;
}

void au_fputs_safe(const char *s, FILE *out)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f)
			(void)fputc(c, out);
		else
			(void)fprintf(out, "\\x%02x", c);
	}
}

json_t *au_credentials_json(const au_table *t)
{
	const au_count *e[AU_TALLY_KEYS];
	size_t n = au_table_sorted(t, e);
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a,
					  json_pack("{s:s, s:I, s:I, s:I, s:I}", "name", e[i]->key,
						    "requests", (json_int_t)e[i]->count,
						    "bytes_out", (json_int_t)e[i]->bytes_out,
						    "bytes_in", (json_int_t)e[i]->bytes_in,
						    "refused", (json_int_t)e[i]->refused)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

void au_credentials_text(const au_table *t, const char *prefix, FILE *out)
{
	const au_count *e[AU_TALLY_KEYS];
	size_t n = au_table_sorted(t, e);

	for (size_t i = 0; i < n; i++) {
		(void)fputs(prefix, out);
		au_fputs_safe(e[i]->key, out);
		(void)fprintf(out,
			      ": %" PRIu64 " request%s, %" PRIu64 " bytes out, %" PRIu64
			      " bytes in, %" PRIu64 " refused\n",
			      e[i]->count, e[i]->count == 1 ? "" : "s", e[i]->bytes_out,
			      e[i]->bytes_in, e[i]->refused);
	}
	if (t->other_keys)
		(void)fprintf(out, "%s...and up to %" PRIu64 " more credentials\n", prefix,
			      t->other_keys);
}
