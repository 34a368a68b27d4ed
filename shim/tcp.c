/*
 * The box's TCP socket buffers on cgroup v1: charged to its memory cgroup only once that cgroup's
 * memory.kmem.tcp.limit_in_bytes is set, which the shim keeps at a quarter of the memory limit.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "shim.h"

int shim_tcp_cap(const char *memdir, int64_t memory_limit, struct hezo_error **err)
{
	char file[PATH_MAX + 40];
	int fd, n;

	snprintf(file, sizeof(file), "%s/memory.kmem.tcp.limit_in_bytes", memdir);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : dprintf(fd, "%" PRId64, memory_limit / 4);
	if (fd >= 0 && close(fd) < 0)
		n = -1;
	if (n <= 0)
		return hezo_error_set_errno(err, errno, "%s: cannot cap the box's TCP buffers",
					    file);
	return 0;
}

int shim_tcp_follow(const char *memdir, struct hezo_error **err)
{
	int64_t limit, tcp;

	if (shim_cgroup_read_int(memdir, "memory.limit_in_bytes", &limit) < 0 ||
	    shim_cgroup_read_int(memdir, "memory.kmem.tcp.limit_in_bytes", &tcp) < 0)
		return 0;
	/*
	 * Never capped (the kernel's page-rounded INT64_MAX): a box create left as it was
	 * (--systemd-cgroup, a runsc run) is left so here too.
	 */
	if (tcp > INT64_MAX / 2 || limit <= 0 || tcp == limit / 4)
		return 0;
	return shim_tcp_cap(memdir, limit, err);
}
