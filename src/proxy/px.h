/* SPDX-License-Identifier: MIT */
/*
 * Internal types shared by the proxy worker's files. The worker never sees an
 * sc_plan: it gets this subset, serialised by px_spawn() (config.c), with the
 * credential values already resolved and formatted by the supervisor.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/plan.h"
#include "proxy/limits.h"
#include "proxy/synthetic.h"
#include "proxy/proxy.h"

/* What a credential has been used for so far (cred-limits.h). */
typedef struct px_cred_state {
	uint64_t requests; /* admitted */
	uint64_t bytes;	   /* sent upstream with it */
	px_bucket rate;
} px_cred_state;

#define PX_CONFIG_MAX_BYTES (4u << 20)
#define PX_MAX_SECRET	    8192u /* a credential value, formatted */

typedef struct px_cred {
	char *name; /* for records */
	char *host;
	char *header; /* NULL: a placeholder-only credential, no header is set */
	char *value;  /* the full header value, e.g. "Bearer abc"; never contains CR, LF, NUL */
	bool upstream_https;
	/* limits (cred-limits.h); PLAN_UNLIMITED / 0 / none when absent */
	uint64_t max_requests;
	plan_rate rate;
	uint64_t max_bytes;
	uint32_t methods;
	char **paths;
	size_t n_paths;
	uint64_t expires_ns;
	/* placeholder secrets (placeholder.c); all NULL without placeholder_env */
	char *placeholder_env; /* the agent's variable holding the placeholder */
	char *placeholder;     /* what the agent sends */
	char *secret;	       /* what the origin gets instead (the raw value, unformatted) */
	bool in_query;
} px_cred;

typedef struct px_config {
	plan_egress *egress;
	size_t n_egress;
	plan_cidr *allow_private;
	size_t n_allow_private;
	plan_rate rate;
	uint64_t bandwidth;
	uint64_t max_request_body;
	uint64_t max_response_body;
	uint64_t egress_budget;
	px_cred *creds;
	size_t n_creds;
	char *upstream_ca;
	char *dns;
	char *ca_cert; /* TLS inspection: the sandbox CA (PEM), or NULL */
	char *ca_key;  /* its key (PEM); wiped once the worker has loaded it */
	bool has_placeholders;
	int64_t parent_pid; /* the supervisor, to notice it is gone before PDEATHSIG was armed */
} px_config;

/*
 * The counters that outlive one worker, in a memfd the supervisor keeps
 * (px_seed) and each worker maps shared: a restarted worker goes on with the
 * budget and buckets its predecessor left, clamped to the policy.
 */
#define PX_SHARED_MAGIC UINT64_C(0x73635f7078737431) /* "sc_pxst1" */
typedef struct px_shared {
	uint64_t magic; /* set by the first worker */
	uint64_t budget_left;
	px_bucket rate, bw_up, bw_down;
	uint64_t start_ns; /* CLOCK_MONOTONIC when the first worker started: expires */
	/* requests refused over net.rate, not yet reported: a successor
	 * reports what its predecessor counted */
	uint64_t rate_refused;
	px_cred_state creds[POLICY_MAX_CREDENTIALS]; /* index: px_config.creds */
	uint64_t request_ids;			     /* the last net.request.start id handed out */
} px_shared;

/* The same memfd holds, from PX_SYNTH_OFFSET (page-aligned on every
 * architecture), the sandbox resolver's table of names (synthetic.h). */
#define PX_SYNTH_OFFSET 65536u
#define PX_STATE_SIZE	(PX_SYNTH_OFFSET + sizeof(px_synth_table))
_Static_assert(sizeof(px_shared) <= PX_SYNTH_OFFSET, "px_shared outgrew PX_SYNTH_OFFSET");

/* config.c */
/* Serialises the net part of plan plus the resolved secrets. Supervisor side.
 * Returns 0, -ENOKEY when a secret is missing, -EINVAL on a bad value. */
int px_config_from_plan(const sc_plan *plan, json_t **ret_json);
/* The same with the run's CA and placeholders (x may be NULL: none). */
int px_config_from_run(const sc_plan *plan, const px_extras *x, json_t **ret_json);
/* Worker side: strict parse of the serialised configuration. */
int px_config_parse(const char *buf, size_t len, px_config **ret);
px_config *px_config_free(px_config *c);
/* Formats a credential header value: format with one "%s" ("%%" is a literal %). */
int px_format_secret(const char *format, const char *secret, char **ret_value);
