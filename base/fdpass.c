/* Passing a file descriptor over a unix socket (SCM_RIGHTS). */
#include <string.h>
#include <unistd.h>

#include "hezo-fdpass.h"

void hezo_fdpass_attach(struct msghdr *mh, union hezo_fd_cmsg *room, int fd)
{
	struct cmsghdr *c;

	if (fd < 0)
		return;
	memset(room, 0, sizeof(*room));
	mh->msg_control = room->buf;
	mh->msg_controllen = sizeof(room->buf);
	c = CMSG_FIRSTHDR(mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
}

int hezo_fdpass_take(struct msghdr *mh, int *fds, int max)
{
	int n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++, n++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (n < max)
				fds[n] = f;
			else
				close(f);
		}
	}
	return n;
}
