/* SPDX-License-Identifier: MIT */
/*
 * The agent's environment: nothing of the supervisor's is inherited. These
 * variables are set by sandcap itself, so a policy's "env" may not name
 * them (in any case), except the proxy variables, which it may replace or
 * leave out; the policy's variables follow them.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "policy/plan.h"

/* The most variables agent_env_build() adds before the policy's. */
#define AGENT_ENV_OWN_MAX 32u

/* Is name (without "=") one sandcap sets? Case-insensitive. */
bool agent_env_reserved(const char *name);
/* Is name, in this exact case, a proxy variable a policy's env may replace
 * (or, with an empty value, leave out)? */
bool agent_env_policy_may_set(const char *name);
/* Is kv ("NAME=value", a policy's) a proxy variable it leaves out (value "")? */
bool agent_env_left_out(const char *kv);
/* Fills env[0..] with "NAME=value" pointers (static strings and the plan's
 * own, not copies) and a final NULL. -E2BIG when cap is too small. */
int agent_env_build(const sc_plan *p, char **env, size_t cap);
/* For the n-th variable sandcap sets for p: its name's length and text
 * (not NUL-terminated at the name's end); false past the last. */
bool agent_env_name(const sc_plan *p, size_t n, const char **ret_name, size_t *ret_len);
