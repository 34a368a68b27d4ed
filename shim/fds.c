/*
 * Descriptors the backend hands the box as they are: fds 3 .. 2+N for --preserve-fds N, and
 * 3 .. 2+L for LISTEN_FDS=L (runc's create and run pass systemd's socket-activation fds on). A
 * directory or file opened on the host, a device, any socket (it stays in the host's network
 * namespace, whatever state it is in: an unconnected one connects to host loopback, a listening
 * one is disconnected with AF_UNSPEC and then connects, a raw one reads host traffic) would reach
 * past every mount and egress rule. Only pipes are let through.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
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
	if (S_ISSOCK(m))
		return "a socket (of the caller's network namespace)";
	if (S_ISLNK(m))
		return "a symbolic link";
	return "not a pipe";
}

/*
 * The count in plain decimal. Go's flag package reads runc's --preserve-fds with base prefixes
 * (0x10, 0o7, 0b1) and underscores, so any other spelling is refused, not left to the backend.
 */
static int parse_count(const char *what, const char *v, unsigned long *n, struct hezo_error **err)
{
	char *end;

	errno = 0;
	if (v[0] < '0' || v[0] > '9' || strspn(v, "0123456789") != strlen(v) ||
	    ((*n = strtoul(v, &end, 10)), errno) || *n > 65536)
		return hezo_error_set(err, EINVAL, "%s \"%.32s\": not a count of descriptors", what,
				      v);
	return 0;
}

static int check_fd(const char *what, int fd, struct hezo_error **err)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		/* Not open: nothing is handed on (runc answers that itself). */
		if (errno == EBADF)
			return 0;
		return hezo_error_set_errno(err, errno, "%s: fd %d", what, fd);
	}
	if (S_ISFIFO(st.st_mode))
		return 0;
	return hezo_error_set(err, EPERM, "%s: fd %d is %s; only pipes are handed to the box", what,
			      fd, kind_of(st.st_mode));
}

int shim_check_preserved_fds(const struct shim_args *a, bool listen_fds, struct hezo_error **err)
{
	const char *v = shim_args_get(a, "preserve-fds");
	const char *l = listen_fds ? getenv("LISTEN_FDS") : NULL;
	unsigned long n = 0, nl = 0;
	int r;

	if (v && (r = parse_count("--preserve-fds", v, &n, err)) < 0)
		return r;
	if (l && (r = parse_count("LISTEN_FDS", l, &nl, err)) < 0)
		return r;
	for (unsigned long i = 0; i < (n > nl ? n : nl); i++) {
		r = check_fd(i < n ? "--preserve-fds" : "LISTEN_FDS", (int)(3 + i), err);
		if (r < 0)
			return r;
	}
	return 0;
}
