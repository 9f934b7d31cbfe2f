/* SPDX-License-Identifier: MIT */
/*
 * A static resource hog for limit tests where no Python is available (the
 * cgroup v2 VM): "mem" allocates without end, "spin N SECS" busies N
 * threads, "forkbomb SECS" forks without end, "heartbeat FILE" double-forks
 * a daemon that writes the time to FILE every 50 ms. For delegation:
 * "alloc MIB" touches MIB MiB and says so, "hold MIB CMD..." holds MIB MiB
 * while CMD runs, "spawn JSON" sends one request to the spawn socket and
 * prints the reply, "sleep SECS" sleeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double spin_until;

static char *touch_mib(long mib)
{
	char *p = malloc((size_t)mib << 20);

	if (p)
		memset(p, 1, (size_t)mib << 20);
	return p;
}

/* One SEQPACKET request, one reply: docs/tokens.md, "Delegation". */
static int spawn_request(const char *json)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	static char reply[1 << 20];
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ssize_t n;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "/run/sandcap/spawn.sock");
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("spawn.sock");
		return 125;
	}
	if (send(fd, json, strlen(json), 0) < 0) {
		perror("send");
		return 125;
	}
	n = recv(fd, reply, sizeof(reply) - 1, 0);
	if (n <= 0) {
		perror("recv");
		return 125;
	}
	reply[n] = '\0';
	printf("%s\n", reply);
	return 0;
}

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
	if (argc >= 3 && strcmp(argv[1], "alloc") == 0) {
		long mib = atol(argv[2]);

		if (!touch_mib(mib))
			return 3;
		printf("allocated %ld\n", mib);
		return 0;
	}
	if (argc >= 4 && strcmp(argv[1], "hold") == 0) {
		long mib = atol(argv[2]);
		char *held = touch_mib(mib);
		int status = 0;
		pid_t pid;

		if (!held)
			return 3;
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			execv(argv[3], argv + 3);
			_exit(127);
		}
		waitpid(pid, &status, 0);
		printf("parent-alive %ld %d\n", mib, held[mib << 19]);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "spawn") == 0)
		return spawn_request(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "sleep") == 0) {
		usleep((useconds_t)(atof(argv[2]) * 1e6));
		return 0;
	}
	fprintf(stderr, "usage: hog mem | spin N SECS | forkbomb SECS | heartbeat FILE | alloc MIB "
			"| hold MIB CMD... | spawn JSON | sleep SECS\n");
	return 2;
}
