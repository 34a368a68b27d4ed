/*
 * Everything that needs CAP_SYS_ADMIN lives here: entering a container's network namespace just
 * long enough to create its listeners (and the sock_diag socket that says whose a connection
 * is), and bind-mounting the namespace under the state dir.
 * It runs in a small helper process forked at start, which alone keeps CAP_SYS_ADMIN; the daemon
 * that parses container traffic asks it over a socketpair and keeps no capability at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/nsfs.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hezo-fdpass.h"
#include "hezo-netns.h"
#include "proxyd.h"

static int host_netns = -1;
static int netns_dir = -1;

static int open_dirs(struct hezo_error **err)
{
	host_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (host_netns < 0)
		return hezo_error_set_errno(err, errno, "/proc/self/ns/net");
	netns_dir = pd_state_subdir("netns", err);
	return netns_dir < 0 ? netns_dir : 0;
}

bool pd_netns_is_net(int fd)
{
	return ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET;
}

static int make_socket(int family, int type, uint16_t port)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int one = 1;
	int fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*sin);
		/* The runtime may bring lo up after us: bind before 127.0.0.1 exists. */
		setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one));
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		sin6->sin6_addr = in6addr_loopback;
		len = sizeof(*sin6);
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof(one));
	}
	if (type == SOCK_STREAM) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* Accepted sockets inherit it: no per-connection call for the client side. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 128) < 0)) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

static int do_listen(int netns_fd, int fds[6], struct hezo_error **err)
{
	static const struct {
		int family, type;
		uint16_t port;
		const char *what;
	} socks[6] = {
		{AF_INET, SOCK_STREAM, PD_TCP_PORT, "tcp 127.0.0.1"},
		{AF_INET6, SOCK_STREAM, PD_TCP_PORT, "tcp [::1]"},
		{AF_INET, SOCK_DGRAM, PD_DNS_PORT, "dns udp 127.0.0.1"},
		{AF_INET6, SOCK_DGRAM, PD_DNS_PORT, "dns udp [::1]"},
		{AF_INET, SOCK_STREAM, PD_DNS_PORT, "dns tcp 127.0.0.1"},
		{AF_INET6, SOCK_STREAM, PD_DNS_PORT, "dns tcp [::1]"},
	};
	int r = 0;

	for (int i = 0; i < 6; i++)
		fds[i] = -1;
	if (setns(netns_fd, CLONE_NEWNET) < 0)
		return hezo_error_set_errno(err, errno,
					    "entering the container's network namespace");
	for (int i = 0; i < 6 && r == 0; i++) {
		fds[i] = make_socket(socks[i].family, socks[i].type, socks[i].port);
		/* A namespace without IPv6 still gets its IPv4 listeners. */
		if (fds[i] == -EAFNOSUPPORT && socks[i].family == AF_INET6) {
			fds[i] = -1;
			continue;
		}
		if (fds[i] < 0) {
			r = hezo_error_set_errno(err, -fds[i], "%s port %u", socks[i].what,
						 socks[i].port);
			fds[i] = -1;
		}
	}
	if (setns(host_netns, CLONE_NEWNET) < 0) {
		/* Serving from the wrong namespace is not an option. */
		pd_log("error", "cannot return to proxyd's own network namespace: %s",
		       strerror(errno));
		abort();
	}
	if (r < 0) {
		for (int i = 0; i < 6; i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	return r;
}

/* A netlink socket belongs to the namespace it was made in: made there, asked from here. */
static int do_diag(int netns_fd, int *out, struct hezo_error **err)
{
	int fd, e = 0;

	if (setns(netns_fd, CLONE_NEWNET) < 0)
		return hezo_error_set_errno(err, errno,
					    "entering the container's network namespace");
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		e = errno;
	if (setns(host_netns, CLONE_NEWNET) < 0) {
		pd_log("error", "cannot return to proxyd's own network namespace: %s",
		       strerror(errno));
		abort();
	}
	if (fd < 0)
		return hezo_error_set_errno(err, e, "sock_diag socket");
	*out = fd;
	return 0;
}

static void do_unpin(const char *id);

static int do_pin(int netns_fd, const char *id, struct hezo_error **err)
{
	char src[64], dst[4096];
	int fd;

	snprintf(src, sizeof(src), "/proc/self/fd/%d", netns_fd);
	snprintf(dst, sizeof(dst), "%s/netns/%s", pd_cfg.state_dir, id);
	do_unpin(id);
	fd = openat(netns_dir, id, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "%s", dst);
	close(fd);
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0) {
		int e = errno;

		unlinkat(netns_dir, id, 0);
		return hezo_error_set_errno(err, e, "bind-mounting the namespace at %s", dst);
	}
	return 0;
}

static void do_unpin(const char *id)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/netns/%s", pd_cfg.state_dir, id);
	/* Stacked mounts from an earlier crash come off one by one. */
	for (int i = 0; i < 16 && umount2(path, MNT_DETACH) == 0; i++)
		;
	unlinkat(netns_dir, id, 0);
}

int pd_netns_open_pinned(const char *id, struct hezo_error **err)
{
	int fd = openat(netns_dir, id, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return hezo_error_set_errno(err, errno, "netns/%s", id);
	if (!pd_netns_is_net(fd)) {
		close(fd);
		return hezo_error_set(err, ENOENT,
				      "netns/%s: not a network namespace (not mounted)", id);
	}
	return fd;
}

bool pd_netns_alive(int netns_fd)
{
	bool used;
	int r = hezo_netns_in_use(netns_fd, &used, NULL);

	/* A namespace /proc cannot be read for is kept (used stays true); a bad fd names none. */
	return r == -EBADF ? false : used;
}

/* ---- the helper and its protocol ---- */

enum { OP_LISTEN = 1, OP_PIN, OP_UNPIN, OP_DIAG };

struct ns_req {
	int op;
	char id[PD_ID_MAX];
};

struct ns_rep {
	int r;
	int have[6]; /* which of the six listeners came back (in order, in SCM_RIGHTS) */
	char msg[512];
};

static int helper_fd = -1;

static int send_msg(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 6)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -EIO;
}

static ssize_t recv_msg(int sock, void *buf, size_t len, int *fds, int maxfds, int *nfds)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 6)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf.b,
			    .msg_controllen = sizeof(cbuf.b)};
	ssize_t n;

	*nfds = 0;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return n < 0 ? -errno : 0;
	*nfds = hezo_fdpass_take(&mh, fds, maxfds);
	if (*nfds > maxfds)
		*nfds = maxfds;
	if ((size_t)n != len) {
		for (int i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		return -EBADMSG;
	}
	return n;
}

static __attribute__((noreturn)) void helper_main(int sock)
{
	_cleanup_error_ struct hezo_error *err = NULL;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (pd_drop_privileges_helper(&err) < 0) {
		pd_log("error", "netns helper: %s", err->msg);
		_exit(1);
	}
	for (;;) {
		struct ns_req q;
		struct ns_rep p;
		int nsfd = -1, n, out[6], compact[6], nout = 0;
		struct hezo_error *e = NULL;
		ssize_t len = recv_msg(sock, &q, sizeof(q), &nsfd, 1, &n);

		if (len == 0)
			_exit(0); /* the daemon is gone */
		memset(&p, 0, sizeof(p));
		if (len < 0) {
			p.r = (int)len;
			snprintf(p.msg, sizeof(p.msg), "netns helper: malformed request");
			send_msg(sock, &p, sizeof(p), NULL, 0);
			continue;
		}
		if (n == 0)
			nsfd = -1;
		q.id[PD_ID_MAX - 1] = '\0';
		switch (q.op) {
		case OP_LISTEN:
			p.r = nsfd < 0 ? hezo_error_set(&e, EBADF, "no namespace fd")
				       : do_listen(nsfd, out, &e);
			for (int i = 0; p.r == 0 && i < 6; i++) {
				p.have[i] = out[i] >= 0;
				if (out[i] >= 0)
					compact[nout++] = out[i];
			}
			break;
		case OP_PIN:
			p.r = nsfd < 0 || !hezo_id_valid(q.id)
				      ? hezo_error_set(&e, EINVAL, "bad pin request")
				      : do_pin(nsfd, q.id, &e);
			break;
		case OP_UNPIN:
			if (hezo_id_valid(q.id))
				do_unpin(q.id);
			break;
		case OP_DIAG:
			p.r = nsfd < 0 ? hezo_error_set(&e, EBADF, "no namespace fd")
				       : do_diag(nsfd, &compact[0], &e);
			if (p.r == 0)
				nout = 1;
			break;
		default:
			p.r = hezo_error_set(&e, EINVAL, "unknown request");
		}
		if (e)
			snprintf(p.msg, sizeof(p.msg), "%s", e->msg);
		hezo_error_free(e);
		send_msg(sock, &p, sizeof(p), compact, nout);
		for (int i = 0; i < nout; i++)
			close(compact[i]);
		if (nsfd >= 0)
			close(nsfd);
	}
}

int pd_netns_init(struct hezo_error **err)
{
	int sv[2], r;
	pid_t pid;

	r = open_dirs(err);
	if (r < 0)
		return r;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return hezo_error_set_errno(err, errno, "socketpair");
	pid = fork();
	if (pid < 0)
		return hezo_error_set_errno(err, errno, "fork");
	if (pid == 0) {
		close(sv[0]);
		helper_main(sv[1]);
	}
	close(sv[1]);
	helper_fd = sv[0];
	/* The helper needs these; the daemon only opens pinned namespaces by name. */
	close(host_netns);
	host_netns = -1;
	return 0;
}

static int ask(int op, const char *id, int nsfd, int *fds, int maxfds, int *nfds, struct ns_rep *p,
	       struct hezo_error **err)
{
	struct ns_req q = {.op = op};
	int dummy;
	ssize_t n;

	if (helper_fd < 0)
		return hezo_error_set(err, ENOTCONN, "netns helper not running");
	if (id)
		snprintf(q.id, sizeof(q.id), "%s", id);
	if (send_msg(helper_fd, &q, sizeof(q), nsfd >= 0 ? &nsfd : NULL, nsfd >= 0 ? 1 : 0) < 0)
		return hezo_error_set(err, EPIPE, "netns helper gone");
	n = recv_msg(helper_fd, p, sizeof(*p), fds ? fds : &dummy, fds ? maxfds : 0,
		     nfds ? nfds : &dummy);
	if (n <= 0)
		return hezo_error_set(err, EPIPE, "netns helper gone");
	p->msg[sizeof(p->msg) - 1] = '\0';
	if (p->r < 0)
		return hezo_error_set(err, -p->r, "%s", p->msg);
	return 0;
}

int pd_netns_listen(int netns_fd, int fds[6], struct hezo_error **err)
{
	struct ns_rep p;
	int got[6], ngot = 0, k = 0, r;

	for (int i = 0; i < 6; i++)
		fds[i] = -1;
	r = ask(OP_LISTEN, NULL, netns_fd, got, 6, &ngot, &p, err);
	if (r < 0)
		return r;
	for (int i = 0; i < 6; i++)
		if (p.have[i] && k < ngot)
			fds[i] = got[k++];
	for (; k < ngot; k++)
		close(got[k]);
	if (fds[0] < 0 || fds[2] < 0 || fds[4] < 0) {
		for (int i = 0; i < 6; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		return hezo_error_set(err, EIO, "netns helper returned no IPv4 listeners");
	}
	return 0;
}

int pd_netns_diag(int netns_fd, struct hezo_error **err)
{
	struct ns_rep p;
	int fd = -1, n = 0, r;

	r = ask(OP_DIAG, NULL, netns_fd, &fd, 1, &n, &p, err);
	if (r < 0)
		return r;
	if (n != 1)
		return hezo_error_set(err, EIO, "netns helper returned no sock_diag socket");
	return fd;
}

int pd_netns_pin(int netns_fd, const char *id, struct hezo_error **err)
{
	struct ns_rep p;

	return ask(OP_PIN, id, netns_fd, NULL, 0, NULL, &p, err);
}

void pd_netns_unpin(const char *id)
{
	struct ns_rep p;

	ask(OP_UNPIN, id, -1, NULL, 0, NULL, &p, NULL);
}
