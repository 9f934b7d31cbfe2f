/* SPDX-License-Identifier: MIT */
/* The supervisor's O_APPEND writer: one write() per record. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit-internal.h"
#include "base/cleanup.h"
#include "base/io.h"

struct au_log {
	int fd;
	int dirfd; /* fsync'ed with the first boundary: the file's name is durable too */
	audit_fsync mode;
	uint64_t seq;
	uint8_t prev[AU_HASH_BYTES];
	char prev_hex[AU_HASH_HEX + 1];
	char sandbox[AU_SANDBOX_ID_MAX + 1];
	uint8_t *key;
	size_t key_len;
	off_t size; /* bytes of complete records in the file */
	bool sealed;
	bool unsynced; /* records written since the last fsync */
	int error;     /* sticky: the file could not be brought back to a record boundary */
};

int au_open(const char *path, const uint8_t *key, size_t key_len, const char *sandbox_id,
	    audit_fsync mode, au_log **ret)
{
	_cleanup_close_ int fd = -1, dirfd = -1;
	_cleanup_free_ char *pathcopy = NULL;
	_cleanup_free_ au_log *log = NULL;
	struct stat st;
	int r;

	if (!path || !sandbox_id || !ret || !au_valid_sandbox_id(sandbox_id))
		return -EINVAL;
	if (mode != AUDIT_FSYNC_BOUNDARIES && mode != AUDIT_FSYNC_ALWAYS)
		return -EINVAL;
	if (key && (key_len < AU_KEY_MIN || key_len > AU_KEY_MAX))
		return -EINVAL;

	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	/* Two writers on one file would interleave two chains. */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
	if (st.st_size > 0)
		return -EEXIST;
	/* A pre-created empty file of someone else's: they may hold it open. */
	if (st.st_uid != geteuid())
		return -EPERM;
	if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0)
		return -errno;

	pathcopy = strdup(path);
	if (!pathcopy)
		return -ENOMEM;
	dirfd = open(dirname(pathcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;

	log = calloc(1, sizeof(*log));
	if (!log)
		return -ENOMEM;
	if (key) {
		log->key = malloc(key_len);
		if (!log->key)
			return -ENOMEM;
		memcpy(log->key, key, key_len);
		log->key_len = key_len;
	}
	r = au_genesis(sandbox_id, log->prev);
	if (r < 0) {
		free(log->key);
		return r;
	}
	au_hex(log->prev, AU_HASH_BYTES, log->prev_hex);
	strcpy(log->sandbox, sandbox_id); /* length checked by au_valid_sandbox_id */
	log->mode = mode;
	log->fd = TAKE_FD(fd);
	log->dirfd = TAKE_FD(dirfd);
	*ret = TAKE_PTR(log);
	return 0;
}

static int log_sync(au_log *log)
{
	if (fsync(log->fd) < 0)
		return -errno;
	log->unsynced = false;
	if (log->dirfd >= 0) {
		if (fsync(log->dirfd) < 0)
			return -errno;
		log->dirfd = safe_close(log->dirfd);
	}
	return 0;
}

/* Appends one complete line; on failure puts the file back where it was. */
static int log_append(au_log *log, const char *line, size_t len, const uint8_t hash[AU_HASH_BYTES])
{
	off_t nsize;
	int r;

	if (__builtin_add_overflow(log->size, (off_t)len, &nsize))
		return -EFBIG;
	r = io_write_all(log->fd, line, len);
	if (r < 0) {
		/* A torn record would break every later line: cut it off. */
		if (ftruncate(log->fd, log->size) < 0)
			log->error = r;
		return r;
	}
	log->size = nsize;
	log->seq++;
	memcpy(log->prev, hash, AU_HASH_BYTES);
	au_hex(hash, AU_HASH_BYTES, log->prev_hex);
	if (log->mode == AUDIT_FSYNC_ALWAYS)
		return log_sync(log);
	log->unsynced = true;
	return 0;
}

static int log_record(au_log *log, const char *event, const char *data_json)
{
	_cleanup_free_ char *line = NULL;
	uint8_t hash[AU_HASH_BYTES];
	struct timespec ts;
	size_t len;
	int r;

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return -errno;
	r = au_record_build(log->seq, &ts, log->sandbox, event, data_json, log->prev, &line, &len,
			    hash);
	if (r < 0)
		return r;
	if (len > AU_LINE_MAX) {
		char small[64];

		free(line);
		line = NULL;
		(void)snprintf(small, sizeof(small), "{\"bytes\":%zu,\"oversized\":true}", len);
		r = au_record_build(log->seq, &ts, log->sandbox, event, small, log->prev, &line,
				    &len, hash);
		if (r < 0)
			return r;
		r = log_append(log, line, len, hash);
		return r < 0 ? r : 1;
	}
	return log_append(log, line, len, hash);
}

#define AU_DUMP_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)

int au_emit(au_log *log, const char *event, json_t *data)
{
	_cleanup_json_ json_t *owned = data;
	_cleanup_free_ char *dump = NULL;
	char small[2048];
	size_t n;

	if (!log || !event)
		return -EINVAL;
	if (log->error)
		return log->error;
	if (log->sealed)
		return -EBADFD;
	if (!au_valid_event(event) || strcmp(event, AU_SEAL_EVENT) == 0)
		return -EINVAL;
	if (owned && !json_is_object(owned))
		return -EINVAL;
	if (!owned)
		return log_record(log, event, "{}");
	/* ENSURE_ASCII: the log stays 7-bit; a string that is not valid UTF-8
	 * (json_stringn_nocheck) makes the dump fail instead of the verifier.
	 * Most records fit the stack buffer: no growing of a heap one. */
	n = json_dumpb(owned, small, sizeof(small), AU_DUMP_FLAGS);
	if (n == 0)
		return -EINVAL;
	if (n < sizeof(small)) {
		small[n] = '\0';
		return log_record(log, event, small);
	}
	dump = json_dumps(owned, AU_DUMP_FLAGS);
	if (!dump)
		return -EINVAL;
	return log_record(log, event, dump);
}

int au_seal(au_log *log)
{
	_cleanup_json_ json_t *data = NULL;
	_cleanup_free_ char *dump = NULL;
	char hex[AU_HASH_HEX + 1];
	int r;

	if (!log)
		return -EINVAL;
	if (log->error)
		return log->error;
	if (log->sealed)
		return -EBADFD;
	data = json_pack("{s:I, s:s, s:b}", "records", (json_int_t)log->seq, "final_hash",
			 log->prev_hex, "keyed", log->key != NULL);
	if (!data)
		return -ENOMEM;
	if (log->key) {
		uint8_t mac[AU_HASH_BYTES];

		r = au_hmac(log->key, log->key_len, log->prev, AU_HASH_BYTES, mac);
		if (r < 0)
			return r;
		au_hex(mac, AU_HASH_BYTES, hex);
		if (json_object_set_new(data, "hmac", json_string(hex)) < 0)
			return -ENOMEM;
	}
	dump = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
	if (!dump)
		return -ENOMEM;
	r = log_record(log, AU_SEAL_EVENT, dump);
	if (r < 0)
		return r;
	log->sealed = true;
	return log_sync(log);
}

int au_sync(au_log *log)
{
	if (!log)
		return -EINVAL;
	if (log->error)
		return log->error;
	return log_sync(log);
}

int au_sync_detach(au_log *log, int *ret_fd, int *ret_dirfd)
{
	int fd;

	*ret_fd = *ret_dirfd = -1;
	if (!log)
		return -EINVAL;
	if (log->error)
		return log->error;
	fd = fcntl(log->fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	*ret_dirfd = TAKE_FD(log->dirfd);
	log->unsynced = false; /* a later append sets it again */
	return 0;
}

const char *au_last_hash(const au_log *log)
{
	return log ? log->prev_hex : NULL;
}

uint64_t au_records(const au_log *log)
{
	return log ? log->seq : 0;
}

au_log *au_close(au_log *log)
{
	if (!log)
		return NULL;
	if (log->key) {
		explicit_bzero(log->key, log->key_len);
		free(log->key);
	}
	/* An unsealed log still gets its last boundary (sandbox.exit). */
	if (log->unsynced && !log->error)
		(void)log_sync(log);
	(void)safe_close(log->fd);
	(void)safe_close(log->dirfd);
	free(log);
	return NULL;
}
