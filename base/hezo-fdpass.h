/* Passing a file descriptor over a unix socket (SCM_RIGHTS): the hook and proxyd's ctl both send.
 */
#ifndef HEZO_FDPASS_H
#define HEZO_FDPASS_H

#include <sys/socket.h>

/* Room for one descriptor in a message's control data, aligned as a cmsghdr must be. */
union hezo_fd_cmsg {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

/* Attach fd to mh as SCM_RIGHTS, its control data in room; fd < 0 attaches nothing. */
void hezo_fdpass_attach(struct msghdr *mh, union hezo_fd_cmsg *room, int fd);

/* The descriptors a received mh carries (SCM_RIGHTS): the first max into fds, the rest closed.
 * Returns how many it carried. */
int hezo_fdpass_take(struct msghdr *mh, int *fds, int max);

#endif
