/* config.json's mounts: which the box keeps, how they are rewritten, and the policy's tmpfs
 * mounts added last. */
/*
 * Rules beyond docs/policy.md, for the reader: mounts at a policy tmpfs, and those below it but
 * binds, are dropped (the tmpfs replaces them; binds below it are mounted on it), bind sources are
 * resolved with realpath() and rewritten to the resolved path, which is then opened without
 * following symlinks and held (env->held) for the shim. Mount options are read as runc 1.1.5's
 * parseMountOptions reads them: a word in its flag, propagation, recursive-attribute or extension
 * table is a flag, anything else is filesystem data joined with commas, so a data option is judged
 * by type and its value may hold no comma.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy-internal.h"

/* Where dockerd binds the init of `docker run --init` (Docker 20.10's inContainerInitPath). */
#define DOCKER_INIT_DEST "/sbin/docker-init"

static const char *const nonbind_types[] = {"proc",   "sysfs",	"tmpfs",  "devpts",
					    "mqueue", "cgroup", "cgroup2"};

/* The kernel filesystems a box may mount, each once and at its one place (slot: what counts). */
static const struct {
	const char *type;
	const char *dest;
	unsigned slot;
} special_mounts[] = {
	{"proc", "/proc", 0},
	{"sysfs", "/sys", 1},
	{"cgroup", "/sys/fs/cgroup", 2},
	{"cgroup2", "/sys/fs/cgroup", 2},
	{"mqueue", "/dev/mqueue", 3},
	{"devpts", "/dev/pts", 4},
};
#define SPECIAL_SLOTS 5

/*
 * Flags runc knows that keep or tighten the box. rw, suid, dev and exec stay as they were (sysfs
 * and cgroup lose rw in make_readonly; tmpfs's exec, suid and dev are a later rule). The atime
 * words change only how access times are kept.
 */
static const char *const flags_ok[] = {
	"defaults",	 "ro",		"rw",		"nosuid",
	"suid",		 "nodev",	"dev",		"noexec",
	"exec",		 "bind",	"rbind",	"sync",
	"async",	 "dirsync",	"silent",	"loud",
	"iversion",	 "noiversion",	"lazytime",	"nolazytime",
	"nomand",	 "atime",	"noatime",	"diratime",
	"nodiratime",	 "relatime",	"norelatime",	"strictatime",
	"nostrictatime", "private",	"rprivate",	"slave",
	"rslave",	 "unbindable",	"runbindable",	"rro",
	"rnosuid",	 "rnodev",	"rnoexec",	"rnosymfollow",
	"ratime",	 "rnoatime",	"rdiratime",	"rnodiratime",
	"rrelatime",	 "rnorelatime", "rstrictatime", "rnostrictatime",
	"tmpcopyup",
};

/* Flags runc knows that would loosen the box, and why each is refused. */
static const struct {
	const char *opt;
	const char *why;
} flags_refused[] = {
	{"remount", "it changes the flags of a mount already there"},
	{"rrw", "it clears read-only on every mount below"},
	{"rsuid", "it clears nosuid on every mount below"},
	{"rdev", "it clears nodev on every mount below"},
	{"rexec", "it clears noexec on every mount below"},
	{"rsymfollow", "it clears nosymfollow on every mount below"},
	{"shared", "it propagates the container's mounts to the host"},
	{"rshared", "it propagates the container's mounts to the host"},
	{"mand", "it turns on mandatory locks"},
	{"acl", "it is not needed by any engine"},
	{"noacl", "it is not needed by any engine"},
};

enum data_value {
	VAL_NONE,  /* a bare word */
	VAL_OCTAL, /* 1 to 4 octal digits */
	VAL_NUM,   /* decimal digits */
	VAL_SIZE,  /* decimal digits and one optional k, m, g, t, p, e or % */
	VAL_WORD,  /* lower-case letters and digits */
};

/* Filesystem data a type may carry: what Docker, podman, ctr and CRI send, and proc's hiding. */
static const struct {
	const char *type;
	struct {
		const char *key;
		enum data_value val;
	} opts[6];
} data_opts[] = {
	{"tmpfs",
	 {{"size", VAL_SIZE},
	  {"mode", VAL_OCTAL},
	  {"uid", VAL_NUM},
	  {"gid", VAL_NUM},
	  {"nr_inodes", VAL_SIZE},
	  {"nr_blocks", VAL_SIZE}}},
	{"devpts",
	 {{"newinstance", VAL_NONE},
	  {"ptmxmode", VAL_OCTAL},
	  {"mode", VAL_OCTAL},
	  {"gid", VAL_NUM},
	  {"max", VAL_NUM}}},
	/* Both only hide more of /proc, in the container's own pid namespace. */
	{"proc", {{"hidepid", VAL_WORD}, {"subset", VAL_WORD}}},
};

/*
 * Files an engine keeps per container and binds into it, as paths below an engine root: before,
 * then one component that is the container's ID, then after. Docker's root is its containers
 * directory; podman's its storage directory; containerd's (CRI) its root or state directory.
 * Docker's and podman's shapes are those of tests/data and of Docker here; CRI's are those of
 * containerd 1.6's sandbox directories (hostname, hosts, resolv.conf under the root, shm under
 * the state directory).
 */
static const struct {
	const char *before;
	const char *after;
	const char *dest;
} engine_files[] = {
	{"", "hostname", "/etc/hostname"},
	{"", "hosts", "/etc/hosts"},
	{"", "resolv.conf", "/etc/resolv.conf"},
	{"", "mounts/shm", "/dev/shm"},
	{"overlay-containers/", "userdata/hostname", "/etc/hostname"},
	{"overlay-containers/", "userdata/hosts", "/etc/hosts"},
	{"overlay-containers/", "userdata/resolv.conf", "/etc/resolv.conf"},
	{"overlay-containers/", "userdata/shm", "/dev/shm"},
	{"overlay-containers/", "userdata/.containerenv", "/run/.containerenv"},
	{"io.containerd.grpc.v1.cri/sandboxes/", "hostname", "/etc/hostname"},
	{"io.containerd.grpc.v1.cri/sandboxes/", "hosts", "/etc/hosts"},
	{"io.containerd.grpc.v1.cri/sandboxes/", "resolv.conf", "/etc/resolv.conf"},
	{"io.containerd.grpc.v1.cri/sandboxes/", "shm", "/dev/shm"},
};

/*
 * Whose file a joiner may get: the owner of the namespace of that kind it joins. Docker hands a
 * --network=container:X joiner X's hostname while its UTS namespace stays its own, hence net for
 * /etc/hostname too. /run/.containerenv is only ever the container's own.
 */
static const struct {
	const char *dest;
	const char *kinds[2]; /* as in /proc/PID/ns */
} engine_file_ns[] = {
	{"/etc/hostname", {"uts", "net"}},
	{"/etc/hosts", {"net"}},
	{"/etc/resolv.conf", {"net"}},
	{"/dev/shm", {"ipc"}},
};

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

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

static bool value_ok(const char *v, enum data_value kind)
{
	size_t n = strlen(v), digits = strspn(v, "0123456789");

	switch (kind) {
	case VAL_NONE:
		return false; /* a bare word has no "=" part */
	case VAL_OCTAL:
		return n >= 1 && n <= 4 && strspn(v, "01234567") == n;
	case VAL_NUM:
		return n >= 1 && n <= 20 && digits == n;
	case VAL_SIZE:
		return digits >= 1 && digits <= 20 &&
		       (digits == n || (n == digits + 1 && strchr("kKmMgGtTpPeE%", v[digits])));
	case VAL_WORD:
		return n >= 1 && n <= 16 && strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789") == n;
	}
	return false;
}

/* Is o a data option kind may carry? */
static bool data_ok(const char *kind, const char *o)
{
	const char *eq = strchr(o, '=');
	size_t klen = eq ? (size_t)(eq - o) : strlen(o);

	for (size_t t = 0; t < HEZO_ARRAY_SIZE(data_opts); t++) {
		if (strcmp(kind, data_opts[t].type) != 0)
			continue;
		for (size_t i = 0; i < HEZO_ARRAY_SIZE(data_opts[t].opts); i++) {
			const char *key = data_opts[t].opts[i].key;

			if (!key || strlen(key) != klen || strncmp(o, key, klen) != 0)
				continue;
			if (data_opts[t].opts[i].val == VAL_NONE)
				return !eq;
			return eq && value_ok(eq + 1, data_opts[t].opts[i].val);
		}
	}
	return false;
}

/* Every option a known flag that keeps the box, or data kind ("bind" or the type) may carry. */
static int check_options(const struct hezo_json *opts, size_t idx, const char *dest,
			 const char *kind, struct hezo_error **err)
{
	HEZO_JSON_FOREACH (i, opts) {
		const char *o = hezo_json_string(opts->items[i]);
		char q[256];

		if (!o)
			return hezo_policy_ferr(err,
						"mounts[%zu] (%s): options[%zu]: expected a string",
						idx, dest, i);
		if (in_list(o, flags_ok, HEZO_ARRAY_SIZE(flags_ok)))
			continue;
		hezo_policy_quote(q, sizeof(q), o);
		for (size_t f = 0; f < HEZO_ARRAY_SIZE(flags_refused); f++)
			if (strcmp(o, flags_refused[f].opt) == 0)
				return hezo_policy_ferr(
					err, "mounts[%zu] (%s): mount option %s is not allowed: %s",
					idx, dest, q, flags_refused[f].why);
		if (!data_ok(kind, o))
			return hezo_policy_ferr(
				err,
				"mounts[%zu] (%s): mount option %s is not allowed on a %s mount",
				idx, dest, q, kind);
	}
	return 0;
}

/* proc, sysfs, cgroup, mqueue and devpts: only at their place, once. */
static int check_special(const char *type, size_t idx, const char *dest, bool seen[SPECIAL_SLOTS],
			 struct hezo_error **err)
{
	for (size_t s = 0; s < HEZO_ARRAY_SIZE(special_mounts); s++) {
		unsigned slot = special_mounts[s].slot;

		if (strcmp(type, special_mounts[s].type) != 0)
			continue;
		if (strcmp(dest, special_mounts[s].dest) != 0)
			return hezo_policy_ferr(
				err, "mounts[%zu] (%s): a %s mount is allowed only at %s", idx,
				dest, type, special_mounts[s].dest);
		if (seen[slot])
			return hezo_policy_ferr(err,
						"mounts[%zu] (%s): a second %s mount at %s is not "
						"allowed",
						idx, dest, type, dest);
		seen[slot] = true;
	}
	return 0;
}

/*
 * The engine root (as written or resolved) that path is at or below (*inside), or above; NULL
 * when path and the engine roots do not meet.
 */
static const char *engine_root_of(const char *path, const struct hezo_strv *roots, bool *inside,
				  char resolved[PATH_MAX])
{
	for (size_t i = 0; i < roots->n; i++) {
		const char *cand[2] = {roots->v[i], realpath(roots->v[i], resolved)};

		for (size_t c = 0; c < 2; c++) {
			if (!cand[c])
				continue;
			if (hezo_policy_path_under(path, cand[c])) {
				*inside = true;
				return cand[c];
			}
			if (hezo_policy_path_under(cand[c], path)) {
				*inside = false;
				return cand[c];
			}
		}
	}
	return NULL;
}

/* The container ID in rel (below an engine root) if rel is an engine's file for dest. */
static bool engine_file_id(const char *rel, const char *dest, char *id, size_t size)
{
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(engine_files); i++) {
		size_t nb = strlen(engine_files[i].before);
		const char *start, *slash;

		if (strcmp(dest, engine_files[i].dest) != 0 ||
		    strncmp(rel, engine_files[i].before, nb) != 0)
			continue;
		start = rel + nb;
		slash = strchr(start, '/');
		if (!slash || slash == start || (size_t)(slash - start) >= size ||
		    strcmp(slash + 1, engine_files[i].after) != 0)
			continue;
		memcpy(id, start, (size_t)(slash - start));
		id[slash - start] = '\0';
		if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
			continue;
		return true;
	}
	return false;
}

/* Does config.json give the box a new namespace of OCI type (listed, with no path)? */
static bool new_ns(const struct hezo_json *spec, const char *type)
{
	const struct hezo_json *nss = hezo_json_get_path(spec, "linux.namespaces");

	HEZO_JSON_FOREACH (i, nss) {
		const char *t = hezo_json_string(hezo_json_get(nss->items[i], "type"));
		const struct hezo_json *path = hezo_json_get(nss->items[i], "path");

		if (t && strcmp(t, type) == 0)
			return !path || (hezo_json_string(path) && !hezo_json_string(path)[0]);
	}
	return false;
}

/* The path of the namespace of OCI type in config.json, or NULL (a new one, or unreadable). */
static const char *ns_path(const struct hezo_json *spec, const char *type)
{
	const struct hezo_json *nss = hezo_json_get_path(spec, "linux.namespaces");

	if (!nss || nss->type != HEZO_JSON_ARRAY)
		return NULL;
	HEZO_JSON_FOREACH (i, nss) {
		const char *t = hezo_json_string(hezo_json_get(nss->items[i], "type"));
		const char *path = hezo_json_string(hezo_json_get(nss->items[i], "path"));

		if (t && strcmp(t, type) == 0)
			return path && path[0] ? path : NULL;
	}
	return NULL;
}

/* May this container have the file of container id at dest? */
static int engine_file_ours(const struct hezo_apply_env *env, const struct hezo_json *spec,
			    const char *dest, const char *id, bool *ok, struct hezo_error **err)
{
	*ok = env->id && strcmp(env->id, id) == 0;
	/* This ID is the caller's word: another container that runs under it owns these files. */
	if (*ok && env->id_in_use) {
		*ok = false;
		return hezo_error_set(
			err, EBUSY,
			"bind source is container %s's file for %s, and that container "
			"already runs (%s)",
			id, dest, env->id_in_use);
	}
	/* A stopped container's files are what it gets at its next start: only its engine's. */
	if (*ok && !env->engine_bundle) {
		*ok = false;
		return hezo_error_set(err, EPERM,
				      "bind source is container %s's file for %s, and this bundle "
				      "(%s) is not an engine's own bundle for %s",
				      id, dest, env->bundle ?: "unknown", id);
	}
	if (*ok || !env->ns_owner)
		return 0;
	for (size_t d = 0; d < HEZO_ARRAY_SIZE(engine_file_ns); d++) {
		if (strcmp(dest, engine_file_ns[d].dest) != 0)
			continue;
		for (size_t k = 0; k < HEZO_ARRAY_SIZE(engine_file_ns[d].kinds); k++) {
			const char *kind = engine_file_ns[d].kinds[k];
			_cleanup_free_ char *owner = NULL;
			const char *path;
			int r;

			if (!kind)
				continue;
			path = ns_path(spec, strcmp(kind, "net") == 0 ? "network" : kind);
			if (!path)
				continue;
			r = env->ns_owner(env->data, kind, path, path, &owner, err);
			if (r == -ESRCH)
				continue;
			if (r < 0) {
				if (!err || !*err)
					hezo_error_set(err, -r, "owner of %s", path);
				return r;
			}
			if (owner && strcmp(owner, id) == 0) {
				*ok = true;
				return 0;
			}
		}
	}
	return 0;
}

/*
 * A source in an engine's state: only one container's own file for dest, that container being
 * this one or the owner of the namespace this one joins for it.
 */
static int check_engine_file(const struct hezo_apply_env *env, const struct hezo_json *spec,
			     size_t idx, const char *dest, const char *path, const char *root,
			     struct hezo_error **err)
{
	char id[256];
	bool ok = false;
	int r;

	if (strcmp(path, root) == 0 ||
	    !engine_file_id(path + (strcmp(root, "/") == 0 ? 1 : strlen(root) + 1), dest, id,
			    sizeof(id)))
		return hezo_policy_ferr(err,
					"mounts[%zu] (%s): bind source %s is in an engine's state "
					"(%s) and is not a container's file for %s",
					idx, dest, path, root, dest);
	if (!env)
		return hezo_policy_ferr(err,
					"mounts[%zu] (%s): bind source %s is container %s's and "
					"this container's ID is not known",
					idx, dest, path, id);
	r = engine_file_ours(env, spec, dest, id, &ok, err);
	if (r < 0)
		return hezo_error_prefix(err, "mounts[%zu] (%s)", idx, dest);
	if (!ok)
		return hezo_policy_ferr(err,
					"mounts[%zu] (%s): bind source %s is container %s's, not "
					"this container's nor that of a namespace it joins",
					idx, dest, path, id);
	return 0;
}

static int make_readonly(struct hezo_json *m, size_t idx, const char *dest,
			 struct hezo_error **err);

/*
 * Docker's --init: dockerd binds the docker-init on its PATH (policy dockerInit) read-only at
 * /sbin/docker-init. That bind is the engine's own file only at that place, from exactly that
 * path, and only while the file is root's, writable by root alone and sets no id; the object
 * judged is the one held for the backend. Any other source at /sbin/docker-init goes by the
 * ordinary rules, so naming a file docker-init opens nothing.
 */
static int check_docker_init(const struct hezo_policy *p, const struct hezo_apply_env *env,
			     struct hezo_json *m, size_t idx, const char *dest, const char *src,
			     const char *resolved, bool *handled, struct hezo_error **err)
{
	const struct hezo_held_path *held;
	_cleanup_close_ int own = -1;
	struct stat st;
	int r, fd;

	*handled = false;
	if (!p->docker_init || strcmp(dest, DOCKER_INIT_DEST) != 0 ||
	    strcmp(src, p->docker_init) != 0)
		return 0;
	*handled = true;
	r = hezo_policy_hold_bind(env, resolved, idx, dest, err);
	if (r < 0)
		return r;
	held = env ? hezo_held_bind(env->held, resolved) : NULL;
	fd = held ? held->fd : (own = hezo_open_nofollow(resolved, NULL));
	if (fd < 0 || fstat(fd, &st) < 0)
		return hezo_error_set_errno(err, fd < 0 ? -fd : errno,
					    "mounts[%zu] (%s): bind source %s", idx, dest,
					    resolved);
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & (S_IWGRP | S_IWOTH | S_ISUID | S_ISGID)))
		return hezo_policy_ferr(
			err,
			"mounts[%zu] (%s): bind source %s is the policy's dockerInit "
			"(%s) but not a regular file of root's that root alone may "
			"write, without set-id bits",
			idx, dest, resolved, src);
	return make_readonly(m, idx, dest, err);
}

static int check_bind(const struct hezo_policy *p, const struct hezo_apply_env *env,
		      const struct hezo_json *spec, struct hezo_json *m, size_t idx,
		      const char *dest, struct hezo_error **err)
{
	const char *src = hezo_json_string(hezo_json_get(m, "source"));
	char resolved[PATH_MAX], rootbuf[PATH_MAX], shown[PATH_MAX + 64];
	const char *root;
	bool inside = false, kubelet = false, volume = false, init = false;
	int r;

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
	if (strcmp(src, resolved) == 0)
		snprintf(shown, sizeof(shown), "%s", src);
	else
		snprintf(shown, sizeof(shown), "%s (resolves to %s)", src, resolved);
	r = check_docker_init(p, env, m, idx, dest, src, resolved, &init, err);
	if (r < 0)
		return r;
	/* Engine and kubelet state are judged by their own rules: allowedSources cannot open them.
	 */
	r = init ? 0
		 : hezo_policy_check_kubelet_source(p, env, spec, idx, dest, resolved, &kubelet,
						    err);
	if (r < 0)
		return r;
	/* Named volumes: only the container's project's own (policy/volumes.c). */
	r = kubelet || init ? 0
			    : hezo_policy_check_volume_source(p, idx, dest, resolved, &volume, err);
	if (r < 0)
		return r;
	root = kubelet || volume || init
		       ? NULL
		       : engine_root_of(resolved, &p->engine_roots, &inside, rootbuf);
	if (kubelet || volume || init) {
	} else if (root && inside) {
		r = check_engine_file(env, spec, idx, dest, resolved, root, err);
		if (r < 0)
			return r;
	} else if (!under_any(resolved, &p->allowed_sources) &&
		   !hezo_policy_in_workspace(p, resolved)) {
		hezo_policy_ferr(err,
				 "mounts[%zu] (%s): bind source %s is not under an allowed root",
				 idx, dest, shown);
		return hezo_error_key(err, "mounts.allowedSources");
	} else if (root) {
		return hezo_policy_ferr(err,
					"mounts[%zu] (%s): bind source %s holds an engine's state "
					"(%s)",
					idx, dest, shown, root);
	}
	if (hezo_json_set(m, "source", hezo_json_new_string(resolved)) < 0)
		return hezo_policy_nomem(err);
	/* runc would look the path up again, following symlinks: the shim hands it this object. */
	return hezo_policy_hold_bind(env, resolved, idx, dest, err);
}

/* The mount's options list, made when absent; NULL (err set) when it is not a list. */
static struct hezo_json *options_of(struct hezo_json *m, size_t idx, struct hezo_error **err)
{
	char f[64];

	snprintf(f, sizeof(f), "mounts[%zu].options", idx);
	return hezo_policy_want_array(m, "options", f, err);
}

static int make_readonly(struct hezo_json *m, size_t idx, const char *dest, struct hezo_error **err)
{
	struct hezo_json *opts = options_of(m, idx, err);
	bool has_ro = false;

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

/*
 * The box's devpts instance gets max=HEZO_DEVPTS_MAX (or the caller's lower max): the ptys
 * outside the host's reserve (kernel.pty.max - kernel.pty.reserve) are shared by every devpts
 * instance but the host's, and without a bound one box takes them all.
 */
static int cap_devpts(struct hezo_json *m, size_t idx, struct hezo_error **err)
{
	unsigned long long max = HEZO_DEVPTS_MAX;
	struct hezo_json *opts = options_of(m, idx, err);
	char f[32];

	if (!opts)
		return -EINVAL;
	for (size_t i = 0; i < opts->len;) {
		const char *s = hezo_json_string(opts->items[i]);

		if (s && strncmp(s, "max=", 4) == 0) {
			unsigned long long v = strtoull(s + 4, NULL, 10);

			max = v < max ? v : max;
			hezo_json_remove_at(opts, i);
			continue;
		}
		i++;
	}
	snprintf(f, sizeof(f), "max=%llu", max);
	if (hezo_json_append(opts, hezo_json_new_string(f)) < 0)
		return hezo_policy_nomem(err);
	return 0;
}

/* A bind (by its type or options) whose source is below kubelet's pods directory: whether it is
 * this container's own pod's volume is check_bind's rule, as for every such source. */
static bool kubelet_volume(const struct hezo_policy *p, const struct hezo_json *m)
{
	const char *type = hezo_json_string(hezo_json_get(m, "type"));
	const char *src = hezo_json_string(hezo_json_get(m, "source"));
	const struct hezo_json *opts = hezo_json_get(m, "options");
	_cleanup_free_ char *pods = NULL;

	if (!src || !p->kubelet_root || asprintf(&pods, "%s/pods", p->kubelet_root) < 0)
		return false;
	if (!hezo_policy_path_under(src, pods) || strcmp(src, pods) == 0)
		return false;
	return (type && strcmp(type, "bind") == 0) ||
	       (opts && opts->type == HEZO_JSON_ARRAY &&
		(has_option(opts, "bind") || has_option(opts, "rbind")));
}

/*
 * Put a mount the box adds before the first mount at or below its destination (the runtime
 * mounts in list order, and a later one would hide them), else at the end. Takes tm; -ENOMEM.
 * No engine mount is left at a policy tmpfs's own destination (apply_mounts drops them).
 */
int hezo_policy_place_mount(struct hezo_json *mounts, struct hezo_json *tm)
{
	const char *dest = hezo_json_string(hezo_json_get(tm, "destination"));
	size_t at = mounts->len;

	if (!tm || !dest) {
		hezo_json_free(tm);
		return -ENOMEM;
	}
	for (size_t i = 0; i < mounts->len && at == mounts->len; i++) {
		const char *d = hezo_json_string(hezo_json_get(mounts->items[i], "destination"));
		_cleanup_free_ char *clean = NULL;

		if (d && hezo_policy_clean_path(d, &clean) == 0 &&
		    hezo_policy_path_under(clean, dest))
			at = i;
	}
	if (hezo_json_append(mounts, tm) < 0)
		return -ENOMEM;
	memmove(mounts->items + at + 1, mounts->items + at,
		(mounts->len - 1 - at) * sizeof(*mounts->items));
	mounts->items[at] = tm;
	return 0;
}

static struct hezo_json *tmpfs_mount(const struct hezo_policy_tmpfs *t, bool exec)
{
	_cleanup_json_ struct hezo_json *m = hezo_json_new_object();
	/* exec.tmpfs (tmpfs.c) decides for the policy's own tmpfs as for the engine's. */
	const char *const opts[] = {"nosuid", "nodev", exec ? "exec" : "noexec", "mode=1777"};
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
			     const struct hezo_apply_env *env, struct hezo_error **err)
{
	struct hezo_json *mounts = hezo_policy_want_array(spec, "mounts", "mounts", err);
	bool seen[SPECIAL_SLOTS] = {0};
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

		/*
		 * The policy's tmpfs replaces what the engine put at its place or below, except
		 * a kubelet pod volume below it (the service-account token every pod gets, at
		 * /var/run/secrets/kubernetes.io/serviceaccount): that one is checked as every
		 * pod volume is and mounted on the tmpfs (hezo_policy_place_mount).
		 */
		for (size_t t = 0; t < p->ntmpfs; t++)
			if (hezo_policy_path_under(dest, p->tmpfs[t].dest) &&
			    (strcmp(dest, p->tmpfs[t].dest) == 0 || !kubelet_volume(p, m)))
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
		if (!bind && (!type || !type[0]))
			return hezo_policy_ferr(
				err, "mounts[%zu] (%s): mount without a type or bind option", idx,
				dest);
		if (!bind && !in_list(type, nonbind_types, HEZO_ARRAY_SIZE(nonbind_types))) {
			char q[256];
			hezo_policy_quote(q, sizeof(q), type);
			return hezo_policy_ferr(err,
						"mounts[%zu] (%s): mount type %s is not allowed",
						idx, dest, q);
		}
		r = check_options(opts, idx, dest, bind ? "bind" : type, err);
		if (r < 0)
			return r;
		if (bind)
			r = check_bind(p, env, spec, m, idx, dest, err);
		else
			r = check_special(type, idx, dest, seen, err);
		/*
		 * runc mounts a "cgroup" itself (the container's own cgroups, or cgroup2 in its
		 * cgroup namespace) but "cgroup2" as any filesystem: without a cgroup namespace of
		 * its own, the host's whole unified tree, every other box's cgroup and statistics.
		 */
		if (r == 0 && !bind && strcmp(type, "cgroup2") == 0 && !new_ns(spec, "cgroup"))
			r = hezo_policy_ferr(
				err,
				"mounts[%zu] (%s): a cgroup2 mount shows the host's whole "
				"cgroup tree without a cgroup namespace of the box's own "
				"(linux.namespaces: {\"type\": \"cgroup\"})",
				idx, dest);
		if (r == 0 && !bind && strcmp(type, "tmpfs") == 0)
			r = hezo_policy_clamp_tmpfs(p, m, idx, dest, err);
		if (r == 0 && !bind && strcmp(type, "devpts") == 0)
			r = cap_devpts(m, idx, err);
		if (r == 0 && !bind &&
		    (strcmp(type, "sysfs") == 0 || strcmp(type, "cgroup") == 0 ||
		     strcmp(type, "cgroup2") == 0))
			r = make_readonly(m, idx, dest, err);
		if (r < 0)
			return r;
		i++;
	}
	for (size_t t = 0; t < p->ntmpfs; t++)
		if (hezo_policy_place_mount(mounts, tmpfs_mount(&p->tmpfs[t], p->tmpfs_exec)) < 0)
			return hezo_policy_nomem(err);
	return 0;
}
