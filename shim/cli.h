/*
 * The shim's command line, parsed the way runc's parser (urfave/cli over Go's flag package) reads
 * it: the global options, the verbs' flag tables, the parser and the ID rule. Pure functions of
 * argv so every form the engines send can be unit-tested.
 */
#ifndef SHIM_CLI_H
#define SHIM_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "hezo-error.h"
#include "hezo-id.h"
#include "hezo-json.h"
#include "hezo-strv.h"

enum shim_log_format {
	SHIM_LOG_TEXT,
	SHIM_LOG_JSON,
};

/* runc's global options (before the verb) plus ours. Strings point into argv. */
struct shim_globals {
	const char *root;
	const char *log;
	const char *log_format;
	const char *criu;
	const char *rootless;
	const char *debug;	    /* NULL: not given; "true" for a bare flag; else the =value */
	const char *systemd_cgroup; /* same */
	const char *project;	    /* --hezo-project: ours, never handed on */
	char *root_canon; /* --root as settled (record.c shim_root_settle); root points at it */
	enum shim_log_format log_fmt;
	bool help, version;
	struct hezo_strv unknown; /* unknown global flags, verbatim, in order */
	int verb;		  /* index of the verb in argv; argc when there is none */
};

/* Parse argv[1..] up to the verb. On error g still holds what was read (the log settings). */
int shim_parse_globals(int argc, char **argv, struct shim_globals *g, struct hezo_error **err);
void shim_globals_done(struct shim_globals *g);
/*
 * A shim run as `hezo-shim@NAME` (the link `project create` registers with containerd and
 * podman) is project NAME's, as with --hezo-project NAME; both naming different projects is
 * refused. Called by shim_parse_globals.
 */
int shim_project_from_argv0(const char *argv0, struct shim_globals *g, struct hezo_error **err);
#define _cleanup_globals_ _cleanup_(shim_globals_done)

/* Go's strconv.ParseBool: 1 t T TRUE true True 0 f F FALSE false False. */
int shim_parse_bool(const char *s, bool *out);

/* One flag a verb understands. */
struct shim_flag {
	const char *name; /* long name without dashes */
	char alias;	  /* one-letter alias, 0 if none */
	bool value;	  /* takes a value (--x v or --x=v); otherwise a bool (--x or --x=true) */
};

struct shim_verb_spec {
	const char *verb;
	const struct shim_flag *flags; /* terminated by a NULL name */
	/* Flags end at the first positional (exec, ps: what follows the ID is the command). */
	bool stop_at_positional;
	/* Unknown flags are errors: the shim must understand the whole call (create, exec, ...). */
	bool strict;
};

/* The table entry for verb, or the generic entry for a verb runc does not have. */
const struct shim_verb_spec *shim_verb_spec(const char *verb);

/* One parsed item of a verb's arguments. */
struct shim_opt {
	const struct shim_flag *flag; /* NULL: a positional argument (or an unknown flag) */
	const char *value;	      /* flag value (NULL for a bare bool), or the positional */
	bool unknown_flag;	      /* looked like a flag the table does not know */
	int first, count;	      /* argv[first .. first+count) holds it */
};

struct shim_args {
	struct shim_opt *opts;
	size_t n;
	size_t npos;	/* positionals */
	bool help;	/* -h / --help seen among the flags */
	int positional; /* argv index of the first positional (argc when none) */
};

/* Parse the verb's arguments argv[0..argc) (argv[0] is the first word after the verb). */
int shim_parse_args(const struct shim_verb_spec *vs, int argc, char **argv, struct shim_args *out,
		    struct hezo_error **err);
void shim_args_done(struct shim_args *a);
#define _cleanup_args_ _cleanup_(shim_args_done)
/* Push the words of argv that hold o (the flag and its value, or the positional). */
int shim_args_push_opt(struct hezo_strv *out, const struct shim_opt *o, char **argv);
/* Last value given for flag name (Go: the last one wins); NULL when absent. A bare bool gives "".
 */
const char *shim_args_get(const struct shim_args *a, const char *name);
/* Bool flag name: given and true? (a bad value counts as given: the backend will reject it) */
bool shim_args_bool(const struct shim_args *a, const char *name);
/* i-th positional, NULL past the end. */
const char *shim_args_positional(const struct shim_args *a, size_t i);

/* Container IDs by the one rule (base/hezo-id.h): the hook and proxyd take every id the shim does.
 */
#define SHIM_ID_MAX HEZO_ID_MAX
int shim_validate_id(const char *id, struct hezo_error **err);

#endif
