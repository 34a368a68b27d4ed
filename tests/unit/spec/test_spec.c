/* Unit tests for spec/spec.c: loading captured config.json, hook insertion, limits, atomic save. */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "hezo-file.h"
#include "hezo-spec.h"

static int data_fd(void)
{
	const char *d = getenv("HEZO_TEST_DATA");
	int fd = open(d ? d : "tests/data", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static struct hezo_json *load_data(const char *name)
{
	_cleanup_close_ int dfd = data_fd();
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_json *spec = NULL;

	if (hezo_spec_load_at(dfd, name, &spec, &err) < 0)
		fail_msg("%s", err->msg);
	return spec;
}

/* A fresh empty directory for one test; removed by rm_tree. */
static int make_tmpdir(char *path, size_t size)
{
	int fd;

	snprintf(path, size, "/tmp/hezo-spec-test-XXXXXX");
	assert_non_null(mkdtemp(path));
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void rm_tree(int dfd, const char *path)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(fd);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, ".."))
			unlinkat(dfd, de->d_name, 0);
	closedir(d);
	chmod(path, 0700);
	rmdir(path);
}

static size_t count_entries(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fdopendir(fd);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void write_file(int dfd, const char *name, const char *text, mode_t mode)
{
	_cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	assert_true(fd >= 0);
	assert_int_equal(hezo_write_all(fd, text, strlen(text)), 0);
	assert_int_equal(fchmod(fd, mode), 0);
}

static void test_accessors(void **state)
{
	_cleanup_json_ struct hezo_json *docker = load_data("config-docker.json");
	_cleanup_json_ struct hezo_json *podman = load_data("config-podman.json");
	_cleanup_json_ struct hezo_json *ctr = load_data("config-ctr.json");
	struct hezo_json *ns;

	assert_non_null(hezo_spec_root_path(docker));
	assert_non_null(strstr(hezo_spec_root_path(docker), "/merged"));
	assert_string_equal(hezo_spec_root_path(ctr), "rootfs");
	assert_non_null(hezo_spec_process(docker));
	assert_non_null(hezo_json_get(hezo_spec_process(docker), "args"));
	assert_non_null(hezo_spec_linux(podman));
	ns = hezo_spec_namespace(docker, "network");
	assert_non_null(ns);
	assert_string_equal(hezo_json_string(hezo_json_get(ns, "type")), "network");
	assert_non_null(hezo_spec_namespace(ctr, "pid"));
	assert_null(hezo_spec_namespace(ctr, "nonsense"));
	/* podman records its annotations; ctr adds none here. */
	assert_non_null(hezo_spec_annotations(podman));
	assert_null(hezo_spec_annotations(ctr));
	assert_null(hezo_spec_annotation(ctr, "x"));
	assert_null(hezo_spec_root_path(NULL));
}

static void test_add_hook_docker(void **state)
{
	_cleanup_json_ struct hezo_json *spec = load_data("config-docker.json");
	_cleanup_json_ struct hezo_json *orig = hezo_json_clone(spec);
	_cleanup_error_ struct hezo_error *err = NULL;
	const char *args[] = {"hezo-hook", "--stage", "prestart", NULL};
	const char *env[] = {"HEZO=1", NULL};
	struct hezo_json *pre, *hook;
	size_t keys = spec->len;

	pre = hezo_json_get_path(spec, "hooks.prestart");
	assert_non_null(pre);
	assert_int_equal(pre->len, 1);
	if (hezo_spec_add_hook(spec, "prestart", "/usr/libexec/hezo-hook", args, env, 5, &err) < 0)
		fail_msg("%s", err->msg);

	/* Docker's libnetwork-setkey hook runs first; ours follows it. */
	pre = hezo_json_get_path(spec, "hooks.prestart");
	assert_int_equal(pre->len, 2);
	hook = pre->items[0];
	assert_string_equal(hezo_json_string(hezo_json_get(hook, "args")->items[0]),
			    "libnetwork-setkey");
	hook = pre->items[1];
	assert_string_equal(hezo_json_string(hezo_json_get(hook, "path")),
			    "/usr/libexec/hezo-hook");
	assert_int_equal(hezo_json_get(hook, "args")->len, 3);
	assert_string_equal(hezo_json_string(hezo_json_get(hook, "args")->items[2]), "prestart");
	assert_string_equal(hezo_json_string(hezo_json_get(hook, "env")->items[0]), "HEZO=1");
	assert_string_equal(hezo_json_get(hook, "timeout")->str, "5");
	assert_int_equal(spec->len, keys);

	/* Nothing else moved: removing our hook gives the original back. */
	assert_int_equal(hezo_json_remove_at(pre, 1), 0);
	assert_true(hezo_json_equal(spec, orig));
}

static void test_add_hook_creates(void **state)
{
	_cleanup_json_ struct hezo_json *spec = load_data("config-ctr.json");
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *out = NULL;
	struct hezo_json *list;
	size_t keys = spec->len;

	assert_null(hezo_json_get(spec, "hooks"));
	assert_int_equal(hezo_spec_add_hook(spec, "createRuntime", "/bin/h", NULL, NULL, 0, &err),
			 0);
	assert_int_equal(spec->len, keys + 1);
	assert_string_equal(spec->keys[keys], "hooks");
	list = hezo_json_get_path(spec, "hooks.createRuntime");
	assert_non_null(list);
	assert_int_equal(list->len, 1);
	assert_int_equal(hezo_json_dump(list, false, &out, NULL, &err), 0);
	assert_string_equal(out, "[{\"path\":\"/bin/h\"}]");

	/* A second hook in the same stage goes after the first. */
	const char *a2[] = {"two", NULL};
	assert_int_equal(hezo_spec_add_hook(spec, "createRuntime", "/bin/h2", a2, NULL, 0, &err),
			 0);
	assert_int_equal(list->len, 2);
	assert_string_equal(hezo_json_string(hezo_json_get(list->items[1], "path")), "/bin/h2");
}

static void test_add_hook_null_and_errors(void **state)
{
	_cleanup_json_ struct hezo_json *spec = NULL;
	_cleanup_error_ struct hezo_error *e1 = NULL, *e2 = NULL, *e3 = NULL, *e4 = NULL,
					  *e5 = NULL;
	_cleanup_error_ struct hezo_error *e6 = NULL, *e7 = NULL;
	_cleanup_free_ char *out = NULL;
	const char *doc = "{\"a\":1,\"hooks\":null,\"b\":2}";

	assert_int_equal(hezo_spec_parse(doc, strlen(doc), "t", &spec, &e1), 0);
	assert_int_equal(hezo_spec_add_hook(spec, "poststop", "/x", NULL, NULL, 0, &e1), 0);
	assert_int_equal(hezo_json_dump(spec, false, &out, NULL, &e1), 0);
	assert_string_equal(out, "{\"a\":1,\"hooks\":{\"poststop\":[{\"path\":\"/x\"}]},\"b\":2}");

	assert_int_equal(hezo_spec_add_hook(spec, "prestrat", "/x", NULL, NULL, 0, &e2), -EINVAL);
	assert_non_null(strstr(e2->msg, "unknown hook stage prestrat"));
	assert_int_equal(hezo_spec_add_hook(spec, "prestart", "x", NULL, NULL, 0, &e3), -EINVAL);
	assert_non_null(strstr(e3->msg, "not absolute"));
	assert_int_equal(hezo_spec_add_hook(spec, "prestart", "/x", NULL, NULL, -1, &e4), -EINVAL);

	assert_int_equal(hezo_json_set(hezo_json_get(spec, "hooks"), "prestart",
				       hezo_json_new_string("oops")),
			 0);
	assert_int_equal(hezo_spec_add_hook(spec, "prestart", "/x", NULL, NULL, 0, &e5), -EINVAL);
	assert_string_equal(e5->msg, "hooks.prestart is string, not an array");
	assert_int_equal(hezo_json_set(spec, "hooks", hezo_json_new_int(3)), 0);
	assert_int_equal(hezo_spec_add_hook(spec, "prestart", "/x", NULL, NULL, 0, &e6), -EINVAL);
	assert_string_equal(e6->msg, "hooks is number, not an object");
	/* No err pointer: still fails cleanly. */
	assert_int_equal(hezo_spec_add_hook(spec, "prestart", "/x", NULL, NULL, 0, NULL), -EINVAL);
	(void)e7;
}

static void test_parse_errors(void **state)
{
	char dir[64];
	_cleanup_close_ int dfd = make_tmpdir(dir, sizeof(dir));
	_cleanup_json_ struct hezo_json *spec = NULL;
	_cleanup_error_ struct hezo_error *e1 = NULL, *e2 = NULL, *e3 = NULL, *e4 = NULL,
					  *e5 = NULL;

	write_file(dfd, "config.json", "{\"a\"\n}", 0644);
	assert_int_equal(hezo_spec_load_at(dfd, "config.json", &spec, &e1), -EINVAL);
	assert_string_equal(e1->msg,
			    "config.json: line 2, byte 1: parse error: object key and value "
			    "must be separated by a colon (':')");

	write_file(dfd, "config.json", "[1,2]", 0644);
	assert_int_equal(hezo_spec_load_at(dfd, "config.json", &spec, &e2), -EINVAL);
	assert_string_equal(e2->msg, "config.json: top level is array, not an object");

	write_file(dfd, "config.json", "", 0644);
	assert_int_equal(hezo_spec_load_at(dfd, "config.json", &spec, &e3), -EINVAL);
	assert_string_equal(e3->msg, "config.json: empty document");

	assert_int_equal(hezo_spec_load_at(dfd, "missing.json", &spec, &e4), -ENOENT);
	assert_string_equal(e4->msg, "missing.json: No such file or directory");

	/* Without an error object the errno still comes back. */
	assert_int_equal(hezo_spec_parse("[[[", 3, "x", &spec, NULL), -EINVAL);
	assert_int_equal(hezo_spec_parse("{\"a\":\"\\u0000\"}", 14, "x", &spec, NULL), -EINVAL);
	char deep[130];
	memset(deep, '[', 65);
	memset(deep + 65, ']', 65);
	assert_int_equal(hezo_spec_parse(deep, 130, "x", &spec, NULL), -E2BIG);
	assert_int_equal(hezo_spec_load_at(dfd, ".", &spec, &e5), -EISDIR);
	assert_string_equal(e5->msg, ".: Is a directory");
	assert_null(spec);
	rm_tree(dfd, dir);
}

static void test_too_big(void **state)
{
	char dir[64];
	_cleanup_close_ int dfd = make_tmpdir(dir, sizeof(dir));
	_cleanup_json_ struct hezo_json *spec = NULL;
	_cleanup_error_ struct hezo_error *e1 = NULL, *e2 = NULL;
	_cleanup_close_ int fd = -1;
	int p[2];

	/* A regular file one byte over the cap (sparse: no need to write 16 MiB). */
	fd = openat(dfd, "config.json", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, HEZO_SPEC_MAX_SIZE + 1), 0);
	assert_int_equal(hezo_spec_load_at(dfd, "config.json", &spec, &e1), -EFBIG);
	assert_string_equal(e1->msg, "config.json: larger than 16777216 bytes");

	/* Exactly at the cap is read (and then judged by the parser: all blanks). */
	assert_int_equal(ftruncate(fd, 0), 0);
	{
		_cleanup_free_ char *blank = malloc(HEZO_SPEC_MAX_SIZE);
		_cleanup_error_ struct hezo_error *e = NULL;
		assert_non_null(blank);
		memset(blank, ' ', HEZO_SPEC_MAX_SIZE);
		blank[0] = '{';
		blank[HEZO_SPEC_MAX_SIZE - 1] = '}';
		assert_int_equal(hezo_write_all(fd, blank, HEZO_SPEC_MAX_SIZE), 0);
		assert_int_equal(hezo_spec_load_at(dfd, "config.json", &spec, &e), 0);
		assert_non_null(spec);
		assert_int_equal(spec->len, 0);
	}

	/* A stream whose size is only known by reading it (a FIFO). */
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static char chunk[65536];
		memset(chunk, ' ', sizeof(chunk));
		close(p[0]);
		for (size_t n = 0; n <= HEZO_SPEC_MAX_SIZE; n += sizeof(chunk))
			if (hezo_write_all(p[1], chunk, sizeof(chunk)) < 0)
				_exit(0);
		_exit(0);
	}
	close(p[1]);
	char name[64];
	snprintf(name, sizeof(name), "/proc/self/fd/%d", p[0]);
	assert_int_equal(hezo_spec_load_at(AT_FDCWD, name, &spec, &e2), -EFBIG);
	assert_non_null(strstr(e2->msg, ": larger than 16777216 bytes"));
	close(p[0]);
	waitpid(pid, NULL, 0);
	rm_tree(dfd, dir);
}

static void test_save(void **state)
{
	char dir[64];
	_cleanup_close_ int dfd = make_tmpdir(dir, sizeof(dir));
	_cleanup_json_ struct hezo_json *spec = load_data("config-docker.json");
	_cleanup_json_ struct hezo_json *back = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *text = NULL;
	struct stat st;
	size_t len;

	/* New file: 0644 whatever the umask. */
	mode_t old = umask(077);
	assert_int_equal(hezo_spec_save_at(dfd, "new.json", spec, &err), 0);
	umask(old);
	assert_int_equal(fstatat(dfd, "new.json", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0644);

	/* Existing file: content replaced, mode kept. */
	write_file(dfd, "config.json", "{\"old\":true}", 0600);
	assert_int_equal(hezo_spec_add_hook(spec, "prestart", "/h", NULL, NULL, 0, &err), 0);
	assert_int_equal(hezo_spec_save_at(dfd, "config.json", spec, &err), 0);
	assert_int_equal(fstatat(dfd, "config.json", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(hezo_spec_load_at(dfd, "config.json", &back, &err), 0);
	assert_true(hezo_json_equal(spec, back));
	assert_int_equal(hezo_read_file_at(dfd, "config.json", 1 << 20, &text, &len, &err), 0);
	assert_null(strchr(text, '\n'));
	/* Only the two files: no temporary left behind. */
	assert_int_equal(count_entries(dfd), 2);
	rm_tree(dfd, dir);
}

static void test_save_readonly_dir(void **state)
{
	char dir[64];
	_cleanup_close_ int dfd = make_tmpdir(dir, sizeof(dir));
	_cleanup_json_ struct hezo_json *spec = load_data("config-ctr.json");
	_cleanup_free_ char *text = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	const char *old = "{\"old\":true}";
	size_t len;
	int status;
	pid_t pid;

	write_file(dfd, "config.json", old, 0644);
	assert_int_equal(chmod(dir, 0555), 0);

	/* root ignores directory modes, so the save runs as nobody in a child. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct hezo_error *e = NULL;
		int r;
		if (geteuid() == 0 &&
		    (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		     setresuid(65534, 65534, 65534) < 0))
			_exit(100);
		r = hezo_spec_save_at(dfd, "config.json", spec, &e);
		if (r == -EACCES && e && strstr(e->msg, "config.json: create") &&
		    strstr(e->msg, "Permission denied"))
			_exit(0);
		_exit(r < 0 ? 1 : 2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	assert_int_equal(hezo_read_file_at(dfd, "config.json", 1 << 20, &text, &len, &err), 0);
	assert_string_equal(text, old);
	assert_int_equal(count_entries(dfd), 1);
	rm_tree(dfd, dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accessors),
		cmocka_unit_test(test_add_hook_docker),
		cmocka_unit_test(test_add_hook_creates),
		cmocka_unit_test(test_add_hook_null_and_errors),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_save),
		cmocka_unit_test(test_save_readonly_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
