/* Network namespaces as /proc shows them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-netns.h"

int hezo_netns_in_use(int nsfd, bool *used, struct hezo_error **err)
{
	struct stat ns, st;
	struct dirent *de;
	pid_t self = getpid();
	DIR *d;

	*used = true;
	if (fstat(nsfd, &ns) < 0)
		return hezo_error_set_errno(err, errno, "network namespace");
	d = opendir("/proc");
	if (!d)
		return hezo_error_set_errno(err, errno, "/proc");
	for (errno = 0; (de = readdir(d)); errno = 0) {
		char path[300];
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (end == de->d_name || *end || pid <= 0 || pid == self)
			continue;
		snprintf(path, sizeof(path), "%s/ns/net", de->d_name);
		if (fstatat(dirfd(d), path, &st, 0) < 0)
			continue;
		if (st.st_dev == ns.st_dev && st.st_ino == ns.st_ino) {
			closedir(d);
			return 0;
		}
	}
	if (errno) {
		int e = errno;

		closedir(d);
		return hezo_error_set_errno(err, e, "reading /proc");
	}
	closedir(d);
	*used = false;
	return 0;
}
