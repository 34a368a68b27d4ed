/* linux.resources knobs beyond the limits apply.c sets: what an engine may not switch off. */
/*
 * memory.disableOOMKiller: runc writes oom_control's oom_kill_disable 1 (cgroup v1), after which
 * a workload at its memory limit is not killed but left hanging in the kernel's reclaim wait,
 * holding its memory and its pids for good. Set to false wherever it appears, config.json or
 * update, so the kernel's default (kill) holds.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

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

/* The smaller of a relative knob and its ceiling; absent or 0 (runc: unset) stays so. */
static int clamp_weight(struct hezo_json *obj, const char *key, uint64_t max, const char *field,
			struct hezo_error **err)
{
	const struct hezo_json *v = hezo_json_get(obj, key);
	uint64_t n;

	if (!v || v->type == HEZO_JSON_NULL)
		return 0;
	if (v->type != HEZO_JSON_NUMBER || hezo_json_get_uint64(v, &n) < 0)
		return hezo_policy_ferr(err, "%s.%s: expected a whole number", field, key);
	if (n > max && hezo_json_set(obj, key, hezo_json_new_uint(max)) < 0)
		return hezo_policy_nomem(err);
	return 0;
}

/*
 * cpu.shares and the block I/O weights are shares of contention among the host's cgroups: a box
 * at --cpu-shares 262144 outweighs 256 default ones. Each is the smaller of the engine's and the
 * policy's; config.json without cpu.shares (the kernel's 1024) gets the policy's when lower.
 */
int hezo_policy_clamp_weights(const struct hezo_policy *p, struct hezo_json *res, const char *field,
			      bool update, struct hezo_error **err)
{
	struct hezo_json *cpu = hezo_json_get(res, "cpu"), *bio = hezo_json_get(res, "blockIO");
	const struct hezo_json *shares;
	struct hezo_json *wd;
	char f[160];
	int r;

	snprintf(f, sizeof(f), "%s.cpu", field);
	if (cpu && cpu->type == HEZO_JSON_OBJECT) {
		shares = hezo_json_get(cpu, "shares");
		/* Unset (absent or 0, which runc skips) is the kernel's 1024. */
		if (!update && p->cpu_shares < 1024 &&
		    (!shares || shares->type == HEZO_JSON_NULL ||
		     (shares->type == HEZO_JSON_NUMBER && strcmp(shares->str, "0") == 0))) {
			if (hezo_json_set(cpu, "shares", hezo_json_new_uint(p->cpu_shares)) < 0)
				return hezo_policy_nomem(err);
		}
		r = clamp_weight(cpu, "shares", p->cpu_shares, f, err);
		if (r < 0)
			return r;
	}
	if (!bio || bio->type == HEZO_JSON_NULL)
		return 0;
	snprintf(f, sizeof(f), "%s.blockIO", field);
	if (bio->type != HEZO_JSON_OBJECT)
		return hezo_policy_ferr(err, "%s: expected an object", f);
	r = clamp_weight(bio, "weight", p->blkio_weight, f, err);
	r = r ?: clamp_weight(bio, "leafWeight", p->blkio_weight, f, err);
	if (r < 0)
		return r;
	wd = hezo_json_get(bio, "weightDevice");
	if (!wd || wd->type == HEZO_JSON_NULL)
		return 0;
	if (wd->type != HEZO_JSON_ARRAY)
		return hezo_policy_ferr(err, "%s.weightDevice: expected a list", f);
	HEZO_JSON_FOREACH (i, wd) {
		snprintf(f, sizeof(f), "%s.blockIO.weightDevice[%zu]", field, i);
		if (wd->items[i]->type != HEZO_JSON_OBJECT)
			return hezo_policy_ferr(err, "%s: expected an object", f);
		r = clamp_weight(wd->items[i], "weight", p->blkio_weight, f, err);
		r = r ?: clamp_weight(wd->items[i], "leafWeight", p->blkio_weight, f, err);
		if (r < 0)
			return r;
	}
	return 0;
}
