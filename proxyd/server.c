/*
 * What the two local servers, the control socket (control.c) and the metrics endpoint
 * (metrics.c), share: binding with the socket file made 0600, and accepting connections, from
 * uid 0 only where they ask for it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "proxyd.h"

int pd_server_bind(int fd, const struct sockaddr *sa, socklen_t len, int backlog)
{
	mode_t old = umask(0177);
	int r = bind(fd, sa, len);

	umask(old);
	if (r < 0 ||
	    (sa->sa_family == AF_UNIX &&
	     chmod(((const struct sockaddr_un *)sa)->sun_path, 0600) < 0) ||
	    listen(fd, backlog) < 0)
		return -errno;
	return 0;
}

void pd_server_accept(struct pd_watch *w, size_t size, bool root_only, const char *refusal,
		      pd_handler fn)
{
	for (int i = 0; i < 8; i++) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct pd_watch *k;
		int fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		if (root_only &&
		    (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != 0)) {
			/* Mode 0600 already keeps others out; this also covers a chmod by mistake.
			 */
			if (refusal)
				send(fd, refusal, strlen(refusal), MSG_NOSIGNAL);
			close(fd);
			continue;
		}
		k = calloc(1, size);
		if (!k) {
			close(fd);
			continue;
		}
		if (pd_watch_add(k, fd, EPOLLIN, fn) < 0)
			free(k);
	}
}
