/* SPDX-License-Identifier: MIT */
/*
 * The agent's seccomp profile: one table, read top to bottom.
 *
 * An allowlist in the spirit of Docker's default profile
 * (moby/profiles/seccomp/default.json): what Python, Node, shells, compilers
 * and git use is allowed; the syscalls that reach past the sandbox's walls
 * are refused with EPERM, each group with the reason; everything the table
 * does not name, including syscalls newer than this table, gets ENOSYS so
 * that libc and runtimes take their fallback path (seccomp(2), "Caveats").
 *
 * Only the native architecture is in the filter. A syscall made through
 * another ABI (int $0x80, x32 numbers >= 0x40000000) hits the bad-arch
 * action, KILL_PROCESS (apply.c).
 *
 * A name the build host's libseccomp does not know for this architecture is
 * skipped and therefore ENOSYS: the table errs toward refusing.
 */
#include "seccomp/profile.h"

#include <linux/netlink.h>
#include <linux/sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/stat.h>

#define NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define MASK32	   0xffffffffu

#define IN(argn, m, ...)                                                                           \
	{                                                                                          \
		.how = SF_IN, .arg = (argn), .mask = (m),                                          \
		.n = sizeof((uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t),                         \
		.values = {__VA_ARGS__},                                                           \
	}
#define NOT_IN(argn, m, ...)                                                                       \
	{                                                                                          \
		.how = SF_NOT_IN, .arg = (argn), .mask = (m),                                      \
		.n = sizeof((uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t),                         \
		.values = {__VA_ARGS__},                                                           \
	}

/* Namespace flags of clone(2). CLONE_NEWTIME shares its bit with CSIGNAL in
 * clone() and exists only for unshare/clone3, both refused whole. */
#define CLONE_NS_FLAGS                                                                             \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |             \
	 CLONE_NEWPID | CLONE_NEWNET)
/* socket(2) type without SOCK_NONBLOCK | SOCK_CLOEXEC. */
#define SOCK_TYPE_BITS (MASK32 & ~(uint32_t)(SOCK_NONBLOCK | SOCK_CLOEXEC))
#ifndef SOCK_PACKET
#define SOCK_PACKET 10
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#define PER_LINUX_QUERY 0xffffffffu

/* The mode bits no file the agent makes or changes may get. */
#define SETID_BITS  ((uint32_t)(S_ISUID | S_ISGID))
#define NO_SETID(n) IN(n, SETID_BITS, 0)
#define SETID(n)    NOT_IN(n, SETID_BITS, 0)
#define SETID_WHY                                                                                  \
	"setuid/setgid bits: in a grant the file is its host owner's (root's, in a root-owned "    \
	"grant), and the host does not mount it nosuid"
#define WRITE_WHY "writes: the mount tree and Landlock decide which; a refused one is recorded"
/* open's flags that write: an access mode other than O_RDONLY, creating or
 * truncating (O_TMPFILE holds O_DIRECTORY and needs a writing mode). */
#define OPEN_WRITE_BITS ((uint32_t)(O_ACCMODE | O_CREAT | O_TRUNC))
/* open's flags under which the kernel reads the mode at all: with neither,
 * the mode register is whatever the caller left there (build_open_how). */
#define OPEN_CREATE_BITS ((uint32_t)(O_CREAT | (O_TMPFILE & ~O_DIRECTORY)))
#define OPEN_BITS	 (OPEN_WRITE_BITS | OPEN_CREATE_BITS)
/* Writing without creating: an access mode other than O_RDONLY, or
 * O_TRUNC, and neither creating bit; the mode is not read. */
#define OPEN_WRITES_NO_CREATE                                                                      \
	O_WRONLY, O_RDWR, O_ACCMODE, O_TRUNC, O_WRONLY | O_TRUNC, O_RDWR | O_TRUNC,                \
	    O_ACCMODE | O_TRUNC
/* mknod's mode holds the type too: each type mknod may make, with each
 * combination of the two bits. */
#define SETID_NODES                                                                                \
	S_ISUID, S_ISGID, S_ISUID | S_ISGID, S_IFREG | S_ISUID, S_IFREG | S_ISGID,                 \
	    S_IFREG | S_ISUID | S_ISGID, S_IFIFO | S_ISUID, S_IFIFO | S_ISGID,                     \
	    S_IFIFO | S_ISUID | S_ISGID, S_IFSOCK | S_ISUID, S_IFSOCK | S_ISGID,                   \
	    S_IFSOCK | S_ISUID | S_ISGID

const sf_rule sf_profile[] = {
    /* ---- allowed: ordinary process life ---- */
    {SF_ALLOW,
     NAMES("read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",
	   "preadv2", "pwritev2", "lseek", "sendfile", "copy_file_range", "splice", "tee",
	   "vmsplice", "close", "close_range", "dup", "dup2", "dup3", "fcntl", "flock", "fsync",
	   "fdatasync", "sync", "syncfs", "sync_file_range", "fadvise64", "readahead", "cachestat",
	   "fallocate", "ftruncate", "pipe", "pipe2"),
     .why = "file descriptor I/O"},
    {SF_ALLOW,
     NAMES("access", "faccessat", "faccessat2", "stat", "lstat", "fstat", "newfstatat", "statx",
	   "statfs", "fstatfs", "getdents", "getdents64", "getcwd", "chdir", "fchdir", "readlink",
	   "readlinkat", "chown", "fchown", "lchown", "fchownat", "umask", "utime", "utimes",
	   "utimensat", "futimesat", "getxattr", "lgetxattr", "fgetxattr", "listxattr",
	   "llistxattr", "flistxattr", "setxattr", "lsetxattr", "fsetxattr", "removexattr",
	   "lremovexattr", "fremovexattr", "inotify_init", "inotify_init1", "inotify_add_watch",
	   "inotify_rm_watch", "memfd_create"),
     .why = "paths and metadata; Landlock and the mount tree decide which"},
    {SF_ALLOW,
     NAMES("brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "msync", "mincore", "mlock",
	   "mlock2", "munlock", "mlockall", "munlockall", "remap_file_pages", "pkey_alloc",
	   "pkey_free", "pkey_mprotect", "membarrier", "rseq", "map_shadow_stack", "mseal"),
     .why = "memory; bounded by the cgroup and RLIMIT_MEMLOCK"},
    {SF_ALLOW, NAMES("get_mempolicy", "set_mempolicy", "mbind"),
     .why = "NUMA placement of the caller's own memory (procps, numpy, JVMs); "
	    "migrate_pages/move_pages, which reach other processes, stay out"},
    {SF_ALLOW,
     NAMES("fork", "vfork", "exit", "exit_group", "wait4", "waitid", "kill", "tkill", "tgkill",
	   "pidfd_open", "pidfd_send_signal", "set_tid_address", "set_robust_list",
	   "get_robust_list", "futex", "futex_waitv", "futex_wake", "futex_wait", "futex_requeue",
	   "arch_prctl", "prctl", "getpid", "getppid", "gettid", "getuid", "geteuid", "getgid",
	   "getegid", "getresuid", "getresgid", "getgroups", "setuid", "setgid", "setreuid",
	   "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid", "capget",
	   "capset", "getpgid", "setpgid", "getpgrp", "getsid", "setsid", "getpriority",
	   "setpriority", "getrlimit", "setrlimit", "prlimit64", "getrusage", "times",
	   "sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getparam",
	   "sched_setparam", "sched_getscheduler", "sched_setscheduler", "sched_getattr",
	   "sched_setattr", "sched_get_priority_max", "sched_get_priority_min",
	   "sched_rr_get_interval", "ioprio_get", "ioprio_set", "uname", "sysinfo", "getcpu",
	   "getrandom", "seccomp", "landlock_create_ruleset", "landlock_add_rule",
	   "landlock_restrict_self", "restart_syscall"),
     .why = "processes and credentials; the user namespace maps nothing to root"},
    {SF_ALLOW,
     NAMES("rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigsuspend",
	   "rt_sigtimedwait", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "sigaltstack", "signalfd",
	   "signalfd4", "pause", "alarm", "getitimer", "setitimer", "nanosleep", "clock_nanosleep",
	   "clock_gettime", "clock_getres", "gettimeofday", "time", "timer_create", "timer_settime",
	   "timer_gettime", "timer_getoverrun", "timer_delete", "timerfd_create", "timerfd_settime",
	   "timerfd_gettime"),
     .why = "signals and reading clocks"},
    {SF_ALLOW,
     NAMES("poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl",
	   "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "io_setup",
	   "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents"),
     .why = "event loops and classic AIO"},
    {SF_ALLOW,
     NAMES("connect", "accept", "accept4", "getsockname", "getpeername", "sendto", "recvfrom",
	   "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "shutdown", "setsockopt", "getsockopt"),
     .why = "sockets once created; the netns has only lo and the proxy"},
    {SF_BIND, NAMES("bind"),
     .why = "naming a socket; with net.listen off Landlock refuses TCP binds, and the "
	    "listener refuses and records them first (the filter cannot tell TCP from UDP)"},
    {SF_LISTEN, NAMES("listen"),
     .why = "serving on the sandbox's own loopback (test suites, dev servers); with "
	    "net.listen off no socket may listen, the kernel's autobind included"},
    {SF_ALLOW,
     NAMES("shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl",
	   "msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend",
	   "mq_timedreceive", "mq_notify", "mq_getsetattr"),
     .why = "System V and POSIX IPC, private to the sandbox's IPC namespace"},
    {SF_EXEC, NAMES("execve", "execveat"),
     .why = "program execution; recorded as proc.exec when audit.exec is on"},

    /* ---- allowed with argument checks ---- */
    {SF_ALLOW, NAMES("clone"), IN(0, CLONE_NS_FLAGS, 0),
     .why = "fork and threads without namespace flags"},
    {SF_DENY, NAMES("clone"), NOT_IN(0, CLONE_NS_FLAGS, 0),
     .why = "a new namespace would give the agent root over a private view"},
    {SF_ENOSYS, NAMES("clone3"),
     .why = "its flags live in memory seccomp cannot read; glibc falls back to clone"},
    {SF_ALLOW, NAMES("socket"), IN(0, MASK32, AF_UNIX),
     IN(1, SOCK_TYPE_BITS, SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET), .why = "unix sockets"},
    {SF_ALLOW, NAMES("socket"), IN(0, MASK32, AF_INET, AF_INET6),
     IN(1, SOCK_TYPE_BITS, SOCK_STREAM, SOCK_DGRAM), .why = "TCP and UDP"},
    {SF_DENY, NAMES("socket"), IN(0, MASK32, AF_UNIX, AF_INET, AF_INET6),
     IN(1, SOCK_TYPE_BITS, SOCK_RAW, SOCK_PACKET),
     .why = "raw sockets forge packets and sniff the namespace"},
    {SF_DENY, NAMES("socket"), IN(0, MASK32, AF_UNIX),
     NOT_IN(1, SOCK_TYPE_BITS, SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET, SOCK_RAW, SOCK_PACKET),
     .why = "other unix socket types: none exists; refused, not ENOSYS, so that a program "
	    "learns socket() is there"},
    {SF_DENY, NAMES("socket"), IN(0, MASK32, AF_INET, AF_INET6),
     NOT_IN(1, SOCK_TYPE_BITS, SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_PACKET),
     .why = "SCTP's and DCCP's socket types: protocols the proxy does not carry, rarely "
	    "loaded kernel code"},
    {SF_NOFAMILY, NAMES("socket"), IN(0, MASK32, AF_NETLINK), IN(2, MASK32, NETLINK_ROUTE),
     .why = "glibc's getaddrinfo(AI_ADDRCONFIG) and getifaddrs probe the interfaces this "
	    "way on nearly every networked run; refused as a kernel without netlink would, "
	    "unrecorded, so that denials stay worth reading (allowing it would show only lo, "
	    "and glibc then refuses AF_INET lookups even of 127.0.0.1)"},
    {SF_DENY, NAMES("socket"), IN(0, MASK32, AF_NETLINK), NOT_IN(2, MASK32, NETLINK_ROUTE),
     .why = "other netlink families (audit, sock_diag, netfilter, uevents...): kernel "
	    "attack surface, no use here"},
    {SF_DENY, NAMES("socket"), NOT_IN(0, MASK32, AF_UNIX, AF_INET, AF_INET6, AF_NETLINK),
     .why = "packet, vsock, bluetooth...: kernel attack surface, no use here"},
    {SF_ALLOW, NAMES("socketpair"), IN(0, MASK32, AF_UNIX), .why = "unix socket pairs"},
    {SF_NOFAMILY, NAMES("socketpair"), NOT_IN(0, MASK32, AF_UNIX),
     .why = "pairs of other families: as a kernel without them would answer"},
    {SF_ALLOW, NAMES("ioctl"), NOT_IN(1, MASK32, TIOCSTI, TIOCLINUX, TIOCSETD),
     .why = "device and terminal control"},
    {SF_DENY, NAMES("ioctl"), IN(1, MASK32, TIOCSTI, TIOCLINUX, TIOCSETD),
     .why = "TIOCSTI/TIOCLINUX push keystrokes into a terminal someone else reads; "
	    "TIOCSETD: line disciplines are a long record of kernel bugs (n_hdlc, n_gsm)"},
    {SF_ALLOW, NAMES("personality"), IN(0, MASK32, 0, PER_LINUX_QUERY),
     .why = "PER_LINUX and the query"},
    {SF_DENY, NAMES("personality"), NOT_IN(0, MASK32, 0, PER_LINUX_QUERY),
     .why = "other personalities turn off ASLR or change mmap semantics"},
    /* Every call that takes a mode the kernel gives a file or directory, by
     * the argument the mode is in. A grant is idmapped onto its owner, so in
     * a grant owned by root a setuid file of the agent's is root's setuid
     * file on the host (docs/decisions.md, "No setuid file leaves the
     * sandbox"). */
    /* Calls that write a name or a file's data or mode: the mount tree and
     * Landlock decide which; with audit.denied_syscalls the listener first
     * judges, and records and refuses a write a wall would refuse
     * (fs.denied, writes.c). */
    {SF_WRITE,
     NAMES("unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2", "link", "linkat",
	   "symlink", "symlinkat", "truncate"),
     .why = WRITE_WHY},
    {SF_WRITE, NAMES("chmod", "fchmod", "creat", "mkdir"), NO_SETID(1), .why = WRITE_WHY},
    {SF_SETID, NAMES("chmod", "fchmod", "creat", "mkdir"), SETID(1), .why = SETID_WHY},
    {SF_WRITE, NAMES("fchmodat", "fchmodat2", "mkdirat"), NO_SETID(2), .why = WRITE_WHY},
    {SF_SETID, NAMES("fchmodat", "fchmodat2", "mkdirat"), SETID(2), .why = SETID_WHY},
    /* open and openat read their mode only when creating (OPEN_CREATE_BITS):
     * four disjoint cases by the flags, the mode judged only in the last two. */
    {SF_ALLOW, NAMES("open"), IN(1, OPEN_BITS, 0),
     .why = "opening to read; the mount tree and Landlock decide which"},
    {SF_WRITE, NAMES("open"), IN(1, OPEN_BITS, OPEN_WRITES_NO_CREATE), .why = WRITE_WHY},
    {SF_WRITE, NAMES("open"), NOT_IN(1, OPEN_CREATE_BITS, 0), NO_SETID(2), .why = WRITE_WHY},
    {SF_SETID, NAMES("open"), NOT_IN(1, OPEN_CREATE_BITS, 0), SETID(2), .why = SETID_WHY},
    {SF_ALLOW, NAMES("openat"), IN(2, OPEN_BITS, 0),
     .why = "opening to read; the mount tree and Landlock decide which"},
    {SF_WRITE, NAMES("openat"), IN(2, OPEN_BITS, OPEN_WRITES_NO_CREATE), .why = WRITE_WHY},
    {SF_WRITE, NAMES("openat"), NOT_IN(2, OPEN_CREATE_BITS, 0), NO_SETID(3), .why = WRITE_WHY},
    {SF_SETID, NAMES("openat"), NOT_IN(2, OPEN_CREATE_BITS, 0), SETID(3), .why = SETID_WHY},
    {SF_ENOSYS, NAMES("openat2"),
     .why = "its mode lives in memory seccomp cannot read; glibc and runtimes fall back to "
	    "openat"},
    {SF_WRITE, NAMES("mknod"), IN(1, S_IFMT | SETID_BITS, 0, S_IFREG, S_IFIFO, S_IFSOCK),
     .why = "FIFOs, sockets and regular files; " WRITE_WHY},
    {SF_SETID, NAMES("mknod"), IN(1, S_IFMT | SETID_BITS, SETID_NODES), .why = SETID_WHY},
    {SF_DENY, NAMES("mknod"), IN(1, S_IFMT, S_IFCHR, S_IFBLK),
     .why = "device nodes would reach hardware behind /dev"},
    {SF_WRITE, NAMES("mknodat"), IN(2, S_IFMT | SETID_BITS, 0, S_IFREG, S_IFIFO, S_IFSOCK),
     .why = "FIFOs, sockets and regular files; " WRITE_WHY},
    {SF_SETID, NAMES("mknodat"), IN(2, S_IFMT | SETID_BITS, SETID_NODES), .why = SETID_WHY},
    {SF_DENY, NAMES("mknodat"), IN(2, S_IFMT, S_IFCHR, S_IFBLK),
     .why = "device nodes would reach hardware behind /dev"},

    /* ---- refused: each group reaches past a wall ---- */
    {SF_DENY, NAMES("unshare", "setns"),
     .why = "namespaces: private root over a new view, or a way into another one"},
    {SF_DENY,
     NAMES("mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
	   "fsmount", "fspick", "mount_setattr", "chroot"),
     .why = "the mount tree is the first wall; unmounting would uncover host paths"},
    {SF_DENY,
     NAMES("bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
	   "io_uring_register"),
     .why = "large kernel attack surface with a history of privilege escalations"},
    {SF_DENY, NAMES("keyctl", "add_key", "request_key"),
     .why = "kernel keyrings are not namespaced and hold other users' secrets"},
    {SF_DENY, NAMES("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"),
     .why = "inspecting another process: reads or steals the memory and fds of "
	    "init and siblings; a tracer also rewrites syscalls after the "
	    "listener saw them, so exec records could lie (no strace/gdb inside)"},
    {SF_DENY,
     NAMES("kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	   "reboot", "swapon", "swapoff", "iopl", "ioperm"),
     .why = "the kernel itself and the hardware"},
    {SF_DENY, NAMES("settimeofday", "clock_settime", "clock_adjtime", "adjtimex"),
     .why = "the clock is shared with the host"},
    {SF_DENY,
     NAMES("acct", "quotactl", "quotactl_fd", "syslog", "lookup_dcookie", "vhangup", "sethostname",
	   "setdomainname"),
     .why = "host-wide administration and the kernel log"},
    {SF_DENY, NAMES("open_by_handle_at", "name_to_handle_at"),
     .why = "file handles bypass the mount tree (the 'shocker' escape)"},
};

const size_t sf_profile_len = sizeof(sf_profile) / sizeof(sf_profile[0]);
