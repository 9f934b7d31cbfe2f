/* SPDX-License-Identifier: MIT */
/* The HMAC key file of the audit seal. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/cleanup.h"
#include "base/io.h"

int au_key_load(const char *path, uint8_t ret_key[AU_KEY_FILE_BYTES])
{
	_cleanup_close_ int fd = -1;
	uint8_t key[AU_KEY_FILE_BYTES], extra;
	struct stat st;
	ssize_t n;
	int r;

	if (!path || !ret_key)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	/* A key others can read is a key others can forge seals with. */
	if (st.st_mode & 077)
		return -EACCES;
	if (st.st_size != AU_KEY_FILE_BYTES)
		return -EINVAL;
	r = io_read_exact(fd, key, sizeof(key));
	if (r < 0) {
		explicit_bzero(key, sizeof(key));
		return r == -EPIPE ? -EINVAL : r;
	}
	/* The size may have changed since fstat(). */
	do
		n = read(fd, &extra, 1);
	while (n < 0 && errno == EINTR);
	if (n != 0) {
		explicit_bzero(key, sizeof(key));
		return n < 0 ? -errno : -EINVAL;
	}
	memcpy(ret_key, key, sizeof(key));
	explicit_bzero(key, sizeof(key));
	return 0;
}
