/* linux.cgroupsPath: only below an allowed parent, named for the container, never an existing
 * cgroup with processes in it. */
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

int hezo_policy_cgroup_path(const char *cgroups_path, char *buf, size_t size)
{
	const char *c1 = strchr(cgroups_path, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	char slice[PATH_MAX];
	int r, n;

	if (!c1) {
		if (cgroups_path[0] != '/')
			return -EINVAL;
		n = snprintf(buf, size, "%s", cgroups_path);
	} else {
		/* systemd driver: "slice:prefix:name" is the unit prefix-name.scope in slice. */
		if (!c2 || strchr(c2 + 1, ':') || c2 == c1 + 1 || !c2[1] ||
		    memchr(c1 + 1, '/', (size_t)(c2 - c1 - 1)) || strchr(c2 + 1, '/'))
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

/*
 * Does the cgroup at rel, or any cgroup below it, already hold processes, in any hierarchy
 * mounted here? Joining a parent of busy cgroups would make their processes look like this
 * container's.
 */
static int cgroup_has_procs(const char *rel, const char *shown, struct hezo_error **err)
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
	}
	return 0;
}

/*
 * The engines' names for a container's cgroup, the last component of linux.cgroupsPath: <id>
 * (Docker, containerd and CRI with cgroupfs), libpod-<id> (podman with cgroupfs) and the
 * systemd scopes docker-<id>.scope, libpod-<id>.scope, cri-containerd-<id>.scope,
 * crio-<id>.scope. A name merely containing the ID ("docker" for ID "docker") is not one.
 */
/*
 * A systemd unit's name: systemd puts a unit's processes in the cgroup of that name (a service
 * started later lands in /system.slice/X.service), so a container named so would count them as
 * its own. Engines name theirs PREFIX-ID.scope, checked below.
 */
static bool unit_named(const char *name)
{
	static const char *const units[] = {".service", ".socket", ".scope",	".slice",
					    ".mount",	".target", ".timer",	".path",
					    ".swap",	".device", ".automount"};
	size_t n = strlen(name);

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(units); i++) {
		size_t un = strlen(units[i]);
		if (n > un && strcmp(name + n - un, units[i]) == 0)
			return true;
	}
	return false;
}

static bool cgroup_name_is_id(const char *name, const char *id)
{
	static const char *const scopes[] = {"docker-", "libpod-", "cri-containerd-", "crio-"};
	size_t n = strlen(name), idn = strlen(id);

	if (!idn)
		return false;
	if (strcmp(name, id) == 0)
		return !unit_named(name);
	if (strncmp(name, "libpod-", 7) == 0 && strcmp(name + 7, id) == 0)
		return !unit_named(name);
	if (n < 6 || strcmp(name + n - 6, ".scope") != 0)
		return false;
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(scopes); i++) {
		size_t pn = strlen(scopes[i]);

		if (n == pn + idn + 6 && strncmp(name, scopes[i], pn) == 0 &&
		    strncmp(name + pn, id, idn) == 0)
			return true;
	}
	return false;
}

int hezo_policy_check_cgroups_path(const struct hezo_policy *p, const struct hezo_json *linux_,
				   const struct hezo_apply_env *env, struct hezo_error **err)
{
	const struct hezo_json *v = hezo_json_get(linux_, "cgroupsPath");
	char rel[PATH_MAX], q[256];
	const char *cg, *last;
	int r;

	/* Absent: the backend's own default (runc: a cgroup named after the ID). */
	if (!v || v->type == HEZO_JSON_NULL)
		return 0;
	cg = hezo_json_string(v);
	if (!cg)
		return hezo_policy_ferr(err, "linux.cgroupsPath: expected a string, got %s",
					hezo_json_type_name(v->type));
	if (!cg[0])
		return 0; /* runc and runsc take "" as absent */
	hezo_policy_quote(q, sizeof(q), cg);
	r = hezo_policy_cgroup_path(cg, rel, sizeof(rel));
	if (r < 0)
		return hezo_policy_ferr(err,
					"linux.cgroupsPath %s: not a clean absolute path (or "
					"slice:prefix:name) below the root",
					q);
	last = strrchr(rel, '/');
	if (!env || !env->id || !cgroup_name_is_id(last + 1, env->id))
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
		if (!hezo_policy_cgroup_parent_allowed(&p->cgroup_parents, parent))
			return hezo_error_set(err, EPERM,
					      "linux.cgroupsPath %s: parent %s is not in the "
					      "policy's cgroupParents",
					      q, parent);
	}
	return cgroup_has_procs(rel, q, err);
}
