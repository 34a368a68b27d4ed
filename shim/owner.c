/*
 * Whose is a namespace named by path: the answer behind hezo_apply_env.ns_owner. A process is one
 * of hezo-shim's containers' when it sits in exactly the cgroup a record names and that container
 * is alive by its backend's own state (under runsc the sandbox's host processes are in the
 * container's cgroup too); it may be joined only from the same project and pod.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hezo-file.h"
#include "hezo-netns.h"
#include "shim.h"

/*
 * The annotations that say which pod a container is in (CRI containerd, CRI-O, kubelet): two
 * containers that both carry one must agree on it. Records keep them (and the container types).
 */
static const char *const pod_keys[] = {
	"io.kubernetes.cri.sandbox-id",	  "io.kubernetes.cri.sandbox-uid",
	"io.kubernetes.cri.sandbox-name", "io.kubernetes.cri.sandbox-namespace",
	"io.kubernetes.cri-o.SandboxID",  "io.kubernetes.pod.uid",
	"io.kubernetes.pod.name",	  "io.kubernetes.pod.namespace",
};
#define POD_KEYS	(sizeof(pod_keys) / sizeof(pod_keys[0]))
#define KEY_SANDBOX_ID	0
#define KEY_SANDBOX_UID 1
#define CONTAINER_TYPE	"io.kubernetes.cri.container-type"

bool shim_pod_key(const char *key)
{
	for (size_t k = 0; k < POD_KEYS; k++)
		if (strcmp(key, pod_keys[k]) == 0)
			return true;
	return strcmp(key, CONTAINER_TYPE) == 0 ||
	       strcmp(key, "io.kubernetes.cri-o.ContainerType") == 0;
}

struct cgroup_owner {
	char *id;
	char *cgroup; /* relative to a hierarchy's root, from hezo_policy_cgroup_path */
	char *project;
	char *type; /* CRI's container-type: "sandbox", "container" or NULL */
	char *bundle;
	char *root;    /* the backend's --root it was made under, NULL: the default */
	char *backend; /* "runc", "runsc", ... */
	char *pod[POD_KEYS];
};

struct owner_scan {
	const struct shim_owner_query *q;
	struct cgroup_owner *v;
	size_t n;
	const char *owner;		      /* the first container found in the namespace */
	const struct cgroup_owner *owner_rec; /* its record */
	pid_t foreign;			      /* a process in it that is no container's */
	pid_t foreign_tid;		      /* its task in it: foreign, or one of its threads */
	const struct cgroup_owner *away;      /* a container of another project or pod in it */
	bool creating; /* a record whose create still runs counts too (its backend not done yet) */
};

static void owner_done(struct cgroup_owner *o)
{
	free(o->id);
	free(o->cgroup);
	free(o->project);
	free(o->type);
	free(o->bundle);
	free(o->root);
	free(o->backend);
	for (size_t k = 0; k < POD_KEYS; k++)
		free(o->pod[k]);
}

static void scan_done(struct owner_scan *s)
{
	for (size_t i = 0; i < s->n; i++)
		owner_done(&s->v[i]);
	free(s->v);
}

static bool dup_or_null(const char *src, char **dst)
{
	*dst = src ? strdup(src) : NULL;
	return !src || *dst;
}

static int scan_add(struct owner_scan *s, const char *id, const char *cgroup,
		    const struct hezo_json *rec)
{
	struct hezo_json *ann = hezo_json_get_type(rec, "annotations", HEZO_JSON_OBJECT);
	struct cgroup_owner o = {0}, *nv;
	bool ok = dup_or_null(id, &o.id) && dup_or_null(cgroup, &o.cgroup) &&
		  dup_or_null(hezo_json_string(hezo_json_get(rec, "project")), &o.project) &&
		  dup_or_null(hezo_json_string(hezo_json_get(ann, CONTAINER_TYPE)), &o.type) &&
		  dup_or_null(hezo_json_string(hezo_json_get(rec, "bundle")), &o.bundle) &&
		  dup_or_null(hezo_json_string(hezo_json_get(rec, "root")), &o.root) &&
		  dup_or_null(hezo_json_string(hezo_json_get(rec, "backend")), &o.backend);

	for (size_t k = 0; ok && k < POD_KEYS; k++)
		ok = dup_or_null(hezo_json_string(hezo_json_get(ann, pod_keys[k])), &o.pod[k]);
	nv = ok ? realloc(s->v, (s->n + 1) * sizeof(*nv)) : NULL;
	if (!nv) {
		owner_done(&o);
		return -ENOMEM;
	}
	s->v = nv;
	s->v[s->n++] = o;
	return 0;
}

/*
 * Is the recorded container alive by its backend's own state, its init (runc) or sandbox (runsc)
 * process in the recorded cgroup? A record a failed run left, or one planted, is not. runc:
 * ROOT/ID/state.json's init pid and its start time; runsc: ROOT/<sandbox>_sandbox:ID.state's
 * sandbox pid, the container created or running. Other backends: not known, so not alive.
 */
static bool container_alive(const struct hezo_json *rec, const char *id, const char *cgroup)
{
	const char *backend = hezo_json_string(hezo_json_get(rec, "backend")) ?: "";
	const char *root = hezo_json_string(hezo_json_get(rec, "root"));

	if (strchr(id, '/') || id[0] == '.')
		return false;
	if (strcmp(backend, "runc") == 0)
		return shim_runc_alive(root ?: shim_backend_default_root(backend), id, cgroup) > 0;
	if (strcmp(backend, "runsc") == 0)
		return shim_runsc_alive(root ?: shim_backend_default_root(backend), id, cgroup,
					true);
	return false;
}

/* Every record under every --root key, parsed, to fn until it returns non-zero (returned). */
static int walk_records(const char *state_dir, int (*fn)(const struct hezo_json *rec, void *data),
			void *data, struct hezo_error **err)
{
	DIR *top = opendir(state_dir);
	struct dirent *k;
	int r = 0;

	if (!top)
		return errno == ENOENT
			       ? 0
			       : hezo_error_set_errno(err, errno, "state directory %s", state_dir);
	while (r == 0 && (k = readdir(top))) {
		_cleanup_close_ int kfd = -1;
		struct dirent *f;
		DIR *d;

		if (k->d_name[0] == '.')
			continue;
		kfd = openat(dirfd(top), k->d_name,
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (kfd < 0 || !(d = fdopendir(kfd)))
			continue;
		kfd = -1; /* the DIR owns it now */
		while (r == 0 && (f = readdir(d))) {
			_cleanup_free_ char *text = NULL;
			_cleanup_json_ struct hezo_json *rec = NULL;
			size_t len, n = strlen(f->d_name);

			if (f->d_name[0] == '.' || n < 6 || strcmp(f->d_name + n - 5, ".json") != 0)
				continue;
			if (hezo_read_file_at(dirfd(d), f->d_name, SHIM_RECORD_MAX, &text, &len,
					      NULL) < 0 ||
			    hezo_json_parse(text, len, &rec, NULL) < 0)
				continue;
			r = fn(rec, data);
		}
		closedir(d);
	}
	closedir(top);
	if (r < 0)
		return hezo_error_set(err, -r, "out of memory");
	return r;
}

static int add_live(const struct hezo_json *rec, void *data)
{
	const struct owner_scan *s = data;
	const char *id = hezo_json_string(hezo_json_get(rec, "id"));
	const char *cg = hezo_json_string(hezo_json_get(rec, "cgroupsPath"));
	char rel[PATH_MAX];

	if (!id || !cg ||
	    hezo_policy_cgroup_path(cg, shim_record_systemd(rec), rel, sizeof(rel)) < 0 ||
	    (!container_alive(rec, id, rel) && !(s->creating && shim_record_live(rec))))
		return 0;
	return scan_add(data, id, rel, rec);
}

/* Every record under every --root key: ID and cgroup of each live container that has one. */
static int load_records(const char *state_dir, struct owner_scan *s, struct hezo_error **err)
{
	return walk_records(state_dir, add_live, s, err);
}

/* Equal strings, or both absent. */
static bool same(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

/* May the container asking join o's namespaces: the same project, and where both say, pod? */
static bool same_box(const struct shim_owner_query *q, const struct cgroup_owner *o)
{
	if (!q)
		return false;
	if (!same(q->project, o->project))
		return false;
	for (size_t k = 0; k < POD_KEYS; k++) {
		const char *mine = hezo_json_string(hezo_json_get(q->annotations, pod_keys[k]));

		if (mine && o->pod[k] && strcmp(mine, o->pod[k]) != 0)
			return false;
	}
	return true;
}

/* A task in the namespace: the cgroup that counts is the task's own (a thread can be moved). */
static int visit(pid_t pid, pid_t tid, void *data)
{
	struct owner_scan *s = data;
	char cg[PATH_MAX];
	int r = shim_proc_cgroup(tid, cg, sizeof(cg));

	if (r == -ENOENT || r == -ESRCH)
		return 0; /* gone meanwhile */
	for (size_t i = 0; r == 0 && i < s->n; i++) {
		if (strcmp(cg, s->v[i].cgroup) == 0) {
			if (!same_box(s->q, &s->v[i])) {
				s->away = &s->v[i];
				return 1;
			}
			/* A pod's sandbox owns its namespaces (and its engine files), whichever of
			 * the pod's processes /proc lists first (pids wrap). */
			if (!s->owner || (!same(s->owner_rec->type, "sandbox") &&
					  same(s->v[i].type, "sandbox"))) {
				s->owner = s->v[i].id;
				s->owner_rec = &s->v[i];
			}
			return 0;
		}
	}
	s->foreign = pid;
	s->foreign_tid = tid;
	return 1;
}

/*
 * A namespace that no task is in, named by a record's "joined" list (the namespaces a container
 * was handed by path: the path as resolved, its device and inode): a pin another project's
 * container used and left (stopped, not deleted) is still that container's. The inode alone is
 * no name: once the pin goes, the kernel gives its number to the next namespace made anywhere
 * (the lowest free one), so a claim holds only for the same path with the same inode. Stops at
 * the first record naming it.
 */
struct pin_query {
	const struct shim_owner_query *q;
	const char *named;
	uint64_t dev, ino;
	struct owner_scan found; /* the record naming it, in found.v[0] */
};

static int pin_of(const struct hezo_json *rec, void *data)
{
	struct pin_query *pq = data;
	const struct hezo_json *j = hezo_json_get_type(rec, "joined", HEZO_JSON_ARRAY);
	const char *id = hezo_json_string(hezo_json_get(rec, "id"));

	HEZO_JSON_FOREACH (i, j) {
		uint64_t dev, ino;

		const char *path = hezo_json_string(hezo_json_get(j->items[i], "path"));

		if (!id || hezo_json_get_uint64(hezo_json_get(j->items[i], "dev"), &dev) < 0 ||
		    hezo_json_get_uint64(hezo_json_get(j->items[i], "ino"), &ino) < 0 ||
		    dev != pq->dev || ino != pq->ino || !path || strcmp(path, pq->named) != 0)
			continue;
		return scan_add(&pq->found, id, "", rec) < 0 ? -ENOMEM : 1;
	}
	return 0;
}

/*
 * A claim only refuses: a namespace no task is in is never a container's by its record, so
 * the caller still requires it to be where and as an engine pins one (policy/namespaces.c).
 */
static int pinned_owner(const struct shim_owner_query *q, int fd, const char *named,
			struct hezo_error **err)
{
	struct pin_query pq = {.q = q, .named = named};
	const struct cgroup_owner *o;
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0)
		return hezo_error_set_errno(err, errno, "namespace");
	pq.dev = (uint64_t)st.st_dev;
	pq.ino = (uint64_t)st.st_ino;
	r = walk_records(q->ctx->state_dir, pin_of, &pq, err);
	if (r <= 0) {
		scan_done(&pq.found);
		return r;
	}
	o = &pq.found.v[0];
	if (!same_box(q, o))
		r = hezo_error_set(
			err, EPERM,
			"no process is in it, but container %s of project %s%s was "
			"handed it and is still recorded; this container's project is %s",
			o->id, o->project ?: "(none)",
			same(q->project, o->project) ? " (another pod)" : "",
			q->project ?: "(none)");
	else
		r = 0;
	scan_done(&pq.found);
	return r;
}

int shim_ns_owner(void *data, const char *kind, const char *path, const char *named, char **owner,
		  struct hezo_error **err)
{
	const struct shim_owner_query *q = data;
	struct owner_scan s = {.q = q};
	_cleanup_close_ int fd = -1;
	int r;

	*owner = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "%s", path);
	r = load_records(q->ctx->state_dir, &s, err);
	if (r == 0)
		r = hezo_ns_foreach_task(fd, kind, visit, &s, err);
	if (r < 0) {
		scan_done(&s);
		return r;
	}
	if (s.foreign) {
		char comm[64] = "", cpath[64];
		_cleanup_free_ char *c = NULL;
		size_t len;

		snprintf(cpath, sizeof(cpath), "/proc/%d/comm", (int)s.foreign);
		if (hezo_read_file_at(AT_FDCWD, cpath, sizeof(comm), &c, &len, NULL) == 0)
			snprintf(comm, sizeof(comm), " %.*s", (int)strcspn(c, "\n"), c);
		scan_done(&s);
		if (s.foreign_tid != s.foreign)
			return hezo_error_set(err, ESRCH, "thread %d of process %d%s is in it",
					      (int)s.foreign_tid, (int)s.foreign, comm);
		return hezo_error_set(err, ESRCH, "process %d%s is in it", (int)s.foreign, comm);
	}
	if (s.away) {
		r = hezo_error_set(
			err, EPERM,
			"it is container %s's, of project %s%s; this container's project "
			"is %s%s",
			s.away->id, s.away->project ?: "(none)",
			same(q->project, s.away->project) ? " and another pod" : "",
			q->project ?: "(none)",
			same(q->project, s.away->project) ? "" : " (see docs/policy.md)");
		scan_done(&s);
		return r;
	}
	/*
	 * Under runsc the sandbox's host processes (sentry, gofer) sit in the container's cgroup;
	 * only its network namespace is the workload's. Its pid, IPC, UTS, mount namespaces on
	 * the host are runsc's own (the gofer's holds a procfs of the host's pids): a runc box is
	 * not put in them (a runsc joiner reads only the network path; the Sentry keeps the rest).
	 */
	if (s.owner && strcmp(kind, "net") != 0 && s.owner_rec->backend &&
	    strcmp(s.owner_rec->backend, "runsc") == 0 && q->policy &&
	    hezo_policy_backend(q->policy) != HEZO_BACKEND_RUNSC) {
		r = hezo_error_set(err, EPERM,
				   "it is runsc's own %s namespace for container %s on the host "
				   "(only a runsc container's network namespace is the workload's)",
				   kind, s.owner);
		scan_done(&s);
		return r;
	}
	if (s.owner) {
		*owner = strdup(s.owner);
		if (!*owner) {
			scan_done(&s);
			return hezo_error_set(err, ENOMEM, "out of memory");
		}
	}
	scan_done(&s);
	return *owner ? 0 : pinned_owner(q, fd, named, err);
}

/*
 * A live engine sandbox other than self's claiming pod uid: refused, naming it. self_bundle (the
 * sandbox's recorded bundle) given: *self_live says whether that bundle is a live engine task
 * naming the uid itself.
 */
static int engine_rival(const struct shim_owner_query *q, const char *uid, const char *self,
			const char *self_bundle, bool *self_live, struct hezo_error **err)
{
	static const char *const none[] = {NULL};
	struct shim_pod_claims c;
	int r = shim_pod_claims(q->policy ? hezo_policy_engine_roots(q->policy) : none, uid, self,
				self_bundle, &c, err);

	if (r < 0)
		return r;
	if (self_live)
		*self_live = c.self_live;
	if (c.other)
		r = hezo_error_set(err, EEXIST,
				   "annotation %s: pod %s is also sandbox %s's, a live task at %s",
				   pod_keys[KEY_SANDBOX_UID], uid, c.other, c.where);
	shim_pod_claims_done(&c);
	return r;
}

/*
 * Is the app container the engine's own, beside its sandbox: its bundle (resolved) an engine task
 * directory for its ID in the very directory that holds the sandbox's task (containerd's NS
 * directory, CRI-O's overlay-containers), made under the sandbox's --root? Copying a running
 * pod's annotations and joining its namespaces from anywhere else gets none of its volumes.
 */
static bool app_beside_sandbox(const struct shim_owner_query *q, const char *id,
			       const struct cgroup_owner *sandbox)
{
	static const char *const none[] = {NULL};
	const char *const *roots = q->policy ? hezo_policy_engine_roots(q->policy) : none;
	char sreal[PATH_MAX], sparent[PATH_MAX], aparent[PATH_MAX];
	int sk, ak;

	if (!q->bundle || !sandbox->bundle || !same(q->ctx->g.root, sandbox->root) ||
	    !realpath(sandbox->bundle, sreal))
		return false;
	sk = shim_engine_task_bundle(roots, sreal, sandbox->id, sparent);
	ak = shim_engine_task_bundle(roots, q->bundle, id, aparent);
	return sk >= 0 && ak == sk && strcmp(sparent, aparent) == 0;
}

int shim_pod_uid(const struct shim_owner_query *q, const char *id, char **uid,
		 struct hezo_error **err)
{
	const char *type = hezo_json_string(hezo_json_get(q->annotations, CONTAINER_TYPE));
	const char *sandbox =
		hezo_json_string(hezo_json_get(q->annotations, pod_keys[KEY_SANDBOX_ID]));
	const char *claim =
		hezo_json_string(hezo_json_get(q->annotations, pod_keys[KEY_SANDBOX_UID]));
	/* A sandbox's claim is judged against the sandboxes being created too (under the lock). */
	struct owner_scan s = {.q = q, .creating = type && strcmp(type, "sandbox") == 0};
	const struct cgroup_owner *found = NULL;
	int r;

	*uid = NULL;
	if (!type || !sandbox)
		return 0;
	r = load_records(q->ctx->state_dir, &s, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < s.n; i++) {
		const struct cgroup_owner *o = &s.v[i];

		if (!same(o->type, "sandbox") || !o->pod[KEY_SANDBOX_UID])
			continue;
		/*
		 * A second live sandbox claiming a running pod's uid (in any project) would hand
		 * its app containers that pod's volumes.
		 */
		if (strcmp(type, "sandbox") == 0 && claim &&
		    strcmp(o->pod[KEY_SANDBOX_UID], claim) == 0 && strcmp(o->id, id) != 0) {
			r = hezo_error_set(err, EEXIST,
					   "annotation %s: pod %s is sandbox %s's, which runs",
					   pod_keys[KEY_SANDBOX_UID], claim, o->id);
			break;
		}
		if (same(q->project, o->project) && strcmp(o->id, sandbox) == 0 &&
		    same(o->pod[KEY_SANDBOX_ID], sandbox))
			found = o;
	}
	/* The engines' word: no other live sandbox of any runtime handler claims the pod. */
	if (r == 0 && claim && strcmp(type, "sandbox") == 0)
		r = engine_rival(q, claim, id, NULL, NULL, err);
	if (r == 0 && found && strcmp(type, "container") == 0) {
		const char *pod = found->pod[KEY_SANDBOX_UID];
		bool live = false;

		if (claim && strcmp(claim, pod) != 0)
			r = hezo_error_set(err, EPERM,
					   "annotation %s: %s is not the uid of this container's "
					   "sandbox %s (pod %s)",
					   pod_keys[KEY_SANDBOX_UID], claim, sandbox, pod);
		/* The real pod may have started since the sandbox did. */
		else if ((r = engine_rival(q, pod, sandbox, found->bundle ?: "", &live, err)) < 0)
			;
		/*
		 * A sandbox that is no live engine task naming the uid, an app container that is
		 * not the engine's task beside it, or a pod whose kubelet directory is not there or
		 * younger than the sandbox: no pod volumes.
		 */
		else if (!live || !app_beside_sandbox(q, id, found) ||
			 !shim_pod_dir_anchors(q->policy ? hezo_policy_kubelet_root(q->policy)
							 : NULL,
					       pod, found->bundle))
			;
		else if (!(*uid = strdup(pod)))
			r = hezo_error_set(err, ENOMEM, "out of memory");
	}
	scan_done(&s);
	return r;
}

int shim_runsc_pod_join(const struct shim_owner_query *q, const char *id, const char *sandbox,
			struct hezo_error **err)
{
	struct owner_scan s = {.q = q};
	const struct cgroup_owner *o = NULL;
	const char *why = NULL;
	int r;

	/*
	 * runsc joins whatever sandbox of its --root the annotation names, with its network, its
	 * volumes and its kernel: only the pod's own sandbox, judged from the shim's records and
	 * the engine's bundles, never from the annotations alone.
	 */
	r = load_records(q->ctx->state_dir, &s, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < s.n && !o; i++)
		if (strcmp(s.v[i].id, sandbox) == 0 && same(s.v[i].root, q->ctx->g.root))
			o = &s.v[i];
	if (!o)
		why = "no live sandbox of hezo-shim's under this --root has that ID";
	else if (!same(o->backend, "runsc"))
		why = "it does not run under runsc";
	else if (!same(o->type, "sandbox") || !same(o->pod[KEY_SANDBOX_ID], sandbox))
		why = "it is not a pod's sandbox";
	else if (!same(q->project, o->project))
		why = "it is another project's";
	else if (!same_box(q, o))
		why = "its pod annotations are another pod's";
	else if (!app_beside_sandbox(q, id, o))
		why = "this container's bundle is not the engine's task beside the sandbox's";
	if (why)
		r = hezo_error_set(err, EPERM,
				   "container %s may not join runsc sandbox %s: %s (a pod's app "
				   "container runs only in its own pod's sandbox)",
				   id, sandbox, why);
	scan_done(&s);
	return r;
}
