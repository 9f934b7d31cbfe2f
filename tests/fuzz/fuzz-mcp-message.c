/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the MCP server's JSON-RPC message handling (`sandcap
 * mcp`): one line from the model's host per input, against tools that
 * answer without a sandbox. Every reply must be one JSON-RPC object.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int f_run(void *ud, const sv_exec_req *req, sv_exec_result *ret, sv_error *e)
{
	(void)ud;
	(void)e;
	memset(ret, 0, sizeof(*ret));
	ret->out = strdup(req->argv[0]);
	ret->out_len = strlen(ret->out);
	ret->err = strdup("");
	ret->final = json_pack("{s:i, s:n, s:[]}", "exit_code", 1, "signal", "limits_hit");
	return 0;
}

static int f_write(void *ud, const char *path, const void *d, size_t len, sv_error *e)
{
	(void)ud;
	(void)d;
	(void)len;
	return path[1] ? 0 : sv_fail(e, 403, "denied", NULL, "no");
}

static int f_read(void *ud, const char *path, char **ret, size_t *len, sv_error *e)
{
	(void)ud;
	(void)e;
	*ret = strdup(path);
	*len = strlen(path);
	return 0;
}

static int f_list(void *ud, const char *path, json_t **ret, sv_error *e)
{
	(void)ud;
	(void)e;
	*ret = json_pack("[s]", path);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mcp_ops ops = {f_run, f_write, f_read, f_list, NULL};
	mcp_state st = {.sandbox = "s", .audit = "a"};
	char *reply = NULL;

	if (size > 1 << 16)
		return 0;
	if (mcp_handle(&st, &ops, (const char *)data, size, &reply) < 0)
		abort();
	if (reply) {
		json_t *o = json_loads(reply, 0, NULL);

		if (!json_is_object(o) ||
		    strcmp(json_string_value(json_object_get(o, "jsonrpc")) ?: "", "2.0") ||
		    !!json_object_get(o, "result") == !!json_object_get(o, "error"))
			abort();
		json_decref(o);
		free(reply);
	}
	return 0;
}
