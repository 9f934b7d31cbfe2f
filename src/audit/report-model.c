/* SPDX-License-Identifier: MIT */
/*
 * The report's model: what `sandcap audit report` keeps of each record
 * (report.h), bounded whatever the log's length (lists keep their first
 * REPORT_LIST_MAX items and a count, tables REPORT_TABLE_MAX keys), and the
 * getters its renderers read records with. Below the renderers and the
 * dispatch (report.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/report.h"
#include "base/cleanup.h"

bool rp_get_u64(json_t *obj, const char *key, uint64_t *ret)
{
	json_t *v = json_object_get(obj, key);

	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*ret = (uint64_t)json_integer_value(v);
		return true;
	}
	if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 1.8e19) {
		*ret = (uint64_t)json_real_value(v);
		return true;
	}
	return false;
}

const char *rp_get_str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

static void sat_add(uint64_t *a, uint64_t b)
{
	if (__builtin_add_overflow(*a, b, a))
		*a = UINT64_MAX;
}

/* A bounded copy of a scalar or of an array of scalars. */
static json_t *trim(json_t *v)
{
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);

		return n > REPORT_STR_MAX ? au_str(s, n, REPORT_STR_MAX) : json_copy(v);
	}
	if (json_is_array(v)) {
		json_t *a = json_array(), *x;
		size_t i;

		if (!a)
			return NULL;
		json_array_foreach(v, i, x)
		{
			if (i == REPORT_ARGV_MAX) {
				(void)json_array_append_new(a, json_string("..."));
				break;
			}
			if (json_is_array(x) || json_is_object(x))
				continue;
			(void)json_array_append_new(a, trim(x));
		}
		return a;
	}
	if (json_is_object(v))
		return json_string("{...}");
	return json_copy(v);
}

/* The listed keys of data, trimmed, or NULL when out of memory. */
static json_t *pick(json_t *data, const char *const *keys)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	for (; *keys; keys++) {
		json_t *v = json_object_get(data, *keys);

		if (v)
			(void)json_object_set_new(o, *keys, trim(v));
	}
	return o;
}

static int blist_add(blist *l, json_t *data, const char *const *keys)
{
	json_t *item;

	sat_add(&l->count, 1);
	if (json_array_size(l->items) >= REPORT_LIST_MAX)
		return 0;
	item = pick(data, keys);
	if (!item)
		return -ENOMEM;
	return json_array_append_new(l->items, item) < 0 ? -ENOMEM : 0;
}

static const char *const proc_keys[] = {"pid", "path", "argv", NULL};
static const char *const failed_keys[] = {"pid", "path", "result", "errno", "error", NULL};
/* "completed" (false) only on a net.request the supervisor wrote: its
 * worker had ended before the request's outcome. */
static const char *const net_keys[] = {"method",     "host",	    "port",	  "path",
				       "addr",	     "status",	    "bytes_out",  "bytes_in",
				       "rule",	     "duration_ms", "credential", "body_sha256",
				       "body_bytes", "completed",   NULL};
static const char *const denied_keys[] = {"method",	"host",	  "port",     "path", "reason",
					  "credential", "detail", "protocol", NULL};
static const char *const file_keys[] = {"path", "op", "sha256", NULL};
static const char *const file_denied_keys[] = {"op", "path", "mode", "errno", "reason", NULL};
static const char *const command_keys[] = {"id", "argv", "cwd", "tty", NULL};
static const char *const command_exit_keys[] = {"status", "signal", "duration_ms", "limits_hit",
						NULL};
static const char *const file_op_keys[] = {"id", "path", "bytes", "result", NULL};
static const char *const dns_keys[] = {"name", "type", "rcode", "answer", "reason", NULL};
static const char *const read_keys[] = {"path", "size", "sha256", "hash_skipped", NULL};
static const char *const grant_keys[] = {"path", "at", "mode", NULL};

static int account_traffic(report *rp, json_t *data, bool allowed)
{
	uint64_t out = 0, in = 0;
	au_count *c;

	(void)rp_get_u64(data, "bytes_out", &out);
	(void)rp_get_u64(data, "bytes_in", &in);
	sat_add(&rp->net_bytes_out, out);
	sat_add(&rp->net_bytes_in, in);
	if (!allowed)
		return 0; /* the table is of allowed traffic; the refusal is in net.denied */
	c = au_table_get(&rp->hosts, rp_get_str(data, "host"));
	if (c) {
		sat_add(&c->bytes_out, out);
		sat_add(&c->bytes_in, in);
	}
	return 0;
}

/* An fs.write or fs.read record: a file listed, or (op "truncated") not a
 * file but the watch saying what it left out (docs/audit.md 8, 11). */
static int file_record(blist *l, json_t *data, const char *const *keys, bool *truncated,
		       uint64_t *unrecorded)
{
	const char *op = rp_get_str(data, "op");
	uint64_t n = 0;

	if (op && strcmp(op, "truncated") == 0) {
		*truncated = true;
		if (rp_get_u64(data, "count", &n))
			sat_add(unrecorded, n);
		return 0;
	}
	return blist_add(l, data, keys);
}

/* exec.exit: its exec.start, if listed, gets the status and duration. */
static int command_ended(report *rp, json_t *data)
{
	json_t *x;
	size_t i;

	sat_add(&rp->commands_ended, 1);
	json_array_foreach(rp->commands.items, i, x)
	{
		if (!json_equal(json_object_get(x, "id"), json_object_get(data, "id")))
			continue;
		for (const char *const *k = command_exit_keys; *k; k++)
			if (json_object_get(data, *k))
				(void)json_object_set_new(x, *k, trim(json_object_get(data, *k)));
		break;
	}
	return 0;
}

static int file_op(report *rp, const char *event, json_t *data)
{
	size_t n = json_array_size(rp->file_ops.items);
	int r = blist_add(&rp->file_ops, data, file_op_keys);

	if (r >= 0 && json_array_size(rp->file_ops.items) > n)
		(void)json_object_set_new(json_array_get(rp->file_ops.items, n), "op",
					  json_string(event + strlen("file.")));
	return r;
}

static int handle_event(report *rp, const char *event, json_t *data)
{
	au_tally_event(&rp->tally, event, data);
	if (strcmp(event, "sandbox.start") == 0) {
		if (!rp->start)
			rp->start = json_incref(data);
	} else if (strcmp(event, "sandbox.exit") == 0) {
		json_decref(rp->exit);
		rp->exit = json_incref(data);
	} else if (strcmp(event, "fs.grant") == 0) {
		return blist_add(&rp->grants, data, grant_keys);
	} else if (strcmp(event, "proc.exec") == 0) {
		if (au_exec_failed(data))
			return blist_add(&rp->failed, data, failed_keys);
		return blist_add(&rp->procs, data, proc_keys);
	} else if (strcmp(event, "net.request") == 0) {
		const char *d = rp_get_str(data, "decision");

		/* Every refusal also comes as net.denied, listed there once. */
		if (d && strcmp(d, "allow") != 0)
			return account_traffic(rp, data, false);
		(void)account_traffic(rp, data, true);
		au_count *c = au_table_get(&rp->hosts, rp_get_str(data, "host"));
		if (c)
			sat_add(&c->count, 1);
		return blist_add(&rp->net, data, net_keys);
	} else if (strcmp(event, "net.tunnel.close") == 0) {
		sat_add(&rp->tunnels, 1);
		return account_traffic(rp, data, true);
	} else if (strcmp(event, "net.denied") == 0) {
		if (rp_get_str(data, "protocol"))
			sat_add(&rp->direct_attempts, 1);
		return blist_add(&rp->denied, data, denied_keys);
	} else if (strcmp(event, "limit.hit") == 0) {
		const char *limit = rp_get_str(data, "limit");
		uint64_t n = 0;

		/* the direct attempts not recorded one by one (docs/proxy.md) */
		if (limit && strcmp(limit, "net.attempts") == 0 &&
		    rp_get_u64(data, "suppressed", &n))
			sat_add(&rp->direct_attempts, n);
		return 0; /* counted in the tally */
	} else if (strcmp(event, "syscall.denied") == 0) {
		return 0; /* counted in the tally */
	} else if (strcmp(event, "fs.denied") == 0) {
		return blist_add(&rp->files_denied, data, file_denied_keys);
	} else if (strcmp(event, "fs.write") == 0) {
		return file_record(&rp->files, data, file_keys, &rp->files_truncated,
				   &rp->files_unrecorded);
	} else if (strcmp(event, "exec.start") == 0) {
		return blist_add(&rp->commands, data, command_keys);
	} else if (strcmp(event, "exec.exit") == 0) {
		return command_ended(rp, data);
	} else if (strcmp(event, "file.put") == 0 || strcmp(event, "file.get") == 0 ||
		   strcmp(event, "file.list") == 0) {
		return file_op(rp, event, data);
	} else if (strcmp(event, "net.dns") == 0) {
		return blist_add(&rp->dns, data, dns_keys);
	} else if (strcmp(event, "fs.read") == 0) {
		return file_record(&rp->reads, data, read_keys, &rp->reads_truncated,
				   &rp->reads_unrecorded);
	} else if (strcmp(event, AU_ERROR_EVENT) == 0) {
		if (!rp->failure)
			rp->failure = json_incref(data);
	} else if (strcmp(event, "net.request.start") == 0) {
		return 0; /* each has its net.request, which says what became of it */
	} else if (strcmp(event, AU_CHECKPOINT_EVENT) == 0) {
		return 0; /* the seal's; verify --pubkey checks them */
	} else if (strcmp(event, "res.sample") == 0) {
		return 0; /* resource use over time: the HTML report draws it */
	} else if (strcmp(event, AU_SEAL_EVENT) == 0) {
		rp->sealed = true;
		rp->keyed = json_is_true(json_object_get(data, "keyed"));
	} else {
		au_table_count(&rp->other_events, event, NULL);
	}
	return 0;
}

void rp_chain_broken(report *rp, uint64_t line, const char *reason)
{
	if (!rp->chain_ok)
		return;
	rp->chain_ok = false;
	rp->cut_off = false;
	rp->err_line = line;
	(void)snprintf(rp->err_reason, sizeof(rp->err_reason), "%s", reason);
}

int rp_add_line(report *rp, const char *line, size_t len, bool newline, au_record *ret_rec)
{
	au_record rec = {0};
	char reason[256];
	int r;

	rp->lines++;
	r = au_parse_record(line, len, &rec, reason, sizeof(reason));
	if (r < 0) {
		rp->unreadable++;
		rp_chain_broken(rp, rp->lines,
				newline ? reason : "incomplete record at the end (write cut off?)");
		rp->cut_off |= !newline && rp->err_line == rp->lines;
		return 0;
	}
	rp->records++;
	if (rp->chain_ok) {
		r = au_chain_feed(&rp->chain, &rec, line, reason, sizeof(reason));
		if (r == -EBADMSG)
			rp_chain_broken(rp, rp->lines, reason);
		else if (r < 0) {
			au_record_clear(&rec);
			return r;
		} else if (!newline) {
			rp_chain_broken(rp, rp->lines, "no newline at the end (write cut off?)");
			rp->cut_off = rp->err_line == rp->lines;
		}
	}
	if (!rp->sandbox[0])
		strcpy(rp->sandbox, rec.sandbox);
	if (!rp->first_ts[0])
		strcpy(rp->first_ts, rec.ts);
	strcpy(rp->last_ts, rec.ts);
	memcpy(rp->last_hash, rec.hash, AU_HASH_BYTES);
	r = handle_event(rp, rec.event, rec.data);
	if (r < 0) {
		au_record_clear(&rec);
		return r;
	}
	*ret_rec = rec;
	return 1;
}

int rp_init(report *rp)
{
	blist *lists[] = {&rp->grants,	 &rp->procs,  &rp->failed,	 &rp->net,
			  &rp->files,	 &rp->denied, &rp->files_denied, &rp->commands,
			  &rp->file_ops, &rp->dns,    &rp->reads};

	rp->chain_ok = true;
	for (size_t i = 0; i < ELEMENTSOF(lists); i++)
		if (!(lists[i]->items = json_array()))
			return -ENOMEM;
	return 0;
}

void rp_done(report *rp)
{
	json_decref(rp->start);
	json_decref(rp->exit);
	json_decref(rp->failure);
	json_decref(rp->grants.items);
	json_decref(rp->procs.items);
	json_decref(rp->failed.items);
	json_decref(rp->net.items);
	json_decref(rp->files.items);
	json_decref(rp->denied.items);
	json_decref(rp->files_denied.items);
	json_decref(rp->commands.items);
	json_decref(rp->file_ops.items);
	json_decref(rp->dns.items);
	json_decref(rp->reads.items);
}
