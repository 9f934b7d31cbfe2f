/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for what reads the first bytes of a transparent
 * connection: the ClientHello's SNI and the origin-form head rewrite, whose
 * result must itself be a head the proxy's parser judges.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/http.h"
#include "proxy/origin.h"
#include "proxy/sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[PX_MAX_HEAD + 512];
	static px_request req;
	char name[PX_MAX_HOST + 1];
	const char *why;
	size_t len = size;
	int r;

	if (size > PX_TLS_RECORD_MAX + 5 || size > PX_MAX_HEAD)
		return 0;
	r = px_sni_parse(data, size, name, &why);
	if (r == PX_SNI_FOUND && (strlen(name) == 0 || strlen(name) > PX_MAX_HOST))
		abort();
	if (r < -EBADMSG || r > PX_SNI_ABSENT || (r < 0 && r != -EBADMSG))
		abort();
	memcpy(buf, data, size);
	r = px_origin_to_absolute(buf, &len, sizeof(buf), "api.example.com", 443, &why);
	if (r == 1) {
		if (len <= size || len > sizeof(buf))
			abort();
		(void)px_http_parse_request(buf, len, &req, &why);
	} else if (len != size || (r != 0 && r != -EMSGSIZE && r != -EBADMSG && r != -EACCES))
		abort();
	return 0;
}
