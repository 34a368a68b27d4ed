/* Entering the container's network namespace and bringing its loopback up (one rtnetlink message).
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

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

int hezo_hook_netns_lock(int nsfd, int *out, struct hezo_error **err)
{
	_cleanup_close_ int fd = -1;
	char path[64];

	/* A lock belongs to its open file description, and nsfd may be handed to proxyd: lock a
	 * description of our own, or proxyd would hold the lock for as long as it keeps the fd. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", nsfd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "reopening the network namespace");
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return hezo_error_set_errno(err, errno, "locking the network namespace");
	*out = TAKE_FD(fd);
	return 0;
}

int hezo_hook_netns_enter(int nsfd, struct hezo_error **err)
{
	if (setns(nsfd, CLONE_NEWNET) < 0)
		return hezo_error_set_errno(err, errno,
					    "entering the container's network namespace");
	return 0;
}

/*
 * One RTM_NEWLINK naming lo with IFF_UP, one acknowledgement: no link dump first (setting an up
 * link up is a no-op) and no netlink library, whose load and start-up cost more than the
 * exchange itself.
 */
int hezo_hook_link_lo_up(struct hezo_error **err)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
		struct rtattr name;
		char ifname[8];
	} req = {
		.nh = {.nlmsg_len = sizeof(req),
		       .nlmsg_type = RTM_NEWLINK,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK,
		       .nlmsg_seq = 1},
		.ifi = {.ifi_family = AF_UNSPEC, .ifi_flags = IFF_UP, .ifi_change = IFF_UP},
		.name = {.rta_len = RTA_LENGTH(sizeof("lo")), .rta_type = IFLA_IFNAME},
		.ifname = "lo",
	};
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	struct timeval tv = {.tv_sec = 5};
	_cleanup_close_ int fd = -1;
	union {
		struct nlmsghdr nh;
		char buf[1024];
	} ans;
	ssize_t n;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "loopback: rtnetlink socket");
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return hezo_error_set_errno(err, errno, "loopback: SO_RCVTIMEO");
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return hezo_error_set_errno(err, errno, "loopback: sending the request");
	for (;;) {
		n = recv(fd, &ans, sizeof(ans), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return hezo_error_set_errno(err, errno == EAGAIN ? ETIMEDOUT : errno,
						    "loopback: waiting for the answer");
		break;
	}
	/* The only message sent asked for an acknowledgement; anything else is the kernel
	 * misbehaving or not a kernel, and lo must be known up before the table goes in. */
	if ((size_t)n < NLMSG_LENGTH(sizeof(struct nlmsgerr)) || ans.nh.nlmsg_len > (size_t)n ||
	    ans.nh.nlmsg_type != NLMSG_ERROR || ans.nh.nlmsg_seq != req.nh.nlmsg_seq)
		return hezo_error_set(err, EPROTO, "loopback: unexpected answer from rtnetlink");
	{
		const struct nlmsgerr *e = NLMSG_DATA(&ans.nh);

		if (e->error == -ENODEV)
			return hezo_error_set(err, ENODEV, "loopback: no device lo");
		if (e->error < 0)
			return hezo_error_set_errno(err, -e->error, "loopback: setting lo up");
	}
	return 0;
}
