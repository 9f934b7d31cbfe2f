/* SPDX-License-Identifier: MIT */
/*
 * sandcap public API. Types are opaque; every function returns >= 0 on
 * success or -errno on failure and never prints.
 */
#pragma once

#include <stddef.h>

#define SC_PUBLIC __attribute__((visibility("default")))

/* Where and why an input was refused. Filled by parsers on failure. */
typedef struct sc_diag {
	char path[256];	   /* JSON path of the offending key, e.g. "$.fs.grants[1].mode" */
	char message[512]; /* what was expected and what was found */
	int line;	   /* 1-based line in the input, 0 when unknown */
	int column;	   /* 1-based column, 0 when unknown */
} sc_diag;

typedef struct sc_plan sc_plan; /* the immutable, validated capability set */

SC_PUBLIC int sc_plan_parse(const char *buf, size_t len, sc_plan **ret_plan, sc_diag *reterr_diag);
SC_PUBLIC sc_plan *sc_plan_free(sc_plan *p); /* NULL-safe, returns NULL */
