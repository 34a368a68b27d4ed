/*
 * update: whichever form the engine used (--resources FILE|- or runc's flags), the backend gets
 * one LinuxResources object clamped to the container's policy, on its stdin.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hezo-file.h"
#include "hezo-spec.h"
#include "shim.h"

#define RESOURCES_MAX (1024 * 1024)

static int read_resources(const char *src, struct hezo_json **out, struct hezo_error **err)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r;

	if (strcmp(src, "-") == 0)
		r = hezo_read_fd(STDIN_FILENO, RESOURCES_MAX, &data, &len, err);
	else
		r = hezo_read_file_at(AT_FDCWD, src, RESOURCES_MAX, &data, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "update --resources %s", src);
	r = hezo_json_parse(data, len, out, err);
	if (r < 0)
		return hezo_error_prefix(err, "update --resources %s", src);
	if ((*out)->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "update --resources %s: not a JSON object", src);
	return 0;
}

/* The clamped JSON as the backend's stdin: a memfd holds any size, unlike a pipe. */
static int resources_stdin(const struct hezo_json *res, struct hezo_error **err)
{
	_cleanup_free_ char *data = NULL;
	_cleanup_close_ int fd = -1;
	size_t len;
	int r;

	r = hezo_json_dump(res, false, &data, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "update");
	fd = memfd_create("hezo-resources", MFD_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "update: memfd_create");
	r = hezo_write_all(fd, data, len);
	if (r < 0)
		return hezo_error_set_errno(err, -r, "update: write resources");
	if (lseek(fd, 0, SEEK_SET) < 0 || dup2(fd, STDIN_FILENO) < 0)
		return hezo_error_set_errno(err, errno, "update: stdin");
	return 0;
}

int shim_cmd_update(struct shim_ctx *ctx, const char *verb, int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *res = NULL;
	struct shim_argv kept = {0}, av = {0};
	struct shim_target t = {0};
	struct shim_args a = {0};
	const char *id, *src;
	int r;

	r = shim_parse_args(shim_verb_spec(verb), argc, argv, &a, &err);
	if (r < 0)
		goto fail;
	if (a.help) {
		shim_args_done(&a);
		return shim_cmd_passthrough(ctx, verb, argc, argv);
	}
	id = shim_args_positional(&a, 0);
	if (a.npos != 1) {
		r = hezo_error_set(&err, EINVAL,
				   "update: expected exactly one container ID, got %zu", a.npos);
		goto fail;
	}
	r = shim_validate_id(id, &err);
	if (r < 0)
		goto fail;
	r = shim_resolve_policy(ctx, id, &t, &p, &err);
	if (r < 0)
		goto fail;

	/* As runc: with --resources the resource flags are ignored. */
	src = shim_args_get(&a, "resources");
	if (src && *src)
		r = read_resources(src, &res, &err);
	else
		r = shim_update_flags_to_json(&a, &res, &err);
	if (r < 0)
		goto fail;
	if (!res && !(res = hezo_json_new_object())) {
		r = hezo_error_set(&err, ENOMEM, "out of memory");
		goto fail;
	}
	/* Spelling first: runsc's own refusals below must not read a key runc would fold. */
	r = hezo_spec_check_keys(res, HEZO_SPEC_DOC_RESOURCES, "resources", &err);
	if (r < 0) {
		hezo_error_prefix(&err, "update %s", id);
		goto fail;
	}
	if (t.backend == HEZO_BACKEND_RUNSC && (r = shim_runsc_check_update(res, id, &err)) < 0)
		goto fail;
	r = hezo_policy_apply_resources(p, res, &err);
	if (r < 0) {
		hezo_error_prefix(&err, "update %s", id);
		goto fail;
	}

	/* runsc has no update: the shim writes the sandbox's cgroup itself. */
	if (t.backend == HEZO_BACKEND_RUNSC) {
		r = shim_runsc_update(ctx, &t, id, p, res, &err);
		if (r < 0)
			goto fail;
		shim_args_done(&a);
		shim_target_done(&t);
		return 0;
	}
	r = shim_update_backend_args(&a, argv, &kept);
	if (r < 0) {
		r = hezo_error_set(&err, ENOMEM, "out of memory");
		goto fail;
	}
	r = shim_backend_argv(ctx, &t, verb, (int)kept.n, kept.v, &av, &err);
	if (r < 0)
		goto fail;
	r = resources_stdin(res, &err);
	if (r < 0)
		goto fail;
	shim_args_done(&a);
	r = shim_exec(ctx, &av, &err);
fail:
	shim_args_done(&a);
	shim_argv_done(&kept);
	shim_argv_done(&av);
	shim_target_done(&t);
	return shim_fail_stderr(ctx, err);
}
