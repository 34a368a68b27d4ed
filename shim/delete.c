/*
 * delete: the one pass-through verb with work after it. The backend runs as a child so the
 * container's record goes once the backend has deleted the container or says there is none; a
 * limit the container reached is noted first (ended.c), while its cgroup is still there. runsc's
 * delete is always forced: without --force it leaves a created sandbox (and its gofer) running.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

int shim_cmd_delete(struct shim_ctx *ctx, const char *verb, int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *rec = NULL, *note = NULL;
	struct shim_argv av = {0};
	struct shim_target t = {0};
	struct shim_args a = {0};
	const char *id;
	bool force;
	int r;

	r = shim_parse_args(shim_verb_spec(verb), argc, argv, &a, &err);
	if (r < 0)
		goto fail;
	if (a.help || a.npos == 0) {
		/* Nothing to delete: the backend prints its help or its usage error. */
		shim_args_done(&a);
		return shim_cmd_passthrough(ctx, verb, argc, argv);
	}
	id = shim_args_positional(&a, 0);
	force = shim_args_bool(&a, "force");
	r = shim_validate_id(id, &err);
	if (r < 0)
		goto fail;
	r = shim_resolve(ctx, id, &t, &rec, &err);
	if (r < 0) {
		shim_args_done(&a);
		if (!rec)
			return shim_cmd_unrecorded(ctx, verb, id, force, err);
		goto fail;
	}
	if (t.backend == HEZO_BACKEND_RUNSC && !force) {
		struct shim_argv forced = {0};

		r = shim_argv_push(&forced, "--force");
		for (int i = 0; r == 0 && i < argc; i++)
			r = shim_argv_push(&forced, argv[i]);
		if (r == 0)
			r = shim_backend_argv(ctx, &t, verb, (int)forced.n, forced.v, &av, &err);
		else
			r = hezo_error_set(&err, ENOMEM, "out of memory");
		shim_argv_done(&forced);
	} else {
		r = shim_backend_argv(ctx, &t, verb, argc, argv, &av, &err);
	}
	if (r < 0)
		goto fail;
	/* Before the backend removes the cgroup: did a limit end (or hit) the container? */
	if (a.npos == 1 && shim_ended_check(rec, &note) == 0 && note) {
		_cleanup_error_ struct hezo_error *e = NULL;
		const struct hezo_json *why = hezo_json_get(note, "reasons");

		HEZO_JSON_FOREACH (i, why)
			shim_log(ctx, "warning", "container %s: %s", id,
				 hezo_json_string(why->items[i]) ?: "?");
		if (shim_ended_write(ctx, id, note, &e) < 0)
			shim_log(ctx, "warning", "container %s: %s", id, e->msg);
	}
	r = shim_spawn_wait(ctx, &av, &err);
	if (r < 0)
		goto fail;
	if (r != 0 && a.npos == 1) {
		_cleanup_error_ struct hezo_error *e = NULL;
		_cleanup_free_ char *status = NULL;
		long pid;

		/*
		 * Gone already (a create the backend refused, a failed start under runsc, a run
		 * that ended): the record goes too, so it never stands for a live container.
		 */
		if (shim_runsc_state(ctx, &t, id, &status, &pid, &e) == -ENOENT)
			shim_record_remove(ctx, id);
	}
	if (r == 0 && a.npos == 1)
		shim_record_remove(ctx, id);
	shim_args_done(&a);
	shim_argv_done(&av);
	shim_target_done(&t);
	return r;
fail:
	shim_args_done(&a);
	shim_argv_done(&av);
	shim_target_done(&t);
	return shim_fail(ctx, err);
}
