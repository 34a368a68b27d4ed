/*
 * exec: the new process gets the container's policy too. The process JSON is clamped into a file
 * of the container's private bundle, which the backend is handed instead of the caller's, and
 * capabilities the policy does not allow are taken out of --cap before the backend runs.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "hezo-file.h"
#include "hezo-spec.h"
#include "shim.h"

/*
 * Under runsc the box's pids limit is RLIMIT_NPROC, which gVisor, as Linux, counts per real uid:
 * an exec as any other uid would get another limit's worth of processes (red team pass 12, part
 * Q2, M1). An exec runs as the container's own uid.
 */
static int other_uid(struct hezo_error **err, int64_t uid, int64_t want)
{
	return hezo_error_set(err, EPERM,
			      "user %" PRId64 " is not the container's (%" PRId64
			      "): under runsc the box's pids limit is RLIMIT_NPROC, counted for "
			      "each uid apart",
			      uid, want);
}

/* The container's process.user, from the config.json its backend was handed. */
static int container_user(const struct shim_ctx *ctx, const char *id, int64_t *uid, int64_t *gid,
			  struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *spec = NULL;
	_cleanup_free_ char *data = NULL;
	_cleanup_close_ int fd = -1;
	char priv[PATH_MAX];
	size_t len;
	int r;

	fd = shim_bundle_open(ctx, id, 0, priv, sizeof(priv), err);
	if (fd < 0)
		return fd;
	r = hezo_read_regular_file_at(fd, "config.json", HEZO_SPEC_MAX_SIZE, &data, &len, err);
	r = r ?: hezo_json_parse(data, len, &spec, err);
	if (r < 0)
		return hezo_error_prefix(err, "exec %s: the container's config.json in %s", id,
					 priv);
	*uid = *gid = 0;
	(void)hezo_json_get_int64(hezo_json_get_path(spec, "process.user.uid"), uid);
	(void)hezo_json_get_int64(hezo_json_get_path(spec, "process.user.gid"), gid);
	return 0;
}

/* exec --user UID[:GID], decimal as runc and runsc read it; -EINVAL for anything else. */
static int parse_user(const char *s, int64_t *uid)
{
	char *end;
	long long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || (*end && *end != ':') || v > UINT32_MAX)
		return -EINVAL;
	*uid = v;
	return 0;
}

/*
 * Clamp the process file given with --process into the container's private bundle, as
 * exec-<pid>.json: the caller's file is left alone, since the backend would re-read it by path
 * after the check and a rename over it in between would win. The shim exec()s the backend, so the
 * pid is the backend's, and the file is litter once that pid is gone (the next exec or the
 * delete removes it). *clamped gets the file's path.
 */
static int clamp_process_file(const struct shim_ctx *ctx, const struct shim_verb *v,
			      enum hezo_backend b, const struct hezo_policy *p, const char *path,
			      const struct hezo_strv *prefix, int64_t nproc, int64_t uid_only,
			      const struct hezo_json *secrets, const struct hezo_json *keys,
			      const struct hezo_json *rec, bool files_ok, struct shim_rlimits *rl,
			      char **clamped, struct hezo_error **err)
{
	char priv[PATH_MAX], pname[64];
	_cleanup_close_ int pfd = -1;
	_cleanup_free_ char *dir = strdup(path), *data = NULL, *out = NULL;
	_cleanup_json_ struct hezo_json *proc = NULL;
	_cleanup_close_ int dfd = -1;
	const char *name;
	char *slash;
	size_t len;
	int r;

	if (!dir)
		return hezo_error_set(err, ENOMEM, "out of memory");
	slash = strrchr(dir, '/');
	if (!slash) {
		name = path;
		dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else {
		name = path + (slash - dir) + 1;
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (dfd < 0)
		return hezo_error_set_errno(err, errno, "exec --process %s", path);
	if (!*name)
		return hezo_error_set(err, EINVAL, "exec --process %s: not a file", path);
	r = hezo_read_file_at(dfd, name, HEZO_SPEC_MAX_SIZE, &data, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "exec --process %s", path);
	r = hezo_json_parse(data, len, &proc, err);
	if (r < 0)
		return hezo_error_prefix(err, "exec --process %s", path);
	if (proc->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "exec --process %s: not a JSON object", path);
	/* runc reads the document's terminal, never --tty, when --process is given. */
	r = shim_check_stdio(shim_stdio_handed(b, v->name, &v->args,
					       hezo_json_is_true(hezo_json_get(proc, "terminal"))),
			     files_ok, err);
	if (r < 0)
		return r;
	r = hezo_policy_apply_process(p, proc, err);
	if (r == 0 && uid_only >= 0) {
		int64_t uid = 0;

		(void)hezo_json_get_int64(hezo_json_get_path(proc, "user.uid"), &uid);
		if (uid != uid_only)
			r = other_uid(err, uid, uid_only);
	}
	/* runsc: the exec'd process counts against the container's RLIMIT_NPROC, never past it. */
	if (r == 0 && nproc > 0)
		r = shim_runsc_set_nproc(proc, nproc, err);
	/* The host's file table, as at create (hostwide.c): only where the box reaches it. */
	if (r == 0 && b != HEZO_BACKEND_RUNSC && hezo_json_get(proc, "rlimits"))
		r = shim_hostwide_nofile(proc, p, err);
	/* In the box's own user namespace the shim sets them (rlimits.c); none: the container's. */
	if (r == 0 && rl && hezo_json_get(proc, "rlimits"))
		r = shim_rlimits_take(proc, rl, err);
	/* Every exec'd process sees the container's placeholders, never a value. */
	if (r == 0 && shim_secrets_set_env(proc, secrets) < 0)
		r = hezo_error_set(err, ENOMEM, "env: cannot set secrets");
	/* And the HOME its create gave the box, where the engine copied the image's. */
	if (r == 0 && shim_workspace_exec_home(proc, rec) < 0)
		r = hezo_error_set(err, ENOMEM, "env: cannot set HOME");
	/* ... and the agent's socket and git's signing configuration. */
	if (r == 0 && shim_keys_set_env(proc, keys) < 0)
		r = hezo_error_set(err, ENOMEM, "env: cannot set keys");
	if (r < 0)
		return hezo_error_prefix(err, "exec --process %s", path);
	if (prefix && prefix->n) {
		struct hezo_json *args = hezo_json_get_type(proc, "args", HEZO_JSON_ARRAY);
		_cleanup_json_ struct hezo_json *nargs = hezo_json_new_array();

		if (!args || args->len == 0)
			return hezo_error_set(err, EINVAL, "exec --process %s: args: missing",
					      path);
		for (size_t i = 0; nargs && i < prefix->n; i++)
			if (hezo_json_append(nargs, hezo_json_new_string(prefix->v[i])) < 0)
				return hezo_error_set(err, ENOMEM, "out of memory");
		HEZO_JSON_FOREACH (i, args)
			if (!nargs || hezo_json_append(nargs, hezo_json_clone(args->items[i])) < 0)
				return hezo_error_set(err, ENOMEM, "out of memory");
		if (hezo_json_set(proc, "args", TAKE_PTR(nargs)) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	r = hezo_json_dump(proc, false, &out, &len, err);
	if (r < 0)
		return hezo_error_prefix(err, "exec --process %s", path);
	pfd = shim_bundle_open(ctx, v->id, SHIM_BUNDLE_CREATE, priv, sizeof(priv), err);
	if (pfd < 0)
		return hezo_error_prefix(err, "exec --process %s", path);
	(void)shim_bundle_tidy_execs(pfd);
	snprintf(pname, sizeof(pname), SHIM_EXEC_PREFIX "%d.json", (int)getpid());
	r = hezo_write_state_file_at(pfd, pname, out, len, 0600, err);
	if (r < 0)
		return hezo_error_prefix(err, "exec --process %s: %s/%s", path, priv, pname);
	if (asprintf(clamped, "%s/%s", priv, pname) < 0) {
		*clamped = NULL;
		return hezo_error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

/* Point every --process of argv at path (argv is ours: main's array). */
static int repoint_process(const struct shim_args *a, char **argv, char *path, char **eq_form)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct shim_opt *o = &a->opts[i];

		if (!o->flag || strcmp(o->flag->name, "process") != 0)
			continue;
		if (o->count == 2) {
			argv[o->first + 1] = path;
			continue;
		}
		/* "--process=X", "-p=X": one token. */
		free(*eq_form);
		if (asprintf(eq_form, "--process=%s", path) < 0) {
			*eq_form = NULL;
			return -ENOMEM;
		}
		argv[o->first] = *eq_form;
	}
	return 0;
}

void shim_cap_name(const char *v, char *buf, size_t size)
{
	size_t o = 0;

	if (strncasecmp(v, "CAP_", 4) != 0)
		o = (size_t)snprintf(buf, size, "CAP_");
	for (; *v && o + 1 < size; v++)
		buf[o++] = (char)toupper((unsigned char)*v);
	buf[o] = '\0';
}

int shim_exec_filter(const struct shim_args *a, char **argv,
		     bool (*cap_ok)(const char *cap, void *data), void *data, struct hezo_strv *out,
		     size_t *dropped)
{
	*dropped = 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct shim_opt *o = &a->opts[i];
		bool b;

		if (o->flag && strcmp(o->flag->name, "cap") == 0) {
			char cap[128];
			shim_cap_name(o->value, cap, sizeof(cap));
			if (!cap_ok(cap, data)) {
				(*dropped)++;
				continue;
			}
		}
		if (o->flag && strcmp(o->flag->name, "no-new-privs") == 0 && o->value &&
		    shim_parse_bool(o->value, &b) == 0 && !b)
			continue;
		if (shim_args_push_opt(out, o, argv) < 0)
			return -ENOMEM;
	}
	return 0;
}

static bool cap_allowed(const char *cap, void *data)
{
	return hezo_policy_cap_allowed(data, cap);
}

/*
 * words put into kept at the ID: before it, or after it (in front of the command). Go's parser
 * stops at the ID, so what goes before it is read as flags, after the caller's own.
 */
static int insert_at_id(const char *verb, struct hezo_strv *kept, const struct hezo_strv *words,
			bool after, struct hezo_error **err)
{
	_cleanup_strv_ struct hezo_strv n = {0};
	_cleanup_args_ struct shim_args k = {0};
	int nk = (int)kept->n, r;

	r = shim_parse_args(shim_verb_spec(verb), nk, kept->v, &k, err);
	for (int i = 0; r == 0 && i <= nk; i++) {
		if (after && i < nk)
			r = hezo_strv_push(&n, kept->v[i]);
		if (r == 0 && i == k.positional && (!after || i < nk))
			r = hezo_strv_push_all(&n, (const char *const *)words->v);
		if (r == 0 && !after && i < nk)
			r = hezo_strv_push(&n, kept->v[i]);
	}
	if (r < 0)
		return r;
	hezo_strv_done(kept);
	*kept = TAKE_STRUCT(n);
	return 0;
}

/*
 * The command-line form: --env=NAME=placeholder just before the ID (the backend sets the
 * environment in order, so the last NAME= is the one the process gets).
 */
static int secrets_as_flags(const char *verb, struct hezo_strv *kept,
			    const struct hezo_json *secrets, struct hezo_error **err)
{
	_cleanup_strv_ struct hezo_strv env = {0};
	int r = 0;

	for (size_t j = 0; r == 0 && j < secrets->len; j++) {
		const char *ph = hezo_json_string(hezo_json_get(secrets->items[j], "placeholder"));

		r = ph ? hezo_strv_pushf(&env, "--env=%s=%s", secrets->keys[j], ph) : -EINVAL;
	}
	r = r ?: insert_at_id(verb, kept, &env, false, err);
	if (r < 0)
		return hezo_error_set(err, ENOMEM, "exec: cannot add the secrets' placeholders");
	return 0;
}

/* The same for the keys: SSH_AUTH_SOCK and git's configuration as --env flags. */
static int keys_as_flags(const char *verb, struct hezo_strv *kept, const struct hezo_json *keys,
			 struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *proc = hezo_json_new_object();
	_cleanup_strv_ struct hezo_strv env = {0};
	const struct hezo_json *e;
	int r = proc ? shim_keys_set_env(proc, keys) : -ENOMEM;

	e = hezo_json_get(proc, "env");
	for (size_t j = 0; r == 0 && e && j < e->len; j++)
		r = hezo_strv_pushf(&env, "--env=%s", hezo_json_string(e->items[j]) ?: "");
	r = r ?: insert_at_id(verb, kept, &env, false, err);
	if (r < 0)
		return hezo_error_set(err, ENOMEM, "exec: cannot add the keys' environment");
	return 0;
}

int shim_cmd_exec(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_strv_ struct hezo_strv kept = {0}, av = {0}, prefix = {0};
	_cleanup_json_ struct hezo_json *rec = NULL;
	_cleanup_target_ struct shim_target t = {0};
	_cleanup_free_ char *clamped = NULL, *eq_form = NULL;
	const struct hezo_json *secrets, *keys;
	struct shim_userns own_ns;
	static struct shim_rlimits rl; /* ctx points at it until the process ends */
	bool files_ok, own_rl;
	const char *id = v->id, *process;
	int64_t nproc = 0, uid_only = -1, gid = 0;
	size_t dropped;
	int r;

	/* runc joins containerCgroup + SUB after a string-prefix test only: ../X reaches any
	 * cgroup whose path starts with the box's, outside its limits. */
	if (shim_args_get(&v->args, "cgroup"))
		return hezo_error_set(
			err, EPERM,
			"exec %s: --cgroup is not allowed (the process stays in the box's "
			"own cgroup)",
			id);
	r = shim_resolve_policy(ctx, id, &t, &p, err);
	if (r < 0)
		return r;
	/* runsc would start the process without the container's seccomp profile. */
	if (t.backend == HEZO_BACKEND_RUNSC) {
		r = shim_record_read(ctx, id, &rec, err);
		if (r == -ENOENT)
			r = hezo_error_set(err, ENOENT, "exec %s: no record of this container", id);
		r = r ?: shim_runsc_exec_prefix(rec, id, &prefix, err);
		if (r < 0)
			return r;
		/* box.pids is the workload's count only where create recorded the backstop too. */
		if (hezo_json_get_path(rec, "box.hostPids"))
			(void)hezo_json_get_int64(hezo_json_get_path(rec, "box.pids"), &nproc);
	}

	/* The record keeps the placeholders (other backends read it for them alone). */
	if (!rec && shim_record_read(ctx, id, &rec, NULL) < 0)
		rec = NULL;
	secrets = hezo_json_get_type(rec, "secrets", HEZO_JSON_OBJECT);
	keys = hezo_json_get_type(rec, "keys", HEZO_JSON_OBJECT);
	/*
	 * A regular file as stdio: runsc's Sentry holds it; a box with a user namespace of its own
	 * reopens it through /proc/self/fd only as far as the file's mode lets others.
	 */
	own_rl = t.backend != HEZO_BACKEND_RUNSC && shim_userns_of_record(rec, &own_ns) == 0;
	files_ok = t.backend == HEZO_BACKEND_RUNSC || own_rl;
	/* The container's rlimits, which runc would give an exec that names none (rlimits.c). */
	if (own_rl) {
		r = shim_rlimits_parse(hezo_json_get_path(rec, "userns.rlimits"), &rl, err);
		if (r < 0)
			return hezo_error_prefix(err, "exec %s: the container's record", id);
		ctx->backend_rlimits = &rl;
	}
	process = shim_args_get(&v->args, "process");
	if (nproc > 0) {
		r = container_user(ctx, id, &uid_only, &gid, err);
		if (r < 0)
			return r;
	}
	if (process) {
		r = clamp_process_file(ctx, v, t.backend, p, process, &prefix, nproc, uid_only,
				       secrets, keys, rec, files_ok, own_rl ? &rl : NULL, &clamped,
				       err);
		if (r < 0)
			return r;
		if (repoint_process(&v->args, v->argv, clamped, &eq_form) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	} else {
		const char *tty = shim_args_get(&v->args, "tty");
		bool terminal = tty != NULL;

		if (tty && *tty && shim_parse_bool(tty, &terminal) < 0)
			terminal = false; /* judged as handed: the stricter rule */
		r = shim_check_stdio(shim_stdio_handed(t.backend, v->name, &v->args, terminal),
				     files_ok, err);
		if (r < 0)
			return r;
	}
	if (shim_exec_filter(&v->args, v->argv, cap_allowed, p, &kept, &dropped) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	/* runsc's default user is 0, runc's the container's own: runc's it is. */
	if (!process && uid_only >= 0) {
		const char *user = shim_args_get(&v->args, "user");
		int64_t uid = 0;

		if (user && parse_user(user, &uid) < 0)
			return hezo_error_set(err, EINVAL, "exec --user %s: not UID[:GID]", user);
		if (user && uid != uid_only) {
			other_uid(err, uid, uid_only);
			return hezo_error_prefix(err, "exec --user %s", user);
		}
		if (!user) {
			_cleanup_strv_ struct hezo_strv u = {0};

			if (hezo_strv_pushf(&u, "--user=%" PRId64 ":%" PRId64, uid_only, gid) < 0 ||
			    insert_at_id(v->name, &kept, &u, false, err) < 0)
				return hezo_error_set(err, ENOMEM, "out of memory");
		}
	}
	if (dropped)
		shim_log(ctx, "warning", "exec %s: %zu --cap value(s) dropped by policy", id,
			 dropped);
	/* The command-line form: the placeholders as --env, after the caller's own. */
	if (!process && secrets && secrets->len) {
		r = secrets_as_flags(v->name, &kept, secrets, err);
		if (r < 0)
			return r;
	}
	if (!process && keys && keys->len) {
		r = keys_as_flags(v->name, &kept, keys, err);
		if (r < 0)
			return r;
	}
	/* The command follows the ID: put the helper in front of it. */
	if (prefix.n && !process && insert_at_id(v->name, &kept, &prefix, true, err) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = shim_backend_argv(ctx, &t, v->name, (int)kept.n, kept.v, &av, err);
	return r < 0 ? r : shim_exec(ctx, &av, err);
}
