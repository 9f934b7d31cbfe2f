/* SPDX-License-Identifier: MIT */
/* Filling an sc_diag on the way out of a failing function. */
#pragma once

#include "sandcap/sandcap.h"

/* Sets d->path (a JSON path, or the setup step that failed) and d->message,
 * when d is not NULL, and returns err: "return diag_fail(d, -EINVAL, ...)". */
int diag_fail(sc_diag *d, int err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
