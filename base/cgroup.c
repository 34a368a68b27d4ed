/*
 * A process's cgroup v2 id: the hook sends the container's with its registration, and proxyd
 * compares a peer's with it. On a cgroup v1 host runc also places the container in the unified
 * hierarchy (mounted at /sys/fs/cgroup/unified in hybrid mode).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "hezo-cleanup.h"
#include "hezo-file.h"
#include "hezo-cgroup.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

int hezo_cgroup2_path(const char *buf, size_t len, char *out, size_t size)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		/* "0::PATH": the unified hierarchy's line; a path outside our namespace's view
		 * shows as "/../..." and is no path we can open. */
		if (n > 3 && memcmp(p, "0::/", 4) == 0) {
			if (n - 3 >= size || memchr(p + 3, '\0', n - 3) ||
			    memmem(p + 3, n - 3, "/..", 3))
				return -EINVAL;
			memcpy(out, p + 3, n - 3);
			out[n - 3] = '\0';
			return 0;
		}
		p += n + 1;
	}
	return -ENOENT;
}

static int cgroup2_root(void)
{
	static const char *const roots[] = {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"};

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(roots); i++) {
		struct statfs sf;
		int fd = open(roots[i], O_PATH | O_DIRECTORY | O_CLOEXEC);

		if (fd < 0)
			continue;
		if (fstatfs(fd, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
			return fd;
		close(fd);
	}
	return -ENOENT;
}

/* The id of the unified cgroup a /proc/PID/cgroup file names, under root (cgroup2_root's). */
static int id_of(int root, const char *proc, uint64_t *out, struct hezo_error **err)
{
	_cleanup_free_ char *buf = NULL;
	char path[4096];
	struct stat st;
	size_t len;
	int r;

	r = hezo_read_file_at(AT_FDCWD, proc, 1 << 16, &buf, &len, err);
	if (r < 0)
		return r;
	r = hezo_cgroup2_path(buf, len, path, sizeof(path));
	if (r < 0)
		return hezo_error_set(err, -r, "%s: no cgroup v2 path", proc);
	/* The id of a cgroup is its directory's inode number in cgroupfs. */
	if (fstatat(root, path[1] ? path + 1 : ".", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return hezo_error_set_errno(err, errno, "cgroup %s", path);
	*out = (uint64_t)st.st_ino;
	return 0;
}

int hezo_cgroup_id(int pid, uint64_t *out, struct hezo_error **err)
{
	_cleanup_close_ int root = cgroup2_root();
	char proc[64];

	*out = 0;
	if (root < 0)
		return hezo_error_set(err, ENOENT, "no cgroup v2 hierarchy mounted");
	snprintf(proc, sizeof(proc), "/proc/%d/cgroup", pid);
	return id_of(root, proc, out, err);
}

bool hezo_cgroup_id_in_use(uint64_t id)
{
	_cleanup_close_ int root = cgroup2_root();
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (root < 0 || !(d = opendir("/proc")))
		return false;
	while (!found && (de = readdir(d))) {
		char proc[300];
		uint64_t cg = 0;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(proc, sizeof(proc), "/proc/%s/cgroup", de->d_name);
		found = id_of(root, proc, &cg, NULL) == 0 && cg == id;
	}
	closedir(d);
	return found;
}
