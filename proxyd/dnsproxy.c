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

#include "dnsproxy.h"

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
		dns_udp_send(udp->w.fd, msg, len, client, clen);
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

	pd_hist_observe(&pd_dns_hist, pd_now_us() - d->start_us);
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

	PD_COUNT(d->c, dns_failed);
	if (n < 0)
		n = 0;
	dnsq_finish(d, out, (size_t)n, "error", reason, &res);
}

static const struct hezo_resolver *resolver_for(struct pd_container *c, unsigned attempt)
{
	if (c->eg.nresolvers)
		return &c->eg.resolvers[attempt % c->eg.nresolvers];
	if (pd_cfg.upstream.family)
		return &pd_cfg.upstream;
	return NULL;
}

/* The answer to d from its resolver (pd_dns_answer_fn): filtered, pinned, sent on. */
static void on_answer(struct pd_dnsq *d, const uint8_t *in, size_t n)
{
	uint8_t out[DNS_OUT_MAX];
	struct hezo_dns_result res;
	size_t limit;
	uint64_t now_s = pd_now_ms() / 1000;
	int r;

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
	PD_COUNT(d->c, dns_allowed);
	dnsq_finish(d, out, (size_t)r, "allow",
		    res.nremoved ? "forwarded; private or host addresses removed" : "forwarded",
		    &res);
}

/* (Re)send d to resolver number d->attempt. */
static int send_query(struct pd_dnsq *d)
{
	const struct hezo_resolver *r = resolver_for(d->c, d->attempt);

	if (!r)
		return -ENOENT;
	return dnsq_send(d, r, on_answer);
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

	PD_COUNT(c, dns_queries);
	if (!rate_ok(c, now)) {
		PD_COUNT(c, dns_ratelimited);
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
		PD_COUNT(c, dns_refused);
		log_query(c, proto, client, NULL, NULL, "deny", "malformed query", NULL, now);
		return;
	}
	res.rcode = HEZO_DNS_NXDOMAIN;
	if (q.opcode != 0 || q.qclass != HEZO_DNS_CLASS_IN) {
		res.rcode = q.opcode ? HEZO_DNS_NOTIMP : HEZO_DNS_REFUSED;
		answer_empty(udp, client, clen, tc, msg, &q, res.rcode);
		PD_COUNT(c, dns_refused);
		log_query(c, proto, client, NULL, &q, "deny", "only standard IN queries", &res,
			  now);
		return;
	}
	if (!q.name[0] || !hezo_egress_name_listed(&c->eg, q.name)) {
		answer_empty(udp, client, clen, tc, msg, &q, HEZO_DNS_NXDOMAIN);
		PD_COUNT(c, dns_refused);
		log_query(c, proto, client, NULL, &q, "deny", "name not allowed", &res, now);
		return;
	}
	if (q.qtype != HEZO_DNS_TYPE_A && q.qtype != HEZO_DNS_TYPE_AAAA) {
		res.rcode = HEZO_DNS_NOERROR;
		answer_empty(udp, client, clen, tc, msg, &q, HEZO_DNS_NOERROR);
		/* Counted as its netlog line says, so every query has one outcome in the metrics.
		 */
		PD_COUNT(c, dns_allowed);
		log_query(c, proto, client, NULL, &q, "allow", "only A and AAAA are answered", &res,
			  now);
		return;
	}
	if (c->ndnsq >= DNS_MAX_PENDING) {
		res.rcode = HEZO_DNS_SERVFAIL;
		answer_empty(udp, client, clen, tc, msg, &q, HEZO_DNS_SERVFAIL);
		PD_COUNT(c, dns_failed);
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
	d->start_us = pd_now_us();
	d->next = c->queries;
	d->pprev = &c->queries;
	if (c->queries)
		c->queries->pprev = &d->next;
	c->queries = d;
	c->ndnsq++;
	if (tc)
		tc->pending = d;
	r = send_query(d);
	if (r == -ENOENT)
		dnsq_fail(d, "no resolver configured");
	else if (r < 0)
		dnsq_fail(d, "cannot reach the resolver");
}

void pd_dns_udp(struct pd_watch *w, uint32_t events)
{
	struct pd_listener *l = pd_container_of(w, struct pd_listener, w);

	if (dns_mmsg_ok()) {
		int n = dns_rx_batch(w->fd, true);

		for (int i = 0; i < n && w->fd >= 0; i++)
			handle_query(l->c, dns_rx.buf[i], dns_rx.mh[i].msg_len, l, &dns_rx.from[i],
				     dns_rx.mh[i].msg_hdr.msg_namelen, NULL);
		dns_tx_flush();
		return;
	}
	for (int i = 0; i < DNS_UDP_PER_WAKEUP && w->fd >= 0; i++) {
		struct sockaddr_storage client;
		socklen_t clen = sizeof(client);
		ssize_t n = recvfrom(w->fd, dns_rx.buf[0], sizeof(dns_rx.buf[0]), 0,
				     (struct sockaddr *)&client, &clen);

		if (n < 0)
			return;
		handle_query(l->c, dns_rx.buf[0], (size_t)n, l, &client, clen, NULL);
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
			if (send_query(d) < 0)
				d->sent_ms = now;
		}
	}
	dns_tx_flush();
	for (t = c->dnsconns; t; t = tn) {
		tn = t->next;
		if (!t->pending && now - t->last_ms >= DNS_TCP_IDLE_MS)
			dnsconn_close(t);
	}
}
