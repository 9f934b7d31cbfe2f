/* SPDX-License-Identifier: MIT */
/*
 * Refusals that name the JSON field, shared by the config.json mappers
 * (oci/config.c, oci/seccomp.c). Internal to src/oci/.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Writes the message to err; returns -EINVAL. */
int oci_refuse(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* 0 when o is an object with no member outside allowed (NULL-terminated)
 * that the runtime-spec defines: members it does not define are ignored, as
 * the spec requires. Else -EINVAL, "WHERE.member: not supported by
 * sandcap-runc" in err. */
int oci_only_keys(json_t *o, const char *where, const char *const *allowed, char *err, size_t len);
/* The same for an object of sandcap's own (the policy annotation): every
 * member outside allowed is refused. */
int oci_only_keys_strict(json_t *o, const char *where, const char *const *allowed, char *err,
			 size_t len);
/* Whether k is a member name the runtime-spec defines. */
bool oci_spec_name(const char *k);
