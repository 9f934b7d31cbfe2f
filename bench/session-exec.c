/* SPDX-License-Identifier: MIT */
/*
 * A warm exec through the session library (session/exec-wire.h), as a
 * program that links it (a daemon) pays it: sx_exec() of a command in
 * session NAME, its output drained, sx_exec_wait(), N times. Prints the
 * median and the 10th and 90th percentiles in milliseconds.
 *
 *   session-exec NAME N CMD...
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session/exec-wire.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void drain(int fd)
{
	char buf[4096];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

/* End of file for the command, its output read, our ends closed. */
static void drain_all(int in, int out, int err)
{
	close(in);
	drain(out);
	drain(err);
	close(out);
	close(err);
}

/* One exec; 0 when it exited 0. */
static int exec_one(const char *name, char **argv)
{
	sx_req q = {.argv = argv};
	sx_handle h;
	sx_result r;
	char why[600];

	if (sx_exec(name, &q, &h, why, sizeof(why)) < 0)
		return -1;
	drain_all(h.stdin_fd, h.stdout_fd, h.stderr_fd);
	if (sx_exec_wait(&h, &r) < 0)
		return -1;
	return r.exit_code;
}

int main(int argc, char **argv)
{
	double *t;
	int n;

	if (argc < 4 || (n = atoi(argv[2])) < 3) {
		fputs("usage: session-exec NAME N CMD...\n", stderr);
		return 2;
	}
	t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return 1;
	for (int i = 0; i < n; i++) {
		double t0 = now_ms();
		int r = exec_one(argv[1], argv + 3);

		if (r != 0) {
			fprintf(stderr, "session-exec: the command in %s failed (%d)\n", argv[1],
				r);
			return 1;
		}
		t[i] = now_ms() - t0;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("%.3f %.3f %.3f\n", t[n / 2], t[n / 10], t[n * 9 / 10]);
	free(t);
	return 0;
}
