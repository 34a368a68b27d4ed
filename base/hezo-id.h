/* The container id rule the shim, the hook and proxyd share. */
#ifndef HEZO_ID_H
#define HEZO_ID_H

#include <stdbool.h>

/*
 * Longest id: every engine's ids fit with room to spare. Checked: Docker and podman (64 hex
 * digits), containerd's CRI plugin (64 hex), ctr (containerd identifiers: alphanumerics with
 * single '.', '_' or '-' between, at most 76), runc (any run of [A-Za-z0-9_+.-] but "." and
 * "..", no limit but the file name it becomes).
 */
#define HEZO_ID_MAX  128
#define HEZO_ID_RULE "1-128 characters of [A-Za-z0-9_+.-], not starting with '.' or '-'"

/*
 * runc's characters, at most HEZO_ID_MAX of them, and no leading '.' (the id names state files,
 * a hidden or ".." one is refused) or '-' (the id is an argument to the backend, where a leading
 * '-' reads as a flag).
 */
bool hezo_id_valid(const char *id);

/*
 * Is name (the last component of a cgroup path) an engine's name for container id's cgroup:
 * ID, libpod-ID, or docker-, libpod-, cri-containerd- or crio-ID.scope? The policy requires
 * a box's cgroupsPath to end so (policy/cgroups.c); proxyd's agent knows its box by it.
 */
bool hezo_cgroup_name_is_id(const char *name, const char *id);

#endif
