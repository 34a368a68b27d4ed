/* A tmpfs the engine asked for: it keeps its place, not its loosening options or its size. */
/*
 * Every tmpfs gets nosuid, and noexec unless the policy's exec.tmpfs lets the engine's word stand,
 * and nodev except at /dev (whose dev or nodev stays as the
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

/*
 * Whether the engine's own flag stays for this pair: /dev's dev or nodev (runc makes device nodes
 * there), and exec or noexec when the policy's exec.tmpfs lets a tmpfs execute.
 */
static bool kept_as_asked(const struct hezo_policy *p, bool dev_ok, const char *tight)
{
	return (dev_ok && strcmp(tight, "nodev") == 0) ||
	       (p->tmpfs_exec && strcmp(tight, "noexec") == 0);
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
			    !kept_as_asked(p, dev_ok, tmpfs_flags[k].tight))
				drop = true;
		if (drop)
			hezo_json_remove_at(opts, i);
		else
			i++;
	}
	for (size_t k = 0; k < HEZO_ARRAY_SIZE(tmpfs_flags); k++) {
		const char *flag = tmpfs_flags[k].tight;

		if (kept_as_asked(p, dev_ok, flag))
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

/* The last of the flag pair k in opts: 1 loose, 0 tight, -1 neither. */
static int last_flag(const struct hezo_json *opts, size_t k)
{
	int v = -1;

	HEZO_JSON_FOREACH (i, opts) {
		const char *o = hezo_json_string(opts->items[i]);

		if (o && strcmp(o, tmpfs_flags[k].loose) == 0)
			v = 1;
		else if (o && strcmp(o, tmpfs_flags[k].tight) == 0)
			v = 0;
	}
	return v;
}

/* The size the last size= or nr_blocks= of opts asks for (UINT64_MAX: none, 0, a % or too big). */
static uint64_t last_size(const struct hezo_json *opts)
{
	uint64_t size = UINT64_MAX;

	HEZO_JSON_FOREACH (i, opts) {
		const char *o = hezo_json_string(opts->items[i]);

		if (o && is_size_opt(o))
			size = requested_size(o);
	}
	return size;
}

static const struct hezo_json *mount_at(const struct hezo_json *mounts, const char *dest)
{
	const struct hezo_json *found = NULL;

	HEZO_JSON_FOREACH (i, mounts) {
		const char *d = hezo_json_string(hezo_json_get(mounts->items[i], "destination"));

		if (d && strcmp(d, dest) == 0)
			found = mounts->items[i];
	}
	return found;
}

static int add_rewrite(struct hezo_json *list, const char *dest, const char *asked, const char *got,
		       const char *reason)
{
	struct hezo_json *r = hezo_json_new_object();

	if (!r || hezo_json_set(r, "mount", hezo_json_new_string(dest)) < 0 ||
	    hezo_json_set(r, "asked", asked ? hezo_json_new_string(asked) : hezo_json_new_null()) <
		    0 ||
	    hezo_json_set(r, "got", hezo_json_new_string(got)) < 0 ||
	    hezo_json_set(r, "reason", hezo_json_new_string(reason)) < 0) {
		hezo_json_free(r);
		return -ENOMEM;
	}
	return hezo_json_append(list, r);
}

static const char *flag_reason(const struct hezo_policy *p, size_t k)
{
	switch (k) {
	case 0:
		return "a tmpfs is always nosuid";
	case 1:
		return p->tmpfs_exec ? "exec.tmpfs is true: the policy's own tmpfs executes"
				     : "exec.tmpfs is false: no tmpfs may execute";
	default:
		return "a tmpfs other than /dev is always nodev";
	}
}

struct hezo_json *hezo_policy_tmpfs_rewrites(const struct hezo_policy *p,
					     const struct hezo_json *asked,
					     const struct hezo_json *got)
{
	_cleanup_json_ struct hezo_json *list = hezo_json_new_array();
	const struct hezo_json *in = hezo_json_get_type(asked, "mounts", HEZO_JSON_ARRAY);
	const struct hezo_json *out = hezo_json_get_type(got, "mounts", HEZO_JSON_ARRAY);

	if (!list)
		return NULL;
	HEZO_JSON_FOREACH (i, in) {
		const struct hezo_json *m = in->items[i], *g;
		const char *dest = hezo_json_string(hezo_json_get(m, "destination"));
		const char *type = hezo_json_string(hezo_json_get(m, "type"));
		const struct hezo_json *ao = hezo_json_get_type(m, "options", HEZO_JSON_ARRAY);
		const struct hezo_json *go;
		uint64_t as, gs;
		char a[48], b[48], why[160];
		bool policy_own = false;

		if (!dest || !type || strcmp(type, "tmpfs") != 0)
			continue;
		g = mount_at(out, dest);
		if (!g || !hezo_json_string(hezo_json_get(g, "type")) ||
		    strcmp(hezo_json_string(hezo_json_get(g, "type")), "tmpfs") != 0)
			continue;
		go = hezo_json_get_type(g, "options", HEZO_JSON_ARRAY);
		for (size_t t = 0; t < p->ntmpfs; t++)
			if (strcmp(p->tmpfs[t].dest, dest) == 0)
				policy_own = true;
		for (size_t k = 0; k < HEZO_ARRAY_SIZE(tmpfs_flags); k++) {
			int was = last_flag(ao, k), is = last_flag(go, k);

			/* A tmpfs without the flag is suid, exec and dev: the loose one. */
			if ((was != 0) == (is != 0))
				continue;
			if (add_rewrite(list, dest, was == 1 ? tmpfs_flags[k].loose : NULL,
					is == 1 ? tmpfs_flags[k].loose : tmpfs_flags[k].tight,
					flag_reason(p, k)) < 0)
				return NULL;
		}
		as = last_size(ao);
		gs = last_size(go);
		if (as == gs)
			continue;
		snprintf(a, sizeof(a), "size=%" PRIu64, as);
		snprintf(b, sizeof(b), "size=%" PRIu64, gs);
		if (policy_own)
			snprintf(why, sizeof(why), "the policy's tmpfs at %s replaces the engine's",
				 dest);
		else
			snprintf(why, sizeof(why),
				 as == UINT64_MAX ? "no size, 0 or a share of RAM: capped at "
						    "tmpfsMax %" PRIu64
						  : "above tmpfsMax %" PRIu64,
				 p->tmpfs_max);
		if (add_rewrite(list, dest, as == UINT64_MAX ? NULL : a, b, why) < 0)
			return NULL;
	}
	return TAKE_PTR(list);
}
