/* Entering the container's network namespace and bringing its loopback up (libnl-route). */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <sys/stat.h>

#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "hezo-hook.h"

/*
 * A container that shares this process's namespace (host networking) must never get the table:
 * it would cut the host off. The shim should not have sent such a container here; fail closed.
 */
static int open_checked(const char *path, int *out, struct hezo_error **err)
{
	_cleanup_close_ int fd = -1;
	struct stat self, st;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "network namespace %s", path);
	if (fstat(fd, &st) < 0)
		return hezo_error_set_errno(err, errno, "network namespace %s", path);
	if (stat("/proc/self/ns/net", &self) < 0)
		return hezo_error_set_errno(err, errno, "own network namespace");
	if (st.st_dev == self.st_dev && st.st_ino == self.st_ino)
		return hezo_error_set(
			err, EPERM,
			"container shares the host's network namespace: refusing to wire "
			"it");
	*out = TAKE_FD(fd);
	return 0;
}

int hezo_hook_netns_open_pid(int pid, int *out, struct hezo_error **err)
{
	char path[64];

	if (pid <= 0 || pid > HEZO_HOOK_PID_MAX)
		return hezo_error_set(err, EINVAL, "pid %d is not a process id", pid);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	return open_checked(path, out, err);
}

int hezo_hook_netns_open_path(const char *path, int *out, struct hezo_error **err)
{
	return open_checked(path, out, err);
}

int hezo_hook_netns_enter(int nsfd, struct hezo_error **err)
{
	if (setns(nsfd, CLONE_NEWNET) < 0)
		return hezo_error_set_errno(err, errno,
					    "entering the container's network namespace");
	return 0;
}

static void nl_sock_freep(struct nl_sock **sk)
{
	if (*sk)
		nl_socket_free(*sk);
}
static void link_putp(struct rtnl_link **l)
{
	if (*l)
		rtnl_link_put(*l);
}

int hezo_hook_link_lo_up(struct hezo_error **err)
{
	_cleanup_(nl_sock_freep) struct nl_sock *sk = nl_socket_alloc();
	_cleanup_(link_putp) struct rtnl_link *lo = NULL;
	_cleanup_(link_putp) struct rtnl_link *change = NULL;
	int r;

	if (!sk)
		return hezo_error_set(err, ENOMEM, "loopback: out of memory");
	r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0)
		return hezo_error_set(err, EIO, "loopback: rtnetlink: %s", nl_geterror(r));
	r = rtnl_link_get_kernel(sk, 0, "lo", &lo);
	if (r < 0)
		return hezo_error_set(err, ENODEV, "loopback: %s", nl_geterror(r));
	if (rtnl_link_get_flags(lo) & IFF_UP)
		return 0;
	change = rtnl_link_alloc();
	if (!change)
		return hezo_error_set(err, ENOMEM, "loopback: out of memory");
	rtnl_link_set_flags(change, IFF_UP);
	r = rtnl_link_change(sk, lo, change, 0);
	if (r < 0)
		return hezo_error_set(err, EIO, "loopback: setting lo up: %s", nl_geterror(r));
	return 0;
}
