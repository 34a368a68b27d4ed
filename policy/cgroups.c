/* linux.cgroupsPath, read as the backend's cgroup driver reads it: only below an allowed parent,
 * named for the container, never an existing cgroup in use, nor at, above or below a live one. */
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
#include "hezo-id.h"
#include "policy-internal.h"

/* Docker's layerdb file and podman's container list: small files; the bound is generous. */
#define ENGINE_FILE_MAX (64 * 1024 * 1024)

/* "a-b-c.slice" is /a.slice/a-b.slice/a-b-c.slice, as systemd (and runc's systemd driver) nest it.
 */
static int slice_path(const char *slice, size_t n, char *buf, size_t size)
{
	size_t o = 0;

	if (n < 6 || strncmp(slice + n - 6, ".slice", 6) != 0 || memchr(slice, '/', n))
		return -EINVAL;
	if (n == 7 && slice[0] == '-') /* "-.slice": the root */
		return snprintf(buf, size, "/") < (int)size ? 0 : -ENAMETOOLONG;
	buf[0] = '\0';
	for (size_t i = 0; i < n - 6; i++) {
		if (slice[i] != '-' && i + 1 != n - 6)
			continue;
		size_t end = slice[i] == '-' ? i : i + 1;
		int w;

		if (end == 0 || slice[end - 1] == '-')
			return -EINVAL;
		w = snprintf(buf + o, size - o, "/%.*s.slice", (int)end, slice);
		if (w < 0 || (size_t)w >= size - o)
			return -ENAMETOOLONG;
		o += (size_t)w;
	}
	return 0;
}

int hezo_policy_cgroup_path(const char *cgroups_path, bool systemd, char *buf, size_t size)
{
	const char *c1 = strchr(cgroups_path, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	char slice[PATH_MAX];
	int r, n;

	if (!systemd) {
		/* runc's and runsc's cgroupfs driver: an absolute path is taken as it is (colons
		 * and all); a relative one is joined to the runtime's own cgroup. */
		if (cgroups_path[0] != '/')
			return -EINVAL;
		n = snprintf(buf, size, "%s", cgroups_path);
	} else {
		/* systemd driver: "slice:prefix:name" is the unit prefix-name.scope in slice;
		 * runc splits on ':' and wants three parts, nothing else. A name ending in
		 * ".slice" would be a slice of its own, the prefix ignored: refused. */
		size_t nl;

		if (!c2 || strchr(c2 + 1, ':') || c2 == c1 + 1 || !c2[1] ||
		    memchr(c1 + 1, '/', (size_t)(c2 - c1 - 1)) || strchr(c2 + 1, '/'))
			return -EINVAL;
		nl = strlen(c2 + 1);
		if (nl >= 6 && strcmp(c2 + 1 + nl - 6, ".slice") == 0)
			return -EINVAL;
		if (c1 == cgroups_path)
			r = slice_path("system.slice", 12, slice, sizeof(slice));
		else
			r = slice_path(cgroups_path, (size_t)(c1 - cgroups_path), slice,
				       sizeof(slice));
		if (r < 0)
			return r;
		n = snprintf(buf, size, "%s/%.*s-%s.scope", strcmp(slice, "/") ? slice : "",
			     (int)(c2 - c1 - 1), c1 + 1, c2 + 1);
	}
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	/* Clean: no empty, "." or ".." component, no trailing slash, not the root itself. */
	for (const char *s = buf; *s;) {
		const char *e = strchr(s + 1, '/');
		size_t len = e ? (size_t)(e - s - 1) : strlen(s + 1);

		if (len == 0 || (len == 1 && s[1] == '.') ||
		    (len == 2 && s[1] == '.' && s[2] == '.'))
			return -EINVAL;
		if (!e)
			break;
		s = e;
	}
	return 0;
}

bool hezo_policy_cgroup_parent_allowed(const struct hezo_strv *parents, const char *parent)
{
	for (size_t i = 0; i < parents->n; i++) {
		/* "/" stands for the top level alone: everything is below it. */
		if (strcmp(parents->v[i], "/") == 0) {
			if (strcmp(parent, "/") == 0)
				return true;
		} else if (hezo_policy_path_under(parent, parents->v[i])) {
			return true;
		}
	}
	return false;
}

/* Processes in the cgroup directory dfd or anywhere below it: 1 and *file (malloc'd), 0, -errno. */
static int tree_has_procs(int dfd, const char *path, unsigned depth, char **file)
{
	_cleanup_close_ int fd = dfd; /* ours, closed on every way out */
	_cleanup_free_ char *procs = NULL;
	struct dirent *e;
	size_t n = 0;
	DIR *d;
	int r;

	if (depth > 64)
		return -ELOOP;
	r = hezo_read_file_at(fd, "cgroup.procs", ENGINE_FILE_MAX, &procs, &n, NULL);
	if (r < 0 && r != -ENOENT)
		return r;
	for (size_t k = 0; r >= 0 && k < n; k++)
		if (isdigit((unsigned char)procs[k]))
			return asprintf(file, "%s/cgroup.procs", path) < 0 ? -ENOMEM : 1;
	d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -1; /* the DIR owns it now */
	r = 0;
	while (r == 0 && (e = readdir(d))) {
		_cleanup_free_ char *sub = NULL;
		int cfd;

		if (e->d_name[0] == '.' || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN))
			continue;
		cfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (cfd < 0)
			continue; /* not a directory, or gone meanwhile */
		if (asprintf(&sub, "%s/%s", path, e->d_name) < 0) {
			close(cfd);
			r = -ENOMEM;
			break;
		}
		r = tree_has_procs(cfd, sub, depth + 1, file);
	}
	closedir(d);
	return r;
}

/* The first cgroup directly below dir: 1 and *child (malloc'd), 0 for none, -errno. */
static int first_child(const char *dir, char **child)
{
	struct dirent *e;
	int r = 0;
	DIR *d = opendir(dir);

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d))) {
		struct stat st;

		if (e->d_name[0] == '.' ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		r = asprintf(child, "%s/%s", dir, e->d_name) < 0 ? -ENOMEM : 1;
		break;
	}
	closedir(d);
	return r;
}

/*
 * Does the cgroup at rel, or any cgroup below it, already hold processes, in any hierarchy
 * mounted here? Joining a parent of busy cgroups would make their processes look like this
 * container's.
 */
static int cgroup_has_procs(const char *rel, const char *shown, bool fresh, struct hezo_error **err)
{
	_cleanup_free_ char *mounts = NULL;
	size_t len;
	int r;

	r = hezo_read_file_at(AT_FDCWD, "/proc/self/mounts", ENGINE_FILE_MAX, &mounts, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "linux.cgroupsPath %s", shown);
	for (char *line = mounts, *next; line && *line; line = next) {
		_cleanup_free_ char *dir = NULL, *file = NULL;
		char dev[256], mnt[PATH_MAX], type[32];
		int fd;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (sscanf(line, "%255s %4095s %31s", dev, mnt, type) != 3 ||
		    (strcmp(type, "cgroup") != 0 && strcmp(type, "cgroup2") != 0))
			continue;
		if (asprintf(&dir, "%s%s", mnt, rel) < 0) {
			dir = NULL;
			return hezo_policy_nomem(err);
		}
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
			continue;
		if (fd < 0)
			return hezo_error_set_errno(err, errno, "linux.cgroupsPath %s: %s", shown,
						    dir);
		r = tree_has_procs(fd, dir, 0, &file);
		if (r < 0)
			return hezo_error_set(err, -r, "linux.cgroupsPath %s: cannot read %s",
					      shown, dir);
		if (r > 0)
			return hezo_error_set(
				err, EPERM,
				"linux.cgroupsPath %s: the cgroup exists and has "
				"processes %s it (%s)",
				shown, strlen(file) == strlen(dir) + 13 ? "in" : "below", file);
		/* An empty leaf a container of this ID left is reused (runc does); one with
		 * cgroups below it is a parent that something else creates its own in. */
		r = first_child(dir, &file);
		if (r < 0)
			return hezo_error_set(err, -r, "linux.cgroupsPath %s: cannot read %s",
					      shown, dir);
		if (r > 0)
			return hezo_error_set(err, EPERM,
					      "linux.cgroupsPath %s: the cgroup exists and has "
					      "cgroups below it (%s): a parent, not a container's",
					      shown, file);
		if (fresh)
			return hezo_error_set(
				err, EEXIST,
				"linux.cgroupsPath %s: the cgroup %s exists, and runsc "
				"sets its limits only in a cgroup it makes",
				shown, dir);
	}
	return 0;
}

/* Is cgroup a or b the other, or below it? */
static bool cgroups_nest(const char *a, const char *b)
{
	return hezo_policy_path_under(a, b) || hezo_policy_path_under(b, a);
}

/* The cgroup of a live container of hezo-shim's at, above or below rel: its entry, or NULL. */
static const struct hezo_live_cgroup *live_nested(const struct hezo_apply_env *env, const char *rel)
{
	for (size_t i = 0; env && i < env->n_live_cgroups; i++) {
		const struct hezo_live_cgroup *l = &env->live_cgroups[i];

		if (l->cgroup && l->cgroup[0] == '/' && strcmp(l->cgroup, "/") != 0 &&
		    cgroups_nest(rel, l->cgroup) && (!env->cgroup_live || env->cgroup_live(l)))
			return l;
	}
	return NULL;
}

int hezo_policy_check_cgroups_path(const struct hezo_policy *p, struct hezo_json *linux_,
				   const struct hezo_apply_env *env, struct hezo_error **err)
{
	const struct hezo_json *v = hezo_json_get(linux_, "cgroupsPath");
	const struct hezo_live_cgroup *l;
	bool systemd = env && env->systemd_cgroup;
	char rel[PATH_MAX], q[256];
	const char *cg, *last;
	int r;

	/*
	 * Absent (or "", which runc and runsc take as absent): both make the cgroup /ID of the
	 * cgroupfs hierarchies, joining one that exists. Written out, so that it is judged (and
	 * recorded) as any other. Under --systemd-cgroup the backend's own slice and unit name.
	 */
	if (!v || v->type == HEZO_JSON_NULL || (hezo_json_string(v) && !hezo_json_string(v)[0])) {
		char def[PATH_MAX];

		if (systemd || !env || !env->id)
			return 0;
		snprintf(def, sizeof(def), "/%s", env->id);
		if (hezo_json_set(linux_, "cgroupsPath", hezo_json_new_string(def)) < 0)
			return hezo_policy_nomem(err);
		v = hezo_json_get(linux_, "cgroupsPath");
	}
	cg = hezo_json_string(v);
	if (!cg)
		return hezo_policy_ferr(err, "linux.cgroupsPath: expected a string, got %s",
					hezo_json_type_name(v->type));
	hezo_policy_quote(q, sizeof(q), cg);
	/* Judged as the backend will read it, under the flags the shim hands it. */
	if (systemd && cg[0] == '/')
		return hezo_policy_ferr(err,
					"linux.cgroupsPath %s: a path, but the backend is given "
					"--systemd-cgroup, under which it reads only "
					"slice:prefix:name",
					q);
	if (!systemd && cg[0] != '/' && strchr(cg, ':'))
		return hezo_policy_ferr(
			err,
			"linux.cgroupsPath %s: the systemd form slice:prefix:name, "
			"but the backend is not given --systemd-cgroup: its cgroupfs "
			"driver would make it a cgroup below the runtime's own",
			q);
	r = hezo_policy_cgroup_path(cg, systemd, rel, sizeof(rel));
	if (r < 0)
		return hezo_policy_ferr(err,
					systemd ? "linux.cgroupsPath %s: not a clean "
						  "slice:prefix:name (with --systemd-cgroup)"
						: "linux.cgroupsPath %s: not a clean absolute path "
						  "below the root",
					q);
	last = strrchr(rel, '/');
	if (!env || !env->id || !hezo_cgroup_name_is_id(last + 1, env->id))
		return hezo_error_set(
			err, EPERM,
			"linux.cgroupsPath %s: the cgroup's name is not the container's "
			"ID in an engine's form (ID, libpod-ID, docker-ID.scope, "
			"libpod-ID.scope, cri-containerd-ID.scope, crio-ID.scope; never a "
			"systemd unit's name such as X.service)",
			q);
	{
		char parent[PATH_MAX];

		snprintf(parent, sizeof(parent), "%.*s", last == rel ? 1 : (int)(last - rel), rel);
		if (!hezo_policy_cgroup_parent_allowed(&p->cgroup_parents, parent)) {
			hezo_error_set(err, EPERM,
				       "linux.cgroupsPath %s: parent %s is not in the "
				       "policy's cgroupParents",
				       q, parent);
			return hezo_error_key(err, "cgroupParents");
		}
	}
	/* An engine creates its containers below an entry: a box there would hold them all. */
	for (size_t i = 0; i < p->cgroup_parents.n; i++)
		if (strcmp(p->cgroup_parents.v[i], rel) == 0) {
			hezo_error_set(err, EPERM,
				       "linux.cgroupsPath %s: %s is itself in the policy's "
				       "cgroupParents, where engines create their containers' "
				       "cgroups",
				       q, rel);
			return hezo_error_key(err, "cgroupParents");
		}
	l = live_nested(env, rel);
	if (l)
		return hezo_error_set(
			err, EPERM,
			"linux.cgroupsPath %s: %s container %s's cgroup %s (one's limits, pause "
			"and kill --all would reach the other)",
			q,
			strcmp(l->cgroup, rel) == 0		 ? "it is"
			: hezo_policy_path_under(rel, l->cgroup) ? "it is below"
								 : "it is above",
			l->id ? l->id : "?", l->cgroup);
	return cgroup_has_procs(rel, q, env->fresh_cgroup, err);
}
