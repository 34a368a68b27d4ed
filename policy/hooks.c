/* hooks: Docker's own setkey hook in the exact shape dockerd writes, or one the admin lists. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "hezo-file.h"
#include "policy-internal.h"

static const char *const hook_stages[] = {"prestart",	    "createRuntime", "createContainer",
					  "startContainer", "poststart",     "poststop"};

/* A decimal pid with no sign, no leading zero and nothing after it. */
static bool parse_pid(const char *s, size_t n, pid_t *pid)
{
	long v = 0;

	if (n == 0 || n > 9 || s[0] == '0')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*pid = (pid_t)v;
	return true;
}

/* The pid in dockerd's pidfile, believed only when root wrote it and nobody else may. */
static bool dockerd_pid(const char *pidfile, pid_t *pid)
{
	_cleanup_close_ int fd = open(pidfile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	char buf[32];
	struct stat st;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022))
		return false;
	n = read(fd, buf, sizeof(buf));
	if (n <= 0 || (size_t)n >= sizeof(buf))
		return false;
	while (n && buf[n - 1] == '\n')
		n--;
	return parse_pid(buf, (size_t)n, pid);
}

/* Every one of the process's uids (real, effective, saved, fs) is 0. */
static bool process_is_root(pid_t pid)
{
	_cleanup_free_ char *data = NULL;
	char path[64];
	const char *u;
	unsigned a, b, c, d;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (hezo_read_file_at(AT_FDCWD, path, 64 * 1024, &data, &len, NULL) < 0)
		return false;
	u = strstr(data, "\nUid:");
	return u && sscanf(u + 5, "%u %u %u %u", &a, &b, &c, &d) == 4 && !a && !b && !c && !d;
}

/* A short hex network-controller id: stringid.TruncateID of libnetwork's 64-hex one. */
static bool short_hex_id(const char *s)
{
	size_t n = strlen(s ?: "");

	if (n != 12)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
			return false;
	return true;
}

/*
 * Docker 20.10's own prestart hook, exactly as daemon/oci_linux.go writes it: path
 * /proc/<dockerd's pid>/exe, args [libnetwork-setkey, -exec-root=<dir>, <this container's ID>,
 * <controller id>], nothing else (an env would reach dockerd's loader). It runs as root with
 * every capability, so the pid must be the running dockerd by its root-owned pidfile, a root
 * process whose executable is a root-owned, root-only-writable file named dockerd.
 */
static bool docker_setkey(const struct hezo_policy *p, const struct hezo_json *hook,
			  const char *path, const struct hezo_apply_env *env)
{
	const struct hezo_json *args = hezo_json_get_type(hook, "args", HEZO_JSON_ARRAY);
	const char *a1, *a3;
	char exe[PATH_MAX];
	struct stat proc, file;
	pid_t pid, running;
	const char *base;
	size_t n;
	ssize_t l;

	/* Under an ID that already runs the hook would hand that container's sandbox key over. */
	if (!env || !env->id || env->id_in_use || !p->docker_pidfile ||
	    strncmp(path, "/proc/", 6) != 0)
		return false;
	n = strcspn(path + 6, "/");
	if (strcmp(path + 6 + n, "/exe") != 0 || !parse_pid(path + 6, n, &pid))
		return false;
	if (hook->type != HEZO_JSON_OBJECT || hook->len != 2 || !args || args->len != 4)
		return false;
	a1 = hezo_json_string(args->items[1]);
	a3 = hezo_json_string(args->items[3]);
	if (strcmp(hezo_json_string(args->items[0]) ?: "", "libnetwork-setkey") != 0 || !a1 ||
	    strncmp(a1, "-exec-root=/", 12) != 0 ||
	    strcmp(hezo_json_string(args->items[2]) ?: "", env->id) != 0 || !short_hex_id(a3))
		return false;
	if (!dockerd_pid(p->docker_pidfile, &running) || running != pid)
		return false;
	l = readlink(path, exe, sizeof(exe) - 1);
	if (l <= 0)
		return false;
	exe[l] = '\0';
	base = strrchr(exe, '/');
	if (!base || strcmp(base + 1, "dockerd") != 0)
		return false;
	/* The file the process runs, and the file by that name now: one root-owned inode. */
	if (stat(path, &proc) < 0 || stat(exe, &file) < 0 || proc.st_dev != file.st_dev ||
	    proc.st_ino != file.st_ino || !S_ISREG(file.st_mode) || file.st_uid != 0 ||
	    (file.st_mode & 022))
		return false;
	return process_is_root(pid);
}

int hezo_policy_check_hooks(const struct hezo_policy *p, const struct hezo_json *spec,
			    const struct hezo_apply_env *env, struct hezo_error **err)
{
	const struct hezo_json *hooks = hezo_json_get(spec, "hooks");

	if (!hooks || hooks->type == HEZO_JSON_NULL)
		return 0;
	if (hooks->type != HEZO_JSON_OBJECT)
		return hezo_policy_ferr(err, "hooks: expected an object, got %s",
					hezo_json_type_name(hooks->type));
	HEZO_JSON_FOREACH (s, hooks) {
		const struct hezo_json *list = hooks->items[s];
		const char *stage = hooks->keys[s];
		bool known = false;
		char q[256];

		for (size_t k = 0; k < HEZO_ARRAY_SIZE(hook_stages); k++)
			if (strcmp(stage, hook_stages[k]) == 0)
				known = true;
		hezo_policy_quote(q, sizeof(q), stage);
		if (!known)
			return hezo_policy_ferr(err, "hooks: unknown hook stage %s", q);
		if (list->type == HEZO_JSON_NULL)
			continue;
		if (list->type != HEZO_JSON_ARRAY)
			return hezo_policy_ferr(err, "hooks.%s: expected a list, got %s", stage,
						hezo_json_type_name(list->type));
		HEZO_JSON_FOREACH (i, list) {
			const char *path = hezo_json_string(hezo_json_get(list->items[i], "path"));

			if (!path)
				return hezo_policy_ferr(
					err, "hooks.%s[%zu]: path: expected a string", stage, i);
			if (hezo_strv_contains(&p->allowed_hooks, path))
				continue;
			if (strcmp(stage, "prestart") == 0 &&
			    docker_setkey(p, list->items[i], path, env))
				continue;
			hezo_policy_quote(q, sizeof(q), path);
			hezo_error_set(err, EPERM,
				       "hooks.%s[%zu] (%s): hooks run on the host as root; "
				       "this one is not in the policy's allowedHooks",
				       stage, i, q);
			return hezo_error_key(err, "allowedHooks");
		}
	}
	return 0;
}
