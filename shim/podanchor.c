/*
 * Pod sandboxes as the engines show them: the bundle directories containerd and CRI-O write for
 * their live tasks, whatever runtime handler runs them, and the pod uid each sandbox's config.json
 * names. A hezo sandbox's claim to a pod counts only when it is the one live claimant there.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hezo-file.h"
#include "shim.h"

#define POD_CONFIG_MAX (4 * 1024 * 1024)

/*
 * Where, below an engine root, a task's bundle is: containerd's v2 runtime
 * (STATE/io.containerd.runtime.v2.task/NAMESPACE/ID, init.pid beside config.json) and
 * containers/storage's run directory that CRI-O uses (RUNROOT/overlay-containers/ID/userdata,
 * conmon's pidfile there).
 */
static const struct {
	const char *pattern, *pidfile;
	bool id_is_parent;
} layouts[] = {
	{"/io.containerd.runtime.v2.task/*/*", "init.pid", false},
	{"/overlay-containers/*/userdata", "pidfile", true},
};
/* Docker's own containerd keeps its state apart from any engine root a policy lists. */
static const char *const extra_roots[] = {"/run/docker/containerd/daemon"};

struct pod_bundle {
	char dir[PATH_MAX]; /* resolved */
	char id[PATH_MAX];
	const char *pidfile;
};

/* The decimal pid in DIR/NAME, alive now. */
static bool pid_alive(const char *dir, const char *name)
{
	_cleanup_free_ char *data = NULL;
	char path[PATH_MAX], *end;
	size_t len;
	long pid;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
	    hezo_read_file_at(AT_FDCWD, path, 64, &data, &len, NULL) < 0)
		return false;
	pid = strtol(data, &end, 10);
	if (pid <= 0 || (*end && *end != '\n'))
		return false;
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/*
 * Each engine bundle directory under roots (and Docker's containerd), in turn, until fn returns
 * non-zero; that value is returned.
 */
static int foreach_bundle(const char *const *roots, int (*fn)(const struct pod_bundle *, void *),
			  void *data)
{
	size_t nroots = 0;
	int r = 0;

	while (roots[nroots])
		nroots++;
	for (size_t i = 0; r == 0 && i < nroots + HEZO_ARRAY_SIZE(extra_roots); i++) {
		const char *root = i < nroots ? roots[i] : extra_roots[i - nroots];

		for (size_t l = 0; r == 0 && l < HEZO_ARRAY_SIZE(layouts); l++) {
			char pattern[PATH_MAX];
			glob_t g;

			if (root[0] != '/' || strpbrk(root, "*?[\\") ||
			    (size_t)snprintf(pattern, sizeof(pattern), "%s%s", root,
					     layouts[l].pattern) >= sizeof(pattern) ||
			    glob(pattern, GLOB_ONLYDIR | GLOB_NOSORT, NULL, &g) != 0)
				continue;
			for (size_t k = 0; r == 0 && k < g.gl_pathc; k++) {
				struct pod_bundle b = {.pidfile = layouts[l].pidfile};
				char *slash;

				/* The ID is the last component (CRI-O: the one before userdata). */
				if (!realpath(g.gl_pathv[k], b.dir))
					continue;
				memcpy(b.id, b.dir, sizeof(b.id));
				if (layouts[l].id_is_parent && (slash = strrchr(b.id, '/')))
					*slash = '\0';
				slash = strrchr(b.id, '/');
				memmove(b.id, slash + 1, strlen(slash + 1) + 1);
				r = fn(&b, data);
			}
			globfree(&g);
		}
	}
	return r;
}

int shim_engine_task_bundle(const char *const *roots, const char *bundle, const char *id,
			    char parent[PATH_MAX])
{
	size_t nroots = 0, blen;

	if (!bundle || !id || !id[0] || strchr(id, '/') || strcmp(id, ".") == 0 ||
	    strcmp(id, "..") == 0)
		return -1;
	blen = strlen(bundle);
	while (roots[nroots])
		nroots++;
	for (size_t i = 0; i < nroots + HEZO_ARRAY_SIZE(extra_roots); i++) {
		const char *root = i < nroots ? roots[i] : extra_roots[i - nroots];
		char real[PATH_MAX], want[PATH_MAX];
		const char *ns, *slash;
		size_t n;

		if (root[0] != '/' || !realpath(root, real))
			continue;
		/* containerd: REAL/io.containerd.runtime.v2.task/NS/ID, NS one component. */
		n = (size_t)snprintf(want, sizeof(want), "%s/io.containerd.runtime.v2.task/", real);
		if (n < sizeof(want) && blen > n && strncmp(bundle, want, n) == 0) {
			ns = bundle + n;
			slash = strchr(ns, '/');
			if (slash && slash != ns && strcmp(slash + 1, id) == 0 &&
			    (size_t)(slash - bundle) < PATH_MAX) {
				memcpy(parent, bundle, (size_t)(slash - bundle));
				parent[slash - bundle] = '\0';
				return 0;
			}
		}
		/* CRI-O and podman: REAL/overlay-containers/ID/userdata. */
		if ((size_t)snprintf(want, sizeof(want), "%s/overlay-containers/%s/userdata", real,
				     id) < sizeof(want) &&
		    strcmp(bundle, want) == 0 &&
		    (size_t)snprintf(parent, PATH_MAX, "%s/overlay-containers", real) < PATH_MAX)
			return 1;
	}
	return -1;
}

static const char *ann(const struct hezo_json *a, const char *key)
{
	return hezo_json_string(hezo_json_get(a, key));
}

/*
 * The pod uid a bundle's config.json names as a CRI sandbox (containerd's keys, then CRI-O's:
 * its container type and the kubelet's pod-uid label, as an annotation or in its labels), else
 * NULL. The caller frees it. want: the uid looked for, to skip documents that cannot name it.
 */
static char *sandbox_uid(const struct pod_bundle *b, const char *want)
{
	_cleanup_free_ char *data = NULL;
	_cleanup_json_ struct hezo_json *spec = NULL, *labels = NULL;
	const struct hezo_json *a;
	const char *type, *uid, *l;
	char path[PATH_MAX];
	size_t len;

	if ((size_t)snprintf(path, sizeof(path), "%s/config.json", b->dir) >= sizeof(path) ||
	    hezo_read_file_at(AT_FDCWD, path, POD_CONFIG_MAX, &data, &len, NULL) < 0)
		return NULL;
	/* A uid of hex digits and dashes is never escaped in JSON: absent bytes, no claim. */
	if (strspn(want, "0123456789abcdefABCDEF-") == strlen(want) &&
	    !memmem(data, len, want, strlen(want)))
		return NULL;
	if (hezo_json_parse(data, len, &spec, NULL) < 0)
		return NULL;
	a = hezo_json_get_type(spec, "annotations", HEZO_JSON_OBJECT);
	type = ann(a, "io.kubernetes.cri.container-type")
		       ?: ann(a, "io.kubernetes.cri-o.ContainerType");
	if (!type || strcmp(type, "sandbox") != 0)
		return NULL;
	uid = ann(a, "io.kubernetes.cri.sandbox-uid") ?: ann(a, "io.kubernetes.pod.uid");
	if (!uid && (l = ann(a, "io.kubernetes.cri-o.Labels")) &&
	    hezo_json_parse(l, strlen(l), &labels, NULL) == 0)
		uid = ann(labels, "io.kubernetes.pod.uid");
	return uid ? strdup(uid) : NULL;
}

struct claims_q {
	struct shim_pod_claims *c;
	const char *uid, *self, *self_bundle;
};

static int claim_of(const struct pod_bundle *b, void *data)
{
	struct claims_q *q = data;
	_cleanup_free_ char *uid = NULL;
	bool self = strcmp(b->id, q->self) == 0 &&
		    (!q->self_bundle || strcmp(b->dir, q->self_bundle) == 0);

	if ((self && q->c->self_live) || !pid_alive(b->dir, b->pidfile))
		return 0;
	uid = sandbox_uid(b, q->uid);
	if (!uid || strcmp(uid, q->uid) != 0)
		return 0;
	if (self) {
		q->c->self_live = true;
		return 0;
	}
	if (!(q->c->other = strdup(b->id)) || !(q->c->where = strdup(b->dir)))
		return -ENOMEM;
	return 1;
}

int shim_pod_claims(const char *const *roots, const char *uid, const char *self,
		    const char *self_bundle, struct shim_pod_claims *c, struct hezo_error **err)
{
	char real[PATH_MAX];
	struct claims_q q = {.c = c, .uid = uid, .self = self};
	int r;

	/* A bundle that cannot be resolved is no engine's: nothing there is self's. */
	if (self_bundle)
		q.self_bundle = realpath(self_bundle, real) ? real : "";

	*c = (struct shim_pod_claims){0};
	r = foreach_bundle(roots, claim_of, &q);
	if (r < 0) {
		shim_pod_claims_done(c);
		return hezo_error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

void shim_pod_claims_done(struct shim_pod_claims *c)
{
	free(c->other);
	free(c->where);
	c->other = c->where = NULL;
}

/* Birth time of path (not following a last symlink); false when the filesystem keeps none. */
static bool birth(const char *path, struct statx *stx)
{
	return statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_BTIME, stx) == 0 &&
	       (stx->stx_mask & STATX_BTIME);
}

bool shim_pod_dir_anchors(const char *kubelet_root, const char *uid, const char *bundle)
{
	char path[PATH_MAX], real[PATH_MAX];
	struct statx pod, b;
	struct stat st;

	if (!kubelet_root || strchr(uid, '/') || uid[0] == '.' ||
	    (size_t)snprintf(path, sizeof(path), "%s/pods/%s", kubelet_root, uid) >= sizeof(path) ||
	    lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	if (!bundle || !realpath(bundle, real) || !birth(path, &pod) || !birth(real, &b))
		return true;
	return pod.stx_btime.tv_sec < b.stx_btime.tv_sec ||
	       (pod.stx_btime.tv_sec == b.stx_btime.tv_sec &&
		pod.stx_btime.tv_nsec <= b.stx_btime.tv_nsec);
}
