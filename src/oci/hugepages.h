/* SPDX-License-Identifier: MIT */
/*
 * A config's linux.resources.hugepageLimits, which oci_config_policy()
 * takes only with limit 0 (sandcap sets no hugetlb limit), holds only on a
 * host with no huge page to give (docs/oci.md).
 */
#pragma once

#include <jansson.h>
#include <stddef.h>

/*
 * 0 when config lists no huge-page limit, or every pool under dir
 * (/sys/kernel/mm/hugepages) has nr_hugepages and nr_overcommit_hugepages
 * 0; else -EINVAL with the field and the pool named in err.
 */
int oci_hugepages_check(json_t *config, const char *dir, char *err, size_t err_len);
