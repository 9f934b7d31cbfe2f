/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the requests a session's supervisor reads from its
 * clients (src/session/request.c), as conn_read() tells them apart: a
 * datagram starting with '{' is one JSON object (duplicates refused, at
 * most SS_MAX_MSG), anything else a core/ctl.h message (an exec, a signal
 * or go: session/exec-wire.h); then the checks, then what the supervisor
 * relies on when it builds pid 1's message from an exec.
 */
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctl.h"
#include "session/request.h"
#include "session/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const ss_request *q)
{
	size_t total = strlen(q->cwd ? q->cwd : "") + 1;

	/* What start_exec() relies on: argv non-empty, every string NUL-free,
	 * the whole within one control message. */
	if (q->op == SS_OP_EXEC) {
		if (q->n_argv == 0 || !q->argv[0][0] || q->argv[q->n_argv])
			abort();
		for (size_t i = 0; i < q->n_argv; i++)
			total += strlen(q->argv[i]) + 1;
		for (size_t i = 0; i < q->n_env; i++)
			total += strlen(q->env[i]) + 1;
		if (total > CTL_MAX_PAYLOAD || q->n_env > 256)
			abort();
		for (size_t i = 0; i < q->n_env; i++)
			if (!strchr(q->env[i], '=') || q->env[i][0] == '=')
				abort();
	}
	if (q->op == SS_OP_SIGNAL && (q->signal < 1 || q->signal >= NSIG))
		abort();
	/* JSON carries no exec, nor what follows one. */
	if (q->root && (q->op == SS_OP_EXEC || q->op == SS_OP_SIGNAL || q->op == SS_OP_GO))
		abort();
	if ((q->op == SS_OP_PUT || q->op == SS_OP_GET || q->op == SS_OP_LS) &&
	    (!q->path || !q->path[0]))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static ss_request q;
	char err[256];
	json_t *o;

	if (size > SS_MAX_MSG)
		return 0;
	if (size == 0 || data[0] != '{') {
		char *buf = malloc(size + 1);

		if (!buf)
			return 0;
		memcpy(buf, data, size);
		buf[size] = '\0';
		if (ss_request_parse_ctl(buf, size, &q, err, sizeof(err)) >= 0) {
			check(&q);
			ss_request_done(&q); /* frees buf */
		} else {
			free(buf);
		}
		return 0;
	}
	o = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		return 0;
	}
	if (ss_request_parse(o, &q, err, sizeof(err)) >= 0) {
		check(&q);
		ss_request_done(&q);
	}
	json_decref(o);
	return 0;
}
