/*
 * The DNS side: listeners in each container's namespace (UDP and TCP), allowed names forwarded to
 * the container's resolvers from proxyd's own namespace (one socket per resolver, answers matched
 * by query id), answers filtered and pinned, every other name NXDOMAIN; with a per-container
 * token bucket.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <unistd.h>

#include "proxyd.h"

#define DNS_MSG_MAX	   4096
#define DNS_OUT_MAX	   8192
#define DNS_MAX_PENDING	   64
#define DNS_RETRY_MS	   2000
#define DNS_GIVEUP_MS	   5000
#define DNS_TCP_IDLE_MS	   10000
#define DNS_UDP_PER_WAKEUP 32
#define DNS_UP_PER_WAKEUP  64
#define DNS_BATCH	   32
#define DNS_TX_SLOT	   (HEZO_DNS_EDNS_SIZE + 48)
#define DNS_UP_BUCKETS	   256
#define DNS_UP_IDLE_MS	   60000

/*
 * A resolver as seen from proxyd's namespace: one connected UDP socket shared by every query to
 * it, whichever container asked. An answer finds its query by the id proxyd chose (unique among
 * those in flight on this socket) and must then carry the very question proxyd asked.
 */
struct upstream {
	struct upstream *next;
	struct pd_watch w;
	int family;
	uint8_t addr[16];
	uint16_t port;
	struct pd_dnsq *byid[DNS_UP_BUCKETS];
	unsigned inflight;
	uint64_t last_ms;
};

static struct upstream *upstreams;

struct pd_dnsconn {
	struct pd_dnsconn *next;
	struct pd_container *c;
	struct pd_watch w;
	struct sockaddr_storage src;
	struct pd_dnsq *pending;
	uint8_t in[2 + DNS_MSG_MAX];
	size_t inlen;
	uint8_t out[2 + DNS_OUT_MAX];
	size_t outoff, outlen;
	bool eof;
	uint64_t last_ms;
};

struct pd_dnsq {
	struct pd_dnsq *next, **pprev;
	struct pd_container *c;
	struct upstream *up; /* where it waits for an answer; NULL: to be (re)sent at the tick */
	struct pd_dnsq *idnext;
	struct pd_listener *udp; /* UDP client: the listener it came to */
	struct sockaddr_storage client;
	socklen_t clen;
	struct pd_dnsconn *tc; /* TCP client */
	struct hezo_dns_query q;
	uint8_t query[HEZO_DNS_HEADER + 256 + 4];
	uint16_t upid;
	unsigned attempt;
	uint64_t start_ms, sent_ms;
};

static const char *qtype_name(uint16_t t)
{
	static char buf[16];

	switch (t) {
	case HEZO_DNS_TYPE_A:
		return "A";
	case HEZO_DNS_TYPE_AAAA:
		return "AAAA";
	case HEZO_DNS_TYPE_CNAME:
		return "CNAME";
	case 12:
		return "PTR";
	case 15:
		return "MX";
	case 16:
		return "TXT";
	case 33:
		return "SRV";
	case 65:
		return "HTTPS";
	default:
		snprintf(buf, sizeof(buf), "TYPE%u", t);
		return buf;
	}
}

static void log_query(struct pd_container *c, const char *proto, const struct sockaddr_storage *src,
		      const struct sockaddr_storage *dst, const struct hezo_dns_query *q,
		      const char *verdict, const char *reason, const struct hezo_dns_result *res,
		      uint64_t start_ms)
{
	struct pd_netlog l = {
		.proto = proto,
		.src = src,
		.dst = dst,
		.name = q ? q->name : "",
		.qtype = q ? qtype_name(q->qtype) : NULL,
		.verdict = verdict,
		.reason = reason,
		.dns = res,
		.duration_ms = pd_now_ms() - start_ms,
	};

	pd_netlog_write(c, &l);
}

/*
 * ---- UDP batching ----
 * Datagrams are received with recvmmsg() and answers sent with sendmmsg(): one system call per
 * wake-up instead of one per datagram. Answers are queued only within one handler call and sent
 * before it returns, while every listener they go to is certainly still open (a closed and
 * reused fd number must never receive another container's answer). Where the kernel or a
 * seccomp filter refuses the calls, one call per datagram as before.
 */

enum { MMSG_UNKNOWN, MMSG_YES, MMSG_NO };
static int mmsg_state;

static bool mmsg_ok(void)
{
	if (mmsg_state == MMSG_UNKNOWN) {
		/* On an invalid fd the kernel says EBADF; a filter that forbids the call says
		 * something else (EPERM, ENOSYS) before the fd is looked at. */
		int r1 = recvmmsg(-1, NULL, 0, MSG_DONTWAIT, NULL) < 0 && errno == EBADF;
		int r2 = sendmmsg(-1, NULL, 0, MSG_DONTWAIT) < 0 && errno == EBADF;

		mmsg_state = r1 && r2 ? MMSG_YES : MMSG_NO;
	}
	return mmsg_state == MMSG_YES;
}

static struct {
	unsigned n;
	int fd[DNS_BATCH];
	struct mmsghdr mh[DNS_BATCH];
	struct iovec iov[DNS_BATCH];
	struct sockaddr_storage to[DNS_BATCH];
	uint8_t buf[DNS_BATCH][DNS_TX_SLOT];
} tx;

static struct {
	struct mmsghdr mh[DNS_BATCH];
	struct iovec iov[DNS_BATCH];
	struct sockaddr_storage from[DNS_BATCH];
	uint8_t buf[DNS_BATCH][DNS_MSG_MAX];
} rx;

/* Send the queued answers, a run of the same listener per sendmmsg(). A datagram that cannot
 * be sent is lost, as a single sendto() would lose it. */
static void tx_flush(void)
{
	unsigned i = 0;

	while (i < tx.n) {
		unsigned j = i + 1;

		while (j < tx.n && tx.fd[j] == tx.fd[i])
			j++;
		while (i < j) {
			int r = sendmmsg(tx.fd[i], &tx.mh[i], j - i, MSG_DONTWAIT);

			i += r > 0 ? (unsigned)r : 1;
		}
	}
	tx.n = 0;
}

static void udp_send(int fd, const uint8_t *msg, size_t len, const struct sockaddr_storage *to,
		     socklen_t tolen)
{
	unsigned i;

	if (len > DNS_TX_SLOT || tolen > sizeof(tx.to[0]) || !mmsg_ok()) {
		sendto(fd, msg, len, MSG_DONTWAIT, (const struct sockaddr *)to, tolen);
		return;
	}
	if (tx.n == DNS_BATCH)
		tx_flush();
	i = tx.n++;
	memcpy(tx.buf[i], msg, len);
	memcpy(&tx.to[i], to, tolen);
	tx.fd[i] = fd;
	tx.iov[i] = (struct iovec){.iov_base = tx.buf[i], .iov_len = len};
	tx.mh[i] = (struct mmsghdr){.msg_hdr = {.msg_name = &tx.to[i],
						.msg_namelen = tolen,
						.msg_iov = &tx.iov[i],
						.msg_iovlen = 1}};
}

/* Receive up to DNS_BATCH datagrams into rx; returns how many, or -1 with errno. */
static int rx_batch(int fd, bool want_from)
{
	for (unsigned i = 0; i < DNS_BATCH; i++) {
		rx.iov[i] = (struct iovec){.iov_base = rx.buf[i], .iov_len = sizeof(rx.buf[i])};
		rx.mh[i] = (struct mmsghdr){
			.msg_hdr = {.msg_name = want_from ? &rx.from[i] : NULL,
				    .msg_namelen = want_from ? sizeof(rx.from[i]) : 0,
				    .msg_iov = &rx.iov[i],
				    .msg_iovlen = 1}};
	}
	return recvmmsg(fd, rx.mh, DNS_BATCH, MSG_DONTWAIT, NULL);
}

/* ---- sending answers ---- */

static void dnsconn_close(struct pd_dnsconn *t);
static void dnsconn_next(struct pd_dnsconn *t);

static void tcp_queue(struct pd_dnsconn *t, const uint8_t *msg, size_t len)
{
	if (len > DNS_OUT_MAX || t->outlen) {
		dnsconn_close(t);
		return;
	}
	t->out[0] = (uint8_t)(len >> 8);
	t->out[1] = (uint8_t)len;
	memcpy(t->out + 2, msg, len);
	t->outoff = 0;
	t->outlen = len + 2;
	pd_watch_set(&t->w, EPOLLOUT);
}

static void send_answer(struct pd_listener *udp, const struct sockaddr_storage *client,
			socklen_t clen, struct pd_dnsconn *tc, const uint8_t *msg, size_t len)
{
	if (tc)
		tcp_queue(tc, msg, len);
	else if (udp && udp->w.fd >= 0)
		udp_send(udp->w.fd, msg, len, client, clen);
}

static void answer_empty(struct pd_listener *udp, const struct sockaddr_storage *client,
			 socklen_t clen, struct pd_dnsconn *tc, const uint8_t *query,
			 const struct hezo_dns_query *q, int rcode)
{
	uint8_t out[HEZO_DNS_HEADER + 256 + 4 + 16];
	int n = hezo_dns_build_empty(query, q, rcode, out, sizeof(out));

	if (n > 0)
		send_answer(udp, client, clen, tc, out, (size_t)n);
}

/* ---- upstream ---- */

static void dnsq_detach(struct pd_dnsq *d)
{
	struct upstream *up = d->up;

	if (!up)
		return;
	for (struct pd_dnsq **p = &up->byid[d->upid % DNS_UP_BUCKETS]; *p; p = &(*p)->idnext) {
		if (*p == d) {
			*p = d->idnext;
			break;
		}
	}
	up->inflight--;
	d->up = NULL;
	d->idnext = NULL;
}

static struct pd_dnsq *upstream_lookup(struct upstream *up, uint16_t id)
{
	for (struct pd_dnsq *d = up->byid[id % DNS_UP_BUCKETS]; d; d = d->idnext)
		if (d->upid == id)
			return d;
	return NULL;
}

/* Query ids from the kernel's CSPRNG, fetched a batch at a time. */
static uint16_t random_id(void)
{
	static uint16_t ids[256];
	static unsigned left;

	if (!left) {
		if (getrandom(ids, sizeof(ids), GRND_NONBLOCK) != (ssize_t)sizeof(ids)) {
			uint64_t x = pd_now_ms() * 0x9E3779B97F4A7C15ull ^ (uintptr_t)&x;

			for (unsigned i = 0; i < HEZO_ARRAY_SIZE(ids); i++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				ids[i] = (uint16_t)x;
			}
		}
		left = HEZO_ARRAY_SIZE(ids);
	}
	return ids[--left];
}

static void dnsq_free(struct pd_dnsq *d)
{
	struct pd_container *c = d->c;

	*d->pprev = d->next;
	if (d->next)
		d->next->pprev = d->pprev;
	c->ndnsq--;
	if (d->tc && d->tc->pending == d)
		d->tc->pending = NULL;
	dnsq_detach(d);
	pd_defer_free(d);
}

static const struct hezo_resolver *resolver_for(struct pd_container *c, unsigned attempt)
{
	if (c->eg.nresolvers)
		return &c->eg.resolvers[attempt % c->eg.nresolvers];
	if (pd_cfg.upstream.family)
		return &pd_cfg.upstream;
	return NULL;
}

static int resolver_addr(const struct hezo_resolver *r, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (r->family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(r->port);
		memcpy(&s->sin_addr, r->addr, 4);
		return sizeof(*s);
	}
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(r->port);
	memcpy(&s6->sin6_addr, r->addr, 16);
	return sizeof(*s6);
}

static void on_upstream_readable(struct pd_watch *w, uint32_t events);

static struct upstream *upstream_get(const struct hezo_resolver *r)
{
	size_t alen = r->family == AF_INET ? 4 : 16;
	struct sockaddr_storage ss;
	struct upstream *up;
	int len, fd;

	for (up = upstreams; up; up = up->next)
		if (up->family == r->family && up->port == r->port &&
		    memcmp(up->addr, r->addr, alen) == 0)
			return up;
	up = calloc(1, sizeof(*up));
	if (!up)
		return NULL;
	up->family = r->family;
	up->port = r->port;
	memcpy(up->addr, r->addr, alen);
	len = resolver_addr(r, &ss);
	/* Created in proxyd's own namespace; connected, so only this resolver's datagrams
	 * arrive on it. */
	fd = socket(r->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		free(up);
		return NULL;
	}
	if (connect(fd, (struct sockaddr *)&ss, (socklen_t)len) < 0) {
		close(fd);
		free(up);
		return NULL;
	}
	if (pd_watch_add(&up->w, fd, EPOLLIN, on_upstream_readable) < 0) {
		free(up); /* pd_watch_add closed fd */
		return NULL;
	}
	up->next = upstreams;
	upstreams = up;
	return up;
}

/* (Re)send d to resolver number d->attempt under a fresh id. */
static int dnsq_send(struct pd_dnsq *d)
{
	const struct hezo_resolver *r = resolver_for(d->c, d->attempt);
	uint8_t msg[HEZO_DNS_HEADER + 256 + 4 + 16];
	struct upstream *up;
	int n;

	if (!r)
		return -ENOENT;
	dnsq_detach(d);
	up = upstream_get(r);
	if (!up)
		return -ENETUNREACH;
	/* An id not in flight on this socket; the table is kept at most half full, so this
	 * ends at once. */
	if (up->inflight >= 32768)
		return -EBUSY;
	do
		d->upid = random_id();
	while (upstream_lookup(up, d->upid));
	n = hezo_dns_build_query(d->upid, d->q.name, d->q.qtype, msg, sizeof(msg));
	if (n < 0)
		return n;
	if (send(up->w.fd, msg, (size_t)n, 0) < 0) {
		/* A connected UDP socket reports an earlier ICMP error on the next call: once. */
		if (errno != ECONNREFUSED || send(up->w.fd, msg, (size_t)n, 0) < 0)
			return -errno;
	}
	d->up = up;
	d->idnext = up->byid[d->upid % DNS_UP_BUCKETS];
	up->byid[d->upid % DNS_UP_BUCKETS] = d;
	up->inflight++;
	d->sent_ms = up->last_ms = pd_now_ms();
	return 0;
}

static bool keep_addr(int family, const uint8_t *addr, void *userdata)
{
	struct pd_container *c = userdata;

	/* The host itself is never reachable by name, whatever allowRanges says. */
	if (pd_host_addr(family, addr))
		return false;
	return hezo_egress_range_allowed(&c->eg, family, addr) ||
	       !hezo_addr_is_special(family, addr);
}

static void dnsq_finish(struct pd_dnsq *d, const uint8_t *msg, size_t len, const char *verdict,
			const char *reason, const struct hezo_dns_result *res)
{
	struct sockaddr_storage *dst = NULL;

	if (d->tc) {
		send_answer(NULL, NULL, 0, d->tc, msg, len);
		log_query(d->c, "dns/tcp", &d->tc->src, dst, &d->q, verdict, reason, res,
			  d->start_ms);
	} else {
		send_answer(d->udp, &d->client, d->clen, NULL, msg, len);
		log_query(d->c, "dns/udp", &d->client, dst, &d->q, verdict, reason, res,
			  d->start_ms);
	}
	dnsq_free(d);
}

static void dnsq_fail(struct pd_dnsq *d, const char *reason)
{
	uint8_t out[HEZO_DNS_HEADER + 256 + 4 + 16];
	struct hezo_dns_result res = {.rcode = HEZO_DNS_SERVFAIL};
	int n = hezo_dns_build_empty(d->query, &d->q, HEZO_DNS_SERVFAIL, out, sizeof(out));

	d->c->st.dns_failed++;
	pd_stats.dns_failed++;
	if (n < 0)
		n = 0;
	dnsq_finish(d, out, (size_t)n, "error", reason, &res);
}

static void upstream_answer(struct upstream *up, const uint8_t *in, size_t n)
{
	uint8_t out[DNS_OUT_MAX];
	struct hezo_dns_result res;
	struct pd_dnsq *d;
	size_t limit;
	uint64_t now_s = pd_now_ms() / 1000;
	int r;

	if (n < HEZO_DNS_HEADER)
		return;
	d = upstream_lookup(up, (uint16_t)(in[0] << 8 | in[1]));
	if (!d)
		return; /* not in flight (late, duplicate or forged): dropped */
	if (d->tc)
		limit = DNS_OUT_MAX;
	else if (d->q.edns_size)
		limit = d->q.edns_size < HEZO_DNS_EDNS_SIZE ? d->q.edns_size : HEZO_DNS_EDNS_SIZE;
	else
		limit = 512;
	r = hezo_dns_filter_response(in, n, d->query, &d->q, keep_addr, d->c, out, sizeof(out),
				     limit, &res);
	if (r == -EBADMSG)
		return; /* not an answer to our question: keep waiting for the real one */
	if (r < 0) {
		dnsq_fail(d, "answer too large");
		return;
	}
	for (size_t i = 0; i < res.naddrs; i++)
		hezo_pin_add(&d->c->pins, res.addrs[i].family, res.addrs[i].addr, d->q.name,
			     res.addrs[i].ttl, now_s);
	d->c->st.dns_allowed++;
	pd_stats.dns_allowed++;
	dnsq_finish(d, out, (size_t)r, "allow",
		    res.nremoved ? "forwarded; private or host addresses removed" : "forwarded",
		    &res);
}

static void upstream_error(struct upstream *up)
{
	/* ICMP unreachable from the resolver: whatever waits on it tries the next resolver at
	 * the next tick. */
	for (unsigned b = 0; b < DNS_UP_BUCKETS; b++)
		while (up->byid[b])
			dnsq_detach(up->byid[b]);
}

static void on_upstream_readable(struct pd_watch *w, uint32_t events)
{
	struct upstream *up = pd_container_of(w, struct upstream, w);

	if (mmsg_ok()) {
		for (int i = 0; i < DNS_UP_PER_WAKEUP; i += DNS_BATCH) {
			int n = rx_batch(w->fd, false);

			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (n < 0) {
				upstream_error(up);
				continue;
			}
			for (int j = 0; j < n; j++)
				upstream_answer(up, rx.buf[j], rx.mh[j].msg_len);
			if (n < DNS_BATCH)
				break; /* drained: no EAGAIN call needed to learn it */
		}
		tx_flush();
		return;
	}
	for (int i = 0; i < DNS_UP_PER_WAKEUP; i++) {
		ssize_t n = recv(w->fd, rx.buf[0], sizeof(rx.buf[0]), 0);

		if (n >= 0) {
			upstream_answer(up, rx.buf[0], (size_t)n);
			continue;
		}
		if (errno == EAGAIN || errno == EINTR)
			return;
		upstream_error(up);
	}
}

void pd_dns_upstreams_tick(uint64_t now)
{
	for (struct upstream **p = &upstreams; *p;) {
		struct upstream *up = *p;

		if (up->inflight || now - up->last_ms < DNS_UP_IDLE_MS) {
			p = &up->next;
			continue;
		}
		*p = up->next;
		pd_watch_close(&up->w);
		pd_defer_free(up);
	}
}

/* ---- queries from the container ---- */

static bool rate_ok(struct pd_container *c, uint64_t now)
{
	double burst = 2.0 * pd_cfg.dns_rate;

	c->tokens += (double)(now - c->tokens_ms) * pd_cfg.dns_rate / 1000.0;
	c->tokens_ms = now;
	if (c->tokens > burst)
		c->tokens = burst;
	if (c->tokens < 1.0)
		return false;
	c->tokens -= 1.0;
	return true;
}

static void handle_query(struct pd_container *c, const uint8_t *msg, size_t len,
			 struct pd_listener *udp, const struct sockaddr_storage *client,
			 socklen_t clen, struct pd_dnsconn *tc)
{
	const char *proto = tc ? "dns/tcp" : "dns/udp";
	struct hezo_dns_query q;
	struct hezo_dns_result res = {0};
	uint64_t now = pd_now_ms();
	struct pd_dnsq *d;
	int r;

	c->st.dns_queries++;
	pd_stats.dns_queries++;
	if (!rate_ok(c, now)) {
		c->st.dns_ratelimited++;
		pd_stats.dns_ratelimited++;
		/* One line per second is enough to show a flood. */
		if (c->ratelimit_logged_s != now / 1000) {
			c->ratelimit_logged_s = now / 1000;
			log_query(c, proto, client, NULL, NULL, "deny",
				  "query rate limit (further drops this second not logged)", NULL,
				  now);
		}
		if (tc)
			dnsconn_close(tc);
		return;
	}
	r = hezo_dns_parse_query(msg, len, &q);
	if (r < 0) {
		if (len >= HEZO_DNS_HEADER && !(msg[2] & 0x80)) {
			uint8_t out[HEZO_DNS_HEADER] = {msg[0], msg[1], 0x80,
							0x80 | HEZO_DNS_FORMERR};

			send_answer(udp, client, clen, tc, out, sizeof(out));
		}
		c->st.dns_refused++;
		pd_stats.dns_refused++;
		log_query(c, proto, client, NULL, NULL, "deny", "malformed query", NULL, now);
		return;
	}
	res.rcode = HEZO_DNS_NXDOMAIN;
	if (q.opcode != 0 || q.qclass != HEZO_DNS_CLASS_IN) {
		res.rcode = q.opcode ? HEZO_DNS_NOTIMP : HEZO_DNS_REFUSED;
		answer_empty(udp, client, clen, tc, msg, &q, res.rcode);
		c->st.dns_refused++;
		pd_stats.dns_refused++;
		log_query(c, proto, client, NULL, &q, "deny", "only standard IN queries", &res,
			  now);
		return;
	}
	if (!q.name[0] || !hezo_egress_name_listed(&c->eg, q.name)) {
		answer_empty(udp, client, clen, tc, msg, &q, HEZO_DNS_NXDOMAIN);
		c->st.dns_refused++;
		pd_stats.dns_refused++;
		log_query(c, proto, client, NULL, &q, "deny", "name not allowed", &res, now);
		return;
	}
	if (q.qtype != HEZO_DNS_TYPE_A && q.qtype != HEZO_DNS_TYPE_AAAA) {
		res.rcode = HEZO_DNS_NOERROR;
		answer_empty(udp, client, clen, tc, msg, &q, HEZO_DNS_NOERROR);
		log_query(c, proto, client, NULL, &q, "allow", "only A and AAAA are answered", &res,
			  now);
		return;
	}
	if (c->ndnsq >= DNS_MAX_PENDING) {
		res.rcode = HEZO_DNS_SERVFAIL;
		answer_empty(udp, client, clen, tc, msg, &q, HEZO_DNS_SERVFAIL);
		log_query(c, proto, client, NULL, &q, "error", "too many queries in flight", &res,
			  now);
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return;
	d->c = c;
	d->udp = udp;
	if (client) {
		d->client = *client;
		d->clen = clen;
	}
	d->tc = tc;
	d->q = q;
	memcpy(d->query, msg, q.qend);
	d->start_ms = now;
	d->next = c->queries;
	d->pprev = &c->queries;
	if (c->queries)
		c->queries->pprev = &d->next;
	c->queries = d;
	c->ndnsq++;
	if (tc)
		tc->pending = d;
	r = dnsq_send(d);
	if (r == -ENOENT)
		dnsq_fail(d, "no resolver configured");
	else if (r < 0)
		dnsq_fail(d, "cannot reach the resolver");
}

void pd_dns_udp(struct pd_watch *w, uint32_t events)
{
	struct pd_listener *l = pd_container_of(w, struct pd_listener, w);

	if (mmsg_ok()) {
		int n = rx_batch(w->fd, true);

		for (int i = 0; i < n && w->fd >= 0; i++)
			handle_query(l->c, rx.buf[i], rx.mh[i].msg_len, l, &rx.from[i],
				     rx.mh[i].msg_hdr.msg_namelen, NULL);
		tx_flush();
		return;
	}
	for (int i = 0; i < DNS_UDP_PER_WAKEUP && w->fd >= 0; i++) {
		struct sockaddr_storage client;
		socklen_t clen = sizeof(client);
		ssize_t n = recvfrom(w->fd, rx.buf[0], sizeof(rx.buf[0]), 0,
				     (struct sockaddr *)&client, &clen);

		if (n < 0)
			return;
		handle_query(l->c, rx.buf[0], (size_t)n, l, &client, clen, NULL);
	}
}

/* ---- DNS over TCP ---- */

static void dnsconn_close(struct pd_dnsconn *t)
{
	struct pd_container *c = t->c;

	if (t->w.fd < 0)
		return;
	for (struct pd_dnsconn **p = &c->dnsconns; *p; p = &(*p)->next) {
		if (*p == t) {
			*p = t->next;
			break;
		}
	}
	if (t->pending)
		t->pending->tc = NULL; /* its answer goes nowhere */
	if (t->pending) {
		/* Still counted until the query ends; the client just no longer waits. */
		t->pending = NULL;
	}
	c->nconns--;
	pd_watch_close(&t->w);
	pd_defer_free(t);
}

/* Serve the next complete query in the input, or wait for more. */
static void dnsconn_next(struct pd_dnsconn *t)
{
	size_t mlen;

	if (t->pending || t->outlen)
		return;
	if (t->inlen >= 2) {
		mlen = (size_t)t->in[0] << 8 | t->in[1];
		if (mlen < HEZO_DNS_HEADER || mlen > DNS_MSG_MAX) {
			dnsconn_close(t);
			return;
		}
		if (t->inlen >= 2 + mlen) {
			uint8_t msg[DNS_MSG_MAX];

			memcpy(msg, t->in + 2, mlen);
			memmove(t->in, t->in + 2 + mlen, t->inlen - 2 - mlen);
			t->inlen -= 2 + mlen;
			handle_query(t->c, msg, mlen, NULL, &t->src, sizeof(t->src), t);
			return;
		}
	}
	if (t->eof) {
		dnsconn_close(t);
		return;
	}
	pd_watch_set(&t->w, EPOLLIN | EPOLLRDHUP);
}

static void on_dnsconn(struct pd_watch *w, uint32_t events)
{
	struct pd_dnsconn *t = pd_container_of(w, struct pd_dnsconn, w);
	ssize_t n;

	t->last_ms = pd_now_ms();
	if (t->outlen) {
		n = write(w->fd, t->out + t->outoff, t->outlen);
		if (n < 0 && errno != EAGAIN && errno != EINTR) {
			dnsconn_close(t);
			return;
		}
		if (n > 0) {
			t->outoff += (size_t)n;
			t->outlen -= (size_t)n;
		}
		if (t->outlen) {
			if (events & (EPOLLERR | EPOLLHUP))
				dnsconn_close(t);
			return;
		}
		dnsconn_next(t);
		return;
	}
	if (t->pending) {
		/* Waiting for upstream with nothing wanted from the client. */
		if (events & (EPOLLERR | EPOLLHUP))
			dnsconn_close(t);
		return;
	}
	n = read(w->fd, t->in + t->inlen, sizeof(t->in) - t->inlen);
	if (n == 0) {
		t->eof = true;
	} else if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			dnsconn_close(t);
		return;
	} else {
		t->inlen += (size_t)n;
	}
	dnsconn_next(t);
	if (t->w.fd >= 0 && t->pending)
		pd_watch_set(&t->w, 0);
}

void pd_dns_tcp_accept(struct pd_watch *w, uint32_t events)
{
	struct pd_listener *l = pd_container_of(w, struct pd_listener, w);
	struct pd_container *c = l->c;

	for (int i = 0; i < 16; i++) {
		struct sockaddr_storage src;
		socklen_t slen = sizeof(src);
		struct pd_dnsconn *t;
		int fd = accept4(w->fd, (struct sockaddr *)&src, &slen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		if (c->nconns >= pd_cfg.conn_cap || !(t = calloc(1, sizeof(*t)))) {
			log_query(c, "dns/tcp", &src, NULL, NULL, "deny",
				  "connection limit reached", NULL, pd_now_ms());
			close(fd);
			continue;
		}
		t->c = c;
		t->src = src;
		t->last_ms = pd_now_ms();
		if (pd_watch_add(&t->w, fd, EPOLLIN | EPOLLRDHUP, on_dnsconn) < 0) {
			free(t);
			continue;
		}
		t->next = c->dnsconns;
		c->dnsconns = t;
		c->nconns++;
	}
}

void pd_dns_abort_all(struct pd_container *c)
{
	while (c->dnsconns)
		dnsconn_close(c->dnsconns);
	while (c->queries)
		dnsq_free(c->queries);
}

void pd_dns_tick(struct pd_container *c, uint64_t now)
{
	struct pd_dnsq *d, *dn;
	struct pd_dnsconn *t, *tn;

	for (d = c->queries; d; d = dn) {
		dn = d->next;
		if (now - d->start_ms >= DNS_GIVEUP_MS) {
			dnsq_fail(d, "resolver did not answer");
		} else if (now - d->sent_ms >= DNS_RETRY_MS || !d->up) {
			d->attempt++;
			if (dnsq_send(d) < 0)
				d->sent_ms = now;
		}
	}
	tx_flush();
	for (t = c->dnsconns; t; t = tn) {
		tn = t->next;
		if (!t->pending && now - t->last_ms >= DNS_TCP_IDLE_MS)
			dnsconn_close(t);
	}
}
