/*
 * The Host of a plain HTTP/1.x request, read from its head. Pure; strict on purpose: anything a
 * server and proxyd could read differently (folding, bare LF, two Hosts) is refused.
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

/* Is what we have so far a plausible start of a request line? */
static int check_prefix(const uint8_t *buf, size_t len)
{
	size_t i = 0;

	while (i < len && is_tchar(buf[i]))
		i++;
	if (i == len)
		return i > 16 ? -EINVAL : -EAGAIN;
	if (i == 0 || buf[i] != ' ')
		return -EINVAL;
	return -EAGAIN;
}

int hezo_http_parse_host(const uint8_t *buf, size_t len, char out[HEZO_NAME_MAX], uint16_t *port)
{
	const uint8_t *end = NULL, *line, *sp1, *sp2, *eol;
	const uint8_t *target;
	size_t target_len, mlen;
	bool have_host = false;

	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r'))
			return -EINVAL; /* bare LF */
		if (buf[i] == '\0')
			return -EINVAL;
		if (i >= 3 && memcmp(buf + i - 3, "\r\n\r\n", 4) == 0) {
			end = buf + i + 1;
			break;
		}
	}
	if (!end)
		return check_prefix(buf, len);

	/* Request line: METHOD SP target SP HTTP/1.x */
	eol = memmem(buf, (size_t)(end - buf), "\r\n", 2);
	sp1 = memchr(buf, ' ', (size_t)(eol - buf));
	if (!sp1 || sp1 == buf)
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

	for (line = eol + 2; line < end - 2; line = eol + 2) {
		const uint8_t *colon, *v, *ve;

		eol = memmem(line, (size_t)(end - line), "\r\n", 2);
		if (line[0] == ' ' || line[0] == '\t')
			return -EINVAL; /* obsolete line folding */
		colon = memchr(line, ':', (size_t)(eol - line));
		if (!colon || colon == line)
			return -EINVAL;
		for (const uint8_t *p = line; p < colon; p++)
			if (!is_tchar(*p))
				return -EINVAL;
		if (colon - line != 4 || strncasecmp((const char *)line, "host", 4) != 0)
			continue;
		if (have_host)
			return -EINVAL;
		v = colon + 1;
		ve = eol;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (split_authority(v, (size_t)(ve - v), out, port) < 0)
			return -EINVAL;
		have_host = true;
	}
	if (!have_host)
		return -EINVAL;

	/* An absolute-form target must name the same authority as Host. */
	if (target_len > 7 && strncasecmp((const char *)target, "http://", 7) == 0) {
		const uint8_t *a = target + 7, *ae = a;
		char tname[HEZO_NAME_MAX];
		uint16_t tport;

		while (ae < target + target_len && *ae != '/' && *ae != '?' && *ae != '#')
			ae++;
		if (split_authority(a, (size_t)(ae - a), tname, &tport) < 0)
			return -EINVAL;
		if (strcasecmp(tname, out) != 0 || tport != *port)
			return -EINVAL;
	} else if (target[0] != '/' && !(target_len == 1 && target[0] == '*')) {
		return -EINVAL;
	}
	return 1;
}
