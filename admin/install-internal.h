/* Helpers shared by the install, doctor and policy verbs (not part of the library's API). */
#ifndef HEZO_INSTALL_INTERNAL_H
#define HEZO_INSTALL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "hezo-error.h"

/* Largest engine configuration file we read (containers.conf is ~30 kB). */
#define HEZO_INSTALL_MAX_CONFIG (4u << 20)

/* Read path; a missing file is not an error (*exists = false, *out = NULL). */
int hezo_install_read_optional(const char *path, char **out, size_t *len, bool *exists,
			       struct hezo_error **err);

/*
 * Run argv (argv[0] searched in PATH) with stdin from /dev/null, collect stdout and stderr
 * (up to 64 kB) into *out. Returns the exit status (0-255), 128+signal, or -errno if it could not
 * be started. Kills the child after timeout_ms.
 */
int hezo_install_run(const char *const *argv, int timeout_ms, char **out);

/* First executable named name in PATH (or name itself when it contains '/'); NULL if none. */
char *hezo_install_which(const char *name);

/* The default shim path: this executable when it is hezo-shim, else the installed one. */
char *hezo_install_default_shim(void);

/* SIGHUP to the dockerd of pidfile (NULL: /var/run/docker.pid), saying what it did. */
bool hezo_install_reload_docker(const char *pidfile);
/* Is text a JSON object with a top-level "runtimes"? */
bool hezo_install_has_runtimes(const char *text, size_t len);
/*
 * Before daemon.json at path loses its "runtimes" (or goes), show dockerd an empty one and wait
 * until it has read it: dockerd 20.10 keeps the runtimes it had when a reload finds none.
 */
void hezo_install_docker_drop_runtimes(const char *path, const char *pidfile);
/* `containerd config dump` of text: it reads and sees runtime (0), else -EINVAL with err. */
int hezo_install_containerd_check(const char *text, size_t len, const char *runtime,
				  struct hezo_error **err);

#endif
