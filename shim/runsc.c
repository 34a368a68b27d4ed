/*
 * What gVisor's runsc lacks or does differently, done by the shim: update emulated
 * on the sandbox's host cgroup, host PIDs for ps, a created sandbox destroyed on kill, and the
 * checks a spec must pass before runsc may run it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-file.h"
#include "shim.h"

#define CGROUP_FILE_MAX (1024 * 1024)

/*
 * systemd's slice naming: "a-b-c.slice" lives at /a.slice/a-b.slice/a-b-c.slice. An empty or
 * "-.slice" name is the root slice.
 */
static int systemd_slice_path(const char *slice, char *buf, size_t size)
{
	size_t o = 0, len = strlen(slice);
	const char *end;

	buf[0] = '\0';
	if (len == 0 || strcmp(slice, "-.slice") == 0)
		return 0;
	if (len < 7 || strcmp(slice + len - 6, ".slice") != 0 || strchr(slice, '/'))
		return -EINVAL;
	end = slice + len - 6;
	for (const char *dash = slice;; dash++) {
		if (dash != end && *dash != '-')
			continue;
		if (dash == slice || dash[-1] == '-')
			return -EINVAL; /* "-a.slice", "a--b.slice" */
		int n = snprintf(buf + o, size - o, "/%.*s.slice", (int)(dash - slice), slice);
		if (n < 0 || (size_t)n >= size - o)
			return -ENAMETOOLONG;
		o += (size_t)n;
		if (dash == end)
			break;
	}
	return 0;
}

static bool has_dotdot(const char *path)
{
	for (const char *s = path; (s = strstr(s, "..")); s += 2)
		if ((s == path || s[-1] == '/') && (s[2] == '/' || s[2] == '\0'))
			return true;
	return false;
}

int shim_cgroup_dir(const char *root, const char *cgroups_path, bool systemd,
		    const char *controller, char *buf, size_t size)
{
	char rel[PATH_MAX];
	const char *c1, *c2;
	int n;

	if (!cgroups_path || !*cgroups_path)
		return -ENOENT;
	/* As the backend's driver read it at create: the systemd form only under
	 * --systemd-cgroup, an absolute path only without it (cgroupfs). */
	c1 = strchr(cgroups_path, ':');
	if (systemd && c1 && (c2 = strchr(c1 + 1, ':')) && !strchr(c2 + 1, ':')) {
		/* systemd driver: "slice:prefix:name" is the scope prefix-name.scope in slice. */
		char slice[256], spath[PATH_MAX];
		int r;

		if ((size_t)(c1 - cgroups_path) >= sizeof(slice))
			return -ENAMETOOLONG;
		snprintf(slice, sizeof(slice), "%.*s", (int)(c1 - cgroups_path), cgroups_path);
		r = systemd_slice_path(*slice ? slice : "system.slice", spath, sizeof(spath));
		if (r < 0)
			return r;
		n = snprintf(rel, sizeof(rel), "%s/%.*s-%s.scope", spath, (int)(c2 - c1 - 1),
			     c1 + 1, c2 + 1);
		if (c2 == c1 + 1)
			n = snprintf(rel, sizeof(rel), "%s/%s", spath, c2 + 1);
	} else if (!systemd && cgroups_path[0] == '/') {
		n = snprintf(rel, sizeof(rel), "%s", cgroups_path);
	} else {
		/* Relative to the runtime's own cgroup: not knowable from here. */
		return -EINVAL;
	}
	if (n < 0 || (size_t)n >= sizeof(rel))
		return -ENAMETOOLONG;
	if (has_dotdot(rel))
		return -EINVAL;
	n = snprintf(buf, size, "%s/%s%s", root, controller, rel);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

int shim_cgroup_holds(const char *dir, long pid, struct hezo_error **err)
{
	_cleanup_free_ char *data = NULL, *path = NULL;
	size_t len;
	int r;

	if (asprintf(&path, "%s/cgroup.procs", dir) < 0) {
		path = NULL;
		return hezo_error_set(err, ENOMEM, "out of memory");
	}
	r = hezo_read_file_at(AT_FDCWD, path, CGROUP_FILE_MAX, &data, &len, err);
	if (r < 0)
		return r;
	for (char *s = data, *e; *s; s = e) {
		long v = strtol(s, &e, 10);
		if (e == s)
			break;
		if (v == pid)
			return 1;
	}
	return 0;
}

static int write_value(const char *dir, const char *file, const char *value,
		       struct hezo_error **err)
{
	char path[PATH_MAX + 64];
	_cleanup_close_ int fd = -1;
	int r;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "%s", path);
	r = hezo_write_all(fd, value, strlen(value));
	if (r < 0)
		return hezo_error_set_errno(err, -r, "%s: write %s", path, value);
	return 0;
}

static int write_int(const char *dir, const char *file, int64_t v, struct hezo_error **err)
{
	char s[32];

	snprintf(s, sizeof(s), "%" PRId64, v);
	return write_value(dir, file, s, err);
}

int shim_cgroup_read_int(const char *dir, const char *file, int64_t *out)
{
	_cleanup_free_ char *data = NULL;
	char path[PATH_MAX + 64], *end;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (hezo_read_file_at(AT_FDCWD, path, 64, &data, &len, NULL) < 0)
		return -EIO;
	errno = 0;
	*out = strtoll(data, &end, 10);
	return errno || end == data ? -EINVAL : 0;
}

/* A field given as a number (absent: *has false). 0 from an engine means "leave it". */
static int field(const struct hezo_json *obj, const char *key, const char *name, bool *has,
		 int64_t *v, struct hezo_error **err)
{
	const struct hezo_json *x = hezo_json_get(obj, key);

	*has = false;
	if (!x || x->type == HEZO_JSON_NULL)
		return 0;
	if (hezo_json_get_int64(x, v) < 0)
		return hezo_error_set(err, EINVAL, "update: resources.%s: not an integer", name);
	*has = *v != 0;
	return 0;
}

struct cg_dirs {
	char memory[PATH_MAX], pids[PATH_MAX], cpu[PATH_MAX], cpuset[PATH_MAX], blkio[PATH_MAX];
};

static int dirs_for(const char *root, const char *cgpath, bool systemd, struct cg_dirs *d,
		    struct hezo_error **err)
{
	int r = 0;

	r = r ?: shim_cgroup_dir(root, cgpath, systemd, "memory", d->memory, sizeof(d->memory));
	r = r ?: shim_cgroup_dir(root, cgpath, systemd, "pids", d->pids, sizeof(d->pids));
	r = r ?: shim_cgroup_dir(root, cgpath, systemd, "cpu", d->cpu, sizeof(d->cpu));
	r = r ?: shim_cgroup_dir(root, cgpath, systemd, "cpuset", d->cpuset, sizeof(d->cpuset));
	r = r ?: shim_cgroup_dir(root, cgpath, systemd, "blkio", d->blkio, sizeof(d->blkio));
	if (r < 0)
		return hezo_error_set(err, -r, "cannot locate cgroupsPath \"%s\" under %s", cgpath,
				      root);
	return 0;
}

/* Fields of LinuxResources the emulation cannot honour: refuse rather than pretend. */
static int refuse_unsupported(const struct hezo_json *res, struct hezo_error **err)
{
	static const char *const known[] = {"memory", "pids", "cpu", "blockIO", "devices"};

	HEZO_JSON_FOREACH (i, res) {
		const struct hezo_json *v = res->items[i];
		bool ok = false;

		for (size_t k = 0; k < HEZO_ARRAY_SIZE(known); k++)
			if (strcmp(res->keys[i], known[k]) == 0)
				ok = true;
		/* Empty values are what engines send for "unchanged". */
		if (!ok && v->type != HEZO_JSON_NULL &&
		    !((v->type == HEZO_JSON_ARRAY || v->type == HEZO_JSON_OBJECT) && v->len == 0))
			return hezo_error_set(err, EOPNOTSUPP,
					      "update: resources.%s cannot be changed under runsc",
					      res->keys[i]);
	}
	return 0;
}

int shim_cgroup_update_v1(const char *root, const char *cgpath, bool systemd,
			  const struct hezo_json *res, struct hezo_error **err)
{
	const struct hezo_json *mem = hezo_json_get_type(res, "memory", HEZO_JSON_OBJECT);
	const struct hezo_json *pids = hezo_json_get_type(res, "pids", HEZO_JSON_OBJECT);
	const struct hezo_json *cpu = hezo_json_get_type(res, "cpu", HEZO_JSON_OBJECT);
	const struct hezo_json *blkio = hezo_json_get_type(res, "blockIO", HEZO_JSON_OBJECT);
	const struct hezo_json *dev = hezo_json_get(res, "devices");
	struct cg_dirs d;
	bool has_limit = false, has_swap = false, has_res = false, has_pids = false,
	     has_quota = false, has_period = false, has_shares = false, has_w = false;
	bool has_rt, has_rtp;
	int64_t limit = 0, swap = 0, reservation = 0, npids = 0, quota = 0, period = 0, shares = 0,
		weight = 0, rt = 0, rtp = 0;
	const char *cpus = NULL, *mems = NULL;
	int r;

	r = refuse_unsupported(res, err);
	if (r < 0)
		return r;
	/* The device list is fixed by policy at create; an update may not widen it. */
	if (dev && dev->type == HEZO_JSON_ARRAY && dev->len > 0)
		return hezo_error_set(err, EPERM,
				      "update: resources.devices cannot be changed under runsc");
	r = dirs_for(root, cgpath, systemd, &d, err);
	r = r ?: field(mem, "limit", "memory.limit", &has_limit, &limit, err);
	r = r ?: field(mem, "swap", "memory.swap", &has_swap, &swap, err);
	r = r ?: field(mem, "reservation", "memory.reservation", &has_res, &reservation, err);
	r = r ?: field(pids, "limit", "pids.limit", &has_pids, &npids, err);
	r = r ?: field(cpu, "quota", "cpu.quota", &has_quota, &quota, err);
	r = r ?: field(cpu, "period", "cpu.period", &has_period, &period, err);
	r = r ?: field(cpu, "shares", "cpu.shares", &has_shares, &shares, err);
	r = r ?: field(cpu, "realtimeRuntime", "cpu.realtimeRuntime", &has_rt, &rt, err);
	r = r ?: field(cpu, "realtimePeriod", "cpu.realtimePeriod", &has_rtp, &rtp, err);
	r = r ?: field(blkio, "weight", "blockIO.weight", &has_w, &weight, err);
	if (r < 0)
		return r;
	if (has_rt || has_rtp)
		return hezo_error_set(err, EOPNOTSUPP,
				      "update: realtime CPU limits cannot be changed under runsc");
	cpus = hezo_json_string(hezo_json_get(cpu, "cpus"));
	mems = hezo_json_string(hezo_json_get(cpu, "mems"));

	if (has_limit || has_swap) {
		int64_t cur_swap = 0;
		bool swap_first = false;
		struct stat st;
		char memsw[PATH_MAX + 32];

		/* Swap accounting off: there is no memsw file and memory alone is the limit. */
		snprintf(memsw, sizeof(memsw), "%s/memory.memsw.limit_in_bytes", d.memory);
		if (has_swap && stat(memsw, &st) < 0)
			has_swap = false;
		/* The kernel keeps limit <= memsw at every step: raise memsw first when growing. */
		if (has_limit && has_swap &&
		    shim_cgroup_read_int(d.memory, "memory.memsw.limit_in_bytes", &cur_swap) == 0)
			swap_first = limit > cur_swap;
		if (swap_first)
			r = write_int(d.memory, "memory.memsw.limit_in_bytes", swap, err);
		if (r == 0 && has_limit)
			r = write_int(d.memory, "memory.limit_in_bytes", limit, err);
		if (r == 0 && has_swap && !swap_first)
			r = write_int(d.memory, "memory.memsw.limit_in_bytes", swap, err);
		if (r < 0)
			return r;
	}
	if (has_res &&
	    (r = write_int(d.memory, "memory.soft_limit_in_bytes", reservation, err)) < 0)
		return r;
	if (has_pids && (r = write_int(d.pids, "pids.max", npids, err)) < 0)
		return r;
	if (has_period && (r = write_int(d.cpu, "cpu.cfs_period_us", period, err)) < 0)
		return r;
	if (has_quota && (r = write_int(d.cpu, "cpu.cfs_quota_us", quota, err)) < 0)
		return r;
	if (has_shares && (r = write_int(d.cpu, "cpu.shares", shares, err)) < 0)
		return r;
	if (cpus && *cpus && (r = write_value(d.cpuset, "cpuset.cpus", cpus, err)) < 0)
		return r;
	if (mems && *mems && (r = write_value(d.cpuset, "cpuset.mems", mems, err)) < 0)
		return r;
	if (has_w && (r = write_int(d.blkio, "blkio.weight", weight, err)) < 0)
		return r;
	return 0;
}

int shim_runsc_check_spec(const struct hezo_policy *p, const struct hezo_json *spec,
			  struct hezo_error **err)
{
	const struct hezo_json *nss = hezo_json_get_path(spec, "linux.namespaces");
	_cleanup_json_ struct hezo_json *pj = NULL;
	const struct hezo_json *allow;
	bool netns = false, host_ok = false;

	/*
	 * --network=host with no network namespace in the spec puts the sandbox on the host's
	 * interfaces. Policy refuses that unless the admin allows the host network; check again
	 * here, next to the flag, so the two can never drift apart.
	 */
	if (hezo_policy_runsc_network(p) != HEZO_RUNSC_NET_HOST)
		return 0;
	HEZO_JSON_FOREACH (i, nss) {
		const char *type = hezo_json_string(hezo_json_get(nss->items[i], "type"));
		if (type && strcmp(type, "network") == 0)
			netns = true;
	}
	if (netns)
		return 0;
	pj = hezo_policy_to_json(p);
	allow = hezo_json_get_path(pj, "namespaces.allowHost");
	HEZO_JSON_FOREACH (i, allow) {
		const char *s = hezo_json_string(allow->items[i]);
		if (s && strcmp(s, "network") == 0)
			host_ok = true;
	}
	if (!host_ok)
		return hezo_error_set(
			err, EPERM,
			"runsc --network=host without a network namespace in the spec "
			"would use the host's network");
	return 0;
}

/* The ctx to run internal backend calls with: no --log, so the engine's log keeps our errors. */
static void quiet_ctx(const struct shim_ctx *ctx, struct shim_ctx *q)
{
	*q = *ctx;
	q->g.log = NULL;
	q->g.log_format = NULL;
	q->g.debug = NULL;
}

int shim_runsc_state(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		     char **status, long *pid, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *st = NULL;
	_cleanup_free_ char *out = NULL;
	_cleanup_strv_ struct hezo_strv av = {0};
	struct shim_ctx q;
	char *argv[] = {(char *)id, NULL};
	int64_t v = 0;
	size_t len;
	int r;

	*status = NULL;
	*pid = 0;
	quiet_ctx(ctx, &q);
	r = shim_backend_argv(&q, t, "state", 1, argv, &av, err);
	if (r == 0)
		r = shim_spawn_capture(ctx, &av, &out, &len, err);
	if (r < 0)
		return r;
	if (r > 0)
		return -ENOENT; /* runsc: "loading container: file does not exist" */
	r = hezo_json_parse(out, len, &st, err);
	if (r < 0)
		return hezo_error_prefix(err, "runsc state %s", id);
	/* runsc takes a unique prefix of an ID for the ID: "c2" names "c20" when only it exists. */
	if (strcmp(hezo_json_string(hezo_json_get(st, "id")) ?: "", id) != 0)
		return -ENOENT;
	if (hezo_json_get(st, "pid") && hezo_json_get_int64(hezo_json_get(st, "pid"), &v) == 0)
		*pid = (long)v;
	*status = strdup(hezo_json_string(hezo_json_get(st, "status")) ?: "");
	if (!*status)
		return hezo_error_set(err, ENOMEM, "out of memory");
	return 0;
}

int shim_runsc_destroy(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		       struct hezo_error **err)
{
	_cleanup_strv_ struct hezo_strv av = {0};
	struct shim_ctx q;
	char *argv[] = {"--force", (char *)id, NULL};
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *out = NULL;
	size_t len;
	int r;

	quiet_ctx(ctx, &q);
	r = shim_backend_argv(&q, t, "delete", 2, argv, &av, &e);
	/* Gone already: nothing to destroy. */
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		if (err && !*err)
			*err = TAKE_PTR(e);
		return r;
	}
	if (r == 0)
		r = shim_spawn_capture(ctx, &av, &out, &len, err);
	if (r > 0)
		return hezo_error_set(err, EIO, "runsc delete --force %s failed (exit %d)", id, r);
	return r;
}

int shim_runsc_host_pids(struct shim_ctx *ctx, const struct shim_target *t,
			 const struct hezo_json *rec, const char *id, struct hezo_json **out,
			 struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *arr = hezo_json_new_array();
	_cleanup_free_ char *status = NULL, *data = NULL;
	const char *cgpath = hezo_json_string(hezo_json_get(rec, "cgroupsPath"));
	char dir[PATH_MAX], path[PATH_MAX + 16];
	long pid = 0;
	size_t len;
	int r;

	if (!arr)
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = shim_runsc_state(ctx, t, id, &status, &pid, err);
	if (r == -ENOENT)
		return hezo_error_set(err, ENOENT, "container \"%s\" does not exist", id);
	if (r < 0)
		return r;
	/*
	 * Every host process of the container is in its cgroup: the sandbox, the gofer and the
	 * sandbox's helper processes. Only trust the cgroup if it holds the sandbox.
	 */
	if (pid > 0 &&
	    shim_cgroup_dir("/sys/fs/cgroup", cgpath, shim_record_systemd(rec), "pids", dir,
			    sizeof(dir)) == 0 &&
	    shim_cgroup_holds(dir, pid, NULL) == 1) {
		snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
		if (hezo_read_file_at(AT_FDCWD, path, CGROUP_FILE_MAX, &data, &len, NULL) == 0) {
			for (char *s = data, *e; *s; s = e) {
				long v = strtol(s, &e, 10);
				if (e == s)
					break;
				if (v > 0 && hezo_json_append(arr, hezo_json_new_int(v)) < 0)
					return hezo_error_set(err, ENOMEM, "out of memory");
			}
		}
	}
	if (arr->len == 0 && pid > 0 && hezo_json_append(arr, hezo_json_new_int(pid)) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	*out = TAKE_PTR(arr);
	return 0;
}

int shim_runsc_check_update(const struct hezo_json *req, const char *id, struct hezo_error **err)
{
	const struct hezo_json *lim = hezo_json_get_path(req, "pids.limit");
	int64_t n = 0;

	/*
	 * The workload's limit is RLIMIT_NPROC inside the Sentry, fixed at create: nothing can
	 * change it in a running sandbox, and a host limit sized for another count would either
	 * not bind or end the sandbox. 0 is what engines send for "unchanged".
	 */
	if (lim && lim->type != HEZO_JSON_NULL && (hezo_json_get_int64(lim, &n) < 0 || n != 0))
		return hezo_error_set(err, EOPNOTSUPP,
				      "update %s: pids.limit cannot be changed under runsc: the "
				      "limit is RLIMIT_NPROC inside the sandbox, set at create",
				      id);
	return 0;
}

int shim_runsc_update(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		      const struct hezo_policy *p, const struct hezo_json *res,
		      struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *rec = NULL;
	_cleanup_free_ char *status = NULL;
	const char *cgpath;
	char dir[PATH_MAX];
	long pid = 0;
	int r;

	r = shim_record_read(ctx, id, &rec, err);
	if (r == -ENOENT)
		return hezo_error_set(err, ENOENT,
				      "update %s: runsc has no update command and the shim has no "
				      "record of this container's cgroup",
				      id);
	if (r < 0)
		return r;
	/*
	 * One sandbox runs all of a pod's containers, with one host cgroup: the box's limits and
	 * the pod cgroup's above it hold for the pod as a whole, and none can be one container's.
	 */
	if (shim_runsc_pod_app(rec, &cgpath, NULL) != 0)
		return hezo_error_set(
			err, EOPNOTSUPP,
			"update %s: under runsc a pod's containers share one sandbox, "
			"whose limits are the pod's (its sandbox container's and the pod "
			"cgroup's): one container's cannot be changed",
			id);
	cgpath = hezo_json_string(hezo_json_get(rec, "cgroupsPath"));
	if (!cgpath)
		return hezo_error_set(err, ENOENT,
				      "update %s: runsc has no update command and the container's "
				      "record names no cgroupsPath",
				      id);
	if (access("/sys/fs/cgroup/memory", F_OK) < 0)
		return hezo_error_set(
			err, EOPNOTSUPP,
			"update %s: runsc has no update command and the shim emulates "
			"it on cgroup v1 only",
			id);
	r = shim_runsc_state(ctx, t, id, &status, &pid, err);
	if (r == -ENOENT)
		return hezo_error_set(err, ENOENT, "container \"%s\" does not exist", id);
	if (r < 0)
		return r;
	/* Write only into a cgroup that really holds this container's sandbox. */
	r = shim_cgroup_dir("/sys/fs/cgroup", cgpath, shim_record_systemd(rec), "memory", dir,
			    sizeof(dir));
	if (r < 0 || pid <= 0 || shim_cgroup_holds(dir, pid, NULL) != 1)
		return hezo_error_set(err, ESRCH,
				      "update %s: the sandbox (pid %ld) is not in cgroup %s", id,
				      pid, cgpath);
	r = shim_cgroup_update_v1("/sys/fs/cgroup", cgpath, shim_record_systemd(rec), res, err);
	if (r < 0)
		return hezo_error_prefix(err, "update %s", id);
	return 0;
}

int shim_runsc_exec_helper(char *buf, size_t size)
{
	/* Next to the shim (build tree, or bindir), else its libexec directory. */
	static const char *const rel[] = {"hezo-seccomp-exec", "../libexec/hezo/hezo-seccomp-exec",
					  NULL};

	return shim_find_helper("HEZO_SECCOMP_EXEC", rel, buf, size);
}

int shim_runsc_prepare_exec(struct hezo_json *spec, char **hex, struct hezo_error **err)
{
	const struct hezo_json *prof = hezo_json_get_path(spec, "linux.seccomp");
	struct hezo_json *mounts = hezo_json_get_type(spec, "mounts", HEZO_JSON_ARRAY);
	char helper[PATH_MAX];
	int r;

	*hex = NULL;
	if (!prof || prof->type != HEZO_JSON_OBJECT)
		return 0;
	/* The helper's mount point must be creatable: /dev is a tmpfs, the root is read-only. */
	if (!shim_has_dev_tmpfs(mounts))
		return hezo_error_set(
			err, EINVAL,
			"runsc: no tmpfs on /dev to mount the seccomp helper for exec "
			"into");
	if (shim_runsc_exec_helper(helper, sizeof(helper)) < 0)
		return hezo_error_set(err, ENOENT,
				      "runsc: seccomp helper hezo-seccomp-exec not found (set "
				      "HEZO_SECCOMP_EXEC): exec'd processes would run without the "
				      "container's profile");
	r = shim_seccomp_bpf(prof, hex, err);
	if (r < 0)
		return hezo_error_prefix(err, "runsc: linux.seccomp");
	return shim_mount_helper(mounts, SHIM_SECCOMP_EXEC_DEST, helper, err);
}

int shim_runsc_exec_prefix(const struct hezo_json *rec, const char *id, struct hezo_strv *out,
			   struct hezo_error **err)
{
	const char *hex = hezo_json_string(hezo_json_get(rec, "execSeccomp"));
	int r;

	if (!hex || !*hex)
		return hezo_error_set(
			err, EPERM,
			"exec %s: runsc starts exec'd processes without the container's "
			"seccomp profile and this container has no helper to install it",
			id);
	r = hezo_strv_push(out, SHIM_SECCOMP_EXEC_DEST);
	r = r ?: hezo_strv_push(out, hex);
	r = r ?: hezo_strv_push(out, "--");
	if (r < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	return 0;
}
