/* SPDX-License-Identifier: MIT */
/* Paths compared as strings, by components. Pure, libc only. */
#pragma once

#include <stdbool.h>

/*
 * Is path prefix itself or below it? By components: "/v1" is under "/v1"
 * and holds "/v1/x", not "/v1x". A prefix ending in "/" holds what starts
 * with it: "/" holds every absolute path, "/v1/" holds "/v1/x" and "/v1/",
 * not "/v1". Nothing is resolved: both are taken as written (normalised
 * by the caller).
 */
bool path_is_under(const char *path, const char *prefix);
