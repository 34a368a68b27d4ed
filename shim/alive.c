/*
 * Is a process, or a backend's container, alive: a pid by its start time, a process's cgroup, and
 * a container by runc's state.json or runsc's state file, optionally in one cgroup. One copy for
 * owner.c, engines.c and admission.c, which each read the same files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hezo-file.h"
#include "shim.h"

#define STATE_MAX (1024 * 1024)

int shim_proc_start_time(long pid, uint64_t *out)
{
	char path[64], buf[1024], *p;
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* comm may hold anything: the fields start after its last ')'. Start time is field 22. */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	for (int field = 2; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EIO;
	}
	*out = strtoull(p + 1, NULL, 10);
	return 0;
}

bool shim_proc_alive(long pid, uint64_t start)
{
	uint64_t now;

	return pid > 0 && shim_proc_start_time(pid, &now) == 0 && now == start;
}

int shim_proc_cgroup(long pid, char *buf, size_t size)
{
	_cleanup_free_ char *data = NULL;
	char path[64];
	bool found = false;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "/proc/%ld/cgroup", pid);
	r = hezo_read_file_at(AT_FDCWD, path, STATE_MAX, &data, &len, NULL);
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

/* pid sits in exactly cgroup. */
static bool pid_in(long pid, const char *cgroup)
{
	char cg[PATH_MAX];

	return shim_proc_cgroup(pid, cg, sizeof(cg)) == 0 && strcmp(cg, cgroup) == 0;
}

/* The number at key in obj; 0 when absent or not one. */
static uint64_t json_u64(const struct hezo_json *obj, const char *key)
{
	uint64_t v = 0;

	return hezo_json_get_uint64(hezo_json_get(obj, key), &v) == 0 ? v : 0;
}

/* A pid a state file names, 0 when it cannot be one. */
static long state_pid(const struct hezo_json *obj, const char *key)
{
	uint64_t v = json_u64(obj, key);

	return v <= INT_MAX ? (long)v : 0;
}

int shim_runc_alive(const char *root, const char *id, const char *cgroup)
{
	_cleanup_free_ char *path = NULL, *data = NULL;
	_cleanup_json_ struct hezo_json *st = NULL;
	uint64_t start;
	size_t len;
	long pid;

	if (asprintf(&path, "%s/%s/state.json", root, id) < 0) {
		path = NULL;
		return -ENOMEM;
	}
	if (hezo_read_file_at(AT_FDCWD, path, STATE_MAX, &data, &len, NULL) < 0 ||
	    hezo_json_parse(data, len, &st, NULL) < 0)
		return -ENOENT;
	pid = state_pid(st, "init_process_pid");
	start = json_u64(st, "init_process_start");
	/* In a cgroup, a start time must be known too: a pid alone may have been reused. */
	if (cgroup && !start)
		return 0;
	return shim_proc_alive(pid, start) && (!cgroup || pid_in(pid, cgroup));
}

/* runsc's state file name in dir: container id, created or running, its sandbox alive. */
static bool runsc_file_alive(int dir, const char *name, const char *id, const char *cgroup)
{
	_cleanup_free_ char *data = NULL;
	_cleanup_json_ struct hezo_json *st = NULL;
	const char *status;
	size_t len;
	long pid;

	if (hezo_read_file_at(dir, name, 16 * STATE_MAX, &data, &len, NULL) < 0 ||
	    hezo_json_parse(data, len, &st, NULL) < 0)
		return false;
	status = hezo_json_string(hezo_json_get(st, "status")) ?: "";
	if (strcmp(hezo_json_string(hezo_json_get(st, "id")) ?: "", id) != 0 ||
	    (strcmp(status, "created") != 0 && strcmp(status, "running") != 0))
		return false;
	pid = state_pid(hezo_json_get(st, "sandbox"), "pid");
	if (pid <= 0)
		return false;
	return cgroup ? pid_in(pid, cgroup) : kill((pid_t)pid, 0) == 0;
}

bool shim_runsc_alive(const char *root, const char *id, const char *cgroup, bool pod)
{
	_cleanup_free_ char *path = NULL, *suffix = NULL;
	struct dirent *e;
	bool alive;
	size_t sn;
	DIR *d;

	if (asprintf(&suffix, "_sandbox:%s.state", id) < 0) {
		suffix = NULL;
		return false;
	}
	if (asprintf(&path, "%s%s", id, suffix) < 0) {
		path = NULL;
		return false;
	}
	d = opendir(root);
	if (!d)
		return false;
	/* A sandbox's own container first (Docker, ctr), then a pod's others. */
	alive = runsc_file_alive(dirfd(d), path, id, cgroup);
	sn = strlen(suffix);
	while (pod && !alive && (e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (n > sn && strcmp(e->d_name + n - sn, suffix) == 0 &&
		    strcmp(e->d_name, path) != 0)
			alive = runsc_file_alive(dirfd(d), e->d_name, id, cgroup);
	}
	closedir(d);
	return alive;
}
