/* Unit tests for proxyd/subst.c: placeholders replaced in an intercepted request head (issue 17).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proxyd-parse.h"

#define PA "hzph0123456789abcdefghijklmnopqrstuvwxyz0123"
#define PB "hzphbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static struct hezo_subst_secret sec[2] = {
	{PA, (const uint8_t *)"ghp_VALUE", 9, true, false},
	{PB, (const uint8_t *)"other", 5, false, false},
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

	assert_string_equal(sub("GET /x?t=" PA "&u=" PA " HTTP/1.1\r\nHost: api.test\r\nX-T: a" PA
				"b\r\n\r\n",
				0, &res),
			    "GET /x?t=ghp_VALUE&u=ghp_VALUE HTTP/1.1\r\nHost: api.test\r\n"
			    "X-T: aghp_VALUEb\r\n\r\n");
	assert_int_equal(res.count, 3);
	assert_int_equal(res.used, 1);
	/* No placeholder: byte for byte. */
	assert_string_equal(sub("GET / HTTP/1.1\r\nHost: api.test\r\nX:  hzph  \r\n\r\n", 0, &res),
			    "GET / HTTP/1.1\r\nHost: api.test\r\nX:  hzph  \r\n\r\n");
	assert_int_equal(res.count, 0);
	/* Host is never substituted. */
	assert_string_equal(sub("GET / HTTP/1.1\r\nHost: " PA ".api.test\r\n\r\n", 0, &res),
			    "GET / HTTP/1.1\r\nHost: " PA ".api.test\r\n\r\n");
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
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_refused_and_pass),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
