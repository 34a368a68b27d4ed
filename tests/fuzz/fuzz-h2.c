/*
 * libFuzzer target for HTTP/2 on an intercepted connection (proxyd/h2.c): the box's bytes and the
 * upstream's bytes, interleaved as the input says, go through both sessions; each request is
 * judged and substituted by proxyd's own parser and subst.c (three secrets, all here, header
 * values only). Input: records of [direction byte][length byte][bytes]; the box's preface comes
 * first by itself. Invariants, read back by decoding every frame proxyd writes (HPACK included):
 * framing kept (every byte toward either side is whole frames whose header blocks decode); no
 * value in any field or in the DATA of any stream toward the box (a stream's DATA is searched
 * whole, so a value split across frames counts); no placeholder in any field toward the upstream;
 * every stream the budget admitted is released once (every third is refused).
 */
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "fuzz-secrets.h"
#include "h2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int request(void *ud, const uint8_t *head, size_t len, uint8_t *out, size_t outsz,
		   size_t *outlen, struct hezo_h2_verdict *v)
{
	struct hezo_subst_secret s[3];
	struct hezo_subst_result res;
	struct hezo_http_request req;

	(void)ud;
	for (int i = 0; i < 3; i++)
		s[i] = (struct hezo_subst_secret){ph[i],
						  (const uint8_t *)val[i],
						  strlen(val[i]),
						  true,
						  false,
						  true,
						  false,
						  NULL,
						  0};
	/* As intercept.c: the Host (:authority) must be the connection's name. */
	if (hezo_http_parse_request(head, len, &req) != 1 || req.head_len != len ||
	    strcmp(req.host, "h2.test") != 0) {
		v->status = 400;
		v->why = "bad";
		return -1;
	}
	if (hezo_subst_head(head, len, s, 3, out, outsz, outlen, &res) < 0) {
		v->status = 400;
		v->why = "refused";
		return -1;
	}
	v->count = res.count;
	v->sensitive = res.count > 0;
	return 0;
}

static void stream_end(void *ud, const struct hezo_h2_stream_log *l)
{
	(void)ud;
	(void)l;
}

/* The memory budget (intercept.c): every third stream is refused; each admitted one must be
 * released once, all of them by hezo_h2_free. */
static unsigned admits, live;

static bool admit(void *ud)
{
	(void)ud;
	if (++admits % 3 == 0)
		return false;
	live++;
	return true;
}

static void release(void *ud)
{
	(void)ud;
	if (live == 0)
		abort();
	live--;
}

static const struct hezo_h2_ops ops = {request, stream_end, admit, release};

/* One direction's frames as proxyd wrote them, decoded. */
struct side {
	bool toward_box;
	size_t skip; /* the preface still to pass (toward the upstream) */
	uint8_t fr[9 + 16384 + 64];
	size_t frlen;
	nghttp2_hd_inflater *hd;
	uint8_t data[8][4096]; /* each stream's DATA so far (the first 8 streams, capped) */
	size_t dlen[8];
};

static void check_field(const struct side *sd, const uint8_t *b, size_t n)
{
	for (int i = 0; i < 3; i++)
		if (sd->toward_box ? contains(b, n, val[i]) : contains(b, n, ph[i]))
			abort();
}

static void frame(struct side *sd, const uint8_t *f, size_t len)
{
	uint8_t type = f[3], flags = f[4];
	uint32_t id =
		((uint32_t)(f[5] & 0x7f) << 24) | (uint32_t)f[6] << 16 | (uint32_t)f[7] << 8 | f[8];
	const uint8_t *p = f + 9;
	size_t n = len - 9, pad = 0;

	if ((type == NGHTTP2_DATA || type == NGHTTP2_HEADERS) && (flags & NGHTTP2_FLAG_PADDED)) {
		if (n < 1 || p[0] >= n)
			abort();
		pad = p[0];
		p++;
		n -= 1 + pad;
	}
	if (type == NGHTTP2_HEADERS && (flags & NGHTTP2_FLAG_PRIORITY)) {
		if (n < 5)
			abort();
		p += 5;
		n -= 5;
	}
	if (type == NGHTTP2_DATA && sd->toward_box && id % 2 == 1 && id / 2 < 8) {
		size_t k = id / 2, room = sizeof(sd->data[k]) - sd->dlen[k];

		memcpy(sd->data[k] + sd->dlen[k], p, n < room ? n : room);
		sd->dlen[k] += n < room ? n : room;
		check_field(sd, sd->data[k], sd->dlen[k]);
	}
	if (type == NGHTTP2_HEADERS || type == NGHTTP2_CONTINUATION) {
		bool last = flags & NGHTTP2_FLAG_END_HEADERS;

		for (;;) {
			nghttp2_nv nv;
			int fl = 0;
			ssize_t r = nghttp2_hd_inflate_hd2(sd->hd, &nv, &fl, p, n, last);

			if (r < 0)
				abort(); /* proxyd wrote a header block that does not decode */
			p += r;
			n -= (size_t)r;
			if (fl & NGHTTP2_HD_INFLATE_EMIT) {
				check_field(sd, nv.name, nv.namelen);
				check_field(sd, nv.value, nv.valuelen);
			}
			if (fl & NGHTTP2_HD_INFLATE_FINAL) {
				nghttp2_hd_inflate_end_headers(sd->hd);
				break;
			}
			if (r == 0 && !(fl & NGHTTP2_HD_INFLATE_EMIT))
				break;
		}
	}
}

static void bytes(struct side *sd, const uint8_t *b, size_t n)
{
	while (n > 0) {
		size_t k, need;

		if (sd->skip) {
			k = n < sd->skip ? n : sd->skip;
			sd->skip -= k;
			b += k;
			n -= k;
			continue;
		}
		need = sd->frlen < 9
			       ? 9
			       : 9 + ((size_t)sd->fr[0] << 16 | (size_t)sd->fr[1] << 8 | sd->fr[2]);
		if (need > sizeof(sd->fr))
			abort(); /* a frame larger than any the peer allows */
		k = need - sd->frlen < n ? need - sd->frlen : n;
		memcpy(sd->fr + sd->frlen, b, k);
		sd->frlen += k;
		b += k;
		n -= k;
		if (sd->frlen >= 9 && sd->frlen == 9 + ((size_t)sd->fr[0] << 16 |
							(size_t)sd->fr[1] << 8 | sd->fr[2])) {
			frame(sd, sd->fr, sd->frlen);
			sd->frlen = 0;
		}
	}
}

static void pump(struct hezo_h2 *h, struct side *box, struct side *up)
{
	const uint8_t *p;
	ssize_t n;

	while ((n = hezo_h2_to_client(h, &p)) > 0)
		bytes(box, p, (size_t)n);
	while ((n = hezo_h2_to_upstream(h, &p)) > 0)
		bytes(up, p, (size_t)n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
	struct hezo_mask_value mv[3];
	struct hezo_h2 *h;
	struct side *box = calloc(1, sizeof(*box)), *up = calloc(1, sizeof(*up));
	bool dead = false;

	if (!box || !up)
		abort();
	for (int i = 0; i < 3; i++)
		mv[i] = (struct hezo_mask_value){ph[i], (const uint8_t *)val[i], strlen(val[i]), 0};
	box->toward_box = true;
	up->skip = sizeof(preface) - 1;
	if (nghttp2_hd_inflate_new(&box->hd) != 0 || nghttp2_hd_inflate_new(&up->hd) != 0 ||
	    hezo_h2_new(&h, &ops, NULL, mv, 3) < 0)
		abort();
	if (hezo_h2_from_client(h, (const uint8_t *)preface, sizeof(preface) - 1) < 0)
		abort();
	pump(h, box, up);
	while (size >= 2 && !dead) {
		size_t n = data[1] < size - 2 ? data[1] : size - 2;

		if (data[0] & 1)
			dead = hezo_h2_from_upstream(h, data + 2, n) < 0;
		else
			dead = hezo_h2_from_client(h, data + 2, n) < 0;
		pump(h, box, up);
		data += 2 + n;
		size -= 2 + n;
	}
	hezo_h2_upstream_gone(h);
	pump(h, box, up);
	hezo_h2_free(h);
	if (live != 0)
		abort();
	admits = 0;
	nghttp2_hd_inflate_del(box->hd);
	nghttp2_hd_inflate_del(up->hd);
	free(box);
	free(up);
	return 0;
}
