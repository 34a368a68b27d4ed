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
#include <sys/socket.h>

#include <cmocka.h>

#include "hezo-cleanup.h"
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

/* A namespace's section (a), a joiner's (b), and what the namespace keeps. */
struct join_case {
	const char *a, *b;
	int r;
	bool narrowed;
	const char *allow; /* the result's allow and allowRanges, as compact JSON */
	const char *ranges;
};

static const struct join_case joins[] = {
	{"{\"mode\":\"proxy\",\"allow\":[\"api.test\"]}",
	 "{\"mode\":\"proxy\",\"allow\":[\"api.test\"]}", 0, false, "[\"api.test\"]", NULL},
	/* wider: the namespace keeps its own */
	{"{\"allow\":[\"api.test\"]}", "{\"allow\":[\"api.test\",\"evil.test\",\"*.test.org\"]}", 0,
	 false, "[\"api.test\"]", NULL},
	{"{\"allow\":[\"api.test\",\"*.ok.test\"]}", "{\"allow\":[\"api.test\"]}", 0, true,
	 "[\"api.test\"]", "[]"},
	{"{\"allow\":[\"*.ok.test\"]}", "{\"allow\":[\"x.ok.test:443\",\"ok.test\"]}", 0, true,
	 "[\"x.ok.test:443\"]", "[]"},
	{"{\"allow\":[\"*.ok.test\"]}", "{\"allow\":[\"*.a.ok.test\"]}", 0, true,
	 "[\"*.a.ok.test\"]", "[]"},
	/* no port is 80 and 443: one of them is narrower */
	{"{\"allow\":[\"x.test\"]}", "{\"allow\":[\"X.test.:443\"]}", 0, true, "[\"x.test:443\"]",
	 "[]"},
	{"{\"allow\":[\"x.test:443\"]}", "{\"allow\":[\"x.test\"]}", 0, false, "[\"x.test:443\"]",
	 NULL},
	{"{\"allow\":[\"x.test:8443\"]}", "{\"allow\":[\"x.test\"]}", 0, true, "[]", "[]"},
	{"{\"allow\":[\"10.0.0.0/8:5432\"]}",
	 "{\"allow\":[\"10.1.0.0/16:5432\",\"10.2.0.0/16:22\"]}", 0, true, "[\"10.1.0.0/16:5432\"]",
	 "[]"},
	{"{\"allow\":[\"10.1.0.0/16\"]}", "{\"allow\":[\"10.0.0.0/8\"]}", 0, false,
	 "[\"10.1.0.0/16\"]", NULL},
	{"{\"allow\":[\"a.test\"],\"allowRanges\":[\"10.0.0.0/8\"]}",
	 "{\"allow\":[\"a.test\"],\"allowRanges\":[\"10.9.0.0/16\"]}", 0, true, "[\"a.test\"]",
	 "[\"10.9.0.0/16\"]"},
	{"{\"allow\":[\"a.test\"],\"allowRanges\":[\"10.0.0.0/8\"]}", "{\"allow\":[\"a.test\"]}", 0,
	 true, "[\"a.test\"]", "[]"},
	{"{\"allow\":[\"a.test\"]}", "{\"allow\":[]}", 0, true, "[]", "[]"},
	{"{\"allow\":[\"a.test\"],\"resolvers\":[\"10.0.0.53\"]}",
	 "{\"allow\":[\"a.test\"],\"resolvers\":[\"10.0.0.54\"]}", -EPERM, false, NULL, NULL},
	{"{\"allow\":[\"a.test\"],\"resolvers\":[\"10.0.0.53:53\"]}",
	 "{\"allow\":[],\"resolvers\":[\"10.0.0.53\"]}", 0, true, "[]", "[]"},
	{"{\"allow\":[\"a.test\"]}", "{\"mode\":\"deny\"}", -EPERM, false, NULL, NULL},
	{"{\"allow\":[\"a.test\"]}", "{\"allow\":[\"*.com\"]}", -EINVAL, false, NULL, NULL},
};

static void check_list(const struct hezo_json *v, const char *want, const char *what)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *text = NULL;
	size_t len;

	if (!want) {
		assert_null(v);
		return;
	}
	assert_non_null(v);
	assert_int_equal(hezo_json_dump(v, false, &text, &len, &err), 0);
	if (strcmp(text, want) != 0)
		fail_msg("%s: got %s, want %s", what, text, want);
}

/* What the result allows, both sections allow: probed with names, ports and addresses. */
static void check_never_wider(const struct hezo_json *res, const struct hezo_json *a,
			      const struct hezo_json *b)
{
	static const char *const names[] = {"api.test", "evil.test", "x.ok.test",   "a.x.ok.test",
					    "ok.test",	"x.test",    "b.a.ok.test", "a.test"};
	static const uint16_t ports[] = {22, 80, 443, 5432, 8443};
	static const uint8_t addrs[][4] = {
		{10, 1, 2, 3}, {10, 2, 0, 1}, {10, 9, 1, 1}, {10, 200, 0, 1}};
	struct hezo_egress er, ea, eb;

	assert_int_equal(hezo_egress_parse_section(res, &er, NULL), 0);
	assert_int_equal(hezo_egress_parse_section(a, &ea, NULL), 0);
	assert_int_equal(hezo_egress_parse_section(b, &eb, NULL), 0);
	for (size_t p = 0; p < HEZO_ARRAY_SIZE(ports); p++) {
		for (size_t n = 0; n < HEZO_ARRAY_SIZE(names); n++)
			if (hezo_egress_name_allowed(&er, names[n], ports[p]))
				assert_true(hezo_egress_name_allowed(&ea, names[n], ports[p]) &&
					    hezo_egress_name_allowed(&eb, names[n], ports[p]));
		for (size_t k = 0; k < HEZO_ARRAY_SIZE(addrs); k++) {
			if (hezo_egress_cidr_allowed(&er, AF_INET, addrs[k], ports[p]))
				assert_true(
					hezo_egress_cidr_allowed(&ea, AF_INET, addrs[k],
								 ports[p]) &&
					hezo_egress_cidr_allowed(&eb, AF_INET, addrs[k], ports[p]));
			if (hezo_egress_range_allowed(&er, AF_INET, addrs[k]))
				assert_true(hezo_egress_range_allowed(&ea, AF_INET, addrs[k]) &&
					    hezo_egress_range_allowed(&eb, AF_INET, addrs[k]));
		}
	}
	hezo_egress_clear(&er);
	hezo_egress_clear(&ea);
	hezo_egress_clear(&eb);
}

static void test_intersect(void **state)
{
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(joins); i++) {
		const struct join_case *c = &joins[i];
		_cleanup_json_ struct hezo_json *a = NULL, *b = NULL, *res = NULL;
		_cleanup_error_ struct hezo_error *err = NULL;
		bool narrowed = true;
		int r;

		assert_int_equal(hezo_json_parse(c->a, strlen(c->a), &a, NULL), 0);
		assert_int_equal(hezo_json_parse(c->b, strlen(c->b), &b, NULL), 0);
		r = hezo_egress_intersect(a, b, &res, &narrowed, &err);
		if (r != c->r)
			fail_msg("join %zu: %d (%s), want %d", i, r, err ? err->msg : "-", c->r);
		if (r < 0) {
			assert_null(res);
			assert_non_null(err);
			continue;
		}
		if (narrowed != c->narrowed)
			fail_msg("join %zu: narrowed %d, want %d", i, narrowed, c->narrowed);
		check_list(hezo_json_get(res, "allow"), c->allow, "allow");
		check_list(hezo_json_get(res, "allowRanges"), c->ranges, "allowRanges");
		if (!narrowed)
			assert_true(hezo_json_equal(res, a));
		check_never_wider(res, a, b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decided_cases),	cmocka_unit_test(test_canonical),
		cmocka_unit_test(test_secrets_section), cmocka_unit_test(test_placeholder),
		cmocka_unit_test(test_intersect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
