/* Entry point of the policy unit tests and the helpers they share: temporary trees, fixtures. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hezo-file.h"
#include "test-policy.h"

const char *test_source_root(void)
{
	const char *s = getenv("HEZO_SOURCE_ROOT");

	assert_non_null(s);
	return s;
}

struct hezo_json *load_data(const char *name)
{
	_cleanup_free_ char *path = NULL, *buf = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_json *v = NULL;
	const char *dir = getenv("HEZO_TEST_DATA");
	size_t len = 0;

	assert_non_null(dir);
	assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
	if (hezo_read_file_at(AT_FDCWD, path, 1 << 24, &buf, &len, &err) < 0)
		print_error("%s\n", err->msg);
	assert_non_null(buf);
	assert_int_equal(hezo_json_parse(buf, len, &v, &err), 0);
	return v;
}

struct hezo_json *minimal_spec(void)
{
	static const char doc[] =
		"{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"},"
		"\"root\":{\"path\":\"rootfs\"},\"linux\":{\"namespaces\":[{\"type\":\"pid\"},"
		"{\"type\":\"network\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"}]"
		"}}";
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_json *v = NULL;

	assert_int_equal(hezo_json_parse(doc, strlen(doc), &v, &err), 0);
	return v;
}

char *make_tempdir(void)
{
	char *t = strdup("/tmp/hezo-policy-test-XXXXXX");

	assert_non_null(t);
	assert_non_null(mkdtemp(t));
	return t;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

void remove_tree(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

void write_file_at(const char *dir, const char *name, const char *text)
{
	_cleanup_free_ char *path = NULL;

	assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
	write_file(path, text);
}

int main(void)
{
	/* One group, so the TAP stream has one plan. */
	size_t n = policy_parse_ntests + policy_apply_ntests + policy_mounts_ntests +
		   policy_rlimits_ntests + policy_flags_ntests + policy_secrets_ntests;
	struct CMUnitTest *all = calloc(n, sizeof(*all));

	if (!all)
		return 1;
	memcpy(all, policy_parse_tests, policy_parse_ntests * sizeof(*all));
	memcpy(all + policy_parse_ntests, policy_apply_tests, policy_apply_ntests * sizeof(*all));
	memcpy(all + policy_parse_ntests + policy_apply_ntests, policy_mounts_tests,
	       policy_mounts_ntests * sizeof(*all));
	memcpy(all + n - policy_secrets_ntests - policy_flags_ntests - policy_rlimits_ntests,
	       policy_rlimits_tests, policy_rlimits_ntests * sizeof(*all));
	memcpy(all + n - policy_secrets_ntests - policy_flags_ntests, policy_flags_tests,
	       policy_flags_ntests * sizeof(*all));
	memcpy(all + n - policy_secrets_ntests, policy_secrets_tests,
	       policy_secrets_ntests * sizeof(*all));
	return _cmocka_run_group_tests("policy", all, n, NULL, NULL) ? 1 : 0;
}
