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
int shim_record_remove(const struct shim_ctx *ctx, const char *id);
int shim_record_target(const struct hezo_json *rec, struct shim_target *t, struct hezo_error **err);
/* The per-container policy again: base + the record's project hint + its annotations. */
int shim_record_policy(const struct shim_ctx *ctx, const struct hezo_json *rec,
		       struct hezo_policy **out, struct hezo_error **err);

/* run.c: hand over to the backend. */
/* execve argv[0]; returns only on failure (-errno, err filled). */
int shim_exec(struct shim_ctx *ctx, struct shim_argv *argv, struct hezo_error **err);
/* fork + execve + wait, forwarding SIGTERM/SIGINT/SIGHUP/SIGQUIT; returns the exit status. */
int shim_spawn_wait(struct shim_ctx *ctx, struct shim_argv *argv, struct hezo_error **err);
/* Resolve the target of a non-create verb for container id (may be NULL: no container). */
int shim_resolve(struct shim_ctx *ctx, const char *id, struct shim_target *t,
		 struct hezo_json **rec, struct hezo_error **err);
/* Target and per-container policy for a container that already exists (exec, update). */
int shim_resolve_policy(struct shim_ctx *ctx, const char *id, struct shim_target *t,
			struct hezo_policy **p, struct hezo_error **err);
int shim_load_policy(const struct shim_ctx *ctx, struct hezo_policy **out, struct hezo_error **err);

/* Verb handlers: argv[0..argc) are the words after the verb. Return the exit status. */
int shim_cmd_create(struct shim_ctx *ctx, const char *verb, int argc, char **argv);
int shim_cmd_exec(struct shim_ctx *ctx, const char *verb, int argc, char **argv);
int shim_cmd_update(struct shim_ctx *ctx, const char *verb, int argc, char **argv);
int shim_cmd_delete(struct shim_ctx *ctx, const char *verb, int argc, char **argv);
/* Answer for a container nobody recorded when no backend can be chosen (see passthrough.c). */
int shim_cmd_unrecorded(struct shim_ctx *ctx, const char *verb, const char *id, bool force,
			struct hezo_error *why);
/* Admin helper verbs: never reach a backend. */
int shim_cmd_passthrough(struct shim_ctx *ctx, const char *verb, int argc, char **argv);

#endif
