/*
 * Plain HTTP/1.x requests as proxyd follows them on a connection: the strict request-head parser
 * (Host, body framing, Upgrade), the chunked-body scanner, and the tracker that walks a client's
 * stream of them request by request. Pure and allocation-free, so the
 * relay and a later TLS interception can share them. Strict on purpose: anything RFC 9112 calls
 * invalid in a request head, and anything a server and proxyd could read differently (folding,
 * bare CR or LF, two Hosts, Content-Length with Transfer-Encoding), is refused.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "proxyd-parse.h"

static bool is_tchar(uint8_t c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Split "host[:port]" or "[v6]:port"; the port must be 1..65535 decimal. */
static int split_authority(const uint8_t *s, size_t len, char out[HEZO_NAME_MAX], uint16_t *port)
{
	size_t hlen = len, i;
	const uint8_t *h = s;

	*port = 0;
	if (len == 0)
		return -EINVAL;
	if (s[0] == '[') {
		const uint8_t *close = memchr(s, ']', len);

		if (!close)
			return -EINVAL;
		h = s + 1;
		hlen = (size_t)(close - s) - 1;
		i = (size_t)(close - s) + 1;
		if (i < len && s[i] != ':')
			return -EINVAL;
	} else {
		const uint8_t *colon = memchr(s, ':', len);

		if (colon)
			hlen = (size_t)(colon - s);
		i = hlen;
	}
	if (i < len) {
		uint32_t p = 0;

		if (i + 1 == len || len - i - 1 > 5)
			return -EINVAL;
		for (size_t k = i + 1; k < len; k++) {
			if (s[k] < '0' || s[k] > '9')
				return -EINVAL;
			p = p * 10 + (uint32_t)(s[k] - '0');
		}
		if (p == 0 || p > 65535)
			return -EINVAL;
		*port = (uint16_t)p;
	}
	if (hlen == 0 || hlen >= HEZO_NAME_MAX)
		return -EINVAL;
	for (size_t k = 0; k < hlen; k++)
		if (h[k] <= 0x20 || h[k] >= 0x7f || h[k] == '/' || h[k] == '@')
			return -EINVAL;
	memcpy(out, h, hlen);
	out[hlen] = '\0';
	return 0;
}

/* The longest method taken: a head must get the same answer however its bytes arrive, and an
 * incomplete one is judged by its first token. */
#define METHOD_MAX 16

/* Is what we have so far a plausible start of a request line? */
static int check_prefix(const uint8_t *buf, size_t len)
{
	size_t i = 0;

	while (i < len && is_tchar(buf[i]))
		i++;
	if (i > METHOD_MAX)
		return -EINVAL;
	if (i == len)
		return -EAGAIN;
	if (i == 0 || buf[i] != ' ')
		return -EINVAL;
	return -EAGAIN;
}

/*
 * Find the end of the head (just past CRLF CRLF) while checking every byte: CR only before LF,
 * LF only after CR, no other control character but HTAB, no NUL, nothing outside ASCII (a
 * server decoding Latin-1 may split lines at 0x85). 0: not complete yet; -EINVAL.
 */
static int head_end(const uint8_t *buf, size_t len, size_t *end)
{
	for (size_t i = 0; i < len; i++) {
		uint8_t c = buf[i];

		if (c == '\r') {
			if (i + 1 < len && buf[i + 1] != '\n')
				return -EINVAL; /* a bare CR */
		} else if (c == '\n') {
			if (i == 0 || buf[i - 1] != '\r')
				return -EINVAL; /* a bare LF */
			if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
				*end = i + 1;
				return 1;
			}
		} else if ((c < 0x20 && c != '\t') || c >= 0x7f) {
			return -EINVAL;
		}
	}
	return 0;
}

static bool name_is(const uint8_t *name, size_t len, const char *want)
{
	return len == strlen(want) && strncasecmp((const char *)name, want, len) == 0;
}

/* Content-Length: 1*DIGIT, no list, below 2^63. */
static int parse_length(const uint8_t *v, size_t len, uint64_t *out)
{
	uint64_t n = 0;

	if (len == 0 || len > 18)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		n = n * 10 + (uint64_t)(v[i] - '0');
	}
	*out = n;
	return 0;
}

int hezo_http_parse_request(const uint8_t *buf, size_t len, struct hezo_http_request *req)
{
	const uint8_t *end, *line, *sp1, *sp2, *eol, *target;
	size_t target_len, mlen, hend = 0;
	bool have_host = false, have_cl = false, have_te = false;
	int r;

	memset(req, 0, sizeof(*req));
	r = head_end(buf, len, &hend);
	if (r < 0)
		return r;
	if (r == 0)
		return check_prefix(buf, len);
	end = buf + hend;
	req->head_len = hend;

	/* Request line: METHOD SP target SP HTTP/1.x, single spaces. */
	eol = memmem(buf, hend, "\r\n", 2);
	sp1 = memchr(buf, ' ', (size_t)(eol - buf));
	if (!sp1 || sp1 == buf || sp1 - buf > METHOD_MAX)
		return -EINVAL;
	mlen = (size_t)(sp1 - buf);
	for (size_t i = 0; i < mlen; i++)
		if (!is_tchar(buf[i]))
			return -EINVAL;
	if ((mlen == 7 && memcmp(buf, "CONNECT", 7) == 0) ||
	    (mlen == 3 && memcmp(buf, "PRI", 3) == 0))
		return -EINVAL;
	target = sp1 + 1;
	sp2 = memchr(target, ' ', (size_t)(eol - target));
	if (!sp2 || sp2 == target)
		return -EINVAL;
	target_len = (size_t)(sp2 - target);
	for (size_t i = 0; i < target_len; i++)
		if (target[i] <= 0x20 || target[i] >= 0x7f)
			return -EINVAL;
	if (eol - (sp2 + 1) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
	    (sp2[8] != '0' && sp2[8] != '1'))
		return -EINVAL;
	req->minor = (uint8_t)(sp2[8] - '0');
	req->method_len = mlen;
	/* Any case: a server that matches methods without it must not see "get" with a body. */
	req->bodyless = name_is(buf, mlen, "GET") || name_is(buf, mlen, "HEAD") ||
			name_is(buf, mlen, "OPTIONS") || name_is(buf, mlen, "TRACE") ||
			name_is(buf, mlen, "DELETE");

	for (line = eol + 2; line < end - 2; line = eol + 2) {
		const uint8_t *colon, *v, *ve;

		eol = memmem(line, (size_t)(end - line), "\r\n", 2);
		if (line[0] == ' ' || line[0] == '\t')
			return -EINVAL; /* obsolete line folding */
		colon = memchr(line, ':', (size_t)(eol - line));
		if (!colon || colon == line)
			return -EINVAL;
		/* A name is a token: no space before the colon. */
		for (const uint8_t *p = line; p < colon; p++)
			if (!is_tchar(*p))
				return -EINVAL;
		v = colon + 1;
		ve = eol;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (name_is(line, (size_t)(colon - line), "host")) {
			if (have_host ||
			    split_authority(v, (size_t)(ve - v), req->host, &req->port))
				return -EINVAL;
			have_host = true;
		} else if (name_is(line, (size_t)(colon - line), "content-length")) {
			if (have_cl || parse_length(v, (size_t)(ve - v), &req->length) < 0)
				return -EINVAL;
			have_cl = true;
		} else if (name_is(line, (size_t)(colon - line), "transfer-encoding")) {
			/* Only "chunked" alone: a list or another coding is framing two parties
			 * could disagree on. */
			if (have_te || !name_is(v, (size_t)(ve - v), "chunked"))
				return -EINVAL;
			have_te = true;
		} else if (name_is(line, (size_t)(colon - line), "upgrade")) {
			req->upgrade = true;
		}
	}
	if (!have_host || (have_cl && have_te) || (have_te && req->minor == 0))
		return -EINVAL;
	req->body = have_te   ? HEZO_HTTP_BODY_CHUNKED
		    : have_cl ? HEZO_HTTP_BODY_LENGTH
			      : HEZO_HTTP_BODY_NONE;

	/* An absolute-form target must name the same authority as Host. */
	if (target_len > 7 && strncasecmp((const char *)target, "http://", 7) == 0) {
		const uint8_t *a = target + 7, *ae = a;
		char tname[HEZO_NAME_MAX];
		uint16_t tport;

		while (ae < target + target_len && *ae != '/' && *ae != '?' && *ae != '#')
			ae++;
		if (split_authority(a, (size_t)(ae - a), tname, &tport) < 0)
			return -EINVAL;
		if (strcasecmp(tname, req->host) != 0 || tport != req->port)
			return -EINVAL;
	} else if (target[0] != '/' && !(target_len == 1 && target[0] == '*')) {
		return -EINVAL;
	}
	return 1;
}

int hezo_http_parse_host(const uint8_t *buf, size_t len, char out[HEZO_NAME_MAX], uint16_t *port)
{
	struct hezo_http_request req;
	int r = hezo_http_parse_request(buf, len, &req);

	if (r == 1) {
		memcpy(out, req.host, sizeof(req.host));
		*port = req.port;
	}
	return r;
}

void hezo_http_method_path(const uint8_t *head, const struct hezo_http_request *req,
			   char method[HEZO_HTTP_METHOD_LOG], char path[HEZO_HTTP_PATH_LOG])
{
	const uint8_t *t = head + req->method_len + 1, *e = t;
	size_t m = req->method_len, n;

	/* The request line ends in " HTTP/1.x": a target always stops at a space. */
	while (*e != ' ' && *e != '?')
		e++;
	n = (size_t)(e - t);
	if (m >= HEZO_HTTP_METHOD_LOG)
		m = HEZO_HTTP_METHOD_LOG - 1;
	if (n >= HEZO_HTTP_PATH_LOG)
		n = HEZO_HTTP_PATH_LOG - 1;
	memcpy(method, head, m);
	method[m] = '\0';
	memcpy(path, t, n);
	path[n] = '\0';
}

/* ---- chunked bodies ---- */

enum {
	CH_SIZE0, /* the first hex digit of a size */
	CH_SIZE,  /* more hex digits, ';' or CR */
	CH_EXT,	  /* a chunk extension, up to CR */
	CH_SIZE_LF,
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_TRAILER, /* after the last chunk: only the final CRLF (no trailer fields) */
	CH_END_LF,
	CH_DONE,
};

void hezo_http_chunked_init(struct hezo_http_chunked *c)
{
	memset(c, 0, sizeof(*c));
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int hezo_http_chunked_scan(struct hezo_http_chunked *c, const uint8_t *buf, size_t len,
			   size_t *used)
{
	size_t i = 0;

	while (i < len) {
		uint8_t b = buf[i];
		int h;

		switch (c->st) {
		case CH_SIZE0:
		case CH_SIZE:
			h = hexval(b);
			if (h >= 0) {
				/* 15 hex digits: below 2^60, no overflow. */
				if (++c->digits > 15)
					return -EINVAL;
				c->left = c->left * 16 + (uint64_t)h;
				c->st = CH_SIZE;
			} else if (c->st == CH_SIZE && b == ';') {
				c->st = CH_EXT;
			} else if (c->st == CH_SIZE && b == '\r') {
				c->st = CH_SIZE_LF;
			} else {
				return -EINVAL;
			}
			break;
		case CH_EXT:
			if (b == '\r')
				c->st = CH_SIZE_LF;
			else if ((b < 0x20 && b != '\t') || b >= 0x7f)
				return -EINVAL;
			break;
		case CH_SIZE_LF:
			if (b != '\n')
				return -EINVAL;
			c->digits = 0;
			c->st = c->left ? CH_DATA : CH_TRAILER;
			break;
		case CH_DATA: {
			size_t n = len - i;

			if (n > c->left)
				n = (size_t)c->left;
			c->left -= n;
			i += n;
			if (c->left == 0)
				c->st = CH_DATA_CR;
			continue;
		}
		case CH_DATA_CR:
		case CH_TRAILER:
			if (b != '\r')
				return -EINVAL;
			c->st = c->st == CH_DATA_CR ? CH_DATA_LF : CH_END_LF;
			break;
		case CH_DATA_LF:
			if (b != '\n')
				return -EINVAL;
			c->st = CH_SIZE0;
			break;
		case CH_END_LF:
			if (b != '\n')
				return -EINVAL;
			c->st = CH_DONE;
			*used = i + 1;
			return 1;
		default:
			return -EINVAL;
		}
		i++;
	}
	*used = i;
	return 0;
}

uint64_t hezo_http_chunked_data_left(const struct hezo_http_chunked *c)
{
	return c->st == CH_DATA ? c->left : 0;
}

void hezo_http_chunked_skip(struct hezo_http_chunked *c, uint64_t n)
{
	c->left -= n;
	if (c->left == 0)
		c->st = CH_DATA_CR;
}

/* ---- a client's stream of requests ---- */

void hezo_http_track_init(struct hezo_http_track *t)
{
	memset(t, 0, sizeof(*t));
	t->st = HEZO_HTTP_T_HEAD;
}

int hezo_http_track(struct hezo_http_track *t, const uint8_t *buf, size_t len, size_t *used,
		    struct hezo_http_request *req)
{
	struct hezo_http_chunked ch;
	size_t n = 0;
	int r;

	*used = 0;
	switch (t->st) {
	case HEZO_HTTP_T_HEAD:
		r = hezo_http_parse_request(buf, len, req);
		if (r < 0)
			return r;
		*used = req->head_len;
		if (req->bodyless && (req->body == HEZO_HTTP_BODY_CHUNKED || req->length > 0))
			return -EBADMSG;
		/* The body is followed first, whatever Upgrade says: holding at the end of the head
		 * would leave the body to be read as the next head when the server does not switch.
		 * Only a body-less Upgrade holds; one with a body is followed as an ordinary
		 * request, and a server switching after it gets the client's next bytes judged
		 * (and refused) as a request. */
		if (req->body == HEZO_HTTP_BODY_LENGTH && req->length > 0) {
			t->left = req->length;
			t->st = HEZO_HTTP_T_LENGTH;
		} else if (req->body == HEZO_HTTP_BODY_CHUNKED) {
			hezo_http_chunked_init(&t->ch);
			t->st = HEZO_HTTP_T_CHUNKED;
		} else if (req->upgrade) {
			t->st = HEZO_HTTP_T_HOLD;
		}
		return 1;
	case HEZO_HTTP_T_LENGTH:
		n = len < t->left ? len : (size_t)t->left;
		t->left -= n;
		if (t->left == 0)
			t->st = HEZO_HTTP_T_HEAD;
		*used = n;
		return 0;
	case HEZO_HTTP_T_CHUNKED:
		/* On a copy: after an error the tracker is as it was. */
		ch = t->ch;
		r = hezo_http_chunked_scan(&ch, buf, len, &n);
		if (r < 0)
			return -EPROTO;
		t->ch = ch;
		if (r == 1)
			t->st = HEZO_HTTP_T_HEAD;
		*used = n;
		return 0;
	default:
		return 0;
	}
}

uint64_t hezo_http_track_body_left(const struct hezo_http_track *t)
{
	if (t->st == HEZO_HTTP_T_LENGTH)
		return t->left;
	if (t->st == HEZO_HTTP_T_CHUNKED)
		return hezo_http_chunked_data_left(&t->ch);
	return 0;
}

void hezo_http_track_skip(struct hezo_http_track *t, uint64_t n)
{
	if (t->st == HEZO_HTTP_T_LENGTH) {
		t->left -= n;
		if (t->left == 0)
			t->st = HEZO_HTTP_T_HEAD;
	} else if (t->st == HEZO_HTTP_T_CHUNKED) {
		hezo_http_chunked_skip(&t->ch, n);
	}
}

void hezo_http_track_resume(struct hezo_http_track *t)
{
	if (t->st == HEZO_HTTP_T_HOLD)
		t->st = HEZO_HTTP_T_HEAD;
}
