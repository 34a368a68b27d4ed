/*
 * libFuzzer target for proxyd's two directions of an intercepted connection. The first byte's top
 * bit chooses.
 *
 * Requests (proxyd/subst.c, on heads proxyd/http.c accepts): the first byte chooses, per secret of
 * three, whether it is here and whether it may pass, and whether the query takes values; then the
 * head. Invariants: a head with no placeholder of a secret that is here comes out byte for byte;
 * no placeholder of a secret that is here survives (but in Host, which is never substituted); the
 * method and the path come out unchanged; a misplaced placeholder (method, path, name, a query
 * that does not take it) is refused, naming only secrets that are here; an output that parses has
 * the input's framing and Host; a refusal names a secret that is not here and may not pass; every
 * Basic token that took a value fits the masking, and once each is masked back no base64 form of a
 * value the box did not write itself is left.
 *
 * Answers (proxyd/mask.c): the next bytes say how many requests wait, which are HEAD or HTTP/1.0
 * and how the upstream's bytes are split into reads; then the upstream's bytes. Invariants: no
 * value in any byte toward the box, and, when the masking took everything, the bytes toward the
 * box are well-framed answers: chunked toward HTTP/1.1, never chunked toward HTTP/1.0, no
 * Content-Length beside chunked, a body up to the close only last.
 *
 * Built answers (the second bit set too): the bytes describe well-framed answers (per answer its
 * framing, Content-Length, chunked in 1 to 16 chunks, or up to the close, or none; HEAD, 204 and
 * HTTP/1.0 requests; its body), which the target writes as an upstream would and feeds in reads
 * of 1 to 32 bytes. Invariants: the masking takes them all; the box reads as many answers, each
 * with its status, and each body, de-framed, is the upstream's with every value replaced by its
 * placeholder and nothing else changed, however the values fall across chunks and reads.
 *
 * Nested values (the second bit and the next byte's top bit set): one to four values over {a,b},
 * some derived (Basic tokens the box wrote), so they share prefixes, infixes and overlap
 * themselves; a stream over {a,b,c} fed in reads of 1 to 8 bytes. Invariants: the stream's output
 * is hezo_mask_string's on the whole, and it reads as the input with each placeholder standing
 * for a real occurrence's rest (a suffix of its value, the value's start before it): no byte of
 * an occurrence of a real value is passed, and a derived token's placeholder never takes one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-secrets.h"
#include "proxyd-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The Basic tokens a head's substitution changed, as hezo_subst_basic_pairs hands them. */
struct pairs {
	const uint8_t *out;
	size_t n, at[256], slen[256];
	const uint8_t *written[256];
	size_t wlen[256];
	bool over;
};

static void pair(void *ud, const uint8_t *sent, size_t slen, const uint8_t *written, size_t wlen)
{
	struct pairs *p = ud;

	/* Each must fit the masking, or it would go back to the box as it went up. */
	if (slen > HEZO_MASK_VALUE_MAX)
		abort();
	if (p->n == 256) {
		p->over = true;
		return;
	}
	p->at[p->n] = (size_t)(sent - p->out);
	p->slen[p->n] = slen;
	p->written[p->n] = written;
	p->wlen[p->n] = wlen;
	p->n++;
}

static const char b64c[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The base64 characters that depend on v alone when v starts j bytes into the encoded text. */
static size_t b64_form(const char *v, size_t j, char *f)
{
	uint8_t in[64] = {0};
	size_t len = strlen(v), n = j + len, c0 = (8 * j + 5) / 6, c1 = 8 * n / 6, o = 0;

	memcpy(in + j, v, len);
	for (size_t c = c0; c < c1; c++) {
		size_t bit = 6 * c;
		unsigned w = (unsigned)in[bit / 8] << 8 | in[bit / 8 + 1];

		f[o++] = b64c[w >> (10 - bit % 8) & 63];
	}
	f[o] = '\0';
	return o;
}

/*
 * The head as the masking gives it back: each changed Basic token as the box wrote it. No form of
 * a value proxyd built in base64 may remain (one the box wrote itself is its own).
 */
static void check_basic_forms(const uint8_t *in, size_t inlen, const uint8_t *out, size_t olen,
			      const struct hezo_subst_secret *s)
{
	static uint8_t view[6 * 16384];
	struct pairs p = {.out = out};
	size_t v = 0, from = 0;
	char f[128];

	hezo_subst_basic_pairs(in, inlen, out, olen, pair, &p);
	if (p.over)
		return;
	for (size_t i = 0; i < p.n; i++) {
		memcpy(view + v, out + from, p.at[i] - from);
		v += p.at[i] - from;
		memcpy(view + v, p.written[i], p.wlen[i]);
		v += p.wlen[i];
		from = p.at[i] + p.slen[i];
	}
	memcpy(view + v, out + from, olen - from);
	v += olen - from;
	for (int i = 0; i < 3; i++)
		for (size_t j = 0; s[i].here && j < 3; j++)
			if (b64_form(val[i], j, f) >= 4 && memmem(view, v, f, strlen(f)) &&
			    !memmem(in, inlen, f, strlen(f)))
				abort();
}

static int request(const uint8_t *data, size_t size)
{
	static uint8_t out[3 * 16384];
	struct hezo_subst_secret s[3];
	struct hezo_http_request a, b;
	struct hezo_subst_result res;
	const uint8_t *q, *sp;
	size_t olen;
	int r;

	for (int i = 0; i < 3; i++)
		s[i] = (struct hezo_subst_secret){ph[i],
						  (const uint8_t *)val[i],
						  strlen(val[i]),
						  (data[0] >> i) & 1,
						  (data[0] >> (i + 3)) & 1,
						  true,
						  (data[0] >> 6) & 1,
						  NULL,
						  0};
	data++;
	size--;
	if (hezo_http_parse_request(data, size, &a) != 1)
		return 0;
	r = hezo_subst_head(data, a.head_len, s, 3, out, sizeof(out), &olen, &res);
	if (r == -EPROTO) {
		for (int i = 0; i < 3; i++)
			if ((res.misplaced >> i & 1) && !s[i].here)
				abort();
		if (!(res.misplaced || res.oversize) || !res.why)
			abort();
		return 0;
	}
	if (r == -EACCES) {
		for (int i = 0; i < 3; i++)
			if ((res.refused >> i & 1) && (s[i].here || s[i].pass))
				abort();
		if (!res.refused)
			abort();
		return 0;
	}
	if (r != 0)
		abort(); /* out is three times the head: no -ENOSPC */
	if (res.used)
		check_basic_forms(data, a.head_len, out, olen, s);
	if (!res.used && (olen != a.head_len || memcmp(out, data, olen) != 0))
		abort();
	/* Host is never substituted (it was matched with the SNI): a name holding a placeholder
	 * keeps it there. */
	for (int i = 0; !strstr(a.host, "hzph") && i < 3; i++) {
		if (s[i].here && contains(out, olen, ph[i]))
			abort();
	}
	/* The method and the path: byte for byte (an upstream may echo them). */
	sp = memchr(data + a.method_len + 1, ' ', a.head_len - a.method_len - 1);
	q = memchr(data, '?', (size_t)(sp - data));
	q = q ? q : sp;
	if (olen < (size_t)(q - data) || memcmp(out, data, (size_t)(q - data)) != 0)
		abort();
	if (hezo_http_parse_request(out, olen, &b) == 1) {
		if (b.head_len != olen || b.body != a.body || b.length != a.length ||
		    b.upgrade != a.upgrade || strcmp(b.host, a.host) != 0 || b.port != a.port)
			abort();
	} else if (!res.used) {
		abort(); /* only a head that took a value may read differently */
	}
	return 0;
}

static uint8_t got[1 << 22];
static size_t gotlen;

static void collect(void *ud, const uint8_t *b, size_t n)
{
	(void)ud;
	if (gotlen + n > sizeof(got))
		abort(); /* at most 44 placeholder bytes per input byte: never this much */
	memcpy(got + gotlen, b, n);
	gotlen += n;
}

static const uint8_t *find(const uint8_t *p, const uint8_t *e, const char *s)
{
	return memmem(p, (size_t)(e - p), s, strlen(s));
}

/* Does the head [p, e) have field name (any case), and its value's first byte? */
static const uint8_t *field(const uint8_t *p, const uint8_t *e, const char *name)
{
	size_t n = strlen(name);

	for (p = find(p, e, "\r\n"); p && p + 2 < e; p = find(p + 2, e, "\r\n"))
		if ((size_t)(e - p) > n + 3 && strncasecmp((const char *)p + 2, name, n) == 0 &&
		    p[2 + n] == ':')
			return p + 3 + n;
	return NULL;
}

/* The box's bytes, read as a client reads them: well framed for the requests that were sent. */
static void check_answers(const uint8_t *flags, unsigned nreq)
{
	const uint8_t *p = got, *end = got + gotlen;
	unsigned i = 0;

	while (p < end) {
		const uint8_t *he = find(p, end, "\r\n\r\n"), *cl, *te;
		unsigned status;

		if (!he || i >= nreq || end - p < 12 || memcmp(p, "HTTP/1.", 7) != 0)
			abort();
		he += 4;
		status = (unsigned)(p[9] - '0') * 100 + (unsigned)(p[10] - '0') * 10 +
			 (unsigned)(p[11] - '0');
		cl = field(p, he, "content-length");
		te = field(p, he, "transfer-encoding");
		if (status == 101)
			return; /* the rest is the upgraded protocol's */
		if (status / 100 == 1) {
			p = he;
			continue;
		}
		if (te && cl)
			abort();
		if (te && (flags[i] & 2))
			abort(); /* chunked toward HTTP/1.0 */
		p = he;
		if ((flags[i] & 1) || status == 204 || status == 304 ||
		    (cl && *cl == ' ' && cl[1] == '0')) {
			i++;
			continue;
		}
		if (te) {
			for (;;) {
				char *x;
				unsigned long n = strtoul((const char *)p, &x, 16);

				if ((const uint8_t *)x == p || (const uint8_t *)x + 2 > end ||
				    memcmp(x, "\r\n", 2) != 0)
					abort();
				p = (const uint8_t *)x + 2;
				if (n == 0)
					break;
				if ((size_t)(end - p) < n + 2 || memcmp(p + n, "\r\n", 2) != 0)
					abort();
				p += n + 2;
			}
			if (end - p < 2 || memcmp(p, "\r\n", 2) != 0)
				abort();
			p += 2;
			i++;
			continue;
		}
		return; /* up to the close: the last */
	}
}

static int answers(const uint8_t *data, size_t size)
{
	static struct hezo_mask m;
	struct hezo_mask_value v[3];
	uint8_t flags[8];
	unsigned nreq;
	size_t step;
	int r = 0;

	if (size < 4)
		return 0;
	nreq = (data[1] & 7) + 1;
	step = (size_t)(data[1] >> 3) + 1;
	for (unsigned i = 0; i < nreq; i++)
		flags[i] = (uint8_t)((data[2] >> i & 1) | (data[3] >> i & 1) << 1);
	data += 4;
	size -= 4;
	for (int i = 0; i < 3; i++)
		v[i] = (struct hezo_mask_value){ph[i], (const uint8_t *)val[i], strlen(val[i])};
	gotlen = 0;
	hezo_mask_init(&m, v, 3, collect, NULL);
	for (unsigned i = 0; i < nreq; i++)
		if (hezo_mask_request(&m, flags[i] & 1, flags[i] & 2) != 0)
			abort();
	for (size_t o = 0; o < size && r == 0; o += step)
		r = hezo_mask_feed(&m, data + o, size - o < step ? size - o : step);
	if (r == 0)
		r = hezo_mask_end(&m);
	for (int i = 0; i < 3; i++)
		if (contains(got, gotlen, val[i]))
			abort();
	if (r >= 0)
		check_answers(flags, nreq);
	return 0;
}

/* ---- built answers ---- */

#define BUILT_MAX 8

struct built {
	unsigned n;
	uint8_t flags[BUILT_MAX];			/* as answers(): 1 HEAD, 2 HTTP/1.0 */
	unsigned status[BUILT_MAX];			/* 200 or 204 */
	size_t want_at[BUILT_MAX], want_len[BUILT_MAX]; /* the expected body, in want */
};

static uint8_t up_bytes[1 << 16], want[1 << 17], body[1 << 17];

static size_t up_put(size_t at, const void *b, size_t n)
{
	if (at + n > sizeof(up_bytes))
		abort();
	memcpy(up_bytes + at, b, n);
	return at + n;
}

/* The body as the box must read it: each value, leftmost first, as its placeholder. (No value
 * overlaps another or itself, so any scan finds the same ones.) */
static size_t mask_ref(const uint8_t *b, size_t n, uint8_t *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		int hit = -1;

		for (int k = 0; k < 3 && hit < 0; k++)
			if (n - i >= strlen(val[k]) && memcmp(b + i, val[k], strlen(val[k])) == 0)
				hit = k;
		if (hit < 0) {
			out[o++] = b[i++];
			continue;
		}
		memcpy(out + o, ph[hit], strlen(ph[hit]));
		o += strlen(ph[hit]);
		i += strlen(val[hit]);
	}
	return o;
}

/* Read the box's answers as a client that sent bt's requests; every body must be the wanted one. */
static void check_built(const struct built *bt)
{
	const uint8_t *p = got, *end = got + gotlen;

	for (unsigned i = 0; i < bt->n; i++) {
		const uint8_t *he = find(p, end, "\r\n\r\n"), *cl, *te;
		size_t blen = 0;
		unsigned status;

		if (!he || end - p < 12 || memcmp(p, "HTTP/1.", 7) != 0)
			abort();
		he += 4;
		status = (unsigned)(p[9] - '0') * 100 + (unsigned)(p[10] - '0') * 10 +
			 (unsigned)(p[11] - '0');
		if (status != bt->status[i])
			abort();
		cl = field(p, he, "content-length");
		te = field(p, he, "transfer-encoding");
		p = he;
		if ((bt->flags[i] & 1) || status == 204) {
			blen = 0;
		} else if (te) {
			for (;;) {
				char *x;
				unsigned long c = strtoul((const char *)p, &x, 16);

				if ((const uint8_t *)x == p || (const uint8_t *)x + 2 > end)
					abort();
				p = (const uint8_t *)x + 2;
				if (c == 0)
					break;
				if ((size_t)(end - p) < c + 2 || blen + c > sizeof(body))
					abort();
				memcpy(body + blen, p, c);
				blen += c;
				p += c + 2;
			}
			if (end - p < 2 || memcmp(p, "\r\n", 2) != 0)
				abort();
			p += 2;
		} else if (cl) {
			blen = strtoul((const char *)cl, NULL, 10);
			if ((size_t)(end - p) < blen)
				abort();
			memcpy(body, p, blen);
			p += blen;
		} else {
			/* Up to the close: the last answer. */
			blen = (size_t)(end - p);
			memcpy(body, p, blen);
			p = end;
			if (i + 1 != bt->n)
				abort();
		}
		if (blen != bt->want_len[i] || memcmp(body, want + bt->want_at[i], blen) != 0)
			abort();
	}
	if (p != end)
		abort(); /* bytes no request asked for */
}

static int built_answers(const uint8_t *data, size_t size)
{
	static struct hezo_mask m;
	static struct built bt;
	struct hezo_mask_value v[3];
	size_t at = 0, wat = 0, step = (size_t)(data[0] & 0x1f) + 1, i = 1;
	unsigned want_n = (data[0] >> 5 & 1) ? 8 : 4;
	int r = 0;

	memset(&bt, 0, sizeof(bt));
	while (bt.n < want_n && i + 2 <= size) {
		uint8_t c = data[i], kind = c & 3;
		size_t len = data[i + 1], chunks = (size_t)(c >> 4) + 1;
		const uint8_t *b = data + i + 2;
		bool last = false;
		char line[64];
		unsigned k = bt.n;

		i += 2;
		if (len > size - i)
			len = size - i;
		i += len;
		bt.flags[k] = (uint8_t)(c >> 2 & 3);
		bt.status[k] = kind == 3 ? 204 : 200;
		at = up_put(at, "HTTP/1.1 ", 9);
		at = up_put(at, kind == 3 ? "204 No Content\r\n" : "200 OK\r\n",
			    kind == 3 ? 16 : 8);
		if ((bt.flags[k] & 1) || kind == 3) {
			/* No body goes, whatever the head says of one. */
			if (kind == 0)
				at = up_put(at, line,
					    (size_t)snprintf(line, sizeof(line),
							     "Content-Length: %zu\r\n", len));
			at = up_put(at, "\r\n", 2);
			len = 0;
		} else if (kind == 0) {
			at = up_put(at, line,
				    (size_t)snprintf(line, sizeof(line),
						     "Content-Length: %zu\r\n\r\n", len));
			at = up_put(at, b, len);
		} else if (kind == 1) {
			size_t each = len / chunks + 1, o = 0;

			at = up_put(at, "Transfer-Encoding: chunked\r\n\r\n", 30);
			while (o < len) {
				size_t cn = len - o < each ? len - o : each;

				at = up_put(at, line,
					    (size_t)snprintf(line, sizeof(line), "%zx\r\n", cn));
				at = up_put(at, b + o, cn);
				at = up_put(at, "\r\n", 2);
				o += cn;
			}
			at = up_put(at, "0\r\n\r\n", 5);
		} else {
			at = up_put(at, "\r\n", 2);
			at = up_put(at, b, len);
			last = true;
		}
		/* A body toward HTTP/1.0 goes up to the close, nothing after it: any body by its
		 * framing, an empty chunked one too (only Content-Length: 0 has none). */
		if ((bt.flags[k] & 2) && !(bt.flags[k] & 1) && kind != 3 && (kind != 0 || len > 0))
			last = true;
		bt.want_at[k] = wat;
		bt.want_len[k] = mask_ref(b, len, want + wat);
		wat += bt.want_len[k];
		bt.n++;
		if (last)
			break;
	}
	if (bt.n == 0)
		return 0;
	for (int k = 0; k < 3; k++)
		v[k] = (struct hezo_mask_value){ph[k], (const uint8_t *)val[k], strlen(val[k])};
	gotlen = 0;
	hezo_mask_init(&m, v, 3, collect, NULL);
	for (unsigned k = 0; k < bt.n; k++)
		if (hezo_mask_request(&m, bt.flags[k] & 1, bt.flags[k] & 2) != 0)
			abort();
	for (size_t o = 0; o < at && r == 0; o += step)
		r = hezo_mask_feed(&m, up_bytes + o, at - o < step ? at - o : step);
	if (r >= 0)
		r = hezo_mask_end(&m);
	/* Well-framed answers are all taken. */
	if (r < 0)
		abort();
	for (int k = 0; k < 3; k++)
		if (contains(got, gotlen, val[k]))
			abort();
	check_built(&bt);
	return 0;
}

/* ---- nested values ---- */

#define NEST_IN 256

static bool nest_reach[2 * NEST_IN + 2][NEST_IN + 1];

static int nested(const uint8_t *data, size_t size)
{
	static const char *const nph[4] = {"<0>", "<1>", "<2>", "<3>"};
	static struct hezo_mask m;
	static uint8_t vb[4][8], in[NEST_IN], out[NEST_IN * 3 + 1];
	struct hezo_mask_value v[4] = {0};
	bool cov[NEST_IN] = {false};
	size_t nv, n = 0, olen = 0, i = 2, steps[2], t = 0;
	uint64_t masked = 0;
	int tok[2 * NEST_IN + 2]; /* -1 - k: value k's placeholder; else a byte */

	if (size < 3)
		return 0;
	nv = (size_t)(data[0] & 3) + 1;
	steps[0] = (size_t)(data[1] & 7) + 1;
	steps[1] = (size_t)(data[1] >> 3 & 7) + 1;
	for (size_t k = 0; k < nv; k++) {
		size_t len;

		if (i >= size)
			return 0;
		len = (size_t)(data[i] & 7) + 1;
		/* Value 0 is real: there is always one the box must not read. */
		v[k].derived = k > 0 && (data[i] >> 3 & 1);
		i++;
		for (size_t j = 0; j < len; j++)
			vb[k][j] = i < size ? (uint8_t)('a' + (data[i++] & 1)) : 'a';
		v[k].value = vb[k];
		v[k].len = len;
		v[k].placeholder = nph[k];
		v[k].placeholder_len = 3;
	}
	for (; i < size && n < NEST_IN; i++)
		in[n++] = (uint8_t)('a' + data[i] % 3);
	/* Every byte of a real value's every occurrence. */
	for (size_t k = 0; k < nv; k++)
		for (size_t p = 0; !v[k].derived && p + v[k].len <= n; p++)
			if (memcmp(in + p, v[k].value, v[k].len) == 0)
				for (size_t j = 0; j < v[k].len; j++)
					cov[p + j] = true;
	if (hezo_mask_string(v, nv, in, n, out, sizeof(out), &olen, &masked) != 0)
		abort();
	gotlen = 0;
	hezo_mask_init(&m, v, nv, collect, NULL);
	hezo_mask_stream(&m);
	for (size_t o = 0, s = 0; o < n; o += steps[s], s ^= 1)
		if (hezo_mask_feed(&m, in + o, n - o < steps[s] ? n - o : steps[s]) != 0)
			abort();
	if (hezo_mask_end(&m) != 0)
		abort();
	if (gotlen != olen || memcmp(got, out, olen) != 0)
		abort();
	/* The output as tokens, then aligned with the input. */
	for (size_t o = 0; o < olen; t++) {
		if (out[o] == '<') {
			tok[t] = -1 - (out[o + 1] - '0');
			o += 3;
		} else {
			tok[t] = out[o++];
		}
	}
	memset(nest_reach, 0, sizeof(nest_reach));
	nest_reach[0][0] = true;
	for (size_t a = 0; a < t; a++)
		for (size_t p = 0; p <= n; p++) {
			if (!nest_reach[a][p])
				continue;
			if (tok[a] >= 0) {
				if (p < n && in[p] == tok[a] && !cov[p])
					nest_reach[a + 1][p + 1] = true;
				continue;
			}
			for (size_t k = (size_t)(-1 - tok[a]), l = 1; l <= v[k].len; l++) {
				size_t before = v[k].len - l;
				bool ok = p + l <= n && p >= before &&
					  memcmp(in + p - before, v[k].value, v[k].len) == 0;

				for (size_t j = p; ok && v[k].derived && j < p + l; j++)
					ok = !cov[j];
				if (ok)
					nest_reach[a + 1][p + l] = true;
			}
		}
	if (!nest_reach[t][n])
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 16384)
		return 0;
	if ((data[0] & 0xc0) == 0xc0 && size > 1 && (data[1] & 0x80))
		return nested(data + 2, size - 2);
	if ((data[0] & 0xc0) == 0xc0)
		return size > 1 ? built_answers(data + 1, size - 1) : 0;
	return data[0] & 0x80 ? answers(data, size) : request(data, size);
}
