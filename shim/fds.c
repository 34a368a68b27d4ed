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
#include <string.h>

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
