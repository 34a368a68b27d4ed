/*
 * exec: the new process gets the container's policy too. The process JSON is clamped in place
 * and capabilities the policy does not allow are taken out of --cap before the backend runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "hezo-file.h"
#include "hezo-spec.h"
#include "shim.h"

/* Rewrite the process file given with --process, in its own directory, atomically. */
static int clamp_process_file(const struct hezo_policy *p, const char *path,
			      const struct shim_argv *prefix, int64_t nproc,
			      struct hezo_error **err)
{
	_cleanup_free_ char *dir = strdup(path), *data = NULL, *out = NULL;
	_cleanup_json_ struct hezo_json *proc = NULL;
	_cleanup_close_ int dfd = -1;
	const char *name;
	char *slash;
	size_t len;
	int r;

	if (!dir)
		return hezo_error_set(err, ENOMEM, "out of memory");
	slash = strrchr(dir, '/');
	if (!slash) {
		name = path;
		dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else {
		name = path + (slash - dir) + 1;
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (dfd < 0)
		return hezo_error_set_errno(err, errno, "exec --process %s", path);
	if (!*name)
		return hezo_error_set(err, EINVAL, "exec --process %s: not a file", path);
	r = hezo_read_file_at(dfd, name, HEZO_SPEC_MAX_SIZE, &data, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "exec --process %s", path);
	r = hezo_json_parse(data, len, &proc, err);
	if (r < 0)
		return hezo_error_prefix(err, "exec --process %s", path);
	if (proc->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "exec --process %s: not a JSON object", path);
	r = hezo_policy_apply_process(p, proc, err);
	/* runsc: the exec'd process counts against the container's RLIMIT_NPROC, never past it. */
	if (r == 0 && nproc > 0)
		r = shim_runsc_set_nproc(proc, nproc, err);
	if (r < 0)
		return hezo_error_prefix(err, "exec --process %s", path);
	if (prefix && prefix->n) {
		struct hezo_json *args = hezo_json_get_type(proc, "args", HEZO_JSON_ARRAY);
		_cleanup_json_ struct hezo_json *nargs = hezo_json_new_array();

		if (!args || args->len == 0)
			return hezo_error_set(err, EINVAL, "exec --process %s: args: missing",
					      path);
		for (size_t i = 0; nargs && i < prefix->n; i++)
			if (hezo_json_append(nargs, hezo_json_new_string(prefix->v[i])) < 0)
				return hezo_error_set(err, ENOMEM, "out of memory");
		HEZO_JSON_FOREACH (i, args)
			if (!nargs || hezo_json_append(nargs, hezo_json_clone(args->items[i])) < 0)
				return hezo_error_set(err, ENOMEM, "out of memory");
		if (hezo_json_set(proc, "args", TAKE_PTR(nargs)) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	r = hezo_json_dump(proc, false, &out, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "exec --process %s", path);
	r = hezo_write_file_atomic_at(dfd, name, out, len, 0600, err);
	if (r < 0)
		return hezo_error_prefix(err, "exec --process %s", path);
	return 0;
}

static bool cap_allowed(const char *cap, void *data)
{
	return hezo_policy_cap_allowed(data, cap);
}

int shim_cmd_exec(struct shim_ctx *ctx, const char *verb, int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_policy_ struct hezo_policy *p = NULL;
	struct shim_argv kept = {0}, av = {0}, prefix = {0}, final = {0};
	_cleanup_json_ struct hezo_json *rec = NULL;
	struct shim_target t = {0};
	struct shim_args a = {0};
	const char *id, *process;
	int64_t nproc = 0;
	size_t dropped;
	int r;

	r = shim_parse_args(shim_verb_spec(verb), argc, argv, &a, &err);
	if (r < 0)
		goto fail;
	if (a.help) {
		shim_args_done(&a);
		return shim_cmd_passthrough(ctx, verb, argc, argv);
	}
	id = shim_args_positional(&a, 0);
	r = shim_validate_id(id, &err);
	if (r < 0)
		goto fail;

	r = shim_resolve_policy(ctx, id, &t, &p, &err);
	if (r < 0)
		goto fail;

	/* runsc would start the process without the container's seccomp profile. */
	if (t.backend == HEZO_BACKEND_RUNSC) {
		r = shim_record_read(ctx, id, &rec, &err);
		if (r == -ENOENT)
			r = hezo_error_set(&err, ENOENT, "exec %s: no record of this container",
					   id);
		if (r < 0)
			goto fail;
		r = shim_runsc_exec_prefix(rec, id, &prefix, &err);
		if (r < 0)
			goto fail;
		/* box.pids is the workload's count only where create recorded the backstop too. */
		if (hezo_json_get_path(rec, "box.hostPids"))
			(void)hezo_json_get_int64(hezo_json_get_path(rec, "box.pids"), &nproc);
	}

	process = shim_args_get(&a, "process");
	if (process) {
		r = clamp_process_file(p, process, &prefix, nproc, &err);
		if (r < 0)
			goto fail;
	}

	if (shim_exec_filter(&a, argv, cap_allowed, p, &kept, &dropped) < 0) {
		r = hezo_error_set(&err, ENOMEM, "out of memory");
		goto fail;
	}
	if (dropped)
		shim_log(ctx, "warning", "exec %s: %zu --cap value(s) dropped by policy", id,
			 dropped);
	if (prefix.n && !process) {
		/* The command follows the ID: put the helper in front of it. */
		struct shim_args k = {0};

		r = shim_parse_args(shim_verb_spec(verb), (int)kept.n, kept.v, &k, &err);
		for (int i = 0; r == 0 && i < (int)kept.n; i++) {
			r = shim_argv_push(&final, kept.v[i]);
			for (size_t j = 0; r == 0 && i == k.positional && j < prefix.n; j++)
				r = shim_argv_push(&final, prefix.v[j]);
		}
		shim_args_done(&k);
		if (r < 0) {
			if (!err)
				r = hezo_error_set(&err, ENOMEM, "out of memory");
			goto fail;
		}
		shim_argv_done(&kept);
		kept = final;
		final = (struct shim_argv){0};
	}
	r = shim_backend_argv(ctx, &t, verb, (int)kept.n, kept.v, &av, &err);
	if (r < 0)
		goto fail;
	shim_args_done(&a);
	r = shim_exec(ctx, &av, &err);
fail:
	shim_args_done(&a);
	shim_argv_done(&prefix);
	shim_argv_done(&final);
	shim_argv_done(&kept);
	shim_argv_done(&av);
	shim_target_done(&t);
	return shim_fail(ctx, err);
}
