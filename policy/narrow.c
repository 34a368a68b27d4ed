/* Narrowing the policy for one container: its project file laid over the main policy (never
 * looser), then its org.hezo.* annotations. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "hezo-cleanup.h"
#include "hezo-egress.h"
#include "hezo-file.h"
#include "policy-parse.h"

/* ---- per-container narrowing ---- */

/* A project may drop sysctls and narrow bounds, never add one or widen them. */
static int sysctls_narrower(struct pctx *c, const struct hezo_policy *base,
			    const struct hezo_policy *p)
{
	for (size_t i = 0; i < p->nsysctls; i++) {
		const struct hezo_policy_sysctl *s = &p->sysctls[i];
		const struct hezo_policy_sysctl *b = hezo_policy_sysctl_find(base, s->name);

		if (!b)
			return hezo_policy_perr(c, "sysctls", "%s is not in the main policy's list",
						s->name);
		if (!b->any && (s->any || s->lo < b->lo || s->hi > b->hi))
			return hezo_policy_perr(
				c, "sysctls",
				"%s: a project may only narrow the main policy's %" PRIu64
				" %" PRIu64,
				s->name, b->lo, b->hi);
	}
	return 0;
}

/* Lay src over dst: objects merge key by key, everything else is replaced. */
static int merge_json(struct hezo_json *dst, const struct hezo_json *src)
{
	HEZO_JSON_FOREACH (i, src) {
		struct hezo_json *d = hezo_json_get(dst, src->keys[i]);
		int r;

		if (d && d->type == HEZO_JSON_OBJECT && src->items[i]->type == HEZO_JSON_OBJECT)
			r = merge_json(d, src->items[i]);
		else
			r = hezo_json_set(dst, src->keys[i], hezo_json_clone(src->items[i]));
		if (r < 0)
			return r;
	}
	return 0;
}

int hezo_policy_layer_project(const struct hezo_policy *base, const char *project, const char *path,
			      const char *buf, size_t len, struct hezo_policy **out,
			      struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *doc = NULL, *merged = NULL;
	struct pctx c = {.project = true, .name = path, .err = err};
	char why[512]; /* volumes.c's messages */
	int r;

	if (!hezo_policy_project_name_valid(project))
		return hezo_error_set(err, EINVAL,
				      "project \"%.64s\": a name is 1 to 64 of [a-z0-9._-], not "
				      "starting with \".\"",
				      project);
	r = hezo_json_parse(buf, len, &doc, err);
	if (r < 0)
		return hezo_error_prefix(err, "policy %s", path);
	if (doc->type != HEZO_JSON_OBJECT)
		return hezo_policy_perr(&c, NULL, "expected a JSON object, got %s",
					hezo_json_type_name(doc->type));
	/* Check the project's own keys first so messages point at what it wrote. */
	if (hezo_policy_new_default(&p) < 0)
		return hezo_policy_oom(&c);
	HEZO_JSON_FOREACH (i, doc) {
		r = hezo_policy_parse_top_key(&c, p, doc->keys[i], doc->items[i]);
		if (r < 0)
			return r;
	}
	hezo_policy_free(TAKE_PTR(p));

	merged = hezo_policy_file_json(base);
	if (!merged || merge_json(merged, doc) < 0 || hezo_policy_new_default(&p) < 0)
		return hezo_policy_oom(&c);
	c.project = false;
	c.layered = true;
	r = hezo_policy_parse_into(&c, p, merged);
	if (r < 0)
		return r;
	/* A project may narrow where cgroups go and which hooks run, never widen it. */
	for (size_t i = 0; i < p->cgroup_parents.n; i++)
		if (!hezo_policy_cgroup_parent_allowed(&base->cgroup_parents,
						       p->cgroup_parents.v[i]))
			return hezo_policy_perr(&c, "cgroupParents",
						"%s is not allowed by the main policy",
						p->cgroup_parents.v[i]);
	for (size_t i = 0; i < p->allowed_hooks.n; i++)
		if (!hezo_strv_contains(&base->allowed_hooks, p->allowed_hooks.v[i]))
			return hezo_policy_perr(&c, "allowedHooks",
						"%s is not in the main policy's list",
						p->allowed_hooks.v[i]);
	if (p->cpu_shares > base->cpu_shares || p->blkio_weight > base->blkio_weight)
		return hezo_policy_perr(
			&c, "weights",
			"a project may only lower the main policy's cpuShares %" PRIu64
			" and blkioWeight %" PRIu64,
			base->cpu_shares, base->blkio_weight);
	r = sysctls_narrower(&c, base, p);
	if (r < 0)
		return r;
	r = hezo_policy_secrets_narrower(base, p, path, err);
	if (r < 0)
		return r;
	if (hezo_policy_volumes_narrower(base, p, why, sizeof(why)) < 0)
		return hezo_policy_perr(&c, NULL, "%s", why);
	if (p->tmpfs_exec && !base->tmpfs_exec)
		return hezo_policy_perr(&c, "exec.tmpfs",
					"a project may only tighten the main policy's false");
	if (p->tmpfs_max > base->tmpfs_max)
		return hezo_policy_perr(&c, "tmpfsMax",
					"a project may only lower the main policy's %" PRIu64,
					base->tmpfs_max);
	if (p->rlimit_rtprio > base->rlimit_rtprio || p->rlimit_nice > base->rlimit_nice)
		return hezo_policy_perr(&c, "rlimits",
					"a project may only lower the main policy's rtprio %" PRIu64
					" and nice %" PRIu64,
					base->rlimit_rtprio, base->rlimit_nice);
	if (p->seccomp_path) {
		if (base->seccomp_path && base->seccomp_profile &&
		    strcmp(base->seccomp_path, p->seccomp_path) == 0) {
			p->seccomp_profile = hezo_json_clone(base->seccomp_profile);
			if (!p->seccomp_profile)
				return hezo_policy_oom(&c);
		} else {
			r = hezo_policy_seccomp_load(p->seccomp_path, &p->seccomp_profile, err);
			if (r < 0)
				return hezo_error_prefix(err, "policy %s: seccomp", path);
		}
	}
	p->project = strdup(project);
	if (!p->project)
		return hezo_policy_oom(&c);
	*out = TAKE_PTR(p);
	return 0;
}

/*
 * A project file, read only from a projectsDir and a file that root owns and alone may write (a
 * file anyone else may write would choose a project's box: its allowedSources, its workspace),
 * never through a symlink, never waiting on a FIFO (red team ws3, F3).
 */
static int read_project_file(const char *dir, const char *file, char **buf, size_t *len,
			     struct hezo_error **err)
{
	_cleanup_close_ int dfd = -1, fd = -1;
	struct stat st;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &st) < 0)
		return hezo_error_set_errno(err, errno, "projectsDir %s", dir);
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return hezo_error_set(err, EPERM,
				      "projectsDir %s: not root's, or writable by group or others "
				      "(whoever may write there chooses a project's box)",
				      dir);
	fd = openat(dfd, file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT
				       : hezo_error_set_errno(err, errno, "%s/%s", dir, file);
	if (fstat(fd, &st) < 0)
		return hezo_error_set_errno(err, errno, "%s/%s", dir, file);
	if (!S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)))
		return hezo_error_set(
			err, EPERM, "%s/%s: not a regular file of root's that root alone may write",
			dir, file);
	return hezo_read_fd(fd, POLICY_MAX_BYTES, buf, len, err);
}

static int layer_project(const struct hezo_policy *base, const char *project, bool *missing,
			 struct hezo_policy **out, struct hezo_error **err)
{
	_cleanup_free_ char *path = NULL, *buf = NULL;
	size_t len = 0;
	int r;

	_cleanup_free_ char *file = NULL;

	if (asprintf(&path, "%s/%s.json", base->projects_dir, project) < 0 ||
	    asprintf(&file, "%s.json", project) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = read_project_file(base->projects_dir, file, &buf, &len, err);
	if (r < 0) {
		if (r == -ENOENT) {
			hezo_error_free(*err);
			*err = NULL;
			*missing = true;
			return hezo_error_set(err, ENOENT, "project %s: no project file %s",
					      project, path);
		}
		return hezo_error_prefix(err, "project %s", project);
	}
	return hezo_policy_layer_project(base, project, path, buf, len, out, err);
}

static int policy_clone(const struct hezo_policy *base, struct hezo_policy **out,
			struct hezo_error **err);

/*
 * The main policy with a project file's own mounts.allowedSources and mounts.engineRoots added, and
 * its name and workspace, as far as the file is JSON: for a file that does not layer (red team
 * ws2, F3: its workspace dropped out of every check while its boxes ran). -EBADMSG when it cannot
 * be read or is not JSON at all.
 */
static int raw_project(const struct hezo_policy *base, int dir, const char *file, const char *name,
		       struct hezo_policy **out)
{
	static const char *const keys[] = {"allowedSources", "engineRoots"};
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *doc = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	const struct hezo_json *ws;
	_cleanup_free_ char *clean = NULL;

	int r = read_project_file(base->projects_dir, file, &buf, &len, NULL);

	(void)dir;
	if (r == -ENOENT)
		return r; /* removed since the directory was read */
	if (r < 0 || hezo_json_parse(buf, len, &doc, NULL) < 0)
		return -EBADMSG;
	if (policy_clone(base, &p, NULL) < 0 || !(p->project = strdup(name)))
		return -ENOMEM;
	ws = hezo_json_get_type(doc, "workspace", HEZO_JSON_STRING);
	if (ws && strcmp(ws->str, "volume") == 0)
		p->workspace_volume = true;
	else if (ws && hezo_policy_clean_path(ws->str, &clean) == 0) {
		char why[PATH_MAX + 128];

		/* One no box can have been given (/, a system directory) holds nothing. */
		if (!hezo_policy_workspace_forbidden(p, clean, why, sizeof(why)))
			p->workspace = TAKE_PTR(clean);
	}
	for (size_t k = 0; k < HEZO_ARRAY_SIZE(keys); k++) {
		const struct hezo_json *list = hezo_json_get(hezo_json_get(doc, "mounts"), keys[k]);
		struct hezo_strv *to = k == 0 ? &p->allowed_sources : &p->engine_roots;

		HEZO_JSON_FOREACH (i, list) {
			const char *v = hezo_json_string(list->items[i]);
			if (v && v[0] == '/' && hezo_strv_push(to, v) < 0)
				return -ENOMEM;
		}
	}
	*out = TAKE_PTR(p);
	return 0;
}

/* NAME of a directory entry NAME.json whose NAME is a project's name, into name. */
static bool project_file_name(const char *entry, char *name, size_t size)
{
	size_t n = strlen(entry);

	if (n < 6 || n - 5 >= size || strcmp(entry + n - 5, ".json") != 0)
		return false;
	memcpy(name, entry, n - 5);
	name[n - 5] = '\0';
	return hezo_policy_project_name_valid(name);
}

int hezo_policy_foreach_project(const struct hezo_policy *base,
				int (*fn)(const struct hezo_policy *p, void *data), void *data)
{
	struct dirent *e;
	DIR *d;
	int r = fn(base, data);

	if (r)
		return r;
	bool bad = false;

	d = opendir(base->projects_dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && (e = readdir(d))) {
		_cleanup_policy_ struct hezo_policy *p = NULL;
		_cleanup_error_ struct hezo_error *err = NULL;
		char name[256];
		bool missing = false;

		if (!project_file_name(e->d_name, name, sizeof(name)))
			continue;
		/*
		 * A file that does not layer (now: a seccomp profile it names may have changed
		 * since its boxes were made) still names the directories its boxes may have been
		 * handed.
		 */
		if (layer_project(base, name, &missing, &p, &err) < 0) {
			int q = raw_project(base, dirfd(d), e->d_name, name, &p);
			if (q == -EBADMSG) {
				/* What its boxes hold cannot be told: fail closed, after the rest.
				 */
				bad = true;
				continue;
			}
			if (q == -ENOENT)
				continue;
			if (q < 0) {
				r = q;
				break;
			}
		}
		r = fn(p, data);
	}
	closedir(d);
	return r == 0 && bad ? -EBADMSG : r;
}

int hezo_policy_projects_why(const struct hezo_policy *base, int r, char *why, size_t size)
{
	struct dirent *e;
	DIR *d;

	snprintf(why, size, "projectsDir %s: %s", base->projects_dir, strerror(-r));
	if (r != -EBADMSG || !(d = opendir(base->projects_dir)))
		return 0;
	while ((e = readdir(d))) {
		_cleanup_policy_ struct hezo_policy *p = NULL;
		_cleanup_error_ struct hezo_error *err = NULL;
		char name[256];
		bool missing = false;

		if (!project_file_name(e->d_name, name, sizeof(name)) ||
		    layer_project(base, name, &missing, &p, &err) == 0 ||
		    raw_project(base, dirfd(d), e->d_name, name, &p) != -EBADMSG)
			continue;
		snprintf(why, size,
			 "project file %s/%s cannot be read or is not JSON: what its boxes hold "
			 "cannot be judged; fix or remove it",
			 base->projects_dir, e->d_name);
		break;
	}
	closedir(d);
	return 0;
}

static int policy_clone(const struct hezo_policy *base, struct hezo_policy **out,
			struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *doc = hezo_policy_file_json(base);
	struct pctx c = {.name = "(effective)", .err = err, .layered = true};
	int r;

	if (!doc || hezo_policy_new_default(&p) < 0)
		return hezo_policy_oom(&c);
	r = hezo_policy_parse_into(&c, p, doc);
	if (r < 0)
		return r;
	if (base->seccomp_profile) {
		p->seccomp_profile = hezo_json_clone(base->seccomp_profile);
		if (!p->seccomp_profile)
			return hezo_policy_oom(&c);
	}
	if (base->project) {
		p->project = strdup(base->project);
		if (!p->project)
			return hezo_policy_oom(&c);
	}
	*out = TAKE_PTR(p);
	return 0;
}

static int annotation_err(struct hezo_error **err, const char *key, const char *val,
			  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int annotation_err(struct hezo_error **err, const char *key, const char *val,
			  const char *fmt, ...)
{
	_cleanup_free_ char *where = NULL;
	char qk[256], qv[256];
	va_list ap;
	int r;

	hezo_policy_quote(qk, sizeof(qk), key);
	hezo_policy_quote(qv, sizeof(qv), val);
	if (asprintf(&where, "annotation %s=%s", qk, qv) < 0)
		return hezo_policy_nomem(err);
	va_start(ap, fmt);
	r = hezo_policy_verr(err, where, fmt, ap);
	va_end(ap);
	return r;
}

static int apply_annotation(struct hezo_policy *p, const char *key, const char *val,
			    struct hezo_error **err)
{
	const char *k = key + strlen("org.hezo.");
	uint64_t n;

	if (strcmp(k, "project") == 0)
		return 0; /* used to choose the project */
	if (strcmp(k, "backend") == 0) {
		enum hezo_backend b;
		if (hezo_backend_from_name(val, &b) < 0)
			return annotation_err(err, key, val, "not a backend (runsc, runc, crun)");
		if (!p->allow_backends[b]) {
			annotation_err(err, key, val, "backend not in allowBackends");
			return hezo_error_key(err, "allowBackends");
		}
		p->backend = b;
		return 0;
	}
	if (strcmp(k, "memory") == 0) {
		if (hezo_policy_parse_size_text(val, &n) < 0 || n == 0)
			return annotation_err(err, key, val, "not a size");
		if (n > p->memory) {
			annotation_err(err, key, val,
				       "above the policy's memory ceiling %" PRIu64 " bytes",
				       p->memory);
			return hezo_error_key(err, "resources.memory");
		}
		p->memory = n;
		return 0;
	}
	if (strcmp(k, "pids") == 0) {
		if (hezo_policy_parse_size_text(val, &n) < 0 || n == 0 ||
		    !isdigit((unsigned char)val[0]) ||
		    !isdigit((unsigned char)val[strlen(val) - 1]))
			return annotation_err(err, key, val, "not a whole number above 0");
		if (n > p->pids) {
			annotation_err(err, key, val, "above the policy's pids ceiling %" PRIu64,
				       p->pids);
			return hezo_error_key(err, "resources.pids");
		}
		p->pids = n;
		return 0;
	}
	if (strcmp(k, "cpus") == 0) {
		if (hezo_policy_parse_cpus_text(val, &n) < 0)
			return annotation_err(err, key, val, "not a CPU count");
		if (n > p->cpus_milli) {
			annotation_err(err, key, val,
				       "above the policy's CPU ceiling %" PRIu64 ".%03" PRIu64,
				       p->cpus_milli / 1000, p->cpus_milli % 1000);
			return hezo_error_key(err, "resources.cpus");
		}
		p->cpus_milli = n;
		return 0;
	}
	if (strcmp(k, "egress.allow") == 0) {
		_cleanup_free_ char *copy = strdup(val);
		struct hezo_strv s = {0};
		char *cursor = copy, *tok, canon[HEZO_EGRESS_ENTRY_MAX];

		if (!copy || hezo_strv_init(&s) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
		while ((tok = hezo_policy_list_next(&cursor))) {
			/* Compared in the canonical spelling the policy keeps; a token that is no
			 * entry at all is in no list. */
			if (hezo_allow_normalize(tok, canon, NULL) == 0)
				tok = canon;
			else
				hezo_policy_lowercase(tok);
			if (!hezo_strv_contains(&p->egress_allow, tok)) {
				char q[256];
				hezo_policy_quote(q, sizeof(q), tok);
				hezo_strv_done(&s);
				annotation_err(err, key, val,
					       "%s is not in the policy's egress.allow", q);
				return hezo_error_key(err, "egress.allow");
			}
			if (!hezo_strv_contains(&s, tok) && hezo_strv_push(&s, tok) < 0) {
				hezo_strv_done(&s);
				return hezo_error_set(err, ENOMEM, "out of memory");
			}
		}
		hezo_strv_done(&p->egress_allow);
		p->egress_allow = s;
		return 0;
	}
	if (strcmp(k, "secrets") == 0)
		return hezo_policy_secrets_annotation(p, key, val, err);
	return annotation_err(err, key, val, "unknown hezo annotation");
}

int hezo_policy_for_container(const struct hezo_policy *base, const struct hezo_json *annotations,
			      const char *project_hint, struct hezo_policy **out,
			      struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	static const char k8s_source[] = "annotation \"io.kubernetes.cri.sandbox-namespace\"";
	static const char k8s_crio_source[] = "annotation \"io.kubernetes.pod.namespace\"";
	const char *project = NULL, *source = NULL, *named;
	bool missing = false;
	int r;

	if (annotations && annotations->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "annotations: expected an object, got %s",
				      hezo_json_type_name(annotations->type));
	/* Every org.hezo.* value must be a string before any of them is believed. */
	HEZO_JSON_FOREACH (i, annotations) {
		if (strncmp(annotations->keys[i], "org.hezo.", 9) != 0)
			continue;
		if (annotations->items[i]->type != HEZO_JSON_STRING) {
			char qk[256];
			hezo_policy_quote(qk, sizeof(qk), annotations->keys[i]);
			return hezo_error_set(err, EINVAL,
					      "annotation %s: expected a string, got %s", qk,
					      hezo_json_type_name(annotations->items[i]->type));
		}
	}
	/*
	 * The admin's side names the project: the runtime's --hezo-project, else the Kubernetes
	 * namespace. The container's own annotation may repeat that name, never choose another:
	 * a project is also whose namespaces, volumes and secrets a container may reach.
	 */
	named = hezo_json_string(hezo_json_get(annotations, "org.hezo.project"));
	if (project_hint) {
		project = project_hint;
		source = "--hezo-project";
	} else {
		/* containerd's key, else CRI-O's; two that disagree name no one namespace. */
		const char *cri = hezo_json_string(
			hezo_json_get(annotations, "io.kubernetes.cri.sandbox-namespace"));
		const char *crio =
			hezo_json_string(hezo_json_get(annotations, "io.kubernetes.pod.namespace"));

		if (cri && crio && strcmp(cri, crio) != 0) {
			char qa[256], qb[256];
			hezo_policy_quote(qa, sizeof(qa), cri);
			hezo_policy_quote(qb, sizeof(qb), crio);
			return hezo_error_set(
				err, EINVAL,
				"annotations \"io.kubernetes.cri.sandbox-namespace\"=%s "
				"and \"io.kubernetes.pod.namespace\"=%s name two "
				"Kubernetes namespaces",
				qa, qb);
		}
		project = cri ?: crio;
		source = cri ? k8s_source : k8s_crio_source;
	}
	if (named && project && strcmp(named, project) != 0) {
		char qn[256], qp[256];
		hezo_policy_quote(qn, sizeof(qn), named);
		hezo_policy_quote(qp, sizeof(qp), project);
		return hezo_error_set(
			err, EPERM,
			"annotation \"org.hezo.project\"=%s: this container's project "
			"is %s (from %s); the annotation may repeat it, not choose "
			"another",
			qn, qp, source);
	}
	if (named && !project) {
		project = named;
		source = "annotation \"org.hezo.project\"";
	}
	if (project) {
		if (!hezo_policy_project_name_valid(project)) {
			char q[256];
			hezo_policy_quote(q, sizeof(q), project);
			return hezo_error_set(err, EINVAL,
					      "%s: project name %s is not 1-64 characters of "
					      "[a-z0-9._-] not starting with '.'",
					      source, q);
		}
		r = layer_project(base, project, &missing, &p, err);
		/*
		 * Kubernetes names a namespace for every pod; one without a project file of its
		 * own gets the global box (never looser). A project asked for by name must exist.
		 */
		if (r < 0 && missing && (source == k8s_source || source == k8s_crio_source)) {
			hezo_error_free(*err);
			*err = NULL;
			r = policy_clone(base, &p, err);
		}
	} else {
		r = policy_clone(base, &p, err);
	}
	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, annotations) {
		if (strncmp(annotations->keys[i], "org.hezo.", 9) != 0)
			continue;
		r = apply_annotation(p, annotations->keys[i], annotations->items[i]->str, err);
		if (r < 0)
			return r;
	}
	*out = TAKE_PTR(p);
	return 0;
}
