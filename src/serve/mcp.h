/* SPDX-License-Identifier: MIT */
/*
 * The MCP server's message handling (JSON-RPC 2.0, protocol 2025-06-18):
 * initialize (versions 2025-06-18, 2025-03-26 and 2024-11-05), ping, then
 * tools/list and tools/call for run_command, write_file,
 * read_file and list_files, each call going to one session through ops.
 * Pure apart from ops: one message in, at most one reply out; the client
 * (a model's host) is not trusted to send well-formed messages.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "serve/backend.h"

#define MCP_PROTOCOL_VERSION "2025-06-18"
#define MCP_MAX_MESSAGE	     (16u << 20)
#define MCP_MAX_OUTPUT	     (1u << 20) /* of stdout, stderr or a file, shown to the model */

typedef struct mcp_ops {
	int (*run)(void *ud, const sv_exec_req *req, sv_exec_result *ret, sv_error *e);
	int (*write_file)(void *ud, const char *path, const void *data, size_t len, sv_error *e);
	int (*read_file)(void *ud, const char *path, char **ret_data, size_t *ret_len, sv_error *e);
	int (*list_files)(void *ud, const char *path, json_t **ret_entries, sv_error *e);
	void *ud;
} mcp_ops;

typedef struct mcp_state {
	bool answered;	     /* initialize was answered: other requests may come */
	bool initialized;    /* the client said notifications/initialized */
	const char *sandbox; /* the session's name, for the instructions */
	const char *audit;   /* its log */
} mcp_state;

/* The protocol version to answer a client that asked for want: want
 * itself when this server speaks it, the newest it speaks for another
 * date, NULL for something that is not a version (YYYY-MM-DD). */
const char *mcp_negotiate(const char *want);

/* Handles one message (one line of stdin). *ret_reply is the reply to write
 * (malloc'd, one line without its newline), or NULL for a notification. */
int mcp_handle(mcp_state *st, const mcp_ops *ops, const char *msg, size_t len, char **ret_reply);
