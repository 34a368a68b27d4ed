/*
 * Host-wide kernel tables a runc (or crun) box draws on that neither its cgroup nor its user
 * namespace bounds: the file table (fs.file-max) and async I/O contexts (fs.aio-max-nr). Under
 * runsc the Sentry keeps both itself (its own file table; io_setup answered inside gVisor).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hezo-file.h"
#include "shim.h"

/* The smallest RLIMIT_NOFILE a box is given: Linux's own default soft limit. */
#define NOFILE_FLOOR UINT64_C(1024)
/* A box may hold at most this share of the host's file table (as of its user.max_* limits). */
#define FILE_MAX_SHARE 4

/* A /proc/sys number, read with the shared bounded reader. */
static int read_u64(const char *path, uint64_t *out)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r = hezo_read_file_at(AT_FDCWD, path, 64, &buf, &len, NULL);

	if (r < 0)
		return r;
	*out = strtoull(buf, NULL, 10);
	return 0;
}

static struct hezo_json *nofile_entry(uint64_t soft, uint64_t hard)
{
	_cleanup_json_ struct hezo_json *o = hezo_json_new_object();

	if (!o || hezo_json_set(o, "type", hezo_json_new_string("RLIMIT_NOFILE")) < 0 ||
	    hezo_json_set(o, "hard", hezo_json_new_uint(hard)) < 0 ||
	    hezo_json_set(o, "soft", hezo_json_new_uint(soft)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

/*
 * Every process of the box may open RLIMIT_NOFILE files and the box may hold as many processes
 * as the policy's resources.pids (what an update may raise pids.limit to): their product is
 * clamped to a quarter of fs.file-max by lowering RLIMIT_NOFILE in process (added where absent:
 * runc would leave the caller's, 1048576 under Docker). Clamped, not refused: engines send a
 * large limit by default and a box must still start; refused only when even 1024 files a process
 * would pass the share (the admin must lower resources.pids).
 */
int shim_hostwide_nofile(struct hezo_json *process, const struct hezo_policy *p,
			 struct hezo_error **err)
{
	struct hezo_json *rl = hezo_json_ensure_array(process, "rlimits");
	uint64_t file_max = 0, cap, hard, soft, pids = hezo_policy_pids(p);
	bool seen = false;

	if (!rl)
		return hezo_error_set(err, EINVAL, "process.rlimits: expected an array");
	if (read_u64("/proc/sys/fs/file-max", &file_max) < 0 || file_max == 0)
		return hezo_error_set(err, EIO, "/proc/sys/fs/file-max: cannot read it");
	cap = pids ? file_max / FILE_MAX_SHARE / pids : 0;
	if (cap < NOFILE_FLOOR)
		return hezo_error_set(err, EINVAL,
				      "resources.pids %" PRIu64 ": with %" PRIu64
				      " files a process a box could hold more than a quarter of "
				      "the host's file table (fs.file-max %" PRIu64 ")",
				      pids, NOFILE_FLOOR, file_max);
	HEZO_JSON_FOREACH (i, rl) {
		struct hezo_json *e = rl->items[i];

		if (strcmp(hezo_json_string(hezo_json_get(e, "type")) ?: "", "RLIMIT_NOFILE") != 0)
			continue;
		seen = true;
		hard = soft = 0;
		(void)hezo_json_get_uint64(hezo_json_get(e, "hard"), &hard);
		(void)hezo_json_get_uint64(hezo_json_get(e, "soft"), &soft);
		hard = hard > cap ? cap : hard;
		soft = soft > hard ? hard : soft;
		if (hezo_json_set(e, "hard", hezo_json_new_uint(hard)) < 0 ||
		    hezo_json_set(e, "soft", hezo_json_new_uint(soft)) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	if (!seen &&
	    hezo_json_append(rl, nofile_entry(NOFILE_FLOOR < cap ? NOFILE_FLOOR : cap, cap)) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	return 0;
}

/*
 * io_setup answers ENOSYS, as on a kernel without AIO: every context it makes is counted against
 * fs.aio-max-nr, one number for the whole host (16 calls took it all), and libaio's users (InnoDB,
 * QEMU) fall back to threads on ENOSYS. The name leaves every rule that lets it run first: a
 * second rule for the same call with another action is an error to libseccomp.
 */
static int refuse_aio(struct hezo_json *spec, struct hezo_error **err)
{
	struct hezo_json *lx = hezo_json_ensure_object(spec, "linux");
	struct hezo_json *prof = lx ? hezo_json_get(lx, "seccomp") : NULL, *rules, *names;
	_cleanup_json_ struct hezo_json *rule = hezo_json_new_object(),
					*list = hezo_json_new_array();

	if (!lx || !rule)
		return hezo_error_set(err, ENOMEM, "out of memory");
	if (!prof) {
		prof = hezo_json_ensure_object(lx, "seccomp");
		if (!prof || hezo_json_set(prof, "defaultAction",
					   hezo_json_new_string("SCMP_ACT_ALLOW")) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	if (prof->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "linux.seccomp: expected an object");
	rules = hezo_json_ensure_array(prof, "syscalls");
	if (!rules)
		return hezo_error_set(err, EINVAL, "linux.seccomp.syscalls: expected an array");
	for (size_t i = rules->len; i-- > 0;) {
		names = hezo_json_get_type(rules->items[i], "names", HEZO_JSON_ARRAY);
		for (size_t k = names ? names->len : 0; k-- > 0;)
			if (strcmp(hezo_json_string(names->items[k]) ?: "", "io_setup") == 0)
				(void)hezo_json_remove_at(names, k);
		if (names && names->len == 0)
			(void)hezo_json_remove_at(rules, i);
	}
	if (!list || hezo_json_append(list, hezo_json_new_string("io_setup")) < 0 ||
	    hezo_json_set(rule, "names", TAKE_PTR(list)) < 0 ||
	    hezo_json_set(rule, "action", hezo_json_new_string("SCMP_ACT_ERRNO")) < 0 ||
	    hezo_json_set(rule, "errnoRet", hezo_json_new_uint(ENOSYS)) < 0 ||
	    hezo_json_append(rules, TAKE_PTR(rule)) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	return 0;
}

int shim_hostwide_bound(struct hezo_json *spec, const struct hezo_policy *p,
			struct hezo_error **err)
{
	struct hezo_json *proc = hezo_json_ensure_object(spec, "process");
	int r = proc ? shim_hostwide_nofile(proc, p, err)
		     : hezo_error_set(err, EINVAL, "process: expected an object");

	return r ?: refuse_aio(spec, err);
}
