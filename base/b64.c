/* Base64: one copy for proxyd's Basic credentials and the ssh keys' wire formats. */
#include <string.h>

#include "hezo-b64.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_val(uint8_t c)
{
	const char *p = c ? strchr(b64, c) : NULL;

	return p ? (int)(p - b64) : -1;
}

long hezo_b64_decode(const uint8_t *s, size_t len, uint8_t *out, size_t size)
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

size_t hezo_b64_encode(const uint8_t *s, size_t len, char *out)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;

		if (i + 1 < len)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < len)
			v |= s[i + 2];
		out[n++] = b64[v >> 18 & 63];
		out[n++] = b64[v >> 12 & 63];
		out[n++] = i + 1 < len ? b64[v >> 6 & 63] : '=';
		out[n++] = i + 2 < len ? b64[v & 63] : '=';
	}
	return n;
}
