/* SPDX-License-Identifier: MIT */
/* Where and why an input was refused, and filling it on the way out of a
 * failing function. */
#pragma once

/* Filled by parsers and setup steps on failure. */
typedef struct sc_diag {
	char path[256];	   /* JSON path of the offending key, e.g. "$.fs.grants[1].mode" */
	char message[512]; /* what was expected and what was found */
	int line;	   /* 1-based line in the input, 0 when unknown */
	int column;	   /* 1-based column, 0 when unknown */
} sc_diag;

/* Sets d->path (a JSON path, or the setup step that failed) and d->message,
 * when d is not NULL, and returns err: "return diag_fail(d, -EINVAL, ...)". */
int diag_fail(sc_diag *d, int err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
