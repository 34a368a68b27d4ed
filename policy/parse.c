/* Reading the admin's policy file (docs/policy.md): strict parsing, validation of every value,
 * and the effective policy written back out as JSON. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-egress.h"
#include "hezo-file.h"
#include "policy-internal.h"

#define POLICY_MAX_BYTES (1024 * 1024)

static const char *const backend_names[HEZO_BACKEND_COUNT] = {
	[HEZO_BACKEND_RUNSC] = "runsc",
	[HEZO_BACKEND_RUNC] = "runc",
	[HEZO_BACKEND_CRUN] = "crun",
};

static const char *const backend_default_paths[HEZO_BACKEND_COUNT] = {
	[HEZO_BACKEND_RUNSC] = "/usr/bin/runsc",
	[HEZO_BACKEND_RUNC] = "/usr/sbin/runc",
	[HEZO_BACKEND_CRUN] = "/usr/bin/crun",
};

static const char *const default_engine_roots[] = {
	"/var/lib/docker/containers",  "/var/lib/containers/storage", "/run/containers/storage",
	"/var/run/containers/storage", "/var/lib/containerd",	      "/run/containerd",
};

/* Where engines put a container's cgroup: "/" is the top level (CRI's "/<id>"). */
static const char *const default_cgroup_parents[] = {
	"/",	     "/docker",		"/system.slice", "/machine.slice", "/libpod_parent",
	"/kubepods", "/kubepods.slice", "/default",	 "/k8s.io",
};

static const struct {
	const char *dest;
	uint64_t size;
} default_tmpfs[] = {
	{"/tmp", 64ULL << 20},
	{"/run", 16ULL << 20},
	{"/var/run", 16ULL << 20},
	{"/var/tmp", 16ULL << 20},
};

static const struct {
	const char *name;
	unsigned bit;
} host_ns_names[] = {
	{"pid", HEZO_NS_PID},	      {"ipc", HEZO_NS_IPC},	  {"uts", HEZO_NS_UTS},
	{"network", HEZO_NS_NETWORK}, {"cgroup", HEZO_NS_CGROUP},
};

const char *hezo_backend_name(enum hezo_backend b)
{
	if ((unsigned)b >= HEZO_BACKEND_COUNT)
		return "unknown";
	return backend_names[b];
}

int hezo_backend_from_name(const char *name, enum hezo_backend *out)
{
	for (int i = 0; name && i < HEZO_BACKEND_COUNT; i++) {
		if (strcmp(name, backend_names[i]) == 0) {
			*out = (enum hezo_backend)i;
			return 0;
		}
	}
	return -EINVAL;
}

void hezo_policy_free(struct hezo_policy *p)
{
	if (!p)
		return;
	for (int i = 0; i < HEZO_BACKEND_COUNT; i++) {
		free(p->backend_path[i]);
		hezo_strv_done(&p->backend_args[i]);
	}
	hezo_strv_done(&p->caps);
	for (size_t i = 0; i < p->ntmpfs; i++)
		free(p->tmpfs[i].dest);
	free(p->tmpfs);
	for (size_t i = 0; i < p->nsysctls; i++)
		free(p->sysctls[i].name);
	free(p->sysctls);
	free(p->seccomp_path);
	hezo_json_free(p->seccomp_profile);
	hezo_strv_done(&p->devices);
	hezo_strv_done(&p->allowed_sources);
	hezo_strv_done(&p->engine_roots);
	hezo_strv_done(&p->cgroup_parents);
	hezo_strv_done(&p->allowed_hooks);
	hezo_strv_done(&p->egress_allow);
	hezo_strv_done(&p->resolvers);
	hezo_strv_done(&p->allow_ranges);
	free(p->projects_dir);
	free(p->docker_pidfile);
	free(p->kubelet_root);
	hezo_policy_volumes_free(p);
	free(p->project);
	free(p);
}

static int tmpfs_add(struct hezo_policy *p, const char *dest, uint64_t size)
{
	struct hezo_policy_tmpfs *n;
	char *d = strdup(dest);

	if (!d)
		return -ENOMEM;
	n = realloc(p->tmpfs, (p->ntmpfs + 1) * sizeof(*n));
	if (!n) {
		free(d);
		return -ENOMEM;
	}
	p->tmpfs = n;
	p->tmpfs[p->ntmpfs].dest = d;
	p->tmpfs[p->ntmpfs].size = size;
	p->ntmpfs++;
	return 0;
}

static void tmpfs_clear(struct hezo_policy *p)
{
	for (size_t i = 0; i < p->ntmpfs; i++)
		free(p->tmpfs[i].dest);
	free(p->tmpfs);
	p->tmpfs = NULL;
	p->ntmpfs = 0;
}

static int sysctls_default(struct hezo_policy *p);

/* The documented defaults: the seeds' box. */
static int policy_new_default(struct hezo_policy **out)
{
	_cleanup_policy_ struct hezo_policy *p = calloc(1, sizeof(*p));
	int r = 0;

	if (!p)
		return -ENOMEM;
	p->production = true;
	p->backend = HEZO_BACKEND_RUNSC;
	p->allow_backends[HEZO_BACKEND_RUNSC] = true;
	for (int i = 0; i < HEZO_BACKEND_COUNT; i++) {
		p->backend_path[i] = strdup(backend_default_paths[i]);
		if (!p->backend_path[i] || hezo_strv_init(&p->backend_args[i]) < 0)
			return -ENOMEM;
	}
	p->runsc_network = HEZO_RUNSC_NET_HOST;
	p->no_new_privs = true;
	p->readonly_rootfs = true;
	p->tmpfs_max = 64ULL << 20;
	r = r ?: sysctls_default(p);
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(default_tmpfs); i++)
		r = r ?: tmpfs_add(p, default_tmpfs[i].dest, default_tmpfs[i].size);
	p->pids = 256;
	p->memory = 2ULL << 30;
	p->swap = 0;
	p->cpus_milli = 2000;
	p->cpu_shares = 1024;
	p->blkio_weight = 500;
	r = r ?: hezo_strv_init(&p->caps);
	r = r ?: hezo_strv_init(&p->devices);
	r = r ?: hezo_strv_init(&p->allowed_sources);
	r = r ?: hezo_strv_init(&p->engine_roots);
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(default_engine_roots); i++)
		r = r ?: hezo_strv_push(&p->engine_roots, default_engine_roots[i]);
	r = r ?: hezo_strv_init(&p->cgroup_parents) ?: hezo_strv_init(&p->allowed_hooks);
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(default_cgroup_parents); i++)
		r = r ?: hezo_strv_push(&p->cgroup_parents, default_cgroup_parents[i]);
	p->egress_mode = HEZO_EGRESS_PROXY;
	r = r ?: hezo_strv_init(&p->egress_allow);
	r = r ?: hezo_strv_init(&p->resolvers);
	r = r ?: hezo_strv_init(&p->allow_ranges);
	r = r ?: hezo_policy_volumes_default(p);
	if (r < 0)
		return r;
	p->projects_dir = strdup("/etc/hezo/projects");
	p->docker_pidfile = strdup("/var/run/docker.pid");
	p->kubelet_root = strdup("/var/lib/kubelet");
	if (!p->projects_dir || !p->docker_pidfile || !p->kubelet_root)
		return -ENOMEM;
	p->init = true;
	p->admission_wait = 300;
	*out = TAKE_PTR(p);
	return 0;
}

/* ---- parse context and messages ---- */

struct pctx {
	const char *name;
	bool project; /* a project file: restricted key set */
	struct hezo_error **err;
	/* policy check: every field error is kept here and parsing goes on to the next field */
	char **all;
	size_t nall;
	bool collect;
};

/*
 * In a loop over an object's keys: stop at the first error, or, when every error is being
 * collected (`hezo-shim policy check`), remember it and go on with the next key.
 */
#define NEXT_KEY_OR_FAIL(c, r, bad)                                                                \
	do {                                                                                       \
		if ((r) < 0) {                                                                     \
			if (!(c)->collect)                                                         \
				return (r);                                                        \
			(bad) = (r);                                                               \
		}                                                                                  \
	} while (0)

static int perr(struct pctx *c, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int perr(struct pctx *c, const char *field, const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return hezo_error_set(c->err, ENOMEM, "out of memory");
	if (c->collect) {
		char *line = NULL, **n;

		if (asprintf(&line, "policy %s: %s%s%s", c->name, field ? field : "",
			     field ? ": " : "", msg) < 0)
			return hezo_error_set(c->err, ENOMEM, "out of memory");
		n = realloc(c->all, (c->nall + 1) * sizeof(*n));
		if (!n) {
			free(line);
			return hezo_error_set(c->err, ENOMEM, "out of memory");
		}
		c->all = n;
		c->all[c->nall++] = line;
	}
	if (field)
		return hezo_error_set(c->err, EINVAL, "policy %s: %s: %s", c->name, field, msg);
	return hezo_error_set(c->err, EINVAL, "policy %s: %s", c->name, msg);
}

static int oom(struct pctx *c)
{
	return hezo_error_set(c->err, ENOMEM, "policy %s: out of memory", c->name);
}

/* Describe a JSON value for a message: strings quoted, numbers literal, else the type. */
static void describe(char *buf, size_t size, const struct hezo_json *v)
{
	if (v->type == HEZO_JSON_STRING)
		hezo_policy_quote(buf, size, v->str);
	else if (v->type == HEZO_JSON_NUMBER)
		snprintf(buf, size, "%.80s", v->str);
	else
		snprintf(buf, size, "%s", hezo_json_type_name(v->type));
}

static int expect_type(struct pctx *c, const char *field, const struct hezo_json *v,
		       enum hezo_json_type t)
{
	bool ok = v->type == t;

	if (t == HEZO_JSON_TRUE || t == HEZO_JSON_FALSE)
		ok = v->type == HEZO_JSON_TRUE || v->type == HEZO_JSON_FALSE;
	if (ok)
		return 0;
	return perr(c, field, "expected %s, got %s",
		    t == HEZO_JSON_OBJECT  ? "an object"
		    : t == HEZO_JSON_ARRAY ? "a list"
		    : t == HEZO_JSON_TRUE  ? "true or false"
					   : (t == HEZO_JSON_STRING ? "a string" : "a number"),
		    hezo_json_type_name(v->type));
}

/* ---- value syntax ---- */

/* Sizes: digits with an optional k/m/g suffix (powers of 1024). */
static int parse_size_text(const char *s, uint64_t *out)
{
	uint64_t n = 0, mult = 1;
	size_t i = 0;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	for (; isdigit((unsigned char)s[i]); i++) {
		if (n > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		n = n * 10 + (uint64_t)(s[i] - '0');
	}
	switch (s[i]) {
	case '\0':
		break;
	case 'k':
	case 'K':
		mult = 1ULL << 10;
		i++;
		break;
	case 'm':
	case 'M':
		mult = 1ULL << 20;
		i++;
		break;
	case 'g':
	case 'G':
		mult = 1ULL << 30;
		i++;
		break;
	default:
		return -EINVAL;
	}
	if (s[i] != '\0')
		return -EINVAL;
	if (n > UINT64_MAX / mult)
		return -ERANGE;
	*out = n * mult;
	return 0;
}

static int get_size(struct pctx *c, const char *field, const struct hezo_json *v, bool allow_zero,
		    uint64_t *out)
{
	char desc[128];
	uint64_t n;
	int r = -EINVAL;

	if (v->type == HEZO_JSON_NUMBER)
		r = hezo_json_get_uint64(v, &n);
	else if (v->type == HEZO_JSON_STRING)
		r = parse_size_text(v->str, &n);
	describe(desc, sizeof(desc), v);
	if (r < 0)
		return perr(c, field, "%s is not a size", desc);
	if (n == 0 && !allow_zero)
		return perr(c, field, "%s: must be more than 0", desc);
	*out = n;
	return 0;
}

static int get_count(struct pctx *c, const char *field, const struct hezo_json *v, uint64_t *out,
		     bool allow_zero)
{
	char desc[128];
	uint64_t n;

	describe(desc, sizeof(desc), v);
	if (v->type != HEZO_JSON_NUMBER || hezo_json_get_uint64(v, &n) < 0)
		return perr(c, field, "%s is not a whole number", desc);
	if (n == 0 && !allow_zero)
		return perr(c, field, "%s: must be more than 0", desc);
	*out = n;
	return 0;
}

/* CPU counts: "2", "0.5", "1.25"; at most three decimals, at least 0.01 (a 1 ms quota). */
static int parse_cpus_text(const char *s, uint64_t *milli)
{
	uint64_t whole = 0, frac = 0;
	size_t i = 0, digits = 0;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	for (; isdigit((unsigned char)s[i]); i++) {
		whole = whole * 10 + (uint64_t)(s[i] - '0');
		if (whole > 100000)
			return -ERANGE;
	}
	if (s[i] == '.') {
		i++;
		for (; isdigit((unsigned char)s[i]); i++, digits++) {
			if (digits >= 3)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(s[i] - '0');
		}
		if (digits == 0)
			return -EINVAL;
		for (; digits < 3; digits++)
			frac *= 10;
	}
	if (s[i] != '\0')
		return -EINVAL;
	*milli = whole * 1000 + frac;
	if (*milli < 10)
		return -ERANGE;
	return 0;
}

static void lowercase(char *s)
{
	for (; *s; s++)
		*s = (char)tolower((unsigned char)*s);
}

/* ---- sections ---- */

typedef int (*elem_fn)(struct pctx *c, const char *field, const char *s, char **norm);

/* A list of strings, each checked (and normalised) by fn, replacing *dst. */
static int get_strv(struct pctx *c, const char *field, const struct hezo_json *v, elem_fn fn,
		    struct hezo_strv *dst)
{
	struct hezo_strv s = {0};
	int r;

	r = expect_type(c, field, v, HEZO_JSON_ARRAY);
	if (r < 0)
		return r;
	if (hezo_strv_init(&s) < 0)
		return oom(c);
	HEZO_JSON_FOREACH (i, v) {
		_cleanup_free_ char *norm = NULL;
		char f[160];

		snprintf(f, sizeof(f), "%s[%zu]", field, i);
		r = expect_type(c, f, v->items[i], HEZO_JSON_STRING);
		if (r == 0)
			r = fn(c, f, v->items[i]->str, &norm);
		if (r == 0 && !hezo_strv_contains(&s, norm ? norm : v->items[i]->str))
			r = hezo_strv_push(&s, norm ? norm : v->items[i]->str) < 0 ? oom(c) : 0;
		if (r < 0) {
			hezo_strv_done(&s);
			return r;
		}
	}
	hezo_strv_done(dst);
	*dst = s;
	return 0;
}

static int elem_abs_path(struct pctx *c, const char *field, const char *s, char **norm)
{
	char q[256];
	int r = hezo_policy_clean_path(s, norm);

	if (r == -ENOMEM)
		return oom(c);
	hezo_policy_quote(q, sizeof(q), s);
	if (r < 0)
		return perr(c, field, "%s is not an absolute path without \"..\"", q);
	return 0;
}

static int elem_cap(struct pctx *c, const char *field, const char *s, char **norm)
{
	char q[256];
	int r = hezo_policy_cap_normalise(s, norm);

	if (r == -ENOMEM)
		return oom(c);
	hezo_policy_quote(q, sizeof(q), s);
	if (r < 0)
		return perr(c, field, "%s is not a capability", q);
	return 0;
}

static int elem_backend(struct pctx *c, const char *field, const char *s, char **norm)
{
	enum hezo_backend b;
	char q[256];

	hezo_policy_quote(q, sizeof(q), s);
	if (hezo_backend_from_name(s, &b) < 0)
		return perr(c, field, "%s is not a backend (runsc, runc, crun)", q);
	return 0;
}

static int elem_any(struct pctx *c, const char *field, const char *s, char **norm)
{
	return 0;
}

/* The grammar is egress/'s (the hook and proxyd parse the same entries with it). */
static int elem_egress_allow(struct pctx *c, const char *field, const char *s, char **norm)
{
	char q[256], canon[HEZO_EGRESS_ENTRY_MAX];
	const char *why = NULL;

	hezo_policy_quote(q, sizeof(q), s);
	if (hezo_allow_normalize(s, canon, &why) < 0)
		return perr(c, field,
			    "%s is not a host, *.domain or CIDR (with an optional :port): %s", q,
			    why);
	*norm = strdup(canon);
	if (!*norm)
		return oom(c);
	return 0;
}

static int elem_resolver(struct pctx *c, const char *field, const char *s, char **norm)
{
	struct hezo_resolver r;
	const char *why = NULL;
	char q[256];

	hezo_policy_quote(q, sizeof(q), s);
	if (hezo_resolver_parse(s, &r, &why) < 0)
		return perr(c, field, "%s is not an IP address or IP:port: %s", q, why);
	return 0;
}

static int elem_cidr(struct pctx *c, const char *field, const char *s, char **norm)
{
	struct hezo_cidr r;
	const char *why = NULL;
	char q[256];

	hezo_policy_quote(q, sizeof(q), s);
	if (hezo_range_parse(s, &r, &why) < 0)
		return perr(c, field, "%s is not a CIDR (ADDRESS/PREFIX, no host bits set)", q);
	return 0;
}

static int elem_host_ns(struct pctx *c, const char *field, const char *s, char **norm)
{
	char q[256];

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(host_ns_names); i++)
		if (strcmp(s, host_ns_names[i].name) == 0)
			return 0;
	hezo_policy_quote(q, sizeof(q), s);
	return perr(c, field, "%s cannot be shared with the host (pid, ipc, uts, network, cgroup)",
		    q);
}

static int get_abs_path(struct pctx *c, const char *field, const struct hezo_json *v, char **dst)
{
	_cleanup_free_ char *norm = NULL;
	int r = expect_type(c, field, v, HEZO_JSON_STRING);

	if (r < 0)
		return r;
	r = elem_abs_path(c, field, v->str, &norm);
	if (r < 0)
		return r;
	free(*dst);
	*dst = TAKE_PTR(norm);
	return 0;
}

static int get_bool(struct pctx *c, const char *field, const struct hezo_json *v, bool *dst)
{
	int r = expect_type(c, field, v, HEZO_JSON_TRUE);

	if (r < 0)
		return r;
	*dst = v->type == HEZO_JSON_TRUE;
	return 0;
}

static int unknown_key(struct pctx *c, const char *prefix, const char *key)
{
	char q[256];

	hezo_policy_quote(q, sizeof(q), key);
	if (prefix)
		return perr(c, prefix, "unknown key %s", q);
	return perr(c, NULL, "unknown key %s", q);
}

static int parse_backend_obj(struct pctx *c, struct hezo_policy *p, enum hezo_backend b,
			     const struct hezo_json *v)
{
	int bad = 0;
	char field[64];
	int r;

	snprintf(field, sizeof(field), "backends.%s", backend_names[b]);
	r = expect_type(c, field, v, HEZO_JSON_OBJECT);
	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, v) {
		const char *k = v->keys[i];
		const struct hezo_json *x = v->items[i];
		char f[128];

		snprintf(f, sizeof(f), "%s.%s", field, k);
		if (strcmp(k, "path") == 0) {
			r = get_abs_path(c, f, x, &p->backend_path[b]);
		} else if (strcmp(k, "args") == 0) {
			r = get_strv(c, f, x, elem_any, &p->backend_args[b]);
		} else if (b == HEZO_BACKEND_RUNSC && strcmp(k, "network") == 0) {
			char q[256];
			r = expect_type(c, f, x, HEZO_JSON_STRING);
			if (r < 0)
				return r;
			if (strcmp(x->str, "host") == 0)
				p->runsc_network = HEZO_RUNSC_NET_HOST;
			else if (strcmp(x->str, "none") == 0)
				p->runsc_network = HEZO_RUNSC_NET_NONE;
			else if (strcmp(x->str, "sandbox") == 0)
				p->runsc_network = HEZO_RUNSC_NET_SANDBOX;
			else {
				hezo_policy_quote(q, sizeof(q), x->str);
				r = perr(c, f, "%s is not host, none or sandbox", q);
			}
		} else if (b == HEZO_BACKEND_RUNSC && strcmp(k, "pidsHeadroom") == 0) {
			r = get_count(c, f, x, &p->pids_headroom, true);
		} else {
			r = unknown_key(c, field, k);
		}
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	return bad;
}

static int parse_backends(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	int bad = 0;
	int r = expect_type(c, "backends", v, HEZO_JSON_OBJECT);

	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, v) {
		enum hezo_backend b;
		if (hezo_backend_from_name(v->keys[i], &b) < 0) {
			r = unknown_key(c, "backends", v->keys[i]);
			NEXT_KEY_OR_FAIL(c, r, bad);
			continue;
		}
		r = parse_backend_obj(c, p, b, v->items[i]);
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	return bad;
}

static int parse_tmpfs(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	int r = expect_type(c, "tmpfs", v, HEZO_JSON_OBJECT);

	if (r < 0)
		return r;
	tmpfs_clear(p);
	HEZO_JSON_FOREACH (i, v) {
		_cleanup_free_ char *dest = NULL;
		char f[300], q[256];
		uint64_t size;

		hezo_policy_quote(q, sizeof(q), v->keys[i]);
		snprintf(f, sizeof(f), "tmpfs[%s]", q);
		r = elem_abs_path(c, f, v->keys[i], &dest);
		if (r < 0)
			return r;
		/* The engine's /dev tmpfs, and the kernel's /proc and /sys, are not ours to cover.
		 */
		if (strcmp(dest, "/") == 0 || strcmp(dest, "/dev") == 0 ||
		    hezo_policy_path_under(dest, "/proc") || hezo_policy_path_under(dest, "/sys"))
			return perr(c, f, "a tmpfs cannot be mounted over %s", dest);
		for (size_t j = 0; j < p->ntmpfs; j++)
			if (strcmp(p->tmpfs[j].dest, dest) == 0)
				return perr(c, f, "%s is listed twice", dest);
		r = get_size(c, f, v->items[i], false, &size);
		if (r < 0)
			return r;
		if (tmpfs_add(p, dest, size) < 0)
			return oom(c);
	}
	return 0;
}

static int parse_resources(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	int bad = 0;
	int r = expect_type(c, "resources", v, HEZO_JSON_OBJECT);

	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, v) {
		const char *k = v->keys[i];
		const struct hezo_json *x = v->items[i];
		char f[128];

		snprintf(f, sizeof(f), "resources.%s", k);
		if (strcmp(k, "pids") == 0) {
			r = get_count(c, f, x, &p->pids, false);
		} else if (strcmp(k, "memory") == 0) {
			r = get_size(c, f, x, false, &p->memory);
		} else if (strcmp(k, "swap") == 0) {
			r = get_size(c, f, x, true, &p->swap);
		} else if (strcmp(k, "cpus") == 0) {
			char desc[128];
			describe(desc, sizeof(desc), x);
			if (x->type != HEZO_JSON_NUMBER ||
			    parse_cpus_text(x->str, &p->cpus_milli) < 0)
				r = perr(c, f,
					 "%s is not a CPU count (a number from 0.01, at most three "
					 "decimals)",
					 desc);
		} else {
			r = unknown_key(c, "resources", k);
		}
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	return bad;
}

/* ---- sysctls: name to "LO HI" bounds of each number in the value, or true for any value ---- */

/* Kubernetes' safe set; the bounds admit what Docker sends by default (ping for every group,
 * every port unprivileged: both only in the container's own network namespace). */
static const struct {
	const char *name;
	uint64_t lo, hi;
} default_sysctls[] = {
	{"kernel.shm_rmid_forced", 0, 1},
	{"net.ipv4.ip_local_port_range", 1024, 65535},
	{"net.ipv4.tcp_syncookies", 0, 2},
	{"net.ipv4.ping_group_range", 0, 2147483647},
	{"net.ipv4.ip_unprivileged_port_start", 0, 65536},
};

static int sysctl_add(struct hezo_policy *p, const char *name, bool any, uint64_t lo, uint64_t hi)
{
	struct hezo_policy_sysctl *n;
	char *d = strdup(name);

	if (!d)
		return -ENOMEM;
	n = realloc(p->sysctls, (p->nsysctls + 1) * sizeof(*n));
	if (!n) {
		free(d);
		return -ENOMEM;
	}
	p->sysctls = n;
	p->sysctls[p->nsysctls++] = (struct hezo_policy_sysctl){d, any, lo, hi};
	return 0;
}

static void sysctls_clear(struct hezo_policy *p)
{
	for (size_t i = 0; i < p->nsysctls; i++)
		free(p->sysctls[i].name);
	free(p->sysctls);
	p->sysctls = NULL;
	p->nsysctls = 0;
}

static int sysctls_default(struct hezo_policy *p)
{
	int r = 0;

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(default_sysctls); i++)
		r = r
			    ?: sysctl_add(p, default_sysctls[i].name, false, default_sysctls[i].lo,
					  default_sysctls[i].hi);
	return r;
}

/* Dotted lower-case words: what runc turns into a path below /proc/sys. */
static bool sysctl_name_ok(const char *n)
{
	size_t len = strlen(n);

	return len > 0 && len < 128 &&
	       strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789_-.") == len && n[0] != '.' &&
	       n[len - 1] != '.' && !strstr(n, "..");
}

static int parse_sysctls(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	int bad = 0;
	int r = expect_type(c, "sysctls", v, HEZO_JSON_OBJECT);

	if (r < 0)
		return r;
	sysctls_clear(p);
	HEZO_JSON_FOREACH (i, v) {
		const struct hezo_json *x = v->items[i];
		unsigned long long lo = 0, hi = 0;
		char f[300], q[256], desc[128];
		int end = 0;

		hezo_policy_quote(q, sizeof(q), v->keys[i]);
		snprintf(f, sizeof(f), "sysctls[%s]", q);
		describe(desc, sizeof(desc), x);
		if (!sysctl_name_ok(v->keys[i]))
			r = perr(c, f, "not a sysctl name (dotted lower-case words)");
		else if (x->type == HEZO_JSON_TRUE)
			r = sysctl_add(p, v->keys[i], true, 0, 0) < 0 ? oom(c) : 0;
		else if (x->type != HEZO_JSON_STRING ||
			 sscanf(x->str, "%19llu %19llu%n", &lo, &hi, &end) != 2 || x->str[end] ||
			 strspn(x->str, "0123456789 ") != strlen(x->str) || lo > hi)
			r = perr(c, f,
				 "%s is neither true nor \"LOW HIGH\" (two numbers, LOW <= HIGH)",
				 desc);
		else
			r = sysctl_add(p, v->keys[i], false, lo, hi) < 0 ? oom(c) : 0;
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	return bad;
}

static struct hezo_json *sysctls_json(const struct hezo_policy *p)
{
	_cleanup_json_ struct hezo_json *o = hezo_json_new_object();
	char b[48];

	for (size_t i = 0; o && i < p->nsysctls; i++) {
		const struct hezo_policy_sysctl *s = &p->sysctls[i];

		snprintf(b, sizeof(b), "%" PRIu64 " %" PRIu64, s->lo, s->hi);
		if (hezo_json_set(o, s->name,
				  s->any ? hezo_json_new_bool(true) : hezo_json_new_string(b)) < 0)
			return NULL;
	}
	return TAKE_PTR(o);
}

/* A project may drop sysctls and narrow bounds, never add one or widen them. */
static int sysctls_narrower(struct pctx *c, const struct hezo_policy *base,
			    const struct hezo_policy *p)
{
	for (size_t i = 0; i < p->nsysctls; i++) {
		const struct hezo_policy_sysctl *s = &p->sysctls[i];
		const struct hezo_policy_sysctl *b = hezo_policy_sysctl_find(base, s->name);

		if (!b)
			return perr(c, "sysctls", "%s is not in the main policy's list", s->name);
		if (!b->any && (s->any || s->lo < b->lo || s->hi > b->hi))
			return perr(c, "sysctls",
				    "%s: a project may only narrow the main policy's %" PRIu64
				    " %" PRIu64,
				    s->name, b->lo, b->hi);
	}
	return 0;
}

/* weights.cpuShares (2-262144) and weights.blkioWeight (10-1000): ceilings of relative knobs. */
static int parse_weights(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	int bad = 0;
	int r = expect_type(c, "weights", v, HEZO_JSON_OBJECT);

	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, v) {
		const char *k = v->keys[i];
		bool cpu = strcmp(k, "cpuShares") == 0;
		uint64_t n = 0, lo = cpu ? 2 : 10, hi = cpu ? 262144 : 1000;
		char f[128];

		snprintf(f, sizeof(f), "weights.%s", k);
		if (!cpu && strcmp(k, "blkioWeight") != 0)
			r = unknown_key(c, "weights", k);
		else if ((r = get_count(c, f, v->items[i], &n, false)) == 0 && (n < lo || n > hi))
			r = perr(c, f, "%" PRIu64 " is not from %" PRIu64 " to %" PRIu64, n, lo,
				 hi);
		else if (r == 0)
			*(cpu ? &p->cpu_shares : &p->blkio_weight) = n;
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	return bad;
}

static struct hezo_json *weights_json(const struct hezo_policy *p)
{
	_cleanup_json_ struct hezo_json *o = hezo_json_new_object();

	if (!o || hezo_json_set(o, "cpuShares", hezo_json_new_uint(p->cpu_shares)) < 0 ||
	    hezo_json_set(o, "blkioWeight", hezo_json_new_uint(p->blkio_weight)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

/* rlimits.rtprio (0-99) and rlimits.nice (0-40): ceilings for RLIMIT_RTPRIO and RLIMIT_NICE. */
static int parse_rlimits(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	int bad = 0;
	int r = expect_type(c, "rlimits", v, HEZO_JSON_OBJECT);

	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, v) {
		const char *k = v->keys[i];
		bool rt = strcmp(k, "rtprio") == 0;
		uint64_t n = 0, max = rt ? 99 : 40;
		char f[128];

		snprintf(f, sizeof(f), "rlimits.%s", k);
		if (!rt && strcmp(k, "nice") != 0)
			r = unknown_key(c, "rlimits", k);
		else if ((r = get_count(c, f, v->items[i], &n, true)) == 0 && n > max)
			r = perr(c, f, "%" PRIu64 " is more than %" PRIu64, n, max);
		else if (r == 0)
			*(rt ? &p->rlimit_rtprio : &p->rlimit_nice) = n;
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	return bad;
}

static int parse_seccomp(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	_cleanup_free_ char *path = NULL;
	int r = expect_type(c, "seccomp", v, HEZO_JSON_STRING);

	if (r < 0)
		return r;
	if (strcmp(v->str, "default") == 0) {
		free(p->seccomp_path);
		p->seccomp_path = NULL;
		return 0;
	}
	r = hezo_policy_clean_path(v->str, &path);
	if (r == -ENOMEM)
		return oom(c);
	if (r < 0) {
		char q[256];
		hezo_policy_quote(q, sizeof(q), v->str);
		return perr(c, "seccomp", "%s is neither \"default\" nor an absolute path", q);
	}
	free(p->seccomp_path);
	p->seccomp_path = TAKE_PTR(path);
	return 0;
}

static int parse_mounts(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	int bad = 0;
	int r = expect_type(c, "mounts", v, HEZO_JSON_OBJECT);

	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, v) {
		const char *k = v->keys[i];
		char f[128];

		snprintf(f, sizeof(f), "mounts.%s", k);
		if (strcmp(k, "allowedSources") == 0)
			r = get_strv(c, f, v->items[i], elem_abs_path, &p->allowed_sources);
		else if (strcmp(k, "engineRoots") == 0)
			r = get_strv(c, f, v->items[i], elem_abs_path, &p->engine_roots);
		else if (strcmp(k, "kubeletRoot") == 0)
			/* Where pods' volumes are: moving it would open the real one to a project.
			 */
			r = c->project ? perr(c, f, "only the main policy file may set this")
				       : get_abs_path(c, f, v->items[i], &p->kubelet_root);
		else
			r = unknown_key(c, "mounts", k);
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	return bad;
}

static int parse_namespaces(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	int bad = 0;
	int r = expect_type(c, "namespaces", v, HEZO_JSON_OBJECT);

	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, v) {
		const char *k = v->keys[i];

		if (strcmp(k, "allowHost") == 0) {
			struct hezo_strv s = {0};
			r = hezo_strv_init(&s) < 0 ? oom(c) : 0;
			if (r == 0)
				r = get_strv(c, "namespaces.allowHost", v->items[i], elem_host_ns,
					     &s);
			p->allow_host_ns = 0;
			for (size_t j = 0; r == 0 && j < s.n; j++)
				for (size_t n = 0; n < HEZO_ARRAY_SIZE(host_ns_names); n++)
					if (strcmp(s.v[j], host_ns_names[n].name) == 0)
						p->allow_host_ns |= host_ns_names[n].bit;
			hezo_strv_done(&s);
		} else if (strcmp(k, "requireUser") == 0) {
			r = get_bool(c, "namespaces.requireUser", v->items[i], &p->require_user);
		} else {
			r = unknown_key(c, "namespaces", k);
		}
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	return bad;
}

static int parse_egress(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	int bad = 0;
	int r = expect_type(c, "egress", v, HEZO_JSON_OBJECT);

	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, v) {
		const char *k = v->keys[i];
		const struct hezo_json *x = v->items[i];

		if (strcmp(k, "mode") == 0) {
			r = expect_type(c, "egress.mode", x, HEZO_JSON_STRING);
			if (r < 0)
				return r;
			if (strcmp(x->str, "proxy") == 0)
				p->egress_mode = HEZO_EGRESS_PROXY;
			else if (strcmp(x->str, "deny") == 0)
				p->egress_mode = HEZO_EGRESS_DENY;
			else if (strcmp(x->str, "off") == 0)
				p->egress_mode = HEZO_EGRESS_OFF;
			else {
				char q[256];
				hezo_policy_quote(q, sizeof(q), x->str);
				r = perr(c, "egress.mode", "%s is not proxy, deny or off", q);
			}
		} else if (strcmp(k, "allow") == 0) {
			r = get_strv(c, "egress.allow", x, elem_egress_allow, &p->egress_allow);
		} else if (strcmp(k, "resolvers") == 0) {
			r = get_strv(c, "egress.resolvers", x, elem_resolver, &p->resolvers);
		} else if (strcmp(k, "allowRanges") == 0) {
			r = get_strv(c, "egress.allowRanges", x, elem_cidr, &p->allow_ranges);
		} else {
			r = unknown_key(c, "egress", k);
		}
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	return bad;
}

/* ---- init and admission (docs/policy.md): one block ---- */

static int parse_admission(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	int bad = 0;
	int r = expect_type(c, "admission", v, HEZO_JSON_OBJECT);

	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, v) {
		const char *k = v->keys[i];
		const struct hezo_json *x = v->items[i];

		if (c->project && (strcmp(k, "maxActive") == 0 || strcmp(k, "wait") == 0)) {
			r = perr(c,
				 strcmp(k, "wait") == 0 ? "admission.wait" : "admission.maxActive",
				 "only the main policy file may set this (the limit is the "
				 "machine's)");
		} else if (strcmp(k, "maxActive") == 0) {
			p->admission_auto =
				x->type == HEZO_JSON_STRING && strcmp(x->str, "auto") == 0;
			p->admission_max = 0;
			if (!p->admission_auto && (x->type != HEZO_JSON_NUMBER ||
						   hezo_json_get_uint64(x, &p->admission_max) < 0 ||
						   p->admission_max == 0)) {
				char desc[128];
				describe(desc, sizeof(desc), x);
				r = perr(c, "admission.maxActive",
					 "%s is not a whole number above 0 or \"auto\"", desc);
			}
		} else if (strcmp(k, "wait") == 0) {
			r = get_count(c, "admission.wait", x, &p->admission_wait, true);
		} else if (strcmp(k, "exempt") == 0) {
			r = get_bool(c, "admission.exempt", x, &p->admission_exempt);
		} else {
			r = unknown_key(c, "admission", k);
		}
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	return bad;
}

static int admission_json(const struct hezo_policy *p, struct hezo_json *o)
{
	struct hezo_json *a = hezo_json_ensure_object(o, "admission");
	int r = 0;

	if (!a)
		return -ENOMEM;
	if (p->admission_auto)
		r = hezo_json_set(a, "maxActive", hezo_json_new_string("auto"));
	else if (p->admission_max)
		r = hezo_json_set(a, "maxActive", hezo_json_new_uint(p->admission_max));
	r = r ?: hezo_json_set(a, "wait", hezo_json_new_uint(p->admission_wait));
	r = r ?: hezo_json_set(a, "exempt", hezo_json_new_bool(p->admission_exempt));
	return r ?: hezo_json_set(o, "init", hezo_json_new_bool(p->init));
}

bool hezo_policy_init(const struct hezo_policy *p)
{
	return p->init;
}

void hezo_policy_admission(const struct hezo_policy *p, struct hezo_admission *out)
{
	out->max_active = p->admission_max;
	out->auto_size = p->admission_auto;
	out->wait_sec = p->admission_wait;
	out->exempt = p->admission_exempt;
}

static int parse_top_key(struct pctx *c, struct hezo_policy *p, const char *k,
			 const struct hezo_json *x)
{
	char why[512]; /* volumes.c's messages */
	int r;

	if (c->project &&
	    (strcmp(k, "version") == 0 || strcmp(k, "mode") == 0 || strcmp(k, "backends") == 0 ||
	     strcmp(k, "projectsDir") == 0 || strcmp(k, "dockerPidFile") == 0))
		return perr(c, k, "only the main policy file may set this");

	if (strcmp(k, "version") == 0) {
		if (x->type != HEZO_JSON_NUMBER || strcmp(x->str, "1") != 0) {
			char desc[128];
			describe(desc, sizeof(desc), x);
			return perr(c, "version", "%s is not a supported version (1)", desc);
		}
		return 0;
	}
	if (strcmp(k, "mode") == 0) {
		r = expect_type(c, "mode", x, HEZO_JSON_STRING);
		if (r < 0)
			return r;
		if (strcmp(x->str, "production") == 0)
			p->production = true;
		else if (strcmp(x->str, "dev") == 0)
			p->production = false;
		else {
			char q[256];
			hezo_policy_quote(q, sizeof(q), x->str);
			return perr(c, "mode", "%s is not production or dev", q);
		}
		return 0;
	}
	if (strcmp(k, "backend") == 0) {
		r = expect_type(c, "backend", x, HEZO_JSON_STRING);
		if (r == 0)
			r = elem_backend(c, "backend", x->str, NULL);
		if (r == 0)
			hezo_backend_from_name(x->str, &p->backend);
		return r;
	}
	if (strcmp(k, "allowBackends") == 0) {
		struct hezo_strv s = {0};
		if (hezo_strv_init(&s) < 0)
			return oom(c);
		r = get_strv(c, "allowBackends", x, elem_backend, &s);
		if (r == 0) {
			for (int b = 0; b < HEZO_BACKEND_COUNT; b++)
				p->allow_backends[b] = hezo_strv_contains(&s, backend_names[b]);
		}
		hezo_strv_done(&s);
		return r;
	}
	if (strcmp(k, "backends") == 0)
		return parse_backends(c, p, x);
	if (strcmp(k, "capabilities") == 0)
		return get_strv(c, "capabilities", x, elem_cap, &p->caps);
	if (strcmp(k, "noNewPrivileges") == 0)
		return get_bool(c, "noNewPrivileges", x, &p->no_new_privs);
	if (strcmp(k, "readonlyRootfs") == 0)
		return get_bool(c, "readonlyRootfs", x, &p->readonly_rootfs);
	if (strcmp(k, "tmpfs") == 0)
		return parse_tmpfs(c, p, x);
	if (strcmp(k, "tmpfsMax") == 0)
		return get_size(c, "tmpfsMax", x, false, &p->tmpfs_max);
	if (strcmp(k, "sysctls") == 0)
		return parse_sysctls(c, p, x);
	if (strcmp(k, "weights") == 0)
		return parse_weights(c, p, x);
	if (strcmp(k, "resources") == 0)
		return parse_resources(c, p, x);
	if (strcmp(k, "rlimits") == 0)
		return parse_rlimits(c, p, x);
	if (strcmp(k, "seccomp") == 0)
		return parse_seccomp(c, p, x);
	if (strcmp(k, "devices") == 0)
		return get_strv(c, "devices", x, elem_abs_path, &p->devices);
	if (strcmp(k, "mounts") == 0)
		return parse_mounts(c, p, x);
	if (strcmp(k, "volumes") == 0)
		return hezo_policy_volumes_parse(p, x, why, sizeof(why)) < 0
			       ? perr(c, NULL, "%s", why)
			       : 0;
	if (strcmp(k, "namespaces") == 0)
		return parse_namespaces(c, p, x);
	if (strcmp(k, "cgroupParents") == 0)
		return get_strv(c, "cgroupParents", x, elem_abs_path, &p->cgroup_parents);
	if (strcmp(k, "allowedHooks") == 0)
		return get_strv(c, "allowedHooks", x, elem_abs_path, &p->allowed_hooks);
	if (strcmp(k, "egress") == 0)
		return parse_egress(c, p, x);
	if (strcmp(k, "projectsDir") == 0)
		return get_abs_path(c, "projectsDir", x, &p->projects_dir);
	if (strcmp(k, "init") == 0)
		return get_bool(c, "init", x, &p->init);
	if (strcmp(k, "admission") == 0)
		return parse_admission(c, p, x);
	if (strcmp(k, "dockerPidFile") == 0)
		return get_abs_path(c, "dockerPidFile", x, &p->docker_pidfile);
	return unknown_key(c, NULL, k);
}

/* Rules that tie keys together; run after every key is read (and after project layering). */
static int validate(struct pctx *c, const struct hezo_policy *p)
{
	if (!p->allow_backends[p->backend])
		return perr(c, "backend", "%s is not in allowBackends", backend_names[p->backend]);
	if (p->production) {
		if (p->backend != HEZO_BACKEND_RUNSC)
			return perr(c, "backend",
				    "%s is not allowed in production mode (runsc only)",
				    backend_names[p->backend]);
		for (int b = 0; b < HEZO_BACKEND_COUNT; b++)
			if (p->allow_backends[b] && b != HEZO_BACKEND_RUNSC)
				return perr(c, "allowBackends",
					    "%s is not allowed in production mode (runsc only)",
					    backend_names[b]);
	}
	if (p->runsc_network == HEZO_RUNSC_NET_SANDBOX && p->egress_mode != HEZO_EGRESS_OFF)
		return perr(c, "backends.runsc.network",
			    "\"sandbox\" hides traffic from the egress rules; it needs egress.mode "
			    "\"off\"");
	return 0;
}

static int parse_into(struct pctx *c, struct hezo_policy *p, const struct hezo_json *doc)
{
	int r, bad = 0;

	if (doc->type != HEZO_JSON_OBJECT)
		return perr(c, NULL, "expected a JSON object, got %s",
			    hezo_json_type_name(doc->type));
	HEZO_JSON_FOREACH (i, doc) {
		r = parse_top_key(c, p, doc->keys[i], doc->items[i]);
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	/* Cross-field rules read parsed values: after a field error they would judge defaults. */
	if (bad < 0)
		return bad;
	return validate(c, p);
}

int hezo_policy_parse(const char *buf, size_t len, const char *name, struct hezo_policy **out,
		      struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *doc = NULL;
	struct pctx c = {.name = name ? name : "(policy)", .err = err};
	int r;

	r = hezo_json_parse(buf, len, &doc, err);
	if (r < 0)
		return hezo_error_prefix(err, "policy %s", c.name);
	if (policy_new_default(&p) < 0)
		return oom(&c);
	r = parse_into(&c, p, doc);
	if (r < 0)
		return r;
	*out = TAKE_PTR(p);
	return 0;
}

int hezo_policy_check(const char *buf, size_t len, const char *name, char ***msgs, size_t *nmsgs,
		      struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *doc = NULL;
	struct pctx c = {.name = name ? name : "(policy)", .err = err, .collect = true};
	int r;

	*msgs = NULL;
	*nmsgs = 0;
	r = hezo_json_parse(buf, len, &doc, err);
	if (r < 0)
		return hezo_error_prefix(err, "policy %s", c.name);
	if (policy_new_default(&p) < 0)
		return oom(&c);
	r = parse_into(&c, p, doc);
	/* A path seccomp profile is part of the file's meaning: check that it loads, too. */
	if (r >= 0 && p->seccomp_path) {
		_cleanup_json_ struct hezo_json *profile = NULL;

		r = hezo_policy_seccomp_load(p->seccomp_path, &profile, err);
		if (r < 0)
			hezo_error_prefix(err, "policy %s: seccomp", c.name);
	}
	*msgs = TAKE_PTR(c.all);
	*nmsgs = c.nall;
	return r < 0 ? r : 0;
}

int hezo_policy_load(const char *path, struct hezo_policy **out, struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = hezo_read_file_at(AT_FDCWD, path, POLICY_MAX_BYTES, &buf, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "policy %s", path);
	r = hezo_policy_parse(buf, len, path, &p, err);
	if (r < 0)
		return r;
	if (p->seccomp_path) {
		r = hezo_policy_seccomp_load(p->seccomp_path, &p->seccomp_profile, err);
		if (r < 0)
			return hezo_error_prefix(err, "policy %s: seccomp", path);
	}
	*out = TAKE_PTR(p);
	return 0;
}

/* ---- the effective policy as JSON (file format, so it can be parsed again) ---- */

static struct hezo_json *strv_json(const struct hezo_strv *s)
{
	_cleanup_json_ struct hezo_json *a = hezo_json_new_array();

	if (!a)
		return NULL;
	for (size_t i = 0; i < s->n; i++)
		if (hezo_json_append(a, hezo_json_new_string(s->v[i])) < 0)
			return NULL;
	return TAKE_PTR(a);
}

static struct hezo_json *cpus_json(uint64_t milli)
{
	_cleanup_json_ struct hezo_json *n = hezo_json_new_uint(milli / 1000);
	char buf[48];

	if (!n || milli % 1000 == 0)
		return TAKE_PTR(n);
	/* Keep a fractional count exact: write the literal ourselves. */
	snprintf(buf, sizeof(buf), "%" PRIu64 ".%03" PRIu64, milli / 1000, milli % 1000);
	while (buf[strlen(buf) - 1] == '0')
		buf[strlen(buf) - 1] = '\0';
	free(n->str);
	n->str = strdup(buf);
	if (!n->str)
		return NULL;
	return TAKE_PTR(n);
}

static const char *egress_mode_name(enum hezo_egress_mode m)
{
	return m == HEZO_EGRESS_DENY ? "deny" : m == HEZO_EGRESS_OFF ? "off" : "proxy";
}

static struct hezo_json *policy_file_json(const struct hezo_policy *p)
{
	_cleanup_json_ struct hezo_json *o = hezo_json_new_object();
	struct hezo_json *backends, *res, *lim, *mounts, *ns, *tmpfs, *allow_host, *allow_b;
	int r = 0;

	if (!o)
		return NULL;
	r = r ?: hezo_json_set(o, "version", hezo_json_new_int(1));
	r = r
		    ?: hezo_json_set(o, "mode",
				     hezo_json_new_string(p->production ? "production" : "dev"));
	r = r ?: hezo_json_set(o, "backend", hezo_json_new_string(backend_names[p->backend]));
	allow_b = r ? NULL : hezo_json_ensure_array(o, "allowBackends");
	for (int b = 0; allow_b && r == 0 && b < HEZO_BACKEND_COUNT; b++)
		if (p->allow_backends[b])
			r = hezo_json_append(allow_b, hezo_json_new_string(backend_names[b]));
	backends = r ? NULL : hezo_json_ensure_object(o, "backends");
	for (int b = 0; backends && r == 0 && b < HEZO_BACKEND_COUNT; b++) {
		struct hezo_json *be = hezo_json_ensure_object(backends, backend_names[b]);
		if (!be)
			return NULL;
		r = r ?: hezo_json_set(be, "path", hezo_json_new_string(p->backend_path[b]));
		if (b == HEZO_BACKEND_RUNSC) {
			const char *net = p->runsc_network == HEZO_RUNSC_NET_NONE      ? "none"
					  : p->runsc_network == HEZO_RUNSC_NET_SANDBOX ? "sandbox"
										       : "host";
			r = r ?: hezo_json_set(be, "network", hezo_json_new_string(net));
			r = r
				    ?: hezo_json_set(be, "pidsHeadroom",
						     hezo_json_new_uint(p->pids_headroom));
		}
		r = r ?: hezo_json_set(be, "args", strv_json(&p->backend_args[b]));
	}
	r = r ?: hezo_json_set(o, "capabilities", strv_json(&p->caps));
	r = r ?: hezo_json_set(o, "noNewPrivileges", hezo_json_new_bool(p->no_new_privs));
	r = r ?: hezo_json_set(o, "readonlyRootfs", hezo_json_new_bool(p->readonly_rootfs));
	tmpfs = r ? NULL : hezo_json_ensure_object(o, "tmpfs");
	for (size_t i = 0; tmpfs && r == 0 && i < p->ntmpfs; i++)
		r = hezo_json_set(tmpfs, p->tmpfs[i].dest, hezo_json_new_uint(p->tmpfs[i].size));
	r = r ?: hezo_json_set(o, "tmpfsMax", hezo_json_new_uint(p->tmpfs_max));
	r = r ?: hezo_json_set(o, "sysctls", sysctls_json(p));
	r = r ?: hezo_json_set(o, "weights", weights_json(p));
	res = r ? NULL : hezo_json_ensure_object(o, "resources");
	if (!res)
		return NULL;
	r = r ?: hezo_json_set(res, "pids", hezo_json_new_uint(p->pids));
	r = r ?: hezo_json_set(res, "memory", hezo_json_new_uint(p->memory));
	r = r ?: hezo_json_set(res, "swap", hezo_json_new_uint(p->swap));
	r = r ?: hezo_json_set(res, "cpus", cpus_json(p->cpus_milli));
	lim = r ? NULL : hezo_json_ensure_object(o, "rlimits");
	r = r ?: (lim ? 0 : -ENOMEM);
	r = r ?: hezo_json_set(lim, "rtprio", hezo_json_new_uint(p->rlimit_rtprio));
	r = r ?: hezo_json_set(lim, "nice", hezo_json_new_uint(p->rlimit_nice));
	r = r
		    ?: hezo_json_set(
			       o, "seccomp",
			       hezo_json_new_string(p->seccomp_path ? p->seccomp_path : "default"));
	r = r ?: hezo_json_set(o, "devices", strv_json(&p->devices));
	mounts = r ? NULL : hezo_json_ensure_object(o, "mounts");
	if (!mounts)
		return NULL;
	r = r ?: hezo_json_set(mounts, "allowedSources", strv_json(&p->allowed_sources));
	r = r ?: hezo_json_set(mounts, "engineRoots", strv_json(&p->engine_roots));
	r = r ?: hezo_json_set(mounts, "kubeletRoot", hezo_json_new_string(p->kubelet_root));
	r = r ?: hezo_json_set(o, "volumes", hezo_policy_volumes_json(p));
	ns = r ? NULL : hezo_json_ensure_object(o, "namespaces");
	allow_host = ns ? hezo_json_ensure_array(ns, "allowHost") : NULL;
	if (!allow_host)
		return NULL;
	for (size_t i = 0; r == 0 && i < HEZO_ARRAY_SIZE(host_ns_names); i++)
		if (p->allow_host_ns & host_ns_names[i].bit)
			r = hezo_json_append(allow_host,
					     hezo_json_new_string(host_ns_names[i].name));
	r = r ?: hezo_json_set(ns, "requireUser", hezo_json_new_bool(p->require_user));
	r = r ?: hezo_json_set(o, "cgroupParents", strv_json(&p->cgroup_parents));
	r = r ?: hezo_json_set(o, "allowedHooks", strv_json(&p->allowed_hooks));
	r = r ?: hezo_json_set(o, "egress", hezo_policy_egress_json(p));
	/* egress_json adds "project"; the file format has no such key. */
	if (r == 0)
		hezo_json_remove(hezo_json_get(o, "egress"), "project");
	r = r ?: hezo_json_set(o, "projectsDir", hezo_json_new_string(p->projects_dir));
	r = r ?: admission_json(p, o);
	r = r ?: hezo_json_set(o, "dockerPidFile", hezo_json_new_string(p->docker_pidfile));
	if (r < 0)
		return NULL;
	return TAKE_PTR(o);
}

struct hezo_json *hezo_policy_egress_json(const struct hezo_policy *p)
{
	_cleanup_json_ struct hezo_json *o = hezo_json_new_object();
	int r = 0;

	if (!o)
		return NULL;
	r = r ?: hezo_json_set(o, "mode", hezo_json_new_string(egress_mode_name(p->egress_mode)));
	r = r ?: hezo_json_set(o, "allow", strv_json(&p->egress_allow));
	r = r ?: hezo_json_set(o, "resolvers", strv_json(&p->resolvers));
	r = r ?: hezo_json_set(o, "allowRanges", strv_json(&p->allow_ranges));
	if (p->project)
		r = r ?: hezo_json_set(o, "project", hezo_json_new_string(p->project));
	if (r < 0)
		return NULL;
	return TAKE_PTR(o);
}

struct hezo_json *hezo_policy_to_json(const struct hezo_policy *p)
{
	_cleanup_json_ struct hezo_json *o = policy_file_json(p);

	if (!o)
		return NULL;
	if (p->project && hezo_json_set(o, "project", hezo_json_new_string(p->project)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

/* ---- per-container narrowing ---- */

static bool project_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64 || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

/* Lay src over dst: objects merge key by key, everything else is replaced. */
static int merge_json(struct hezo_json *dst, const struct hezo_json *src)
{
	HEZO_JSON_FOREACH (i, src) {
		struct hezo_json *d = hezo_json_get(dst, src->keys[i]);
		int r;

		if (d && d->type == HEZO_JSON_OBJECT && src->items[i]->type == HEZO_JSON_OBJECT)
			r = merge_json(d, src->items[i]);
		else
			r = hezo_json_set(dst, src->keys[i], hezo_json_clone(src->items[i]));
		if (r < 0)
			return r;
	}
	return 0;
}

static int layer_project(const struct hezo_policy *base, const char *project, bool *missing,
			 struct hezo_policy **out, struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *doc = NULL, *merged = NULL;
	_cleanup_free_ char *path = NULL, *buf = NULL;
	struct pctx c = {.project = true, .err = err};
	char why[512]; /* volumes.c's messages */
	size_t len = 0;
	int r;

	if (asprintf(&path, "%s/%s.json", base->projects_dir, project) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	c.name = path;
	r = hezo_read_file_at(AT_FDCWD, path, POLICY_MAX_BYTES, &buf, &len, err);
	if (r < 0) {
		if (r == -ENOENT) {
			hezo_error_free(*err);
			*err = NULL;
			*missing = true;
			return hezo_error_set(err, ENOENT, "project %s: no project file %s",
					      project, path);
		}
		return hezo_error_prefix(err, "project %s", project);
	}
	r = hezo_json_parse(buf, len, &doc, err);
	if (r < 0)
		return hezo_error_prefix(err, "policy %s", path);
	if (doc->type != HEZO_JSON_OBJECT)
		return perr(&c, NULL, "expected a JSON object, got %s",
			    hezo_json_type_name(doc->type));
	/* Check the project's own keys first so messages point at what it wrote. */
	if (policy_new_default(&p) < 0)
		return oom(&c);
	HEZO_JSON_FOREACH (i, doc) {
		r = parse_top_key(&c, p, doc->keys[i], doc->items[i]);
		if (r < 0)
			return r;
	}
	hezo_policy_free(TAKE_PTR(p));

	merged = policy_file_json(base);
	if (!merged || merge_json(merged, doc) < 0 || policy_new_default(&p) < 0)
		return oom(&c);
	c.project = false;
	r = parse_into(&c, p, merged);
	if (r < 0)
		return r;
	/* A project may narrow where cgroups go and which hooks run, never widen it. */
	for (size_t i = 0; i < p->cgroup_parents.n; i++)
		if (!hezo_policy_cgroup_parent_allowed(&base->cgroup_parents,
						       p->cgroup_parents.v[i]))
			return perr(&c, "cgroupParents", "%s is not allowed by the main policy",
				    p->cgroup_parents.v[i]);
	for (size_t i = 0; i < p->allowed_hooks.n; i++)
		if (!hezo_strv_contains(&base->allowed_hooks, p->allowed_hooks.v[i]))
			return perr(&c, "allowedHooks", "%s is not in the main policy's list",
				    p->allowed_hooks.v[i]);
	if (p->cpu_shares > base->cpu_shares || p->blkio_weight > base->blkio_weight)
		return perr(&c, "weights",
			    "a project may only lower the main policy's cpuShares %" PRIu64
			    " and blkioWeight %" PRIu64,
			    base->cpu_shares, base->blkio_weight);
	r = sysctls_narrower(&c, base, p);
	if (r < 0)
		return r;
	if (hezo_policy_volumes_narrower(base, p, why, sizeof(why)) < 0)
		return perr(&c, NULL, "%s", why);
	if (p->tmpfs_max > base->tmpfs_max)
		return perr(&c, "tmpfsMax", "a project may only lower the main policy's %" PRIu64,
			    base->tmpfs_max);
	if (p->rlimit_rtprio > base->rlimit_rtprio || p->rlimit_nice > base->rlimit_nice)
		return perr(&c, "rlimits",
			    "a project may only lower the main policy's rtprio %" PRIu64
			    " and nice %" PRIu64,
			    base->rlimit_rtprio, base->rlimit_nice);
	if (p->seccomp_path) {
		if (base->seccomp_path && base->seccomp_profile &&
		    strcmp(base->seccomp_path, p->seccomp_path) == 0) {
			p->seccomp_profile = hezo_json_clone(base->seccomp_profile);
			if (!p->seccomp_profile)
				return oom(&c);
		} else {
			r = hezo_policy_seccomp_load(p->seccomp_path, &p->seccomp_profile, err);
			if (r < 0)
				return hezo_error_prefix(err, "policy %s: seccomp", path);
		}
	}
	p->project = strdup(project);
	if (!p->project)
		return oom(&c);
	*out = TAKE_PTR(p);
	return 0;
}

static int policy_clone(const struct hezo_policy *base, struct hezo_policy **out,
			struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *doc = policy_file_json(base);
	struct pctx c = {.name = "(effective)", .err = err};
	int r;

	if (!doc || policy_new_default(&p) < 0)
		return oom(&c);
	r = parse_into(&c, p, doc);
	if (r < 0)
		return r;
	if (base->seccomp_profile) {
		p->seccomp_profile = hezo_json_clone(base->seccomp_profile);
		if (!p->seccomp_profile)
			return oom(&c);
	}
	if (base->project) {
		p->project = strdup(base->project);
		if (!p->project)
			return oom(&c);
	}
	*out = TAKE_PTR(p);
	return 0;
}

static int annotation_err(struct hezo_error **err, const char *key, const char *val,
			  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int annotation_err(struct hezo_error **err, const char *key, const char *val,
			  const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	char qk[256], qv[256];
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	hezo_policy_quote(qk, sizeof(qk), key);
	hezo_policy_quote(qv, sizeof(qv), val);
	/* The key is shown bare when it is plain text, which org.hezo.* keys are once known. */
	return hezo_error_set(err, EINVAL, "annotation %s=%s: %s", qk, qv, msg);
}

static int apply_annotation(struct hezo_policy *p, const char *key, const char *val,
			    struct hezo_error **err)
{
	const char *k = key + strlen("org.hezo.");
	uint64_t n;

	if (strcmp(k, "project") == 0)
		return 0; /* used to choose the project */
	if (strcmp(k, "backend") == 0) {
		enum hezo_backend b;
		if (hezo_backend_from_name(val, &b) < 0)
			return annotation_err(err, key, val, "not a backend (runsc, runc, crun)");
		if (!p->allow_backends[b])
			return annotation_err(err, key, val, "backend not in allowBackends");
		p->backend = b;
		return 0;
	}
	if (strcmp(k, "memory") == 0) {
		if (parse_size_text(val, &n) < 0 || n == 0)
			return annotation_err(err, key, val, "not a size");
		if (n > p->memory)
			return annotation_err(err, key, val,
					      "above the policy's memory ceiling %" PRIu64 " bytes",
					      p->memory);
		p->memory = n;
		return 0;
	}
	if (strcmp(k, "pids") == 0) {
		if (parse_size_text(val, &n) < 0 || n == 0 || !isdigit((unsigned char)val[0]) ||
		    !isdigit((unsigned char)val[strlen(val) - 1]))
			return annotation_err(err, key, val, "not a whole number above 0");
		if (n > p->pids)
			return annotation_err(err, key, val,
					      "above the policy's pids ceiling %" PRIu64, p->pids);
		p->pids = n;
		return 0;
	}
	if (strcmp(k, "cpus") == 0) {
		if (parse_cpus_text(val, &n) < 0)
			return annotation_err(err, key, val, "not a CPU count");
		if (n > p->cpus_milli)
			return annotation_err(err, key, val,
					      "above the policy's CPU ceiling %" PRIu64
					      ".%03" PRIu64,
					      p->cpus_milli / 1000, p->cpus_milli % 1000);
		p->cpus_milli = n;
		return 0;
	}
	if (strcmp(k, "egress.allow") == 0) {
		_cleanup_free_ char *copy = strdup(val);
		struct hezo_strv s = {0};
		char *save = NULL, *tok, canon[HEZO_EGRESS_ENTRY_MAX];

		if (!copy || hezo_strv_init(&s) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
		for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *end;
			while (*tok == ' ' || *tok == '\t')
				tok++;
			end = tok + strlen(tok);
			while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
				*--end = '\0';
			if (*tok == '\0')
				continue;
			/* Compared in the canonical spelling the policy keeps; a token that is no
			 * entry at all is in no list. */
			if (hezo_allow_normalize(tok, canon, NULL) == 0)
				tok = canon;
			else
				lowercase(tok);
			if (!hezo_strv_contains(&p->egress_allow, tok)) {
				char q[256];
				hezo_policy_quote(q, sizeof(q), tok);
				hezo_strv_done(&s);
				return annotation_err(err, key, val,
						      "%s is not in the policy's egress.allow", q);
			}
			if (!hezo_strv_contains(&s, tok) && hezo_strv_push(&s, tok) < 0) {
				hezo_strv_done(&s);
				return hezo_error_set(err, ENOMEM, "out of memory");
			}
		}
		hezo_strv_done(&p->egress_allow);
		p->egress_allow = s;
		return 0;
	}
	return annotation_err(err, key, val, "unknown hezo annotation");
}

int hezo_policy_for_container(const struct hezo_policy *base, const struct hezo_json *annotations,
			      const char *project_hint, struct hezo_policy **out,
			      struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	static const char k8s_source[] = "annotation \"io.kubernetes.cri.sandbox-namespace\"";
	const char *project = NULL, *source = NULL;
	bool missing = false;
	int r;

	if (annotations && annotations->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "annotations: expected an object, got %s",
				      hezo_json_type_name(annotations->type));
	/* Every org.hezo.* value must be a string before any of them is believed. */
	HEZO_JSON_FOREACH (i, annotations) {
		if (strncmp(annotations->keys[i], "org.hezo.", 9) != 0)
			continue;
		if (annotations->items[i]->type != HEZO_JSON_STRING) {
			char qk[256];
			hezo_policy_quote(qk, sizeof(qk), annotations->keys[i]);
			return hezo_error_set(err, EINVAL,
					      "annotation %s: expected a string, got %s", qk,
					      hezo_json_type_name(annotations->items[i]->type));
		}
	}
	project = hezo_json_string(hezo_json_get(annotations, "org.hezo.project"));
	source = "annotation \"org.hezo.project\"";
	if (!project && project_hint) {
		project = project_hint;
		source = "--hezo-project";
	}
	if (!project) {
		project = hezo_json_string(
			hezo_json_get(annotations, "io.kubernetes.cri.sandbox-namespace"));
		source = k8s_source;
	}
	if (project) {
		if (!project_name_valid(project)) {
			char q[256];
			hezo_policy_quote(q, sizeof(q), project);
			return hezo_error_set(err, EINVAL,
					      "%s: project name %s is not 1-64 characters of "
					      "[a-z0-9._-] not starting with '.'",
					      source, q);
		}
		r = layer_project(base, project, &missing, &p, err);
		/*
		 * Kubernetes names a namespace for every pod; one without a project file of its
		 * own gets the global box (never looser). A project asked for by name must exist.
		 */
		if (r < 0 && missing && source == k8s_source) {
			hezo_error_free(*err);
			*err = NULL;
			r = policy_clone(base, &p, err);
		}
	} else {
		r = policy_clone(base, &p, err);
	}
	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, annotations) {
		if (strncmp(annotations->keys[i], "org.hezo.", 9) != 0)
			continue;
		r = apply_annotation(p, annotations->keys[i], annotations->items[i]->str, err);
		if (r < 0)
			return r;
	}
	*out = TAKE_PTR(p);
	return 0;
}

/* ---- accessors ---- */

bool hezo_policy_cap_allowed(const struct hezo_policy *p, const char *cap)
{
	_cleanup_free_ char *norm = NULL;

	if (hezo_policy_cap_normalise(cap, &norm) < 0)
		return false;
	return hezo_strv_contains(&p->caps, norm);
}

bool hezo_policy_production(const struct hezo_policy *p)
{
	return p->production;
}

enum hezo_backend hezo_policy_backend(const struct hezo_policy *p)
{
	return p->backend;
}

const char *hezo_policy_backend_path(const struct hezo_policy *p, enum hezo_backend b)
{
	if ((unsigned)b >= HEZO_BACKEND_COUNT)
		return NULL;
	return p->backend_path[b];
}

const char *const *hezo_policy_backend_args(const struct hezo_policy *p, enum hezo_backend b)
{
	static const char *const none[] = {NULL};

	if ((unsigned)b >= HEZO_BACKEND_COUNT)
		return none;
	return (const char *const *)p->backend_args[b].v;
}

enum hezo_runsc_network hezo_policy_runsc_network(const struct hezo_policy *p)
{
	return p->runsc_network;
}

uint64_t hezo_policy_runsc_pids_headroom(const struct hezo_policy *p)
{
	return p->pids_headroom;
}

const char *hezo_policy_project(const struct hezo_policy *p)
{
	return p->project;
}

enum hezo_egress_mode hezo_policy_egress_mode(const struct hezo_policy *p)
{
	return p->egress_mode;
}
