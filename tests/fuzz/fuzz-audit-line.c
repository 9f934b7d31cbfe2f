/* SPDX-License-Identifier: MIT */
/*
 * The audit log is read back by verify and report, possibly after someone
 * with write access to the file edited it: feed arbitrary bytes as a whole
 * log to both, with and without a key.
 *
 * The same bytes then go the other way, as a string from the sandbox
 * (au_str): whatever gets accepted, the written log must still verify. That invariant is
 * checked, not just the absence of crashes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"

#define FUZZ_AUDIT_MAX_BYTES (256u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t key[32] = "fuzz-audit-line key of 32 bytes";

static void read_back(const uint8_t *data, size_t size)
{
	char reason[256];
	size_t line;
	FILE *in, *out = fopen("/dev/null", "we");

	if (!out)
		return;
	in = fmemopen((void *)data, size, "r");
	if (in) {
		(void)au_verify(in, NULL, 0, &line, reason, sizeof(reason));
		fclose(in);
	}
	in = fmemopen((void *)data, size, "r");
	if (in) {
		(void)au_verify(in, key, sizeof(key), &line, reason, sizeof(reason));
		fclose(in);
	}
	in = fmemopen((void *)data, size, "r");
	if (in) {
		(void)au_report(in, out, false);
		fclose(in);
	}
	in = fmemopen((void *)data, size, "r");
	if (in) {
		(void)au_report(in, out, true);
		fclose(in);
	}
	fclose(out);
}

static void write_and_verify(const uint8_t *data, size_t size)
{
	char path[] = "/dev/shm/fuzz-audit-XXXXXX", reason[256];
	au_log *log = NULL;
	size_t line;
	FILE *f;
	int fd, r;

	fd = mkstemp(path);
	if (fd < 0)
		return;
	close(fd);
	if (unlink(path) < 0 ||
	    au_open(path, key, sizeof(key), "sc-fuzz", AUDIT_FSYNC_BOUNDARIES, &log) < 0) {
		(void)unlink(path);
		return;
	}
	if (au_emit(log, "fs.write",
		    json_pack("{s:o}", "path", au_str((const char *)data, size, 4096))) < 0)
		abort(); /* au_str output must always be writable */
	if (au_seal(log) < 0)
		abort();
	log = au_close(log);
	f = fopen(path, "re");
	r = f ? au_verify(f, key, sizeof(key), &line, reason, sizeof(reason)) : 0;
	if (f)
		fclose(f);
	(void)unlink(path);
	if (r != 0) {
		fprintf(stderr, "written log does not verify: line %zu: %s\n", line, reason);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > FUZZ_AUDIT_MAX_BYTES)
		return 0;
	read_back(data, size);
	write_and_verify(data, size);
	return 0;
}
