/* Network namespaces as /proc shows them. */
#ifndef HEZO_NETNS_H
#define HEZO_NETNS_H

#include <stdbool.h>

#include "hezo-error.h"

/*
 * Whether a process other than the caller is in the namespace nsfd names: a scan of /proc comparing
 * each process's ns/net with nsfd's nsfs inode. Processes that are gone meanwhile, or that root
 * may not inspect (a security module's own agent), are skipped: a container's processes are always
 * visible to the runtime's root. On error *used is true (cannot tell) and -errno is returned.
 */
int hezo_netns_in_use(int nsfd, bool *used, struct hezo_error **err);

#endif
