/* SPDX-License-Identifier: MIT */
/*
 * The host's /etc/hosts, read once before the worker is confined (it can open
 * no file afterwards) and looked up before DNS, as the host's own programs do
 * with "hosts: files dns". Pure: the caller reads the file.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "proxy/dns.h"

#define PX_HOSTS_PATH	   "/etc/hosts"
#define PX_HOSTS_MAX_BYTES (4u << 20)
#define PX_HOSTS_MAX	   65536u /* (address, name) pairs kept */

typedef struct px_hosts px_hosts;

/*
 * Parses hosts(5) text: "ADDRESS NAME [ALIAS...]" per line, '#' to the end
 * of a line is a comment, blank and unparsable lines (and addresses with a
 * zone, "fe80::1%eth0") are skipped, names are kept lower-case.
 * Returns 0 or -ENOMEM.
 */
int px_hosts_parse(const char *buf, size_t len, px_hosts **ret);
px_hosts *px_hosts_free(px_hosts *h);
/* Every address listed for name (case-insensitive), in file order, at most
 * max of them; 0 when the name is not listed. */
size_t px_hosts_lookup(const px_hosts *h, const char *name, px_addr *out, size_t max);
/* RFC 6761 6.3: "localhost" and names under ".localhost" are loopback. */
bool px_is_localhost(const char *name);
