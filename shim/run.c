/* Handing a call to the backend: execve in place, or fork and wait when the shim has work after. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hezo-file.h"
#include "hezo-proc.h"
#include "shim.h"

extern char **environ;

int shim_exec(struct shim_ctx *ctx, struct hezo_strv *argv, struct hezo_error **err)
{
	if (shim_debug(ctx)) {
		char line[1024];
		size_t o = 0;
		for (size_t i = 0; i < argv->n && o < sizeof(line) - 1; i++) {
			int n = snprintf(line + o, sizeof(line) - o, "%s%s", i ? " " : "",
					 argv->v[i]);
			if (n < 0)
				break;
			o += (size_t)n;
		}
		shim_log(ctx, "debug", "exec %s", line);
	}
	if (shim_rlimits_apply_self(ctx->backend_rlimits) < 0)
		return hezo_error_set_errno(err, errno,
					    "the box's rlimits, set for %s (a hard limit above the "
					    "caller's needs CAP_SYS_RESOURCE)",
					    argv->v[0]);
	execve(argv->v[0], argv->v, environ);
	return hezo_error_set_errno(err, errno, "cannot execute %s", argv->v[0]);
}

static volatile pid_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};

int shim_spawn_wait(struct shim_ctx *ctx, struct hezo_strv *argv, struct hezo_error **err)
{
	struct sigaction sa = {.sa_handler = forward_signal};
	sigset_t block, old;
	int report[2], status, child_errno = 0;
	ssize_t n;
	pid_t pid;

	/* The child reports a failed execve through a pipe that a successful one closes. */
	if (pipe2(report, O_CLOEXEC) < 0)
		return hezo_error_set_errno(err, errno, "pipe");
	sigemptyset(&block);
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(forwarded); i++)
		sigaddset(&block, forwarded[i]);
	sigprocmask(SIG_BLOCK, &block, &old);
	pid = fork();
	if (pid < 0) {
		int e = errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(report[0]);
		close(report[1]);
		return hezo_error_set_errno(err, e, "fork");
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		/* A failure to set the box's rlimits is reported negated: not the execve's. */
		child_errno = shim_rlimits_apply_self(ctx->backend_rlimits);
		if (child_errno == 0) {
			execve(argv->v[0], argv->v, environ);
			child_errno = errno;
		}
		(void)hezo_write_all(report[1], &child_errno, sizeof(child_errno));
		_exit(127);
	}
	child_pid = pid;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(forwarded); i++)
		sigaction(forwarded[i], &sa, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);

	close(report[1]);
	do
		n = read(report[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(report[0]);

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return hezo_error_set_errno(err, errno, "waitpid");
	}
	child_pid = 0;
	if (n == (ssize_t)sizeof(child_errno) && child_errno < 0)
		return hezo_error_set_errno(err, -child_errno,
					    "the box's rlimits, set for %s (a hard limit above the "
					    "caller's needs CAP_SYS_RESOURCE)",
					    argv->v[0]);
	if (n == (ssize_t)sizeof(child_errno))
		return hezo_error_set_errno(err, child_errno, "cannot execute %s", argv->v[0]);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

int shim_spawn_capture(struct shim_ctx *ctx, struct hezo_strv *argv, char **out, size_t *len,
		       struct hezo_error **err)
{
	static const struct hezo_spawn_opts o = {.max = 16 * 1024 * 1024};
	int r;

	(void)ctx;
	r = hezo_spawn_capture(argv->v[0], argv->v, &o, out, len);
	if (r < 0)
		return hezo_error_set_errno(err, -r, "output of %s", argv->v[0]);
	return r;
}

int shim_resolve(struct shim_ctx *ctx, const char *id, struct shim_target *t,
		 struct hezo_json **rec, struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *base = NULL, *p = NULL;
	int r;

	*rec = NULL;
	memset(t, 0, sizeof(*t));
	if (id) {
		r = shim_validate_id(id, err);
		if (r < 0)
			return r;
		r = shim_record_read(ctx, id, rec, err);
		if (r == 0)
			r = shim_record_for_caller(ctx, id, *rec, err);
		r = r ?: shim_root_from_record(ctx, *rec, err);
		if (r == 0)
			return shim_record_target(*rec, t, err);
		if (r != -ENOENT)
			return r;
		return shim_record_absent(ctx, id, err);
	}
	/* No container named: the policy's default backend. */
	r = shim_load_policy(ctx, &base, err);
	if (r < 0)
		return r;
	r = hezo_policy_for_container(base, NULL, ctx->g.project, &p, err);
	if (r < 0)
		return r;
	return shim_target_from_policy(p, t, err);
}

int shim_resolve_policy(struct shim_ctx *ctx, const char *id, struct shim_target *t,
			struct hezo_policy **p, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *rec = NULL;
	int r;

	memset(t, 0, sizeof(*t));
	r = shim_record_read(ctx, id, &rec, err);
	if (r == 0) {
		r = shim_record_for_caller(ctx, id, rec, err);
		r = r ?: shim_root_from_record(ctx, rec, err);
		r = r ?: shim_record_target(rec, t, err);
		return r < 0 ? r : shim_record_policy(ctx, rec, p, err);
	}
	/* Never a default policy for a container the shim did not make: it has no box to keep. */
	return r == -ENOENT ? shim_record_absent(ctx, id, err) : r;
}

int shim_find_helper(const char *env_name, const char *const *rel, char *buf, size_t size)
{
	const char *env = getenv(env_name);
	char exe[PATH_MAX];
	struct stat st;
	ssize_t n;
	char *slash;

	if (env && *env) {
		snprintf(buf, size, "%s", env);
		return env[0] == '/' && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
				       access(buf, X_OK) == 0
			       ? 0
			       : -ENOENT;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	for (size_t i = 0; rel[i]; i++) {
		char p[PATH_MAX * 2];

		snprintf(p, sizeof(p), "%s/%s", exe, rel[i]);
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0 &&
		    realpath(p, buf) && strlen(buf) < size)
			return 0;
	}
	return -ENOENT;
}

bool shim_has_dev_tmpfs(const struct hezo_json *mounts)
{
	HEZO_JSON_FOREACH (i, mounts) {
		const char *d = hezo_json_string(hezo_json_get(mounts->items[i], "destination"));
		const char *t = hezo_json_string(hezo_json_get(mounts->items[i], "type"));

		if (d && t && strcmp(d, "/dev") == 0 && strcmp(t, "tmpfs") == 0)
			return true;
	}
	return false;
}

int shim_mount_helper(struct hezo_json *mounts, const char *dest, const char *helper,
		      struct hezo_error **err)
{
	struct hezo_json *m = hezo_json_new_object(), *opts = NULL;
	static const char *const flags[] = {"rbind", "ro", "nosuid", "nodev"};
	int r;

	if (!m)
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = hezo_json_append(mounts, m);
	r = r ?: hezo_json_set(m, "destination", hezo_json_new_string(dest));
	r = r ?: hezo_json_set(m, "type", hezo_json_new_string("bind"));
	r = r ?: hezo_json_set(m, "source", hezo_json_new_string(helper));
	if (r == 0 && !(opts = hezo_json_ensure_array(m, "options")))
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < HEZO_ARRAY_SIZE(flags); i++)
		r = hezo_json_append(opts, hezo_json_new_string(flags[i]));
	if (r < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	return 0;
}
