/*
 * The control socket (docs/egress.md): SOCK_SEQPACKET, mode 0600, peers must be uid 0; one JSON
 * request per message, one JSON reply; register carries the namespace fd in SCM_RIGHTS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "proxyd.h"

#define CTL_MSG_MAX (64 * 1024)

struct ctl_conn {
	struct pd_watch w;
};

static struct pd_watch listener = {.fd = -1};

static void reply(int fd, struct hezo_json *r)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *out = NULL;
	size_t len;

	if (r && hezo_json_dump(r, false, &out, &len, &err) == 0)
		send(fd, out, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	else
		send(fd, "{\"ok\":false,\"error\":\"out of memory\"}", 35, MSG_NOSIGNAL);
	hezo_json_free(r);
}

static struct hezo_json *ok_reply(void)
{
	struct hezo_json *r = hezo_json_new_object();

	if (r && hezo_json_set(r, "ok", hezo_json_new_bool(true)) < 0) {
		hezo_json_free(r);
		return NULL;
	}
	return r;
}

static struct hezo_json *error_reply(const char *msg)
{
	struct hezo_json *r = hezo_json_new_object();

	if (r && (hezo_json_set(r, "ok", hezo_json_new_bool(false)) < 0 ||
		  hezo_json_set(r, "error", hezo_json_new_string(msg)) < 0)) {
		hezo_json_free(r);
		return NULL;
	}
	return r;
}

static void set_uint(struct hezo_json *o, const char *key, uint64_t v)
{
	if (o)
		hezo_json_set(o, key, hezo_json_new_uint(v));
}

static struct hezo_json *stats_json(const struct pd_stats *s)
{
	struct hezo_json *o = hezo_json_new_object();

	set_uint(o, "connsAccepted", s->conns_accepted);
	set_uint(o, "connsAllowed", s->conns_allowed);
	set_uint(o, "connsRefused", s->conns_refused);
	set_uint(o, "dnsQueries", s->dns_queries);
	set_uint(o, "dnsAllowed", s->dns_allowed);
	set_uint(o, "dnsRefused", s->dns_refused);
	set_uint(o, "dnsRateLimited", s->dns_ratelimited);
	set_uint(o, "dnsFailed", s->dns_failed);
	set_uint(o, "bytesOut", s->bytes_out);
	set_uint(o, "bytesIn", s->bytes_in);
	return o;
}

static struct hezo_json *do_list(void)
{
	struct hezo_json *r = ok_reply(), *arr = hezo_json_new_array();

	for (struct pd_container *c = pd_containers; c && arr; c = c->next) {
		struct hezo_json *o = hezo_json_new_object();
		struct hezo_json *allow = hezo_json_get_path(c->reg, "egress.allow");

		if (!o)
			break;
		hezo_json_set(o, "id", hezo_json_new_string(c->id));
		hezo_json_set(o, "project", hezo_json_new_string(c->project));
		hezo_json_set(o, "allow", allow ? hezo_json_clone(allow) : hezo_json_new_array());
		hezo_json_append(arr, o);
	}
	if (r)
		hezo_json_set(r, "containers", arr);
	else
		hezo_json_free(arr);
	return r;
}

static struct hezo_json *do_stats(void)
{
	struct hezo_json *r = ok_reply(), *arr = hezo_json_new_array();
	unsigned n = 0;

	for (struct pd_container *c = pd_containers; c && arr; c = c->next) {
		struct hezo_json *o = stats_json(&c->st);

		n++;
		if (!o)
			break;
		hezo_json_set(o, "id", hezo_json_new_string(c->id));
		set_uint(o, "connsOpen", c->nconns);
		set_uint(o, "dnsInFlight", c->ndnsq);
		set_uint(o, "pins", c->pins.n);
		hezo_json_append(arr, o);
	}
	if (r) {
		struct hezo_json *t = stats_json(&pd_stats);

		hezo_json_set(r, "containers", hezo_json_new_uint(n));
		set_uint(r, "connsOpen", pd_relay_active());
		hezo_json_set(r, "total", t);
		hezo_json_set(r, "perContainer", arr);
	} else {
		hezo_json_free(arr);
	}
	return r;
}

static struct hezo_json *handle(const char *buf, size_t len, int *fd)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *req = NULL;
	const char *op;

	if (hezo_json_parse(buf, len, &req, &err) < 0 || req->type != HEZO_JSON_OBJECT)
		return error_reply(err ? err->msg : "request is not a JSON object");
	op = hezo_json_string(hezo_json_get(req, "op"));
	if (!op)
		return error_reply("op: missing");
	if (strcmp(op, "register") == 0) {
		struct hezo_json *r;
		int nsfd = TAKE_FD(*fd);

		if (pd_register(req, nsfd, &err) < 0) {
			pd_log("warning", "register: %s", err->msg);
			return error_reply(err->msg);
		}
		pd_log("info", "registered %s", hezo_json_string(hezo_json_get(req, "id")));
		r = ok_reply();
		set_uint(r, "tcpPort", PD_TCP_PORT);
		set_uint(r, "dnsPort", PD_DNS_PORT);
		return r;
	}
	if (strcmp(op, "deregister") == 0) {
		const char *id = hezo_json_string(hezo_json_get(req, "id"));

		if (!id)
			return error_reply("id: missing");
		if (!pd_id_valid(id))
			return error_reply("id: not 1-128 characters of [A-Za-z0-9_.-]");
		if (pd_container_find(id))
			pd_log("info", "deregistered %s", id);
		pd_deregister(id);
		return ok_reply();
	}
	if (strcmp(op, "list") == 0)
		return do_list();
	if (strcmp(op, "stats") == 0)
		return do_stats();
	return error_reply("op: unknown (register, deregister, list, stats)");
}

static void on_conn(struct pd_watch *w, uint32_t events)
{
	struct ctl_conn *k = pd_container_of(w, struct ctl_conn, w);
	_cleanup_free_ char *buf = malloc(CTL_MSG_MAX);
	union {
		char b[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {.iov_base = buf, .iov_len = CTL_MSG_MAX};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf.b,
			    .msg_controllen = sizeof(cbuf.b)};
	struct cmsghdr *cm;
	_cleanup_close_ int fd = -1;
	bool extra = false;
	ssize_t n;

	if (!buf)
		return;
	n = recvmsg(w->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		pd_watch_close(w);
		pd_defer_free(k);
		return;
	}
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int f;

			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (fd < 0) {
				fd = f;
			} else {
				close(f);
				extra = true;
			}
		}
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		reply(w->fd, error_reply("message too long or too many fds"));
	else if (extra)
		reply(w->fd, error_reply("exactly one fd (the network namespace) expected"));
	else
		reply(w->fd, handle(buf, (size_t)n, &fd));
}

static void on_accept(struct pd_watch *w, uint32_t events)
{
	for (int i = 0; i < 8; i++) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct ctl_conn *k;
		int fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != 0) {
			/* Mode 0600 already keeps others out; this also covers a chmod by mistake.
			 */
			send(fd, "{\"ok\":false,\"error\":\"permission denied: uid 0 only\"}", 52,
			     MSG_NOSIGNAL);
			close(fd);
			continue;
		}
		k = calloc(1, sizeof(*k));
		if (!k) {
			close(fd);
			continue;
		}
		if (pd_watch_add(&k->w, fd, EPOLLIN, on_conn) < 0)
			free(k);
	}
}

int pd_control_init(struct hezo_error **err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	mode_t old;
	int fd, r;

	if (strlen(pd_cfg.socket) >= sizeof(sa.sun_path))
		return hezo_error_set(err, ENAMETOOLONG, "socket path %s too long", pd_cfg.socket);
	strcpy(sa.sun_path, pd_cfg.socket);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "socket");
	unlink(pd_cfg.socket);
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || chmod(pd_cfg.socket, 0600) < 0 || listen(fd, 64) < 0) {
		r = hezo_error_set_errno(err, errno, "control socket %s", pd_cfg.socket);
		close(fd);
		return r;
	}
	if (pd_watch_add(&listener, fd, EPOLLIN, on_accept) < 0)
		return hezo_error_set_errno(err, errno, "epoll");
	return 0;
}
