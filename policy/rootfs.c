/* root.path: the bundle's own rootfs or the engine's root filesystem for this container, held. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "hezo-file.h"
#include "policy-internal.h"

/* Docker's layerdb file and podman's container list: small files; the bound is generous. */
#define ENGINE_FILE_MAX (64 * 1024 * 1024)

/* The first line of dir/name, or NULL. */
static char *read_word(const char *dir, const char *name)
{
	_cleanup_free_ char *path = NULL, *data = NULL;
	size_t len;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return NULL;
	if (hezo_read_file_at(AT_FDCWD, path, 4096, &data, &len, NULL) < 0)
		return NULL;
	while (len && isspace((unsigned char)data[len - 1]))
		data[--len] = '\0';
	return TAKE_PTR(data);
}

/*
 * Split resolved as DIR/<kind>/<layer>/merged: *top gets DIR (malloc'd), *layer points into
 * resolved. false when it does not have that shape.
 */
static bool overlay_shape(const char *resolved, const char *kind, char **top, const char **layer,
			  size_t *layer_len)
{
	const char *m = strrchr(resolved, '/'), *l, *k;
	size_t kn = strlen(kind);

	if (!m || strcmp(m, "/merged") != 0 || m == resolved)
		return false;
	for (l = m - 1; l > resolved && *l != '/'; l--)
		;
	if (l == resolved || l + 1 == m)
		return false;
	for (k = l - 1; k > resolved && *k != '/'; k--)
		;
	if ((size_t)(l - k - 1) != kn || strncmp(k + 1, kind, kn) != 0)
		return false;
	*top = strndup(resolved, (size_t)(k - resolved));
	*layer = l + 1;
	*layer_len = (size_t)(m - l - 1);
	return *top != NULL;
}

/*
 * The storage root an overlay path sits in is the engine's only when it is the root the engine's
 * own configuration names (given resolved): a look-alike tree elsewhere proves nothing.
 */
static bool configured_root(const char *top, const char *root)
{
	char real[PATH_MAX];

	return root && realpath(root, real) && strcmp(real, top) == 0;
}

/* Docker overlay2: <root>/image/overlay2/layerdb/mounts/<id>/mount-id names the merged dir. */
static bool docker_rootfs(const char *resolved, const char *root, const char *id)
{
	_cleanup_free_ char *top = NULL, *dir = NULL, *mid = NULL;
	const char *layer;
	size_t n;

	if (!overlay_shape(resolved, "overlay2", &top, &layer, &n) || strchr(id, '/') ||
	    !configured_root(top, root))
		return false;
	if (asprintf(&dir, "%s/image/overlay2/layerdb/mounts/%s", top, id) < 0)
		return false;
	mid = read_word(dir, "mount-id");
	return mid && strlen(mid) == n && strncmp(mid, layer, n) == 0;
}

/* podman (containers/storage): overlay-containers/containers.json gives each container's layer. */
static bool podman_rootfs(const char *resolved, const char *root, const char *id)
{
	_cleanup_free_ char *top = NULL, *path = NULL, *data = NULL;
	_cleanup_json_ struct hezo_json *list = NULL;
	const char *layer;
	size_t n, len;

	if (!overlay_shape(resolved, "overlay", &top, &layer, &n) || !configured_root(top, root))
		return false;
	if (asprintf(&path, "%s/overlay-containers/containers.json", top) < 0) {
		path = NULL;
		return false;
	}
	if (hezo_read_file_at(AT_FDCWD, path, ENGINE_FILE_MAX, &data, &len, NULL) < 0 ||
	    hezo_json_parse(data, len, &list, NULL) < 0)
		return false;
	HEZO_JSON_FOREACH (i, list->type == HEZO_JSON_ARRAY ? list : NULL) {
		const struct hezo_json *c = list->items[i];
		const char *cid = hezo_json_string(hezo_json_get(c, "id"));
		const char *cl = hezo_json_string(hezo_json_get(c, "layer"));

		if (cid && cl && strcmp(cid, id) == 0)
			return strlen(cl) == n && strncmp(cl, layer, n) == 0;
	}
	return false;
}

static int hold_root(struct hezo_held *h, const char *resolved, struct hezo_error **err)
{
	int r;

	if (h->root.fd >= 0)
		return hezo_policy_ferr(err, "root.path: checked twice");
	r = hezo_policy_hold(&h->root, resolved, "root.path", err);
	if (r == 0 && !h->root.dir)
		return hezo_error_set(err, ENOTDIR, "root.path %s: not a directory", resolved);
	return r;
}

/*
 * 1 when resolved is the engine's root filesystem for this container, 0 when it is not, -errno
 * (err set) when it is but the ID already runs elsewhere: the engine's ID on a caller's word
 * would hand a running container's files to whoever reuses it under another --root.
 */
static int engine_rootfs(const char *resolved, const struct hezo_apply_env *env,
			 struct hezo_error **err)
{
	const char *engine;

	if (!env->id)
		return 0;
	if (docker_rootfs(resolved, env->docker_root, env->id))
		engine = "Docker";
	else if (podman_rootfs(resolved, env->podman_root, env->id))
		engine = "podman";
	else
		return 0;
	if (env->id_in_use)
		return hezo_error_set(err, EBUSY,
				      "root.path %s: it is %s's root filesystem for container %s, "
				      "which already runs (%s)",
				      resolved, engine, env->id, env->id_in_use);
	return 1;
}

int hezo_policy_check_root(const struct hezo_json *spec, const struct hezo_apply_env *env,
			   struct hezo_error **err)
{
	const char *path = hezo_json_string(hezo_json_get_path(spec, "root.path"));
	_cleanup_free_ char *joined = NULL, *clean = NULL;
	char resolved[PATH_MAX], bundle[PATH_MAX];
	int r;

	if (!path || !path[0])
		return hezo_policy_ferr(err, "root.path: expected a non-empty string");
	if (!env || !env->bundle) {
		/* Nothing to resolve against: only a plain relative path is believed. */
		if (path[0] == '/' || asprintf(&joined, "/%s", path) < 0 ||
		    hezo_policy_clean_path(joined, &clean) < 0)
			return hezo_error_set(
				err, EPERM,
				"root.path %s: only a relative path without \"..\" can "
				"be checked without the bundle",
				path);
		return 0;
	}
	if (path[0] != '/' && asprintf(&joined, "%s/%s", env->bundle, path) < 0)
		return hezo_policy_nomem(err);
	if (!realpath(joined ? joined : path, resolved))
		return hezo_error_set_errno(err, errno, "root.path %s", path);
	/*
	 * The shim's bundle is already the open directory's own path (no symlink in it): resolved
	 * again, a link put in its place since would make any directory "inside the bundle".
	 */
	if (env->bundle[0] == '/') {
		if (snprintf(bundle, sizeof(bundle), "%s", env->bundle) >= (int)sizeof(bundle))
			return hezo_error_set(err, ENAMETOOLONG, "bundle %s", env->bundle);
	} else if (!realpath(env->bundle, bundle))
		return hezo_error_set_errno(err, errno, "bundle %s", env->bundle);
	/* The backend gets the directory judged here, held open (env->held), never a new lookup. */
	if (hezo_policy_path_under(resolved, bundle))
		return env->held ? hold_root(env->held, resolved, err) : 0;
	r = engine_rootfs(resolved, env, err);
	if (r < 0)
		return r;
	if (r > 0)
		return env->held ? hold_root(env->held, resolved, err) : 0;
	return hezo_error_set(err, EPERM,
			      "root.path %s%s%s: neither inside the bundle nor the engine's root "
			      "filesystem for this container",
			      path, strcmp(path, resolved) ? " resolves to " : "",
			      strcmp(path, resolved) ? resolved : "");
}
