/* Engines' named volumes (docs/policy.md, "Named volumes"): the policy key "volumes" and the
 * rule for a bind source in an engine's volume store, ROOT/NAME/_data. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "policy-internal.h"

#define PROJECT_TOKEN "{project}"

static const char *const default_allow[] = {PROJECT_TOKEN "_*"};
/* Docker's data-root/volumes and podman's (rootful) graphroot/volumes. */
static const char *const default_roots[] = {"/var/lib/docker/volumes",
					    "/var/lib/containers/storage/volumes"};

int hezo_policy_volumes_default(struct hezo_policy *p)
{
	int r = hezo_strv_init(&p->volume_allow) ?: hezo_strv_init(&p->volume_roots);

	for (size_t i = 0; r == 0 && i < HEZO_ARRAY_SIZE(default_allow); i++)
		r = hezo_strv_push(&p->volume_allow, default_allow[i]);
	for (size_t i = 0; r == 0 && i < HEZO_ARRAY_SIZE(default_roots); i++)
		r = hezo_strv_push(&p->volume_roots, default_roots[i]);
	return r;
}

void hezo_policy_volumes_free(struct hezo_policy *p)
{
	hezo_strv_done(&p->volume_allow);
	hezo_strv_done(&p->volume_roots);
}

/* Docker's volume-name rule: [a-zA-Z0-9][a-zA-Z0-9_.-]* (podman's is the same). */
static bool volume_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 255 || !strchr("abcdefghijklmnopqrstuvwxyz0123456789", s[0] | 0x20))
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

/* A pattern: volume-name characters and '*', with {project} standing for the project. */
static bool pattern_ok(const char *s)
{
	if (!*s)
		return false;
	for (const char *c = s; *c; c++) {
		if (strncmp(c, PROJECT_TOKEN, strlen(PROJECT_TOKEN)) == 0) {
			c += strlen(PROJECT_TOKEN) - 1;
			continue;
		}
		if (*c != '*' &&
		    !strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-",
			    *c))
			return false;
	}
	return true;
}

static int parse_list(const struct hezo_json *v, const char *field, bool paths,
		      struct hezo_strv *out, char *why, size_t size)
{
	struct hezo_strv n = {0};

	if (v->type != HEZO_JSON_ARRAY) {
		snprintf(why, size, "%s: expected a list, got %s", field,
			 hezo_json_type_name(v->type));
		return -EINVAL;
	}
	if (hezo_strv_init(&n) < 0)
		goto oom;
	HEZO_JSON_FOREACH (i, v) {
		const char *s = hezo_json_string(v->items[i]);
		_cleanup_free_ char *clean = NULL;
		char q[256];

		if (!s) {
			snprintf(why, size, "%s[%zu]: expected a string, got %s", field, i,
				 hezo_json_type_name(v->items[i]->type));
			hezo_strv_done(&n);
			return -EINVAL;
		}
		hezo_policy_quote(q, sizeof(q), s);
		if (paths && (hezo_policy_clean_path(s, &clean) < 0 || strcmp(clean, "/") == 0)) {
			snprintf(why, size, "%s[%zu]: %s is not a clean absolute path below /",
				 field, i, q);
			hezo_strv_done(&n);
			return -EINVAL;
		}
		if (!paths && !pattern_ok(s)) {
			snprintf(why, size,
				 "%s[%zu]: %s is not a volume name pattern ([a-zA-Z0-9_.-], '*', "
				 "\"" PROJECT_TOKEN "\")",
				 field, i, q);
			hezo_strv_done(&n);
			return -EINVAL;
		}
		if (!hezo_strv_contains(&n, paths ? clean : s) &&
		    hezo_strv_push(&n, paths ? clean : s) < 0)
			goto oom;
	}
	hezo_strv_done(out);
	*out = n;
	return 0;
oom:
	hezo_strv_done(&n);
	snprintf(why, size, "out of memory");
	return -ENOMEM;
}

int hezo_policy_volumes_parse(struct hezo_policy *p, const struct hezo_json *v, char *why,
			      size_t size)
{
	int r;

	if (v->type != HEZO_JSON_OBJECT) {
		snprintf(why, size, "volumes: expected an object, got %s",
			 hezo_json_type_name(v->type));
		return -EINVAL;
	}
	HEZO_JSON_FOREACH (i, v) {
		const char *k = v->keys[i];
		if (strcmp(k, "allow") == 0) {
			r = parse_list(v->items[i], "volumes.allow", false, &p->volume_allow, why,
				       size);
		} else if (strcmp(k, "roots") == 0) {
			r = parse_list(v->items[i], "volumes.roots", true, &p->volume_roots, why,
				       size);
		} else {
			char q[256];
			hezo_policy_quote(q, sizeof(q), k);
			snprintf(why, size, "volumes: unknown key %s", q);
			r = -EINVAL;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static struct hezo_json *strv_json(const struct hezo_strv *s)
{
	_cleanup_json_ struct hezo_json *a = hezo_json_new_array();

	for (size_t i = 0; a && i < s->n; i++)
		if (hezo_json_append(a, hezo_json_new_string(s->v[i])) < 0)
			return NULL;
	return TAKE_PTR(a);
}

struct hezo_json *hezo_policy_volumes_json(const struct hezo_policy *p)
{
	_cleanup_json_ struct hezo_json *o = hezo_json_new_object();

	if (!o || hezo_json_set(o, "allow", strv_json(&p->volume_allow)) < 0 ||
	    hezo_json_set(o, "roots", strv_json(&p->volume_roots)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

int hezo_policy_volumes_narrower(const struct hezo_policy *base, const struct hezo_policy *p,
				 char *why, size_t size)
{
	bool same = base->volume_roots.n == p->volume_roots.n;

	for (size_t i = 0; same && i < p->volume_roots.n; i++)
		same = strcmp(base->volume_roots.v[i], p->volume_roots.v[i]) == 0;
	if (same)
		return 0;
	snprintf(why, size, "volumes.roots: only the main policy file may set this");
	return -EINVAL;
}

/* ---- a bind source in a volume store ---- */

static bool project_name_ok(const char *s, size_t n)
{
	return n >= 1 && n <= 64 && s[0] != '.' &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-") >= n;
}

/*
 * The project a volume name belongs to: the longest Q with a project file such that the name is
 * "Q_..." (compose's <project>_<volume>). Written into owner; false when there is none.
 */
static bool volume_owner(const struct hezo_policy *p, const char *name, char *owner, size_t size)
{
	bool found = false;

	for (const char *u = strchr(name, '_'); u; u = strchr(u + 1, '_')) {
		size_t n = (size_t)(u - name);
		char path[PATH_MAX];
		struct stat st;

		if (!project_name_ok(name, n) || n >= size)
			continue;
		if (snprintf(path, sizeof(path), "%s/%.*s.json", p->projects_dir, (int)n, name) >=
		    (int)sizeof(path))
			continue;
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			memcpy(owner, name, n);
			owner[n] = '\0';
			found = true;
		}
	}
	return found;
}

/* Does pattern pat, {project} standing for project, match name? */
static bool pattern_matches(const char *pat, const char *project, const char *name)
{
	char buf[1024];
	size_t o = 0;

	if (strstr(pat, PROJECT_TOKEN) && !project)
		return false; /* no project: nothing of "{project}_*" is the container's */
	for (const char *c = pat; *c && o + 1 < sizeof(buf); c++) {
		if (strncmp(c, PROJECT_TOKEN, strlen(PROJECT_TOKEN)) == 0) {
			size_t n = strlen(project);
			if (o + n + 1 >= sizeof(buf))
				break;
			memcpy(buf + o, project, n);
			o += n;
			c += strlen(PROJECT_TOKEN) - 1;
			continue;
		}
		buf[o++] = *c;
	}
	buf[o] = '\0';
	return fnmatch(buf, name, 0) == 0;
}

static bool allowed_by(const struct hezo_policy *p, const char *name)
{
	for (size_t i = 0; i < p->volume_allow.n; i++)
		if (pattern_matches(p->volume_allow.v[i], p->project, name))
			return true;
	return false;
}

bool hezo_policy_volume_allowed(const struct hezo_policy *p, const char *name)
{
	return allowed_by(p, name);
}

struct claim {
	const struct hezo_policy *base; /* the container's, without a project */
	const char *name;
	char owner[128];
};

/*
 * Is c->name one of project q's volumes by q's volumes.allow: a pattern naming {project}, or one
 * the project's own file adds (a pattern q has from the main file is everyone's, not a claim).
 */
static int claimed_by(const struct hezo_policy *q, void *data)
{
	struct claim *c = data;

	if (!q->project)
		return 0;
	for (size_t i = 0; i < q->volume_allow.n; i++) {
		const char *pat = q->volume_allow.v[i];

		if (!strstr(pat, PROJECT_TOKEN) && hezo_strv_contains(&c->base->volume_allow, pat))
			continue;
		if (pattern_matches(pat, q->project, c->name)) {
			snprintf(c->owner, sizeof(c->owner), "%s", q->project);
			return 1;
		}
	}
	return 0;
}

/* Is path a mount point? Fails closed (true) when the kernel cannot say. */
static bool mount_root(const char *path)
{
	struct statx stx;

	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) < 0 ||
	    !(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return true;
	return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

static int judge_volume(const struct hezo_policy *p, size_t idx, const char *dest, const char *src,
			const char *root, struct hezo_error **err)
{
	size_t n = strlen(root);
	const char *rel = src[n] ? src + n + 1 : "", *slash = strchr(rel, '/');
	char name[256], owner[128];

	if (!*rel || !slash || strcmp(slash, "/_data") != 0 ||
	    (size_t)(slash - rel) >= sizeof(name))
		return hezo_policy_ferr(err,
					"mounts[%zu] (%s): bind source %s is in an engine's volume "
					"store (%s) and is not a volume's _data directory",
					idx, dest, src, root);
	memcpy(name, rel, (size_t)(slash - rel));
	name[slash - rel] = '\0';
	if (!volume_name_ok(name))
		return hezo_policy_ferr(err,
					"mounts[%zu] (%s): bind source %s: %s is not a volume name",
					idx, dest, src, name);
	if (volume_owner(p, name, owner, sizeof(owner)) &&
	    (!p->project || strcmp(owner, p->project) != 0))
		return hezo_policy_ferr(err,
					"mounts[%zu] (%s): volume %s belongs to project %s; this "
					"container's project is %s",
					idx, dest, name, owner, p->project ? p->project : "none");
	/*
	 * Without a project, a volume no project claims is the container's: what plain Docker
	 * gives every container, while each project's volumes stay its own.
	 */
	if (!p->project && !allowed_by(p, name)) {
		struct claim c = {.base = p, .name = name};
		int r = hezo_policy_foreach_project(p, claimed_by, &c);

		if (r < 0) {
			char why[PATH_MAX + 128];

			hezo_policy_projects_why(p, r, why, sizeof(why));
			return hezo_error_set(err, -r,
					      "mounts[%zu] (%s): volume %s: which project claims "
					      "it cannot be told: %s",
					      idx, dest, name, why);
		}
		if (r > 0)
			return hezo_policy_ferr(err,
						"mounts[%zu] (%s): volume %s is project %s's (its "
						"volumes.allow); this container has no project",
						idx, dest, name, c.owner);
	} else if (!allowed_by(p, name)) {
		return hezo_policy_ferr(err,
					"mounts[%zu] (%s): volume %s is not one of %s's volumes "
					"(volumes.allow)",
					idx, dest, name, p->project);
	}
	/* A volume of a driver with mount options (type=none,o=bind,device=/etc; nfs) is
	 * whatever the engine mounted there, not the volume's own directory. */
	if (mount_root(src))
		return hezo_policy_ferr(err,
					"mounts[%zu] (%s): volume %s has something mounted on its "
					"_data (a volume driver's device or bind); only plain "
					"volumes are allowed",
					idx, dest, name);
	return 0;
}

static bool allowed_source(const struct hezo_policy *p, const char *src)
{
	for (size_t i = 0; i < p->allowed_sources.n; i++) {
		char resolved[PATH_MAX];

		if (hezo_policy_path_under(src, p->allowed_sources.v[i]) ||
		    (realpath(p->allowed_sources.v[i], resolved) &&
		     hezo_policy_path_under(src, resolved)))
			return true;
	}
	return false;
}

int hezo_policy_check_volume_source(const struct hezo_policy *p, size_t idx, const char *dest,
				    const char *src, bool *handled, struct hezo_error **err)
{
	*handled = false;
	for (size_t i = 0; i < p->volume_roots.n; i++) {
		char resolved[PATH_MAX];
		const char *cand[2] = {p->volume_roots.v[i],
				       realpath(p->volume_roots.v[i], resolved)};

		for (size_t c = 0; c < 2; c++) {
			/* "/" is refused as a root; one that resolves to it is no store. */
			if (!cand[c] || strcmp(cand[c], "/") == 0)
				continue;
			/* Above a store: refused here only where allowedSources would open it
			 * (anywhere else mounts.c refuses it as it refuses any other path). */
			if (hezo_policy_path_under(cand[c], src) && allowed_source(p, src)) {
				*handled = true;
				return hezo_policy_ferr(err,
							"mounts[%zu] (%s): bind source %s holds an "
							"engine's volume store (%s)",
							idx, dest, src, cand[c]);
			}
			if (hezo_policy_path_under(src, cand[c])) {
				*handled = true;
				return judge_volume(p, idx, dest, src, cand[c], err);
			}
		}
	}
	return 0;
}
