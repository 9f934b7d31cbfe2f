/* SPDX-License-Identifier: MIT */
/*
 * What two layers of a sandbox's start cost at the kernel's cheapest,
 * next to what sandcap's use of them costs, in the same process and in
 * alternating rounds (bench/startup-ablation.sh prints it beside the
 * layers taken away):
 *
 *   seccomp  loading the agent's filter (the minimal policy's variant, as
 *            sf_apply() loads it: with a listener) against a filter of one
 *            instruction; each load in a fresh child, since filters stack.
 *            The kernel converts and JITs a program in time linear in its
 *            length, so this is the cost of the rules themselves.
 *   cgroup   (as root) mkdir of the sandbox's directories, a child moving
 *            itself in (v1: "0" to tasks, no threadgroup lock; v2: "0" to
 *            cgroup.procs) and rmdir: the least a cgroup per sandbox costs,
 *            before any probe, stats or sweep. v1: memory and cpuacct
 *            under /sys/fs/cgroup, what a run without limits makes; v2:
 *            one directory under our own cgroup.
 *   audit    (with -d DIR) what the log's contract leaves on the path of a
 *            run's end, on DIR's filesystem: a new file with the reserve
 *            allocated beyond a record, then the seal's boundary, one
 *            fsync, and the reserve given back (ftruncate).
 *
 *   layer-floors [-n ROUNDS] [-d DIR]
 *
 * Prints NAME MEDIAN-MS for each, NAME one of seccomp-agent (and its
 * length in instructions), seccomp-one, cgroup-floor (absent when not
 * root or no hierarchy is writable), audit-floor (with -d).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "seccomp/programs.h"

#define MAX_ROUNDS 2000

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* One load in a fresh child; its time comes back over a pipe. */
static double seccomp_load_ms(const struct sock_fprog *prog, unsigned flags)
{
	int p[2];
	double ms = -1;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		double t;
		long r;

		(void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		t = now_ms();
		r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, prog);
		t = now_ms() - t;
		if (r < 0)
			t = -1;
		(void)!write(p[1], &t, sizeof(t));
		_exit(0);
	}
	(void)close(p[1]);
	if (pid < 0 || read(p[0], &ms, sizeof(ms)) != (ssize_t)sizeof(ms))
		ms = -1;
	(void)close(p[0]);
	if (pid > 0)
		(void)waitpid(pid, NULL, 0);
	return ms;
}

/* mkdir, a child moving itself in, rmdir; -1 where it cannot be done. */
static double cgroup_floor_ms(int round)
{
	static const char *const v1[] = {"/sys/fs/cgroup/memory", "/sys/fs/cgroup/cpuacct"};
	char dirs[2][160], file[352];
	int fds[2], n = 0;
	struct statfs sfs;
	double t;
	pid_t pid;
	int st = 1;
	bool ok = true;

	if (statfs("/sys/fs/cgroup", &sfs) < 0)
		return -1;
	t = now_ms();
	for (int i = 0; i < 2; i++) {
		if (sfs.f_type == 0x63677270 /* CGROUP2_SUPER_MAGIC */ && i > 0)
			break;
		snprintf(dirs[i], sizeof(dirs[i]), "%s/layer-floors-%d-%d",
			 sfs.f_type == 0x63677270 ? "/sys/fs/cgroup" : v1[i], (int)getpid(), round);
		if (mkdir(dirs[i], 0755) < 0)
			break;
		snprintf(file, sizeof(file), "%s/%s", dirs[i],
			 sfs.f_type == 0x63677270 ? "cgroup.procs" : "tasks");
		fds[n] = open(file, O_WRONLY | O_CLOEXEC);
		if (fds[n++] < 0) {
			ok = false;
			break;
		}
	}
	if (n > 0 && ok) {
		pid = fork();
		if (pid == 0) {
			for (int i = 0; i < n; i++)
				if (write(fds[i], "0", 1) != 1)
					_exit(1);
			_exit(0);
		}
		ok =
		    pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0)
			(void)close(fds[i]);
		if (rmdir(dirs[i]) < 0)
			ok = false;
	}
	t = now_ms() - t;
	return n > 0 && ok ? t : -1;
}

/* fsync and ftruncate of a fresh log-like file in dir; -1 on error. */
static double audit_floor_ms(const char *dir, int round)
{
	char path[4096], rec[2048];
	double t = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/layer-floors-%d-%d", dir, (int)getpid(), round);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	memset(rec, 'x', sizeof(rec));
	/* The reserve and the first chunk, as au_open() allocates them. */
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (16 << 10) + (64 << 10)) == 0 &&
	    write(fd, rec, sizeof(rec)) == (ssize_t)sizeof(rec)) {
		t = now_ms();
		if (fsync(fd) == 0 && ftruncate(fd, sizeof(rec)) == 0)
			t = now_ms() - t;
		else
			t = -1;
	}
	(void)close(fd);
	(void)unlink(path);
	return t;
}

int main(int argc, char **argv)
{
	static double agent[MAX_ROUNDS], one[MAX_ROUNDS], cg[MAX_ROUNDS], au[MAX_ROUNDS];
	const char *dir = NULL;
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	const sf_program *p = &sf_programs[SF_V_AUDIT_DENIED];
	struct sock_fprog agent_prog = {.len = p->len, .filter = (struct sock_filter *)p->insns};
	struct sock_fprog one_prog = {.len = 1, .filter = &allow};
	int rounds = 200, n_cg = 0, n_au = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-n") == 0)
			rounds = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "-d") == 0)
			dir = argv[i + 1];
		else
			rounds = -1;
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || argc % 2 == 0) {
		fprintf(stderr, "usage: layer-floors [-n ROUNDS (1-%d)] [-d DIR]\n", MAX_ROUNDS);
		return 2;
	}
	for (int i = 0; i < rounds; i++) {
		agent[i] =
		    seccomp_load_ms(&agent_prog, p->notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0);
		one[i] = seccomp_load_ms(&one_prog, 0);
		if (agent[i] < 0 || one[i] < 0) {
			fprintf(stderr, "layer-floors: seccomp: %s\n", strerror(errno));
			return 1;
		}
		if (geteuid() == 0) {
			double c = cgroup_floor_ms(i);

			if (c >= 0)
				cg[n_cg++] = c;
		}
		if (dir) {
			double a = audit_floor_ms(dir, i);

			if (a < 0) {
				fprintf(stderr, "layer-floors: %s: %s\n", dir, strerror(errno));
				return 1;
			}
			au[n_au++] = a;
		}
	}
	printf("seccomp-agent %.3f %u\n", median(agent, rounds), (unsigned)p->len);
	printf("seccomp-one %.3f\n", median(one, rounds));
	if (n_cg > 0)
		printf("cgroup-floor %.3f\n", median(cg, n_cg));
	if (n_au > 0)
		printf("audit-floor %.3f\n", median(au, n_au));
	return 0;
}
