/* The fields of config.json no other rule covers that would loosen the box: stripped or refused
 * (docs/policy.md, "Every field of config.json"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy-internal.h"

static bool present(const struct hezo_json *v)
{
	return v && v->type != HEZO_JSON_NULL;
}

static bool in(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

static bool nonzero(const struct hezo_json *v)
{
	uint64_t u;
	int64_t i;

	if (!present(v))
		return false;
	if (hezo_json_get_int64(v, &i) == 0)
		return i != 0;
	return hezo_json_get_uint64(v, &u) < 0 || u != 0;
}

int hezo_policy_check_resource_fields(struct hezo_json *res, const char *field,
				      struct hezo_error **err)
{
	static const char *const cpu_strip[] = {"realtimeRuntime", "realtimePeriod", "burst"};
	const struct hezo_json *unified = hezo_json_get(res, "unified");
	const struct hezo_json *net = hezo_json_get(res, "network");
	struct hezo_json *cpu = hezo_json_get_type(res, "cpu", HEZO_JSON_OBJECT);

	/* On a cgroup v2 host runc writes each key as a file: "memory.max": "max" and the like
	 * would undo every limit above. */
	if (present(unified) && (unified->type != HEZO_JSON_OBJECT || unified->len > 0))
		return hezo_policy_ferr(err,
					"%s.unified: cgroup files by name are not allowed (they "
					"would override the box's limits)",
					field);
	/* net_cls and net_prio: the classes and priorities the host's tc and firewall match. */
	if (present(net) &&
	    (net->type != HEZO_JSON_OBJECT || nonzero(hezo_json_get(net, "classID")) ||
	     (present(hezo_json_get(net, "priorities")) &&
	      hezo_json_get(net, "priorities")->len > 0)))
		return hezo_policy_ferr(err,
					"%s.network: the host's traffic class and priorities are "
					"not the container's to choose",
					field);
	/* Realtime CPU time comes out of the host's own budget, burst runs past the quota:
	 * neither is the box's (a new cgroup's realtime runtime is 0). */
	for (size_t i = 0; cpu && i < HEZO_ARRAY_SIZE(cpu_strip); i++)
		hezo_json_remove(cpu, cpu_strip[i]);
	return 0;
}

int hezo_policy_check_process_fields(const struct hezo_json *process, const char *field,
				     struct hezo_error **err)
{
	static const char *const ok_policies[] = {"SCHED_OTHER", "SCHED_BATCH", "SCHED_IDLE"};
	static const char *const ok_io[] = {"IOPRIO_CLASS_BE", "IOPRIO_CLASS_IDLE"};
	const struct hezo_json *sch = hezo_json_get(process, "scheduler");
	const struct hezo_json *io = hezo_json_get(process, "ioPriority");

	/* The runtime sets these as root, before it drops privileges: RLIMIT_RTPRIO 0 and an
	 * empty capability set would not stop it. */
	if (present(sch)) {
		int64_t nice = 0;
		const struct hezo_json *n = hezo_json_get(sch, "nice");
		if (sch->type != HEZO_JSON_OBJECT ||
		    !in(hezo_json_string(hezo_json_get(sch, "policy")), ok_policies,
			HEZO_ARRAY_SIZE(ok_policies)) ||
		    (present(n) && (hezo_json_get_int64(n, &nice) < 0 || nice < 0)) ||
		    nonzero(hezo_json_get(sch, "priority")) ||
		    nonzero(hezo_json_get(sch, "runtime")) ||
		    nonzero(hezo_json_get(sch, "deadline")) ||
		    nonzero(hezo_json_get(sch, "period")))
			return hezo_policy_ferr(err,
						"%s.scheduler: only SCHED_OTHER, SCHED_BATCH or "
						"SCHED_IDLE with a nice value of 0 or more",
						field);
	}
	if (present(io) &&
	    (io->type != HEZO_JSON_OBJECT ||
	     !in(hezo_json_string(hezo_json_get(io, "class")), ok_io, HEZO_ARRAY_SIZE(ok_io))))
		return hezo_policy_ferr(err,
					"%s.ioPriority: only IOPRIO_CLASS_BE or IOPRIO_CLASS_IDLE "
					"(the realtime class outranks the host's own I/O)",
					field);
	return 0;
}

int hezo_policy_check_linux_fields(const struct hezo_json *linux_, struct hezo_error **err)
{
	static const char *const ok_prop[] = {"",	"private",    "rprivate",   "slave",
					      "rslave", "unbindable", "runbindable"};
	static const char *const ok_domains[] = {"LINUX", "LINUX32"};
	const struct hezo_json *prop = hezo_json_get(linux_, "rootfsPropagation");
	const struct hezo_json *pers = hezo_json_get(linux_, "personality");
	const struct hezo_json *nd = hezo_json_get(linux_, "netDevices");
	const struct hezo_json *flags;

	if (present(prop) && !in(hezo_json_string(prop), ok_prop, HEZO_ARRAY_SIZE(ok_prop)))
		return hezo_policy_ferr(
			err, "linux.rootfsPropagation: only private, slave or unbindable "
			     "(shared would let mounts made in the container reach the "
			     "host)");
	/* Cache ways and memory bandwidth are the host's to share out; a closID joins another
	 * group's allocation. */
	if (present(hezo_json_get(linux_, "intelRdt")))
		return hezo_policy_ferr(err, "linux.intelRdt: not allowed (the host's cache and "
					     "memory bandwidth allocation)");
	if (present(pers)) {
		flags = hezo_json_get(pers, "flags");
		if (pers->type != HEZO_JSON_OBJECT ||
		    !in(hezo_json_string(hezo_json_get(pers, "domain")), ok_domains,
			HEZO_ARRAY_SIZE(ok_domains)) ||
		    (present(flags) && (flags->type != HEZO_JSON_ARRAY || flags->len > 0)))
			return hezo_policy_ferr(err, "linux.personality: only domain LINUX or "
						     "LINUX32, without flags");
	}
	/* A host network interface moved into the container takes it off the egress path. */
	if (present(nd) && (nd->type != HEZO_JSON_OBJECT || nd->len > 0))
		return hezo_policy_ferr(err, "linux.netDevices: host network devices are not "
					     "allowed");
	return 0;
}

/*
 * Annotations the backends read as settings of their own, each of which reaches past the box:
 * runsc's take the sandbox out of the cgroup the shim checked (spec.cgroup-parent), drop its
 * seccomp profile (internal.seccomp.NAME=RuntimeDefault with the CRI container name) or set
 * runsc's flags; crun's hand it a raw BPF filter instead of the profile, choose another handler,
 * write hooks' output to host paths; runc's and crun's systemd properties override the limits;
 * runc's CRIU configuration file is read as root at checkpoint and restore. Read from the
 * binaries of runsc 2024-07, runc 1.1.5 and crun 1.8.1 (docs/policy.md).
 */
int hezo_policy_check_annotations(const struct hezo_json *spec, struct hezo_error **err)
{
	static const struct {
		const char *prefix;
		const char *reader;
	} backend[] = {
		{"dev.gvisor.", "runsc"},
		{"run.oci.", "crun"},
		{"org.systemd.property.", "runc and crun"},
		{"org.criu.", "runc"},
	};
	const struct hezo_json *ann = hezo_json_get(spec, "annotations");
	char q[256];

	HEZO_JSON_FOREACH (i, ann) {
		const char *k = ann->type == HEZO_JSON_OBJECT ? ann->keys[i] : NULL;

		for (size_t j = 0; k && j < HEZO_ARRAY_SIZE(backend); j++) {
			if (strncmp(k, backend[j].prefix, strlen(backend[j].prefix)) != 0)
				continue;
			hezo_policy_quote(q, sizeof(q), k);
			return hezo_policy_ferr(err,
						"annotations: %s is read by %s as a setting of its "
						"own (%s*), which the box does not allow",
						q, backend[j].reader, backend[j].prefix);
		}
	}
	return 0;
}
