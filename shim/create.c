/*
 * create and run: put the bundle's config.json in the policy's box, record the backend,
 * then hand over to it on a bundle of the shim's own. Nothing is changed on disk until every check
 * has passed, and a bundle the backend refuses gets its config.json (and side file) back and no
 * record. The same bundle created again is judged on the caller's original, kept beside it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hezo-config.h"
#include "hezo-file.h"
#include "hezo-kept.h"
#include "hezo-mountinfo.h"
#include "hezo-spec.h"
#include "shim.h"

#define HOOK_TIMEOUT 10

static int set_or_null(struct hezo_json *obj, const char *key, const struct hezo_json *v)
{
	struct hezo_json *c = v ? hezo_json_clone(v) : hezo_json_new_null();

	return c ? hezo_json_set(obj, key, c) : -ENOMEM;
}

static int set_string(struct hezo_json *obj, const char *key, const char *s)
{
	struct hezo_json *v = s ? hezo_json_new_string(s) : hezo_json_new_null();

	return v ? hezo_json_set(obj, key, v) : -ENOMEM;
}

/* What the box ended up being, for `hezo-shim` users reading a record and for debugging. */
static struct hezo_json *box_summary(const struct hezo_policy *p, const struct hezo_json *input,
				     const struct hezo_json *spec, bool engine_seccomp)
{
	_cleanup_json_ struct hezo_json *box = hezo_json_new_object();
	_cleanup_json_ struct hezo_json *pol = NULL, *eg = NULL;
	struct hezo_json *tmpfs, *mounts, *egress;
	_cleanup_free_ char *both = NULL;
	const char *seccomp = "default";
	int r = 0;

	if (!box)
		return NULL;
	r = r
		    ?: set_or_null(box, "caps",
				   hezo_json_get_path(spec, "process.capabilities.bounding"));
	r = r
		    ?: set_or_null(box, "noNewPrivileges",
				   hezo_json_get_path(spec, "process.noNewPrivileges"));
	r = r ?: set_or_null(box, "readonly", hezo_json_get_path(spec, "root.readonly"));
	tmpfs = hezo_json_ensure_object(box, "tmpfs");
	if (!tmpfs)
		return NULL;
	mounts = hezo_json_get_type(spec, "mounts", HEZO_JSON_ARRAY);
	HEZO_JSON_FOREACH (i, mounts) {
		const struct hezo_json *m = mounts->items[i];
		const char *dest = hezo_json_string(hezo_json_get(m, "destination"));
		const char *type = hezo_json_string(hezo_json_get(m, "type"));
		struct hezo_json *opts = hezo_json_get_type(m, "options", HEZO_JSON_ARRAY);
		const char *size = NULL;

		if (!dest || !type || strcmp(type, "tmpfs") != 0)
			continue;
		HEZO_JSON_FOREACH (k, opts) {
			const char *o = hezo_json_string(opts->items[k]);
			if (o && strncmp(o, "size=", 5) == 0)
				size = o + 5;
		}
		r = r ?: set_string(tmpfs, dest, size);
	}
	r = r
		    ?: set_or_null(box, "memory",
				   hezo_json_get_path(spec, "linux.resources.memory.limit"));
	r = r ?: set_or_null(box, "swap", hezo_json_get_path(spec, "linux.resources.memory.swap"));
	r = r ?: set_or_null(box, "pids", hezo_json_get_path(spec, "linux.resources.pids.limit"));
	r = r
		    ?: set_or_null(box, "cpuQuota",
				   hezo_json_get_path(spec, "linux.resources.cpu.quota"));
	r = r
		    ?: set_or_null(box, "cpuPeriod",
				   hezo_json_get_path(spec, "linux.resources.cpu.period"));
	pol = hezo_policy_to_json(p);
	if (hezo_json_string(hezo_json_get(pol, "seccomp")))
		seccomp = hezo_json_string(hezo_json_get(pol, "seccomp"));
	/* The engine's profile narrowed by the box's (policy/seccomp-floor.c). */
	if (engine_seccomp && asprintf(&both, "engine+%s", seccomp) < 0)
		r = -ENOMEM;
	r = r ?: set_string(box, "seccomp", both ? both : seccomp);
	eg = hezo_policy_egress_json(p);
	egress = hezo_json_ensure_object(box, "egress");
	if (!egress)
		return NULL;
	r = r ?: set_or_null(egress, "mode", hezo_json_get(eg, "mode"));
	r = r ?: set_or_null(egress, "allow", hezo_json_get(eg, "allow"));
	/* What the backend does not hold of what the box says (docs/hardening.md). */
	if (r == 0) {
		struct hezo_json *lim = hezo_json_ensure_array(box, "limits");

		for (const char *const *l = hezo_backend_limits(hezo_policy_backend(p));
		     r == 0 && *l; l++)
			r = lim ? hezo_json_append(lim, hezo_json_new_string(*l)) : -ENOMEM;
	}
	/* What the engine asked for and did not get, each with its reason. */
	if (r == 0) {
		struct hezo_json *rw = hezo_policy_tmpfs_rewrites(p, input, spec);

		r = rw ? hezo_json_set(box, "rewrites", rw) : -ENOMEM;
	}
	return r < 0 ? NULL : TAKE_PTR(box);
}

static struct hezo_json *record_annotations(const struct hezo_json *spec)
{
	struct hezo_json *ann = hezo_spec_annotations(spec);
	struct hezo_json *out = hezo_json_new_object();

	if (!out)
		return NULL;
	HEZO_JSON_FOREACH (i, ann) {
		/* The pod keys too: joins and pod volumes compare them with the owner's record. */
		if (strncmp(ann->keys[i], "org.hezo.", 9) != 0 && !shim_pod_key(ann->keys[i]))
			continue;
		if (set_or_null(out, ann->keys[i], ann->items[i]) < 0) {
			hezo_json_free(out);
			return NULL;
		}
	}
	return out;
}

static int build_record(const struct shim_ctx *ctx, const char *id, const char *bundle,
			const struct shim_target *t, const struct hezo_policy *p,
			const struct hezo_json *input, const struct hezo_json *spec,
			bool engine_seccomp, struct hezo_json **out, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *rec = hezo_json_new_object();
	struct hezo_json *args, *v;
	char created[64];
	time_t now = time(NULL);
	struct tm tm;
	int r = 0;

	if (!rec)
		return hezo_error_set(err, ENOMEM, "out of memory");
	gmtime_r(&now, &tm);
	strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	r = r ?: set_string(rec, "id", id);
	r = r ?: set_string(rec, "backend", hezo_backend_name(t->backend));
	r = r ?: set_string(rec, "path", t->path);
	if (r == 0 && !(args = hezo_json_ensure_array(rec, "args")))
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < t->args.n; i++) {
		v = hezo_json_new_string(t->args.v[i]);
		r = v ? hezo_json_append(args, v) : -ENOMEM;
	}
	r = r ?: set_string(rec, "bundle", bundle);
	/* The backend's --root: owner.c reads the container's state there. */
	r = r ?: set_string(rec, "root", ctx->g.root);
	r = r ?: set_string(rec, "project", hezo_policy_project(p));
	if (r == 0) {
		v = record_annotations(spec);
		r = v ? hezo_json_set(rec, "annotations", v) : -ENOMEM;
	}
	r = r ?: set_string(rec, "projectHint", ctx->g.project);
	r = r ?: set_string(rec, "created", created);
	/* Who is creating it: while that process lives, the ID is taken (check_old_record). */
	if (r == 0) {
		uint64_t start = 0;

		v = hezo_json_new_object();
		r = v && shim_proc_start_time(getpid(), &start) == 0 ? 0 : -ENOMEM;
		r = r ?: hezo_json_set(v, "pid", hezo_json_new_int(getpid()));
		r = r ?: hezo_json_set(v, "start", hezo_json_new_uint(start));
		r = r ?: hezo_json_set(rec, "creator", TAKE_PTR(v));
		hezo_json_free(v);
	}
	/* Where runsc put the sandbox: update and ps work on it (runsc has neither). */
	r = r ?: set_or_null(rec, "cgroupsPath", hezo_json_get_path(spec, "linux.cgroupsPath"));
	/* How the backend's driver reads that path: everything that reads it later must agree. */
	if (r == 0 && shim_backend_systemd_cgroup(t, &ctx->g)) {
		v = hezo_json_new_bool(true);
		r = v ? hezo_json_set(rec, "systemdCgroup", v) : -ENOMEM;
	}
	if (r == 0) {
		v = box_summary(p, input, spec, engine_seccomp);
		r = v ? hezo_json_set(rec, "box", v) : -ENOMEM;
	}
	if (r < 0)
		return hezo_error_set(err, -r, "container record: cannot build it");
	*out = TAKE_PTR(rec);
	return 0;
}

static int add_egress_hooks(const struct shim_ctx *ctx, const struct hezo_policy *p,
			    const struct hezo_json *secrets, const struct hezo_json *keys,
			    struct hezo_json *spec, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *eg = NULL;
	_cleanup_free_ char *egress = NULL, *env0 = NULL;
	enum hezo_egress_mode mode = hezo_policy_egress_mode(p);
	const struct hezo_json *ns;
	const char *ns_path;
	struct stat st;
	size_t len;
	int r;

	if (mode == HEZO_EGRESS_OFF)
		return 0;
	/* Filtering was asked for: without the hook the container would be unfiltered. */
	if (!ctx->hook_path || ctx->hook_path[0] != '/' || stat(ctx->hook_path, &st) < 0 ||
	    !S_ISREG(st.st_mode) || access(ctx->hook_path, X_OK) < 0)
		return hezo_error_set(err, ENOENT,
				      "egress hook %s is missing or not executable: egress mode %s "
				      "needs it",
				      ctx->hook_path ? ctx->hook_path : "(none)",
				      mode == HEZO_EGRESS_PROXY ? "proxy" : "deny");
	eg = hezo_policy_egress_json(p);
	/* proxyd learns each secret's hosts, placeholder and file; the value stays in the file. */
	if (!eg || (secrets && hezo_json_set(eg, "secrets", hezo_json_clone(secrets)) < 0) ||
	    (keys && hezo_json_set(eg, "keys", hezo_json_clone(keys)) < 0))
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = hezo_json_dump(eg, false, &egress, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "egress");
	if (asprintf(&env0, "HEZO_PROXYD_SOCKET=%s", ctx->proxyd_socket) < 0) {
		env0 = NULL;
		return hezo_error_set(err, ENOMEM, "out of memory");
	}
	const char *const wire[] = {"hezo-hook", "wire", "--egress", egress, NULL};
	const char *const unwire[] = {"hezo-hook", "unwire", NULL};
	const char *const env[] = {env0, NULL};

	r = hezo_spec_add_hook(spec, "prestart", ctx->hook_path, wire, env, HOOK_TIMEOUT, err);
	/*
	 * unwire undoes a proxyd registration, and a table in a namespace that outlives the
	 * container (one named by path: a pod's, another container's). deny in a namespace the
	 * runtime creates leaves neither: the table dies with the namespace, and the poststop
	 * hook would be one more exec per container for nothing.
	 */
	ns = hezo_spec_namespace(spec, "network");
	ns_path = ns ? hezo_json_string(hezo_json_get(ns, "path")) : NULL;
	if (r == 0 && (mode == HEZO_EGRESS_PROXY || (ns_path && ns_path[0] == '/')))
		r = hezo_spec_add_hook(spec, "poststop", ctx->hook_path, unwire, env, HOOK_TIMEOUT,
				       err);
	if (r < 0)
		return hezo_error_prefix(err, "config.json hooks");
	return 0;
}

/*
 * What the backend's state says of container ID: 0, it shows ID; -ENOENT, it has none (shim_exec
 * failing counts too: nothing ran); another -errno, an answer that does not parse, which shows
 * no container (the backend's own create refuses an ID it has).
 */
static int backend_state(struct shim_ctx *ctx, const struct shim_target *t, const char *id)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *status = NULL;
	long pid;

	return shim_runsc_state(ctx, t, id, &status, &pid, &e);
}

static bool backend_lacks(struct shim_ctx *ctx, const struct shim_target *t, const char *id)
{
	return backend_state(ctx, t, id) == -ENOENT;
}

static bool backend_has(struct shim_ctx *ctx, const struct shim_target *t, const char *id)
{
	return backend_state(ctx, t, id) == 0;
}

/*
 * The backend reads config.json (and resolves root.path and every bind source) from the bundle it
 * is given: handed the caller's, it would read whatever the caller renamed over config.json after
 * the checks, and follow a symlink swapped in for a directory the checks saw. It gets the shim's
 * private copy instead, whose root.path and bind sources name the objects the checks held, bind-
 * mounted into the private bundle (stage.c); the root is compared once more as written.
 */
/*
 * The backend's own config.json in the private bundle: spec is rewritten for it in place (the
 * staged root, bind sources and namespaces, the user namespace), so the caller writes what
 * engines read before, and reads only the cgroup and memory limit after, which staging leaves.
 */
static int save_backend_bundle(const struct shim_ctx *ctx, int pfd, const char *priv,
			       struct hezo_json *copy, const struct hezo_held *held,
			       const struct shim_userns *u, int userns_fd, struct hezo_error **err)
{
	_cleanup_free_ char *userns_root = NULL;
	bool rebuilt = false;
	int r;

	/*
	 * The box's root walks to its root filesystem: not below a state directory a caller may
	 * have put under a private one (HEZO_STATE_DIR), but beside the built-in one, in /run. It
	 * is only a mount point of the shim's own namespace, so every shim shares it.
	 */
	(void)ctx;
	if (asprintf(&userns_root, "%s.root", HEZO_STATE_DIR) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	/* The shim sets a box's rlimits in its own user namespace (rlimits.c), not the backend. */
	if (u)
		(void)hezo_json_remove(hezo_json_get(copy, "process"), "rlimits");
	r = shim_stage(pfd, priv, held, u, userns_fd, userns_root, copy, &rebuilt, err);
	r = r ?: hezo_spec_save_at(pfd, "config.json", copy, err);
	/* A rebuilt overlay is another mount of the held one's layers, read from its own table. */
	if (r == 0 && !rebuilt)
		r = shim_stage_verify_root(
			held, hezo_json_string(hezo_json_get_path(copy, "root.path")), err);
	return r;
}

/*
 * The verb's arguments with the caller's --bundle replaced by ours (first: Go stops at the ID),
 * and without --pid-file when the shim writes it itself (a runsc pod's app container).
 */
static int backend_verb_args(const struct shim_verb *v, const char *bundle, bool own_pid_file,
			     struct hezo_strv *out, struct hezo_error **err)
{
	int r;

	r = hezo_strv_push(out, "--bundle");
	r = r ?: hezo_strv_push(out, bundle);
	for (size_t i = 0; r == 0 && i < v->args.n; i++) {
		const struct shim_opt *o = &v->args.opts[i];

		if (o->flag && own_pid_file && strcmp(o->flag->name, "pid-file") == 0)
			continue;
		if (!o->flag || strcmp(o->flag->name, "bundle") != 0)
			r = shim_args_push_opt(out, o, v->argv);
	}
	return r < 0 ? hezo_error_set(err, -r, "out of memory") : 0;
}

/* Is the process a record names as its creator (pid and start time) still running? */
static bool creator_alive(const struct hezo_json *rec)
{
	const struct hezo_json *c = hezo_json_get(rec, "creator");
	uint64_t start, now;
	int64_t pid;

	return hezo_json_get_int64(hezo_json_get(c, "pid"), &pid) == 0 && pid > 0 &&
	       hezo_json_get_uint64(hezo_json_get(c, "start"), &start) == 0 &&
	       shim_proc_start_time((long)pid, &now) == 0 && now == start;
}

/*
 * Called with the root's record lock held, before anything is written. The ID is free only
 * when the backend has no container of that ID and no other create of it is under way: a
 * record is overwritten only once it stands for nothing (a foreground `run` that ended, whose
 * backend deleted the container itself; a create that died). A create under a live container's
 * ID would otherwise replace its record (project, box, annotations) before the backend refused.
 * A record of another backend whose container is still there stays, or its later verbs would go
 * to the wrong backend.
 */
static int check_old_record(struct shim_ctx *ctx, const char *id, const struct shim_target *t,
			    struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *old = NULL;
	_cleanup_target_ struct shim_target ot = {0};
	struct shim_ctx octx;
	const char *b, *oroot;
	int r;

	if (backend_has(ctx, t, id))
		return hezo_error_set(err, EEXIST, "container %s already exists (%s has it)", id,
				      hezo_backend_name(t->backend));
	r = shim_record_read(ctx, id, &old, err);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (creator_alive(old))
		return hezo_error_set(err, EEXIST,
				      "container %s is being created by another hezo-shim", id);
	b = hezo_json_string(hezo_json_get(old, "backend"));
	oroot = hezo_json_string(hezo_json_get(old, "root"));
	/* The default key holds several spellings of the backends' own roots: ask the old one's. */
	if (b && strcmp(b, hezo_backend_name(t->backend)) == 0 &&
	    strcmp(oroot ?: "", ctx->g.root ?: "") == 0)
		return 0;
	/* A record whose container its backend does not have stands for nothing. */
	octx = *ctx;
	octx.g.root = oroot;
	r = shim_record_target(old, &ot, NULL);
	if (r == 0 && backend_lacks(&octx, &ot, id))
		return 0;
	return hezo_error_set(err, EEXIST,
			      "container %s already exists under backend %s (delete --force it "
			      "first)",
			      id, b ? b : "(unknown)");
}

/* Undo the record when a step after writing it fails; r passes through. */
static int drop_record(struct shim_ctx *ctx, const char *id, int r)
{
	if (r < 0)
		shim_record_remove(ctx, id);
	return r;
}

/*
 * The caller's input: config.json, or the original the shim kept beside the config.json it wrote
 * when config.json is still that document (a bundle run again, as runc users do). Either one is
 * then judged in full, so the side file lets a caller ask for nothing they could not write into
 * config.json itself (spec/hezo-kept.h). A side file that cannot be used (a symlink, a FIFO, a
 * directory, too large, not the shim's) is ignored: config.json is then the input, as it stands.
 * *old gets the side file's bytes when it was a regular file, to be put back on failure.
 */
static int choose_input(int bfd, struct hezo_json **spec, char **old, size_t *old_len)
{
	struct hezo_json *input = NULL;
	int r;

	if (hezo_spec_kept_read_at(bfd, old, old_len) < 0)
		return 0;
	r = hezo_spec_kept_input(*spec, *old, *old_len, &input);
	if (r <= 0)
		return r;
	hezo_json_free(*spec);
	*spec = input;
	return 0;
}

/*
 * The side file for the next create of this bundle: what is written now, and its input, from
 * their compact dumps.
 */
static int save_kept(int bfd, const char *written, size_t wlen, const char *input, size_t ilen,
		     struct hezo_error **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = hezo_spec_kept_join(written, wlen, input, ilen, &buf, &len, err);
	r = r ?: hezo_write_private_file_at(bfd, HEZO_SPEC_KEPT_NAME, buf, len, err);
	return r < 0 ? hezo_error_prefix(err, "%s", HEZO_SPEC_KEPT_NAME) : 0;
}

/*
 * The path of the open bundle directory as the kernel names it (no symlink in it), and that path
 * still names that directory: a --bundle that is a link flipped after config.json was read
 * would have root.path and the engine's bundle judged in another directory.
 */
static int bundle_path(int bfd, const char *bundle, char out[PATH_MAX], struct hezo_error **err)
{
	char link[64];
	struct stat a, b;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", bfd);
	n = readlink(link, out, PATH_MAX - 1);
	if (n < 0)
		return hezo_error_set_errno(err, errno, "bundle %s", bundle);
	out[n] = '\0';
	if (out[0] != '/' || fstat(bfd, &a) < 0 || stat(out, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino)
		return hezo_error_set(err, ESTALE,
				      "bundle %s: the directory moved while it was read; create it "
				      "again",
				      bundle);
	return 0;
}

/* The side file as it was before this create: its old bytes, or none. */
static void restore_kept(int bfd, const char *old, size_t len)
{
	if (old)
		(void)hezo_write_private_file_at(bfd, HEZO_SPEC_KEPT_NAME, old, len, NULL);
	else
		(void)unlinkat(bfd, HEZO_SPEC_KEPT_NAME, 0);
}

/*
 * Where a backend keeps a container's state: its --root, or its own default. runc reads
 * ROOT/ID/state.json and runsc ROOT/ID_sandbox:ID.state, and runs the hooks they name.
 */
static void state_root(const char *root, const char *backend, char out[PATH_MAX])
{
	const char *def = shim_backend_default_root(backend);

	if (root && *root) {
		/* What snprintf "%s" gives, without its cost: the walks call this once per record.
		 */
		size_t n = strnlen(root, PATH_MAX - 1);

		memcpy(out, root, n);
		out[n] = '\0';
		return;
	}
	if (!realpath(def, out))
		snprintf(out, PATH_MAX, "%s",
			 strcmp(def, "/var/run/runsc") == 0 ? "/run/runsc" : def);
}

/*
 * What the box may reach on the host, for the record: every bind source, and the root
 * filesystem, each by path and by device and inode (a directory may be
 * renamed after it was judged; the box still holds it). Those of the live records are checked
 * against every later --root, and every later box's against their roots (state_overlaps).
 */
struct handed {
	const struct hezo_held *held;
	size_t n, nbinds; /* past the binds, if there, the root filesystem */
};

static void handed_of(const struct hezo_held *held, struct handed *out)
{
	out->held = held;
	out->nbinds = held->nbinds;
	/* The root filesystem read-only too: host mounts below it stay writable under runc. */
	out->n = held->nbinds + (held->root.path != NULL);
}

static const struct hezo_held_path *handed_at(const struct handed *h, size_t i)
{
	return i < h->nbinds ? &h->held->binds[i] : &h->held->root;
}

/* The object dev:ino is path, or a directory on the way to it (what exists of it). */
static bool on_the_way(const char *path, uint64_t dev, uint64_t ino)
{
	char buf[PATH_MAX];
	struct stat st;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return true; /* not judged: as if it were */
	for (;;) {
		char *slash;

		if (stat(buf[0] ? buf : "/", &st) == 0 && st.st_dev == dev && st.st_ino == ino)
			return true;
		slash = strrchr(buf, '/');
		if (!slash || !buf[0])
			return false;
		*slash = '\0';
	}
}

/*
 * Where writes to a path land, by the mount table: the filesystem and the path inside it, and
 * the upper directory of each overlay on the way. Another name for the same directory (a bind
 * mount of it or of a directory above it, an overlay's upper dir) has the same place. n < 0:
 * not known, which counts as overlapping everything.
 */
struct placed {
	struct hezo_place p[HEZO_PLACES_MAX];
	int n;
};

static void place(const struct hezo_mounts *m, const char *path, struct placed *out)
{
	out->n = hezo_mounts_places(m, path, out->p, HEZO_PLACES_MAX);
}

static bool placed_overlap(const struct placed *a, const struct placed *b)
{
	return a->n < 0 || b->n < 0 || hezo_places_overlap(a->p, (size_t)a->n, b->p, (size_t)b->n);
}

/*
 * Does a handed object (by path, by where that path's writes land, or by what it is now)
 * overlap directory dir (dir_at: where writes to dir land)?
 */
static bool handed_overlaps(const char *path, const struct placed *at, bool have_id, uint64_t dev,
			    uint64_t ino, const char *dir, const struct placed *dir_at)
{
	return (path && (hezo_policy_paths_overlap(path, dir) || placed_overlap(at, dir_at))) ||
	       (have_id && on_the_way(dir, dev, ino));
}

struct overlap_scan {
	const char *key, *id, *root; /* this create's key, ID and backend state directory */
	const struct handed *handed;
	const struct hezo_mounts *mounts;
	const struct placed *root_at, *handed_at; /* root's place; each handed object's */
	struct placed *scratch;
	/*
	 * The last record's backend state directory, its place, and the first handed object that
	 * overlaps it (-1: none): most records share one, and the answer is the directory's alone.
	 */
	struct placed *theirs_at;
	char theirs[PATH_MAX];
	bool theirs_set;
	ssize_t theirs_hit;
	char why[2 * PATH_MAX + 256];
};

static const char *handed_what(const struct handed *h, size_t i)
{
	return i < h->nbinds ? "bind source" : "root.path";
}

static int overlap_one(void *data, const char *key, struct hezo_json *rec)
{
	struct overlap_scan *s = data;
	const struct hezo_json *theirs = hezo_json_get_type(rec, "handed", HEZO_JSON_ARRAY);
	const char *id = hezo_json_string(hezo_json_get(rec, "id")) ?: "?";
	int live = -1; /* not asked yet */
	char root[PATH_MAX];

	/* This ID's own earlier record under this root is not live (check_old_record). */
	if (strcmp(key, s->key) == 0 && strcmp(id, s->id) == 0)
		return 0;
	HEZO_JSON_FOREACH (i, theirs) {
		const struct hezo_json *e = theirs->items[i];
		const char *h = hezo_json_string(hezo_json_get(e, "path"));
		uint64_t dev = 0, ino = 0;
		bool have_id = hezo_json_get_uint64(hezo_json_get(e, "dev"), &dev) == 0 &&
			       hezo_json_get_uint64(hezo_json_get(e, "ino"), &ino) == 0;

		/*
		 * By identity only while the box lives: its mounts keep the objects (and their
		 * inode numbers) alive; those of a box gone may be a new directory's now.
		 */
		if (have_id && live < 0)
			live = shim_record_live(rec);
		have_id = have_id && live > 0;

		if (h)
			place(s->mounts, h, s->scratch);
		if (handed_overlaps(h, s->scratch, have_id, dev, ino, s->root, s->root_at)) {
			snprintf(s->why, sizeof(s->why),
				 "--root %s overlaps %s, which container %s's box is handed: a box "
				 "could rewrite the backend's state there",
				 s->root, h ? h : "a directory", id);
			return -EPERM;
		}
	}
	state_root(hezo_json_string(hezo_json_get(rec, "root")),
		   hezo_json_string(hezo_json_get(rec, "backend")), root);
	if (!s->theirs_set || strcmp(root, s->theirs) != 0) {
		place(s->mounts, root, s->theirs_at);
		snprintf(s->theirs, sizeof(s->theirs), "%s", root);
		s->theirs_set = true;
		s->theirs_hit = -1;
		for (size_t i = 0; i < s->handed->n && s->theirs_hit < 0; i++) {
			const struct hezo_held_path *h = handed_at(s->handed, i);

			if (handed_overlaps(h->path, &s->handed_at[i], h->fd >= 0, h->dev, h->ino,
					    root, s->theirs_at))
				s->theirs_hit = (ssize_t)i;
		}
	}
	if (s->theirs_hit >= 0) {
		size_t i = (size_t)s->theirs_hit;

		snprintf(
			s->why, sizeof(s->why),
			"%s %s overlaps %s, the backend's state directory of container %s: the box "
			"could rewrite that container's state",
			handed_what(s->handed, i), handed_at(s->handed, i)->path, root, id);
		return -EPERM;
	}
	return 0;
}

/*
 * No box may reach a backend's state directory (the records say which boxes hold what, and
 * which roots are in use), its own included, nor hezo-shim's records: runc and runsc trust
 * what they find there, hooks included. Checked both ways, as a later box or a later --root
 * may be the one that overlaps, by path and by what the objects are.
 */
static int state_overlaps(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
			  const struct hezo_held *held, const struct hezo_mounts *mounts,
			  struct hezo_error **err)
{
	_cleanup_free_ struct placed *at = NULL;
	struct handed handed;
	struct overlap_scan s = {.id = id, .handed = &handed, .mounts = mounts};
	char key[SHIM_KEY_LEN], root[PATH_MAX], state[PATH_MAX];
	int r;

	handed_of(held, &handed);
	state_root(ctx->g.root, hezo_backend_name(t->backend), root);
	if (!realpath(ctx->state_dir, state))
		snprintf(state, sizeof(state), "%s", ctx->state_dir);
	/*
	 * [0] the --root, [1] the shim's state directory, [2] scratch, [3] the place of the last
	 * record's state directory, then the handed objects. Not zeroed: each is 16 KiB of paths,
	 * and place() fills one before it is read.
	 */
	at = reallocarray(NULL, 4 + handed.n, sizeof(*at));
	if (!at)
		return hezo_error_set(err, ENOMEM, "out of memory");
	place(mounts, root, &at[0]);
	place(mounts, state, &at[1]);
	for (size_t i = 0; i < handed.n; i++) {
		const struct hezo_held_path *h = handed_at(&handed, i);
		place(mounts, h->path, &at[4 + i]);
		if (handed_overlaps(h->path, &at[4 + i], h->fd >= 0, h->dev, h->ino, root, &at[0]))
			return hezo_error_set(err, EPERM,
					      "%s %s overlaps this container's backend state "
					      "directory %s: the box could rewrite its own state",
					      handed_what(&handed, i), h->path, root);
		if (handed_overlaps(h->path, &at[4 + i], h->fd >= 0, h->dev, h->ino, state, &at[1]))
			return hezo_error_set(err, EPERM,
					      "%s %s overlaps hezo-shim's state directory %s: the "
					      "box could rewrite the containers' records",
					      handed_what(&handed, i), h->path, state);
	}
	shim_record_key_for_root(ctx->g.root, key);
	s.key = key;
	s.root = root;
	s.root_at = &at[0];
	s.scratch = &at[2];
	s.theirs_at = &at[3];
	s.handed_at = &at[4];
	r = shim_records_foreach_brief(ctx, overlap_one, &s);
	if (r == -EPERM)
		return hezo_error_set(err, EPERM, "%s", s.why);
	if (r < 0)
		return hezo_error_set(err, -r, "the live containers' records: cannot read them");
	return 0;
}

/*
 * Everything create judges from the bundle, the policy and the live state around the container
 * (its pod, the engines' use of its ID, the namespaces' owners, the live boxes' cgroups): spec
 * is rewritten in place and held gets the objects it names. Run once to judge and again under
 * the records lock, where the result must not have changed (shim_cmd_create).
 */
struct root_judge {
	const struct hezo_strv *names; /* the --root, then every other name the mount table gives */
	const char *docker_root, *podman_root;
	const char *as;	    /* the name found */
	char dir[PATH_MAX]; /* the directory of a table it overlaps, or the bundle it is inside */
	bool above, bundle;
};

/* Is any name where a box of this policy may be handed a directory? */
static int names_in_table(const struct hezo_policy *p, void *data)
{
	struct root_judge *j = data;

	for (size_t i = 0; i < j->names->n; i++)
		if (hezo_policy_box_writable_dir(p, j->names->v[i], j->docker_root, j->podman_root,
						 j->dir, sizeof(j->dir), &j->above)) {
			j->as = j->names->v[i];
			return 1;
		}
	return 0;
}

/*
 * Is path at or below a bundle directory (one with a config.json)? A box's root filesystem that
 * is no engine's is inside its bundle (policy/rootfs.c), and a box may keep a descriptor of it
 * after its end: no record says it then, and no table.
 */
static bool in_bundle(const char *path, char *bundle, size_t size)
{
	char buf[PATH_MAX + 16];
	struct stat st;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return true;
	for (;;) {
		size_t n = strlen(buf);
		char *slash;

		snprintf(buf + n, sizeof(buf) - n, "%sconfig.json",
			 n && buf[n - 1] == '/' ? "" : "/");
		if (stat(buf, &st) == 0 && S_ISREG(st.st_mode)) {
			buf[n] = '\0';
			snprintf(bundle, size, "%s", n ? buf : "/");
			return true;
		}
		buf[n] = '\0';
		slash = strrchr(buf, '/');
		if (!slash || n <= 1)
			return false;
		*(slash == buf ? slash + 1 : slash) = '\0';
	}
}

static int add_name(const char *path, void *data)
{
	struct hezo_strv *names = data;

	return hezo_strv_contains(names, path) ? 0 : hezo_strv_push(names, path);
}

/*
 * runc trusts its state directory (state.json names the init, the config, the hooks): not where
 * a box of any project may be handed a directory, nor inside a bundle, by the --root's text or
 * any other name the mount table gives it (a bind mount of a share's subdirectory). Every
 * project's table, not only this container's: a box may keep what it was handed past its own
 * end (a descriptor passed to another box), where no record says it any more.
 */
static int judge_root(const struct shim_ctx *ctx, const struct hezo_policy *base,
		      const struct hezo_policy *p, const struct hezo_mounts *mounts,
		      const char *docker_root, const char *podman_root, struct hezo_error **err)
{
	_cleanup_strv_ struct hezo_strv names = {0};
	struct root_judge j = {.names = &names,
			       .docker_root = docker_root[0] ? docker_root : NULL,
			       .podman_root = podman_root[0] ? podman_root : NULL};
	struct hezo_place at[HEZO_PLACES_MAX];
	const char *also;
	int r, n;

	n = hezo_mounts_places(mounts, ctx->g.root, at, HEZO_PLACES_MAX);
	if (n < 0)
		return hezo_error_set(err, -n, "--root %s: cannot place it in the mount table",
				      ctx->g.root);
	r = hezo_strv_init(&names);
	r = r ?: hezo_strv_push(&names, ctx->g.root);
	for (int i = 0; r == 0 && i < n; i++)
		r = hezo_mounts_names(mounts, &at[i], add_name, &names);
	if (r < 0)
		return hezo_error_set(err, -r, "out of memory");
	/* This container's table, the main policy's, then each project's (layered once). */
	r = names_in_table(p, &j);
	r = r ?: hezo_policy_foreach_project(base, names_in_table, &j);
	if (r < 0) {
		char why[PATH_MAX + 128];

		hezo_policy_projects_why(base, r, why, sizeof(why));
		return hezo_error_set(err, -r,
				      "--root %s: the projects' policies cannot judge it: %s",
				      ctx->g.root, why);
	}
	for (size_t i = 0; r == 0 && i < names.n; i++)
		if (in_bundle(names.v[i], j.dir, sizeof(j.dir))) {
			j.as = names.v[i];
			j.bundle = true;
			r = 1;
		}
	if (r == 0)
		return 0;
	also = strcmp(j.as, ctx->g.root) != 0 ? j.as : NULL;
	if (j.bundle)
		return hezo_error_set(err, EPERM,
				      "--root %s%s%s%s is inside the bundle %s (it has a "
				      "config.json): a box's root filesystem is there, and the box "
				      "could rewrite the backend's state",
				      ctx->g.root, also ? " (also named " : "", also ?: "",
				      also ? ")" : "", j.dir);
	return hezo_error_set(err, EPERM,
			      "--root %s%s%s%s is %s %s, which boxes may be handed: a box could "
			      "rewrite the backend's state there",
			      ctx->g.root, also ? " (also named " : "", also ?: "", also ? ")" : "",
			      j.above ? "above" : "at or below", j.dir);
}

static int judge(struct shim_ctx *ctx, const struct hezo_policy *base, const struct hezo_policy *p,
		 const struct shim_target *t, struct hezo_json *spec, const char *id,
		 const char *bundle_real, struct hezo_held *held, struct hezo_error **err)
{
	_cleanup_(hezo_mounts_free) struct hezo_mounts mounts = {0};
	_cleanup_free_ char *pod_uid = NULL, *in_use = NULL;
	struct shim_owner_query owner_q = {.ctx = ctx,
					   .project = hezo_policy_project(p),
					   .annotations = hezo_spec_annotations(spec),
					   .policy = p,
					   .bundle = bundle_real};
	struct hezo_apply_env env = {.id = id,
				     .bundle = bundle_real,
				     .ns_owner = shim_ns_owner,
				     .data = &owner_q,
				     .held = held};
	char docker_root[PATH_MAX], podman_root[PATH_MAX], task_dir[PATH_MAX];
	struct hezo_live_cgroup *live = NULL;
	size_t nlive = 0;
	int r;

	/* Who the container is comes from the shim's records and the engines, not its own word. */
	r = shim_pod_uid(&owner_q, id, &pod_uid, err);
	r = r ?: shim_id_in_use(ctx, id, bundle_real, &in_use, err);
	if (r < 0)
		return r;
	/* Under runsc a pod's app container runs in the sandbox its annotation names. */
	if (t->backend == HEZO_BACKEND_RUNSC) {
		const char *sandbox;

		r = shim_runsc_pod_app(spec, &sandbox, err);
		if (r > 0)
			r = shim_runsc_pod_join(&owner_q, id, sandbox, err);
		if (r < 0)
			return r;
	}
	shim_engine_roots(docker_root, podman_root);
	/* One look at the mount table for the --root's names and the handed objects' places. */
	r = hezo_mounts_read(&mounts);
	if (r < 0)
		return hezo_error_set(err, -r, "/proc/self/mountinfo: cannot read the mount table");
	if (ctx->g.root &&
	    (r = judge_root(ctx, base, p, &mounts, docker_root, podman_root, err)) < 0)
		return r;
	env.pod_uid = pod_uid;
	env.id_in_use = in_use;
	env.engine_bundle = shim_engine_task_bundle(hezo_policy_engine_roots(p), bundle_real, id,
						    task_dir) >= 0;
	env.docker_root = docker_root[0] ? docker_root : NULL;
	env.podman_root = podman_root[0] ? podman_root : NULL;
	env.systemd_cgroup = shim_backend_systemd_cgroup(t, &ctx->g);
	/* An absent cgroupsPath is /ID (policy/cgroups.c), which nests like any other. */
	env.fresh_cgroup = t->backend == HEZO_BACKEND_RUNSC;
	r = shim_live_cgroups(ctx, id, &live, &nlive);
	if (r < 0)
		return hezo_error_set(err, -r,
				      "the live containers' cgroups: cannot read the records");
	env.live_cgroups = live;
	env.n_live_cgroups = nlive;
	env.cgroup_live = shim_live_cgroup;
	r = hezo_policy_apply_spec(p, spec, &env, err);
	if (r < 0) /* every field it names is the bundle's config.json's */
		hezo_error_prefix(err, "config.json");
	shim_live_cgroups_free(live, nlive);
	r = r ?: state_overlaps(ctx, t, id, held, &mounts, err);
	r = r ?: shim_workspace_judge(base, p, held, &mounts, err);
	/* Last, so a refusal that names a field of config.json is the one a caller sees. */
	return r ?: shim_id_live_elsewhere(ctx, id, err);
}

/*
 * cgroup v1 counts TCP socket buffers against a memory cgroup only once that cgroup's
 * memory.kmem.tcp.limit_in_bytes is set, and apart from memory.limit_in_bytes; runc 1.1.5 ignores
 * linux.resources.memory.kernelTCP. A box whose peer never reads held 300 MiB of socket buffers
 * against a 64 MiB cap, in the host's one tcp_mem pool (red team pass 12, part R2, H1). Under
 * runc with cgroupfs, the shim makes the box's memory cgroup (runc takes an empty one as its own)
 * with TCP capped at a quarter of the memory limit; under runsc (network host: the host's TCP
 * stack) it caps the cgroup runsc made, after its create. made: the first directory it made, to
 * remove if the backend does not take it.
 */
static int tcp_accounting(const struct shim_target *t, const struct hezo_json *spec, bool systemd,
			  char made[PATH_MAX], struct hezo_error **err)
{
	const char *cgpath = hezo_json_string(hezo_json_get_path(spec, "linux.cgroupsPath"));
	char dir[PATH_MAX], up[PATH_MAX];
	struct stat st;
	int64_t limit = 0;

	made[0] = '\0';
	if (systemd || !cgpath ||
	    hezo_json_get_int64(hezo_json_get_path(spec, "linux.resources.memory.limit"), &limit) <
		    0 ||
	    limit <= 0 || stat("/sys/fs/cgroup/memory/memory.kmem.tcp.limit_in_bytes", &st) < 0 ||
	    shim_cgroup_dir("/sys/fs/cgroup", cgpath, false, "memory", dir, sizeof(dir)) < 0)
		return 0;
	/* runsc sets its limits only in a cgroup it makes: after its create, it is there. */
	if (t->backend == HEZO_BACKEND_RUNSC && stat(dir, &st) < 0)
		return 0;
	/* The topmost part of the path that does not exist yet: what goes if runc fails. */
	snprintf(up, sizeof(up), "%s", dir);
	while (stat(up, &st) < 0 && strrchr(up, '/') > up) {
		snprintf(made, PATH_MAX, "%s", up);
		*strrchr(up, '/') = '\0';
	}
	if (hezo_mkdir_p(dir, 0755, 0755) < 0)
		return hezo_error_set_errno(err, errno, "memory cgroup %s", dir);
	return shim_tcp_cap(dir, limit, err);
}

/* Remove the cgroup directories tcp_accounting made, from the leaf up to made. */
static void tcp_accounting_undo(const struct hezo_json *spec, const char *made)
{
	const char *cgpath = hezo_json_string(hezo_json_get_path(spec, "linux.cgroupsPath"));
	char dir[PATH_MAX];

	if (!made[0] || !cgpath ||
	    shim_cgroup_dir("/sys/fs/cgroup", cgpath, false, "memory", dir, sizeof(dir)) < 0)
		return;
	/* runc may have removed the leaf already: on up to what the shim made, all the same. */
	while ((rmdir(dir) == 0 || errno == ENOENT) && strcmp(dir, made) != 0 &&
	       strrchr(dir, '/') > dir)
		*strrchr(dir, '/') = '\0';
}

static bool same_object(const struct hezo_held_path *a, const struct hezo_held_path *b)
{
	return a->fd == -1 ? b->fd == -1
			   : b->fd != -1 && a->dev == b->dev && a->ino == b->ino &&
				     strcmp(a->path, b->path) == 0;
}

/* The same objects, in the same order, as the first judgement held. */
static bool same_held(const struct hezo_held *a, const struct hezo_held *b)
{
	if (!same_object(&a->root, &b->root) || a->nbinds != b->nbinds || a->nnss != b->nnss)
		return false;
	for (size_t i = 0; i < a->nbinds; i++)
		if (!same_object(&a->binds[i], &b->binds[i]))
			return false;
	for (size_t i = 0; i < a->nnss; i++)
		if (!same_object(&a->nss[i], &b->nss[i]))
			return false;
	return true;
}

int shim_cmd_create(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *base = NULL, *p = NULL;
	_cleanup_json_ struct hezo_json *spec = NULL, *rec = NULL, *secrets = NULL, *keys = NULL,
					*input = NULL;
	_cleanup_free_ char *orig = NULL, *kept_old = NULL, *exec_bpf = NULL;
	/* The judged spec, the input, the second judgement and the spec written, compact. */
	_cleanup_free_ char *judged = NULL, *input_text = NULL, *again = NULL, *written = NULL;
	size_t judged_len = 0, input_len = 0, again_len = 0, written_len = 0;
	_cleanup_close_ int bfd = -1, adm_fd = -1, pfd = -1, rec_lock = -1, userns_fd = -1,
			    reg_lock = -1;
	_cleanup_(hezo_held_done) struct hezo_held held, held_again;
	_cleanup_target_ struct shim_target t = {0};
	_cleanup_strv_ struct hezo_strv av = {0}, vargs = {0};
	char bundle_real[PATH_MAX], again_real[PATH_MAX], priv[PATH_MAX], tcp_made[PATH_MAX];
	char unified[PATH_MAX] = "", home[PATH_MAX] = "";
	const char *verb = v->name, *id = v->id, *bundle, *init_how;
	_cleanup_free_ char *pod_sandbox = NULL, *pod_pidns = NULL;
	/* What prepare made goes again on any refusal before the box is recorded. */
	_cleanup_(shim_workspace_made_undo) struct shim_ws_made ws_made = {0};
	const char *pid_file = shim_args_get(&v->args, "pid-file");
	long waiter = 0;
	int64_t tasks = 0, host_pids = 0;
	unsigned enosys_rules = 0;
	struct shim_userns userns = {0};
	static struct shim_rlimits box_rl; /* ctx points at it until the process ends */
	bool engine_seccomp, has_userns = false;
	int plan = SHIM_USERNS_NONE;
	size_t len, kept_old_len = 0;
	int r;

	hezo_held_init(&held);
	hezo_held_init(&held_again);
	bundle = shim_args_get(&v->args, "bundle");
	if (!bundle || !*bundle)
		bundle = "."; /* runc: the working directory */

	bfd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bfd < 0)
		return hezo_error_set_errno(err, errno, "bundle %s", bundle);
	/* Keep the original bytes: if the backend cannot be started they go back. */
	r = hezo_read_regular_file_at(bfd, "config.json", HEZO_SPEC_MAX_SIZE, &orig, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "bundle %s: config.json", bundle);
	r = hezo_spec_parse(orig, len, "config.json", &spec, err);
	if (r < 0)
		return hezo_error_prefix(err, "bundle %s", bundle);
	if (choose_input(bfd, &spec, &kept_old, &kept_old_len) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	/* Kept as it came, judged again under the lock: the checks below rewrite spec in place. */
	input = hezo_json_clone(spec);
	if (!input)
		return hezo_error_set(err, ENOMEM, "out of memory");

	r = shim_load_policy(ctx, &base, err);
	r = r
		    ?: hezo_policy_for_container(base, hezo_spec_annotations(spec), ctx->g.project,
						 &p, err);
	if (r == 0)
		shim_note_project(ctx, p);
	r = r ?: shim_target_from_policy(p, &t, err);
	if (r < 0)
		return r;

	engine_seccomp = hezo_json_get_type(hezo_spec_linux(spec), "seccomp", HEZO_JSON_OBJECT);
	/* The directory config.json was read from, never the caller's path again. */
	r = bundle_path(bfd, bundle, bundle_real, err);
	if (r < 0)
		return r;
	/* A runsc pod's app container gets a waiter (runsc-pod.c) for containerd to reap. */
	if (t.backend == HEZO_BACKEND_RUNSC && strcmp(verb, "create") == 0 && pid_file) {
		const char *sandbox;

		r = shim_runsc_pod_app(spec, &sandbox, err);
		if (r < 0)
			return r;
		/*
		 * containerd's shim takes the console's master from the console socket when create
		 * returns; runsc connects to it at start. It would wait for ever.
		 */
		if (r > 0 && hezo_json_is_true(hezo_json_get_path(spec, "process.terminal")))
			return hezo_error_set(
				err, EOPNOTSUPP,
				"container %s: a terminal (process.terminal) in a runsc "
				"pod's app container: runsc hands its console over at "
				"start, containerd's shim waits for it at create",
				id);
		if (r > 0 && shim_runsc_pod_own_limits(spec, id, sandbox, err) < 0)
			return -EOPNOTSUPP;
		/* A shared PID namespace goes to runsc alone (runsc-pod.c). */
		if (r > 0) {
			int e = shim_runsc_pod_pidns(ctx, &t, id, sandbox, spec, input, &pod_pidns,
						     err);

			if (e < 0)
				return e;
		}
		if (r > 0 && !(pod_sandbox = strdup(sandbox)))
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	/* The staged mounts (stage.c) must be made, and so the held fds opened, in this one. */
	r = shim_workspace_prepare(base, p, spec, &ws_made, err);
	r = r ?: shim_stage_namespace(err);
	r = r ?: judge(ctx, base, p, &t, spec, id, bundle_real, &held, err);
	/* The box's user namespace: its own (a range picked under the lock), another's, or none. */
	if (r == 0) {
		plan = shim_userns_plan(&t, spec, &held, &userns_fd, &userns, err);
		r = plan < 0 ? plan : 0;
	}
	/*
	 * Only host root may write a UTS sysctl (proc_sys_permission), and runc 1.1.5 ignores the
	 * spec's "domainname": the shim sets it in a new UTS namespace it makes beside the box's
	 * user namespace (stage.c), which it cannot do for a namespace the box joins.
	 */
	if (r == 0 && plan != SHIM_USERNS_NONE &&
	    hezo_json_get(hezo_json_get_path(spec, "linux.sysctl"), "kernel.domainname") &&
	    (plan != SHIM_USERNS_OWN || !hezo_spec_namespace(spec, "uts") ||
	     hezo_json_get(hezo_spec_namespace(spec, "uts"), "path")))
		r = hezo_error_set(err, EINVAL,
				   "config.json: linux.sysctl: \"kernel.domainname\": %s cannot "
				   "set it in a UTS namespace "
				   "the box joins (only in a new one of its own)",
				   hezo_backend_name(t.backend));
	/*
	 * What the backend hands the box as it is: after the bundle's own reasons, before anything
	 * is written. A regular file only where the box cannot reopen it as host root: runsc's
	 * Sentry holds it, and a box in a user namespace reopens it as its mode lets others.
	 */
	if (r == 0)
		r = shim_check_stdio(
			shim_stdio_handed(
				t.backend, verb, &v->args,
				hezo_json_is_true(hezo_json_get_path(spec, "process.terminal"))),
			t.backend == HEZO_BACKEND_RUNSC || plan != SHIM_USERNS_NONE, err);
	if (r < 0)
		return r;
	/* What the second judgement must come to again, as text: a copy of the tree cost more. */
	r = hezo_json_dump(spec, false, &judged, &judged_len, err);
	if (r < 0)
		return hezo_error_prefix(err, "bundle %s: config.json", bundle);
	r = shim_init_prepare(p, spec, &init_how, err);
	if (r < 0)
		return r;
	if (t.backend == HEZO_BACKEND_RUNSC) {
		r = shim_runsc_check_spec(p, spec, err);
		r = r
			    ?: shim_runsc_size_pids(shim_runsc_model_of(ctx, &t), p, spec, &tasks,
						    &host_pids, err);
		r = r ?: shim_runsc_prepare_exec(spec, &exec_bpf, err);
		r = r ?: shim_runsc_seccomp_enosys(spec, &enosys_rules, err);
		if (r < 0)
			return r;
	} else {
		r = shim_hostwide_bound(spec, p, err);
		if (r < 0)
			return r;
	}
	r = shim_secrets_prepare(ctx, p, spec, &secrets, err);
	/* A gVisor pod's app container holds its sandbox's secrets (runsc-pod.c). */
	if (r == 0 && pod_sandbox)
		r = shim_runsc_pod_secrets(ctx, id, pod_sandbox, spec, &secrets, err);
	r = r ?: shim_keys_prepare(ctx, p, id, spec, &keys, err);
	r = r ?: add_egress_hooks(ctx, p, secrets, keys, spec, err);
	r = r ?: build_record(ctx, id, bundle_real, &t, p, input, spec, engine_seccomp, &rec, err);
	if (r == 0 && shim_workspace_record_home(input, spec, rec) < 0)
		r = hezo_error_set(err, ENOMEM, "out of memory");
	if (r < 0)
		return r;
	/* Judged and recorded: what follows runs the box, in the workspace it has now. */
	ws_made.keep = true;
	/* The namespaces handed by path: a pin it leaves stays this container's while recorded. */
	if (held.nnss) {
		struct hezo_json *joined = hezo_json_ensure_array(rec, "joined");

		for (size_t i = 0; joined && i < held.nnss; i++) {
			struct hezo_json *e = hezo_json_new_object();

			if (!e || hezo_json_append(joined, e) < 0 ||
			    hezo_json_set(e, "dev", hezo_json_new_uint(held.nss[i].dev)) < 0 ||
			    hezo_json_set(e, "ino", hezo_json_new_uint(held.nss[i].ino)) < 0 ||
			    hezo_json_set(e, "path", hezo_json_new_string(held.nss[i].path)) < 0)
				joined = NULL;
		}
		if (!joined)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	/* What the box reaches on the host: no later --root may be there (state_overlaps). */
	{
		struct hezo_json *list = hezo_json_ensure_array(rec, "handed");
		struct handed handed;

		handed_of(&held, &handed);
		r = list ? 0 : -ENOMEM;
		for (size_t i = 0; r == 0 && i < handed.n; i++) {
			struct hezo_json *e = hezo_json_new_object();
			const struct hezo_held_path *h = handed_at(&handed, i);

			r = e && hezo_json_append(list, e) == 0 ? 0 : -ENOMEM;
			r = r ?: set_string(e, "path", h->path);
			/* The root: runsc's delete finds its filestore there
			 * (shim_stage_root_again). */
			if (r == 0 && i >= handed.nbinds &&
			    hezo_json_set(e, "root", hezo_json_new_bool(true)) < 0)
				r = -ENOMEM;
			if (r == 0 && h->fd >= 0 &&
			    (hezo_json_set(e, "dev", hezo_json_new_uint(h->dev)) < 0 ||
			     hezo_json_set(e, "ino", hezo_json_new_uint(h->ino)) < 0))
				r = -ENOMEM;
		}
		if (r < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	/* Names, hosts, files and placeholders: exec puts the placeholders in again. */
	if ((secrets && hezo_json_set(rec, "secrets", TAKE_PTR(secrets)) < 0) ||
	    (keys && hezo_json_set(rec, "keys", TAKE_PTR(keys)) < 0))
		return hezo_error_set(err, ENOMEM, "out of memory");
	if (set_string(rec, "init", init_how) < 0 ||
	    (exec_bpf && set_string(rec, "execSeccomp", exec_bpf) < 0))
		return hezo_error_set(err, ENOMEM, "out of memory");
	/* Under runsc the box's pids is the workload's count; the host's backstop is beside it. */
	if (tasks > 0 &&
	    (hezo_json_set(hezo_json_get(rec, "box"), "pids", hezo_json_new_int(tasks)) < 0 ||
	     hezo_json_set(hezo_json_get(rec, "box"), "hostPids", hezo_json_new_int(host_pids)) <
		     0))
		return hezo_error_set(err, ENOMEM, "out of memory");
	/*
	 * A runsc pod's app container: the limits that hold are its sandbox's (one Sentry, one host
	 * cgroup), so the record says those, and whose they are, rather than the container's own.
	 */
	if (pod_sandbox) {
		_cleanup_json_ struct hezo_json *srec = NULL;
		struct hezo_json *box = hezo_json_get(rec, "box");
		static const char *const lim[] = {"memory",   "swap",	  "pids",
						  "hostPids", "cpuQuota", "cpuPeriod"};

		if (shim_record_read(ctx, pod_sandbox, &srec, err) < 0)
			return hezo_error_prefix(
				err, "container %s: the record of its pod's sandbox", id);
		for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++)
			if (set_or_null(box, lim[i],
					hezo_json_get(hezo_json_get(srec, "box"), lim[i])) < 0)
				return hezo_error_set(err, ENOMEM, "out of memory");
		if (set_string(box, "limitsOf", pod_sandbox) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	/* May wait for a slot; on success holds the admission lock until exec. */
	r = shim_admission_enter(ctx, p, spec, id, rec, &adm_fd, err);
	if (r < 0)
		return r;
	/* The ID is checked and taken under the root's record lock, one create at a time. */
	rec_lock = shim_record_lock(ctx, err);
	if (rec_lock < 0)
		return rec_lock;
	r = check_old_record(ctx, id, &t, err);
	if (r < 0)
		return r;
	/*
	 * Judged again from the input, now that no other create can write a record: a box queued
	 * or created since the first judgement (a cgroup it nests under, a namespace it claimed, a
	 * pod that went) may not be let through because it came after the first look.
	 */
	/* The input itself is judged: the side file takes it as text, written before. */
	r = hezo_json_dump(input, false, &input_text, &input_len, err);
	if (r < 0)
		return hezo_error_prefix(err, "bundle %s: config.json", bundle);
	r = judge(ctx, base, p, &t, input, id, bundle_real, &held_again, err);
	r = r ?: hezo_json_dump(input, false, &again, &again_len, err);
	if (r < 0)
		return r;
	if (again_len != judged_len || memcmp(again, judged, judged_len) != 0 ||
	    !same_held(&held, &held_again) || bundle_path(bfd, bundle, again_real, NULL) < 0 ||
	    strcmp(again_real, bundle_real) != 0)
		return hezo_error_set(err, EAGAIN,
				      "container %s: the containers around it changed while it "
				      "was judged (another create or delete at the same time); "
				      "create it again",
				      id);

	/* A runsc pod's sandbox gets a cgroup v2 of its own (runsc-pod.c), in its record. */
	if (t.backend == HEZO_BACKEND_RUNSC && strcmp(verb, "create") == 0) {
		r = shim_runsc_pod_unified(spec, shim_backend_systemd_cgroup(&t, &ctx->g), unified,
					   err);
		if (r < 0)
			return r;
		if (r > 0 && set_string(rec, "unifiedCgroup", unified) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	/*
	 * The box's own uid range, taken with the record under the lock and entered in the
	 * machine's registry (held until the record is written): no other box, of any state
	 * directory, has it. JOIN: the range of the box whose namespaces it joins, recorded there.
	 */
	has_userns = plan != SHIM_USERNS_NONE;
	if (has_userns) {
		r = shim_userns_take(ctx, id, plan == SHIM_USERNS_OWN, &userns, &reg_lock, err);
		if (r < 0)
			return r;
	}
	if (has_userns && shim_userns_record(rec, &userns) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	/*
	 * The box's user namespace is its uid's, where runc's prlimit would need CAP_SYS_RESOURCE:
	 * the shim sets the rlimits (rlimits.c), and keeps them for an exec that names none.
	 */
	if (has_userns) {
		const struct hezo_json *rl = hezo_json_get_path(spec, "process.rlimits");

		r = shim_rlimits_parse(rl, &box_rl, err);
		if (r < 0)
			return r;
		if (rl &&
		    hezo_json_set(hezo_json_get(rec, "userns"), "rlimits", hezo_json_clone(rl)) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
		ctx->backend_rlimits = &box_rl;
	}
	r = shim_root_make(&ctx->g, err);
	if (r < 0) {
		if (has_userns)
			shim_userns_drop(ctx, id, &userns, reg_lock);
		return r;
	}
	/* From here on: undo on failure. A note about an earlier container of this ID is stale. */
	shim_ended_remove(ctx, id);
	r = shim_record_write(ctx, id, rec, err);
	if (r < 0 && has_userns)
		shim_userns_drop(ctx, id, &userns, reg_lock);
	/* The next create's walks read this one's record, and those it read whole, from the index.
	 */
	if (r == 0)
		(void)shim_records_index_save(ctx);
	if (reg_lock >= 0)
		close(TAKE_FD(reg_lock));
	close(TAKE_FD(rec_lock));
	if (r < 0)
		return r;
	/* What engines read, before staging rewrites spec for the backend (no copy of it is made).
	 */
	r = hezo_json_dump(spec, false, &written, &written_len, err);
	if (r < 0)
		return drop_record(ctx, id,
				   hezo_error_prefix(err, "bundle %s: config.json", bundle));
	/* Bundles of containers whose shim died before it could remove them. */
	(void)shim_bundle_tidy(ctx);
	pfd = shim_bundle_open(ctx, id, SHIM_BUNDLE_FRESH, priv, sizeof(priv), err);
	/* runsc's copy alone names the pod's PID namespace, which it reads as a name. */
	if (pfd >= 0 && pod_pidns &&
	    hezo_json_set(hezo_spec_namespace(spec, "pid"), "path",
			  hezo_json_new_string(pod_pidns)) < 0) {
		close(TAKE_FD(pfd));
		pfd = hezo_error_set(err, ENOMEM, "linux.namespaces: pid: out of memory");
	}
	r = pfd < 0 ? pfd
		    : save_backend_bundle(ctx, pfd, priv, spec, &held, has_userns ? &userns : NULL,
					  userns_fd, err);
	if (r < 0)
		return drop_record(ctx, id, hezo_error_prefix(err, "backend bundle"));
	r = backend_verb_args(v, priv, pod_sandbox != NULL, &vargs, err);
	r = r ?: shim_backend_argv(ctx, &t, verb, (int)vargs.n, vargs.v, &av, err);
	if (r < 0)
		return drop_record(ctx, id, r);
	/* A shim killed mid-rewrite leaves its temporary files; the next create tidies up. */
	(void)hezo_clean_stale_temps_at(bfd, "config.json");
	(void)hezo_clean_stale_temps_at(bfd, HEZO_SPEC_KEPT_NAME);
	/*
	 * The side file first: killed between the two, config.json is still the input it was and
	 * does not match the new side file, so the next create judges config.json as it stands.
	 */
	r = save_kept(bfd, written, written_len, input_text, input_len, err);
	if (r < 0)
		return drop_record(ctx, id, hezo_error_prefix(err, "bundle %s", bundle));
	/* What engines and `hezo-shim inspect` read; the backend reads the private copy. */
	r = hezo_write_file_atomic_at(bfd, "config.json", written, written_len, 0644, err);
	if (r < 0) {
		hezo_error_prefix(err, "config.json");
		restore_kept(bfd, kept_old, kept_old_len);
		return drop_record(ctx, id, hezo_error_prefix(err, "bundle %s", bundle));
	}
	/*
	 * create returns once the container exists, so the shim waits for it and undoes its work
	 * when the backend refuses the bundle (as runc leaves nothing). run stays the
	 * backend's own process: it lasts as long as the container.
	 */
	tcp_made[0] = '\0'; /* runsc: made after its create, below */
	r = t.backend == HEZO_BACKEND_RUNSC
		    ? 0
		    : tcp_accounting(&t, spec, shim_backend_systemd_cgroup(&t, &ctx->g), tcp_made,
				     err);
	if (r < 0) {
		tcp_accounting_undo(spec, tcp_made);
		shim_record_remove(ctx, id);
		(void)hezo_write_file_atomic_at(bfd, "config.json", orig, len, 0644, NULL);
		restore_kept(bfd, kept_old, kept_old_len);
		return r;
	}
	/*
	 * A foreground run is waited for too: when it ends the backend has deleted the container,
	 * and its record must not outlive it (it would stand for an ID nobody holds).
	 */
	if (strcmp(verb, "create") != 0 && !shim_args_bool(&v->args, "detach")) {
		r = shim_spawn_wait(ctx, &av, err);
		/*
		 * Refused or ended, the memory cgroup the shim made for the TCP cap goes too: runc
		 * leaves it when it refuses the bundle before it manages the cgroup.
		 */
		if (backend_lacks(ctx, &t, id)) {
			tcp_accounting_undo(spec, tcp_made);
			if (r >= 0)
				shim_record_remove_same(ctx, id, rec);
		}
		return r;
	}
	if (strcmp(verb, "create") == 0) {
		/* The Sentry is born in the shim's cgroup v2: the shim steps in there for it. */
		r = unified[0] ? shim_runsc_pod_cgroup_enter(unified, home, err) : 0;
		r = r ?: shim_spawn_wait(ctx, &av, err);
		if (home[0])
			shim_runsc_pod_cgroup_leave(home);
	} else
		r = shim_exec(ctx, &av, err);
	/* runc's Go runtime raised the init's soft RLIMIT_NOFILE to its hard one: set them again.
	 */
	if (r == 0 && has_userns && box_rl.n) {
		_cleanup_error_ struct hezo_error *e = NULL;
		_cleanup_free_ char *status = NULL;
		long pid = 0;

		if (shim_runsc_state(ctx, &t, id, &status, &pid, &e) < 0 || pid <= 0 ||
		    shim_rlimits_fix((pid_t)pid, &userns, &box_rl, &e) < 0)
			shim_log(ctx, "warning",
				 "container %s: its soft rlimits as runc left them: %s", id,
				 e ? e->msg : "no pid");
	}
	/* runsc's cgroup exists now (runsc with network host uses the host's TCP stack). */
	if (r == 0 && t.backend == HEZO_BACKEND_RUNSC &&
	    tcp_accounting(&t, spec, shim_backend_systemd_cgroup(&t, &ctx->g), tcp_made, err) < 0) {
		_cleanup_error_ struct hezo_error *e = NULL;

		(void)shim_runsc_destroy(ctx, &t, id, &e);
		shim_runsc_pod_cgroup_remove(ctx, id, rec);
		shim_record_remove(ctx, id);
		(void)hezo_write_file_atomic_at(bfd, "config.json", orig, len, 0644, NULL);
		restore_kept(bfd, kept_old, kept_old_len);
		return -EPERM;
	}
	/* The waiter stands for the container in the pid file; without one it must not stay. */
	if (r == 0 && pod_sandbox &&
	    shim_runsc_waiter_start(ctx, &t, id, pod_sandbox, pid_file, &waiter, err) < 0) {
		_cleanup_error_ struct hezo_error *e = NULL;

		(void)shim_runsc_destroy(ctx, &t, id, &e);
		shim_record_remove(ctx, id);
		(void)hezo_write_file_atomic_at(bfd, "config.json", orig, len, 0644, NULL);
		restore_kept(bfd, kept_old, kept_old_len);
		return hezo_error_prefix(err, "container %s", id);
	}
	/* The record names the waiter: the container lives while it does (admission.c). */
	if (r == 0 && waiter > 0) {
		_cleanup_error_ struct hezo_error *e = NULL;
		struct hezo_json *w = hezo_json_new_object();
		uint64_t wstart = 0;

		if (!w || hezo_json_set(rec, "waiter", w) < 0 ||
		    shim_proc_start_time(waiter, &wstart) < 0 ||
		    hezo_json_set(w, "pid", hezo_json_new_int(waiter)) < 0 ||
		    hezo_json_set(w, "start", hezo_json_new_uint(wstart)) < 0 ||
		    shim_record_write(ctx, id, rec, &e) < 0)
			shim_log(ctx, "warning",
				 "container %s: its record does not name its waiter %ld", id,
				 waiter);
	}
	if (r != 0 && backend_lacks(ctx, &t, id)) {
		/* Not made: config.json and the side file go back as they were. */
		tcp_accounting_undo(spec, tcp_made);
		shim_runsc_pod_cgroup_remove(ctx, id, rec);
		shim_record_remove(ctx, id);
		(void)hezo_write_file_atomic_at(bfd, "config.json", orig, len, 0644, NULL);
		restore_kept(bfd, kept_old, kept_old_len);
	}
	/* Created, or refused with the backend's reason on stderr: its status is ours. */
	return r;
}
