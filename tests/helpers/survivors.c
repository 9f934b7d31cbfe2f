/* SPDX-License-Identifier: MIT */
/*
 * survivors MARK CMD [ARG...]: runs CMD with SANDCAP_SURVIVOR_MARK=MARK added
 * to its environment, waits for it, and at once (no fork, no exec in
 * between) lists every process still alive that CMD started: those whose
 * environment or command line holds MARK, or whose executable is CMD's.
 * Prints "status N" (CMD's exit status, 128+N for signal N), then one
 * "survivor PID EXE" line each. Exits 0 when none is left, 1 otherwise,
 * 2 on a usage or system error.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[1 << 20];

/* True when the NUL-separated file /proc/PID/NAME holds mark. */
static bool file_holds(const char *pid, const char *name, const char *mark)
{
	char path[300];
	size_t len = 0, n = strlen(mark);
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/%s", pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (len < sizeof(buf) && (r = read(fd, buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)r;
	close(fd);
	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(buf + i, mark, n) == 0)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	char exe[PATH_MAX], self[16], env[4096];
	struct dirent *de;
	int status, found = 0;
	pid_t pid;
	DIR *d;

	if (argc < 3) {
		fprintf(stderr, "usage: survivors MARK CMD [ARG...]\n");
		return 2;
	}
	if (!realpath(argv[2], exe)) {
		perror(argv[2]);
		return 2;
	}
	snprintf(env, sizeof(env), "SANDCAP_SURVIVOR_MARK=%s", argv[1]);
	snprintf(self, sizeof(self), "%d", (int)getpid());
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		putenv(env);
		execv(argv[2], argv + 2);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return 2;
	d = opendir("/proc");
	if (!d)
		return 2;
	while ((de = readdir(d))) {
		char link[300], target[PATH_MAX];
		ssize_t n;
		bool mine;

		if (de->d_name[0] < '0' || de->d_name[0] > '9' || strcmp(de->d_name, self) == 0)
			continue;
		snprintf(link, sizeof(link), "/proc/%s/exe", de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		mine = strcmp(target, exe) == 0 || file_holds(de->d_name, "environ", argv[1]) ||
		       file_holds(de->d_name, "cmdline", argv[1]);
		if (mine) {
			if (!found)
				printf("status %d\n", WIFEXITED(status) ? WEXITSTATUS(status)
									: 128 + WTERMSIG(status));
			printf("survivor %s %s\n", de->d_name, target);
			found++;
		}
	}
	closedir(d);
	if (!found)
		printf("status %d\n",
		       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return found ? 1 : 0;
}
