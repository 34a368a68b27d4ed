/*
 * A project's workspace on the host (docs/policy.md, "Workspace"): made on the project's first
 * create, with its .home, owned by the box's user; and no box handed a directory that is, holds
 * or is inside another project's workspace, by any name the mount table gives either.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-mountinfo.h"
#include "shim.h"

struct ws_scan {
	const struct hezo_policy *self;
	const struct hezo_held *held;
	const struct hezo_mounts *mounts;
	char why[2 * PATH_MAX + 256];
};

static int forbidden_name(const char *path, void *data)
{
	struct ws_scan *s = data;
	char why[PATH_MAX + 128];

	if (!hezo_policy_workspace_forbidden(s->self, path, why, sizeof(why)))
		return 0;
	snprintf(s->why, sizeof(s->why), "it is also named %s: %s", path, why);
	return 1;
}

/*
 * The workspace by every name the mount table gives it (a bind of /etc at the admin's path),
 * before anything is made in it. A volume is in an engine's store by design.
 */
static int judge_names(const struct hezo_policy *p, const char *dir,
		       const struct hezo_mounts *mounts, struct hezo_error **err)
{
	struct ws_scan s = {.self = p};
	struct hezo_place at[HEZO_PLACES_MAX];
	char real[PATH_MAX], up[PATH_MAX];
	const char *base = strrchr(dir, '/');
	int n;

	if (hezo_policy_workspace_is_volume(p))
		return 0;
	/* Not made yet: its parent resolved, and its own name. */
	snprintf(up, sizeof(up), "%.*s", (int)(base - dir), dir);
	if (!realpath(dir, real) && (errno != ENOENT || !realpath(up[0] ? up : "/", up) ||
				     snprintf(real, sizeof(real), "%s%s", strcmp(up, "/") ? up : "",
					      base) >= (int)sizeof(real)))
		return hezo_error_set_errno(err, errno ?: ENAMETOOLONG, "workspace %s", dir);
	n = hezo_mounts_places(mounts, real, at, HEZO_PLACES_MAX);
	if (n < 0)
		return hezo_error_set(err, -n, "workspace %s: cannot place it in the mount table",
				      real);
	if (forbidden_name(real, &s) == 0)
		for (int i = 0; i < n && !hezo_mounts_names(mounts, &at[i], forbidden_name, &s);
		     i++)
			;
	if (s.why[0])
		return hezo_error_set(err, EPERM, "workspace %s: %s", dir, s.why);
	return 0;
}

/* mkdir dir (its parent must exist, root's and writable by root alone), owned by uid:gid. */
static int make_owned(const char *dir, mode_t mode, uid_t uid, gid_t gid, struct hezo_error **err)
{
	_cleanup_close_ int fd = -1;
	char parent[PATH_MAX];
	struct stat st;
	char *slash;

	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (!slash)
		return hezo_error_set(err, EINVAL, "workspace %s: not an absolute path", dir);
	*(slash == parent ? slash + 1 : slash) = '\0';
	/* Nobody else may have put the parent there, or swap it while the shim makes the child. */
	if (stat(parent, &st) < 0)
		return hezo_error_set_errno(err, errno, "workspace %s: its parent %s", dir, parent);
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return hezo_error_set(err, EPERM,
				      "workspace %s: its parent %s is not a directory of root's "
				      "that root alone may write",
				      dir, parent);
	if (mkdir(dir, mode) < 0 && errno != EEXIST)
		return hezo_error_set_errno(err, errno, "workspace %s", dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchown(fd, uid, gid) < 0)
		return hezo_error_set_errno(err, errno, "workspace %s", dir);
	return 0;
}

/*
 * The workspace's directory, opened without following a symlink anywhere on its path, below a
 * parent of root's that root alone may write, and (private_parent) none but root may search (made
 * there, owned by uid:gid, when absent). Group and others are kept out of it: root in a box writes
 * files as host root, and a setuid file a box left there would be a way to root for any local user
 * who could reach it (red team, workspace F1); a symlink on the way would let whoever made it
 * choose the directory (F2, F3).
 */
static int open_workspace(const char *dir, bool private_parent, uid_t uid, gid_t gid, bool *made,
			  struct hezo_error **err)
{
	_cleanup_close_ int pfd = -1, fd = -1;
	char parent[PATH_MAX];
	const char *base;
	struct stat st;
	char *slash;

	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (parent[0] != '/' || !slash || !slash[1])
		return hezo_error_set(err, EINVAL, "workspace %s: not an absolute path", dir);
	base = dir + (slash - parent) + 1;
	*(slash == parent ? slash + 1 : slash) = '\0';
	pfd = hezo_open_nofollow(parent, NULL);
	if (pfd < 0)
		return hezo_error_set_errno(err, -pfd,
					    "workspace %s: its parent %s (no symlink on the way)",
					    dir, parent);
	if (fstat(pfd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)))
		return hezo_error_set(err, EPERM,
				      "workspace %s: its parent %s is not a directory of root's "
				      "that root alone may write",
				      dir, parent);
	/*
	 * A box's root owns its workspace and may open it to everyone (chmod 755) while it runs:
	 * the parent, which no box holds, keeps other users out of it (red team ws2, F1).
	 */
	if (private_parent && (st.st_mode & (S_IXGRP | S_IXOTH)))
		return hezo_error_set(
			err, EPERM,
			"workspace %s: other users can search its parent; chmod 0700 %s", dir,
			parent);
	fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		if (mkdirat(pfd, base, 0700) == 0)
			*made = true;
		else if (errno != EEXIST)
			return hezo_error_set_errno(err, errno, "workspace %s", dir);
		fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && fchown(fd, uid, gid) < 0)
			return hezo_error_set_errno(err, errno, "workspace %s", dir);
	}
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "workspace %s (no symlink)", dir);
	if (fstat(fd, &st) < 0 || ((st.st_mode & 077) && fchmod(fd, st.st_mode & 0700) < 0))
		return hezo_error_set_errno(err, errno, "workspace %s: keeping others out", dir);
	return TAKE_FD(fd);
}

#define VOLUME_MARKER "hezo-workspace"

/*
 * A volume workspace is one the shim made for this project: a volume that was there before (made
 * by `docker volume create`, or by a box of no project that holds it still) may be another box's
 * (red team ws2, F2). The marker sits beside _data, where no box reaches; make writes it.
 */
static int volume_marker(const char *up, const char *project, bool make, struct hezo_error **err)
{
	_cleanup_close_ int dfd = open(up, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int fd = -1;
	char buf[256] = "";
	size_t n = strlen(project);
	ssize_t got;

	if (dfd < 0)
		return hezo_error_set_errno(err, errno, "workspace volume %s", up);
	if (make) {
		fd = openat(dfd, VOLUME_MARKER,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, project, n) != (ssize_t)n || fsync(fd) < 0)
			return hezo_error_set_errno(err, errno ?: EIO, "workspace volume %s/%s", up,
						    VOLUME_MARKER);
		return 0;
	}
	fd = openat(dfd, VOLUME_MARKER, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	got = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (got == (ssize_t)n && memcmp(buf, project, n) == 0)
		return 0;
	return hezo_error_set(err, EPERM,
			      "workspace volume %s_workspace was not made by hezo-shim for project "
			      "%s (no %s/%s): a box may hold it already; remove it (docker volume "
			      "rm %s_workspace) and the next create makes it",
			      project, project, up, VOLUME_MARKER, project);
}

void shim_workspace_made_undo(struct shim_ws_made *m)
{
	char path[PATH_MAX + 8];

	if (m->keep)
		return;
	if (m->home_made && snprintf(path, sizeof(path), "%s/.home", m->dir) < (int)sizeof(path))
		(void)rmdir(path);
	if (m->dir_made)
		(void)rmdir(m->dir);
	if (m->store && snprintf(path, sizeof(path), "%s", m->dir) < (int)sizeof(path) &&
	    strrchr(path, '/')) {
		*strrchr(path, '/') = '\0';
		_cleanup_close_ int dfd =
			open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (dfd >= 0)
			(void)unlinkat(dfd, VOLUME_MARKER, 0);
		(void)rmdir(path);
	}
}

int shim_workspace_prepare(const struct hezo_policy *base, const struct hezo_policy *p,
			   const struct hezo_json *spec, struct shim_ws_made *made,
			   struct hezo_error **err)
{
	_cleanup_(hezo_mounts_free) struct hezo_mounts mounts = {0};
	_cleanup_close_ int fd = -1;
	char dir[PATH_MAX], up[PATH_MAX], why[2 * PATH_MAX + 128];
	uint64_t uid = 0, gid = 0;
	int r;

	if (hezo_policy_workspace_dir(p, dir, sizeof(dir)) < 0)
		return 0;
	snprintf(made->dir, sizeof(made->dir), "%s", dir);
	/* The box's user, as the backend sets it (Docker resolves names to numbers first). */
	(void)hezo_json_get_uint64(hezo_json_get_path(spec, "process.user.uid"), &uid);
	(void)hezo_json_get_uint64(hezo_json_get_path(spec, "process.user.gid"), &gid);
	if (uid > UINT32_MAX - 1 || gid > UINT32_MAX - 1)
		return hezo_error_set(err, EINVAL, "process.user: not a uid and gid");
	r = hezo_mounts_read(&mounts);
	if (r < 0)
		return hezo_error_set(err, -r, "/proc/self/mountinfo: cannot read the mount table");
	/*
	 * Another project's workspace is refused before anything is made or chmod'ed: its parent
	 * would lose its group and other bits, and a directory of this box's user would appear
	 * inside it, though the box is refused later.
	 */
	r = hezo_policy_workspace_clash(base, p, &mounts, why, sizeof(why));
	if (r < 0) {
		hezo_policy_projects_why(base, r, why, sizeof(why));
		return hezo_error_set(err, -r,
				      "workspace: the other projects' cannot be judged: %s", why);
	}
	if (r > 0)
		return hezo_error_set(err, EPERM, "workspace %s", why);
	r = judge_names(p, dir, &mounts, err);
	if (r < 0)
		return r;
	/* The volume form: Docker's local driver layout, ROOT/NAME (0701, root's)/_data. */
	if (strcmp(strrchr(dir, '/'), "/_data") == 0) {
		snprintf(up, sizeof(up), "%s", dir);
		*strrchr(up, '/') = '\0';
		if (access(up, F_OK) < 0 && errno == ENOENT) {
			r = make_owned(up, 0701, 0, 0, err);
			if (r < 0)
				return r;
			made->store = true;
		}
		r = volume_marker(up, hezo_policy_project(p), made->store, err);
		if (r < 0)
			return r;
	}
	/* A volume's parent is the engine's (0701), inside a store others cannot search. */
	fd = open_workspace(dir, !hezo_policy_workspace_is_volume(p), (uid_t)uid, (gid_t)gid,
			    &made->dir_made, err);
	if (fd < 0)
		return fd;
	/* HOME for images whose own is read-only; a box may have put anything there since. */
	if (mkdirat(fd, ".home", 0700) == 0) {
		made->home_made = true;
		if (fchownat(fd, ".home", (uid_t)uid, (gid_t)gid, AT_SYMLINK_NOFOLLOW) < 0)
			return hezo_error_set_errno(err, errno, "workspace %s/.home", dir);
	} else if (errno != EEXIST) {
		return hezo_error_set_errno(err, errno, "workspace %s/.home", dir);
	}
	return 0;
}

/* ---- no box of another project reaches a workspace ---- */

static bool handed_reaches(const struct ws_scan *s, const char *path, const char *ws)
{
	return hezo_policy_paths_overlap(path, ws) || hezo_mounts_overlap(s->mounts, path, ws);
}

static int other_workspace(const struct hezo_policy *q, void *data)
{
	struct ws_scan *s = data;
	const char *self = hezo_policy_project(s->self), *other = hezo_policy_project(q);
	char dir[PATH_MAX], real[PATH_MAX];
	const char *names[2];

	if (!other || (self && strcmp(self, other) == 0) ||
	    hezo_policy_workspace_dir(q, dir, sizeof(dir)) < 0)
		return 0;
	names[0] = dir;
	names[1] = realpath(dir, real) ? real : dir;
	for (size_t i = 0; i <= s->held->nbinds; i++) {
		const struct hezo_held_path *h =
			i < s->held->nbinds ? &s->held->binds[i] : &s->held->root;

		if (!h->path)
			continue;
		for (size_t k = 0; k < 2; k++)
			if (handed_reaches(s, h->path, names[k])) {
				snprintf(s->why, sizeof(s->why),
					 "%s %s overlaps %s, project %s's workspace",
					 i < s->held->nbinds ? "bind source" : "root.path", h->path,
					 names[k], other);
				return 1;
			}
	}
	return 0;
}

int shim_workspace_judge(const struct hezo_policy *base, const struct hezo_policy *p,
			 const struct hezo_held *held, const struct hezo_mounts *mounts,
			 struct hezo_error **err)
{
	struct ws_scan s = {.self = p, .held = held, .mounts = mounts};
	int r;

	r = hezo_policy_foreach_project(base, other_workspace, &s);
	if (r < 0) {
		hezo_policy_projects_why(base, r, s.why, sizeof(s.why));
		return hezo_error_set(err, -r,
				      "the projects' workspaces cannot be judged against the box's "
				      "mounts: %s",
				      s.why);
	}
	if (r > 0)
		return hezo_error_set(err, EPERM, "%s", s.why);
	return 0;
}

/* ---- HOME for exec'd processes ---- */

/* The value of the last HOME= in a process's env (the one the process gets), or NULL. */
static const char *env_home(const struct hezo_json *env)
{
	const char *home = NULL;

	HEZO_JSON_FOREACH (i, env) {
		const char *s = hezo_json_string(env->items[i]);
		if (s && strncmp(s, "HOME=", 5) == 0)
			home = s + 5;
	}
	return home;
}

int shim_workspace_record_home(const struct hezo_json *input, const struct hezo_json *spec,
			       struct hezo_json *rec)
{
	const char *was = env_home(hezo_json_get_path(input, "process.env"));
	const char *now = env_home(hezo_json_get_path(spec, "process.env"));
	_cleanup_json_ struct hezo_json *o = NULL;

	if (!now || (was && strcmp(was, now) == 0))
		return 0;
	o = hezo_json_new_object();
	if (!o || hezo_json_set(o, "was", hezo_json_new_string(was ? was : "")) < 0 ||
	    hezo_json_set(o, "now", hezo_json_new_string(now)) < 0 ||
	    hezo_json_set(rec, "home", TAKE_PTR(o)) < 0)
		return -ENOMEM;
	return 0;
}

int shim_workspace_exec_home(struct hezo_json *proc, const struct hezo_json *rec)
{
	const struct hezo_json *home = hezo_json_get_type(rec, "home", HEZO_JSON_OBJECT);
	const char *was = hezo_json_string(hezo_json_get(home, "was"));
	const char *now = hezo_json_string(hezo_json_get(home, "now"));
	struct hezo_json *env;
	const char *cur;
	char *line = NULL;
	int r;

	if (!was || !now)
		return 0;
	env = hezo_json_ensure_array(proc, "env");
	if (!env)
		return -ENOMEM;
	/* Only the HOME the engine copies from the image: one the caller set stays its own. */
	cur = env_home(env);
	if (cur ? strcmp(cur, was) != 0 : was[0] != '\0')
		return 0;
	if (asprintf(&line, "HOME=%s", now) < 0)
		return -ENOMEM;
	r = hezo_json_append(env, hezo_json_new_string(line));
	free(line);
	return r < 0 ? -ENOMEM : 0;
}
