/*
 * The transparent TCP relay: accept in the container's namespace, recover the original
 * destination, decide from the ClientHello or request head, connect from proxyd's own namespace
 * and copy both ways with backpressure, half-close and splice() through a pipe. On plain HTTP
 * every request of the connection is read (http.c) before it is passed: each must name the host
 * the connection was allowed for.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>

#include "proxyd.h"

/* From linux/netfilter_ipv4.h and linux/netfilter_ipv6/ip6_tables.h, whose headers clash with
 * glibc's. */
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#define IP6T_SO_ORIGINAL_DST_ 80

#define PUMP_ROUNDS 8
/* Pipes are grown to this (when the pipe quota allows) so one splice() moves a whole socket
 * queue: fewer system calls per byte on bulk transfers. Pages are only held while bytes are. */
#define PIPE_SIZE    (256 * 1024)
#define PIPE_DEFAULT (64 * 1024)
/* Spare head buffers and pipes kept for the next connection instead of freed and re-created. */
#define HEAD_POOL 16
#define PIPE_POOL 64

enum conn_state { ST_HEAD, ST_CONNECTING, ST_RELAY };

/*
 * Where a plain-HTTP connection's client stream is. H_NONE: not followed (TLS, an address
 * entry): bytes pass as they come. H_OPAQUE: the server switched protocols (101): the same.
 */
enum http_state {
	H_NONE,
	H_HEAD,	   /* the next request head is due */
	H_LENGTH,  /* a Content-Length body: h.left bytes to pass */
	H_CHUNKED, /* a chunked body: h.ch follows it */
	H_HOLD,	   /* an Upgrade request went out: the client waits until the answer is seen */
	H_OPAQUE,
	H_REFUSED, /* a request was refused: answered 403 once the earlier responses are out */
};

/*
 * One direction of a relay. Bytes leave in order: first buf (the request head proxyd read, or a
 * copy buffer when no pipe can be had), then the pipe. Both are borrowed from pools only while
 * they hold bytes, so an idle relay holds its two sockets and nothing else.
 */
struct dir {
	int pipe[2];
	uint32_t pipe_cap;
	bool pipe_full, eof, shut; /* packed with pipe_cap: a relay is mostly these structs */
	size_t inpipe;
	uint8_t *buf; /* PD_HEAD_MAX bytes when set */
	size_t off, len;
	uint64_t bytes;
};

struct pd_conn {
	struct pd_conn *next, **pprev;
	struct pd_container *c;
	struct pd_watch cw, uw;
	enum conn_state st;
	/* A side whose peer already reset it: no SO_LINGER needed there. */
	bool c_dead, u_dead;
	struct sockaddr_storage src, dst;
	char name[HEZO_NAME_MAX];
	const char *reason;
	uint64_t start_ms, deadline_ms, last_ms;
	struct dir up, down;
	struct {
		uint8_t st;    /* enum http_state */
		uint32_t nreq; /* requests passed */
		size_t ok;     /* H_HEAD..H_HOLD: bytes at the front of up.buf checked to go */
		uint64_t refused_ms; /* H_REFUSED: when it happened */
		union {
			uint64_t left;		     /* H_LENGTH */
			struct hezo_http_chunked ch; /* H_CHUNKED */
		};
	} h;
};

static unsigned nactive;

unsigned pd_relay_active(void)
{
	return nactive;
}

/* ---- pools ---- */

static uint8_t *head_pool[HEAD_POOL];
static unsigned nhead_pool;
static struct {
	int fd[2];
	uint32_t cap;
} pipe_pool[PIPE_POOL];
static unsigned npipe_pool;

static uint8_t *head_get(void)
{
	if (nhead_pool)
		return head_pool[--nhead_pool];
	return malloc(PD_HEAD_MAX);
}

static void head_put(uint8_t *buf)
{
	if (!buf)
		return;
	if (nhead_pool < HEAD_POOL)
		head_pool[nhead_pool++] = buf;
	else
		free(buf);
}

static int pipe_get(struct dir *d)
{
	int r;

	if (npipe_pool) {
		npipe_pool--;
		d->pipe[0] = pipe_pool[npipe_pool].fd[0];
		d->pipe[1] = pipe_pool[npipe_pool].fd[1];
		d->pipe_cap = pipe_pool[npipe_pool].cap;
		return 0;
	}
	if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
		d->pipe[0] = d->pipe[1] = -1;
		return -errno;
	}
	/* Over the user's pipe quota this fails and the pipe keeps its default size. */
	r = fcntl(d->pipe[1], F_SETPIPE_SZ, PIPE_SIZE);
	d->pipe_cap = r > 0 ? (uint32_t)r : PIPE_DEFAULT;
	return 0;
}

/*
 * Give d's pipe back. Only an empty pipe may serve another connection (maybe another
 * container's): one still holding bytes is closed with them.
 */
static void pipe_put(struct dir *d)
{
	if (d->pipe[0] < 0)
		return;
	if (d->inpipe == 0 && npipe_pool < PIPE_POOL) {
		pipe_pool[npipe_pool].fd[0] = d->pipe[0];
		pipe_pool[npipe_pool].fd[1] = d->pipe[1];
		pipe_pool[npipe_pool].cap = d->pipe_cap;
		npipe_pool++;
	} else {
		close(d->pipe[0]);
		close(d->pipe[1]);
	}
	d->pipe[0] = d->pipe[1] = -1;
	d->inpipe = 0;
	d->pipe_full = false;
}

static void dir_release(struct dir *d)
{
	pipe_put(d);
	head_put(d->buf);
	d->buf = NULL;
	d->off = d->len = 0;
}

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

static void log_conn(struct pd_conn *k, const char *verdict, const char *reason)
{
	struct pd_netlog l = {
		.proto = "tcp",
		.src = &k->src,
		.dst = &k->dst,
		.name = k->name,
		.verdict = verdict,
		.reason = reason,
		.bytes_out = k->up.bytes,
		.bytes_in = k->down.bytes,
		.has_bytes = true,
		.duration_ms = pd_now_ms() - k->start_ms,
	};

	pd_netlog_write(k->c, &l);
}

/* Close both sides (with a reset if rst), log, and free at the end of the batch. */
static void conn_end(struct pd_conn *k, const char *verdict, const char *reason, bool rst)
{
	struct pd_container *c = k->c;

	*k->pprev = k->next;
	if (k->next)
		k->next->pprev = k->pprev;
	c->nconns--;
	nactive--;
	log_conn(k, verdict, reason);
	c->st.bytes_out += k->up.bytes;
	c->st.bytes_in += k->down.bytes;
	pd_stats.bytes_out += k->up.bytes;
	pd_stats.bytes_in += k->down.bytes;
	if (strcmp(verdict, "deny") == 0) {
		c->st.conns_refused++;
		pd_stats.conns_refused++;
	}
	/* Both sockets are this process's alone: close() also takes them out of epoll. A peer
	 * that reset its side needs no reset back. */
	pd_watch_drop_later(&k->cw, rst && !k->c_dead);
	pd_watch_drop_later(&k->uw, rst && !k->u_dead);
	dir_release(&k->up);
	dir_release(&k->down);
	pd_defer_free(k);
}

static void refuse(struct pd_conn *k, const char *reason)
{
	conn_end(k, "deny", reason, true);
}

/* ---- copying ---- */

static bool dir_has_data(const struct dir *d)
{
	return d->len > 0 || d->inpipe > 0;
}

static bool dir_can_fill(const struct dir *d)
{
	if (d->eof)
		return false;
	if (d->pipe[0] >= 0)
		return !d->pipe_full && d->inpipe < d->pipe_cap;
	return !d->buf || d->off + d->len < PD_HEAD_MAX || d->off > 0;
}

/* ---- following plain HTTP (the client's direction only) ---- */

static bool http_followed(const struct pd_conn *k, const struct dir *d)
{
	return d == &k->up && k->h.st != H_NONE && k->h.st != H_OPAQUE;
}

/* Buffered bytes that may be written: on a followed connection only the checked ones. */
static size_t dir_sendable(const struct pd_conn *k, const struct dir *d)
{
	return http_followed(k, d) ? k->h.ok : d->len;
}

static bool conn_has_data(const struct pd_conn *k, const struct dir *d)
{
	return dir_sendable(k, d) > 0 || d->inpipe > 0;
}

static const char *conn_verdict(const struct pd_conn *k)
{
	return k->h.st == H_REFUSED ? "deny" : "allow";
}

/* Stop passing the client's bytes: those checked still go, the rest is dropped, nothing more
 * is read; the upstream gets a half-close, and the client a 403 when the upstream is done. */
static void http_refuse(struct pd_conn *k, const char *reason)
{
	struct dir *d = &k->up;

	k->h.st = H_REFUSED;
	k->reason = reason;
	k->h.refused_ms = pd_now_ms();
	d->len = k->h.ok;
	if (d->len == 0)
		d->off = 0;
	d->eof = true;
}

/* Check what has arrived after the bytes already checked, request by request. */
static void http_advance(struct pd_conn *k)
{
	struct dir *d = &k->up;

	while (k->h.ok < d->len) {
		const uint8_t *p = d->buf + d->off + k->h.ok;
		size_t avail = d->len - k->h.ok, used = 0;
		struct hezo_http_request req;
		char name[HEZO_NAME_MAX];
		int r;

		switch (k->h.st) {
		case H_HEAD:
			r = hezo_http_parse_request(p, avail, &req);
			if (r == -EAGAIN) {
				if (avail >= PD_HEAD_MAX)
					http_refuse(k, "a later request head is over 16 KiB");
				return;
			}
			if (r < 0) {
				http_refuse(k, "a later request is not HTTP/1 with one Host header "
					       "and unambiguous framing");
				return;
			}
			if (hezo_name_normalize(req.host, strlen(req.host), name) < 0 ||
			    strcmp(name, k->name) != 0) {
				http_refuse(k, "a later request's Host names another host than the "
					       "connection was allowed for");
				return;
			}
			/* Never substituted over plain HTTP, and a placeholder goes nowhere. */
			if (pd_intercept_plain_refused(k->c, p, req.head_len)) {
				http_refuse(k, "a secret's placeholder over plain HTTP");
				return;
			}
			k->h.nreq++;
			k->h.ok += req.head_len;
			if (req.upgrade) {
				k->h.st = H_HOLD;
				return;
			}
			if (req.body == HEZO_HTTP_BODY_LENGTH && req.length > 0) {
				k->h.left = req.length;
				k->h.st = H_LENGTH;
			} else if (req.body == HEZO_HTTP_BODY_CHUNKED) {
				hezo_http_chunked_init(&k->h.ch);
				k->h.st = H_CHUNKED;
			}
			break;
		case H_LENGTH:
			used = avail < k->h.left ? avail : (size_t)k->h.left;
			k->h.ok += used;
			k->h.left -= used;
			if (k->h.left == 0)
				k->h.st = H_HEAD;
			break;
		case H_CHUNKED:
			r = hezo_http_chunked_scan(&k->h.ch, p, avail, &used);
			if (r < 0) {
				http_refuse(k, "a malformed chunked request body");
				return;
			}
			k->h.ok += used;
			if (r == 1)
				k->h.st = H_HEAD;
			break;
		default:
			return;
		}
	}
}

/*
 * After an Upgrade request the first bytes of the answer decide: "HTTP/1.1 101" to the
 * connection's first request, before any response byte was passed, makes the rest opaque;
 * anything else means the connection stays HTTP, and the client's next bytes are a request.
 */
static void http_upgrade_answer(struct pd_conn *k)
{
	static const char sw[] = "HTTP/1.1 101";
	uint8_t peek[sizeof(sw) - 1];
	ssize_t n = recv(k->uw.fd, peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT);

	if (n < 0)
		return;
	if (n > 0 && memcmp(peek, sw, (size_t)n) == 0 && (size_t)n < sizeof(peek))
		return; /* not enough to tell yet */
	if ((size_t)n == sizeof(peek) && memcmp(peek, sw, sizeof(peek)) == 0 && k->h.nreq == 1 &&
	    k->down.bytes == 0 && !conn_has_data(k, &k->down)) {
		k->h.st = H_OPAQUE;
		return;
	}
	k->h.st = H_HEAD;
	http_advance(k);
}

/*
 * How the client's next bytes may be read on a followed connection: 0 not now, 1 into the pipe
 * (at most *max: body bytes need no look), 2 into the buffer to be checked. Buffer and pipe never
 * both hold bytes, so the order they leave in is the order they came.
 */
static int http_fill_mode(const struct pd_conn *k, uint64_t *max)
{
	const struct dir *d = &k->up;
	uint64_t body = 0;

	if (d->eof || k->h.st == H_HOLD || k->h.st == H_REFUSED)
		return 0;
	if (k->h.st == H_LENGTH)
		body = k->h.left;
	else if (k->h.st == H_CHUNKED)
		body = hezo_http_chunked_data_left(&k->h.ch);
	if (body > 0 && d->len == 0) {
		if (d->pipe[0] >= 0 && (d->pipe_full || d->inpipe >= d->pipe_cap))
			return 0;
		*max = body;
		return 1;
	}
	if (d->inpipe > 0)
		return 0;
	if (d->buf && d->off == 0 && d->len == PD_HEAD_MAX)
		return 0;
	return 2;
}

static bool conn_can_fill(const struct pd_conn *k, const struct dir *d)
{
	uint64_t max;

	if (!http_followed(k, d))
		return dir_can_fill(d);
	return http_fill_mode(k, &max) != 0;
}

/* Read what src has into d: into a pipe from the pool, or into a buffer when none can be had.
 * *want: how much was asked for. */
static ssize_t dir_fill(struct dir *d, int src, size_t *want)
{
	ssize_t n;

	if (d->pipe[0] < 0)
		pipe_get(d);
	if (d->pipe[0] >= 0) {
		*want = d->pipe_cap - d->inpipe;
		n = splice(src, NULL, d->pipe[1], NULL, *want, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
		if (n > 0)
			d->inpipe += (size_t)n;
		else if (n < 0 && errno == EAGAIN && d->inpipe > 0)
			d->pipe_full = true; /* out of pipe slots, not of data */
		return n;
	}
	if (!d->buf) {
		d->buf = head_get();
		if (!d->buf) {
			errno = ENOMEM;
			return -1;
		}
		d->off = d->len = 0;
	}
	if (d->off + d->len == PD_HEAD_MAX && d->off > 0) {
		memmove(d->buf, d->buf + d->off, d->len);
		d->off = 0;
	}
	*want = PD_HEAD_MAX - d->off - d->len;
	n = read(src, d->buf + d->off + d->len, *want);
	if (n > 0)
		d->len += (size_t)n;
	return n;
}

/* dir_fill for a followed client: body bytes spliced as they are, the rest read and checked. */
static ssize_t http_fill(struct pd_conn *k, struct dir *d, int src, size_t *want)
{
	uint64_t max = 0;
	int mode = http_fill_mode(k, &max);
	ssize_t n;

	if (mode == 0) {
		*want = 1;
		errno = EAGAIN;
		return -1;
	}
	if (mode == 1 && d->pipe[0] < 0)
		pipe_get(d);
	if (mode == 1 && d->pipe[0] >= 0) {
		*want = d->pipe_cap - d->inpipe;
		if (*want > max)
			*want = (size_t)max;
		n = splice(src, NULL, d->pipe[1], NULL, *want, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
		if (n > 0) {
			d->inpipe += (size_t)n;
			if (k->h.st == H_LENGTH) {
				k->h.left -= (uint64_t)n;
				if (k->h.left == 0)
					k->h.st = H_HEAD;
			} else {
				hezo_http_chunked_skip(&k->h.ch, (uint64_t)n);
			}
		} else if (n < 0 && errno == EAGAIN && d->inpipe > 0) {
			d->pipe_full = true;
		}
		return n;
	}
	if (!d->buf) {
		d->buf = head_get();
		if (!d->buf) {
			errno = ENOMEM;
			return -1;
		}
		d->off = d->len = 0;
	}
	if (d->off + d->len == PD_HEAD_MAX && d->off > 0) {
		memmove(d->buf, d->buf + d->off, d->len);
		d->off = 0;
	}
	*want = PD_HEAD_MAX - d->off - d->len;
	n = read(src, d->buf + d->off + d->len, *want);
	if (n > 0) {
		d->len += (size_t)n;
		http_advance(k);
	} else if (n == 0) {
		d->len = k->h.ok; /* a request cut short is not passed */
		if (d->len == 0)
			d->off = 0;
	}
	return n;
}

/*
 * Move what we can from src to dst. readable: src reported data (or may have some); without it
 * src is not read, so no read is spent on an EAGAIN epoll already predicted. A short read means
 * src's queue is drained and a short write that dst is full: neither is tried again until epoll
 * says so, which saves the EAGAIN call each would cost. Returns -errno on a fatal error (and
 * marks the side that failed), else 0.
 */
static int pump(struct pd_conn *k, struct dir *d, int src, int dst, bool readable, bool *src_failed,
		bool *dst_failed)
{
	bool moved = false, writable = true;

	/* Freeing room in a full pipe makes room for what src may still hold. */
	if (d->pipe_full)
		readable = true;
	for (int round = 0; round < PUMP_ROUNDS; round++) {
		bool progress = false;
		size_t want;
		ssize_t n;

		/* Drain first: the buffer (the request head) goes before anything in the pipe. */
		if (dir_sendable(k, d) > 0 && writable) {
			want = dir_sendable(k, d);
			n = write(dst, d->buf + d->off, want);
			if (n > 0) {
				if (http_followed(k, d))
					k->h.ok -= (size_t)n;
				d->off += (size_t)n;
				d->len -= (size_t)n;
				d->bytes += (uint64_t)n;
				if (d->len == 0)
					d->off = 0;
				progress = true;
			}
			if (n < (ssize_t)want) {
				if (n < 0 && errno != EAGAIN && errno != EINTR) {
					*dst_failed = true;
					return -errno;
				}
				writable = false;
			}
		}
		if (d->len == 0 && d->inpipe > 0 && writable) {
			want = d->inpipe;
			n = splice(d->pipe[0], NULL, dst, NULL, want,
				   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
			if (n > 0) {
				d->inpipe -= (size_t)n;
				d->bytes += (uint64_t)n;
				d->pipe_full = false;
				progress = true;
			}
			if (n < (ssize_t)want) {
				if (n < 0 && errno != EAGAIN && errno != EINTR) {
					*dst_failed = true;
					return -errno;
				}
				writable = false;
			}
		}
		if (readable && conn_can_fill(k, d)) {
			n = http_followed(k, d) ? http_fill(k, d, src, &want)
						: dir_fill(d, src, &want);
			if (n > 0) {
				progress = true;
				if ((size_t)n < want)
					readable = false;
			} else if (n == 0) {
				d->eof = true;
				progress = true;
			} else if (errno == EAGAIN) {
				readable = false;
			} else if (errno != EINTR) {
				*src_failed = true;
				return -errno;
			}
		}
		if (!progress)
			break;
		moved = true;
	}
	if (moved)
		k->last_ms = pd_now_ms();
	/* Hand back what holds nothing: an idle relay keeps no pipe and no buffer. */
	if (d->inpipe == 0)
		pipe_put(d);
	if (d->len == 0 && d->buf) {
		head_put(d->buf);
		d->buf = NULL;
		d->off = 0;
	}
	/* Not before the upstream connect completed: a shutdown then would abort it. Nor to a
	 * refused client, which gets its 403 after the upstream's last bytes. */
	if (d->eof && !dir_has_data(d) && !d->shut && k->st == ST_RELAY &&
	    !(d == &k->down && k->h.st == H_REFUSED)) {
		shutdown(dst, SHUT_WR);
		d->shut = true;
	}
	return 0;
}

static void relay_interest(struct pd_conn *k)
{
	uint32_t ce = 0, ue = 0;

	if (conn_can_fill(k, &k->up))
		ce |= EPOLLIN | EPOLLRDHUP;
	if (dir_has_data(&k->down))
		ce |= EPOLLOUT;
	if (dir_can_fill(&k->down))
		ue |= EPOLLIN | EPOLLRDHUP;
	if (conn_has_data(k, &k->up))
		ue |= EPOLLOUT;
	if (pd_watch_set(&k->cw, ce) < 0 || pd_watch_set(&k->uw, ue) < 0)
		conn_end(k, "error", "epoll", true);
}

#define EV_READABLE (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)

static void refused_answer(struct pd_conn *k)
{
	static const char msg[] = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
				  "Content-Length: 35\r\nConnection: close\r\n\r\n"
				  "hezo-proxyd: this request is denied";
	ssize_t n = write(k->cw.fd, msg, sizeof(msg) - 1);

	(void)n; /* a client that cannot take 150 bytes gets only the close */
}

static void relay_run(struct pd_conn *k, uint32_t cev, uint32_t uev)
{
	bool cfail = false, ufail = false;
	bool uread = uev & EV_READABLE;
	int r;

	if (k->h.st == H_HOLD && uread) {
		http_upgrade_answer(k);
		/* Undecided: leave the answer unread until more of it has come. */
		uread = k->h.st != H_HOLD;
	}
	r = pump(k, &k->up, k->cw.fd, k->uw.fd, cev & EV_READABLE, &cfail, &ufail);
	if (r == 0)
		r = pump(k, &k->down, k->uw.fd, k->cw.fd, uread, &ufail, &cfail);
	if (r < 0) {
		k->c_dead = cfail && r == -ECONNRESET;
		k->u_dead = ufail && r == -ECONNRESET;
		conn_end(k, conn_verdict(k), k->reason, true);
		return;
	}
	if (k->h.st == H_REFUSED && k->down.eof && !dir_has_data(&k->down)) {
		refused_answer(k);
		conn_end(k, "deny", k->reason, false);
		return;
	}
	if (k->up.shut && k->down.shut) {
		conn_end(k, "allow", k->reason, false);
		return;
	}
	/* A side that hung up or failed while we want nothing from it would spin the loop. */
	if ((cev & (EPOLLERR | EPOLLHUP)) && !conn_can_fill(k, &k->up) && !dir_has_data(&k->down)) {
		conn_end(k, conn_verdict(k), k->reason, true);
		return;
	}
	if ((uev & (EPOLLERR | EPOLLHUP)) && !dir_can_fill(&k->down) && !conn_has_data(k, &k->up)) {
		conn_end(k, conn_verdict(k), k->reason, true);
		return;
	}
	relay_interest(k);
}

static void relay_start(struct pd_conn *k)
{
	k->st = ST_RELAY;
	k->last_ms = pd_now_ms();
	/* The client may have sent already (it usually has): try it once; upstream has just
	 * connected and epoll will say when it speaks. */
	relay_run(k, EPOLLIN, 0);
}

/* ---- connecting ---- */

static void on_upstream(struct pd_watch *w, uint32_t events);
static void on_client(struct pd_watch *w, uint32_t events);

static void connect_failed(struct pd_conn *k, int e)
{
	conn_end(k, "error",
		 e == ECONNREFUSED ? "upstream refused the connection"
		 : e == ETIMEDOUT  ? "upstream timed out"
				   : "upstream connect failed",
		 true);
}

static void connect_upstream(struct pd_conn *k, const char *reason)
{
	socklen_t len = k->dst.ss_family == AF_INET ? sizeof(struct sockaddr_in)
						    : sizeof(struct sockaddr_in6);
	bool cfail = false, ufail = false;
	int fd, r, one = 1;

	if (k->h.st != H_REFUSED) /* a pipelined request already refused keeps its reason */
		k->reason = reason;
	k->c->st.conns_allowed++;
	pd_stats.conns_allowed++;
	/* This socket is created in proxyd's own (host) namespace. */
	fd = socket(k->dst.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		conn_end(k, "error", "cannot create upstream socket", true);
		return;
	}
	if (connect(fd, (struct sockaddr *)&k->dst, len) < 0 && errno != EINPROGRESS) {
		close(fd);
		conn_end(k, "error", "upstream connect failed", true);
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
	r = pump(k, &k->up, k->cw.fd, fd, k->up.len == 0, &cfail, &ufail);
	if (r < 0) {
		k->c_dead = cfail && r == -ECONNRESET;
		if (cfail)
			conn_end(k, "allow", "client left while connecting", true);
		else
			connect_failed(k, -r);
		return;
	}
	/* A transparent proxy must not add Nagle delays the client did not ask for; the client
	 * side inherits TCP_NODELAY from its listener. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (k->up.bytes > 0) {
		k->st = ST_RELAY;
		k->last_ms = pd_now_ms();
		relay_run(k, 0, 0);
		return;
	}
	if (pd_watch_set(&k->uw, EPOLLOUT) < 0 || pd_watch_set(&k->cw, 0) < 0)
		conn_end(k, "error", "epoll", true);
}

static void on_upstream(struct pd_watch *w, uint32_t events)
{
	struct pd_conn *k = pd_container_of(w, struct pd_conn, uw);

	if (k->st == ST_CONNECTING) {
		int e = 0;
		socklen_t elen = sizeof(e);

		/* Writable without an error is connected; only a failure needs SO_ERROR. */
		if (!(events & (EPOLLERR | EPOLLHUP))) {
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

/* Hand the client socket and its ClientHello to intercept.c; the connection leaves the relay. */
static void intercept_handoff(struct pd_conn *k)
{
	int fd;

	*k->pprev = k->next;
	if (k->next)
		k->next->pprev = k->pprev;
	nactive--;
	fd = pd_watch_release(&k->cw);
	pd_intercept_start(k->c, fd, k->up.buf, k->up.len, &k->src, &k->dst, k->name);
	dir_release(&k->up);
	pd_defer_free(k);
}

static void read_head(struct pd_conn *k)
{
	char raw[HEZO_NAME_MAX];
	uint16_t port, hport = 0;
	const uint8_t *addr = sa_addr(&k->dst, &port);
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
	if (hezo_name_normalize(raw, strlen(raw), k->name) < 0) {
		snprintf(k->name, sizeof(k->name), "%s", raw);
		refuse(k, kind[0] == 's' ? "SNI is not a valid host name"
					 : "Host is not a valid host name");
		return;
	}
	if (!hezo_egress_name_allowed(&k->c->eg, k->name, port)) {
		refuse(k, hezo_egress_name_listed(&k->c->eg, k->name)
				  ? "port not allowed for this name"
				  : (kind[0] == 's' ? "SNI names a host not allowed"
						    : "Host names a host not allowed"));
		return;
	}
	if (!hezo_pin_match(&k->c->pins, k->dst.ss_family, addr, k->name, pd_now_ms() / 1000)) {
		refuse(k, "destination is not an address proxyd resolved for this name");
		return;
	}
	/* A secret's host: proxyd ends the TLS itself (intercept.c) and takes the socket. */
	if (kind[0] == 's' && pd_intercept_wanted(k->c, k->name, port)) {
		intercept_handoff(k);
		return;
	}
	if (kind[0] == 'h') {
		/* Follow every request: this first one passes the check again, what the client
		 * sent after it is checked before it goes. */
		k->h.st = H_HEAD;
		http_advance(k);
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
			conn_end(k, "allow", "client left while connecting", true);
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
	k->src = *src;
	k->start_ms = now;
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
	nactive++;
	c->st.conns_accepted++;
	pd_stats.conns_accepted++;
	if (c->nconns > pd_cfg.conn_cap) {
		refuse(k, "connection limit reached");
		return;
	}
	if (getsockopt(fd, family == AF_INET ? SOL_IP : SOL_IPV6,
		       family == AF_INET ? SO_ORIGINAL_DST : IP6T_SO_ORIGINAL_DST_, &k->dst,
		       &dlen) < 0) {
		refuse(k, "no original destination (connected to proxyd directly)");
		return;
	}
	addr = sa_addr(&k->dst, &port);
	if (is_loopback(k->dst.ss_family, addr)) {
		refuse(k, "loopback destination");
		return;
	}
	if (hezo_egress_cidr_allowed(&c->eg, k->dst.ss_family, addr, port)) {
		connect_upstream(k, "cidr");
		return;
	}
	if (!hezo_pin_any(&c->pins, k->dst.ss_family, addr, now / 1000)) {
		refuse(k, "destination was not resolved through proxyd");
		return;
	}
	/* No name this address was resolved for is allowed on this port (port 0 included): no
	 * request could be allowed, so none is waited for. */
	if (!hezo_pin_any_allowed(&c->pins, k->dst.ss_family, addr, now / 1000, &c->eg, port)) {
		refuse(k, "port not allowed for any name resolved to this address");
		return;
	}
	/* The head buffer is borrowed only while the head is read and forwarded. */
	k->up.buf = head_get();
	if (!k->up.buf) {
		conn_end(k, "error", "out of memory", true);
		return;
	}
	if (pd_watch_set(&k->cw, EPOLLIN | EPOLLRDHUP) < 0) {
		conn_end(k, "error", "epoll", true);
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
		conn_end(c->conns, "deny", "container deregistered", true);
	pd_intercept_abort_all(c);
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
			conn_end(k, "error", "upstream connect timed out", true);
		else if (k->st == ST_RELAY && k->h.st == H_REFUSED &&
			 now - k->h.refused_ms >= pd_cfg.head_timeout_s * 1000ull)
			conn_end(k, "deny", k->reason, true); /* the upstream never finished */
		else if (k->st == ST_RELAY && now - k->last_ms >= pd_cfg.idle_timeout_s * 1000ull)
			conn_end(k, "allow", "idle timeout", true);
	}
}
