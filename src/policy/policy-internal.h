/* SPDX-License-Identifier: MIT */
/* Shared between the policy parser, its serialiser, its describer and the
 * intersection. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/plan.h"

/* Names of http_method bits, in bit order. */
extern const char *const plan_method_names[];
#define PLAN_N_METHODS	 8u
#define PLAN_ALL_METHODS ((1u << PLAN_N_METHODS) - 1u)

/* Same name and limits (max_requests, rate, max_bytes, methods, paths, expires). */
bool plan_credential_limits_eq(const plan_credential *x, const plan_credential *y);
/* Frees a list of path prefixes (plan_egress.paths, plan_credential.paths). */
void plan_paths_free(char **paths, size_t n);
/* Copies one; -ENOMEM. */
int plan_paths_dup(char *const *paths, size_t n, char ***ret, size_t *ret_n);

/* Formats a plan_cidr as "ADDR/PREFIX". buf must hold at least 64 bytes. */
void plan_cidr_format(const plan_cidr *c, char *buf, size_t size);
