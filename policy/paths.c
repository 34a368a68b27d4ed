/* Fields of config.json that name things outside the box (namespace paths): whose they are and
 * whether the container may have them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "policy-internal.h"

static const struct {
	const char *type;
	const char *proc;
	bool required; /* absent or the host's is refused unless allowHost says so */
	unsigned host_bit;
} ns_kinds[] = {
	{"pid", "pid", true, HEZO_NS_PID},
	{"network", "net", true, HEZO_NS_NETWORK},
	{"mount", "mnt", true, 0},
	{"ipc", "ipc", true, HEZO_NS_IPC},
	{"uts", "uts", true, HEZO_NS_UTS},
	{"user", "user", false, 0},
	{"cgroup", "cgroup", false, HEZO_NS_CGROUP},
	{"time", "time", false, 0},
};

/* The list at key, created when absent or null; a value of another type is an error. */
static struct hezo_json *want_array(struct hezo_json *parent, const char *key, const char *field,
				    struct hezo_error **err)
{
	struct hezo_json *v = hezo_json_get(parent, key);

	if (v && v->type == HEZO_JSON_NULL) {
		hezo_json_remove(parent, key);
		v = NULL;
	}
	if (v && v->type != HEZO_JSON_ARRAY) {
		hezo_error_set(err, EINVAL, "%s: expected a list, got %s", field,
			       hezo_json_type_name(v->type));
		return NULL;
	}
	v = hezo_json_ensure_array(parent, key);
	if (!v)
		hezo_error_set(err, ENOMEM, "out of memory");
	return v;
}

int hezo_policy_check_namespaces(const struct hezo_policy *p, struct hezo_json *linux_,
				 struct hezo_error **err)
{
	struct hezo_json *nss = want_array(linux_, "namespaces", "linux.namespaces", err);
	bool own[HEZO_ARRAY_SIZE(ns_kinds)] = {0};

	if (!nss)
		return -EINVAL;
	HEZO_JSON_FOREACH (i, nss) {
		const struct hezo_json *n = nss->items[i];
		const char *type = hezo_json_string(hezo_json_get(n, "type"));
		const struct hezo_json *pathv = hezo_json_get(n, "path");
		size_t k;
		bool host = false;

		if (!type)
			return hezo_error_set(err, EINVAL,
					      "linux.namespaces[%zu]: type: expected a string", i);
		for (k = 0; k < HEZO_ARRAY_SIZE(ns_kinds); k++)
			if (strcmp(type, ns_kinds[k].type) == 0)
				break;
		if (k == HEZO_ARRAY_SIZE(ns_kinds)) {
			char q[256];
			hezo_policy_quote(q, sizeof(q), type);
			return hezo_error_set(err, EINVAL,
					      "linux.namespaces[%zu]: unknown namespace type %s", i,
					      q);
		}
		if (pathv && pathv->type != HEZO_JSON_NULL) {
			const char *path = hezo_json_string(pathv);
			char self[64];
			struct stat a, b;

			if (!path)
				return hezo_error_set(
					err, EINVAL,
					"linux.namespaces[%zu] (%s): path: expected a string", i,
					type);
			if (path[0]) {
				/* Joining the shim's own namespace is joining the host's. */
				snprintf(self, sizeof(self), "/proc/self/ns/%s", ns_kinds[k].proc);
				if (stat(path, &a) < 0)
					return hezo_error_set_errno(
						err, errno, "linux.namespaces[%zu] (%s): path %s",
						i, type, path);
				if (stat(self, &b) == 0 && a.st_dev == b.st_dev &&
				    a.st_ino == b.st_ino)
					host = true;
			}
		}
		if (host) {
			/* The host's user or time namespace is the same as having none. */
			if (!ns_kinds[k].required && !ns_kinds[k].host_bit)
				continue;
			if (!(ns_kinds[k].host_bit & p->allow_host_ns))
				return hezo_error_set(
					err, EINVAL,
					"linux.namespaces: host %s namespace not allowed", type);
			continue;
		}
		own[k] = true;
	}
	for (size_t k = 0; k < HEZO_ARRAY_SIZE(ns_kinds); k++) {
		if (own[k])
			continue;
		if (ns_kinds[k].required && !(ns_kinds[k].host_bit & p->allow_host_ns))
			return hezo_error_set(err, EINVAL,
					      "linux.namespaces: host %s namespace not allowed",
					      ns_kinds[k].type);
		if (strcmp(ns_kinds[k].type, "user") == 0 && p->require_user)
			return hezo_error_set(err, EINVAL,
					      "linux.namespaces: a user namespace is required");
	}
	return 0;
}
