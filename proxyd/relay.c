/*
 * The transparent TCP relay, its front: accept in the container's namespace, recover the original
 * destination, decide from the ClientHello or request head (plain HTTP is then followed request by
 * request, relay-http.c), hand a secret's host to intercept.c, connect from proxyd's own
 * namespace, and the relay's timers. Copying is relay-copy.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>

#include "relay.h"

/* From linux/netfilter_ipv4.h and linux/netfilter_ipv6/ip6_tables.h, whose headers clash with
 * glibc's. */
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#define IP6T_SO_ORIGINAL_DST_ 80

static const uint8_t *sa_addr(const struct sockaddr_storage *ss, uint16_t *port)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;

		*port = ntohs(s->sin_port);
		return (const uint8_t *)&s->sin_addr;
	}
	*port = ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return (const uint8_t *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
}

static void rst_close(int fd)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

static void refuse(struct pd_conn *k, const char *reason)
{
	relay_conn_end(k, "deny", reason, true);
}

/* ---- connecting ---- */

static void on_upstream(struct pd_watch *w, uint32_t events);
static void on_client(struct pd_watch *w, uint32_t events);

static void connect_failed(struct pd_conn *k, int e)
{
	relay_conn_end(k, "error",
		       e == ECONNREFUSED ? "upstream refused the connection"
		       : e == ETIMEDOUT	 ? "upstream timed out"
					 : "upstream connect failed",
		       true);
}

static void connect_upstream(struct pd_conn *k, const char *reason)
{
	socklen_t len = k->t.dst.ss_family == AF_INET ? sizeof(struct sockaddr_in)
						      : sizeof(struct sockaddr_in6);
	bool cfail = false, ufail = false;
	int fd, r, one = 1;

	if (k->h.st != H_REFUSED) /* a pipelined request already refused keeps its reason */
		k->reason = reason;
	PD_COUNT(k->c, conns_allowed);
	/* This socket is created in proxyd's own (host) namespace. */
	fd = socket(k->t.dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		relay_conn_end(k, "error", "cannot create upstream socket", true);
		return;
	}
	k->connect_us = pd_now_us();
	if (connect(fd, (struct sockaddr *)&k->t.dst, len) < 0 && errno != EINPROGRESS) {
		close(fd);
		relay_conn_end(k, "error", "upstream connect failed", true);
		return;
	}
	pd_watch_init(&k->uw, fd, on_upstream);
	k->st = ST_CONNECTING;
	k->deadline_ms = pd_now_ms() + (uint64_t)pd_cfg.connect_timeout_s * 1000;
	/*
	 * On a local path (a veth, a bridge) the handshake has usually completed inside connect():
	 * send what the client has sent (the head, or bytes waiting on its socket) right away
	 * instead of a loop turn later. A send that gets EAGAIN means "still connecting"; the
	 * bytes then wait in the pipe or buffer for EPOLLOUT.
	 */
	r = relay_pump(k, &k->up, k->cw.fd, fd, k->up.len == 0, &cfail, &ufail);
	if (r < 0) {
		k->c_dead = cfail && r == -ECONNRESET;
		if (cfail)
			relay_conn_end(k, "allow", "client left while connecting", true);
		else
			connect_failed(k, -r);
		return;
	}
	/* A transparent proxy must not add Nagle delays the client did not ask for; the client
	 * side inherits TCP_NODELAY from its listener. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (k->up.bytes > 0) {
		/* Bytes went out: the handshake completed inside connect(). */
		pd_hist_observe(&pd_connect_hist, pd_now_us() - k->connect_us);
		k->st = ST_RELAY;
		k->last_ms = pd_now_ms();
		relay_run(k, 0, 0);
		return;
	}
	if (pd_watch_set(&k->uw, EPOLLOUT) < 0 || pd_watch_set(&k->cw, 0) < 0)
		relay_conn_end(k, "error", "epoll", true);
}

static void on_upstream(struct pd_watch *w, uint32_t events)
{
	struct pd_conn *k = pd_container_of(w, struct pd_conn, uw);

	if (k->st == ST_CONNECTING) {
		int e = 0;
		socklen_t elen = sizeof(e);

		/* Writable without an error is connected; only a failure needs SO_ERROR. */
		if (!(events & (EPOLLERR | EPOLLHUP))) {
			pd_hist_observe(&pd_connect_hist, pd_now_us() - k->connect_us);
			relay_start(k);
		} else {
			if (getsockopt(w->fd, SOL_SOCKET, SO_ERROR, &e, &elen) < 0)
				e = errno;
			connect_failed(k, e);
		}
		return;
	}
	relay_run(k, 0, events);
}

/* Hand the client socket and its ClientHello to intercept.c, a connection of member m; it leaves
 * the relay. */
static void intercept_handoff(struct pd_conn *k, const struct pd_member *m)
{
	int fd;

	*k->pprev = k->next;
	if (k->next)
		k->next->pprev = k->pprev;
	relay_nactive--;
	fd = pd_watch_release(&k->cw);
	pd_intercept_start(k->c, m, fd, k->up.buf, k->up.len, &k->t.src, &k->t.dst, k->t.name);
	relay_dir_release(&k->up);
	pd_defer_free(k);
}

static void read_head(struct pd_conn *k)
{
	char raw[HEZO_NAME_MAX];
	uint16_t port, hport = 0;
	const uint8_t *addr = sa_addr(&k->t.dst, &port);
	const char *kind;
	ssize_t n;
	int r;

	n = read(k->cw.fd, k->up.buf + k->up.len, PD_HEAD_MAX - k->up.len);
	if (n == 0) {
		refuse(k, "closed before sending a request");
		return;
	}
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			refuse(k, "read error");
		return;
	}
	k->up.len += (size_t)n;
	/* SSH names no host: the address's pin does, as for the client's own DNS lookup. */
	if (memcmp(k->up.buf, "SSH-", k->up.len < 4 ? k->up.len : 4) == 0) {
		const char *pinned;

		if (k->up.len < 4)
			return;
		pinned = hezo_pin_allowed_name(&k->c->pins, k->t.dst.ss_family, addr,
					       pd_now_ms() / 1000, &k->c->eg, port);
		if (!pinned) {
			refuse(k, "port not allowed for any name resolved to this address");
			return;
		}
		snprintf(k->t.name, sizeof(k->t.name), "%s", pinned);
		k->t.ssh = true;
		connect_upstream(k, "ssh");
		return;
	}
	if (k->up.buf[0] == 0x16) {
		kind = "sni";
		r = hezo_sni_parse(k->up.buf, k->up.len, raw);
	} else {
		kind = "host";
		r = hezo_http_parse_host(k->up.buf, k->up.len, raw, &hport);
	}
	if (r == -EAGAIN) {
		if (k->up.len == PD_HEAD_MAX)
			refuse(k, "request head over 16 KiB");
		return;
	}
	if (r == -E2BIG) {
		refuse(k, "ClientHello over 16 KiB");
		return;
	}
	if (r == -EPROTO) {
		refuse(k, "TLS Encrypted Client Hello hides the server name");
		return;
	}
	if (r == 0) {
		refuse(k, "TLS ClientHello without SNI");
		return;
	}
	if (r < 0) {
		refuse(k, kind[0] == 's'
				  ? "malformed TLS ClientHello"
				  : "not an HTTP/1 request with one Host header and unambiguous "
				    "framing");
		return;
	}
	if (hezo_name_normalize(raw, strlen(raw), k->t.name) < 0) {
		snprintf(k->t.name, sizeof(k->t.name), "%s", raw);
		refuse(k, kind[0] == 's' ? "SNI is not a valid host name"
					 : "Host is not a valid host name");
		return;
	}
	if (!hezo_egress_name_allowed(&k->c->eg, k->t.name, port)) {
		refuse(k, hezo_egress_name_listed(&k->c->eg, k->t.name)
				  ? "port not allowed for this name"
				  : (kind[0] == 's' ? "SNI names a host not allowed"
						    : "Host names a host not allowed"));
		return;
	}
	if (!hezo_pin_match(&k->c->pins, k->t.dst.ss_family, addr, k->t.name, pd_now_ms() / 1000)) {
		refuse(k, "destination is not an address proxyd resolved for this name");
		return;
	}
	/*
	 * A secret's host, of the member the connection came from: proxyd ends the TLS itself
	 * (intercept.c) and takes the socket. Another member's secret host is relayed as it is:
	 * this container has no value for it, and may not trust proxyd's CA.
	 */
	if (kind[0] == 's' && pd_intercept_wanted(k->c, NULL, k->t.name, port)) {
		const struct pd_member *m = pd_member_of(k->c, &k->t.src, &k->t.dst);

		if (m && pd_intercept_wanted(k->c, m, k->t.name, port)) {
			intercept_handoff(k, m);
			return;
		}
	}
	if (kind[0] == 'h') {
		/* Follow every request: this first one passes the check again, what the client
		 * sent after it is checked before it goes. */
		k->h.st = H_FOLLOW;
		hezo_http_track_init(&k->h.t);
		relay_http_advance(k);
		/* Refused already: nothing of it would go, so no upstream is connected for it. */
		if (k->h.st == H_REFUSED && k->h.nreq == 0) {
			relay_http_answer(k);
			relay_conn_end(k, "deny", k->reason, false);
			return;
		}
	}
	connect_upstream(k, kind[0] == 's' ? "sni" : "host");
}

static void on_client(struct pd_watch *w, uint32_t events)
{
	struct pd_conn *k = pd_container_of(w, struct pd_conn, cw);

	switch (k->st) {
	case ST_HEAD:
		read_head(k);
		break;
	case ST_CONNECTING:
		if (events & (EPOLLERR | EPOLLHUP))
			relay_conn_end(k, "allow", "client left while connecting", true);
		break;
	case ST_RELAY:
		relay_run(k, events, 0);
		break;
	}
}

static bool is_loopback(int family, const uint8_t *a)
{
	static const uint8_t v6lo[16] = {[15] = 1};

	return family == AF_INET ? a[0] == 127 : memcmp(a, v6lo, 16) == 0;
}

static void accept_one(struct pd_container *c, int fd, const struct sockaddr_storage *src,
		       int family)
{
	struct pd_conn *k;
	socklen_t dlen = sizeof(struct sockaddr_storage);
	uint16_t port;
	const uint8_t *addr;
	uint64_t now = pd_now_ms();

	k = calloc(1, sizeof(*k));
	if (!k) {
		rst_close(fd);
		close(fd);
		return;
	}
	k->c = c;
	k->t.src = *src;
	k->t.start_ms = now;
	k->uw.fd = -1;
	k->up.pipe[0] = k->up.pipe[1] = k->down.pipe[0] = k->down.pipe[1] = -1;
	/* Not in epoll until something is wanted from it: an address-allowed relay first waits
	 * for its upstream connect only. */
	pd_watch_init(&k->cw, fd, on_client);
	k->next = c->conns;
	k->pprev = &c->conns;
	if (c->conns)
		c->conns->pprev = &k->next;
	c->conns = k;
	c->nconns++;
	relay_nactive++;
	PD_COUNT(c, conns_accepted);
	if (c->nconns > pd_cfg.conn_cap) {
		refuse(k, "connection limit reached");
		return;
	}
	if (getsockopt(fd, family == AF_INET ? SOL_IP : SOL_IPV6,
		       family == AF_INET ? SO_ORIGINAL_DST : IP6T_SO_ORIGINAL_DST_, &k->t.dst,
		       &dlen) < 0) {
		refuse(k, "no original destination (connected to proxyd directly)");
		return;
	}
	addr = sa_addr(&k->t.dst, &port);
	if (is_loopback(k->t.dst.ss_family, addr)) {
		refuse(k, "loopback destination");
		return;
	}
	if (hezo_egress_cidr_allowed(&c->eg, k->t.dst.ss_family, addr, port)) {
		connect_upstream(k, "cidr");
		return;
	}
	if (!hezo_pin_any(&c->pins, k->t.dst.ss_family, addr, now / 1000)) {
		refuse(k, "destination was not resolved through proxyd");
		return;
	}
	/* No name this address was resolved for is allowed on this port (port 0 included): no
	 * request could be allowed, so none is waited for. */
	if (!hezo_pin_any_allowed(&c->pins, k->t.dst.ss_family, addr, now / 1000, &c->eg, port)) {
		refuse(k, "port not allowed for any name resolved to this address");
		return;
	}
	/* The head buffer is borrowed only while the head is read and forwarded. */
	k->up.buf = relay_head_get();
	if (!k->up.buf) {
		relay_conn_end(k, "error", "out of memory", true);
		return;
	}
	if (pd_watch_set(&k->cw, EPOLLIN | EPOLLRDHUP) < 0) {
		relay_conn_end(k, "error", "epoll", true);
		return;
	}
	k->st = ST_HEAD;
	k->deadline_ms = now + (uint64_t)pd_cfg.head_timeout_s * 1000;
}

void pd_tcp_accept(struct pd_watch *w, uint32_t events)
{
	struct pd_listener *l = pd_container_of(w, struct pd_listener, w);
	int family = l == &l->c->tcp[0] ? AF_INET : AF_INET6;

	/* A bounded number per wake-up: one container's burst must not hold the loop. */
	for (int i = 0; i < 16; i++) {
		struct sockaddr_storage src;
		socklen_t slen = sizeof(src);
		int fd = accept4(w->fd, (struct sockaddr *)&src, &slen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				pd_log("warning", "accept: %s", strerror(errno));
			return;
		}
		accept_one(l->c, fd, &src, family);
	}
}

void pd_conn_abort_all(struct pd_container *c)
{
	while (c->conns)
		relay_conn_end(c->conns, "deny", "container deregistered", true);
	pd_intercept_abort_all(c);
}

void pd_relay_each_ssh(struct pd_container *c, void (*fn)(struct pd_tcp *t, void *arg), void *arg)
{
	for (struct pd_conn *k = c->conns; k; k = k->next)
		if (k->t.ssh && (k->st == ST_RELAY || k->st == ST_CONNECTING))
			fn(&k->t, arg);
}

void pd_relay_tick(struct pd_container *c, uint64_t now)
{
	struct pd_conn *k = c->conns, *next;

	pd_intercept_tick(c, now);
	for (; k; k = next) {
		next = k->next;
		if (k->st == ST_HEAD && now >= k->deadline_ms)
			refuse(k, "no ClientHello or request head within the time limit");
		else if (k->st == ST_CONNECTING && now >= k->deadline_ms)
			relay_conn_end(k, "error", "upstream connect timed out", true);
		else if (k->st == ST_RELAY && k->h.st == H_REFUSED &&
			 now - k->h.refused_ms >= pd_cfg.head_timeout_s * 1000ull)
			relay_conn_end(k, "deny", k->reason,
				       true); /* the upstream never finished */
		else if (k->st == ST_RELAY && now - k->last_ms >= pd_cfg.idle_timeout_s * 1000ull)
			relay_conn_end(k, "allow", "idle timeout", true);
	}
}
