/* Unit tests for spec/json.c: round trips of captured engine JSON, edits, limits and errors. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "hezo-file.h"
#include "hezo-json.h"

static const char *data_dir(void)
{
	const char *d = getenv("HEZO_TEST_DATA");

	return d ? d : "tests/data";
}

static struct hezo_json *parse_ok(const char *text)
{
	struct hezo_json *v = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	int r = hezo_json_parse(text, strlen(text), &v, &err);

	if (r < 0)
		fail_msg("parse of %s failed: %s", text, err->msg);
	assert_non_null(v);
	return v;
}

static char *dump_ok(const struct hezo_json *v, bool pretty)
{
	char *out = NULL;
	size_t len = 0;
	_cleanup_error_ struct hezo_error *err = NULL;
	int r = hezo_json_dump(v, pretty, &out, &len, &err);

	if (r < 0)
		fail_msg("dump failed: %s", err->msg);
	assert_int_equal(strlen(out), len);
	return out;
}

/* Parse must fail with errnum and a one-line message containing want. */
static void parse_fails(const char *buf, size_t len, int errnum, const char *want)
{
	struct hezo_json *v = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	int r = hezo_json_parse(buf, len, &v, &err);

	assert_int_equal(r, -errnum);
	assert_null(v);
	assert_non_null(err);
	assert_int_equal(err->errnum, errnum);
	if (!strstr(err->msg, want))
		fail_msg("message \"%s\" lacks \"%s\"", err->msg, want);
	assert_null(strchr(err->msg, '\n'));
}

static void parse_fails_str(const char *text, int errnum, const char *want)
{
	parse_fails(text, strlen(text), errnum, want);
}

static void test_roundtrip_data(void **state)
{
	DIR *d = opendir(data_dir());
	struct dirent *de;
	int files = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		_cleanup_free_ char *buf = NULL, *one = NULL, *two = NULL, *pretty = NULL;
		_cleanup_json_ struct hezo_json *a = NULL, *b = NULL, *c = NULL;
		_cleanup_error_ struct hezo_error *err = NULL;
		size_t len = 0, n = strlen(de->d_name);
		char path[4096];

		if (n < 5 || strcmp(de->d_name + n - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", data_dir(), de->d_name);
		if (hezo_read_file_at(AT_FDCWD, path, 16u << 20, &buf, &len, &err) < 0)
			fail_msg("%s", err->msg);
		if (hezo_json_parse(buf, len, &a, &err) < 0)
			fail_msg("%s: %s", path, err->msg);

		one = dump_ok(a, false);
		b = parse_ok(one);
		assert_true(hezo_json_equal(a, b));
		two = dump_ok(b, false);
		assert_string_equal(one, two);

		/* The engines write compact Go JSON; ours must be the same bytes (Go's Encoder
		 * adds a final newline). */
		while (len > 0 && buf[len - 1] == '\n')
			buf[--len] = '\0';
		if (strcmp(buf, one) != 0)
			fail_msg("%s: compact dump differs from the engine's bytes", path);

		pretty = dump_ok(a, true);
		assert_non_null(strchr(pretty, '\n'));
		c = parse_ok(pretty);
		assert_true(hezo_json_equal(a, c));
		files++;
	}
	closedir(d);
	/* Five config.json, one exec process, one update resources. */
	assert_true(files >= 7);
}

static void test_numbers_verbatim(void **state)
{
	static const char *const nums[] = {
		"18446744073709551615",
		"-1",
		"1e3",
		"0",
		"-0",
		"1.5",
		"-0.5E-10",
		"2E+7",
		"123456789012345678901234567890",
		"-9223372036854775808",
		"9223372036854775807",
	};

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(nums); i++) {
		char doc[128];
		_cleanup_json_ struct hezo_json *v = NULL;
		_cleanup_free_ char *out = NULL;

		snprintf(doc, sizeof(doc), "{\"n\":%s}", nums[i]);
		v = parse_ok(doc);
		assert_string_equal(hezo_json_get_type(v, "n", HEZO_JSON_NUMBER)->str, nums[i]);
		out = dump_ok(v, false);
		assert_string_equal(out, doc);
	}

	/* A bare number at top level: yajl only sees its end at complete_parse. */
	_cleanup_json_ struct hezo_json *top = parse_ok("18446744073709551615");
	assert_int_equal(top->type, HEZO_JSON_NUMBER);
	assert_string_equal(top->str, "18446744073709551615");
}

static void test_integers(void **state)
{
	_cleanup_json_ struct hezo_json *v =
		parse_ok("[18446744073709551615,18446744073709551616,-1,-9223372036854775808,"
			 "-9223372036854775809,9223372036854775807,1e3,1.0,-0,\"7\"]");
	int64_t i = 0;
	uint64_t u = 0;

	assert_int_equal(hezo_json_get_uint64(v->items[0], &u), 0);
	assert_true(u == UINT64_MAX);
	assert_int_equal(hezo_json_get_int64(v->items[0], &i), -ERANGE);
	assert_int_equal(hezo_json_get_uint64(v->items[1], &u), -ERANGE);
	assert_int_equal(hezo_json_get_int64(v->items[2], &i), 0);
	assert_true(i == -1);
	assert_int_equal(hezo_json_get_uint64(v->items[2], &u), -ERANGE);
	assert_int_equal(hezo_json_get_int64(v->items[3], &i), 0);
	assert_true(i == INT64_MIN);
	assert_int_equal(hezo_json_get_int64(v->items[4], &i), -ERANGE);
	assert_int_equal(hezo_json_get_int64(v->items[5], &i), 0);
	assert_true(i == INT64_MAX);
	assert_int_equal(hezo_json_get_int64(v->items[6], &i), -EINVAL);
	assert_int_equal(hezo_json_get_uint64(v->items[7], &u), -EINVAL);
	assert_int_equal(hezo_json_get_uint64(v->items[8], &u), 0);
	assert_true(u == 0);
	assert_int_equal(hezo_json_get_int64(v->items[9], &i), -EINVAL);
	assert_int_equal(hezo_json_get_int64(NULL, &i), -EINVAL);

	_cleanup_json_ struct hezo_json *a = hezo_json_new_int(INT64_MIN);
	_cleanup_json_ struct hezo_json *b = hezo_json_new_uint(UINT64_MAX);
	assert_string_equal(a->str, "-9223372036854775808");
	assert_string_equal(b->str, "18446744073709551615");
	assert_int_equal(hezo_json_get_int64(a, &i), 0);
	assert_true(i == INT64_MIN);
}

static void test_key_order_and_duplicates(void **state)
{
	_cleanup_json_ struct hezo_json *v = parse_ok("{\"b\":1,\"a\":{\"z\":null,\"y\":true},"
						      "\"c\":[3,2,1],\"a\":false,\"d\":\"x\"}");
	_cleanup_free_ char *out = dump_ok(v, false);

	/* The last "a" wins but stays where the first one was. */
	assert_string_equal(out, "{\"b\":1,\"a\":false,\"c\":[3,2,1],\"d\":\"x\"}");
}

static void test_duplicates_many_keys(void **state)
{
	/* Enough keys that the parser switches to its index; repeat some of them at the end. */
	size_t cap = 1 << 20, n = 0;
	_cleanup_free_ char *doc = malloc(cap);
	_cleanup_json_ struct hezo_json *v = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	const size_t keys = 20000;

	assert_non_null(doc);
	n += (size_t)snprintf(doc + n, cap - n, "{");
	for (size_t i = 0; i < keys; i++)
		n += (size_t)snprintf(doc + n, cap - n, "\"k%zu\":%zu,", i, i);
	n += (size_t)snprintf(doc + n, cap - n, "\"k5\":\"five\",\"k19999\":\"last\"}");
	assert_int_equal(hezo_json_parse(doc, n, &v, &err), 0);
	assert_int_equal(v->len, keys);
	assert_string_equal(v->keys[5], "k5");
	assert_string_equal(hezo_json_string(v->items[5]), "five");
	assert_string_equal(hezo_json_string(v->items[keys - 1]), "last");
	assert_string_equal(v->keys[keys - 2], "k19998");
	assert_string_equal(hezo_json_get(v, "k12345")->str, "12345");
}

static void test_edits(void **state)
{
	_cleanup_json_ struct hezo_json *v =
		parse_ok("{\"a\":1,\"b\":{\"c\":[1,2,3]},\"d\":\"s\"}");
	_cleanup_free_ char *o1 = NULL, *o2 = NULL, *o3 = NULL, *o4 = NULL;
	struct hezo_json *arr, *obj;

	/* Set an existing key: same position. */
	assert_int_equal(hezo_json_set(v, "a", hezo_json_new_string("one")), 0);
	/* New key: at the end. */
	assert_int_equal(hezo_json_set(v, "e", hezo_json_new_bool(true)), 0);
	o1 = dump_ok(v, false);
	assert_string_equal(o1, "{\"a\":\"one\",\"b\":{\"c\":[1,2,3]},\"d\":\"s\",\"e\":true}");

	assert_int_equal(hezo_json_remove(v, "d"), 0);
	assert_int_equal(hezo_json_remove(v, "nope"), 0);
	o2 = dump_ok(v, false);
	assert_string_equal(o2, "{\"a\":\"one\",\"b\":{\"c\":[1,2,3]},\"e\":true}");

	/* ensure_*: existing returned as is, absent created at the end, wrong type refused. */
	obj = hezo_json_ensure_object(v, "b");
	assert_ptr_equal(obj, hezo_json_get(v, "b"));
	assert_null(hezo_json_ensure_object(v, "a"));
	assert_null(hezo_json_ensure_array(v, "b"));
	arr = hezo_json_ensure_array(obj, "c");
	assert_non_null(arr);
	assert_int_equal(hezo_json_remove_at(arr, 1), 0);
	assert_int_equal(hezo_json_remove_at(arr, 5), -EINVAL);
	assert_int_equal(hezo_json_append(arr, hezo_json_new_null()), 0);
	obj = hezo_json_ensure_object(v, "f");
	assert_non_null(obj);
	assert_int_equal(hezo_json_set(obj, "g", hezo_json_new_uint(18446744073709551615ull)), 0);
	arr = hezo_json_ensure_array(v, "h");
	assert_non_null(arr);
	assert_int_equal(hezo_json_append(arr, hezo_json_new_int(-5)), 0);
	o3 = dump_ok(v, false);
	assert_string_equal(o3, "{\"a\":\"one\",\"b\":{\"c\":[1,3,null]},\"e\":true,"
				"\"f\":{\"g\":18446744073709551615},\"h\":[-5]}");

	/* Bad targets: ownership of val is still taken (ASan would see a leak otherwise). */
	assert_int_equal(hezo_json_set(arr, "x", hezo_json_new_null()), -EINVAL);
	assert_int_equal(hezo_json_append(v, hezo_json_new_null()), -EINVAL);
	assert_int_equal(hezo_json_set(v, "x", NULL), -ENOMEM);
	assert_int_equal(hezo_json_append(arr, NULL), -ENOMEM);
	assert_null(hezo_json_ensure_object(arr, "x"));

	/* Clone is deep and equal; editing it leaves the original alone. */
	_cleanup_json_ struct hezo_json *c = hezo_json_clone(v);
	assert_true(hezo_json_equal(c, v));
	assert_int_equal(hezo_json_set(hezo_json_get(c, "f"), "g", hezo_json_new_int(1)), 0);
	assert_false(hezo_json_equal(c, v));
	o4 = dump_ok(v, false);
	assert_string_equal(o3, o4);
}

static void test_access(void **state)
{
	_cleanup_json_ struct hezo_json *v = parse_ok(
		"{\"linux\":{\"resources\":{\"pids\":{\"limit\":50}}},\"s\":\"x\",\"t\":true,"
		"\"a.b\":1}");
	struct hezo_json *n = hezo_json_get_path(v, "linux.resources.pids.limit");
	int64_t i;

	assert_non_null(n);
	assert_int_equal(hezo_json_get_int64(n, &i), 0);
	assert_int_equal(i, 50);
	assert_null(hezo_json_get_path(v, "linux.resources.memory"));
	assert_null(hezo_json_get_path(v, "linux.resources.pids.limit.x"));
	assert_null(hezo_json_get_path(v, "linux.res"));
	assert_null(hezo_json_get_path(NULL, "a"));
	assert_non_null(hezo_json_get_type(v, "s", HEZO_JSON_STRING));
	assert_null(hezo_json_get_type(v, "s", HEZO_JSON_NUMBER));
	assert_non_null(hezo_json_get_type(v, "t", HEZO_JSON_FALSE));
	assert_true(hezo_json_is_true(hezo_json_get(v, "t")));
	assert_true(hezo_json_is_bool(hezo_json_get(v, "t")));
	assert_false(hezo_json_is_bool(hezo_json_get(v, "s")));
	assert_string_equal(hezo_json_string(hezo_json_get(v, "s")), "x");
	assert_null(hezo_json_string(hezo_json_get(v, "t")));
	assert_non_null(hezo_json_get(v, "a.b"));
	assert_null(hezo_json_get(hezo_json_get(v, "s"), "x"));
	assert_string_equal(hezo_json_type_name(HEZO_JSON_OBJECT), "object");
	assert_string_equal(hezo_json_type_name(HEZO_JSON_TRUE), "boolean");
	hezo_json_free(NULL);
}

static void test_strings(void **state)
{
	/* Escapes decode, and control characters come back escaped. */
	_cleanup_json_ struct hezo_json *v =
		parse_ok("[\"a\\\"b\\\\c\\/d\\n\\t\\u0001\\u00e9\\ud83d\\ude00\"]");
	_cleanup_free_ char *out = dump_ok(v, false);

	assert_string_equal(v->items[0]->str, "a\"b\\c/d\n\t\001\xc3\xa9\xf0\x9f\x98\x80");
	assert_string_equal(out, "[\"a\\\"b\\\\c/d\\n\\t\\u0001\xc3\xa9\xf0\x9f\x98\x80\"]");

	/* The rest of the escapes as yajl wrote them: capital hex digits, DEL as it is. */
	_cleanup_json_ struct hezo_json *ctl = parse_ok("[\"\\r\\f\\b\\u001f\\u007f\"]");
	_cleanup_free_ char *ctl_out = dump_ok(ctl, false);
	assert_string_equal(ctl_out, "[\"\\r\\f\\b\\u001F\x7f\"]");

	/* Invalid UTF-8 from a caller is refused on output, not written. */
	_cleanup_json_ struct hezo_json *bad = hezo_json_new_array();
	_cleanup_error_ struct hezo_error *err = NULL;
	char *o = NULL;
	assert_int_equal(hezo_json_append(bad, hezo_json_new_string("\xff\xfe")), 0);
	assert_int_equal(hezo_json_dump(bad, false, &o, NULL, &err), -EILSEQ);
	assert_null(o);
	assert_non_null(strstr(err->msg, "UTF-8"));
	/* Cut short: a lead byte at the end, or followed by no continuation byte. */
	for (size_t i = 0; i < 3; i++) {
		static const char *const cut[] = {"a\xc3", "\xe2\x82", "\xf0\x9f\x98x"};
		_cleanup_json_ struct hezo_json *c = hezo_json_new_string(cut[i]);
		_cleanup_error_ struct hezo_error *e = NULL;

		assert_int_equal(hezo_json_dump(c, false, &o, NULL, &e), -EILSEQ);
	}
}

static void test_dump_refuses(void **state)
{
	_cleanup_json_ struct hezo_json *num = hezo_json_new_int(1);
	_cleanup_json_ struct hezo_json *deep = hezo_json_new_array();
	_cleanup_error_ struct hezo_error *e1 = NULL, *e2 = NULL;
	struct hezo_json *cur = deep;
	char *o = NULL;

	/* A number literal that is not JSON (set behind the API's back). */
	free(num->str);
	num->str = strdup("0x10");
	assert_int_equal(hezo_json_dump(num, false, &o, NULL, &e1), -EINVAL);
	assert_null(o);

	/* Deeper than the parser accepts: refused so a dump can always be read back. */
	for (int i = 0; i < HEZO_JSON_MAX_DEPTH; i++) {
		struct hezo_json *next = hezo_json_new_array();
		assert_int_equal(hezo_json_append(cur, next), 0);
		cur = next;
	}
	assert_int_equal(hezo_json_dump(deep, false, &o, NULL, &e2), -E2BIG);
	assert_non_null(strstr(e2->msg, "nesting deeper than 64 levels"));
}

static void test_pretty(void **state)
{
	_cleanup_json_ struct hezo_json *v = parse_ok("{\"a\":[1,{\"b\":null}],\"c\":{}}");
	_cleanup_free_ char *out = dump_ok(v, true);
	_cleanup_json_ struct hezo_json *w = parse_ok(out);

	assert_non_null(strstr(out, "\n\t\"a\": [\n\t\t1,"));
	assert_non_null(strstr(out, "\n\t\"c\": {}\n}\n"));
	assert_true(hezo_json_equal(v, w));
}

static void test_depth(void **state)
{
	char doc[2 * (HEZO_JSON_MAX_DEPTH + 1) + 1];
	_cleanup_json_ struct hezo_json *v = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;

	/* 64 levels are fine... */
	memset(doc, '[', HEZO_JSON_MAX_DEPTH);
	memset(doc + HEZO_JSON_MAX_DEPTH, ']', HEZO_JSON_MAX_DEPTH);
	assert_int_equal(hezo_json_parse(doc, 2 * HEZO_JSON_MAX_DEPTH, &v, &err), 0);
	_cleanup_free_ char *out = dump_ok(v, false);
	assert_memory_equal(out, doc, 2 * HEZO_JSON_MAX_DEPTH);

	/* ...65 are not, and the message says where the 65th opens. */
	memset(doc, '[', HEZO_JSON_MAX_DEPTH + 1);
	memset(doc + HEZO_JSON_MAX_DEPTH + 1, ']', HEZO_JSON_MAX_DEPTH + 1);
	parse_fails(doc, 2 * (HEZO_JSON_MAX_DEPTH + 1), E2BIG,
		    "line 1, byte 65: nesting deeper than 64 levels");
	parse_fails_str(
		"{\"a\":[{\"b\":[{\"c\":[{\"d\":[{\"e\":[{\"f\":[{\"g\":[{\"h\":[{\"i\":[{\"j\":"
		"[{\"k\":[{\"l\":[{\"m\":[{\"n\":[{\"o\":[{\"p\":[{\"q\":[{\"r\":[{\"s\":[{\"t\":"
		"[{\"u\":[{\"v\":[{\"w\":[{\"x\":[{\"y\":[{\"z\":[{\"A\":[{\"B\":[{\"C\":[{\"D\":"
		"[{\"E\":[{\"F\":[{\"G\":[",
		E2BIG, "nesting deeper than 64 levels");

	/* A very deep document (far past any recursion limit) fails cleanly too. */
	size_t huge = 1 << 20;
	_cleanup_free_ char *big = malloc(huge);
	assert_non_null(big);
	memset(big, '[', huge);
	parse_fails(big, huge, E2BIG, "nesting deeper than 64 levels");
}

static void test_value_limit(void **state)
{
	/* The array itself counts: one array and MAX - 1 numbers fit, one more number does not. */
	size_t n = HEZO_JSON_MAX_VALUES, len = 2 * n + 1;
	_cleanup_free_ char *doc = malloc(len + 1);
	_cleanup_json_ struct hezo_json *v = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;

	assert_non_null(doc);
	doc[0] = '[';
	for (size_t i = 0; i < n - 1; i++)
		memcpy(doc + 1 + 2 * i, "0,", 2);
	doc[2 * n - 2] = ']';
	assert_int_equal(hezo_json_parse(doc, 2 * n - 1, &v, &err), 0);
	assert_int_equal(v->len, n - 1);

	doc[2 * n - 2] = ',';
	doc[2 * n - 1] = '0';
	doc[2 * n] = ']';
	parse_fails(doc, 2 * n + 1, E2BIG, "more than 1048576 values");
}

static void test_errors(void **state)
{
	parse_fails_str("", EINVAL, "empty document");
	parse_fails_str(" \n\t\r ", EINVAL, "empty document");
	parse_fails(NULL, 0, EINVAL, "empty document");
	parse_fails_str("{\n  \"a\": 1,\n  x\n}", EINVAL, "line 3, byte 3: ");
	parse_fails_str("{\n  \"a\": 1,\n  x\n}", EINVAL, "invalid");
	parse_fails_str("{\"a\" 1}", EINVAL, "line 1, byte ");
	parse_fails_str("{\"a\":1,}", EINVAL, "parse error");
	parse_fails_str("{\"a\":[1,2", EINVAL, "premature EOF");
	parse_fails_str("{\"a\":\"abc", EINVAL, "line 1, byte ");
	parse_fails_str("{\"a\":1}x", EINVAL, "trailing garbage");
	parse_fails_str("{\"a\":1} {\"b\":2}", EINVAL,
			"line 1, byte 9: parse error: trailing garbage");
	parse_fails_str("[1]\n]", EINVAL, "line 2, byte 1:");
	parse_fails_str("[01]", EINVAL, "line 1, byte ");
	parse_fails_str("[1.]", EINVAL, "line 1, byte ");
	parse_fails_str("[tru]", EINVAL, "line 1, byte ");
	parse_fails_str("/* c */ {}", EINVAL, "line 1, byte 1:");
	parse_fails_str("[\"\xff\"]", EINVAL, "UTF8");
	parse_fails_str("[\"a\tb\"]", EINVAL, "line 1, byte ");
	parse_fails("[1,\0]", 5, EINVAL, "line 1, byte ");

	/* NUL cannot live in a C string: refused in values and in keys. */
	parse_fails_str("{\"a\":\"x\\u0000y\"}", EINVAL,
			"line 1, byte 15: string contains a NUL character");
	parse_fails_str("{\"a\\u0000b\":1}", EINVAL, "object key contains a NUL character");
}

/* Fixed-point numbers for figures (hezo-shim stats), and any number read back as a double. */
static void test_fixed_and_double(void **state)
{
	_cleanup_json_ struct hezo_json *a = hezo_json_new_fixed(12.345, 2);
	_cleanup_json_ struct hezo_json *z = hezo_json_new_fixed(-0.001, 2);
	_cleanup_json_ struct hezo_json *big = NULL, *doc = NULL;
	static const char text[] = "[1e400, -2.5e-3, \"7\"]";
	double d = 0;

	(void)state;
	assert_non_null(a);
	assert_string_equal(a->str, "12.35");
	assert_non_null(z);
	assert_string_equal(z->str, "0.00");
	assert_null(hezo_json_new_fixed(NAN, 2));
	assert_null(hezo_json_new_fixed(INFINITY, 1));
	assert_null(hezo_json_new_fixed(1.0, 10));
	assert_int_equal(hezo_json_get_double(a, &d), 0);
	assert_true(d > 12.349 && d < 12.351);
	assert_int_equal(hezo_json_parse(text, strlen(text), &doc, NULL), 0);
	assert_int_equal(hezo_json_get_double(doc->items[0], &d), -ERANGE);
	assert_int_equal(hezo_json_get_double(doc->items[1], &d), 0);
	assert_true(d < -0.0024 && d > -0.0026);
	assert_int_equal(hezo_json_get_double(doc->items[2], &d), -EINVAL);
	big = hezo_json_new_int(INT64_MAX);
	assert_int_equal(hezo_json_get_double(big, &d), 0);
	assert_true(d > 9.2e18);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_data),
		cmocka_unit_test(test_numbers_verbatim),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_fixed_and_double),
		cmocka_unit_test(test_key_order_and_duplicates),
		cmocka_unit_test(test_duplicates_many_keys),
		cmocka_unit_test(test_edits),
		cmocka_unit_test(test_access),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_dump_refuses),
		cmocka_unit_test(test_pretty),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_value_limit),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
