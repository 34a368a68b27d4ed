/*
 * Container records: STATE_DIR/<root key>/<id>.json says which backend (and which flags) created
 * a container, so every later verb goes to that backend and exec/update get its policy again.
 * Beside each record, STATE_DIR/<root key>/.bundles/<id>/ is the bundle the backend is handed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-file.h"
#include "shim.h"

/* IDs may be longer than a file name may be: those get a hashed name ('#' is never in an ID). */
#define RECORD_SHORT_ID 200

static void record_name(const char *id, char *buf, size_t size)
{
	if (strlen(id) <= RECORD_SHORT_ID)
		snprintf(buf, size, "%s.json", id);
	else
		snprintf(buf, size, "%.150s#%016" PRIx64 ".json", id, shim_fnv1a64(id));
}

uint64_t shim_fnv1a64(const char *s)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

void shim_record_key(const char *root, char out[SHIM_KEY_LEN])
{
	if (!root || !*root)
		snprintf(out, SHIM_KEY_LEN, "default");
	else
		snprintf(out, SHIM_KEY_LEN, "%016" PRIx64, shim_fnv1a64(root));
}

/*
 * The directory a --root names, as the backend reaches it: runc takes filepath.Abs of the flag
 * (relative to the working directory, "//", "." and ".." cleaned), and the kernel follows any
 * symlink on the way (/var/run is /run). `R`, `R/`, `./R` and a link to R are one root, so one
 * key: otherwise a verb spelled another way would find no record of a container the backend has.
 * The longest part that exists is resolved; the rest (a root not made yet) is kept as cleaned.
 * Returns false when it does not fit.
 */
static bool canon_root(const char *root, char *out, size_t size)
{
	char joined[PATH_MAX], clean[PATH_MAX], real[PATH_MAX], cwd[PATH_MAX];
	size_t n = 0, cut;
	int w;

	if (root[0] == '/')
		w = snprintf(joined, sizeof(joined), "%s", root);
	else if (getcwd(cwd, sizeof(cwd)))
		w = snprintf(joined, sizeof(joined), "%s/%s", cwd, root);
	else
		return false;
	if (w < 0 || (size_t)w >= sizeof(joined))
		return false;
	/* Lexically, component by component, as Go's filepath.Clean. */
	for (char *save = NULL, *c = strtok_r(joined, "/", &save); c;
	     c = strtok_r(NULL, "/", &save)) {
		size_t len = strlen(c);

		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			while (n > 0 && clean[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			continue;
		}
		if (n + 1 + len + 1 > sizeof(clean))
			return false;
		clean[n++] = '/';
		memcpy(clean + n, c, len);
		n += len;
	}
	if (n == 0)
		clean[n++] = '/';
	clean[n] = '\0';
	/* Resolve the longest prefix that exists, keep the rest. */
	for (cut = n;;) {
		char head[PATH_MAX];

		memcpy(head, clean, cut);
		head[cut] = '\0';
		if (realpath(cut ? head : "/", real)) {
			w = snprintf(out, size, "%s%s",
				     strcmp(real, "/") == 0 && cut < n ? "" : real, clean + cut);
			return w >= 0 && (size_t)w < size;
		}
		while (cut > 0 && clean[cut - 1] != '/')
			cut--;
		if (cut == 0)
			return false;
		cut--; /* the slash before the component that did not resolve */
	}
}

/*
 * Each directory on the way to canon that exists (with make: made first, 0711 as runc makes it,
 * when it does not) is a directory only root may change: not a symlink, root's, and not
 * writable by others unless sticky. The root itself may not be writable by others even when
 * sticky: the backend trusts whatever file bears a container's name there, and a sticky bit only
 * keeps others from renaming entries that exist, not from creating a name the backend has freed.
 * Returns -EPERM naming the first that is not.
 */
static int root_walk(const char *spelled, char *canon, bool make, struct hezo_error **err)
{
	struct stat st;

	for (char *s = canon + 1;; s++) {
		char c = *s;

		if (c != '/' && c != '\0')
			continue;
		*s = '\0';
		if (make && mkdir(canon, 0711) < 0 && errno != EEXIST) {
			int e = hezo_error_set_errno(err, errno, "--root %s: cannot make %s",
						     spelled, canon);
			*s = c;
			return e;
		}
		if (lstat(canon, &st) < 0) {
			*s = c;
			if (make)
				return hezo_error_set_errno(err, errno, "--root %s", spelled);
			break;
		}
		if (!S_ISDIR(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) ||
		    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))) {
			int e = hezo_error_set(err, EPERM,
					       "--root %s: %s is %s, so another user could point "
					       "the root elsewhere",
					       spelled, canon,
					       !S_ISDIR(st.st_mode) ? "not a directory"
					       : (st.st_uid != 0 && st.st_uid != geteuid())
						       ? "owned by another user"
						       : "writable by others");
			*s = c;
			return e;
		}
		if (c == '\0' && (st.st_mode & 022)) {
			int e = hezo_error_set(
				err, EPERM,
				"--root %s: %s is writable by others (mode %04o), so "
				"another user could plant the state files the backend "
				"reads there",
				spelled, canon, (unsigned)(st.st_mode & 07777));
			*s = c;
			return e;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	return 0;
}

int shim_root_make(const struct shim_globals *g, struct hezo_error **err)
{
	char canon[PATH_MAX];

	if (!g->root)
		return 0;
	if (snprintf(canon, sizeof(canon), "%s", g->root) >= (int)sizeof(canon))
		return hezo_error_set(err, ENAMETOOLONG, "--root %s: cannot be resolved", g->root);
	return root_walk(g->root, canon, true, err);
}

int shim_root_settle(struct shim_globals *g, struct hezo_error **err)
{
	char canon[PATH_MAX];
	int r;

	if (!g->root)
		return 0;
	if (!*g->root)
		return hezo_error_set(err, EINVAL,
				      "--root \"\": the backend would take the working directory; "
				      "name the directory");
	if (!canon_root(g->root, canon, sizeof(canon)))
		return hezo_error_set(err, ENAMETOOLONG, "--root %s: cannot be resolved", g->root);
	if (strcmp(canon, "/proc") == 0 || strncmp(canon, "/proc/", 6) == 0 ||
	    strncmp(g->root, "/proc/", 6) == 0)
		return hezo_error_set(err, EINVAL,
				      "--root %s: a path through /proc is not a state directory "
				      "(a magic link there names another mount namespace's files)",
				      g->root);
	/* Every directory that exists on the way: only root may change what it names. */
	r = root_walk(g->root, canon, false, err);
	if (r < 0)
		return r;
	g->root_canon = strdup(canon);
	if (!g->root_canon)
		return hezo_error_set(err, ENOMEM, "out of memory");
	g->root = g->root_canon;
	return 0;
}

/*
 * The backends' own default roots (runc's, runsc's /var/run/runsc, crun's) are the default key
 * too: `--root /run/runc` and no --root are one state directory for runc, so they must be one
 * set of records and one lock.
 */
static bool default_root(const char *canon)
{
	for (const char *const *d = shim_backend_default_roots; *d; d++)
		if (strcmp(canon, *d) == 0)
			return true;
	return false;
}

static void root_key(const char *root, char key[SHIM_KEY_LEN])
{
	char canon[PATH_MAX];

	if (root && *root && canon_root(root, canon, sizeof(canon)))
		root = default_root(canon) ? NULL : canon;
	shim_record_key(root, key);
}

int shim_root_from_record(struct shim_ctx *ctx, const struct hezo_json *rec,
			  struct hezo_error **err)
{
	const char *root = hezo_json_string(hezo_json_get(rec, "root"));
	char *dup = NULL;

	if (root && !(dup = strdup(root)))
		return hezo_error_set(err, ENOMEM, "out of memory");
	free(ctx->g.root_canon);
	ctx->g.root_canon = dup;
	ctx->g.root = dup;
	return 0;
}

void shim_record_key_for_root(const char *root, char key[SHIM_KEY_LEN])
{
	root_key(root, key);
}

/* Open STATE_DIR/<key>, creating it (0700) when create is set. */
static int open_key_dir(const struct shim_ctx *ctx, bool create, struct hezo_error **err)
{
	_cleanup_close_ int state = -1;
	char key[SHIM_KEY_LEN];
	int fd, r;

	root_key(ctx->g.root, key);
	if (create) {
		r = hezo_mkdir_p(ctx->state_dir, 0700, 0700);
		if (r < 0)
			return hezo_error_set_errno(err, -r, "state directory %s", ctx->state_dir);
	}
	state = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (state < 0) {
		if (errno == ENOENT && !create)
			return -ENOENT;
		return hezo_error_set_errno(err, errno, "state directory %s", ctx->state_dir);
	}
	if (create && mkdirat(state, key, 0700) < 0 && errno != EEXIST)
		return hezo_error_set_errno(err, errno, "state directory %s/%s", ctx->state_dir,
					    key);
	fd = openat(state, key, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT && !create)
			return -ENOENT;
		return hezo_error_set_errno(err, errno, "state directory %s/%s", ctx->state_dir,
					    key);
	}
	return fd;
}

int shim_record_lock(const struct shim_ctx *ctx, struct hezo_error **err)
{
	_cleanup_close_ int dir = open_key_dir(ctx, true, err);
	char path[PATH_MAX];
	int fd;

	if (dir < 0)
		return dir;
	/* One lock for every root: cgroups nest across roots too. */
	if ((size_t)snprintf(path, sizeof(path), "%s/.records.lock", ctx->state_dir) >=
	    sizeof(path))
		return hezo_error_set(err, ENAMETOOLONG, "state directory %s: too long",
				      ctx->state_dir);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "%s", path);
	if (flock(fd, LOCK_EX) < 0) {
		int e = errno;

		close(fd);
		return hezo_error_set_errno(err, e, "%s: lock", path);
	}
	return fd;
}

int shim_record_write(const struct shim_ctx *ctx, const char *id, const struct hezo_json *rec,
		      struct hezo_error **err)
{
	_cleanup_close_ int dir = -1;
	_cleanup_free_ char *data = NULL;
	char name[256];
	size_t len;
	int r;

	dir = open_key_dir(ctx, true, err);
	if (dir < 0)
		return dir;
	r = hezo_json_dump(rec, false, &data, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "container record");
	/* Every scan reads a record up to this size: a larger one would count for nothing. */
	if (len > SHIM_RECORD_MAX)
		return hezo_error_set(
			err, EFBIG,
			"container record: %zu bytes, more than the %d the shim reads "
			"back (annotations, --root or bundle path too long)",
			len, SHIM_RECORD_MAX);
	record_name(id, name, sizeof(name));
	r = hezo_write_state_file_at(dir, name, data, len, 0600, err);
	if (r < 0)
		return hezo_error_prefix(err, "container record %s/%s", ctx->state_dir, name);
	return 0;
}

int shim_record_read(const struct shim_ctx *ctx, const char *id, struct hezo_json **out,
		     struct hezo_error **err)
{
	_cleanup_close_ int dir = -1;
	_cleanup_free_ char *data = NULL;
	_cleanup_json_ struct hezo_json *rec = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	char name[256];
	size_t len;
	int r;

	*out = NULL;
	dir = open_key_dir(ctx, false, err);
	if (dir < 0)
		return dir;
	record_name(id, name, sizeof(name));
	r = hezo_read_file_at(dir, name, SHIM_RECORD_MAX, &data, &len, &e);
	if (r == -ENOENT)
		return -ENOENT;
	if (r < 0 || hezo_json_parse(data, len, &rec, &e) < 0 || rec->type != HEZO_JSON_OBJECT) {
		return hezo_error_set(err, EINVAL, "container record %s/%s: %s", ctx->state_dir,
				      name, e ? e->msg : "not an object");
	}
	/* A hashed name could in theory be shared: the ID inside decides. */
	if (strcmp(hezo_json_string(hezo_json_get(rec, "id")) ?: "", id) != 0)
		return -ENOENT;
	*out = TAKE_PTR(rec);
	return 0;
}

/* ---- the backend's bundle ---- */

#define BUNDLES ".bundles"

/* The bundle's directory name: the record's name without ".json". */
static void bundle_name(const char *id, char *buf, size_t size)
{
	record_name(id, buf, size);
	buf[strlen(buf) - 5] = '\0';
}

/* A directory only this uid can write into: anything else is refused, never used. */
static int private_dir_at(int dir, const char *name, bool create, const char *what,
			  struct hezo_error **err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (create && mkdirat(dir, name, 0700) < 0 && errno != EEXIST)
		return hezo_error_set_errno(err, errno, "%s", what);
	fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT && !create ? -ENOENT
						  : hezo_error_set_errno(err, errno, "%s", what);
	if (fstat(fd, &st) < 0)
		return hezo_error_set_errno(err, errno, "%s", what);
	if (st.st_uid != geteuid() || (st.st_mode & 077))
		return hezo_error_set(err, EPERM,
				      "%s: owned by uid %u with mode %04o; the shim uses only a "
				      "directory of its own uid with mode 0700",
				      what, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	return TAKE_FD(fd);
}

/* Empty dir/name (its files, and the staged mounts in mnt/: stage.c) and remove it. */
static int remove_bundle_at(int dir, const char *name)
{
	_cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	shim_stage_remove(fd);
	d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			(void)unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	if (unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int shim_bundle_open(const struct shim_ctx *ctx, const char *id, int flags, char *path, size_t size,
		     struct hezo_error **err)
{
	bool create = flags & (SHIM_BUNDLE_CREATE | SHIM_BUNDLE_FRESH);
	_cleanup_close_ int kdir = -1, bdir = -1;
	char key[SHIM_KEY_LEN], name[256], what[PATH_MAX];
	int fd;

	root_key(ctx->g.root, key);
	kdir = open_key_dir(ctx, create, err);
	if (kdir < 0)
		return kdir;
	snprintf(what, sizeof(what), "state directory %s/%s/%s", ctx->state_dir, key, BUNDLES);
	bdir = private_dir_at(kdir, BUNDLES, create, what, err);
	if (bdir < 0)
		return bdir;
	bundle_name(id, name, sizeof(name));
	if ((size_t)snprintf(path, size, "%s/%s/%s/%s", ctx->state_dir, key, BUNDLES, name) >= size)
		return hezo_error_set(err, ENAMETOOLONG, "%s/%s: path too long", what, name);
	if (flags & SHIM_BUNDLE_FRESH) {
		/* A foreground run's container leaves its bundle: a new one starts empty. */
		int r = remove_bundle_at(bdir, name);
		if (r < 0)
			return hezo_error_set_errno(err, -r, "bundle %s", path);
	}
	fd = private_dir_at(bdir, name, create, path, err);
	return fd;
}

int shim_bundle_tidy(const struct shim_ctx *ctx)
{
	_cleanup_close_ int kdir = -1, bdir = -1;
	struct dirent *de;
	int removed = 0;
	DIR *d;

	kdir = open_key_dir(ctx, false, NULL);
	if (kdir < 0)
		return 0;
	bdir = openat(kdir, BUNDLES, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (bdir < 0)
		return 0;
	d = fdopendir(bdir);
	if (!d)
		return 0;
	bdir = -1;
	while ((de = readdir(d))) {
		char rec[300];
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		/* The record is written before its bundle and removed after it. */
		snprintf(rec, sizeof(rec), "%s.json", de->d_name);
		if (fstatat(kdir, rec, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
			continue;
		if (remove_bundle_at(dirfd(d), de->d_name) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

static void bundle_remove(int kdir, const char *id)
{
	_cleanup_close_ int bdir = -1;
	char name[256];

	bdir = openat(kdir, BUNDLES, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (bdir < 0)
		return;
	bundle_name(id, name, sizeof(name));
	(void)remove_bundle_at(bdir, name);
}

int shim_bundle_tidy_execs(int bundle)
{
	/* The backend that was handed the file runs as that pid (the shim exec()ed it). */
	return hezo_remove_dead_pid_files_at(bundle, SHIM_EXEC_PREFIX, ".json", true);
}

int shim_record_path(const struct shim_ctx *ctx, const char *id, char *buf, size_t size)
{
	char key[SHIM_KEY_LEN], name[256], state[PATH_MAX];

	/* Absolute: another shim, elsewhere, reads it back from the uid range registry. */
	if (!realpath(ctx->state_dir, state))
		return -errno;
	root_key(ctx->g.root, key);
	record_name(id, name, sizeof(name));
	if ((size_t)snprintf(buf, size, "%s/%s/%s", state, key, name) >= size)
		return -ENAMETOOLONG;
	return 0;
}

/* The caller holds the records lock (or none could be had). */
static int record_remove(const struct shim_ctx *ctx, const char *id)
{
	_cleanup_close_ int dir = -1;
	char name[256], key[SHIM_KEY_LEN];

	dir = open_key_dir(ctx, false, NULL);
	if (dir < 0)
		return dir;
	/* The uid range goes with the record that held it (userns.c). */
	shim_userns_release(ctx, id);
	/* Bundle first: a bundle without its record is litter the next create tidies. */
	bundle_remove(dir, id);
	record_name(id, name, sizeof(name));
	if (unlinkat(dir, name, 0) < 0 && errno != ENOENT)
		return -errno;
	/* Nothing of the container stays behind: its line in the index goes with it. */
	root_key(ctx->g.root, key);
	(void)shim_records_index_forget(ctx, key, name);
	return 0;
}

int shim_record_remove(const struct shim_ctx *ctx, const char *id)
{
	/* Without the lock the record still goes: the index is only ever behind, never wrong. */
	_cleanup_close_ int lock = shim_record_lock(ctx, NULL);

	(void)lock; /* held until the record and its index line are gone */
	return record_remove(ctx, id);
}

int shim_record_remove_same(const struct shim_ctx *ctx, const char *id, const struct hezo_json *rec)
{
	_cleanup_close_ int lock = shim_record_lock(ctx, NULL);
	_cleanup_json_ struct hezo_json *now = NULL;
	const struct hezo_json *a, *b;
	int r;

	if (lock < 0)
		return lock;
	r = shim_record_read(ctx, id, &now, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	a = hezo_json_get(rec, "creator");
	b = hezo_json_get(now, "creator");
	/* A create of the same ID since: its record (and private bundle) stays. */
	if ((a || b) && !(a && b && hezo_json_equal(a, b)))
		return 0;
	/* The agent's directory was this record's: proxyd's socket in it went at unwire. */
	if (hezo_json_get(now, "keys"))
		shim_keys_remove(ctx, id);
	return record_remove(ctx, id);
}

int shim_record_target(const struct hezo_json *rec, struct shim_target *t, struct hezo_error **err)
{
	const char *name = hezo_json_string(hezo_json_get(rec, "backend"));
	const char *path = hezo_json_string(hezo_json_get(rec, "path"));
	struct hezo_json *args = hezo_json_get_type(rec, "args", HEZO_JSON_ARRAY);

	memset(t, 0, sizeof(*t));
	if (!name || hezo_backend_from_name(name, &t->backend) < 0)
		return hezo_error_set(err, EINVAL, "container record: unknown backend \"%s\"",
				      name ? name : "");
	if (!path || path[0] != '/')
		return hezo_error_set(err, EINVAL, "container record: backend path missing");
	t->path = strdup(path);
	if (!t->path)
		return hezo_error_set(err, ENOMEM, "out of memory");
	HEZO_JSON_FOREACH (i, args) {
		const char *s = hezo_json_string(args->items[i]);
		if (!s)
			return hezo_error_set(err, EINVAL,
					      "container record: args[%zu] not a string", i);
		if (hezo_strv_push(&t->args, s) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

int shim_load_policy(const struct shim_ctx *ctx, struct hezo_policy **out, struct hezo_error **err)
{
	return hezo_policy_load(ctx->policy_path, out, err);
}

int shim_record_policy(const struct shim_ctx *ctx, const struct hezo_json *rec,
		       struct hezo_policy **out, struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *base = NULL;
	struct hezo_json *ann = hezo_json_get_type(rec, "annotations", HEZO_JSON_OBJECT);
	/*
	 * The project the container got (from whichever source) goes back in as the hint, so a
	 * project derived from, say, the Kubernetes namespace comes out the same without keeping
	 * every annotation.
	 */
	const char *hint = hezo_json_string(hezo_json_get(rec, "project"))
				   ?: hezo_json_string(hezo_json_get(rec, "projectHint"));
	int r;

	r = shim_load_policy(ctx, &base, err);
	if (r < 0)
		return r;
	return hezo_policy_for_container(base, ann, hint, out, err);
}

/*
 * A verb on a container the caller's project does not own: the runtime of project beta (a
 * wrapper passing --hezo-project beta) acts only on beta's containers, whatever --root it names.
 */
int shim_record_for_caller(const struct shim_ctx *ctx, const char *id, const struct hezo_json *rec,
			   struct hezo_error **err)
{
	const char *project = hezo_json_string(hezo_json_get(rec, "project"));

	if (!ctx->g.project || (project && strcmp(project, ctx->g.project) == 0))
		return 0;
	return hezo_error_set(err, EPERM,
			      "container %s is project %s's; this runtime's project is %s", id,
			      project ?: "(none)", ctx->g.project);
}

/*
 * An ID with no record under this --root: not a container the shim made there. A backend's own
 * (a plain runc container, or a state directory the caller wrote) has no box to keep, so no verb
 * reaches the backend for it; the answer is runc's for an unknown container, which engines'
 * shims match ("does not exist") when they clean up after a create that failed.
 */
int shim_record_absent(struct shim_ctx *ctx, const char *id, struct hezo_error **err)
{
	ctx->fail_stderr = true;
	return hezo_error_set(err, ENOENT,
			      "container \"%s\" does not exist (hezo-shim has no record of it "
			      "under --root %s)",
			      id, ctx->g.root && *ctx->g.root ? ctx->g.root : "(the default)");
}
