/*
 * libFuzzer target for proxyd/http.c: a found Host is printable and bounded, and a complete head
 * gives the same answer whatever follows it; an accepted head holds no CR without LF and nothing
 * outside printable ASCII but CRLF and HTAB; the chunked scanner finds the same end of a body
 * whether the bytes come at once or split at any point; the stream tracker finds the same request
 * heads, and stops at the same byte for the same reason, whether the stream comes at once, in two
 * pieces, or with body bytes skipped unscanned (spliced) as the relay does, and no head it passes
 * carries a body on a method that takes none; it holds only right after a body-less Upgrade head,
 * so resuming there (a non-101 answer) never lets a body be judged as a head.
 *
 * Build and run by hand from the top of the checkout:
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ibase -Ispec -Iegress
 * -Iproxyd \ tests/fuzz/fuzz-http.c proxyd/http.c -o /tmp/fuzz-http
 *   mkdir -p /tmp/fuzz-http-corpus && /tmp/fuzz-http -max_total_time=60 -max_len=16384 \
 *       -dict=tests/fuzz/http.dict /tmp/fuzz-http-corpus tests/fuzz/corpus/http
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxyd-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static int check_host(const uint8_t *data, size_t size);
static void check_request(const uint8_t *data, size_t size);
static void check_chunked(const uint8_t *data, size_t size);
static void check_track(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_request(data, size);
	check_chunked(data, size);
	check_track(data, size);
	return check_host(data, size);
}

static int check_host(const uint8_t *data, size_t size)
{
	char host[HEZO_NAME_MAX], again[HEZO_NAME_MAX];
	uint16_t port, port2;
	uint8_t *more;
	int r = hezo_http_parse_host(data, size, host, &port), r2;

	if (r != 1 && r != -EAGAIN && r != -EINVAL)
		abort();
	if (r != 1)
		return 0;
	if (!host[0] || strlen(host) >= HEZO_NAME_MAX)
		abort();
	for (const char *p = host; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			abort();
	more = malloc(size + 8);
	if (!more)
		return 0;
	memcpy(more, data, size);
	memcpy(more + size, "\r\nHost: x", 8);
	r2 = hezo_http_parse_host(more, size + 8, again, &port2);
	if (r2 != 1 || strcmp(host, again) != 0 || port != port2)
		abort();
	free(more);
	return 0;
}

static void check_request(const uint8_t *data, size_t size)
{
	struct hezo_http_request req, again;
	int r = hezo_http_parse_request(data, size, &req);

	if (r != 1 && r != -EAGAIN && r != -EINVAL)
		abort();
	if (r != 1)
		return;
	if (req.head_len < 18 || req.head_len > size || !req.host[0] || req.method_len == 0 ||
	    req.minor > 1 || (req.body != HEZO_HTTP_BODY_LENGTH && req.length != 0))
		abort();
	for (size_t i = 0; i < req.head_len; i++) {
		uint8_t c = data[i];

		if ((c == '\r' && data[i + 1] != '\n') ||
		    (c == '\n' && (!i || data[i - 1] != '\r')) ||
		    (c < 0x20 && c != '\r' && c != '\n' && c != '\t') || c >= 0x7f)
			abort();
	}
	if (memcmp(data + req.head_len - 4, "\r\n\r\n", 4) != 0)
		abort();
	/* what follows the head does not change it */
	if (hezo_http_parse_request(data, req.head_len, &again) != 1 ||
	    memcmp(&req, &again, sizeof(req)) != 0)
		abort();
}

/* The first byte picks where the rest is split: false when there is no rest. */
static bool take_cut(const uint8_t **data, size_t *size, size_t *cut)
{
	if (*size < 2)
		return false;
	*cut = (*data)[0] % *size;
	(*data)++;
	(*size)--;
	if (*cut > *size)
		*cut = *size;
	return true;
}

/* The bytes after the head as a chunked body: one scan, or two at a split, agree. */
static void check_chunked(const uint8_t *data, size_t size)
{
	struct hezo_http_chunked a, b;
	size_t used_a = 0, used_b1 = 0, used_b2 = 0, cut;
	int ra, rb;

	if (!take_cut(&data, &size, &cut))
		return;
	hezo_http_chunked_init(&a);
	ra = hezo_http_chunked_scan(&a, data, size, &used_a);
	hezo_http_chunked_init(&b);
	rb = hezo_http_chunked_scan(&b, data, cut, &used_b1);
	if (rb == 0)
		rb = hezo_http_chunked_scan(&b, data + cut, size - cut, &used_b2);
	else
		used_b2 = 0;
	if (ra != rb || (ra >= 0 && used_a != used_b1 + used_b2) || used_a > size)
		abort();
}

#define TRACK_HEADS 64

struct walk {
	size_t heads[TRACK_HEADS], nheads, end;
	int r;
};

/*
 * The relay's walk over a client stream: bytes arrive up to cut first, then the rest; a head is
 * only looked at in full; with splice, body bytes the tracker says need no look are skipped.
 * Stops at the first error, or where the bytes run out.
 */
static void walk(const uint8_t *data, size_t size, size_t cut, bool splice, bool resume,
		 struct walk *w)
{
	struct hezo_http_track t;
	size_t pos = 0, arrived = cut;

	memset(w, 0, sizeof(*w));
	hezo_http_track_init(&t);
	for (;;) {
		struct hezo_http_request req;
		size_t used = 0, avail = arrived - pos;
		uint64_t skip = splice ? hezo_http_track_body_left(&t) : 0;
		int r;

		if (avail == 0 && arrived < size) {
			arrived = size;
			continue;
		}
		if (skip > 0 && avail > 0) {
			if (skip > avail)
				skip = avail;
			hezo_http_track_skip(&t, skip);
			pos += skip;
			continue;
		}
		if (t.st == HEZO_HTTP_T_HOLD && resume) {
			hezo_http_track_resume(&t);
			continue;
		}
		if (avail == 0 || t.st == HEZO_HTTP_T_HOLD) {
			w->r = 0;
			break;
		}
		r = hezo_http_track(&t, data + pos, avail, &used, &req);
		if (r == -EAGAIN && arrived < size) {
			arrived = size;
			continue;
		}
		if (used > avail || (r == 0 && used == 0))
			abort();
		if (r == 1) {
			if (req.bodyless && (req.body == HEZO_HTTP_BODY_CHUNKED || req.length > 0))
				abort();
			/* A hold with a body still to come would resume inside that body. */
			if (t.st == HEZO_HTTP_T_HOLD &&
			    (!req.upgrade || req.body == HEZO_HTTP_BODY_CHUNKED || req.length > 0))
				abort();
			if (w->nheads < TRACK_HEADS)
				w->heads[w->nheads] = pos;
			w->nheads++;
		}
		if (r < 0) {
			w->r = r;
			break;
		}
		pos += used;
	}
	w->end = pos;
}

static void check_track(const uint8_t *data, size_t size)
{
	struct walk a, b, c, d, e;
	size_t cut;

	if (!take_cut(&data, &size, &cut))
		return;
	walk(data, size, size, false, false, &a);
	walk(data, size, cut, false, false, &b);
	walk(data, size, cut, true, false, &c);
	/* Resumed at every hold: the same heads however the bytes came, and those before the
	 * first hold are the heads found without resuming. */
	walk(data, size, size, false, true, &d);
	walk(data, size, cut, true, true, &e);
	if (d.r != e.r || d.nheads != e.nheads || memcmp(d.heads, e.heads, sizeof(d.heads)) != 0 ||
	    d.nheads < a.nheads ||
	    memcmp(d.heads, a.heads,
		   sizeof(size_t) * (a.nheads < TRACK_HEADS ? a.nheads : TRACK_HEADS)) != 0)
		abort();
	/* A bad chunk stops the walk inside a body: how much of that body went before it depends
	 * on how the bytes came, which heads were found does not. */
	if (a.r != b.r || a.r != c.r || a.nheads != b.nheads || a.nheads != c.nheads ||
	    memcmp(a.heads, b.heads, sizeof(a.heads)) != 0 ||
	    memcmp(a.heads, c.heads, sizeof(a.heads)) != 0 ||
	    (a.r != -EPROTO && (a.end != b.end || a.end != c.end)))
		abort();
}
