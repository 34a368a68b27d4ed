/*
 * Engine registration (`hezo-shim install/uninstall`), `hezo-shim doctor` and `hezo-shim policy`:
 * the verbs an admin runs by hand. The *_main functions print; the edit functions below are pure
 * so the unit tests can drive them on real configuration files without touching /etc.
 */
#ifndef HEZO_INSTALL_H
#define HEZO_INSTALL_H

#include <stdbool.h>
#include <stddef.h>

#include "hezo-error.h"
#include "hezo-json.h"

/* Verbs, called with argv[0] = the verb ("install", "uninstall", "doctor", "policy"). */
int hezo_install_main(int argc, char **argv);
int hezo_uninstall_main(int argc, char **argv);
int hezo_doctor_main(int argc, char **argv);
int hezo_policy_cmd_main(int argc, char **argv);

/*
 * `hezo-shim project`: live counts the boxes of a project that live now (the shim's records; the
 * admin library cannot read them), setting *first to one of their IDs (malloc'd) when any.
 */
struct hezo_project_env {
	int (*live)(void *data, const char *project, unsigned *count, char **first);
	void *data;
};
int hezo_project_main(int argc, char **argv, const struct hezo_project_env *env);

/* The name engines know us by in Docker's and podman's configuration. */
#define HEZO_INSTALL_DOCKER_RUNTIME "hezo-shim"
#define HEZO_INSTALL_PODMAN_RUNTIME "hezo-shim"
/* containerd's runtime name, which a Kubernetes RuntimeClass names as its handler. */
#define HEZO_INSTALL_CONTAINERD_RUNTIME "hezo"
/* The runc v2 shim's state root for our runtime, apart from runc's own. */
#define HEZO_INSTALL_CONTAINERD_ROOT "/run/hezo-shim/containerd-runc"

#define HEZO_INSTALL_BLOCK_BEGIN "# BEGIN hezo-shim"
#define HEZO_INSTALL_BLOCK_END	 "# END hezo-shim"

/*
 * daemon.json. old is the current file (exists = false: there is none; old is ignored). *out is
 * the new content, malloc'd, NUL-terminated; *changed is false when old already registers shim
 * (then *out is a copy of old). Invalid JSON fails naming the parse error.
 */
int hezo_install_docker_merge(const char *old, size_t len, bool exists, const char *shim,
			      char **out, size_t *outlen, bool *changed, struct hezo_error **err);

enum hezo_uninstall_action {
	HEZO_UNINSTALL_NOTHING,	       /* not registered: leave the file alone */
	HEZO_UNINSTALL_RESTORE_BACKUP, /* content is exactly what install wrote: put the backup back
					*/
	HEZO_UNINSTALL_DELETE,	       /* install created the file and nobody changed it since */
	HEZO_UNINSTALL_REWRITE,	       /* edited since install: drop only our entry, write *out */
};

/*
 * Decide how to undo hezo_install_docker_merge. backup (NULL if none) is daemon.json.hezo-backup.
 * For HEZO_UNINSTALL_REWRITE, *out holds the file without our entry.
 */
int hezo_install_docker_unmerge(const char *cur, size_t len, const char *backup, size_t backup_len,
				enum hezo_uninstall_action *action, char **out, size_t *outlen,
				struct hezo_error **err);

/*
 * A project's runtime in daemon.json (`project create`/`rm`): runtimes.NAME = entry, added as
 * text (the rest of the file keeps its bytes) and taken out the same way, so that the file is
 * byte for byte what it was before, whatever other entries came and went in between. add:
 * *changed false when the same entry is there already; another entry of that name is refused.
 * remove: *changed false when the entry is not there; *delete_file when only the file add
 * created is left ("{}").
 */
int hezo_install_docker_add_runtime(const char *old, size_t len, bool exists, const char *name,
				    const struct hezo_json *entry, char **out, size_t *outlen,
				    bool *changed, struct hezo_error **err);
int hezo_install_docker_remove_runtime(const char *cur, size_t len, const char *name,
				       const struct hezo_json *entry, char **out, size_t *outlen,
				       bool *changed, bool *delete_file, struct hezo_error **err);

/*
 * A project's CRI runtime in containerd's config.toml, in a block of its own
 * ("# BEGIN hezo-project NAME"); a file without "version = 2" gets it in a shared block that
 * goes with the last project block. remove gives back the bytes there were before add.
 */
int hezo_install_containerd_project_add(const char *old, size_t len, bool exists,
					const char *runtime, const char *binary, char **out,
					size_t *outlen, bool *changed, struct hezo_error **err);
int hezo_install_containerd_project_remove(const char *cur, size_t len, const char *runtime,
					   char **out, size_t *outlen, bool *changed,
					   bool *delete_file, struct hezo_error **err);

/*
 * containerd config.toml (version 2): append our runtime table in a delimited block. Refuses a
 * version 1 file and one that already defines a `hezo` runtime outside our block. *changed is
 * false when our block is already there.
 */
int hezo_install_containerd_add(const char *old, size_t len, bool exists, const char *shim,
				char **out, size_t *outlen, bool *changed, struct hezo_error **err);

/*
 * podman containers.conf: our runtime in [engine.runtimes] and its name in
 * runtime_supports_json, each inside an existing table when the file has one (TOML forbids a
 * second definition), else in new tables appended at the end.
 */
int hezo_install_podman_add(const char *old, size_t len, bool exists, const char *shim, char **out,
			    size_t *outlen, bool *changed, struct hezo_error **err);

/*
 * Remove every block hezo_install_*_add inserted, restoring the bytes around them exactly.
 * *delete_file is set when the install created the file. *changed is false without blocks.
 */
int hezo_install_blocks_remove(const char *cur, size_t len, char **out, size_t *outlen,
			       bool *changed, bool *delete_file, struct hezo_error **err);

/* Is there one of our blocks in this TOML text? */
bool hezo_install_blocks_present(const char *cur, size_t len);

/*
 * The release date of a runsc from the first line of `runsc --version` ("runsc version
 * 0.0~20240729.0" as Debian builds it, "runsc version release-20240729.0" upstream), as YYYYMMDD;
 * -EINVAL when the line carries no date.
 */
long hezo_install_runsc_release(const char *version_output);

/* The 2022-12 release Debian 12 ships: blocking reads lost in host network mode (EAGAIN), about
 * 8 host tasks per sandboxed process. bookworm-backports' 2024-07 release has neither. */
#define HEZO_INSTALL_RUNSC_OLD	  20221219L
#define HEZO_INSTALL_RUNSC_TESTED 20240729L

#endif
