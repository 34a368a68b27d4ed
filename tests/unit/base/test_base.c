/*
 * Unit tests for base/: error objects, bounded reads, atomic replacement, directories, log line
 * format, the monotonic clock and spawn-and-capture.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "hezo-error.h"
#include "hezo-fdpass.h"
#include "hezo-file.h"
#include "hezo-log.h"
#include "hezo-netns.h"
#include "hezo-proc.h"
#include "hezo-str.h"

static char tmpdir[64];

static int setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/hezo-base-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_error_prefix(void **state)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	int r;

	r = hezo_error_set(&err, ENOENT, "field %s", "x");
	assert_int_equal(r, -ENOENT);
	r = hezo_error_prefix(&err, "mounts[%d]", 2);
	assert_int_equal(r, -ENOENT);
	r = hezo_error_prefix(&err, "policy %s", "/p.json");
	assert_string_equal(err->msg, "policy /p.json: mounts[2]: field x");
	assert_int_equal(err->errnum, ENOENT);

	/* The first error wins: a second set does not overwrite the root cause. */
	r = hezo_error_set(&err, EPERM, "later");
	assert_int_equal(r, -EPERM);
	assert_string_equal(err->msg, "policy /p.json: mounts[2]: field x");
}

static void test_error_errno(void **state)
{
	_cleanup_error_ struct hezo_error *err = NULL;

	hezo_error_set_errno(&err, EACCES, "open %s", "f");
	assert_string_equal(err->msg, "open f: Permission denied");
	/* errnum 0 is coerced to EINVAL, never a "success" error. */
	{
		_cleanup_error_ struct hezo_error *e2 = NULL;
		assert_int_equal(hezo_error_set(&e2, 0, "zero"), -EINVAL);
	}
	/* NULL err is allowed: only the return value. */
	assert_int_equal(hezo_error_set(NULL, EIO, "x"), -EIO);
}

static void test_read_limit(void **state)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *buf = NULL;
	char path[128];
	size_t len = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/f", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(hezo_write_all(fd, "0123456789", 10), 0);
	close(fd);

	assert_int_equal(hezo_read_file_at(AT_FDCWD, path, 10, &buf, &len, &err), 0);
	assert_int_equal(len, 10);
	assert_string_equal(buf, "0123456789");

	assert_int_equal(hezo_read_file_at(AT_FDCWD, path, 9, &buf, &len, &err), -EFBIG);
	assert_non_null(strstr(err->msg, "larger than 9 bytes"));
}

typedef int (*write_fn)(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
			struct hezo_error **err);

/* What both atomic writers promise: a replacement keeps the existing file's mode whatever mode is
 * asked for. */
static void check_replace(write_fn write, const char *name)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int dfd = -1;
	struct stat st;
	size_t len;

	dfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(write(dfd, name, "old", 3, 0640, &err), 0);
	assert_int_equal(fstatat(dfd, name, &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(write(dfd, name, "newer", 5, 0600, &err), 0);
	assert_int_equal(fstatat(dfd, name, &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(hezo_read_file_at(dfd, name, 100, &buf, &len, &err), 0);
	assert_string_equal(buf, "newer");
}

/* ... and a write that fails (a directory named like the target: the rename fails) reports the
 * target by name and leaves no temporary file. */
static void check_fails_clean(write_fn write, const char *dirname)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_close_ int dfd = -1;
	char cmd[256];

	dfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(mkdirat(dfd, dirname, 0700), 0);
	assert_true(write(dfd, dirname, "x", 1, 0600, &err) < 0);
	assert_non_null(err);
	assert_non_null(strstr(err->msg, dirname));
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s' | grep hezo-)\"", tmpdir);
	assert_int_equal(system(cmd), 0);
}

/* hezo_write_private_file_at in write_fn's shape (its mode is always 0600). */
static int write_private_any_mode(int dirfd, const char *name, const void *data, size_t len,
				  mode_t mode, struct hezo_error **err)
{
	(void)mode;
	return hezo_write_private_file_at(dirfd, name, data, len, err);
}

static void test_atomic_write(void **state)
{
	check_replace(hezo_write_file_atomic_at, "c.json");
}

/* The state-file variant skips only the fsyncs. */
static void test_state_write(void **state)
{
	check_replace(hezo_write_state_file_at, "s.json");
}

static void test_atomic_write_fails_clean(void **state)
{
	check_fails_clean(hezo_write_file_atomic_at, "d");
	check_fails_clean(hezo_write_state_file_at, "sd");
}

/* The private writer: 0600 and never the old file's mode, and a symlink at the name is replaced,
 * not followed. */
static void test_private_write(void **state)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int dfd = -1;
	struct stat st;
	size_t len;

	dfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(hezo_write_file_atomic_at(dfd, "p.target", "target", 6, 0644, &err), 0);
	assert_int_equal(hezo_write_file_atomic_at(dfd, "p.old", "old", 3, 0666, &err), 0);
	assert_int_equal(fchmodat(dfd, "p.old", 0666, 0), 0);
	assert_int_equal(hezo_write_private_file_at(dfd, "p.old", "new", 3, &err), 0);
	assert_int_equal(fstatat(dfd, "p.old", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(symlinkat("p.target", dfd, "p.link"), 0);
	assert_int_equal(hezo_write_private_file_at(dfd, "p.link", "mine", 4, &err), 0);
	assert_int_equal(fstatat(dfd, "p.link", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(hezo_read_file_at(dfd, "p.target", 100, &buf, &len, &err), 0);
	assert_string_equal(buf, "target");
	assert_int_equal(fstatat(dfd, "p.target", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	check_fails_clean(write_private_any_mode, "pd");
}

static void test_clean_stale_temps(void **state)
{
	_cleanup_close_ int dfd = -1;
	char live[64];
	struct stat st;

	dfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	/* pid 0x7ffffff0 does not run; our own pid does. */
	snprintf(live, sizeof(live), ".c.json.hezo-%d-7", (int)getpid());
	assert_int_equal(hezo_write_all(openat(dfd, ".c.json.hezo-2147483632-1",
					       O_WRONLY | O_CREAT | O_CLOEXEC, 0600),
					"x", 1),
			 0);
	close(openat(dfd, live, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	close(openat(dfd, ".other.hezo-2147483632-1", O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	assert_int_equal(hezo_clean_stale_temps_at(dfd, "c.json"), 1);
	assert_int_equal(fstatat(dfd, ".c.json.hezo-2147483632-1", &st, 0), -1);
	assert_int_equal(fstatat(dfd, live, &st, 0), 0);
	assert_int_equal(fstatat(dfd, ".other.hezo-2147483632-1", &st, 0), 0);
}

static void test_log_json(void **state)
{
	struct timespec ts = {.tv_sec = 1700000000, .tv_nsec = 5};
	char buf[512];
	size_t n;

	n = hezo_log_format_json(buf, sizeof(buf), "error", "hezo-shim: bad \"x\"\n\x01", &ts);
	assert_int_equal(n, strlen(buf));
	assert_string_equal(buf,
			    "{\"level\":\"error\",\"msg\":\"hezo-shim: bad \\\"x\\\"\\n\\u0001\","
			    "\"time\":\"2023-11-14T22:13:20.000000005Z\"}\n");
}

static void test_log_json_truncates(void **state)
{
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 0};
	char big[4096], buf[256];
	size_t n;

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	n = hezo_log_format_json(buf, sizeof(buf), "error", big, &ts);
	/* Still one complete line with the time, even when the message is cut. */
	assert_true(n > 0 && n < sizeof(buf));
	assert_int_equal(buf[n - 1], '\n');
	assert_non_null(strstr(buf, "\"time\":\"1970-01-01T00:00:00.000000000Z\"}"));
}

struct task_count {
	pid_t want, want_tid; /* want_tid 0: any task of want */
	int seen, other;
};

static int count_task(pid_t pid, pid_t tid, void *data)
{
	struct task_count *c = data;

	if (pid == c->want && (!c->want_tid || tid == c->want_tid))
		c->seen++;
	else
		c->other++;
	return 0;
}

/* Any kind, not just net: a child in an IPC namespace of its own is found, and gone once reaped. */
static void test_ns_in_use(void **state)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_close_ int fd = -1;
	struct task_count c = {0};
	int pipefd[2];
	char path[64], ok = 0;
	bool used = false;
	pid_t pid;

	if (geteuid() != 0)
		skip();
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char y = unshare(CLONE_NEWIPC) == 0 ? 'y' : 'n';
		if (write(pipefd[1], &y, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &ok, 1), 1);
	close(pipefd[0]);
	assert_int_equal(ok, 'y');
	snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(hezo_ns_in_use(fd, "ipc", &used, &err), 0);
	assert_true(used);
	c.want = pid;
	assert_int_equal(hezo_ns_foreach_task(fd, "ipc", count_task, &c, &err), 0);
	assert_int_equal(c.seen, 1);
	assert_int_equal(c.other, 0);
	/* The same process is in the host's network namespace, not in this one. */
	assert_int_equal(hezo_ns_in_use(fd, "net", &used, &err), 0);
	assert_false(used);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(hezo_ns_in_use(fd, "ipc", &used, &err), 0);
	assert_false(used);
	assert_true(hezo_ns_in_use(fd, "../x", &used, &err) < 0);
	assert_true(used);
}

/* A child's second thread unshares an IPC namespace; the child's leader stays in the host's. */
static int thread_pipe[2];

static void *unshare_thread(void *arg)
{
	pid_t tid = unshare(CLONE_NEWIPC) == 0 ? gettid() : 0;

	if (write(thread_pipe[1], &tid, sizeof(tid)) != sizeof(tid))
		_exit(1);
	pause();
	return arg;
}

/*
 * A namespace only a thread is in is in use, and the scan names that thread (red team rt12d F4:
 * IPC, network, UTS, cgroup and time namespaces are per thread).
 */
/*
 * Out of descriptors while the tasks are listed: the scan fails, it never counts the processes it
 * could not look at as gone (red team pass 6, F2: EMFILE made a host daemon's netns look empty).
 */
static void test_ns_scan_out_of_fds(void **state)
{
	pid_t pid = fork();
	int status;

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0) {
		struct hezo_error *err = NULL;
		struct rlimit rl;
		bool used = false;
		int nsfd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), lowest, r;

		lowest = nsfd >= 0 ? fcntl(nsfd, F_DUPFD_CLOEXEC, 0) : -1;
		if (nsfd < 0 || lowest < 0)
			_exit(10);
		close(lowest);
		/* /proc itself opens at `lowest`; every PID/task after it is EMFILE. */
		rl.rlim_cur = rl.rlim_max = (rlim_t)lowest + 1;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			_exit(11);
		r = hezo_ns_in_use(nsfd, "net", &used, &err);
		/* This very process is in the namespace: "unused" would be the fail-open answer. */
		_exit(r < 0 && err && strstr(err->msg, "Too many open files") ? 0 : used ? 12 : 13);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_ns_thread(void **state)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_close_ int fd = -1, hostfd = -1;
	struct task_count c = {0};
	char path[80];
	bool used = false;
	pid_t pid, tid = 0;

	if (geteuid() != 0)
		skip();
	assert_int_equal(pipe2(thread_pipe, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t t;

		if (pthread_create(&t, NULL, unshare_thread, NULL) != 0)
			_exit(1);
		pause();
		_exit(0);
	}
	close(thread_pipe[1]);
	assert_int_equal(read(thread_pipe[0], &tid, sizeof(tid)), sizeof(tid));
	close(thread_pipe[0]);
	assert_true(tid > 0 && tid != pid);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/ns/ipc", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(hezo_ns_in_use(fd, "ipc", &used, &err), 0);
	assert_true(used);
	c.want = pid;
	c.want_tid = tid;
	assert_int_equal(hezo_ns_foreach_task(fd, "ipc", count_task, &c, &err), 0);
	assert_int_equal(c.seen, 1);
	assert_int_equal(c.other, 0);
	/* The host's IPC namespace: the child's leader is among its tasks, its thread is not. */
	hostfd = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC);
	assert_true(hostfd >= 0);
	c = (struct task_count){.want = pid, .want_tid = pid};
	assert_int_equal(hezo_ns_foreach_task(hostfd, "ipc", count_task, &c, &err), 0);
	assert_int_equal(c.seen, 1);
	c = (struct task_count){.want = pid, .want_tid = tid};
	assert_int_equal(hezo_ns_foreach_task(hostfd, "ipc", count_task, &c, &err), 0);
	assert_int_equal(c.seen, 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(hezo_ns_in_use(fd, "ipc", &used, &err), 0);
	assert_false(used);
}

static void test_mkdir_p(void **state)
{
	char path[256], file[256];
	struct stat st;
	mode_t old = umask(022);

	(void)state;
	snprintf(path, sizeof(path), "%s/a/b/c", tmpdir);
	assert_int_equal(hezo_mkdir_p(path, 0755, 0700), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0700);
	snprintf(file, sizeof(file), "%s/a/b", tmpdir);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	umask(old);
	/* Again: already there is fine. */
	assert_int_equal(hezo_mkdir_p(path, 0755, 0700), 0);
	/* A file where a directory should be is not. */
	snprintf(file, sizeof(file), "%s/a/file", tmpdir);
	assert_int_equal(hezo_write_file_atomic_at(AT_FDCWD, file, "x", 1, 0600, NULL), 0);
	assert_int_equal(hezo_mkdir_p(file, 0755, 0700), -ENOTDIR);
	snprintf(path, sizeof(path), "%s/a/file/d", tmpdir);
	assert_int_equal(hezo_mkdir_p(path, 0755, 0700), -ENOTDIR);
	assert_int_equal(hezo_mkdir_p("", 0755, 0700), -EINVAL);
}

static void test_now_ms(void **state)
{
	uint64_t a, b;

	(void)state;
	a = hezo_now_ms();
	usleep(30 * 1000);
	b = hezo_now_ms();
	assert_true(b >= a + 30);
	assert_true(b < a + 5000);
}

static int sh(const char *script, const struct hezo_spawn_opts *o, char **out, size_t *len)
{
	char *argv[] = {"sh", "-c", (char *)script, NULL};

	return hezo_spawn_capture("/bin/sh", argv, o, out, len);
}

static void test_spawn_capture(void **state)
{
	const struct hezo_spawn_opts both = {.stderr_too = true};
	const struct hezo_spawn_opts small = {.max = 4}, small_ok = {.max = 4, .excess_ok = true};
	const struct hezo_spawn_opts quick = {.timeout_ms = 200};
	char *out = NULL;
	size_t len = 0;
	uint64_t t0;

	(void)state;
	/* stdout only by default; stdin is /dev/null; the exit status comes back. */
	assert_int_equal(sh("echo out; echo err >&2; cat; exit 3", NULL, &out, &len), 3);
	assert_string_equal(out, "out\n");
	assert_int_equal(len, 4);
	free(out);
	assert_int_equal(sh("echo out; echo err >&2", &both, &out, NULL), 0);
	assert_string_equal(out, "out\nerr\n");
	free(out);
	/* Nothing written: an empty string, not NULL. */
	assert_int_equal(sh("true", NULL, &out, &len), 0);
	assert_string_equal(out, "");
	assert_int_equal(len, 0);
	free(out);
	/* Past max: refused, or kept up to max and the rest read away. */
	assert_int_equal(sh("echo 123456789", &small, &out, &len), -EFBIG);
	assert_null(out);
	assert_int_equal(sh("echo 123456789", &small_ok, &out, &len), 0);
	assert_string_equal(out, "1234");
	free(out);
	/* A child past its deadline is killed, and what it wrote is kept. */
	t0 = hezo_now_ms();
	assert_int_equal(sh("echo early; exec sleep 10", &quick, &out, NULL), 128 + SIGKILL);
	assert_true(hezo_now_ms() - t0 < 5000);
	assert_string_equal(out, "early\n");
	free(out);
	/* A program that cannot be executed: 127, as a shell says. */
	{
		char *argv[] = {"none", NULL};

		assert_int_equal(hezo_spawn_capture("/nonexistent/none", argv, NULL, &out, NULL),
				 127);
		free(out);
	}
}

/* One descriptor over a socketpair arrives as a descriptor of the same pipe; fd < 0 sends none. */
static void test_fdpass(void **state)
{
	int sv[2], p[2], got = -1;
	union hezo_fd_cmsg room, in;
	char byte = 'x', rbyte = 0;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct iovec riov = {.iov_base = &rbyte, .iov_len = 1};
	struct msghdr rh = {.msg_iov = &riov, .msg_iovlen = 1};
	struct cmsghdr *c;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	hezo_fdpass_attach(&mh, &room, -1);
	assert_null(mh.msg_control);
	assert_int_equal(mh.msg_controllen, 0);
	hezo_fdpass_attach(&mh, &room, p[1]);
	assert_int_equal(sendmsg(sv[0], &mh, MSG_NOSIGNAL), 1);
	rh.msg_control = in.buf;
	rh.msg_controllen = sizeof(in.buf);
	assert_int_equal(recvmsg(sv[1], &rh, MSG_CMSG_CLOEXEC), 1);
	c = CMSG_FIRSTHDR(&rh);
	assert_non_null(c);
	assert_int_equal(c->cmsg_level, SOL_SOCKET);
	assert_int_equal(c->cmsg_type, SCM_RIGHTS);
	memcpy(&got, CMSG_DATA(c), sizeof(int));
	assert_true(got >= 0);
	assert_int_equal(write(got, "y", 1), 1);
	assert_int_equal(read(p[0], &rbyte, 1), 1);
	assert_int_equal(rbyte, 'y');
	close(got);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
}

static int fmt_into(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fmt_into(char **out, const char *fmt, ...)
{
	return HEZO_VASPRINTF(out, fmt);
}

static void test_vasprintf(void **state)
{
	char *s = NULL;

	(void)state;
	assert_int_equal(fmt_into(&s, "%s-%d", "a", 42), 4);
	assert_string_equal(s, "a-42");
	free(s);
	assert_int_equal(fmt_into(&s, "%s", ""), 0);
	assert_string_equal(s, "");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_prefix),
		cmocka_unit_test(test_ns_in_use),
		cmocka_unit_test(test_ns_thread),
		cmocka_unit_test(test_ns_scan_out_of_fds),
		cmocka_unit_test(test_error_errno),
		cmocka_unit_test(test_read_limit),
		cmocka_unit_test(test_atomic_write),
		cmocka_unit_test(test_state_write),
		cmocka_unit_test(test_atomic_write_fails_clean),
		cmocka_unit_test(test_private_write),
		cmocka_unit_test(test_clean_stale_temps),
		cmocka_unit_test(test_log_json),
		cmocka_unit_test(test_log_json_truncates),
		cmocka_unit_test(test_mkdir_p),
		cmocka_unit_test(test_now_ms),
		cmocka_unit_test(test_spawn_capture),
		cmocka_unit_test(test_fdpass),
		cmocka_unit_test(test_vasprintf),
	};
	return cmocka_run_group_tests_name("base", tests, setup, teardown);
}
