/*
 * Least privilege. The daemon, once serving, keeps no capability (bounding set included) under a
 * libseccomp allowlist. The netns helper keeps only CAP_SYS_ADMIN, under a much smaller filter
 * that pins setns, mount and umount2 to the one use each, so the capability buys nothing beyond
 * joining network namespaces and bind-mounting them.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include "proxyd.h"

/* Both processes: memory, signals, threads' basics, exit. */
static const char *const common_syscalls[] = {
	"brk",	   "mmap",	   "munmap",	      "mremap",	      "mprotect",
	"madvise", "rt_sigreturn", "rt_sigprocmask",  "rt_sigaction", "sigaltstack",
	"exit",	   "exit_group",   "restart_syscall", "getpid",	      "gettid",
	"tgkill",  "futex",
};

/* The daemon, besides common_syscalls. */
static const char *const plain_syscalls[] = {
	"getrandom",
	"clock_gettime",
	"clock_getres",
	"gettimeofday",
	"time",
	/* fds and files (state dir, netlog, /proc reads) */
	"read",
	"write",
	"readv",
	"writev",
	"pread64",
	"close",
	"fstat",
	"fstatfs", /* which mount is cgroup2, for a peer's cgroup v2 id (agent.c) */
	"newfstatat",
	"statx",
	"lseek",
	"openat",
	"getdents64",
	"unlinkat",
	"renameat",
	"renameat2",
	"fsync",
	"fdatasync",
	"fchmod",
	"fchown",
	"fcntl",
	"dup",
	"pipe2",
	"splice",
	"mkdirat",
	"umask", /* the agent's socket file (agent.c) */
	/* older spellings glibc may still use on some architectures */
	"open",
	"stat",
	"lstat",
	"unlink",
	"rename",
	"mkdir",
	/* the loop */
	"epoll_wait",
	"epoll_pwait",
	"epoll_ctl",
	"timerfd_settime",
	"timerfd_gettime",
	/* sockets (socket() itself is filtered by family below) */
	"accept4",
	"connect",
	"bind",
	"listen",
	"getsockopt",
	"setsockopt",
	"getsockname",
	"getpeername",
	"sendto",
	"recvfrom",
	"sendmsg",
	"recvmsg",
	"sendmmsg",
	"recvmmsg",
	"shutdown",
};

/* What the netns helper does besides common_syscalls: receive a request, setns, make sockets,
 * bind-mount, reply. */
static const char *const helper_syscalls[] = {
	"clock_gettime", "read",     "write",  "close",	 "openat",
	"open",		 "unlinkat", "unlink", "fstat",	 "newfstatat",
	"recvmsg",	 "sendmsg",  "bind",   "listen", "setsockopt",
};

static int add_rules(scmp_filter_ctx ctx, const char *const *names, size_t n)
{
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i++) {
		int nr = seccomp_syscall_resolve_name(names[i]);

		if (nr == __NR_SCMP_ERROR)
			continue; /* not on this architecture */
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
	}
	return r;
}

static int install_seccomp(bool helper, struct hezo_error **err)
{
	static const int daemon_families[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
	static const int helper_families[] = {AF_INET, AF_INET6};
	const int *families = helper ? helper_families : daemon_families;
	size_t nfamilies =
		helper ? HEZO_ARRAY_SIZE(helper_families) : HEZO_ARRAY_SIZE(daemon_families);
	scmp_filter_ctx ctx;
	int r;

	/* EPERM rather than a kill: an unforeseen call fails one request, not every container. */
	ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	if (!ctx)
		return hezo_error_set(err, ENOMEM, "seccomp_init");
	r = add_rules(ctx, common_syscalls, HEZO_ARRAY_SIZE(common_syscalls));
	if (r == 0)
		r = helper ? add_rules(ctx, helper_syscalls, HEZO_ARRAY_SIZE(helper_syscalls))
			   : add_rules(ctx, plain_syscalls, HEZO_ARRAY_SIZE(plain_syscalls));
	for (size_t i = 0; i < nfamilies && r == 0; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i]));
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_EQ, NS_GET_NSTYPE));
	if (helper) {
		/* What CAP_SYS_ADMIN is kept for, and nothing else it would allow. */
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(setns), 1,
					     SCMP_A1(SCMP_CMP_EQ, CLONE_NEWNET));
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mount), 2,
					     SCMP_A2(SCMP_CMP_EQ, 0),
					     SCMP_A3(SCMP_CMP_EQ, MS_BIND));
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(umount2), 1,
					     SCMP_A1(SCMP_CMP_EQ, MNT_DETACH));
		/* sock_diag only: whose a connection is (netns.c, peer.c). */
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2,
					     SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
					     SCMP_A2(SCMP_CMP_EQ, NETLINK_SOCK_DIAG));
	}
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r < 0)
		return hezo_error_set_errno(err, -r, "seccomp");
	return 0;
}

static int keep_only(const cap_value_t *keep, int nkeep, struct hezo_error **err)
{
	cap_t caps;
	int r;

	/* The bounding set first (needs CAP_SETPCAP, which goes in the next step). */
	for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++) {
		bool kept = false;

		for (int i = 0; i < nkeep; i++)
			kept = kept || keep[i] == c;
		if (kept)
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return hezo_error_set_errno(
				err, errno, "dropping capability %d from the bounding set", c);
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return hezo_error_set_errno(err, errno, "clearing ambient capabilities");
	caps = cap_init();
	if (!caps)
		return hezo_error_set_errno(err, errno, "cap_init");
	if ((nkeep > 0 && (cap_set_flag(caps, CAP_EFFECTIVE, nkeep, keep, CAP_SET) < 0 ||
			   cap_set_flag(caps, CAP_PERMITTED, nkeep, keep, CAP_SET) < 0)) ||
	    cap_set_proc(caps) < 0) {
		r = hezo_error_set_errno(err, errno, "cap_set_proc");
		cap_free(caps);
		return r;
	}
	cap_free(caps);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return hezo_error_set_errno(err, errno, "no_new_privs");
	return 0;
}

int pd_drop_privileges(bool seccomp, struct hezo_error **err)
{
	int r = keep_only(NULL, 0, err);

	if (r < 0)
		return r;
	return seccomp ? install_seccomp(false, err) : 0;
}

int pd_drop_privileges_helper(struct hezo_error **err)
{
	static const cap_value_t keep[] = {CAP_SYS_ADMIN};
	int r = keep_only(keep, 1, err);

	if (r < 0)
		return r;
	return install_seccomp(true, err);
}
