/* Unit tests for policy/apply.c over the configs real engines produced (tests/data): the box
 * every container ends up in, and the requests that must be refused. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <seccomp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hezo-policy.h"
#include "test-policy.h"

static const char *const engine_roots[] = {
	"/var/lib/docker/containers",  "/var/lib/containers/storage", "/run/containers/storage",
	"/var/run/containers/storage", "/var/lib/containerd",	      "/run/containerd",
};

/* Per-test scratch: a fake host tree for engine files and allowed sources. */
struct fix {
	char *root;
};

static int fix_setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	f->root = make_tempdir();
	*state = f;
	return 0;
}

static int fix_teardown(void **state)
{
	struct fix *f = *state;

	remove_tree(f->root);
	free(f->root);
	free(f);
	return 0;
}

static void mkdir_p(const char *path)
{
	_cleanup_free_ char *p = strdup(path);

	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0)
			assert_int_equal(errno, EEXIST);
		*s = '/';
	}
	if (mkdir(p, 0755) < 0)
		assert_int_equal(errno, EEXIST);
}

/*
 * The captures name per-container files of engines that ran elsewhere: recreate each under the
 * scratch root and point the mount there, as if this machine's engine had made them.
 */
static void place_engine_files(struct hezo_json *spec, const char *root)
{
	struct hezo_json *mounts = hezo_json_get(spec, "mounts");

	HEZO_JSON_FOREACH (i, mounts) {
		struct hezo_json *m = mounts->items[i];
		const char *src = hezo_json_string(hezo_json_get(m, "source"));
		_cleanup_free_ char *moved = NULL, *dir = NULL;
		bool engine = false;

		if (!src)
			continue;
		for (size_t r = 0; r < sizeof(engine_roots) / sizeof(engine_roots[0]); r++)
			if (strncmp(src, engine_roots[r], strlen(engine_roots[r])) == 0)
				engine = true;
		if (!engine)
			continue;
		assert_true(asprintf(&moved, "%s%s", root, src) > 0);
		dir = strdup(moved);
		*strrchr(dir, '/') = '\0';
		mkdir_p(dir);
		if (strcmp(strrchr(moved, '/'), "/shm") == 0)
			mkdir_p(moved);
		else
			write_file(moved, "x\n");
		assert_int_equal(hezo_json_set(m, "source", hezo_json_new_string(moved)), 0);
	}
}

/* A policy whose engine roots live under root; extra is more top-level keys (or ""). */
static struct hezo_policy *policy_for(const char *root, const char *allowed, const char *extra)
{
	_cleanup_free_ char *doc = NULL;
	char roots[4096] = "";

	for (size_t r = 0; r < sizeof(engine_roots) / sizeof(engine_roots[0]); r++) {
		size_t n = strlen(roots);
		snprintf(roots + n, sizeof(roots) - n, "%s\"%s%s\"", r ? "," : "", root,
			 engine_roots[r]);
	}
	assert_true(asprintf(&doc,
			     "{\"mounts\":{\"engineRoots\":[%s],\"allowedSources\":[%s]}%s%s}",
			     roots, allowed ? allowed : "", extra && extra[0] ? "," : "",
			     extra ? extra : "") > 0);
	return parse_ok(doc);
}

#define DEV_RUNC "\"mode\":\"dev\",\"backend\":\"runc\",\"allowBackends\":[\"runc\"]"

static void apply_ok(const struct hezo_policy *p, struct hezo_json *spec)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	int r = hezo_policy_apply_spec(p, spec, NULL, &err);

	if (r < 0)
		print_error("apply failed: %s\n", err ? err->msg : "?");
	assert_int_equal(r, 0);
}

static void apply_fails(const struct hezo_policy *p, struct hezo_json *spec, const char *want)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	int r = hezo_policy_apply_spec(p, spec, NULL, &err);

	if (r == 0 || !err || !strstr(err->msg, want))
		print_error("apply: got %s, want %s\n", r == 0 ? "success" : err->msg, want);
	assert_true(r < 0);
	assert_non_null(strstr(err->msg, want));
}

static void assert_at(const struct hezo_json *root, const char *path, const char *want)
{
	struct hezo_json *v = hezo_json_get_path(root, path);
	_cleanup_free_ char *got = NULL;

	if (!v)
		print_error("%s: absent, want %s\n", path, want);
	assert_non_null(v);
	got = json_text(v);
	if (strcmp(got, want) != 0)
		print_error("%s: got %s\n   want %s\n", path, got, want);
	assert_string_equal(got, want);
}

static struct hezo_json *find_mount(const struct hezo_json *spec, const char *dest, size_t nth)
{
	struct hezo_json *mounts = hezo_json_get(spec, "mounts");

	HEZO_JSON_FOREACH (i, mounts) {
		const char *d = hezo_json_string(hezo_json_get(mounts->items[i], "destination"));
		if (d && strcmp(d, dest) == 0 && nth-- == 0)
			return mounts->items[i];
	}
	return NULL;
}

static size_t count_string(const struct hezo_json *arr, const char *s)
{
	size_t n = 0;

	HEZO_JSON_FOREACH (i, arr) {
		const char *x = hezo_json_string(arr->items[i]);
		if (x && strcmp(x, s) == 0)
			n++;
	}
	return n;
}

static void add_mount(struct hezo_json *spec, const char *dest, const char *type, const char *src,
		      const char *opt)
{
	struct hezo_json *m = hezo_json_new_object();
	struct hezo_json *o;

	assert_int_equal(hezo_json_set(m, "destination", hezo_json_new_string(dest)), 0);
	if (type)
		assert_int_equal(hezo_json_set(m, "type", hezo_json_new_string(type)), 0);
	if (src)
		assert_int_equal(hezo_json_set(m, "source", hezo_json_new_string(src)), 0);
	o = hezo_json_ensure_array(m, "options");
	if (opt)
		assert_int_equal(hezo_json_append(o, hezo_json_new_string(opt)), 0);
	assert_int_equal(hezo_json_append(hezo_json_ensure_array(spec, "mounts"), m), 0);
}

/* Every one of the five sets present and empty. */
static void assert_no_caps(const struct hezo_json *process)
{
	static const char *const sets[] = {"bounding", "effective", "inheritable", "permitted",
					   "ambient"};
	struct hezo_json *caps = hezo_json_get(process, "capabilities");

	assert_non_null(caps);
	assert_int_equal(caps->len, 5);
	for (size_t i = 0; i < 5; i++) {
		struct hezo_json *set = hezo_json_get(caps, sets[i]);
		assert_non_null(set);
		assert_int_equal(set->type, HEZO_JSON_ARRAY);
		assert_int_equal(set->len, 0);
	}
}

static const char reset_devices[] =
	"[{\"allow\":false,\"access\":\"rwm\"},"
	"{\"allow\":true,\"type\":\"c\",\"major\":1,\"minor\":3,\"access\":\"rwm\"},"
	"{\"allow\":true,\"type\":\"c\",\"major\":1,\"minor\":5,\"access\":\"rwm\"},"
	"{\"allow\":true,\"type\":\"c\",\"major\":1,\"minor\":7,\"access\":\"rwm\"},"
	"{\"allow\":true,\"type\":\"c\",\"major\":1,\"minor\":8,\"access\":\"rwm\"},"
	"{\"allow\":true,\"type\":\"c\",\"major\":1,\"minor\":9,\"access\":\"rwm\"},"
	"{\"allow\":true,\"type\":\"c\",\"major\":5,\"minor\":0,\"access\":\"rwm\"},"
	"{\"allow\":true,\"type\":\"c\",\"major\":5,\"minor\":1,\"access\":\"rwm\"},"
	"{\"allow\":true,\"type\":\"c\",\"major\":5,\"minor\":2,\"access\":\"rwm\"},"
	"{\"allow\":true,\"type\":\"c\",\"major\":136,\"access\":\"rwm\"}";

static void assert_box(const struct hezo_json *spec)
{
	static const char *const masked[] = {
		"/proc/asound",
		"/proc/acpi",
		"/proc/kcore",
		"/proc/keys",
		"/proc/latency_stats",
		"/proc/timer_list",
		"/proc/timer_stats",
		"/proc/sched_debug",
		"/proc/scsi",
		"/sys/firmware",
		"/sys/devices/virtual/powercap",
	};
	static const char *const ro[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
					 "/proc/sysrq-trigger"};
	struct hezo_json *mounts = hezo_json_get(spec, "mounts");
	char want[1024];

	assert_no_caps(hezo_json_get(spec, "process"));
	assert_at(spec, "process.noNewPrivileges", "true");
	assert_at(spec, "root.readonly", "true");
	assert_at(spec, "linux.devices", "[]");
	snprintf(want, sizeof(want), "%s]", reset_devices);
	assert_at(spec, "linux.resources.devices", want);
	for (size_t i = 0; i < sizeof(masked) / sizeof(masked[0]); i++)
		assert_int_equal(
			count_string(hezo_json_get_path(spec, "linux.maskedPaths"), masked[i]), 1);
	for (size_t i = 0; i < sizeof(ro) / sizeof(ro[0]); i++)
		assert_int_equal(
			count_string(hezo_json_get_path(spec, "linux.readonlyPaths"), ro[i]), 1);
	assert_at(find_mount(spec, "/tmp", 0), "options",
		  "[\"nosuid\",\"nodev\",\"noexec\",\"mode=1777\",\"size=67108864\"]");
	assert_at(find_mount(spec, "/tmp", 0), "type", "\"tmpfs\"");
	assert_at(find_mount(spec, "/tmp", 0), "source", "\"tmpfs\"");
	assert_at(find_mount(spec, "/run", 0), "options",
		  "[\"nosuid\",\"nodev\",\"noexec\",\"mode=1777\",\"size=16777216\"]");
	assert_non_null(find_mount(spec, "/var/run", 0));
	assert_non_null(find_mount(spec, "/var/tmp", 0));
	assert_null(find_mount(spec, "/run", 1));
	assert_null(find_mount(spec, "/tmp", 1));
	/* The engine's own /dev stays. */
	assert_at(find_mount(spec, "/dev", 0), "type", "\"tmpfs\"");
	HEZO_JSON_FOREACH (i, mounts) {
		struct hezo_json *m = mounts->items[i];
		const char *type = hezo_json_string(hezo_json_get(m, "type"));
		if (type && (strcmp(type, "sysfs") == 0 || strcmp(type, "cgroup") == 0)) {
			assert_int_equal(count_string(hezo_json_get(m, "options"), "ro"), 1);
			assert_int_equal(count_string(hezo_json_get(m, "options"), "rw"), 0);
		}
	}
}

static void test_docker_default(void **state)
{
	struct fix *f = *state;
	_cleanup_json_ struct hezo_json *spec = load_data("config-docker.json");
	_cleanup_policy_ struct hezo_policy *p = policy_for(f->root, NULL, NULL);
	_cleanup_free_ char *seccomp_before = NULL, *seccomp_after = NULL, *src = NULL;

	place_engine_files(spec, f->root);
	seccomp_before = json_text(hezo_json_get_path(spec, "linux.seccomp"));
	apply_ok(p, spec);
	assert_box(spec);
	/* Docker sent a profile: it is kept as it was. */
	seccomp_after = json_text(hezo_json_get_path(spec, "linux.seccomp"));
	assert_string_equal(seccomp_before, seccomp_after);
	assert_at(spec, "linux.resources.memory",
		  "{\"disableOOMKiller\":false,\"limit\":2147483648,\"swap\":2147483648}");
	/* runsc too: the workload's 256 (shim/runsc-pids.c sizes the host's limit from it). */
	assert_at(spec, "linux.resources.pids", "{\"limit\":256}");
	assert_at(spec, "linux.resources.cpu", "{\"shares\":0,\"period\":100000,\"quota\":200000}");
	assert_at(spec, "linux.resources.blockIO", "{\"weight\":0}");
	/* Engine files are allowed onto their fixed destinations, sources resolved. */
	src = json_text(hezo_json_get(find_mount(spec, "/etc/hosts", 0), "source"));
	assert_non_null(strstr(src, f->root));
	assert_non_null(strstr(src, "/var/lib/docker/containers/"));
}

static void test_apply_is_idempotent(void **state)
{
	struct fix *f = *state;
	_cleanup_json_ struct hezo_json *spec = load_data("config-docker-privileged.json");
	_cleanup_policy_ struct hezo_policy *p = policy_for(f->root, NULL, NULL);
	_cleanup_free_ char *once = NULL, *twice = NULL;

	place_engine_files(spec, f->root);
	apply_ok(p, spec);
	once = json_text(spec);
	apply_ok(p, spec);
	twice = json_text(spec);
	assert_string_equal(once, twice);
}

static void test_docker_flags(void **state)
{
	struct fix *f = *state;
	_cleanup_json_ struct hezo_json *spec = load_data("config-docker-flags.json");
	_cleanup_json_ struct hezo_json *copy = NULL;
	_cleanup_policy_ struct hezo_policy *p = policy_for(f->root, NULL, NULL);
	_cleanup_policy_ struct hezo_policy *allow_tmp = policy_for(f->root, "\"/tmp\"", NULL);
	_cleanup_policy_ struct hezo_policy *runc =
		policy_for(f->root, "\"/tmp\"", DEV_RUNC ",\"resources\":{\"swap\":\"1g\"}");

	place_engine_files(spec, f->root);
	copy = hezo_json_clone(spec);
	/* -v /tmp:/host with no allowed sources. */
	apply_fails(p, spec, "mounts[7] (/host): bind source /tmp is not under an allowed root");

	hezo_json_free(spec);
	spec = hezo_json_clone(copy);
	apply_ok(allow_tmp, spec);
	assert_box(spec);
	assert_at(find_mount(spec, "/host", 0), "source", "\"/tmp\"");
	/* --memory 8g --memory-swap 16g: down to the policy's 2g, no swap. */
	assert_at(spec, "linux.resources.memory",
		  "{\"limit\":2147483648,\"swap\":2147483648,\"disableOOMKiller\":false}");
	/* --pids-limit 50 is stricter than the policy, under runsc as under runc. */
	assert_at(spec, "linux.resources.pids", "{\"limit\":50}");

	hezo_json_free(spec);
	spec = hezo_json_clone(copy);
	apply_ok(runc, spec);
	assert_at(spec, "linux.resources.pids", "{\"limit\":50}");
	/* 16g engine total is above limit + 1g of policy swap. */
	assert_at(spec, "linux.resources.memory",
		  "{\"limit\":2147483648,\"swap\":3221225472,\"disableOOMKiller\":false}");
}

static struct hezo_json *spec_with_resources(const char *res)
{
	struct hezo_json *spec = minimal_spec();
	struct hezo_json *r = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;

	assert_int_equal(hezo_json_parse(res, strlen(res), &r, &err), 0);
	assert_int_equal(hezo_json_set(hezo_json_get(spec, "linux"), "resources", r), 0);
	return spec;
}

static void check_resources(const struct hezo_policy *p, const char *in, const char *path,
			    const char *want)
{
	_cleanup_json_ struct hezo_json *spec = spec_with_resources(in);
	char full[128];

	apply_ok(p, spec);
	snprintf(full, sizeof(full), "linux.resources.%s", path);
	assert_at(spec, full, want);
}

static void test_memory_rules(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{" DEV_RUNC "}");
	_cleanup_policy_ struct hezo_policy *sw = parse_ok("{" DEV_RUNC ",\"resources\":"
							   "{\"swap\":\"1g\"}}");
	const char *m512 = "{\"limit\":536870912,\"swap\":536870912}";

	check_resources(p, "{}", "memory", "{\"limit\":2147483648,\"swap\":2147483648}");
	check_resources(p, "{\"memory\":{\"limit\":8589934592}}", "memory",
			"{\"limit\":2147483648,\"swap\":2147483648}");
	check_resources(p, "{\"memory\":{\"limit\":536870912}}", "memory", m512);
	/* Docker's default swap is twice the memory: the policy's 0 swap wins. */
	check_resources(p, "{\"memory\":{\"limit\":536870912,\"swap\":1073741824}}", "memory",
			m512);
	check_resources(p, "{\"memory\":{\"limit\":0}}", "memory.limit", "2147483648");
	check_resources(p, "{\"memory\":{\"limit\":-1,\"swap\":-1}}", "memory",
			"{\"limit\":2147483648,\"swap\":2147483648}");
	check_resources(p, "{\"memory\":{\"limit\":18446744073709551615}}", "memory.limit",
			"2147483648");
	check_resources(p, "{\"memory\":null}", "memory.limit", "2147483648");
	check_resources(sw, "{\"memory\":{\"limit\":536870912,\"swap\":1073741824}}", "memory",
			"{\"limit\":536870912,\"swap\":1073741824}");
	check_resources(sw, "{\"memory\":{\"limit\":536870912,\"swap\":-1}}", "memory",
			"{\"limit\":536870912,\"swap\":1610612736}");
	check_resources(sw, "{\"memory\":{\"limit\":536870912}}", "memory",
			"{\"limit\":536870912,\"swap\":1610612736}");
	/* The engine asked for no swap at all (swap == limit): kept. */
	check_resources(sw, "{\"memory\":{\"limit\":536870912,\"swap\":536870912}}", "memory",
			"{\"limit\":536870912,\"swap\":536870912}");
	/* Other memory fields are not ours. */
	check_resources(p, "{\"memory\":{\"reservation\":1000,\"swappiness\":60}}", "memory",
			"{\"reservation\":1000,\"swappiness\":60,\"limit\":2147483648,"
			"\"swap\":2147483648}");
}

static void test_pids_rules(void **state)
{
	_cleanup_policy_ struct hezo_policy *runc = parse_ok("{" DEV_RUNC "}");
	_cleanup_policy_ struct hezo_policy *runsc = parse_ok("{}");

	check_resources(runc, "{}", "pids", "{\"limit\":256}");
	check_resources(runc, "{\"pids\":{\"limit\":100}}", "pids", "{\"limit\":100}");
	check_resources(runc, "{\"pids\":{\"limit\":1000}}", "pids", "{\"limit\":256}");
	check_resources(runc, "{\"pids\":{\"limit\":0}}", "pids", "{\"limit\":256}");
	check_resources(runc, "{\"pids\":{\"limit\":-1}}", "pids", "{\"limit\":256}");
	check_resources(runsc, "{\"pids\":{\"limit\":100}}", "pids", "{\"limit\":100}");
	check_resources(runsc, "{\"pids\":{\"limit\":100000}}", "pids", "{\"limit\":256}");
}

static void test_cpu_rules(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *half = parse_ok("{\"resources\":{\"cpus\":0.5}}");

	check_resources(p, "{}", "cpu", "{\"period\":100000,\"quota\":200000}");
	check_resources(p, "{\"cpu\":{\"quota\":0,\"period\":0,\"shares\":512}}", "cpu",
			"{\"quota\":200000,\"period\":100000,\"shares\":512}");
	check_resources(p, "{\"cpu\":{\"quota\":-1}}", "cpu",
			"{\"quota\":200000,\"period\":100000}");
	check_resources(p, "{\"cpu\":{\"quota\":50000,\"period\":100000}}", "cpu",
			"{\"quota\":50000,\"period\":100000}");
	check_resources(p, "{\"cpu\":{\"quota\":400000,\"period\":100000}}", "cpu",
			"{\"quota\":200000,\"period\":100000}");
	/* 4 CPUs expressed over a 50 ms period: rescaled to 2 over the same period. */
	check_resources(p, "{\"cpu\":{\"quota\":200000,\"period\":50000}}", "cpu",
			"{\"quota\":100000,\"period\":50000}");
	check_resources(p, "{\"cpu\":{\"quota\":150000}}", "cpu",
			"{\"quota\":150000,\"period\":100000}");
	check_resources(half, "{\"cpu\":{\"cpus\":\"0-3\"}}", "cpu",
			"{\"cpus\":\"0-3\",\"period\":100000,\"quota\":50000}");
}

static void test_privileged(void **state)
{
	struct fix *f = *state;
	_cleanup_json_ struct hezo_json *spec = load_data("config-docker-privileged.json");
	_cleanup_json_ struct hezo_json *spec2 = NULL;
	_cleanup_policy_ struct hezo_policy *p = policy_for(f->root, NULL, NULL);
	_cleanup_policy_ struct hezo_policy *fuse =
		policy_for(f->root, NULL, "\"devices\":[\"/dev/fuse\"]");
	struct hezo_json *seccomp;
	char want[1024];

	place_engine_files(spec, f->root);
	assert_int_equal(hezo_json_get_path(spec, "process.capabilities.bounding")->len, 38);
	assert_true(hezo_json_get_path(spec, "linux.devices")->len > 50);
	assert_null(hezo_json_get_path(spec, "linux.seccomp"));
	spec2 = hezo_json_clone(spec);
	apply_ok(p, spec);
	assert_box(spec);
	seccomp = hezo_json_get_path(spec, "linux.seccomp");
	assert_non_null(seccomp);
	assert_at(seccomp, "defaultAction", "\"SCMP_ACT_ERRNO\"");
	assert_at(seccomp, "defaultErrnoRet", "1");

	/* An allowed device keeps its node and gets a cgroup rule of its own. */
	apply_ok(fuse, spec2);
	assert_int_equal(hezo_json_get_path(spec2, "linux.devices")->len, 1);
	assert_at(spec2, "linux.devices",
		  "[{\"path\":\"/dev/fuse\",\"type\":\"c\",\"major\":10,"
		  "\"minor\":229,\"fileMode\":384,\"uid\":0,\"gid\":0}]");
	snprintf(
		want, sizeof(want),
		"%s,{\"allow\":true,\"type\":\"c\",\"major\":10,\"minor\":229,\"access\":\"rwm\"}]",
		reset_devices);
	assert_at(spec2, "linux.resources.devices", want);
}

static void test_bind_refusals(void **state)
{
	struct fix *f = *state;
	_cleanup_free_ char *allowed = NULL, *allowed2 = NULL, *escape = NULL, *inner = NULL,
			    *link = NULL, *quoted = NULL, *engine = NULL, *outside = NULL,
			    *want = NULL;
	_cleanup_policy_ struct hezo_policy *p = NULL;
	struct hezo_json *spec;

	assert_true(asprintf(&allowed, "%s/srv/hezo", f->root) > 0);
	assert_true(asprintf(&allowed2, "%s/srv/hezo2", f->root) > 0);
	assert_true(asprintf(&inner, "%s/data", allowed) > 0);
	assert_true(asprintf(&escape, "%s/escape", allowed) > 0);
	assert_true(asprintf(&link, "%s/link", allowed) > 0);
	assert_true(asprintf(&engine, "%s/var/lib/docker/containers/abc/hosts", f->root) > 0);
	assert_true(asprintf(&outside, "%s/x", allowed2) > 0);
	mkdir_p(inner);
	mkdir_p(outside);
	mkdir_p(f->root);
	{
		_cleanup_free_ char *d = strdup(engine);
		*strrchr(d, '/') = '\0';
		mkdir_p(d);
		write_file(engine, "127.0.0.1 localhost\n");
	}
	assert_int_equal(symlink("/etc", escape), 0);
	assert_true(asprintf(&quoted, "\"%s\"", allowed) > 0);
	p = policy_for(f->root, quoted, NULL);

#define EXPECT_REFUSED(dest, type, src, opt, msg)                                                  \
	do {                                                                                       \
		spec = minimal_spec();                                                             \
		add_mount(spec, "/proc", "proc", "proc", NULL);                                    \
		add_mount(spec, dest, type, src, opt);                                             \
		apply_fails(p, spec, msg);                                                         \
		hezo_json_free(spec);                                                              \
	} while (0)

	EXPECT_REFUSED("/host", "bind", "/", "rbind",
		       "mounts[1] (/host): bind source / is not under an allowed root");
	/* No type, only the option, still a bind. */
	EXPECT_REFUSED("/host", NULL, "/", "rbind",
		       "mounts[1] (/host): bind source / is not under an allowed root");
	EXPECT_REFUSED("/host", "none", "/etc", "bind",
		       "mounts[1] (/host): bind source /etc is not under an allowed root");
	/* (Below /var/run the policy's tmpfs would drop the mount; use another place.) */
	EXPECT_REFUSED("/docker.sock", "bind", "/var/run/docker.sock", "rbind",
		       "mounts[1] (/docker.sock): bind source /var/run/docker.sock");
	/* Engine roots only for the engine's own files. */
	EXPECT_REFUSED("/docker.sock", "bind", engine, "rbind",
		       "mounts[1] (/docker.sock): bind source ");
	EXPECT_REFUSED("/etc/shadow", "bind", engine, "rbind", "is not under an allowed root");
	/* A symlink under the allowed root pointing out of it. */
	assert_true(asprintf(&want,
			     "bind source %s (resolves to /etc) is not under an allowed root",
			     escape) > 0);
	EXPECT_REFUSED("/data", "bind", escape, "rbind", want);
	/* Component-wise: /srv/hezo2 is not under /srv/hezo. */
	EXPECT_REFUSED("/data", "bind", outside, "rbind", "is not under an allowed root");
	EXPECT_REFUSED("/proc", "bind", inner, "rbind",
		       "mounts[1] (/proc): bind mounts onto /, /proc or /sys are not allowed");
	EXPECT_REFUSED("/sys/kernel", "bind", inner, "rbind", "onto /, /proc or /sys");
	EXPECT_REFUSED("//", "bind", inner, "rbind", "mounts[1] (/): bind mounts onto /");
	EXPECT_REFUSED("/data/../etc", "bind", inner, "rbind",
		       "mounts[1] (/data/../etc): destination is not an absolute path");
	EXPECT_REFUSED("data", "bind", inner, "rbind", "mounts[1] (data): destination");
	EXPECT_REFUSED("/data", "bind", "relative/dir", "rbind",
		       "bind source relative/dir is not an absolute path");
	EXPECT_REFUSED("/data", "bind", "/nonexistent/hezo/x", "rbind",
		       "mounts[1] (/data): bind source /nonexistent/hezo/x: No such file");
	EXPECT_REFUSED("/data", "bind", NULL, "rbind", "mounts[1] (/data): bind mount without");
	EXPECT_REFUSED("/data", "overlay", "overlay", NULL,
		       "mounts[1] (/data): mount type \"overlay\" is not allowed");
	EXPECT_REFUSED("/data", "ext4", "/dev/sda1", NULL, "mount type \"ext4\" is not allowed");
	EXPECT_REFUSED("/data", NULL, "x", NULL, "mounts[1] (/data): mount without a type");
}

static void test_bind_rewrite(void **state)
{
	struct fix *f = *state;
	_cleanup_free_ char *allowed = NULL, *data = NULL, *link = NULL, *quoted = NULL,
			    *want = NULL;
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *spec = minimal_spec();

	assert_true(asprintf(&allowed, "%s/srv/hezo", f->root) > 0);
	assert_true(asprintf(&data, "%s/data", allowed) > 0);
	assert_true(asprintf(&link, "%s/link", allowed) > 0);
	mkdir_p(data);
	assert_int_equal(symlink("data", link), 0);
	assert_true(asprintf(&quoted, "\"%s\"", allowed) > 0);
	p = policy_for(f->root, quoted, NULL);
	add_mount(spec, "/data", "bind", link, "rbind");
	add_mount(spec, "/tmp/sub", "bind", "/", "rbind");
	add_mount(spec, "/var/tmp", "tmpfs", "tmpfs", "size=1g");
	apply_ok(p, spec);
	assert_true(asprintf(&want, "\"%s\"", data) > 0);
	assert_at(find_mount(spec, "/data", 0), "source", want);
	/* Under a policy tmpfs: the engine's mount is dropped, the policy's takes its place. */
	assert_null(find_mount(spec, "/tmp/sub", 0));
	assert_at(find_mount(spec, "/var/tmp", 0), "options",
		  "[\"nosuid\",\"nodev\",\"noexec\",\"mode=1777\",\"size=16777216\"]");
	assert_null(find_mount(spec, "/var/tmp", 1));
}

static void set_namespaces(struct hezo_json *spec, const char *json)
{
	struct hezo_json *n = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;

	assert_int_equal(hezo_json_parse(json, strlen(json), &n, &err), 0);
	assert_int_equal(hezo_json_set(hezo_json_get(spec, "linux"), "namespaces", n), 0);
}

static void ns_case(const struct hezo_policy *p, const char *ns, const char *want)
{
	_cleanup_json_ struct hezo_json *spec = minimal_spec();

	set_namespaces(spec, ns);
	if (want)
		apply_fails(p, spec, want);
	else
		apply_ok(p, spec);
}

static void test_namespaces(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *hostnet =
		parse_ok("{\"namespaces\":{\"allowHost\":[\"network\",\"pid\",\"ipc\",\"uts\"]}}");
	_cleanup_policy_ struct hezo_policy *user =
		parse_ok("{\"namespaces\":{\"requireUser\":true}}");
	const char *no_net = "[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},"
			     "{\"type\":\"mount\"}]";
	const char *self_net = "[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},"
			       "{\"type\":\"mount\"},{\"type\":\"network\",\"path\":"
			       "\"/proc/self/ns/net\"}]";
	const char *all = "[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},"
			  "{\"type\":\"mount\"},{\"type\":\"network\"}]";

	ns_case(p, no_net, "linux.namespaces: host network namespace not allowed");
	ns_case(p, self_net, "linux.namespaces: host network namespace not allowed");
	ns_case(p,
		"[{\"type\":\"network\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},"
		"{\"type\":\"mount\"}]",
		"linux.namespaces: host pid namespace not allowed");
	ns_case(p,
		"[{\"type\":\"network\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},"
		"{\"type\":\"pid\"},{\"type\":\"mount\",\"path\":\"/proc/self/ns/mnt\"}]",
		"linux.namespaces: host mount namespace not allowed");
	ns_case(p, "[]", "linux.namespaces: host ");
	ns_case(p, "{}", "linux.namespaces: expected a list, got object");
	ns_case(p,
		"[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"},"
		"{\"type\":\"network\",\"path\":\"/nonexistent/netns\"}]",
		"linux.namespaces[4] (network): path /nonexistent/netns: No such file");
	ns_case(p, "[{\"type\":\"pid\"},{\"type\":\"bogus\"}]",
		"linux.namespaces[1]: unknown namespace type \"bogus\"");
	ns_case(p, "[{\"type\":\"cgroup\",\"path\":\"/proc/self/ns/cgroup\"},{\"type\":\"pid\"}]",
		"linux.namespaces: host cgroup namespace not allowed");
	ns_case(p, all, NULL);
	/* allowHost lets the host's be shared, by absence or by path; never the mount one. */
	ns_case(hostnet, no_net, NULL);
	ns_case(hostnet, self_net, NULL);
	ns_case(hostnet, "[{\"type\":\"pid\"}]", "linux.namespaces: host mount namespace not");
	ns_case(user, all, "linux.namespaces: a user namespace is required");
	ns_case(user,
		"[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"},"
		"{\"type\":\"network\"},{\"type\":\"user\",\"path\":\"/proc/self/ns/user\"}]",
		"linux.namespaces: a user namespace is required");
	ns_case(user,
		"[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":\"mount\"},"
		"{\"type\":\"network\"},{\"type\":\"user\"}]",
		NULL);
}

/* Joining another namespace (not the host's) by path is allowed. */
static void test_namespace_other_container(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	int pipefd[2];
	pid_t pid;
	char ok, doc[512];

	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c = unshare(CLONE_NEWNET) == 0 ? 'y' : 'n';
		if (write(pipefd[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &ok, 1), 1);
	close(pipefd[0]);
	if (ok == 'y') {
		snprintf(
			doc, sizeof(doc),
			"[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},"
			"{\"type\":\"mount\"},{\"type\":\"network\",\"path\":\"/proc/%d/ns/net\"}]",
			(int)pid);
		ns_case(p, doc, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (ok != 'y')
		skip();
}

static void test_podman(void **state)
{
	struct fix *f = *state;
	_cleanup_json_ struct hezo_json *spec = load_data("config-podman.json");
	_cleanup_policy_ struct hezo_policy *p = policy_for(f->root, NULL, NULL);
	struct hezo_json *net;

	place_engine_files(spec, f->root);
	assert_non_null(find_mount(spec, "/run/.containerenv", 0));
	/* The capture's netns file belonged to a pod long gone. */
	apply_fails(p, spec, "linux.namespaces[1] (network): path /run/netns/netns-");
	net = hezo_json_get_path(spec, "linux.namespaces")->items[1];
	hezo_json_remove(net, "path");
	apply_ok(p, spec);
	assert_box(spec);
	/* /run is the policy's tmpfs, so what podman put below it goes. */
	assert_null(find_mount(spec, "/run/.containerenv", 0));
	assert_at(spec, "linux.resources.pids", "{\"limit\":256}");
}

static void test_ctr(void **state)
{
	struct fix *f = *state;
	_cleanup_json_ struct hezo_json *spec = load_data("config-ctr.json");
	_cleanup_policy_ struct hezo_policy *p = policy_for(f->root, NULL, NULL);

	place_engine_files(spec, f->root);
	apply_ok(p, spec);
	assert_box(spec);
	/* ctr sent no profile: the built-in one is installed. */
	assert_at(spec, "linux.seccomp.defaultAction", "\"SCMP_ACT_ERRNO\"");
	/* ctr's own /dev/shm tmpfs is left alone. */
	assert_at(find_mount(spec, "/dev/shm", 0), "type", "\"tmpfs\"");
}

static void test_exec_process(void **state)
{
	_cleanup_json_ struct hezo_json *proc = load_data("process-docker-exec-privileged.json");
	_cleanup_json_ struct hezo_json *proc2 = hezo_json_clone(proc);
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *some =
		parse_ok("{\"capabilities\":[\"CAP_NET_BIND_SERVICE\",\"kill\"]}");
	_cleanup_error_ struct hezo_error *err = NULL;
	const char *both = "[\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"]";

	assert_int_equal(hezo_json_get_path(proc, "capabilities.bounding")->len, 38);
	assert_int_equal(hezo_policy_apply_process(p, proc, &err), 0);
	assert_no_caps(proc);
	assert_at(proc, "noNewPrivileges", "true");
	assert_at(proc, "args", "[\"true\"]");

	assert_int_equal(hezo_policy_apply_process(some, proc2, &err), 0);
	assert_at(proc2, "capabilities.bounding", both);
	assert_at(proc2, "capabilities.effective", both);
	assert_at(proc2, "capabilities.permitted", both);
	assert_at(proc2, "capabilities.ambient", "[]");
}

static void test_exec_process_errors(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	struct hezo_json *v = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	const char *bad = "{\"capabilities\":{\"bounding\":\"CAP_SYS_ADMIN\"}}";

	assert_int_equal(hezo_json_parse(bad, strlen(bad), &v, &err), 0);
	assert_true(hezo_policy_apply_process(p, v, &err) < 0);
	assert_non_null(strstr(err->msg, "process.capabilities.bounding: expected a list"));
	hezo_json_free(v);
}

static void update_case(const struct hezo_policy *p, const char *in, const char *want)
{
	_cleanup_json_ struct hezo_json *r = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *got = NULL;

	assert_int_equal(hezo_json_parse(in, strlen(in), &r, &err), 0);
	assert_int_equal(hezo_policy_apply_resources(p, r, &err), 0);
	got = json_text(r);
	if (strcmp(got, want) != 0)
		print_error("update %s\n  got  %s\n  want %s\n", in, got, want);
	assert_string_equal(got, want);
}

static void test_update(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_json_ struct hezo_json *docker = load_data("resources-docker-update.json");
	_cleanup_error_ struct hezo_error *err = NULL;

	/* docker update --memory 1g: memory kept, cpu's zeros mean "none" and get the policy. */
	assert_int_equal(hezo_policy_apply_resources(p, docker, &err), 0);
	assert_at(docker, "memory",
		  "{\"limit\":1073741824,\"reservation\":0,\"kernel\":0,\"swap\":1073741824}");
	assert_at(docker, "cpu", "{\"shares\":0,\"quota\":200000,\"period\":100000}");
	assert_null(hezo_json_get(docker, "pids"));

	update_case(p, "{\"memory\":{\"limit\":8589934592}}",
		    "{\"memory\":{\"limit\":2147483648,\"swap\":2147483648}}");
	update_case(p, "{\"cpu\":{\"shares\":512}}", "{\"cpu\":{\"shares\":512}}");

	/*
	 * Under the kernel's 1 ms minimum quota the period stretches instead: raising the quota
	 * alone would hand out a whole CPU (found by fuzz-resources).
	 */
	{
		_cleanup_policy_ struct hezo_policy *half =
			parse_ok("{\"resources\":{\"cpus\":0.5}}");

		update_case(half, "{\"cpu\":{\"quota\":1000,\"period\":1000}}",
			    "{\"cpu\":{\"quota\":1000,\"period\":2000}}");
		update_case(half, "{\"cpu\":{\"period\":1000}}",
			    "{\"cpu\":{\"period\":2000,\"quota\":1000}}");
		/* Period 1 µs rounds the policy's quota down to 0: the ratio must still hold. */
		update_case(half, "{\"cpu\":{\"period\":1}}",
			    "{\"cpu\":{\"period\":2000,\"quota\":1000}}");
		update_case(half, "{\"cpu\":{\"quota\":500,\"period\":100000}}",
			    "{\"cpu\":{\"quota\":1000,\"period\":200000}}");
	}
	update_case(p, "{\"blockIO\":{\"weight\":10}}", "{\"blockIO\":{\"weight\":10}}");
	update_case(p, "{\"pids\":{\"limit\":0}}", "{\"pids\":{\"limit\":256}}");
	update_case(p, "{\"pids\":{\"limit\":10}}", "{\"pids\":{\"limit\":10}}");
	update_case(p, "{\"memory\":{\"swap\":-1}}", "{\"memory\":{\"swap\":2147483648}}");
	update_case(p, "{\"memory\":{\"swap\":1048576}}", "{\"memory\":{\"swap\":1048576}}");
	update_case(p, "{\"cpu\":{\"period\":10000}}",
		    "{\"cpu\":{\"period\":10000,\"quota\":20000}}");
	update_case(p, "{\"cpu\":{\"quota\":900000}}",
		    "{\"cpu\":{\"quota\":200000,\"period\":100000}}");
	{
		struct hezo_json *v = NULL;
		const char *bad = "{\"memory\":{\"limit\":\"1g\"}}";
		assert_int_equal(hezo_json_parse(bad, strlen(bad), &v, &err), 0);
		assert_true(hezo_policy_apply_resources(p, v, &err) < 0);
		assert_non_null(strstr(err->msg, "resources.memory.limit: expected a number"));
		hezo_json_free(v);
	}
}

static void test_spec_shape_errors(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_json_ struct hezo_json *arr = hezo_json_new_array();
	struct hezo_json *spec;
	_cleanup_error_ struct hezo_error *err = NULL;

	assert_true(hezo_policy_apply_spec(p, arr, NULL, &err) < 0);
	assert_non_null(strstr(err->msg, "config.json: expected an object"));

	spec = minimal_spec();
	assert_int_equal(hezo_json_set(spec, "mounts", hezo_json_new_string("x")), 0);
	apply_fails(p, spec, "mounts: expected a list, got string");
	hezo_json_free(spec);

	spec = minimal_spec();
	assert_int_equal(
		hezo_json_set(hezo_json_get(spec, "linux"), "resources", hezo_json_new_array()), 0);
	apply_fails(p, spec, "linux.resources: expected an object, got array");
	hezo_json_free(spec);

	spec = spec_with_resources("{\"pids\":{\"limit\":\"many\"}}");
	apply_fails(p, spec, "linux.resources.pids.limit: expected a number, got string");
	hezo_json_free(spec);

	/* A process without capabilities gets empty sets: runc would keep everything. */
	spec = minimal_spec();
	apply_ok(p, spec);
	assert_no_caps(hezo_json_get(spec, "process"));
	hezo_json_free(spec);
}

/* ---- the built-in seccomp profile ---- */

static const char *const must_not_allow[] = {
	"mount",
	"umount2",
	"pivot_root",
	"ptrace",
	"kexec_load",
	"kexec_file_load",
	"bpf",
	"perf_event_open",
	"userfaultfd",
	"keyctl",
	"add_key",
	"request_key",
	"init_module",
	"finit_module",
	"delete_module",
	"open_by_handle_at",
	"name_to_handle_at",
	"setns",
	"unshare",
	"swapon",
	"swapoff",
	"reboot",
	"settimeofday",
	"clock_settime",
	"clock_adjtime",
	"adjtimex",
	"acct",
	"quotactl",
	"lookup_dcookie",
	"iopl",
	"ioperm",
	"syslog",
	"vhangup",
	"nfsservctl",
	"process_vm_readv",
	"process_vm_writev",
	"kcmp",
	"fanotify_init",
	"move_mount",
	"open_tree",
	"fsopen",
	"fsmount",
	"fspick",
	"mount_setattr",
	"pidfd_getfd",
	"io_uring_setup",
	"chroot",
	"create_module",
	"uselib",
	"_sysctl",
};

static uint32_t arch_of(const char *oci)
{
	char lower[32];
	size_t n = strlen(oci + 10);

	for (size_t i = 0; i <= n; i++)
		lower[i] = (char)((oci[10 + i] >= 'A' && oci[10 + i] <= 'Z') ? oci[10 + i] + 32
									     : oci[10 + i]);
	return seccomp_arch_resolve_name(lower);
}

static enum scmp_compare op_of(const char *s)
{
	static const struct {
		const char *name;
		enum scmp_compare op;
	} ops[] = {{"SCMP_CMP_EQ", SCMP_CMP_EQ}, {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(ops[i].name, s) == 0)
			return ops[i].op;
	fail_msg("unexpected op %s", s);
	return SCMP_CMP_EQ;
}

static void test_default_seccomp_profile(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_json_ struct hezo_json *spec = minimal_spec();
	struct hezo_json *prof, *arches, *syscalls, *allow;
	scmp_filter_ctx ctx;
	bool clone_rule = false, clone3_rule = false;
	size_t personality_rules = 0;

	apply_ok(p, spec);
	prof = hezo_json_get_path(spec, "linux.seccomp");
	assert_non_null(prof);
	arches = hezo_json_get(prof, "architectures");
	syscalls = hezo_json_get(prof, "syscalls");
#if defined(__x86_64__)
	assert_at(prof, "architectures", "[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\"]");
#endif
	allow = hezo_json_get(syscalls->items[0], "names");
	assert_true(allow->len > 200);
	for (size_t i = 0; i < sizeof(must_not_allow) / sizeof(must_not_allow[0]); i++) {
		HEZO_JSON_FOREACH (s, syscalls) {
			struct hezo_json *names = hezo_json_get(syscalls->items[s], "names");
			if (count_string(names, must_not_allow[i]))
				fail_msg("%s is in the default profile", must_not_allow[i]);
		}
	}
	assert_int_equal(count_string(allow, "read"), 1);
	assert_int_equal(count_string(allow, "execve"), 1);
	assert_int_equal(count_string(allow, "clone"), 0);

	/* Build the filter the way runc would (without loading it) to prove libseccomp takes it. */
	ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	assert_non_null(ctx);
	HEZO_JSON_FOREACH (a, arches) {
		uint32_t t = arch_of(hezo_json_string(arches->items[a]));
		assert_true(t != 0);
		int r = seccomp_arch_add(ctx, t);
		assert_true(r == 0 || r == -EEXIST);
	}
	HEZO_JSON_FOREACH (s, syscalls) {
		struct hezo_json *rule = syscalls->items[s];
		struct hezo_json *names = hezo_json_get(rule, "names");
		struct hezo_json *args = hezo_json_get(rule, "args");
		const char *action = hezo_json_string(hezo_json_get(rule, "action"));
		struct scmp_arg_cmp cmps[6];
		unsigned ncmp = 0;
		uint32_t act;

		if (strcmp(action, "SCMP_ACT_ALLOW") == 0) {
			act = SCMP_ACT_ALLOW;
		} else {
			int64_t e;
			assert_string_equal(action, "SCMP_ACT_ERRNO");
			assert_int_equal(hezo_json_get_int64(hezo_json_get(rule, "errnoRet"), &e),
					 0);
			act = SCMP_ACT_ERRNO((uint16_t)e);
		}
		HEZO_JSON_FOREACH (c, args) {
			uint64_t idx, v1, v2;
			struct hezo_json *cmp = args->items[c];
			assert_int_equal(hezo_json_get_uint64(hezo_json_get(cmp, "index"), &idx),
					 0);
			assert_int_equal(hezo_json_get_uint64(hezo_json_get(cmp, "value"), &v1), 0);
			assert_int_equal(hezo_json_get_uint64(hezo_json_get(cmp, "valueTwo"), &v2),
					 0);
			cmps[ncmp].arg = (unsigned)idx;
			cmps[ncmp].op = op_of(hezo_json_string(hezo_json_get(cmp, "op")));
			cmps[ncmp].datum_a = v1;
			cmps[ncmp].datum_b = v2;
			ncmp++;
		}
		HEZO_JSON_FOREACH (n, names) {
			const char *name = hezo_json_string(names->items[n]);
			int nr = seccomp_syscall_resolve_name(name);
			if (strcmp(name, "clone") == 0) {
				clone_rule = true;
				assert_int_equal(ncmp, 1);
				assert_int_equal(cmps[0].op, SCMP_CMP_MASKED_EQ);
				assert_true(cmps[0].datum_a == 0x7e020000ULL);
				assert_true(cmps[0].datum_b == 0);
			}
			if (strcmp(name, "clone3") == 0) {
				clone3_rule = true;
				assert_true(act == SCMP_ACT_ERRNO(ENOSYS));
			}
			if (strcmp(name, "personality") == 0)
				personality_rules++;
			if (nr == __NR_SCMP_ERROR)
				continue; /* a name only a non-native listed arch has */
			if (seccomp_rule_add_array(ctx, act, nr, ncmp, cmps) < 0)
				fail_msg("libseccomp refused the rule for %s", name);
		}
	}
	seccomp_release(ctx);
	assert_true(clone_rule);
	assert_true(clone3_rule);
	assert_int_equal(personality_rules, 5);
}

const struct CMUnitTest policy_apply_tests[] = {
	cmocka_unit_test_setup_teardown(test_docker_default, fix_setup, fix_teardown),
	cmocka_unit_test_setup_teardown(test_apply_is_idempotent, fix_setup, fix_teardown),
	cmocka_unit_test_setup_teardown(test_docker_flags, fix_setup, fix_teardown),
	cmocka_unit_test(test_memory_rules),
	cmocka_unit_test(test_pids_rules),
	cmocka_unit_test(test_cpu_rules),
	cmocka_unit_test_setup_teardown(test_privileged, fix_setup, fix_teardown),
	cmocka_unit_test_setup_teardown(test_bind_refusals, fix_setup, fix_teardown),
	cmocka_unit_test_setup_teardown(test_bind_rewrite, fix_setup, fix_teardown),
	cmocka_unit_test(test_namespaces),
	cmocka_unit_test(test_namespace_other_container),
	cmocka_unit_test_setup_teardown(test_podman, fix_setup, fix_teardown),
	cmocka_unit_test_setup_teardown(test_ctr, fix_setup, fix_teardown),
	cmocka_unit_test(test_exec_process),
	cmocka_unit_test(test_exec_process_errors),
	cmocka_unit_test(test_update),
	cmocka_unit_test(test_spec_shape_errors),
	cmocka_unit_test(test_default_seccomp_profile),
};
const size_t policy_apply_ntests = sizeof(policy_apply_tests) / sizeof(policy_apply_tests[0]);
