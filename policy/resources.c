/* linux.resources knobs beyond the limits apply.c sets: what an engine may not switch off. */
/*
 * memory.disableOOMKiller: runc writes oom_control's oom_kill_disable 1 (cgroup v1), after which
 * a workload at its memory limit is not killed but left hanging in the kernel's reclaim wait,
 * holding its memory and its pids for good. Set to false wherever it appears, config.json or
 * update, so the kernel's default (kill) holds.
 */
#include <errno.h>
#include <stdio.h>

#include "policy-internal.h"

int hezo_policy_clamp_oom(struct hezo_json *res, const char *field, struct hezo_error **err)
{
	struct hezo_json *mem = hezo_json_get(res, "memory");
	const struct hezo_json *v;

	if (!mem || mem->type != HEZO_JSON_OBJECT)
		return 0; /* apply.c has judged its type */
	v = hezo_json_get(mem, "disableOOMKiller");
	if (v && v->type != HEZO_JSON_TRUE && v->type != HEZO_JSON_FALSE &&
	    v->type != HEZO_JSON_NULL)
		return hezo_policy_ferr(err, "%s.memory.disableOOMKiller: expected true or false",
					field);
	if (v && hezo_json_set(mem, "disableOOMKiller", hezo_json_new_bool(false)) < 0)
		return hezo_policy_nomem(err);
	return 0;
}
