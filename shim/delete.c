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

int shim_cmd_delete(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *rec = NULL, *note = NULL;
	_cleanup_strv_ struct hezo_strv av = {0}, forced = {0};
	_cleanup_target_ struct shim_target t = {0};
	const char *id = v->id;
	bool force = shim_args_bool(&v->args, "force");
	bool one = v->args.npos == 1;
	int r;

	r = shim_resolve(ctx, id, &t, &rec, err);
	if (r < 0)
		return rec ? r : shim_cmd_unrecorded(ctx, v, force, err);
	if (t.backend == HEZO_BACKEND_RUNSC && !force) {
		r = hezo_strv_push(&forced, "--force");
		for (int i = 0; r == 0 && i < v->argc; i++)
			r = hezo_strv_push(&forced, v->argv[i]);
		if (r < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
		r = shim_backend_argv(ctx, &t, v->name, (int)forced.n, forced.v, &av, err);
	} else {
		r = shim_backend_argv(ctx, &t, v->name, v->argc, v->argv, &av, err);
	}
	/* runsc has no such container (its delete --force would succeed): the record goes. */
	if (r == -ENOENT && t.backend == HEZO_BACKEND_RUNSC) {
		hezo_error_free(TAKE_PTR(*err));
		shim_runsc_waiter_tell(ctx, id, 'D');
		shim_runsc_pod_cgroup_remove(ctx, id, rec);
		shim_record_remove_same(ctx, id, rec);
		return 0;
	}
	if (r < 0)
		return r;
	/* Before the backend removes the cgroup: did a limit end (or hit) the container? */
	if (one && shim_ended_check(rec, &note) == 0 && note) {
		_cleanup_error_ struct hezo_error *e = NULL;
		const struct hezo_json *why = hezo_json_get(note, "reasons");

		HEZO_JSON_FOREACH (i, why)
			shim_log(ctx, "warning", "container %s: %s", id,
				 hezo_json_string(why->items[i]) ?: "?");
		if (shim_ended_write(ctx, id, note, &e) < 0)
			shim_log(ctx, "warning", "container %s: %s", id, e->msg);
	}
	if (t.backend == HEZO_BACKEND_RUNSC && one) {
		_cleanup_error_ struct hezo_error *e = NULL;

		if (shim_stage_root_again(ctx, id, rec, &e) < 0)
			shim_log(
				ctx, "warning",
				"container %s: runsc may not find its root overlay's filestore: %s",
				id, e && e->msg ? e->msg : "failed");
	}
	r = shim_spawn_wait(ctx, &av, err);
	if (r < 0)
		return r;
	/* A runsc pod's app container deleted before it ran (or while it runs): no waiter stays. */
	if (t.backend == HEZO_BACKEND_RUNSC && one)
		shim_runsc_waiter_tell(ctx, id, 'D');
	if (r != 0 && one) {
		_cleanup_error_ struct hezo_error *e = NULL;
		_cleanup_free_ char *status = NULL;
		long pid;

		/*
		 * Gone already (a create the backend refused, a failed start under runsc, a run
		 * that ended): the record goes too, so it never stands for a live container.
		 */
		if (shim_runsc_state(ctx, &t, id, &status, &pid, &e) == -ENOENT) {
			shim_runsc_pod_cgroup_remove(ctx, id, rec);
			shim_record_remove_same(ctx, id, rec);
		}
	}
	if (r == 0 && one) {
		/* A runsc pod sandbox's cgroup v2 (runsc-pod.c): runsc never knew it. */
		shim_runsc_pod_cgroup_remove(ctx, id, rec);
		shim_record_remove_same(ctx, id, rec);
	}
	return r;
}
