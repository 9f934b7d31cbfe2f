/* SPDX-License-Identifier: MIT */
/*
 * Refusals that name the JSON field, shared by the config.json mappers
 * (oci/config.c, oci/seccomp.c). Internal to src/oci/.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>

/* Writes the message to err; returns -EINVAL. */
int oci_refuse(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* 0 when o is an object with no member outside allowed (NULL-terminated);
 * else -EINVAL, "WHERE.member: not supported by sandcap-runc" in err. */
int oci_only_keys(json_t *o, const char *where, const char *const *allowed, char *err, size_t len);
