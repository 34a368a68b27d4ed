/*
 * hezo-kcount: the per-user kernel counters a box draws on. `hold DIR N [E]`: make N files in DIR,
 * open inotify instances until the kernel refuses one, watch every file from each until it
 * refuses a watch, then E epoll instances watching a pipe each, print what it holds and keep it.
 * `try`: can this process open an inotify instance and a watch, and an epoll watch, now?
 * `aio [N]`: what io_setup answers (an AIO context counts against the host's fs.aio-max-nr);
 * with N, make N contexts of 256 events, print how many, and keep them.
 * `pty N`: open /dev/ptmx up to N times (each a pty of the box's devpts instance) and print how
 * many it got and what stopped it.
 * Static: test rootfs have no C library.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_INSTANCES 4096

static int hold(const char *dir, long files, long epolls)
{
	long instances = 0, watches = 0, eps = 0;
	int watch_err = 0, inst_err = 0, ep_err = 0, p[2];
	char path[4096];

	for (long i = 0; i < files; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/w%ld", dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0) {
			printf("error=create %s: %s\n", path, strerror(errno));
			return 1;
		}
		close(fd);
	}
	while (instances < MAX_INSTANCES) {
		int in = inotify_init1(IN_CLOEXEC);

		if (in < 0) {
			inst_err = errno;
			break;
		}
		instances++;
		for (long i = 0; i < files && !watch_err; i++) {
			snprintf(path, sizeof(path), "%s/w%ld", dir, i);
			if (inotify_add_watch(in, path, IN_MODIFY) < 0)
				watch_err = errno;
			else
				watches++;
		}
	}
	if (epolls > 0 && pipe2(p, O_CLOEXEC) < 0)
		ep_err = errno;
	for (; !ep_err && eps < epolls; eps++) {
		struct epoll_event ev = {.events = EPOLLIN};
		int ep = epoll_create1(EPOLL_CLOEXEC);

		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) < 0)
			ep_err = errno;
	}
	if (ep_err)
		eps--;
	printf("instances=%ld (%s) watches=%ld (%s) epoll=%ld (%s)\nheld=yes\n", instances,
	       inst_err ? strerrorname_np(inst_err) : "-", watches,
	       watch_err ? strerrorname_np(watch_err) : "-", eps,
	       ep_err ? strerrorname_np(ep_err) : "-");
	fflush(stdout);
	for (;;)
		pause();
}

static int try(void)
{
	int in = inotify_init1(IN_CLOEXEC);

	if (in < 0) {
		printf("inotify=%s\n", strerrorname_np(errno));
		return 1;
	}
	if (inotify_add_watch(in, "/", IN_CREATE) < 0) {
		printf("inotify=%s\n", strerrorname_np(errno));
		return 1;
	}
	struct epoll_event ev = {.events = EPOLLIN};
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, in, &ev) < 0) {
		printf("inotify=ok epoll=%s\n", strerrorname_np(errno));
		return 1;
	}
	printf("inotify=ok epoll=ok\n");
	return 0;
}

static int aio(long hold)
{
	unsigned long ctx = 0;
	long made = 0;

	for (; made < hold; made++) {
		ctx = 0;
		if (syscall(SYS_io_setup, 256, &ctx) < 0)
			break;
	}
	if (hold > 0) {
		printf("io_setup=%ld held\n", made);
		fflush(stdout);
		for (;;)
			pause();
	}
	if (syscall(SYS_io_setup, 1, &ctx) < 0) {
		printf("io_setup=%s\n", strerrorname_np(errno));
		return 1;
	}
	syscall(SYS_io_destroy, ctx);
	printf("io_setup=ok\n");
	return 0;
}

static int pty(long want)
{
	long got = 0;
	int e = 0;

	for (; got < want; got++)
		if (open("/dev/ptmx", O_RDWR | O_NOCTTY) < 0) {
			e = errno;
			break;
		}
	printf("ptys=%ld stop=%s\n", got, e ? strerrorname_np(e) : "-");
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "hold") == 0)
		return hold(argv[2], strtol(argv[3], NULL, 10),
			    argc == 5 ? strtol(argv[4], NULL, 10) : 0);
	if (argc == 2 && strcmp(argv[1], "try") == 0)
		return try();
	if ((argc == 2 || argc == 3) && strcmp(argv[1], "aio") == 0)
		return aio(argc == 3 ? strtol(argv[2], NULL, 10) : 0);
	if (argc == 3 && strcmp(argv[1], "pty") == 0)
		return pty(strtol(argv[2], NULL, 10));
	fprintf(stderr, "usage: hezo-kcount hold DIR N [EPOLLS] | try | aio [N] | pty N\n");
	return 2;
}
