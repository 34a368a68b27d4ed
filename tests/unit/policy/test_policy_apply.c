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
#include <sys/prctl.h>
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

/*
 * What the shim would hand apply for the capture being tested (place_engine_files fills it):
 * the container's ID, a bundle, an ns_owner that finds nobody in a namespace, and a stand-in
 * dockerd for Docker's libnetwork-setkey hook. NULL env until then.
 */
static struct hezo_apply_env test_env;
static const struct hezo_apply_env *cur_env;
static char env_id[128], env_bundle[PATH_MAX], env_docker[PATH_MAX], env_podman[PATH_MAX];
static pid_t fake_dockerd = -1;

static int owner_nobody(void *data, const char *kind, const char *path, const char *named,
			char **owner, struct hezo_error **err)
{
	*owner = NULL;
	return 0;
}

static int fix_setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	/* Not under /tmp: a capture binds /tmp, and a source holding engine roots is refused. */
	f->root = strdup("/var/tmp/hezo-policy-test-XXXXXX");
	assert_non_null(f->root);
	assert_non_null(mkdtemp(f->root));
	*state = f;
	return 0;
}

static int fix_teardown(void **state)
{
	struct fix *f = *state;

	if (fake_dockerd > 0) {
		kill(fake_dockerd, SIGKILL);
		waitpid(fake_dockerd, NULL, 0);
	}
	fake_dockerd = -1;
	cur_env = NULL;
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
 * A copy of sleep named dir/dockerd, running as uid (after exec: it stays root until then),
 * its file owned by owner: its /proc/PID/exe is what Docker's hook names.
 */
static pid_t start_dockerd_as(const char *root, const char *dir, uid_t owner, uid_t uid)
{
	_cleanup_free_ char *bin = NULL, *cmd = NULL;
	char exe[PATH_MAX], link[64];
	pid_t pid;

	assert_true(asprintf(&bin, "%s/%s/dockerd", root, dir) > 0);
	assert_true(asprintf(&cmd, "mkdir -p '%s/%s' && cp /bin/sleep '%s' && chown %u '%s'", root,
			     dir, bin, (unsigned)owner, bin) > 0);
	assert_int_equal(system(cmd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (uid && setresuid(uid, uid, uid) < 0)
			_exit(126);
		execl(bin, "dockerd", "60", (char *)NULL);
		_exit(127);
	}
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	for (int i = 0; i < 200; i++) {
		ssize_t n = readlink(link, exe, sizeof(exe) - 1);
		if (n > 0 && (exe[n] = '\0', strcmp(exe, bin) == 0))
			return pid;
		usleep(10000);
	}
	fail_msg("fake dockerd did not start");
	return -1;
}

/* root's pidfile (ROOT/docker.pid, which policy_for names) says pid is dockerd. */
static void write_pidfile(const char *root, pid_t pid, mode_t mode)
{
	_cleanup_free_ char *file = NULL;
	char text[32];

	snprintf(text, sizeof(text), "%d\n", (int)pid);
	write_file_at(root, "docker.pid", text);
	assert_true(asprintf(&file, "%s/docker.pid", root) > 0);
	assert_int_equal(chmod(file, mode), 0);
}

/* The running dockerd as the policy's pidfile names it: root's, from a root-owned binary. */
static pid_t start_fake_dockerd(const char *root)
{
	pid_t pid = start_dockerd_as(root, "usr/bin", 0, 0);

	write_pidfile(root, pid, 0644);
	return pid;
}

/*
 * The capture's root.path, cgroupsPath and hooks name this engine's files and processes:
 * recreate them under root (Docker's layerdb mount-id, podman's containers.json, a bundle for a
 * relative rootfs, a running dockerd) and hand apply the env the shim would.
 */
static void place_engine_root(struct hezo_json *spec, const char *root)
{
	const char *path = hezo_json_string(hezo_json_get_path(spec, "root.path"));
	const char *cg = hezo_json_string(hezo_json_get_path(spec, "linux.cgroupsPath"));
	struct hezo_json *pre = hezo_json_get_path(spec, "hooks.prestart");
	_cleanup_free_ char *moved = NULL, *file = NULL;
	const char *id = cg ? strrchr(cg, '/') + 1 : "none";

	if (strncmp(id, "libpod-", 7) == 0)
		id += 7;
	snprintf(env_id, sizeof(env_id), "%s", id);
	snprintf(env_bundle, sizeof(env_bundle), "%s/bundle", root);
	mkdir_p(env_bundle);
	if (path && path[0] == '/') {
		const char *docker = "/var/lib/docker/overlay2/",
			   *podman = "/var/lib/containers/storage/overlay/";
		char layer[256];

		assert_true(asprintf(&moved, "%s%s", root, path) > 0);
		mkdir_p(moved);
		if (strncmp(path, docker, strlen(docker)) == 0) {
			snprintf(layer, sizeof(layer), "%s", path + strlen(docker));
			*strchr(layer, '/') = '\0';
			assert_true(asprintf(&file,
					     "%s/var/lib/docker/image/overlay2/layerdb/mounts/%s",
					     root, id) > 0);
			mkdir_p(file);
			write_file_at(file, "mount-id", layer);
		} else if (strncmp(path, podman, strlen(podman)) == 0) {
			_cleanup_free_ char *list = NULL;

			snprintf(layer, sizeof(layer), "%s", path + strlen(podman));
			*strchr(layer, '/') = '\0';
			assert_true(asprintf(&file,
					     "%s/var/lib/containers/storage/overlay-containers",
					     root) > 0);
			mkdir_p(file);
			assert_true(asprintf(&list,
					     "[{\"id\":\"other\",\"layer\":\"x\"},"
					     "{\"id\":\"%s\",\"layer\":\"%s\"}]",
					     id, layer) > 0);
			write_file_at(file, "containers.json", list);
		}
		assert_int_equal(hezo_json_set(hezo_json_get(spec, "root"), "path",
					       hezo_json_new_string(moved)),
				 0);
	} else if (path) {
		_cleanup_free_ char *rootfs = NULL;

		assert_true(asprintf(&rootfs, "%s/%s", env_bundle, path) > 0);
		mkdir_p(rootfs);
	}
	HEZO_JSON_FOREACH (i, pre) {
		char exe[64];

		if (fake_dockerd < 0)
			fake_dockerd = start_fake_dockerd(root);
		snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)fake_dockerd);
		assert_int_equal(hezo_json_set(pre->items[i], "path", hezo_json_new_string(exe)),
				 0);
	}
	snprintf(env_docker, sizeof(env_docker), "%s/var/lib/docker", root);
	snprintf(env_podman, sizeof(env_podman), "%s/var/lib/containers/storage", root);
	/* Each capture is its engine's own create: the shim finds its bundle an engine's. */
	test_env = (struct hezo_apply_env){.id = env_id,
					   .bundle = env_bundle,
					   .engine_bundle = true,
					   .ns_owner = owner_nobody,
					   .docker_root = env_docker,
					   .podman_root = env_podman};
	cur_env = &test_env;
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
	place_engine_root(spec, root);
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
			     "{\"mounts\":{\"engineRoots\":[%s],\"allowedSources\":[%s]},"
			     "\"cgroupParents\":[\"/docker\",\"/libpod_parent\",\"/hezo-test\"],"
			     "\"dockerPidFile\":\"%s/docker.pid\"%s%s}",
			     roots, allowed ? allowed : "", root, extra && extra[0] ? "," : "",
			     extra ? extra : "") > 0);
	return parse_ok(doc);
}

#define DEV_RUNC "\"mode\":\"dev\",\"backend\":\"runc\",\"allowBackends\":[\"runc\"]"

/* The engines' IDs of the captured containers: their engine files carry them. */
static const struct hezo_apply_env docker_env = {
	.id = "4e55eae8d64833952da980dfe0f2ce2bfeec449ecea3af114e30d0966d751fd9"};
static const struct hezo_apply_env privileged_env = {
	.id = "1134e34e56d96d16ff4e225729a1dca56040dd7f63355dd174448430f1d0b846"};
static const struct hezo_apply_env flags_env = {
	.id = "b714f9c822bd08c8bc99b38338ebd4bd37a7af4a3abb43bc979ce49f68177184"};
static const struct hezo_apply_env podman_env = {
	.id = "6c628b84094a17a172a142e6b2a6ef09f9c25bbec3a3930dadff94b848d9cdda"};

static void apply_env_ok(const struct hezo_policy *p, struct hezo_json *spec,
			 const struct hezo_apply_env *env)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	int r = hezo_policy_apply_spec(p, spec, cur_env ? cur_env : env, &err);

	if (r < 0)
		print_error("apply failed: %s\n", err ? err->msg : "?");
	assert_int_equal(r, 0);
}

static void apply_ok(const struct hezo_policy *p, struct hezo_json *spec)
{
	apply_env_ok(p, spec, NULL);
}

static void apply_env_fails(const struct hezo_policy *p, struct hezo_json *spec,
			    const struct hezo_apply_env *env, const char *want)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	int r = hezo_policy_apply_spec(p, spec, cur_env ? cur_env : env, &err);

	if (r == 0 || !err || !strstr(err->msg, want))
		print_error("apply: got %s, want %s\n", r == 0 ? "success" : err->msg, want);
	assert_true(r < 0);
	assert_non_null(strstr(err->msg, want));
}

static void apply_fails(const struct hezo_policy *p, struct hezo_json *spec, const char *want)
{
	apply_env_fails(p, spec, NULL, want);
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
		"/proc/slabinfo",
		"/proc/vmallocinfo",
		"/proc/key-users",
		"/sys/kernel/slab",
		"/sys/kernel/vmcoreinfo",
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
	apply_env_ok(p, spec, &docker_env);
	assert_box(spec);
	/* Docker sent a profile: the box's is its floor (ptrace and x32 are Docker's, not ours). */
	seccomp_after = json_text(hezo_json_get_path(spec, "linux.seccomp"));
	assert_string_not_equal(seccomp_before, seccomp_after);
	assert_non_null(strstr(seccomp_before, "\"ptrace\""));
	assert_null(strstr(seccomp_after, "\"ptrace\""));
	assert_non_null(strstr(seccomp_after, "\"read\""));
	assert_at(spec, "linux.seccomp.architectures", "[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\"]");
	assert_at(spec, "linux.seccomp.defaultAction", "\"SCMP_ACT_ERRNO\"");
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
	apply_env_ok(p, spec, &privileged_env);
	once = json_text(spec);
	apply_env_ok(p, spec, &privileged_env);
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
	apply_env_fails(p, spec, &flags_env,
			"mounts[7] (/host): bind source /tmp is not under an allowed root");

	hezo_json_free(spec);
	spec = hezo_json_clone(copy);
	apply_env_ok(allow_tmp, spec, &flags_env);
	assert_box(spec);
	assert_at(find_mount(spec, "/host", 0), "source", "\"/tmp\"");
	/* --memory 8g --memory-swap 16g: down to the policy's 2g, no swap. */
	assert_at(spec, "linux.resources.memory",
		  "{\"limit\":2147483648,\"swap\":2147483648,\"disableOOMKiller\":false}");
	/* --pids-limit 50 is stricter than the policy, under runsc as under runc. */
	assert_at(spec, "linux.resources.pids", "{\"limit\":50}");

	hezo_json_free(spec);
	spec = hezo_json_clone(copy);
	apply_env_ok(runc, spec, &flags_env);
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
		policy_for(f->root, NULL, "\"devices\":[\"/dev/zero\"]");
	struct hezo_json *seccomp;
	char want[1024];

	place_engine_files(spec, f->root);
	assert_int_equal(hezo_json_get_path(spec, "process.capabilities.bounding")->len, 38);
	assert_true(hezo_json_get_path(spec, "linux.devices")->len > 50);
	assert_null(hezo_json_get_path(spec, "linux.seccomp"));
	spec2 = hezo_json_clone(spec);
	apply_env_ok(p, spec, &privileged_env);
	assert_box(spec);
	seccomp = hezo_json_get_path(spec, "linux.seccomp");
	assert_non_null(seccomp);
	assert_at(seccomp, "defaultAction", "\"SCMP_ACT_ERRNO\"");
	assert_at(seccomp, "defaultErrnoRet", "1");

	/* An allowed device keeps its node and gets a cgroup rule of its own. */
	apply_env_ok(fuse, spec2, &privileged_env);
	assert_int_equal(hezo_json_get_path(spec2, "linux.devices")->len, 1);
	assert_at(spec2, "linux.devices",
		  "[{\"path\":\"/dev/zero\",\"type\":\"c\",\"major\":1,"
		  "\"minor\":5,\"fileMode\":438,\"uid\":0,\"gid\":0}]");
	snprintf(want, sizeof(want),
		 "%s,{\"allow\":true,\"type\":\"c\",\"major\":1,\"minor\":5,\"access\":\"rwm\"}]",
		 reset_devices);
	assert_at(spec2, "linux.resources.devices", want);
}

static void set_devices(struct hezo_json *spec, const char *json)
{
	struct hezo_json *d = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;

	assert_int_equal(hezo_json_parse(json, strlen(json), &d, &err), 0);
	assert_int_equal(hezo_json_set(hezo_json_get(spec, "linux"), "devices", d), 0);
}

/* A listed FIFO is kept as it is and needs no cgroup rule; a listed node without a type is not. */
static void test_device_types(void **state)
{
	struct fix *f = *state;
	_cleanup_policy_ struct hezo_policy *p =
		policy_for(f->root, NULL, "\"devices\":[\"/dev/test3\"]");
	struct hezo_json *spec = minimal_spec();
	char want[1024];

	set_devices(spec, "[{\"path\":\"/dev/test3\",\"type\":\"p\"},"
			  "{\"path\":\"/dev/other\",\"type\":\"p\"}]");
	apply_ok(p, spec);
	assert_at(spec, "linux.devices", "[{\"path\":\"/dev/test3\",\"type\":\"p\"}]");
	snprintf(want, sizeof(want), "%s]", reset_devices);
	assert_at(spec, "linux.resources.devices", want);
	hezo_json_free(spec);

	spec = minimal_spec();
	set_devices(spec, "[{\"path\":\"/dev/test3\",\"type\":\"x\"}]");
	apply_fails(p, spec,
		    "linux.devices[0] (/dev/test3): needs type c, u or b with major and minor, or "
		    "type p");
	hezo_json_free(spec);
}

/*
 * The backend makes the node from the entry's own numbers: a listed path must carry the host's
 * device at that path (red team pass 8: /dev/fuse as block 7:0 was the host's loop disk).
 */
static void test_device_numbers(void **state)
{
	struct fix *f = *state;
	_cleanup_policy_ struct hezo_policy *p =
		policy_for(f->root, NULL, "\"devices\":[\"/dev/zero\"]");
	struct hezo_json *spec = minimal_spec();

	set_devices(spec, "[{\"path\":\"/dev/zero\",\"type\":\"b\",\"major\":7,\"minor\":0}]");
	apply_fails(p, spec,
		    "linux.devices[0] (/dev/zero): block device 7:0 is not the host's device at "
		    "that path (character device 1:5)");
	hezo_json_free(spec);
	spec = minimal_spec();
	set_devices(spec, "[{\"path\":\"/dev/zero\",\"type\":\"c\",\"major\":1,\"minor\":3}]");
	apply_fails(
		p, spec,
		"linux.devices[0] (/dev/zero): character device 1:3 is not the host's device at "
		"that path (character device 1:5)");
	hezo_json_free(spec);
	spec = minimal_spec();
	set_devices(spec, "[{\"path\":\"/dev/zero\",\"type\":\"u\",\"major\":1,\"minor\":5}]");
	apply_ok(p, spec);
	assert_int_equal(hezo_json_get_path(spec, "linux.devices")->len, 1);
	hezo_json_free(spec);
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
	assert_true(asprintf(&want, "bind source %s is in an engine's state", engine) > 0);
	EXPECT_REFUSED("/etc/shadow", "bind", engine, "rbind", want);
	free(TAKE_PTR(want));
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

/* What a stand-in ns_owner answers, and what it was asked. */
static struct {
	int ret;
	const char *owner;
	char kind[16], path[64];
} owner_answer;

static int owner_fake(void *data, const char *kind, const char *path, const char *named,
		      char **owner, struct hezo_error **err)
{
	snprintf(owner_answer.kind, sizeof(owner_answer.kind), "%s", kind);
	snprintf(owner_answer.path, sizeof(owner_answer.path), "%s", path);
	*owner = owner_answer.owner ? strdup(owner_answer.owner) : NULL;
	if (owner_answer.ret < 0)
		return hezo_error_set(err, -owner_answer.ret, "process 42 sshd is in it");
	return 0;
}

/*
 * Joining another namespace (not the host's) by path: only one of hezo-shim's containers', or one
 * no process is in; a namespace of anything else is refused, and so is every one when nobody can
 * tell whose it is (no env).
 */
static void test_namespace_other_container(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	struct hezo_apply_env env = {.id = "c1", .ns_owner = owner_fake};
	int pipefd[2];
	pid_t pid;
	char ok, doc[512], path[64], want[512];

	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;

		/* Gone with the test binary even if an assertion skips the kill below, and never
		 * holding the runner's output pipe open. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pipefd[1], STDOUT_FILENO);
		dup2(pipefd[1], STDERR_FILENO);
		c = unshare(CLONE_NEWNET | CLONE_NEWIPC) == 0 ? 'y' : 'n';
		if (write(pipefd[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &ok, 1), 1);
	close(pipefd[0]);
	if (ok == 'y') {
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
		snprintf(doc, sizeof(doc),
			 "[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},"
			 "{\"type\":\"mount\"},{\"type\":\"network\",\"path\":\"%s\"}]",
			 path);
		cur_env = NULL;
		ns_case(p, doc, "linux.namespaces[4] (network): path /proc/");
		cur_env = &env;
		owner_answer.ret = -ESRCH;
		owner_answer.owner = NULL;
		snprintf(want, sizeof(want),
			 "linux.namespaces[4] (network): path %s is a namespace that processes of "
			 "no hezo-shim container are in (process 42 sshd is in it)",
			 path);
		ns_case(p, doc, want);
		assert_string_equal(owner_answer.kind, "net");
		/* Asked of the namespace the check holds open, not of the path again. */
		assert_true(strncmp(owner_answer.path, "/proc/self/fd/", 14) == 0);
		owner_answer.ret = 0;
		owner_answer.owner = "other-container";
		ns_case(p, doc, NULL);
		/*
		 * Nobody in it: only where an engine pins a container's namespace, never a
		 * /proc path (a thread-only namespace, or one whose process the owner missed).
		 */
		owner_answer.owner = NULL;
		snprintf(want, sizeof(want),
			 "linux.namespaces[4] (network): path %s: no process is in this namespace, "
			 "and it is not a pin an engine makes for a container (cni-UUID, "
			 "netns-UUID or UUID in /run/netns or /var/run/netns, cni-UUID in an "
			 "engine root's io.containerd.grpc.v1.cri/netns)",
			 path);
		ns_case(p, doc, want);
		/* Every kind is asked about, by its /proc name. */
		snprintf(doc, sizeof(doc),
			 "[{\"type\":\"pid\"},{\"type\":\"ipc\",\"path\":\"/proc/%d/ns/ipc\"},"
			 "{\"type\":\"uts\"},{\"type\":\"mount\"},{\"type\":\"network\"}]",
			 (int)pid);
		owner_answer.ret = -ESRCH;
		ns_case(p, doc, "linux.namespaces[1] (ipc): path /proc/");
		assert_string_equal(owner_answer.kind, "ipc");
		owner_answer.ret = 0;
		ns_case(p, doc, "linux.namespaces[1] (ipc): path /proc/");
		owner_answer.owner = "other-container";
		ns_case(p, doc, NULL);
		/* A namespace of another kind than the entry's type. */
		snprintf(
			doc, sizeof(doc),
			"[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},"
			"{\"type\":\"mount\"},{\"type\":\"network\",\"path\":\"/proc/%d/ns/ipc\"}]",
			(int)pid);
		snprintf(want, sizeof(want),
			 "linux.namespaces[4] (network): path /proc/%d/ns/ipc is a namespace of "
			 "kind "
			 "ipc, not network",
			 (int)pid);
		ns_case(p, doc, want);
		/* Not a namespace at all (opened without following it as a file: no FIFO hangs). */
		ns_case(p,
			"[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},"
			"{\"type\":\"mount\"},{\"type\":\"network\",\"path\":\"/etc/hostname\"}]",
			"linux.namespaces[4] (network): path /etc/hostname is not a namespace");
		cur_env = NULL;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (ok != 'y')
		skip();
}

/* This process's cgroup in the memory hierarchy, from /proc/self/cgroup. */
static void read_own_memory_cgroup(char **out)
{
	FILE *fp = fopen("/proc/self/cgroup", "re");
	char line[4096];

	*out = NULL;
	while (fp && fgets(line, sizeof(line), fp)) {
		char *c = strstr(line, ":memory:");
		if (c) {
			line[strcspn(line, "\n")] = '\0';
			*out = strdup(c + strlen(":memory:"));
		}
	}
	if (fp)
		fclose(fp);
}

/* cgroupsPath cg for container id, judged with env's driver and live cgroups (NULL: none). */
static void cg_env_case(const struct hezo_policy *p, const struct hezo_apply_env *base,
			const char *id, const char *cg, const char *want)
{
	_cleanup_json_ struct hezo_json *spec = minimal_spec();
	struct hezo_apply_env env = *base;

	env.id = id;
	if (cg)
		assert_int_equal(hezo_json_set(hezo_json_get(spec, "linux"), "cgroupsPath",
					       hezo_json_new_string(cg)),
				 0);
	cur_env = &env;
	if (want)
		apply_fails(p, spec, want);
	else
		apply_ok(p, spec);
	cur_env = NULL;
}

/* The same under --systemd-cgroup. */
static void cg_sd(const struct hezo_policy *p, const char *id, const char *cg, const char *want)
{
	const struct hezo_apply_env sd = {.systemd_cgroup = true};

	cg_env_case(p, &sd, id, cg, want);
}

static void cg_case(const struct hezo_policy *p, const char *id, const char *cg, const char *want)
{
	_cleanup_json_ struct hezo_json *spec = minimal_spec();
	struct hezo_apply_env env = {.id = id};

	if (cg)
		assert_int_equal(hezo_json_set(hezo_json_get(spec, "linux"), "cgroupsPath",
					       hezo_json_new_string(cg)),
				 0);
	cur_env = id ? &env : NULL;
	if (want)
		apply_fails(p, spec, want);
	else
		apply_ok(p, spec);
	/* Absent: written as the backends' own /ID, when the ID is known. */
	if (!cg && !want && id) {
		char def[PATH_MAX];
		snprintf(def, sizeof(def), "/%s", id);
		assert_string_equal(hezo_json_string(hezo_json_get_path(spec, "linux.cgroupsPath")),
				    def);
	} else if (!cg && !want)
		assert_null(hezo_json_get_path(spec, "linux.cgroupsPath"));
	cur_env = NULL;
}

/* The shapes the engines use, the ways out of them, and an existing cgroup that is busy. */
static void test_cgroups_path(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *narrow = parse_ok("{\"cgroupParents\":[\"/docker\"]}");
	_cleanup_free_ char *self = NULL, *busy = NULL, *doc = NULL;
	const char *id = "4e55eae8d648";
	char rel[PATH_MAX], want[PATH_MAX + 128];
	size_t len;

	cg_case(p, id, NULL, NULL); /* absent: /ID */
	cg_case(p, NULL, NULL, NULL);
	cg_case(p, id, "", NULL); /* "" is absent to the backends */
	cg_case(narrow, id, NULL,
		"linux.cgroupsPath \"/4e55eae8d648\": parent / is not in the policy's "
		"cgroupParents");
	cg_case(p, id, "/docker/4e55eae8d648", NULL);
	cg_sd(p, id, "system.slice:docker:4e55eae8d648", NULL);
	cg_sd(p, id, "machine.slice:libpod:4e55eae8d648", NULL);
	cg_case(p, id, "/libpod_parent/libpod-4e55eae8d648", NULL);
	cg_case(p, id, "/kubepods/burstable/pod1234/4e55eae8d648", NULL);
	cg_sd(p, id, "kubepods-burstable-pod1.slice:cri-containerd:4e55eae8d648", NULL);
	cg_case(p, id, "/default/4e55eae8d648", NULL);
	cg_case(p, id, "/4e55eae8d648", NULL);
	cg_case(p, id, "/some-other-cgroup",
		"linux.cgroupsPath \"/some-other-cgroup\": the cgroup's name is not the "
		"container's "
		"ID in an engine's form");
	/* The red team's: an ID that is an engine's parent cgroup, or inside a longer name. */
	cg_case(p, "dock", "/docker",
		"the cgroup's name is not the container's ID in an engine's form");
	cg_case(p, "4e55", "/docker/4e55eae8d648", "the cgroup's name is not the container's ID");
	cg_case(p, id, "/docker/x4e55eae8d648", "the cgroup's name is not the container's ID");
	cg_case(p, id, "/docker/4e55eae8d648.scope", "the cgroup's name is not the container's ID");
	cg_case(p, id, "/docker/evil-4e55eae8d648.scope",
		"the cgroup's name is not the container's ID");
	cg_sd(p, id, "system.slice:evil:4e55eae8d648",
	      "the cgroup's name is not the container's ID");
	cg_sd(p, id, "system.slice:crio:4e55eae8d648", NULL);
	/* A unit's name: systemd would put that unit's host processes in it (red team pass 6, F3).
	 */
	cg_case(p, "rt12f-svc.service", "/system.slice/rt12f-svc.service",
		"never a systemd unit's name such as X.service");
	cg_case(p, "session-1.scope", "/session-1.scope",
		"the cgroup's name is not the container's ID");
	cg_case(p, "x.socket", "/libpod_parent/libpod-x.socket",
		"the cgroup's name is not the container's ID");
	cg_sd(p, "x.service", "system.slice:docker:x.service", NULL);
	cg_case(p, id, "/docker/docker-4e55eae8d648.scope", NULL);
	cg_case(p, id, "/", "linux.cgroupsPath \"/\": not a clean absolute path");
	cg_case(p, id, "/docker/../4e55eae8d648", "not a clean absolute path");
	cg_case(p, id, "/docker//4e55eae8d648", "not a clean absolute path");
	cg_case(p, id, "/docker/./4e55eae8d648", "not a clean absolute path");
	cg_case(p, id, "/docker/4e55eae8d648/", "not a clean absolute path");
	cg_case(p, id, "docker/4e55eae8d648", "not a clean absolute path");
	cg_sd(p, id, "bogus:docker:4e55eae8d648", "not a clean slice:prefix:name");
	cg_case(p, id, "/docker/4e55eae8d648/..", "not a clean absolute path");
	cg_case(p, id, "/4e55eae8d648/sub",
		"the cgroup's name is not the container's ID in an engine's form");
	cg_case(p, id, "/user.slice/4e55eae8d648",
		"linux.cgroupsPath \"/user.slice/4e55eae8d648\": parent /user.slice is not in the "
		"policy's cgroupParents");
	cg_case(narrow, id, "/4e55eae8d648", "parent / is not in the policy's cgroupParents");
	cg_case(narrow, id, "/docker/4e55eae8d648", NULL);
	/* Without the ID nothing can be checked: refused. */
	cg_case(p, NULL, "/docker/4e55eae8d648", "is not the container's ID in an engine's form");

	assert_int_equal(hezo_policy_cgroup_path("kubepods-burstable-pod1.slice:cri-containerd:x",
						 true, rel, sizeof(rel)),
			 0);
	assert_string_equal(rel, "/kubepods.slice/kubepods-burstable.slice/"
				 "kubepods-burstable-pod1.slice/cri-containerd-x.scope");
	assert_int_equal(hezo_policy_cgroup_path(":docker:x", true, rel, sizeof(rel)), 0);
	assert_string_equal(rel, "/system.slice/docker-x.scope");
	/* Each form under its own driver only; a ".slice" name would be a slice, not a scope. */
	assert_int_equal(hezo_policy_cgroup_path(":docker:x", false, rel, sizeof(rel)), -EINVAL);
	assert_int_equal(hezo_policy_cgroup_path("/docker/x", true, rel, sizeof(rel)), -EINVAL);
	assert_int_equal(hezo_policy_cgroup_path("/a:b:c", false, rel, sizeof(rel)), 0);
	assert_string_equal(rel, "/a:b:c");
	assert_int_equal(
		hezo_policy_cgroup_path("system.slice:docker:x.slice", true, rel, sizeof(rel)),
		-EINVAL);

	/* This test's own memory cgroup has a process in it (us). */
	read_own_memory_cgroup(&self);
	if (!self || strcmp(self, "/") == 0 || strrchr(self, '/') == self) {
		skip();
		return;
	}
	busy = strdup(self);
	*strrchr(busy, '/') = '\0';
	assert_true(asprintf(&doc, "{\"cgroupParents\":[\"%s\"]}", busy) > 0);
	{
		_cleanup_policy_ struct hezo_policy *here = parse_ok(doc);

		len = strlen(strrchr(self, '/') + 1);
		assert_true(len > 0);
		snprintf(want, sizeof(want),
			 "linux.cgroupsPath \"%s\": the cgroup exists and has processes in it",
			 self);
		cg_case(here, strrchr(self, '/') + 1, self, want);
	}
	/* Empty itself, but this test's cgroup is below it: processes below count too. */
	if (strrchr(busy, '/') != busy) {
		_cleanup_free_ char *grand = strdup(busy), *pol = NULL;

		*strrchr(grand, '/') = '\0';
		assert_true(asprintf(&pol, "{\"cgroupParents\":[\"%s\"]}", grand) > 0);
		_cleanup_policy_ struct hezo_policy *up = parse_ok(pol);

		snprintf(want, sizeof(want),
			 "linux.cgroupsPath \"%s\": the cgroup exists and has processes below it",
			 busy);
		cg_case(up, strrchr(busy, '/') + 1, busy, want);
	}
}

/* The containers whose life test_cgroups_driver_and_nesting was asked about, and alpha's answer. */
static unsigned live_asked;
static bool alpha_alive;

static bool cg_live(const struct hezo_live_cgroup *l)
{
	live_asked++;
	return strcmp(l->id, "alpha") != 0 || alpha_alive;
}

/*
 * Judged as the backend's driver reads it (red team pass 8, F3): the systemd form only with
 * --systemd-cgroup, a path only without it. And no nesting (F2): not at, above or below a live
 * container's cgroup, and never an engine's parent (a cgroupParents entry) itself.
 */
static void test_cgroups_driver_and_nesting(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *mine =
		parse_ok("{\"cgroupParents\":[\"/hezo-none\", \"/hezo-none/pod1\"]}");
	const struct hezo_live_cgroup live[] = {
		{"alpha", "/hezo-none/alpha"},
		{"gamma", "/hezo-none/beta/gamma"},
		{"sd", "/system.slice/docker-sd.scope"},
	};
	const struct hezo_apply_env none = {0}, with = {.live_cgroups = live, .n_live_cgroups = 3},
				    sdwith = {.systemd_cgroup = true,
					      .live_cgroups = live,
					      .n_live_cgroups = 3},
				    lazy = {.live_cgroups = live,
					    .n_live_cgroups = 3,
					    .cgroup_live = cg_live};

	/* F3: the pairing, one line naming the field and the flag. */
	cg_case(p, "x1", "system.slice:docker:x1",
		"linux.cgroupsPath \"system.slice:docker:x1\": the systemd form slice:prefix:name, "
		"but the backend is not given --systemd-cgroup");
	cg_case(p, "x1", ":docker:x1", "the backend is not given --systemd-cgroup");
	cg_sd(p, "x1", "/docker/x1",
	      "linux.cgroupsPath \"/docker/x1\": a path, but the backend is given "
	      "--systemd-cgroup");
	cg_sd(p, "x1", "docker/x1", "not a clean slice:prefix:name (with --systemd-cgroup)");
	cg_sd(p, "x1", "system.slice:docker:x1", NULL);
	cg_sd(p, "x1.slice", "system.slice:docker:x1.slice", "not a clean slice:prefix:name");
	cg_case(p, "x1", "docker/x1", "not a clean absolute path");
	cg_case(p, "x1", "/docker/x1", NULL);

	/* F2: a cgroupParents entry as the leaf (Docker's /docker for ID docker). */
	cg_case(p, "docker", "/docker",
		"linux.cgroupsPath \"/docker\": /docker is itself in the policy's cgroupParents");
	cg_case(p, "kubepods", "/kubepods", "is itself in the policy's cgroupParents");
	cg_case(p, "default", "/default", "is itself in the policy's cgroupParents");
	cg_env_case(mine, &none, "pod1", "/hezo-none/pod1",
		    "/hezo-none/pod1 is itself in the policy's cgroupParents");
	cg_env_case(mine, &none, "x2", "/hezo-none/pod1/x2", NULL);

	/* F2: below, at or above a live container's cgroup. */
	cg_env_case(mine, &with, "beta", "/hezo-none/alpha/beta",
		    "linux.cgroupsPath \"/hezo-none/alpha/beta\": it is below container alpha's "
		    "cgroup /hezo-none/alpha (one's limits, pause and kill --all would reach the "
		    "other)");
	cg_env_case(mine, &with, "alpha", "/hezo-none/alpha",
		    "it is container alpha's cgroup /hezo-none/alpha");
	cg_env_case(mine, &with, "beta", "/hezo-none/beta",
		    "it is above container gamma's cgroup /hezo-none/beta/gamma");
	cg_env_case(mine, &with, "alphab", "/hezo-none/alphab", NULL); /* a prefix, not a parent */
	cg_env_case(mine, &with, "delta", "/hezo-none/delta", NULL);
	/* systemd's slices hold no scope below a scope: a live one's own unit is all it can hit. */
	cg_env_case(p, &sdwith, "x3", "system.slice:docker:x3", NULL);
	cg_env_case(p, &sdwith, "sd", "system.slice:docker:sd",
		    "it is container sd's cgroup /system.slice/docker-sd.scope");

	/* Life is asked only of a container whose cgroup nests with the new one, and counts. */
	alpha_alive = true;
	live_asked = 0;
	cg_env_case(mine, &lazy, "delta", "/hezo-none/delta", NULL);
	assert_int_equal(live_asked, 0);
	cg_env_case(mine, &lazy, "beta", "/hezo-none/alpha/beta",
		    "it is below container alpha's cgroup /hezo-none/alpha");
	assert_int_equal(live_asked, 1);
	alpha_alive = false;
	live_asked = 0;
	cg_env_case(mine, &lazy, "beta", "/hezo-none/alpha/beta", NULL);
	assert_int_equal(live_asked, 1);
}

static void root_case(const struct hezo_apply_env *env, const char *path, const char *want)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_json_ struct hezo_json *spec = minimal_spec();

	assert_int_equal(
		hezo_json_set(hezo_json_get(spec, "root"), "path", hezo_json_new_string(path)), 0);
	cur_env = env;
	if (want)
		apply_fails(p, spec, want);
	else
		apply_ok(p, spec);
	cur_env = NULL;
}

/* root.path: the bundle's own rootfs, or the engine's overlay for this very container. */
static void test_root_path(void **state)
{
	struct fix *f = *state;
	_cleanup_free_ char *bundle = NULL, *abs = NULL, *other = NULL, *link = NULL,
			    *dmerged = NULL, *dmounts = NULL, *pmerged = NULL, *pdir = NULL,
			    *droot = NULL, *proot = NULL;
	struct hezo_apply_env env = {.id = "c0ffee"};

	assert_true(asprintf(&bundle, "%s/bundle", f->root) > 0);
	assert_true(asprintf(&abs, "%s/rootfs", bundle) > 0);
	assert_true(asprintf(&other, "%s/other/merged", f->root) > 0);
	assert_true(asprintf(&link, "%s/escape", bundle) > 0);
	mkdir_p(abs);
	mkdir_p(other);
	assert_int_equal(symlink(other, link), 0);
	env.bundle = bundle;

	root_case(&env, "rootfs", NULL);
	root_case(&env, abs, NULL);
	root_case(&env, "escape", "root.path escape resolves to ");
	root_case(&env, "../other/merged", "neither inside the bundle nor the engine's root");
	root_case(&env, other, "neither inside the bundle nor the engine's root");
	root_case(&env, "/", "root.path /: neither inside the bundle");
	root_case(&env, "missing", "root.path missing: No such file");
	/* Without a bundle only a plain relative path is believed. */
	root_case(NULL, "rootfs", NULL);
	root_case(NULL, abs, "can be checked without the bundle");
	root_case(NULL, "a/../../b", "can be checked without the bundle");

	/* Docker: the layerdb names the merged dir of this container only. */
	assert_true(asprintf(&dmerged, "%s/docker/overlay2/m1/merged", f->root) > 0);
	assert_true(asprintf(&dmounts, "%s/docker/image/overlay2/layerdb/mounts/c0ffee", f->root) >
		    0);
	assert_true(asprintf(&droot, "%s/docker", f->root) > 0);
	assert_true(asprintf(&proot, "%s/storage", f->root) > 0);
	mkdir_p(dmerged);
	mkdir_p(dmounts);
	env.docker_root = droot;
	env.podman_root = proot;
	root_case(&env, dmerged, "neither inside the bundle");
	write_file_at(dmounts, "mount-id", "m2");
	root_case(&env, dmerged, "neither inside the bundle");
	write_file_at(dmounts, "mount-id", "m1");
	root_case(&env, dmerged, NULL);
	env.id = "deadbeef";
	root_case(&env, dmerged, "neither inside the bundle");
	env.id = "c0ffee";
	/* Only under the storage root Docker's configuration names: a look-alike tree is not. */
	env.docker_root = proot;
	root_case(&env, dmerged, "neither inside the bundle");
	env.docker_root = NULL;
	root_case(&env, dmerged, "neither inside the bundle");
	env.docker_root = droot;
	/* An ID the engine already runs is not taken over from another --root. */
	env.id_in_use = "the backend's state under /run/docker/runtime-runc/moby";
	root_case(&env, dmerged,
		  "it is Docker's root filesystem for container c0ffee, which "
		  "already runs (the backend's state under /run/docker/runtime-runc/moby)");
	env.id_in_use = NULL;

	/* podman: overlay-containers/containers.json gives the container's layer. */
	assert_true(asprintf(&pmerged, "%s/storage/overlay/l1/merged", f->root) > 0);
	assert_true(asprintf(&pdir, "%s/storage/overlay-containers", f->root) > 0);
	mkdir_p(pmerged);
	mkdir_p(pdir);
	write_file_at(pdir, "containers.json", "[{\"id\":\"c0ffee\",\"layer\":\"l2\"}]");
	root_case(&env, pmerged, "neither inside the bundle");
	write_file_at(pdir, "containers.json",
		      "[{\"id\":\"x\",\"layer\":\"l1\"},{\"id\":\"c0ffee\",\"layer\":\"l1\"}]");
	root_case(&env, pmerged, NULL);
	env.podman_root = droot;
	root_case(&env, pmerged, "neither inside the bundle");
	env.podman_root = proot;
	env.id_in_use = "podman's container";
	root_case(&env, pmerged,
		  "it is podman's root filesystem for container c0ffee, which "
		  "already runs (podman's container)");
	env.id_in_use = NULL;
	env.id = "x2";
	root_case(&env, pmerged, "neither inside the bundle");
}

static void hook_case(const struct hezo_policy *p, const struct hezo_apply_env *env,
		      const char *hooks, const char *want)
{
	_cleanup_json_ struct hezo_json *spec = minimal_spec();
	_cleanup_json_ struct hezo_json *h = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;

	assert_int_equal(hezo_json_parse(hooks, strlen(hooks), &h, &err), 0);
	assert_int_equal(hezo_json_set(spec, "hooks", TAKE_PTR(h)), 0);
	cur_env = env;
	if (want)
		apply_fails(p, spec, want);
	else
		apply_ok(p, spec);
	cur_env = NULL;
}

static void setkey_cases(const char *root, struct hezo_apply_env *env);

/* Hooks run as host root: only the admin's list and Docker's libnetwork-setkey for this ID. */
static void test_hooks(void **state)
{
	struct fix *f = *state;
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_policy_ struct hezo_policy *listed =
		parse_ok("{\"allowedHooks\":[\"/usr/libexec/oci/hooks.d/ok\"]}");
	static const char *const stages[] = {"prestart",       "createRuntime", "createContainer",
					     "startContainer", "poststart",	"poststop"};
	struct hezo_apply_env env = {.id = "c0ffee"};
	char doc[512], want[256];

	for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++) {
		snprintf(doc, sizeof(doc),
			 "{\"%s\":[{\"path\":\"/usr/libexec/oci/hooks.d/ok\"},"
			 "{\"path\":\"/bin/sh\",\"args\":[\"sh\"]}]}",
			 stages[i]);
		snprintf(want, sizeof(want),
			 "hooks.%s[0] (\"/usr/libexec/oci/hooks.d/ok\"): hooks run on the host as "
			 "root; this one is not in the policy's allowedHooks",
			 stages[i]);
		hook_case(p, &env, doc, want);
		snprintf(want, sizeof(want), "hooks.%s[1] (\"/bin/sh\")", stages[i]);
		hook_case(listed, &env, doc, want);
		snprintf(doc, sizeof(doc), "{\"%s\":[{\"path\":\"/usr/libexec/oci/hooks.d/ok\"}]}",
			 stages[i]);
		hook_case(listed, &env, doc, NULL);
	}
	hook_case(p, &env, "{}", NULL);
	hook_case(p, &env, "{\"prestart\":null}", NULL);
	hook_case(p, &env, "{\"bogus\":[]}", "hooks: unknown hook stage \"bogus\"");
	hook_case(p, &env, "{\"prestart\":{}}", "hooks.prestart: expected a list, got object");
	hook_case(p, &env, "{\"prestart\":[{\"args\":[]}]}",
		  "hooks.prestart[0]: path: expected a string");

	/* Docker's libnetwork-setkey: only the running dockerd, only Docker 20.10's args. */
	setkey_cases(f->root, &env);
}

#define SETKEY_ARGS                                                                                \
	"\"libnetwork-setkey\",\"-exec-root=/var/run/docker\",\"c0ffee\",\"8d713b06a5d8\""

static void setkey_case(const struct hezo_policy *p, const struct hezo_apply_env *env, pid_t pid,
			const char *args, const char *extra, bool ok)
{
	char doc[1024];

	snprintf(doc, sizeof(doc), "{\"prestart\":[{\"path\":\"/proc/%d/exe\",\"args\":[%s]%s}]}",
		 (int)pid, args, extra);
	hook_case(p, env, doc, ok ? NULL : "hooks.prestart[0] (\"/proc/");
}

static void setkey_cases(const char *root, struct hezo_apply_env *env)
{
	_cleanup_free_ char *pol = NULL;
	_cleanup_policy_ struct hezo_policy *p = NULL, *dflt = parse_ok("{}");
	char doc[512];
	pid_t other;

	assert_true(asprintf(&pol, "{\"dockerPidFile\":\"%s/docker.pid\"}", root) > 0);
	p = parse_ok(pol);
	assert_int_equal(chmod(root, 0755), 0); /* nobody's dockerd below must be able to run */
	fake_dockerd = start_fake_dockerd(root);
	setkey_case(p, env, fake_dockerd, SETKEY_ARGS, "", true);
	hook_case(p, NULL, "{}", NULL);
	setkey_case(p, NULL, fake_dockerd, SETKEY_ARGS, "", false);
	/* Another pidfile (the default /var/run/docker.pid) names some other process. */
	setkey_case(dflt, env, fake_dockerd, SETKEY_ARGS, "", false);
	env->id = "other";
	setkey_case(p, env, fake_dockerd, SETKEY_ARGS, "", false);
	env->id = "c0ffee";
	snprintf(doc, sizeof(doc),
		 "{\"poststart\":[{\"path\":\"/proc/%d/exe\",\"args\":[" SETKEY_ARGS "]}]}",
		 (int)fake_dockerd);
	hook_case(p, env, doc, "hooks.poststart[0]");
	/* The red team's shape: the ID somewhere, a shell's -c before it. */
	setkey_case(p, env, fake_dockerd, "\"libnetwork-setkey\",\"-c\",\"id\",\"c0ffee\"", "",
		    false);
	setkey_case(p, env, fake_dockerd, "\"libnetwork-setkey\",\"c0ffee\"", "", false);
	setkey_case(p, env, fake_dockerd,
		    "\"sh\",\"-exec-root=/var/run/docker\",\"c0ffee\",\"8d713b06a5d8\"", "", false);
	setkey_case(p, env, fake_dockerd,
		    "\"libnetwork-setkey\",\"-exec-root=x\",\"c0ffee\",\"8d713b06a5d8\"", "",
		    false);
	setkey_case(
		p, env, fake_dockerd,
		"\"libnetwork-setkey\",\"-exec-root=/var/run/docker\",\"c0ffee\",\"8D713B06A5D8\"",
		"", false);
	setkey_case(p, env, fake_dockerd, SETKEY_ARGS ",\"-c\"", "", false);
	setkey_case(p, env, fake_dockerd, SETKEY_ARGS, ",\"env\":[\"LD_PRELOAD=/tmp/x.so\"]",
		    false);
	/* A pidfile others may write is not believed. */
	write_pidfile(root, fake_dockerd, 0666);
	setkey_case(p, env, fake_dockerd, SETKEY_ARGS, "", false);
	write_pidfile(root, fake_dockerd, 0644);
	/* Not named dockerd: this test's own binary, even when the pidfile names it. */
	write_pidfile(root, getpid(), 0644);
	setkey_case(p, env, getpid(), SETKEY_ARGS, "", false);
	hook_case(p, env,
		  "{\"prestart\":[{\"path\":\"/proc/self/exe\",\"args\":[" SETKEY_ARGS "]}]}",
		  "hooks.prestart[0]");
	/* A dockerd binary nobody owns, running as root and named by the pidfile. */
	other = start_dockerd_as(root, "home/nobody", 65534, 0);
	write_pidfile(root, other, 0644);
	setkey_case(p, env, other, SETKEY_ARGS, "", false);
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	/* A root-owned dockerd binary run by nobody. */
	other = start_dockerd_as(root, "opt/bin", 0, 65534);
	write_pidfile(root, other, 0644);
	setkey_case(p, env, other, SETKEY_ARGS, "", false);
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	/* A root-owned binary that others may rewrite. */
	other = start_dockerd_as(root, "srv/bin", 0, 0);
	write_pidfile(root, other, 0644);
	setkey_case(p, env, other, SETKEY_ARGS, "", true);
	{
		_cleanup_free_ char *bin = NULL;

		assert_true(asprintf(&bin, "%s/srv/bin/dockerd", root) > 0);
		assert_int_equal(chmod(bin, 0757), 0);
		setkey_case(p, env, other, SETKEY_ARGS, "", false);
	}
	kill(other, SIGKILL);
	waitpid(other, NULL, 0);
	write_pidfile(root, fake_dockerd, 0644);
	setkey_case(p, env, fake_dockerd, SETKEY_ARGS, "", true);
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
	apply_env_fails(p, spec, &podman_env,
			"linux.namespaces[1] (network): path /run/netns/netns-");
	net = hezo_json_get_path(spec, "linux.namespaces")->items[1];
	hezo_json_remove(net, "path");
	apply_env_ok(p, spec, &podman_env);
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

static void update_live_case(const struct hezo_policy *p, const struct hezo_policy_live *live,
			     const char *in, const char *want)
{
	_cleanup_json_ struct hezo_json *r = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *got = NULL;

	assert_int_equal(hezo_json_parse(in, strlen(in), &r, &err), 0);
	assert_int_equal(hezo_policy_apply_resources(p, r, live, &err), 0);
	got = json_text(r);
	if (strcmp(got, want) != 0)
		print_error("update %s\n  got  %s\n  want %s\n", in, got, want);
	assert_string_equal(got, want);
}

static void update_case(const struct hezo_policy *p, const char *in, const char *want)
{
	update_live_case(p, NULL, in, want);
}

static void test_update(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");
	_cleanup_json_ struct hezo_json *docker = load_data("resources-docker-update.json");
	_cleanup_error_ struct hezo_error *err = NULL;

	/*
	 * docker update --memory 1g: memory kept; cpu's zeros are what runc skips, "unchanged",
	 * never the policy's ceiling (that undid an earlier, tighter --cpus).
	 */
	assert_int_equal(hezo_policy_apply_resources(p, docker, NULL, &err), 0);
	assert_at(docker, "memory",
		  "{\"limit\":1073741824,\"reservation\":0,\"kernel\":0,\"swap\":1073741824}");
	assert_at(docker, "cpu", "{\"shares\":0,\"quota\":0,\"period\":0}");
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
	update_case(p, "{\"pids\":{\"limit\":0}}", "{\"pids\":{\"limit\":0}}");
	update_case(p, "{\"pids\":{\"limit\":-1}}", "{\"pids\":{\"limit\":256}}");
	update_case(p, "{\"pids\":{\"limit\":10}}", "{\"pids\":{\"limit\":10}}");
	update_case(p, "{\"memory\":{\"swap\":-1}}", "{\"memory\":{\"swap\":2147483648}}");
	update_case(p, "{\"memory\":{\"swap\":1048576}}", "{\"memory\":{\"swap\":1048576}}");
	update_case(p, "{\"cpu\":{\"period\":10000}}",
		    "{\"cpu\":{\"period\":10000,\"quota\":20000}}");
	update_case(p, "{\"cpu\":{\"quota\":900000}}",
		    "{\"cpu\":{\"quota\":200000,\"period\":100000}}");
	update_case(p, "{\"cpu\":{\"quota\":-1}}",
		    "{\"cpu\":{\"quota\":200000,\"period\":100000}}");
	/*
	 * Issue 26.5: after `docker update --memory 64m` (and --cpus 0.5), Docker's
	 * `--memory-swap -1` sends limit 0: the box keeps its 64 MiB; what is left unchanged
	 * still bounds swap and a new period.
	 */
	{
		const struct hezo_policy_live live = {
			.memory_limit = 64 << 20, .cpu_quota = 50000, .cpu_period = 100000};
		const struct hezo_policy_live open = {
			.memory_limit = 8LL << 30, .cpu_quota = -1, .cpu_period = 100000};

		update_live_case(p, &live, "{\"memory\":{\"limit\":0,\"reservation\":0}}",
				 "{\"memory\":{\"limit\":0,\"reservation\":0}}");
		update_live_case(p, &live, "{\"memory\":{\"swap\":-1}}",
				 "{\"memory\":{\"swap\":67108864}}");
		update_live_case(p, &live, "{\"memory\":{\"limit\":0,\"swap\":1073741824}}",
				 "{\"memory\":{\"limit\":0,\"swap\":67108864}}");
		update_live_case(p, &live, "{\"memory\":{\"limit\":134217728}}",
				 "{\"memory\":{\"limit\":134217728,\"swap\":134217728}}");
		update_live_case(p, &live, "{\"cpu\":{\"period\":10000}}",
				 "{\"cpu\":{\"period\":10000,\"quota\":5000}}");
		/* A live value past the policy's (or none) is never followed. */
		update_live_case(p, &open, "{\"memory\":{\"swap\":-1}}",
				 "{\"memory\":{\"swap\":2147483648}}");
		update_live_case(p, &open, "{\"cpu\":{\"period\":10000}}",
				 "{\"cpu\":{\"period\":10000,\"quota\":20000}}");
	}
	{
		struct hezo_json *v = NULL;
		const char *bad = "{\"memory\":{\"limit\":\"1g\"}}";
		assert_int_equal(hezo_json_parse(bad, strlen(bad), &v, &err), 0);
		assert_true(hezo_policy_apply_resources(p, v, NULL, &err) < 0);
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
	cmocka_unit_test(test_cgroups_path),
	cmocka_unit_test(test_cgroups_driver_and_nesting),
	cmocka_unit_test_setup_teardown(test_root_path, fix_setup, fix_teardown),
	cmocka_unit_test_setup_teardown(test_hooks, fix_setup, fix_teardown),
	cmocka_unit_test_setup_teardown(test_podman, fix_setup, fix_teardown),
	cmocka_unit_test_setup_teardown(test_ctr, fix_setup, fix_teardown),
	cmocka_unit_test(test_exec_process),
	cmocka_unit_test(test_exec_process_errors),
	cmocka_unit_test(test_update),
	cmocka_unit_test(test_spec_shape_errors),
	cmocka_unit_test_setup_teardown(test_device_types, fix_setup, fix_teardown),
	cmocka_unit_test_setup_teardown(test_device_numbers, fix_setup, fix_teardown),
	cmocka_unit_test(test_default_seccomp_profile),
};
const size_t policy_apply_ntests = sizeof(policy_apply_tests) / sizeof(policy_apply_tests[0]);
