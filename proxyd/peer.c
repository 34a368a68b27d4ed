/*
 * Whose a connection is, when several containers share one network namespace (a pod): the
 * cgroup the kernel recorded on the client's socket when it was made, read by sock_diag, and the
 * member of the registration that registered that cgroup.
 */
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "proxyd.h"

#define REPLY_MAX 8192

static uint32_t peer_seq;

/* The cgroup id in one reply to request seq: 0 found, -ENOENT refused, -EAGAIN not this one. */
static int parse_reply(const uint8_t *buf, size_t len, uint32_t seq, uint64_t *cgroup)
{
	const struct nlmsghdr *h = (const struct nlmsghdr *)buf;

	for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
		const struct rtattr *a;
		size_t alen;

		if (h->nlmsg_seq != seq)
			continue;
		if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_DONE)
			return -ENOENT;
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
		    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
			return -EPROTO;
		a = (const struct rtattr *)((const uint8_t *)NLMSG_DATA(h) +
					    NLMSG_ALIGN(sizeof(struct inet_diag_msg)));
		alen = h->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(struct inet_diag_msg)));
		for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
			if (a->rta_type == INET_DIAG_CGROUP_ID &&
			    RTA_PAYLOAD(a) == sizeof(uint64_t)) {
				memcpy(cgroup, RTA_DATA(a), sizeof(uint64_t));
				return 0;
			}
		}
		/* A kernel without cgroup ids in sock_diag cannot tell members apart. */
		return -EOPNOTSUPP;
	}
	return -EAGAIN;
}

int pd_peer_cgroup(int diag_fd, const struct sockaddr_storage *src,
		   const struct sockaddr_storage *dst, uint64_t *cgroup)
{
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} q;
	struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
	uint8_t buf[REPLY_MAX] __attribute__((aligned(NLMSG_ALIGNTO)));
	ssize_t n;
	int r;

	if (src->ss_family != dst->ss_family ||
	    (src->ss_family != AF_INET && src->ss_family != AF_INET6))
		return -EAFNOSUPPORT;
	memset(&q, 0, sizeof(q));
	q.h.nlmsg_len = sizeof(q);
	q.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.h.nlmsg_flags = NLM_F_REQUEST;
	q.h.nlmsg_seq = ++peer_seq;
	q.r.sdiag_family = (uint8_t)src->ss_family;
	q.r.sdiag_protocol = IPPROTO_TCP;
	q.r.idiag_states = ~0u;
	q.r.id.idiag_cookie[0] = q.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	/* The client's socket: its own address and port, and the destination it connected to. */
	if (src->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)src;
		const struct sockaddr_in *d = (const struct sockaddr_in *)dst;

		q.r.id.idiag_sport = s->sin_port;
		q.r.id.idiag_dport = d->sin_port;
		memcpy(q.r.id.idiag_src, &s->sin_addr, 4);
		memcpy(q.r.id.idiag_dst, &d->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)src;
		const struct sockaddr_in6 *d = (const struct sockaddr_in6 *)dst;

		q.r.id.idiag_sport = s->sin6_port;
		q.r.id.idiag_dport = d->sin6_port;
		memcpy(q.r.id.idiag_src, &s->sin6_addr, 16);
		memcpy(q.r.id.idiag_dst, &d->sin6_addr, 16);
	}
	if (sendto(diag_fd, &q, sizeof(q), MSG_NOSIGNAL, (struct sockaddr *)&nl, sizeof(nl)) < 0)
		return -errno;
	/* The kernel answers within sendto(): anything not there now never comes. */
	for (;;) {
		n = recv(diag_fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? -ENOENT : -errno;
		r = parse_reply(buf, (size_t)n, q.h.nlmsg_seq, cgroup);
		if (r != -EAGAIN)
			return r;
	}
}

const struct pd_member *pd_member_of(const struct pd_container *c,
				     const struct sockaddr_storage *src,
				     const struct sockaddr_storage *dst)
{
	const struct pd_member *found = NULL;
	uint64_t cg;

	/*
	 * A member of unknown cgroup (an older hook, a state file of an older proxyd) is known
	 * only alone: then the namespace's connections are taken for its own, as they were.
	 * Otherwise even a sole member's cgroup is checked: a process of a container that joined
	 * the namespace without registering gets none of its secrets.
	 */
	if (c->nmembers == 1 && (c->members[0]->cgroup == 0 || c->diag_fd < 0))
		return c->members[0];
	if (c->diag_fd < 0 || pd_peer_cgroup(c->diag_fd, src, dst, &cg) < 0 || cg == 0)
		return NULL;
	for (size_t i = 0; i < c->nmembers; i++) {
		const struct pd_member *m = c->members[i];

		if (m->cgroup != cg)
			continue;
		/*
		 * Two members in one cgroup cannot be told apart: neither's secrets go, unless
		 * they hold the very same (a gVisor pod's containers, whose sockets are all the
		 * Sentry's, hold their sandbox's): then whichever it was makes no difference.
		 */
		if (found && !hezo_json_equal(found->secrets_json, m->secrets_json))
			return NULL;
		if (!found)
			found = m;
	}
	return found;
}
