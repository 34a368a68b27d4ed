/*
 * Backend adaptation in one place: what each backend (runsc, runc, crun) is called with. A table
 * per backend says which global flags and which verb flags it lacks and what it needs added.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"

/* Global flag handling for one backend. */
enum gmode {
	G_PASS, /* --name=value */
	G_DROP, /* the backend has no such flag; it only matters to runc-like tools */
	G_BOOL, /* the backend's flag is a bool: true/false pass, anything else ("auto") drops */
};

struct backend_verb_drop {
	const char *verb;
	const char *const *flags; /* NULL-terminated */
};

struct backend_desc {
	enum hezo_backend id;
	enum gmode rootless;
	const struct backend_verb_drop *drops; /* terminated by a NULL verb */
	/* The backend has no one-letter aliases (runc's -b, -d, -t ...): spell flags out. */
	bool long_flags;
	/* Only runc's verbs pass: the backend prints a page of usage for anything else. */
	bool runc_verbs_only;
	/* Global flags this backend needs from policy (NULL: none). */
	int (*extra_args)(const struct hezo_policy *p, struct hezo_strv *out);
};

static const char *const runsc_create_drop[] = {"no-pivot", "no-new-keyring", NULL};

static const struct backend_verb_drop runsc_drops[] = {
	{"create", runsc_create_drop},
	{"run", runsc_create_drop},
	{NULL, NULL},
};

static const struct backend_verb_drop no_drops[] = {{NULL, NULL}};

static int runsc_extra_args(const struct hezo_policy *p, struct hezo_strv *out)
{
	static const char *const net[] = {
		[HEZO_RUNSC_NET_HOST] = "host",
		[HEZO_RUNSC_NET_NONE] = "none",
		[HEZO_RUNSC_NET_SANDBOX] = "sandbox",
	};
	enum hezo_runsc_network n = hezo_policy_runsc_network(p);
	int r;

	/* Without --oci-seccomp runsc ignores linux.seccomp: the policy's profile must hold. */
	r = hezo_strv_push(out, "--oci-seccomp");
	if (r < 0)
		return r;
	if ((size_t)n >= HEZO_ARRAY_SIZE(net))
		return -EINVAL;
	/*
	 * The ssh agent is a host socket in a bind-mounted directory (shim/keys.c): the Sentry
	 * may connect to host sockets only with this. Creating them (--host-uds=create) stays off.
	 */
	if (hezo_policy_keys(p) && hezo_strv_push(out, "--host-uds=open") < 0)
		return -ENOMEM;
	return hezo_strv_pushf(out, "--network=%s", net[n]);
}

static const struct backend_desc backends[] = {
	{HEZO_BACKEND_RUNSC, G_BOOL, runsc_drops, true, true, runsc_extra_args},
	{HEZO_BACKEND_RUNC, G_PASS, no_drops, false, false, NULL},
	{HEZO_BACKEND_CRUN, G_PASS, no_drops, false, false, NULL},
};

static const struct backend_desc *desc(enum hezo_backend b)
{
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(backends); i++)
		if (backends[i].id == b)
			return &backends[i];
	return &backends[1];
}

void shim_target_done(struct shim_target *t)
{
	free(t->path);
	t->path = NULL;
	hezo_strv_done(&t->args);
}

int shim_target_from_policy(const struct hezo_policy *p, struct shim_target *t,
			    struct hezo_error **err)
{
	enum hezo_backend b = hezo_policy_backend(p);
	const char *path = hezo_policy_backend_path(p, b);
	const struct backend_desc *d = desc(b);
	struct stat st;
	int r;

	memset(t, 0, sizeof(*t));
	t->backend = b;
	/* access(X_OK) alone passes for root on a directory: want an executable regular file. */
	if (!path || stat(path, &st) < 0 || !S_ISREG(st.st_mode) || access(path, X_OK) < 0) {
		if (b == HEZO_BACKEND_RUNSC && hezo_policy_production(p))
			return hezo_error_set(err, ENOENT,
					      "gVisor runtime (runsc) not found at %s: gVisor is "
					      "required in production",
					      path ? path : "(no path)");
		return hezo_error_set(err, ENOENT, "backend %s not found or not executable at %s",
				      hezo_backend_name(b), path ? path : "(no path)");
	}
	t->path = strdup(path);
	if (!t->path)
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = hezo_strv_push_all(&t->args, hezo_policy_backend_args(p, b));
	if (r == 0 && d->extra_args)
		r = d->extra_args(p, &t->args);
	if (r < 0)
		return hezo_error_set(err, -r, "backend %s: cannot build its flags",
				      hezo_backend_name(b));
	return 0;
}

static int push_value(struct hezo_strv *out, enum gmode mode, const char *name, const char *v)
{
	bool b;

	if (!v)
		return 0;
	switch (mode) {
	case G_DROP:
		return 0;
	case G_BOOL:
		if (shim_parse_bool(v, &b) < 0)
			return 0;
		return hezo_strv_pushf(out, "--%s=%s", name, b ? "true" : "false");
	case G_PASS:
		break;
	}
	return hezo_strv_pushf(out, "--%s=%s", name, v);
}

static int push_bool(struct hezo_strv *out, const char *name, const char *v)
{
	if (!v)
		return 0;
	if (strcmp(v, "true") == 0)
		return hezo_strv_pushf(out, "--%s", name);
	return hezo_strv_pushf(out, "--%s=%s", name, v);
}

int shim_backend_globals(enum hezo_backend b, const struct shim_globals *g, struct hezo_strv *out,
			 struct hezo_error **err)
{
	const struct backend_desc *d = desc(b);
	int r = 0;

	/* The one-token --name=value form leaves no doubt about where the verb is. */
	r = r ?: push_bool(out, "debug", g->debug);
	r = r ?: push_value(out, G_PASS, "log", g->log);
	r = r ?: push_value(out, G_PASS, "log-format", g->log_format);
	r = r ?: push_value(out, G_PASS, "root", g->root);
	r = r ?: push_bool(out, "systemd-cgroup", g->systemd_cgroup);
	r = r ?: push_value(out, d->rootless, "rootless", g->rootless);
	if (r < 0)
		return hezo_error_set(err, -r, "out of memory");
	return 0;
}

/* A --systemd-cgroup token's value: 1 true, 0 false, -1 not that flag (or not a bool). */
static int systemd_token(const char *tok)
{
	const char *s = tok;
	bool b;

	if (s[0] != '-')
		return -1;
	s += s[1] == '-' ? 2 : 1;
	if (strncmp(s, "systemd-cgroup", 14) != 0)
		return -1;
	if (s[14] == '\0')
		return 1;
	if (s[14] != '=' || shim_parse_bool(s + 15, &b) < 0)
		return -1;
	return b;
}

bool shim_backend_systemd_cgroup(const struct shim_target *t, const struct shim_globals *g)
{
	bool on = false;
	bool b;

	/* Go's flag package: the last word wins; the caller's come after the policy's. */
	for (size_t i = 0; i < t->args.n; i++) {
		int v = systemd_token(t->args.v[i]);

		if (v >= 0)
			on = v;
	}
	if (g->systemd_cgroup && shim_parse_bool(g->systemd_cgroup, &b) == 0)
		on = b;
	return on;
}

static bool dropped(const struct backend_desc *d, const char *verb, const char *flag)
{
	for (const struct backend_verb_drop *v = d->drops; v->verb; v++) {
		if (strcmp(v->verb, verb) != 0)
			continue;
		for (const char *const *f = v->flags; *f; f++)
			if (strcmp(*f, flag) == 0)
				return true;
	}
	return false;
}

/* "-x", "--x", "-x=v" with a one-letter name. */
static bool is_alias(const char *tok)
{
	const char *s = tok + 1;

	if (*s == '-')
		s++;
	return s[0] && (s[1] == '\0' || s[1] == '=');
}

bool shim_backend_has_verb(enum hezo_backend b, const char *verb)
{
	return !desc(b)->runc_verbs_only || shim_verb_spec(verb)->verb != NULL ||
	       strcmp(verb, "spec") == 0;
}

int shim_backend_verb_args(enum hezo_backend b, const char *verb, int argc, char **argv,
			   struct hezo_strv *out, struct hezo_error **err)
{
	const struct backend_desc *d = desc(b);
	_cleanup_args_ struct shim_args a = {0};
	int r = 0;

	r = shim_parse_args(shim_verb_spec(verb), argc, argv, &a, err);
	if (r < 0)
		return r;
	for (size_t i = 0; r == 0 && i < a.n; i++) {
		const struct shim_opt *o = &a.opts[i];

		if (o->flag && dropped(d, verb, o->flag->name))
			continue;
		if (o->flag && d->long_flags && o->flag->alias && is_alias(argv[o->first])) {
			/* "-b X", "-b=X", "-d" become "--bundle X", "--bundle=X", "--detach" */
			const char *eq = strchr(argv[o->first], '=');

			r = hezo_strv_pushf(out, "--%s%s", o->flag->name, eq ? eq : "");
			if (r == 0 && o->count == 2)
				r = hezo_strv_push(out, argv[o->first + 1]);
			continue;
		}
		r = shim_args_push_opt(out, o, argv);
	}
	if (r < 0)
		return hezo_error_set(err, -r, "out of memory");
	return 0;
}

int shim_backend_argv(const struct shim_ctx *ctx, const struct shim_target *t, const char *verb,
		      int argc, char **argv, struct hezo_strv *out, struct hezo_error **err)
{
	size_t from;
	int r;

	if (hezo_strv_push(out, t->path) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < t->args.n; i++)
		if (hezo_strv_push(out, t->args.v[i]) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	r = shim_backend_globals(t->backend, &ctx->g, out, err);
	if (r < 0)
		return r;
	if (hezo_strv_push(out, verb) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	from = out->n;
	r = shim_backend_verb_args(t->backend, verb, argc, argv, out, err);
	/* runsc: the container's ID in a form it cannot read as a prefix of another's. */
	return r < 0 ? r : shim_runsc_name_argv(ctx, t, verb, out, from, err);
}

const char *const shim_backend_default_roots[] = {"/run/runc", "/run/runsc", "/var/run/runsc",
						  "/run/crun", NULL};

const char *shim_backend_default_root(const char *backend)
{
	if (backend && strcmp(backend, "runsc") == 0)
		return "/var/run/runsc";
	return backend && strcmp(backend, "crun") == 0 ? "/run/crun" : "/run/runc";
}
