/* SPDX-License-Identifier: MIT */
/* Huge-page limits of 0 against the host's pools (oci/hugepages.h). */
#include "oci/hugepages.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "oci/fields.h"

/* The pages a pool can give: what it holds and what it may add. */
static long long pool_pages(int dfd, const char *pool)
{
	static const char *const files[] = {"nr_hugepages", "nr_overcommit_hugepages"};
	long long n = 0;

	for (size_t i = 0; i < 2; i++) {
		char path[512];
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;

		snprintf(path, sizeof(path), "%s/%s", pool, files[i]);
		if (io_read_file_at(dfd, path, 64, &buf, &len) == 0)
			n += strtoll(buf, NULL, 10);
	}
	return n;
}

int oci_hugepages_check(json_t *config, const char *dir, char *err, size_t err_len)
{
	json_t *limits = json_object_get(
	    json_object_get(json_object_get(config, "linux"), "resources"), "hugepageLimits");
	_cleanup_close_ int dfd = -1;
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (json_array_size(limits) == 0)
		return 0;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno; /* no huge pages in this kernel */
	d = fdopendir(dup(dfd));
	if (!d)
		return -errno;
	while (r == 0 && (e = readdir(d)))
		if (e->d_name[0] != '.' && pool_pages(dfd, e->d_name) > 0)
			r = oci_refuse(err, err_len,
				       "$.linux.resources.hugepageLimits: this host has huge pages "
				       "(%s/%s), which sandcap cannot limit to 0",
				       dir, e->d_name);
	closedir(d);
	return r;
}
