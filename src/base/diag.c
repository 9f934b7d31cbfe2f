/* SPDX-License-Identifier: MIT */
#include "base/diag.h"

#include <stdarg.h>
#include <stdio.h>

int diag_fail(sc_diag *d, int err, const char *path, const char *fmt, ...)
{
	va_list ap;

	if (!d)
		return err;
	(void)snprintf(d->path, sizeof(d->path), "%s", path);
	d->line = d->column = 0;
	va_start(ap, fmt);
	(void)vsnprintf(d->message, sizeof(d->message), fmt, ap);
	va_end(ap);
	return err;
}
