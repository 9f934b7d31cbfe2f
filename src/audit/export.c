/* SPDX-License-Identifier: MIT */
/*
 * `sandcap audit export`: each native record as one OCSF 1.1 event or one
 * OpenTelemetry (OTLP/JSON) logs payload, one JSON object per line. The
 * mapping of each event is in docs/audit.md ("Export"). The chain is
 * checked on the way: the export stops at a record that breaks it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/audit-internal.h"
#include "audit/export.h"
#include "base/cleanup.h"

#define OCSF_VERSION "1.1.0"

#ifndef SANDCAP_VERSION
#define SANDCAP_VERSION "0"
#endif

/* ns since the epoch of a well-formed record ts (au_parse_record). */
static int64_t ts_ns(const char *ts)
{
	struct tm tm = {0};
	long ns = strtol(ts + 20, NULL, 10);

	if (sscanf(ts, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
		   &tm.tm_min, &tm.tm_sec) != 6)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000000000 + ns;
}

typedef struct ocsf_class {
	const char *event;
	int class_uid, category_uid, activity_id, severity_id;
	const char *class_name, *activity_name;
} ocsf_class;

/* Native events and their OCSF class and activity (docs/audit.md). */
static const ocsf_class ocsf_classes[] = {
    {"sandbox.start", 1007, 1, 1, 1, "Process Activity", "Launch"},
    {"spawn.start", 1007, 1, 1, 1, "Process Activity", "Launch"},
    {"proc.exec", 1007, 1, 1, 1, "Process Activity", "Launch"},
    {"sandbox.exit", 1007, 1, 2, 1, "Process Activity", "Terminate"},
    {"spawn.exit", 1007, 1, 2, 1, "Process Activity", "Terminate"},
    {"net.request.start", 4001, 4, 1, 1, "Network Activity", "Open"},
    {"net.request", 4001, 4, 6, 1, "Network Activity", "Traffic"},
    {"net.tunnel.close", 4001, 4, 2, 1, "Network Activity", "Close"},
    {"net.denied", 2004, 2, 1, 3, "Detection Finding", "Create"},
    {"syscall.denied", 2004, 2, 1, 3, "Detection Finding", "Create"},
    {"spawn.denied", 2004, 2, 1, 3, "Detection Finding", "Create"},
    {"limit.hit", 2004, 2, 1, 3, "Detection Finding", "Create"},
    {"audit.error", 2004, 2, 1, 5, "Detection Finding", "Create"},
    {"spawn.error", 2004, 2, 1, 4, "Detection Finding", "Create"},
    {"proxy.exit", 2004, 2, 1, 4, "Detection Finding", "Create"},
    {"fs.grant", 1001, 1, 99, 1, "File System Activity", "Other"},
    {"fs.read", 1001, 1, 2, 1, "File System Activity", "Read"},
};

/* fs.write's op as a File System Activity activity. */
static int fs_activity(const char *op, const char **ret_name)
{
	static const struct {
		const char *op, *name;
		int id;
	} ops[] = {
	    {"create", "Create", 1},	{"modify", "Update", 3},
	    {"delete", "Delete", 4},	{"rename_from", "Rename", 5},
	    {"rename_to", "Rename", 5}, {"attrib", "Set Attributes", 6},
	};

	for (size_t i = 0; op && i < ELEMENTSOF(ops); i++)
		if (strcmp(op, ops[i].op) == 0) {
			*ret_name = ops[i].name;
			return ops[i].id;
		}
	*ret_name = "Other";
	return 99;
}

static int set(json_t *o, const char *key, json_t *v)
{
	return v && json_object_set_new(o, key, v) == 0 ? 0 : -ENOMEM;
}

/* A copy of data's member key, if it has one. */
static void copy_member(json_t *to, const char *to_key, json_t *data, const char *key)
{
	json_t *v = json_object_get(data, key);

	if (v)
		(void)json_object_set(to, to_key, v);
}

static const char *str(json_t *data, const char *key)
{
	return json_string_value(json_object_get(data, key));
}

/* The sandbox a record is about: a sub-sandbox's events name it in "child". */
static const char *sandbox_of(const au_record *rec)
{
	const char *child = str(rec->data, "child");

	return child ? child : rec->sandbox;
}

/*
 * What every System Activity event (Process, File System) requires besides
 * its own object: the actor, a process of the sandbox (its pid when the
 * record has one), and the device, whose name the log does not hold.
 */
static int ocsf_actor_device(json_t *ev, const au_record *rec)
{
	json_t *proc = json_pack("{s:s}", "sandbox", sandbox_of(rec));

	if (!proc)
		return -ENOMEM;
	copy_member(proc, "pid", rec->data, "pid");
	if (set(ev, "actor", json_pack("{s:o}", "process", proc)) < 0)
		return -ENOMEM;
	return set(ev, "device", json_pack("{s:i, s:s}", "type_id", 0, "type", "Unknown"));
}

/* An OCSF file object needs its name (the last component) and type. */
static int ocsf_file_name_type(json_t *file, const char *event, json_t *d)
{
	static const char *const types[] = {"Unknown", "Regular File", "Folder"};
	const char *path = json_string_value(json_object_get(file, "path"));
	const char *slash = path ? strrchr(path, '/') : NULL;
	const char *name = slash && slash[1] ? slash + 1 : path ? path : "";
	const char *type = str(d, "type");
	int type_id = 0;

	if (strcmp(event, "fs.read") == 0 || (type && strcmp(type, "file") == 0))
		type_id = 1; /* fs.read records regular files only */
	else if (type && strcmp(type, "dir") == 0)
		type_id = 2;
	if (set(file, "name", json_string(name)) < 0 ||
	    set(file, "type_id", json_integer(type_id)) < 0)
		return -ENOMEM;
	return set(file, "type", json_string(types[type_id]));
}

/* The class-specific objects of an OCSF event. */
static int ocsf_details(json_t *ev, const au_record *rec, const ocsf_class *c)
{
	json_t *d = rec->data;
	char title[256];

	if ((c->class_uid == 1007 || c->class_uid == 1001) && ocsf_actor_device(ev, rec) < 0)
		return -ENOMEM;
	switch (c->class_uid) {
	case 1007: {
		json_t *proc = json_object(), *file = json_object();

		if (!proc || !file || json_object_set_new(proc, "file", file) < 0) {
			json_decref(proc);
			json_decref(file);
			return -ENOMEM;
		}
		if (set(proc, "sandbox", json_string(sandbox_of(rec))) < 0) {
			json_decref(proc);
			return -ENOMEM;
		}
		copy_member(proc, "pid", d, "pid");
		copy_member(file, "path", d, "path");
		copy_member(proc, "cmd_line", d, "argv");
		if (json_is_array(json_object_get(d, "command")))
			copy_member(proc, "cmd_line", d, "command");
		/* cmd_line is a string in OCSF: argv joined by spaces. */
		if (json_is_array(json_object_get(proc, "cmd_line"))) {
			json_t *argv = json_object_get(proc, "cmd_line"), *a;
			size_t i, n = 0;
			char *line;

			json_array_foreach(argv, i, a) n += json_string_length(a) + 1;
			line = calloc(1, n + 1);
			if (!line) {
				json_decref(proc);
				return -ENOMEM;
			}
			json_array_foreach(argv, i, a)
			{
				if (i)
					strcat(line, " ");
				strcat(line, json_string_value(a) ? json_string_value(a) : "");
			}
			(void)json_object_set_new(proc, "cmd_line", json_string(line));
			free(line);
		}
		copy_member(proc, "uid", d, "child");
		if (json_object_get(d, "status"))
			copy_member(ev, "exit_code", d, "status");
		return json_object_set_new(ev, "process", proc) < 0 ? -ENOMEM : 0;
	}
	case 4001: {
		json_t *dst = json_object(), *traffic = json_object();

		if (!dst || !traffic) {
			json_decref(dst);
			json_decref(traffic);
			return -ENOMEM;
		}
		copy_member(dst, "hostname", d, "host");
		copy_member(dst, "port", d, "port");
		copy_member(dst, "ip", d, "addr");
		copy_member(traffic, "bytes_out", d, "bytes_out");
		copy_member(traffic, "bytes_in", d, "bytes_in");
		/* the source is the sandbox; its address is the proxy's loopback */
		if (json_object_set_new(ev, "dst_endpoint", dst) < 0 ||
		    json_object_set_new(ev, "traffic", traffic) < 0 ||
		    set(ev, "src_endpoint", json_pack("{s:s}", "uid", sandbox_of(rec))) < 0)
			return -ENOMEM;
		if (json_object_get(d, "method")) {
			json_t *http = json_pack("{s:{s:O?, s:{s:O?, s:O?}}}", "http_request",
						 "http_method", json_object_get(d, "method"), "url",
						 "hostname", json_object_get(d, "host"), "path",
						 json_object_get(d, "path"));

			if (!http || json_object_update(ev, http) < 0) {
				json_decref(http);
				return -ENOMEM;
			}
			json_decref(http);
		}
		return 0;
	}
	case 2004: {
		const char *what = str(d, "reason")    ? str(d, "reason")
				   : str(d, "syscall") ? str(d, "syscall")
				   : str(d, "limit")   ? str(d, "limit")
						       : str(d, "error");

		(void)snprintf(title, sizeof(title), "%s%s%s", rec->event, what ? ": " : "",
			       what ? what : "");
		return set(ev, "finding_info",
			   json_pack("{s:s, s:s, s:O?}", "title", title, "uid",
				     json_string_value(json_object_get(rec->root, "hash")), "desc",
				     json_object_get(d, "detail")));
	}
	case 1001: {
		json_t *file = json_object();

		if (!file)
			return -ENOMEM;
		copy_member(file, "path", d, "path");
		if (!json_object_get(file, "path"))
			copy_member(file, "path", d, "at");
		if (ocsf_file_name_type(file, rec->event, d) < 0) {
			json_decref(file);
			return -ENOMEM;
		}
		copy_member(file, "hashes", d, "sha256");
		if (json_is_string(json_object_get(file, "hashes")))
			(void)json_object_set_new(file, "hashes",
						  json_pack("[{s:i, s:s, s:O}]", "algorithm_id", 3,
							    "algorithm", "SHA-256", "value",
							    json_object_get(d, "sha256")));
		copy_member(file, "size", d, "size");
		return json_object_set_new(ev, "file", file) < 0 ? -ENOMEM : 0;
	}
	default:
		return 0;
	}
}

static json_t *ocsf_event(const au_record *rec)
{
	static const ocsf_class other = {NULL, 0, 0, 0, 1, "Base Event", "Unknown"};
	const ocsf_class *c = &other;
	ocsf_class fs;
	json_t *ev;

	for (size_t i = 0; i < ELEMENTSOF(ocsf_classes); i++)
		if (strcmp(rec->event, ocsf_classes[i].event) == 0)
			c = &ocsf_classes[i];
	if (strcmp(rec->event, "fs.write") == 0) {
		fs = (ocsf_class){"fs.write", 1001, 1, 0, 1, "File System Activity", NULL};
		fs.activity_id = fs_activity(str(rec->data, "op"), &fs.activity_name);
		c = &fs;
	}
	ev =
	    json_pack("{s:i, s:s, s:i, s:i, s:s, s:I, s:I, s:i, s:s, s:{s:s, s:{s:s, s:s, s:s}, "
		      "s:s, s:I, s:s, s:s}, s:{s:s, s:O}}",
		      "class_uid", c->class_uid, "class_name", c->class_name, "category_uid",
		      c->category_uid, "activity_id", c->activity_id, "activity_name",
		      c->activity_name, "type_uid", (json_int_t)c->class_uid * 100 + c->activity_id,
		      "time", (json_int_t)(ts_ns(rec->ts) / 1000000), "severity_id", c->severity_id,
		      "message", rec->event, "metadata", "version", OCSF_VERSION, "product", "name",
		      "sandcap", "vendor_name", "sandcap", "version", SANDCAP_VERSION, "log_name",
		      rec->sandbox, "sequence", (json_int_t)rec->seq, "uid",
		      json_string_value(json_object_get(rec->root, "hash")), "original_time",
		      rec->ts, "unmapped", "event", rec->event, "data", rec->data);
	if (!ev)
		return NULL;
	if (ocsf_details(ev, rec, c) < 0) {
		json_decref(ev);
		return NULL;
	}
	return ev;
}

/* A JSON value as an OTLP AnyValue. depth is bounded by jansson's parser. */
static json_t *any_value(json_t *v)
{
	const char *key;
	json_t *x, *list;
	size_t i;
	char num[24];

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		list = json_array();
		json_object_foreach(v, key, x)
		{
			json_t *kv = json_pack("{s:s, s:o}", "key", key, "value", any_value(x));

			if (!kv || json_array_append_new(list, kv) < 0) {
				json_decref(list);
				return NULL;
			}
		}
		return json_pack("{s:{s:o}}", "kvlistValue", "values", list);
	case JSON_ARRAY:
		list = json_array();
		json_array_foreach(v, i, x)
		{
			if (json_array_append_new(list, any_value(x)) < 0) {
				json_decref(list);
				return NULL;
			}
		}
		return json_pack("{s:{s:o}}", "arrayValue", "values", list);
	case JSON_STRING:
		return json_pack("{s:O}", "stringValue", v);
	case JSON_INTEGER:
		/* OTLP/JSON writes 64-bit integers as strings. */
		(void)snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return json_pack("{s:s}", "intValue", num);
	case JSON_REAL:
		return json_pack("{s:O}", "doubleValue", v);
	case JSON_TRUE:
	case JSON_FALSE:
		return json_pack("{s:b}", "boolValue", json_is_true(v));
	case JSON_NULL:
	default:
		return json_object();
	}
}

static json_t *otlp_event(const au_record *rec)
{
	bool denied = strstr(rec->event, "denied") || strcmp(rec->event, "limit.hit") == 0 ||
		      strcmp(rec->event, "audit.error") == 0;
	char t[24], seq[24];

	(void)snprintf(t, sizeof(t), "%" PRId64, ts_ns(rec->ts));
	(void)snprintf(seq, sizeof(seq), "%" PRIu64, rec->seq);
	return json_pack(
	    "{s:[{s:{s:[{s:s, s:{s:s}}, {s:s, s:{s:s}}]}, s:[{s:{s:s, s:s}, s:[{s:s, s:s, s:i, "
	    "s:s, s:s, s:o, s:[{s:s, s:{s:s}}, {s:s, s:{s:s}}, {s:s, s:{s:s}}]}]}]}]}",
	    "resourceLogs", "resource", "attributes", "key", "service.name", "value", "stringValue",
	    "sandcap", "key", "sandcap.sandbox.id", "value", "stringValue", rec->sandbox,
	    "scopeLogs", "scope", "name", "sandcap.audit", "version", SANDCAP_VERSION, "logRecords",
	    "timeUnixNano", t, "observedTimeUnixNano", t, "severityNumber", denied ? 13 : 9,
	    "severityText", denied ? "WARN" : "INFO", "eventName", rec->event, "body",
	    any_value(rec->data), "attributes", "key", "event.name", "value", "stringValue",
	    rec->event, "key", "sandcap.audit.seq", "value", "intValue", seq, "key",
	    "sandcap.audit.hash", "value", "stringValue",
	    json_string_value(json_object_get(rec->root, "hash")));
}

int au_export(FILE *in, FILE *out, au_export_format format, size_t *reterr_line,
	      char *reterr_reason, size_t reason_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t cap = 0, len = 0, lineno = 0;
	au_log_bound bound = {0};
	bool newline = false;
	au_chain chain;
	int r;

	*reterr_line = 0;
	au_chain_init(&chain, NULL, 0);
	for (;;) {
		au_record rec = {0};
		json_t *ev;

		r = au_read_line(in, &buf, &cap, &len, &newline);
		if (r == 0)
			break;
		*reterr_line = ++lineno;
		if (r == -EMSGSIZE) {
			(void)snprintf(reterr_reason, reason_len, "longer than %u bytes",
				       AU_LINE_MAX);
			return -EBADMSG;
		}
		if (r < 0)
			return r;
		if (au_log_bound_add(&bound, len, newline, reterr_reason, reason_len) < 0)
			return -EBADMSG;
		r = au_parse_record(buf, len, &rec, reterr_reason, reason_len);
		if (r == 0)
			r = au_chain_feed(&chain, &rec, buf, reterr_reason, reason_len);
		if (r == 0 && !newline) {
			(void)snprintf(reterr_reason, reason_len, "no newline at the end");
			r = -EBADMSG;
		}
		if (r < 0) {
			au_record_clear(&rec);
			return r;
		}
		ev = format == AU_EXPORT_OCSF ? ocsf_event(&rec) : otlp_event(&rec);
		au_record_clear(&rec);
		if (!ev)
			return -ENOMEM;
		r = json_dumpf(ev, out, JSON_COMPACT | JSON_ENSURE_ASCII);
		json_decref(ev);
		if (r < 0 || fputc('\n', out) == EOF)
			return -EIO;
	}
	*reterr_line = lineno + 1;
	r = au_chain_end(&chain, reterr_reason, reason_len);
	if (r < 0)
		return r;
	*reterr_line = 0;
	return fflush(out) == EOF ? -EIO : 0;
}
