/*
 * LD_PRELOAD for the bench's callgrind count of create only: valgrind 3.19 knows no open_tree,
 * mount_setattr or move_mount (ENOSYS), so the idmapped binds of a box's own user namespace
 * would fail and end the count early. These stand-ins make the same binds with mount(2) and skip
 * the idmap: the instructions counted are the shim's, a few calls of which are the kernel's.
 * valgrind also refuses any change of the hard RLIMIT_NOFILE (it keeps fds of its own above
 * it), so the box's rlimits set before the backend's execve are passed through but for that one.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

int open_tree(int dfd, const char *path, unsigned int flags)
{
	(void)flags;
	if (path && *path)
		return openat(dfd, path, O_PATH | O_CLOEXEC);
	return fcntl(dfd, F_DUPFD_CLOEXEC, 3);
}

int mount_setattr(int dfd, const char *path, unsigned int flags, struct mount_attr *attr,
		  size_t size)
{
	(void)dfd, (void)path, (void)flags, (void)attr, (void)size;
	return 0;
}

int move_mount(int from_dfd, const char *from, int to_dfd, const char *to, unsigned int flags)
{
	char src[64], dst[4200];

	(void)from, (void)flags;
	snprintf(src, sizeof(src), "/proc/self/fd/%d", from_dfd);
	if (to_dfd == AT_FDCWD || to[0] == '/')
		snprintf(dst, sizeof(dst), "%s", to);
	else
		snprintf(dst, sizeof(dst), "/proc/self/fd/%d/%s", to_dfd, to);
	return mount(src, dst, NULL, MS_BIND | MS_REC, NULL);
}

int setrlimit(__rlimit_resource_t res, const struct rlimit *lim)
{
	if (res == RLIMIT_NOFILE)
		return 0;
	return (int)syscall(SYS_prlimit64, 0, res, lim, NULL);
}

int setrlimit64(__rlimit_resource_t res, const struct rlimit64 *lim)
{
	if (res == RLIMIT_NOFILE)
		return 0;
	return (int)syscall(SYS_prlimit64, 0, res, lim, NULL);
}
