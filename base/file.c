/* Bounded file reads and atomic file replacement. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "hezo-file.h"

int hezo_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int hezo_read_fd(int fd, size_t max, char **out, size_t *len, struct hezo_error **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t size = 0, alloc = 0;

	for (;;) {
		ssize_t n;

		if (alloc - size < 4096) {
			size_t want = alloc ? alloc * 2 : 65536;
			char *nbuf;
			if (want > max + 2)
				want = max + 2;
			if (want <= size + 1)
				return hezo_error_set(err, EFBIG, "larger than %zu bytes", max);
			nbuf = realloc(buf, want);
			if (!nbuf)
				return hezo_error_set(err, ENOMEM, "out of memory");
			buf = nbuf;
			alloc = want;
		}
		n = read(fd, buf + size, alloc - size - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return hezo_error_set_errno(err, errno, "read");
		}
		if (n == 0)
			break;
		size += (size_t)n;
		if (size > max)
			return hezo_error_set(err, EFBIG, "larger than %zu bytes", max);
	}
	if (!buf) {
		buf = malloc(1);
		if (!buf)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	buf[size] = '\0';
	*out = TAKE_PTR(buf);
	if (len)
		*len = size;
	return 0;
}

int hezo_read_file_at(int dirfd, const char *path, size_t max, char **out, size_t *len,
		      struct hezo_error **err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "open %s", path);
	if (fstat(fd, &st) < 0)
		return hezo_error_set_errno(err, errno, "stat %s", path);
	if (S_ISDIR(st.st_mode))
		return hezo_error_set(err, EISDIR, "%s is a directory", path);
	if (S_ISREG(st.st_mode) && (size_t)st.st_size > max)
		return hezo_error_set(err, EFBIG, "%s is larger than %zu bytes", path, max);
	r = hezo_read_fd(fd, max, out, len, err);
	if (r < 0)
		return hezo_error_prefix(err, "%s", path);
	return 0;
}

int hezo_read_regular_file_at(int dirfd, const char *path, size_t max, char **out, size_t *len,
			      struct hezo_error **err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	/* O_NONBLOCK: a FIFO must not hold the caller until someone writes into it. */
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "open %s", path);
	if (fstat(fd, &st) < 0)
		return hezo_error_set_errno(err, errno, "stat %s", path);
	if (!S_ISREG(st.st_mode))
		return hezo_error_set(err, EINVAL, "%s is not a regular file", path);
	if ((size_t)st.st_size > max)
		return hezo_error_set(err, EFBIG, "%s is larger than %zu bytes", path, max);
	r = hezo_read_fd(fd, max, out, len, err);
	if (r < 0)
		return hezo_error_prefix(err, "%s", path);
	return 0;
}

static int write_atomic(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
			bool sync, bool keep, struct hezo_error **err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_close_ int parent = -1;
	char tmp[4096];
	struct stat st;
	struct timespec ts;
	const char *slash = strrchr(name, '/');
	int r, keep_owner = 0;

	/* The temporary file sits next to the target so the rename is atomic. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (slash) {
		r = snprintf(tmp, sizeof(tmp), "%.*s/.%s.hezo-%d-%ld", (int)(slash - name), name,
			     slash + 1, (int)getpid(), (long)ts.tv_nsec);
	} else {
		r = snprintf(tmp, sizeof(tmp), ".%s.hezo-%d-%ld", name, (int)getpid(),
			     (long)ts.tv_nsec);
	}
	if (r < 0 || (size_t)r >= sizeof(tmp))
		return hezo_error_set(err, ENAMETOOLONG, "%s: name too long", name);

	if (keep && fstatat(dirfd, name, &st, 0) == 0) {
		mode = st.st_mode & 07777;
		keep_owner = 1;
	}

	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "create a temporary file for %s", name);
	r = hezo_write_all(fd, data, len);
	if (r < 0) {
		hezo_error_set_errno(err, -r, "write %s", name);
		goto fail;
	}
	if (keep_owner && fchown(fd, st.st_uid, st.st_gid) < 0 && errno != EPERM) {
		r = -errno;
		hezo_error_set_errno(err, -r, "chown %s", name);
		goto fail;
	}
	if (fchmod(fd, mode) < 0) {
		r = -errno;
		hezo_error_set_errno(err, -r, "chmod %s", name);
		goto fail;
	}
	if (sync && fsync(fd) < 0) {
		r = -errno;
		hezo_error_set_errno(err, -r, "fsync %s", name);
		goto fail;
	}
	if (close(TAKE_FD(fd)) < 0) {
		r = -errno;
		hezo_error_set_errno(err, -r, "close %s", name);
		goto fail;
	}
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		r = -errno;
		hezo_error_set_errno(err, -r, "rename %s to %s", tmp, name);
		goto fail;
	}
	/* Make the rename itself durable. */
	if (!sync)
		return 0;
	if (slash) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - name), name);
		parent = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else {
		parent = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (parent >= 0)
		(void)fsync(parent);
	return 0;

fail:
	(void)unlinkat(dirfd, tmp, 0);
	return r;
}

int hezo_write_file_atomic_at(int dirfd, const char *name, const void *data, size_t len,
			      mode_t mode, struct hezo_error **err)
{
	return write_atomic(dirfd, name, data, len, mode, true, true, err);
}

int hezo_write_private_file_at(int dirfd, const char *name, const void *data, size_t len,
			       struct hezo_error **err)
{
	return write_atomic(dirfd, name, data, len, 0600, true, false, err);
}

int hezo_write_state_file_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
			     struct hezo_error **err)
{
	return write_atomic(dirfd, name, data, len, mode, false, true, err);
}

int hezo_remove_dead_pid_files_at(int dir, const char *prefix, const char *tail, bool whole)
{
	size_t plen = strlen(prefix), tlen = strlen(tail);
	struct dirent *de;
	int fd, removed = 0;
	DIR *d;

	fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while ((de = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(de->d_name, prefix, plen) != 0)
			continue;
		pid = strtol(de->d_name + plen, &end, 10);
		if (pid <= 0 || (whole ? strcmp(end, tail) : strncmp(end, tail, tlen)) != 0)
			continue;
		/* A process that still runs owns its file; only the dead leave litter. */
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (unlinkat(dir, de->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

int hezo_clean_stale_temps_at(int dir, const char *name)
{
	char prefix[512];
	size_t plen;

	if (strchr(name, '/'))
		return 0;
	plen = (size_t)snprintf(prefix, sizeof(prefix), ".%s.hezo-", name);
	if (plen >= sizeof(prefix))
		return 0;
	return hezo_remove_dead_pid_files_at(dir, prefix, "-", false);
}

int hezo_mkdir_p(const char *path, mode_t parents, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, parents) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) == 0)
		return 0;
	if (errno != EEXIST)
		return -errno;
	/* Something by that name: only a directory will do. */
	struct stat st;

	if (stat(buf, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}
