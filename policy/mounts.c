/* config.json's mounts: which the box keeps, how they are rewritten, and the policy's tmpfs
 * mounts added last. */
/*
 * Rules beyond docs/policy.md, for the reader: mounts at or below a policy tmpfs are dropped (the
 * tmpfs replaces them), bind sources are resolved with realpath() and rewritten to the resolved
 * path.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-internal.h"

static const char *const engine_file_dests[] = {"/etc/hostname", "/etc/hosts", "/etc/resolv.conf",
						"/dev/shm", "/run/.containerenv"};

static const char *const nonbind_types[] = {"proc",   "sysfs",	"tmpfs",  "devpts",
					    "mqueue", "cgroup", "cgroup2"};

static bool has_option(const struct hezo_json *opts, const char *opt)
{
	HEZO_JSON_FOREACH (i, opts) {
		const char *s = hezo_json_string(opts->items[i]);
		if (s && strcmp(s, opt) == 0)
			return true;
	}
	return false;
}

static bool under_any(const char *path, const struct hezo_strv *roots)
{
	for (size_t i = 0; i < roots->n; i++) {
		char resolved[PATH_MAX];

		if (hezo_policy_path_under(path, roots->v[i]))
			return true;
		/* An allowed root that is itself a symlink is compared by what it points at. */
		if (realpath(roots->v[i], resolved) && hezo_policy_path_under(path, resolved))
			return true;
	}
	return false;
}

static int check_bind(const struct hezo_policy *p, struct hezo_json *m, size_t idx,
		      const char *dest, struct hezo_error **err)
{
	const char *src = hezo_json_string(hezo_json_get(m, "source"));
	char resolved[PATH_MAX], shown[PATH_MAX + 64];
	bool ok = false;

	if (!src)
		return hezo_policy_ferr(err, "mounts[%zu] (%s): bind mount without a source", idx,
					dest);
	if (strcmp(dest, "/") == 0 || hezo_policy_path_under(dest, "/proc") ||
	    hezo_policy_path_under(dest, "/sys"))
		return hezo_policy_ferr(
			err, "mounts[%zu] (%s): bind mounts onto /, /proc or /sys are not allowed",
			idx, dest);
	if (src[0] != '/')
		return hezo_policy_ferr(err,
					"mounts[%zu] (%s): bind source %s is not an absolute path",
					idx, dest, src);
	if (!realpath(src, resolved))
		return hezo_error_set_errno(err, errno, "mounts[%zu] (%s): bind source %s", idx,
					    dest, src);
	if (under_any(resolved, &p->allowed_sources))
		ok = true;
	else if (under_any(resolved, &p->engine_roots)) {
		for (size_t i = 0; i < HEZO_ARRAY_SIZE(engine_file_dests); i++)
			if (strcmp(dest, engine_file_dests[i]) == 0)
				ok = true;
	}
	if (!ok) {
		if (strcmp(src, resolved) == 0)
			snprintf(shown, sizeof(shown), "%s", src);
		else
			snprintf(shown, sizeof(shown), "%s (resolves to %s)", src, resolved);
		return hezo_policy_ferr(
			err, "mounts[%zu] (%s): bind source %s is not under an allowed root", idx,
			dest, shown);
	}
	if (hezo_json_set(m, "source", hezo_json_new_string(resolved)) < 0)
		return hezo_policy_nomem(err);
	return 0;
}

static int make_readonly(struct hezo_json *m, size_t idx, const char *dest, struct hezo_error **err)
{
	struct hezo_json *opts;
	bool has_ro = false;
	char f[64];

	snprintf(f, sizeof(f), "mounts[%zu].options", idx);
	opts = hezo_policy_want_array(m, "options", f, err);
	if (!opts)
		return -EINVAL;
	for (size_t i = 0; i < opts->len;) {
		const char *s = hezo_json_string(opts->items[i]);
		if (!s)
			return hezo_policy_ferr(err,
						"mounts[%zu] (%s): options[%zu]: expected a string",
						idx, dest, i);
		if (strcmp(s, "rw") == 0) {
			hezo_json_remove_at(opts, i);
			continue;
		}
		if (strcmp(s, "ro") == 0)
			has_ro = true;
		i++;
	}
	if (!has_ro && hezo_json_append(opts, hezo_json_new_string("ro")) < 0)
		return hezo_policy_nomem(err);
	return 0;
}

static struct hezo_json *tmpfs_mount(const struct hezo_policy_tmpfs *t)
{
	_cleanup_json_ struct hezo_json *m = hezo_json_new_object();
	static const char *const opts[] = {"nosuid", "nodev", "noexec", "mode=1777"};
	struct hezo_json *o;
	char size[48];

	if (!m || hezo_json_set(m, "destination", hezo_json_new_string(t->dest)) < 0 ||
	    hezo_json_set(m, "type", hezo_json_new_string("tmpfs")) < 0 ||
	    hezo_json_set(m, "source", hezo_json_new_string("tmpfs")) < 0)
		return NULL;
	o = hezo_json_ensure_array(m, "options");
	if (!o)
		return NULL;
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(opts); i++)
		if (hezo_json_append(o, hezo_json_new_string(opts[i])) < 0)
			return NULL;
	snprintf(size, sizeof(size), "size=%" PRIu64, t->size);
	if (hezo_json_append(o, hezo_json_new_string(size)) < 0)
		return NULL;
	return TAKE_PTR(m);
}

int hezo_policy_apply_mounts(const struct hezo_policy *p, struct hezo_json *spec,
			     struct hezo_error **err)
{
	struct hezo_json *mounts = hezo_policy_want_array(spec, "mounts", "mounts", err);
	size_t idx = 0; /* index in the engine's list, for messages */
	int r;

	if (!mounts)
		return -EINVAL;
	for (size_t i = 0; i < mounts->len; idx++) {
		struct hezo_json *m = mounts->items[i];
		_cleanup_free_ char *dest = NULL;
		const char *raw, *type;
		struct hezo_json *opts;
		bool covered = false, bind;

		if (m->type != HEZO_JSON_OBJECT)
			return hezo_policy_ferr(err, "mounts[%zu]: expected an object", idx);
		raw = hezo_json_string(hezo_json_get(m, "destination"));
		if (!raw)
			return hezo_policy_ferr(err, "mounts[%zu]: destination: expected a string",
						idx);
		r = hezo_policy_clean_path(raw, &dest);
		if (r == -ENOMEM)
			return hezo_policy_nomem(err);
		if (r < 0)
			return hezo_policy_ferr(
				err,
				"mounts[%zu] (%s): destination is not an absolute path without "
				"\"..\"",
				idx, raw);

		/* The policy's tmpfs replaces whatever the engine put there or below. */
		for (size_t t = 0; t < p->ntmpfs; t++)
			if (hezo_policy_path_under(dest, p->tmpfs[t].dest))
				covered = true;
		if (covered) {
			hezo_json_remove_at(mounts, i);
			continue;
		}

		type = hezo_json_string(hezo_json_get(m, "type"));
		if (hezo_json_get(m, "type") && !type &&
		    hezo_json_get(m, "type")->type != HEZO_JSON_NULL)
			return hezo_policy_ferr(err, "mounts[%zu] (%s): type: expected a string",
						idx, dest);
		opts = hezo_json_get(m, "options");
		if (opts && opts->type != HEZO_JSON_ARRAY && opts->type != HEZO_JSON_NULL)
			return hezo_policy_ferr(err, "mounts[%zu] (%s): options: expected a list",
						idx, dest);
		bind = (type && strcmp(type, "bind") == 0) || has_option(opts, "bind") ||
		       has_option(opts, "rbind");
		if (bind) {
			r = check_bind(p, m, idx, dest, err);
		} else if (!type || !type[0]) {
			r = hezo_policy_ferr(
				err, "mounts[%zu] (%s): mount without a type or bind option", idx,
				dest);
		} else {
			bool known = false;
			for (size_t t = 0; t < HEZO_ARRAY_SIZE(nonbind_types); t++)
				if (strcmp(type, nonbind_types[t]) == 0)
					known = true;
			if (!known) {
				char q[256];
				hezo_policy_quote(q, sizeof(q), type);
				r = hezo_policy_ferr(
					err, "mounts[%zu] (%s): mount type %s is not allowed", idx,
					dest, q);
			} else if (strcmp(type, "sysfs") == 0 || strcmp(type, "cgroup") == 0 ||
				   strcmp(type, "cgroup2") == 0) {
				r = make_readonly(m, idx, dest, err);
			} else {
				r = 0;
			}
		}
		if (r < 0)
			return r;
		i++;
	}
	for (size_t t = 0; t < p->ntmpfs; t++)
		if (hezo_json_append(mounts, tmpfs_mount(&p->tmpfs[t])) < 0)
			return hezo_policy_nomem(err);
	return 0;
}
