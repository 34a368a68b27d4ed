/* The effective policy written back out as JSON, in the file format so it can be parsed again,
 * and the egress part that the hook and proxyd read. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-parse.h"

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

static struct hezo_json *weights_json(const struct hezo_policy *p)
{
	_cleanup_json_ struct hezo_json *o = hezo_json_new_object();

	if (!o || hezo_json_set(o, "cpuShares", hezo_json_new_uint(p->cpu_shares)) < 0 ||
	    hezo_json_set(o, "blkioWeight", hezo_json_new_uint(p->blkio_weight)) < 0)
		return NULL;
	return TAKE_PTR(o);
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

struct hezo_json *hezo_policy_file_json(const struct hezo_policy *p)
{
	_cleanup_json_ struct hezo_json *o = hezo_json_new_object();
	struct hezo_json *backends, *res, *lim, *mounts, *ns, *tmpfs, *allow_host, *allow_b, *exec;
	int r = 0;

	if (!o)
		return NULL;
	r = r ?: hezo_json_set(o, "version", hezo_json_new_int(1));
	r = r
		    ?: hezo_json_set(o, "mode",
				     hezo_json_new_string(p->production ? "production" : "dev"));
	r = r
		    ?: hezo_json_set(o, "backend",
				     hezo_json_new_string(hezo_policy_backend_names[p->backend]));
	allow_b = r ? NULL : hezo_json_ensure_array(o, "allowBackends");
	for (int b = 0; allow_b && r == 0 && b < HEZO_BACKEND_COUNT; b++)
		if (p->allow_backends[b])
			r = hezo_json_append(allow_b,
					     hezo_json_new_string(hezo_policy_backend_names[b]));
	backends = r ? NULL : hezo_json_ensure_object(o, "backends");
	for (int b = 0; backends && r == 0 && b < HEZO_BACKEND_COUNT; b++) {
		struct hezo_json *be =
			hezo_json_ensure_object(backends, hezo_policy_backend_names[b]);
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
	exec = r ? NULL : hezo_json_ensure_object(o, "exec");
	r = r ?: (exec ? 0 : -ENOMEM);
	r = r ?: hezo_json_set(exec, "tmpfs", hezo_json_new_bool(p->tmpfs_exec));
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
	for (size_t i = 0; r == 0 && i < HEZO_ARRAY_SIZE(hezo_policy_host_ns_names); i++)
		if (p->allow_host_ns & hezo_policy_host_ns_names[i].bit)
			r = hezo_json_append(
				allow_host,
				hezo_json_new_string(hezo_policy_host_ns_names[i].name));
	r = r ?: hezo_json_set(ns, "requireUser", hezo_json_new_bool(p->require_user));
	r = r ?: hezo_json_set(o, "cgroupParents", strv_json(&p->cgroup_parents));
	r = r ?: hezo_json_set(o, "allowedHooks", strv_json(&p->allowed_hooks));
	r = r ?: hezo_json_set(o, "egress", hezo_policy_egress_json(p));
	/* egress_json adds "project"; the file format has no such key. */
	if (r == 0)
		hezo_json_remove(hezo_json_get(o, "egress"), "project");
	r = r ?: hezo_policy_secrets_json(p, o);
	if (p->workspace || p->workspace_volume)
		r = r ?: hezo_json_set(o, "workspace", hezo_policy_workspace_json(p));
	r = r ?: hezo_policy_keys_json(p, o);
	r = r ?: hezo_json_set(o, "projectsDir", hezo_json_new_string(p->projects_dir));
	r = r ?: admission_json(p, o);
	r = r ?: hezo_json_set(o, "dockerPidFile", hezo_json_new_string(p->docker_pidfile));
	r = r
		    ?: hezo_json_set(o, "dockerInit",
				     p->docker_init ? hezo_json_new_string(p->docker_init)
						    : hezo_json_new_null());
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
	_cleanup_json_ struct hezo_json *o = hezo_policy_file_json(p);

	if (!o)
		return NULL;
	if (p->project && hezo_json_set(o, "project", hezo_json_new_string(p->project)) < 0)
		return NULL;
	return TAKE_PTR(o);
}
