/*
 * HTTP/2 on an intercepted connection (issue 27): proxyd is the box's server and the upstream's
 * client, one upstream stream per box stream. Each request is judged and substituted as an
 * HTTP/1.1 head by the caller (the same rules, one place), each answer's fields are masked whole
 * and its DATA as one stream per stream (mask.c), so a value split across frames is caught.
 * Flow control is end to end: a box's DATA is acknowledged only when it went up, an answer's only
 * when it went down. No I/O: bytes in, bytes out (fuzzed by tests/fuzz/fuzz-h2.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nghttp2/nghttp2.h>

#include "h2.h"

/* Masked answer bytes a stream holds before it gives the upstream more window. */
#define DOWN_LOW (32 * 1024)
/* A head's room once substituted (values are at most 4096 bytes each). */
#define OUT_MAX (HEZO_H2_HEADER_MAX + 64 * 1024)

struct buf {
	uint8_t *p;
	size_t off, len, cap;
};

struct fields {
	uint8_t *b;
	size_t len, cap;
	unsigned n;
	bool over;
	struct {
		uint32_t no, nl, vo, vl;
	} f[HEZO_H2_FIELDS_MAX];
};

struct stream {
	struct stream *next, **pprev;
	struct hezo_h2 *h;
	int32_t cid, uid;
	struct fields fl; /* the request's fields, then each of the answer's blocks */
	char method[HEZO_HTTP_METHOD_LOG], path[HEZO_HTTP_PATH_LOG];
	struct hezo_h2_verdict v;
	const char *verdict, *reason;
	struct buf up;	 /* the box's DATA on its way up */
	struct buf down; /* the answer's DATA, masked, on its way down */
	size_t up_unacked, down_unacked;
	bool c_end, c_closed, u_sent, u_end, u_closed, answered, logged;
	bool admitted; /* ops->admit took its share: ops->release gives it back */
	struct hezo_mask *mask;
	nghttp2_nv *trailers;
	size_t ntrailers;
	uint8_t *tbuf;
	uint64_t bytes_out, bytes_in, masked;
};

struct hezo_h2 {
	const struct hezo_h2_ops *ops;
	void *ud;
	const struct hezo_mask_value *mv;
	size_t nmv;
	nghttp2_session *srv, *cli; /* toward the box, toward the upstream */
	struct stream *streams;
	uint64_t masked;
	const char *why;
	bool c_gone, u_gone;
};

static int buf_put(struct buf *b, const uint8_t *p, size_t n)
{
	if (b->off + b->len + n > b->cap) {
		if (b->off) {
			memmove(b->p, b->p + b->off, b->len);
			b->off = 0;
		}
		if (b->len + n > b->cap) {
			size_t cap = b->cap ? b->cap : 16384;
			uint8_t *q;

			while (cap < b->len + n)
				cap *= 2;
			q = realloc(b->p, cap);
			if (!q)
				return -ENOMEM;
			b->p = q;
			b->cap = cap;
		}
	}
	memcpy(b->p + b->off + b->len, p, n);
	b->len += n;
	return 0;
}

static size_t buf_take(struct buf *b, uint8_t *to, size_t max)
{
	size_t n = b->len < max ? b->len : max;

	if (n == 0)
		return 0;
	memcpy(to, b->p + b->off, n);
	b->off += n;
	b->len -= n;
	if (b->len == 0)
		b->off = 0;
	return n;
}

static void buf_free(struct buf *b)
{
	free(b->p);
	*b = (struct buf){0};
}

static void fields_reset(struct fields *f)
{
	f->len = 0;
	f->n = 0;
	f->over = false;
}

static int fields_add(struct fields *f, const uint8_t *name, size_t nl, const uint8_t *value,
		      size_t vl)
{
	/* RFC 9113's measure of a field: its name, its value and 32. */
	if (f->over || f->n == HEZO_H2_FIELDS_MAX || f->len + nl + vl + 32 > HEZO_H2_HEADER_MAX) {
		f->over = true;
		return -E2BIG;
	}
	if (!f->b && !(f->b = malloc(HEZO_H2_HEADER_MAX))) {
		f->over = true;
		return -ENOMEM;
	}
	f->f[f->n].no = (uint32_t)f->len;
	f->f[f->n].nl = (uint32_t)nl;
	memcpy(f->b + f->len, name, nl);
	f->len += nl;
	f->f[f->n].vo = (uint32_t)f->len;
	f->f[f->n].vl = (uint32_t)vl;
	memcpy(f->b + f->len, value, vl);
	f->len += vl;
	f->n++;
	return 0;
}

static bool field_is(const struct fields *f, unsigned i, const char *name)
{
	return f->f[i].nl == strlen(name) && memcmp(f->b + f->f[i].no, name, f->f[i].nl) == 0;
}

static const uint8_t *field_get(const struct fields *f, const char *name, size_t *vl)
{
	for (unsigned i = 0; i < f->n; i++)
		if (field_is(f, i, name)) {
			*vl = f->f[i].vl;
			return f->b + f->f[i].vo;
		}
	return NULL;
}

static void log_end(struct stream *s)
{
	struct hezo_h2 *h = s->h;

	if (s->logged)
		return;
	s->logged = true;
	h->ops->stream_end(h->ud, &(struct hezo_h2_stream_log){
					  .method = s->method,
					  .path = s->path,
					  .verdict = s->verdict ? s->verdict : "allow",
					  .reason = s->reason ? s->reason : "h2 stream",
					  .v = &s->v,
					  .bytes_out = s->bytes_out,
					  .bytes_in = s->bytes_in,
					  .masked = s->masked + (s->mask ? s->mask->masked : 0),
				  });
}

static void stream_free(struct stream *s)
{
	struct hezo_h2 *h = s->h;

	log_end(s);
	*s->pprev = s->next;
	if (s->next)
		s->next->pprev = s->pprev;
	/* Window the other side is owed for bytes that now go nowhere. */
	if (s->up_unacked && !h->c_gone)
		nghttp2_session_consume_connection(h->srv, s->up_unacked);
	if (s->down_unacked && !h->u_gone)
		nghttp2_session_consume_connection(h->cli, s->down_unacked);
	h->masked += s->masked;
	if (s->mask) {
		h->masked += s->mask->masked;
		/* Its buffers may hold a value's first bytes. */
		memset(s->mask, 0, sizeof(*s->mask));
		free(s->mask);
	}
	buf_free(&s->up);
	buf_free(&s->down);
	free(s->fl.b);
	free(s->trailers);
	free(s->tbuf);
	if (s->admitted && h->ops->release)
		h->ops->release(h->ud);
	free(s);
}

/* Both halves are done with s: it goes. */
static void stream_maybe_free(struct stream *s)
{
	if (s->c_closed && (s->u_closed || !s->u_sent)) {
		if (s->u_sent && s->uid > 0)
			nghttp2_session_set_stream_user_data(s->h->cli, s->uid, NULL);
		stream_free(s);
	}
}

static struct stream *by_client(struct hezo_h2 *h, int32_t id)
{
	return nghttp2_session_get_stream_user_data(h->srv, id);
}

static struct stream *by_upstream(struct hezo_h2 *h, int32_t id)
{
	return nghttp2_session_get_stream_user_data(h->cli, id);
}

/* ---- toward the box: answers ---- */

static ssize_t read_down(nghttp2_session *session, int32_t id, uint8_t *b, size_t len,
			 uint32_t *flags, nghttp2_data_source *src, void *ud)
{
	struct stream *s = src->ptr;
	struct hezo_h2 *h = ud;
	size_t n = buf_take(&s->down, b, len);

	(void)session;
	(void)id;
	s->bytes_in += n;
	if (s->down.len < DOWN_LOW && s->down_unacked && s->u_sent && !h->u_gone) {
		nghttp2_session_consume(h->cli, s->uid, s->down_unacked);
		s->down_unacked = 0;
	}
	if (s->down.len > 0)
		return (ssize_t)n;
	if (!s->u_end)
		return n ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	if (s->ntrailers) {
		*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
		if (nghttp2_submit_trailer(h->srv, s->cid, s->trailers, s->ntrailers) != 0)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	return (ssize_t)n;
}

/* proxyd's own answer on a stream: status, the reason in the body, the stream's end. */
static void refuse(struct stream *s, int status, const char *why)
{
	struct hezo_h2 *h = s->h;
	char st[4], msg[512];
	int n = snprintf(msg, sizeof(msg), "hezo-proxyd: %s\n", why);
	nghttp2_nv nv[] = {
		{(uint8_t *)":status", (uint8_t *)st, 7, 3, NGHTTP2_NV_FLAG_NONE},
		{(uint8_t *)"content-type", (uint8_t *)"text/plain", 12, 10, NGHTTP2_NV_FLAG_NONE},
	};
	nghttp2_data_provider dp = {.source.ptr = s, .read_callback = read_down};

	snprintf(st, sizeof(st), "%03d", status);
	s->verdict = status == 502 ? "error" : "deny";
	s->reason = why;
	if (!s->v.why)
		s->v.why = why;
	if (s->answered || s->c_closed) {
		nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, s->cid,
					  NGHTTP2_INTERNAL_ERROR);
		return;
	}
	s->answered = true;
	buf_free(&s->down);
	s->u_end = true;
	s->ntrailers = 0;
	if (buf_put(&s->down, (const uint8_t *)msg, (size_t)n) < 0 ||
	    nghttp2_submit_response(h->srv, s->cid, nv, 2, &dp) != 0)
		nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, s->cid,
					  NGHTTP2_INTERNAL_ERROR);
}

static void to_down(void *ud, const uint8_t *b, size_t n)
{
	struct stream *s = ud;

	if (buf_put(&s->down, b, n) < 0)
		s->h->why = "out of memory";
}

/*
 * One block of the answer's fields, masked: names and values alike (an upstream may echo a value
 * anywhere). content-length goes: a masked body's length is not the upstream's.
 */
static int masked_fields(struct hezo_h2 *h, struct stream *s, bool head, nghttp2_nv **nvp,
			 size_t *np, uint8_t **bp)
{
	const struct fields *f = &s->fl;
	size_t room = 2 * HEZO_H2_HEADER_MAX + (size_t)f->n * 2 * 64, o = 0, n = 0;
	nghttp2_nv *nv = calloc(f->n ? f->n : 1, sizeof(*nv));
	uint8_t *b = malloc(room);

	if (!nv || !b) {
		free(nv);
		free(b);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < f->n; i++) {
		size_t nl, vl;

		if (head && field_is(f, i, "content-length"))
			continue;
		if (hezo_mask_string(h->mv, h->nmv, f->b + f->f[i].no, f->f[i].nl, b + o, room - o,
				     &nl, &s->masked) < 0 ||
		    hezo_mask_string(h->mv, h->nmv, f->b + f->f[i].vo, f->f[i].vl, b + o + nl,
				     room - o - nl, &vl, &s->masked) < 0) {
			free(nv);
			free(b);
			return -ENOSPC;
		}
		nv[n++] = (nghttp2_nv){b + o, b + o + nl, nl, vl, NGHTTP2_NV_FLAG_NONE};
		o += nl + vl;
	}
	*nvp = nv;
	*np = n;
	*bp = b;
	return 0;
}

static bool identity(const uint8_t *v, size_t n)
{
	while (n && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	return n == 8 && strncasecmp((const char *)v, "identity", 8) == 0;
}

/* A block of fields from the upstream is complete. */
static void answer_block(struct hezo_h2 *h, struct stream *s, const nghttp2_frame *fr)
{
	bool end = fr->hd.flags & NGHTTP2_FLAG_END_STREAM;
	nghttp2_nv *nv = NULL;
	uint8_t *b = NULL;
	size_t n = 0, vl = 0;
	const uint8_t *st = field_get(&s->fl, ":status", &vl), *ce;

	if (s->c_closed)
		return;
	if (s->fl.over) {
		nghttp2_submit_rst_stream(h->cli, NGHTTP2_FLAG_NONE, s->uid, NGHTTP2_CANCEL);
		refuse(s, 502, "upstream's answer head is over 16 KiB");
		return;
	}
	if (!s->answered) {
		/* An interim answer (1xx) is not passed: the request goes on regardless. */
		if (!st || vl != 3 || st[0] == '1')
			return;
		ce = field_get(&s->fl, "content-encoding", &vl);
		if (ce && !end && !identity(ce, vl)) {
			nghttp2_submit_rst_stream(h->cli, NGHTTP2_FLAG_NONE, s->uid,
						  NGHTTP2_CANCEL);
			refuse(s, 502, "upstream compressed an answer although asked for identity");
			return;
		}
		if (masked_fields(h, s, true, &nv, &n, &b) < 0) {
			nghttp2_submit_rst_stream(h->cli, NGHTTP2_FLAG_NONE, s->uid,
						  NGHTTP2_CANCEL);
			refuse(s, 502, "upstream's answer head too long once masked");
			return;
		}
		s->answered = true;
		if (end)
			s->u_end = true;
		{
			nghttp2_data_provider dp = {.source.ptr = s, .read_callback = read_down};

			if (nghttp2_submit_response(h->srv, s->cid, nv, n, end ? NULL : &dp) != 0)
				nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, s->cid,
							  NGHTTP2_INTERNAL_ERROR);
		}
		free(nv);
		free(b);
		return;
	}
	/* Trailers (gRPC's status): masked, sent once the body is down. */
	if (!end || s->ntrailers)
		return;
	if (masked_fields(h, s, false, &nv, &n, &b) < 0) {
		nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, s->cid,
					  NGHTTP2_INTERNAL_ERROR);
		return;
	}
	free(s->trailers);
	free(s->tbuf);
	s->trailers = nv;
	s->ntrailers = n;
	s->tbuf = b;
}

/* ---- toward the upstream: requests ---- */

static ssize_t read_up(nghttp2_session *session, int32_t id, uint8_t *b, size_t len,
		       uint32_t *flags, nghttp2_data_source *src, void *ud)
{
	struct stream *s = src->ptr;
	struct hezo_h2 *h = ud;
	size_t n = buf_take(&s->up, b, len);

	(void)session;
	(void)id;
	s->bytes_out += n;
	if (n && !s->c_closed && !h->c_gone) {
		nghttp2_session_consume(h->srv, s->cid, n);
		s->up_unacked -= n;
	}
	if (s->up.len > 0)
		return (ssize_t)n;
	if (!s->c_end)
		return n ? (ssize_t)n : NGHTTP2_ERR_DEFERRED;
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

static size_t head_put(uint8_t *out, size_t o, size_t room, const void *p, size_t n)
{
	if (o + n <= room)
		memcpy(out + o, p, n);
	return o + n;
}

/* The request's fields as an HTTP/1.1 head; 0 when it does not fit or lacks a part. */
static size_t h1_head(const struct fields *f, uint8_t *out, size_t room)
{
	size_t ml = 0, pl = 0, al = 0, sl = 0, o = 0;
	const uint8_t *m = field_get(f, ":method", &ml), *p = field_get(f, ":path", &pl),
		      *a = field_get(f, ":authority", &al), *sc = field_get(f, ":scheme", &sl);

	if (!m || !p || !sc)
		return 0;
	o = head_put(out, o, room, m, ml);
	o = head_put(out, o, room, " ", 1);
	o = head_put(out, o, room, p, pl);
	o = head_put(out, o, room, " HTTP/1.1\r\n", 11);
	if (a) {
		o = head_put(out, o, room, "host: ", 6);
		o = head_put(out, o, room, a, al);
		o = head_put(out, o, room, "\r\n", 2);
	}
	for (unsigned i = 0; i < f->n; i++) {
		if (f->b[f->f[i].no] == ':')
			continue;
		o = head_put(out, o, room, f->b + f->f[i].no, f->f[i].nl);
		o = head_put(out, o, room, ": ", 2);
		o = head_put(out, o, room, f->b + f->f[i].vo, f->f[i].vl);
		o = head_put(out, o, room, "\r\n", 2);
	}
	o = head_put(out, o, room, "\r\n", 2);
	return o <= room ? o : 0;
}

/* The head as it is to go up, read back into HTTP/2 fields (in b's memory). */
static size_t h2_fields(uint8_t *b, size_t len, nghttp2_nv *nv, size_t max, bool sensitive)
{
	uint8_t *sp1 = memchr(b, ' ', len), *sp2, *e = b + len, *p, *nl;
	uint8_t flag = sensitive ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE;
	size_t n = 0;
	int auth = -1;

	if (!sp1 || max < 4)
		return 0;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(e - sp1 - 1));
	nl = sp2 ? memchr(sp2, '\n', (size_t)(e - sp2)) : NULL;
	if (!nl)
		return 0;
	nv[n++] = (nghttp2_nv){(uint8_t *)":method", b, 7, (size_t)(sp1 - b), NGHTTP2_NV_FLAG_NONE};
	nv[n++] =
		(nghttp2_nv){(uint8_t *)":scheme", (uint8_t *)"https", 7, 5, NGHTTP2_NV_FLAG_NONE};
	auth = (int)n++;
	nv[auth] = (nghttp2_nv){0};
	nv[n++] = (nghttp2_nv){(uint8_t *)":path", sp1 + 1, 5, (size_t)(sp2 - sp1 - 1), flag};
	for (p = nl + 1; p < e && n < max; p = nl + 1) {
		uint8_t *colon, *v, *ve;

		nl = memchr(p, '\n', (size_t)(e - p));
		if (!nl || nl - p <= 1)
			break;
		ve = nl[-1] == '\r' ? nl - 1 : nl;
		colon = memchr(p, ':', (size_t)(ve - p));
		if (!colon)
			return 0;
		for (uint8_t *c = p; c < colon; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (uint8_t)(*c - 'A' + 'a');
		for (v = colon + 1; v < ve && (*v == ' ' || *v == '\t'); v++)
			;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (colon - p == 4 && memcmp(p, "host", 4) == 0) {
			nv[auth] = (nghttp2_nv){(uint8_t *)":authority", v, 10, (size_t)(ve - v),
						NGHTTP2_NV_FLAG_NONE};
			continue;
		}
		nv[n++] = (nghttp2_nv){p, v, (size_t)(colon - p), (size_t)(ve - v), flag};
	}
	if (!nv[auth].name)
		return 0;
	return n;
}

/* For the log: the method and the path without its query (a query may hold a value). */
static void note_request(struct stream *s)
{
	size_t ml = 0, pl = 0, q;
	const uint8_t *m = field_get(&s->fl, ":method", &ml), *p = field_get(&s->fl, ":path", &pl);

	for (q = 0; p && q < pl && p[q] != '?'; q++)
		;
	snprintf(s->method, sizeof(s->method), "%.*s",
		 (int)(ml < HEZO_HTTP_METHOD_LOG - 1 ? ml : HEZO_HTTP_METHOD_LOG - 1),
		 m ? (const char *)m : "");
	snprintf(s->path, sizeof(s->path), "%.*s",
		 (int)(q < HEZO_HTTP_PATH_LOG - 1 ? q : HEZO_HTTP_PATH_LOG - 1),
		 p ? (const char *)p : "");
}

/* The request's fields are in: judged, substituted, sent up. */
static void request_block(struct hezo_h2 *h, struct stream *s)
{
	uint8_t *head = NULL, *out = NULL;
	size_t len, olen = 0, n;
	nghttp2_nv nv[HEZO_H2_FIELDS_MAX + 4];
	nghttp2_data_provider dp = {.source.ptr = s, .read_callback = read_up};
	int32_t id;

	note_request(s);
	if (s->fl.over) {
		refuse(s, 431, "request header block over 16 KiB or 128 fields");
		return;
	}
	head = malloc(HEZO_H2_HEADER_MAX + 1024);
	out = malloc(OUT_MAX);
	if (!head || !out) {
		free(head);
		free(out);
		refuse(s, 502, "out of memory");
		return;
	}
	len = h1_head(&s->fl, head, HEZO_H2_HEADER_MAX + 1024);
	if (len == 0) {
		refuse(s, 400, "not a request proxyd passes (no :method, :path or :scheme)");
	} else if (h->ops->request(h->ud, head, len, out, OUT_MAX, &olen, &s->v) < 0) {
		refuse(s, s->v.status ? s->v.status : 400, s->v.why ? s->v.why : "refused");
	} else if ((n = h2_fields(out, olen, nv, HEZO_H2_FIELDS_MAX + 4, s->v.sensitive)) == 0) {
		refuse(s, 400, "request not valid once substituted");
	} else if ((id = nghttp2_submit_request(h->cli, NULL, nv, n, s->c_end ? NULL : &dp, s)) <
		   0) {
		refuse(s, 502, "upstream takes no more streams");
	} else {
		s->uid = id;
		s->u_sent = true;
	}
	/* out held the values: nghttp2 copied what it needs. */
	memset(out, 0, olen < OUT_MAX ? olen : OUT_MAX);
	free(head);
	free(out);
	fields_reset(&s->fl);
}

/* ---- nghttp2's callbacks, the box's side ---- */

static int c_begin(nghttp2_session *session, const nghttp2_frame *fr, void *ud)
{
	struct hezo_h2 *h = ud;
	struct stream *s;

	if (fr->hd.type != NGHTTP2_HEADERS)
		return 0;
	s = by_client(h, fr->hd.stream_id);
	if (s)
		return 0; /* trailers: refused whole, their fields never read */
	if (fr->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	/* Over proxyd's memory budget: the box may try again later (RFC 9113, 8.7). */
	if (h->ops->admit && !h->ops->admit(h->ud)) {
		nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, fr->hd.stream_id,
					  NGHTTP2_REFUSED_STREAM);
		return 0;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		if (h->ops->release)
			h->ops->release(h->ud);
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	s->admitted = h->ops->admit != NULL;
	s->h = h;
	s->cid = fr->hd.stream_id;
	s->next = h->streams;
	s->pprev = &h->streams;
	if (h->streams)
		h->streams->pprev = &s->next;
	h->streams = s;
	nghttp2_session_set_stream_user_data(session, s->cid, s);
	return 0;
}

static int c_field(nghttp2_session *session, const nghttp2_frame *fr, const uint8_t *name,
		   size_t nl, const uint8_t *value, size_t vl, uint8_t flags, void *ud)
{
	struct stream *s = by_client(ud, fr->hd.stream_id);

	(void)session;
	(void)flags;
	/* Only the request's own block: fl is the answer's once the request went. */
	if (s && fr->headers.cat == NGHTTP2_HCAT_REQUEST)
		(void)fields_add(&s->fl, name, nl, value, vl);
	return 0;
}

static int c_frame(nghttp2_session *session, const nghttp2_frame *fr, void *ud)
{
	struct hezo_h2 *h = ud;
	struct stream *s = by_client(h, fr->hd.stream_id);

	(void)session;
	if (!s)
		return 0;
	if (fr->hd.flags & NGHTTP2_FLAG_END_STREAM)
		s->c_end = true;
	if (fr->hd.type == NGHTTP2_HEADERS) {
		if (fr->headers.cat == NGHTTP2_HCAT_REQUEST) {
			request_block(h, s);
		} else if (!s->answered) {
			/* Trailers of a request: fields that would go up unjudged. */
			nghttp2_submit_rst_stream(h->cli, NGHTTP2_FLAG_NONE, s->uid,
						  NGHTTP2_CANCEL);
			refuse(s, 400, "trailer fields on a request are not passed");
		}
	}
	if (s->c_end && s->u_sent && !s->u_closed)
		nghttp2_session_resume_data(h->cli, s->uid);
	return 0;
}

static int c_data(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *b, size_t n,
		  void *ud)
{
	struct hezo_h2 *h = ud;
	struct stream *s = by_client(h, id);

	(void)flags;
	if (!s || !s->u_sent || s->u_closed) {
		nghttp2_session_consume(session, id, n);
		return 0;
	}
	if (buf_put(&s->up, b, n) < 0)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	s->up_unacked += n;
	nghttp2_session_resume_data(h->cli, s->uid);
	return 0;
}

static int c_close(nghttp2_session *session, int32_t id, uint32_t code, void *ud)
{
	struct hezo_h2 *h = ud;
	struct stream *s = by_client(h, id);

	(void)session;
	if (!s)
		return 0;
	s->c_closed = true;
	if (code != NGHTTP2_NO_ERROR && !s->verdict) {
		s->verdict = "allow";
		s->reason = "the box reset the stream";
	}
	if (s->u_sent && !s->u_closed && !h->u_gone)
		nghttp2_submit_rst_stream(h->cli, NGHTTP2_FLAG_NONE, s->uid, NGHTTP2_CANCEL);
	nghttp2_session_set_stream_user_data(h->srv, id, NULL);
	stream_maybe_free(s);
	return 0;
}

/* ---- the upstream's side ---- */

static int u_begin(nghttp2_session *session, const nghttp2_frame *fr, void *ud)
{
	struct stream *s = by_upstream(ud, fr->hd.stream_id);

	(void)session;
	if (s && fr->hd.type == NGHTTP2_HEADERS)
		fields_reset(&s->fl);
	return 0;
}

static int u_field(nghttp2_session *session, const nghttp2_frame *fr, const uint8_t *name,
		   size_t nl, const uint8_t *value, size_t vl, uint8_t flags, void *ud)
{
	struct stream *s = by_upstream(ud, fr->hd.stream_id);

	(void)session;
	(void)flags;
	if (s)
		(void)fields_add(&s->fl, name, nl, value, vl);
	return 0;
}

static void down_end(struct hezo_h2 *h, struct stream *s)
{
	if (s->mask && hezo_mask_end(s->mask) < 0)
		h->why = s->mask->why;
	s->u_end = true;
	if (!s->c_closed && s->answered)
		nghttp2_session_resume_data(h->srv, s->cid);
}

static int u_frame(nghttp2_session *session, const nghttp2_frame *fr, void *ud)
{
	struct hezo_h2 *h = ud;
	struct stream *s = by_upstream(h, fr->hd.stream_id);

	(void)session;
	if (!s)
		return 0;
	if (fr->hd.type == NGHTTP2_HEADERS)
		answer_block(h, s, fr);
	if ((fr->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
	    (fr->hd.type == NGHTTP2_DATA || fr->hd.type == NGHTTP2_HEADERS) && s->answered &&
	    !s->u_end)
		down_end(h, s);
	else if ((fr->hd.flags & NGHTTP2_FLAG_END_STREAM) && s->answered && !s->c_closed)
		nghttp2_session_resume_data(h->srv, s->cid);
	return 0;
}

static int u_data(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *b, size_t n,
		  void *ud)
{
	struct hezo_h2 *h = ud;
	struct stream *s = by_upstream(h, id);

	(void)flags;
	if (!s || s->c_closed || !s->answered || s->u_end) {
		nghttp2_session_consume(session, id, n);
		return 0;
	}
	if (!s->mask) {
		s->mask = malloc(sizeof(*s->mask));
		if (!s->mask)
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		hezo_mask_init(s->mask, h->mv, h->nmv, to_down, s);
		hezo_mask_stream(s->mask);
	}
	s->down_unacked += n;
	if (hezo_mask_feed(s->mask, b, n) < 0)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	nghttp2_session_resume_data(h->srv, s->cid);
	return 0;
}

static int u_close(nghttp2_session *session, int32_t id, uint32_t code, void *ud)
{
	struct hezo_h2 *h = ud;
	struct stream *s = by_upstream(h, id);

	(void)session;
	if (!s)
		return 0;
	s->u_closed = true;
	if (!s->u_end && !s->c_closed) {
		if (!s->answered) {
			refuse(s, 502,
			       code == NGHTTP2_REFUSED_STREAM ? "upstream refused the stream"
							      : "upstream reset the stream");
		} else {
			s->reason = "upstream reset the stream";
			nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, s->cid,
						  code ? code : NGHTTP2_INTERNAL_ERROR);
		}
	}
	nghttp2_session_set_stream_user_data(h->cli, id, NULL);
	s->uid = 0;
	s->u_sent = false;
	stream_maybe_free(s);
	return 0;
}

/* ---- the connection ---- */

static nghttp2_session_callbacks *callbacks(bool server)
{
	nghttp2_session_callbacks *cb;

	if (nghttp2_session_callbacks_new(&cb) != 0)
		return NULL;
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, server ? c_begin : u_begin);
	nghttp2_session_callbacks_set_on_header_callback(cb, server ? c_field : u_field);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, server ? c_frame : u_frame);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, server ? c_data : u_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, server ? c_close : u_close);
	return cb;
}

int hezo_h2_new(struct hezo_h2 **out, const struct hezo_h2_ops *ops, void *ud,
		const struct hezo_mask_value *mv, size_t nmv)
{
	struct hezo_h2 *h = calloc(1, sizeof(*h));
	nghttp2_session_callbacks *cs = callbacks(true), *cc = callbacks(false);
	nghttp2_option *opt = NULL;
	nghttp2_settings_entry toward_box[] = {
		{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, HEZO_H2_STREAMS},
		{NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, HEZO_H2_HEADER_MAX},
		{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
	};
	nghttp2_settings_entry toward_up[] = {
		{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
		{NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, HEZO_H2_HEADER_MAX},
		{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, HEZO_H2_UP_WINDOW},
	};
	int r = -ENOMEM;

	if (!h || !cs || !cc || nghttp2_option_new(&opt) != 0)
		goto fail;
	h->ops = ops;
	h->ud = ud;
	h->mv = mv;
	h->nmv = nmv;
	/* Windows open as the bytes move on, not as they arrive: that is the backpressure. */
	nghttp2_option_set_no_auto_window_update(opt, 1);
	nghttp2_option_set_max_send_header_block_length(opt, 2 * OUT_MAX);
	if (nghttp2_session_server_new2(&h->srv, cs, h, opt) != 0 ||
	    nghttp2_session_client_new2(&h->cli, cc, h, opt) != 0)
		goto fail;
	r = -EPROTO;
	if (nghttp2_submit_settings(h->srv, NGHTTP2_FLAG_NONE, toward_box, 3) != 0 ||
	    nghttp2_submit_settings(h->cli, NGHTTP2_FLAG_NONE, toward_up, 3) != 0 ||
	    nghttp2_session_set_local_window_size(h->cli, NGHTTP2_FLAG_NONE, 0,
						  HEZO_H2_UP_CONN_WIN) != 0)
		goto fail;
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cs);
	nghttp2_session_callbacks_del(cc);
	*out = h;
	return 0;
fail:
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cs);
	nghttp2_session_callbacks_del(cc);
	hezo_h2_free(h);
	return r;
}

void hezo_h2_free(struct hezo_h2 *h)
{
	if (!h)
		return;
	h->c_gone = h->u_gone = true;
	while (h->streams) {
		if (!h->streams->verdict) {
			h->streams->verdict = "allow";
			h->streams->reason = "the connection ended";
		}
		stream_free(h->streams);
	}
	nghttp2_session_del(h->srv);
	nghttp2_session_del(h->cli);
	free(h);
}

void hezo_h2_values(struct hezo_h2 *h, const struct hezo_mask_value *mv, size_t nmv)
{
	h->mv = mv;
	h->nmv = nmv;
	for (struct stream *s = h->streams; s; s = s->next)
		if (s->mask)
			hezo_mask_values(s->mask, mv, nmv);
}

int hezo_h2_from_client(struct hezo_h2 *h, const uint8_t *b, size_t n)
{
	ssize_t r = nghttp2_session_mem_recv(h->srv, b, n);

	if (r < 0) {
		h->why = "the box broke HTTP/2";
		return -EPROTO;
	}
	return 0;
}

int hezo_h2_from_upstream(struct hezo_h2 *h, const uint8_t *b, size_t n)
{
	ssize_t r = nghttp2_session_mem_recv(h->cli, b, n);

	if (r < 0) {
		h->why = "upstream broke HTTP/2";
		return -EPROTO;
	}
	return 0;
}

ssize_t hezo_h2_to_client(struct hezo_h2 *h, const uint8_t **p)
{
	return nghttp2_session_mem_send(h->srv, p);
}

ssize_t hezo_h2_to_upstream(struct hezo_h2 *h, const uint8_t **p)
{
	return nghttp2_session_mem_send(h->cli, p);
}

void hezo_h2_client_gone(struct hezo_h2 *h)
{
	for (struct stream *s = h->streams; s; s = s->next)
		if (s->u_sent && !s->u_closed)
			nghttp2_submit_rst_stream(h->cli, NGHTTP2_FLAG_NONE, s->uid,
						  NGHTTP2_CANCEL);
	nghttp2_session_terminate_session(h->cli, NGHTTP2_NO_ERROR);
	h->c_gone = true;
}

void hezo_h2_upstream_gone(struct hezo_h2 *h)
{
	h->u_gone = true;
	for (struct stream *s = h->streams; s; s = s->next) {
		if (s->u_end || s->c_closed)
			continue;
		if (!s->answered) {
			refuse(s, 502, "upstream closed the connection");
		} else {
			s->reason = "upstream closed the connection";
			nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, s->cid,
						  NGHTTP2_INTERNAL_ERROR);
		}
	}
	/* A graceful GOAWAY: the answers just queued (502s, resets) still go before it ends. */
	nghttp2_submit_goaway(h->srv, NGHTTP2_FLAG_NONE,
			      nghttp2_session_get_last_proc_stream_id(h->srv), NGHTTP2_NO_ERROR,
			      NULL, 0);
}

bool hezo_h2_done(const struct hezo_h2 *h)
{
	return !nghttp2_session_want_read(h->srv) && !nghttp2_session_want_write(h->srv);
}

bool hezo_h2_client_owed(const struct hezo_h2 *h)
{
	return nghttp2_session_want_write(h->srv);
}

uint64_t hezo_h2_masked(const struct hezo_h2 *h)
{
	uint64_t n = h->masked;

	for (const struct stream *s = h->streams; s; s = s->next)
		n += s->masked + (s->mask ? s->mask->masked : 0);
	return n;
}

const char *hezo_h2_why(const struct hezo_h2 *h)
{
	return h->why;
}
