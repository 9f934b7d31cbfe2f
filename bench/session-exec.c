/* SPDX-License-Identifier: MIT */
/*
 * A warm exec through the session library (session/session.h), as a
 * program that links it (a daemon) pays it: sc_session_exec() of a command
 * in session NAME, its output drained, sc_session_exec_wait(), N times.
 * Prints the median and the 10th and 90th percentiles in milliseconds.
 *
 *   session-exec NAME N CMD...
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session/session.h"

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

int main(int argc, char **argv)
{
	sc_exec_req q = {0};
	double *t;
	int n;

	if (argc < 4 || (n = atoi(argv[2])) < 3) {
		fputs("usage: session-exec NAME N CMD...\n", stderr);
		return 2;
	}
	t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return 1;
	q.argv = argv + 3;
	for (int i = 0; i < n; i++) {
		sc_exec_handle h;
		sc_exec_result r;
		double t0 = now_ms();

		if (sc_session_exec(argv[1], &q, &h) < 0) {
			fprintf(stderr, "session-exec: cannot exec in %s\n", argv[1]);
			return 1;
		}
		close(h.stdin_fd);
		drain(h.stdout_fd);
		drain(h.stderr_fd);
		close(h.stdout_fd);
		close(h.stderr_fd);
		if (sc_session_exec_wait(&h, &r) < 0 || r.exit_code != 0) {
			fprintf(stderr, "session-exec: the command failed\n");
			return 1;
		}
		json_decref(r.limits_hit);
		t[i] = now_ms() - t0;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("%.3f %.3f %.3f\n", t[n / 2], t[n / 10], t[n * 9 / 10]);
	free(t);
	return 0;
}
