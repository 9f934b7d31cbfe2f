/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's O_APPEND writer: one write() per record, into space
 * allocated before the write (docs/audit.md, "When the log cannot be
 * written"). The file always has AU_RESERVE_BYTES allocated beyond its
 * last record (fallocate with FALLOC_FL_KEEP_SIZE): a record that cannot
 * get its space together with that reserve is not written, the log turns
 * failed for good, and what the stop path writes (audit.error, sandbox.exit,
 * the seal) goes into the reserve, where an append needs no new block.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/falloc.h>
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
	off_t size;	    /* bytes of complete records in the file */
	uint64_t max_bytes; /* au_set_max_bytes(); 0: none */
	off_t allocated;    /* bytes allocated from offset 0 (KEEP_SIZE: beyond size) */
	bool can_reserve;   /* fallocate works here; else there is no reserve */
	bool sealed;
	bool unsynced;	    /* records written since the last fsync */
	int error;	    /* sticky: the file could not be brought back to a record boundary */
	int failed;	    /* sticky: a record could not be written (-errno) */
	uint64_t failed_at; /* records written before the failure */
	char failed_event[AU_EVENT_MAX + 1]; /* the record that could not be written */
	/* The public-key seal: signed checkpoints (docs/audit.md). */
	const au_signer *signer;
	uint64_t cp_every_records, cp_every_ns;
	uint64_t cp_seq; /* log->seq right after the last checkpoint (or the start) */
	uint64_t cp_ns;	 /* CLOCK_MONOTONIC of the last checkpoint (or the start) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What a path is, in words, for a refusal. */
const char *au_file_type(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFLNK:
		return "a symbolic link";
	default:
		return "not a regular file";
	}
}

/*
 * Opens or creates the file without blocking and without side effects on
 * anything but a regular file: an existing path is looked at through
 * O_PATH first (a FIFO would block open() until a reader came, a device's
 * open may act), and opened for writing only when it is a regular file.
 */
static int open_regular(const char *path, bool *ret_created)
{
	_cleanup_close_ int pfd = -1, fd = -1;
	struct stat st, st2;

	*ret_created = false;
	for (unsigned tries = 0;; tries++) {
		if (tries == 8)
			return -EAGAIN; /* created and removed under us, again and again */
		fd = open(path,
			  O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW |
			      O_NOCTTY | O_NONBLOCK,
			  0600);
		if (fd >= 0) {
			*ret_created = true;
			break;
		}
		if (errno != EEXIST)
			return -errno;
		pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (pfd < 0) {
			if (errno == ENOENT)
				continue; /* removed in between: create it */
			return -errno;
		}
		if (fstat(pfd, &st) < 0)
			return -errno;
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		if (!S_ISREG(st.st_mode))
			return -EINVAL;
		fd = open(path,
			  O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
		if (fd < 0)
			return -errno;
		/* The same file as the one looked at, not one swapped in. */
		if (fstat(fd, &st2) < 0)
			return -errno;
		if (st2.st_dev != st.st_dev || st2.st_ino != st.st_ino)
			return -EAGAIN;
		break;
	}
	return TAKE_FD(fd);
}

/* Allocates the file up to end bytes without changing its size. */
static int log_allocate(au_log *log, off_t end)
{
	if (end <= log->allocated)
		return 0;
	if (!log->can_reserve)
		return 0;
	if (fallocate(log->fd, FALLOC_FL_KEEP_SIZE, log->allocated, end - log->allocated) < 0)
		return -errno;
	log->allocated = end;
	return 0;
}

/* Room for a record of len bytes and, behind it, the reserve (or, for a
 * record of the stop path, the seal). Allocated a chunk ahead, so that
 * most records cost no fallocate; when the chunk does not fit, exactly
 * what is needed. */
static int log_make_room(au_log *log, size_t len, off_t behind)
{
	off_t need, ahead;

	if (__builtin_add_overflow(log->size, (off_t)len, &need) ||
	    __builtin_add_overflow(need, behind, &need))
		return -EFBIG;
	if (need <= log->allocated)
		return 0;
	if (!__builtin_add_overflow(need, (off_t)AU_ALLOC_CHUNK, &ahead) &&
	    log_allocate(log, ahead) == 0)
		return 0;
	return log_allocate(log, need);
}

int au_open(const char *path, const uint8_t *key, size_t key_len, const char *sandbox_id,
	    audit_fsync mode, au_log **ret)
{
	_cleanup_close_ int fd = -1, dirfd = -1;
	_cleanup_free_ char *pathcopy = NULL;
	_cleanup_free_ au_log *log = NULL;
	bool created = false;
	struct stat st;
	int r;

	if (!path || !sandbox_id || !ret || !au_valid_sandbox_id(sandbox_id))
		return -EINVAL;
	if (mode != AUDIT_FSYNC_BOUNDARIES && mode != AUDIT_FSYNC_ALWAYS)
		return -EINVAL;
	if (key && (key_len < AU_KEY_MIN || key_len > AU_KEY_MAX))
		return -EINVAL;

	fd = open_regular(path, &created);
	if (fd < 0)
		return fd;
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
	log->fd = fd;
	log->can_reserve = true;
	/* The reserve first: a log that could not record its own end is
	 * refused before anything runs. The first chunk comes with it: the
	 * first record would allocate it anyway, and one fallocate costs less
	 * at start-up than two. Only the reserve is required. A filesystem
	 * without fallocate (EOPNOTSUPP) gets a log without a reserve
	 * (au_reserved() says 0). */
	r = log_allocate(log, (off_t)AU_RESERVE_BYTES + AU_ALLOC_CHUNK);
	if (r < 0 && r != -EOPNOTSUPP)
		r = log_allocate(log, AU_RESERVE_BYTES);
	if (r == -EOPNOTSUPP) {
		log->can_reserve = false;
		r = 0;
	}
	if (r < 0) {
		/* A file we made and could not use is not left behind, empty. */
		if (created)
			(void)unlink(path);
		return r;
	}
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
	/* Writes to a regular file never block: the flag only kept open() from it. */
	(void)fcntl(fd, F_SETFL, O_APPEND);
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

/* Appends one complete line into allocated space (see the top); on failure
 * puts the file back where it was. behind: what must stay allocated after
 * the line. */
static int log_append(au_log *log, const char *line, size_t len, const uint8_t hash[AU_HASH_BYTES],
		      off_t behind)
{
	off_t nsize;
	int r;

	if (__builtin_add_overflow(log->size, (off_t)len, &nsize))
		return -EFBIG;
	/* The run's bound holds for every record but those of the stop path,
	 * which go into the reserve behind it (behind is the seal's room). */
	if (log->max_bytes && behind == AU_RESERVE_BYTES && (uint64_t)nsize > log->max_bytes)
		return -EFBIG;
	r = log_make_room(log, len, behind);
	if (r < 0)
		return r;
	r = io_write_all(log->fd, line, len);
	if (r < 0) {
		/* A torn record would break every later line: cut it off. That
		 * frees what was allocated beyond the end too: allocate the
		 * reserve again, if the blocks are still there to take. */
		if (ftruncate(log->fd, log->size) < 0) {
			log->error = r;
			return r;
		}
		log->allocated = log->size;
		(void)log_allocate(log, log->size + AU_RESERVE_BYTES);
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

static int log_record(au_log *log, const char *event, const char *data_json, off_t behind)
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
		r = log_append(log, line, len, hash, behind);
		return r < 0 ? r : 1;
	}
	return log_append(log, line, len, hash, behind);
}

#define AU_DUMP_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)

static bool event_reserved(const char *event)
{
	return strcmp(event, AU_SEAL_EVENT) == 0 || strcmp(event, AU_ERROR_EVENT) == 0 ||
	       strcmp(event, AU_CHECKPOINT_EVENT) == 0;
}

/* Dumps data (not owned) and writes it as one record. */
static int emit_dumped(au_log *log, const char *event, json_t *owned, off_t behind)
{
	_cleanup_free_ char *dump = NULL;
	char small[2048];
	size_t n;

	if (!owned)
		return log_record(log, event, "{}", behind);
	/* ENSURE_ASCII: the log stays 7-bit; a string that is not valid UTF-8
	 * (json_stringn_nocheck) makes the dump fail instead of the verifier.
	 * Most records fit the stack buffer: no growing of a heap one. */
	n = json_dumpb(owned, small, sizeof(small), AU_DUMP_FLAGS);
	if (n == 0)
		return -EINVAL;
	if (n < sizeof(small)) {
		small[n] = '\0';
		return log_record(log, event, small, behind);
	}
	dump = json_dumps(owned, AU_DUMP_FLAGS);
	if (!dump)
		return -EINVAL;
	return log_record(log, event, dump, behind);
}

static int emit_checked(au_log *log, const char *event, json_t *owned)
{
	if (!log || !event)
		return -EINVAL;
	if (log->error)
		return log->error;
	if (log->sealed)
		return -EBADFD;
	if (!au_valid_event(event) || event_reserved(event))
		return -EINVAL;
	if (owned && !json_is_object(owned))
		return -EINVAL;
	return 0;
}

static void mark_failed(au_log *log, const char *event, int err)
{
	log->failed = err;
	log->failed_at = log->seq;
	(void)snprintf(log->failed_event, sizeof(log->failed_event), "%s", event);
}

/* Fills the hex digits of member name in body with n bytes' hex. */
static int fill_member(char *body, size_t body_len, const char *name, const uint8_t *bytes,
		       size_t n)
{
	char hex[2 * AU_SIG_BYTES + 1];
	char *slot = au_member_hex(body, body_len, name, 2 * n);

	if (!slot || n > AU_SIG_BYTES)
		return -EINVAL;
	au_hex(bytes, n, hex);
	memcpy(slot, hex, 2 * n);
	return 0;
}

/* The HMAC (mac) and the signature (signed) of the record in line,
 * written into their members (zeros so far), then its hash: both cover
 * every field of the record (docs/audit.md, "What is signed"). */
static int seal_line(au_log *log, char *line, size_t len, bool mac, bool sign,
		     uint8_t ret_hash[AU_HASH_BYTES])
{
	size_t body_len = len - 1 - AU_HASH_SUFFIX_LEN, msg_len = 0;
	char hex[AU_HASH_HEX + 1];
	int r;

	if (mac) {
		_cleanup_free_ uint8_t *msg = NULL;
		uint8_t out[AU_HASH_BYTES];

		r = au_cover_message(line, body_len, true, &msg, &msg_len);
		if (r == 0)
			r = au_hmac(log->key, log->key_len, msg, msg_len, out);
		if (r == 0)
			r = fill_member(line, body_len, "hmac", out, AU_HASH_BYTES);
		if (r < 0)
			return r;
	}
	if (sign) {
		_cleanup_free_ uint8_t *msg = NULL;
		uint8_t sig[AU_SIG_BYTES];

		r = au_cover_message(line, body_len, false, &msg, &msg_len);
		if (r == 0)
			r = log->signer->sign(log->signer->key, msg, msg_len, sig);
		if (r == 0)
			r = fill_member(line, body_len, "sig", sig, AU_SIG_BYTES);
		if (r < 0)
			return r;
	}
	r = au_chain_hash(log->prev, line, body_len, ret_hash);
	if (r < 0)
		return r;
	au_hex(ret_hash, AU_HASH_BYTES, hex);
	memcpy(line + body_len + sizeof(AU_HASH_SUFFIX_HEAD) - 1, hex, AU_HASH_HEX);
	return 0;
}

/*
 * A checkpoint or the seal: data gets zeros where the HMAC (mac) and the
 * signature go, the line is built, and seal_line() fills them in and
 * hashes it. Written with behind bytes allocated after it.
 */
static int log_signed_record(au_log *log, const char *event, json_t *data, bool mac, off_t behind)
{
	_cleanup_free_ char *dump = NULL, *line = NULL;
	char zeros[2 * AU_SIG_BYTES + 1];
	uint8_t hash[AU_HASH_BYTES];
	struct timespec ts;
	size_t len = 0;
	int r;

	memset(zeros, '0', sizeof(zeros) - 1);
	zeros[sizeof(zeros) - 1] = '\0';
	if (mac && json_object_set_new(data, "hmac", json_stringn(zeros, AU_HASH_HEX)) < 0)
		return -ENOMEM;
	if (log->signer &&
	    (json_object_set_new(data, "sig", json_string(zeros)) < 0 ||
	     json_object_set_new(data, "key_id", json_string(log->signer->key_id)) < 0))
		return -ENOMEM;
	dump = json_dumps(data, AU_DUMP_FLAGS);
	if (!dump)
		return -ENOMEM;
	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return -errno;
	r = au_record_build(log->seq, &ts, log->sandbox, event, dump, log->prev, &line, &len, hash);
	if (r == 0)
		r = seal_line(log, line, len, mac, log->signer != NULL, hash);
	if (r < 0)
		return r;
	return log_append(log, line, len, hash, behind);
}

/* audit.checkpoint: a record like any other, with the reserve behind it;
 * one that cannot be written fails the log. */
static int write_checkpoint(au_log *log)
{
	_cleanup_json_ json_t *data =
	    json_pack("{s:I, s:s}", "records", (json_int_t)log->seq, "final_hash", log->prev_hex);
	int r;

	r = data ? log_signed_record(log, AU_CHECKPOINT_EVENT, data, false, AU_RESERVE_BYTES)
		 : -ENOMEM;
	if (r < 0) {
		mark_failed(log, AU_CHECKPOINT_EVENT, r);
		return r;
	}
	log->cp_seq = log->seq;
	log->cp_ns = now_ns();
	return 1;
}

uint64_t au_checkpoint_wait_ns(const au_log *log)
{
	uint64_t t;

	if (!log || !log->signer || log->cp_every_ns == 0 || log->seq == log->cp_seq ||
	    log->sealed || log->failed || log->error)
		return UINT64_MAX;
	t = now_ns() - log->cp_ns;
	return t >= log->cp_every_ns ? 0 : log->cp_every_ns - t;
}

int au_checkpoint_due(au_log *log)
{
	if (au_checkpoint_wait_ns(log) != 0)
		return 0;
	return write_checkpoint(log);
}

int au_set_signer(au_log *log, const au_signer *s, uint64_t every_records, uint64_t every_ns)
{
	if (!log || !s || !s->sign)
		return -EINVAL;
	log->signer = s;
	log->cp_every_records = every_records;
	log->cp_every_ns = every_ns;
	log->cp_seq = log->seq;
	log->cp_ns = now_ns();
	return 0;
}

int au_emit(au_log *log, const char *event, json_t *data)
{
	_cleanup_json_ json_t *owned = data;
	int r = emit_checked(log, event, owned);

	if (r < 0)
		return r;
	if (log->failed)
		return log->failed;
	r = emit_dumped(log, event, owned, AU_RESERVE_BYTES);
	/* Not written, and the log can no longer promise every record: it
	 * stays failed, whatever the reason (no space, an I/O error, no
	 * memory for the line). */
	if (r < 0) {
		mark_failed(log, event, r);
		return r;
	}
	if (log->signer &&
	    ((log->cp_every_records && log->seq - log->cp_seq >= log->cp_every_records) ||
	     au_checkpoint_wait_ns(log) == 0)) {
		int c = write_checkpoint(log);

		if (c < 0)
			return c;
	}
	return r;
}

int au_emit_final(au_log *log, const char *event, json_t *data)
{
	_cleanup_json_ json_t *owned = data;
	int r = emit_checked(log, event, owned);

	if (r < 0)
		return r;
	r = emit_dumped(log, event, owned, AU_SEAL_MAX_BYTES);
	if (r < 0 && !log->failed)
		mark_failed(log, event, r);
	return r;
}

int au_emit_failure(au_log *log, const char *action)
{
	json_t *data;
	int r;

	if (!log || !action)
		return -EINVAL;
	if (log->error)
		return log->error;
	if (log->sealed)
		return -EBADFD;
	if (!log->failed)
		return -EINVAL;
	data = json_pack("{s:i, s:s, s:s, s:s, s:I, s:s}", "errno", -log->failed, "error",
			 strerrorname_np(-log->failed) ? strerrorname_np(-log->failed) : "?",
			 "message", strerror(-log->failed), "event", log->failed_event, "records",
			 (json_int_t)log->failed_at, "action", action);
	if (!data)
		return -ENOMEM;
	r = emit_dumped(log, AU_ERROR_EVENT, data, AU_SEAL_MAX_BYTES);
	json_decref(data);
	return r;
}

int au_failed(const au_log *log, const char **ret_event, uint64_t *ret_records)
{
	if (!log || !log->failed)
		return 0;
	if (ret_event)
		*ret_event = log->failed_event;
	if (ret_records)
		*ret_records = log->failed_at;
	return log->failed;
}

void au_set_max_bytes(au_log *log, uint64_t max_bytes)
{
	if (log)
		log->max_bytes = max_bytes == UINT64_MAX ? 0 : max_bytes;
}

uint64_t au_bytes(const au_log *log)
{
	return log ? (uint64_t)log->size : 0;
}

uint64_t au_reserved(const au_log *log)
{
	return log && log->can_reserve ? AU_RESERVE_BYTES : 0;
}

/* The seal record, without the fsync that makes it durable. */
static int log_seal(au_log *log)
{
	_cleanup_json_ json_t *data = NULL;
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
	r = log_signed_record(log, AU_SEAL_EVENT, data, log->key != NULL, 0);
	if (r < 0)
		return r;
	log->sealed = true;
	return 0;
}

int au_seal(au_log *log)
{
	int r = log_seal(log);

	return r < 0 ? r : log_sync(log);
}

int au_seal_detach(au_log *log, int *ret_fd, int *ret_dirfd)
{
	int r;

	*ret_fd = *ret_dirfd = -1;
	r = log_seal(log);
	return r < 0 ? r : au_sync_detach(log, ret_fd, ret_dirfd);
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

static void log_close(au_log *log, off_t *ret_size)
{
	if (log->key) {
		explicit_bzero(log->key, log->key_len);
		free(log->key);
	}
	/* An unsealed log still gets its last boundary (sandbox.exit). */
	if (log->unsynced && !log->error)
		(void)log_sync(log);
	/* The reserve goes back: truncating to the size frees the blocks
	 * allocated beyond it (tmpfs and ext4 both, measured). */
	if (log->allocated > log->size && !log->error) {
		if (ret_size)
			*ret_size = log->size;
		else if (ftruncate(log->fd, log->size) < 0) {
			/* Only the space stays allocated; the records are intact. */
		}
	}
	(void)safe_close(log->fd);
	(void)safe_close(log->dirfd);
	free(log);
}

au_log *au_close(au_log *log)
{
	if (log)
		log_close(log, NULL);
	return NULL;
}

au_log *au_close_defer(au_log *log, off_t *ret_size)
{
	*ret_size = -1;
	if (log)
		log_close(log, ret_size);
	return NULL;
}
