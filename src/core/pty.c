/* SPDX-License-Identifier: MIT */
#include "core/pty.h"

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "base/io.h"

struct pty_relay {
	int master;
	int in;	 /* host terminal to read from, or -1 */
	int out; /* host fd to write the sandbox's output to */
	bool raw;
	struct termios saved;
};

int pty_open_if_tty(pty_relay **ret, int *ret_slave, int *ret_mask)
{
	struct winsize ws = {.ws_row = 24, .ws_col = 80};
	int mask = 0, master, slave;
	pty_relay *p;

	*ret = NULL;
	*ret_slave = -1;
	*ret_mask = 0;
	for (int fd = 0; fd < 3; fd++)
		if (isatty(fd))
			mask |= 1 << fd;
	if (!mask)
		return 0;
	for (int fd = 0; fd < 3; fd++)
		if ((mask & (1 << fd)) && ioctl(fd, TIOCGWINSZ, &ws) == 0)
			break;
	if (openpty(&master, &slave, NULL, NULL, &ws) < 0)
		return -errno;
	(void)fcntl(master, F_SETFD, FD_CLOEXEC);
	(void)fcntl(slave, F_SETFD, FD_CLOEXEC);
	p = calloc(1, sizeof(*p));
	if (!p) {
		(void)close(master);
		(void)close(slave);
		return -ENOMEM;
	}
	p->master = master;
	p->in = (mask & 1) ? 0 : -1;
	p->out = (mask & 2) ? 1 : (mask & 4) ? 2 : 0;
	if (p->in >= 0 && tcgetattr(0, &p->saved) == 0) {
		struct termios raw = p->saved;

		cfmakeraw(&raw);
		p->raw = tcsetattr(0, TCSANOW, &raw) == 0;
	}
	*ret = p;
	*ret_slave = slave;
	*ret_mask = mask;
	return 0;
}

int pty_register(pty_relay *p, int ep, uint32_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN};

	ev.data.u64 = (uint64_t)tag << 32 | (uint32_t)p->master;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, p->master, &ev) < 0)
		return -errno;
	if (p->in >= 0) {
		ev.data.u64 = (uint64_t)tag << 32 | (uint32_t)p->in;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, p->in, &ev) < 0)
			return -errno;
	}
	return 0;
}

int pty_pump(pty_relay *p, int fd)
{
	char buf[16384];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -EPIPE; /* EIO on the master: every slave holder is gone */
	return io_write_all(fd == p->master ? p->out : p->master, buf, (size_t)n);
}

void pty_drain(pty_relay *p)
{
	char buf[16384];
	ssize_t n;

	if (!p)
		return;
	(void)fcntl(p->master, F_SETFL, O_NONBLOCK);
	while ((n = read(p->master, buf, sizeof(buf))) > 0)
		if (io_write_all(p->out, buf, (size_t)n) < 0)
			break;
}

void pty_resize(pty_relay *p)
{
	struct winsize ws;

	if (p && ioctl(p->out, TIOCGWINSZ, &ws) == 0)
		(void)ioctl(p->master, TIOCSWINSZ, &ws);
}

pty_relay *pty_free(pty_relay *p)
{
	if (!p)
		return NULL;
	if (p->raw)
		(void)tcsetattr(0, TCSANOW, &p->saved);
	(void)close(p->master);
	free(p);
	return NULL;
}
