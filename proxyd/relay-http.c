/*
 * Following a plain-HTTP connection's client stream (http.c): every request of the connection is
 * read before it is passed, and each must name the host the connection was allowed for.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "relay.h"

/* ---- following plain HTTP (the client's direction only) ---- */

bool relay_http_followed(const struct pd_conn *k, const struct dir *d)
{
	return d == &k->up && k->h.st != H_NONE && k->h.st != H_OPAQUE;
}

/* Buffered bytes that may be written: on a followed connection only the checked ones. */
size_t relay_dir_sendable(const struct pd_conn *k, const struct dir *d)
{
	return relay_http_followed(k, d) ? k->h.ok : d->len;
}

bool relay_conn_has_data(const struct pd_conn *k, const struct dir *d)
{
	return relay_dir_sendable(k, d) > 0 || d->inpipe > 0;
}

const char *relay_conn_verdict(const struct pd_conn *k)
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
void relay_http_advance(struct pd_conn *k)
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
			    strcmp(name, k->t.name) != 0) {
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
void relay_http_upgrade_answer(struct pd_conn *k)
{
	static const char sw[] = "HTTP/1.1 101";
	uint8_t peek[sizeof(sw) - 1];
	ssize_t n = recv(k->uw.fd, peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT);

	if (n < 0)
		return;
	if (n > 0 && memcmp(peek, sw, (size_t)n) == 0 && (size_t)n < sizeof(peek))
		return; /* not enough to tell yet */
	if ((size_t)n == sizeof(peek) && memcmp(peek, sw, sizeof(peek)) == 0 && k->h.nreq == 1 &&
	    k->down.bytes == 0 && !relay_conn_has_data(k, &k->down)) {
		k->h.st = H_OPAQUE;
		return;
	}
	k->h.st = H_HEAD;
	relay_http_advance(k);
}

/*
 * How the client's next bytes may be read on a followed connection: 0 not now, 1 into the pipe
 * (at most *max: body bytes need no look), 2 into the buffer to be checked. Buffer and pipe never
 * both hold bytes, so the order they leave in is the order they came.
 */
int relay_http_fill_mode(const struct pd_conn *k, uint64_t *max)
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

/* n body bytes of the request went by without a look (spliced). */
void relay_http_body_passed(struct pd_conn *k, uint64_t n)
{
	if (k->h.st == H_LENGTH) {
		k->h.left -= n;
		if (k->h.left == 0)
			k->h.st = H_HEAD;
	} else {
		hezo_http_chunked_skip(&k->h.ch, n);
	}
}

/* The client's bytes were read into the buffer (n as read() returned): check them. */
void relay_http_read(struct pd_conn *k, ssize_t n)
{
	struct dir *d = &k->up;

	if (n > 0) {
		relay_http_advance(k);
	} else if (n == 0) {
		d->len = k->h.ok; /* a request cut short is not passed */
		if (d->len == 0)
			d->off = 0;
	}
}
