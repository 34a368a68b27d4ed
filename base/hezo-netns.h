/* Namespaces as /proc shows them: which tasks (processes and their threads) are in one. */
#ifndef HEZO_NETNS_H
#define HEZO_NETNS_H

#include <stdbool.h>
#include <sys/types.h>

#include "hezo-error.h"

/*
 * Call fn for every task (thread) of every process other than the caller whose
 * /proc/PID/task/TID/ns/KIND (kind: "net", "ipc", "uts", "pid", "mnt", "user", "cgroup", "time")
 * is the namespace nsfd names, compared by nsfs inode: a thread can be in another namespace than
 * its process's leader (setns or unshare from one thread), so every task counts. Tasks that are
 * gone meanwhile, or that root may not inspect (a security module's own agent, this machine's
 * PID 1), are skipped: a container's processes are always visible to the runtime's root. A
 * non-zero return of fn stops the scan and is returned; -errno (with err) when /proc or a live
 * process's task list cannot be read.
 */
int hezo_ns_foreach_task(int nsfd, const char *kind, int (*fn)(pid_t pid, pid_t tid, void *data),
			 void *data, struct hezo_error **err);
/* Whether a task of any process but the caller is in it. On error *used is true (cannot tell). */
int hezo_ns_in_use(int nsfd, const char *kind, bool *used, struct hezo_error **err);
/* The same for a network namespace. */
int hezo_netns_in_use(int nsfd, bool *used, struct hezo_error **err);

#endif
