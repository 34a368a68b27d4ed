/* The DNS side's internals shared by dnsproxy.c (queries from containers, answers to them),
 * dnsproxy-upstream.c (the resolvers, from proxyd's own namespace) and dnsproxy-mmsg.c (UDP
 * batching). */
#ifndef HEZO_PROXYD_DNSPROXY_H
#define HEZO_PROXYD_DNSPROXY_H

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

struct pd_dnsq;
/* Where an upstream's answer goes: d is the query its id names (still waiting), msg the answer
 * as it came. */
typedef void (*pd_dns_answer_fn)(struct pd_dnsq *d, const uint8_t *msg, size_t len);

struct pd_dnsq {
	struct pd_dnsq *next, **pprev;
	struct pd_container *c;
	struct upstream *up; /* where it waits for an answer; NULL: to be (re)sent at the tick */
	struct pd_dnsq *idnext;
	pd_dns_answer_fn answer;
	struct pd_listener *udp; /* UDP client: the listener it came to */
	struct sockaddr_storage client;
	socklen_t clen;
	struct pd_dnsconn *tc; /* TCP client */
	struct hezo_dns_query q;
	uint8_t query[HEZO_DNS_HEADER + 256 + 4];
	uint16_t upid;
	unsigned attempt;
	uint64_t start_ms, sent_ms;
	uint64_t start_us; /* pd_dns_hist */
};

/* dnsproxy-mmsg.c */
struct dns_rx {
	struct mmsghdr mh[DNS_BATCH];
	struct iovec iov[DNS_BATCH];
	struct sockaddr_storage from[DNS_BATCH];
	uint8_t buf[DNS_BATCH][DNS_MSG_MAX];
};
extern struct dns_rx dns_rx;
bool dns_mmsg_ok(void);
void dns_tx_flush(void);
void dns_udp_send(int fd, const uint8_t *msg, size_t len, const struct sockaddr_storage *to,
		  socklen_t tolen);
int dns_rx_batch(int fd, bool want_from);

/* dnsproxy-upstream.c */
/* Take d off the resolver it waits on, if any. */
void dnsq_detach(struct pd_dnsq *d);
/* (Re)send d to r under a fresh id; its answer reaches answer(). */
int dnsq_send(struct pd_dnsq *d, const struct hezo_resolver *r, pd_dns_answer_fn answer);

#endif
