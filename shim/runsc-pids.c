/*
 * Processes under runsc: the policy's pids limit is enforced inside gVisor as RLIMIT_NPROC (a fork
 * past it fails with EAGAIN and the container goes on), and the host pids cgroup is sized from a
 * measured model of the Sentry's own host tasks, as a backstop the workload never reaches.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hezo-file.h"
#include "shim.h"

/*
 * Host tasks in the container's pids cgroup = base + perTask * gVisor tasks, measured with 0 to
 * 256 sleeping, busy and fork-bombing tasks (docs/runsc.md, "Processes"; tests/bench/run.sh row
 * runsc). A fork bomb held at 256 tasks costs the most: up to 728 host tasks under
 * systrap (2024-07), up to 3546 under ptrace (2022-12), varying from run to run. The figures
 * below leave room above the worst case seen.
 */
static const struct shim_runsc_model models[] = {
	{"systrap", 64, 5},
	{"ptrace", 128, 24},
};
/* KVM or a platform not measured: the largest cost known. */
static const struct shim_runsc_model model_unknown = {"unmeasured", 128, 24};

/* The first release measured whose default platform is systrap (0.0~20240729.0). */
#define SYSTRAP_DEFAULT_SINCE 20240729

uint64_t shim_runsc_release_date(const char *version_output)
{
	/* "runsc version 0.0~20240729.0" (Debian) or "runsc version release-20240729.0". */
	for (const char *s = version_output; s && *s; s++) {
		uint64_t v = 0;
		int n = 0;

		if (s[0] != '2' || s[1] != '0' ||
		    (s != version_output && s[-1] >= '0' && s[-1] <= '9'))
			continue;
		while (n < 8 && s[n] >= '0' && s[n] <= '9')
			v = v * 10 + (uint64_t)(s[n++] - '0');
		if (n == 8 && !(s[8] >= '0' && s[8] <= '9'))
			return v;
	}
	return 0;
}

const struct shim_runsc_model *shim_runsc_model_for(uint64_t release, const char *platform)
{
	if (!platform)
		platform = release >= SYSTRAP_DEFAULT_SINCE ? "systrap"
			   : release > 0		    ? "ptrace"
							    : NULL;
	for (size_t i = 0; platform && i < HEZO_ARRAY_SIZE(models); i++)
		if (strcmp(models[i].platform, platform) == 0)
			return &models[i];
	return &model_unknown;
}

uint64_t shim_runsc_host_limit(const struct shim_runsc_model *m, uint64_t tasks, uint64_t extra)
{
	uint64_t v = m->base;

	if (tasks > (INT64_MAX - v) / m->per_task)
		return INT64_MAX;
	v += m->per_task * tasks;
	return extra > INT64_MAX - v ? INT64_MAX : v + extra;
}

/* --platform=X or --platform X among the backend's global flags (policy's args); NULL: default. */
static const char *platform_flag(const struct shim_target *t)
{
	for (size_t i = 0; i < t->args.n; i++) {
		const char *a = t->args.v[i];

		if (strncmp(a, "--platform=", 11) == 0)
			return a + 11;
		if (strcmp(a, "--platform") == 0 && i + 1 < t->args.n)
			return t->args.v[i + 1];
	}
	return NULL;
}

/*
 * The release date of the runsc binary at t->path: `runsc --version` once, then from a cache in
 * the state directory keyed by the binary's path, inode, size and mtime (a package upgrade
 * changes them). 0 when it cannot be told: the model then takes the largest cost.
 */
static uint64_t release_of(struct shim_ctx *ctx, const struct shim_target *t)
{
	_cleanup_free_ char *cached = NULL, *out = NULL;
	_cleanup_close_ int dfd = -1;
	_cleanup_strv_ struct hezo_strv av = {0};
	char key[SHIM_KEY_LEN], name[64], stamp[160], line[200];
	unsigned long long date = 0;
	struct stat st;
	size_t len;
	int r;

	if (stat(t->path, &st) < 0)
		return 0;
	shim_record_key(t->path, key);
	snprintf(name, sizeof(name), ".runsc-release-%s", key);
	snprintf(stamp, sizeof(stamp), "%llu %llu %lld %lld.%09ld", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec);
	dfd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0 && hezo_read_file_at(dfd, name, sizeof(line), &cached, &len, NULL) == 0) {
		const char *sp = strrchr(cached, ' ');

		if (sp && (size_t)(sp - cached) == strlen(stamp) &&
		    strncmp(cached, stamp, strlen(stamp)) == 0)
			return strtoull(sp + 1, NULL, 10);
	}
	r = hezo_strv_push(&av, t->path);
	r = r ?: hezo_strv_push(&av, "--version");
	if (r == 0 && shim_spawn_capture(ctx, &av, &out, &len, NULL) == 0)
		date = shim_runsc_release_date(out);
	/* Only a known answer is kept: a failed run is asked again next time. */
	if (date && dfd >= 0) {
		int n = snprintf(line, sizeof(line), "%s %llu\n", stamp, date);

		if (n > 0 && (size_t)n < sizeof(line))
			(void)hezo_write_state_file_at(dfd, name, line, (size_t)n, 0644, NULL);
	}
	return date;
}

const struct shim_runsc_model *shim_runsc_model_of(struct shim_ctx *ctx,
						   const struct shim_target *t)
{
	return shim_runsc_model_for(release_of(ctx, t), platform_flag(t));
}

int shim_runsc_set_nproc(struct hezo_json *process, int64_t limit, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *kept = hezo_json_new_array();
	struct hezo_json *rl = hezo_json_get(process, "rlimits"), *e;
	int64_t soft = limit, hard = limit;
	int r;

	if (!kept)
		return hezo_error_set(err, ENOMEM, "out of memory");
	if (rl && rl->type != HEZO_JSON_ARRAY && rl->type != HEZO_JSON_NULL)
		return hezo_error_set(err, EINVAL, "process.rlimits: expected an array");
	HEZO_JSON_FOREACH (i, rl) {
		const struct hezo_json *x = rl->items[i];
		const char *type = hezo_json_string(hezo_json_get(x, "type"));
		int64_t s, h;

		if (!type || strcmp(type, "RLIMIT_NPROC") != 0) {
			struct hezo_json *c = hezo_json_clone(x);

			if (!c || hezo_json_append(kept, c) < 0) {
				hezo_json_free(c);
				return hezo_error_set(err, ENOMEM, "out of memory");
			}
			continue;
		}
		/* The engine's own nproc (docker --ulimit nproc=S:H) stays when it is lower. */
		if (hezo_json_get_int64(hezo_json_get(x, "soft"), &s) == 0 && s >= 0 && s < soft)
			soft = s;
		if (hezo_json_get_int64(hezo_json_get(x, "hard"), &h) == 0 && h >= 0 && h < hard)
			hard = h;
	}
	if (soft > hard)
		soft = hard;
	e = hezo_json_new_object();
	r = e ? 0 : -ENOMEM;
	r = r ?: hezo_json_set(e, "type", hezo_json_new_string("RLIMIT_NPROC"));
	r = r ?: hezo_json_set(e, "hard", hezo_json_new_int(hard));
	r = r ?: hezo_json_set(e, "soft", hezo_json_new_int(soft));
	if (r == 0 && (r = hezo_json_append(kept, e)) == 0)
		e = NULL;
	hezo_json_free(e);
	r = r ?: hezo_json_set(process, "rlimits", TAKE_PTR(kept));
	if (r < 0)
		return hezo_error_set(err, -r, "out of memory");
	return 0;
}

int shim_runsc_size_pids(const struct shim_runsc_model *m, const struct hezo_policy *p,
			 struct hezo_json *spec, int64_t *tasks, int64_t *host,
			 struct hezo_error **err)
{
	struct hezo_json *process = hezo_json_get_type(spec, "process", HEZO_JSON_OBJECT);
	struct hezo_json *pids = hezo_json_get_path(spec, "linux.resources.pids");
	int64_t w = 0;
	uint64_t h;
	int r;

	/* Policy has put min(engine, policy) here: the workload's own count. */
	if (!process || !pids || pids->type != HEZO_JSON_OBJECT ||
	    hezo_json_get_int64(hezo_json_get(pids, "limit"), &w) < 0 || w <= 0)
		return hezo_error_set(err, EINVAL,
				      "runsc: linux.resources.pids.limit is not set after policy");
	r = shim_runsc_set_nproc(process, w, err);
	if (r < 0)
		return hezo_error_prefix(err, "runsc");
	h = shim_runsc_host_limit(m, (uint64_t)w, hezo_policy_runsc_pids_headroom(p));
	r = hezo_json_set(pids, "limit", hezo_json_new_int((int64_t)h));
	if (r < 0)
		return hezo_error_set(err, -r, "out of memory");
	*tasks = w;
	*host = (int64_t)h;
	return 0;
}
