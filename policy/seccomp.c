/* Seccomp profiles: hezo's built-in allow-list profile, and checking of an admin's profile file
 * against what this libseccomp knows. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>

#include "hezo-file.h"
#include "policy-internal.h"

#define PROFILE_MAX_BYTES (1024 * 1024)

/*
 * What ordinary programs (shells, coreutils, language runtimes, servers) call. Left out on
 * purpose: anything that mounts or pivots, loads code into the kernel (modules, bpf, kexec),
 * inspects or writes other processes (ptrace, process_vm_*, kcmp, pidfd_getfd), changes the
 * clock, keys, swap, quotas, accounting, the console or the namespace set (setns, unshare),
 * handles by file id (open_by_handle_at), io_uring, and the new mount API. Names for other
 * architectures of the same family (i386 on x86_64) are listed so compat binaries work.
 */
static const char *const allowed_syscalls[] = {
	"_llseek",
	"_newselect",
	"accept",
	"accept4",
	"access",
	"alarm",
	"arch_prctl",
	"arm_fadvise64_64",
	"arm_sync_file_range",
	"bind",
	"breakpoint",
	"brk",
	"cacheflush",
	"capget",
	"capset",
	"chdir",
	"chmod",
	"chown",
	"chown32",
	"clock_getres",
	"clock_getres_time64",
	"clock_gettime",
	"clock_gettime64",
	"clock_nanosleep",
	"clock_nanosleep_time64",
	"close",
	"close_range",
	"connect",
	"copy_file_range",
	"creat",
	"dup",
	"dup2",
	"dup3",
	"epoll_create",
	"epoll_create1",
	"epoll_ctl",
	"epoll_ctl_old",
	"epoll_pwait",
	"epoll_pwait2",
	"epoll_wait",
	"epoll_wait_old",
	"eventfd",
	"eventfd2",
	"execve",
	"execveat",
	"exit",
	"exit_group",
	"faccessat",
	"faccessat2",
	"fadvise64",
	"fadvise64_64",
	"fallocate",
	"fchdir",
	"fchmod",
	"fchmodat",
	"fchmodat2",
	"fchown",
	"fchown32",
	"fchownat",
	"fcntl",
	"fcntl64",
	"fdatasync",
	"fgetxattr",
	"flistxattr",
	"flock",
	"fork",
	"fremovexattr",
	"fsetxattr",
	"fstat",
	"fstat64",
	"fstatat64",
	"fstatfs",
	"fstatfs64",
	"fsync",
	"ftruncate",
	"ftruncate64",
	"futex",
	"futex_time64",
	"futex_waitv",
	"futimesat",
	"get_mempolicy",
	"get_robust_list",
	"get_thread_area",
	"getcpu",
	"getcwd",
	"getdents",
	"getdents64",
	"getegid",
	"getegid32",
	"geteuid",
	"geteuid32",
	"getgid",
	"getgid32",
	"getgroups",
	"getgroups32",
	"getitimer",
	"getpeername",
	"getpgid",
	"getpgrp",
	"getpid",
	"getppid",
	"getpriority",
	"getrandom",
	"getresgid",
	"getresgid32",
	"getresuid",
	"getresuid32",
	"getrlimit",
	"getrusage",
	"getsid",
	"getsockname",
	"getsockopt",
	"gettid",
	"gettimeofday",
	"getuid",
	"getuid32",
	"getxattr",
	"inotify_add_watch",
	"inotify_init",
	"inotify_init1",
	"inotify_rm_watch",
	"io_cancel",
	"io_destroy",
	"io_getevents",
	"io_pgetevents",
	"io_pgetevents_time64",
	"io_setup",
	"io_submit",
	"ioctl",
	"ioprio_get",
	"ioprio_set",
	"ipc",
	"kill",
	"landlock_add_rule",
	"landlock_create_ruleset",
	"landlock_restrict_self",
	"lchown",
	"lchown32",
	"lgetxattr",
	"link",
	"linkat",
	"listen",
	"listxattr",
	"llistxattr",
	"lremovexattr",
	"lseek",
	"lsetxattr",
	"lstat",
	"lstat64",
	"madvise",
	"membarrier",
	"memfd_create",
	"mincore",
	"mkdir",
	"mkdirat",
	"mknod",
	"mknodat",
	"mlock",
	"mlock2",
	"mlockall",
	"mmap",
	"mmap2",
	"mprotect",
	"mq_getsetattr",
	"mq_notify",
	"mq_open",
	"mq_timedreceive",
	"mq_timedreceive_time64",
	"mq_timedsend",
	"mq_timedsend_time64",
	"mq_unlink",
	"mremap",
	"msgctl",
	"msgget",
	"msgrcv",
	"msgsnd",
	"msync",
	"munlock",
	"munlockall",
	"munmap",
	"nanosleep",
	"newfstatat",
	"nice",
	"open",
	"openat",
	"pause",
	"pidfd_open",
	"pidfd_send_signal",
	"pipe",
	"pipe2",
	"pkey_alloc",
	"pkey_free",
	"pkey_mprotect",
	"poll",
	"ppoll",
	"ppoll_time64",
	"prctl",
	"pread64",
	"preadv",
	"preadv2",
	"prlimit64",
	"process_mrelease",
	"pselect6",
	"pselect6_time64",
	"pwrite64",
	"pwritev",
	"pwritev2",
	"read",
	"readahead",
	"readlink",
	"readlinkat",
	"readv",
	"recv",
	"recvfrom",
	"recvmmsg",
	"recvmmsg_time64",
	"recvmsg",
	"remap_file_pages",
	"removexattr",
	"rename",
	"renameat",
	"renameat2",
	"restart_syscall",
	"rmdir",
	"rseq",
	"rt_sigaction",
	"rt_sigpending",
	"rt_sigprocmask",
	"rt_sigqueueinfo",
	"rt_sigreturn",
	"rt_sigsuspend",
	"rt_sigtimedwait",
	"rt_sigtimedwait_time64",
	"rt_tgsigqueueinfo",
	"sched_get_priority_max",
	"sched_get_priority_min",
	"sched_getaffinity",
	"sched_getattr",
	"sched_getparam",
	"sched_getscheduler",
	"sched_rr_get_interval",
	"sched_rr_get_interval_time64",
	"sched_setaffinity",
	"sched_setattr",
	"sched_setparam",
	"sched_setscheduler",
	"sched_yield",
	"seccomp",
	"select",
	"semctl",
	"semget",
	"semop",
	"semtimedop",
	"semtimedop_time64",
	"send",
	"sendfile",
	"sendfile64",
	"sendmmsg",
	"sendmsg",
	"sendto",
	"set_robust_list",
	"set_thread_area",
	"set_tid_address",
	"set_tls",
	"setfsgid",
	"setfsgid32",
	"setfsuid",
	"setfsuid32",
	"setgid",
	"setgid32",
	"setgroups",
	"setgroups32",
	"setitimer",
	"setpgid",
	"setpriority",
	"setregid",
	"setregid32",
	"setresgid",
	"setresgid32",
	"setresuid",
	"setresuid32",
	"setreuid",
	"setreuid32",
	"setrlimit",
	"setsid",
	"setsockopt",
	"setuid",
	"setuid32",
	"setxattr",
	"shmat",
	"shmctl",
	"shmdt",
	"shmget",
	"shutdown",
	"sigaction",
	"sigaltstack",
	"signal",
	"signalfd",
	"signalfd4",
	"sigpending",
	"sigprocmask",
	"sigreturn",
	"sigsuspend",
	"socket",
	"socketcall",
	"socketpair",
	"splice",
	"stat",
	"stat64",
	"statfs",
	"statfs64",
	"statx",
	"symlink",
	"symlinkat",
	"sync",
	"sync_file_range",
	"sync_file_range2",
	"syncfs",
	"sysinfo",
	"tee",
	"tgkill",
	"time",
	"timer_create",
	"timer_delete",
	"timer_getoverrun",
	"timer_gettime",
	"timer_gettime64",
	"timer_settime",
	"timer_settime64",
	"timerfd_create",
	"timerfd_gettime",
	"timerfd_gettime64",
	"timerfd_settime",
	"timerfd_settime64",
	"times",
	"tkill",
	"truncate",
	"truncate64",
	"ugetrlimit",
	"umask",
	"uname",
	"unlink",
	"unlinkat",
	"utime",
	"utimensat",
	"utimensat_time64",
	"utimes",
	"vfork",
	"vmsplice",
	"wait4",
	"waitid",
	"waitpid",
	"write",
	"writev",
};

/* personality(2) values that only pick an ABI flavour: Linux, 32-bit, uname26, and the query. */
static const uint64_t safe_personalities[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};

#define NAMESPACE_CLONE_FLAGS 0x7e020000ULL /* CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET} */

#if defined(__x86_64__) || defined(__i386__)
/*
 * No x32: its syscalls then take the default action (a tighter box), and each extra architecture
 * makes the backend's libseccomp build the whole allow-list again (x32 was a third of runc's
 * filter-building time per container: docs/performance.md).
 */
static const char *const default_arches[] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86"};
#elif defined(__aarch64__) || defined(__arm__)
static const char *const default_arches[] = {"SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"};
#else
/* Elsewhere libseccomp's native architecture alone (runc's behaviour for an empty list). */
static const char *const default_arches[] = {NULL};
#endif

static const char *const actions[] = {
	"SCMP_ACT_KILL",  "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD",
	"SCMP_ACT_TRAP",  "SCMP_ACT_ERRNO",	   "SCMP_ACT_TRACE",
	"SCMP_ACT_ALLOW", "SCMP_ACT_LOG",	   "SCMP_ACT_NOTIFY",
};

static const char *const operators[] = {
	"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE",	    "SCMP_CMP_EQ",
	"SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ",
};

static const char *const filter_flags[] = {
	"SECCOMP_FILTER_FLAG_TSYNC",
	"SECCOMP_FILTER_FLAG_LOG",
	"SECCOMP_FILTER_FLAG_SPEC_ALLOW",
	"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV",
};

static bool in_list(const char *const *list, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], s) == 0)
			return true;
	return false;
}

/* "SCMP_ARCH_X86_64" -> libseccomp's token, 0 if unknown. */
static uint32_t arch_token(const char *oci)
{
	char lower[32];
	size_t n;

	if (strncmp(oci, "SCMP_ARCH_", 10) != 0)
		return 0;
	oci += 10;
	n = strlen(oci);
	if (n == 0 || n >= sizeof(lower))
		return 0;
	for (size_t i = 0; i <= n; i++)
		lower[i] = (char)tolower((unsigned char)oci[i]);
	return seccomp_arch_resolve_name(lower);
}

static bool syscall_known(const char *name, const uint32_t *arches, size_t narches)
{
	if (narches == 0)
		return seccomp_syscall_resolve_name(name) != __NR_SCMP_ERROR;
	for (size_t i = 0; i < narches; i++)
		if (seccomp_syscall_resolve_name_arch(arches[i], name) != __NR_SCMP_ERROR)
			return true;
	return false;
}

static struct hezo_json *rule(const char *const *names, size_t n, const char *action, int errno_ret)
{
	_cleanup_json_ struct hezo_json *r = hezo_json_new_object();
	struct hezo_json *a = r ? hezo_json_ensure_array(r, "names") : NULL;

	if (!a)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (hezo_json_append(a, hezo_json_new_string(names[i])) < 0)
			return NULL;
	if (hezo_json_set(r, "action", hezo_json_new_string(action)) < 0)
		return NULL;
	if (errno_ret >= 0 && hezo_json_set(r, "errnoRet", hezo_json_new_int(errno_ret)) < 0)
		return NULL;
	return TAKE_PTR(r);
}

static struct hezo_json *arg_cmp(unsigned index, uint64_t value, uint64_t value2, const char *op)
{
	_cleanup_json_ struct hezo_json *a = hezo_json_new_object();

	if (!a || hezo_json_set(a, "index", hezo_json_new_uint(index)) < 0 ||
	    hezo_json_set(a, "value", hezo_json_new_uint(value)) < 0 ||
	    hezo_json_set(a, "valueTwo", hezo_json_new_uint(value2)) < 0 ||
	    hezo_json_set(a, "op", hezo_json_new_string(op)) < 0)
		return NULL;
	return TAKE_PTR(a);
}

struct hezo_json *hezo_policy_seccomp_default(void)
{
	_cleanup_json_ struct hezo_json *prof = hezo_json_new_object();
	_cleanup_free_ const char **names = NULL;
	struct hezo_json *arches, *syscalls, *r;
	uint32_t tokens[HEZO_ARRAY_SIZE(default_arches)];
	size_t ntokens = 0, nnames = 0;
	static const char *const clone_name[] = {"clone"};
	static const char *const enosys_names[] = {"clone3", "openat2"};
	static const char *const personality_name[] = {"personality"};

	if (!prof)
		return NULL;
	if (hezo_json_set(prof, "defaultAction", hezo_json_new_string("SCMP_ACT_ERRNO")) < 0 ||
	    hezo_json_set(prof, "defaultErrnoRet", hezo_json_new_int(EPERM)) < 0)
		return NULL;
	arches = hezo_json_ensure_array(prof, "architectures");
	if (!arches)
		return NULL;
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(default_arches); i++) {
		uint32_t t;
		if (!default_arches[i])
			continue;
		t = arch_token(default_arches[i]);
		if (t == 0)
			continue;
		tokens[ntokens++] = t;
		if (hezo_json_append(arches, hezo_json_new_string(default_arches[i])) < 0)
			return NULL;
	}
	names = calloc(HEZO_ARRAY_SIZE(allowed_syscalls), sizeof(*names));
	if (!names)
		return NULL;
	/* A name no listed architecture has would only make runc warn; leave it out. */
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(allowed_syscalls); i++)
		if (syscall_known(allowed_syscalls[i], tokens, ntokens))
			names[nnames++] = allowed_syscalls[i];
	syscalls = hezo_json_ensure_array(prof, "syscalls");
	if (!syscalls || hezo_json_append(syscalls, rule(names, nnames, "SCMP_ACT_ALLOW", -1)) < 0)
		return NULL;

	/* clone without any CLONE_NEW* flag: threads and fork, never a new namespace. */
	r = rule(clone_name, 1, "SCMP_ACT_ALLOW", -1);
	if (!r || hezo_json_append(syscalls, r) < 0)
		return NULL;
	if (hezo_json_set(r, "args", hezo_json_new_array()) < 0 ||
	    hezo_json_append(hezo_json_get(r, "args"),
			     arg_cmp(0, NAMESPACE_CLONE_FLAGS, 0, "SCMP_CMP_MASKED_EQ")) < 0)
		return NULL;

	/*
	 * clone3 takes its flags, and openat2 its mode, in memory a filter cannot read: ENOSYS
	 * makes libc use clone and openat, whose arguments it can (seccomp-setid.c).
	 */
	if (hezo_json_append(syscalls, rule(enosys_names, HEZO_ARRAY_SIZE(enosys_names),
					    "SCMP_ACT_ERRNO", ENOSYS)) < 0)
		return NULL;

	/* One rule per value: the rules of one syscall are ORed, the args of one rule ANDed. */
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(safe_personalities); i++) {
		r = rule(personality_name, 1, "SCMP_ACT_ALLOW", -1);
		if (!r || hezo_json_append(syscalls, r) < 0)
			return NULL;
		if (hezo_json_set(r, "args", hezo_json_new_array()) < 0 ||
		    hezo_json_append(hezo_json_get(r, "args"),
				     arg_cmp(0, safe_personalities[i], 0, "SCMP_CMP_EQ")) < 0)
			return NULL;
	}
	return TAKE_PTR(prof);
}

/* ---- checking an admin's profile ---- */

static int check_string_in(const struct hezo_json *v, const char *field, const char *const *list,
			   size_t n, struct hezo_error **err)
{
	char q[256];

	if (v->type != HEZO_JSON_STRING)
		return hezo_policy_field_err(err, field, "expected a string, got %s",
					     hezo_json_type_name(v->type));
	if (!in_list(list, n, v->str)) {
		hezo_policy_quote(q, sizeof(q), v->str);
		return hezo_policy_field_err(err, field, "%s is not known", q);
	}
	return 0;
}

static int check_uint(const struct hezo_json *v, const char *field, uint64_t max,
		      struct hezo_error **err)
{
	uint64_t n;

	if (v->type != HEZO_JSON_NUMBER || hezo_json_get_uint64(v, &n) < 0 || n > max)
		return hezo_policy_field_err(err, field, "expected a whole number up to %llu",
					     (unsigned long long)max);
	return 0;
}

static int check_args(const struct hezo_json *args, const char *field, struct hezo_error **err)
{
	int r;

	if (args->type != HEZO_JSON_ARRAY)
		return hezo_policy_field_err(err, field, "expected a list");
	HEZO_JSON_FOREACH (i, args) {
		const struct hezo_json *a = args->items[i];
		bool has_op = false, has_index = false;
		char f[192];

		snprintf(f, sizeof(f), "%s[%zu]", field, i);
		if (a->type != HEZO_JSON_OBJECT)
			return hezo_policy_field_err(err, f, "expected an object");
		HEZO_JSON_FOREACH (j, a) {
			char g[256];
			snprintf(g, sizeof(g), "%s.%s", f, a->keys[j]);
			if (strcmp(a->keys[j], "index") == 0) {
				has_index = true;
				r = check_uint(a->items[j], g, 5, err);
			} else if (strcmp(a->keys[j], "value") == 0 ||
				   strcmp(a->keys[j], "valueTwo") == 0) {
				r = check_uint(a->items[j], g, UINT64_MAX, err);
			} else if (strcmp(a->keys[j], "op") == 0) {
				has_op = true;
				r = check_string_in(a->items[j], g, operators,
						    HEZO_ARRAY_SIZE(operators), err);
			} else {
				r = hezo_policy_field_err(err, f, "unknown key \"%s\"", a->keys[j]);
			}
			if (r < 0)
				return r;
		}
		if (!has_index || !has_op)
			return hezo_policy_field_err(err, f, "needs index and op");
	}
	return 0;
}

/* Architectures a profile may list that are looked at (more are checked, not used). */
#define SECCOMP_TOKENS_MAX 64

/*
 * Check a profile's keys and values; *unknown: how many of its names no listed architecture
 * knows (runc could not install them either), which the checked profile goes without.
 */
static int check_profile(const struct hezo_json *profile, uint32_t tokens[SECCOMP_TOKENS_MAX],
			 size_t *ntok, size_t *unknown, struct hezo_error **err)
{
	size_t ntokens = 0;
	const struct hezo_json *syscalls;
	bool has_default = false;
	int r;

	if (!profile || profile->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "expected a JSON object (an OCI linux.seccomp)");
	HEZO_JSON_FOREACH (i, profile) {
		const char *k = profile->keys[i];
		const struct hezo_json *v = profile->items[i];

		if (strcmp(k, "defaultAction") == 0) {
			has_default = true;
			r = check_string_in(v, k, actions, HEZO_ARRAY_SIZE(actions), err);
		} else if (strcmp(k, "defaultErrnoRet") == 0) {
			r = check_uint(v, k, 4095, err);
		} else if (strcmp(k, "architectures") == 0) {
			r = v->type == HEZO_JSON_ARRAY
				    ? 0
				    : hezo_policy_field_err(err, k, "expected a list");
			HEZO_JSON_FOREACH (j, v) {
				char f[64], q[256];
				uint32_t t;
				snprintf(f, sizeof(f), "architectures[%zu]", j);
				if (v->items[j]->type != HEZO_JSON_STRING)
					return hezo_policy_field_err(err, f, "expected a string");
				t = arch_token(v->items[j]->str);
				if (t == 0) {
					hezo_policy_quote(q, sizeof(q), v->items[j]->str);
					return hezo_policy_field_err(
						err, f, "%s is not an architecture", q);
				}
				if (ntokens < SECCOMP_TOKENS_MAX)
					tokens[ntokens++] = t;
			}
		} else if (strcmp(k, "flags") == 0) {
			r = v->type == HEZO_JSON_ARRAY
				    ? 0
				    : hezo_policy_field_err(err, k, "expected a list");
			HEZO_JSON_FOREACH (j, v) {
				char f[64];
				snprintf(f, sizeof(f), "flags[%zu]", j);
				r = check_string_in(v->items[j], f, filter_flags,
						    HEZO_ARRAY_SIZE(filter_flags), err);
				if (r < 0)
					return r;
			}
		} else if (strcmp(k, "listenerPath") == 0 || strcmp(k, "listenerMetadata") == 0) {
			r = v->type == HEZO_JSON_STRING
				    ? 0
				    : hezo_policy_field_err(err, k, "expected a string");
		} else if (strcmp(k, "syscalls") == 0) {
			r = v->type == HEZO_JSON_ARRAY
				    ? 0
				    : hezo_policy_field_err(err, k, "expected a list");
		} else {
			r = hezo_policy_field_err(err, k, "unknown key");
		}
		if (r < 0)
			return r;
	}
	if (!has_default)
		return hezo_policy_field_err(err, "defaultAction", "missing");
	*ntok = ntokens;
	*unknown = 0;

	syscalls = hezo_json_get(profile, "syscalls");
	HEZO_JSON_FOREACH (i, syscalls) {
		const struct hezo_json *s = syscalls->items[i];
		const struct hezo_json *names = NULL;
		char f[64];

		snprintf(f, sizeof(f), "syscalls[%zu]", i);
		if (s->type != HEZO_JSON_OBJECT)
			return hezo_policy_field_err(err, f, "expected an object");
		HEZO_JSON_FOREACH (j, s) {
			const char *k = s->keys[j];
			char g[128];

			snprintf(g, sizeof(g), "%s.%s", f, k);
			if (strcmp(k, "names") == 0) {
				names = s->items[j];
				r = names->type == HEZO_JSON_ARRAY && names->len > 0
					    ? 0
					    : hezo_policy_field_err(err, g,
								    "expected a non-empty list");
			} else if (strcmp(k, "action") == 0) {
				r = check_string_in(s->items[j], g, actions,
						    HEZO_ARRAY_SIZE(actions), err);
			} else if (strcmp(k, "errnoRet") == 0) {
				r = check_uint(s->items[j], g, 4095, err);
			} else if (strcmp(k, "args") == 0) {
				r = check_args(s->items[j], g, err);
			} else if (strcmp(k, "comment") == 0) {
				r = 0;
			} else {
				r = hezo_policy_field_err(err, f, "unknown key \"%s\"", k);
			}
			if (r < 0)
				return r;
		}
		if (!names || !hezo_json_get(s, "action"))
			return hezo_policy_field_err(err, f, "needs names and action");
		HEZO_JSON_FOREACH (j, names) {
			char g[128];
			if (names->items[j]->type != HEZO_JSON_STRING) {
				snprintf(g, sizeof(g), "%s.names[%zu]", f, j);
				return hezo_policy_field_err(err, g, "expected a string");
			}
			if (!syscall_known(names->items[j]->str, tokens, ntokens))
				(*unknown)++;
		}
	}
	return 0;
}

/* A checked profile's copy without the names check_profile counted as unknown. */
static struct hezo_json *pruned(const struct hezo_json *profile, const uint32_t *tokens,
				size_t ntokens)
{
	_cleanup_json_ struct hezo_json *copy = hezo_json_clone(profile);
	struct hezo_json *syscalls = copy ? hezo_json_get(copy, "syscalls") : NULL;

	for (size_t i = 0; syscalls && i < syscalls->len;) {
		struct hezo_json *names = hezo_json_get(syscalls->items[i], "names");

		for (size_t j = 0; j < names->len;) {
			if (!syscall_known(names->items[j]->str, tokens, ntokens))
				hezo_json_remove_at(names, j);
			else
				j++;
		}
		if (names->len == 0)
			hezo_json_remove_at(syscalls, i);
		else
			i++;
	}
	return TAKE_PTR(copy);
}

int hezo_policy_seccomp_check_view(const struct hezo_json *profile, const struct hezo_json **view,
				   struct hezo_json **copy, struct hezo_error **err)
{
	uint32_t tokens[SECCOMP_TOKENS_MAX];
	size_t ntokens = 0, unknown = 0;
	int r;

	*view = NULL;
	*copy = NULL;
	r = check_profile(profile, tokens, &ntokens, &unknown, err);
	if (r < 0)
		return r;
	if (unknown == 0) {
		*view = profile;
		return 0;
	}
	*copy = pruned(profile, tokens, ntokens);
	*view = *copy;
	return *copy ? 0 : hezo_error_set(err, ENOMEM, "out of memory");
}

int hezo_policy_seccomp_check(const struct hezo_json *profile, struct hezo_json **out,
			      struct hezo_error **err)
{
	const struct hezo_json *view;
	struct hezo_json *copy;
	int r;

	r = hezo_policy_seccomp_check_view(profile, &view, &copy, err);
	if (r < 0)
		return r;
	*out = copy ?: hezo_json_clone(profile);
	return *out ? 0 : hezo_error_set(err, ENOMEM, "out of memory");
}

int hezo_policy_seccomp_load(const char *path, struct hezo_json **out, struct hezo_error **err)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_json_ struct hezo_json *doc = NULL;
	size_t len = 0;
	int r;

	r = hezo_read_file_at(AT_FDCWD, path, PROFILE_MAX_BYTES, &buf, &len, err);
	if (r < 0)
		return r;
	r = hezo_json_parse(buf, len, &doc, err);
	if (r < 0)
		return hezo_error_prefix(err, "%s", path);
	r = hezo_policy_seccomp_check(doc, out, err);
	if (r < 0)
		return hezo_error_prefix(err, "%s", path);
	return 0;
}
