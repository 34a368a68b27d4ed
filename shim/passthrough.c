/*
 * Every verb policy does not need to see (start, state, kill, ps, pause, resume, checkpoint,
 * events, features, list --help, and ones we do not know): execve the backend that created the
 * container, with the arguments untouched.
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
int shim_cmd_unrecorded(struct shim_ctx *ctx, const struct shim_verb *v, bool force,
			struct hezo_error **err)
{
	const char *verb = v->name;
	int errnum = *err ? (*err)->errnum : EINVAL;

	if (strcmp(verb, "delete") != 0 && strcmp(verb, "kill") != 0 && strcmp(verb, "state") != 0)
		return -errnum;
	if (errnum != ENOENT)
		shim_log(ctx, "warning",
			 "container %s has no record and no backend can be chosen (%s)", v->id,
			 *err && (*err)->msg ? (*err)->msg : "unknown error");
	hezo_error_free(TAKE_PTR(*err));
	if (strcmp(verb, "delete") == 0 && force)
		return 0;
	/* On stderr too, as runc's: containerd's shim matches "does not exist" there. */
	ctx->fail_stderr = true;
	return hezo_error_set(err, ENOENT, "container \"%s\" does not exist", v->id);
}

int shim_cmd_passthrough(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *rec = NULL;
	_cleanup_strv_ struct hezo_strv av = {0};
	_cleanup_target_ struct shim_target t = {0};
	const char *verb = v->name;
	const char *id = verb_without_id(verb) ? NULL : v->id;
	int r;

	/*
	 * A verb we do not know is refused whatever the backend: it could be one that starts or
	 * changes a container without the policy seeing it (fail closed), and the backend's own
	 * answer (runc's help topic, runsc's usage page) would not say who refused it.
	 */
	if (shim_verb_spec(verb)->verb == NULL && strcmp(verb, "spec") != 0)
		return hezo_error_set(err, EINVAL, "unknown command \"%s\"", verb);
	if (id && (r = shim_validate_id(id, err)) < 0)
		return r;
	r = shim_resolve(ctx, id, &t, &rec, err);
	if (r < 0)
		return id && !rec ? shim_cmd_unrecorded(ctx, v, false, err) : r;
	if (!shim_backend_has_verb(t.backend, verb))
		return hezo_error_set(err, EINVAL, "unknown command \"%s\" (%s)", verb,
				      hezo_backend_name(t.backend));
	r = shim_backend_argv(ctx, &t, verb, v->argc, v->argv, &av, err);
	return r < 0 ? r : shim_exec(ctx, &av, err);
}
