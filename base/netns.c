/* Namespaces as /proc shows them: which processes are in one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-netns.h"

int hezo_ns_foreach_pid(int nsfd, const char *kind, int (*fn)(pid_t pid, void *data), void *data,
			struct hezo_error **err)
{
	struct stat ns, st;
	struct dirent *de;
	pid_t self = getpid();
	DIR *d;
	int r = 0;

	if (!kind || !kind[0] || strchr(kind, '/'))
		return hezo_error_set(err, EINVAL, "namespace kind \"%s\"", kind ? kind : "");
	if (fstat(nsfd, &ns) < 0)
		return hezo_error_set_errno(err, errno, "%s namespace", kind);
	d = opendir("/proc");
	if (!d)
		return hezo_error_set_errno(err, errno, "/proc");
	for (errno = 0; (de = readdir(d)); errno = 0) {
		char path[300];
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (end == de->d_name || *end || pid <= 0 || pid == self)
			continue;
		snprintf(path, sizeof(path), "%s/ns/%s", de->d_name, kind);
		/* Gone meanwhile, or not ours to inspect (this machine's PID 1): skipped. */
		if (fstatat(dirfd(d), path, &st, 0) < 0)
			continue;
		if (st.st_dev == ns.st_dev && st.st_ino == ns.st_ino) {
			r = fn((pid_t)pid, data);
			if (r != 0)
				break;
		}
	}
	if (r == 0 && errno) {
		int e = errno;

		closedir(d);
		return hezo_error_set_errno(err, e, "reading /proc");
	}
	closedir(d);
	return r;
}

static int found(pid_t pid, void *data)
{
	return 1;
}

int hezo_ns_in_use(int nsfd, const char *kind, bool *used, struct hezo_error **err)
{
	int r;

	*used = true;
	r = hezo_ns_foreach_pid(nsfd, kind, found, NULL, err);
	if (r < 0)
		return r;
	*used = r > 0;
	return 0;
}

int hezo_netns_in_use(int nsfd, bool *used, struct hezo_error **err)
{
	return hezo_ns_in_use(nsfd, "net", used, err);
}
