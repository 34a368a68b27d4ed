/*
 * Placeholders replaced by values in an intercepted HTTP/1.1 request head: the request target,
 * header values, and the credentials inside Basic authorization. Pure and allocation-free, so it
 * is fuzzed (tests/fuzz/fuzz-subst.c); the head has passed hezo_http_parse_request already.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "proxyd-parse.h"

#define VALUE_MAX 4096
/* A decoded Basic credential: user-id ":" password, with room for substituted values. */
#define BASIC_MAX 8192

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

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

/* Copy seg into o with the placeholders replaced. */
static void subst_seg(const uint8_t *seg, size_t len, const struct hezo_subst_secret *v, size_t n,
		      struct out *o, struct hezo_subst_result *res)
{
	size_t i = 0, from = 0;

	while (i < len) {
		int k = match(seg + i, len - i, v, n);

		if (k < 0) {
			i++;
			continue;
		}
		put(o, seg + from, i - from);
		if (v[k].here) {
			put(o, v[k].value, v[k].value_len);
			res->used |= 1u << k;
			res->count++;
		} else {
			if (!v[k].pass)
				res->refused |= 1u << k;
			put(o, seg + i, HEZO_PLACEHOLDER_LEN);
		}
		i += HEZO_PLACEHOLDER_LEN;
		from = i;
	}
	put(o, seg + from, len - from);
}

static int b64_val(uint8_t c)
{
	const char *p = c ? strchr(b64, c) : NULL;

	return p ? (int)(p - b64) : -1;
}

/* Strict base64 (padding required, no whitespace) into out; -1 when it is not that. */
static long b64_decode(const uint8_t *s, size_t len, uint8_t *out, size_t size)
{
	size_t n = 0;

	if (len == 0 || len % 4)
		return -1;
	for (size_t i = 0; i < len; i += 4) {
		int a = b64_val(s[i]), b = b64_val(s[i + 1]);
		int c = s[i + 2] == '=' ? -2 : b64_val(s[i + 2]);
		int d = s[i + 3] == '=' ? -2 : b64_val(s[i + 3]);

		if (a < 0 || b < 0 || c == -1 || d == -1 || (c == -2 && d != -2) ||
		    ((c == -2 || d == -2) && i + 4 != len) || n + 3 > size)
			return -1;
		out[n++] = (uint8_t)(a << 2 | b >> 4);
		if (c >= 0)
			out[n++] = (uint8_t)((b & 15) << 4 | c >> 2);
		if (d >= 0)
			out[n++] = (uint8_t)((c & 3) << 6 | d);
	}
	return (long)n;
}

static void b64_encode(const uint8_t *s, size_t len, struct out *o)
{
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		char q[4];

		if (i + 1 < len)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < len)
			v |= s[i + 2];
		q[0] = b64[v >> 18 & 63];
		q[1] = b64[v >> 12 & 63];
		q[2] = i + 1 < len ? b64[v >> 6 & 63] : '=';
		q[3] = i + 2 < len ? b64[v & 63] : '=';
		put(o, q, 4);
	}
}

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
		size_t s = t + 6;
		long dl;

		while (s < e && val[s] == ' ')
			s++;
		dl = b64_decode(val + s, e - s, dec, sizeof(dec));
		if (dl > 0) {
			struct hezo_subst_result r2 = {0};
			struct out so = {.p = sub, .size = sizeof(sub)};

			subst_seg(dec, (size_t)dl, v, n, &so, &r2);
			if (r2.used || r2.refused) {
				res->used |= r2.used;
				res->refused |= r2.refused;
				res->count += r2.count;
				if (so.full) {
					o->full = true;
					return;
				}
				uint8_t enc[BASIC_MAX / 3 * 4 + 8];
				struct out eo = {.p = enc, .size = sizeof(enc)};

				put(o, val, s);
				b64_encode(sub, so.len, &eo);
				/* A placeholder spelled out in the base64 text itself goes too. */
				subst_seg(enc, eo.len, v, n, o, res);
				o->full = o->full || eo.full;
				put(o, val + e, vlen - e);
				return;
			}
		}
	}
	subst_seg(val, vlen, v, n, o, res);
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
				/* The method too: no placeholder may reach its host unreplaced. */
				subst_seg(line, (size_t)(sp1 - line), s, n, &o, res);
				put(&o, " ", 1);
				subst_seg(sp1 + 1, (size_t)(sp2 - sp1 - 1), s, n, &o, res);
				put(&o, sp2, (size_t)(line + ll - sp2));
			}
		} else if (ll == 2) {
			put(&o, line, ll);
		} else if ((colon = memchr(line, ':', ll - 2))) {
			/* A placeholder in a field name is replaced too (none may reach its host);
			 * a name that no longer reads as one makes the caller refuse the head. */
			subst_seg(line, (size_t)(colon - line), s, n, &o, res);
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
	if (res->refused)
		return -EACCES;
	if (o.full)
		return -ENOSPC;
	*outlen = o.len;
	return 0;
}
