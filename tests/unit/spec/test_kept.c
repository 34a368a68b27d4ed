/* Unit tests for spec/kept.c: the side file create keeps beside the config.json it rewrote. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "hezo-file.h"
#include "hezo-kept.h"
#include "hezo-spec.h"

static struct hezo_json *parse(const char *s)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_json *v = NULL;

	if (hezo_json_parse(s, strlen(s), &v, &err) < 0)
		fail_msg("%s", err->msg);
	return v;
}

static const char ORIGINAL[] = "{\"process\":{\"args\":[\"true\"]},\"root\":{\"path\":\"rootfs\"}}";
static const char WRITTEN[] = "{\"process\":{\"args\":[\"/dev/.hezo-init\",\"--\",\"true\"]},"
			      "\"root\":{\"path\":\"rootfs\",\"readonly\":true}}";

/* The side file for WRITTEN and ORIGINAL, as create writes it. */
static char *kept_for(const char *written, const char *original, size_t *len)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *w = parse(written), *o = parse(original);
	char *buf = NULL;

	assert_int_equal(hezo_spec_kept_dump(w, o, &buf, len, &err), 0);
	return buf;
}

/* The side file create joins from the two dumps is the document of the two trees, compact. */
static void test_join(void **state)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *doc = hezo_json_new_object();
	_cleanup_free_ char *kept = NULL, *want = NULL;
	size_t len, want_len;

	kept = kept_for(WRITTEN, ORIGINAL, &len);
	assert_non_null(doc);
	assert_int_equal(hezo_json_set(doc, "version", hezo_json_new_int(HEZO_SPEC_KEPT_VERSION)),
			 0);
	assert_int_equal(hezo_json_set(doc, "written", parse(WRITTEN)), 0);
	assert_int_equal(hezo_json_set(doc, "original", parse(ORIGINAL)), 0);
	assert_int_equal(hezo_json_dump(doc, false, &want, &want_len, &err), 0);
	assert_int_equal(len, want_len);
	assert_memory_equal(kept, want, len);
	assert_int_equal(kept[len], '\0');
}

/* config.json still the document the shim wrote: the input is the kept original. */
static void test_match(void **state)
{
	_cleanup_json_ struct hezo_json *config = parse(WRITTEN), *input = NULL, *want = NULL;
	_cleanup_free_ char *kept = NULL;
	size_t len;

	kept = kept_for(WRITTEN, ORIGINAL, &len);
	assert_int_equal(hezo_spec_kept_input(config, kept, len, &input), 1);
	want = parse(ORIGINAL);
	assert_true(hezo_json_equal(input, want));
}

/* As a parsed document: whitespace a tool adds does not matter; a number literal or key order does.
 */
static void test_match_parsed(void **state)
{
	_cleanup_json_ struct hezo_json *pretty =
		parse("{ \"process\": { \"args\": [ \"/dev/.hezo-init\", \"--\", \"true\" ] },\n"
		      "  \"root\": { \"path\": \"rootfs\", \"readonly\": true } }\n");
	_cleanup_json_ struct hezo_json *reordered =
		parse("{\"root\":{\"path\":\"rootfs\",\"readonly\":true},"
		      "\"process\":{\"args\":[\"/dev/.hezo-init\",\"--\",\"true\"]}}");
	_cleanup_json_ struct hezo_json *input = NULL, *input2 = NULL;
	_cleanup_free_ char *kept = NULL;
	size_t len;

	kept = kept_for(WRITTEN, ORIGINAL, &len);
	assert_int_equal(hezo_spec_kept_input(pretty, kept, len, &input), 1);
	assert_non_null(input);
	assert_int_equal(hezo_spec_kept_input(reordered, kept, len, &input2), 0);
	assert_null(input2);
}

/* The caller edited the rewritten config.json: the edit is the input, the side file is ignored. */
static void test_edited(void **state)
{
	_cleanup_json_ struct hezo_json *config =
		parse("{\"process\":{\"args\":[\"/dev/.hezo-init\",\"--\",\"false\"]},"
		      "\"root\":{\"path\":\"rootfs\",\"readonly\":true}}");
	_cleanup_json_ struct hezo_json *orig = parse(ORIGINAL), *input = NULL;
	_cleanup_free_ char *kept = NULL;
	size_t len;

	kept = kept_for(WRITTEN, ORIGINAL, &len);
	assert_int_equal(hezo_spec_kept_input(config, kept, len, &input), 0);
	assert_null(input);
	/* The caller's original itself (a backend failure put it back) is not the written one. */
	assert_int_equal(hezo_spec_kept_input(orig, kept, len, &input), 0);
	assert_null(input);
	/* No side file at all. */
	assert_int_equal(hezo_spec_kept_input(orig, NULL, 0, &input), 0);
	assert_null(input);
}

/* Anything that is not the shim's side file is no side file. */
static void test_garbage(void **state)
{
	static const char *const bad[] = {
		"",
		"garbage",
		"{\"version\":1,\"written\":",
		"[1,2]",
		"{}",
		"{\"written\":"
		"{\"a\":1}"
		",\"original\":{\"a\":2}}",
		"{\"version\":2,\"written\":{\"a\":1},\"original\":{\"a\":2}}",
		"{\"version\":\"1\",\"written\":{\"a\":1},\"original\":{\"a\":2}}",
		"{\"version\":1,\"written\":{\"a\":1}}",
		"{\"version\":1,\"written\":{\"a\":1},\"original\":[1]}",
		"{\"version\":1,\"written\":{\"a\":1},\"original\":\"{}\"}",
		"{\"version\":1,\"written\":[{\"a\":1}],\"original\":{\"a\":2}}",
	};
	_cleanup_json_ struct hezo_json *config = parse("{\"a\":1}");

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hezo_json *input = (struct hezo_json *)1;

		assert_int_equal(hezo_spec_kept_input(config, bad[i], strlen(bad[i]), &input), 0);
		assert_null(input);
	}
}

/* A planted side file is taken only as an input, which create then judges in full. */
static void test_planted(void **state)
{
	static const char planted[] = "{\"version\":1,\"written\":{\"a\":1},\"original\":"
				      "{\"mounts\":[{\"destination\":\"/host\",\"type\":\"bind\","
				      "\"source\":\"/\"}]}}";
	_cleanup_json_ struct hezo_json *config = parse("{\"a\":1}"), *input = NULL;

	assert_int_equal(hezo_spec_kept_input(config, planted, strlen(planted), &input), 1);
	assert_string_equal(
		hezo_json_string(hezo_json_get_path(input, "mounts")->items[0]->items[2]), "/");
}

static int make_tmpdir(char *path, size_t size)
{
	int fd;

	snprintf(path, size, "/tmp/hezo-kept-test-XXXXXX");
	assert_non_null(mkdtemp(path));
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

/* The side file is read only as a regular file of bounded size, never followed or waited on. */
static void test_read(void **state)
{
	_cleanup_close_ int dfd = -1;
	_cleanup_free_ char *buf = NULL;
	char dir[64], cmd[128];
	size_t len = 0;
	int fd;

	dfd = make_tmpdir(dir, sizeof(dir));
	assert_int_equal(hezo_spec_kept_read_at(dfd, &buf, &len), -ENOENT);
	assert_int_equal(hezo_write_file_atomic_at(dfd, "target", "{}", 2, 0644, NULL), 0);

	assert_int_equal(symlinkat("target", dfd, HEZO_SPEC_KEPT_NAME), 0);
	assert_int_equal(hezo_spec_kept_read_at(dfd, &buf, &len), -ELOOP);
	assert_int_equal(unlinkat(dfd, HEZO_SPEC_KEPT_NAME, 0), 0);

	/* A FIFO with no writer: opened without blocking, then refused. */
	assert_int_equal(mkfifoat(dfd, HEZO_SPEC_KEPT_NAME, 0600), 0);
	assert_int_equal(hezo_spec_kept_read_at(dfd, &buf, &len), -EINVAL);
	assert_int_equal(unlinkat(dfd, HEZO_SPEC_KEPT_NAME, 0), 0);

	assert_int_equal(mkdirat(dfd, HEZO_SPEC_KEPT_NAME, 0700), 0);
	assert_int_equal(hezo_spec_kept_read_at(dfd, &buf, &len), -EISDIR);
	assert_int_equal(unlinkat(dfd, HEZO_SPEC_KEPT_NAME, AT_REMOVEDIR), 0);

	/* Huge (sparse): refused by its size, without reading it. */
	fd = openat(dfd, HEZO_SPEC_KEPT_NAME, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)HEZO_SPEC_KEPT_MAX_SIZE + 1), 0);
	close(fd);
	assert_int_equal(hezo_spec_kept_read_at(dfd, &buf, &len), -EFBIG);
	assert_null(buf);

	assert_int_equal(
		hezo_write_file_atomic_at(dfd, HEZO_SPEC_KEPT_NAME, "{\"a\":1}", 7, 0600, NULL), 0);
	assert_int_equal(hezo_spec_kept_read_at(dfd, &buf, &len), 0);
	assert_int_equal(len, 7);
	assert_string_equal(buf, "{\"a\":1}");

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join),	     cmocka_unit_test(test_match),
		cmocka_unit_test(test_match_parsed), cmocka_unit_test(test_edited),
		cmocka_unit_test(test_garbage),	     cmocka_unit_test(test_planted),
		cmocka_unit_test(test_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
