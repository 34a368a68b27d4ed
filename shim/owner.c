/*
 * Whose is a namespace named by path: the answer behind hezo_apply_env.ns_owner. A process is one
 * of hezo-shim's containers' when it sits in the cgroup a live record names (under runsc the
 * sandbox's host processes are in the container's cgroup too).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-file.h"
#include "hezo-netns.h"
#include "shim.h"

#define OWNER_FILE_MAX (1024 * 1024)

struct cgroup_owner {
	char *id;
	char *cgroup; /* relative to a hierarchy's root, from hezo_policy_cgroup_path */
};

struct owner_scan {
	struct cgroup_owner *v;
	size_t n;
	const char *owner; /* the first container found in the namespace */
	pid_t foreign;	   /* a process in it that is no container's */
};

static void scan_done(struct owner_scan *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].id);
		free(s->v[i].cgroup);
	}
	free(s->v);
}

static int scan_add(struct owner_scan *s, const char *id, const char *cgroup)
{
	struct cgroup_owner *nv = realloc(s->v, (s->n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	s->v = nv;
	s->v[s->n].id = strdup(id);
	s->v[s->n].cgroup = strdup(cgroup);
	if (!s->v[s->n].id || !s->v[s->n].cgroup) {
		free(s->v[s->n].id);
		free(s->v[s->n].cgroup);
		return -ENOMEM;
	}
	s->n++;
	return 0;
}

/* Every record under every --root key: ID and cgroup of each container that has one. */
static int load_records(const char *state_dir, struct owner_scan *s, struct hezo_error **err)
{
	DIR *top = opendir(state_dir);
	struct dirent *k;
	int r = 0;

	if (!top)
		return errno == ENOENT
			       ? 0
			       : hezo_error_set_errno(err, errno, "state directory %s", state_dir);
	while (r == 0 && (k = readdir(top))) {
		_cleanup_close_ int kfd = -1;
		struct dirent *f;
		DIR *d;

		if (k->d_name[0] == '.')
			continue;
		kfd = openat(dirfd(top), k->d_name,
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (kfd < 0 || !(d = fdopendir(kfd)))
			continue;
		kfd = -1; /* the DIR owns it now */
		while (r == 0 && (f = readdir(d))) {
			_cleanup_free_ char *data = NULL;
			_cleanup_json_ struct hezo_json *rec = NULL;
			const char *id, *cg;
			char rel[PATH_MAX];
			size_t len, n = strlen(f->d_name);

			if (f->d_name[0] == '.' || n < 6 || strcmp(f->d_name + n - 5, ".json") != 0)
				continue;
			if (hezo_read_file_at(dirfd(d), f->d_name, OWNER_FILE_MAX, &data, &len,
					      NULL) < 0 ||
			    hezo_json_parse(data, len, &rec, NULL) < 0)
				continue;
			id = hezo_json_string(hezo_json_get(rec, "id"));
			cg = hezo_json_string(hezo_json_get(rec, "cgroupsPath"));
			if (!id || !cg || hezo_policy_cgroup_path(cg, rel, sizeof(rel)) < 0)
				continue;
			if (scan_add(s, id, rel) < 0)
				r = hezo_error_set(err, ENOMEM, "out of memory");
		}
		closedir(d);
	}
	closedir(top);
	return r;
}

static bool under(const char *path, const char *root)
{
	size_t n = strlen(root);

	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/*
 * The process's cgroup in the pids hierarchy (the one runc and runsc both place a container in on
 * this cgroup v1 machine), else in the unified one.
 */
static int process_cgroup(pid_t pid, char *buf, size_t size)
{
	_cleanup_free_ char *data = NULL;
	char path[64];
	bool found = false;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	r = hezo_read_file_at(AT_FDCWD, path, OWNER_FILE_MAX, &data, &len, NULL);
	if (r < 0)
		return r;
	for (char *line = data, *next; line && *line; line = next) {
		char *c1, *c2;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		c1 = strchr(line, ':');
		c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		if (strcmp(c1 + 1, "pids") == 0 || (!found && strcmp(line, "0:") == 0 && !c1[1])) {
			snprintf(buf, size, "%s", c2 + 1);
			found = true;
			if (strcmp(c1 + 1, "pids") == 0)
				return 0;
		}
	}
	return found ? 0 : -ENOENT;
}

static int visit(pid_t pid, void *data)
{
	struct owner_scan *s = data;
	char cg[PATH_MAX];
	int r = process_cgroup(pid, cg, sizeof(cg));

	if (r == -ENOENT || r == -ESRCH)
		return 0; /* gone meanwhile */
	for (size_t i = 0; r == 0 && i < s->n; i++) {
		if (under(cg, s->v[i].cgroup)) {
			if (!s->owner)
				s->owner = s->v[i].id;
			return 0;
		}
	}
	s->foreign = pid;
	return 1;
}

int shim_ns_owner(void *data, const char *kind, const char *path, char **owner,
		  struct hezo_error **err)
{
	const struct shim_ctx *ctx = data;
	struct owner_scan s = {0};
	_cleanup_close_ int fd = -1;
	int r;

	*owner = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "%s", path);
	r = load_records(ctx->state_dir, &s, err);
	if (r == 0)
		r = hezo_ns_foreach_pid(fd, kind, visit, &s, err);
	if (r < 0) {
		scan_done(&s);
		return r;
	}
	if (s.foreign) {
		char comm[64] = "", cpath[64];
		_cleanup_free_ char *c = NULL;
		size_t len;

		snprintf(cpath, sizeof(cpath), "/proc/%d/comm", (int)s.foreign);
		if (hezo_read_file_at(AT_FDCWD, cpath, sizeof(comm), &c, &len, NULL) == 0)
			snprintf(comm, sizeof(comm), " %.*s", (int)strcspn(c, "\n"), c);
		scan_done(&s);
		return hezo_error_set(err, ESRCH, "process %d%s is in it", (int)s.foreign, comm);
	}
	if (s.owner) {
		*owner = strdup(s.owner);
		if (!*owner) {
			scan_done(&s);
			return hezo_error_set(err, ENOMEM, "out of memory");
		}
	}
	scan_done(&s);
	return 0;
}
