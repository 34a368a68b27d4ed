/*
 * --preserve-fds N hands the box descriptors 3 .. 2+N of the caller as they are: a directory or a
 * file opened on the host, a device, a socket connected to a host daemon would reach past every
 * mount rule. Only what socket activation and pipelines pass is let through.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "shim.h"

static const char *kind_of(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISREG(m))
		return "a file";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISLNK(m))
		return "a symbolic link";
	return "not a pipe or socket";
}

static int check_fd(int fd, struct hezo_error **err)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	int listening = 0;
	socklen_t ilen = sizeof(listening);
	struct stat st;

	if (fstat(fd, &st) < 0) {
		/* Not open: the backend answers that itself. */
		if (errno == EBADF)
			return 0;
		return hezo_error_set_errno(err, errno, "--preserve-fds: fd %d", fd);
	}
	if (S_ISFIFO(st.st_mode))
		return 0;
	if (!S_ISSOCK(st.st_mode))
		return hezo_error_set(err, EPERM,
				      "--preserve-fds: fd %d is %s; only pipes and listening or "
				      "unconnected sockets are handed to the box",
				      fd, kind_of(st.st_mode));
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ilen) == 0 && listening)
		return 0;
	if (getpeername(fd, (struct sockaddr *)&peer, &len) < 0 && errno == ENOTCONN)
		return 0;
	return hezo_error_set(
		err, EPERM,
		"--preserve-fds: fd %d is a socket connected to a peer outside the "
		"box; only pipes and listening or unconnected sockets are handed to it",
		fd);
}

int shim_check_preserved_fds(const struct shim_args *a, struct hezo_error **err)
{
	const char *v = shim_args_get(a, "preserve-fds");
	unsigned long n;
	char *end;
	int r;

	if (!v)
		return 0;
	errno = 0;
	n = strtoul(v, &end, 10);
	/* A value runc would refuse is the backend's to refuse; none reaches past INT_MAX - 3. */
	if (errno || end == v || *end || v[0] == '-' || n > INT_MAX - 3)
		return 0;
	for (unsigned long i = 0; i < n; i++) {
		r = check_fd((int)(3 + i), err);
		if (r < 0)
			return r;
	}
	return 0;
}
