/* Running a helper program to read its output, on a deadline of the monotonic clock. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hezo-cleanup.h"
#include "hezo-proc.h"

extern char **environ;

uint64_t hezo_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Read what the child writes until EOF or the deadline (0: none); -ETIME when it passed. */
static int collect(int rd, uint64_t deadline, size_t max, char **buf, size_t *len, bool *excess)
{
	size_t cap = 0;

	for (;;) {
		struct pollfd pfd = {.fd = rd, .events = POLLIN};
		int wait_ms = -1;
		char scratch[4096];
		ssize_t n;

		if (deadline) {
			uint64_t now = hezo_now_ms();

			if (now >= deadline)
				return -ETIME;
			wait_ms = (int)(deadline - now);
		}
		n = poll(&pfd, 1, wait_ms);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		if (*len == cap && cap < max) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *v;

			if (ncap > max)
				ncap = max;
			v = realloc(*buf, ncap + 1);
			if (!v)
				return -ENOMEM;
			*buf = v;
			cap = ncap;
		}
		if (*len < cap)
			n = read(rd, *buf + *len, cap - *len);
		else
			n = read(rd, scratch, sizeof(scratch));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (*len < cap)
			*len += (size_t)n;
		else
			*excess = true;
	}
}

int hezo_spawn_capture(const char *path, char *const argv[], const struct hezo_spawn_opts *o,
		       char **out, size_t *len)
{
	static const struct hezo_spawn_opts defaults = {0};
	_cleanup_close_ int rd = -1, null = -1;
	_cleanup_free_ char *buf = NULL;
	size_t got = 0, max;
	uint64_t deadline = 0;
	bool excess = false;
	int fds[2], status, r;
	pid_t pid;

	if (!o)
		o = &defaults;
	max = o->max ? o->max : 64 * 1024;
	if (o->timeout_ms > 0)
		deadline = hezo_now_ms() + (uint64_t)o->timeout_ms;
	*out = NULL;
	if (len)
		*len = 0;
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		return -errno;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	rd = fds[0];
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(fds[1]);
		return r;
	}
	if (pid == 0) {
		/* dup2 clears O_CLOEXEC on the copies: only fds 0-2 reach the program. */
		if (dup2(null, STDIN_FILENO) < 0 || dup2(fds[1], STDOUT_FILENO) < 0 ||
		    dup2(o->stderr_too ? fds[1] : null, STDERR_FILENO) < 0)
			_exit(127);
		execve(path, argv, environ);
		_exit(127);
	}
	close(fds[1]);
	r = collect(rd, deadline, max, &buf, &got, &excess);
	if (r < 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (r == -ETIME)
		r = 0; /* the status says it was killed */
	if (r < 0)
		return r;
	if (excess && !o->excess_ok)
		return -EFBIG;
	if (!buf && !(buf = malloc(1)))
		return -ENOMEM;
	buf[got] = '\0';
	*out = TAKE_PTR(buf);
	if (len)
		*len = got;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
