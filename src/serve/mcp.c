/* SPDX-License-Identifier: MIT */
#include "serve/mcp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"

enum {
	RPC_PARSE_ERROR = -32700,
	RPC_INVALID_REQUEST = -32600,
	RPC_METHOD_NOT_FOUND = -32601,
	RPC_INVALID_PARAMS = -32602,
};

static json_t *rpc_error(json_t *id, int code, const char *msg)
{
	return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
			 "error", "code", code, "message", msg);
}

static json_t *rpc_error_data(json_t *id, int code, const char *msg, json_t *data)
{
	return json_pack("{s:s, s:O, s:{s:i, s:s, s:o}}", "jsonrpc", "2.0", "id",
			 id ? id : json_null(), "error", "code", code, "message", msg, "data",
			 data);
}

/* The versions this server speaks, newest first: what it answers to
 * initialize's protocolVersion (MCP "Version Negotiation"). */
static const char *const mcp_versions[] = {MCP_PROTOCOL_VERSION, "2025-03-26", "2024-11-05"};

const char *mcp_negotiate(const char *want)
{
	bool dated = want && strlen(want) == 10;

	for (size_t i = 0; dated && i < 10; i++)
		dated = i == 4 || i == 7 ? want[i] == '-' : want[i] >= '0' && want[i] <= '9';
	if (!dated)
		return NULL; /* not a version at all: refused, with the ones we speak */
	for (size_t i = 0; i < sizeof(mcp_versions) / sizeof(mcp_versions[0]); i++)
		if (strcmp(want, mcp_versions[i]) == 0)
			return mcp_versions[i];
	return MCP_PROTOCOL_VERSION; /* another date: ours, for the client to judge */
}

static json_t *rpc_result(json_t *id, json_t *result)
{
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

/* What a tool may do, for the client's consent prompts (the hints of
 * MCP's ToolAnnotations). */
typedef struct tool_hints {
	bool read_only, destructive, idempotent, open_world;
} tool_hints;

static json_t *tool(const char *name, const char *title, const char *desc, json_t *props,
		    const char *required, tool_hints h)
{
	json_t *req = json_array();

	if (required)
		(void)json_array_append_new(req, json_string(required));
	return json_pack("{s:s, s:s, s:s, s:{s:s, s:o, s:o, s:b}, s:{s:s, s:b, s:b, s:b, s:b}}",
			 "name", name, "title", title, "description", desc, "inputSchema", "type",
			 "object", "properties", props, "required", req, "additionalProperties", 0,
			 "annotations", "title", title, "readOnlyHint", h.read_only,
			 "destructiveHint", h.destructive, "idempotentHint", h.idempotent,
			 "openWorldHint", h.open_world);
}

static json_t *tools_list(void)
{
	return json_pack(
	    "{s:[o,o,o,o]}", "tools",
	    tool("run_command", "Run a command in the sandbox",
		 "Runs a command inside the sandbox (its files, network and limits are what "
		 "its policy grants) and returns its exit code, stdout, stderr and the limits it "
		 "hit. Give either command (run by /bin/sh -c) or argv.",
		 json_pack("{s:{s:s, s:s}, s:{s:s, s:{s:s}, s:s}, s:{s:s, s:s}, s:{s:s, s:s}}",
			   "command", "type", "string", "description", "a shell command line",
			   "argv", "type", "array", "items", "type", "string", "description",
			   "the program and its arguments, without a shell", "stdin", "type",
			   "string", "description", "text for its standard input", "cwd", "type",
			   "string", "description", "absolute working directory"),
		 NULL, (tool_hints){.destructive = true, .open_world = true}),
	    tool("write_file", "Write a file in the sandbox",
		 "Writes text to a file inside the sandbox (where its policy lets it write).",
		 json_pack("{s:{s:s}, s:{s:s}}", "path", "type", "string", "content", "type",
			   "string"),
		 "path", (tool_hints){.destructive = true, .idempotent = true}),
	    tool("read_file", "Read a file in the sandbox",
		 "Reads a file inside the sandbox (as text; at most 1 MiB is shown).",
		 json_pack("{s:{s:s}}", "path", "type", "string"), "path",
		 (tool_hints){.read_only = true, .idempotent = true}),
	    tool("list_files", "List a directory in the sandbox",
		 "Lists a directory inside the sandbox: name, type and size of each entry.",
		 json_pack("{s:{s:s}}", "path", "type", "string"), "path",
		 (tool_hints){.read_only = true, .idempotent = true}));
}

static json_t *text_result(const char *text, size_t len, json_t *structured, bool is_error)
{
	json_t *r = json_pack("{s:[{s:s, s:s%}], s:b}", "content", "type", "text", "text", text,
			      len, "isError", is_error);

	if (r && structured)
		(void)json_object_set_new(r, "structuredContent", structured);
	else
		json_decref(structured);
	return r;
}

static json_t *tool_error(const sv_error *e)
{
	char msg[1024];
	int n = snprintf(msg, sizeof(msg), "%s: %s", e->code, e->message);

	return text_result(msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1, NULL, true);
}

/* Text for the model: valid UTF-8 as is, anything else replaced by U+FFFD
 * per byte (jansson takes only valid UTF-8); at most MCP_MAX_OUTPUT bytes. */
static char *printable(const char *s, size_t n, bool *ret_truncated)
{
	size_t cap = (n > MCP_MAX_OUTPUT ? MCP_MAX_OUTPUT : n) * 3 + 1, o = 0, i = 0;
	char *out = malloc(cap);

	*ret_truncated = n > MCP_MAX_OUTPUT;
	if (n > MCP_MAX_OUTPUT)
		n = MCP_MAX_OUTPUT;
	if (!out)
		return NULL;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t k = c < 0x80		? 1
			   : (c & 0xe0) == 0xc0 ? 2
			   : (c & 0xf0) == 0xe0 ? 3
			   : (c & 0xf8) == 0xf0 ? 4
						: 0;
		bool good = k > 0 && i + k <= n && c != 0;

		for (size_t j = 1; good && j < k; j++)
			good = ((unsigned char)s[i + j] & 0xc0) == 0x80;
		if (good && k == 2 && c < 0xc2)
			good = false;
		if (good && k == 3) {
			unsigned char d = (unsigned char)s[i + 1];

			good = !(c == 0xe0 && d < 0xa0) && !(c == 0xed && d >= 0xa0);
		}
		if (good && k == 4) {
			unsigned char d = (unsigned char)s[i + 1];

			good = c <= 0xf4 && !(c == 0xf0 && d < 0x90) && !(c == 0xf4 && d >= 0x90);
		}
		if (good) {
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	out[o] = 0;
	return out;
}

static const char *arg_string(json_t *args, const char *key, bool *ret_bad)
{
	json_t *v = json_object_get(args, key);

	if (!v)
		return NULL;
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
		*ret_bad = true;
		return NULL;
	}
	return json_string_value(v);
}

static json_t *call_run(const mcp_ops *ops, json_t *args)
{
	_cleanup_json_ json_t *req = json_object();
	_cleanup_free_ char *out = NULL, *err = NULL, *text = NULL;
	sv_exec_req er;
	sv_exec_result res;
	sv_error e = {0};
	bool bad = false, tout, terr;
	const char *cmd = arg_string(args, "command", &bad);
	const char *in = arg_string(args, "stdin", &bad);
	const char *cwd = arg_string(args, "cwd", &bad);
	json_t *argv = json_object_get(args, "argv"), *fin, *st;
	int r;

	if (bad || !req || !!cmd == !!argv) {
		(void)sv_fail(&e, 400, "invalid_arguments", NULL,
			      "give command (a string) or argv (strings), not both; stdin and "
			      "cwd are strings");
		return tool_error(&e);
	}
	if (cmd)
		(void)json_object_set_new(req, "argv", json_pack("[s,s,s]", "/bin/sh", "-c", cmd));
	else
		(void)json_object_set(req, "argv", argv);
	if (in)
		(void)json_object_set_new(req, "stdin_text", json_string(in));
	if (cwd)
		(void)json_object_set_new(req, "cwd", json_string(cwd));
	if (sv_exec_req_from_json(req, &er, &e) < 0) {
		sv_exec_req_done(&er);
		return tool_error(&e);
	}
	r = ops->run(ops->ud, &er, &res, &e);
	sv_exec_req_done(&er);
	if (r < 0)
		return tool_error(&e);
	fin = res.final;
	out = printable(res.out, res.out_len, &tout);
	err = printable(res.err, res.err_len, &terr);
	json_int_t code = json_integer_value(json_object_get(fin, "exit_code"));
	json_t *limits = json_object_get(fin, "limits_hit");
	_cleanup_free_ char *lim = limits ? json_dumps(limits, JSON_COMPACT) : NULL;

	if (!out || !err ||
	    asprintf(&text, "exit code %lld%s%s\n--- stdout%s ---\n%s\n--- stderr%s ---\n%s",
		     (long long)code, json_array_size(limits) ? ", limits hit: " : "",
		     json_array_size(limits) ? lim : "", tout ? " (truncated)" : "", out,
		     terr ? " (truncated)" : "", err) < 0) {
		text = NULL;
		sv_exec_result_done(&res);
		(void)sv_fail(&e, 500, "internal", NULL, "out of memory");
		return tool_error(&e);
	}
	st = json_pack("{s:I, s:O, s:O, s:O, s:s, s:s}", "exit_code", code, "signal",
		       json_object_get(fin, "signal") ?: json_null(), "limits_hit",
		       limits ?: json_null(), "duration_ms",
		       json_object_get(fin, "duration_ms") ?: json_null(), "stdout", out, "stderr",
		       err);
	sv_exec_result_done(&res);
	return text_result(text, strlen(text), st, code != 0);
}

static json_t *call_files(const mcp_ops *ops, const char *name, json_t *args)
{
	sv_error e = {0};
	bool bad = false;
	const char *path = arg_string(args, "path", &bad);

	if (bad || !path || path[0] != '/') {
		(void)sv_fail(&e, 400, "invalid_arguments", NULL,
			      "path: expected an absolute path inside the sandbox");
		return tool_error(&e);
	}
	if (!strcmp(name, "write_file")) {
		json_t *content = json_object_get(args, "content");
		char msg[256];
		int n;

		if (content && !json_is_string(content)) {
			(void)sv_fail(&e, 400, "invalid_arguments", NULL,
				      "content: expected a string");
			return tool_error(&e);
		}
		if (ops->write_file(ops->ud, path, content ? json_string_value(content) : "",
				    content ? json_string_length(content) : 0, &e) < 0)
			return tool_error(&e);
		n = snprintf(msg, sizeof(msg), "wrote %zu bytes to %.200s",
			     content ? json_string_length(content) : 0, path);
		return text_result(msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1, NULL,
				   false);
	}
	if (!strcmp(name, "read_file")) {
		_cleanup_free_ char *data = NULL, *text = NULL;
		size_t len = 0;
		bool trunc;

		if (ops->read_file(ops->ud, path, &data, &len, &e) < 0)
			return tool_error(&e);
		text = printable(data, len, &trunc);
		if (!text) {
			(void)sv_fail(&e, 500, "internal", NULL, "out of memory");
			return tool_error(&e);
		}
		return text_result(text, strlen(text), NULL, false);
	}
	_cleanup_json_ json_t *entries = NULL;
	_cleanup_free_ char *text = NULL;

	if (ops->list_files(ops->ud, path, &entries, &e) < 0)
		return tool_error(&e);
	text = json_dumps(entries, JSON_INDENT(1));
	if (!text) {
		(void)sv_fail(&e, 500, "internal", NULL, "out of memory");
		return tool_error(&e);
	}
	return text_result(text, strlen(text), json_pack("{s:O}", "entries", entries), false);
}

static json_t *tools_call(const mcp_ops *ops, json_t *id, json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments");
	json_t *res;

	if (!name)
		return rpc_error(id, RPC_INVALID_PARAMS, "params.name: expected a tool name");
	if (args && !json_is_object(args))
		return rpc_error(id, RPC_INVALID_PARAMS, "params.arguments: expected an object");
	_cleanup_json_ json_t *empty = json_object();

	if (!args)
		args = empty;
	if (!strcmp(name, "run_command"))
		res = call_run(ops, args);
	else if (!strcmp(name, "write_file") || !strcmp(name, "read_file") ||
		 !strcmp(name, "list_files"))
		res = call_files(ops, name, args);
	else
		return rpc_error(id, RPC_INVALID_PARAMS, "unknown tool");
	if (!res)
		return rpc_error(id, -32603, "out of memory");
	return rpc_result(id, res);
}

static json_t *dispatch(mcp_state *st, const mcp_ops *ops, json_t *msg, bool *ret_notification)
{
	json_t *id = json_object_get(msg, "id");
	json_t *params = json_object_get(msg, "params");
	const char *method = json_string_value(json_object_get(msg, "method"));
	const char *ver = json_string_value(json_object_get(msg, "jsonrpc"));

	*ret_notification = !id;
	if (!ver || strcmp(ver, "2.0") || !method ||
	    (id && !json_is_string(id) && !json_is_integer(id)) ||
	    (params && !json_is_object(params))) {
		/* a response from the client (it sent us no request to answer) is dropped */
		if (!method && id &&
		    (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
			*ret_notification = true;
			return NULL;
		}
		*ret_notification = false;
		return rpc_error(id && (json_is_string(id) || json_is_integer(id)) ? id : NULL,
				 RPC_INVALID_REQUEST, "invalid JSON-RPC 2.0 request");
	}
	if (!id) {
		if (!strcmp(method, "notifications/initialized"))
			st->initialized = true;
		return NULL; /* notifications get no answer, known or not */
	}
	if (!strcmp(method, "initialize")) {
		char instructions[512];
		const char *want = json_string_value(json_object_get(params, "protocolVersion"));
		const char *version = mcp_negotiate(want);

		if (!version)
			return rpc_error_data(
			    id, RPC_INVALID_PARAMS, "unsupported protocol version",
			    json_pack("{s:[s,s,s], s:O?}", "supported", MCP_PROTOCOL_VERSION,
				      "2025-03-26", "2024-11-05", "requested",
				      json_object_get(params, "protocolVersion")));
		st->answered = true;
		(void)snprintf(instructions, sizeof(instructions),
			       "Every tool runs inside one sandbox (%s) whose files, network and "
			       "limits are bounded by its policy; every command is recorded in "
			       "its audit log %s.",
			       st->sandbox ? st->sandbox : "", st->audit ? st->audit : "");
		return rpc_result(id, json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}",
						"protocolVersion", version, "capabilities", "tools",
						"listChanged", 0, "serverInfo", "name", "sandcap",
						"title", "sandcap sandbox", "version",
						SANDCAP_VERSION, "instructions", instructions));
	}
	if (!strcmp(method, "ping"))
		return rpc_result(id, json_object());
	/* Lifecycle: nothing but ping before initialize has been answered. */
	if (!st->answered)
		return rpc_error(id, RPC_INVALID_REQUEST, "not initialized: send initialize first");
	if (!strcmp(method, "tools/list"))
		return rpc_result(id, tools_list());
	if (!strcmp(method, "tools/call"))
		return tools_call(ops, id, params);
	return rpc_error(id, RPC_METHOD_NOT_FOUND, "method not found");
}

int mcp_handle(mcp_state *st, const mcp_ops *ops, const char *msg, size_t len, char **ret_reply)
{
	_cleanup_json_ json_t *m = NULL, *reply = NULL;
	json_error_t je;
	bool notification = false;

	*ret_reply = NULL;
	if (len > MCP_MAX_MESSAGE)
		reply = rpc_error(NULL, RPC_INVALID_REQUEST, "message too large");
	else {
		m = json_loadb(msg, len, JSON_REJECT_DUPLICATES, &je);
		if (!m)
			reply = rpc_error(NULL, RPC_PARSE_ERROR, "parse error");
		else if (!json_is_object(m)) /* batches are gone from 2025-06-18 */
			reply = rpc_error(NULL, RPC_INVALID_REQUEST, "expected one JSON object");
		else
			reply = dispatch(st, ops, m, &notification);
	}
	if (!reply)
		return notification ? 0 : -ENOMEM;
	*ret_reply = json_dumps(reply, JSON_COMPACT);
	return *ret_reply ? 0 : -ENOMEM;
}
