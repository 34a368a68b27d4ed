/*
 * The answers on an intercepted connection, on their way to the box: every secret's value
 * becomes its placeholder again in the status line, the header fields and the body, so an
 * upstream that echoes a request cannot hand the value into the box. Bodies are de-framed, masked
 * as one stream (a value split across reads or chunks is still caught) and framed again for the
 * client. Pure: no I/O, no allocation; fuzzed (tests/fuzz/fuzz-subst.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "proxyd-parse.h"

enum { S_HEAD, S_LENGTH, S_CHUNKED, S_CLOSE, S_RAW, S_DONE };
enum { C_SIZE, C_SIZE_MORE, C_EXT, C_SIZE_LF, C_DATA, C_DATA_CR, C_DATA_LF, C_TRAILER, C_TLINE };
enum { OUT_RAW, OUT_CHUNKED };

#define Q_HEAD	 1u
#define Q_HTTP10 2u

void hezo_mask_init(struct hezo_mask *m, const struct hezo_mask_value *v, size_t n,
		    hezo_mask_emit emit, void *ud)
{
	memset(m, 0, offsetof(struct hezo_mask, head));
	m->emit = emit;
	m->ud = ud;
	hezo_mask_values(m, v, n);
}

void hezo_mask_values(struct hezo_mask *m, const struct hezo_mask_value *v, size_t n)
{
	m->v = v;
	m->n = 0;
	m->longest = 0;
	for (size_t i = 0; i < n && m->n < HEZO_MASK_VALUES; i++) {
		/* Longer than the carry can hold: left out (the callers never make such). */
		if (v[i].len == 0 || v[i].len > HEZO_MASK_VALUE_MAX)
			break;
		m->n = i + 1;
		if (v[i].len > m->longest)
			m->longest = v[i].len;
	}
}

int hezo_mask_request(struct hezo_mask *m, bool head, bool http10)
{
	if (m->qn == HEZO_MASK_QUEUE)
		return -ENOSPC;
	m->q[(m->qh + m->qn) % HEZO_MASK_QUEUE] =
		(uint8_t)((head ? Q_HEAD : 0) | (http10 ? Q_HTTP10 : 0));
	m->qn++;
	return 0;
}

bool hezo_mask_busy(const struct hezo_mask *m)
{
	return m->qn > 0 || m->st != S_HEAD || m->headlen > 0;
}

bool hezo_mask_switched(const struct hezo_mask *m)
{
	return m->st == S_RAW;
}

static void stage_flush(struct hezo_mask *m)
{
	uint8_t *data = m->stage + HEZO_MASK_STAGE_PRE;
	char size[HEZO_MASK_STAGE_PRE + 1];
	int n;

	if (m->stagelen == 0)
		return;
	if (m->out == OUT_CHUNKED) {
		/* Size line, data and CR LF in one piece: one TLS record, not three. */
		n = snprintf(size, sizeof(size), "%zx\r\n", m->stagelen);
		memcpy(data - n, size, (size_t)n);
		memcpy(data + m->stagelen, "\r\n", 2);
		m->emit(m->ud, data - n, (size_t)n + m->stagelen + 2);
	} else {
		m->emit(m->ud, data, m->stagelen);
	}
	m->stagelen = 0;
}

static void stage_put(struct hezo_mask *m, const uint8_t *b, size_t n)
{
	while (n > 0) {
		size_t room = HEZO_MASK_STAGE - m->stagelen, k = n < room ? n : room;

		memcpy(m->stage + HEZO_MASK_STAGE_PRE + m->stagelen, b, k);
		m->stagelen += k;
		b += k;
		n -= k;
		if (m->stagelen == HEZO_MASK_STAGE)
			stage_flush(m);
	}
}

/*
 * How many of the last bytes of w[from..len) a value could go on from: the longest such tail that
 * is a proper prefix of some value. Only those wait for the next read, so an upgraded or
 * interactive stream is never held back by bytes that cannot begin a value.
 */
static size_t partial_tail(const struct hezo_mask *m, const uint8_t *w, size_t from, size_t len)
{
	size_t best = 0;

	for (size_t i = 0; i < m->n; i++) {
		size_t vl = m->v[i].len, max;

		if (vl < 2)
			continue;
		max = vl - 1 < len - from ? vl - 1 : len - from;
		for (size_t k = max; k > best; k--)
			if (w[len - k] == m->v[i].value[0] &&
			    memcmp(w + len - k, m->v[i].value, k) == 0) {
				best = k;
				break;
			}
	}
	return best;
}

static size_t ph_len(const struct hezo_mask_value *v)
{
	return v->placeholder_len ? v->placeholder_len : HEZO_PLACEHOLDER_LEN;
}

/*
 * The next occurrence to mask in w[0..len), everything before pos already passed: the earliest
 * that ends past pos, at one place the longer. A real value's occurrence may start before pos,
 * inside the one just masked (values that overlap): masked too, or its rest would pass. A
 * derived value (a Basic token the box wrote) never takes bytes of a real value's occurrence:
 * one that overlaps the real one found is left out, and it never goes on from a masked one.
 * false: none. *k is which, *at where it starts.
 */
static bool next_value(const struct hezo_mask_value *v, size_t n, const uint8_t *w, size_t pos,
		       size_t len, size_t *k, size_t *at)
{
	size_t rs = 0, rk = 0, ds = 0, dk = 0;
	bool r = false, d = false;

	for (int derived = 0; derived < 2; derived++)
		for (size_t i = 0; i < n; i++) {
			size_t vl = v[i].len, lo, s;
			const uint8_t *p;

			if (vl == 0 || v[i].derived != derived)
				continue;
			lo = derived ? pos : pos >= vl - 1 ? pos - (vl - 1) : 0;
			if (vl > len - lo)
				continue;
			p = memmem(w + lo, len - lo, v[i].value, vl);
			if (!p)
				continue;
			s = (size_t)(p - w);
			if (!derived && (!r || s < rs || (s == rs && vl > v[rk].len))) {
				r = true;
				rs = s;
				rk = i;
			}
			/* Its later occurrences end later still: this value has none before rs. */
			if (derived && (!r || s + vl <= rs) &&
			    (!d || s < ds || (s == ds && vl > v[dk].len))) {
				d = true;
				ds = s;
				dk = i;
			}
		}
	*k = d ? dk : rk;
	*at = d ? ds : rs;
	return d || r;
}

/*
 * Pass w[pos..len) on with every occurrence of a value replaced (w[0..pos): bytes passed
 * before, kept so an occurrence that began there is seen); returns where the bytes that wait
 * for the next call begin. They start at the earliest place where the rest of w could begin a
 * value: a match is taken only before it, so a longer value that starts there or earlier and
 * is not all here yet is never cut by a shorter one inside it (leftmost-longest).
 */
static size_t scan(struct hezo_mask *m, const uint8_t *w, size_t pos, size_t len, bool last)
{
	/* From w's start: an occurrence begun in the bytes just masked holds back what follows. */
	size_t hold = last || m->longest == 0 ? len : len - partial_tail(m, w, 0, len);
	size_t k = 0, at = 0;

	while (next_value(m->v, m->n, w, pos, len, &k, &at) && at < hold) {
		/* A real value that is not all here yet may still overlap a derived one. */
		if (m->v[k].derived && at + m->v[k].len > hold) {
			hold = at;
			break;
		}
		if (at > pos)
			stage_put(m, w + pos, at - pos);
		stage_put(m, (const uint8_t *)m->v[k].placeholder, ph_len(&m->v[k]));
		m->masked++;
		m->masked_to = pos = at + m->v[k].len;
	}
	if (hold > pos) {
		stage_put(m, w + pos, hold - pos);
		pos = hold;
	}
	return pos;
}

/* How many passed bytes before from stay for the next call: a value's length less one. */
static size_t ctx_len(const struct hezo_mask *m, size_t from)
{
	return m->longest - 1 < from ? m->longest - 1 : from;
}

/* Body or head bytes toward the client, masked; last: nothing of this stream follows. */
static void mask_data(struct hezo_mask *m, const uint8_t *b, size_t n, bool last)
{
	do {
		size_t take = sizeof(m->work) - m->carry, len, from, keep;

		take = n < take ? n : take;
		if (m->carry == 0 && take == n) {
			/* Nothing kept: scanned where they lie. */
			m->masked_to = 0;
			if (n == 0)
				break;
			from = scan(m, b, 0, n, last);
			keep = from - (m->masked_to == from && from > 0 ? ctx_len(m, from) : 0);
			memcpy(m->work, b + keep, n - keep);
			m->ctx = from - keep;
			m->carry = n - keep;
			break;
		}
		if (take) {
			memcpy(m->work + m->carry, b, take);
			b += take;
			n -= take;
		}
		len = m->carry + take;
		m->masked_to = m->ctx;
		from = scan(m, m->work, m->ctx, len, last && n == 0);
		/* An occurrence that goes on from a masked one needs the masked bytes before it. */
		keep = from - (m->masked_to == from && from > 0 ? ctx_len(m, from) : 0);
		memmove(m->work, m->work + keep, len - keep);
		m->ctx = from - keep;
		m->carry = len - keep;
	} while (n > 0);
	if (last)
		m->carry = m->ctx = 0;
}

void hezo_mask_stream(struct hezo_mask *m)
{
	m->qn = 0;
	m->st = S_RAW;
}

int hezo_mask_string(const struct hezo_mask_value *v, size_t n, const uint8_t *in, size_t len,
		     uint8_t *out, size_t outsz, size_t *outlen, uint64_t *masked)
{
	size_t pos = 0, o = 0, k = 0, at = 0;

	for (;;) {
		bool found = next_value(v, n, in, pos, len, &k, &at);
		size_t lit = (found ? at : len) - pos;

		if (found && at < pos)
			lit = 0;
		if (o + lit > outsz)
			return -ENOSPC;
		memcpy(out + o, in + pos, lit);
		o += lit;
		if (!found)
			break;
		if (o + ph_len(&v[k]) > outsz)
			return -ENOSPC;
		memcpy(out + o, v[k].placeholder, ph_len(&v[k]));
		o += ph_len(&v[k]);
		(*masked)++;
		pos = at + v[k].len;
	}
	*outlen = o;
	return 0;
}

static bool tchar(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool value_is(const uint8_t *v, size_t n, const char *s)
{
	while (n && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	return n == strlen(s) && strncasecmp((const char *)v, s, n) == 0;
}

static bool name_is(const uint8_t *l, size_t nlen, const char *s)
{
	return nlen == strlen(s) && strncasecmp((const char *)l, s, nlen) == 0;
}

/* The next line of the head from *p: its content (without CR LF) in [*p, *p + return). */
static size_t line_len(const uint8_t *p, const uint8_t *end, const uint8_t **next)
{
	const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
	size_t n = (size_t)(nl - p);

	*next = nl + 1;
	return n && p[n - 1] == '\r' ? n - 1 : n;
}

/* The complete head in m->head[0..len): judged, masked and passed. */
static int take_head(struct hezo_mask *m, size_t len)
{
	const uint8_t *p = m->head, *end = m->head + len, *next;
	size_t ll = line_len(p, end, &next), hl;
	unsigned status, flags;
	bool have_cl = false, chunked = false, coded = false, body, upgraded = false;
	uint64_t cl = 0;

	if (m->qn == 0) {
		m->why = "upstream answered a request that was not sent";
		return -EPROTO;
	}
	flags = m->q[m->qh];
	/* HTTP/1.x SP 3DIGIT [SP reason] */
	if (ll < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[7] < '0' || p[7] > '9' || p[8] != ' ' ||
	    p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9' ||
	    (ll > 12 && p[12] != ' ')) {
		m->why = "upstream's answer is not an HTTP/1 status line";
		return -EPROTO;
	}
	status = (unsigned)(p[9] - '0') * 100 + (unsigned)(p[10] - '0') * 10 +
		 (unsigned)(p[11] - '0');
	for (p = next; p < end; p = next) {
		const uint8_t *colon;

		hl = line_len(p, end, &next);
		if (hl == 0)
			break;
		colon = memchr(p, ':', hl);
		if (!colon || colon == p || !tchar(p[0])) {
			m->why = "upstream's answer has a malformed header line";
			return -EPROTO;
		}
		for (const uint8_t *c = p; c < colon; c++)
			if (!tchar(*c)) {
				m->why = "upstream's answer has a malformed header line";
				return -EPROTO;
			}
		if (name_is(p, (size_t)(colon - p), "content-length")) {
			uint64_t v = 0;
			size_t d = 0;
			const uint8_t *c = colon + 1, *e = p + hl;

			while (c < e && (*c == ' ' || *c == '\t'))
				c++;
			while (e > c && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			for (; c < e && *c >= '0' && *c <= '9' && d < 18; c++, d++)
				v = v * 10 + (uint64_t)(*c - '0');
			if (d == 0 || c != e || (have_cl && v != cl)) {
				m->why = "upstream's answer has an unreadable Content-Length";
				return -EPROTO;
			}
			have_cl = true;
			cl = v;
		} else if (name_is(p, (size_t)(colon - p), "transfer-encoding")) {
			if (chunked ||
			    !value_is(colon + 1, (size_t)(p + hl - colon - 1), "chunked")) {
				m->why = "upstream's answer has a transfer coding other than "
					 "chunked";
				return -EPROTO;
			}
			chunked = true;
		} else if (name_is(p, (size_t)(colon - p), "content-encoding")) {
			coded = coded ||
				!value_is(colon + 1, (size_t)(p + hl - colon - 1), "identity");
		}
	}
	if (status / 100 == 1 && status != 101) {
		body = false; /* interim: the request still waits for its answer */
	} else if (status == 101) {
		body = false;
		upgraded = true;
	} else {
		body = !((flags & Q_HEAD) || status == 204 || status == 304 ||
			 (!chunked && have_cl && cl == 0));
	}
	if (body && coded) {
		m->why = "upstream compressed an answer although asked for identity";
		return -EPROTO;
	}
	/* How the body goes on: chunked again toward HTTP/1.1 (the masked length is not known
	 * before it is sent), to the close toward HTTP/1.0 or when the upstream closes. */
	m->out = OUT_RAW;
	m->close_after = false;
	if (body) {
		if (!chunked && !have_cl)
			m->close_after = true;
		else if (flags & Q_HTTP10)
			m->close_after = true;
		else
			m->out = OUT_CHUNKED;
	}
	/* The head itself: masked line by line, the framing lines this proxy redoes dropped. */
	p = m->head;
	ll = line_len(p, end, &next);
	if (m->out == OUT_CHUNKED) {
		mask_data(m, (const uint8_t *)"HTTP/1.1", 8, false);
		mask_data(m, p + 8, ll - 8, false);
	} else {
		mask_data(m, p, ll, false);
	}
	mask_data(m, (const uint8_t *)"\r\n", 2, true);
	for (p = next; p < end; p = next) {
		const uint8_t *colon;
		size_t nlen;

		hl = line_len(p, end, &next);
		if (hl == 0)
			break;
		colon = memchr(p, ':', hl);
		nlen = (size_t)(colon - p);
		if (body &&
		    (name_is(p, nlen, "content-length") || name_is(p, nlen, "transfer-encoding")))
			continue;
		if (body && (flags & Q_HTTP10) &&
		    (name_is(p, nlen, "connection") || name_is(p, nlen, "keep-alive")))
			continue;
		mask_data(m, p, hl, false);
		mask_data(m, (const uint8_t *)"\r\n", 2, true);
	}
	if (m->out == OUT_CHUNKED)
		stage_put(m, (const uint8_t *)"Transfer-Encoding: chunked\r\n", 28);
	else if (body && (flags & Q_HTTP10))
		stage_put(m, (const uint8_t *)"Connection: close\r\n", 19);
	stage_put(m, (const uint8_t *)"\r\n", 2);
	/* The stage holds the head: out as it is, the body after it in its own framing. */
	{
		int out = m->out;

		m->out = OUT_RAW;
		stage_flush(m);
		m->out = out;
	}
	m->headlen = 0;
	if (status / 100 == 1 && status != 101)
		return 0;
	if (upgraded) {
		m->qh = (m->qh + 1) % HEZO_MASK_QUEUE;
		m->qn--;
		m->st = S_RAW;
		return 0;
	}
	if (!body) {
		m->qh = (m->qh + 1) % HEZO_MASK_QUEUE;
		m->qn--;
		return 0;
	}
	if (chunked) {
		m->st = S_CHUNKED;
		m->cst = C_SIZE;
		m->left = 0;
		m->digits = 0;
	} else if (have_cl) {
		m->st = S_LENGTH;
		m->left = cl;
	} else {
		m->st = S_CLOSE;
	}
	return 0;
}

/* The body is complete: the last bytes masked, the framing closed. 1: the connection ends. */
static int body_done(struct hezo_mask *m)
{
	mask_data(m, NULL, 0, true);
	stage_flush(m);
	if (m->out == OUT_CHUNKED)
		m->emit(m->ud, (const uint8_t *)"0\r\n\r\n", 5);
	m->out = OUT_RAW;
	m->qh = (m->qh + 1) % HEZO_MASK_QUEUE;
	m->qn--;
	m->st = m->close_after ? S_DONE : S_HEAD;
	return m->close_after ? 1 : 0;
}

/* Chunked framing from the upstream: the data is masked, sizes, extensions and trailers go. */
static int chunked(struct hezo_mask *m, const uint8_t *b, size_t n, size_t *used)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = b[i];
		int h;

		switch (m->cst) {
		case C_SIZE:
		case C_SIZE_MORE:
			h = c >= '0' && c <= '9'   ? c - '0'
			    : c >= 'a' && c <= 'f' ? c - 'a' + 10
			    : c >= 'A' && c <= 'F' ? c - 'A' + 10
						   : -1;
			if (h >= 0 && m->digits < 15) {
				m->left = m->left << 4 | (uint64_t)h;
				m->digits++;
				m->cst = C_SIZE_MORE;
			} else if (m->cst == C_SIZE_MORE && (c == ';' || c == ' ' || c == '\t')) {
				m->cst = C_EXT;
			} else if (m->cst == C_SIZE_MORE && c == '\r') {
				m->cst = C_SIZE_LF;
			} else if (m->cst == C_SIZE_MORE && c == '\n') {
				m->cst = m->left ? C_DATA : C_TRAILER;
			} else {
				m->why = "upstream's chunked framing is malformed";
				return -EPROTO;
			}
			i++;
			break;
		case C_EXT:
			if (c == '\n')
				m->cst = m->left ? C_DATA : C_TRAILER;
			i++;
			break;
		case C_SIZE_LF:
			if (c != '\n') {
				m->why = "upstream's chunked framing is malformed";
				return -EPROTO;
			}
			m->cst = m->left ? C_DATA : C_TRAILER;
			i++;
			break;
		case C_DATA: {
			size_t k = n - i < m->left ? n - i : (size_t)m->left;

			mask_data(m, b + i, k, false);
			m->left -= k;
			i += k;
			if (m->left == 0)
				m->cst = C_DATA_CR;
			break;
		}
		case C_DATA_CR:
		case C_DATA_LF:
			if (c == '\r' && m->cst == C_DATA_CR) {
				m->cst = C_DATA_LF;
			} else if (c == '\n') {
				m->cst = C_SIZE;
				m->digits = 0;
			} else {
				m->why = "upstream's chunked framing is malformed";
				return -EPROTO;
			}
			i++;
			break;
		case C_TRAILER:
			/* Trailer fields are dropped (they could carry the value unmasked). */
			i++;
			if (c == '\n') {
				*used = i;
				return 1;
			}
			if (c != '\r')
				m->cst = C_TLINE;
			break;
		case C_TLINE:
			i++;
			if (c == '\n')
				m->cst = C_TRAILER;
			break;
		}
	}
	*used = i;
	return 0;
}

int hezo_mask_feed_some(struct hezo_mask *m, const uint8_t *b, size_t n)
{
	while (n > 0) {
		size_t k, used;
		int r;

		switch (m->st) {
		case S_HEAD: {
			size_t from = m->headlen > 3 ? m->headlen - 3 : 0, room, end = 0;

			room = sizeof(m->head) - m->headlen;
			k = n < room ? n : room;
			memcpy(m->head + m->headlen, b, k);
			m->headlen += k;
			for (size_t i = from; i < m->headlen && !end; i++)
				if (m->head[i] == '\n' &&
				    ((i >= 1 && m->head[i - 1] == '\n') ||
				     (i >= 2 && m->head[i - 1] == '\r' && m->head[i - 2] == '\n')))
					end = i + 1;
			if (!end) {
				if (m->headlen == sizeof(m->head)) {
					m->why = "upstream's answer head is over 16 KiB";
					return -EPROTO;
				}
				return 0;
			}
			/* Bytes past the head's end go on to the body. */
			k -= m->headlen - end;
			b += k;
			n -= k;
			r = take_head(m, end);
			if (r < 0)
				return r;
			break;
		}
		case S_LENGTH:
			k = n < m->left ? n : (size_t)m->left;
			mask_data(m, b, k, false);
			m->left -= k;
			b += k;
			n -= k;
			if (m->left == 0 && (r = body_done(m)) != 0)
				return r;
			break;
		case S_CHUNKED:
			r = chunked(m, b, n, &used);
			if (r < 0)
				return r;
			b += used;
			n -= used;
			if (r == 1 && (r = body_done(m)) != 0)
				return r;
			break;
		case S_CLOSE:
		case S_RAW:
			mask_data(m, b, n, false);
			n = 0;
			break;
		case S_DONE:
			return 1;
		}
	}
	return 0;
}

void hezo_mask_flush(struct hezo_mask *m)
{
	stage_flush(m);
}

int hezo_mask_feed(struct hezo_mask *m, const uint8_t *b, size_t n)
{
	int r = hezo_mask_feed_some(m, b, n);

	if (r == 0)
		stage_flush(m);
	return r;
}

int hezo_mask_end(struct hezo_mask *m)
{
	mask_data(m, NULL, 0, true);
	stage_flush(m);
	if (m->st == S_CLOSE || m->st == S_RAW || m->st == S_DONE ||
	    (m->st == S_HEAD && m->headlen == 0))
		return 0;
	m->why = "upstream closed in the middle of an answer";
	return -EPIPE;
}
