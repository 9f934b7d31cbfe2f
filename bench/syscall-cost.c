/* SPDX-License-Identifier: MIT */
/*
 * CPU time per syscall, measured inside one process so that start-up, exec
 * and the machine's other load (which delays a process but does not bill it
 * CPU time) stay out of the figure. bench/filters-overhead.sh runs it bare
 * and under filter-wrap, in alternating rounds, and compares medians.
 *
 *   syscall-cost [-n ITERATIONS] [-w DIR] [-F]
 *
 * Prints one line per operation: NAME NANOSECONDS-PER-OPERATION (the walk:
 * NAME NANOSECONDS-PER-PASS ENTRIES). Each figure is the smallest of several
 * batches, the least disturbed one.
 *   getppid      a syscall seccomp's action cache allows without running
 *                the filter (it depends on the syscall number only)
 *   ioctl        FIONREAD on a pipe: ioctl is allowed by an argument check,
 *                so the filter runs on every call
 *   stat         newfstatat of a path four levels deep (Landlock checks
 *                nothing on stat)
 *   open-dir     openat + close of a directory four levels deep: Landlock
 *                walks from it towards the root on every open
 *   open-file    the same for a regular file
 *   walk         a find-like walk of DIR (default /usr/share) per pass:
 *                openat, getdents64, newfstatat on every entry
 *
 * -F measures the floor of seccomp instead: getppid and the walk, bare and
 * under a filter of one instruction that allows everything, printed as
 * floor-NAME BARE FILTERED. It is what any seccomp filter costs on this
 * kernel, before a single rule: every syscall of a filtered thread takes
 * the kernel's slow entry path.
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BATCHES	    5
#define WALK_PASSES 3
#define WALK_DEPTH  64 /* deeper directories are not entered */
#define DENTS_BUF   32768

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct ctx {
	int pipe_rd;
	const char *dir_path, *file_path, *walk_root;
	unsigned long entries;
} ctx;

static int op_getppid(ctx *c)
{
	(void)c;
	return syscall(SYS_getppid) < 0 ? -errno : 0;
}

static int op_ioctl(ctx *c)
{
	int avail;

	return ioctl(c->pipe_rd, FIONREAD, &avail) < 0 ? -errno : 0;
}

static int op_stat(ctx *c)
{
	struct stat st;

	return fstatat(AT_FDCWD, c->file_path, &st, 0) < 0 ? -errno : 0;
}

static int open_close(const char *path, int flags)
{
	int fd = openat(AT_FDCWD, path, flags | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	(void)close(fd);
	return 0;
}

static int op_open_dir(ctx *c)
{
	return open_close(c->dir_path, O_RDONLY | O_DIRECTORY);
}

static int op_open_file(ctx *c)
{
	return open_close(c->file_path, O_RDONLY);
}

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* What find does per directory: open it, read it, stat every entry. */
static int walk(ctx *c, int dirfd, unsigned depth)
{
	char buf[DENTS_BUF];
	long n;

	while ((n = syscall(SYS_getdents64, dirfd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(void *)(buf + off);
			struct stat st;

			off += d->d_reclen;
			if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
				continue;
			c->entries++;
			if (fstatat(dirfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (S_ISDIR(st.st_mode) && depth < WALK_DEPTH) {
				int fd = openat(dirfd, d->d_name,
						O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

				if (fd < 0)
					continue;
				(void)walk(c, fd, depth + 1);
				(void)close(fd);
			}
		}
	}
	return n < 0 ? -errno : 0;
}

static int op_walk(ctx *c)
{
	int fd = open(c->walk_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	c->entries = 0;
	r = walk(c, fd, 0);
	(void)close(fd);
	return r;
}

static const struct {
	const char *name;
	int (*fn)(ctx *c);
	unsigned scale; /* iterations are divided by this */
} ops[] = {
    {"getppid", op_getppid, 1},	  {"ioctl", op_ioctl, 1},	  {"stat", op_stat, 2},
    {"open-dir", op_open_dir, 4}, {"open-file", op_open_file, 4}, {"walk", op_walk, 0},
};

/* The least disturbed of several batches of n calls (or passes) of op i, in
 * CPU nanoseconds; 0 when the operation fails. */
static uint64_t measure(ctx *c, size_t i, unsigned long n)
{
	uint64_t best = UINT64_MAX;

	if (ops[i].fn(c) < 0) /* warms caches, checks it works */
		return 0;
	for (int b = 0; b < (ops[i].scale ? BATCHES : WALK_PASSES); b++) {
		uint64_t t0 = cpu_ns(), t;

		for (unsigned long k = 0; k < n; k++)
			(void)ops[i].fn(c);
		t = cpu_ns() - t0;
		if (t < best)
			best = t;
	}
	return best;
}

/*
 * -F: getppid (ops[0]) and the walk (the last op) in two threads pinned to
 * one CPU, one of them under a one-instruction allow-all filter (a seccomp
 * filter binds only the thread that installs it). They take turns, batch
 * by batch, so both see the same CPU in the same moment: this machine's
 * vCPUs drift by a quarter between one second and the next, more than the
 * difference measured.
 */
#define FLOOR_ROUNDS 9

typedef struct floor_run {
	ctx c;
	unsigned long iters;
	sem_t go[2];
	uint64_t best[2][2]; /* [thread][op] */
	int error;
} floor_run;

static const size_t floor_ops[] = {0, sizeof(ops) / sizeof(ops[0]) - 1};

static void floor_turns(floor_run *f, int self)
{
	ctx c = f->c;

	for (size_t k = 0; k < 2; k++)
		f->best[self][k] = UINT64_MAX;
	for (int r = 0; r < FLOOR_ROUNDS; r++) {
		for (size_t k = 0; k < 2; k++) {
			size_t i = floor_ops[k];
			unsigned long n = ops[i].scale ? f->iters : 1;
			uint64_t t0, t;

			sem_wait(&f->go[self]);
			if (r == 0)
				(void)ops[i].fn(&c); /* warm-up */
			t0 = cpu_ns();
			for (unsigned long j = 0; j < n; j++)
				(void)ops[i].fn(&c);
			t = cpu_ns() - t0;
			if (t < f->best[self][k])
				f->best[self][k] = t;
			sem_post(&f->go[!self]);
		}
	}
}

static void *floor_filtered(void *arg)
{
	floor_run *f = arg;
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = {.len = 1, .filter = &allow};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		f->error = errno;
	floor_turns(f, 1); /* runs its turns even so: the other thread waits for them */
	return NULL;
}

static int floor_of_seccomp(ctx *c, unsigned long iters)
{
	floor_run f = {.c = *c, .iters = iters};
	cpu_set_t one;
	pthread_t t;
	int cpu = sched_getcpu();

	CPU_ZERO(&one);
	CPU_SET(cpu < 0 ? 0 : cpu, &one);
	/* the new thread inherits the affinity */
	if (sched_setaffinity(0, sizeof(one), &one) < 0 || sem_init(&f.go[0], 0, 1) < 0 ||
	    sem_init(&f.go[1], 0, 0) < 0 || pthread_create(&t, NULL, floor_filtered, &f) != 0) {
		fprintf(stderr, "syscall-cost: floor setup: %s\n", strerror(errno));
		return 1;
	}
	floor_turns(&f, 0);
	pthread_join(t, NULL);
	if (f.error) {
		fprintf(stderr, "syscall-cost: seccomp: %s\n", strerror(f.error));
		return 1;
	}
	for (size_t k = 0; k < 2; k++) {
		const char *name = ops[floor_ops[k]].name;
		double div = ops[floor_ops[k]].scale ? (double)iters : 1.0;

		printf("floor-%s %.1f %.1f\n", name, (double)f.best[0][k] / div,
		       (double)f.best[1][k] / div);
	}
	return 0;
}

/* A directory and a file four levels below /, as many of /usr's are. */
static int pick_paths(ctx *c)
{
	static const char *const dirs[] = {
	    "/usr/share/doc/libc6", "/usr/lib/x86_64-linux-gnu/gconv", "/usr/share/common-licenses",
	    "/usr/include/linux/netfilter"};
	static const char *const files[] = {"/usr/share/doc/libc6/copyright",
					    "/usr/share/common-licenses/GPL-3", "/usr/bin/env"};
	struct stat st;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !c->dir_path; i++)
		if (stat(dirs[i], &st) == 0 && S_ISDIR(st.st_mode))
			c->dir_path = dirs[i];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]) && !c->file_path; i++)
		if (stat(files[i], &st) == 0 && S_ISREG(st.st_mode))
			c->file_path = files[i];
	return c->dir_path && c->file_path ? 0 : -ENOENT;
}

int main(int argc, char **argv)
{
	ctx c = {.walk_root = "/usr/share"};
	unsigned long iters = 40000;
	int p[2], opt;
	bool floor = false;

	while ((opt = getopt(argc, argv, "n:w:F")) != -1) {
		if (opt == 'n')
			iters = strtoul(optarg, NULL, 10);
		else if (opt == 'w')
			c.walk_root = optarg;
		else if (opt == 'F')
			floor = true;
		else {
			fprintf(stderr, "usage: syscall-cost [-n ITERATIONS] [-w DIR] [-F]\n");
			return 2;
		}
	}
	if (iters < 8) {
		fprintf(stderr, "syscall-cost: -n must be at least 8\n");
		return 2;
	}
	if (pipe2(p, O_CLOEXEC) < 0 || pick_paths(&c) < 0) {
		fprintf(stderr, "syscall-cost: setup: %s\n", strerror(errno ? errno : ENOENT));
		return 1;
	}
	c.pipe_rd = p[0];
	if (floor)
		return floor_of_seccomp(&c, iters);

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		/* a walk is one pass; the rest run many calls per batch */
		unsigned long n = ops[i].scale ? iters / ops[i].scale : 1;
		uint64_t best = measure(&c, i, n);

		if (!best) {
			fprintf(stderr, "syscall-cost: %s failed\n", ops[i].name);
			return 1;
		}
		if (ops[i].scale)
			printf("%s %.1f\n", ops[i].name, (double)best / (double)n);
		else
			printf("%s %.1f %lu\n", ops[i].name, (double)best, c.entries);
	}
	return 0;
}
