/* SPDX-License-Identifier: MIT */
#include "core/pty.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"

struct pty_relay {
	int master; /* the sandbox's ptmx, -1 until attached */
	int in;	    /* host terminal to read from, or -1 */
	int out;    /* host fd to write the sandbox's output to */
	bool raw;
	struct termios saved;
};

int pty_relay_new(pty_relay **ret, int *ret_mask)
{
	int mask = 0;
	pty_relay *p;

	*ret = NULL;
	*ret_mask = 0;
	for (int fd = 0; fd < 3; fd++)
		if (isatty(fd))
			mask |= 1 << fd;
	if (!mask)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->master = -1;
	p->in = (mask & 1) ? 0 : -1;
	p->out = (mask & 2) ? 1 : (mask & 4) ? 2 : 0;
	*ret = p;
	*ret_mask = mask;
	return 0;
}

static int ep_add_tagged(int ep, int fd, uint32_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)tag << 32 | (uint32_t)fd};

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int pty_relay_attach(pty_relay *p, int master, int ep, uint32_t tag)
{
	int r;

	if (p->master >= 0) {
		(void)close(master);
		return -EEXIST;
	}
	p->master = master;
	pty_resize(p);
	/* Raw only now: a run refused during setup leaves the terminal as it was. */
	if (p->in >= 0 && tcgetattr(p->in, &p->saved) == 0) {
		struct termios raw = p->saved;

		cfmakeraw(&raw);
		p->raw = tcsetattr(p->in, TCSANOW, &raw) == 0;
	}
	r = ep_add_tagged(ep, p->master, tag);
	if (r >= 0 && p->in >= 0)
		r = ep_add_tagged(ep, p->in, tag);
	return r;
}

int pty_pump(pty_relay *p, int fd)
{
	/* Per chunk of terminal traffic: only what read() filled is used. */
	_noinit_ char buf[16384];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -EPIPE; /* EIO on the master: every slave holder is gone */
	return io_write_all(fd == p->master ? p->out : p->master, buf, (size_t)n);
}

void pty_drain(pty_relay *p)
{
	_noinit_ char buf[16384]; /* as in pty_pump() */
	ssize_t n;

	if (!p || p->master < 0)
		return;
	(void)fcntl(p->master, F_SETFL, O_NONBLOCK);
	while ((n = read(p->master, buf, sizeof(buf))) > 0)
		if (io_write_all(p->out, buf, (size_t)n) < 0)
			break;
}

void pty_resize(pty_relay *p)
{
	struct winsize ws;

	if (!p || p->master < 0)
		return;
	for (int fd = 0; fd < 3; fd++)
		if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0) {
			(void)ioctl(p->master, TIOCSWINSZ, &ws);
			return;
		}
}

pty_relay *pty_free(pty_relay *p)
{
	if (!p)
		return NULL;
	if (p->raw)
		(void)tcsetattr(p->in, TCSANOW, &p->saved);
	if (p->master >= 0)
		(void)close(p->master);
	free(p);
	return NULL;
}

int pty_open_pair(int *ret_master, int *ret_slave)
{
	int unlock = 0, master, slave;

	/* The sandbox's instance, not the host's /dev/ptmx. */
	master = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return -errno;
	/* TIOCGPTPEER (4.13) opens the slave through the master, never by a
	 * path the agent could have swapped. */
	if (ioctl(master, TIOCSPTLCK, &unlock) < 0 ||
	    (slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		int r = -errno;

		(void)close(master);
		return r;
	}
	*ret_master = master;
	*ret_slave = slave;
	return 0;
}
