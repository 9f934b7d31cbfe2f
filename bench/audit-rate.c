/* SPDX-License-Identifier: MIT */
/*
 * Audit log throughput: records/s written with fsync at boundaries only and
 * with fsync after every record (AUDIT_FSYNC_ALWAYS), and records/s
 * verified; the same with the public-key seal (Ed25519, a signed checkpoint
 * every AU_CHECKPOINT_RECORDS_DEF records) against the HMAC seal alone.
 * Writes into DIR (default: the current directory, so that the fsync cost
 * is the one of the file system the log will live on).
 *
 *   audit-rate [-n RECORDS] [-s SYNC_RECORDS] [-d DIR] [-k]
 *   audit-rate -w FILE [-n RECORDS]
 *
 * -k keeps the last log (DIR/audit-rate-always.log is removed otherwise).
 * -w only writes one log of RECORDS records and its seal (keyed with the
 * 32 bytes "audit-rate benchmark key 32 byte") to FILE: a log to verify
 * (bench/verify.sh).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int write_log(const char *path, unsigned n, audit_fsync mode, const au_sign_key *signer,
		     double *ret_s)
{
	static const uint8_t key[32] = "audit-rate benchmark key 32 byte";
	au_log *log = NULL;
	au_signer sg;
	double t0 = now_s();
	int r;

	(void)unlink(path);
	r = au_open(path, key, sizeof(key), "sc-bench", mode, &log);
	if (r >= 0 && signer)
		r = au_signer_of(signer, &sg);
	if (r >= 0 && signer)
		r = au_set_signer(log, &sg, AU_CHECKPOINT_RECORDS_DEF,
				  AU_CHECKPOINT_MS_DEF * 1000000ull);
	/* A representative record: a network request of the proxy. */
	for (unsigned i = 0; r >= 0 && i < n; i++)
		r = au_emit(log, "net.request",
			    json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:i, s:i, s:I, s:I, s:i}",
				      "method", "GET", "host", "api.example.com", "port", 443,
				      "path", "/v1/items?page=2", "addr", "93.184.216.34",
				      "decision", "allow", "rule", 0, "status", 200, "bytes_out",
				      (json_int_t)i, "bytes_in", (json_int_t)i * 7, "duration_ms",
				      35));
	if (r >= 0)
		r = au_seal(log);
	au_close(log);
	*ret_s = now_s() - t0;
	return r;
}

static int verify_log(const char *path, const au_sign_key *pub, double *ret_s)
{
	static const uint8_t key[32] = "audit-rate benchmark key 32 byte";
	char reason[256];
	size_t line;
	double t0 = now_s();
	FILE *f = fopen(path, "re");
	int r;

	if (!f)
		return -errno;
	r = au_verify_pub(f, key, sizeof(key), pub, NULL, &line, reason, sizeof(reason));
	fclose(f);
	*ret_s = now_s() - t0;
	return r;
}

int main(int argc, char **argv)
{
	unsigned n = 100000, n_sync = 2000;
	const char *dir = ".", *only = NULL;
	bool keep = false;
	char fast[4096], slow[4096], signd[4096], privp[4096], pubp[4096];
	au_sign_key *priv = NULL, *pub = NULL;
	double s;
	int c, r;

	while ((c = getopt(argc, argv, "n:s:d:w:kh")) != -1) {
		switch (c) {
		case 'w':
			only = optarg;
			break;
		case 'n':
			n = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 's':
			n_sync = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'k':
			keep = true;
			break;
		default:
			fprintf(stderr,
				"Usage: %s [-n RECORDS] [-s SYNC_RECORDS] [-d DIR] [-k]\n"
				"       %s -w FILE [-n RECORDS]\n",
				argv[0], argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (only) {
		r = write_log(only, n, AUDIT_FSYNC_BOUNDARIES, NULL, &s);
		if (r < 0)
			goto fail;
		printf("wrote %u records (the seal included) to %s in %.3f s\n", n + 1, only, s);
		return 0;
	}
	snprintf(fast, sizeof(fast), "%s/audit-rate-boundaries.log", dir);
	snprintf(slow, sizeof(slow), "%s/audit-rate-always.log", dir);
	snprintf(signd, sizeof(signd), "%s/audit-rate-signed.log", dir);
	snprintf(privp, sizeof(privp), "%s/audit-rate-sign.key", dir);
	snprintf(pubp, sizeof(pubp), "%s/audit-rate-pub.key", dir);

	printf("%-28s %10s %9s %12s\n", "mode", "records", "seconds", "records/s");
	r = write_log(fast, n, AUDIT_FSYNC_BOUNDARIES, NULL, &s);
	if (r < 0)
		goto fail;
	printf("%-28s %10u %9.3f %12.0f\n", "write, fsync at boundaries", n + 1, s, (n + 1) / s);
	r = verify_log(fast, NULL, &s);
	if (r < 0)
		goto fail;
	printf("%-28s %10u %9.3f %12.0f\n", "verify (with key)", n + 1, s, (n + 1) / s);
	(void)unlink(privp);
	(void)unlink(pubp);
	r = au_keygen(privp, pubp, NULL);
	if (r == 0)
		r = au_sign_key_load(privp, true, &priv);
	if (r == 0)
		r = au_sign_key_load(pubp, false, &pub);
	if (r == 0)
		r = write_log(signd, n, AUDIT_FSYNC_BOUNDARIES, priv, &s);
	if (r < 0)
		goto fail;
	printf("%-28s %10u %9.3f %12.0f\n", "write, HMAC + Ed25519 ckpts", n + 1 + n / 1000, s,
	       (n + 1 + n / 1000) / s);
	r = verify_log(signd, pub, &s);
	if (r < 0)
		goto fail;
	printf("%-28s %10u %9.3f %12.0f\n", "verify (key + public key)", n + 1 + n / 1000, s,
	       (n + 1 + n / 1000) / s);
	(void)unlink(signd);
	(void)unlink(privp);
	(void)unlink(pubp);
	au_sign_key_free(priv);
	au_sign_key_free(pub);
	r = write_log(slow, n_sync, AUDIT_FSYNC_ALWAYS, NULL, &s);
	if (r < 0)
		goto fail;
	printf("%-28s %10u %9.3f %12.0f\n", "write, fsync every record", n_sync + 1, s,
	       (n_sync + 1) / s);
	if (!keep) {
		(void)unlink(fast);
		(void)unlink(slow);
	}
	return 0;
fail:
	fprintf(stderr, "audit-rate: %s\n", strerror(-r));
	return 1;
}
