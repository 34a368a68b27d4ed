/*
 * The relay's copying: both directions with backpressure, half-close and splice() through a
 * pipe; pipes and head buffers borrowed from pools only while they hold bytes; a connection's
 * end (logged and counted).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "relay.h"

unsigned relay_nactive;

unsigned pd_relay_active(void)
{
	return relay_nactive;
}

/* ---- pools ---- */

static uint8_t *head_pool[HEAD_POOL];
static unsigned nhead_pool;
static struct {
	int fd[2];
	uint32_t cap;
} pipe_pool[PIPE_POOL];
static unsigned npipe_pool;

uint8_t *relay_head_get(void)
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

void relay_dir_release(struct dir *d)
{
	pipe_put(d);
	head_put(d->buf);
	d->buf = NULL;
	d->off = d->len = 0;
}

/* Close both sides (with a reset if rst), log, and free at the end of the batch. */
void relay_conn_end(struct pd_conn *k, const char *verdict, const char *reason, bool rst)
{
	struct pd_container *c = k->c;

	*k->pprev = k->next;
	if (k->next)
		k->next->pprev = k->pprev;
	c->nconns--;
	relay_nactive--;
	pd_tcp_end(c, &k->t, k->up.bytes, k->down.bytes, false, verdict, reason);
	/* Both sockets are this process's alone: close() also takes them out of epoll. A peer
	 * that reset its side needs no reset back. */
	pd_watch_drop_later(&k->cw, rst && !k->c_dead);
	pd_watch_drop_later(&k->uw, rst && !k->u_dead);
	relay_dir_release(&k->up);
	relay_dir_release(&k->down);
	pd_defer_free(k);
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

static bool conn_can_fill(const struct pd_conn *k, const struct dir *d)
{
	uint64_t max;

	if (!relay_http_followed(k, d))
		return dir_can_fill(d);
	return relay_http_fill_mode(k, &max) != 0;
}

/* Splice what src has, at most max bytes, into d's pipe. *want: how much was asked for. */
static ssize_t pipe_fill(struct dir *d, int src, uint64_t max, size_t *want)
{
	ssize_t n;

	*want = d->pipe_cap - d->inpipe;
	if (*want > max)
		*want = (size_t)max;
	n = splice(src, NULL, d->pipe[1], NULL, *want, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
	if (n > 0)
		d->inpipe += (size_t)n;
	else if (n < 0 && errno == EAGAIN && d->inpipe > 0)
		d->pipe_full = true; /* out of pipe slots, not of data */
	return n;
}

/* Read what src has into d's buffer (borrowed from the pool if need be). */
static ssize_t buf_fill(struct dir *d, int src, size_t *want)
{
	ssize_t n;

	if (!d->buf) {
		d->buf = relay_head_get();
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

/* Read what src has into d: into a pipe from the pool, or into a buffer when none can be had.
 * *want: how much was asked for. */
static ssize_t dir_fill(struct dir *d, int src, size_t *want)
{
	if (d->pipe[0] < 0)
		pipe_get(d);
	if (d->pipe[0] >= 0)
		return pipe_fill(d, src, UINT64_MAX, want);
	return buf_fill(d, src, want);
}

/* dir_fill for a followed client: body bytes spliced as they are, the rest read and checked. */
static ssize_t http_fill(struct pd_conn *k, struct dir *d, int src, size_t *want)
{
	uint64_t max = 0;
	int mode = relay_http_fill_mode(k, &max);
	ssize_t n;

	if (mode == 0) {
		*want = 1;
		errno = EAGAIN;
		return -1;
	}
	if (mode == 1 && d->pipe[0] < 0)
		pipe_get(d);
	if (mode == 1 && d->pipe[0] >= 0) {
		n = pipe_fill(d, src, max, want);
		if (n > 0)
			relay_http_body_passed(k, (uint64_t)n);
		return n;
	}
	n = buf_fill(d, src, want);
	relay_http_read(k, n);
	return n;
}

/*
 * Move what we can from src to dst. readable: src reported data (or may have some); without it
 * src is not read, so no read is spent on an EAGAIN epoll already predicted. A short read means
 * src's queue is drained and a short write that dst is full: neither is tried again until epoll
 * says so, which saves the EAGAIN call each would cost. Returns -errno on a fatal error (and
 * marks the side that failed), else 0.
 */
int relay_pump(struct pd_conn *k, struct dir *d, int src, int dst, bool readable, bool *src_failed,
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
		if (relay_dir_sendable(k, d) > 0 && writable) {
			want = relay_dir_sendable(k, d);
			n = write(dst, d->buf + d->off, want);
			if (n > 0) {
				if (relay_http_followed(k, d))
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
			n = relay_http_followed(k, d) ? http_fill(k, d, src, &want)
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
	 * refused client, which gets its answer after the upstream's last bytes. */
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
	if (relay_conn_has_data(k, &k->up))
		ue |= EPOLLOUT;
	if (pd_watch_set(&k->cw, ce) < 0 || pd_watch_set(&k->uw, ue) < 0)
		relay_conn_end(k, "error", "epoll", true);
}

#define EV_READABLE (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)

void relay_run(struct pd_conn *k, uint32_t cev, uint32_t uev)
{
	bool cfail = false, ufail = false;
	bool uread = uev & EV_READABLE;
	int r;

	if (relay_http_holding(k) && uread) {
		relay_http_upgrade_answer(k);
		/* Undecided: leave the answer unread until more of it has come. */
		uread = !relay_http_holding(k);
	}
	r = relay_pump(k, &k->up, k->cw.fd, k->uw.fd, cev & EV_READABLE, &cfail, &ufail);
	if (r == 0)
		r = relay_pump(k, &k->down, k->uw.fd, k->cw.fd, uread, &ufail, &cfail);
	if (r < 0) {
		k->c_dead = cfail && r == -ECONNRESET;
		k->u_dead = ufail && r == -ECONNRESET;
		relay_conn_end(k, relay_conn_verdict(k), k->reason, true);
		return;
	}
	if (k->h.st == H_REFUSED && k->down.eof && !dir_has_data(&k->down)) {
		relay_http_answer(k);
		relay_conn_end(k, "deny", k->reason, false);
		return;
	}
	if (k->up.shut && k->down.shut) {
		relay_conn_end(k, "allow", k->reason, false);
		return;
	}
	/* A side that hung up or failed while we want nothing from it would spin the loop. */
	if ((cev & (EPOLLERR | EPOLLHUP)) && !conn_can_fill(k, &k->up) && !dir_has_data(&k->down)) {
		relay_conn_end(k, relay_conn_verdict(k), k->reason, true);
		return;
	}
	if ((uev & (EPOLLERR | EPOLLHUP)) && !dir_can_fill(&k->down) &&
	    !relay_conn_has_data(k, &k->up)) {
		relay_conn_end(k, relay_conn_verdict(k), k->reason, true);
		return;
	}
	relay_interest(k);
}

void relay_start(struct pd_conn *k)
{
	k->st = ST_RELAY;
	k->last_ms = pd_now_ms();
	/* The client may have sent already (it usually has): try it once; upstream has just
	 * connected and epoll will say when it speaks. */
	relay_run(k, EPOLLIN, 0);
}
