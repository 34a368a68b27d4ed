/*
 * The resolvers, as seen from proxyd's own namespace: one connected UDP socket per resolver
 * shared by every container's queries, query ids from the kernel's CSPRNG, (re)sending, and
 * answers matched to their query by id; idle sockets closed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <unistd.h>

#include "dnsproxy.h"

static struct upstream *upstreams;

/* ---- upstream ---- */

void dnsq_detach(struct pd_dnsq *d)
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

int dnsq_send(struct pd_dnsq *d, const struct hezo_resolver *r, pd_dns_answer_fn answer)
{
	uint8_t msg[HEZO_DNS_HEADER + 256 + 4 + 16];
	struct upstream *up;
	int n;

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
	d->answer = answer;
	d->idnext = up->byid[d->upid % DNS_UP_BUCKETS];
	up->byid[d->upid % DNS_UP_BUCKETS] = d;
	up->inflight++;
	d->sent_ms = up->last_ms = pd_now_ms();
	return 0;
}

/* A datagram from up: the answer to the query its id names, if one waits for it. */
static void upstream_answer(struct upstream *up, const uint8_t *in, size_t n)
{
	struct pd_dnsq *d;

	if (n < HEZO_DNS_HEADER)
		return;
	d = upstream_lookup(up, (uint16_t)(in[0] << 8 | in[1]));
	if (!d)
		return; /* not in flight (late, duplicate or forged): dropped */
	d->answer(d, in, n);
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

	if (dns_mmsg_ok()) {
		for (int i = 0; i < DNS_UP_PER_WAKEUP; i += DNS_BATCH) {
			int n = dns_rx_batch(w->fd, false);

			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (n < 0) {
				upstream_error(up);
				continue;
			}
			for (int j = 0; j < n; j++)
				upstream_answer(up, dns_rx.buf[j], dns_rx.mh[j].msg_len);
			if (n < DNS_BATCH)
				break; /* drained: no EAGAIN call needed to learn it */
		}
		dns_tx_flush();
		return;
	}
	for (int i = 0; i < DNS_UP_PER_WAKEUP; i++) {
		ssize_t n = recv(w->fd, dns_rx.buf[0], sizeof(dns_rx.buf[0]), 0);

		if (n >= 0) {
			upstream_answer(up, dns_rx.buf[0], (size_t)n);
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
