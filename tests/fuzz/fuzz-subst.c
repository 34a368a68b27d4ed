/*
 * libFuzzer target for proxyd/subst.c on heads proxyd/http.c accepts. The first byte chooses, per
 * secret of three, whether it is here and whether it may pass; then the head. Invariants: a head
 * with no placeholder of a secret that is here comes out byte for byte; no placeholder of a secret
 * that is here survives (but in Host, which is never substituted); an output that parses has the
 * input's framing (body kind, length, Upgrade) and Host; a refusal names a secret that is not here
 * and may not pass; an output that no longer parses (proxyd then refuses it) is one that took a
 * value.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxyd-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const ph[3] = {
	"hzph0123456789abcdefghijklmnopqrstuvwxyz0123",
	"hzphaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"hzph9999999999999999999999999999999999999999",
};
static const char *const val[3] = {"ghp_realtoken", "x?y#z/%41", "p@ss:w0rd"};

static bool contains(const uint8_t *b, size_t len, const char *s)
{
	return memmem(b, len, s, strlen(s)) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[3 * 16384];
	struct hezo_subst_secret s[3];
	struct hezo_http_request a, b;
	struct hezo_subst_result res;
	size_t olen;
	int r;

	if (size < 1 || size > 16384)
		return 0;
	for (int i = 0; i < 3; i++)
		s[i] = (struct hezo_subst_secret){ph[i], (const uint8_t *)val[i], strlen(val[i]),
						  (data[0] >> i) & 1, (data[0] >> (i + 3)) & 1};
	data++;
	size--;
	if (hezo_http_parse_request(data, size, &a) != 1)
		return 0;
	r = hezo_subst_head(data, a.head_len, s, 3, out, sizeof(out), &olen, &res);
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
	if (!res.used && (olen != a.head_len || memcmp(out, data, olen) != 0))
		abort();
	/* Host is never substituted (it was matched with the SNI): a name holding a placeholder
	 * keeps it there. */
	for (int i = 0; !strstr(a.host, "hzph") && i < 3; i++) {
		if (s[i].here && contains(out, olen, ph[i]))
			abort();
	}
	if (hezo_http_parse_request(out, olen, &b) == 1) {
		if (b.head_len != olen || b.body != a.body || b.length != a.length ||
		    b.upgrade != a.upgrade || strcmp(b.host, a.host) != 0 || b.port != a.port)
			abort();
	} else if (!res.used) {
		abort(); /* only a head that took a value may read differently */
	}
	return 0;
}
