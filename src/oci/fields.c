/* SPDX-License-Identifier: MIT */
/* Refusals that name the field (oci/fields.h). */
#include "oci/fields.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int oci_refuse(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int oci_only_keys(json_t *o, const char *where, const char *const *allowed, char *err, size_t len)
{
	const char *k;
	json_t *v;

	if (!json_is_object(o))
		return oci_refuse(err, len, "%s: expected an object", where);
	json_object_foreach(o, k, v)
	{
		bool ok = false;

		for (size_t i = 0; allowed[i]; i++)
			ok = ok || strcmp(k, allowed[i]) == 0;
		if (!ok)
			return oci_refuse(err, len, "%s.%.64s: not supported by sandcap-runc",
					  where, k);
	}
	return 0;
}
