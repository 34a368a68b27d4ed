/*
 * `hezo-shim inspect CONTAINER`: the box a container really got, read from what was applied (its
 * record, the rewritten config.json in its bundle and the host's cgroup files), not from docs;
 * for a deleted container that reached a limit, the note kept at delete.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "hezo-file.h"
#include "hezo-spec.h"
#include "shim.h"

#define INSPECT_RECORD_MAX (1024 * 1024)

static int read_json_at(int dirfd, const char *name, size_t max, struct hezo_json **out,
			struct hezo_error **err)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r;

	r = hezo_read_file_at(dirfd, name, max, &data, &len, err);
	if (r < 0)
		return r;
	return hezo_json_parse(data, len, out, err);
}

/*
 * Find the record whose id is id, or the only one starting with id (Docker's short ids), in any
 * root's directory under the state dir.
 */
static int find_record(const char *state_dir, const char *id, struct hezo_json **out,
		       struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *found = NULL;
	_cleanup_close_ int state = -1;
	size_t idlen = strlen(id);
	int matches = 0;
	DIR *top;
	struct dirent *de;

	state = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (state < 0)
		return hezo_error_set_errno(err, errno, "state directory %s", state_dir);
	top = fdopendir(TAKE_FD(state));
	if (!top)
		return hezo_error_set_errno(err, errno, "state directory %s", state_dir);
	while ((de = readdir(top))) {
		_cleanup_close_ int kfd = -1;
		DIR *kd;
		struct dirent *e;

		if (de->d_name[0] == '.')
			continue;
		kfd = openat(dirfd(top), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (kfd < 0)
			continue;
		kd = fdopendir(kfd);
		if (!kd)
			continue;
		kfd = -1;
		while ((e = readdir(kd))) {
			_cleanup_json_ struct hezo_json *rec = NULL;
			_cleanup_error_ struct hezo_error *ignored = NULL;
			const char *rid;

			if (e->d_name[0] == '.' ||
			    strncmp(e->d_name, id, idlen < 150 ? idlen : 150))
				continue;
			if (read_json_at(dirfd(kd), e->d_name, INSPECT_RECORD_MAX, &rec, &ignored) <
				    0 ||
			    rec->type != HEZO_JSON_OBJECT)
				continue;
			rid = hezo_json_string(hezo_json_get(rec, "id"));
			if (!rid || strncmp(rid, id, idlen) != 0)
				continue;
			if (strcmp(rid, id) == 0) {
				/* An exact id wins over any number of prefix matches. */
				hezo_json_free(found);
				found = TAKE_PTR(rec);
				matches = 1;
				closedir(kd);
				goto done;
			}
			matches++;
			hezo_json_free(found);
			found = TAKE_PTR(rec);
		}
		closedir(kd);
	}
done:
	closedir(top);
	if (matches == 0)
		return hezo_error_set(err, ENOENT, "no container \"%s\" in %s", id, state_dir);
	if (matches > 1)
		return hezo_error_set(err, EINVAL, "\"%s\" names more than one container", id);
	*out = TAKE_PTR(found);
	return 0;
}

static int set_copy(struct hezo_json *obj, const char *key, const struct hezo_json *v)
{
	struct hezo_json *c = v ? hezo_json_clone(v) : hezo_json_new_null();

	return c ? hezo_json_set(obj, key, c) : -ENOMEM;
}

/* The cgroup v1 files that hold the limits, as the kernel enforces them right now. */
static int live_limits(const char *cgpath, bool systemd, struct hezo_json *out)
{
	static const struct {
		const char *controller, *file;
	} files[] = {
		{"memory", "memory.limit_in_bytes"},
		{"memory", "memory.memsw.limit_in_bytes"},
		{"pids", "pids.max"},
		{"pids", "pids.current"},
		/* "max N": forks the host's pids.max refused (under runsc: the Sentry's). */
		{"pids", "pids.events"},
		{"cpu", "cpu.cfs_quota_us"},
		{"cpu", "cpu.cfs_period_us"},
	};
	char dir[4096];
	int r = 0;

	for (size_t i = 0; r == 0 && i < HEZO_ARRAY_SIZE(files); i++) {
		_cleanup_error_ struct hezo_error *ignored = NULL;
		_cleanup_free_ char *text = NULL;
		char path[4200];
		struct hezo_json *v;

		if (shim_cgroup_dir("/sys/fs/cgroup", cgpath, systemd, files[i].controller, dir,
				    sizeof(dir)) < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, files[i].file);
		if (hezo_read_file_at(AT_FDCWD, path, 64, &text, NULL, &ignored) < 0)
			continue;
		text[strcspn(text, "\n")] = '\0';
		v = hezo_json_new_string(text);
		r = v ? hezo_json_set(out, files[i].file, v) : -ENOMEM;
	}
	if (r == 0 &&
	    shim_cgroup_dir("/sys/fs/cgroup", cgpath, systemd, "memory", dir, sizeof(dir)) == 0) {
		_cleanup_error_ struct hezo_error *ignored = NULL;
		_cleanup_free_ char *text = NULL;
		char path[4200];
		long long kills;

		snprintf(path, sizeof(path), "%s/memory.oom_control", dir);
		if (hezo_read_file_at(AT_FDCWD, path, 4096, &text, NULL, &ignored) == 0 &&
		    (kills = shim_cgroup_counter(text, "oom_kill")) >= 0)
			r = hezo_json_set(out, "memory.oom_kill", hezo_json_new_int(kills));
	}
	return r;
}

/* What config.json in the bundle says now: the box as the backend was handed it. */
static int applied(const char *bundle, struct hezo_json *out, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *spec = NULL;
	_cleanup_close_ int dfd = -1;
	struct hezo_json *mounts, *seccomp, *list, *ns;
	int r = 0;

	dfd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return hezo_error_set_errno(err, errno, "bundle %s", bundle);
	r = hezo_spec_load_at(dfd, "config.json", &spec, err);
	if (r < 0)
		return hezo_error_prefix(err, "bundle %s", bundle);

	r = r ?: set_copy(out, "capabilities", hezo_json_get_path(spec, "process.capabilities"));
	r = r
		    ?: set_copy(out, "noNewPrivileges",
				hezo_json_get_path(spec, "process.noNewPrivileges"));
	r = r ?: set_copy(out, "readonlyRoot", hezo_json_get_path(spec, "root.readonly"));
	r = r ?: set_copy(out, "resources", hezo_json_get_path(spec, "linux.resources"));
	r = r ?: set_copy(out, "maskedPaths", hezo_json_get_path(spec, "linux.maskedPaths"));
	r = r ?: set_copy(out, "readonlyPaths", hezo_json_get_path(spec, "linux.readonlyPaths"));
	if (r < 0)
		return hezo_error_set(err, -r, "out of memory");

	/* Mounts: destination, type, source and options; enough to see every bind. */
	list = hezo_json_ensure_array(out, "mounts");
	mounts = hezo_json_get_type(spec, "mounts", HEZO_JSON_ARRAY);
	HEZO_JSON_FOREACH (i, mounts) {
		struct hezo_json *m = hezo_json_new_object();
		const struct hezo_json *src = mounts->items[i];

		if (!list || !m) {
			hezo_json_free(m);
			return hezo_error_set(err, ENOMEM, "out of memory");
		}
		r = set_copy(m, "destination", hezo_json_get(src, "destination"));
		r = r ?: set_copy(m, "type", hezo_json_get(src, "type"));
		r = r ?: set_copy(m, "source", hezo_json_get(src, "source"));
		r = r ?: set_copy(m, "options", hezo_json_get(src, "options"));
		r = r ?: hezo_json_append(list, m);
		if (r < 0)
			return hezo_error_set(err, -r, "out of memory");
	}

	list = hezo_json_ensure_array(out, "namespaces");
	ns = hezo_json_get_path(spec, "linux.namespaces");
	HEZO_JSON_FOREACH (i, ns) {
		const char *type = hezo_json_string(hezo_json_get(ns->items[i], "type"));
		const char *path = hezo_json_string(hezo_json_get(ns->items[i], "path"));
		char buf[4200];
		struct hezo_json *s;

		snprintf(buf, sizeof(buf), "%s%s%s", type ?: "?", path ? " " : "", path ?: "");
		s = hezo_json_new_string(buf);
		if (!list || !s || hezo_json_append(list, s) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}

	seccomp = hezo_json_get_path(spec, "linux.seccomp");
	if (seccomp) {
		struct hezo_json *s = hezo_json_new_object(), *n;
		size_t names = 0;
		struct hezo_json *sys = hezo_json_get_type(seccomp, "syscalls", HEZO_JSON_ARRAY);

		HEZO_JSON_FOREACH (i, sys) {
			struct hezo_json *nm =
				hezo_json_get_type(sys->items[i], "names", HEZO_JSON_ARRAY);
			names += nm ? nm->len : 0;
		}
		n = hezo_json_new_uint(names);
		r = s && n ? 0 : -ENOMEM;
		r = r ?: set_copy(s, "defaultAction", hezo_json_get(seccomp, "defaultAction"));
		r = r ?: hezo_json_set(s, "syscallNames", TAKE_PTR(n));
		r = r ?: hezo_json_set(out, "seccomp", TAKE_PTR(s));
		hezo_json_free(n);
		hezo_json_free(s);
	} else {
		r = hezo_json_set(out, "seccomp", hezo_json_new_null());
	}
	if (r < 0)
		return hezo_error_set(err, -r, "out of memory");
	return 0;
}

static int print_json(const struct hezo_json *doc, struct hezo_error **err)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r;

	r = hezo_json_dump(doc, true, &text, &len, err);
	if (r < 0)
		return r;
	fwrite(text, 1, len, stdout);
	fputc('\n', stdout);
	return 0;
}

int shim_cmd_inspect(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *rec = NULL, *out = NULL, *srec = NULL;
	_cleanup_error_ struct hezo_error *e = NULL;
	struct hezo_json *app, *live;
	const char *id = NULL, *bundle, *cg;
	int r;

	for (int i = 0; i < v->argc; i++) {
		const char *w = v->argv[i];

		if (strcmp(w, "-h") == 0 || strcmp(w, "--help") == 0) {
			printf("usage: hezo-shim inspect CONTAINER\n"
			       "The box of a container as applied: its record, the rewritten "
			       "config.json and the live cgroup limits.\n");
			return 0;
		}
		if (w[0] == '-' || id)
			return hezo_error_set(err, EINVAL, "inspect: unexpected argument \"%s\"",
					      w);
		id = w;
	}
	if (!id || !*id || strchr(id, '/'))
		return hezo_error_set(err, EINVAL, "inspect: give one container id");

	if (ctx->g.root) {
		r = shim_record_read(ctx, id, &rec, err);
		if (r == -ENOENT && !*err)
			hezo_error_set(err, ENOENT, "no container \"%s\" under --root %s", id,
				       ctx->g.root);
	} else {
		r = find_record(ctx->state_dir, id, &rec, err);
	}
	/* A project's runtime inspects only its project's containers. */
	if (r == 0)
		r = shim_record_for_caller(ctx, id, rec, err);
	if (r == -ENOENT) {
		_cleanup_json_ struct hezo_json *note = NULL;

		/* Gone, but deleted after reaching a limit: say which (ended.c). */
		if (shim_ended_read(ctx, id, &note) == 0) {
			hezo_error_free(TAKE_PTR(*err));
			out = hezo_json_new_object();
			if (!out || hezo_json_set(out, "id", hezo_json_new_string(id)) < 0 ||
			    hezo_json_set(out, "ended", TAKE_PTR(note)) < 0 ||
			    print_json(out, NULL) < 0)
				return hezo_error_set(err, ENOMEM, "out of memory");
			return 0;
		}
	}
	ctx->fail_stderr = true;
	if (r < 0)
		return r;
	out = hezo_json_clone(rec);
	/* Secrets: names and hosts only. */
	if (!out ||
	    (hezo_json_get(rec, "secrets") &&
	     hezo_json_set(out, "secrets", shim_secrets_public(hezo_json_get(rec, "secrets"))) < 0))
		goto nomem;
	bundle = hezo_json_string(hezo_json_get(rec, "bundle"));
	app = hezo_json_ensure_object(out, "applied");
	if (!app)
		goto nomem;
	/* The bundle goes away with the container; the record still says what was set. */
	if (bundle && applied(bundle, app, &e) < 0)
		hezo_json_set(app, "error", hezo_json_new_string(e->msg));
	/* A runsc pod's app container: the limits that hold are its sandbox's cgroup's. */
	if (shim_runsc_pod_sandbox_record(ctx, rec, &srec) > 0) {
		hezo_json_free(TAKE_PTR(rec));
		rec = TAKE_PTR(srec);
	}
	cg = hezo_json_string(hezo_json_get(rec, "cgroupsPath"));
	live = hezo_json_ensure_object(out, "live");
	if (!live || (cg && live_limits(cg, shim_record_systemd(rec), live) < 0))
		goto nomem;
	return print_json(out, err);
nomem:
	ctx->fail_stderr = false;
	return hezo_error_set(err, ENOMEM, "out of memory");
}
