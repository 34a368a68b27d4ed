/* Small process and file helpers for the admin verbs: optional reads, PATH lookup, run-and-capture.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hezo-config.h"
#include "hezo-file.h"
#include "install-internal.h"

int hezo_install_read_optional(const char *path, char **out, size_t *len, bool *exists,
			       struct hezo_error **err)
{
	int r;

	*out = NULL;
	*len = 0;
	*exists = false;
	r = hezo_read_file_at(AT_FDCWD, path, HEZO_INSTALL_MAX_CONFIG, out, len, err);
	if (r == -ENOENT) {
		hezo_error_free(*err);
		*err = NULL;
		return 0;
	}
	if (r < 0)
		return r;
	*exists = true;
	return 0;
}

char *hezo_install_which(const char *name)
{
	const char *path = getenv("PATH");
	_cleanup_free_ char *copy = NULL;
	char *save = NULL;

	if (strchr(name, '/'))
		return access(name, X_OK) == 0 ? strdup(name) : NULL;
	if (!path || !*path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	copy = strdup(path);
	if (!copy)
		return NULL;
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char *full = NULL;
		struct stat st;

		if (asprintf(&full, "%s/%s", dir, name) < 0)
			return NULL;
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
			return full;
		free(full);
	}
	return NULL;
}

char *hezo_install_default_shim(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		const char *base;

		self[n] = '\0';
		base = strrchr(self, '/');
		if (base && strcmp(base + 1, "hezo-shim") == 0)
			return strdup(self);
	}
	return strdup(HEZO_SHIM_INSTALLED_PATH);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int hezo_install_run(const char *const *argv, int timeout_ms, char **out)
{
	_cleanup_free_ char *exe = hezo_install_which(argv[0]);
	_cleanup_close_ int rd = -1;
	size_t len = 0, cap = 65536;
	char *buf;
	long long deadline = now_ms() + timeout_ms;
	int fds[2], status = 0;
	pid_t pid;

	*out = NULL;
	if (!exe)
		return -ENOENT;
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		free(buf);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(fds[0]);
		close(fds[1]);
		free(buf);
		return -e;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(fds[1], 1) < 0 ||
		    dup2(fds[1], 2) < 0)
			_exit(127);
		execv(exe, (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	rd = fds[0];
	for (;;) {
		struct pollfd pfd = {.fd = rd, .events = POLLIN};
		long long left = deadline - now_ms();
		char scratch[4096];
		ssize_t n;

		if (left <= 0) {
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		if (len < cap)
			n = read(rd, buf + len, cap - len);
		else
			n = read(rd, scratch, sizeof(scratch));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (len < cap)
			len += (size_t)n;
	}
	buf[len] = '\0';
	*out = buf;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
