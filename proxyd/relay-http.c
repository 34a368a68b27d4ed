/*
 * Following a plain-HTTP connection's client stream (http.c's tracker): every request of the
 * connection is read before it is passed, each must name the host the connection was allowed
 * for, and each is logged.
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

bool relay_http_holding(const struct pd_conn *k)
{
	return k->h.st == H_FOLLOW && k->h.t.st == HEZO_HTTP_T_HOLD;
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

/* One netlog line per request head judged, allowed or not: the connection's line alone would
 * say nothing of the requests after the first. req NULL: a head that could not be read. */
static void http_log(struct pd_conn *k, const uint8_t *head, const struct hezo_http_request *req,
		     const char *name, const char *verdict, const char *reason)
{
	char method[HEZO_HTTP_METHOD_LOG], path[HEZO_HTTP_PATH_LOG];
	struct pd_netlog l = {
		.proto = "http",
		.src = &k->t.src,
		.dst = &k->t.dst,
		.name = name,
		.verdict = verdict,
		.reason = reason,
	};

	if (req) {
		hezo_http_method_path(head, req, method, path);
		l.method = method;
		l.path = path;
	}
	pd_netlog_write(k->c, &l);
}

/* Stop passing the client's bytes: those checked still go, the rest is dropped, nothing more
 * is read; the upstream gets a half-close, and the client the answer (status) when the upstream
 * is done. */
static void http_refuse(struct pd_conn *k, uint16_t status, const char *reason)
{
	struct dir *d = &k->up;

	k->h.st = H_REFUSED;
	k->h.status = status;
	k->reason = reason;
	k->h.refused_ms = pd_now_ms();
	d->len = k->h.ok;
	if (d->len == 0)
		d->off = 0;
	d->eof = true;
}

/* A complete head: judge it, log it, and 0 to go on or -1 when it was refused. */
static int http_judge(struct pd_conn *k, const uint8_t *p, int r,
		      const struct hezo_http_request *req)
{
	char name[HEZO_NAME_MAX];
	const char *logged = k->t.name;

	if (r == -EBADMSG) {
		http_refuse(k, 400,
			    "a body on a GET, HEAD, OPTIONS, TRACE or DELETE request (a server may "
			    "read it as another request)");
	} else if (hezo_name_normalize(req->host, strlen(req->host), name) < 0 ||
		   strcmp(name, k->t.name) != 0) {
		logged = req->host;
		http_refuse(k, 403,
			    "a later request's Host names another host than the "
			    "connection was allowed for");
	} else if (pd_intercept_plain_refused(k->c, p, req->head_len)) {
		/* Never substituted over plain HTTP, and a placeholder goes nowhere. */
		http_refuse(k, 403, "a secret's placeholder over plain HTTP");
	}
	http_log(k, p, req, logged, k->h.st == H_REFUSED ? "deny" : "allow",
		 k->h.st == H_REFUSED ? k->reason : "host");
	return k->h.st == H_REFUSED ? -1 : 0;
}

/* Check what has arrived after the bytes already checked, request by request. */
void relay_http_advance(struct pd_conn *k)
{
	struct dir *d = &k->up;

	while (k->h.st == H_FOLLOW && k->h.ok < d->len && !relay_http_holding(k)) {
		const uint8_t *p = d->buf + d->off + k->h.ok;
		size_t avail = d->len - k->h.ok, used = 0;
		bool head = k->h.t.st == HEZO_HTTP_T_HEAD;
		struct hezo_http_request req;
		int r = hezo_http_track(&k->h.t, p, avail, &used, &req);

		if (r == -EAGAIN && avail < PD_HEAD_MAX)
			return;
		if (r == -EAGAIN || r == -EPROTO || r == -EINVAL) {
			http_refuse(k, 400,
				    r == -EAGAIN   ? "a later request head is over 16 KiB"
				    : r == -EPROTO ? "a malformed chunked request body"
						   : "a later request is not HTTP/1 with one Host "
						     "header and unambiguous framing");
			http_log(k, p, NULL, k->t.name, "deny", k->reason);
			return;
		}
		if (head && http_judge(k, p, r, &req) < 0)
			return;
		if (r == 1)
			k->h.nreq++;
		k->h.ok += used;
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
	hezo_http_track_resume(&k->h.t);
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
	uint64_t body;

	if (d->eof || relay_http_holding(k) || k->h.st == H_REFUSED)
		return 0;
	body = hezo_http_track_body_left(&k->h.t);
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
	hezo_http_track_skip(&k->h.t, n);
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

void relay_http_answer(struct pd_conn *k)
{
	static const char m400[] = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
				   "Content-Length: 35\r\nConnection: close\r\n\r\n"
				   "hezo-proxyd: this request is denied";
	static const char m403[] = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
				   "Content-Length: 35\r\nConnection: close\r\n\r\n"
				   "hezo-proxyd: this request is denied";
	bool bad = k->h.status == 400;
	ssize_t n = write(k->cw.fd, bad ? m400 : m403, bad ? sizeof(m400) - 1 : sizeof(m403) - 1);

	(void)n; /* a client that cannot take 150 bytes gets only the close */
}
