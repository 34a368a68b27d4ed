/*
 * At create: make hezo-init PID 1 of the box (policy "init"), bind-mounted read-only from the host
 * and put in front of process.args, unless the container already has an init of its own.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-spec.h"
#include "shim.h"

/* Inits engines put there themselves (Docker's and podman's --init, and those images bring). */
static const char *const known_inits[] = {"docker-init", "tini",      "tini-static",
					  "catatonit",	 "dumb-init", "hezo-init"};

int shim_init_helper(char *buf, size_t size)
{
	/* Next to the shim (bindir), the build tree's init/, else the libexec directory. */
	static const char *const rel[] = {"hezo-init", "../init/hezo-init",
					  "../libexec/hezo/hezo-init", NULL};

	return shim_find_helper("HEZO_INIT", rel, buf, size);
}

const char *shim_init_skip_reason(const struct hezo_policy *p, const struct hezo_json *spec)
{
	const struct hezo_json *ann = hezo_spec_annotations(spec);
	const struct hezo_json *args = hezo_json_get_path(spec, "process.args");
	const char *a0, *base;

	if (!hezo_policy_init(p))
		return "off";
	/* A pod's sandbox (pause) reaps the pod's orphans itself: containerd CRI, CRI-O. */
	if (strcmp(hezo_json_string(hezo_json_get(ann, "io.kubernetes.cri.container-type")) ?: "",
		   "sandbox") == 0 ||
	    strcmp(hezo_json_string(hezo_json_get(ann, "io.kubernetes.cri-o.ContainerType")) ?: "",
		   "sandbox") == 0)
		return "sandbox";
	if (!args || args->type != HEZO_JSON_ARRAY || args->len == 0 ||
	    !(a0 = hezo_json_string(args->items[0])))
		return "no-args"; /* the backend refuses it; nothing to put init in front of */
	base = strrchr(a0, '/') ? strrchr(a0, '/') + 1 : a0;
	if (strcmp(a0, SHIM_INIT_DEST) == 0 || strcmp(a0, "/run/podman-init") == 0)
		return "engine";
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(known_inits); i++)
		if (strcmp(base, known_inits[i]) == 0)
			return "engine";
	return NULL;
}

int shim_init_prepare(const struct hezo_policy *p, struct hezo_json *spec, const char **how,
		      struct hezo_error **err)
{
	struct hezo_json *mounts = hezo_json_get_type(spec, "mounts", HEZO_JSON_ARRAY);
	struct hezo_json *process = hezo_spec_process(spec);
	struct hezo_json *args = hezo_json_get_type(process, "args", HEZO_JSON_ARRAY);
	_cleanup_json_ struct hezo_json *nargs = NULL;
	char helper[PATH_MAX];
	int r;

	*how = shim_init_skip_reason(p, spec);
	if (*how)
		return 0;
	*how = "hezo";
	/* The mount point must be creatable whatever the root: /dev is a tmpfs. */
	if (!mounts || !shim_has_dev_tmpfs(mounts))
		return hezo_error_set(err, EINVAL,
				      "init: no tmpfs on /dev to mount hezo-init into (policy "
				      "\"init\": false runs the workload as PID 1)");
	if (shim_init_helper(helper, sizeof(helper)) < 0)
		return hezo_error_set(
			err, ENOENT,
			"init: hezo-init not found (set HEZO_INIT, or policy \"init\": "
			"false)");
	nargs = hezo_json_new_array();
	if (!nargs)
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = hezo_json_append(nargs, hezo_json_new_string(SHIM_INIT_DEST));
	r = r ?: hezo_json_append(nargs, hezo_json_new_string("--"));
	HEZO_JSON_FOREACH (i, args)
		r = r ?: hezo_json_append(nargs, hezo_json_clone(args->items[i]));
	r = r ?: hezo_json_set(process, "args", TAKE_PTR(nargs));
	if (r < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	return shim_mount_helper(mounts, SHIM_INIT_DEST, helper, err);
}
