/* linux.namespaces paths: whose namespace a path names and whether the container may join it. */
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
 * them, and the names they give the pins: ip-netns's directories (containerd CRI's
 * cni-UUID, podman's netns-UUID, CRI-O's bare UUID), CRI-O's pinns directories (a bare UUID),
 * and containerd CRI's netns_mounts_under_state_dir (below an engine root, as
 * ENGINE_ROOT/io.containerd.grpc.v1.cri/netns/cni-UUID). UUID is 8-4-4-4-12 lowercase hex
 * digits, as Go's %x of 16 random bytes gives them. A namespace nobody is in anywhere else, or
 * under another name (an admin's `ip netns add vpn`), is a host's pin and not a container's.
 */
enum pin_names {
	PIN_ANY_ENGINE = 1, /* cni-UUID, netns-UUID or UUID */
	PIN_UUID,	    /* UUID */
	PIN_CNI,	    /* cni-UUID */
};
static const struct {
	const char *proc;
	const char *dir;
	enum pin_names names;
} ns_pin_dirs[] = {
	{"net", "/run/netns", PIN_ANY_ENGINE}, {"net", "/var/run/netns", PIN_ANY_ENGINE},
	{"ipc", "/var/run/ipcns", PIN_UUID},   {"uts", "/var/run/utsns", PIN_UUID},
	{"user", "/var/run/userns", PIN_UUID},
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

/* 8-4-4-4-12 lowercase hex digits, the whole of s. */
static bool uuid_shaped(const char *s)
{
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-'
			 : !(isdigit((unsigned char)s[i]) || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return s[36] == '\0';
}

/* Is the last component of path a name engines give the pins in a directory of kind names? */
static bool pin_named(const char *path, enum pin_names names)
{
	const char *base = strrchr(path, '/') + 1;

	if (uuid_shaped(base))
		return names != PIN_CNI;
	if (strncmp(base, "cni-", 4) == 0 && uuid_shaped(base + 4))
		return names != PIN_UUID;
	return names == PIN_ANY_ENGINE && strncmp(base, "netns-", 6) == 0 && uuid_shaped(base + 6);
}

/* Is path (resolved) a namespace of /proc kind kind that an engine pinned for a container? */
static bool engine_pin(const struct hezo_policy *p, const char *kind, const char *path)
{
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(ns_pin_dirs); i++)
		if (strcmp(kind, ns_pin_dirs[i].proc) == 0 && directly_in(path, ns_pin_dirs[i].dir))
			return pin_named(path, ns_pin_dirs[i].names);
	for (size_t i = 0; strcmp(kind, "net") == 0 && i < p->engine_roots.n; i++) {
		_cleanup_free_ char *dir = NULL;

		if (asprintf(&dir, "%s/%s", p->engine_roots.v[i], CRI_NETNS_DIR) < 0)
			return false;
		if (directly_in(path, dir))
			return pin_named(path, PIN_CNI);
	}
	return false;
}

/* The pin directories of kind and the names in them, for the error that names them. */
static const char *pin_dirs_shown(const char *kind)
{
	if (strcmp(kind, "net") == 0)
		return "cni-UUID, netns-UUID or UUID in /run/netns or /var/run/netns, cni-UUID in "
		       "an "
		       "engine root's " CRI_NETNS_DIR;
	if (strcmp(kind, "ipc") == 0)
		return "UUID in /var/run/ipcns";
	if (strcmp(kind, "uts") == 0)
		return "UUID in /var/run/utsns";
	if (strcmp(kind, "user") == 0)
		return "UUID in /var/run/userns";
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
	r = env->ns_owner(env->data, kind, held, path, &owner, &e);
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
				      "namespace, and it is not a pin an engine makes for a "
				      "container (%s)",
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
				/* The host's too: runc would open /proc/PID/ns/KIND again, after
				 * PID may have died and its pid gone to a process in another
				 * namespace. */
				if (r == 0)
					r = hold_ns(env, path, &nsfd, &a, err);
				if (r < 0)
					return r;
			}
		}
		if (host) {
			/* The host's user or time namespace is the same as having none. */
			if (!ns_kinds[k].required && !ns_kinds[k].host_bit)
				continue;
			if (!(ns_kinds[k].host_bit & p->allow_host_ns)) {
				hezo_policy_ferr(err,
						 "linux.namespaces: host %s namespace not allowed",
						 type);
				return hezo_error_key(err, "namespaces.allowHost");
			}
			continue;
		}
		own[k] = true;
	}
	for (size_t k = 0; k < HEZO_ARRAY_SIZE(ns_kinds); k++) {
		if (own[k])
			continue;
		if (ns_kinds[k].required && !(ns_kinds[k].host_bit & p->allow_host_ns)) {
			hezo_policy_ferr(err, "linux.namespaces: host %s namespace not allowed",
					 ns_kinds[k].type);
			return hezo_error_key(err, "namespaces.allowHost");
		}
		if (strcmp(ns_kinds[k].type, "user") == 0 && p->require_user) {
			hezo_policy_ferr(err, "linux.namespaces: a user namespace is required");
			return hezo_error_key(err, "namespaces.requireUser");
		}
	}
	return 0;
}
