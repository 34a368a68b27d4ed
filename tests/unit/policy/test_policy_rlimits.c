/* Unit tests for the rlimits keys (policy/parse.c) and their clamp of config.json's and exec's
 * process (policy/rlimits.c). */
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

static void parse_fails(const char *doc, const char *want)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_policy *p = NULL;
	int r = hezo_policy_parse(doc, strlen(doc), "t", &p, &err);

	if (r == 0 || !strstr(err->msg, want))
		print_error("parse: got %s, want %s\n", r == 0 ? "success" : err->msg, want);
	assert_true(r < 0);
	assert_non_null(strstr(err->msg, want));
	hezo_policy_free(p);
}

static void test_rlimits_keys(void **state)
{
	_cleanup_policy_ struct hezo_policy *def = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *set =
		parse_ok("{\"rlimits\":{\"rtprio\":99,\"nice\":40}}");
	char **msgs = NULL;
	size_t n = 0;
	_cleanup_error_ struct hezo_error *err = NULL;
	static const char bad2[] = "{\"rlimits\":{\"rtprio\":100,\"nice\":\"x\"}}";

	assert_value(def, "rlimits", "{\"rtprio\":0,\"nice\":0}");
	assert_value(set, "rlimits", "{\"rtprio\":99,\"nice\":40}");
	parse_fails("{\"rlimits\":{\"rtprio\":100}}",
		    "policy t: rlimits.rtprio: 100 is more than 99");
	parse_fails("{\"rlimits\":{\"nice\":41}}", "rlimits.nice: 41 is more than 40");
	parse_fails("{\"rlimits\":{\"nice\":-1}}", "rlimits.nice: -1 is not a whole number");
	parse_fails("{\"rlimits\":{\"nice\":\"1\"}}", "rlimits.nice: \"1\" is not a whole number");
	parse_fails("{\"rlimits\":{\"nofile\":1}}", "rlimits");
	parse_fails("{\"rlimits\":[]}", "rlimits: expected an object, got array");
	/* policy check names both fields. */
	assert_true(hezo_policy_check(bad2, strlen(bad2), "t", &msgs, &n, &err) < 0);
	assert_int_equal(n, 2);
	assert_non_null(strstr(msgs[0], "rlimits.rtprio"));
	assert_non_null(strstr(msgs[1], "rlimits.nice"));
	for (size_t i = 0; i < n; i++)
		free(msgs[i]);
	free(msgs);
}

static void test_rlimits_project(void **state)
{
	_cleanup_free_ char *dir = make_tempdir(), *doc = NULL;
	_cleanup_policy_ struct hezo_policy *base = NULL, *low = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_policy *high = NULL;

	assert_true(asprintf(&doc,
			     "{\"rlimits\":{\"rtprio\":10,\"nice\":5},\"projectsDir\":\"%s\"}",
			     dir) > 0);
	base = parse_ok(doc);
	write_file_at(dir, "low.json", "{\"rlimits\":{\"rtprio\":1}}");
	write_file_at(dir, "high.json", "{\"rlimits\":{\"nice\":6}}");
	assert_int_equal(hezo_policy_for_container(base, NULL, "low", &low, &err), 0);
	assert_value(low, "rlimits", "{\"rtprio\":1,\"nice\":5}");
	assert_true(hezo_policy_for_container(base, NULL, "high", &high, &err) < 0);
	assert_null(high);
	assert_non_null(strstr(err->msg, "high.json: rlimits: a project may only lower the main "
					 "policy's rtprio 10 and nice 5"));
	remove_tree(dir);
}

static struct hezo_json *parse_json(const char *s)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_json *v = NULL;

	assert_int_equal(hezo_json_parse(s, strlen(s), &v, &err), 0);
	return v;
}

static struct hezo_json *spec_with_process(const char *process)
{
	struct hezo_json *spec = minimal_spec();

	assert_int_equal(hezo_json_set(spec, "process", parse_json(process)), 0);
	return spec;
}

static void assert_json(const struct hezo_json *v, const char *want)
{
	_cleanup_free_ char *got = json_text(v);

	if (strcmp(got, want) != 0)
		print_error("got  %s\nwant %s\n", got, want);
	assert_string_equal(got, want);
}

static void test_rlimits_clamped(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *some = parse_ok("{\"rlimits\":{\"rtprio\":5}}");
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_json *spec;

	/* docker run --ulimit rtprio=99 --ulimit nice=40 --oom-score-adj=-1000 */
	spec = spec_with_process(
		"{\"args\":[\"sh\"],\"oomScoreAdj\":-1000,\"rlimits\":["
		"{\"type\":\"RLIMIT_RTPRIO\",\"hard\":99,\"soft\":99},"
		"{\"type\":\"RLIMIT_NICE\",\"hard\":40,\"soft\":40},"
		"{\"type\":\"RLIMIT_NOFILE\",\"hard\":1048576,\"soft\":1048576}]}");
	assert_int_equal(hezo_policy_apply_spec(p, spec, NULL, &err), 0);
	assert_json(hezo_json_get_path(spec, "process.rlimits"),
		    "[{\"type\":\"RLIMIT_RTPRIO\",\"hard\":0,\"soft\":0},"
		    "{\"type\":\"RLIMIT_NICE\",\"hard\":0,\"soft\":0},"
		    "{\"type\":\"RLIMIT_NOFILE\",\"hard\":1048576,\"soft\":1048576}]");
	assert_json(hezo_json_get_path(spec, "process.oomScoreAdj"), "0");
	hezo_json_free(spec);

	/* Absent: added at the ceiling, so the engine's own limit is not inherited. */
	spec = spec_with_process("{\"args\":[\"sh\"],\"oomScoreAdj\":500}");
	assert_int_equal(hezo_policy_apply_spec(some, spec, NULL, &err), 0);
	assert_json(hezo_json_get_path(spec, "process.rlimits"),
		    "[{\"type\":\"RLIMIT_RTPRIO\",\"hard\":5,\"soft\":5},"
		    "{\"type\":\"RLIMIT_NICE\",\"hard\":0,\"soft\":0}]");
	assert_json(hezo_json_get_path(spec, "process.oomScoreAdj"), "500");
	hezo_json_free(spec);

	/* Below the ceiling stays; a soft limit alone is clamped alone. */
	spec = spec_with_process("{\"args\":[\"sh\"],\"rlimits\":["
				 "{\"type\":\"RLIMIT_RTPRIO\",\"hard\":3,\"soft\":1},"
				 "{\"type\":\"RLIMIT_NICE\",\"soft\":7}]}");
	assert_int_equal(hezo_policy_apply_spec(some, spec, NULL, &err), 0);
	assert_json(hezo_json_get_path(spec, "process.rlimits"),
		    "[{\"type\":\"RLIMIT_RTPRIO\",\"hard\":3,\"soft\":1},"
		    "{\"type\":\"RLIMIT_NICE\",\"soft\":0}]");
	hezo_json_free(spec);

	/* Go's uint64 "unlimited". */
	spec = spec_with_process("{\"args\":[\"sh\"],\"rlimits\":[{\"type\":\"RLIMIT_RTPRIO\","
				 "\"hard\":18446744073709551615,\"soft\":18446744073709551615}]}");
	assert_int_equal(hezo_policy_apply_spec(p, spec, NULL, &err), 0);
	assert_json(hezo_json_get_path(spec, "process.rlimits")->items[0],
		    "{\"type\":\"RLIMIT_RTPRIO\",\"hard\":0,\"soft\":0}");
	hezo_json_free(spec);
}

static void process_fails(const struct hezo_policy *p, const char *process, const char *want)
{
	_cleanup_json_ struct hezo_json *proc = parse_json(process);
	_cleanup_error_ struct hezo_error *err = NULL;
	int r = hezo_policy_apply_process(p, proc, &err);

	if (r == 0 || !strstr(err->msg, want))
		print_error("got %s, want %s\n", r == 0 ? "success" : err->msg, want);
	assert_true(r < 0);
	assert_non_null(strstr(err->msg, want));
}

static void test_rlimits_exec_and_errors(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_json_ struct hezo_json *proc =
		parse_json("{\"args\":[\"sh\"],\"oomScoreAdj\":-17,"
			   "\"rlimits\":[{\"type\":\"RLIMIT_NICE\",\"hard\":20,\"soft\":20}]}");
	_cleanup_error_ struct hezo_error *err = NULL;

	/* exec --process gets the same clamp. */
	assert_int_equal(hezo_policy_apply_process(p, proc, &err), 0);
	assert_json(hezo_json_get(proc, "rlimits"),
		    "[{\"type\":\"RLIMIT_NICE\",\"hard\":0,\"soft\":0},"
		    "{\"type\":\"RLIMIT_RTPRIO\",\"hard\":0,\"soft\":0}]");
	assert_json(hezo_json_get(proc, "oomScoreAdj"), "0");

	process_fails(p, "{\"rlimits\":[{\"type\":\"RLIMIT_BOGUS\",\"hard\":1,\"soft\":1}]}",
		      "process.rlimits[0].type: unknown rlimit \"RLIMIT_BOGUS\"");
	process_fails(p, "{\"rlimits\":[{\"hard\":1}]}",
		      "process.rlimits[0].type: expected a string");
	process_fails(p, "{\"rlimits\":[{\"type\":\"RLIMIT_RTPRIO\",\"hard\":\"99\"}]}",
		      "process.rlimits[0].hard: expected a whole number");
	process_fails(p, "{\"rlimits\":[{\"type\":\"RLIMIT_NICE\",\"soft\":-1}]}",
		      "process.rlimits[0].soft: expected a whole number");
	process_fails(p, "{\"rlimits\":{}}", "process.rlimits: expected a list, got object");
	process_fails(p, "{\"rlimits\":[1]}", "process.rlimits[0]: expected an object");
	process_fails(p, "{\"oomScoreAdj\":\"-1000\"}", "process.oomScoreAdj: expected a whole");
}

const struct CMUnitTest policy_rlimits_tests[] = {
	cmocka_unit_test(test_rlimits_keys),
	cmocka_unit_test(test_rlimits_project),
	cmocka_unit_test(test_rlimits_clamped),
	cmocka_unit_test(test_rlimits_exec_and_errors),
};
const size_t policy_rlimits_ntests = sizeof(policy_rlimits_tests) / sizeof(policy_rlimits_tests[0]);
