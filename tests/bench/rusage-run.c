/* rusage-run: run a command N times and print, per run, its CPU time and peak RSS as the kernel
 * accounts them (wait4), so a process's own cost can be told apart from the machine's noise. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "rusage-run: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* Put a fresh copy of the engine's config.json in place: the shim rewrites it on every run. */
static void copy_file(const char *src, const char *dst)
{
	struct stat st;
	int in = open(src, O_RDONLY | O_CLOEXEC), out;

	if (in < 0 || fstat(in, &st) < 0)
		die(src);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0)
		die(dst);
	for (off_t off = 0; off < st.st_size;)
		if (sendfile(out, in, &off, (size_t)(st.st_size - off)) <= 0)
			die("sendfile");
	close(in);
	close(out);
}

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

int main(int argc, char **argv)
{
	const char *src = NULL, *dst = NULL;
	int i = 1, n;

	if (argc < 3) {
		fprintf(stderr, "usage: rusage-run N [--copy SRC DST] -- CMD [ARGS...]\n"
				"prints per run: user_us sys_us maxrss_kib wall_us exit_status\n");
		return 2;
	}
	n = atoi(argv[i++]);
	if (i + 2 < argc && strcmp(argv[i], "--copy") == 0) {
		src = argv[i + 1];
		dst = argv[i + 2];
		i += 3;
	}
	if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc) {
		fprintf(stderr, "rusage-run: expected -- CMD\n");
		return 2;
	}
	i++;
	for (int run = 0; run < n; run++) {
		struct rusage ru;
		long long t0;
		int status;
		pid_t pid;
		int errp[2];

		if (src)
			copy_file(src, dst);
		/*
		 * The child's stderr is a pipe, whatever ours is: the shim refuses to hand a box a
		 * regular file as stdio, so a bench whose stderr is a log would time refusals.
		 */
		if (pipe2(errp, O_CLOEXEC | O_NONBLOCK) < 0)
			die("pipe2");
		t0 = now_us();
		pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

			if (null >= 0)
				dup2(null, STDOUT_FILENO);
			dup2(errp[1], STDERR_FILENO);
			execvp(argv[i], argv + i);
			_exit(127);
		}
		close(errp[1]);
		if (wait4(pid, &status, 0, &ru) < 0)
			die("wait4");
		/*
		 * Read once it is gone (a box made detached may hold the pipe open for ever): a
		 * child that says more than a pipe holds (64 KiB) would block, which the shim never
		 * does.
		 */
		for (;;) {
			char buf[4096];
			ssize_t got = read(errp[0], buf, sizeof(buf));

			if (got <= 0 || write(STDERR_FILENO, buf, (size_t)got) != got)
				break;
		}
		close(errp[0]);
		printf("%ld %ld %ld %lld %d\n", ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec,
		       ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec, ru.ru_maxrss,
		       now_us() - t0,
		       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	}
	return 0;
}
