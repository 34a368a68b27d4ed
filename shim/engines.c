/*
 * What the engines on this host say about a container ID and their storage: the roots their own
 * configuration names, and whether a container of an ID already runs under one of them.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-file.h"
#include "shim.h"

#define ENGINE_CONF_MAX (1024 * 1024)

/* dockerd's data-root ("graph" before 17.05) in daemon.json, else its default. */
static void docker_root(char *buf, size_t size)
{
	_cleanup_free_ char *data = NULL;
	_cleanup_json_ struct hezo_json *conf = NULL;
	const char *root = NULL;
	size_t len;

	if (hezo_read_file_at(AT_FDCWD, "/etc/docker/daemon.json", ENGINE_CONF_MAX, &data, &len,
			      NULL) == 0 &&
	    hezo_json_parse(data, len, &conf, NULL) == 0)
		root = hezo_json_string(hezo_json_get(conf, "data-root"))
			       ?: hezo_json_string(hezo_json_get(conf, "graph"));
	/* A data-root that is set but unusable names no root: never the default instead. */
	if (!root)
		root = "/var/lib/docker";
	if (root[0] != '/' || size < PATH_MAX || !realpath(root, buf))
		buf[0] = '\0';
}

/* The graphroot = "..." line of the [storage] table of a storage.conf; 1 when found. */
static int storage_graphroot(const char *path, char *out, size_t size)
{
	_cleanup_free_ char *data = NULL;
	bool in_storage = false;
	size_t len;

	if (hezo_read_file_at(AT_FDCWD, path, ENGINE_CONF_MAX, &data, &len, NULL) < 0)
		return 0;
	for (char *line = data, *next; line && *line; line = next) {
		char *s = line, *q, *e;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		while (isspace((unsigned char)*s))
			s++;
		if (*s == '[') {
			in_storage = strncmp(s, "[storage]", 9) == 0;
			continue;
		}
		if (!in_storage || strncmp(s, "graphroot", 9) != 0)
			continue;
		for (s += 9; isspace((unsigned char)*s); s++)
			;
		if (*s++ != '=')
			continue;
		/* A TOML basic or literal string: "..." or '...'. */
		q = s + strspn(s, " \t");
		e = *q == '"' || *q == '\'' ? strchr(q + 1, *q) : NULL;
		if (!e || (size_t)(e - q - 1) >= size)
			return -EINVAL;
		snprintf(out, size, "%.*s", (int)(e - q - 1), q + 1);
		return 1;
	}
	return 0;
}

/* containers/storage's graphroot for root: /etc's storage.conf, the vendor's, else the default. */
static void podman_root(char *buf, size_t size)
{
	char conf[PATH_MAX] = "/var/lib/containers/storage";
	int r = storage_graphroot("/etc/containers/storage.conf", conf, sizeof(conf));

	if (r == 0)
		r = storage_graphroot("/usr/share/containers/storage.conf", conf, sizeof(conf));
	if (r < 0 || conf[0] != '/' || size < PATH_MAX || !realpath(conf, buf))
		buf[0] = '\0';
}

void shim_engine_roots(char docker[PATH_MAX], char podman[PATH_MAX])
{
	docker_root(docker, PATH_MAX);
	podman_root(podman, PATH_MAX);
}

/* The decimal pid in a file, alive now; 0 otherwise. */
static long pidfile_alive(const char *path)
{
	_cleanup_free_ char *data = NULL;
	char *end;
	size_t len;
	long pid;

	if (hezo_read_file_at(AT_FDCWD, path, 64, &data, &len, NULL) < 0)
		return 0;
	pid = strtol(data, &end, 10);
	if (pid <= 0 || (*end && !isspace((unsigned char)*end)))
		return 0;
	return kill((pid_t)pid, 0) == 0 || errno == EPERM ? pid : 0;
}

/* runc's ROOT/ID/state.json, its init process alive (pid and start time); runsc's state file. */
bool shim_backend_state_alive(const char *root, const char *id)
{
	int r = shim_runc_alive(root, id, NULL);

	return r >= 0 ? r > 0 : shim_runsc_alive(root, id, NULL, false);
}

struct in_use {
	const char *id;
	char key[SHIM_KEY_LEN];
	char *where;
	bool stopped_too; /* a record that is not live counts too */
};

static int record_in_use(void *data, const char *key, struct hezo_json *rec)
{
	struct in_use *u = data;

	if (strcmp(key, u->key) == 0 ||
	    strcmp(hezo_json_string(hezo_json_get(rec, "id")) ?: "", u->id) != 0)
		return 0;
	if (!u->stopped_too && !shim_record_live(rec))
		return 0;
	if (asprintf(&u->where, "a container of hezo-shim's under --root %s",
		     hezo_json_string(hezo_json_get(rec, "root")) ?: "(the backend's default)") < 0)
		u->where = NULL;
	return -EEXIST;
}

/* Each directory glob() finds for pattern, in turn, until fn says 1. */
static bool any_dir(const char *pattern, bool (*fn)(const char *dir, void *data), void *data,
		    char **hit)
{
	glob_t g;
	bool found = false;

	if (glob(pattern, GLOB_ONLYDIR | GLOB_NOSORT, NULL, &g) != 0)
		return false;
	for (size_t i = 0; !found && i < g.gl_pathc; i++) {
		found = fn(g.gl_pathv[i], data);
		if (found)
			*hit = strdup(g.gl_pathv[i]);
	}
	globfree(&g);
	return found;
}

struct task_q {
	const char *id, *bundle;
};

static bool root_has(const char *dir, void *data)
{
	return shim_backend_state_alive(dir, ((const struct task_q *)data)->id);
}

/* A containerd v2 task (or podman userdata) directory for ID other than ours, its pid alive. */
static bool task_has(const char *dir, void *data)
{
	const struct task_q *t = data;
	_cleanup_free_ char *path = NULL, *pid = NULL;
	char real[PATH_MAX];

	if (asprintf(&path, "%s/%s", dir, t->id) < 0) {
		path = NULL;
		return false;
	}
	if (!realpath(path, real) || (t->bundle && strcmp(real, t->bundle) == 0))
		return false;
	if (asprintf(&pid, "%s/init.pid", real) < 0) {
		pid = NULL;
		return false;
	}
	return pidfile_alive(pid) > 0;
}

/* podman's userdata for ID, its container's pidfile alive (conmon's --pid-file). */
static bool userdata_has(const char *dir, const char *id)
{
	_cleanup_free_ char *path = NULL;

	if (asprintf(&path, "%s/overlay-containers/%s/userdata/pidfile", dir, id) < 0) {
		path = NULL;
		return false;
	}
	return pidfile_alive(path) > 0;
}

/*
 * Backends' roots where engines keep their containers' state (runc and runsc as Docker, podman,
 * ctr and CRI call them), then containerd's task bundles and podman's run directories.
 */
static const char *const backend_roots[] = {
	"/run/runc",
	"/run/runsc",
	"/run/docker/runtime-*/*",
	"/run/containerd/runc/*",
	"/run/containerd/runsc/*",
};
static const char *const task_dirs[] = {
	"/run/containerd/io.containerd.runtime.v2.task/*",
	"/run/docker/containerd/daemon/io.containerd.runtime.v2.task/*",
};
/* podman's run directory (the container's pidfile) and its storage's, both under
 * overlay-containers. */
static const char *const userdata_dirs[] = {"/run/containers/storage", NULL /* graphroot */};

/* Is bundle podman's own userdata directory for ID (podman's create of that very container)? */
static bool podman_own_bundle(const char *graphroot, const char *id, const char *bundle)
{
	_cleanup_free_ char *path = NULL;
	char real[PATH_MAX];

	if (!bundle || !graphroot[0] ||
	    asprintf(&path, "%s/overlay-containers/%s/userdata", graphroot, id) < 0)
		return false;
	return realpath(path, real) && strcmp(real, bundle) == 0;
}

int shim_id_live_elsewhere(const struct shim_ctx *ctx, const char *id, struct hezo_error **err)
{
	/*
	 * Stopped ones too: the delete of a stopped record unwires by the ID alone, and would take
	 * down the registration and agent of a box made meanwhile under another --root (red team
	 * keys2, F1).
	 */
	struct in_use u = {.id = id, .stopped_too = true};
	_cleanup_free_ char *where = NULL;
	int r;

	shim_record_key_for_root(ctx->g.root, u.key);
	/* The ID and root are in the records index: no record is read whole (record-reads). */
	r = shim_records_foreach_brief(ctx, record_in_use, &u);
	where = u.where;
	if (r == -EEXIST)
		return hezo_error_set(
			err, EEXIST,
			"container %s: the ID is %s, still recorded (delete it first); "
			"proxyd and the agent know a box by its ID alone",
			id, where ?: "a container of hezo-shim's under another --root");
	if (r < 0)
		return hezo_error_set_errno(err, -r, "state directory %s", ctx->state_dir);
	return 0;
}

int shim_id_in_use(const struct shim_ctx *ctx, const char *id, const char *bundle, char **where,
		   struct hezo_error **err)
{
	struct in_use u = {.id = id};
	struct task_q t = {.id = id, .bundle = bundle};
	char graphroot[PATH_MAX], docker[PATH_MAX], *hit = NULL;
	int r;

	*where = NULL;
	shim_record_key_for_root(ctx->g.root, u.key);
	r = shim_records_foreach_brief(ctx, record_in_use, &u);
	if (r == -EEXIST) {
		if (!u.where)
			return hezo_error_set(err, ENOMEM, "out of memory");
		*where = u.where;
		return 0;
	}
	if (r < 0)
		return hezo_error_set_errno(err, -r, "state directory %s", ctx->state_dir);
	r = 0;
	/* Our own --root is among these: a live container there, the backend refuses anyway. */
	for (size_t i = 0; !hit && i < HEZO_ARRAY_SIZE(backend_roots); i++)
		if (any_dir(backend_roots[i], root_has, &t, &hit) && hit)
			r = asprintf(where, "the backend's state under %s", hit);
	for (size_t i = 0; !hit && i < HEZO_ARRAY_SIZE(task_dirs); i++)
		if (any_dir(task_dirs[i], task_has, &t, &hit) && hit)
			r = asprintf(where, "containerd's task %s/%s", hit, id);
	shim_engine_roots(docker, graphroot);
	for (size_t i = 0; !hit && i < HEZO_ARRAY_SIZE(userdata_dirs); i++) {
		const char *dir = userdata_dirs[i] ?: graphroot;

		if (dir[0] && !podman_own_bundle(graphroot, id, bundle) && userdata_has(dir, id) &&
		    (hit = strdup(dir)))
			r = asprintf(where, "podman's container %s/overlay-containers/%s", hit, id);
	}
	free(hit);
	if (r < 0) {
		*where = NULL;
		return hezo_error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}
