/* Reading the admin's policy file (docs/policy.md): strict parsing of every field, the rules that
 * tie fields together, and the entry points parse, check and load. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-file.h"
#include "policy-parse.h"

/* The words of the keys that take one of a few, in the order of their values. */
static const char *const modes[] = {"production", "dev"};
static const char *const runsc_networks[] = {
	[HEZO_RUNSC_NET_HOST] = "host",
	[HEZO_RUNSC_NET_NONE] = "none",
	[HEZO_RUNSC_NET_SANDBOX] = "sandbox",
};
static const char *const egress_modes[] = {
	[HEZO_EGRESS_PROXY] = "proxy",
	[HEZO_EGRESS_DENY] = "deny",
	[HEZO_EGRESS_OFF] = "off",
};

static int parse_backend_obj(struct pctx *c, struct hezo_policy *p, enum hezo_backend b,
			     const struct hezo_json *v)
{
	int bad = 0;
	char field[64];
	int r;

	snprintf(field, sizeof(field), "backends.%s", hezo_policy_backend_names[b]);
	r = hezo_policy_expect_type(c, field, v, HEZO_JSON_OBJECT);
	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, v) {
		const char *k = v->keys[i];
		const struct hezo_json *x = v->items[i];
		char f[128];

		snprintf(f, sizeof(f), "%s.%s", field, k);
		if (strcmp(k, "path") == 0) {
			r = hezo_policy_get_abs_path(c, f, x, &p->backend_path[b]);
		} else if (strcmp(k, "args") == 0) {
			r = hezo_policy_get_strv(c, f, x, hezo_policy_elem_any,
						 &p->backend_args[b]);
		} else if (b == HEZO_BACKEND_RUNSC && strcmp(k, "network") == 0) {
			size_t w;
			r = hezo_policy_get_word(c, f, x, runsc_networks,
						 HEZO_ARRAY_SIZE(runsc_networks),
						 "host, none or sandbox", &w);
			/* A network that is no string ends the backend's object, as it always has.
			 */
			if (r < 0 && x->type != HEZO_JSON_STRING)
				return r;
			if (r == 0)
				p->runsc_network = (enum hezo_runsc_network)w;
		} else if (b == HEZO_BACKEND_RUNSC && strcmp(k, "pidsHeadroom") == 0) {
			r = hezo_policy_get_count(c, f, x, &p->pids_headroom, true);
		} else {
			r = hezo_policy_unknown_key(c, field, k);
		}
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	return bad;
}

static int parse_backends(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	int bad = 0;
	int r = hezo_policy_expect_type(c, "backends", v, HEZO_JSON_OBJECT);

	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, v) {
		enum hezo_backend b;
		if (hezo_backend_from_name(v->keys[i], &b) < 0) {
			r = hezo_policy_unknown_key(c, "backends", v->keys[i]);
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
	int r = hezo_policy_expect_type(c, "tmpfs", v, HEZO_JSON_OBJECT);

	if (r < 0)
		return r;
	hezo_policy_tmpfs_clear(p);
	HEZO_JSON_FOREACH (i, v) {
		_cleanup_free_ char *dest = NULL;
		char f[300], q[256];
		uint64_t size;

		hezo_policy_quote(q, sizeof(q), v->keys[i]);
		snprintf(f, sizeof(f), "tmpfs[%s]", q);
		r = hezo_policy_elem_abs_path(c, f, v->keys[i], &dest);
		if (r < 0)
			return r;
		/* The engine's /dev tmpfs, and the kernel's /proc and /sys, are not ours to cover.
		 */
		if (strcmp(dest, "/") == 0 || strcmp(dest, "/dev") == 0 ||
		    hezo_policy_path_under(dest, "/proc") || hezo_policy_path_under(dest, "/sys"))
			return hezo_policy_perr(c, f, "a tmpfs cannot be mounted over %s", dest);
		for (size_t j = 0; j < p->ntmpfs; j++)
			if (strcmp(p->tmpfs[j].dest, dest) == 0)
				return hezo_policy_perr(c, f, "%s is listed twice", dest);
		r = hezo_policy_get_size(c, f, v->items[i], false, &size);
		if (r < 0)
			return r;
		if (hezo_policy_tmpfs_add(p, dest, size) < 0)
			return hezo_policy_oom(c);
	}
	return 0;
}

/*
 * A section: an object whose keys fn reads one at a time, field being "SECTION.KEY". A key's
 * error ends the section unless every error is being collected; one that sets *stop ends it even
 * then.
 */
typedef int (*key_fn)(struct pctx *c, struct hezo_policy *p, const char *field, const char *k,
		      const struct hezo_json *x, bool *stop);

static int parse_section(struct pctx *c, struct hezo_policy *p, const char *section,
			 const struct hezo_json *v, key_fn fn)
{
	int bad = 0;
	int r = hezo_policy_expect_type(c, section, v, HEZO_JSON_OBJECT);

	if (r < 0)
		return r;
	HEZO_JSON_FOREACH (i, v) {
		bool stop = false;
		char f[128];

		snprintf(f, sizeof(f), "%s.%s", section, v->keys[i]);
		r = fn(c, p, f, v->keys[i], v->items[i], &stop);
		if (r < 0 && stop)
			return r;
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	return bad;
}

static int resources_key(struct pctx *c, struct hezo_policy *p, const char *field, const char *k,
			 const struct hezo_json *x, bool *stop)
{
	char desc[128];

	if (strcmp(k, "pids") == 0)
		return hezo_policy_get_count(c, field, x, &p->pids, false);
	if (strcmp(k, "memory") == 0)
		return hezo_policy_get_size(c, field, x, false, &p->memory);
	if (strcmp(k, "swap") == 0)
		return hezo_policy_get_size(c, field, x, true, &p->swap);
	if (strcmp(k, "cpus") != 0)
		return hezo_policy_unknown_key(c, "resources", k);
	hezo_policy_describe(desc, sizeof(desc), x);
	if (x->type != HEZO_JSON_NUMBER || hezo_policy_parse_cpus_text(x->str, &p->cpus_milli) < 0)
		return hezo_policy_perr(
			c, field,
			"%s is not a CPU count (a number from 0.01, at most three decimals)", desc);
	return 0;
}

static int sysctl_key(struct pctx *c, struct hezo_policy *p, const char *field, const char *k,
		      const struct hezo_json *x, bool *stop)
{
	unsigned long long lo = 0, hi = 0;
	char f[300], q[256], desc[128];
	int end = 0;

	hezo_policy_quote(q, sizeof(q), k);
	snprintf(f, sizeof(f), "sysctls[%s]", q);
	hezo_policy_describe(desc, sizeof(desc), x);
	if (!hezo_policy_sysctl_name_ok(k))
		return hezo_policy_perr(c, f, "not a sysctl name (dotted lower-case words)");
	if (x->type == HEZO_JSON_TRUE)
		return hezo_policy_sysctl_add(p, k, true, 0, 0) < 0 ? hezo_policy_oom(c) : 0;
	if (x->type != HEZO_JSON_STRING || sscanf(x->str, "%19llu %19llu%n", &lo, &hi, &end) != 2 ||
	    x->str[end] || strspn(x->str, "0123456789 ") != strlen(x->str) || lo > hi)
		return hezo_policy_perr(
			c, f, "%s is neither true nor \"LOW HIGH\" (two numbers, LOW <= HIGH)",
			desc);
	return hezo_policy_sysctl_add(p, k, false, lo, hi) < 0 ? hezo_policy_oom(c) : 0;
}

static int parse_sysctls(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	/* The file's list replaces the defaults, once the section is known to be an object. */
	if (v->type == HEZO_JSON_OBJECT)
		hezo_policy_sysctls_clear(p);
	return parse_section(c, p, "sysctls", v, sysctl_key);
}

/* weights.cpuShares (2-262144) and weights.blkioWeight (10-1000): ceilings of relative knobs. */
static int weight_key(struct pctx *c, struct hezo_policy *p, const char *field, const char *k,
		      const struct hezo_json *x, bool *stop)
{
	bool cpu = strcmp(k, "cpuShares") == 0;
	uint64_t n = 0, lo = cpu ? 2 : 10, hi = cpu ? 262144 : 1000;
	int r;

	if (!cpu && strcmp(k, "blkioWeight") != 0)
		return hezo_policy_unknown_key(c, "weights", k);
	r = hezo_policy_get_count(c, field, x, &n, false);
	if (r == 0 && (n < lo || n > hi))
		return hezo_policy_perr(c, field, "%" PRIu64 " is not from %" PRIu64 " to %" PRIu64,
					n, lo, hi);
	if (r == 0)
		*(cpu ? &p->cpu_shares : &p->blkio_weight) = n;
	return r;
}

/* rlimits.rtprio (0-99) and rlimits.nice (0-40): ceilings for RLIMIT_RTPRIO and RLIMIT_NICE. */
static int rlimit_key(struct pctx *c, struct hezo_policy *p, const char *field, const char *k,
		      const struct hezo_json *x, bool *stop)
{
	bool rt = strcmp(k, "rtprio") == 0;
	uint64_t n = 0, max = rt ? 99 : 40;
	int r;

	if (!rt && strcmp(k, "nice") != 0)
		return hezo_policy_unknown_key(c, "rlimits", k);
	r = hezo_policy_get_count(c, field, x, &n, true);
	if (r == 0 && n > max)
		return hezo_policy_perr(c, field, "%" PRIu64 " is more than %" PRIu64, n, max);
	if (r == 0)
		*(rt ? &p->rlimit_rtprio : &p->rlimit_nice) = n;
	return r;
}

static int parse_seccomp(struct pctx *c, struct hezo_policy *p, const struct hezo_json *v)
{
	_cleanup_free_ char *path = NULL;
	int r = hezo_policy_expect_type(c, "seccomp", v, HEZO_JSON_STRING);

	if (r < 0)
		return r;
	if (strcmp(v->str, "default") == 0) {
		free(p->seccomp_path);
		p->seccomp_path = NULL;
		return 0;
	}
	r = hezo_policy_clean_path(v->str, &path);
	if (r == -ENOMEM)
		return hezo_policy_oom(c);
	if (r < 0) {
		char q[256];
		hezo_policy_quote(q, sizeof(q), v->str);
		return hezo_policy_perr(c, "seccomp",
					"%s is neither \"default\" nor an absolute path", q);
	}
	free(p->seccomp_path);
	p->seccomp_path = TAKE_PTR(path);
	return 0;
}

static int mounts_key(struct pctx *c, struct hezo_policy *p, const char *field, const char *k,
		      const struct hezo_json *x, bool *stop)
{
	if (strcmp(k, "allowedSources") == 0)
		return hezo_policy_get_strv(c, field, x, hezo_policy_elem_abs_path,
					    &p->allowed_sources);
	if (strcmp(k, "engineRoots") == 0)
		return hezo_policy_get_strv(c, field, x, hezo_policy_elem_abs_path,
					    &p->engine_roots);
	/* Where pods' volumes are: moving it would open the real one to a project. */
	if (strcmp(k, "kubeletRoot") == 0)
		return c->project ? hezo_policy_perr(c, field,
						     "only the main policy file may set this")
				  : hezo_policy_get_abs_path(c, field, x, &p->kubelet_root);
	return hezo_policy_unknown_key(c, "mounts", k);
}

static int namespaces_key(struct pctx *c, struct hezo_policy *p, const char *field, const char *k,
			  const struct hezo_json *x, bool *stop)
{
	struct hezo_strv s = {0};
	int r;

	if (strcmp(k, "requireUser") == 0)
		return hezo_policy_get_bool(c, field, x, &p->require_user);
	if (strcmp(k, "allowHost") != 0)
		return hezo_policy_unknown_key(c, "namespaces", k);
	r = hezo_strv_init(&s) < 0 ? hezo_policy_oom(c) : 0;
	if (r == 0)
		r = hezo_policy_get_strv(c, field, x, hezo_policy_elem_host_ns, &s);
	p->allow_host_ns = 0;
	for (size_t j = 0; r == 0 && j < s.n; j++)
		for (size_t n = 0; n < HEZO_ARRAY_SIZE(hezo_policy_host_ns_names); n++)
			if (strcmp(s.v[j], hezo_policy_host_ns_names[n].name) == 0)
				p->allow_host_ns |= hezo_policy_host_ns_names[n].bit;
	hezo_strv_done(&s);
	return r;
}

static int egress_key(struct pctx *c, struct hezo_policy *p, const char *field, const char *k,
		      const struct hezo_json *x, bool *stop)
{
	size_t w;
	int r;

	if (strcmp(k, "allow") == 0)
		return hezo_policy_get_strv(c, field, x, hezo_policy_elem_egress_allow,
					    &p->egress_allow);
	if (strcmp(k, "resolvers") == 0)
		return hezo_policy_get_strv(c, field, x, hezo_policy_elem_resolver, &p->resolvers);
	if (strcmp(k, "allowRanges") == 0)
		return hezo_policy_get_strv(c, field, x, hezo_policy_elem_cidr, &p->allow_ranges);
	if (strcmp(k, "mode") != 0)
		return hezo_policy_unknown_key(c, "egress", k);
	r = hezo_policy_get_word(c, field, x, egress_modes, HEZO_ARRAY_SIZE(egress_modes),
				 "proxy, deny or off", &w);
	/* A mode that is no string ends the section, as it always has. */
	*stop = r < 0 && x->type != HEZO_JSON_STRING;
	if (r == 0)
		p->egress_mode = (enum hezo_egress_mode)w;
	return r;
}

/* ---- init and admission (docs/policy.md): one block ---- */

/* exec: where a box may execute, said once (the image and its binds as the engine set them). */
static int exec_key(struct pctx *c, struct hezo_policy *p, const char *field, const char *k,
		    const struct hezo_json *x, bool *stop)
{
	if (strcmp(k, "tmpfs") != 0)
		return hezo_policy_unknown_key(c, "exec", k);
	return hezo_policy_get_bool(c, field, x, &p->tmpfs_exec);
}

static int admission_key(struct pctx *c, struct hezo_policy *p, const char *field, const char *k,
			 const struct hezo_json *x, bool *stop)
{
	char desc[128];

	if (c->project && (strcmp(k, "maxActive") == 0 || strcmp(k, "wait") == 0))
		return hezo_policy_perr(
			c, field,
			"only the main policy file may set this (the limit is the machine's)");
	if (strcmp(k, "wait") == 0)
		return hezo_policy_get_count(c, field, x, &p->admission_wait, true);
	if (strcmp(k, "exempt") == 0)
		return hezo_policy_get_bool(c, field, x, &p->admission_exempt);
	if (strcmp(k, "maxActive") != 0)
		return hezo_policy_unknown_key(c, "admission", k);
	p->admission_auto = x->type == HEZO_JSON_STRING && strcmp(x->str, "auto") == 0;
	p->admission_max = 0;
	if (!p->admission_auto &&
	    (x->type != HEZO_JSON_NUMBER || hezo_json_get_uint64(x, &p->admission_max) < 0 ||
	     p->admission_max == 0)) {
		hezo_policy_describe(desc, sizeof(desc), x);
		return hezo_policy_perr(c, field, "%s is not a whole number above 0 or \"auto\"",
					desc);
	}
	return 0;
}

int hezo_policy_parse_top_key(struct pctx *c, struct hezo_policy *p, const char *k,
			      const struct hezo_json *x)
{
	char why[512]; /* volumes.c's messages */
	int r;

	if (c->project && (strcmp(k, "version") == 0 || strcmp(k, "mode") == 0 ||
			   strcmp(k, "backends") == 0 || strcmp(k, "projectsDir") == 0 ||
			   strcmp(k, "dockerPidFile") == 0 || strcmp(k, "dockerInit") == 0))
		return hezo_policy_perr(c, k, "only the main policy file may set this");

	if (strcmp(k, "version") == 0) {
		if (x->type != HEZO_JSON_NUMBER || strcmp(x->str, "1") != 0) {
			char desc[128];
			hezo_policy_describe(desc, sizeof(desc), x);
			return hezo_policy_perr(c, "version", "%s is not a supported version (1)",
						desc);
		}
		return 0;
	}
	if (strcmp(k, "mode") == 0) {
		size_t w;
		r = hezo_policy_get_word(c, "mode", x, modes, HEZO_ARRAY_SIZE(modes),
					 "production or dev", &w);
		if (r == 0)
			p->production = w == 0;
		return r;
	}
	if (strcmp(k, "backend") == 0) {
		r = hezo_policy_expect_type(c, "backend", x, HEZO_JSON_STRING);
		if (r == 0)
			r = hezo_policy_elem_backend(c, "backend", x->str, NULL);
		if (r == 0)
			hezo_backend_from_name(x->str, &p->backend);
		return r;
	}
	if (strcmp(k, "allowBackends") == 0) {
		struct hezo_strv s = {0};
		if (hezo_strv_init(&s) < 0)
			return hezo_policy_oom(c);
		r = hezo_policy_get_strv(c, "allowBackends", x, hezo_policy_elem_backend, &s);
		if (r == 0) {
			for (int b = 0; b < HEZO_BACKEND_COUNT; b++)
				p->allow_backends[b] =
					hezo_strv_contains(&s, hezo_policy_backend_names[b]);
		}
		hezo_strv_done(&s);
		return r;
	}
	if (strcmp(k, "backends") == 0)
		return parse_backends(c, p, x);
	if (strcmp(k, "capabilities") == 0)
		return hezo_policy_get_strv(c, "capabilities", x, hezo_policy_elem_cap, &p->caps);
	if (strcmp(k, "noNewPrivileges") == 0)
		return hezo_policy_get_bool(c, "noNewPrivileges", x, &p->no_new_privs);
	if (strcmp(k, "readonlyRootfs") == 0)
		return hezo_policy_get_bool(c, "readonlyRootfs", x, &p->readonly_rootfs);
	if (strcmp(k, "tmpfs") == 0)
		return parse_tmpfs(c, p, x);
	if (strcmp(k, "exec") == 0)
		return parse_section(c, p, "exec", x, exec_key);
	if (strcmp(k, "tmpfsMax") == 0)
		return hezo_policy_get_size(c, "tmpfsMax", x, false, &p->tmpfs_max);
	if (strcmp(k, "sysctls") == 0)
		return parse_sysctls(c, p, x);
	if (strcmp(k, "weights") == 0)
		return parse_section(c, p, "weights", x, weight_key);
	if (strcmp(k, "resources") == 0)
		return parse_section(c, p, "resources", x, resources_key);
	if (strcmp(k, "rlimits") == 0)
		return parse_section(c, p, "rlimits", x, rlimit_key);
	if (strcmp(k, "seccomp") == 0)
		return parse_seccomp(c, p, x);
	if (strcmp(k, "devices") == 0)
		return hezo_policy_get_strv(c, "devices", x, hezo_policy_elem_abs_path,
					    &p->devices);
	if (strcmp(k, "mounts") == 0)
		return parse_section(c, p, "mounts", x, mounts_key);
	if (strcmp(k, "namespaces") == 0)
		return parse_section(c, p, "namespaces", x, namespaces_key);
	if (strcmp(k, "cgroupParents") == 0)
		return hezo_policy_get_strv(c, "cgroupParents", x, hezo_policy_elem_abs_path,
					    &p->cgroup_parents);
	if (strcmp(k, "allowedHooks") == 0)
		return hezo_policy_get_strv(c, "allowedHooks", x, hezo_policy_elem_abs_path,
					    &p->allowed_hooks);
	if (strcmp(k, "egress") == 0)
		return parse_section(c, p, "egress", x, egress_key);
	if (strcmp(k, "volumes") == 0)
		return hezo_policy_volumes_parse(p, x, why, sizeof(why)) < 0
			       ? hezo_policy_perr(c, NULL, "%s", why)
			       : 0;
	if (strcmp(k, "secrets") == 0)
		return hezo_policy_parse_secrets(p, x, c->name, c->err);
	if (strcmp(k, "keys") == 0)
		return hezo_policy_parse_keys(p, x, c->name, c->err);
	if (strcmp(k, "projectsDir") == 0)
		return hezo_policy_get_abs_path(c, "projectsDir", x, &p->projects_dir);
	if (strcmp(k, "init") == 0)
		return hezo_policy_get_bool(c, "init", x, &p->init);
	if (strcmp(k, "workspace") == 0)
		return hezo_policy_workspace_parse(c, p, x);
	if (strcmp(k, "admission") == 0)
		return parse_section(c, p, "admission", x, admission_key);
	if (strcmp(k, "dockerPidFile") == 0)
		return hezo_policy_get_abs_path(c, "dockerPidFile", x, &p->docker_pidfile);
	if (strcmp(k, "dockerInit") == 0) {
		if (x->type == HEZO_JSON_NULL) {
			free(p->docker_init);
			p->docker_init = NULL;
			return 0;
		}
		return hezo_policy_get_abs_path(c, "dockerInit", x, &p->docker_init);
	}
	return hezo_policy_unknown_key(c, NULL, k);
}

/* Rules that tie keys together; run after every key is read (and after project layering). */
static int validate(struct pctx *c, const struct hezo_policy *p)
{
	if (!p->allow_backends[p->backend])
		return hezo_policy_perr(c, "backend", "%s is not in allowBackends",
					hezo_policy_backend_names[p->backend]);
	if (p->production) {
		if (p->backend != HEZO_BACKEND_RUNSC)
			return hezo_policy_perr(c, "backend",
						"%s is not allowed in production mode (runsc only)",
						hezo_policy_backend_names[p->backend]);
		for (int b = 0; b < HEZO_BACKEND_COUNT; b++)
			if (p->allow_backends[b] && b != HEZO_BACKEND_RUNSC)
				return hezo_policy_perr(
					c, "allowBackends",
					"%s is not allowed in production mode (runsc only)",
					hezo_policy_backend_names[b]);
	}
	if (p->runsc_network == HEZO_RUNSC_NET_SANDBOX && p->egress_mode != HEZO_EGRESS_OFF)
		return hezo_policy_perr(
			c, "backends.runsc.network",
			"\"sandbox\" hides traffic from the egress rules; it needs egress.mode "
			"\"off\"");
	return hezo_policy_workspace_validate(c, p)
		       ?: hezo_policy_check_secrets(p, c->name, c->err)
		       ?: hezo_policy_check_keys(p, c->name, c->err);
}

int hezo_policy_parse_into(struct pctx *c, struct hezo_policy *p, const struct hezo_json *doc)
{
	int r, bad = 0;

	if (doc->type != HEZO_JSON_OBJECT)
		return hezo_policy_perr(c, NULL, "expected a JSON object, got %s",
					hezo_json_type_name(doc->type));
	HEZO_JSON_FOREACH (i, doc) {
		r = hezo_policy_parse_top_key(c, p, doc->keys[i], doc->items[i]);
		NEXT_KEY_OR_FAIL(c, r, bad);
	}
	/* Cross-field rules read parsed values: after a field error they would judge defaults. */
	if (bad < 0)
		return bad;
	return validate(c, p);
}

/* The document over the defaults: *out is set (for its caller to free) once the JSON parses. */
static int parse_doc(struct pctx *c, const char *buf, size_t len, struct hezo_policy **out)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *doc = NULL;
	int r;

	r = hezo_json_parse(buf, len, &doc, c->err);
	if (r < 0)
		return hezo_error_prefix(c->err, "policy %s", c->name);
	if (hezo_policy_new_default(&p) < 0)
		return hezo_policy_oom(c);
	r = hezo_policy_parse_into(c, p, doc);
	*out = TAKE_PTR(p);
	return r;
}

int hezo_policy_parse(const char *buf, size_t len, const char *name, struct hezo_policy **out,
		      struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	struct pctx c = {.name = name ? name : "(policy)", .err = err};
	int r;

	r = parse_doc(&c, buf, len, &p);
	if (r < 0)
		return r;
	*out = TAKE_PTR(p);
	return 0;
}

int hezo_policy_check(const char *buf, size_t len, const char *name, char ***msgs, size_t *nmsgs,
		      struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	struct pctx c = {.name = name ? name : "(policy)", .err = err, .collect = true};
	int r;

	r = parse_doc(&c, buf, len, &p);
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
