/* SPDX-License-Identifier: MIT */
/*
 * The policy parser's engine and its key table, shared by parse.c (how JSON is
 * read), keys.c (what each key is) and host-check.c (what the host must hold).
 *
 * The key table is the one description of the policy format: the parser walks
 * it to read a policy and to refuse unknown keys, the host check walks it to
 * find the host paths in a plan, and a unit test compares it with
 * docs/policy.md so that the reference cannot drift from the code.
 */
#pragma once

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/plan.h"
#include "policy/policy-internal.h"

/* Limits of single values, beyond the counts in plan.h. */
#define POLICY_MAX_CPU		  1024u	       /* cores */
#define POLICY_MIN_MEMORY	  (4ull << 20) /* below this nothing useful starts */
#define POLICY_MAX_PIDS		  4194304u     /* PID_MAX_LIMIT, include/linux/threads.h */
#define POLICY_MAX_NOFILE	  1048576u     /* default fs.nr_open */
#define POLICY_MAX_TMP_INODES	  (1ull << 32)
#define POLICY_MAX_AGENT_ID	  4294967294ull /* (uid_t)-1 is "no id" to the kernel */
#define POLICY_MAX_SPAWN_DEPTH	  8u
#define POLICY_MAX_SPAWN_CHILDREN 256u
#define POLICY_MAX_NAME		  64u
#define POLICY_MAX_HOSTNAME	  64u /* HOST_NAME_MAX */
#define POLICY_MAX_DNS_NAME	  253u
#define POLICY_MAX_HEADER	  256u

/* Parsing state: the JSON path of the value being read, for diagnostics. */
typedef struct pctx {
	char path[1024];
	size_t plen;
	sc_diag *diag;
	sc_plan *plan; /* the plan being filled, for keys that refer to other keys */
} pctx;

typedef enum key_type {
	KT_SECTION,   /* an object whose keys (.sub) fill the same struct */
	KT_LIST,      /* an array of objects (.sub), each a new element */
	KT_BOOL,      /* true or false */
	KT_UINT,      /* a JSON integer from .min to .max */
	KT_SIZE,      /* "64M", "4096" or an integer of bytes; at least .min */
	KT_DURATION,  /* "30s"; at least .min nanoseconds */
	KT_ENUM,      /* one of .names; stores the index, or .values[index] */
	KT_STRING,    /* a string, checked by .check */
	KT_PATH,      /* an absolute path inside the sandbox, normalised */
	KT_HOST_PATH, /* an absolute host path, normalised; the host check looks at it */
	KT_CUSTOM,    /* .parse reads it (and .sub, for an object form) */
	_KT_MAX,
	_KT_INVALID = -EINVAL,
} key_type;

/* What the host check requires of a KT_HOST_PATH. */
typedef enum host_kind {
	HOST_GRANT,  /* a directory or regular file, no symlink in the path */
	HOST_ROOTFS, /* a directory, no symlink in the path */
	HOST_FILE,   /* a regular file the supervisor reads; symlinks are fine */
	HOST_SECRET, /* a HOST_FILE that, resolved, lies in no grant */
	_HOST_KIND_MAX,
	_HOST_KIND_INVALID = -EINVAL,
} host_kind;

typedef enum key_flags {
	KEY_REQUIRED = 1 << 0,
	KEY_NULLABLE = 1 << 1, /* null means the default (canonical form) */
	/* null lifts a limit that is on by default: .parse reads it (KT_CUSTOM) */
	KEY_NULL_LIFTS = 1 << 2,
} key_flags;

typedef struct policy_key policy_key;

/* The keys of one JSON object, and the checks that span several of them. */
typedef struct key_table {
	const policy_key *keys;
	size_t n_keys;
	/* After every key was read: defaults that depend on other keys, and
	 * checks against earlier elements (index is the element's, for lists). */
	int (*finish)(pctx *c, const json_t *obj, void *base, size_t index);
	/* Defaults the key entries cannot state (list elements only). */
	void (*init)(void *base);
} key_table;

struct policy_key {
	const char *name;
	key_type type;
	size_t off, width; /* the field in the struct being filled; width 0: none */
	key_flags flags;
	uint64_t def;	     /* default of a numeric field (bool, enum index, ...) */
	const char *def_str; /* default of a string field */
	uint64_t min, max;
	const char *const *names; /* KT_ENUM */
	size_t n_names;
	const int *values;	 /* KT_ENUM: stored instead of the index */
	const key_table *sub;	 /* KT_SECTION, KT_LIST, a KT_CUSTOM's object form */
	size_t count_off;	 /* KT_LIST: the size_t element count; .off the array */
	size_t elem_size;	 /* KT_LIST */
	size_t max_items;	 /* KT_LIST */
	const char *items;	 /* KT_LIST: "grants", for messages */
	host_kind host;		 /* KT_HOST_PATH */
	const char *what;	 /* "expected WHAT": replaces the type's own words */
	const char *missing;	 /* KEY_REQUIRED: said after "missing required key" */
	const char *doc_type;	 /* a word the reference's type column must contain */
	const char *doc_default; /* the reference's default, when not derived from .def */
	/* KT_STRING, KT_PATH, KT_HOST_PATH: further checks of the (normalised) string. */
	int (*check)(pctx *c, const json_t *v, const char *s);
	/* KT_CUSTOM: reads v into base (the struct being filled). */
	int (*parse)(pctx *c, const json_t *v, const policy_key *k, void *base);
};

#define FIELD(type, m) .off = offsetof(type, m), .width = sizeof(((type *)0)->m)

/* The whole format: the keys of the top-level object (keys.c). */
extern const key_table policy_root;
/* Its "net" section (keys-net.c). */
extern const key_table net_section;

/* Why s is not an RFC 1123 host name of at most max characters, or NULL. */
const char *dns_name_error(const char *s, size_t max);

/* ---- the engine (parse.c) ---- */

size_t path_push_key(pctx *c, const char *key);
size_t path_push_index(pctx *c, size_t i);
void path_pop(pctx *c, size_t saved);

/* Fills the diagnostic at the current path; returns err, or -EINVAL if err >= 0. */
int fail(pctx *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "expected WHAT, got FOUND" */
int fail_expected(pctx *c, const json_t *v, const char *what);
/* s as a JSON string, control characters escaped, cut at max characters. */
void quote(const char *s, size_t max, char *buf, size_t size);

bool a_digit(char ch);
bool a_alnum(char ch);
char a_lower(char ch);
bool is_ident(const char *s);

int want_string(pctx *c, const json_t *v, const char **ret);
int want_uint(pctx *c, const json_t *v, uint64_t min, uint64_t max, uint64_t *ret);
int want_abs_path(pctx *c, const json_t *v, char **ret);
/* An array of at most max items: zeroed storage for them (NULL when empty). */
int want_array(pctx *c, const json_t *x, const char *items, size_t max, size_t elem_size,
	       void **ret, size_t *ret_n);

/* Reads v as k says into base; k->sub objects through the same engine. */
int parse_value(pctx *c, const json_t *v, const policy_key *k, void *base);
int parse_object(pctx *c, const json_t *v, const key_table *t, void *base);
/* Sets every default the table states; -ENOMEM only. */
int apply_defaults(const key_table *t, void *base);

/* The field a key fills, and an integer store of its width. */
static inline void *key_field(const policy_key *k, void *base)
{
	return (char *)base + k->off;
}
void store_uint(void *field, size_t width, uint64_t v);
