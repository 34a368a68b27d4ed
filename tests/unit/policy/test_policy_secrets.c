/* Unit tests for the policy's secrets section (policy/secrets.c, egress/secrets.c): parsing, the
 * egress rule, projects and the annotation that may only drop secrets. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hezo-policy.h"
#include "test-policy.h"

#define EG "\"egress\":{\"allow\":[\"api.example.com\",\"*.git.example.org\",\"other.test\"]}"
#define GH "\"GH\":{\"hosts\":[\"API.example.com.\"],\"file\":\"/etc/hezo/secrets/gh\"}"
#define GH_NARROW                                                                                  \
	"\"GH\":{\"hosts\":[\"api.example.com\"],\"file\":\"/etc/hezo/secrets/"                    \
	"gh\",\"headers\":[\"X-Key\"]}"
#define GH_QUERY                                                                                   \
	"\"GH\":{\"hosts\":[\"api.example.com\"],\"file\":\"/etc/hezo/secrets/"                    \
	"gh\",\"in\":[\"header\","                                                                 \
	"\"query\"]}"

static void parse_fails(const char *doc, const char *want)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_policy *p = NULL;
	int r = hezo_policy_parse(doc, strlen(doc), "t", &p, &err);

	if (r == 0 || !strstr(err->msg, want))
		print_error("parse %s: got %s, want %s\n", doc, r == 0 ? "success" : err->msg,
			    want);
	assert_true(r < 0);
	assert_non_null(strstr(err->msg, want));
	hezo_policy_free(p);
}

static void test_secrets_parse(void **state)
{
	_cleanup_policy_ struct hezo_policy *none = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *p =
		parse_ok("{" EG ",\"secrets\":{" GH ",\"GIT\":{\"hosts\":[\"*.git.example.org\"],"
			 "\"file\":\"/etc/hezo/secrets/git\",\"otherHosts\":\"pass\"}}}");

	/* No secrets: the key is absent from the effective policy, as before. */
	assert_null(hezo_policy_secrets(none));
	{
		_cleanup_json_ struct hezo_json *j = hezo_policy_to_json(none);
		assert_null(hezo_json_get(j, "secrets"));
	}
	/* Hosts in the grammar's canonical spelling, otherHosts written out. */
	assert_value(p, "secrets",
		     "{\"GH\":{\"hosts\":[\"api.example.com\"],\"file\":\"/etc/hezo/secrets/gh\","
		     "\"otherHosts\":\"refuse\"},\"GIT\":{\"hosts\":[\"*.git.example.org\"],"
		     "\"file\":\"/etc/hezo/secrets/git\",\"otherHosts\":\"pass\"}}");
	assert_non_null(hezo_policy_secrets(p));
}

/* Issue 27: "headers" narrows which header values take the value, "in" opts into the query. */
static void test_secrets_places(void **state)
{
	_cleanup_policy_ struct hezo_policy *p =
		parse_ok("{" EG ",\"secrets\":{\"A\":{\"hosts\":[\"api.example.com\"],\"file\":"
			 "\"/f\",\"headers\":[\"X-Api-Key\",\"authorization\"],\"in\":[\"query\","
			 "\"header\"]}}}");

	/* Field names lowercase; in written in one order; both only when set. */
	assert_value(p, "secrets",
		     "{\"A\":{\"hosts\":[\"api.example.com\"],\"file\":\"/f\",\"otherHosts\":"
		     "\"refuse\",\"headers\":[\"x-api-key\",\"authorization\"],\"in\":[\"header\","
		     "\"query\"]}}");
}

static void test_secrets_refused(void **state)
{
	static const struct {
		const char *secrets, *want;
	} bad[] = {
		{"[]", "secrets: not an object"},
		{"{\"1X\":{}}", "secrets.1X: not an environment variable name"},
		{"{\"A-B\":{}}", "secrets.A-B: not an environment variable name"},
		{"{\"X\":{\"hosts\":[],\"file\":\"/f\"}}",
		 "secrets.X.hosts: not a non-empty array"},
		{"{\"X\":{\"hosts\":[\"*\"],\"file\":\"/f\"}}", "secrets.X.hosts[0]: \"*\":"},
		{"{\"X\":{\"hosts\":[\"*.com\"],\"file\":\"/f\"}}", "wildcard too broad"},
		{"{\"X\":{\"hosts\":[\"10.0.0.1\"],\"file\":\"/f\"}}",
		 "an address; a secret names"},
		{"{\"X\":{\"hosts\":[\"api.example.com\"]}}",
		 "secrets.X.file: not an absolute path"},
		{"{\"X\":{\"hosts\":[\"api.example.com\"],\"file\":\"rel\"}}", "secrets.X.file:"},
		{"{\"X\":{\"hosts\":[\"api.example.com\"],\"file\":\"/a/../b\"}}",
		 "secrets.X.file:"},
		{"{\"X\":{\"hosts\":[\"api.example.com\"],\"file\":\"/f\",\"value\":\"v\"}}",
		 "secrets.X.value: unknown key"},
		/* A placeholder is the shim's to make, not the admin's to choose. */
		{"{\"X\":{\"hosts\":[\"api.example.com\"],\"file\":\"/f\",\"placeholder\":\"p\"}}",
		 "secrets.X.placeholder: unknown key"},
		{"{\"X\":{\"hosts\":[\"api.example.com\"],\"file\":\"/f\",\"otherHosts\":\"yes\"}}",
		 "secrets.X.otherHosts: not \"refuse\" or \"pass\""},
		/* Egress must let the host out. */
		{"{\"X\":{\"hosts\":[\"evil.test\"],\"file\":\"/f\"}}",
		 "secrets.X.hosts[0]: evil.test is not allowed by egress.allow"},
		{"{\"X\":{\"hosts\":[\"git.example.org\"],\"file\":\"/f\"}}",
		 "git.example.org is not allowed by egress.allow"}, /* the apex is not covered */
		{"{\"X\":{\"hosts\":[\"*.example.com\"],\"file\":\"/f\"}}",
		 "*.example.com is not allowed by egress.allow"},
		{"{\"X\":{\"hosts\":[\"api.example.com:8443\"],\"file\":\"/f\"}}",
		 "api.example.com:8443 is not allowed"},
		{"{\"X\":{\"hosts\":[\"api.example.com\"],\"file\":\"/f\",\"headers\":[]}}",
		 "secrets.X.headers: not a non-empty array"},
		{"{\"X\":{\"hosts\":[\"api.example.com\"],\"file\":\"/f\",\"headers\":[\"a b\"]}}",
		 "secrets.X.headers[0]: not a header field name"},
		{"{\"X\":{\"hosts\":[\"api.example.com\"],\"file\":\"/f\",\"headers\":[\"HOST\"]}}",
		 "secrets.X.headers[0]: Host never takes a value"},
		{"{\"X\":{\"hosts\":[\"api.example.com\"],\"file\":\"/"
		 "f\",\"headers\":[\"a\",\"A\"]}}",
		 "secrets.X.headers[1]: listed twice"},
		{"{\"X\":{\"hosts\":[\"api.example.com\"],\"file\":\"/f\",\"in\":[\"body\"]}}",
		 "secrets.X.in[0]: not \"header\" or \"query\""},
		{"{\"X\":{\"hosts\":[\"api.example.com\"],\"file\":\"/f\",\"in\":[]}}",
		 "secrets.X.in: not a non-empty array"},
		{"{\"X\":{\"hosts\":[\"api.example.com\"],\"file\":\"/f\",\"in\":[\"query\"],"
		 "\"headers\":[\"a\"]}}",
		 "\"in\" leaves out \"header\""},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		_cleanup_free_ char *doc = NULL;

		assert_true(asprintf(&doc, "{" EG ",\"secrets\":%s}", bad[i].secrets) > 0);
		parse_fails(doc, bad[i].want);
	}
	parse_fails(
		"{\"egress\":{\"mode\":\"deny\",\"allow\":[\"api.example.com\"]},\"secrets\":{" GH
		"}}",
		"secrets need egress.mode \"proxy\"");
	parse_fails("{\"egress\":{\"mode\":\"off\"},\"secrets\":{" GH "}}",
		    "secrets need egress.mode \"proxy\"");
	/* The order of keys does not matter: the rule runs once every key is read. */
	hezo_policy_free(parse_ok("{\"secrets\":{" GH "}," EG "}"));
	/* A wildcard egress entry covers a name below it and a narrower wildcard. */
	hezo_policy_free(parse_ok("{\"egress\":{\"allow\":[\"*.example.com\"]},\"secrets\":{"
				  "\"A\":{\"hosts\":[\"api.example.com\",\"*.x.example.com\"],"
				  "\"file\":\"/f\"}}}"));
}

static void test_secrets_projects_annotations(void **state)
{
	_cleanup_free_ char *dir = make_tempdir(), *doc = NULL;
	_cleanup_policy_ struct hezo_policy *base = NULL, *proj = NULL, *kept = NULL, *all = NULL,
					    *none = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *ann = NULL;
	struct hezo_policy *bad = NULL;
	const char *a;

	assert_true(asprintf(&doc,
			     "{" EG ",\"projectsDir\":\"%s\",\"secrets\":{" GH
			     ",\"O\":{\"hosts\":[\"other.test\"],\"file\":\"/etc/o\"}}}",
			     dir) > 0);
	base = parse_ok(doc);
	/* A project (the admin's file too) may add a secret of its own; its hosts obey egress. */
	write_file_at(
		dir, "p.json",
		"{\"secrets\":{\"P\":{\"hosts\":[\"x.git.example.org\"],\"file\":\"/etc/p\"}}}");
	write_file_at(dir, "wide.json",
		      "{\"secrets\":{\"P\":{\"hosts\":[\"evil.test\"],\"file\":\"/etc/p\"}}}");
	assert_int_equal(hezo_policy_for_container(base, NULL, "p", &proj, &err), 0);
	assert_non_null(hezo_json_get(hezo_policy_secrets(proj), "P"));
	assert_non_null(hezo_json_get(hezo_policy_secrets(proj), "GH"));
	assert_true(hezo_policy_for_container(base, NULL, "wide", &bad, &err) < 0);
	assert_non_null(
		strstr(err->msg, "wide.json: secrets.P.hosts[0]: evil.test is not allowed"));
	hezo_error_free(err);
	err = NULL;
	/* A project may narrow a main file's secret's places, never widen them. */
	write_file_at(dir, "narrow.json", "{\"secrets\":{" GH_NARROW "}}");
	write_file_at(dir, "query.json", "{\"secrets\":{" GH_QUERY "}}");
	hezo_policy_free(proj);
	proj = NULL;
	assert_int_equal(hezo_policy_for_container(base, NULL, "narrow", &proj, &err), 0);
	assert_true(hezo_policy_for_container(base, NULL, "query", &bad, &err) < 0);
	assert_non_null(
		strstr(err->msg, "secrets.GH.in: a place the main policy does not give it"));
	hezo_error_free(err);
	err = NULL;

	/* No annotation: every secret; the annotation keeps a subset. */
	assert_int_equal(hezo_policy_for_container(base, NULL, NULL, &all, &err), 0);
	assert_non_null(hezo_json_get(hezo_policy_secrets(all), "O"));
	a = "{\"org.hezo.secrets\":\" GH ,\"}";
	assert_int_equal(hezo_json_parse(a, strlen(a), &ann, &err), 0);
	assert_int_equal(hezo_policy_for_container(base, ann, NULL, &kept, &err), 0);
	assert_non_null(hezo_json_get(hezo_policy_secrets(kept), "GH"));
	assert_null(hezo_json_get(hezo_policy_secrets(kept), "O"));
	hezo_json_free(TAKE_PTR(ann));
	a = "{\"org.hezo.secrets\":\"\"}";
	assert_int_equal(hezo_json_parse(a, strlen(a), &ann, &err), 0);
	assert_int_equal(hezo_policy_for_container(base, ann, NULL, &none, &err), 0);
	assert_null(hezo_policy_secrets(none));
	hezo_json_free(TAKE_PTR(ann));
	/* Never add one. */
	a = "{\"org.hezo.secrets\":\"GH,NEW\"}";
	assert_int_equal(hezo_json_parse(a, strlen(a), &ann, &err), 0);
	assert_true(hezo_policy_for_container(base, ann, NULL, &bad, &err) < 0);
	assert_null(bad);
	assert_string_equal(err->msg,
			    "annotation \"org.hezo.secrets\"=\"GH,NEW\": \"NEW\" is not one "
			    "of the policy's secrets");
	hezo_error_free(TAKE_PTR(err));
	/* Egress narrowed by annotation below a secret's host: the check at create refuses it. */
	hezo_json_free(TAKE_PTR(ann));
	a = "{\"org.hezo.egress.allow\":\"other.test\"}";
	assert_int_equal(hezo_json_parse(a, strlen(a), &ann, &err), 0);
	assert_int_equal(hezo_policy_for_container(base, ann, NULL, &bad, &err), 0);
	assert_true(hezo_policy_check_secrets(bad, "x", &err) < 0);
	assert_non_null(strstr(err->msg, "secrets.GH.hosts[0]: api.example.com is not allowed"));
	hezo_policy_free(bad);
	remove_tree(dir);
}

const struct CMUnitTest policy_secrets_tests[] = {
	cmocka_unit_test(test_secrets_parse),
	cmocka_unit_test(test_secrets_places),
	cmocka_unit_test(test_secrets_refused),
	cmocka_unit_test(test_secrets_projects_annotations),
};
const size_t policy_secrets_ntests = sizeof(policy_secrets_tests) / sizeof(policy_secrets_tests[0]);
