/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>

#include "cli/front.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("sandcap: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
