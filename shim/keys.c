/*
 * Keys at create (docs/policy.md, "Keys"): each key file checked as a secret's and read once, here,
 * for its public half; the agent's directory (proxyd serves the socket in it) bind-mounted into the
 * box; SSH_AUTH_SOCK and git's signing configuration into the environment. The private half never
 * leaves this process's memory, which is wiped as soon as the public half is out.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-egress.h"
#include "hezo-file.h"
#include "shim.h"

#define KEY_FILE_MAX 8192

static int public_of(const char *name, const char *path, char pub[HEZO_KEY_PUBLIC_MAX],
		     struct hezo_error **err)
{
	_cleanup_close_ int fd = shim_root_file_open("key", name, path, err);
	struct hezo_sshkey k;
	char buf[KEY_FILE_MAX];
	const char *why = NULL;
	size_t len = 0;
	ssize_t n;
	int r;

	if (fd < 0)
		return fd;
	while (len < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			explicit_bzero(buf, len);
			return hezo_error_set_errno(err, errno, "key %s: file %s", name, path);
		}
		len += (size_t)n;
	}
	r = hezo_sshkey_parse(buf, len, &k, &why);
	explicit_bzero(buf, sizeof(buf));
	if (r < 0)
		return hezo_error_set(err, -r,
				      "key %s: file %s: %s (want an unencrypted ed25519 key as "
				      "ssh-keygen writes it)",
				      name, path, why);
	hezo_sshkey_public_line(k.pub, pub);
	explicit_bzero(&k, sizeof(k));
	return 0;
}

/* STATE/agent/ID beside proxyd's socket: proxyd makes its socket there when the hook registers. */
static int agent_dir(const struct shim_ctx *ctx, const char *id, char *buf, size_t size)
{
	const char *slash = ctx->proxyd_socket ? strrchr(ctx->proxyd_socket, '/') : NULL;

	if (!slash)
		return -ENOENT;
	return snprintf(buf, size, "%.*s/agent/%s", (int)(slash - ctx->proxyd_socket),
			ctx->proxyd_socket, id) < (int)size
		       ? 0
		       : -ENAMETOOLONG;
}

static const struct hezo_json *git_key(const struct hezo_json *keys)
{
	HEZO_JSON_FOREACH (i, keys) {
		const struct hezo_json *sign = hezo_json_get(keys->items[i], "sign");

		for (size_t k = 0; sign && sign->type == HEZO_JSON_ARRAY && k < sign->len; k++)
			if (strcmp(hezo_json_string(sign->items[k]) ?: "", "git") == 0)
				return keys->items[i];
	}
	return NULL;
}

int shim_keys_set_env(struct hezo_json *process, const struct hezo_json *keys)
{
	_cleanup_free_ char *signing = NULL;
	const struct hezo_json *g;
	struct hezo_json *env;
	int r;

	if (!keys || keys->len == 0)
		return 0;
	env = hezo_json_ensure_array(process, "env");
	if (!env)
		return -ENOMEM;
	r = shim_env_put(env, "SSH_AUTH_SOCK", SHIM_AGENT_SOCK);
	g = git_key(keys);
	if (r < 0 || !g)
		return r;
	/* git reads these after its files: an unmodified image signs every commit with the key. */
	if (asprintf(&signing, "key::%s", hezo_json_string(hezo_json_get(g, "public")) ?: "") < 0)
		return -ENOMEM;
	r = shim_env_put(env, "GIT_CONFIG_COUNT", "3");
	r = r ?: shim_env_put(env, "GIT_CONFIG_KEY_0", "gpg.format");
	r = r ?: shim_env_put(env, "GIT_CONFIG_VALUE_0", "ssh");
	r = r ?: shim_env_put(env, "GIT_CONFIG_KEY_1", "user.signingkey");
	r = r ?: shim_env_put(env, "GIT_CONFIG_VALUE_1", signing);
	r = r ?: shim_env_put(env, "GIT_CONFIG_KEY_2", "commit.gpgsign");
	r = r ?: shim_env_put(env, "GIT_CONFIG_VALUE_2", "true");
	return r;
}

int shim_keys_prepare(const struct shim_ctx *ctx, const struct hezo_policy *p, const char *id,
		      struct hezo_json *spec, struct hezo_json **out, struct hezo_error **err)
{
	const struct hezo_json *keys = hezo_policy_keys(p);
	_cleanup_json_ struct hezo_json *wire = NULL;
	struct hezo_json *process, *mounts;
	char dir[4096];
	int r;

	*out = NULL;
	if (!keys)
		return 0;
	if (hezo_policy_egress_mode(p) != HEZO_EGRESS_PROXY)
		return hezo_error_set(err, EINVAL,
				      "keys: need egress.mode \"proxy\" (hezo-proxyd serves the "
				      "agent)");
	/* An annotation may have narrowed egress.allow below a key's hosts. */
	r = hezo_policy_check_keys(p, "(this container's)", err);
	if (r < 0)
		return r;
	wire = hezo_json_clone(keys);
	if (!wire)
		return hezo_error_set(err, ENOMEM, "out of memory");
	HEZO_JSON_FOREACH (i, wire) {
		const char *file = hezo_json_string(hezo_json_get(wire->items[i], "file"));
		char pub[HEZO_KEY_PUBLIC_MAX];

		/* Fail closed: a key missing or open to others refuses the box here. */
		r = public_of(wire->keys[i], file ?: "(none)", pub, err);
		if (r < 0)
			return r;
		if (hezo_json_set(wire->items[i], "public", hezo_json_new_string(pub)) < 0)
			return hezo_error_set(err, ENOMEM, "out of memory");
	}
	process = hezo_json_get_type(spec, "process", HEZO_JSON_OBJECT);
	if (!process)
		return hezo_error_set(err, EINVAL, "config.json: process: missing, keys need it");
	if (shim_keys_set_env(process, wire) < 0)
		return hezo_error_set(err, ENOMEM, "config.json: process.env: cannot set keys");
	if (agent_dir(ctx, id, dir, sizeof(dir)) < 0)
		return hezo_error_set(err, ENOENT,
				      "keys: no path for hezo-proxyd's agent directory");
	/* Only this box mounts it: the directory is what names the box to the agent. */
	r = hezo_mkdir_p(dir, 0700, 0755);
	if (r < 0)
		return hezo_error_set_errno(err, -r, "keys: agent directory %s", dir);
	if (chmod(dir, 0755) < 0)
		return hezo_error_set_errno(err, errno, "keys: agent directory %s", dir);
	mounts = hezo_json_ensure_array(spec, "mounts");
	if (!mounts)
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = shim_mount_helper(mounts, SHIM_AGENT_DEST, dir, err);
	if (r < 0)
		return r;
	*out = TAKE_PTR(wire);
	return 0;
}

void shim_keys_remove(const struct shim_ctx *ctx, const char *id)
{
	char dir[4096], sock[4200];

	if (agent_dir(ctx, id, dir, sizeof(dir)) < 0)
		return;
	snprintf(sock, sizeof(sock), "%s/agent.sock", dir);
	(void)unlink(sock);
	(void)rmdir(dir);
}
