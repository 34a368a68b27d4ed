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
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

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
 * What fd (0, 1 or 2) is, when it must not reach the box; NULL: fine. why has room for the
 * reason. Never fine, however the backend treats stdio: a closed slot (runc's own first
 * descriptor would take it), a directory or O_PATH descriptor (the host's tree through
 * /proc/self/fd/N), a block device, a socket of the caller's network namespace or of none, and a
 * local socket connected to a named or abstract one (a host daemon's: docker.sock,
 * containerd.sock), which the box would drive even through runc's copying pipes. When the
 * backend hands the descriptor to the box as it is (handed), only what engines pass is
 * allowed: a pipe or FIFO, /dev/null (never a socket, not even a socketpair); a regular
 * file too when files_ok (runsc's sentry holds the host descriptor and cannot reopen it). A
 * regular file is reopened read-write through /proc/self/fd/N under runc, and a character
 * device (a tty, /dev/kvm, /dev/kmsg) is one the box's device cgroup would never let it open
 * (red team pass 8, F2 and F5).
 */
static const char *bad_stdio(int fd, bool handed, bool files_ok, char *why, size_t size)
{
	struct sockaddr_storage ss;
	const struct sockaddr_un *un = (const struct sockaddr_un *)&ss;
	socklen_t len = sizeof(ss);
	struct stat st;
	int fl;

	if (fstat(fd, &st) < 0)
		return errno == EBADF ? "closed" : "unreadable";
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_PATH))
		return "an O_PATH descriptor";
	if (S_ISDIR(st.st_mode))
		return "a directory";
	if (S_ISBLK(st.st_mode))
		return "a block device";
	if (S_ISSOCK(st.st_mode)) {
		if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0 ||
		    (ss.ss_family != AF_UNIX && ss.ss_family != AF_NETLINK))
			return "a network socket of the caller's namespace";
		if (ss.ss_family == AF_NETLINK)
			return "a netlink socket";
		memset(&ss, 0, sizeof(ss));
		len = sizeof(ss);
		if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
			return "a socket connected to nothing";
		/*
		 * A socketpair or an unbound peer (the address is the family alone): copied
		 * through the backend's pipes, the peer sees only bytes; handed as it is, the
		 * peer can pass the box descriptors (SCM_RIGHTS), a directory of the host's among
		 * them (red team pass 8, F7). No engine hands a socket as stdio.
		 */
		if (len <= offsetof(struct sockaddr_un, sun_path))
			return handed ? "a socket, whose peer could pass the box descriptors of "
					"the "
					"host's"
				      : NULL;
		if (un->sun_path[0] == '\0')
			return "a socket connected to an abstract socket";
		snprintf(why, size, "a socket connected to the named socket %.*s",
			 (int)strnlen(un->sun_path, sizeof(un->sun_path)), un->sun_path);
		return why;
	}
	if (!handed || S_ISFIFO(st.st_mode))
		return NULL;
	if (S_ISREG(st.st_mode))
		return files_ok ? NULL : "a regular file";
	if (S_ISCHR(st.st_mode)) {
		if (major(st.st_rdev) == 1 && minor(st.st_rdev) == 3)
			return NULL; /* /dev/null */
		snprintf(why, size, "a character device (%u:%u)", major(st.st_rdev),
			 minor(st.st_rdev));
		return why;
	}
	return "a descriptor of no file type (an eventfd, a pidfd, ...)";
}

bool shim_stdio_handed(enum hezo_backend b, const char *verb, const struct shim_args *a,
		       bool terminal)
{
	const char *d = shim_args_get(a, "detach");
	bool detach = strcmp(verb, "create") == 0;

	if (d && !detach && (!*d || shim_parse_bool(d, &detach) < 0))
		detach = true;
	/* gVisor donates its stdio to the sandbox, in the foreground too (fd 0 -> host:[1]). */
	if (b != HEZO_BACKEND_RUNC)
		return true;
	/* runc (setupIO): a pty with a terminal; its own pipes, copied, in the foreground. */
	return detach && !terminal;
}

int shim_check_stdio(bool handed, bool files_ok, struct hezo_error **err)
{
	char buf[160];

	for (int fd = 0; fd <= 2; fd++) {
		const char *why = bad_stdio(fd, handed, files_ok, buf, sizeof(buf));

		if (why)
			return hezo_error_set(err, EPERM,
					      "standard %s (fd %d) is %s, which must not reach the "
					      "box (give it a pipe or /dev/null, e.g. cat FILE | "
					      "hezo-shim ...)",
					      fd == 0	? "input"
					      : fd == 1 ? "output"
							: "error",
					      fd, why);
	}
	return 0;
}
