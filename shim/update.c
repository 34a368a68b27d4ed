/*
 * update: whichever form the engine used (--resources FILE|- or runc's flags), the backend gets
 * one LinuxResources object clamped to the container's policy and to the box's current limits,
 * on its stdin; the TCP buffer cap then follows the memory limit.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hezo-file.h"
#include "hezo-spec.h"
#include "shim.h"

#define RESOURCES_MAX (1024 * 1024)

static int read_resources(const char *src, struct hezo_json **out, struct hezo_error **err)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r;

	if (strcmp(src, "-") == 0)
		r = hezo_read_fd(STDIN_FILENO, RESOURCES_MAX, &data, &len, err);
	else
		r = hezo_read_file_at(AT_FDCWD, src, RESOURCES_MAX, &data, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "update --resources %s", src);
	r = hezo_json_parse(data, len, out, err);
	if (r < 0)
		return hezo_error_prefix(err, "update --resources %s", src);
	if ((*out)->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "update --resources %s: not a JSON object", src);
	return 0;
}

/* The clamped JSON as the backend's stdin: a memfd holds any size, unlike a pipe. */
static int resources_stdin(const struct hezo_json *res, struct hezo_error **err)
{
	_cleanup_free_ char *data = NULL;
	_cleanup_close_ int fd = -1;
	size_t len;
	int r;

	r = hezo_json_dump(res, false, &data, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "update");
	fd = memfd_create("hezo-resources", MFD_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "update: memfd_create");
	r = hezo_write_all(fd, data, len);
	if (r < 0)
		return hezo_error_set_errno(err, -r, "update: write resources");
	if (lseek(fd, 0, SEEK_SET) < 0 || dup2(fd, STDIN_FILENO) < 0)
		return hezo_error_set_errno(err, errno, "update: stdin");
	return 0;
}

/*
 * The limits the box's cgroup holds now, from the cgroupsPath of its record: what an update that
 * leaves a field unchanged is still bound by. Whatever cannot be read stays 0 (not known).
 */
static void live_limits(const struct hezo_json *rec, struct hezo_policy_live *live,
			char memdir[PATH_MAX])
{
	char dir[PATH_MAX];

	*live = (struct hezo_policy_live){0};
	memdir[0] = '\0';
	if (!rec)
		return;
	if (shim_record_cgroup(rec, "memory", dir, sizeof(dir)) == 0) {
		snprintf(memdir, PATH_MAX, "%s", dir);
		(void)shim_cgroup_read_int(dir, "memory.limit_in_bytes", &live->memory_limit);
	}
	if (shim_record_cgroup(rec, "cpu", dir, sizeof(dir)) == 0 &&
	    (shim_cgroup_read_int(dir, "cpu.cfs_quota_us", &live->cpu_quota) < 0 ||
	     shim_cgroup_read_int(dir, "cpu.cfs_period_us", &live->cpu_period) < 0))
		live->cpu_quota = live->cpu_period = 0;
}

int shim_cmd_update(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *res = NULL, *rec = NULL;
	_cleanup_error_ struct hezo_error *no_rec = NULL;
	struct hezo_policy_live live;
	char memdir[PATH_MAX];
	_cleanup_strv_ struct hezo_strv kept = {0}, av = {0};
	_cleanup_target_ struct shim_target t = {0};
	const char *id = v->id, *src;
	int r;

	/* Intel RDT: the host's cache and memory-bandwidth classes, refused in config.json too. */
	for (const char *const *f = (const char *const[]){"l3-cache-schema", "mem-bw-schema", NULL};
	     *f; f++)
		if (shim_args_get(&v->args, *f))
			return hezo_error_set(
				err, EPERM,
				"update --%s: Intel RDT is not allowed (linux.intelRdt "
				"is refused at create too)",
				*f);
	r = shim_resolve_policy(ctx, id, &t, &p, err);
	if (r < 0)
		return r;
	/* As runc: with --resources the resource flags are ignored. */
	src = shim_args_get(&v->args, "resources");
	if (src && *src)
		r = read_resources(src, &res, err);
	else
		r = shim_update_flags_to_json(&v->args, &res, err);
	if (r < 0)
		return r;
	if (!res && !(res = hezo_json_new_object()))
		return hezo_error_set(err, ENOMEM, "out of memory");
	/* Spelling first: runsc's own refusals below must not read a key runc would fold. */
	r = hezo_spec_check_keys(res, HEZO_SPEC_DOC_RESOURCES, "resources", err);
	if (r < 0)
		return hezo_error_prefix(err, "update %s", id);
	if (t.backend == HEZO_BACKEND_RUNSC && (r = shim_runsc_check_update(res, id, err)) < 0)
		return r;
	(void)shim_record_read(ctx, id, &rec, &no_rec);
	live_limits(rec, &live, memdir);
	r = hezo_policy_apply_resources(p, res, &live, err);
	if (r < 0)
		return hezo_error_prefix(err, "update %s", id);
	/* runsc has no update: the shim writes the sandbox's cgroup itself. */
	if (t.backend == HEZO_BACKEND_RUNSC) {
		r = shim_runsc_update(ctx, &t, id, p, res, err);
	} else {
		if (shim_update_backend_args(&v->args, v->argv, &kept) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
		r = shim_backend_argv(ctx, &t, v->name, (int)kept.n, kept.v, &av, err);
		r = r ?: resources_stdin(res, err);
		/* Waited for, not exec'd: the TCP cap is written once the memory limit is. */
		r = r ?: shim_spawn_wait(ctx, &av, err);
	}
	if (r != 0 || !memdir[0] || !hezo_json_get(res, "memory"))
		return r;
	r = shim_tcp_follow(memdir, err);
	return r < 0 ? hezo_error_prefix(err, "update %s", id) : 0;
}
