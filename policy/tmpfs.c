/* A tmpfs the engine asked for: it keeps its place, not its loosening options or its size. */
/*
 * Every tmpfs gets nosuid and noexec, and nodev except at /dev (whose dev or nodev stays as the
 * engine wrote it): runc mounts its /dev as a tmpfs
 * and makes the device nodes of linux.devices there with mknod (or binds them from the host in a
 * user namespace), and a nodev /dev would make /dev/null fail to open. Which devices can be made
 * or opened there is the cgroup device list's rule (apply.c), not the mount's.
 *
 * The kernel reads the last of size= and nr_blocks= (pages) as the tmpfs's size and size=0 as no
 * limit at all; a percentage is of the host's RAM. So both are replaced by one size= that is the
 * smaller of what the engine's last one asked for and tmpfsMax, and a percentage, 0 or nothing
 * becomes tmpfsMax.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy-internal.h"

/* Flags a tmpfs loses, each for the flag that replaces it. */
static const struct {
	const char *loose;
	const char *tight;
} tmpfs_flags[] = {
	{"suid", "nosuid"},
	{"exec", "noexec"},
	{"dev", "nodev"},
};

/* size=N[kmgtpe] or nr_blocks=N[kmgtpe] (in pages) as bytes; UINT64_MAX: 0, a % or too big. */
static uint64_t requested_size(const char *opt)
{
	static const char units[] = "kmgtpe";
	bool blocks = strncmp(opt, "nr_blocks=", 10) == 0;
	const char *v = opt + (blocks ? 10 : 5);
	char *end = NULL;
	unsigned long long n;
	uint64_t mult = 1;
	const char *u;

	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || end == v)
		return UINT64_MAX;
	if (*end) {
		u = strchr(units, end[0] | 0x20);
		if (!u || end[1])
			return UINT64_MAX; /* a percentage of the host's RAM */
		for (ptrdiff_t i = 0; i <= u - units; i++)
			mult *= 1024;
	}
	if (blocks) {
		long page = sysconf(_SC_PAGESIZE);
		mult *= page > 0 ? (uint64_t)page : 4096;
	}
	if (n == 0 || n > UINT64_MAX / mult)
		return UINT64_MAX;
	return (uint64_t)n * mult;
}

static bool is_size_opt(const char *o)
{
	return strncmp(o, "size=", 5) == 0 || strncmp(o, "nr_blocks=", 10) == 0;
}

int hezo_policy_clamp_tmpfs(const struct hezo_policy *p, struct hezo_json *m, size_t idx,
			    const char *dest, struct hezo_error **err)
{
	bool dev_ok = strcmp(dest, "/dev") == 0;
	uint64_t size = UINT64_MAX;
	struct hezo_json *opts;
	char f[64], s[48];

	snprintf(f, sizeof(f), "mounts[%zu].options", idx);
	opts = hezo_policy_want_array(m, "options", f, err);
	if (!opts)
		return -EINVAL;
	/* check_options has seen every option: all are strings. */
	for (size_t i = 0; i < opts->len;) {
		const char *o = hezo_json_string(opts->items[i]);
		bool drop = false;

		if (!o)
			return hezo_policy_ferr(err,
						"mounts[%zu] (%s): options[%zu]: expected a string",
						idx, dest, i);
		if (is_size_opt(o)) {
			size = requested_size(o);
			drop = true;
		}
		for (size_t k = 0; k < HEZO_ARRAY_SIZE(tmpfs_flags); k++)
			if ((strcmp(o, tmpfs_flags[k].loose) == 0 ||
			     strcmp(o, tmpfs_flags[k].tight) == 0) &&
			    !(dev_ok && strcmp(tmpfs_flags[k].tight, "nodev") == 0))
				drop = true;
		if (drop)
			hezo_json_remove_at(opts, i);
		else
			i++;
	}
	for (size_t k = 0; k < HEZO_ARRAY_SIZE(tmpfs_flags); k++) {
		const char *flag = tmpfs_flags[k].tight;

		if (dev_ok && strcmp(flag, "nodev") == 0)
			continue;
		if (hezo_json_append(opts, hezo_json_new_string(flag)) < 0)
			return hezo_policy_nomem(err);
	}
	if (size > p->tmpfs_max)
		size = p->tmpfs_max;
	snprintf(s, sizeof(s), "size=%" PRIu64, size);
	if (hezo_json_append(opts, hezo_json_new_string(s)) < 0)
		return hezo_policy_nomem(err);
	return 0;
}
