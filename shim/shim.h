/* Shared state and helpers of the hezo-shim program (one file per verb, as crun). */
#ifndef SHIM_H
#define SHIM_H

#include <stdbool.h>

#include "cli.h"
#include "hezo-error.h"
#include "hezo-json.h"
#include "hezo-policy.h"

struct shim_ctx {
	int argc;
	char **argv;
	struct shim_globals g;
	/* From the build, overridable by the shim's own environment (never by a bundle). */
	const char *policy_path;
	const char *state_dir;
	const char *hook_path;
	const char *proxyd_socket;
	int log_fd; /* --log, opened on first use; -1 until then */
};

/* log.c: one line per call, one write(); to --log when given, else stderr. */
void shim_log(struct shim_ctx *ctx, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool shim_debug(const struct shim_ctx *ctx);
/* Log err (or "unknown error") as the reason and return exit status 1. */
int shim_fail(struct shim_ctx *ctx, struct hezo_error *err);
/*
 * As shim_fail, and on stderr too: for verbs whose caller shows the runtime's output rather than
 * its --log (containerd's update).
 */
int shim_fail_stderr(struct shim_ctx *ctx, struct hezo_error *err);
int shim_failf(struct shim_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* backend.c: where a container's calls go and how they are adapted to that backend. */
struct shim_target {
	enum hezo_backend backend;
	char *path;
	struct shim_argv args; /* the backend's own global flags: policy's, then adaptation's */
};
void shim_target_done(struct shim_target *t);
/* Backend chosen by policy p: checks the binary is there and executable (fail closed). */
int shim_target_from_policy(const struct hezo_policy *p, struct shim_target *t,
			    struct hezo_error **err);
/* Global flags as the backend understands them (--hezo-* removed). */
int shim_backend_globals(enum hezo_backend b, const struct shim_globals *g, struct shim_argv *out,
			 struct hezo_error **err);
/* Is verb one the backend may be handed (runsc: runc's verbs only)? */
bool shim_backend_has_verb(enum hezo_backend b, const char *verb);
/* The verb's arguments with the flags this backend does not have removed. */
int shim_backend_verb_args(enum hezo_backend b, const char *verb, int argc, char **argv,
			   struct shim_argv *out, struct hezo_error **err);
/* [path, target args, globals, verb, verb args]. */
int shim_backend_argv(const struct shim_ctx *ctx, const struct shim_target *t, const char *verb,
		      int argc, char **argv, struct shim_argv *out, struct hezo_error **err);

/* record.c: which backend created a container, under STATE_DIR/<root key>/<id>.json. */
int shim_record_write(const struct shim_ctx *ctx, const char *id, const struct hezo_json *rec,
		      struct hezo_error **err);
/* 0 and *out when found, -ENOENT when there is no record; other errors fill err. */
int shim_record_read(const struct shim_ctx *ctx, const char *id, struct hezo_json **out,
		     struct hezo_error **err);
/* Removes the record and the container's private bundle (below). */
int shim_record_remove(const struct shim_ctx *ctx, const char *id);
/*
 * The bundle the backend is handed: STATE_DIR/<root key>/.bundles/<id>, mode 0700, of the
 * shim's uid, so nobody who can write the caller's bundle can change what the backend reads
 * after the shim checked it. Opens it and writes its path; -ENOENT when missing and not asked
 * to create it.
 */
#define SHIM_BUNDLE_CREATE 1 /* make it when missing */
#define SHIM_BUNDLE_FRESH  2 /* empty and new (create) */
int shim_bundle_open(const struct shim_ctx *ctx, const char *id, int flags, char *path, size_t size,
		     struct hezo_error **err);
/* Remove bundles whose record is gone (a shim killed between the two). Returns how many. */
int shim_bundle_tidy(const struct shim_ctx *ctx);
/* exec's clamped process files in a bundle: exec-<backend pid>.json. */
#define SHIM_EXEC_PREFIX "exec-"
/* Remove the process files whose backend no longer runs. Returns how many. */
int shim_bundle_tidy_execs(int bundle);
int shim_record_target(const struct hezo_json *rec, struct shim_target *t, struct hezo_error **err);
/* The per-container policy again: base + the record's project hint + its annotations. */
int shim_record_policy(const struct shim_ctx *ctx, const struct hezo_json *rec,
		       struct hezo_policy **out, struct hezo_error **err);

/*
 * owner.c: hezo_apply_env.ns_owner for create, data being the shim_ctx. A process belongs to a
 * container when it is in the cgroup (or below) that one of the state directory's records names.
 */
int shim_ns_owner(void *data, const char *kind, const char *path, char **owner,
		  struct hezo_error **err);

/* run.c: hand over to the backend. */
/* execve argv[0]; returns only on failure (-errno, err filled). */
int shim_exec(struct shim_ctx *ctx, struct shim_argv *argv, struct hezo_error **err);
/* fork + execve + wait, forwarding SIGTERM/SIGINT/SIGHUP/SIGQUIT; returns the exit status. */
int shim_spawn_wait(struct shim_ctx *ctx, struct shim_argv *argv, struct hezo_error **err);
/*
 * Run argv with stdin and stderr on /dev/null and collect its stdout (*out NUL-terminated).
 * Returns the exit status (>= 0), or -errno when it could not be run.
 */
int shim_spawn_capture(struct shim_ctx *ctx, struct shim_argv *argv, char **out, size_t *len,
		       struct hezo_error **err);
/* Resolve the target of a non-create verb for container id (may be NULL: no container). */
int shim_resolve(struct shim_ctx *ctx, const char *id, struct shim_target *t,
		 struct hezo_json **rec, struct hezo_error **err);
/* Target and per-container policy for a container that already exists (exec, update). */
int shim_resolve_policy(struct shim_ctx *ctx, const char *id, struct shim_target *t,
			struct hezo_policy **p, struct hezo_error **err);
int shim_load_policy(const struct shim_ctx *ctx, struct hezo_policy **out, struct hezo_error **err);

/*
 * runsc.c: what runsc lacks, done by the shim. A gVisor sandbox's own threads count against
 * pids.max: one running `sleep` used 38 here, `sh -c 'sleep; echo'` needed 56, and a limit of 32
 * failed at start with runsc's opaque "EOF". Below this floor the shim refuses.
 */
#define SHIM_RUNSC_MIN_PIDS 96
int shim_runsc_check_pids(const struct hezo_policy *p, int64_t limit, struct hezo_error **err);
/* After policy: pod app containers (CRI annotations), the pids floor, host-network guard. */
int shim_runsc_check_spec(const struct hezo_policy *p, const struct hezo_json *spec,
			  struct hezo_error **err);
/*
 * Host directory of controller for an OCI cgroupsPath: absolute paths and the systemd form
 * "slice:prefix:name" (cgroup v1 layout, root/controller/path). -EINVAL for relative paths or
 * "..", -ENOENT for none.
 */
int shim_cgroup_dir(const char *root, const char *cgroups_path, const char *controller, char *buf,
		    size_t size);
/* Write a clamped LinuxResources object into the cgroup v1 files under root. */
int shim_cgroup_update_v1(const char *root, const char *cgpath, const struct hezo_json *res,
			  struct hezo_error **err);
/* runsc state: status ("created", "running", "stopped", ...) and sandbox pid; -ENOENT: none. */
int shim_runsc_state(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		     char **status, long *pid, struct hezo_error **err);
/* runsc delete --force, quietly: kills the sandbox and gofer and removes runsc's state. */
int shim_runsc_destroy(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		       struct hezo_error **err);
/* JSON array of the container's host PIDs (its cgroup's processes, or the sandbox's pid). */
int shim_runsc_host_pids(struct shim_ctx *ctx, const struct shim_target *t,
			 const struct hezo_json *rec, const char *id, struct hezo_json **out,
			 struct hezo_error **err);
/* update by writing the sandbox's cgroup files (runsc has no update command). */
int shim_runsc_update(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		      const struct hezo_policy *p, const struct hezo_json *res,
		      struct hezo_error **err);

/*
 * runsc's exec starts processes without the container's seccomp profile: a static helper,
 * bind-mounted here, installs it (compiled to BPF at create) before it execs the command.
 */
#define SHIM_SECCOMP_EXEC_DEST "/dev/.hezo-seccomp-exec"
/* bpf.c: an OCI linux.seccomp object as a BPF program in hex (16 digits per instruction). */
int shim_seccomp_bpf(const struct hezo_json *seccomp, char **hex, struct hezo_error **err);
/* The helper's host path: $HEZO_SECCOMP_EXEC, next to the shim, or ../libexec/hezo/. */
int shim_runsc_exec_helper(char *buf, size_t size);
/* At create: compile the spec's profile (*hex, NULL without one) and mount the helper. */
int shim_runsc_prepare_exec(struct hezo_json *spec, char **hex, struct hezo_error **err);
/* At exec: [helper, hex, "--"] from the record, or a refusal when it has none. */
int shim_runsc_exec_prefix(const struct hezo_json *rec, const char *id, struct shim_argv *out,
			   struct hezo_error **err);

/* lifecycle.c: kill's signal is SIGKILL in one of the forms runc takes (9, KILL, SIGKILL). */
bool shim_signal_is_kill(const char *sig);

/* Verb handlers: argv[0..argc) are the words after the verb. Return the exit status. */
int shim_cmd_create(struct shim_ctx *ctx, const char *verb, int argc, char **argv);
int shim_cmd_exec(struct shim_ctx *ctx, const char *verb, int argc, char **argv);
int shim_cmd_update(struct shim_ctx *ctx, const char *verb, int argc, char **argv);
int shim_cmd_delete(struct shim_ctx *ctx, const char *verb, int argc, char **argv);
int shim_cmd_start(struct shim_ctx *ctx, const char *verb, int argc, char **argv);
int shim_cmd_kill(struct shim_ctx *ctx, const char *verb, int argc, char **argv);
int shim_cmd_ps(struct shim_ctx *ctx, const char *verb, int argc, char **argv);
int shim_cmd_features(struct shim_ctx *ctx, const char *verb, int argc, char **argv);
/* Answer for a container nobody recorded when no backend can be chosen (see passthrough.c). */
int shim_cmd_unrecorded(struct shim_ctx *ctx, const char *verb, const char *id, bool force,
			struct hezo_error *why);
/* Admin helper verbs: never reach a backend. */
int shim_cmd_passthrough(struct shim_ctx *ctx, const char *verb, int argc, char **argv);
int shim_cmd_inspect(struct shim_ctx *ctx, const char *verb, int argc, char **argv);

#endif
