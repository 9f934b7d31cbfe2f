/* SPDX-License-Identifier: MIT */
/*
 * Evidence checked offline: Ed25519 keys and signatures, a signed log with
 * checkpoints and what its verification says when it is whole, cut or
 * signed by another key; schema-1 logs still verify; the OCSF export of
 * a log with the attributes each class requires; the report's bound of a
 * proxied run; delegation receipts recomputed and a widened child refused.
 * Unprivileged. TAP output.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit-internal.h"
#include "audit/audit.h"
#include "audit/export.h"
#include "audit/receipt.h"
#include "base/cleanup.h"
#include "base/io.h"
#include "base/sha256.h"
#include "policy/plan.h"
#include "tap.h"

static char tmpdir[] = "/tmp/test-evidence-XXXXXX";

static char *in_tmp(const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
		abort();
	return p;
}

static char *slurp(const char *path, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0;

	if (io_read_file_at(AT_FDCWD, path, 64u << 20, &buf, &len) < 0)
		return NULL;
	if (ret_len)
		*ret_len = len;
	return buf;
}

static void spit(const char *path, const char *buf, size_t len)
{
	FILE *f = fopen(path, "we");

	if (!f || fwrite(buf, 1, len, f) != len)
		abort();
	fclose(f);
}

static int verify_file(const char *path, const au_sign_key *pub, au_verify_info *info, char *reason,
		       size_t reason_len)
{
	size_t line = 0;
	FILE *f = fopen(path, "re");
	int r;

	if (!f)
		return -errno;
	r = au_verify_pub(f, NULL, 0, pub, info, &line, reason, reason_len);
	fclose(f);
	return r;
}

static au_sign_key *priv, *pub, *other_pub;

static void test_keys(void)
{
	_cleanup_free_ char *p = in_tmp("sign.key"), *q = in_tmp("pub.key");
	_cleanup_free_ char *p2 = in_tmp("other.key"), *q2 = in_tmp("other.pub");
	_cleanup_free_ char *x = in_tmp("x.pub");
	char id[AU_HASH_HEX + 1];
	struct stat st;

	ok(au_keygen(p, q, id) == 0, "keygen writes a pair");
	ok(stat(p, &st) == 0 && (st.st_mode & 0777) == 0600, "the private key is 0600");
	ok(au_keygen(p, x, NULL) == -EEXIST, "an existing key is not overwritten");
	ok(access(x, F_OK) < 0, "... and no half pair is left");
	ok(au_sign_key_load(p, true, &priv) == 0 && au_sign_key_is_private(priv),
	   "the private key loads");
	ok(au_sign_key_load(q, false, &pub) == 0 && !au_sign_key_is_private(pub),
	   "the public key loads");
	ok(priv && pub && strcmp(au_sign_key_id(priv), id) == 0 &&
	       strcmp(au_sign_key_id(pub), id) == 0,
	   "both have the key id keygen printed");
	ok(au_keygen(p2, q2, NULL) == 0 && au_sign_key_load(q2, false, &other_pub) == 0,
	   "a second pair");
	ok(chmod(p, 0640) == 0 && au_sign_key_load(p, true, &(au_sign_key *){NULL}) == -EACCES,
	   "a private key readable by the group is refused");
	ok(chmod(q, 0600) == 0 && au_sign_key_load(q, true, &(au_sign_key *){NULL}) == -EBADMSG,
	   "a public key is not a private key");
}

static void test_signatures(void)
{
	const uint8_t msg[] = "sandcap-audit-sig-v2\0{\"seq\":5}", other[] = "{\"seq\":6}";
	uint8_t sig[AU_SIG_BYTES];

	ok(au_sign(priv, msg, sizeof(msg), sig) == 0, "sign");
	ok(au_sig_check(pub, msg, sizeof(msg), sig) == 0, "the signature verifies");
	ok(au_sig_check(pub, other, sizeof(other), sig) == -EBADMSG, "not for another message");
	ok(au_sig_check(pub, msg, sizeof(msg) - 1, sig) == -EBADMSG, "nor for a part of it");
	ok(au_sig_check(other_pub, msg, sizeof(msg), sig) == -EBADMSG, "nor with another key");
	ok(au_sign(pub, msg, sizeof(msg), sig) == -EINVAL, "a public key cannot sign");
	ok(au_signer_of(pub, &(au_signer){0}) == -EINVAL, "nor be a log's signer");
}

/* What a seal's signature and HMAC cover: the record with sig (and for
 * the HMAC hmac) zeroed, nothing else changed. */
static void test_cover_message(void)
{
	char a[512], b[512], h1[AU_HASH_HEX + 1], h2[AU_HASH_HEX + 1];
	_cleanup_free_ uint8_t *ma = NULL, *mb = NULL, *ha = NULL, *hb = NULL;
	size_t la = 0, lb = 0, lha = 0, lhb = 0;

	memset(h1, 'a', AU_HASH_HEX);
	memset(h2, 'b', AU_HASH_HEX);
	h1[AU_HASH_HEX] = h2[AU_HASH_HEX] = '\0';
	/* sig: two hashes' worth of hex, 128 digits */
	snprintf(a, sizeof(a), "{\"data\":{\"hmac\":\"%s\",\"sig\":\"%s%s\"},\"ts\":\"x\"", h1, h1,
		 h2);
	snprintf(b, sizeof(b), "{\"data\":{\"hmac\":\"%s\",\"sig\":\"%s%s\"},\"ts\":\"x\"", h2, h2,
		 h1);
	ok(au_member_hex(a, strlen(a), "sig", 2 * AU_SIG_BYTES) == strstr(a, "\"sig\"") + 7,
	   "the sig member is found");
	ok(au_member_hex(a, strlen(a), "sig", AU_HASH_HEX) == NULL,
	   "... only with its exact length");
	ok(au_cover_message(a, strlen(a), false, &ma, &la) == 0 &&
	       au_cover_message(b, strlen(b), false, &mb, &lb) == 0,
	   "the signed messages of two records");
	ok(ma && mb && la == lb && memcmp(ma, mb, la) != 0,
	   "... differ in the HMAC, which the signature covers");
	ok(ma && la == strlen(AU_SIG_DOMAIN) + 1 + strlen(a) + 1 && ma[la - 1] == '}' &&
	       memmem(ma, la, "\"sig\":\"0000", 10) && memmem(ma, la, h1, AU_HASH_HEX),
	   "the domain, the record with its sig zeroed, and \"}\"");
	ok(au_cover_message(a, strlen(a), true, &ha, &lha) == 0 &&
	       au_cover_message(b, strlen(b), true, &hb, &lhb) == 0 && ha && hb && lha == lhb &&
	       memcmp(ha, hb, lha) == 0,
	   "the HMAC's messages are the same: hmac and sig zeroed");
}

/* A log of n proc.exec records, signed with checkpoints every 3 records. */
static void write_signed(const char *path, int n, bool seal)
{
	static au_signer signer;
	au_log *log = NULL;

	if (au_signer_of(priv, &signer) < 0 ||
	    au_open(path, NULL, 0, "sc-evidence", AUDIT_FSYNC_BOUNDARIES, &log) < 0 ||
	    au_set_signer(log, &signer, 3, 0) < 0)
		abort();
	for (int i = 0; i < n; i++)
		(void)au_emit(log, "proc.exec",
			      json_pack("{s:i, s:s, s:[s]}", "pid", 100 + i, "path", "/bin/true",
					"argv", "true"));
	if (seal)
		(void)au_seal(log);
	au_close(log);
}

static void test_signed_log(void)
{
	_cleanup_free_ char *path = in_tmp("signed.jsonl"), *cut = in_tmp("cut.jsonl");
	_cleanup_free_ char *buf = NULL;
	au_verify_info info;
	char reason[512];
	size_t len = 0;
	char *last;

	write_signed(path, 10, true);
	/* 3 records, a checkpoint, ...: 10 execs and 3 checkpoints, the seal. */
	ok(verify_file(path, pub, &info, reason, sizeof(reason)) == 0, "a signed log verifies");
	ok(info.records == 14 && info.checkpoints == 3 && info.sig_checked && info.seal_signed,
	   "14 records, 3 checkpoints, the seal's signature checked (%llu, %llu)",
	   (unsigned long long)info.records, (unsigned long long)info.checkpoints);
	ok(verify_file(path, NULL, &info, reason, sizeof(reason)) == 0 && info.seal_signed &&
	       !info.sig_checked,
	   "without the public key it is checked for form only");
	ok(verify_file(path, other_pub, &info, reason, sizeof(reason)) == -EBADMSG &&
	       strstr(reason, "not by the given public key"),
	   "another public key is refused: %s", reason);

	/* Cut after the last checkpoint (seq 11): the seal and record 12 go. */
	buf = slurp(path, &len);
	last = buf ? strstr(buf, "\"seq\":12,") : NULL;
	ok(last != NULL, "the log has a record 12");
	if (last) {
		last = memrchr(buf, '\n', (size_t)(last - buf));
		spit(cut, buf, (size_t)(last - buf) + 1 + 30); /* a torn record 12 too */
	}
	ok(verify_file(cut, pub, &info, reason, sizeof(reason)) == -EBADMSG &&
	       strstr(reason, "incomplete record"),
	   "the cut log does not verify: %s", reason);
	ok(info.have_checkpoint && info.checkpoint_seq == 11 && info.good_records == 12,
	   "... but is signed up to its last checkpoint, record 11 (%llu of %llu)",
	   (unsigned long long)info.checkpoint_seq, (unsigned long long)info.good_records);
}

/* Recomputes by the chain rule the hash of every line from the first
 * (index from) on, and the prev and final_hash that name the one before. */
static void rehash_from(char *buf, size_t from)
{
	uint8_t prev[AU_HASH_BYTES] = {0}, hash[AU_HASH_BYTES];
	char hex[AU_HASH_HEX + 1];
	size_t i = 0;

	for (char *line = buf, *nl; (nl = strchr(line, '\n')); line = nl + 1, i++) {
		size_t body_len = (size_t)(nl - line) - AU_HASH_SUFFIX_LEN;
		char *fh = au_member_hex(line, body_len, "final_hash", AU_HASH_HEX);

		if (i >= from) {
			au_hex(prev, AU_HASH_BYTES, hex);
			memcpy(line + body_len - 1 - AU_HASH_HEX, hex, AU_HASH_HEX);
			if (fh)
				memcpy(fh, hex, AU_HASH_HEX);
			au_chain_hash(prev, line, body_len, hash);
			au_hex(hash, AU_HASH_BYTES, hex);
			memcpy(line + body_len + strlen(AU_HASH_SUFFIX_HEAD), hex, AU_HASH_HEX);
		}
		au_unhex(line + body_len + strlen(AU_HASH_SUFFIX_HEAD), AU_HASH_HEX, prev,
			 AU_HASH_BYTES);
	}
}

static int verify_keyed(const char *buf, const uint8_t *key, const au_sign_key *pk,
			au_verify_info *info, char *reason, size_t reason_len)
{
	FILE *f = fmemopen((void *)buf, strlen(buf), "r");
	size_t line = 0;
	int r;

	if (!f)
		return -errno;
	r = au_verify_pub(f, key, key ? AU_KEY_FILE_BYTES : 0, pk, info, &line, reason, reason_len);
	fclose(f);
	return r;
}

/* Moves the day of line n's ts (0-based) on by one, then rehashes. */
static char *later_by_a_day(const char *log, size_t n)
{
	char *buf = strdup(log), *line = buf;

	for (size_t i = 0; i < n && line; i++)
		line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL;
	line = line ? strstr(line, "\"ts\":\"") : NULL;
	if (!line)
		abort();
	line[15] = line[15] == '0' ? '1' : '0'; /* "ts":"2026-12-0X: the day's last digit */
	rehash_from(buf, n);
	return buf;
}

static void test_seal_covers_itself(void)
{
	_cleanup_free_ char *path = in_tmp("covered.jsonl"), *buf = NULL, *e = NULL;
	static const uint8_t key[AU_KEY_FILE_BYTES] = {7, 7, 7};
	static au_signer signer;
	au_verify_info info;
	au_log *log = NULL;
	char reason[512];
	size_t cp = 0, seal = 0, n = 0;

	if (au_signer_of(priv, &signer) < 0 ||
	    au_open(path, key, sizeof(key), "sc-covered", AUDIT_FSYNC_BOUNDARIES, &log) < 0 ||
	    au_set_signer(log, &signer, 2, 0) < 0)
		abort();
	for (int i = 0; i < 3; i++)
		(void)au_emit(log, "proc.exec", json_pack("{s:i}", "pid", i));
	(void)au_seal(log);
	au_close(log);
	buf = slurp(path, NULL);
	for (char *p = buf; p && *p; p = strchr(p, '\n') + 1, n++) {
		if (!cp && strstr(p, "\"event\":\"audit.checkpoint\"") < strchr(p, '\n') &&
		    strstr(p, "\"event\":\"audit.checkpoint\""))
			cp = n;
		seal = n;
	}
	ok(buf && verify_keyed(buf, key, pub, &info, reason, sizeof(reason)) == 0 &&
	       info.sig_checked && info.hmac_checked && !info.legacy_rule,
	   "a signed, keyed log verifies: %s", reason);
	ok(cp == 2 && seal == 4, "a checkpoint at record 2, the seal at 4 (%zu, %zu)", cp, seal);

	e = later_by_a_day(buf, seal);
	ok(verify_keyed(e, NULL, NULL, &info, reason, sizeof(reason)) == 0,
	   "the seal's time moved and rehashed: the chain alone holds");
	ok(verify_keyed(e, NULL, pub, &info, reason, sizeof(reason)) == -EBADMSG &&
	       strstr(reason, "audit.seal signature does not verify"),
	   "... the signature does not: %s", reason);
	ok(verify_keyed(e, key, NULL, &info, reason, sizeof(reason)) == -EBADMSG &&
	       strstr(reason, "seal HMAC mismatch"),
	   "... nor the HMAC: %s", reason);
	free(e);
	e = later_by_a_day(buf, cp);
	ok(verify_keyed(e, NULL, pub, &info, reason, sizeof(reason)) == -EBADMSG &&
	       strstr(reason, "audit.checkpoint signature does not verify"),
	   "a checkpoint's time moved and rehashed: its signature does not verify: %s", reason);
}

/* A log sealed by the old rule (HMAC and signatures over the prefix only)
 * still verifies, and says so: its seal's own fields are not covered. */
static void test_legacy_seal(void)
{
	static const uint8_t key[AU_KEY_FILE_BYTES] = {9};
	uint8_t prev[AU_HASH_BYTES], hash[AU_HASH_BYTES], mac[AU_HASH_BYTES], sig[AU_SIG_BYTES];
	char out[4096], hex[AU_HASH_HEX + 1], prevhex[AU_HASH_HEX + 1], machex[AU_HASH_HEX + 1];
	char sighex[2 * AU_SIG_BYTES + 1], reason[256], body[2048], msg[256];
	_cleanup_free_ char *e = NULL;
	au_verify_info info;
	size_t o = 0;
	int n, m;

	au_genesis("sc-legacy", prev);
	au_hex(prev, AU_HASH_BYTES, prevhex);
	n = snprintf(body, sizeof(body),
		     "{\"schema\":2,\"seq\":0,\"ts\":\"2026-01-01T00:00:00.000000000Z\","
		     "\"sandbox\":\"sc-legacy\",\"event\":\"sandbox.start\",\"data\":{},"
		     "\"prev\":\"%s\"",
		     prevhex);
	au_chain_hash(prev, body, (size_t)n, hash);
	au_hex(hash, AU_HASH_BYTES, hex);
	o += (size_t)snprintf(out + o, sizeof(out) - o, "%s,\"hash\":\"%s\"}\n", body, hex);
	memcpy(prev, hash, AU_HASH_BYTES);
	au_hex(prev, AU_HASH_BYTES, prevhex);
	au_hmac(key, sizeof(key), prev, AU_HASH_BYTES, mac);
	au_hex(mac, AU_HASH_BYTES, machex);
	m = snprintf(msg, sizeof(msg), "sandcap-audit-sig-v1%cseal%csc-legacy%c1%c", 0, 0, 0, 0);
	memcpy(msg + m, prev, AU_HASH_BYTES);
	ok(au_sign(priv, (const uint8_t *)msg, (size_t)m + AU_HASH_BYTES, sig) == 0,
	   "a seal signed by the old rule");
	au_hex(sig, AU_SIG_BYTES, sighex);
	n = snprintf(body, sizeof(body),
		     "{\"schema\":2,\"seq\":1,\"ts\":\"2026-01-01T00:00:01.000000000Z\","
		     "\"sandbox\":\"sc-legacy\",\"event\":\"audit.seal\",\"data\":{\"final_hash\":"
		     "\"%s\",\"hmac\":\"%s\",\"key_id\":\"%s\",\"keyed\":true,\"records\":1,"
		     "\"sig\":\"%s\"},\"prev\":\"%s\"",
		     prevhex, machex, au_sign_key_id(pub), sighex, prevhex);
	au_chain_hash(prev, body, (size_t)n, hash);
	au_hex(hash, AU_HASH_BYTES, hex);
	o += (size_t)snprintf(out + o, sizeof(out) - o, "%s,\"hash\":\"%s\"}\n", body, hex);
	ok(verify_keyed(out, key, pub, &info, reason, sizeof(reason)) == 0 && info.legacy_rule &&
	       info.sig_checked && info.hmac_checked,
	   "it verifies, by the old rule: %s", reason);
	e = later_by_a_day(out, 1);
	ok(verify_keyed(e, key, pub, &info, reason, sizeof(reason)) == 0 && info.legacy_rule,
	   "... which does not cover the seal's own time (what the old rule could not)");
}

/* The same record in schema 1: without "schema", hashes recomputed. */
static void test_schema1(void)
{
	_cleanup_free_ char *path = in_tmp("v1.jsonl");
	uint8_t prev[AU_HASH_BYTES], hash[AU_HASH_BYTES];
	char out[4096], hex[AU_HASH_HEX + 1], prevhex[AU_HASH_HEX + 1], reason[256];
	const char *events[] = {"sandbox.start", "audit.seal"};
	au_verify_info info;
	size_t o = 0;

	au_genesis("sc-old", prev);
	for (int i = 0; i < 2; i++) {
		char body[1024], data[256];
		int n;

		au_hex(prev, AU_HASH_BYTES, prevhex);
		if (i == 1)
			snprintf(data, sizeof(data),
				 "{\"final_hash\":\"%s\",\"keyed\":false,\"records\":1}", prevhex);
		else
			snprintf(data, sizeof(data), "{}");
		n = snprintf(body, sizeof(body),
			     "{\"seq\":%d,\"ts\":\"2026-01-01T00:00:00.000000000Z\",\"sandbox\":"
			     "\"sc-old\",\"event\":\"%s\",\"data\":%s,\"prev\":\"%s\"",
			     i, events[i], data, prevhex);
		au_chain_hash(prev, body, (size_t)n, hash);
		au_hex(hash, AU_HASH_BYTES, hex);
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s,\"hash\":\"%s\"}\n", body, hex);
		memcpy(prev, hash, AU_HASH_BYTES);
	}
	spit(path, out, o);
	ok(verify_file(path, NULL, &info, reason, sizeof(reason)) == 0 && info.records == 2,
	   "a schema-1 log (no \"schema\" member) still verifies: %s", reason);
}

/* The OCSF export of the log NAME in the temporary directory, in *ret. */
static int export_ocsf(const char *name, char **ret)
{
	_cleanup_free_ char *path = in_tmp(name);
	size_t len = 0, line = 0;
	char reason[256];
	FILE *in = fopen(path, "re"), *o = open_memstream(ret, &len);
	int r = in && o ? au_export(in, o, AU_EXPORT_OCSF, &line, reason, sizeof(reason)) : -EIO;

	if (in)
		fclose(in);
	if (o)
		fclose(o);
	return r;
}

static void test_export(void)
{
	_cleanup_free_ char *out = NULL;
	size_t n = 0;

	ok(export_ocsf("signed.jsonl", &out) == 0, "the OCSF export of a sealed log succeeds");
	for (char *p = out, *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
		_cleanup_json_ json_t *ev = json_loadb(p, (size_t)(nl - p), 0, NULL);
		json_t *cls = json_object_get(ev, "class_uid");
		const char *native =
		    json_string_value(json_object_get(json_object_get(ev, "unmapped"), "event"));

		n++;
		if (!ev || !json_is_integer(cls) ||
		    json_integer_value(json_object_get(ev, "type_uid")) !=
			json_integer_value(cls) * 100 +
			    json_integer_value(json_object_get(ev, "activity_id")) ||
		    (native && strcmp(native, "proc.exec") == 0 && json_integer_value(cls) != 1007))
			break;
	}
	ok(n == 14, "one valid OCSF event per record, proc.exec as Process Activity (%zu)", n);
}

/*
 * A proxied run as the supervisor records it: a credential used twice and
 * refused once, DNS queries to the sandbox resolver, direct attempts (one
 * recorded, five counted), a file written. transparent: sandbox.start's;
 * rule: the host of the egress rule.
 */
static void write_traffic(const char *path, const char *transparent, const char *rule)
{
	au_log *log = NULL;
	json_t *plan = json_pack(
	    "{s:{s:[{s:s, s:[i]}], s:n, s:s, s:[{s:s, s:s, s:s, s:s, s:s, s:i, s:n}]}}", "net",
	    "egress", "host", rule, "ports", 443, "egress_budget", "rate", "10/s", "credentials",
	    "host", "api.test", "header", "Authorization", "value_env", "API_KEY", "format",
	    "Bearer %s", "name", "api-key", "max_requests", 2, "max_bytes");

	if (au_open(path, NULL, 0, "sc-traffic", AUDIT_FSYNC_BOUNDARIES, &log) < 0)
		abort();
	(void)au_emit(log, "sandbox.start",
		      json_pack("{s:o, s:{s:s, s:s}, s:s}", "plan", plan, "layers", "namespaces",
				"user mount pid net", "proxy", "active", "transparent",
				transparent));
	for (int i = 0; i < 2; i++)
		(void)au_emit(log, "net.request",
			      json_pack("{s:s, s:s, s:i, s:s, s:s, s:i, s:i, s:i, s:s}", "method",
					"GET", "host", "api.test", "port", 443, "path", "/v1",
					"decision", "allow", "status", 200, "bytes_out", 100 + i,
					"bytes_in", 1000, "credential", "api-key"));
	(void)au_emit(log, "net.denied",
		      json_pack("{s:s, s:i, s:s, s:s, s:s}", "host", "api.test", "port", 443,
				"method", "GET", "reason", "credential-limit", "credential",
				"api-key"));
	(void)au_emit(log, "net.denied",
		      json_pack("{s:s, s:s, s:i, s:s, s:s}", "host", "192.0.2.1", "addr",
				"192.0.2.1", "port", 9, "protocol", "tcp", "reason",
				"direct-connect"));
	(void)au_emit(log, "limit.hit",
		      json_pack("{s:s, s:i, s:s}", "limit", "net.attempts", "suppressed", 5,
				"detail", "5 direct attempts not recorded one by one"));
	/* refusals over net.rate, folded: they count as the records they stand for */
	(void)au_emit(log, "limit.hit",
		      json_pack("{s:s, s:s, s:i, s:s}", "limit", "rate", "kind", "dns",
				"suppressed", 7, "detail",
				"7 DNS queries refused (REFUSED) over net.rate"));
	(void)au_emit(log, "limit.hit",
		      json_pack("{s:s, s:s, s:i, s:s}", "limit", "rate", "kind", "requests",
				"suppressed", 4, "detail", "4 more requests refused (429)"));
	for (int i = 0; i < 3; i++)
		(void)au_emit(log, "net.dns",
			      json_pack("{s:s, s:s, s:s}", "name", i ? "api.test" : "evil.test",
					"type", "A", "rcode", i ? "NOERROR" : "NXDOMAIN"));
	(void)au_emit(log, "fs.write",
		      json_pack("{s:s, s:s, s:s, s:s}", "path", "/work/out/a.txt", "host_path",
				"/srv/out/a.txt", "op", "create", "type", "file"));
	(void)au_emit(log, "sandbox.exit",
		      json_pack("{s:i, s:i, s:I}", "status", 0, "bytes_out", 201, "wall_ns",
				(json_int_t)2000000000));
	(void)au_seal(log);
	au_close(log);
}

/* Whether member key of o is a string that starts with prefix. */
static bool starts_with(json_t *o, const char *key, const char *prefix)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v && strncmp(v, prefix, strlen(prefix)) == 0;
}

static bool str_is(json_t *o, const char *key, const char *want)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v && strcmp(v, want) == 0;
}

static json_t *bound_of(const char *path)
{
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	FILE *in = fopen(path, "re"), *o = open_memstream(&out, &len);
	json_t *root;

	if (!in || !o || au_report(in, o, true) != 0) {
		if (in)
			fclose(in);
		if (o)
			fclose(o);
		return NULL;
	}
	fclose(in);
	fclose(o);
	root = json_loads(out, 0, NULL);
	json_incref(json_object_get(root, "bound"));
	{
		json_t *b = json_object_get(root, "bound");

		json_decref(root);
		return b;
	}
}

static void test_bound(void)
{
	_cleanup_free_ char *on = in_tmp("traffic-on.jsonl"), *off = in_tmp("traffic-off.jsonl");
	_cleanup_free_ char *wild = in_tmp("traffic-wild.jsonl");
	_cleanup_json_ json_t *b = NULL, *b2 = NULL, *b3 = NULL;
	json_t *c;

	write_traffic(on, "on", "api.test");
	write_traffic(off, "off: local ::/0 dev lo: Permission denied", "api.test");
	write_traffic(wild, "on", "*.api.test");
	b = bound_of(on);
	b2 = bound_of(off);
	b3 = bound_of(wild);
	ok(b && json_is_null(json_object_get(b, "outside_budget")) &&
	       starts_with(b3, "outside_budget", "names under a wildcard rule (*.api.test)") &&
	       strstr(
		   json_string_value(json_object_get(b3, "outside_budget")),
		   "at most net.rate 10/s lookups, each a name of up to 253 bytes, so up to 2530 "
		   "bytes a second, at most 7590 bytes in this run"),
	   "names the agent chooses under a wildcard rule are stated outside the budget, in "
	   "bytes a second and over the run, bounded by net.rate; exact hosts leave nothing "
	   "outside it");
	ok(b && json_integer_value(json_object_get(b, "direct_attempts")) == 6 &&
	       json_integer_value(json_object_get(b, "dns_queries")) == 10 &&
	       json_integer_value(json_object_get(b, "dns_refused")) == 8 &&
	       json_integer_value(json_object_get(b, "requests_denied")) == 6,
	   "the bound counts the direct attempts (recorded and counted), the DNS queries and the "
	   "refusals, folded ones too");
	ok(starts_with(b, "dns", "the sandbox resolver only"),
	   "with the sandbox resolver in place, the bound names it");
	ok(starts_with(b2, "dns", "none in the sandbox") &&
	       starts_with(b2, "sockets", "loopback of its own network namespace, where the proxy"),
	   "without it, there is no resolver in the sandbox");
	c = json_array_get(json_object_get(b, "credentials"), 0);
	ok(str_is(c, "name", "api-key") &&
	       json_integer_value(json_object_get(c, "max_requests")) == 2 &&
	       json_integer_value(json_object_get(c, "requests")) == 2 &&
	       json_integer_value(json_object_get(c, "bytes_out")) == 201 &&
	       json_integer_value(json_object_get(c, "bytes_in")) == 2000 &&
	       json_integer_value(json_object_get(c, "refused")) == 1 &&
	       !json_object_get(c, "value_env"),
	   "each usable credential with its limits and its use, never where its value comes from");
}

/* The OCSF 1.1 attributes a class requires, beyond the base event's. */
static void test_export_required(void)
{
	_cleanup_free_ char *out = NULL;
	size_t checked = 0;

	ok(export_ocsf("traffic-on.jsonl", &out) == 0,
	   "the OCSF export of the proxied run succeeds");
	for (char *p = out, *nl; p && (nl = strchr(p, '\n')); p = nl + 1) {
		_cleanup_json_ json_t *ev = json_loadb(p, (size_t)(nl - p), 0, NULL);
		json_int_t cls = json_integer_value(json_object_get(ev, "class_uid"));
		json_t *file = json_object_get(ev, "file");
		bool system = cls == 1007 || cls == 1001, good = true;

		if (system)
			good = json_is_integer(
				   json_object_get(json_object_get(ev, "device"), "type_id")) &&
			       str_is(json_object_get(json_object_get(ev, "actor"), "process"),
				      "sandbox", "sc-traffic");
		if (cls == 1001)
			good = good && str_is(file, "name", "a.txt") &&
			       json_integer_value(json_object_get(file, "type_id")) == 1 &&
			       json_integer_value(json_object_get(ev, "activity_id")) == 1;
		if (cls == 4001)
			good = json_is_object(json_object_get(ev, "dst_endpoint")) &&
			       json_is_string(
				   json_object_get(json_object_get(ev, "src_endpoint"), "uid"));
		if (cls == 2004)
			good = json_is_string(
				   json_object_get(json_object_get(ev, "finding_info"), "title")) &&
			       json_is_string(
				   json_object_get(json_object_get(ev, "finding_info"), "uid"));
		if (!good)
			break;
		checked += cls == 1007 || cls == 1001 || cls == 4001 || cls == 2004;
	}
	/* start, 2 requests, 2 denied, 3 limit.hit, fs.write, exit: 10 */
	ok(checked == 10,
	   "actor and device (System Activity), file name and type, both endpoints "
	   "(Network Activity), finding_info (Detection Finding): %zu of 10",
	   checked);
}

/* A log of a root sandbox and one child: receipts as spawn.c writes them. */
static int write_deleg(const char *path, const char *child_policy, bool fix_digest)
{
	_cleanup_(sc_plan_freep) sc_plan *parent = NULL, *child = NULL;
	_cleanup_free_ char *pj = NULL, *cj = NULL;
	json_t *pplan, *cplan, *receipt;
	const char *pp =
	    "{\"version\":1,\"limits\":{\"memory\":\"128M\"},\"spawn\":{\"max_depth\":1}}";
	char pd[AU_HASH_HEX + 1], cd[AU_HASH_HEX + 1];
	sc_diag d = {0};
	au_log *log = NULL;

	if (plan_parse_json(pp, strlen(pp), &parent, &d) < 0 ||
	    plan_parse_json(child_policy, strlen(child_policy), &child, &d) < 0)
		return -EINVAL;
	pj = plan_to_json(parent);
	cj = plan_to_json(child);
	pplan = json_loads(pj, 0, NULL);
	cplan = json_loads(cj, 0, NULL);
	au_plan_digest(pplan, pd);
	au_plan_digest(cplan, cd);
	if (!fix_digest) /* the digest of the parent's plan in place of the child's */
		memcpy(cd, pd, sizeof(cd));
	receipt = json_pack("{s:s, s:s, s:[]}", "parent_digest", pd, "child_digest", cd, "caveats");
	if (au_open(path, NULL, 0, "sc-root", AUDIT_FSYNC_BOUNDARIES, &log) < 0)
		return -EIO;
	(void)au_emit(log, "sandbox.start", json_pack("{s:o}", "plan", pplan));
	(void)au_emit(log, "spawn.start",
		      json_pack("{s:o, s:s, s:s, s:o}", "plan", cplan, "child", "sc-child",
				"parent", "sc-root", "receipt", receipt));
	(void)au_seal(log);
	au_close(log);
	return 0;
}

static int receipts_of(const char *path, au_receipts_info *info, char *reason, size_t len)
{
	size_t line = 0;
	FILE *f = fopen(path, "re");
	int r;

	if (!f)
		return -errno;
	r = au_receipts_check(f, info, &line, reason, len);
	fclose(f);
	return r;
}

static void test_receipts(void)
{
	_cleanup_free_ char *a = in_tmp("deleg.jsonl"), *b = in_tmp("wide.jsonl");
	_cleanup_free_ char *c = in_tmp("digest.jsonl");
	au_receipts_info info;
	char reason[512] = "";

	ok(write_deleg(a, "{\"version\":1,\"limits\":{\"memory\":\"64M\"}}", true) == 0 &&
	       receipts_of(a, &info, reason, sizeof(reason)) == 0 && info.checked == 1 &&
	       info.max_depth == 1,
	   "a narrower child's receipt is recomputed: %s", reason);
	ok(write_deleg(b, "{\"version\":1,\"limits\":{\"memory\":\"256M\"}}", true) == 0 &&
	       receipts_of(b, &info, reason, sizeof(reason)) == -EBADMSG &&
	       strstr(reason, "wider than its parent"),
	   "a wider child is refused: %s", reason);
	ok(write_deleg(c, "{\"version\":1,\"limits\":{\"memory\":\"64M\"}}", false) == 0 &&
	       receipts_of(c, &info, reason, sizeof(reason)) == -EBADMSG &&
	       strstr(reason, "child_digest"),
	   "a digest that is not the plan's is refused: %s", reason);
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		tap_skip_all("no temporary directory");
	test_keys();
	if (!priv || !pub || !other_pub)
		tap_skip_all("keys could not be made");
	test_signatures();
	test_cover_message();
	test_signed_log();
	test_seal_covers_itself();
	test_legacy_seal();
	test_schema1();
	test_export();
	test_bound();
	test_export_required();
	test_receipts();
	au_sign_key_free(priv);
	au_sign_key_free(pub);
	au_sign_key_free(other_pub);
	{
		_cleanup_free_ char *cmd = NULL;

		if (asprintf(&cmd, "rm -rf '%s'", tmpdir) >= 0)
			(void)!system(cmd);
	}
	return tap_done();
}
