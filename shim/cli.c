/* Command-line parsing with runc's rules (Go flag syntax, per-verb flag tables); no I/O here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hezo-log.h"

int shim_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(yes); i++) {
		if (strcmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * Split a flag token as Go's flag package does: one or two dashes, then NAME or NAME=VALUE.
 * Returns 0 and the name (length) and value (NULL without '='), -EINVAL for bad syntax such as
 * "---x" or "-=x".
 */
static int split_flag(const char *tok, const char **name, size_t *namelen, const char **value)
{
	const char *s = tok + 1;
	const char *eq;

	if (*s == '-')
		s++;
	if (*s == '\0' || *s == '-' || *s == '=')
		return -EINVAL;
	eq = strchr(s, '=');
	*name = s;
	*namelen = eq ? (size_t)(eq - s) : strlen(s);
	*value = eq ? eq + 1 : NULL;
	return 0;
}

static bool name_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && strncmp(name, want, len) == 0;
}

enum gflag {
	G_ROOT,
	G_LOG,
	G_LOG_FORMAT,
	G_CRIU,
	G_ROOTLESS,
	G_PROJECT,
	G_DEBUG,
	G_SYSTEMD,
	G_HELP,
	G_VERSION,
};

static const struct {
	const char *name;
	enum gflag id;
	bool value;
} global_flags[] = {
	{"root", G_ROOT, true},
	{"log", G_LOG, true},
	{"log-format", G_LOG_FORMAT, true},
	{"criu", G_CRIU, true},
	{"rootless", G_ROOTLESS, true},
	{"hezo-project", G_PROJECT, true},
	{"debug", G_DEBUG, false},
	{"systemd-cgroup", G_SYSTEMD, false},
	{"help", G_HELP, false},
	{"h", G_HELP, false},
	{"version", G_VERSION, false},
	{"v", G_VERSION, false},
};

int shim_parse_globals(int argc, char **argv, struct shim_globals *g, struct hezo_error **err)
{
	int i;

	memset(g, 0, sizeof(*g));
	g->log_fmt = SHIM_LOG_TEXT;
	for (i = 1; i < argc; i++) {
		const char *tok = argv[i], *name, *value;
		size_t len, k;
		bool b = false;

		if (strcmp(tok, "--") == 0) {
			i++;
			break;
		}
		if (tok[0] != '-' || tok[1] == '\0')
			break;
		if (split_flag(tok, &name, &len, &value) < 0) {
			g->verb = argc;
			return hezo_error_set(err, EINVAL, "bad flag syntax: %s", tok);
		}
		for (k = 0; k < HEZO_ARRAY_SIZE(global_flags); k++)
			if (name_is(name, len, global_flags[k].name))
				break;
		if (k == HEZO_ARRAY_SIZE(global_flags)) {
			/* Someone else's flag (a backend's own): hand it on verbatim. */
			if (hezo_strv_push(&g->unknown, tok) < 0)
				return hezo_error_set(err, ENOMEM, "out of memory");
			continue;
		}
		if (global_flags[k].value) {
			if (!value) {
				if (i + 1 >= argc) {
					g->verb = argc;
					return hezo_error_set(err, EINVAL,
							      "flag needs an argument: %s", tok);
				}
				value = argv[++i];
			}
		} else if (value) {
			if (shim_parse_bool(value, &b) < 0) {
				g->verb = argc;
				return hezo_error_set(err, EINVAL,
						      "invalid boolean value \"%s\" for flag %.*s",
						      value, (int)len, name);
			}
		} else {
			value = "true";
			b = true;
		}
		switch (global_flags[k].id) {
		case G_ROOT:
			g->root = value;
			break;
		case G_LOG:
			g->log = value;
			break;
		case G_LOG_FORMAT:
			g->log_format = value;
			if (strcmp(value, "json") == 0 || strcmp(value, "json-k8s") == 0)
				g->log_fmt = SHIM_LOG_JSON;
			else if (strcmp(value, "text") == 0)
				g->log_fmt = SHIM_LOG_TEXT;
			else {
				g->verb = argc;
				return hezo_error_set(err, EINVAL,
						      "unknown log-format \"%s\" (text or json)",
						      value);
			}
			break;
		case G_CRIU:
			g->criu = value;
			break;
		case G_ROOTLESS:
			g->rootless = value;
			break;
		case G_PROJECT:
			/* The admin's wrapper gives it first; a caller's flag after it must not
			 * win. */
			if (g->project) {
				g->verb = argc;
				return hezo_error_set(err, EINVAL,
						      "--hezo-project given twice (\"%.64s\", then "
						      "\"%.64s\"): a container has one project",
						      g->project, value);
			}
			g->project = value;
			break;
		case G_DEBUG:
			g->debug = value;
			break;
		case G_SYSTEMD:
			g->systemd_cgroup = value;
			break;
		case G_HELP:
			g->help = b;
			break;
		case G_VERSION:
			g->version = b;
			break;
		}
	}
	g->verb = i;
	return shim_project_from_argv0(argv[0], g, err);
}

int shim_project_from_argv0(const char *argv0, struct shim_globals *g, struct hezo_error **err)
{
	const char *base = argv0 ? strrchr(argv0, '/') : NULL, *at;

	base = base ? base + 1 : argv0;
	/*
	 * containerd's runc shim and podman run a runtime binary with no arguments of the admin's:
	 * the link `hezo-shim@NAME` that `project create` makes says the project instead. Whoever
	 * runs the shim chooses its argv[0] as freely as its flags, so this is the same word.
	 */
	if (!base || strncmp(base, "hezo-shim@", 10) != 0)
		return 0;
	at = base + 10;
	if (g->project && strcmp(g->project, at) != 0)
		return hezo_error_set(err, EINVAL,
				      "runtime %.80s is project \"%.64s\"'s, but --hezo-project "
				      "says \"%.64s\": a container has one project",
				      base, at, g->project);
	g->project = at;
	return 0;
}

void shim_globals_done(struct shim_globals *g)
{
	hezo_strv_done(&g->unknown);
	free(g->root_canon);
	g->root_canon = NULL;
}

/* Per-verb flag tables: runc 1.1's, plus flags newer runc and crun add (--pidfd-socket). */
#define V(n, a)                                                                                    \
	{                                                                                          \
		n, a, true                                                                         \
	}
#define B(n, a)                                                                                    \
	{                                                                                          \
		n, a, false                                                                        \
	}
#define END                                                                                        \
	{                                                                                          \
		NULL, 0, false                                                                     \
	}

static const struct shim_flag create_flags[] = {
	V("bundle", 'b'),	V("console-socket", 0), V("pid-file", 0),     B("no-pivot", 0),
	B("no-new-keyring", 0), V("preserve-fds", 0),	V("pidfd-socket", 0), END,
};

static const struct shim_flag run_flags[] = {
	V("bundle", 'b'),
	V("console-socket", 0),
	V("pid-file", 0),
	B("no-pivot", 0),
	B("no-new-keyring", 0),
	V("preserve-fds", 0),
	V("pidfd-socket", 0),
	B("detach", 'd'),
	B("keep", 0),
	B("no-subreaper", 0),
	END,
};

static const struct shim_flag exec_flags[] = {
	V("console-socket", 0), V("cwd", 0),	      V("env", 'e'),
	B("tty", 't'),		V("user", 'u'),	      V("additional-gids", 'g'),
	V("process", 'p'),	B("detach", 'd'),     V("pid-file", 0),
	V("process-label", 0),	V("apparmor", 0),     B("no-new-privs", 0),
	V("cap", 'c'),		V("preserve-fds", 0), V("cgroup", 0),
	B("ignore-paused", 0),	V("pidfd-socket", 0), END,
};

static const struct shim_flag update_flags[] = {
	V("resources", 'r'),
	V("blkio-weight", 0),
	V("cpu-period", 0),
	V("cpu-quota", 0),
	V("cpu-share", 0),
	V("cpu-shares", 0),
	V("cpu-rt-period", 0),
	V("cpu-rt-runtime", 0),
	V("cpuset-cpus", 0),
	V("cpuset-mems", 0),
	V("memory", 0),
	V("memory-reservation", 0),
	V("memory-swap", 0),
	V("kernel-memory", 0),
	V("kernel-memory-tcp", 0),
	V("pids-limit", 0),
	V("l3-cache-schema", 0),
	V("mem-bw-schema", 0),
	END,
};

static const struct shim_flag kill_flags[] = {B("all", 'a'), END};
static const struct shim_flag delete_flags[] = {B("force", 'f'), END};
/* -q, --no-trunc and --json are for the list of every box (no ID): runc's ps has none of them. */
static const struct shim_flag ps_flags[] = {V("format", 'f'), B("quiet", 'q'), B("no-trunc", 0),
					    B("json", 0), END};
static const struct shim_flag stats_flags[] = {B("no-stream", 0), V("format", 'f'),
					       V("interval", 0), END};
static const struct shim_flag list_flags[] = {V("format", 'f'), B("quiet", 'q'), END};
static const struct shim_flag events_flags[] = {V("interval", 0), B("stats", 0), END};
static const struct shim_flag no_flags[] = {END};

static const struct shim_verb_spec verbs[] = {
	{"create", create_flags, false, true}, {"run", run_flags, false, true},
	{"exec", exec_flags, true, true},      {"update", update_flags, false, true},
	{"start", no_flags, false, false},     {"state", no_flags, false, false},
	{"kill", kill_flags, false, false},    {"delete", delete_flags, false, false},
	{"ps", ps_flags, true, false},	       {"pause", no_flags, false, false},
	{"resume", no_flags, false, false},    {"events", events_flags, false, false},
	{"features", no_flags, false, false},  {"list", list_flags, false, false},
	{"stats", stats_flags, false, true},
};

static const struct shim_verb_spec generic_verb = {NULL, no_flags, false, false};

static const struct shim_flag help_flag = B("help", 'h');

const struct shim_verb_spec *shim_verb_spec(const char *verb)
{
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(verbs); i++)
		if (strcmp(verbs[i].verb, verb) == 0)
			return &verbs[i];
	return &generic_verb;
}

static const struct shim_flag *find_flag(const struct shim_verb_spec *vs, const char *name,
					 size_t len)
{
	if (name_is(name, len, "help") || name_is(name, len, "h"))
		return &help_flag;
	for (const struct shim_flag *f = vs->flags; f->name; f++) {
		if (name_is(name, len, f->name))
			return f;
		if (f->alias && len == 1 && name[0] == f->alias)
			return f;
	}
	return NULL;
}

static int add_opt(struct shim_args *a, const struct shim_opt *o)
{
	struct shim_opt *n = realloc(a->opts, (a->n + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	a->opts = n;
	a->opts[a->n++] = *o;
	return 0;
}

int shim_parse_args(const struct shim_verb_spec *vs, int argc, char **argv, struct shim_args *out,
		    struct hezo_error **err)
{
	const char *verb = vs->verb ? vs->verb : "command";
	bool flags_done = false;

	memset(out, 0, sizeof(*out));
	out->positional = argc;
	for (int i = 0; i < argc; i++) {
		struct shim_opt o = {.first = i, .count = 1};
		const char *tok = argv[i], *name, *value;
		size_t len;

		if (!flags_done && strcmp(tok, "--") == 0) {
			/* The separator: kept in argv, neither flag nor positional. */
			flags_done = true;
		} else if (flags_done || tok[0] != '-' || tok[1] == '\0') {
			o.value = tok;
			out->npos++;
			if (out->positional == argc)
				out->positional = i;
			if (vs->stop_at_positional)
				flags_done = true;
		} else if (split_flag(tok, &name, &len, &value) < 0) {
			if (vs->strict)
				return hezo_error_set(err, EINVAL, "%s: bad flag syntax: %s", verb,
						      tok);
			o.unknown_flag = true;
		} else if (!(o.flag = find_flag(vs, name, len))) {
			if (vs->strict)
				return hezo_error_set(err, EINVAL,
						      "%s: flag provided but not defined: %s", verb,
						      tok);
			o.unknown_flag = true;
			o.value = value;
		} else if (o.flag->value) {
			if (!value) {
				if (i + 1 >= argc)
					return hezo_error_set(err, EINVAL,
							      "%s: flag needs an argument: %s",
							      verb, tok);
				value = argv[++i];
				o.count = 2;
			}
			o.value = value;
		} else {
			bool b = true;

			if (value && shim_parse_bool(value, &b) < 0 && vs->strict)
				return hezo_error_set(err, EINVAL,
						      "%s: invalid boolean value \"%s\" for %s",
						      verb, value, tok);
			o.value = value;
			if (o.flag == &help_flag && b)
				out->help = true;
		}
		if (add_opt(out, &o) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

void shim_args_done(struct shim_args *a)
{
	free(a->opts);
	a->opts = NULL;
	a->n = a->npos = 0;
}

int shim_args_push_opt(struct hezo_strv *out, const struct shim_opt *o, char **argv)
{
	int r = 0;

	for (int k = 0; r == 0 && k < o->count; k++)
		r = hezo_strv_push(out, argv[o->first + k]);
	return r;
}

const char *shim_args_get(const struct shim_args *a, const char *name)
{
	const char *v = NULL;

	for (size_t i = 0; i < a->n; i++)
		if (a->opts[i].flag && strcmp(a->opts[i].flag->name, name) == 0)
			v = a->opts[i].value ? a->opts[i].value : "";
	return v;
}

bool shim_args_bool(const struct shim_args *a, const char *name)
{
	const char *v = shim_args_get(a, name);
	bool b = true;

	if (!v)
		return false;
	if (*v && shim_parse_bool(v, &b) < 0)
		return true;
	return b;
}

const char *shim_args_positional(const struct shim_args *a, size_t i)
{
	for (size_t k = 0; k < a->n; k++) {
		if (a->opts[k].flag || a->opts[k].unknown_flag || !a->opts[k].value)
			continue;
		if (i-- == 0)
			return a->opts[k].value;
	}
	return NULL;
}

int shim_validate_id(const char *id, struct hezo_error **err)
{
	char shown[160];

	if (!id || !*id)
		return hezo_error_set(err, EINVAL, "container ID is missing");
	if (hezo_id_valid(id))
		return 0;
	if (strlen(id) > HEZO_ID_MAX)
		return hezo_error_set(err, EINVAL, "container ID is longer than %d characters",
				      HEZO_ID_MAX);
	hezo_json_escape(shown, sizeof(shown), id);
	return hezo_error_set(err, EINVAL, "container ID \"%s\" is not " HEZO_ID_RULE, shown);
}
