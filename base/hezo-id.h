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

#endif
