/* Passing a file descriptor over a unix socket (SCM_RIGHTS). */
#include <string.h>

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
