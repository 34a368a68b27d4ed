/*
 * Descriptors of the caller's handed to the box as they are are not passed on. runc puts its
 * LISTEN_FDS ones (systemd socket activation) first and the --preserve-fds N after them, at
 * 3+L .. 2+L+N; a slot the caller left closed is filled by runc's own descriptors by the time it
 * hands them on (an O_PATH of the host's /sys/fs/cgroup); and what is open can be a directory or
 * file of the host's, a device, or a socket that stays in the host's network namespace whatever
 * its state. Each reached past every mount, cgroup and egress rule (red team passes 4, 5 and 7),
 * so --preserve-fds is refused (0 is the default, and allowed), and LISTEN_* never reach the
 * backend (main.c clears them).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "shim.h"

int shim_check_preserved_fds(const struct shim_args *a, struct hezo_error **err)
{
	const char *v = shim_args_get(a, "preserve-fds");

	if (!v || strcmp(v, "0") == 0)
		return 0;
	return hezo_error_set(
		err, EPERM,
		"--preserve-fds \"%.32s\": the caller's descriptors are not handed to "
		"the box (a directory, a file or a socket of the host's would reach "
		"past its mount and egress rules)",
		v);
}

/*
 * What fd (0, 1 or 2) is, when it must not be the box's: runc hands the caller's stdio to the box
 * as it is for create, run -d and exec -d. A directory (or an O_PATH descriptor) opens the host's
 * tree through /proc/self/fd/N; a block device is a disk; an IPv4/IPv6 socket, or one that is not
 * connected, stays in the caller's network namespace; a closed one is filled by runc's own
 * descriptor before it hands it on. NULL: fine (pipes, FIFOs, files, terminals,
 * character devices, connected local sockets, as engines pass them).
 */
static const char *bad_stdio(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct stat st;
	int fl;

	/* Closed: runc's own first descriptor would take the slot and be handed on. */
	if (fstat(fd, &st) < 0)
		return errno == EBADF ? "closed" : "unreadable";
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_PATH))
		return "an O_PATH descriptor";
	if (S_ISDIR(st.st_mode))
		return "a directory";
	if (S_ISBLK(st.st_mode))
		return "a block device";
	if (!S_ISSOCK(st.st_mode))
		return NULL;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ||
	    (ss.ss_family != AF_UNIX && ss.ss_family != AF_NETLINK))
		return "a network socket of the caller's namespace";
	len = sizeof(ss);
	if (ss.ss_family == AF_UNIX && getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
		return "a socket connected to nothing";
	if (ss.ss_family == AF_NETLINK)
		return "a netlink socket";
	return NULL;
}

int shim_check_stdio(struct hezo_error **err)
{
	for (int fd = 0; fd <= 2; fd++) {
		const char *why = bad_stdio(fd);

		if (why)
			return hezo_error_set(
				err, EPERM,
				"standard %s (fd %d) is %s, which the box would be "
				"handed as it is (give it a pipe, a file or /dev/null)",
				fd == 0	  ? "input"
				: fd == 1 ? "output"
					  : "error",
				fd, why);
	}
	return 0;
}
