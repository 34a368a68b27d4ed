/*
 * Placeholders replaced by values in an intercepted HTTP/1.1 request head: header values (the
 * credentials inside Basic authorization decoded first), and the query string where a secret opts
 * in; a placeholder anywhere else is refused, since an upstream echoes method and target back. Pure
 * and allocation-free, so it is fuzzed (tests/fuzz/fuzz-subst.c); the head has passed
 * hezo_http_parse_request already.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "hezo-b64.h"
#include "proxyd-parse.h"

#define VALUE_MAX 4096
/* A decoded Basic credential: user-id ":" password, with room for substituted values. */
#define BASIC_MAX 8192

bool hezo_subst_value_ok(const uint8_t *v, size_t len)
{
	if (len == 0 || len > VALUE_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (v[i] < 0x21 || v[i] > 0x7e)
			return false;
	return true;
}

struct out {
	uint8_t *p;
	size_t size, len;
	bool full;
};

static void put(struct out *o, const void *b, size_t n)
{
	if (n == 0)
		return;
	if (o->full || n > o->size - o->len) {
		o->full = true;
		return;
	}
	memcpy(o->p + o->len, b, n);
	o->len += n;
}

/* The secret whose placeholder starts at s (len bytes available), or -1. */
static int match(const uint8_t *s, size_t len, const struct hezo_subst_secret *v, size_t n)
{
	if (len < HEZO_PLACEHOLDER_LEN || memcmp(s, HEZO_PLACEHOLDER_PREFIX, 4) != 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (memcmp(s, v[i].placeholder, HEZO_PLACEHOLDER_LEN) == 0)
			return (int)i;
	return -1;
}

/* Where a segment of the head sits: only header values (and a query that opts in) take values. */
enum place { AT_METHOD, AT_PATH, AT_QUERY, AT_NAME, AT_VALUE };

static const char *const misplaced_why[] = {
	[AT_METHOD] = "a secret's placeholder in the method",
	[AT_PATH] = "a secret's placeholder in the request path",
	[AT_QUERY] = ("a secret's placeholder in the query string (its secret does not take "
		      "\"query\")"),
	[AT_NAME] = "a secret's placeholder in a header field name",
	[AT_VALUE] = "a secret's placeholder in a header its secret does not allow",
};

static bool header_ok(const struct hezo_subst_secret *v, const uint8_t *name, size_t nlen)
{
	if (!v->header)
		return false;
	if (!v->headers)
		return true;
	for (size_t i = 0; i < v->nheaders; i++)
		if (strlen(v->headers[i]) == nlen &&
		    strncasecmp(v->headers[i], (const char *)name, nlen) == 0)
			return true;
	return false;
}

/* Copy seg into o with the placeholders that may be replaced at this place replaced; name is
 * the header's at AT_VALUE. */
static void subst_seg(const uint8_t *seg, size_t len, enum place at, const uint8_t *name,
		      size_t nlen, const struct hezo_subst_secret *v, size_t n, struct out *o,
		      struct hezo_subst_result *res)
{
	size_t i = 0, from = 0;

	while (i < len) {
		const uint8_t *p = memchr(seg + i, 'h', len - i);
		int k;

		if (!p)
			break;
		i = (size_t)(p - seg);
		k = match(seg + i, len - i, v, n);
		if (k < 0) {
			i++;
			continue;
		}
		put(o, seg + from, i - from);
		if (v[k].here && ((at == AT_QUERY && v[k].query) ||
				  (at == AT_VALUE && header_ok(&v[k], name, nlen)))) {
			put(o, v[k].value, v[k].value_len);
			res->used |= 1u << k;
			res->count++;
		} else {
			if (v[k].here) {
				/* Never sent where its host could hand it back unasked. */
				res->misplaced |= 1u << k;
				if (!res->why)
					res->why = misplaced_why[at];
			} else if (!v[k].pass) {
				res->refused |= 1u << k;
			}
			put(o, seg + i, HEZO_PLACEHOLDER_LEN);
		}
		i += HEZO_PLACEHOLDER_LEN;
		from = i;
	}
	put(o, seg + from, len - from);
}

static void b64_encode(const uint8_t *s, size_t len, struct out *o)
{
	char q[4];

	for (size_t i = 0; i < len; i += 3)
		put(o, q, hezo_b64_encode(s + i, len - i < 3 ? len - i : 3, q));
}

static void merge(struct hezo_subst_result *res, const struct hezo_subst_result *r)
{
	res->used |= r->used;
	res->refused |= r->refused;
	res->misplaced |= r->misplaced;
	res->why = res->why ?: r->why;
	res->count += r->count;
}

/*
 * The re-encoded credentials out[at..len): a placeholder in them is the box's text, written to
 * be there beside a value it put in the credentials. Refused, not substituted: its value would
 * sit inside base64 it could be read back from.
 */
static void scan_encoded(const struct out *o, size_t at, const struct hezo_subst_secret *v,
			 size_t n, struct hezo_subst_result *res)
{
	for (size_t i = at; i < o->len; i++) {
		int k = match(o->p + i, o->len - i, v, n);

		if (k < 0)
			continue;
		if (v[k].here) {
			res->misplaced |= 1u << k;
			res->why = res->why
					   ?: "a secret's placeholder in the base64 text of Basic "
					      "credentials that hold a placeholder";
		} else if (!v[k].pass) {
			res->refused |= 1u << k;
		}
	}
}

/*
 * Is the decoded credential d[0..dl) one a placeholder may sit in: "user:" PH (a user without
 * one), PH ":password" or PH alone, one placeholder in all? In any other the box would choose
 * bytes beside the value inside one base64 token, whose echo is masked back as the token.
 */
static bool basic_form_ok(const uint8_t *d, size_t dl, const struct hezo_subst_secret *v, size_t n)
{
	const size_t pl = HEZO_PLACEHOLDER_LEN;
	const uint8_t *c = memchr(d, ':', dl);
	unsigned count = 0;

	for (size_t i = 0; i + pl <= dl; i++)
		if (match(d + i, dl - i, v, n) >= 0)
			count++;
	if (count != 1)
		return false;
	if (match(d, dl, v, n) >= 0 && (dl == pl || d[pl] == ':'))
		return true;
	return dl > pl && c == d + dl - pl - 1 && match(d + dl - pl, pl, v, n) >= 0;
}

static const char basic_why[] = "a placeholder in Basic credentials other than base64 of "
				"user:PLACEHOLDER or PLACEHOLDER[:password], or a token that "
				"is a placeholder alone";

/*
 * A header value: "Basic TOKEN" of an authorization header gets its credentials decoded,
 * substituted and encoded again (only when a placeholder is inside: else it stays byte for byte);
 * everything else is substituted as text.
 */
static void subst_value(const uint8_t *name, size_t nlen, const uint8_t *val, size_t vlen,
			const struct hezo_subst_secret *v, size_t n, struct out *o,
			struct hezo_subst_result *res)
{
	bool auth = (nlen == 13 && strncasecmp((const char *)name, "authorization", 13) == 0) ||
		    (nlen == 19 && strncasecmp((const char *)name, "proxy-authorization", 19) == 0);
	size_t t = 0, e = vlen;

	/* Host was matched with the SNI before: a value there would change where the request goes.
	 */
	if (nlen == 4 && strncasecmp((const char *)name, "host", 4) == 0) {
		put(o, val, vlen);
		return;
	}
	/* The token sits between optional whitespace; the parser left it in the value. */
	while (t < vlen && (val[t] == ' ' || val[t] == '\t'))
		t++;
	while (e > t && (val[e - 1] == ' ' || val[e - 1] == '\t'))
		e--;
	if (auth && e - t > 6 && strncasecmp((const char *)val + t, "basic ", 6) == 0) {
		uint8_t dec[BASIC_MAX], sub[BASIC_MAX];
		struct hezo_subst_result r2 = {0};
		size_t s = t + 6, at;
		long dl;

		while (s < e && val[s] == ' ')
			s++;
		put(o, val, s);
		at = o->len;
		dl = hezo_b64_decode(val + s, e - s, dec, sizeof(dec));
		if (dl > 0) {
			struct out so = {.p = sub, .size = sizeof(sub)};

			subst_seg(dec, (size_t)dl, AT_VALUE, name, nlen, v, n, &so, &r2);
			o->full = o->full || so.full;
			if (r2.used && !basic_form_ok(dec, (size_t)dl, v, n)) {
				r2.misplaced |= r2.used;
				r2.why = r2.why ?: basic_why;
			}
			/* Encoded as it is, never substituted again: a placeholder written in the
			 * new base64 text would give forms of the value (base64 of ":" value) that
			 * the masking does not know. */
			if (r2.used || r2.refused || r2.misplaced) {
				b64_encode(sub, so.len, o);
				scan_encoded(o, at, v, n, &r2);
			}
		}
		/* No placeholder in the credentials: the token is the box's text, a placeholder in
		 * it standing for a value that is the token or a part of it. */
		if (!(r2.used || r2.refused || r2.misplaced)) {
			subst_seg(val + s, e - s, AT_VALUE, name, nlen, v, n, o, &r2);
			/* A token that is a placeholder alone is the value (its own mask); with
			 * the box's bytes around it, the token masked back would swallow them. */
			if (r2.used && e - s != HEZO_PLACEHOLDER_LEN) {
				r2.misplaced |= r2.used;
				r2.why = r2.why ?: basic_why;
			}
		}
		merge(res, &r2);
		/* The token as sent is masked back whole: one too long to be masked is refused. */
		if (r2.used && !o->full && o->len - at > HEZO_MASK_VALUE_MAX) {
			res->oversize |= r2.used;
			res->why = res->why
					   ?: "a Basic credential too long to be masked once "
					      "substituted";
		}
		put(o, val + e, vlen - e);
		return;
	}
	subst_seg(val, vlen, AT_VALUE, name, nlen, v, n, o, res);
}

int hezo_subst_head(const uint8_t *head, size_t len, const struct hezo_subst_secret *s, size_t n,
		    uint8_t *out, size_t outsz, size_t *outlen, struct hezo_subst_result *res)
{
	struct out o = {.p = out, .size = outsz};
	const uint8_t *end = head + len, *line = head, *nl;
	bool first = true;

	memset(res, 0, sizeof(*res));
	*outlen = 0;
	if (n > HEZO_SUBST_MAX)
		return -EINVAL;
	while (line < end) {
		const uint8_t *colon, *sp1, *sp2;
		size_t ll;

		nl = memchr(line, '\n', (size_t)(end - line));
		ll = nl ? (size_t)(nl - line) + 1 : (size_t)(end - line);
		/* The parser allows only CRLF line ends: the content is ll - 2 bytes. */
		if (ll < 2 || line[ll - 2] != '\r') {
			put(&o, line, ll);
		} else if (first) {
			/* METHOD SP target SP version: the version is left alone. */
			sp1 = memchr(line, ' ', ll - 2);
			sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line + ll - 2 - sp1 - 1)) : NULL;
			if (!sp1 || !sp2) {
				put(&o, line, ll);
			} else {
				const uint8_t *q = memchr(sp1 + 1, '?', (size_t)(sp2 - sp1 - 1));

				q = q ? q : sp2;
				subst_seg(line, (size_t)(sp1 - line), AT_METHOD, NULL, 0, s, n, &o,
					  res);
				put(&o, " ", 1);
				subst_seg(sp1 + 1, (size_t)(q - sp1 - 1), AT_PATH, NULL, 0, s, n,
					  &o, res);
				subst_seg(q, (size_t)(sp2 - q), AT_QUERY, NULL, 0, s, n, &o, res);
				put(&o, sp2, (size_t)(line + ll - sp2));
			}
		} else if (ll == 2) {
			put(&o, line, ll);
		} else if ((colon = memchr(line, ':', ll - 2))) {
			subst_seg(line, (size_t)(colon - line), AT_NAME, NULL, 0, s, n, &o, res);
			put(&o, ":", 1);
			subst_value(line, (size_t)(colon - line), colon + 1,
				    (size_t)(line + ll - 2 - colon - 1), s, n, &o, res);
			put(&o, "\r\n", 2);
		} else {
			put(&o, line, ll);
		}
		first = false;
		line += ll;
	}
	if (res->misplaced || res->oversize)
		return -EPROTO;
	if (res->refused)
		return -EACCES;
	if (o.full)
		return -ENOSPC;
	*outlen = o.len;
	return 0;
}

int hezo_subst_identity(uint8_t *head, size_t len, size_t size, size_t *outlen)
{
	static const char want[] = "Accept-Encoding: identity\r\n";
	size_t r = 0, w = 0;

	if (len < 4 || memcmp(head + len - 4, "\r\n\r\n", 4) != 0)
		return -EINVAL;
	while (r < len - 2) {
		const uint8_t *nl = memchr(head + r, '\n', len - r);
		size_t ll = (size_t)(nl - (head + r)) + 1;

		/* The request line never starts with the field name: it has no colon there. */
		if (!(ll > 16 &&
		      strncasecmp((const char *)head + r, "accept-encoding:", 16) == 0)) {
			memmove(head + w, head + r, ll);
			w += ll;
		}
		r += ll;
	}
	if (w + sizeof(want) - 1 + 2 > size)
		return -ENOSPC;
	memcpy(head + w, want, sizeof(want) - 1);
	w += sizeof(want) - 1;
	memcpy(head + w, "\r\n", 2);
	*outlen = w + 2;
	return 0;
}

/* The credentials of an authorization line's "Basic" value, or false. */
static bool basic_token(const uint8_t *l, size_t ll, const uint8_t **t, size_t *tl)
{
	const uint8_t *c = memchr(l, ':', ll), *e = l + ll;
	size_t nlen = c ? (size_t)(c - l) : 0;

	if (!c || !((nlen == 13 && strncasecmp((const char *)l, "authorization", 13) == 0) ||
		    (nlen == 19 && strncasecmp((const char *)l, "proxy-authorization", 19) == 0)))
		return false;
	c++;
	while (c < e && (*c == ' ' || *c == '\t'))
		c++;
	while (e > c && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		e--;
	if (e - c <= 6 || strncasecmp((const char *)c, "basic ", 6) != 0)
		return false;
	c += 6;
	while (c < e && *c == ' ')
		c++;
	*t = c;
	*tl = (size_t)(e - c);
	return *tl > 0;
}

void hezo_subst_basic_pairs(const uint8_t *in, size_t inlen, const uint8_t *out, size_t outlen,
			    hezo_subst_pair fn, void *ud)
{
	const uint8_t *a = in, *ae = in + inlen, *b = out, *be = out + outlen;

	while (a < ae && b < be) {
		const uint8_t *an = memchr(a, '\n', (size_t)(ae - a)),
			      *bn = memchr(b, '\n', (size_t)(be - b));
		const uint8_t *at, *bt;
		size_t atl, btl;

		an = an ? an + 1 : ae;
		bn = bn ? bn + 1 : be;
		if (basic_token(a, (size_t)(an - a), &at, &atl) &&
		    basic_token(b, (size_t)(bn - b), &bt, &btl) &&
		    (atl != btl || memcmp(at, bt, atl) != 0))
			fn(ud, bt, btl, at, atl);
		a = an;
		b = bn;
	}
}
