/* Kubernetes pod volumes: a bind source under the kubelet's directory is one of this pod's own. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-cleanup.h"
#include "hezo-error.h"
#include "hezo-json.h"
#include "policy-internal.h"

/*
 * What kubelet binds from its pod directory ROOT/pods/UID/: volumes (secrets, configMaps, the
 * service-account token, emptyDir, projected), their subPaths, the pod's /etc/hosts and each
 * container's termination log. The pod directory as a whole also holds other containers' files
 * and plugins' state.
 */
static const char *const pod_entries[] = {"volumes/", "volume-subpaths/", "etc-hosts",
					  "containers/"};

static const char *annotation(const struct hezo_json *spec, const char *key)
{
	return hezo_json_string(hezo_json_get(hezo_json_get(spec, "annotations"), key));
}

static const char *netns_path(const struct hezo_json *spec)
{
	const struct hezo_json *nss = hezo_json_get_path(spec, "linux.namespaces");

	HEZO_JSON_FOREACH (i, nss) {
		const char *t = hezo_json_string(hezo_json_get(nss->items[i], "type"));
		const char *path = hezo_json_string(hezo_json_get(nss->items[i], "path"));

		if (t && strcmp(t, "network") == 0)
			return path && path[0] ? path : NULL;
	}
	return NULL;
}

static bool under_allowed(const struct hezo_policy *p, const char *path)
{
	for (size_t i = 0; i < p->allowed_sources.n; i++)
		if (hezo_policy_path_under(path, p->allowed_sources.v[i]))
			return true;
	return false;
}

static bool pod_entry_ok(const char *rest)
{
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(pod_entries); i++) {
		size_t n = strlen(pod_entries[i]);

		if (pod_entries[i][n - 1] == '/' ? strncmp(rest, pod_entries[i], n) == 0 && rest[n]
						 : strcmp(rest, pod_entries[i]) == 0)
			return true;
	}
	return false;
}

/*
 * The pod the container is in: the uid its sandbox's record holds (env->pod_uid, found by the
 * sandbox-id annotation among the shim's live sandboxes), and only if that sandbox holds the
 * network namespace the container joins. The container's own sandbox-uid annotation names no pod.
 */
static int own_pod(const struct hezo_apply_env *env, const struct hezo_json *spec, const char **uid,
		   struct hezo_error **err)
{
	const char *type = annotation(spec, "io.kubernetes.cri.container-type");
	const char *sandbox = annotation(spec, "io.kubernetes.cri.sandbox-id");
	const char *ns = netns_path(spec);
	_cleanup_free_ char *owner = NULL;
	int r;

	*uid = NULL;
	if (!type || strcmp(type, "container") != 0 || !sandbox || !ns || !env || !env->pod_uid ||
	    !env->ns_owner)
		return 0;
	r = env->ns_owner(env->data, "net", ns, ns, &owner, err);
	if (r == -ESRCH || (r == 0 && (!owner || strcmp(owner, sandbox) != 0)))
		return 0;
	if (r < 0)
		return r;
	*uid = env->pod_uid;
	return 0;
}

int hezo_policy_check_kubelet_source(const struct hezo_policy *p, const struct hezo_apply_env *env,
				     const struct hezo_json *spec, size_t idx, const char *dest,
				     const char *src, bool *handled, struct hezo_error **err)
{
	char buf[PATH_MAX];
	const char *root = p->kubelet_root, *rest, *slash, *uid = NULL;
	size_t rl, ul;
	int r;

	*handled = false;
	if (!root)
		return 0;
	if (!hezo_policy_path_under(src, root)) {
		const char *real = realpath(root, buf);

		if (!real || !hezo_policy_path_under(src, real)) {
			/* Above it: the caller's "not under an allowed root" comes first. */
			if ((hezo_policy_path_under(root, src) ||
			     (real && hezo_policy_path_under(real, src))) &&
			    under_allowed(p, src))
				return hezo_policy_ferr(
					err,
					"mounts[%zu] (%s): bind source %s holds the "
					"kubelet's directory (%s)",
					idx, dest, src, root);
			return 0;
		}
		root = real;
	}
	*handled = true;
	rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
	rest = src + rl;
	if (strncmp(rest, "/pods/", 6) != 0 || !(slash = strchr(rest + 6, '/')) ||
	    slash == rest + 6 || !pod_entry_ok(slash + 1))
		return hezo_policy_ferr(err,
					"mounts[%zu] (%s): bind source %s is in the kubelet's "
					"directory (%s) and is not a pod's volume, etc-hosts or "
					"termination log",
					idx, dest, src, root);
	ul = (size_t)(slash - (rest + 6));
	r = own_pod(env, spec, &uid, err);
	if (r < 0)
		return hezo_error_prefix(err, "mounts[%zu] (%s)", idx, dest);
	if (!uid)
		return hezo_policy_ferr(err,
					"mounts[%zu] (%s): bind source %s is a pod's and this "
					"container is no app container of a running pod sandbox",
					idx, dest, src);
	if (strlen(uid) != ul || strncmp(rest + 6, uid, ul) != 0)
		return hezo_policy_ferr(err,
					"mounts[%zu] (%s): bind source %s is pod %.*s's, not this "
					"container's pod %s",
					idx, dest, src, (int)ul, rest + 6, uid);
	return 0;
}
