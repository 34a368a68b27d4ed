/* Putting a container in the box: rewriting config.json, an exec process and an update's
 * resources so that nothing the engine asked for exceeds the policy. */
/*
 * Rules beyond docs/policy.md, for the reader: an update's absent field means "unchanged" and
 * stays absent; a period sent alone in an update gets a quota of cpus * period so the ratio cannot
 * grow; pids.limit is min(engine, policy) under every backend (the workload's count: shim/runsc.c
 * turns it into RLIMIT_NPROC inside gVisor and sizes the host cgroup for the Sentry). Mounts:
 * mounts.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "policy-internal.h"
#include "hezo-spec.h"

#define DEFAULT_CFS_PERIOD 100000ULL

static const char *const cap_sets[] = {"bounding", "effective", "inheritable", "permitted",
				       "ambient"};

static const char *const default_masked[] = {
	"/proc/asound",
	"/proc/acpi",
	"/proc/kcore",
	"/proc/keys",
	"/proc/latency_stats",
	"/proc/timer_list",
	"/proc/timer_stats",
	"/proc/sched_debug",
	"/proc/scsi",
	"/sys/firmware",
	"/sys/devices/virtual/powercap",
	/* The host's kernel allocations and key quotas, root-readable (red team pass 12, R2, L1).
	 */
	"/proc/slabinfo",
	"/proc/vmallocinfo",
	"/proc/key-users",
	"/sys/kernel/slab",
	"/sys/kernel/vmcoreinfo",
};

static const char *const default_readonly[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
					       "/proc/sysrq-trigger"};

/*
 * Character devices every container gets: null, zero, full, random, urandom, tty, ptmx; and the
 * pts range (136:*). The rootfs is mounted without nodev, so a node an image layer ships opens
 * whatever the list allows: tty resolves to the opener's own terminal, ptmx and pts nodes to a
 * devpts beside or under them, but 5:1 is the host's console. A terminal never needs it: the
 * box's /dev/console is a bind of its pty (136:*).
 */
static const struct {
	int64_t major, minor;
} default_char_devices[] = {
	{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}, {5, 2}, {136, -1},
};

/* An optional integer field: *present is false when absent or null. */
static int get_opt_int(const struct hezo_json *obj, const char *key, const char *field,
		       bool *present, int64_t *out, struct hezo_error **err)
{
	const struct hezo_json *v = hezo_json_get(obj, key);
	uint64_t u;

	*present = false;
	if (!v || v->type == HEZO_JSON_NULL)
		return 0;
	if (v->type != HEZO_JSON_NUMBER)
		return hezo_policy_ferr(err, "%s: expected a number, got %s", field,
					hezo_json_type_name(v->type));
	if (hezo_json_get_int64(v, out) < 0) {
		/* Values above INT64_MAX (Go's uint64 fields) mean "no limit" as well. */
		if (hezo_json_get_uint64(v, &u) < 0)
			return hezo_policy_ferr(err, "%s: %.40s is not a whole number", field,
						v->str);
		*out = INT64_MAX;
	}
	*present = true;
	return 0;
}

static int set_int(struct hezo_json *obj, const char *key, int64_t v, struct hezo_error **err)
{
	if (hezo_json_set(obj, key, hezo_json_new_int(v)) < 0)
		return hezo_policy_nomem(err);
	return 0;
}

/* ---- process ---- */

static int clamp_process(const struct hezo_policy *p, struct hezo_json *process, const char *field,
			 struct hezo_error **err)
{
	struct hezo_json *caps;
	char f[128];

	snprintf(f, sizeof(f), "%s.capabilities", field);
	caps = hezo_policy_want_object(process, "capabilities", f, err);
	if (!caps)
		return -EINVAL;
	/*
	 * runc keeps every capability when the object is missing, so all five sets are written,
	 * empty ones included.
	 */
	for (size_t s = 0; s < HEZO_ARRAY_SIZE(cap_sets); s++) {
		_cleanup_json_ struct hezo_json *kept = hezo_json_new_array();
		struct hezo_json *set = hezo_json_get(caps, cap_sets[s]);

		if (!kept)
			return hezo_policy_nomem(err);
		if (set && set->type != HEZO_JSON_ARRAY && set->type != HEZO_JSON_NULL)
			return hezo_policy_ferr(err, "%s.%s: expected a list, got %s", f,
						cap_sets[s], hezo_json_type_name(set->type));
		HEZO_JSON_FOREACH (i, set) {
			_cleanup_free_ char *norm = NULL;
			const char *name = hezo_json_string(set->items[i]);

			if (!name)
				return hezo_policy_ferr(err, "%s.%s[%zu]: expected a string", f,
							cap_sets[s], i);
			/* Names libcap does not know cannot be in the policy's list either. */
			if (hezo_policy_cap_normalise(name, &norm) < 0)
				continue;
			if (!hezo_strv_contains(&p->caps, norm))
				continue;
			if (hezo_json_append(kept, hezo_json_new_string(norm)) < 0)
				return hezo_policy_nomem(err);
		}
		if (hezo_json_set(caps, cap_sets[s], TAKE_PTR(kept)) < 0)
			return hezo_policy_nomem(err);
	}
	if (p->no_new_privs &&
	    hezo_json_set(process, "noNewPrivileges", hezo_json_new_bool(true)) < 0)
		return hezo_policy_nomem(err);
	return hezo_policy_clamp_rlimits(p, process, field, err);
}

int hezo_policy_apply_process(const struct hezo_policy *p, struct hezo_json *process,
			      struct hezo_error **err)
{
	int r;

	if (!process || process->type != HEZO_JSON_OBJECT)
		return hezo_policy_ferr(err, "process: expected an object");
	r = hezo_spec_check_keys(process, HEZO_SPEC_DOC_PROCESS, "process", err);
	r = r ?: hezo_policy_check_process_fields(process, "process", err);
	if (r < 0)
		return r;
	return clamp_process(p, process, "process", err);
}

/* ---- resources ---- */

/*
 * update: an absent field, or 0 (what runc and the runsc emulation skip, and what Docker sends for
 * every limit it is not changing), means "unchanged" and stays so: read as the policy's ceiling,
 * `docker update --memory-swap -1` undid an earlier `--memory 64m`. What a field left unchanged
 * constrains is judged against live, the box's current limits (NULL or 0: not known).
 */
static int clamp_resources(const struct hezo_policy *p, struct hezo_json *res, const char *field,
			   bool update, const struct hezo_policy_live *live,
			   struct hezo_error **err)
{
	struct hezo_json *mem, *pids, *cpu;
	bool has_limit, has_swap, has_quota, has_period;
	int64_t limit = 0, swap = 0, quota = 0, period = 0;
	uint64_t policy_mem = p->memory > INT64_MAX ? INT64_MAX : p->memory;
	char f[160];
	int r;

	/* memory: limit is the smaller; swap (memory+swap total) at most limit + policy swap. */
	snprintf(f, sizeof(f), "%s.memory", field);
	mem = hezo_json_get(res, "memory");
	if (!update || mem) {
		mem = hezo_policy_want_object(res, "memory", f, err);
		if (!mem)
			return -EINVAL;
		snprintf(f, sizeof(f), "%s.memory.limit", field);
		r = get_opt_int(mem, "limit", f, &has_limit, &limit, err);
		snprintf(f, sizeof(f), "%s.memory.swap", field);
		r = r ?: get_opt_int(mem, "swap", f, &has_swap, &swap, err);
		if (r < 0)
			return r;
		if (update) {
			has_limit = has_limit && limit != 0;
			has_swap = has_swap && swap != 0;
		}
		if (has_limit || !update) {
			uint64_t total;

			if (!has_limit || limit <= 0 || (uint64_t)limit > policy_mem)
				limit = (int64_t)policy_mem;
			total = (uint64_t)limit + p->swap;
			if (total < (uint64_t)limit || total > INT64_MAX)
				total = INT64_MAX;
			if (has_swap && swap > 0 && swap >= limit && (uint64_t)swap < total)
				total = (uint64_t)swap;
			r = set_int(mem, "limit", limit, err);
			r = r ?: set_int(mem, "swap", (int64_t)total, err);
			if (r < 0)
				return r;
		} else if (has_swap) {
			/* The total stays within the current limit plus the policy's swap. */
			uint64_t cur = live && live->memory_limit > 0 &&
						       (uint64_t)live->memory_limit < policy_mem
					       ? (uint64_t)live->memory_limit
					       : policy_mem;
			uint64_t total = cur + p->swap;
			if (total > INT64_MAX || total < cur)
				total = INT64_MAX;
			if (swap < 0 || (uint64_t)swap > total)
				r = set_int(mem, "swap", (int64_t)total, err);
			if (r < 0)
				return r;
		}
	}

	snprintf(f, sizeof(f), "%s.pids", field);
	pids = hezo_json_get(res, "pids");
	if (!update || pids) {
		int64_t n = 0;
		bool has = false;

		pids = hezo_policy_want_object(res, "pids", f, err);
		if (!pids)
			return -EINVAL;
		snprintf(f, sizeof(f), "%s.pids.limit", field);
		r = get_opt_int(pids, "limit", f, &has, &n, err);
		if (r < 0)
			return r;
		if ((has && n != 0) || !update) {
			uint64_t v = has && n > 0 ? (uint64_t)n : UINT64_MAX;
			if (v > p->pids)
				v = p->pids;
			r = set_int(pids, "limit", (int64_t)v, err);
			if (r < 0)
				return r;
		}
	}

	snprintf(f, sizeof(f), "%s.cpu", field);
	cpu = hezo_json_get(res, "cpu");
	if (!update || cpu) {
		cpu = hezo_policy_want_object(res, "cpu", f, err);
		if (!cpu)
			return -EINVAL;
		snprintf(f, sizeof(f), "%s.cpu.quota", field);
		r = get_opt_int(cpu, "quota", f, &has_quota, &quota, err);
		snprintf(f, sizeof(f), "%s.cpu.period", field);
		r = r ?: get_opt_int(cpu, "period", f, &has_period, &period, err);
		if (r < 0)
			return r;
		if (update) {
			has_quota = has_quota && quota != 0;
			has_period = has_period && period != 0;
		}
		if (!update || has_quota || has_period) {
			/* rnum/rden: the CPU ratio granted, exact (q may be rounded down). */
			uint64_t per, q, rnum = p->cpus_milli, rden = 1000;

			if (update && !has_quota && has_period && period > 0) {
				/*
				 * A new period alone would change the ratio: pair it with a quota
				 * at the current ratio where that is within the policy's.
				 */
				per = (uint64_t)period > 1000000 ? 1000000 : (uint64_t)period;
				q = p->cpus_milli * per / 1000;
				if (live && live->cpu_quota > 0 && live->cpu_period > 0 &&
				    (unsigned __int128)live->cpu_quota * 1000 <
					    (unsigned __int128)p->cpus_milli *
						    (uint64_t)live->cpu_period) {
					rnum = (uint64_t)live->cpu_quota;
					rden = (uint64_t)live->cpu_period;
					q = (uint64_t)((unsigned __int128)rnum * per / rden);
				}
			} else if (!has_quota || quota <= 0) {
				per = DEFAULT_CFS_PERIOD;
				q = p->cpus_milli * per / 1000;
			} else {
				per = has_period && period > 0 ? (uint64_t)period
							       : DEFAULT_CFS_PERIOD;
				if (per > 1000000)
					per = 1000000;
				q = (uint64_t)quota;
				/* quota/period <= cpus, compared without division. */
				if ((unsigned __int128)q * 1000 >
				    (unsigned __int128)p->cpus_milli * per) {
					q = p->cpus_milli * per / 1000;
				} else {
					rnum = q;
					rden = per;
				}
			}
			if (q < 1000) {
				/*
				 * The kernel's minimum quota is 1 ms: stretch the period to keep
				 * the granted ratio, never raise the quota alone (that would hand
				 * out more CPU than the policy or the engine allowed).
				 */
				uint64_t scaled = (1000 * rden + rnum - 1) / rnum;

				per = scaled > 1000000 ? 1000000 : scaled;
				q = 1000;
			}
			r = set_int(cpu, "period", (int64_t)per, err);
			r = r ?: set_int(cpu, "quota", (int64_t)q, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int hezo_policy_apply_resources(const struct hezo_policy *p, struct hezo_json *resources,
				const struct hezo_policy_live *live, struct hezo_error **err)
{
	int r;

	if (!resources || resources->type != HEZO_JSON_OBJECT)
		return hezo_policy_ferr(err, "resources: expected an object");
	r = hezo_spec_check_keys(resources, HEZO_SPEC_DOC_RESOURCES, "resources", err);
	if (r < 0)
		return r;
	r = clamp_resources(p, resources, "resources", true, live, err);
	r = r ?: hezo_policy_check_resource_fields(resources, "resources", err);
	r = r ?: hezo_policy_clamp_oom(resources, "resources", err);
	return r ?: hezo_policy_clamp_weights(p, resources, "resources", true, err);
}

/* ---- devices, masks, seccomp ---- */

static struct hezo_json *device_rule(bool allow, const char *type, int64_t major, int64_t minor,
				     const char *access)
{
	_cleanup_json_ struct hezo_json *d = hezo_json_new_object();

	if (!d || hezo_json_set(d, "allow", hezo_json_new_bool(allow)) < 0)
		return NULL;
	if (type && hezo_json_set(d, "type", hezo_json_new_string(type)) < 0)
		return NULL;
	if (major >= 0 && hezo_json_set(d, "major", hezo_json_new_int(major)) < 0)
		return NULL;
	if (minor >= 0 && hezo_json_set(d, "minor", hezo_json_new_int(minor)) < 0)
		return NULL;
	if (hezo_json_set(d, "access", hezo_json_new_string(access)) < 0)
		return NULL;
	return TAKE_PTR(d);
}

/*
 * The policy lists device paths; the backend makes the node from the entry's own type, major and
 * minor (runc's mknod never looks at the host's node), and the cgroup rule allows those numbers.
 * So the numbers must be the host's device at that path, or a listed /dev/fuse would be any disk.
 */
static int check_host_device(const char *path, size_t idx, const char *type, int64_t want_major,
			     int64_t want_minor, struct hezo_error **err)
{
	bool blk = strcmp(type, "b") == 0;
	struct stat st;

	if (stat(path, &st) < 0)
		return hezo_error_set_errno(
			err, errno, "linux.devices[%zu] (%s): the host's device there", idx, path);
	if (!(blk ? S_ISBLK(st.st_mode) : S_ISCHR(st.st_mode)) ||
	    (int64_t)major(st.st_rdev) != want_major || (int64_t)minor(st.st_rdev) != want_minor)
		return hezo_policy_ferr(err,
					"linux.devices[%zu] (%s): %s %" PRId64 ":%" PRId64
					" is not the host's device at that path (%s %u:%u)",
					idx, path, blk ? "block device" : "character device",
					want_major, want_minor,
					S_ISBLK(st.st_mode)   ? "block device"
					: S_ISCHR(st.st_mode) ? "character device"
							      : "not a device",
					major(st.st_rdev), minor(st.st_rdev));
	return 0;
}

static int apply_devices(const struct hezo_policy *p, struct hezo_json *linux_,
			 struct hezo_json *res, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *rules = hezo_json_new_array();
	struct hezo_json *devs = hezo_policy_want_array(linux_, "devices", "linux.devices", err);
	int r;

	if (!devs)
		return -EINVAL;
	if (!rules || hezo_json_append(rules, device_rule(false, NULL, -1, -1, "rwm")) < 0)
		return hezo_policy_nomem(err);
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(default_char_devices); i++)
		if (hezo_json_append(rules, device_rule(true, "c", default_char_devices[i].major,
							default_char_devices[i].minor, "rwm")) < 0)
			return hezo_policy_nomem(err);
	for (size_t i = 0, idx = 0; i < devs->len; idx++) {
		struct hezo_json *d = devs->items[i];
		const char *path = hezo_json_string(hezo_json_get(d, "path"));
		_cleanup_free_ char *clean = NULL;
		bool keep = false;

		if (!path)
			return hezo_policy_ferr(err, "linux.devices[%zu]: path: expected a string",
						idx);
		r = hezo_policy_clean_path(path, &clean);
		if (r == 0)
			keep = hezo_strv_contains(&p->devices, clean);
		if (!keep) {
			hezo_json_remove_at(devs, i);
			continue;
		}
		{
			const char *type = hezo_json_string(hezo_json_get(d, "type"));
			int64_t major = -1, minor = -1;
			bool has_major, has_minor;
			char f[64];

			snprintf(f, sizeof(f), "linux.devices[%zu]", idx);
			r = get_opt_int(d, "major", f, &has_major, &major, err);
			r = r ?: get_opt_int(d, "minor", f, &has_minor, &minor, err);
			if (r < 0)
				return r;
			/* A FIFO has no number and the devices cgroup does not govern it: no rule.
			 */
			if (type && strcmp(type, "p") == 0) {
				i++;
				continue;
			}
			if (!type ||
			    (strcmp(type, "c") && strcmp(type, "b") && strcmp(type, "u")) ||
			    !has_major || !has_minor || major < 0 || minor < 0)
				return hezo_policy_ferr(
					err,
					"linux.devices[%zu] (%s): needs type c, u or b with "
					"major and minor, or type p",
					idx, path);
			r = check_host_device(clean, idx, type, major, minor, err);
			if (r < 0)
				return r;
			if (hezo_json_append(rules, device_rule(true, strcmp(type, "b") ? "c" : "b",
								major, minor, "rwm")) < 0)
				return hezo_policy_nomem(err);
		}
		i++;
	}
	if (hezo_json_set(res, "devices", TAKE_PTR(rules)) < 0)
		return hezo_policy_nomem(err);
	return 0;
}

static int union_paths(struct hezo_json *linux_, const char *key, const char *const *defaults,
		       size_t n, struct hezo_error **err)
{
	char f[64];
	struct hezo_json *arr;

	snprintf(f, sizeof(f), "linux.%s", key);
	arr = hezo_policy_want_array(linux_, key, f, err);
	if (!arr)
		return -EINVAL;
	for (size_t d = 0; d < n; d++) {
		bool present = false;
		HEZO_JSON_FOREACH (i, arr) {
			const char *s = hezo_json_string(arr->items[i]);
			if (!s)
				return hezo_policy_ferr(err, "%s[%zu]: expected a string", f, i);
			if (strcmp(s, defaults[d]) == 0)
				present = true;
		}
		if (!present && hezo_json_append(arr, hezo_json_new_string(defaults[d])) < 0)
			return hezo_policy_nomem(err);
	}
	return 0;
}

static int apply_seccomp(const struct hezo_policy *p, struct hezo_json *linux_,
			 struct hezo_error **err)
{
	struct hezo_json *cur = hezo_json_get(linux_, "seccomp");
	struct hezo_json *prof = NULL;
	bool engine = cur && cur->type == HEZO_JSON_OBJECT;
	int r;

	if (cur && cur->type != HEZO_JSON_NULL && !engine)
		return hezo_policy_ferr(err, "linux.seccomp: expected an object, got %s",
					hezo_json_type_name(cur->type));
	if (p->seccomp_profile) {
		prof = hezo_json_clone(p->seccomp_profile);
	} else if (p->seccomp_path) {
		/* A policy from hezo_policy_parse alone has not read its profile yet. */
		r = hezo_policy_seccomp_load(p->seccomp_path, &prof, err);
		if (r < 0)
			return hezo_error_prefix(err, "seccomp");
	} else if (!engine) {
		prof = hezo_policy_seccomp_default();
	}
	/* Beside an engine's profile the built-in default stays NULL: the floor builds it. */
	if (!prof && (!engine || p->seccomp_profile || p->seccomp_path))
		return hezo_policy_nomem(err);
	/* The engine's profile may only narrow the box's: both must allow a call. */
	if (engine) {
		_cleanup_json_ struct hezo_json *box = TAKE_PTR(prof), *eng = NULL,
						*hold = hezo_json_new_null();

		/* Taken out of the spec (a null holds its place) for the floor to keep. */
		if (!hold || hezo_json_replace(linux_, cur, hold) < 0)
			return hezo_policy_nomem(err);
		TAKE_PTR(hold);
		eng = cur;
		r = hezo_policy_seccomp_floor_take(&box, &eng, &prof, err);
		if (r < 0)
			return r;
	}
	/* Whatever the profiles allow, a box never makes a set-id file on a host filesystem. */
	r = hezo_policy_seccomp_no_setid(prof, err);
	if (r < 0) {
		hezo_json_free(prof);
		return r;
	}
	if (hezo_json_set(linux_, "seccomp", prof) < 0)
		return hezo_policy_nomem(err);
	return 0;
}

int hezo_policy_apply_spec(const struct hezo_policy *p, struct hezo_json *spec,
			   const struct hezo_apply_env *env, struct hezo_error **err)
{
	struct hezo_json *process, *root, *linux_, *res;
	bool home;
	int r;

	if (!spec || spec->type != HEZO_JSON_OBJECT)
		return hezo_policy_ferr(err, "config.json: expected an object");
	/* First, so that every rule below reads the fields runc will read. */
	r = hezo_spec_check_keys(spec, HEZO_SPEC_DOC_CONFIG, "config.json", err);
	r = r ?: hezo_policy_check_annotations(spec, err);
	if (r < 0)
		return r;

	process = hezo_policy_want_object(spec, "process", "process", err);
	if (!process)
		return -EINVAL;
	r = clamp_process(p, process, "process", err);
	r = r ?: hezo_policy_check_process_fields(process, "process", err);
	if (r < 0)
		return r;

	root = hezo_policy_want_object(spec, "root", "root", err);
	if (!root)
		return -EINVAL;
	if (p->readonly_rootfs && hezo_json_set(root, "readonly", hezo_json_new_bool(true)) < 0)
		return hezo_policy_nomem(err);
	r = hezo_policy_check_root(spec, env, err);
	if (r < 0)
		return r;

	r = hezo_policy_apply_mounts(p, spec, env, err);
	r = r ?: hezo_policy_apply_workspace(p, spec, env, err);
	r = r ?: hezo_policy_workspace_home(p, spec, &home, err);
	if (r < 0)
		return r;

	linux_ = hezo_policy_want_object(spec, "linux", "linux", err);
	if (!linux_)
		return -EINVAL;
	r = hezo_policy_check_namespaces(p, linux_, env, err);
	if (r < 0)
		return r;
	r = hezo_policy_check_cgroups_path(p, linux_, env, err);
	r = r ?: hezo_policy_check_sysctl(p, linux_, err);
	r = r ?: hezo_policy_check_linux_fields(linux_, err);
	if (r < 0)
		return r;
	res = hezo_policy_want_object(linux_, "resources", "linux.resources", err);
	if (!res)
		return -EINVAL;
	r = clamp_resources(p, res, "linux.resources", false, NULL, err);
	r = r ?: hezo_policy_check_resource_fields(res, "linux.resources", err);
	r = r ?: hezo_policy_clamp_oom(res, "linux.resources", err);
	r = r ?: hezo_policy_clamp_weights(p, res, "linux.resources", false, err);
	if (r < 0)
		return r;
	r = apply_devices(p, linux_, res, err);
	if (r < 0)
		return r;
	r = union_paths(linux_, "maskedPaths", default_masked, HEZO_ARRAY_SIZE(default_masked),
			err);
	if (r < 0)
		return r;
	r = union_paths(linux_, "readonlyPaths", default_readonly,
			HEZO_ARRAY_SIZE(default_readonly), err);
	if (r < 0)
		return r;
	r = hezo_policy_check_hooks(p, spec, env, err);
	if (r < 0)
		return r;
	return apply_seccomp(p, linux_, err);
}
