/* Unit tests for policy/mounts.c: where kernel filesystems may go, which mount options pass, and
 * whose engine files a container may have. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
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

#include "hezo-mountinfo.h"
#include "hezo-policy.h"
#include "test-policy.h"

#define ID_A	     "aaaa1111"
#define ID_B	     "bbbb2222"
#define DEV_RUNC_VOL "\"mode\":\"dev\",\"backend\":\"runc\",\"allowBackends\":[\"runc\"]"

static void mkdirs(const char *path)
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

/* A file (or, for a name ending in /, a directory) at root/rel. */
static char *place(const char *root, const char *rel)
{
	char *path = NULL;
	size_t n;

	assert_true(asprintf(&path, "%s/%s", root, rel) > 0);
	n = strlen(path);
	if (path[n - 1] == '/') {
		path[n - 1] = '\0';
		mkdirs(path);
	} else {
		_cleanup_free_ char *dir = strdup(path);
		*strrchr(dir, '/') = '\0';
		mkdirs(dir);
		write_file(path, "x\n");
	}
	return path;
}

/* opts: a comma-separated list ("" for none). */
static void add(struct hezo_json *spec, const char *dest, const char *type, const char *src,
		const char *opts)
{
	struct hezo_json *m = hezo_json_new_object();
	struct hezo_json *o;
	_cleanup_free_ char *copy = strdup(opts);
	char *save = NULL;

	assert_int_equal(hezo_json_set(m, "destination", hezo_json_new_string(dest)), 0);
	if (type)
		assert_int_equal(hezo_json_set(m, "type", hezo_json_new_string(type)), 0);
	if (src)
		assert_int_equal(hezo_json_set(m, "source", hezo_json_new_string(src)), 0);
	o = hezo_json_ensure_array(m, "options");
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save))
		assert_int_equal(hezo_json_append(o, hezo_json_new_string(w)), 0);
	assert_int_equal(hezo_json_append(hezo_json_ensure_array(spec, "mounts"), m), 0);
}

/* A mount whose one option holds a comma (what a JSON list can carry, and runc joins). */
static void add_opt(struct hezo_json *spec, const char *dest, const char *type, const char *opt)
{
	add(spec, dest, type, type, "");
	assert_int_equal(
		hezo_json_append(
			hezo_json_get(hezo_json_get(spec, "mounts")
					      ->items[hezo_json_get(spec, "mounts")->len - 1],
				      "options"),
			hezo_json_new_string(opt)),
		0);
}

static int run(const struct hezo_policy *p, struct hezo_json *spec,
	       const struct hezo_apply_env *env, char **msg)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	int r = hezo_policy_apply_spec(p, spec, env, &err);

	*msg = r < 0 && err ? strdup(err->msg) : NULL;
	return r;
}

static void expect_ok(const struct hezo_policy *p, struct hezo_json *spec,
		      const struct hezo_apply_env *env)
{
	_cleanup_free_ char *msg = NULL;
	int r = run(p, spec, env, &msg);

	if (r < 0)
		print_error("apply failed: %s\n", msg ? msg : "?");
	assert_int_equal(r, 0);
}

static void expect_refused(const struct hezo_policy *p, struct hezo_json *spec,
			   const struct hezo_apply_env *env, const char *want)
{
	_cleanup_free_ char *msg = NULL;
	int r = run(p, spec, env, &msg);

	if (r == 0 || !msg || !strstr(msg, want))
		print_error("apply: got %s, want %s\n", r == 0 ? "success" : msg, want);
	assert_true(r < 0);
	assert_non_null(strstr(msg, want));
	assert_null(strchr(msg, '\n'));
}

/* Docker's default set: the one list of kernel filesystems every test starts from. */
static struct hezo_json *docker_like_spec(void)
{
	struct hezo_json *spec = minimal_spec();

	add(spec, "/proc", "proc", "proc", "nosuid,noexec,nodev");
	add(spec, "/dev", "tmpfs", "tmpfs", "nosuid,strictatime,mode=755,size=65536k");
	add(spec, "/dev/pts", "devpts", "devpts",
	    "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620,gid=5");
	add(spec, "/sys", "sysfs", "sysfs", "nosuid,noexec,nodev,ro");
	add(spec, "/sys/fs/cgroup", "cgroup", "cgroup", "ro,nosuid,noexec,nodev");
	add(spec, "/dev/mqueue", "mqueue", "mqueue", "nosuid,noexec,nodev");
	add(spec, "/dev/shm", "tmpfs", "shm", "nosuid,noexec,nodev,mode=1777,size=67108864");
	return spec;
}

#define REFUSED(setup, want)                                                                       \
	do {                                                                                       \
		struct hezo_json *spec = docker_like_spec();                                       \
		setup;                                                                             \
		expect_refused(p, spec, NULL, want);                                               \
		hezo_json_free(spec);                                                              \
	} while (0)

#define ACCEPTED(setup)                                                                            \
	do {                                                                                       \
		struct hezo_json *spec = docker_like_spec();                                       \
		setup;                                                                             \
		expect_ok(p, spec, NULL);                                                          \
		hezo_json_free(spec);                                                              \
	} while (0)

static void test_kernel_fs_places(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");

	ACCEPTED((void)0);
	/* The red team's second procfs: unmasked, writable core_pattern and sysrq-trigger. */
	REFUSED(add(spec, "/p2", "proc", "proc", ""),
		"mounts[7] (/p2): a proc mount is allowed only at /proc");
	REFUSED(add(spec, "/proc", "proc", "proc", ""),
		"mounts[7] (/proc): a second proc mount at /proc is not allowed");
	REFUSED(add(spec, "/s2", "sysfs", "sysfs", "ro"),
		"mounts[7] (/s2): a sysfs mount is allowed only at /sys");
	REFUSED(add(spec, "/sys", "sysfs", "sysfs", "ro"), "a second sysfs mount at /sys");
	REFUSED(add(spec, "/cg", "cgroup", "cgroup", "ro"),
		"mounts[7] (/cg): a cgroup mount is allowed only at /sys/fs/cgroup");
	REFUSED(add(spec, "/sys/fs/cgroup/x", "cgroup2", "cgroup2", ""),
		"a cgroup2 mount is allowed only at /sys/fs/cgroup");
	/* cgroup and cgroup2 share the one place. */
	REFUSED(add(spec, "/sys/fs/cgroup", "cgroup2", "cgroup2", ""),
		"mounts[7] (/sys/fs/cgroup): a second cgroup2 mount at /sys/fs/cgroup");
	REFUSED(add(spec, "/mq", "mqueue", "mqueue", ""),
		"a mqueue mount is allowed only at /dev/mqueue");
	REFUSED(add(spec, "/dev/mqueue", "mqueue", "mqueue", ""), "a second mqueue mount");
	REFUSED(add(spec, "/dev/pts2", "devpts", "devpts", "newinstance"),
		"mounts[7] (/dev/pts2): a devpts mount is allowed only at /dev/pts");
	REFUSED(add(spec, "/dev/pts", "devpts", "devpts", "newinstance"), "a second devpts mount");
	/* Spelled otherwise, still the same place. */
	REFUSED(add(spec, "//proc/", "proc", "proc", ""), "a second proc mount at /proc");
	/* Under a policy tmpfs a mount is dropped, whatever its type: nothing to refuse. */
	{
		struct hezo_json *spec = docker_like_spec();
		add(spec, "/tmp/p2", "proc", "proc", "");
		expect_ok(p, spec, NULL);
		HEZO_JSON_FOREACH (i, hezo_json_get(spec, "mounts")) {
			const char *d = hezo_json_string(hezo_json_get(
				hezo_json_get(spec, "mounts")->items[i], "destination"));
			assert_string_not_equal(d, "/tmp/p2");
		}
		hezo_json_free(spec);
	}
	/*
	 * cgroup2 alone at its place is fine in a cgroup namespace of the box's own; without one
	 * runc mounts the host's whole unified tree (red team pass 12, part Q2, L1).
	 */
	{
		struct hezo_json *spec = minimal_spec();
		struct hezo_json *nss =
			hezo_json_ensure_array(hezo_json_get(spec, "linux"), "namespaces");
		struct hezo_json *cg = hezo_json_new_object();

		add(spec, "/sys/fs/cgroup", "cgroup2", "cgroup", "rw,nosuid");
		expect_refused(p, spec, NULL,
			       "mounts[0] (/sys/fs/cgroup): a cgroup2 mount shows the host's whole "
			       "cgroup tree without a cgroup namespace of the box's own");
		assert_non_null(nss);
		assert_int_equal(hezo_json_set(cg, "type", hezo_json_new_string("cgroup")), 0);
		assert_int_equal(hezo_json_append(nss, cg), 0);
		expect_ok(p, spec, NULL);
		hezo_json_free(spec);
	}
}

/* The box's devpts instance: max=64, or the caller's lower max, once (docs/hardening.md, ptys). */
static const char *devpts_max(const struct hezo_policy *p, const char *extra)
{
	static char got[64];
	struct hezo_json *spec = docker_like_spec(), *mounts, *opts = NULL;
	int n = 0;

	mounts = hezo_json_get(spec, "mounts");
	for (size_t i = 0; i < mounts->len; i++)
		if (strcmp(hezo_json_string(hezo_json_get(mounts->items[i], "type")) ?: "",
			   "devpts") == 0)
			opts = hezo_json_get(mounts->items[i], "options");
	assert_non_null(opts);
	if (extra)
		assert_int_equal(hezo_json_append(opts, hezo_json_new_string(extra)), 0);
	expect_ok(p, spec, NULL);
	got[0] = '\0';
	for (size_t i = 0; i < opts->len; i++)
		if (strncmp(hezo_json_string(opts->items[i]), "max=", 4) == 0) {
			snprintf(got, sizeof(got), "%s", hezo_json_string(opts->items[i]));
			n++;
		}
	hezo_json_free(spec);
	assert_int_equal(n, 1);
	return got;
}

static void test_devpts_max(void **state)
{
	_cleanup_policy_ struct hezo_policy *p = parse_ok("{}");

	(void)state;
	assert_string_equal(devpts_max(p, NULL), "max=64");
	assert_string_equal(devpts_max(p, "max=1000000"), "max=64");
	assert_string_equal(devpts_max(p, "max=8"), "max=8");
}

static void test_mount_options(void **state)
{
	_cleanup_free_ char *dir = make_tempdir(), *quoted = NULL, *data = NULL, *doc = NULL;
	_cleanup_policy_ struct hezo_policy *p = NULL;

	assert_true(asprintf(&data, "%s/data", dir) > 0);
	mkdirs(data);
	assert_true(asprintf(&doc, "{\"mounts\":{\"allowedSources\":[\"%s\"]}}", dir) > 0);
	p = parse_ok(doc);

	/* The red team's remount of /sys after the sysfs entry, read-write. */
	REFUSED(add(spec, "/sys", "tmpfs", "x", "remount,nosuid,nodev,noexec"),
		"mounts[7] (/sys): mount option \"remount\" is not allowed: it changes the flags "
		"of a mount already there");
	REFUSED(add(spec, "/data", "tmpfs", "tmpfs", "remount"), "option \"remount\"");
	REFUSED(add(spec, "/data", "bind", data, "rbind,remount"), "option \"remount\"");
	REFUSED(add(spec, "/proc", "proc", "proc", "remount"), "option \"remount\"");
	/* Recursive attributes that lift a restriction from the mounts below. */
	REFUSED(add(spec, "/data", "bind", data, "rbind,rrw"),
		"mounts[7] (/data): mount option \"rrw\" is not allowed: it clears read-only");
	REFUSED(add(spec, "/data", "bind", data, "rbind,rsuid"), "option \"rsuid\"");
	REFUSED(add(spec, "/data", "bind", data, "rbind,rdev"), "option \"rdev\"");
	REFUSED(add(spec, "/data", "bind", data, "rbind,rexec"), "option \"rexec\"");
	REFUSED(add(spec, "/data", "bind", data, "rbind,rsymfollow"), "option \"rsymfollow\"");
	REFUSED(add(spec, "/data", "bind", data, "rbind,rshared"),
		"option \"rshared\" is not allowed: it propagates the container's mounts");
	REFUSED(add(spec, "/data", "bind", data, "rbind,shared"), "option \"shared\"");
	REFUSED(add(spec, "/data", "tmpfs", "tmpfs", "mand"), "option \"mand\"");
	/* The tightening ones and the neutral ones pass. */
	ACCEPTED(add(spec, "/data", "bind", data,
		     "rbind,rro,rnosuid,rnodev,rnoexec,rnosymfollow,rprivate,rnoatime,ro"));
	ACCEPTED(add(spec, "/data", "bind", data, "bind,rslave,runbindable,relatime"));
	ACCEPTED(add(spec, "/data", "tmpfs", "tmpfs",
		     "nosuid,nodev,size=50%,mode=1777,uid=1000,gid=1000,nr_inodes=4k,tmpcopyup"));
	ACCEPTED(add(spec, "/data", "tmpfs", "tmpfs", "nr_blocks=1024,noatime,defaults"));
	/* (In place of the engine's /proc, the first mount.) */
	ACCEPTED(hezo_json_remove_at(hezo_json_get(spec, "mounts"), 0);
		 add(spec, "/proc", "proc", "proc", "nosuid,hidepid=invisible,subset=pid"));
	/* Filesystem data only from the type's own list, and never a second one smuggled in. */
	REFUSED(add(spec, "/data", "tmpfs", "tmpfs", "huge=always"),
		"mounts[7] (/data): mount option \"huge=always\" is not allowed on a tmpfs mount");
	REFUSED(add_opt(spec, "/data", "tmpfs", "size=1m,huge=always"),
		"option \"size=1m,huge=always\" is not allowed on a tmpfs mount");
	REFUSED(add(spec, "/data", "tmpfs", "tmpfs", "mode=999"), "option \"mode=999\"");
	REFUSED(add(spec, "/data", "tmpfs", "tmpfs", "size="), "option \"size=\"");
	REFUSED(add(spec, "/data", "tmpfs", "tmpfs", "uid=-1"), "option \"uid=-1\"");
	REFUSED(add(spec, "/data", "tmpfs", "tmpfs", "size"), "option \"size\"");
	REFUSED(add(spec, "/data", "bind", data, "rbind,uid=0"),
		"option \"uid=0\" is not allowed on a bind mount");
	REFUSED(add(spec, "/data", "bind", data, "rbind,idmap"), "option \"idmap\"");
	REFUSED(add(spec, "/dev/pts", "devpts", "devpts", "max=1k"),
		"option \"max=1k\" is not allowed on a devpts mount");
	REFUSED(add(spec, "/dev/pts", "devpts", "devpts", "newinstance=1"),
		"option \"newinstance=1\"");
	REFUSED(add(spec, "/dev/mqueue", "mqueue", "mqueue", "size=1"),
		"is not allowed on a mqueue mount");
	REFUSED(add(spec, "/sys", "sysfs", "sysfs", "anything"), "on a sysfs mount");
	REFUSED(add(spec, "/sys/fs/cgroup", "cgroup", "cgroup", "cpu,memory"), "on a cgroup mount");
	REFUSED(add(spec, "/proc", "proc", "proc", "gid=0"), "option \"gid=0\"");
	/* Not a string. */
	{
		struct hezo_json *spec = docker_like_spec();
		struct hezo_json *mounts = hezo_json_get(spec, "mounts");
		assert_int_equal(hezo_json_append(hezo_json_get(mounts->items[0], "options"),
						  hezo_json_new_int(1)),
				 0);
		expect_refused(p, spec, NULL, "mounts[0] (/proc): options[3]: expected a string");
		hezo_json_free(spec);
	}
	/* sysfs and cgroup asked read-write still come out read-only. */
	{
		struct hezo_json *spec = minimal_spec();
		add(spec, "/sys", "sysfs", "sysfs", "rw,nosuid");
		add(spec, "/sys/fs/cgroup", "cgroup", "cgroup", "rw");
		expect_ok(p, spec, NULL);
		HEZO_JSON_FOREACH (i, hezo_json_get(spec, "mounts")) {
			struct hezo_json *m = hezo_json_get(spec, "mounts")->items[i];
			_cleanup_free_ char *o = json_text(hezo_json_get(m, "options"));
			if (strcmp(hezo_json_string(hezo_json_get(m, "type")), "tmpfs") == 0)
				continue;
			assert_null(strstr(o, "\"rw\""));
			assert_non_null(strstr(o, "\"ro\""));
		}
		hezo_json_free(spec);
	}
	remove_tree(dir);
}

/* ---- engine files ---- */

struct owners {
	const char *net, *ipc, *uts; /* owner ID per kind, NULL: no one */
	int fail;		     /* return this instead when set */
};

static int fake_ns_owner(void *data, const char *kind, const char *path, const char *named,
			 char **owner, struct hezo_error **err)
{
	struct owners *o = data;
	const char *who = NULL;

	(void)path;
	*owner = NULL;
	if (o->fail == -ESRCH)
		return -ESRCH;
	if (o->fail)
		return hezo_error_set(err, -o->fail, "cannot tell who holds %s", kind);
	if (strcmp(kind, "net") == 0)
		who = o->net;
	else if (strcmp(kind, "ipc") == 0)
		who = o->ipc;
	else if (strcmp(kind, "uts") == 0)
		who = o->uts;
	if (who) {
		*owner = strdup(who);
		assert_non_null(*owner);
	}
	return 0;
}

struct efix {
	char *root;
	pid_t child; /* holds new net, ipc and uts namespaces to name by path */
	char ns[3][64];
};

static int efix_setup(void **state)
{
	struct efix *f = calloc(1, sizeof(*f));
	int pipefd[2];
	char ok = 'n';

	if (!f)
		return -1;
	f->root = strdup("/var/tmp/hezo-mounts-test-XXXXXX");
	if (!f->root || !mkdtemp(f->root) || pipe2(pipefd, O_CLOEXEC) < 0)
		return -1;
	f->child = fork();
	if (f->child < 0)
		return -1;
	if (f->child == 0) {
		char c = unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) == 0 ? 'y' : 'n';
		if (write(pipefd[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &ok, 1) != 1 || ok != 'y') {
		kill(f->child, SIGKILL);
		waitpid(f->child, NULL, 0);
		f->child = -1;
	}
	close(pipefd[0]);
	snprintf(f->ns[0], sizeof(f->ns[0]), "/proc/%d/ns/net", (int)f->child);
	snprintf(f->ns[1], sizeof(f->ns[1]), "/proc/%d/ns/ipc", (int)f->child);
	snprintf(f->ns[2], sizeof(f->ns[2]), "/proc/%d/ns/uts", (int)f->child);
	*state = f;
	return 0;
}

static int efix_teardown(void **state)
{
	struct efix *f = *state;

	if (f->child > 0) {
		kill(f->child, SIGKILL);
		waitpid(f->child, NULL, 0);
	}
	remove_tree(f->root);
	free(f->root);
	free(f);
	return 0;
}

static struct hezo_policy *engine_policy(const char *root, const char *allowed)
{
	_cleanup_free_ char *doc = NULL;

	assert_true(asprintf(&doc,
			     "{\"mounts\":{\"engineRoots\":[\"%s/docker/containers\","
			     "\"%s/containers/storage\",\"%s/containerd\",\"%s/run/containerd\"],"
			     "\"allowedSources\":[%s]}}",
			     root, root, root, root, allowed ? allowed : "") > 0);
	return parse_ok(doc);
}

/* Join the child's namespaces of these kinds by path ("net,ipc,uts" or a part). */
static void join(struct hezo_json *spec, const struct efix *f, const char *kinds)
{
	static const char *const types[] = {"network", "ipc", "uts"};
	static const char *const names[] = {"net", "ipc", "uts"};
	struct hezo_json *nss = hezo_json_get_path(spec, "linux.namespaces");

	for (size_t k = 0; k < 3; k++) {
		if (!strstr(kinds, names[k]))
			continue;
		HEZO_JSON_FOREACH (i, nss) {
			struct hezo_json *n = nss->items[i];
			if (strcmp(hezo_json_string(hezo_json_get(n, "type")), types[k]) == 0)
				assert_int_equal(
					hezo_json_set(n, "path", hezo_json_new_string(f->ns[k])),
					0);
		}
	}
}

static void test_engine_files(void **state)
{
	struct efix *f = *state;
	_cleanup_policy_ struct hezo_policy *p = engine_policy(f->root, NULL);
	_cleanup_free_ char *a_hosts = place(f->root, "docker/containers/" ID_A "/hosts");
	_cleanup_free_ char *a_hostname = place(f->root, "docker/containers/" ID_A "/hostname");
	_cleanup_free_ char *a_resolv = place(f->root, "docker/containers/" ID_A "/resolv.conf");
	_cleanup_free_ char *a_shm = place(f->root, "docker/containers/" ID_A "/mounts/shm/");
	_cleanup_free_ char *a_log = place(f->root, "docker/containers/" ID_A "/" ID_A "-json.log");
	_cleanup_free_ char *b_hosts = place(f->root, "docker/containers/" ID_B "/hosts");
	_cleanup_free_ char *b_hostname = place(f->root, "docker/containers/" ID_B "/hostname");
	_cleanup_free_ char *b_shm = place(f->root, "docker/containers/" ID_B "/mounts/shm/");
	_cleanup_free_ char *pod_env = place(f->root, "containers/storage/overlay-containers/" ID_A
						      "/userdata/.containerenv");
	_cleanup_free_ char *pod_shm =
		place(f->root, "containers/storage/overlay-containers/" ID_A "/userdata/shm/");
	_cleanup_free_ char *cri_hosts =
		place(f->root, "containerd/io.containerd.grpc.v1.cri/sandboxes/" ID_A "/hosts");
	_cleanup_free_ char *cri_shm =
		place(f->root, "run/containerd/io.containerd.grpc.v1.cri/sandboxes/" ID_A "/shm/");
	_cleanup_free_ char *docker_root = NULL, *a_dir = NULL, *want = NULL, *above = NULL;
	_cleanup_free_ char *raw = NULL, *raw_rootfs = NULL;
	/* The shim's word for an engine's own create of A (its task or userdata bundle). */
	struct hezo_apply_env env_a = {.id = ID_A, .engine_bundle = true};
	/* A create under A's ID whose bundle is no engine's: A may be stopped (pass 5, F7). */
	struct hezo_apply_env env_raw = {.id = ID_A};
	struct owners owners = {0};
	struct hezo_apply_env env_c = {
		.id = "cccc3333", .ns_owner = fake_ns_owner, .data = &owners};
	struct hezo_json *spec;

	assert_true(asprintf(&docker_root, "%s/docker/containers", f->root) > 0);
	assert_true(asprintf(&a_dir, "%s/docker/containers/" ID_A, f->root) > 0);

#define ENGINE(env, dest, src, want)                                                               \
	do {                                                                                       \
		spec = minimal_spec();                                                             \
		add(spec, dest, "bind", src, "rbind,rprivate");                                    \
		if (want)                                                                          \
			expect_refused(p, spec, env, want);                                        \
		else                                                                               \
			expect_ok(p, spec, env);                                                   \
		hezo_json_free(spec);                                                              \
	} while (0)

	/* Each engine's own files of this container. */
	ENGINE(&env_a, "/etc/hosts", a_hosts, NULL);
	ENGINE(&env_a, "/etc/hostname", a_hostname, NULL);
	ENGINE(&env_a, "/etc/resolv.conf", a_resolv, NULL);
	ENGINE(&env_a, "/dev/shm", a_shm, NULL);
	ENGINE(&env_a, "/dev/shm", pod_shm, NULL);
	ENGINE(&env_a, "/etc/hosts", cri_hosts, NULL);
	ENGINE(&env_a, "/dev/shm", cri_shm, NULL);
	/* A stopped container's files go to no create under its ID but its engine's own. */
	raw_rootfs = place(f->root, "raw/rootfs/");
	assert_true(asprintf(&raw, "%s/raw", f->root) > 0);
	env_raw.bundle = raw;
	assert_true(asprintf(&want,
			     "mounts[0] (/etc/hosts): bind source is container " ID_A
			     "'s file for /etc/hosts, and this bundle (%s) is not an engine's own "
			     "bundle for " ID_A,
			     raw) > 0);
	ENGINE(&env_raw, "/etc/hosts", a_hosts, want);
	free(want);
	want = NULL;
	ENGINE(&env_raw, "/etc/resolv.conf", a_resolv, "is not an engine's own bundle for " ID_A);
	ENGINE(&env_raw, "/dev/shm", pod_shm, "is not an engine's own bundle for " ID_A);
	ENGINE(&env_raw, "/etc/hosts", cri_hosts, "is not an engine's own bundle for " ID_A);
	/* (/run is a policy tmpfs by default; .containerenv is judged where it is kept.) */
	{
		_cleanup_policy_ struct hezo_policy *norun = NULL;
		_cleanup_free_ char *doc = NULL;
		assert_true(asprintf(&doc,
				     "{\"tmpfs\":{\"/tmp\":\"1m\"},\"mounts\":{\"engineRoots\":"
				     "[\"%s/containers/storage\"]}}",
				     f->root) > 0);
		norun = parse_ok(doc);
		spec = minimal_spec();
		add(spec, "/run/.containerenv", "bind", pod_env, "bind");
		expect_ok(norun, spec, &env_a);
		hezo_json_free(spec);
		spec = minimal_spec();
		add(spec, "/etc/hosts", "bind", pod_env, "bind");
		expect_refused(norun, spec, &env_a, "is not a container's file for /etc/hosts");
		hezo_json_free(spec);
	}

	/* docker run -v /var/lib/docker/containers:/dev/shm, and every directory on the way. */
	assert_true(asprintf(&want,
			     "mounts[0] (/dev/shm): bind source %s is in an engine's state (%s) "
			     "and is not a container's file for /dev/shm",
			     docker_root, docker_root) > 0);
	ENGINE(&env_a, "/dev/shm", docker_root, want);
	ENGINE(&env_a, "/dev/shm", a_dir, "is not a container's file for /dev/shm");
	ENGINE(&env_a, "/etc/hosts", a_log, "is not a container's file for /etc/hosts");
	/* The right file at the wrong place. */
	ENGINE(&env_a, "/etc/hostname", a_hosts, "is not a container's file for /etc/hostname");
	ENGINE(&env_a, "/data", a_hosts, "is not a container's file for /data");
	/* Another container's file, joining none of its namespaces. */
	free(want);
	assert_true(asprintf(&want,
			     "mounts[0] (/etc/hosts): bind source %s is container " ID_B
			     "'s, not this container's nor that of a namespace it joins",
			     b_hosts) > 0);
	ENGINE(&env_a, "/etc/hosts", b_hosts, want);
	/* Nothing outside the document is trusted without an env. */
	ENGINE(NULL, "/etc/hosts", a_hosts, "this container's ID is not known");
	/* A directory above an engine root, even when allowedSources would take it. */
	{
		_cleanup_policy_ struct hezo_policy *wide = NULL;
		_cleanup_free_ char *q = NULL;
		assert_true(asprintf(&q, "\"%s\"", f->root) > 0);
		wide = engine_policy(f->root, q);
		assert_true(asprintf(&above, "%s/docker", f->root) > 0);
		spec = minimal_spec();
		add(spec, "/data", "bind", above, "rbind");
		expect_refused(wide, spec, &env_a, "holds an engine's state");
		hezo_json_free(spec);
		spec = minimal_spec();
		add(spec, "/data", "bind", docker_root, "rbind");
		expect_refused(wide, spec, &env_a, "is in an engine's state");
		hezo_json_free(spec);
	}

	if (f->child <= 0) {
		skip();
		return;
	}
	/* --network=container:B: B's hosts, resolv.conf and (Docker) hostname; not its shm. */
	owners = (struct owners){.net = ID_B};
	spec = minimal_spec();
	join(spec, f, "net");
	add(spec, "/etc/hosts", "bind", b_hosts, "rbind");
	add(spec, "/etc/hostname", "bind", b_hostname, "rbind");
	expect_ok(p, spec, &env_c);
	hezo_json_free(spec);
	spec = minimal_spec();
	join(spec, f, "net");
	add(spec, "/dev/shm", "bind", b_shm, "rbind");
	expect_refused(p, spec, &env_c, "is container " ID_B "'s, not this container's");
	hezo_json_free(spec);
	/* --ipc=container:B: B's shm. */
	owners = (struct owners){.ipc = ID_B};
	spec = minimal_spec();
	join(spec, f, "ipc");
	add(spec, "/dev/shm", "bind", b_shm, "rbind");
	expect_ok(p, spec, &env_c);
	hezo_json_free(spec);
	/* The namespace is someone else's: B's files stay B's. */
	owners = (struct owners){.net = ID_A, .ipc = ID_A};
	spec = minimal_spec();
	join(spec, f, "net,ipc");
	add(spec, "/dev/shm", "bind", b_shm, "rbind");
	expect_refused(p, spec, &env_c, "is container " ID_B "'s");
	hezo_json_free(spec);
	/* Nobody in it, or only processes of no container hezo knows. */
	owners = (struct owners){0};
	spec = minimal_spec();
	join(spec, f, "net");
	add(spec, "/etc/hosts", "bind", b_hosts, "rbind");
	expect_refused(p, spec, &env_c, "is container " ID_B "'s");
	hezo_json_free(spec);
	owners = (struct owners){.fail = -ESRCH};
	spec = minimal_spec();
	join(spec, f, "net");
	add(spec, "/etc/hosts", "bind", b_hosts, "rbind");
	expect_refused(p, spec, &env_c, "is container " ID_B "'s");
	hezo_json_free(spec);
	/* Cannot tell: fail closed, naming the mount. */
	owners = (struct owners){.fail = -EIO};
	spec = minimal_spec();
	join(spec, f, "net");
	add(spec, "/etc/hosts", "bind", b_hosts, "rbind");
	expect_refused(p, spec, &env_c, "mounts[0] (/etc/hosts): cannot tell who holds net");
	hezo_json_free(spec);
	/* Its own files, whoever holds the namespaces it joins. */
	owners = (struct owners){.net = ID_B, .ipc = ID_B, .uts = ID_B};
	spec = minimal_spec();
	join(spec, f, "net,ipc,uts");
	add(spec, "/etc/hosts", "bind", a_hosts, "rbind");
	expect_ok(p, spec,
		  &(struct hezo_apply_env){.id = ID_A,
					   .ns_owner = fake_ns_owner,
					   .data = &owners,
					   .engine_bundle = true});
	hezo_json_free(spec);
	/* uts owner hands hostname (a CRI pod's sandbox), not hosts. */
	owners = (struct owners){.uts = ID_B};
	spec = minimal_spec();
	join(spec, f, "uts");
	add(spec, "/etc/hostname", "bind", b_hostname, "rbind");
	expect_ok(p, spec, &env_c);
	hezo_json_free(spec);
	spec = minimal_spec();
	join(spec, f, "uts");
	add(spec, "/etc/hosts", "bind", b_hosts, "rbind");
	expect_refused(p, spec, &env_c, "is container " ID_B "'s");
	hezo_json_free(spec);
}

/* ---- kubelet pod volumes ---- */

#define UID_A "11111111-aaaa-4aaa-8aaa-111111111111"
#define UID_B "22222222-bbbb-4bbb-8bbb-222222222222"

/* An app container of pod UID_A whose sandbox is ID_A (containerd 1.6's CRI annotations). */
static struct hezo_json *pod_spec(const struct efix *f, const char *type, const char *uid)
{
	struct hezo_json *spec = minimal_spec();
	struct hezo_json *a = hezo_json_ensure_object(spec, "annotations");

	assert_non_null(a);
	assert_int_equal(
		hezo_json_set(a, "io.kubernetes.cri.container-type", hezo_json_new_string(type)),
		0);
	assert_int_equal(
		hezo_json_set(a, "io.kubernetes.cri.sandbox-id", hezo_json_new_string(ID_A)), 0);
	if (uid)
		assert_int_equal(hezo_json_set(a, "io.kubernetes.cri.sandbox-uid",
					       hezo_json_new_string(uid)),
				 0);
	join(spec, f, "net,ipc,uts");
	return spec;
}

static void test_kubelet_volumes(void **state)
{
	struct efix *f = *state;
	_cleanup_free_ char *doc = NULL, *kroot = NULL;
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_free_ char *token =
		place(f->root,
		      "kubelet/pods/" UID_A "/volumes/kubernetes.io~projected/kube-api-access-x/");
	_cleanup_free_ char *cm =
		place(f->root, "kubelet/pods/" UID_A "/volumes/kubernetes.io~configmap/cfg/");
	_cleanup_free_ char *empty =
		place(f->root, "kubelet/pods/" UID_A "/volumes/kubernetes.io~empty-dir/scratch/");
	_cleanup_free_ char *hosts = place(f->root, "kubelet/pods/" UID_A "/etc-hosts");
	_cleanup_free_ char *term =
		place(f->root, "kubelet/pods/" UID_A "/containers/app/0a1b2c3d");
	_cleanup_free_ char *plugins = place(f->root, "kubelet/pods/" UID_A "/plugins/x/");
	_cleanup_free_ char *poddir = place(f->root, "kubelet/pods/" UID_A "/volumes/");
	_cleanup_free_ char *other =
		place(f->root, "kubelet/pods/" UID_B "/volumes/kubernetes.io~secret/s/");
	struct owners owners = {.net = ID_A, .ipc = ID_A, .uts = ID_A};
	struct hezo_apply_env env = {
		.id = "cccc3333", .ns_owner = fake_ns_owner, .data = &owners, .pod_uid = UID_A};
	struct hezo_json *spec;

	assert_true(asprintf(&kroot, "%s/kubelet", f->root) > 0);
	assert_true(asprintf(&doc,
			     "{\"mounts\":{\"kubeletRoot\":\"%s\",\"allowedSources\":[\"%s\"]}}",
			     kroot, f->root) > 0);
	p = parse_ok(doc);
	*strrchr(poddir, '/') = '\0'; /* ROOT/pods/UID_A itself */
	if (f->child <= 0) {
		skip();
		return;
	}
#define KUBELET(type, uid, dest, src, want)                                                        \
	do {                                                                                       \
		spec = pod_spec(f, type, uid);                                                     \
		add(spec, dest, "bind", src, "rbind,rprivate");                                    \
		if (want)                                                                          \
			expect_refused(p, spec, &env, want);                                       \
		else                                                                               \
			expect_ok(p, spec, &env);                                                  \
		hezo_json_free(spec);                                                              \
	} while (0)

	/* kubelet's mounts for its own pod. */
	KUBELET("container", UID_A, "/var/run/secrets/kubernetes.io/serviceaccount", token, NULL);
	KUBELET("container", UID_A, "/etc/config", cm, NULL);
	KUBELET("container", UID_A, "/scratch", empty, NULL);
	KUBELET("container", UID_A, "/etc/hosts", hosts, NULL);
	KUBELET("container", UID_A, "/dev/termination-log", term, NULL);
	/* Another pod's, the pod directory, what is not a volume, the kubelet root: refused, even
	 * though allowedSources covers them. */
	KUBELET("container", UID_A, "/s", other,
		"is pod " UID_B "'s, not this container's pod " UID_A);
	KUBELET("container", UID_A, "/p", poddir, "is not a pod's volume");
	KUBELET("container", UID_A, "/p", plugins, "is not a pod's volume");
	KUBELET("container", UID_A, "/k", kroot, "is in the kubelet's directory");
	KUBELET("container", UID_A, "/k", f->root, "holds the kubelet's directory");
	/*
	 * The pod is the uid in its sandbox's record (env.pod_uid), the sandbox holding the netns;
	 * the container's own sandbox-uid annotation counts for nothing, whatever it claims.
	 */
	KUBELET("container", NULL, "/etc/config", cm, NULL);
	KUBELET("container", UID_B, "/etc/config", cm, NULL);
	KUBELET("container", UID_B, "/s", other,
		"is pod " UID_B "'s, not this container's pod " UID_A);
	env.pod_uid = NULL;
	KUBELET("container", UID_A, "/etc/config", cm, "no app container of a running pod sandbox");
	env.pod_uid = UID_A;
	KUBELET("sandbox", UID_A, "/etc/config", cm, "no app container of a running pod sandbox");
	owners = (struct owners){.net = ID_B};
	KUBELET("container", UID_A, "/etc/config", cm, "no app container of a running pod sandbox");
	owners = (struct owners){.fail = -ESRCH};
	KUBELET("container", UID_A, "/etc/config", cm, "no app container of a running pod sandbox");
	owners = (struct owners){.fail = -EIO};
	KUBELET("container", UID_A, "/etc/config", cm, "cannot tell who holds net");
	owners = (struct owners){.net = ID_A, .ipc = ID_A, .uts = ID_A};

	/* Below the policy's /var/run tmpfs the token is kept and mounted after the tmpfs; any
	 * other mount below it is still dropped, and another pod's volume there refused. */
	spec = pod_spec(f, "container", UID_A);
	add(spec, "/var/run/secrets/kubernetes.io/serviceaccount", "bind", token, "rbind,rprivate");
	add(spec, "/var/run/engine", "bind", f->root, "rbind");
	expect_ok(p, spec, &env);
	{
		const struct hezo_json *mounts = hezo_json_get(spec, "mounts");
		ssize_t tmpfs_at = -1, token_at = -1, engine_at = -1;

		HEZO_JSON_FOREACH (i, mounts) {
			const char *d =
				hezo_json_string(hezo_json_get(mounts->items[i], "destination"));

			if (strcmp(d, "/var/run") == 0)
				tmpfs_at = (ssize_t)i;
			else if (strcmp(d, "/var/run/secrets/kubernetes.io/serviceaccount") == 0)
				token_at = (ssize_t)i;
			else if (strcmp(d, "/var/run/engine") == 0)
				engine_at = (ssize_t)i;
		}
		assert_true(tmpfs_at >= 0);
		assert_true(token_at > tmpfs_at);
		assert_int_equal(engine_at, -1);
	}
	hezo_json_free(spec);
	KUBELET("container", UID_A, "/var/run/s", other,
		"is pod " UID_B "'s, not this container's pod " UID_A);
#undef KUBELET
}

/* ---- named volumes (policy/volumes.c) ---- */

/* A container of project (NULL: none) under a main policy whose volume store is root/volumes. */
static struct hezo_policy *volume_policy(const char *root, const char *project, const char *extra)
{
	_cleanup_policy_ struct hezo_policy *base = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *doc = NULL;
	struct hezo_policy *p = NULL;

	assert_true(asprintf(&doc,
			     "{" DEV_RUNC_VOL ",\"projectsDir\":\"%s/projects\",\"volumes\":{"
			     "\"roots\":[\"%s/volumes\"]%s},\"mounts\":{\"allowedSources\":[\"%s/"
			     "open\"]}}",
			     root, root, extra ? extra : "", root) > 0);
	base = parse_ok(doc);
	if (hezo_policy_for_container(base, NULL, project, &p, &err) < 0)
		fail_msg("for_container: %s", err->msg);
	return p;
}

static void expect_volume(const char *root, const char *project, const char *extra,
			  const char *src_rel, const char *want)
{
	_cleanup_policy_ struct hezo_policy *p = volume_policy(root, project, extra);
	_cleanup_json_ struct hezo_json *spec = minimal_spec();
	_cleanup_free_ char *src = NULL;
	static const struct hezo_apply_env env = {.id = "c1"};

	assert_true(asprintf(&src, "%s/%s", root, src_rel) > 0);
	add(spec, "/data", "bind", src, "rbind,rw");
	if (want)
		expect_refused(p, spec, &env, want);
	else
		expect_ok(p, spec, &env);
}

static void test_named_volumes(void **state)
{
	_cleanup_free_ char *root = make_tempdir(), *link = NULL, *target = NULL;
	static const char *const dirs[] = {
		"volumes/alpha_data/_data/", "volumes/beta_data/_data/",
		"volumes/alpha_b_x/_data/",  "volumes/shared_cache/_data/",
		"volumes/loose/_data/",	     "open/",
		"volumes/alpha_link/",	     "volumes/team-x/_data/"};
	static const char *const projects[] = {"alpha", "beta", "alpha_b"};

	(void)state;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		free(place(root, dirs[i]));
	for (size_t i = 0; i < sizeof(projects) / sizeof(projects[0]); i++) {
		_cleanup_free_ char *name = NULL;
		assert_true(asprintf(&name, "projects/%s.json", projects[i]) > 0);
		free(place(root, name));
		assert_true(asprintf(&target, "%s/%s", root, name) > 0);
		/* beta claims team-* besides its own beta_*. */
		write_file(target,
			   strcmp(projects[i], "beta") == 0
				   ? "{\"volumes\":{\"allow\":[\"{project}_*\",\"team-*\"]}}"
				   : "{}");
		free(target);
		target = NULL;
	}
	/* alpha_link/_data points into beta's volume: judged by where it leads. */
	assert_true(asprintf(&link, "%s/volumes/alpha_link/_data", root) > 0);
	assert_true(asprintf(&target, "%s/volumes/beta_data/_data", root) > 0);
	assert_int_equal(symlink(target, link), 0);

	/* A project's own: <project>_* by default. */
	expect_volume(root, "alpha", NULL, "volumes/alpha_data/_data", NULL);
	expect_volume(root, "alpha_b", NULL, "volumes/alpha_b_x/_data", NULL);
	/* Another project's, by the longest project name it starts with. */
	expect_volume(root, "alpha", NULL, "volumes/beta_data/_data",
		      "mounts[0] (/data): volume beta_data belongs to project beta; this "
		      "container's project is alpha");
	expect_volume(root, "alpha", NULL, "volumes/alpha_b_x/_data",
		      "volume alpha_b_x belongs to project alpha_b; this container's project is "
		      "alpha");
	expect_volume(root, "alpha", NULL, "volumes/alpha_link/_data",
		      "volume beta_data belongs to project beta");
	expect_volume(root, NULL, NULL, "volumes/alpha_data/_data",
		      "volume alpha_data belongs to project alpha; this container's project is "
		      "none");
	/* Nobody's: only by a pattern the admin wrote, even a pattern matching everything. */
	expect_volume(root, "alpha", NULL, "volumes/shared_cache/_data",
		      "volume shared_cache is not one of alpha's volumes (volumes.allow)");
	/* Without a project: a volume no project claims, by name or by its volumes.allow. */
	expect_volume(root, NULL, NULL, "volumes/loose/_data", NULL);
	expect_volume(root, NULL, NULL, "volumes/shared_cache/_data", NULL);
	expect_volume(
		root, NULL, NULL, "volumes/team-x/_data",
		"mounts[0] (/data): volume team-x is project beta's (its volumes.allow); this "
		"container has no project");
	expect_volume(root, "beta", NULL, "volumes/team-x/_data", NULL);
	expect_volume(root, "alpha", NULL, "volumes/team-x/_data",
		      "volume team-x is not one of alpha's volumes (volumes.allow)");
	expect_volume(root, NULL, ",\"allow\":[\"shared_*\"]", "volumes/shared_cache/_data", NULL);
	expect_volume(root, "beta", ",\"allow\":[\"*\"]", "volumes/alpha_data/_data",
		      "volume alpha_data belongs to project alpha");
	/* Everything else in the store stays refused, allowedSources or not. */
	expect_volume(root, "alpha", NULL, "volumes/alpha_data", "is in an engine's volume store");
	expect_volume(root, "alpha", NULL, "volumes/alpha_data/_data/../../beta_data/_data",
		      "volume beta_data belongs to project beta");
	expect_volume(root, "alpha", NULL, "volumes", "is in an engine's volume store");
	expect_volume(root, "alpha", NULL, "", "is not under an allowed root");
	expect_volume(root, "alpha", ",\"roots\":[\"/nonexistent/v\"]", "open", NULL);
	remove_tree(root);
}

/* Docker's --init: the policy's dockerInit at /sbin/docker-init, and only while root's alone. */
static void test_docker_init(void **state)
{
	_cleanup_free_ char *root = make_tempdir(), *init = place(root, "bin/docker-init"),
			    *fake = place(root, "other/docker-init"), *doc = NULL;
	_cleanup_policy_ struct hezo_policy *p = NULL, *none = NULL;
	static const struct hezo_apply_env env = {.id = "c1"};

	(void)state;
	if (geteuid() != 0)
		skip(); /* the file must be root's */
	write_file(init, "#!/bin/true\n");
	write_file(fake, "#!/bin/true\n");
	assert_int_equal(chmod(init, 0755), 0);
	assert_int_equal(chmod(fake, 0755), 0);
	assert_true(asprintf(&doc, "{" DEV_RUNC_VOL ",\"dockerInit\":\"%s\"}", init) > 0);
	p = parse_ok(doc);
	none = parse_ok("{" DEV_RUNC_VOL ",\"dockerInit\":null}");
	assert_value(none, "dockerInit", "null");
	{
		_cleanup_json_ struct hezo_json *spec = minimal_spec();
		_cleanup_free_ char *opts = NULL;
		const struct hezo_json *mounts;

		add(spec, "/sbin/docker-init", "bind", init, "bind,rw");
		expect_ok(p, spec, &env);
		mounts = hezo_json_get_path(spec, "mounts");
		for (size_t i = 0; i < mounts->len; i++)
			if (strcmp(hezo_json_string(hezo_json_get(mounts->items[i], "destination")),
				   "/sbin/docker-init") == 0)
				opts = json_text(hezo_json_get(mounts->items[i], "options"));
		assert_non_null(opts);
		assert_non_null(strstr(opts, "\"ro\""));
		assert_null(strstr(opts, "\"rw\""));
	}
	/* Another file named docker-init, or the init elsewhere: the ordinary rules. */
	{
		_cleanup_json_ struct hezo_json *spec = minimal_spec();
		add(spec, "/sbin/docker-init", "bind", fake, "bind,ro");
		expect_refused(p, spec, &env, "is not under an allowed root");
	}
	{
		_cleanup_json_ struct hezo_json *spec = minimal_spec();
		add(spec, "/usr/bin/docker-init", "bind", init, "bind,ro");
		expect_refused(p, spec, &env, "is not under an allowed root");
	}
	{
		_cleanup_json_ struct hezo_json *spec = minimal_spec();
		add(spec, "/sbin/docker-init", "bind", init, "bind,ro");
		expect_refused(none, spec, &env, "is not under an allowed root");
	}
	/* Writable by its group, or set-uid: not the engine's file as it ships. */
	for (size_t i = 0; i < 2; i++) {
		_cleanup_json_ struct hezo_json *spec = minimal_spec();

		assert_int_equal(chmod(init, i == 0 ? 0775 : 04755), 0);
		add(spec, "/sbin/docker-init", "bind", init, "bind,ro");
		expect_refused(p, spec, &env, "is the policy's dockerInit");
	}
	remove_tree(root);
}

static void test_volume_keys(void **state)
{
	_cleanup_free_ char *root = make_tempdir(), *path = NULL;
	_cleanup_policy_ struct hezo_policy *base = NULL, *p = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *doc = NULL;
	static const struct {
		const char *doc, *want;
	} bad[] = {
		{"{\"volumes\":[]}", "volumes: expected an object, got array"},
		{"{\"volumes\":{\"allow\":[\"a/b\"]}}",
		 "volumes.allow[0]: \"a/b\" is not a volume name pattern"},
		{"{\"volumes\":{\"roots\":[\"var/lib\"]}}",
		 "volumes.roots[0]: \"var/lib\" is not a clean absolute path below /"},
		{"{\"volumes\":{\"roots\":[\"/\"]}}", "is not a clean absolute path below /"},
		{"{\"volumes\":{\"mine\":true}}", "volumes: unknown key \"mine\""},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hezo_policy *q = NULL;
		struct hezo_error *e = NULL;
		assert_true(hezo_policy_parse(bad[i].doc, strlen(bad[i].doc), "t", &q, &e) < 0);
		if (!strstr(e->msg, bad[i].want))
			fail_msg("%s: got %s, want %s", bad[i].doc, e->msg, bad[i].want);
		hezo_error_free(e);
	}
	/* The documented defaults. */
	base = parse_ok("{}");
	assert_value(base, "volumes",
		     "{\"allow\":[\"{project}_*\"],\"roots\":[\"/var/lib/docker/volumes\","
		     "\"/var/lib/containers/storage/volumes\"]}");
	hezo_policy_free(TAKE_PTR(base));
	/* A project file may say which volumes are its own, not where the stores are. */
	assert_true(asprintf(&path, "%s/p.json", root) > 0);
	write_file(path, "{\"volumes\":{\"roots\":[\"/srv\"]}}");
	assert_true(asprintf(&doc, "{\"projectsDir\":\"%s\"}", root) > 0);
	base = parse_ok(doc);
	assert_true(hezo_policy_for_container(base, NULL, "p", &p, &err) < 0);
	assert_non_null(strstr(err->msg, "volumes.roots: only the main policy file may set this"));
	hezo_error_free(TAKE_PTR(err));
	write_file(path, "{\"volumes\":{\"allow\":[\"{project}_*\",\"p-*\"]}}");
	assert_int_equal(hezo_policy_for_container(base, NULL, "p", &p, &err), 0);
	assert_value(p, "volumes.allow", "[\"{project}_*\",\"p-*\"]");
	remove_tree(root);
}

struct seen {
	char projects[256];
	int n, loose;
	bool stop_at_b;
};

static int count_project(const struct hezo_policy *p, void *data)
{
	struct seen *s = data;
	const char *name = hezo_policy_project(p);
	char dir[4096];
	bool above;

	s->n++;
	s->loose += hezo_policy_box_writable_dir(p, "/srv/loose/r", NULL, NULL, dir, sizeof(dir),
						 &above);
	strncat(s->projects, name ? name : "-", sizeof(s->projects) - strlen(s->projects) - 2);
	strcat(s->projects, ",");
	return s->stop_at_b && name && strcmp(name, "b") == 0 ? 7 : 0;
}

/* Every project's policy as its containers get it: the --root judge asks them all (shim). */
static void test_foreach_project(void **state)
{
	_cleanup_free_ char *root = make_tempdir(), *doc = NULL, *path = NULL;
	_cleanup_policy_ struct hezo_policy *base = NULL;
	struct seen s = {0};
	static const char *const files[][2] = {
		{"a.json", "{\"mounts\":{\"allowedSources\":[\"/srv/a\"]}}"},
		{"b.json", "{}"},
		/* not JSON: what its boxes hold cannot be told, so every caller is refused */
		{"broken.json", "{\"mounts\":"},
		/* JSON that does not layer: its own shares still count (its boxes may hold them) */
		{"loosen.json",
		 "{\"cgroupParents\":[\"/elsewhere\"],\"mounts\":{\"allowedSources\":"
		 "[\"/srv/loose\"]}}"},
		{"Bad Name.json", "{}"},
		{"notes.txt", "{}"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		free(path);
		assert_true(asprintf(&path, "%s/%s", root, files[i][0]) > 0);
		write_file(path, files[i][1]);
	}
	assert_true(asprintf(&doc, "{\"projectsDir\":\"%s\"}", root) > 0);
	base = parse_ok(doc);
	assert_int_equal(hezo_policy_foreach_project(base, count_project, &s), -EBADMSG);
	/* the main policy first, then a, b and loosen (raw, named) in the directory's order */
	assert_int_equal(s.n, 4);
	assert_non_null(strstr(s.projects, "loosen,"));
	{
		char why[PATH_MAX + 128];
		assert_int_equal(hezo_policy_projects_why(base, -EBADMSG, why, sizeof(why)), 0);
		assert_non_null(strstr(why, "broken.json cannot be read or is not JSON"));
	}
	assert_int_equal(s.loose, 1);
	assert_memory_equal(s.projects, "-,", 2);
	assert_non_null(strstr(s.projects, "a,"));
	assert_non_null(strstr(s.projects, "b,"));
	s = (struct seen){.stop_at_b = true};
	assert_int_equal(hezo_policy_foreach_project(base, count_project, &s), 7);
	/* a missing projects directory has no projects; an unreadable one is an error */
	hezo_policy_free(TAKE_PTR(base));
	free(doc);
	assert_true(asprintf(&doc, "{\"projectsDir\":\"%s/none\"}", root) > 0);
	base = parse_ok(doc);
	s = (struct seen){0};
	assert_int_equal(hezo_policy_foreach_project(base, count_project, &s), 0);
	assert_int_equal(s.n, 1);
	hezo_policy_free(TAKE_PTR(base));
	free(doc);
	assert_true(asprintf(&doc, "{\"projectsDir\":\"%s/a.json\"}", root) > 0);
	base = parse_ok(doc);
	assert_int_equal(hezo_policy_foreach_project(base, count_project, &s), -ENOTDIR);
	remove_tree(root);
}

static void expect_held(const struct hezo_held_path *h, const char *path, bool dir)
{
	struct stat st, fst;

	assert_int_equal(stat(path, &st), 0);
	assert_string_equal(h->path, path);
	assert_true(h->fd >= 0);
	assert_int_equal(fstat(h->fd, &fst), 0);
	assert_true(h->dev == (uint64_t)st.st_dev && h->ino == (uint64_t)st.st_ino);
	assert_true(fst.st_dev == st.st_dev && fst.st_ino == st.st_ino);
	assert_int_equal(h->dir, dir);
}

/* What apply judged it holds open for the shim: root.path, and each distinct bind source once. */
static void test_held(void **state)
{
	struct efix *f = *state;
	_cleanup_free_ char *x = place(f->root, "held/x/"), *file = place(f->root, "held/f");
	_cleanup_free_ char *inner = place(f->root, "held/x/inner");
	_cleanup_free_ char *rootfs = place(f->root, "bundle/rootfs/");
	_cleanup_free_ char *allowed = NULL, *bundle = NULL, *link = NULL, *through = NULL;
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *spec = minimal_spec();
	_cleanup_(hezo_held_done) struct hezo_held held;
	struct hezo_apply_env env = {.id = ID_A};
	struct hezo_held_path h = {.fd = -1};
	int fd;

	hezo_held_init(&held);
	env.held = &held;
	assert_true(asprintf(&allowed, "\"%s/held\"", f->root) > 0);
	assert_true(asprintf(&bundle, "%s/bundle", f->root) > 0);
	assert_true(asprintf(&link, "%s/held/l", f->root) > 0);
	assert_true(asprintf(&through, "%s/inner", link) > 0);
	env.bundle = bundle;
	p = engine_policy(f->root, allowed);
	add(spec, "/a", "bind", x, "rbind,ro");
	add(spec, "/b", "bind", x, "bind");
	add(spec, "/c", "bind", file, "bind,ro");
	expect_ok(p, spec, &env);
	assert_int_equal(held.nbinds, 2);
	expect_held(&held.binds[0], x, true);
	expect_held(&held.binds[1], file, false);
	expect_held(&held.root, rootfs, true);
	assert_ptr_equal(hezo_held_bind(&held, file), &held.binds[1]);
	assert_null(hezo_held_bind(&held, inner));

	/* A symlink on any component, the last or one before it: ELOOP, where realpath() follows.
	 */
	assert_int_equal(symlink("x", link), 0);
	assert_int_equal(hezo_open_nofollow(link, &h), -ELOOP);
	assert_int_equal(hezo_open_nofollow(through, &h), -ELOOP);
	fd = hezo_open_nofollow(inner, &h);
	assert_true(fd >= 0);
	close(fd);
	assert_false(h.dir);
}

/* ---- a project's workspace (policy/workspace.c) ---- */

/* project's policy under a main policy with projectsDir root/projects; NULL and *msg if refused. */
static struct hezo_policy *workspace_policy(const char *root, const char *project, char **msg)
{
	_cleanup_policy_ struct hezo_policy *base = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *doc = NULL;
	struct hezo_policy *p = NULL;

	assert_true(asprintf(&doc, "{" DEV_RUNC_VOL ",\"projectsDir\":\"%s/projects\"}", root) > 0);
	base = parse_ok(doc);
	if (hezo_policy_for_container(base, NULL, project, &p, &err) < 0) {
		*msg = strdup(err->msg);
		return NULL;
	}
	return p;
}

static void expect_workspace_refused(const char *root, const char *project, const char *want)
{
	_cleanup_free_ char *msg = NULL;
	_cleanup_policy_ struct hezo_policy *p = workspace_policy(root, project, &msg);

	if (p || !strstr(msg, want))
		print_error("project %s: got %s, want %s\n", project, p ? "success" : msg, want);
	assert_null(p);
	assert_non_null(strstr(msg, want));
}

static void test_workspace(void **state)
{
	static const struct {
		const char *name, *json;
	} files[] = {
		{"root", "{\"workspace\":\"/\"}"},
		{"etc", "{\"workspace\":\"/etc/hezo-ws\"}"},
		{"docker", "{\"workspace\":\"/var/lib/docker/volumes/x\"}"},
		{"srv", "{\"workspace\":\"/srv\"}"},
		{"var", "{\"workspace\":\"/var\"}"},
		{"rel", "{\"workspace\":\"ws\"}"},
		{"vol", "{\"workspace\":\"volume\"}"},
	};
	_cleanup_free_ char *root = make_tempdir();
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *spec = minimal_spec(), *shown = NULL;
	_cleanup_free_ char *ws = NULL, *doc = NULL, *msg = NULL, *src = NULL, *text = NULL;
	_cleanup_error_ struct hezo_error *err = NULL;
	struct hezo_policy *bad = NULL;
	static const struct hezo_apply_env env = {.id = "c1"};
	const struct hezo_json *mounts, *m, *envv;
	char dir[PATH_MAX];

	(void)state;
	assert_true(asprintf(&ws, "%s/ws", root) > 0);
	assert_int_equal(mkdir(ws, 0755), 0);
	assert_true(asprintf(&src, "%s/sub", ws) > 0);
	assert_int_equal(mkdir(src, 0755), 0);
	free(place(root, "projects/"));
	assert_true(asprintf(&doc, "{\"workspace\":\"%s\"}", ws) > 0);
	write_file_at(root, "projects/alpha.json", doc);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		_cleanup_free_ char *name = NULL;
		assert_true(asprintf(&name, "projects/%s.json", files[i].name) > 0);
		write_file_at(root, name, files[i].json);
	}

	/* The main file may not name one: it would be every container's. */
	free(doc);
	assert_true(asprintf(&doc, "{" DEV_RUNC_VOL ",\"workspace\":\"%s\"}", ws) > 0);
	assert_true(hezo_policy_parse(doc, strlen(doc), "main", &bad, &err) < 0);
	assert_non_null(strstr(err->msg, "workspace: only a project file may set this"));

	expect_workspace_refused(root, "root", "workspace: /: it is the host's /");
	expect_workspace_refused(root, "etc",
				 "workspace: /etc/hezo-ws: it is, holds or is inside /etc");
	expect_workspace_refused(root, "docker", "is inside /var/lib/docker");
	expect_workspace_refused(root, "srv", "workspace: /srv: it is or holds /srv");
	expect_workspace_refused(root, "var",
				 "workspace: /var: it is, holds or is inside /var/run");
	expect_workspace_refused(root, "rel",
				 "\"ws\" is neither \"volume\" nor a clean absolute path");

	p = workspace_policy(root, "vol", &msg);
	assert_non_null(p);
	assert_int_equal(hezo_policy_workspace_dir(p, dir, sizeof(dir)), 0);
	assert_string_equal(dir, "/var/lib/docker/volumes/vol_workspace/_data");
	hezo_policy_free(TAKE_PTR(p));

	/* alpha: /workspace is its directory, read-write, exec, nosuid, nodev; HOME is its .home.
	 */
	p = workspace_policy(root, "alpha", &msg);
	assert_non_null(p);
	shown = hezo_policy_to_json(p);
	assert_string_equal(hezo_json_string(hezo_json_get(shown, "workspace")), ws);
	add(spec, "/src", "bind", src, "rbind,ro"); /* below its workspace: its own to mount */
	expect_ok(p, spec, &env);
	mounts = hezo_json_get(spec, "mounts");
	m = NULL;
	HEZO_JSON_FOREACH (i, mounts)
		if (strcmp(hezo_json_string(hezo_json_get(mounts->items[i], "destination")),
			   "/workspace") == 0)
			m = mounts->items[i];
	assert_non_null(m);
	assert_string_equal(hezo_json_string(hezo_json_get(m, "source")), ws);
	text = json_text(hezo_json_get(m, "options"));
	assert_string_equal(text, "[\"bind\",\"rw\",\"nosuid\",\"nodev\",\"exec\"]");
	envv = hezo_json_get_path(spec, "process.env");
	assert_non_null(envv);
	assert_string_equal(hezo_json_string(envv->items[envv->len - 1]), "HOME=/workspace/.home");
	hezo_policy_free(bad);
	remove_tree(root);
}

static char json_buf[PATH_MAX + 32];

/* {"workspace": "ROOTREL"}, in a static buffer. */
static const char *json_of(const char *root, const char *rel)
{
	snprintf(json_buf, sizeof(json_buf), "{\"workspace\":\"%s%s\"}", root, rel);
	return json_buf;
}

/* One project's workspace against the others': by path, and through a symlink to it. */
static void test_workspace_clash(void **state)
{
	_cleanup_free_ char *root = make_tempdir(), *doc = NULL, *lnk = NULL, *main_doc = NULL;
	_cleanup_(hezo_mounts_free) struct hezo_mounts mounts = {0};
	_cleanup_policy_ struct hezo_policy *base = NULL;
	static const struct {
		const char *name, *rel, *other; /* other: the project named, NULL: no clash */
	} cases[] = {
		{"beta", "/w/ws/inner", "alpha"}, {"gamma", "/w/elsewhere", NULL},
		{"delta", "/w/lnk", "alpha"},	  {"eps", "/w/lnk/below", "alpha"},
		{"zeta", "/w", "alpha"}, /* the parent of every other */
	};
	char why[2 * PATH_MAX + 128];

	(void)state;
	assert_int_equal(hezo_mounts_read(&mounts), 0);
	free(place(root, "projects/"));
	free(place(root, "w/ws/"));
	assert_true(asprintf(&lnk, "%s/w/lnk", root) > 0);
	assert_true(asprintf(&doc, "%s/w/ws", root) > 0);
	assert_int_equal(symlink(doc, lnk), 0);
	write_file_at(root, "projects/alpha.json", json_of(root, "/w/ws"));
	assert_true(asprintf(&main_doc, "{" DEV_RUNC_VOL ",\"projectsDir\":\"%s/projects\"}",
			     root) > 0);
	base = parse_ok(main_doc);
	/* Each case alone beside alpha: the others' files go while it is judged. */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		_cleanup_free_ char *msg = NULL, *want = NULL;
		_cleanup_policy_ struct hezo_policy *p = NULL;

		for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
			_cleanup_free_ char *f = NULL;
			assert_true(asprintf(&f, "%s/projects/%s.json", root, cases[k].name) > 0);
			unlink(f);
		}
		assert_true(asprintf(&want, "projects/%s.json", cases[i].name) > 0);
		write_file_at(root, want, json_of(root, cases[i].rel));
		free(TAKE_PTR(want));
		p = workspace_policy(root, cases[i].name, &msg);
		if (!p)
			print_error("%s: %s\n", cases[i].name, msg);
		assert_non_null(p);
		why[0] = '\0';
		assert_int_equal(hezo_policy_workspace_clash(base, p, &mounts, why, sizeof(why)),
				 cases[i].other ? 1 : 0);
		if (!cases[i].other)
			continue;
		assert_true(asprintf(&want, "project %s's workspace", cases[i].other) > 0);
		if (!strstr(why, want))
			print_error("%s: got \"%s\", want \"%s\"\n", cases[i].name, why, want);
		assert_non_null(strstr(why, want));
	}
	remove_tree(root);
}

const struct CMUnitTest policy_mounts_tests[] = {
	cmocka_unit_test(test_workspace),
	cmocka_unit_test(test_workspace_clash),
	cmocka_unit_test(test_kernel_fs_places),
	cmocka_unit_test(test_mount_options),
	cmocka_unit_test(test_devpts_max),
	cmocka_unit_test_setup_teardown(test_engine_files, efix_setup, efix_teardown),
	cmocka_unit_test_setup_teardown(test_kubelet_volumes, efix_setup, efix_teardown),
	cmocka_unit_test(test_named_volumes),
	cmocka_unit_test(test_docker_init),
	cmocka_unit_test(test_volume_keys),
	cmocka_unit_test(test_foreach_project),
	cmocka_unit_test_setup_teardown(test_held, efix_setup, efix_teardown),
};
const size_t policy_mounts_ntests = sizeof(policy_mounts_tests) / sizeof(policy_mounts_tests[0]);
