/* A project's workspace (docs/policy.md, "Workspace"): the project-file key, where it may be, the
 * bind every box of the project gets at /workspace, and HOME where the image's is read-only. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-mountinfo.h"
#include "policy-parse.h"

#define WORKSPACE_DEST "/workspace"
#define WORKSPACE_HOME WORKSPACE_DEST "/.home"

/*
 * Never a workspace, nor inside one, nor holding one: what the host runs from and trusts, and
 * where the engines keep their state (their own files, every container's root and volumes).
 */
static const char *const system_dirs[] = {
	"/bin",
	"/boot",
	"/dev",
	"/etc",
	"/lib",
	"/lib32",
	"/lib64",
	"/libx32",
	"/proc",
	"/root",
	"/run",
	"/sbin",
	"/sys",
	"/usr",
	"/var/run",
	"/var/lib/docker",
	"/var/lib/containerd",
	"/var/lib/containers",
	"/var/lib/kubelet",
	"/var/lib/hezo",
	"/var/log",
	"/var/spool",
	"/var/cache",
	"/var/lib/dpkg",
	"/var/lib/apt",
	"/var/lib/systemd",
};

/* Shared tops: a workspace may lie below them, never be one or hold one (other users' files). */
static const char *const shared_tops[] = {"/home", "/srv", "/opt",     "/mnt",	  "/media",
					  "/var",  "/tmp", "/var/tmp", "/var/lib"};

static bool overlaps(const char *a, const char *b)
{
	return hezo_policy_paths_overlap(a, b);
}

/* Is path (clean, absolute) somewhere no workspace may be? The reason goes to why. */
static bool forbidden(const struct hezo_policy *p, const char *path, char *why, size_t size)
{
	const struct hezo_strv *lists[] = {&p->engine_roots, &p->volume_roots};

	if (strcmp(path, "/") == 0) {
		snprintf(why, size, "it is the host's /");
		return true;
	}
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(system_dirs); i++)
		if (overlaps(path, system_dirs[i])) {
			snprintf(why, size,
				 "it is, holds or is inside %s, a system or engine directory",
				 system_dirs[i]);
			return true;
		}
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(shared_tops); i++)
		if (hezo_policy_path_under(shared_tops[i], path)) {
			snprintf(why, size, "it is or holds %s, which others share",
				 shared_tops[i]);
			return true;
		}
	for (size_t l = 0; l < HEZO_ARRAY_SIZE(lists); l++)
		for (size_t i = 0; i < lists[l]->n; i++)
			if (overlaps(path, lists[l]->v[i])) {
				snprintf(why, size,
					 "it is, holds or is inside %s, an engine's store",
					 lists[l]->v[i]);
				return true;
			}
	/* A box of no project may bind an allowed root rw: it would hold the workspace already
	 * (red team ws2, F2). */
	for (size_t i = 0; i < p->allowed_sources.n; i++)
		if (overlaps(path, p->allowed_sources.v[i])) {
			snprintf(why, size,
				 "it is, holds or is inside %s, a mounts.allowedSources root",
				 p->allowed_sources.v[i]);
			return true;
		}
	if ((p->kubelet_root && overlaps(path, p->kubelet_root)) ||
	    (p->projects_dir && overlaps(path, p->projects_dir))) {
		snprintf(why, size, "it is, holds or is inside kubelet's root or projectsDir");
		return true;
	}
	return false;
}

int hezo_policy_workspace_parse(struct pctx *c, struct hezo_policy *p, const struct hezo_json *x)
{
	_cleanup_free_ char *clean = NULL;
	char q[256];
	int r;

	/* Every project its own: a main file's workspace would be every container's. */
	if (!c->project && !c->layered)
		return hezo_policy_perr(c, "workspace", "only a project file may set this");
	r = hezo_policy_expect_type(c, "workspace", x, HEZO_JSON_STRING);
	if (r < 0)
		return r;
	hezo_policy_quote(q, sizeof(q), x->str);
	if (strcmp(x->str, "volume") == 0) {
		free(p->workspace);
		p->workspace = NULL;
		p->workspace_volume = true;
		return 0;
	}
	r = hezo_policy_clean_path(x->str, &clean);
	if (r == -ENOMEM)
		return hezo_policy_oom(c);
	if (r < 0)
		return hezo_policy_perr(c, "workspace",
					"%s is neither \"volume\" nor a clean absolute path", q);
	free(p->workspace);
	p->workspace = TAKE_PTR(clean);
	p->workspace_volume = false;
	return 0;
}

/* After layering: the path against the main policy's stores (which a project cannot move). */
int hezo_policy_workspace_validate(struct pctx *c, const struct hezo_policy *p)
{
	char why[PATH_MAX + 128];

	if (p->workspace && forbidden(p, p->workspace, why, sizeof(why)))
		return hezo_policy_perr(c, "workspace", "%s: %s", p->workspace, why);
	return 0;
}

struct hezo_json *hezo_policy_workspace_json(const struct hezo_policy *p)
{
	if (p->workspace_volume)
		return hezo_json_new_string("volume");
	return p->workspace ? hezo_json_new_string(p->workspace) : NULL;
}

int hezo_policy_workspace_dir(const struct hezo_policy *p, char *out, size_t size)
{
	if (!p->project || (!p->workspace && !p->workspace_volume))
		return -ENOENT;
	if (p->workspace)
		return snprintf(out, size, "%s", p->workspace) >= (int)size ? -ENAMETOOLONG : 0;
	/* Docker's local driver keeps a volume NAME at ROOT/NAME/_data: the first store listed. */
	if (p->volume_roots.n == 0)
		return -ENOENT;
	return snprintf(out, size, "%s/%s_workspace/_data", p->volume_roots.v[0], p->project) >=
			       (int)size
		       ? -ENAMETOOLONG
		       : 0;
}

bool hezo_policy_workspace_is_volume(const struct hezo_policy *p)
{
	return p->workspace_volume;
}

bool hezo_policy_workspace_forbidden(const struct hezo_policy *p, const char *path, char *why,
				     size_t size)
{
	return forbidden(p, path, why, size);
}

struct clash {
	const char *self, *dir;
	bool volume;
	const struct hezo_mounts *mounts;
	char *why;
	size_t size;
};

static int clash_with(const struct hezo_policy *q, void *data)
{
	struct clash *c = data;
	const char *other = q->project;
	char dir[PATH_MAX], vol[256];

	/* Where the main policy or another project lets boxes bind, some box may hold it now. */
	for (size_t i = 0; !c->volume && i < q->allowed_sources.n; i++)
		if (hezo_policy_paths_overlap(c->dir, q->allowed_sources.v[i]) ||
		    hezo_mounts_overlap(c->mounts, c->dir, q->allowed_sources.v[i])) {
			snprintf(c->why, c->size,
				 "%s overlaps %s, a mounts.allowedSources root of %s%s", c->dir,
				 q->allowed_sources.v[i], other ? "project " : "the main policy",
				 other ?: "");
			return 1;
		}
	/* So may a box of a project whose volumes.allow names this one's volume. */
	if (c->volume && other && strcmp(other, c->self) != 0 &&
	    snprintf(vol, sizeof(vol), "%s_workspace", c->self) < (int)sizeof(vol) &&
	    hezo_policy_volume_allowed(q, vol)) {
		snprintf(c->why, c->size,
			 "volume %s: project %s's volumes.allow matches it, so its boxes may hold "
			 "it",
			 vol, other);
		return 1;
	}
	if (!other || strcmp(other, c->self) == 0 ||
	    hezo_policy_workspace_dir(q, dir, sizeof(dir)) < 0)
		return 0;
	/* By its name, and by where writes land: a symlink or a bind mount on the way counts. */
	if (!hezo_policy_paths_overlap(c->dir, dir) && !hezo_mounts_overlap(c->mounts, c->dir, dir))
		return 0;
	snprintf(c->why, c->size, "%s overlaps %s, project %s's workspace", c->dir, dir, other);
	return 1;
}

int hezo_policy_workspace_clash(const struct hezo_policy *base, const struct hezo_policy *p,
				const struct hezo_mounts *mounts, char *why, size_t size)
{
	char dir[PATH_MAX];
	struct clash c = {.self = p->project,
			  .dir = dir,
			  .volume = p->workspace_volume,
			  .mounts = mounts,
			  .why = why,
			  .size = size};

	if (!p->project || hezo_policy_workspace_dir(p, dir, sizeof(dir)) < 0)
		return 0;
	return hezo_policy_foreach_project(base, clash_with, &c);
}

/* The workspace resolved (what the box gets), into out; the message names what went wrong. */
static int resolved_dir(const struct hezo_policy *p, char *out, struct hezo_error **err)
{
	char dir[PATH_MAX], why[PATH_MAX + 128];
	int r = hezo_policy_workspace_dir(p, dir, sizeof(dir));

	if (r < 0)
		return hezo_error_set(err, -r, "workspace: its path");
	if (!realpath(dir, out))
		return hezo_error_set_errno(err, errno, "workspace %s", dir);
	/*
	 * What the path names now, not only what the admin wrote: a link on the way counts. A
	 * volume is in an engine's store by design, at the one place this project's name gives.
	 */
	if (!p->workspace_volume && strcmp(out, dir) != 0 && forbidden(p, out, why, sizeof(why)))
		return hezo_policy_ferr(err, "workspace %s (resolves to %s): %s", dir, out, why);
	return 0;
}

bool hezo_policy_in_workspace(const struct hezo_policy *p, const char *resolved)
{
	char ws[PATH_MAX];

	return resolved_dir(p, ws, NULL) == 0 && hezo_policy_path_under(resolved, ws);
}

int hezo_policy_apply_workspace(const struct hezo_policy *p, struct hezo_json *spec,
				const struct hezo_apply_env *env, struct hezo_error **err)
{
	static const char *const opts[] = {"bind", "rw", "nosuid", "nodev", "exec"};
	_cleanup_json_ struct hezo_json *m = NULL;
	struct hezo_json *mounts = hezo_json_get_type(spec, "mounts", HEZO_JSON_ARRAY), *o;
	char ws[PATH_MAX];
	int r;

	if (!p->project || (!p->workspace && !p->workspace_volume))
		return 0;
	r = resolved_dir(p, ws, err);
	if (r < 0)
		return r;
	m = hezo_json_new_object();
	if (!mounts || !m ||
	    hezo_json_set(m, "destination", hezo_json_new_string(WORKSPACE_DEST)) < 0 ||
	    hezo_json_set(m, "type", hezo_json_new_string("bind")) < 0 ||
	    hezo_json_set(m, "source", hezo_json_new_string(ws)) < 0 ||
	    !(o = hezo_json_ensure_array(m, "options")))
		return hezo_policy_nomem(err);
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(opts); i++)
		if (hezo_json_append(o, hezo_json_new_string(opts[i])) < 0)
			return hezo_policy_nomem(err);
	/*
	 * A plain bind: a host mount below the directory stays out of the box. The backend is
	 * handed the object judged here, never the path again (shim/stage.c).
	 */
	r = hezo_policy_hold_bind(env, ws, mounts->len, WORKSPACE_DEST, err);
	if (r < 0)
		return hezo_error_prefix(err, "workspace");
	/* The engine's own mounts at /workspace or below go on top of it. */
	if (hezo_policy_place_mount(mounts, TAKE_PTR(m)) < 0)
		return hezo_policy_nomem(err);
	return 0;
}

/* Is dir writable in the box: a writable mount at or above it, or a writable root? */
static bool writable_in_box(const struct hezo_json *spec, const char *dir)
{
	const struct hezo_json *mounts = hezo_json_get_type(spec, "mounts", HEZO_JSON_ARRAY);
	bool best_rw = !hezo_json_is_true(hezo_json_get_path(spec, "root.readonly"));
	size_t best = 0;

	/* The deepest mount covering dir decides (a later one at the same place wins). */
	HEZO_JSON_FOREACH (i, mounts) {
		const struct hezo_json *m = mounts->items[i];
		const struct hezo_json *opts = hezo_json_get_type(m, "options", HEZO_JSON_ARRAY);
		const char *d = hezo_json_string(hezo_json_get(m, "destination"));
		const char *type = hezo_json_string(hezo_json_get(m, "type"));
		_cleanup_free_ char *clean = NULL;
		bool ro = false;

		if (!d || hezo_policy_clean_path(d, &clean) < 0 ||
		    !hezo_policy_path_under(dir, clean) || strlen(clean) < best)
			continue;
		HEZO_JSON_FOREACH (k, opts) {
			const char *s = hezo_json_string(opts->items[k]);
			ro = ro || (s && (strcmp(s, "ro") == 0 || strcmp(s, "rro") == 0));
		}
		best = strlen(clean);
		best_rw = !ro && type && (strcmp(type, "bind") == 0 || strcmp(type, "tmpfs") == 0);
	}
	return best_rw;
}

int hezo_policy_workspace_home(const struct hezo_policy *p, struct hezo_json *spec, bool *set,
			       struct hezo_error **err)
{
	struct hezo_json *env = hezo_json_get_path(spec, "process.env");
	size_t at = env && env->type == HEZO_JSON_ARRAY ? env->len : 0;
	const char *home = "/";

	*set = false;
	if (!p->project || (!p->workspace && !p->workspace_volume))
		return 0;
	HEZO_JSON_FOREACH (i, env) {
		const char *s = hezo_json_string(env->items[i]);
		if (s && strncmp(s, "HOME=", 5) == 0) {
			home = s + 5;
			at = i;
		}
	}
	/* A relative HOME is the process's working directory's: judged as the root's. */
	if (home[0] == '/' && writable_in_box(spec, home))
		return 0;
	env = hezo_json_ensure_array(hezo_json_get(spec, "process"), "env");
	if (!env)
		return hezo_policy_nomem(err);
	if (at < env->len) {
		hezo_json_free(env->items[at]);
		env->items[at] = hezo_json_new_string("HOME=" WORKSPACE_HOME);
		if (!env->items[at])
			return hezo_policy_nomem(err);
	} else if (hezo_json_append(env, hezo_json_new_string("HOME=" WORKSPACE_HOME)) < 0) {
		return hezo_policy_nomem(err);
	}
	*set = true;
	return 0;
}
