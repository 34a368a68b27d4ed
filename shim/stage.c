/*
 * The objects the policy judged (root.path, every bind source), bind-mounted from the fds it holds
 * into the private bundle's mnt/ and named there in the backend's config.json: the backend's own
 * lookup then walks a root-only 0700 directory nobody else can change, not the caller's paths.
 * The mounts are made in a mount namespace of the shim's own, which the backend inherits: they
 * never enter the host's mount table and go with the last process in it (the backend's create,
 * or a foreground run's backend), so no container end, crash or kill can leave one behind.
 * A box with a user namespace of its own gets them idmapped to its range (root's files are its
 * root's), its root where its root can walk to, and the namespace itself at mnt/userns.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "hezo-spec.h"
#include "shim.h"

#define STAGE_DIR "mnt"

int shim_stage_namespace(struct hezo_error **err)
{
	/* Slave: mounts the host makes still reach the backend (rslave volumes); none go back. */
	if (unshare(CLONE_NEWNS) < 0)
		return hezo_error_set_errno(err, errno, "a mount namespace for the backend");
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return hezo_error_set_errno(err, errno,
					    "a mount namespace for the backend: / slave");
	return 0;
}

/* Is m a bind mount as runc reads one (type bind, or a bind/rbind option on any type)? */
static bool is_bind(const struct hezo_json *m)
{
	const char *type = hezo_json_string(hezo_json_get(m, "type"));
	const struct hezo_json *opts = hezo_json_get_type(m, "options", HEZO_JSON_ARRAY);

	if (type && strcmp(type, "bind") == 0)
		return true;
	HEZO_JSON_FOREACH (i, opts) {
		const char *o = hezo_json_string(opts->items[i]);
		if (o && (strcmp(o, "bind") == 0 || strcmp(o, "rbind") == 0))
			return true;
	}
	return false;
}

/* Is m a recursive bind as runc reads one (an rbind option)? */
static bool is_rbind(const struct hezo_json *m)
{
	const struct hezo_json *opts = hezo_json_get_type(m, "options", HEZO_JSON_ARRAY);

	HEZO_JSON_FOREACH (i, opts) {
		const char *o = hezo_json_string(opts->items[i]);
		if (o && strcmp(o, "rbind") == 0)
			return true;
	}
	return false;
}

/*
 * Bind the held object at mnt/name: recursive, so a backend's rbind still sees the submounts
 * (its plain bind takes the top one only, as from the original), then private, so nothing mounted
 * below either copy propagates to the other (nor to the container's copy made from it).
 * userns >= 0: a clone of the tree idmapped to that namespace instead, where the filesystem takes
 * an idmap; must says whether a filesystem that does not is an error (the root) or gets the plain
 * bind (a volume shows the box its host ids: files of no id in its range are read-only to it).
 */
static int bind_idmapped_at(int fd, int to_dir, const char *target, int userns, bool rec)
{
	_cleanup_close_ int tree = -1;
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns};

	tree = open_tree(fd, "",
			 OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
				 (rec ? AT_RECURSIVE : 0));
	if (tree < 0)
		return -errno;
	if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
		return -errno;
	if (move_mount(tree, "", to_dir, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return -errno;
	return 0;
}

static int stage_bind(const struct hezo_held_path *h, const char *target, int userns, bool must,
		      bool rec, struct hezo_error **err)
{
	char src[64];
	int r;

	if (userns >= 0) {
		r = bind_idmapped_at(h->fd, AT_FDCWD, target, userns, rec);
		if (r == 0)
			return 0;
		if (must)
			return hezo_error_set_errno(err, -r,
						    "%s: an idmapped mount of %s for the box's "
						    "user namespace",
						    target, h->path);
	}
	snprintf(src, sizeof(src), "/proc/self/fd/%d", h->fd);
	if (mount(src, target, NULL, MS_BIND | (rec ? MS_REC : 0), NULL) < 0)
		return hezo_error_set_errno(err, errno, "%s: bind of %s", target, h->path);
	return 0;
}

static int stage_one(int mdir, const char *top, const char *name, const struct hezo_held_path *h,
		     int userns, bool rec, char *out, size_t size, struct hezo_error **err)
{
	_cleanup_close_ int check = -1;
	char target[PATH_MAX];
	struct stat st;
	int fd, r;

	if ((size_t)snprintf(out, size, "%s/%s", top, name) >= size ||
	    (size_t)snprintf(target, sizeof(target), "%s/%s", top, name) >= sizeof(target))
		return hezo_error_set(err, ENAMETOOLONG, "%s/%s: path too long", top, name);
	if (h->dir) {
		if (mkdirat(mdir, name, 0700) < 0)
			return hezo_error_set_errno(err, errno, "%s", target);
	} else {
		fd = openat(mdir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return hezo_error_set_errno(err, errno, "%s", target);
		close(fd);
	}
	r = stage_bind(h, target, userns, false, rec, err);
	if (r < 0)
		return r;
	if (mount(NULL, target, NULL, MS_PRIVATE | MS_REC, NULL) < 0)
		return hezo_error_set_errno(err, errno, "%s: making it private", target);
	/*
	 * What the backend will find there is the object judged, by device and inode (a namespace
	 * file is looked up as the backend opens it: its bind mount is of nsfs, not a path).
	 */
	check = openat(mdir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (check < 0 || fstat(check, &st) < 0)
		return hezo_error_set_errno(err, errno, "%s", target);
	if ((uint64_t)st.st_dev != h->dev || (uint64_t)st.st_ino != h->ino)
		return hezo_error_set(err, EXDEV, "%s: holds another object than %s as checked",
				      target, h->path);
	return 0;
}

/*
 * The directory the box's root is staged on when it has a user namespace: the backend sets the
 * root up as the box's root, which may not walk through the state directory (0700), so it is
 * mounted, in the shim's namespace only, on a directory of its own beside it (0711, root's).
 */
static int stage_root_overlay(int mdir, const char *top, const char *dir,
			      const struct hezo_held_path *h, int userns, uid_t owner,
			      struct hezo_error **err);

static int stage_root_userns(int mdir, const char *top, const char *dir,
			     const struct hezo_held_path *h, int userns, uid_t owner, bool *rebuilt,
			     struct hezo_error **err)
{
	_cleanup_close_ int check = -1;
	struct statfs sfs;
	struct stat st;
	int r;

	if (mkdir(dir, 0711) < 0 && errno != EEXIST)
		return hezo_error_set_errno(err, errno, "%s", dir);
	if (lstat(dir, &st) < 0)
		return hezo_error_set_errno(err, errno, "%s", dir);
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return hezo_error_set(
			err, EPERM, "%s: not a directory of the shim's uid that only it may write",
			dir);
	*rebuilt = false;
	if (fstatfs(h->fd, &sfs) == 0 && sfs.f_type == OVERLAYFS_SUPER_MAGIC) {
		*rebuilt = true;
		return stage_root_overlay(mdir, top, dir, h, userns, owner, err);
	}
	r = stage_bind(h, dir, userns, true, true, err);
	if (r < 0)
		return r;
	if (mount(NULL, dir, NULL, MS_PRIVATE | MS_REC, NULL) < 0)
		return hezo_error_set_errno(err, errno, "%s: making it private", dir);
	check = open(dir, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (check < 0 || fstat(check, &st) < 0)
		return hezo_error_set_errno(err, errno, "%s", dir);
	if ((uint64_t)st.st_dev != h->dev || (uint64_t)st.st_ino != h->ino)
		return hezo_error_set(err, EXDEV, "%s: holds another object than %s as checked",
				      dir, h->path);
	return 0;
}

/*
 * Superblock option key= of the mount fd is on (by its mount ID, in this mount namespace's table),
 * into out; -ENOENT when absent, -EINVAL when escaped (a path with a comma or a colon in it).
 */
static int mount_option(int fd, const char *key, char *out, size_t size)
{
	_cleanup_free_ char *line = NULL;
	struct statx stx;
	size_t cap = 0, klen = strlen(key);
	int r = -ENOENT;
	FILE *f;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
		return -errno ?: -EINVAL;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *sep, *o;

		if (strtoull(line, NULL, 10) != stx.stx_mnt_id || !(sep = strstr(line, " - ")))
			continue;
		/* " - fstype source superoptions" */
		o = strrchr(sep, ' ');
		for (char *save = NULL, *t = strtok_r(o + 1, ",\n", &save); t;
		     t = strtok_r(NULL, ",\n", &save))
			if (strncmp(t, key, klen) == 0 && t[klen] == '=') {
				r = strchr(t, '\\') ? -EINVAL
				    : snprintf(out, size, "%s", t + klen + 1) >= (int)size
					    ? -ENAMETOOLONG
					    : 0;
				break;
			}
		break;
	}
	fclose(f);
	return r;
}

/*
 * overlayfs takes no idmap itself, but its layers do: a root that is an overlay mount (an
 * engine's image and container layers) is staged as a new overlay of the same layers, each
 * idmapped, its upper layer (the engine's, as it stood) the topmost lower, under an upper layer of
 * its own on a small tmpfs that goes with the shim's mount namespace: the root is read-only to
 * the box (shim_userns_plan), so only the backend's mount points are written there.
 */
static int stage_root_overlay(int mdir, const char *top, const char *dir,
			      const struct hezo_held_path *h, int userns, uid_t owner,
			      struct hezo_error **err)
{
	_cleanup_close_ int ovl = -1, cwd = -1;
	char lower[8192], upper[PATH_MAX], path[PATH_MAX], opts[4096], name[16];
	size_t n = 0, used = 0;
	int r;

	r = mount_option(h->fd, "lowerdir", lower, sizeof(lower));
	r = r ?: mount_option(h->fd, "upperdir", upper, sizeof(upper));
	if (r < 0)
		return hezo_error_set_errno(err, -r, "%s: its overlay layers", h->path);
	if (mkdirat(mdir, "ovl", 0700) < 0)
		return hezo_error_set_errno(err, errno, "%s/ovl", top);
	if (snprintf(path, sizeof(path), "%s/ovl", top) >= (int)sizeof(path))
		return hezo_error_set(err, ENAMETOOLONG, "%s/ovl: the path is too long", top);
	if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=16m") < 0)
		return hezo_error_set_errno(err, errno, "%s: a tmpfs for the root's upper layer",
					    path);
	ovl = openat(mdir, "ovl", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ovl < 0 || mkdirat(ovl, "w", 0700) < 0 || mkdirat(ovl, "w/upper", 0755) < 0 ||
	    mkdirat(ovl, "w/work", 0700) < 0 ||
	    /* The overlay's root directory is its upper layer's: the box's root owns it. */
	    fchownat(ovl, "w/upper", owner, owner, AT_SYMLINK_NOFOLLOW) < 0)
		return hezo_error_set_errno(err, errno, "%s", path);
	used = (size_t)snprintf(opts, sizeof(opts), "lowerdir=");
	/* The engine's upper layer first, then its lower ones, as its overlay stacks them. */
	for (char *save = NULL, *l = upper; l; l = strtok_r(n == 1 ? lower : NULL, ":", &save)) {
		_cleanup_close_ int src = -1;

		snprintf(name, sizeof(name), "%zu", n);
		src = open(l, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (src < 0 || mkdirat(ovl, name, 0700) < 0)
			return hezo_error_set_errno(err, errno, "overlay layer %s", l);
		r = bind_idmapped_at(src, ovl, name, userns, true);
		if (r < 0)
			return hezo_error_set_errno(err, -r, "overlay layer %s: idmapped", l);
		used += (size_t)snprintf(opts + used, sizeof(opts) - used, "%s%s", n ? ":" : "",
					 name);
		if (used >= sizeof(opts))
			return hezo_error_set(err, E2BIG, "%s: too many overlay layers", h->path);
		n++;
	}
	used += (size_t)snprintf(opts + used, sizeof(opts) - used,
				 ",upperdir=w/upper,workdir=w/work");
	if (used >= sizeof(opts))
		return hezo_error_set(err, E2BIG, "%s: too many overlay layers", h->path);
	/* Layers by short names relative to the tmpfs: a page holds the options. */
	cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0 || fchdir(ovl) < 0)
		return hezo_error_set_errno(err, errno, "%s", path);
	r = mount("overlay", dir, "overlay", 0, opts) < 0 ? -errno : 0;
	if (fchdir(cwd) < 0 && r == 0)
		r = -errno;
	if (r < 0)
		return hezo_error_set_errno(err, -r, "%s: an overlay of %s's layers, idmapped", dir,
					    h->path);
	if (mount(NULL, dir, NULL, MS_PRIVATE, NULL) < 0)
		return hezo_error_set_errno(err, errno, "%s: making it private", dir);
	return 0;
}

/* A namespace fd bound at mnt/name (out: its path), which the backend opens to join it. */
static int bind_ns(int mdir, const char *top, const char *name, int nsfd, char *out, size_t size,
		   struct hezo_error **err)
{
	char src[64];
	int fd;

	if ((size_t)snprintf(out, size, "%s/%s", top, name) >= size)
		return hezo_error_set(err, ENAMETOOLONG, "%s/%s: path too long", top, name);
	fd = openat(mdir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "%s", out);
	close(fd);
	snprintf(src, sizeof(src), "/proc/self/fd/%d", nsfd);
	if (mount(src, out, NULL, MS_BIND, NULL) < 0)
		return hezo_error_set_errno(err, errno, "%s: bind of the box's namespace", out);
	return 0;
}

/*
 * The box's user namespace, made now, at mnt/userns: the backend joins it by that path. With a
 * domain (kernel.domainname, which runc could not write), its UTS namespace too, at mnt/uts.
 */
static int stage_userns(int mdir, const char *top, const struct shim_userns *u, int given,
			const char *domain, int *nsfd, char *out, char *uts_out, size_t size,
			struct hezo_error **err)
{
	_cleanup_close_ int uts = -1;
	int r;

	if (given >= 0) {
		*nsfd = fcntl(given, F_DUPFD_CLOEXEC, 3);
		if (*nsfd < 0)
			return hezo_error_set_errno(err, errno, "the joined user namespace");
	} else {
		r = shim_userns_make(u, domain, nsfd, &uts, err);
		if (r < 0)
			return r;
	}
	r = bind_ns(mdir, top, "userns", *nsfd, out, size, err);
	if (r == 0 && uts >= 0)
		r = bind_ns(mdir, top, "uts", uts, uts_out, size, err);
	return r;
}

/*
 * kernel.domainname of the backend's copy: set by the shim in a UTS namespace it makes with the
 * box's own user namespace, never by the backend. Only where the box's namespace is made now
 * and its UTS namespace is a new one (create.c refuses the rest).
 */
static const char *domain_wanted(const struct hezo_json *spec, int given)
{
	const struct hezo_json *uts = hezo_spec_namespace(spec, "uts");

	if (given >= 0 || !uts || hezo_json_get(uts, "path"))
		return NULL;
	return hezo_json_string(
		hezo_json_get(hezo_json_get_path(spec, "linux.sysctl"), "kernel.domainname"));
}

int shim_stage(int bundle, const char *priv, const struct hezo_held *held,
	       const struct shim_userns *u, int userns_fd, const char *userns_root,
	       struct hezo_json *spec, bool *rebuilt, struct hezo_error **err)
{
	_cleanup_close_ int mdir = -1, nsfd = -1;
	_cleanup_free_ uint8_t *done = NULL; /* 1: staged recursive, 2: its top mount alone */
	struct hezo_json *mounts = hezo_json_get_type(spec, "mounts", HEZO_JSON_ARRAY);
	struct hezo_json *root = hezo_json_get_type(spec, "root", HEZO_JSON_OBJECT);
	char top[PATH_MAX], staged[PATH_MAX], real[PATH_MAX];
	int r;

	*rebuilt = false;
	if (!held || held->root.fd < 0 || !root)
		return hezo_error_set(err, EINVAL, "root.path: not held by the check");
	/* runc refuses a root.path with a symlink in it (a state directory below /var/run). */
	if (!realpath(priv, real))
		return hezo_error_set_errno(err, errno, "%s", priv);
	if ((size_t)snprintf(top, sizeof(top), "%s/%s", real, STAGE_DIR) >= sizeof(top))
		return hezo_error_set(err, ENAMETOOLONG, "%s: path too long", priv);
	if (mkdirat(bundle, STAGE_DIR, 0700) < 0)
		return hezo_error_set_errno(err, errno, "%s", top);
	mdir = openat(bundle, STAGE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mdir < 0)
		return hezo_error_set_errno(err, errno, "%s", top);

	if (u) {
		const char *domain = domain_wanted(spec, userns_fd);
		char uts[PATH_MAX] = "";

		r = stage_userns(mdir, top, u, userns_fd, domain, &nsfd, staged, uts,
				 sizeof(staged), err);
		if (r < 0)
			return hezo_error_prefix(err, "user namespace");
		if (shim_userns_spec(spec, u, staged) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
		if (domain && (hezo_json_set(hezo_spec_namespace(spec, "uts"), "path",
					     hezo_json_new_string(uts)) < 0 ||
			       hezo_json_remove(hezo_json_get_path(spec, "linux.sysctl"),
						"kernel.domainname") < 0))
			return hezo_error_set(err, ENOMEM, "out of memory");
		r = stage_root_userns(mdir, top, userns_root, &held->root, nsfd, u->base, rebuilt,
				      err);
		if (r < 0)
			return hezo_error_prefix(err, "root.path");
		if (hezo_json_set(root, "path", hezo_json_new_string(userns_root)) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	} else {
		r = stage_one(mdir, top, "root", &held->root, -1, true, staged, sizeof(staged),
			      err);
		if (r < 0)
			return hezo_error_prefix(err, "root.path");
		if (hezo_json_set(root, "path", hezo_json_new_string(staged)) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}

	done = calloc(held->nbinds + 1, sizeof(*done));
	if (!done)
		return hezo_error_set(err, ENOMEM, "out of memory");
	HEZO_JSON_FOREACH (i, mounts) {
		struct hezo_json *m = mounts->items[i];
		const char *src = hezo_json_string(hezo_json_get(m, "source"));
		const struct hezo_held_path *h;
		char name[32];
		bool rec;
		size_t n;

		/* The shim's own helper binds (hezo-init, the exec helper) were never judged. */
		if (!is_bind(m) || !src || !(h = hezo_held_bind(held, src)))
			continue;
		n = (size_t)(h - held->binds);
		/*
		 * In a user namespace the kernel refuses a plain bind of a tree with submounts
		 * (they are locked to it): a plain bind gets a staged copy of the top mount alone.
		 */
		rec = nsfd < 0 || is_rbind(m);
		snprintf(name, sizeof(name), rec ? "%zu" : "%zu-top", n);
		if (!(done[n] & (rec ? 1 : 2))) {
			r = stage_one(mdir, top, name, h, nsfd, rec, staged, sizeof(staged), err);
			if (r < 0)
				return hezo_error_prefix(err, "mounts[%zu] (bind source %s)", i,
							 src);
			done[n] |= rec ? 1 : 2;
		} else if ((size_t)snprintf(staged, sizeof(staged), "%s/%s", top, name) >=
			   sizeof(staged)) {
			return hezo_error_set(err, ENAMETOOLONG, "%s/%s: path too long", top, name);
		}
		if (hezo_json_set(m, "source", hezo_json_new_string(staged)) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	/*
	 * Namespaces joined by path: /proc/PID/ns/KIND names whatever process has PID when the
	 * backend opens it, so the backend gets the namespace the check held, bound at mnt/ns-N.
	 */
	struct hezo_json *nss =
		hezo_json_get_type(hezo_json_get(spec, "linux"), "namespaces", HEZO_JSON_ARRAY);
	HEZO_JSON_FOREACH (i, nss) {
		struct hezo_json *n = nss->items[i];
		const char *path = hezo_json_string(hezo_json_get(n, "path"));
		const struct hezo_held_path *h;
		char name[32];

		if (!path || !(h = hezo_held_ns(held, path)))
			continue;
		snprintf(name, sizeof(name), "ns-%zu", (size_t)(h - held->nss));
		r = stage_one(mdir, top, name, h, -1, true, staged, sizeof(staged), err);
		if (r < 0)
			return hezo_error_prefix(err, "linux.namespaces[%zu] (path %s)", i, path);
		if (hezo_json_set(n, "path", hezo_json_new_string(staged)) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

int shim_stage_verify_root(const struct hezo_held *held, const char *path, struct hezo_error **err)
{
	struct stat st;

	/* Looked up as the backend will look it up. */
	if (!path || stat(path, &st) < 0)
		return hezo_error_set_errno(err, path ? errno : EINVAL, "root.path %s",
					    path ? path : "(none)");
	if ((uint64_t)st.st_dev != held->root.dev || (uint64_t)st.st_ino != held->root.ino)
		return hezo_error_set(err, EXDEV,
				      "root.path %s is not the directory checked (%s): it changed "
				      "before the backend could be handed it",
				      path, held->root.path);
	return 0;
}

/*
 * Lazily detach every mount at dir/NAME (stacked ones too); never follows a last symlink. In the
 * host's namespace there is none (see above): this is for a shim that staged in its own.
 */
static void detach_all(const char *path)
{
	for (int i = 0; i < 64 && umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0; i++)
		;
}

void shim_stage_remove(int bundle)
{
	_cleanup_close_ int fd = -1;
	char top[64], path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	snprintf(top, sizeof(top), "/proc/self/fd/%d/" STAGE_DIR, bundle);
	for (int pass = 0; pass < 2; pass++) {
		/* Pass 0: unmount what is staged; pass 1: remove the mount points, now plain. */
		fd = openat(bundle, STAGE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return;
		d = fdopendir(fd);
		if (!d)
			return;
		fd = -1;
		while ((de = readdir(d))) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			if (pass == 0) {
				snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dirfd(d),
					 de->d_name);
				detach_all(path);
				continue;
			}
			/* Never recursive: a mount point still in use stays, and so does its tree.
			 */
			if (unlinkat(dirfd(d), de->d_name, 0) < 0)
				(void)unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
		}
		closedir(d);
		if (pass == 0)
			detach_all(top);
	}
	(void)unlinkat(bundle, STAGE_DIR, AT_REMOVEDIR);
}

int shim_stage_root_again(const struct shim_ctx *ctx, const char *id, const struct hezo_json *rec,
			  struct hezo_error **err)
{
	const struct hezo_json *handed = hezo_json_get_type(rec, "handed", HEZO_JSON_ARRAY);
	_cleanup_close_ int root = -1, bundle = -1, check = -1;
	char priv[PATH_MAX], target[PATH_MAX + 16], src[64];
	const char *path = NULL;
	uint64_t dev = 0, ino = 0;
	struct stat st;

	HEZO_JSON_FOREACH (i, handed) {
		const struct hezo_json *e = handed->items[i];
		if (hezo_json_is_true(hezo_json_get(e, "root")) &&
		    hezo_json_get_uint64(hezo_json_get(e, "dev"), &dev) == 0 &&
		    hezo_json_get_uint64(hezo_json_get(e, "ino"), &ino) == 0)
			path = hezo_json_string(hezo_json_get(e, "path"));
	}
	if (!path)
		return 0; /* a record from before the flag, or no root held */
	/* First: a bind's source must be a mount of this namespace, opened in it. */
	if (shim_stage_namespace(err) < 0)
		return -EPERM;
	/* Only the very directory the box was given: a path changed since names another. */
	root = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0 || fstat(root, &st) < 0)
		return hezo_error_set_errno(err, errno, "root filesystem %s", path);
	if ((uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino)
		return hezo_error_set(err, EXDEV,
				      "root filesystem %s: not the directory the box got", path);
	bundle = shim_bundle_open(ctx, id, 0, priv, sizeof(priv), err);
	if (bundle < 0)
		return bundle;
	snprintf(target, sizeof(target), "%s/" STAGE_DIR "/root", priv);
	check = openat(bundle, STAGE_DIR "/root", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (check < 0)
		return hezo_error_set_errno(err, errno, "%s", target);
	close(TAKE_FD(check));
	snprintf(src, sizeof(src), "/proc/self/fd/%d", root);
	if (mount(src, target, NULL, MS_BIND, NULL) < 0)
		return hezo_error_set_errno(err, errno, "%s: bind of %s", target, path);
	if (mount(NULL, target, NULL, MS_PRIVATE, NULL) < 0)
		return hezo_error_set_errno(err, errno, "%s: making it private", target);
	check = openat(bundle, STAGE_DIR "/root", O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (check < 0 || fstat(check, &st) < 0)
		return hezo_error_set_errno(err, errno, "%s", target);
	if ((uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino)
		return hezo_error_set(err, EXDEV, "%s: holds another object than %s", target, path);
	return 0;
}
