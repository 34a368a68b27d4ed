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

#include "hezo-fdpass.h"
#include "proxyd.h"

#define CTL_MSG_MAX (64 * 1024)

struct ctl_conn {
	struct pd_watch w; /* first: pd_server_accept() makes it */
};
_Static_assert(offsetof(struct ctl_conn, w) == 0, "ctl_conn");

static struct pd_watch listener = {.fd = -1};

static void reply(int fd, struct hezo_json *r)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *out = NULL;
	size_t len;

	pd_metrics.control_requests++; /* one reply per request */
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
	pd_metrics.control_errors++;
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

/*
 * list and stats answer in pages: one SEQPACKET message each, so a reply never outgrows the
 * socket buffer or a client's receive buffer whatever the number of containers. A page holds the
 * containers after the request's cursor in id order, up to PAGE_BUDGET bytes of entries (at least
 * one), and names its last id in "next" when more follow. Ids registered or removed between pages
 * cannot make a client see an id twice or miss one that stayed registered throughout.
 */
#define PAGE_BUDGET (32 * 1024)

static int by_id(const void *a, const void *b)
{
	return strcmp((*(struct pd_container *const *)a)->id,
		      (*(struct pd_container *const *)b)->id);
}

/* The containers after `after` ("": all) in id order; NULL only when out of memory. */
static struct pd_container **sorted_after(const char *after, size_t *n)
{
	struct pd_container **v;
	size_t total = 0;

	for (struct pd_container *c = pd_containers; c; c = c->next)
		total++;
	v = calloc(total ? total : 1, sizeof(*v));
	if (!v)
		return NULL;
	*n = 0;
	for (struct pd_container *c = pd_containers; c; c = c->next)
		if (!after[0] || strcmp(c->id, after) > 0)
			v[(*n)++] = c;
	qsort(v, *n, sizeof(*v), by_id);
	return v;
}

static struct hezo_json *list_entry(const struct pd_container *c)
{
	struct hezo_json *o = hezo_json_new_object();
	struct hezo_json *allow = hezo_json_get_path(c->reg, "egress.allow");

	struct hezo_json *members = hezo_json_new_array();

	if (o && (hezo_json_set(o, "id", hezo_json_new_string(c->id)) < 0 ||
		  hezo_json_set(o, "project", hezo_json_new_string(c->project)) < 0 ||
		  hezo_json_set(o, "allow",
				allow ? hezo_json_clone(allow) : hezo_json_new_array()) < 0 ||
		  hezo_json_set(o, "members", members) < 0)) {
		hezo_json_free(o);
		return NULL;
	}
	if (!o) {
		hezo_json_free(members);
		return NULL;
	}
	for (size_t i = 0; i < c->nmembers; i++)
		if (hezo_json_append(members, hezo_json_new_string(c->members[i]->id)) < 0) {
			hezo_json_free(o);
			return NULL;
		}
	return o;
}

static struct hezo_json *stats_entry(const struct pd_container *c)
{
	struct hezo_json *o = stats_json(&c->st);

	if (o && hezo_json_set(o, "id", hezo_json_new_string(c->id)) < 0) {
		hezo_json_free(o);
		return NULL;
	}
	set_uint(o, "connsOpen", c->nconns);
	set_uint(o, "dnsInFlight", c->ndnsq);
	set_uint(o, "pins", c->pins.n);
	return o;
}

/* Fill arr with one page of entries; returns the id to continue after, "" at the end, or NULL
 * when out of memory. */
static const char *fill_page(struct hezo_json *arr, const char *after,
			     struct hezo_json *(*entry)(const struct pd_container *))
{
	_cleanup_free_ struct pd_container **v = NULL;
	size_t n = 0, used = 0;

	v = sorted_after(after, &n);
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		_cleanup_error_ struct hezo_error *err = NULL;
		_cleanup_free_ char *text = NULL;
		struct hezo_json *o = entry(v[i]);
		size_t len;

		if (!o || hezo_json_dump(o, false, &text, &len, &err) < 0) {
			hezo_json_free(o);
			return NULL;
		}
		if (i > 0 && used + len + 1 > PAGE_BUDGET) {
			hezo_json_free(o);
			return v[i - 1]->id;
		}
		if (hezo_json_append(arr, o) < 0)
			return NULL;
		used += len + 1;
	}
	return "";
}

static struct hezo_json *finish_page(struct hezo_json *r, const char *next)
{
	if (!next || (next[0] && hezo_json_set(r, "next", hezo_json_new_string(next)) < 0)) {
		hezo_json_free(r);
		return error_reply("out of memory");
	}
	return r;
}

static struct hezo_json *do_list(const char *after)
{
	struct hezo_json *r = ok_reply(), *arr = hezo_json_new_array();

	if (!r || !arr || hezo_json_set(r, "containers", arr) < 0) {
		hezo_json_free(r);
		return error_reply("out of memory");
	}
	return finish_page(r, fill_page(arr, after, list_entry));
}

static struct hezo_json *do_stats(const char *after)
{
	struct hezo_json *r = ok_reply(), *arr = hezo_json_new_array();
	unsigned n = 0;

	for (struct pd_container *c = pd_containers; c; c = c->next)
		n++;
	if (!r || !arr) {
		hezo_json_free(r);
		hezo_json_free(arr);
		return error_reply("out of memory");
	}
	hezo_json_set(r, "containers", hezo_json_new_uint(n));
	set_uint(r, "connsOpen", pd_relay_active());
	hezo_json_set(r, "total", stats_json(&pd_stats));
	if (hezo_json_set(r, "perContainer", arr) < 0) {
		hezo_json_free(r);
		return error_reply("out of memory");
	}
	return finish_page(r, fill_page(arr, after, stats_entry));
}

static struct hezo_json *handle(const char *buf, size_t len, int *fd)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_(hezo_ctl_request_clear) struct hezo_ctl_request q = {0};
	struct hezo_json *r;

	if (hezo_ctl_request_parse(buf, len, &q, &err) < 0) {
		pd_log("warning", "request refused: %s", err->msg);
		return error_reply(err->msg);
	}
	switch (q.op) {
	case HEZO_CTL_REGISTER:
		if (pd_register(&q, TAKE_FD(*fd), &err) < 0) {
			pd_metrics.registration_errors++;
			pd_log("warning", "register %s: %s", q.id, err->msg);
			return error_reply(err->msg);
		}
		pd_log("info", "registered %s", q.id);
		pd_metrics.registrations++;
		r = ok_reply();
		set_uint(r, "tcpPort", PD_TCP_PORT);
		set_uint(r, "dnsPort", PD_DNS_PORT);
		return r;
	case HEZO_CTL_DEREGISTER:
		if (pd_container_find(q.id)) {
			pd_log("info", "deregistered %s", q.id);
			pd_metrics.deregistrations++;
		}
		pd_deregister(q.id);
		return ok_reply();
	case HEZO_CTL_LIST:
		return do_list(q.after);
	case HEZO_CTL_STATS:
		return do_stats(q.after);
	}
	return error_reply("op: unknown");
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
	_cleanup_close_ int fd = -1;
	bool extra;
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
	extra = hezo_fdpass_take(&mh, &fd, 1) > 1;
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		reply(w->fd, error_reply("message too long or too many fds"));
	else if (extra)
		reply(w->fd, error_reply("exactly one fd (the network namespace) expected"));
	else
		reply(w->fd, handle(buf, (size_t)n, &fd));
}

static void on_accept(struct pd_watch *w, uint32_t events)
{
	pd_server_accept(w, sizeof(struct ctl_conn), true,
			 "{\"ok\":false,\"error\":\"permission denied: uid 0 only\"}", on_conn);
}

int pd_control_init(struct hezo_error **err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, r;

	if (strlen(pd_cfg.socket) >= sizeof(sa.sun_path))
		return hezo_error_set(err, ENAMETOOLONG, "socket path %s too long", pd_cfg.socket);
	strcpy(sa.sun_path, pd_cfg.socket);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "socket");
	unlink(pd_cfg.socket);
	r = pd_server_bind(fd, (struct sockaddr *)&sa, sizeof(sa), 64);
	if (r < 0) {
		r = hezo_error_set_errno(err, -r, "control socket %s", pd_cfg.socket);
		close(fd);
		return r;
	}
	if (pd_watch_add(&listener, fd, EPOLLIN, on_accept) < 0)
		return hezo_error_set_errno(err, errno, "epoll");
	return 0;
}
