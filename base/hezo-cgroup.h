/* A process's cgroup in the unified hierarchy (cgroup.c). */
#ifndef HEZO_CGROUP_H
#define HEZO_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hezo-error.h"

/* The unified hierarchy's path in a /proc/PID/cgroup text ("0::PATH" line) into out. -ENOENT:
 * none; -EINVAL: too long, or outside the reader's cgroup namespace. */
int hezo_cgroup2_path(const char *buf, size_t len, char *out, size_t size);
/* The cgroup v2 id of process pid's cgroup (its directory's inode in cgroupfs). */
int hezo_cgroup_id(int pid, uint64_t *out, struct hezo_error **err);
/* Is a process in the unified cgroup of this id? (reads every /proc/PID/cgroup) */
bool hezo_cgroup_id_in_use(uint64_t id);

#endif
