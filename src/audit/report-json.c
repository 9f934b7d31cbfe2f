/* SPDX-License-Identifier: MIT */
/* The JSON report: one object (docs/audit.md, section 6). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/report.h"
#include "base/cleanup.h"

static json_t *blist_json(const blist *l)
{
	return json_pack("{s:I, s:O, s:I}", "count", (json_int_t)l->count, "items", l->items,
			 "more", (json_int_t)(l->count - json_array_size(l->items)));
}

static json_t *ctable_json(const au_table *t, const char *name, bool bytes)
{
	json_t *a = json_array();

	if (!a)
		return NULL;
	for (size_t i = 0; i < t->n; i++) {
		json_t *o =
		    json_pack("{s:s, s:I}", name, t->e[i].key, "count", (json_int_t)t->e[i].count);

		if (!o)
			continue;
		if (bytes) {
			(void)json_object_set_new(o, "bytes_out",
						  json_integer((json_int_t)t->e[i].bytes_out));
			(void)json_object_set_new(o, "bytes_in",
						  json_integer((json_int_t)t->e[i].bytes_in));
		}
		if (t->e[i].detail[0])
			(void)json_object_set_new(o, "detail", json_string(t->e[i].detail));
		(void)json_array_append_new(a, o);
	}
	return json_pack("{s:o, s:I}", "items", a, "other", (json_int_t)t->other_count);
}

static void set(json_t *o, const char *k, json_t *v)
{
	/* Out of memory leaves the member out; the dump below still fails
	 * cleanly if the root itself could not be built. */
	(void)json_object_set_new(o, k, v ? v : json_null());
}

static json_t *borrow(json_t *v)
{
	return v ? json_incref(v) : json_null();
}

static json_t *opt_str(const char *s)
{
	return s && s[0] ? json_string(s) : json_null();
}

int rp_json(FILE *out, const report *rp)
{
	_cleanup_json_ json_t *root = json_object();
	json_t *log = json_object(), *access = json_object(), *did = json_object();
	json_t *stopped = json_object(), *net = json_object(), *sys = json_object();
	json_t *lim = json_object();
	char hex[AU_HASH_HEX + 1] = "";

	if (!root || !log || !access || !did || !stopped || !net || !sys || !lim) {
		json_decref(log), json_decref(access), json_decref(did), json_decref(stopped);
		json_decref(net), json_decref(sys), json_decref(lim);
		return -ENOMEM;
	}
	if (rp->records)
		au_hex(rp->last_hash, AU_HASH_BYTES, hex);

	set(root, "sandbox", opt_str(rp->sandbox));
	set(log, "lines", json_integer((json_int_t)rp->lines));
	set(log, "records", json_integer((json_int_t)rp->records));
	set(log, "unreadable_lines", json_integer((json_int_t)rp->unreadable));
	set(log, "stopped_reading", rp->too_long[0] ? json_string(rp->too_long) : json_null());
	set(log, "first_ts", opt_str(rp->first_ts));
	set(log, "last_ts", opt_str(rp->last_ts));
	set(log, "intact", json_boolean(rp->chain_ok));
	set(log, "error",
	    rp->chain_ok ? json_null()
			 : json_pack("{s:I, s:s}", "line", (json_int_t)rp->err_line, "reason",
				     rp->err_reason));
	set(log, "sealed", json_boolean(rp->sealed));
	set(log, "failure", rp->failure ? json_incref(rp->failure) : json_null());
	set(log, "keyed", json_boolean(rp->keyed));
	set(log, "last_hash", opt_str(hex));
	set(root, "log", log);

	set(access, "plan", borrow(json_object_get(rp->start, "plan")));
	set(access, "layers", borrow(json_object_get(rp->start, "layers")));
	set(access, "not_enforced", borrow(json_object_get(rp->start, "not_enforced")));
	set(access, "command", borrow(json_object_get(rp->start, "command")));
	set(access, "policy_digest", borrow(json_object_get(rp->start, "policy_digest")));
	set(access, "grants", blist_json(&rp->grants));
	set(root, "access", access);

	set(root, "consumed", borrow(rp->exit));

	set(did, "processes", blist_json(&rp->procs));
	set(did, "exec_failed", blist_json(&rp->failed));
	set(net, "requests", json_integer((json_int_t)rp->net.count));
	set(net, "tunnels", json_integer((json_int_t)rp->tunnels));
	set(net, "bytes_out", json_integer((json_int_t)rp->net_bytes_out));
	set(net, "bytes_in", json_integer((json_int_t)rp->net_bytes_in));
	set(net, "hosts", ctable_json(&rp->hosts, "host", true));
	set(net, "credentials", au_credentials_json(&rp->tally.credentials));
	set(net, "shown", blist_json(&rp->net));
	set(did, "network", net);
	set(did, "files", blist_json(&rp->files));
	/* Distinct paths: the summary's and sandbox.exit's files_written. */
	set(did, "files_written", json_integer((json_int_t)rp->tally.files_written));
	set(did, "files_written_approx", json_boolean(rp->tally.files_approx));
	set(did, "files_incomplete", json_boolean(rp->files_truncated));
	set(did, "files_unrecorded", json_integer((json_int_t)rp->files_unrecorded));
	set(did, "commands", blist_json(&rp->commands));
	set(did, "commands_ended", json_integer((json_int_t)rp->commands_ended));
	set(did, "file_ops", blist_json(&rp->file_ops));
	set(did, "files_read", blist_json(&rp->reads));
	set(did, "files_read_incomplete", json_boolean(rp->reads_truncated));
	set(did, "files_read_unrecorded", json_integer((json_int_t)rp->reads_unrecorded));
	set(did, "dns",
	    json_pack("{s:I, s:I, s:o}", "queries", (json_int_t)rp->tally.dns_queries, "refused",
		      (json_int_t)rp->tally.dns_refused, "shown", blist_json(&rp->dns)));
	set(did, "workspaces", borrow(json_object_get(rp->exit, "workspaces")));
	set(did, "other_events", ctable_json(&rp->other_events, "event", false));
	set(root, "did", did);

	set(stopped, "network", blist_json(&rp->denied));
	set(stopped, "network_by_host", ctable_json(&rp->tally.denied_hosts, "host", false));
	set(stopped, "files", blist_json(&rp->files_denied));
	set(stopped, "files_denied", json_integer((json_int_t)rp->tally.files_denied));
	set(sys, "count", json_integer((json_int_t)rp->tally.syscalls_denied));
	set(sys, "by_syscall", ctable_json(&rp->tally.syscalls, "syscall", false));
	set(stopped, "syscalls", sys);
	set(lim, "count", json_integer((json_int_t)rp->tally.limits_hit));
	set(lim, "by_limit", ctable_json(&rp->tally.limits, "limit", false));
	set(stopped, "limits", lim);
	set(root, "stopped", stopped);
	set(root, "bound", rp_bound(rp));

	if (json_dumpf(root, out, JSON_INDENT(2) | JSON_ENSURE_ASCII) < 0 || fputc('\n', out) < 0)
		return -EIO;
	return 0;
}
