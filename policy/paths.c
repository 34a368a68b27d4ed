/* Fields of config.json that name things outside the box (namespace paths, cgroupsPath,
 * root.path, hooks): whose they are and whether the container may have them. */
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

static const struct {
	const char *type;
	const char *proc;
	bool required; /* absent or the host's is refused unless allowHost says so */
	unsigned host_bit;
	int clone_flag; /* what NS_GET_NSTYPE answers for a namespace of this kind */
} ns_kinds[] = {
	{"pid", "pid", true, HEZO_NS_PID, CLONE_NEWPID},
	{"network", "net", true, HEZO_NS_NETWORK, CLONE_NEWNET},
	{"mount", "mnt", true, 0, CLONE_NEWNS},
	{"ipc", "ipc", true, HEZO_NS_IPC, CLONE_NEWIPC},
	{"uts", "uts", true, HEZO_NS_UTS, CLONE_NEWUTS},
	{"user", "user", false, 0, CLONE_NEWUSER},
	{"cgroup", "cgroup", false, HEZO_NS_CGROUP, CLONE_NEWCGROUP},
	{"time", "time", false, 0, CLONE_NEWTIME},
};

/*
 * Where engines pin the namespaces they make for a container before its first process is in
 * them: ip-netns's directories (containerd CRI's cni-*, podman's netns-*, CRI-O's), CRI-O's pinns
 * directories, and containerd CRI's netns_mounts_under_state_dir (below an engine root, as
 * ENGINE_ROOT/io.containerd.grpc.v1.cri/netns). A namespace nobody is in anywhere else is a
 * host's pin (hezo-proxyd's, an admin's) and is not this container's to join.
 */
static const struct {
	const char *proc;
	const char *dir;
} ns_pin_dirs[] = {
	{"net", "/run/netns"},	   {"net", "/var/run/netns"},	{"ipc", "/var/run/ipcns"},
	{"uts", "/var/run/utsns"}, {"user", "/var/run/userns"},
};
#define CRI_NETNS_DIR "io.containerd.grpc.v1.cri/netns"

/* /proc/<pid>/ns or /proc/<pid>/task/<tid>/ns: the kernel's, nobody renames in it. */
static bool proc_ns_dir(const char *dir)
{
	const char *s = dir;

	if (strncmp(s, "/proc/", 6) != 0 || !isdigit((unsigned char)s[6]))
		return false;
	for (s += 6; isdigit((unsigned char)*s); s++)
		;
	if (strncmp(s, "/task/", 6) == 0 && isdigit((unsigned char)s[6]))
		for (s += 6; isdigit((unsigned char)*s); s++)
			;
	return strcmp(s, "/ns") == 0;
}

/*
 * Every directory on the way to path, and path itself, as only root (or the shim's uid) can
 * change it: a directory others may write into (but for a sticky one, whose entries stay their
 * owners') or one owned by another uid lets that uid swap what the path names after the check.
 */
static int check_ns_components(const char *path, struct hezo_error **err)
{
	_cleanup_free_ char *p = strdup(path);
	struct stat st;

	if (!p)
		return hezo_policy_nomem(err);
	for (char *s = p;; s++) {
		bool last = *s == '\0';
		char c = *s;

		if (!last && (*s != '/' || s == p))
			continue;
		*s = '\0';
		if (lstat(s == p ? "/" : p, &st) < 0)
			return -errno;
		*s = c;
		if (st.st_uid != 0 && st.st_uid != geteuid())
			return hezo_error_set(err, EPERM, "%.*s is owned by uid %u",
					      (int)(s - p) ?: 1, p, (unsigned)st.st_uid);
		if (!last && (st.st_mode & 022) && !(st.st_mode & S_ISVTX))
			return hezo_error_set(err, EPERM, "%.*s can be written by others",
					      (int)(s - p) ?: 1, p);
		if (last)
			break;
	}
	return 0;
}

/*
 * The path with no symlink left, the one that is checked and then written into config.json, so
 * the runtime opens what was checked and not what a repointed link names by then. A namespace
 * file under /proc/<pid>/ns is a kernel link that realpath() cannot follow: it ends there.
 * A failed system call returns -errno and leaves err unset.
 */
static int resolve_ns_path(const char *path, char *out, size_t size, struct hezo_error **err)
{
	char cur[PATH_MAX], dir[PATH_MAX], link[PATH_MAX];
	struct stat st;

	if (strlen(path) >= sizeof(cur))
		return hezo_error_set(err, ENAMETOOLONG, "path too long");
	snprintf(cur, sizeof(cur), "%s", path);
	for (int hops = 0; hops < 40; hops++) {
		char *slash, *base;
		ssize_t n;
		int r;

		if (realpath(cur, out) && strlen(out) < size)
			return check_ns_components(out, err);
		slash = strrchr(cur, '/');
		if (!slash || cur[0] != '/')
			return hezo_policy_ferr(err, "not an absolute path");
		*slash = '\0';
		base = slash + 1;
		if (!realpath(cur[0] ? cur : "/", dir))
			return -errno;
		if ((size_t)snprintf(out, size, "%s/%s", strcmp(dir, "/") ? dir : "", base) >= size)
			return hezo_error_set(err, ENAMETOOLONG, "path too long");
		if (lstat(out, &st) < 0)
			return -errno;
		if (!S_ISLNK(st.st_mode))
			return hezo_policy_ferr(err, "%s: cannot be resolved", out);
		if (proc_ns_dir(dir))
			return 0;
		/* A link on the way is as good as the directory it sits in. */
		r = check_ns_components(dir, err);
		if (r < 0)
			return r;
		n = readlink(out, link, sizeof(link) - 1);
		if (n < 0)
			return -errno;
		link[n] = '\0';
		if (link[0] == '/')
			snprintf(cur, sizeof(cur), "%s", link);
		else if ((size_t)snprintf(cur, sizeof(cur), "%s/%s", dir, link) >= sizeof(cur))
			return hezo_error_set(err, ENAMETOOLONG, "path too long");
	}
	return hezo_error_set(err, ELOOP, "too many symlinks");
}

/* dir, resolved, is the directory path (resolved) is directly in. */
static bool directly_in(const char *path, const char *dir)
{
	char real[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (!slash || slash == path || !realpath(dir, real))
		return false;
	return strlen(real) == (size_t)(slash - path) && strncmp(path, real, strlen(real)) == 0;
}

/* Is path (resolved) a namespace of /proc kind kind that an engine pinned for a container? */
static bool engine_pin(const struct hezo_policy *p, const char *kind, const char *path)
{
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(ns_pin_dirs); i++)
		if (strcmp(kind, ns_pin_dirs[i].proc) == 0 && directly_in(path, ns_pin_dirs[i].dir))
			return true;
	for (size_t i = 0; strcmp(kind, "net") == 0 && i < p->engine_roots.n; i++) {
		_cleanup_free_ char *dir = NULL;

		if (asprintf(&dir, "%s/%s", p->engine_roots.v[i], CRI_NETNS_DIR) < 0)
			return false;
		if (directly_in(path, dir))
			return true;
	}
	return false;
}

/* The pin directories of kind, for the error that names them. */
static const char *pin_dirs_shown(const char *kind)
{
	if (strcmp(kind, "net") == 0)
		return "/run/netns, /var/run/netns, an engine root's " CRI_NETNS_DIR;
	if (strcmp(kind, "ipc") == 0)
		return "/var/run/ipcns";
	if (strcmp(kind, "uts") == 0)
		return "/var/run/utsns";
	if (strcmp(kind, "user") == 0)
		return "/var/run/userns";
	return "engines pin none of this kind";
}

/*
 * A namespace named by path that is not the host's: only one of hezo-shim's own containers', or
 * one no task is in yet that the engine pinned for this container. Anything else is some other
 * process's box, or none, and the egress rules would be installed in it too.
 */
static int check_ns_owner(const struct hezo_policy *p, const struct hezo_apply_env *env, size_t i,
			  const char *type, const char *kind, const char *path, const char *held,
			  struct hezo_error **err)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *owner = NULL;
	int r;

	if (!env || !env->ns_owner)
		return hezo_error_set(err, EPERM,
				      "linux.namespaces[%zu] (%s): path %s: whose namespace it is "
				      "cannot be told here, so it is not joined",
				      i, type, path);
	/* Asked of the namespace held open (held: /proc/self/fd/N), not of the path again. */
	r = env->ns_owner(env->data, kind, held, &owner, &e);
	if (r == -ESRCH)
		return hezo_error_set(err, EPERM,
				      "linux.namespaces[%zu] (%s): path %s is a namespace that "
				      "processes of no hezo-shim container are in (%s)",
				      i, type, path, e && e->msg ? e->msg : "not a container's");
	if (r < 0)
		return hezo_error_set(err, r == -ENOMEM ? ENOMEM : -r,
				      "linux.namespaces[%zu] (%s): path %s: %s", i, type, path,
				      e && e->msg ? e->msg : "cannot tell whose namespace it is");
	if (!owner && !engine_pin(p, kind, path))
		return hezo_error_set(err, EPERM,
				      "linux.namespaces[%zu] (%s): path %s: no process is in this "
				      "namespace, and it is not where an engine pins the one it "
				      "makes for a container (%s)",
				      i, type, path, pin_dirs_shown(kind));
	return 0;
}

/*
 * Open path as the namespace the entry names: an nsfs file (looked at through O_PATH first, so a
 * FIFO or a device such as a watchdog is never opened), of the entry's kind. Returns the fd.
 */
static int open_ns(const char *path, size_t i, const char *type, int clone_flag,
		   struct hezo_error **err)
{
	_cleanup_close_ int o = open(path, O_PATH | O_CLOEXEC);
	char self[64];
	struct statfs sf;
	int fd, t;

	if (o < 0 || fstatfs(o, &sf) < 0)
		return hezo_error_set_errno(err, errno, "linux.namespaces[%zu] (%s): path %s", i,
					    type, path);
	if (sf.f_type != NSFS_MAGIC)
		return hezo_error_set(err, EINVAL,
				      "linux.namespaces[%zu] (%s): path %s is not a namespace", i,
				      type, path);
	snprintf(self, sizeof(self), "/proc/self/fd/%d", o);
	fd = open(self, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "linux.namespaces[%zu] (%s): path %s", i,
					    type, path);
	t = ioctl(fd, NS_GET_NSTYPE);
	if (t != clone_flag) {
		const char *is = "unknown";

		for (size_t k = 0; k < HEZO_ARRAY_SIZE(ns_kinds); k++)
			if (t == ns_kinds[k].clone_flag)
				is = ns_kinds[k].type;
		close(fd);
		return hezo_error_set(err, EINVAL,
				      "linux.namespaces[%zu] (%s): path %s is a namespace of kind "
				      "%s, not %s",
				      i, type, path, is, type);
	}
	return fd;
}

/* Keep *fd (the namespace at path, as checked) for the backend; env without held: nothing kept. */
static int hold_ns(const struct hezo_apply_env *env, const char *path, int *fd,
		   const struct stat *st, struct hezo_error **err)
{
	struct hezo_held *h = env ? env->held : NULL;
	struct hezo_held_path *v;

	if (!h || hezo_held_ns(h, path))
		return 0;
	v = realloc(h->nss, (h->nnss + 1) * sizeof(*v));
	if (!v)
		return hezo_policy_nomem(err);
	h->nss = v;
	v[h->nnss] = (struct hezo_held_path){.path = strdup(path),
					     .fd = -1,
					     .dev = (uint64_t)st->st_dev,
					     .ino = (uint64_t)st->st_ino};
	if (!v[h->nnss].path)
		return hezo_policy_nomem(err);
	v[h->nnss].fd = *fd;
	*fd = -1;
	h->nnss++;
	return 0;
}

int hezo_policy_check_namespaces(const struct hezo_policy *p, struct hezo_json *linux_,
				 const struct hezo_apply_env *env, struct hezo_error **err)
{
	struct hezo_json *nss =
		hezo_policy_want_array(linux_, "namespaces", "linux.namespaces", err);
	bool own[HEZO_ARRAY_SIZE(ns_kinds)] = {0};

	if (!nss)
		return -EINVAL;
	HEZO_JSON_FOREACH (i, nss) {
		const struct hezo_json *n = nss->items[i];
		const char *type = hezo_json_string(hezo_json_get(n, "type"));
		const struct hezo_json *pathv = hezo_json_get(n, "path");
		size_t k;
		bool host = false;
		int r = 0;

		if (!type)
			return hezo_policy_ferr(
				err, "linux.namespaces[%zu]: type: expected a string", i);
		for (k = 0; k < HEZO_ARRAY_SIZE(ns_kinds); k++)
			if (strcmp(type, ns_kinds[k].type) == 0)
				break;
		if (k == HEZO_ARRAY_SIZE(ns_kinds)) {
			char q[256];
			hezo_policy_quote(q, sizeof(q), type);
			return hezo_policy_ferr(
				err, "linux.namespaces[%zu]: unknown namespace type %s", i, q);
		}
		if (pathv && pathv->type != HEZO_JSON_NULL) {
			const char *path = hezo_json_string(pathv);
			char self[64], resolved[PATH_MAX], held[64];
			_cleanup_close_ int nsfd = -1;
			struct stat a, b;

			if (!path)
				return hezo_policy_ferr(
					err, "linux.namespaces[%zu] (%s): path: expected a string",
					i, type);
			if (path[0]) {
				_cleanup_error_ struct hezo_error *e = NULL;

				r = resolve_ns_path(path, resolved, sizeof(resolved), &e);
				if (r < 0 && !e)
					return hezo_error_set_errno(
						err, -r, "linux.namespaces[%zu] (%s): path %s", i,
						type, path);
				if (r < 0)
					return hezo_error_set(err, -r,
							      "linux.namespaces[%zu] (%s): path "
							      "%s: %s",
							      i, type, path, e->msg);
				/* What is checked is what the runtime is handed. */
				if (strcmp(resolved, path) != 0) {
					struct hezo_json *nv = hezo_json_new_string(resolved);

					if (!nv || hezo_json_set(nss->items[i], "path", nv) < 0)
						return hezo_policy_nomem(err);
					path = hezo_json_string(
						hezo_json_get(nss->items[i], "path"));
				}
				/*
				 * Opened once: the namespace judged is the one held, whatever PID
				 * the path names by the time the backend would open it again.
				 */
				nsfd = open_ns(path, i, type, ns_kinds[k].clone_flag, err);
				if (nsfd < 0)
					return nsfd;
				if (fstat(nsfd, &a) < 0)
					return hezo_error_set_errno(
						err, errno, "linux.namespaces[%zu] (%s): path %s",
						i, type, path);
				snprintf(held, sizeof(held), "/proc/self/fd/%d", nsfd);
				/* Joining the shim's own namespace is joining the host's. */
				snprintf(self, sizeof(self), "/proc/self/ns/%s", ns_kinds[k].proc);
				if (stat(self, &b) == 0 && a.st_dev == b.st_dev &&
				    a.st_ino == b.st_ino)
					host = true;
				else
					r = check_ns_owner(p, env, i, type, ns_kinds[k].proc, path,
							   held, err);
				if (r == 0 && !host)
					r = hold_ns(env, path, &nsfd, &a, err);
				if (r < 0)
					return r;
			}
		}
		if (host) {
			/* The host's user or time namespace is the same as having none. */
			if (!ns_kinds[k].required && !ns_kinds[k].host_bit)
				continue;
			if (!(ns_kinds[k].host_bit & p->allow_host_ns))
				return hezo_policy_ferr(
					err, "linux.namespaces: host %s namespace not allowed",
					type);
			continue;
		}
		own[k] = true;
	}
	for (size_t k = 0; k < HEZO_ARRAY_SIZE(ns_kinds); k++) {
		if (own[k])
			continue;
		if (ns_kinds[k].required && !(ns_kinds[k].host_bit & p->allow_host_ns))
			return hezo_policy_ferr(err,
						"linux.namespaces: host %s namespace not allowed",
						ns_kinds[k].type);
		if (strcmp(ns_kinds[k].type, "user") == 0 && p->require_user)
			return hezo_policy_ferr(err,
						"linux.namespaces: a user namespace is required");
	}
	return 0;
}

/* ---- linux.cgroupsPath ---- */

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
static bool cgroup_name_is_id(const char *name, const char *id)
{
	static const char *const scopes[] = {"docker-", "libpod-", "cri-containerd-", "crio-"};
	size_t n = strlen(name), idn = strlen(id);

	if (!idn)
		return false;
	if (strcmp(name, id) == 0)
		return true;
	if (strncmp(name, "libpod-", 7) == 0 && strcmp(name + 7, id) == 0)
		return true;
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
			"libpod-ID.scope, cri-containerd-ID.scope, crio-ID.scope)",
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

/* ---- root.path ---- */

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
	if (!realpath(env->bundle, bundle))
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

/* ---- hooks ---- */

static const char *const hook_stages[] = {"prestart",	    "createRuntime", "createContainer",
					  "startContainer", "poststart",     "poststop"};

/* A decimal pid with no sign, no leading zero and nothing after it. */
static bool parse_pid(const char *s, size_t n, pid_t *pid)
{
	long v = 0;

	if (n == 0 || n > 9 || s[0] == '0')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*pid = (pid_t)v;
	return true;
}

/* The pid in dockerd's pidfile, believed only when root wrote it and nobody else may. */
static bool dockerd_pid(const char *pidfile, pid_t *pid)
{
	_cleanup_close_ int fd = open(pidfile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	char buf[32];
	struct stat st;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022))
		return false;
	n = read(fd, buf, sizeof(buf));
	if (n <= 0 || (size_t)n >= sizeof(buf))
		return false;
	while (n && buf[n - 1] == '\n')
		n--;
	return parse_pid(buf, (size_t)n, pid);
}

/* Every one of the process's uids (real, effective, saved, fs) is 0. */
static bool process_is_root(pid_t pid)
{
	_cleanup_free_ char *data = NULL;
	char path[64];
	const char *u;
	unsigned a, b, c, d;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (hezo_read_file_at(AT_FDCWD, path, 64 * 1024, &data, &len, NULL) < 0)
		return false;
	u = strstr(data, "\nUid:");
	return u && sscanf(u + 5, "%u %u %u %u", &a, &b, &c, &d) == 4 && !a && !b && !c && !d;
}

/* A short hex network-controller id: stringid.TruncateID of libnetwork's 64-hex one. */
static bool short_hex_id(const char *s)
{
	size_t n = strlen(s ?: "");

	if (n != 12)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
			return false;
	return true;
}

/*
 * Docker 20.10's own prestart hook, exactly as daemon/oci_linux.go writes it: path
 * /proc/<dockerd's pid>/exe, args [libnetwork-setkey, -exec-root=<dir>, <this container's ID>,
 * <controller id>], nothing else (an env would reach dockerd's loader). It runs as root with
 * every capability, so the pid must be the running dockerd by its root-owned pidfile, a root
 * process whose executable is a root-owned, root-only-writable file named dockerd.
 */
static bool docker_setkey(const struct hezo_policy *p, const struct hezo_json *hook,
			  const char *path, const struct hezo_apply_env *env)
{
	const struct hezo_json *args = hezo_json_get_type(hook, "args", HEZO_JSON_ARRAY);
	const char *a1, *a3;
	char exe[PATH_MAX];
	struct stat proc, file;
	pid_t pid, running;
	const char *base;
	size_t n;
	ssize_t l;

	/* Under an ID that already runs the hook would hand that container's sandbox key over. */
	if (!env || !env->id || env->id_in_use || !p->docker_pidfile ||
	    strncmp(path, "/proc/", 6) != 0)
		return false;
	n = strcspn(path + 6, "/");
	if (strcmp(path + 6 + n, "/exe") != 0 || !parse_pid(path + 6, n, &pid))
		return false;
	if (hook->type != HEZO_JSON_OBJECT || hook->len != 2 || !args || args->len != 4)
		return false;
	a1 = hezo_json_string(args->items[1]);
	a3 = hezo_json_string(args->items[3]);
	if (strcmp(hezo_json_string(args->items[0]) ?: "", "libnetwork-setkey") != 0 || !a1 ||
	    strncmp(a1, "-exec-root=/", 12) != 0 ||
	    strcmp(hezo_json_string(args->items[2]) ?: "", env->id) != 0 || !short_hex_id(a3))
		return false;
	if (!dockerd_pid(p->docker_pidfile, &running) || running != pid)
		return false;
	l = readlink(path, exe, sizeof(exe) - 1);
	if (l <= 0)
		return false;
	exe[l] = '\0';
	base = strrchr(exe, '/');
	if (!base || strcmp(base + 1, "dockerd") != 0)
		return false;
	/* The file the process runs, and the file by that name now: one root-owned inode. */
	if (stat(path, &proc) < 0 || stat(exe, &file) < 0 || proc.st_dev != file.st_dev ||
	    proc.st_ino != file.st_ino || !S_ISREG(file.st_mode) || file.st_uid != 0 ||
	    (file.st_mode & 022))
		return false;
	return process_is_root(pid);
}

int hezo_policy_check_hooks(const struct hezo_policy *p, const struct hezo_json *spec,
			    const struct hezo_apply_env *env, struct hezo_error **err)
{
	const struct hezo_json *hooks = hezo_json_get(spec, "hooks");

	if (!hooks || hooks->type == HEZO_JSON_NULL)
		return 0;
	if (hooks->type != HEZO_JSON_OBJECT)
		return hezo_policy_ferr(err, "hooks: expected an object, got %s",
					hezo_json_type_name(hooks->type));
	HEZO_JSON_FOREACH (s, hooks) {
		const struct hezo_json *list = hooks->items[s];
		const char *stage = hooks->keys[s];
		bool known = false;
		char q[256];

		for (size_t k = 0; k < HEZO_ARRAY_SIZE(hook_stages); k++)
			if (strcmp(stage, hook_stages[k]) == 0)
				known = true;
		hezo_policy_quote(q, sizeof(q), stage);
		if (!known)
			return hezo_policy_ferr(err, "hooks: unknown hook stage %s", q);
		if (list->type == HEZO_JSON_NULL)
			continue;
		if (list->type != HEZO_JSON_ARRAY)
			return hezo_policy_ferr(err, "hooks.%s: expected a list, got %s", stage,
						hezo_json_type_name(list->type));
		HEZO_JSON_FOREACH (i, list) {
			const char *path = hezo_json_string(hezo_json_get(list->items[i], "path"));

			if (!path)
				return hezo_policy_ferr(
					err, "hooks.%s[%zu]: path: expected a string", stage, i);
			if (hezo_strv_contains(&p->allowed_hooks, path))
				continue;
			if (strcmp(stage, "prestart") == 0 &&
			    docker_setkey(p, list->items[i], path, env))
				continue;
			hezo_policy_quote(q, sizeof(q), path);
			return hezo_error_set(err, EPERM,
					      "hooks.%s[%zu] (%s): hooks run on the host as root; "
					      "this one is not in the policy's allowedHooks",
					      stage, i, q);
		}
	}
	return 0;
}
