/*
 * Every verb policy does not need to see (start, state, kill, ps, pause, resume, checkpoint,
 * events, features, list, and ones we do not know): execve the backend that created the container,
 * with the arguments untouched.
 */
#include <errno.h>
#include <string.h>

#include "shim.h"

/* Verbs that take no container: they go to the policy's default backend. */
static bool verb_without_id(const char *verb)
{
	return strcmp(verb, "features") == 0 || strcmp(verb, "list") == 0 ||
	       strcmp(verb, "spec") == 0 || strcmp(shim_verb_spec(verb)->verb ?: "", verb) != 0;
}

/*
 * A container with no record was never started through hezo-shim: every container the shim
 * hands to a backend is recorded first. When no backend can be chosen (broken policy, missing
 * runsc), cleanup must still succeed, or containerd could never forget a create that failed
 * before reaching a backend. So state, kill and delete answer themselves as runc would for an
 * unknown container; everything else fails closed with the policy's error.
 */
int shim_cmd_unrecorded(struct shim_ctx *ctx, const char *verb, const char *id, bool force,
			struct hezo_error *why)
{
	if (strcmp(verb, "delete") != 0 && strcmp(verb, "kill") != 0 && strcmp(verb, "state") != 0)
		return shim_fail(ctx, why);
	shim_log(ctx, "warning", "container %s has no record and no backend can be chosen (%s)", id,
		 why && why->msg ? why->msg : "unknown error");
	if (strcmp(verb, "delete") == 0 && force)
		return 0;
	{
		/* On stderr too, as runc's: containerd's shim matches "does not exist" there. */
		_cleanup_error_ struct hezo_error *err = NULL;

		hezo_error_set(&err, ENOENT, "container \"%s\" does not exist", id);
		return shim_fail_stderr(ctx, err);
	}
}

int shim_cmd_passthrough(struct shim_ctx *ctx, const char *verb, int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *rec = NULL;
	struct shim_argv av = {0};
	struct shim_target t = {0};
	struct shim_args a = {0};
	const char *id = NULL;
	int r;

	/*
	 * A verb we do not know is refused whatever the backend: it could be one that starts or
	 * changes a container without the policy seeing it (fail closed), and the backend's own
	 * answer (runc's help topic, runsc's usage page) would not say who refused it.
	 */
	if (shim_verb_spec(verb)->verb == NULL && strcmp(verb, "spec") != 0) {
		r = hezo_error_set(&err, EINVAL, "unknown command \"%s\"", verb);
		goto fail;
	}
	r = shim_parse_args(shim_verb_spec(verb), argc, argv, &a, &err);
	if (r < 0)
		goto fail;
	if (!a.help && !verb_without_id(verb))
		id = shim_args_positional(&a, 0);
	if (id && (r = shim_validate_id(id, &err)) < 0)
		goto fail;
	r = shim_resolve(ctx, id, &t, &rec, &err);
	if (r < 0) {
		shim_args_done(&a);
		if (id && !rec)
			return shim_cmd_unrecorded(ctx, verb, id, false, err);
		goto fail;
	}
	if (!shim_backend_has_verb(t.backend, verb)) {
		r = hezo_error_set(&err, EINVAL, "unknown command \"%s\" (%s)", verb,
				   hezo_backend_name(t.backend));
		goto fail;
	}
	r = shim_backend_argv(ctx, &t, verb, argc, argv, &av, &err);
	if (r < 0)
		goto fail;
	shim_args_done(&a);
	r = shim_exec(ctx, &av, &err);
fail:
	shim_args_done(&a);
	shim_argv_done(&av);
	shim_target_done(&t);
	return shim_fail(ctx, err);
}
