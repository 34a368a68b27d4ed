/*
 * The egress grammar's decided cases (docs/egress.md, "The grammar"): each one through every
 * consumer at once (tests/fuzz/fuzz-egress.c aborts when policy check, the hook and proxyd
 * disagree), then the verdict itself, so a rule cannot change in the library unnoticed.
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

#include "hezo-egress.h"
#include "hezo-policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct verdict {
	int list; /* 0 allow, 1 resolvers, 2 allowRanges */
	const char *entry;
	bool ok;
};

static const struct verdict cases[] = {
	{0, "example.com", true},
	{0, "Example.COM.", true}, /* one trailing dot, case: normalised */
	{0, "*.example.com", true},
	{0, "*.co.uk", true},
	{0, "*.com", false}, /* a wildcard needs a suffix of two labels or more */
	{0, "*.", false},
	{0, "a*.b.com", false},
	{0, "300.1.1.1", false}, /* a last label of digits: a mistyped address */
	{0, "example.123", false},
	{0, "api.test:8443", true},
	{0, "api.test:080", true},
	{0, "api.test:000080", false}, /* ports: 1 to 5 digits */
	{0, "api.test:0", false},
	{0, "api.test:65536", false},
	{0, "10.0.0.0/8:5432", true},
	{0, "10.1.2.3/8", false},
	{0, "10.0.0.0/008", true},
	{0, "10.0.0.0/0008", false}, /* prefixes: 1 to 3 digits */
	{0, "fd00::1", true},
	{0, "fd00::/8:443", true},
	{0, "[fd00::]/8:443", true},
	{0, "[2001:db8::/32]:22", true}, /* the prefix may sit inside the brackets */
	{0, "[2001:db8::/32]/16", false},
	{0, "[10.0.0.1]:80", false},
	{0, "http://example.com", false},
	{1, "1.1.1.1", true},
	{1, "1.1.1.1:5353", true},
	{1, "::1", true},
	{1, "[::1]", true}, /* no port: 53 */
	{1, "[::1]:5353", true},
	{1, "[1.1.1.1]:53", false},
	{1, "dns.google", false},
	{2, "10.0.0.0/8", true},
	{2, "10.0.0.0", false}, /* ranges need the prefix */
	{2, "[fd00::]/8", false},
	{2, "10.0.0.0/8:80", false},
};

static void test_decided_cases(void **state)
{
	static const char *const lists[] = {"allow", "resolvers", "allowRanges"};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct verdict *c = &cases[i];
		uint8_t in[300];
		char doc[400];
		struct hezo_policy *p = NULL;
		struct hezo_error *err = NULL;
		size_t n = strlen(c->entry);
		int r;

		in[0] = (uint8_t)c->list;
		memcpy(in + 1, c->entry, n);
		LLVMFuzzerTestOneInput(in, n + 1); /* aborts on a disagreement */
		snprintf(doc, sizeof(doc), "{\"egress\":{\"%s\":[\"%s\"]}}", lists[c->list],
			 c->entry);
		r = hezo_policy_parse(doc, strlen(doc), "(test)", &p, &err);
		if ((r == 0) != c->ok)
			fail_msg("%s \"%s\": policy %s (%s)", lists[c->list], c->entry,
				 r == 0 ? "accepts" : "refuses", err ? err->msg : "-");
		hezo_policy_free(p);
		hezo_error_free(err);
	}
}

static void test_canonical(void **state)
{
	char out[HEZO_EGRESS_ENTRY_MAX];

	assert_int_equal(hezo_allow_normalize("Example.COM.", out, NULL), 0);
	assert_string_equal(out, "example.com");
	assert_int_equal(hezo_allow_normalize("*.CDN.test:0443", out, NULL), 0);
	assert_string_equal(out, "*.cdn.test:443");
	assert_int_equal(hezo_allow_normalize("[FD00::]/8:443", out, NULL), 0);
	assert_string_equal(out, "[fd00::]/8:443");
	assert_int_equal(hezo_allow_normalize("*.com", out, NULL), -EINVAL);
}

/* The wire form of secrets: placeholders required and distinct, hosts within the allow list. */
static void test_secrets_section(void **state)
{
	static const char ph1[] = "hzph0123456789abcdefghijklmnopqrstuvwxyz0123";
	static const char ph2[] = "hzphzyxwvutsrqponmlkjihgfedcba9876543210abcd";
	static const struct {
		const char *secrets;
		const char *want; /* NULL: parses */
	} scases[] = {
		{"{\"A\":{\"hosts\":[\"api.test\"],\"file\":\"/f\",\"placeholder\":\"PH1\"}}",
		 NULL},
		{"{\"A\":{\"hosts\":[\"api.test\"],\"file\":\"/f\"}}",
		 "egress: secrets.A.placeholder: missing or not a placeholder"},
		{"{\"A\":{\"hosts\":[\"api.test\"],\"file\":\"/f\",\"placeholder\":\"hzph\"}}",
		 "secrets.A.placeholder: missing"},
		{"{\"A\":{\"hosts\":[\"api.test\"],\"file\":\"/f\",\"placeholder\":\"PH1\"},"
		 "\"B\":{\"hosts\":[\"api.test\"],\"file\":\"/g\",\"placeholder\":\"PH1\"}}",
		 "secrets.B.placeholder: the same as A's"},
		{"{\"A\":{\"hosts\":[\"no.test\"],\"file\":\"/f\",\"placeholder\":\"PH1\"}}",
		 "secrets.A.hosts[0]: no.test is not allowed by egress.allow"},
	};
	for (size_t i = 0; i < sizeof(scases) / sizeof(scases[0]); i++) {
		_cleanup_error_ struct hezo_error *err = NULL;
		_cleanup_json_ struct hezo_json *doc = NULL;
		_cleanup_free_ char *text = NULL, *sub = strdup(scases[i].secrets);
		struct hezo_egress e;
		char *at;
		int r;

		while ((at = strstr(sub, "PH1")) || (at = strstr(sub, "PH2"))) {
			_cleanup_free_ char *n = NULL;
			*at = '\0';
			assert_true(asprintf(&n, "%s%s%s", sub, at[2] == '1' ? ph1 : ph2, at + 3) >
				    0);
			free(sub);
			sub = TAKE_PTR(n);
		}
		assert_true(asprintf(&text, "{\"allow\":[\"api.test\"],\"secrets\":%s}", sub) > 0);
		assert_int_equal(hezo_json_parse(text, strlen(text), &doc, &err), 0);
		r = hezo_egress_parse(doc, &e, &err);
		if (!scases[i].want) {
			assert_int_equal(r, 0);
			assert_int_equal(e.nsecrets, 1);
			assert_string_equal(e.secrets[0].placeholder, ph1);
			assert_true(hezo_secret_names_host(&e.secrets[0], "api.test", 443));
			assert_false(hezo_secret_names_host(&e.secrets[0], "api.test", 80));
			assert_false(hezo_secret_names_host(&e.secrets[0], "x.api.test", 443));
			hezo_egress_clear(&e);
			continue;
		}
		if (r == 0 || !strstr(err->msg, scases[i].want))
			print_error("%s: got %s\n", text, r == 0 ? "success" : err->msg);
		assert_true(r < 0);
		assert_non_null(strstr(err->msg, scases[i].want));
	}
	(void)ph2;
}

static void test_placeholder(void **state)
{
	uint8_t rnd[64];
	char out[HEZO_PLACEHOLDER_LEN + 1];

	for (size_t i = 0; i < sizeof(rnd); i++)
		rnd[i] = (uint8_t)(i * 37 + 11);
	assert_int_equal(hezo_placeholder_from(rnd, sizeof(rnd), out), 0);
	assert_true(hezo_placeholder_valid(out));
	assert_int_equal(strlen(out), HEZO_PLACEHOLDER_LEN);
	assert_int_equal(strspn(out + 4, "abcdefghijklmnopqrstuvwxyz0123456789"), 40);
	/* Bytes at or above 252 would bias the alphabet: skipped, and too few is -EAGAIN. */
	memset(rnd, 0xff, sizeof(rnd));
	assert_int_equal(hezo_placeholder_from(rnd, sizeof(rnd), out), -EAGAIN);
	assert_false(hezo_placeholder_valid("hzph0123"));
	assert_false(hezo_placeholder_valid("hzphABCDEFGHIJ0123456789abcdefghijklmnopqrst"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decided_cases),
		cmocka_unit_test(test_canonical),
		cmocka_unit_test(test_secrets_section),
		cmocka_unit_test(test_placeholder),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
