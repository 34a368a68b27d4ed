/*
 * Unit tests for base/strv.c, the one string vector: growth, the NULL terminator execve needs,
 * and every allocation failing in turn (malloc, realloc, calloc and vasprintf are wrapped at link
 * time, see meson.build) leaving the vector as it was, with nothing leaked (ASan's leak check).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hezo-strv.h"

/* -1: allocations succeed; N >= 0: the Nth from now fails (once). */
static int fail_in = -1;

static bool fail_now(void)
{
	if (fail_in < 0)
		return false;
	return fail_in-- == 0;
}

void *__real_malloc(size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_calloc(size_t k, size_t n);
int __real_vasprintf(char **out, const char *fmt, va_list ap);
void *__wrap_malloc(size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_calloc(size_t k, size_t n);
int __wrap_vasprintf(char **out, const char *fmt, va_list ap);

void *__wrap_malloc(size_t n)
{
	return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fail_now() ? NULL : __real_realloc(p, n);
}

void *__wrap_calloc(size_t k, size_t n)
{
	return fail_now() ? NULL : __real_calloc(k, n);
}

int __wrap_vasprintf(char **out, const char *fmt, va_list ap)
{
	return fail_now() ? -1 : __real_vasprintf(out, fmt, ap);
}

static void assert_terminated(const struct hezo_strv *s)
{
	assert_non_null(s->v);
	assert_true(s->alloc >= s->n + 1);
	assert_null(s->v[s->n]);
}

static void test_zeroed_is_empty(void **state)
{
	struct hezo_strv s = {0};

	assert_false(hezo_strv_contains(&s, "x"));
	assert_int_equal(hezo_strv_push_all(&s, NULL), 0);
	assert_int_equal(s.n, 0);
	assert_null(s.v);
	hezo_strv_done(&s);
	hezo_strv_done(&s); /* twice: destructors take an empty one */
	assert_null(s.v);
}

static void test_init(void **state)
{
	_cleanup_strv_ struct hezo_strv s = {0};

	assert_int_equal(hezo_strv_init(&s), 0);
	assert_int_equal(s.n, 0);
	assert_terminated(&s);
}

static void test_growth(void **state)
{
	_cleanup_strv_ struct hezo_strv s = {0};
	char want[32];
	size_t grew = 0, last = 0;

	for (int i = 0; i < 1000; i++) {
		assert_int_equal(hezo_strv_pushf(&s, "word-%d", i), 0);
		assert_int_equal(s.n, (size_t)i + 1);
		assert_terminated(&s);
		if (s.alloc != last) {
			/* doubling: a handful of reallocations for a thousand words */
			assert_true(last == 0 || s.alloc == 2 * last);
			last = s.alloc;
			grew++;
		}
	}
	assert_true(grew <= 8);
	for (int i = 0; i < 1000; i++) {
		snprintf(want, sizeof(want), "word-%d", i);
		assert_string_equal(s.v[i], want);
	}
	assert_true(hezo_strv_contains(&s, "word-999"));
	assert_false(hezo_strv_contains(&s, "word-1000"));
	hezo_strv_done(&s);
	assert_null(s.v);
	assert_int_equal(s.n, 0);
	assert_int_equal(s.alloc, 0);
}

static void test_push_copies(void **state)
{
	_cleanup_strv_ struct hezo_strv s = {0};
	static const char *const list[] = {"a", "", "c", NULL};
	char buf[] = "mutable";

	assert_int_equal(hezo_strv_push(&s, buf), 0);
	buf[0] = 'X';
	assert_string_equal(s.v[0], "mutable");
	assert_int_equal(hezo_strv_push_all(&s, list), 0);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.v[2], "");
	assert_string_equal(s.v[3], "c");
	assert_terminated(&s);
}

/* Fill s with n words, then fail allocation number k of the next push: s must be unchanged. */
static void check_enomem(size_t n, int k, int which)
{
	_cleanup_strv_ struct hezo_strv s = {0};
	char **before;
	size_t alloc;
	int r;

	for (size_t i = 0; i < n; i++)
		assert_int_equal(hezo_strv_pushf(&s, "%zu", i), 0);
	before = s.v;
	alloc = s.alloc;
	fail_in = k;
	r = which == 0 ? hezo_strv_push(&s, "new") : hezo_strv_pushf(&s, "new-%d", 1);
	fail_in = -1;
	assert_int_equal(r, -ENOMEM);
	assert_int_equal(s.n, n);
	assert_true(s.v == before);
	assert_int_equal(s.alloc, alloc);
	for (size_t i = 0; i < n; i++) {
		char want[32];

		snprintf(want, sizeof(want), "%zu", i);
		assert_string_equal(s.v[i], want);
	}
	if (s.v)
		assert_terminated(&s);
	/* and it still works afterwards */
	assert_int_equal(hezo_strv_push(&s, "after"), 0);
	assert_string_equal(s.v[n], "after");
	assert_terminated(&s);
}

static void test_enomem(void **state)
{
	/* 0: empty (first array), 3: room left, 7: the array must grow (8 slots, one for NULL). */
	static const size_t sizes[] = {0, 3, 7, 15};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		check_enomem(sizes[i], 0, 0); /* the copy */
		check_enomem(sizes[i], 0, 1); /* the formatted string */
	}
	/* the array's growth, after the copy was made */
	check_enomem(0, 1, 0);
	check_enomem(7, 1, 0);
	check_enomem(15, 1, 1);
}

static void test_enomem_init_and_all(void **state)
{
	_cleanup_strv_ struct hezo_strv s = {0};
	static const char *const list[] = {"a", "b", "c", NULL};

	fail_in = 0;
	assert_int_equal(hezo_strv_init(&s), -ENOMEM);
	fail_in = -1;
	assert_null(s.v);
	assert_int_equal(s.n, 0);
	/* push_all: what was pushed before the failure stays, and is freed with the vector */
	fail_in = 2;
	assert_int_equal(hezo_strv_push_all(&s, list), -ENOMEM);
	fail_in = -1;
	assert_int_equal(s.n, 1);
	assert_string_equal(s.v[0], "a");
	assert_terminated(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zeroed_is_empty), cmocka_unit_test(test_init),
		cmocka_unit_test(test_growth),		cmocka_unit_test(test_push_copies),
		cmocka_unit_test(test_enomem),		cmocka_unit_test(test_enomem_init_and_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
