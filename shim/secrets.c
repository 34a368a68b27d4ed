/*
 * Secrets at create and exec (docs/policy.md, "Secrets"): each secret file checked without being
 * read, a random placeholder per secret into the process environment, and the wire form (names,
 * hosts, file, placeholder) for the record and the hook. The value never passes through here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-egress.h"
#include "hezo-policy.h"
#include "shim.h"

/*
 * Every directory from / down to the file's: not a symlink, root's, and writable by root alone
 * (or sticky, where nobody else may rename root's entries). Whoever could change one of them could
 * point the path at another root-only file, and the boxes would get that key or secret.
 * Returns the parent's O_PATH fd.
 */
static int root_dirs_open(const char *what, const char *name, const char *path,
			  struct hezo_error **err)
{
	_cleanup_close_ int fd = -1;
	const char *last = strrchr(path, '/');
	char dir[PATH_MAX];

	if (path[0] != '/' || !last[1] || strlen(path) >= sizeof(dir))
		return hezo_error_set(err, EINVAL, "%s %s: file %s: not an absolute path to a file",
				      what, name, path);
	/* "/", then the path up to each later '/', the file's own directory last. */
	for (const char *slash = path; slash && slash <= last; slash = strchr(slash + 1, '/')) {
		struct stat st;

		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
		if (fd >= 0)
			close(fd);
		fd = hezo_open_nofollow(dir, NULL);
		if (fd == -ELOOP)
			return hezo_error_set(err, EPERM, "%s %s: file %s: %s is a symlink", what,
					      name, path, dir);
		if (fd < 0 || fstat(fd, &st) < 0)
			return hezo_error_set_errno(err, fd < 0 ? -fd : errno, "%s %s: file %s: %s",
						    what, name, path, dir);
		if (st.st_uid != 0)
			return hezo_error_set(
				err, EPERM,
				"%s %s: file %s: directory %s is owned by uid %u, not "
				"root",
				what, name, path, dir, (unsigned)st.st_uid);
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
			return hezo_error_set(
				err, EPERM,
				"%s %s: file %s: directory %s is writable by group or "
				"others (mode %04o)",
				what, name, path, dir, (unsigned)(st.st_mode & 07777));
	}
	return TAKE_FD(fd);
}

/* The file may hold a value or a key only if no container and no unprivileged user can read it,
 * nor choose which file it is. */
int shim_root_file_open(const char *what, const char *name, const char *path,
			struct hezo_error **err)
{
	_cleanup_close_ int dir = root_dirs_open(what, name, path, err);
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (dir < 0)
		return dir;
	fd = openat(dir, strrchr(path, '/') + 1,
		    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0 && errno == ELOOP)
		return hezo_error_set(err, EPERM, "%s %s: file %s: a symlink (not followed)", what,
				      name, path);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "%s %s: file %s", what, name, path);
	if (fstat(fd, &st) < 0)
		return hezo_error_set_errno(err, errno, "%s %s: file %s", what, name, path);
	if (!S_ISREG(st.st_mode))
		return hezo_error_set(err, EINVAL, "%s %s: file %s: not a regular file", what, name,
				      path);
	if (st.st_uid != 0)
		return hezo_error_set(err, EPERM, "%s %s: file %s: owned by uid %u, not root", what,
				      name, path, (unsigned)st.st_uid);
	if (st.st_mode & 077)
		return hezo_error_set(err, EPERM,
				      "%s %s: file %s: mode %04o lets group or others in "
				      "(want 0600 or 0400)",
				      what, name, path, (unsigned)(st.st_mode & 07777));
	if (st.st_size == 0)
		return hezo_error_set(err, EINVAL, "%s %s: file %s: empty", what, name, path);
	return TAKE_FD(fd);
}

static int make_placeholder(char out[HEZO_PLACEHOLDER_LEN + 1], struct hezo_error **err)
{
	uint8_t rnd[64];
	int r = -EAGAIN;

	while (r == -EAGAIN) {
		ssize_t n = getrandom(rnd, sizeof(rnd), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(rnd))
			return hezo_error_set_errno(err, n < 0 ? errno : EIO,
						    "secrets: no randomness for a placeholder");
		r = hezo_placeholder_from(rnd, sizeof(rnd), out);
	}
	return 0;
}

/* Where common clients look for their CA bundle; each is pointed at the mounted one. */
static const char *const ca_vars[] = {
	"SSL_CERT_FILE",  "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
	"CURL_CA_BUNDLE", "GIT_SSL_CAINFO",	 "PIP_CERT",
	"AWS_CA_BUNDLE",  "NPM_CONFIG_CAFILE",
};

/* name=value into env, replacing every name= before it. */
int shim_env_put(struct hezo_json *env, const char *name, const char *value)
{
	_cleanup_free_ char *kv = NULL;
	size_t nl = strlen(name);

	for (size_t k = env->len; k-- > 0;) {
		const char *e = hezo_json_string(env->items[k]);

		if (e && strncmp(e, name, nl) == 0 && e[nl] == '=' &&
		    hezo_json_remove_at(env, k) < 0)
			return -ENOMEM;
	}
	if (asprintf(&kv, "%s=%s", name, value) < 0)
		return -ENOMEM;
	return hezo_json_append(env, hezo_json_new_string(kv));
}

int shim_secrets_set_env(struct hezo_json *process, const struct hezo_json *secrets)
{
	struct hezo_json *env;
	int r = 0;

	if (!secrets || secrets->len == 0)
		return 0;
	env = hezo_json_ensure_array(process, "env");
	if (!env)
		return -ENOMEM;
	HEZO_JSON_FOREACH (i, secrets) {
		const char *ph = hezo_json_string(hezo_json_get(secrets->items[i], "placeholder"));

		if (!ph)
			return -EINVAL;
		/* Whatever the engine or image set for NAME goes: only the placeholder is kept. */
		r = shim_env_put(env, secrets->keys[i], ph);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(ca_vars); i++) {
		r = shim_env_put(env, ca_vars[i], SHIM_CA_BUNDLE_DEST);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * proxyd's bundle (the host's roots and its interception CA): $HEZO_PROXYD_CA_BUNDLE, else
 * tls/bundle.crt in the directory of proxyd's socket (its state dir by default).
 */
static int ca_bundle_path(const struct shim_ctx *ctx, char *buf, size_t size)
{
	const char *env = getenv("HEZO_PROXYD_CA_BUNDLE");
	const char *slash = ctx->proxyd_socket ? strrchr(ctx->proxyd_socket, '/') : NULL;

	if (env && env[0] == '/')
		return snprintf(buf, size, "%s", env) < (int)size ? 0 : -ENAMETOOLONG;
	if (!slash)
		return -ENOENT;
	return snprintf(buf, size, "%.*s/tls/bundle.crt", (int)(slash - ctx->proxyd_socket),
			ctx->proxyd_socket) < (int)size
		       ? 0
		       : -ENAMETOOLONG;
}

/* The container trusts proxyd's CA: the bundle read-only over the usual bundle path. */
static int mount_ca(const struct shim_ctx *ctx, struct hezo_json *spec, struct hezo_error **err)
{
	struct hezo_json *mounts = hezo_json_ensure_array(spec, "mounts");
	char path[4096];
	struct stat st;

	if (!mounts)
		return hezo_error_set(err, ENOMEM, "out of memory");
	if (ca_bundle_path(ctx, path, sizeof(path)) < 0)
		return hezo_error_set(err, ENOENT, "secrets: no path for hezo-proxyd's CA bundle");
	/* Fail closed: without it clients would refuse proxyd's leaves, or be told to ignore it. */
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return hezo_error_set(
			err, ENOENT,
			"secrets: hezo-proxyd's CA bundle %s is missing (is hezo-proxyd "
			"running with this state dir?)",
			path);
	return shim_mount_helper(mounts, SHIM_CA_BUNDLE_DEST, path, err);
}

int shim_secrets_prepare(const struct shim_ctx *ctx, const struct hezo_policy *p,
			 struct hezo_json *spec, struct hezo_json **out, struct hezo_error **err)
{
	const struct hezo_json *secrets = hezo_policy_secrets(p);
	_cleanup_json_ struct hezo_json *wire = NULL;
	struct hezo_json *process;
	int r;

	*out = NULL;
	if (!secrets)
		return 0;
	/* An annotation may have narrowed egress.allow below a secret's hosts. */
	r = hezo_policy_check_secrets(p, "(this container's)", err);
	if (r < 0)
		return r;
	wire = hezo_json_clone(secrets);
	if (!wire)
		return hezo_error_set(err, ENOMEM, "out of memory");
	HEZO_JSON_FOREACH (i, wire) {
		char ph[HEZO_PLACEHOLDER_LEN + 1];
		const char *file = hezo_json_string(hezo_json_get(wire->items[i], "file"));

		int fd = shim_root_file_open("secret", wire->keys[i], file ? file : "(none)", err);

		/* Checked, never read: proxyd reads the value when it is due. */
		r = fd < 0 ? fd : close(fd) * 0;
		r = r ?: make_placeholder(ph, err);
		if (r < 0)
			return r;
		if (hezo_json_set(wire->items[i], "placeholder", hezo_json_new_string(ph)) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	process = hezo_json_get_type(spec, "process", HEZO_JSON_OBJECT);
	if (!process)
		return hezo_error_set(err, EINVAL,
				      "config.json: process: missing, secrets need it");
	r = shim_secrets_set_env(process, wire);
	if (r < 0)
		return hezo_error_set(err, -r, "config.json: process.env: cannot set secrets");
	r = mount_ca(ctx, spec, err);
	if (r < 0)
		return r;
	*out = TAKE_PTR(wire);
	return 0;
}

struct hezo_json *shim_secrets_public(const struct hezo_json *secrets)
{
	_cleanup_json_ struct hezo_json *o = hezo_json_new_object();

	HEZO_JSON_FOREACH (i, secrets) {
		struct hezo_json *s = o ? hezo_json_ensure_object(o, secrets->keys[i]) : NULL;
		struct hezo_json *h = hezo_json_clone(hezo_json_get(secrets->items[i], "hosts"));

		if (!s || !h || hezo_json_set(s, "hosts", h) < 0) {
			hezo_json_free(h);
			return NULL;
		}
	}
	return TAKE_PTR(o);
}
