/* Namespaces as /proc shows them: which tasks (processes and their threads) are in one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-netns.h"

/* A /proc directory entry that is a decimal id, else 0. */
static long proc_id(const char *name)
{
	char *end;
	long id = strtol(name, &end, 10);

	return end == name || *end || id <= 0 ? 0 : id;
}

/*
 * The tasks of process pid in the namespace ns: each one's own /proc/PID/task/TID/ns/KIND, since
 * a thread can have joined another network, IPC, UTS, mount, cgroup or time namespace than its
 * leader (setns from one thread). 1 when fn stopped the scan (its value in *stop), 0 when done,
 * -errno when the live process's task list could not be read.
 */
/* What an openat or fstatat below /proc answers for a task that has gone or is not ours. */
static bool gone(int e)
{
	return e == ENOENT || e == ESRCH || e == EACCES;
}

static int scan_tasks(int procfd, long pid, const char *kind, const struct stat *ns,
		      int (*fn)(pid_t pid, pid_t tid, void *data), void *data, int *stop)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int fd;

	snprintf(path, sizeof(path), "%ld/task", pid);
	fd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* Gone meanwhile, or not ours to list (this machine's PID 1); anything else (out of
	 * descriptors or memory) would make a process look absent, so it fails the scan. */
	if (fd < 0)
		return gone(errno) ? 0 : -errno;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		close(fd);
		return -e;
	}
	for (errno = 0; (de = readdir(d)); errno = 0) {
		long tid = proc_id(de->d_name);
		struct stat st;

		if (!tid)
			continue;
		snprintf(path, sizeof(path), "%ld/ns/%s", tid, kind);
		/* Gone meanwhile, or not ours to inspect (this machine's PID 1): skipped. */
		if (fstatat(dirfd(d), path, &st, 0) < 0) {
			int e = errno;

			if (gone(e))
				continue;
			closedir(d);
			return -e;
		}
		if (st.st_dev == ns->st_dev && st.st_ino == ns->st_ino) {
			*stop = fn((pid_t)pid, (pid_t)tid, data);
			if (*stop != 0) {
				closedir(d);
				return 1;
			}
		}
	}
	if (errno) {
		int e = errno;

		closedir(d);
		snprintf(path, sizeof(path), "%ld", pid);
		/* A process that exits while its tasks are listed: nothing left to count. */
		return faccessat(procfd, path, F_OK, 0) < 0 ? 0 : -e;
	}
	closedir(d);
	return 0;
}

int hezo_ns_foreach_task(int nsfd, const char *kind, int (*fn)(pid_t pid, pid_t tid, void *data),
			 void *data, struct hezo_error **err)
{
	struct stat ns;
	struct dirent *de;
	pid_t self = getpid();
	DIR *d;
	int r = 0, stop = 0;

	if (!kind || !kind[0] || strchr(kind, '/'))
		return hezo_error_set(err, EINVAL, "namespace kind \"%s\"", kind ? kind : "");
	if (fstat(nsfd, &ns) < 0)
		return hezo_error_set_errno(err, errno, "%s namespace", kind);
	d = opendir("/proc");
	if (!d)
		return hezo_error_set_errno(err, errno, "/proc");
	for (errno = 0; (de = readdir(d)); errno = 0) {
		long pid = proc_id(de->d_name);

		if (!pid || pid == self)
			continue;
		r = scan_tasks(dirfd(d), pid, kind, &ns, fn, data, &stop);
		if (r < 0) {
			closedir(d);
			return hezo_error_set_errno(err, -r, "reading /proc/%ld/task", pid);
		}
		if (r > 0)
			break;
	}
	if (r == 0 && errno) {
		int e = errno;

		closedir(d);
		return hezo_error_set_errno(err, e, "reading /proc");
	}
	closedir(d);
	return stop;
}

static int found(pid_t pid, pid_t tid, void *data)
{
	return 1;
}

int hezo_ns_in_use(int nsfd, const char *kind, bool *used, struct hezo_error **err)
{
	int r;

	*used = true;
	r = hezo_ns_foreach_task(nsfd, kind, found, NULL, err);
	if (r < 0)
		return r;
	*used = r > 0;
	return 0;
}

int hezo_netns_in_use(int nsfd, bool *used, struct hezo_error **err)
{
	return hezo_ns_in_use(nsfd, "net", used, err);
}
