/* File helpers: bounded reads and atomic replacement (temp file, fsync, rename). */
#ifndef HEZO_FILE_H
#define HEZO_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "hezo-error.h"

/*
 * Read all of path (relative to dirfd, or AT_FDCWD) into a NUL-terminated buffer.
 * Files larger than max bytes fail with -EFBIG.
 */
int hezo_read_file_at(int dirfd, const char *path, size_t max, char **out, size_t *len,
		      struct hezo_error **err);
/* The same, for a regular file only (a FIFO or a device is refused, never waited on). */
int hezo_read_regular_file_at(int dirfd, const char *path, size_t max, char **out, size_t *len,
			      struct hezo_error **err);

/* Read an already-open fd to EOF, same limits. Does not close fd. */
int hezo_read_fd(int fd, size_t max, char **out, size_t *len, struct hezo_error **err);

/*
 * Replace dirfd/name with data: write to a temporary file in the same directory, fsync it,
 * rename it over name and fsync the directory. On any failure the old file is untouched and the
 * temporary file is removed. mode is used when name does not exist yet; otherwise the old
 * file's mode and owner are kept.
 */
int hezo_write_file_atomic_at(int dirfd, const char *name, const void *data, size_t len,
			      mode_t mode, struct hezo_error **err);

/*
 * The same for a file of the writer's own: always mode 0600 and the writer's owner, whatever
 * dirfd/name was before (never looked at, so a symlink planted there is replaced, not followed).
 */
int hezo_write_private_file_at(int dirfd, const char *name, const void *data, size_t len,
			       struct hezo_error **err);

/*
 * The same as hezo_write_file_atomic_at, without the two fsync() calls: for runtime state that is
 * meaningless after a reboot (the shim's container records, proxyd's registrations, both under
 * /run). The rename still makes the replacement atomic for every reader and against a killed
 * writer; only a machine crash can lose it, and that takes the containers it describes with it.
 * Where /run is a disk filesystem each fsync is a real device wait.
 */
int hezo_write_state_file_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
			     struct hezo_error **err);

/*
 * Remove temporary files that hezo_write_file_atomic_at left next to dirfd/name when its writer
 * was killed (".NAME.hezo-PID-N" whose PID no longer runs). Returns how many were removed.
 */
int hezo_clean_stale_temps_at(int dirfd, const char *name);

/*
 * Remove the files in dirfd named PREFIX<pid>TAIL (whole) or PREFIX<pid>TAIL... (not whole) whose
 * pid no longer runs (kill says ESRCH): what a process left when it died. Returns how many.
 */
int hezo_remove_dead_pid_files_at(int dirfd, const char *prefix, const char *tail, bool whole);

/* write() all of buf, retrying on EINTR and short writes. Returns 0 or -errno. */
int hezo_write_all(int fd, const void *buf, size_t len);

/*
 * Make path and any missing parents (parents with mode parents, path itself with mode; the umask
 * applies). A directory already there is fine. -errno; -EINVAL for an empty or over-long path.
 */
int hezo_mkdir_p(const char *path, mode_t parents, mode_t mode);

#endif
