/* Unit tests for admin/: daemon.json merge/unmerge and the TOML blocks on real engine files;
 * the runsc release doctor reads. */
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
#include "hezo-install.h"
#include "hezo-json.h"

#define SHIM "/usr/bin/hezo-shim"

static char *slurp(const char *name, size_t *len)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	char path[512];
	char *buf = NULL;

	snprintf(path, sizeof(path), "%s/%s", HEZO_TEST_DATA, name);
	assert_int_equal(hezo_read_file_at(AT_FDCWD, path, 1 << 22, &buf, len, &e), 0);
	return buf;
}

/* ---- daemon.json ---- */

static const char daemon_json[] =
	"{\n"
	"    \"log-driver\": \"json-file\",\n"
	"    \"log-opts\": {\"max-size\": \"10m\", \"max-file\": \"3\"},\n"
	"    \"default-ulimits\": {\"nofile\": {\"Name\": \"nofile\", \"Hard\": 64000, "
	"\"Soft\": 64000}},\n"
	"    \"runtimes\": {\"runsc\": {\"path\": \"/usr/bin/runsc\", \"runtimeArgs\": "
	"[\"--platform=ptrace\"]}},\n"
	"    \"shutdown-timeout\": 1.50,\n"
	"    \"storage-driver\": \"overlay2\"\n"
	"}\n";

static struct hezo_json *parse(const char *s, size_t len)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	struct hezo_json *v = NULL;

	assert_int_equal(hezo_json_parse(s, len, &v, &e), 0);
	return v;
}

static void test_docker_merge_keeps_everything(void **state)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *out = NULL;
	_cleanup_json_ struct hezo_json *before = NULL, *after = NULL;
	struct hezo_json *rt;
	size_t len = 0;
	bool changed = false;

	assert_int_equal(hezo_install_docker_merge(daemon_json, strlen(daemon_json), true, SHIM,
						   &out, &len, &changed, &e),
			 0);
	assert_true(changed);
	assert_int_equal(out[len - 1], '\n');
	before = parse(daemon_json, strlen(daemon_json));
	after = parse(out, len);
	/* Same keys, same order, same values, except runtimes which gained one entry at its end. */
	assert_int_equal(after->len, before->len);
	for (size_t i = 0; i < before->len; i++) {
		assert_string_equal(after->keys[i], before->keys[i]);
		if (strcmp(before->keys[i], "runtimes") != 0)
			assert_true(hezo_json_equal(after->items[i], before->items[i]));
	}
	/* The number keeps its literal text. */
	assert_non_null(strstr(out, "1.50"));
	rt = hezo_json_get(after, "runtimes");
	assert_int_equal(rt->len, 2);
	assert_string_equal(rt->keys[0], "runsc");
	assert_true(hezo_json_equal(rt->items[0],
				    hezo_json_get(hezo_json_get(before, "runtimes"), "runsc")));
	assert_string_equal(rt->keys[1], "hezo-shim");
	assert_string_equal(hezo_json_string(hezo_json_get_path(after, "runtimes.hezo-shim.path")),
			    SHIM);
}

static void test_docker_merge_idempotent(void **state)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *once = NULL, *twice = NULL;
	size_t l1 = 0, l2 = 0;
	bool changed = true;

	assert_int_equal(hezo_install_docker_merge(daemon_json, strlen(daemon_json), true, SHIM,
						   &once, &l1, &changed, &e),
			 0);
	assert_int_equal(hezo_install_docker_merge(once, l1, true, SHIM, &twice, &l2, &changed, &e),
			 0);
	assert_false(changed);
	assert_int_equal(l1, l2);
	assert_memory_equal(once, twice, l1);
}

static void test_docker_merge_keeps_our_entry_args(void **state)
{
	static const char in[] = "{\"runtimes\":{\"hezo-shim\":{\"path\":\"/old/hezo-shim\","
				 "\"runtimeArgs\":[\"--hezo-project\",\"web\"]}}}";
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *out = NULL;
	_cleanup_json_ struct hezo_json *v = NULL;
	size_t len = 0;
	bool changed = false;

	assert_int_equal(
		hezo_install_docker_merge(in, strlen(in), true, SHIM, &out, &len, &changed, &e), 0);
	assert_true(changed);
	v = parse(out, len);
	assert_string_equal(hezo_json_string(hezo_json_get_path(v, "runtimes.hezo-shim.path")),
			    SHIM);
	assert_non_null(hezo_json_get_path(v, "runtimes.hezo-shim.runtimeArgs"));
}

static void test_docker_merge_refuses_bad_input(void **state)
{
	static const char *const bad[] = {
		"{\"log-driver\": \"json-file\",}", /* trailing comma */
		"{\"a\": 1",			    /* truncated */
		"[1, 2]",			    /* not an object */
		"{\"runtimes\": [\"runc\"]}",	    /* runtimes of the wrong type */
		"{\"runtimes\": {\"hezo-shim\": \"/usr/bin/hezo-shim\"}}",
		"",
	};

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(bad); i++) {
		_cleanup_error_ struct hezo_error *e = NULL;
		char *out = NULL;
		size_t len = 0;
		bool changed = false;

		assert_true(hezo_install_docker_merge(bad[i], strlen(bad[i]), true, SHIM, &out,
						      &len, &changed, &e) < 0);
		assert_null(out);
		assert_non_null(e);
		assert_non_null(e->msg);
	}
	{
		_cleanup_error_ struct hezo_error *e = NULL;
		char *out = NULL;
		size_t len = 0;
		bool changed = false;

		/* The parse error is reported with its position. */
		assert_true(hezo_install_docker_merge("{\n\"a\": tru\n}", 12, true, SHIM, &out,
						      &len, &changed, &e) < 0);
		assert_non_null(strstr(e->msg, "not valid JSON"));
		assert_non_null(strstr(e->msg, "line"));
	}
}

static void test_docker_unmerge_actions(void **state)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *merged = NULL, *fresh = NULL, *out = NULL, *edited = NULL;
	_cleanup_json_ struct hezo_json *v = NULL;
	enum hezo_uninstall_action act;
	size_t ml = 0, fl = 0, ol = 0;
	bool changed;

	assert_int_equal(hezo_install_docker_merge(daemon_json, strlen(daemon_json), true, SHIM,
						   &merged, &ml, &changed, &e),
			 0);
	assert_int_equal(hezo_install_docker_unmerge(merged, ml, daemon_json, strlen(daemon_json),
						     &act, &out, &ol, &e),
			 0);
	assert_int_equal(act, HEZO_UNINSTALL_RESTORE_BACKUP);

	assert_int_equal(hezo_install_docker_merge(NULL, 0, false, SHIM, &fresh, &fl, &changed, &e),
			 0);
	assert_int_equal(hezo_install_docker_unmerge(fresh, fl, NULL, 0, &act, &out, &ol, &e), 0);
	assert_int_equal(act, HEZO_UNINSTALL_DELETE);

	/* Edited after install: only our entry goes, the edit stays. */
	assert_true(asprintf(&edited, "{\"debug\": true, %s", merged + 1) > 0);
	assert_int_equal(hezo_install_docker_unmerge(edited, strlen(edited), daemon_json,
						     strlen(daemon_json), &act, &out, &ol, &e),
			 0);
	assert_int_equal(act, HEZO_UNINSTALL_REWRITE);
	v = parse(out, ol);
	assert_true(hezo_json_is_true(hezo_json_get(v, "debug")));
	assert_null(hezo_json_get_path(v, "runtimes.hezo-shim"));
	assert_non_null(hezo_json_get_path(v, "runtimes.runsc"));
	free(out);
	out = NULL;

	assert_int_equal(hezo_install_docker_unmerge(daemon_json, strlen(daemon_json), NULL, 0,
						     &act, &out, &ol, &e),
			 0);
	assert_int_equal(act, HEZO_UNINSTALL_NOTHING);
}

/* The verbs on a scratch directory: what the integration tests do, without root. */
static char tmpdir[] = "/tmp/hezo-install-test-XXXXXX";

static int run_verb(int (*fn)(int, char **), const char *verb, const char *engine, const char *path)
{
	char *argv[] = {(char *)verb,  (char *)engine, "--config", (char *)path,
			"--no-reload", "--shim",       SHIM,	   NULL};
	int argc = strcmp(verb, "install") == 0 ? 7 : 5;
	int saved = dup(1), null = open("/dev/null", O_WRONLY | O_CLOEXEC), r;

	/* Keep the verbs' messages out of the TAP stream. */
	fflush(stdout);
	dup2(null, 1);
	r = fn(argc, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	close(null);
	return r;
}

static void write_text(const char *path, const char *text, size_t len)
{
	_cleanup_error_ struct hezo_error *e = NULL;

	assert_int_equal(hezo_write_file_atomic_at(AT_FDCWD, path, text, len, 0640, &e), 0);
}

static char *read_text(const char *path, size_t *len)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	char *buf = NULL;

	if (hezo_read_file_at(AT_FDCWD, path, 1 << 22, &buf, len, &e) < 0)
		return NULL;
	return buf;
}

static void test_docker_verbs_round_trip(void **state)
{
	char path[256], backup[300];
	_cleanup_free_ char *a = NULL, *b = NULL;
	size_t la = 0, lb = 0;
	struct stat st;

	snprintf(path, sizeof(path), "%s/daemon.json", tmpdir);
	snprintf(backup, sizeof(backup), "%s.hezo-backup", path);
	write_text(path, daemon_json, strlen(daemon_json));
	assert_int_equal(run_verb(hezo_install_main, "install", "--docker", path), 0);
	a = read_text(path, &la);
	assert_non_null(strstr(a, "hezo-shim"));
	assert_int_equal(stat(backup, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	/* twice: no change, backup untouched */
	assert_int_equal(run_verb(hezo_install_main, "install", "--docker", path), 0);
	b = read_text(path, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	assert_int_equal(run_verb(hezo_uninstall_main, "uninstall", "--docker", path), 0);
	free(b);
	b = read_text(path, &lb);
	assert_int_equal(lb, strlen(daemon_json));
	assert_memory_equal(b, daemon_json, lb);
	assert_int_equal(stat(backup, &st), -1);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);

	/* No file before: install creates it, uninstall removes it. */
	unlink(path);
	assert_int_equal(run_verb(hezo_install_main, "install", "--docker", path), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(stat(backup, &st), -1);
	assert_int_equal(run_verb(hezo_uninstall_main, "uninstall", "--docker", path), 0);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(errno, ENOENT);
}

static void test_docker_verbs_never_overwrite_invalid(void **state)
{
	static const char bad[] = "{ \"log-driver\": \"json-file\", # a comment\n}\n";
	char path[256], backup[300];
	_cleanup_free_ char *after = NULL;
	size_t len = 0;
	struct stat st;

	snprintf(path, sizeof(path), "%s/bad.json", tmpdir);
	snprintf(backup, sizeof(backup), "%s.hezo-backup", path);
	write_text(path, bad, strlen(bad));
	assert_int_not_equal(run_verb(hezo_install_main, "install", "--docker", path), 0);
	after = read_text(path, &len);
	assert_int_equal(len, strlen(bad));
	assert_memory_equal(after, bad, len);
	assert_int_equal(stat(backup, &st), -1);
	assert_int_not_equal(run_verb(hezo_uninstall_main, "uninstall", "--docker", path), 0);
	unlink(path);
}

/* ---- TOML blocks ---- */

typedef int (*add_fn)(const char *, size_t, bool, const char *, char **, size_t *, bool *,
		      struct hezo_error **);

/* add, check idempotence, remove, and demand the original bytes back. */
static char *round_trip(add_fn add, const char *orig, size_t len, bool exists, size_t *outlen)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *again = NULL, *back = NULL;
	char *added = NULL;
	size_t al = 0, gl = 0, bl = 0;
	bool changed = false, del = true;

	assert_int_equal(add(orig, len, exists, SHIM, &added, &al, &changed, &e), 0);
	assert_true(changed);
	assert_true(hezo_install_blocks_present(added, al));
	assert_int_equal(add(added, al, true, SHIM, &again, &gl, &changed, &e), 0);
	assert_false(changed);
	assert_int_equal(gl, al);
	assert_memory_equal(again, added, al);
	assert_int_equal(hezo_install_blocks_remove(added, al, &back, &bl, &changed, &del, &e), 0);
	assert_true(changed);
	assert_int_equal(del, !exists);
	assert_int_equal(bl, len);
	if (len)
		assert_memory_equal(back, orig, len);
	*outlen = al;
	return added;
}

static void test_containerd_default_config(void **state)
{
	_cleanup_free_ char *orig = NULL, *added = NULL;
	size_t len = 0, al = 0;

	orig = slurp("containerd-1.6-default.toml", &len);
	added = round_trip(hezo_install_containerd_add, orig, len, true, &al);
	/* Appended after everything, the runc runtime untouched. */
	assert_memory_equal(added, orig, len);
	assert_non_null(strstr(added + len, "[plugins.\"io.containerd.grpc.v1.cri\".containerd."
					    "runtimes.hezo]\n  runtime_type = "
					    "\"io.containerd.runc.v2\"\n"));
	assert_non_null(strstr(added + len, "BinaryName = \"" SHIM "\"\n"));
	assert_non_null(strstr(added + len, "Root = \"" HEZO_INSTALL_CONTAINERD_ROOT "\"\n"));
	/* The runtime's own keys (not its options): containerd passes org.hezo.* through. */
	assert_non_null(strstr(added + len, "\"io.containerd.runc.v2\"\n"
					    "  pod_annotations = [\"org.hezo.*\"]\n"
					    "  container_annotations = [\"org.hezo.*\"]\n"
					    "  [plugins."));
	assert_null(strstr(added + len, "version = 2"));
}

static void test_containerd_other_runtimes(void **state)
{
	static const char extra[] =
		"\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runsc]\n"
		"  runtime_type = \"io.containerd.runsc.v1\"\n"
		"[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.kata]\n"
		"  runtime_type = \"io.containerd.kata.v2\""; /* no final newline */
	_cleanup_free_ char *orig = NULL, *text = NULL, *added = NULL;
	size_t len = 0, al = 0;

	orig = slurp("containerd-1.6-default.toml", &len);
	assert_true(asprintf(&text, "%s%s", orig, extra) > 0);
	added = round_trip(hezo_install_containerd_add, text, strlen(text), true, &al);
	assert_non_null(strstr(added,
			       "runtimes.kata]\n  runtime_type = "
			       "\"io.containerd.kata.v2\"\n" HEZO_INSTALL_BLOCK_BEGIN " +nl\n"));
}

static void test_containerd_absent_and_empty(void **state)
{
	_cleanup_free_ char *a = NULL, *b = NULL;
	size_t al = 0, bl = 0;

	a = round_trip(hezo_install_containerd_add, NULL, 0, false, &al);
	assert_non_null(strstr(a, "\nversion = 2\n[plugins."));
	assert_non_null(strstr(a, HEZO_INSTALL_BLOCK_BEGIN " +file\n"));
	b = round_trip(hezo_install_containerd_add, "# comments only\n", 16, true, &bl);
	assert_non_null(strstr(b, "\nversion = 2\n"));
}

static void test_containerd_refusals(void **state)
{
	static const char *const bad[] = {
		"version = 1\n[plugins.cri]\n",
		"[plugins.cri]\n  systemd_cgroup = true\n", /* no version: containerd reads v1 */
		"version = 3\n",
		"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.hezo]\n"
		"  runtime_type = \"io.containerd.runc.v2\"\n",
		"version = "
		"2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.hezo.options]\n"
		"  BinaryName = \"/x\"\n",
		"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes]\n"
		"  hezo = { runtime_type = \"io.containerd.runc.v2\" }\n",
		/* Dotted keys define the same table without a header. */
		"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
		"  runtimes.hezo.runtime_type = \"io.containerd.runc.v2\"\n",
		"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
		"  runtimes . \"hezo\" . options.BinaryName = \"/x\"\n",
		"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n"
		"  containerd.runtimes.'hezo' = {}\n",
		"version = "
		"2\nplugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.hezo.runtime_type"
		" = \"x\"\n",
	};

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(bad); i++) {
		_cleanup_error_ struct hezo_error *e = NULL;
		char *out = NULL;
		size_t len = 0;
		bool changed = false;

		assert_true(hezo_install_containerd_add(bad[i], strlen(bad[i]), true, SHIM, &out,
							&len, &changed, &e) < 0);
		assert_null(out);
		assert_non_null(e->msg);
	}
}

/* A dotted key for another runtime, or one that only starts like ours, is not ours. */
static void test_containerd_dotted_other(void **state)
{
	static const char *const ok[] = {
		"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
		"  runtimes.runc.runtime_type = \"io.containerd.runc.v2\"\n"
		"  runtimes.hezo2.runtime_type = \"io.containerd.runc.v2\"\n",
		"version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
		"  x = \"runtimes.hezo.runtime_type = 1\"\n",
	};
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *dotted = NULL;
	char *out = NULL;
	size_t len = 0;
	bool changed = false;

	(void)state;
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(ok); i++)
		free(round_trip(hezo_install_containerd_add, ok[i], strlen(ok[i]), true, &len));
	dotted = strdup("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
			"  runtimes.hezo.runtime_type = \"io.containerd.runc.v2\"\n");
	assert_true(hezo_install_containerd_add(dotted, strlen(dotted), true, SHIM, &out, &len,
						&changed, &e) < 0);
	assert_string_equal(e->msg, "line 3: a runtime \"hezo\" is already defined outside "
				    "hezo-shim's block (plugins.\"io.containerd.grpc.v1.cri\"."
				    "containerd.runtimes.hezo.runtime_type)");
}

static void test_containerd_new_shim_path(void **state)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *orig = NULL, *a = NULL, *b = NULL;
	size_t len = 0, al = 0, bl = 0;
	bool changed = false;

	orig = slurp("containerd-1.6-default.toml", &len);
	assert_int_equal(hezo_install_containerd_add(orig, len, true, SHIM, &a, &al, &changed, &e),
			 0);
	assert_int_equal(hezo_install_containerd_add(a, al, true, "/opt/hezo/bin/hezo-shim", &b,
						     &bl, &changed, &e),
			 0);
	assert_true(changed);
	assert_null(strstr(b, SHIM "\""));
	assert_non_null(strstr(b, "BinaryName = \"/opt/hezo/bin/hezo-shim\""));
	/* Exactly one block. */
	assert_null(strstr(strstr(b, HEZO_INSTALL_BLOCK_BEGIN) + 1, HEZO_INSTALL_BLOCK_BEGIN));
}

static void test_podman_shipped_file(void **state)
{
	_cleanup_free_ char *orig = NULL, *added = NULL;
	size_t len = 0, al = 0;
	const char *engine, *runtimes, *json, *ours;

	orig = slurp("podman-4.3-containers.conf", &len);
	added = round_trip(hezo_install_podman_add, orig, len, true, &al);
	/* Both lines sit inside the existing tables (TOML forbids defining them again). */
	engine = strstr(added, "\n[engine]\n");
	runtimes = strstr(added, "\n[engine.runtimes]\n");
	json = strstr(added, "\nruntime_supports_json = [\"crun\", \"runc\", \"kata\", \"runsc\", "
			     "\"krun\", \"hezo-shim\"]\n");
	ours = strstr(added, "\nhezo-shim = [\"" SHIM "\"]\n");
	assert_non_null(engine);
	assert_non_null(runtimes);
	assert_non_null(json);
	assert_non_null(ours);
	assert_true(engine < json && json < runtimes && runtimes < ours);
	assert_null(strstr(json + 1, "\n[engine]\n"));
	assert_null(strstr(ours + 1, "\n[engine.runtimes]\n"));
	/* Next header after ours is not ours: [engine.runtimes] still holds its own lines. */
	assert_ptr_equal(strstr(added, "\n[engine.runtimes]\n" HEZO_INSTALL_BLOCK_BEGIN), runtimes);
}

static void test_podman_admin_list(void **state)
{
	_cleanup_free_ char *orig = NULL, *added = NULL;
	size_t len = 0, al = 0;

	orig = slurp("podman-engine.conf", &len);
	added = round_trip(hezo_install_podman_add, orig, len, true, &al);
	/* The admin's list is kept, with our name added; the original line sits in the block. */
	assert_non_null(strstr(added,
			       "#< runtime_supports_json = [\"crun\", \"runc\", \"runsc\"] # "
			       "runtimes that take --log-format json\n"
			       "runtime_supports_json = [\"crun\", \"runc\", \"runsc\", "
			       "\"hezo-shim\"]\n"));
	/* Only one active runtime_supports_json line. */
	assert_null(
		strstr(strstr(added, "\nruntime_supports_json") + 1, "\nruntime_supports_json"));
	assert_non_null(strstr(added, "[engine.runtimes]\n" HEZO_INSTALL_BLOCK_BEGIN));
}

static void test_podman_edges(void **state)
{
	static const char tail_list[] = "[engine]\nruntime_supports_json = [\"runc\"]";
	static const char tail_header[] = "[containers]\n[engine]";
	static const char has_ours[] = "[engine]\nruntime_supports_json = ['runc', 'hezo-shim']\n";
	_cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	size_t l = 0;

	a = round_trip(hezo_install_podman_add, tail_list, strlen(tail_list), true, &l);
	assert_non_null(strstr(a, HEZO_INSTALL_BLOCK_BEGIN " -eol\n"));
	b = round_trip(hezo_install_podman_add, tail_header, strlen(tail_header), true, &l);
	assert_non_null(strstr(b, "[engine]\n" HEZO_INSTALL_BLOCK_BEGIN " +nl\n"));
	c = round_trip(hezo_install_podman_add, NULL, 0, false, &l);
	assert_non_null(strstr(c, "[engine]\nruntime_supports_json = "));
	assert_non_null(strstr(c, "[engine.runtimes]\nhezo-shim = [\"" SHIM "\"]\n"));
	/* Already listed: the list is left alone, only the runtime is added. */
	d = round_trip(hezo_install_podman_add, has_ours, strlen(has_ours), true, &l);
	assert_non_null(strstr(d, has_ours));
}

static void test_podman_refusals(void **state)
{
	static const char *const bad[] = {
		"[engine.runtimes]\nhezo-shim = [\"/usr/local/bin/hezo-shim\"]\n",
		"[engine.runtimes.hezo-shim]\n",
		"[engine]\nruntime_supports_json = [\n  \"crun\",\n]\n",
	};

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(bad); i++) {
		_cleanup_error_ struct hezo_error *e = NULL;
		char *out = NULL;
		size_t len = 0;
		bool changed = false;

		assert_true(hezo_install_podman_add(bad[i], strlen(bad[i]), true, SHIM, &out, &len,
						    &changed, &e) < 0);
		assert_null(out);
		assert_non_null(e->msg);
	}
}

static void test_blocks_damaged(void **state)
{
	static const char *const bad[] = {
		"version = 2\n" HEZO_INSTALL_BLOCK_BEGIN "\n[x]\n", /* no END */
		HEZO_INSTALL_BLOCK_BEGIN "\n" HEZO_INSTALL_BLOCK_BEGIN "\n" HEZO_INSTALL_BLOCK_END
					 "\n",
		"a = 1" HEZO_INSTALL_BLOCK_BEGIN "\n", /* not at a line start: not ours */
	};
	_cleanup_error_ struct hezo_error *e = NULL;
	char *out = NULL;
	size_t len = 0;
	bool changed = false, del = false;

	assert_true(hezo_install_blocks_remove(bad[0], strlen(bad[0]), &out, &len, &changed, &del,
					       &e) < 0);
	hezo_error_free(e);
	e = NULL;
	assert_true(hezo_install_blocks_remove(bad[1], strlen(bad[1]), &out, &len, &changed, &del,
					       &e) < 0);
	assert_int_equal(
		hezo_install_blocks_remove(bad[2], strlen(bad[2]), &out, &len, &changed, &del, &e),
		0);
	assert_false(changed);
	assert_int_equal(len, strlen(bad[2]));
	free(out);
}

static void test_toml_verbs_round_trip(void **state)
{
	char path[256];
	_cleanup_free_ char *orig = NULL, *after = NULL;
	size_t len = 0, al = 0;
	struct stat st;

	orig = slurp("podman-4.3-containers.conf", &len);
	snprintf(path, sizeof(path), "%s/containers.conf", tmpdir);
	write_text(path, orig, len);
	assert_int_equal(run_verb(hezo_install_main, "install", "--podman", path), 0);
	assert_int_equal(run_verb(hezo_uninstall_main, "uninstall", "--podman", path), 0);
	after = read_text(path, &al);
	assert_int_equal(al, len);
	assert_memory_equal(after, orig, len);

	snprintf(path, sizeof(path), "%s/config.toml", tmpdir);
	assert_int_equal(run_verb(hezo_install_main, "install", "--containerd", path), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(run_verb(hezo_uninstall_main, "uninstall", "--containerd", path), 0);
	assert_int_equal(stat(path, &st), -1);
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_runsc_release(void **state)
{
	(void)state;
	assert_int_equal(
		hezo_install_runsc_release("runsc version 0.0~20240729.0\nspec: 1.0.2-dev\n"),
		20240729);
	assert_int_equal(
		hezo_install_runsc_release("runsc version 0.0~20221219.0\nspec: 1.0.2-dev\n"),
		HEZO_INSTALL_RUNSC_OLD);
	assert_int_equal(hezo_install_runsc_release("runsc version release-20231009.0\n"),
			 20231009);
	/* No date, a short or long one, or "version " only on a later line: not a release. */
	assert_int_equal(hezo_install_runsc_release("runsc version 1.2.3\n"), -EINVAL);
	assert_int_equal(hezo_install_runsc_release("runsc version 0.0~2024072\n"), -EINVAL);
	assert_int_equal(hezo_install_runsc_release("runsc version 0.0~202407290\n"), -EINVAL);
	assert_int_equal(hezo_install_runsc_release("runsc\nversion 0.0~20240729.0\n"), -EINVAL);
	assert_int_equal(hezo_install_runsc_release("runsc version 0.0~00000000.0"), -EINVAL);
	assert_int_equal(hezo_install_runsc_release(""), -EINVAL);
	assert_int_equal(hezo_install_runsc_release(NULL), -EINVAL);
}

/* ---- project runtimes: text edits that give back the original bytes ---- */

static struct hezo_json *project_entry(const char *name)
{
	struct hezo_json *e = parse("{\"path\": \"" SHIM "\", \"runtimeArgs\": "
				    "[\"--hezo-project\", \"x\"]}",
				    strlen("{\"path\": \"" SHIM "\", \"runtimeArgs\": "
					   "[\"--hezo-project\", \"x\"]}"));
	struct hezo_json *args = hezo_json_get(e, "runtimeArgs");

	hezo_json_remove_at(args, 1);
	assert_int_equal(hezo_json_append(args, hezo_json_new_string(name)), 0);
	return e;
}

static char *docker_add(const char *old, bool exists, const char *name, bool *changed)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_json_ struct hezo_json *entry = project_entry(name + 5);
	char *out = NULL;
	size_t len = 0;

	assert_int_equal(hezo_install_docker_add_runtime(old, old ? strlen(old) : 0, exists, name,
							 entry, &out, &len, changed, &e),
			 0);
	assert_int_equal(strlen(out), len);
	return out;
}

static char *docker_remove(const char *cur, const char *name, bool *del)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_json_ struct hezo_json *entry = project_entry(name + 5);
	char *out = NULL;
	size_t len = 0;
	bool changed = false;

	assert_int_equal(hezo_install_docker_remove_runtime(cur, strlen(cur), name, entry, &out,
							    &len, &changed, del, &e),
			 0);
	assert_true(changed);
	return out;
}

/* Two projects, created a then b and removed in either order, from each kind of file. */
static void test_docker_project_round_trips(void **state)
{
	static const char *const files[] = {
		daemon_json,
		"{\n\t\"debug\": true\n}\n",
		"{\"runtimes\": {}, \"debug\": true}",
		"{}",
		NULL, /* no file */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		for (int order = 0; order < 2; order++) {
			_cleanup_free_ char *a = NULL, *ab = NULL, *again = NULL, *one = NULL,
					    *none = NULL;
			bool changed = false, del = false;

			a = docker_add(files[i], files[i] != NULL, "hezo-a", &changed);
			assert_true(changed);
			ab = docker_add(a, true, "hezo-b", &changed);
			assert_true(changed);
			again = docker_add(ab, true, "hezo-a", &changed);
			assert_false(changed);
			assert_string_equal(again, ab);
			one = docker_remove(ab, order ? "hezo-a" : "hezo-b", &del);
			assert_false(del);
			none = docker_remove(one, order ? "hezo-b" : "hezo-a", &del);
			if (files[i])
				assert_string_equal(none, files[i]);
			else
				assert_true(del);
		}
}

static void test_docker_project_refusals(void **state)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_json_ struct hezo_json *entry = project_entry("a");
	static const char other[] = "{\"runtimes\": {\"hezo-a\": {\"path\": \"/bin/x\"}}}";
	static const char notobj[] = "{\"runtimes\": []}";
	char *out = NULL;
	size_t len = 0;
	bool changed = false, del = false;

	(void)state;
	assert_int_equal(hezo_install_docker_add_runtime(other, strlen(other), true, "hezo-a",
							 entry, &out, &len, &changed, &e),
			 -EEXIST);
	hezo_error_free(TAKE_PTR(e));
	assert_int_equal(hezo_install_docker_add_runtime(notobj, strlen(notobj), true, "hezo-a",
							 entry, &out, &len, &changed, &e),
			 -EINVAL);
	hezo_error_free(TAKE_PTR(e));
	/* Someone else's entry of that name is not ours to take out. */
	assert_int_equal(hezo_install_docker_remove_runtime(other, strlen(other), "hezo-a", entry,
							    &out, &len, &changed, &del, &e),
			 0);
	assert_false(changed);
	free(out);
}

static char *ctd_add(const char *old, bool exists, const char *rt)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	char *out = NULL;
	size_t len = 0;
	bool changed = false;

	assert_int_equal(hezo_install_containerd_project_add(old, old ? strlen(old) : 0, exists, rt,
							     "/x/hezo-shim@a", &out, &len, &changed,
							     &e),
			 0);
	return out;
}

static char *ctd_remove(const char *cur, const char *rt, bool *del)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	char *out = NULL;
	size_t len = 0;
	bool changed = false;

	assert_int_equal(hezo_install_containerd_project_remove(cur, strlen(cur), rt, &out, &len,
								&changed, del, &e),
			 0);
	assert_true(changed);
	return out;
}

/* A version block for a file without one stays until the last project block goes. */
static void test_containerd_project_round_trips(void **state)
{
	static const char *const files[] = {"version = 2\n[plugins]\n", "# a comment\n", NULL};

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		for (int order = 0; order < 2; order++) {
			_cleanup_free_ char *a = NULL, *ab = NULL, *one = NULL, *none = NULL;
			_cleanup_free_ char *shim_too = NULL, *back = NULL;
			_cleanup_error_ struct hezo_error *e = NULL;
			size_t len = 0;
			bool del = false, changed = false;

			a = ctd_add(files[i], files[i] != NULL, "hezo-a");
			ab = ctd_add(a, true, "hezo-b.c");
			assert_non_null(strstr(ab, "runtimes.\"hezo-b.c\"]"));
			/* install's own block and uninstall leave the projects' blocks alone. */
			assert_int_equal(hezo_install_containerd_add(ab, strlen(ab), true, SHIM,
								     &shim_too, &len, &changed, &e),
					 0);
			assert_int_equal(hezo_install_blocks_remove(shim_too, len, &back, &len,
								    &changed, &del, &e),
					 0);
			assert_string_equal(back, ab);
			one = ctd_remove(ab, order ? "hezo-a" : "hezo-b.c", &del);
			assert_false(del);
			assert_non_null(strstr(one, "version = 2"));
			none = ctd_remove(one, order ? "hezo-b.c" : "hezo-a", &del);
			if (files[i])
				assert_string_equal(none, files[i]);
			else
				assert_true(del);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_merge_keeps_everything),
		cmocka_unit_test(test_docker_merge_idempotent),
		cmocka_unit_test(test_docker_merge_keeps_our_entry_args),
		cmocka_unit_test(test_docker_merge_refuses_bad_input),
		cmocka_unit_test(test_docker_unmerge_actions),
		cmocka_unit_test(test_docker_verbs_round_trip),
		cmocka_unit_test(test_docker_verbs_never_overwrite_invalid),
		cmocka_unit_test(test_containerd_default_config),
		cmocka_unit_test(test_containerd_other_runtimes),
		cmocka_unit_test(test_containerd_absent_and_empty),
		cmocka_unit_test(test_containerd_refusals),
		cmocka_unit_test(test_containerd_dotted_other),
		cmocka_unit_test(test_containerd_new_shim_path),
		cmocka_unit_test(test_podman_shipped_file),
		cmocka_unit_test(test_podman_admin_list),
		cmocka_unit_test(test_podman_edges),
		cmocka_unit_test(test_podman_refusals),
		cmocka_unit_test(test_blocks_damaged),
		cmocka_unit_test(test_toml_verbs_round_trip),
		cmocka_unit_test(test_docker_project_round_trips),
		cmocka_unit_test(test_docker_project_refusals),
		cmocka_unit_test(test_containerd_project_round_trips),
		cmocka_unit_test(test_runsc_release),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
