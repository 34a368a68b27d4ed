/* Unit tests for proxyd/subst.c: placeholders replaced in an intercepted request head (issue 17).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxyd-parse.h"

#define PA "hzph0123456789abcdefghijklmnopqrstuvwxyz0123"
#define PB "hzphbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static struct hezo_subst_secret sec[2] = {
	{PA, (const uint8_t *)"ghp_VALUE", 9, true, false, true, false, NULL, 0},
	{PB, (const uint8_t *)"other", 5, false, false, true, false, NULL, 0},
};

/* Substitute head; *r gets the result; returns the output (static). */
static const char *sub(const char *head, int want_r, struct hezo_subst_result *res)
{
	static uint8_t out[8192];
	size_t olen = 0;
	int r = hezo_subst_head((const uint8_t *)head, strlen(head), sec, 2, out, sizeof(out) - 1,
				&olen, res);

	assert_int_equal(r, want_r);
	out[olen] = '\0';
	return (const char *)out;
}

static void test_target_and_headers(void **state)
{
	struct hezo_subst_result res;

	assert_string_equal(sub("GET /x HTTP/1.1\r\nHost: api.test\r\nX-T: a" PA "b\r\nY: " PA
				"\r\n\r\n",
				0, &res),
			    "GET /x HTTP/1.1\r\nHost: api.test\r\nX-T: aghp_VALUEb\r\n"
			    "Y: ghp_VALUE\r\n\r\n");
	assert_int_equal(res.count, 2);
	assert_int_equal(res.used, 1);
	/* No placeholder: byte for byte. */
	assert_string_equal(sub("GET / HTTP/1.1\r\nHost: api.test\r\nX:  hzph  \r\n\r\n", 0, &res),
			    "GET / HTTP/1.1\r\nHost: api.test\r\nX:  hzph  \r\n\r\n");
	assert_int_equal(res.count, 0);
	/* Host is never substituted. */
	assert_string_equal(sub("GET / HTTP/1.1\r\nHost: " PA ".api.test\r\n\r\n", 0, &res),
			    "GET / HTTP/1.1\r\nHost: " PA ".api.test\r\n\r\n");
}

/* Issue 27: an upstream echoes method, target and field names; only values take the value. */
static void test_misplaced(void **state)
{
	static char *const auth_only[] = {"authorization"};
	struct hezo_subst_result res;

	sub(PA " / HTTP/1.1\r\nHost: a.test\r\n\r\n", -EPROTO, &res);
	assert_string_equal(res.why, "a secret's placeholder in the method");
	assert_int_equal(res.misplaced, 1);
	sub("GET /dir/" PA " HTTP/1.1\r\nHost: a.test\r\n\r\n", -EPROTO, &res);
	assert_string_equal(res.why, "a secret's placeholder in the request path");
	sub("GET /dir?x=" PA " HTTP/1.1\r\nHost: a.test\r\n\r\n", -EPROTO, &res);
	assert_non_null(strstr(res.why, "query string"));
	sub("GET / HTTP/1.1\r\nHost: a.test\r\nX-" PA ": 1\r\n\r\n", -EPROTO, &res);
	assert_string_equal(res.why, "a secret's placeholder in a header field name");
	/* The query only where the secret takes it. */
	sec[0].query = true;
	assert_string_equal(sub("GET /q?t=" PA "&u=1 HTTP/1.1\r\nHost: a.test\r\n\r\n", 0, &res),
			    "GET /q?t=ghp_VALUE&u=1 HTTP/1.1\r\nHost: a.test\r\n\r\n");
	sub("GET /" PA "?t=1 HTTP/1.1\r\nHost: a.test\r\n\r\n", -EPROTO, &res);
	sec[0].query = false;
	/* "headers": only the named ones, in any case. */
	sec[0].headers = auth_only;
	sec[0].nheaders = 1;
	assert_string_equal(sub("GET / HTTP/1.1\r\nHost: a.test\r\nAUTHORIZATION: Bearer " PA
				"\r\n\r\n",
				0, &res),
			    "GET / HTTP/1.1\r\nHost: a.test\r\nAUTHORIZATION: Bearer ghp_VALUE"
			    "\r\n\r\n");
	sub("GET / HTTP/1.1\r\nHost: a.test\r\nX-Api-Key: " PA "\r\n\r\n", -EPROTO, &res);
	assert_string_equal(res.why,
			    "a secret's placeholder in a header its secret does not allow");
	sec[0].headers = NULL;
	sec[0].nheaders = 0;
	/* A secret that is not here: refused (403) as before, whatever the place. */
	sub("GET /" PB " HTTP/1.1\r\nHost: a.test\r\n\r\n", -EACCES, &res);
}

static void test_identity(void **state)
{
	char h[256] = "GET / HTTP/1.1\r\nAccept-Encoding: gzip\r\nHost: a\r\n"
		      "accept-encoding: br\r\n\r\n";
	size_t n;

	assert_int_equal(hezo_subst_identity((uint8_t *)h, strlen(h), sizeof(h) - 1, &n), 0);
	h[n] = '\0';
	assert_string_equal(h, "GET / HTTP/1.1\r\nHost: a\r\nAccept-Encoding: identity\r\n\r\n");
	assert_int_equal(hezo_subst_identity((uint8_t *)h, n, n - 1, &n), -ENOSPC);
}

/* ---- mask.c ---- */

static char got[65536];
static size_t gotlen;

static void collect(void *ud, const uint8_t *b, size_t n)
{
	(void)ud;
	assert_true(gotlen + n < sizeof(got));
	memcpy(got + gotlen, b, n);
	gotlen += n;
	got[gotlen] = '\0';
}

/* The body of a chunked message starting at p, joined (in place: it only shrinks). */
static const char *dechunk(char *p)
{
	char *w = p, *r = p;
	unsigned long n;

	while ((n = strtoul(r, &r, 16)) > 0) {
		r = strstr(r, "\r\n") + 2;
		memmove(w, r, n);
		w += n;
		r += n + 2;
	}
	*w = '\0';
	return p;
}

static const struct hezo_mask_value mv[1] = {{PA, (const uint8_t *)"ghp_VALUE", 9}};

static void test_mask(void **state)
{
	static struct hezo_mask m;
	const char *a = "HTTP/1.0 501 Unsupported method ('ghp_VALUE')\r\nContent-Length: 12\r\n"
			"X: ghp_VALUE\r\n\r\nxghp_VALUEyz";

	hezo_mask_init(&m, mv, 1, collect, NULL);
	/* HTTP/1.1 request: the length-framed body comes chunked, masked, byte by byte. */
	gotlen = 0;
	assert_int_equal(hezo_mask_request(&m, false, false), 0);
	for (size_t i = 0; i < strlen(a); i++)
		assert_int_equal(hezo_mask_feed(&m, (const uint8_t *)a + i, 1), 0);
	assert_null(strstr(got, "ghp_VALUE"));
	assert_non_null(strstr(got, "HTTP/1.1 501 Unsupported method ('" PA "')\r\n"));
	assert_non_null(strstr(got, "\r\nX: " PA "\r\n"));
	assert_null(strstr(got, "Content-Length"));
	assert_non_null(strstr(got, "Transfer-Encoding: chunked\r\n\r\n"));
	assert_non_null(strstr(got, "\r\n0\r\n\r\n"));
	assert_string_equal(dechunk(strstr(got, "\r\n\r\n") + 4), "x" PA "yz");
	assert_int_equal(m.masked, 3);
	assert_false(hezo_mask_busy(&m));
	/* A chunked answer with the value split across chunks, to an HTTP/1.0 request: up to the
	 * close, Connection: close, and the connection ends after it. */
	gotlen = 0;
	assert_int_equal(hezo_mask_request(&m, false, true), 0);
	a = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
	    "4\r\nghp_\r\n5;x=1\r\nVALUE\r\n0\r\nT: ghp_VALUE\r\n\r\n";
	assert_int_equal(hezo_mask_feed(&m, (const uint8_t *)a, strlen(a)), 1);
	assert_string_equal(got, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" PA);
	/* Compressed bodies are refused; a HEAD answer has none. */
	hezo_mask_init(&m, mv, 1, collect, NULL);
	gotlen = 0;
	assert_int_equal(hezo_mask_request(&m, true, false), 0);
	assert_int_equal(hezo_mask_request(&m, false, false), 0);
	a = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\n"
	    "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\nxxxxx";
	assert_int_equal(hezo_mask_feed(&m, (const uint8_t *)a, strlen(a)), -EPROTO);
	assert_non_null(strstr(m.why, "compressed"));
	assert_string_equal(got, "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
				 "Content-Length: 5\r\n\r\n");
	/* An answer to no request. */
	hezo_mask_init(&m, mv, 1, collect, NULL);
	assert_int_equal(hezo_mask_feed(&m, (const uint8_t *)"HTTP/1.1 200 OK\r\n\r\n", 19),
			 -EPROTO);
}

/* What intercept.c reads to end a held Upgrade: a 101 switches, any other answer does not. */
static void test_mask_switched(void **state)
{
	static struct hezo_mask m;
	const char *a = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

	hezo_mask_init(&m, mv, 1, collect, NULL);
	assert_int_equal(hezo_mask_request(&m, false, false), 0);
	assert_int_equal(hezo_mask_feed(&m, (const uint8_t *)a, strlen(a)), 0);
	assert_false(hezo_mask_switched(&m));
	assert_false(hezo_mask_busy(&m));
	a = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\nraw";
	assert_int_equal(hezo_mask_request(&m, false, false), 0);
	assert_int_equal(hezo_mask_feed(&m, (const uint8_t *)a, strlen(a)), 0);
	assert_true(hezo_mask_switched(&m));
	assert_int_equal(m.qn, 0);
}

/* HTTP/2 DATA (h2.c): no framing read, a value split across feeds still caught. */
static void test_mask_stream(void **state)
{
	static struct hezo_mask m;
	const char *a = "HTTP/1.1 200 OK\r\n\r\nis ghp_VA";

	(void)state;
	gotlen = 0;
	hezo_mask_init(&m, mv, 1, collect, NULL);
	hezo_mask_stream(&m);
	assert_int_equal(hezo_mask_feed(&m, (const uint8_t *)a, strlen(a)), 0);
	assert_int_equal(hezo_mask_feed(&m, (const uint8_t *)"LUE.", 4), 0);
	assert_int_equal(hezo_mask_end(&m), 0);
	assert_string_equal(got, "HTTP/1.1 200 OK\r\n\r\nis " PA ".");
	assert_int_equal(m.masked, 1);
}

/* A field of an HTTP/2 answer, masked whole; too small an output is refused, not cut. */
static void test_mask_string(void **state)
{
	const char *in = "ghp_VALUE,ghp_VALUEghp_VALU";
	uint8_t out[256];
	size_t n = 0;
	uint64_t masked = 0;

	(void)state;
	assert_int_equal(hezo_mask_string(mv, 1, (const uint8_t *)in, strlen(in), out, sizeof(out),
					  &n, &masked),
			 0);
	assert_int_equal(masked, 2);
	assert_int_equal(n, strlen(PA "," PA "ghp_VALU"));
	assert_memory_equal(out, PA "," PA "ghp_VALU", n);
	assert_int_equal(
		hezo_mask_string(mv, 1, (const uint8_t *)in, strlen(in), out, 50, &n, &masked),
		-ENOSPC);
}

static void test_basic(void **state)
{
	struct hezo_subst_result res;

	/* x-access-token:PA -> x-access-token:ghp_VALUE, base64 both ways (git's form). */
	assert_string_equal(sub("GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic "
				"eC1hY2Nlc3MtdG9rZW46aHpwaDAxMjM0NTY3ODlhYmNkZWZnaGlqa2xtbm9wcXJz"
				"dHV2d3h5ejAxMjM=\r\n\r\n",
				0, &res),
			    "GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic "
			    "eC1hY2Nlc3MtdG9rZW46Z2hwX1ZBTFVF\r\n\r\n");
	assert_int_equal(res.count, 1);
	/* Not base64, or no placeholder inside: unchanged. */
	assert_string_equal(
		sub("GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic !!\r\n\r\n", 0, &res),
		"GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic !!\r\n\r\n");
	assert_string_equal(sub("GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic "
				"dXNlcjpwdw==\r\n\r\n",
				0, &res),
			    "GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic "
			    "dXNlcjpwdw==\r\n\r\n");
}

/* F2b: a placeholder written in the base64 text beside credentials that hold one is refused, never
 * substituted: base64(":" value) would go up and come back past the masking. */
static void test_basic_encoded_placeholder(void **state)
{
	struct hezo_subst_result res;

	/* PA, then base64(":" PA): decoded, a placeholder; encoded again, PA spelled out. */
	sub("GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic " PA
	    "Omh6cGgwMTIzNDU2Nzg5YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXowMTIz\r\n\r\n",
	    -EPROTO, &res);
	assert_int_equal(res.misplaced, 1);
	assert_non_null(strstr(res.why, "Basic credentials"));
	/* The token alone a placeholder (the secret is the whole token): substituted as text. */
	assert_string_equal(
		sub("GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic " PA "\r\n\r\n", 0,
		    &res),
		"GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic ghp_VALUE\r\n\r\n");
	assert_int_equal(res.count, 1);
}

/*
 * F1a/F1b (s13): a placeholder in Basic credentials only as base64 of user:PH, PH:password or
 * PH, or as the whole token; any other form is refused, since the token goes back into the
 * masking with the box's bytes beside the value.
 */
static void test_basic_forms(void **state)
{
	static const char *const bad[] = {
		/* "Q" PA "c" as text: not base64 of a credential with a placeholder. */
		"Basic Q" PA "c",
		/* Three placeholders in a row as text. */
		"Basic " PA PA PA,
		/* base64("u:" PA "x") */
		"Basic dTpoenBoMDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6MDEyM3g=",
		/* base64("u:" PA "x" PA) */
		"Basic dTpoenBoMDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6MDEyM3hoenBoMDEyMzQ1"
		"Njc4OWFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6MDEyMw==",
		/* base64("a:b:" PA): the password is "b:" PA */
		"Basic YTpiOmh6cGgwMTIzNDU2Nzg5YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXowMTIz",
	};
	static char head[1024];
	struct hezo_subst_result res;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(head, sizeof(head),
			 "GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: %s\r\n\r\n", bad[i]);
		sub(head, -EPROTO, &res);
		assert_int_equal(res.misplaced, 1);
		assert_non_null(strstr(res.why, "Basic credentials"));
	}
	/* base64(PA ":pw") -> base64("ghp_VALUE:pw"), and base64(PA) alone. */
	assert_string_equal(sub("GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic "
				"aHpwaDAxMjM0NTY3ODlhYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM6cHc="
				"\r\n\r\n",
				0, &res),
			    "GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic "
			    "Z2hwX1ZBTFVFOnB3\r\n\r\n");
	assert_string_equal(sub("GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic "
				"aHpwaDAxMjM0NTY3ODlhYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM="
				"\r\n\r\n",
				0, &res),
			    "GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic "
			    "Z2hwX1ZBTFVF\r\n\r\n");
}

/*
 * F1b/F1c (s13): values that nest or overlap, and derived (Basic) tokens around a real value,
 * masked leftmost-longest with the real values first, whatever the split of the stream: at
 * every pair of split offsets the output is the same as one read and hezo_mask_string's.
 */
static void test_mask_nested(void **state)
{
	static const struct {
		const char *vals[3]; /* value=placeholder; "*" first: a derived token */
		const char *in, *want;
	} c[] = {
		{{"SECRETabcdef=[A]", "SECRET=[B]"}, "xxSECRETabcdefyy", "xx[A]yy"},
		{{"SECRETabcdef=[A]", "CRETab=[B]"}, "xxSECRETabcdefyy", "xx[A]yy"},
		{{"SECRET=[B]", "SECRETabcdef=[A]"},
		 "SECRETyy SECRETabcdeSECRETabcdef",
		 "[B]yy [B]abcde[A]"},
		{{"abab=[V]"}, "xababab.", "x[V][V]."},
		{{"*Qtok_V1t=Q[P]t", "tok_V1=[P]"}, "Qtok_V1tok_V1", "Q[P][P]"},
		{{"*Qtok_V1t=Q[P]t", "tok_V1=[P]"}, "Qtok_V1t..", "Q[P]t.."},
		{{"*dXV1Omh=[S]", "*dXV1OmhXYZ=[L]"}, "..dXV1OmhXYZ..dXV1Omh.", "..[L]..[S]."},
		{{"*abc=[D]", "tok=[P]"}, "abc tok", "[D] [P]"},
	};
	static struct hezo_mask m;
	static uint8_t out[256];

	(void)state;
	for (size_t t = 0; t < sizeof(c) / sizeof(c[0]); t++) {
		struct hezo_mask_value v[3] = {0};
		static char buf[3][64];
		size_t n = 0, len = strlen(c[t].in), olen = 0;
		uint64_t masked = 0;

		for (; n < 3 && c[t].vals[n]; n++) {
			const char *s = c[t].vals[n], *eq;

			v[n].derived = s[0] == '*';
			s += v[n].derived;
			snprintf(buf[n], sizeof(buf[n]), "%s", s);
			eq = strchr(buf[n], '=');
			v[n].value = (const uint8_t *)buf[n];
			v[n].len = (size_t)(eq - buf[n]);
			v[n].placeholder = eq + 1;
			v[n].placeholder_len = strlen(eq + 1);
		}
		assert_int_equal(hezo_mask_string(v, n, (const uint8_t *)c[t].in, len, out,
						  sizeof(out), &olen, &masked),
				 0);
		assert_int_equal(olen, strlen(c[t].want));
		assert_memory_equal(out, c[t].want, olen);
		for (size_t i = 0; i <= len; i++)
			for (size_t j = i; j <= len; j++) {
				gotlen = 0;
				hezo_mask_init(&m, v, n, collect, NULL);
				hezo_mask_stream(&m);
				assert_int_equal(hezo_mask_feed(&m, (const uint8_t *)c[t].in, i),
						 0);
				assert_int_equal(
					hezo_mask_feed(&m, (const uint8_t *)c[t].in + i, j - i), 0);
				assert_int_equal(
					hezo_mask_feed(&m, (const uint8_t *)c[t].in + j, len - j),
					0);
				assert_int_equal(hezo_mask_end(&m), 0);
				got[gotlen] = '\0';
				if (strcmp(got, c[t].want) != 0)
					fail_msg("case %zu split %zu,%zu: %s", t, i, j, got);
			}
	}
}

static void test_refused_and_pass(void **state)
{
	struct hezo_subst_result res;

	/* PB's secret does not name this host and may not pass: refused, naming it. */
	sub("GET / HTTP/1.1\r\nHost: a.test\r\nX: " PB "\r\n\r\n", -EACCES, &res);
	assert_int_equal(res.refused, 2);
	/* ... inside Basic too. base64("u:" PB) */
	sub("GET / HTTP/1.1\r\nHost: a.test\r\nAuthorization: Basic "
	    "dTpoenBoYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYmJiYg==\r\n\r\n",
	    -EACCES, &res);
	sec[1].pass = true;
	assert_string_equal(sub("GET / HTTP/1.1\r\nHost: a.test\r\nX: " PB "\r\n\r\n", 0, &res),
			    "GET / HTTP/1.1\r\nHost: a.test\r\nX: " PB "\r\n\r\n");
	sec[1].pass = false;
	/* Values that could split a head are not values. */
	assert_true(hezo_subst_value_ok((const uint8_t *)"ghp_x", 5));
	assert_false(hezo_subst_value_ok((const uint8_t *)"a\r\nX: y", 7));
	assert_false(hezo_subst_value_ok((const uint8_t *)"a b", 3));
	assert_false(hezo_subst_value_ok((const uint8_t *)"", 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_target_and_headers),
		cmocka_unit_test(test_misplaced),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_mask),
		cmocka_unit_test(test_mask_switched),
		cmocka_unit_test(test_mask_stream),
		cmocka_unit_test(test_mask_string),
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_basic_encoded_placeholder),
		cmocka_unit_test(test_basic_forms),
		cmocka_unit_test(test_mask_nested),
		cmocka_unit_test(test_refused_and_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
