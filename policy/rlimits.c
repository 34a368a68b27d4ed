/* A process's rlimits and OOM score: what the box lets a container (or an exec) raise. */
/*
 * runc sets each rlimit with setrlimit() as root before it drops privileges, so a hard limit above
 * the host's is granted whenever the host's root holds CAP_SYS_RESOURCE; and it writes
 * oomScoreAdj to /proc/self/oom_score_adj the same way. The table below is the decision for every
 * rlimit runc 1.1.5 knows; docs/policy.md has the same rules.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "policy-internal.h"

enum rlimit_rule {
	RL_KEEP,  /* bounded elsewhere, or only ever lowers something */
	RL_CLAMP, /* hard and soft at most the policy's ceiling; added when absent */
};

static const struct {
	const char *type;
	enum rlimit_rule rule;
} rlimit_rules[] = {
	/* SCHED_FIFO/RR up to this priority: a busy loop then ignores CFS quota and shares. */
	{"RLIMIT_RTPRIO", RL_CLAMP},
	/* Nice values down to 20 - N: the box would outrank the host's own work. */
	{"RLIMIT_NICE", RL_CLAMP},
	/* CPU time of realtime tasks; with RLIMIT_RTPRIO at 0 there are none. */
	{"RLIMIT_RTTIME", RL_KEEP},
	/* Processes per user: the pids cgroup is the ceiling whatever this says. */
	{"RLIMIT_NPROC", RL_KEEP},
	/* Memory sizes (address space, data, stack, resident, locked): the memory cgroup charges
	 * every page, locked or not, so none of these reaches past resources.memory. */
	{"RLIMIT_AS", RL_KEEP},
	{"RLIMIT_DATA", RL_KEEP},
	{"RLIMIT_STACK", RL_KEEP},
	{"RLIMIT_RSS", RL_KEEP},
	{"RLIMIT_MEMLOCK", RL_KEEP},
	/* Open files: capped by the host's fs.nr_open, their memory charged to the cgroup. */
	{"RLIMIT_NOFILE", RL_KEEP},
	/* Queued signals and POSIX message queue bytes: kernel memory charged to the cgroup, and
	 * the queues live in the container's own IPC namespace. */
	{"RLIMIT_SIGPENDING", RL_KEEP},
	{"RLIMIT_MSGQUEUE", RL_KEEP},
	/* CPU seconds, file size, core size and file locks (unused by Linux) only limit the
	 * process itself; core_pattern is the host's to set. */
	{"RLIMIT_CPU", RL_KEEP},
	{"RLIMIT_FSIZE", RL_KEEP},
	{"RLIMIT_CORE", RL_KEEP},
	{"RLIMIT_LOCKS", RL_KEEP},
};

static uint64_t ceiling(const struct hezo_policy *p, const char *type)
{
	return strcmp(type, "RLIMIT_RTPRIO") == 0 ? p->rlimit_rtprio : p->rlimit_nice;
}

static struct hezo_json *rlimit_entry(const char *type, uint64_t v)
{
	_cleanup_json_ struct hezo_json *o = hezo_json_new_object();

	if (!o || hezo_json_set(o, "type", hezo_json_new_string(type)) < 0 ||
	    hezo_json_set(o, "hard", hezo_json_new_uint(v)) < 0 ||
	    hezo_json_set(o, "soft", hezo_json_new_uint(v)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

/* Lower hard or soft to max. */
static int clamp_value(struct hezo_json *rl, const char *key, uint64_t max, const char *field,
		       size_t i, struct hezo_error **err)
{
	const struct hezo_json *v = hezo_json_get(rl, key);
	uint64_t n;

	if (!v)
		return 0; /* runc reads an absent value as 0 */
	if (v->type != HEZO_JSON_NUMBER || hezo_json_get_uint64(v, &n) < 0)
		return hezo_policy_ferr(err, "%s.rlimits[%zu].%s: expected a whole number", field,
					i, key);
	if (n <= max)
		return 0;
	if (hezo_json_set(rl, key, hezo_json_new_uint(max)) < 0)
		return hezo_policy_nomem(err);
	return 0;
}

static int clamp_oom_score(struct hezo_json *process, const char *field, struct hezo_error **err)
{
	const struct hezo_json *v = hezo_json_get(process, "oomScoreAdj");
	int64_t n;

	/* Absent, the process keeps the caller's: containerd's runc shim runs at -998. */
	if (!v || v->type == HEZO_JSON_NULL)
		return hezo_json_set(process, "oomScoreAdj", hezo_json_new_int(0)) < 0
			       ? hezo_policy_nomem(err)
			       : 0;
	if (v->type != HEZO_JSON_NUMBER || hezo_json_get_int64(v, &n) < 0)
		return hezo_policy_ferr(err, "%s.oomScoreAdj: expected a whole number", field);
	/* Below 0 the box is spared by the OOM killer at the host's expense. */
	if (n < 0 && hezo_json_set(process, "oomScoreAdj", hezo_json_new_int(0)) < 0)
		return hezo_policy_nomem(err);
	return 0;
}

int hezo_policy_clamp_rlimits(const struct hezo_policy *p, struct hezo_json *process,
			      const char *field, struct hezo_error **err)
{
	bool seen[HEZO_ARRAY_SIZE(rlimit_rules)] = {0};
	struct hezo_json *rls;
	char f[128];
	int r;

	snprintf(f, sizeof(f), "%s.rlimits", field);
	rls = hezo_policy_want_array(process, "rlimits", f, err);
	if (!rls)
		return -EINVAL;
	HEZO_JSON_FOREACH (i, rls) {
		struct hezo_json *rl = rls->items[i];
		const char *type = hezo_json_string(hezo_json_get(rl, "type"));
		size_t k;

		if (rl->type != HEZO_JSON_OBJECT)
			return hezo_policy_ferr(err, "%s[%zu]: expected an object", f, i);
		if (!type)
			return hezo_policy_ferr(err, "%s[%zu].type: expected a string", f, i);
		for (k = 0; k < HEZO_ARRAY_SIZE(rlimit_rules); k++)
			if (strcmp(type, rlimit_rules[k].type) == 0)
				break;
		if (k == HEZO_ARRAY_SIZE(rlimit_rules)) {
			char q[256];
			hezo_policy_quote(q, sizeof(q), type);
			return hezo_policy_ferr(err, "%s[%zu].type: unknown rlimit %s", f, i, q);
		}
		seen[k] = true;
		if (rlimit_rules[k].rule != RL_CLAMP)
			continue;
		r = clamp_value(rl, "hard", ceiling(p, type), field, i, err);
		r = r ?: clamp_value(rl, "soft", ceiling(p, type), field, i, err);
		if (r < 0)
			return r;
	}
	/* Absent, the process inherits the engine's limit, which may be anything. */
	for (size_t k = 0; k < HEZO_ARRAY_SIZE(rlimit_rules); k++) {
		const char *type = rlimit_rules[k].type;

		if (rlimit_rules[k].rule == RL_CLAMP && !seen[k] &&
		    hezo_json_append(rls, rlimit_entry(type, ceiling(p, type))) < 0)
			return hezo_policy_nomem(err);
	}
	return clamp_oom_score(process, field, err);
}
