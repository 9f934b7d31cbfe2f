/* SPDX-License-Identifier: MIT */
/* `sandcap audit export`: the log as OCSF events or OpenTelemetry logs. */
#pragma once

#include <stddef.h>
#include <stdio.h>

typedef enum au_export_format {
	AU_EXPORT_OCSF,	     /* OCSF 1.1 events, one per line */
	AU_EXPORT_OTLP_JSON, /* OTLP/JSON logs payloads, one record each, one per line */
} au_export_format;

/*
 * Writes one JSON object per record of in to out, checking the chain on
 * the way (without a key): 0 when every record was written and the log is
 * sealed; -EBADMSG with the 1-based line and a reason at the first record
 * that breaks the chain (nothing of it is written; the records before it
 * are) or at the end of an unsealed log; -EIO, -ENOMEM.
 */
int au_export(FILE *in, FILE *out, au_export_format format, size_t *reterr_line,
	      char *reterr_reason, size_t reason_len);
