/* SPDX-License-Identifier: MIT */
/*
 * A static resource hog for limit tests where no Python is available (the
 * cgroup v2 VM): "mem" allocates without end, "spin N SECS" busies N
 * threads, "forkbomb SECS" forks without end, "heartbeat FILE" double-forks
 * a daemon that writes the time to FILE every 50 ms.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double spin_until;

static void *spin(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	while (now() < spin_until)
		n++;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "mem") == 0) {
		for (size_t mib = 8;; mib += 8) {
			char *p = malloc(8 << 20);

			if (!p)
				return 3;
			memset(p, 1, 8 << 20);
			printf("allocated %zu MiB\n", mib);
			fflush(stdout);
		}
	}
	if (argc >= 4 && strcmp(argv[1], "spin") == 0) {
		int n = atoi(argv[2]);
		pthread_t t[64];

		spin_until = now() + atof(argv[3]);
		for (int i = 0; i < n && i < 64; i++)
			pthread_create(&t[i], NULL, spin, NULL);
		for (int i = 0; i < n && i < 64; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "forkbomb") == 0) {
		double end = now() + atof(argv[2]);
		unsigned refused = 0, made = 0;

		while (now() < end) {
			pid_t p = fork();

			if (p == 0) {
				pause();
				_exit(0);
			}
			if (p < 0)
				refused++;
			else
				made++;
		}
		printf("forked %u, refused %u\n", made, refused);
		return refused ? 0 : 1;
	}
	if (argc >= 3 && strcmp(argv[1], "heartbeat") == 0) {
		if (fork() == 0) {
			setsid();
			if (fork() == 0) {
				for (;;) {
					char buf[64];
					int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
					struct timespec ts;

					clock_gettime(CLOCK_REALTIME, &ts);
					snprintf(buf, sizeof(buf), "%lld%09ld\n",
						 (long long)ts.tv_sec, ts.tv_nsec);
					if (fd >= 0) {
						(void)!write(fd, buf, strlen(buf));
						close(fd);
					}
					usleep(50000);
				}
			}
			_exit(0);
		}
		pause();
		return 0;
	}
	fprintf(stderr, "usage: hog mem | spin N SECS | forkbomb SECS | heartbeat FILE\n");
	return 2;
}
