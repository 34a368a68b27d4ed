/*
 * start, kill, state, ps and features: pass-through verbs for runc, with the work runsc needs
 * around them (no sandbox left behind after a failed start, runc's answers for a stopped or
 * missing sandbox, host PIDs for ps, no features command).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hezo-file.h"
#include "shim.h"

/*
 * 1 and t, rec filled when id names a container runsc created through us; 0 when the verb
 * should simply pass through; -errno on error.
 */
static int runsc_container(struct shim_ctx *ctx, const char *id, struct shim_target *t,
			   struct hezo_json **rec, struct hezo_error **err)
{
	int r;

	*rec = NULL;
	memset(t, 0, sizeof(*t));
	if (!id || shim_validate_id(id, NULL) < 0)
		return 0;
	r = shim_record_read(ctx, id, rec, err);
	if (r == -ENOENT)
		return 0;
	r = r ?: shim_record_for_caller(ctx, id, *rec, err);
	r = r ?: shim_root_from_record(ctx, *rec, err);
	if (r < 0)
		return r;
	r = shim_record_target(*rec, t, err);
	if (r < 0)
		return r;
	return t->backend == HEZO_BACKEND_RUNSC;
}

/* Is this kill's signal SIGKILL, in any form runc accepts ("9", "KILL", "SIGKILL")? */
bool shim_signal_is_kill(const char *sig)
{
	if (!sig)
		return false;
	if (strcmp(sig, "9") == 0)
		return true;
	if (strncasecmp(sig, "SIG", 3) == 0)
		sig += 3;
	return strcasecmp(sig, "KILL") == 0;
}

/*
 * A container runsc left in state "created" keeps its sandbox and gofer running, and runsc
 * refuses to kill it: destroy it so the engine's later delete finds nothing left.
 */
static int destroy_if_created(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
			      const struct hezo_json *rec, const char *why)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *status = NULL;
	long pid = 0;
	int r;

	r = shim_runsc_state(ctx, t, id, &status, &pid, &err);
	if (r < 0 || strcmp(status, "created") != 0)
		return -EAGAIN;
	if (shim_stage_root_again(ctx, id, rec, &err) < 0)
		shim_log(ctx, "warning", "%s: runsc may not find its root overlay's filestore: %s",
			 why, err && err->msg ? err->msg : "failed");
	hezo_error_free(TAKE_PTR(err));
	r = shim_runsc_destroy(ctx, t, id, &err);
	if (r < 0) {
		shim_log(ctx, "warning", "%s: %s", why, err && err->msg ? err->msg : "failed");
		return r;
	}
	shim_log(ctx, "warning", "%s: sandbox %ld of container %s destroyed (state was created)",
		 why, pid, id);
	/* A pod's app container: its waiter ends as a killed init would. */
	shim_runsc_waiter_tell(ctx, id, 'D');
	return 0;
}

/*
 * runc's answers where runsc's differ, for a container that is stopped or gone: containerd's
 * runc v2 shim reads the runtime's stderr and takes a kill as done only on "container not
 * running" or "does not exist", and a state as "stopped" only on "does not exist" (runsc says
 * "sandbox is not running" and "loading container: file does not exist", exit 128). Without
 * them StopPodSandbox fails for good on a pod whose sandbox died. Returns the exit status, -errno
 * with the answer in err (on stderr too), or -EAGAIN when the container is there and running
 * (the backend answers itself).
 */
static int runc_answer(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		       const char *verb, bool all, struct hezo_error **err)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *status = NULL;
	long pid = 0;
	int r;

	r = shim_runsc_state(ctx, t, id, &status, &pid, &e);
	if (r < 0 && r != -ENOENT)
		return -EAGAIN;
	if (r == 0 && (strcmp(verb, "kill") != 0 || strcmp(status, "stopped") != 0))
		return -EAGAIN;
	/* runc: a kill --all of a stopped container signals nothing and succeeds. */
	if (r == 0 && all)
		return 0;
	ctx->fail_stderr = true;
	if (r == -ENOENT)
		return hezo_error_set(err, ENOENT, "container does not exist");
	return hezo_error_set(err, ESRCH, "container not running");
}

/*
 * runc's answer where runsc's differs, else -EAGAIN: the backend's own. *ours: v->id is a
 * container runsc created through us (t and rec filled).
 */
static int answer(struct shim_ctx *ctx, const struct shim_verb *v, struct shim_target *t,
		  struct hezo_json **rec, bool *ours, struct hezo_error **err)
{
	bool all = shim_args_bool(&v->args, "all");
	int r = runsc_container(ctx, v->id, t, rec, err);

	*ours = r > 0;
	if (r > 0)
		return runc_answer(ctx, t, v->id, v->name, all, err);
	/* No record: the pass-through gives runc's answer for an unknown container. */
	return r < 0 ? r : -EAGAIN;
}

/*
 * A pod's app container that runsc says is stopped or gone and that never started can never run
 * (its sandbox died): its waiter, which containerd's shim waits for, ends (see pod-wait.c).
 */
static void end_waiter_if_stopped(struct shim_ctx *ctx, const struct shim_target *t, const char *id)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *status = NULL;
	long pid = 0;
	int r = shim_runsc_state(ctx, t, id, &status, &pid, &e);

	if (r == -ENOENT || (r == 0 && strcmp(status, "stopped") == 0))
		shim_runsc_waiter_tell(ctx, id, 'K');
}

/*
 * A pod's app container whose sandbox is no longer running cannot start: say so in one line
 * (runsc would answer "cannot start container in state stopped") and end its waiter.
 */
static int pod_sandbox_running(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
			       const struct hezo_json *rec, struct hezo_error **err)
{
	_cleanup_error_ struct hezo_error *e = NULL;
	_cleanup_free_ char *status = NULL;
	const char *sandbox = NULL;
	long pid = 0;
	int r;

	if (shim_runsc_pod_app(rec, &sandbox, NULL) <= 0)
		return 0;
	r = shim_runsc_state(ctx, t, sandbox, &status, &pid, &e);
	if (r == -ENOENT || (r == 0 && (pid <= 0 || strcmp(status, "running") != 0))) {
		shim_runsc_waiter_tell(ctx, id, 'K');
		return hezo_error_set(err, ESRCH,
				      "start %s: its pod's sandbox %s is not running (%s): the "
				      "container can never run",
				      id, sandbox, r == 0 ? status : "gone");
	}
	return 0;
}

int shim_cmd_state(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *rec = NULL;
	_cleanup_target_ struct shim_target t = {0};
	bool ours;
	int r = answer(ctx, v, &t, &rec, &ours, err);

	return r == -EAGAIN ? shim_cmd_passthrough(ctx, v, err) : r;
}

/* Close the descriptors a start held (a 3-array, -1 for none). */
static void close3(int (*fds)[3])
{
	for (int i = 0; i < 3; i++)
		if ((*fds)[i] >= 0)
			close((*fds)[i]);
}

int shim_cmd_start(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *rec = NULL;
	_cleanup_target_ struct shim_target t = {0};
	_cleanup_strv_ struct hezo_strv av = {0};
	_cleanup_(close3) int stdio[3] = {-1, -1, -1}, saved[3] = {-1, -1, -1};
	bool pod_app;
	int r;

	r = runsc_container(ctx, v->id, &t, &rec, err);
	if (r <= 0)
		return r < 0 ? r : shim_cmd_passthrough(ctx, v, err);
	r = pod_sandbox_running(ctx, &t, v->id, rec, err);
	if (r < 0)
		return r;
	/* A pod's app container: runsc starts its gofer now, where its mounts are staged. */
	r = shim_runsc_waiter_enter(ctx, v->id, stdio, err);
	if (r < 0)
		return r;
	pod_app = r > 0;
	r = shim_backend_argv(ctx, &t, v->name, v->argc, v->argv, &av, err);
	/* ... and with the container's stdio, ours again afterwards. */
	for (int i = 0; r == 0 && pod_app && i < 3; i++) {
		saved[i] = fcntl(i, F_DUPFD_CLOEXEC, 3);
		if (saved[i] < 0 || dup2(stdio[i], i) < 0)
			r = hezo_error_set_errno(err, errno, "start %s: stdio", v->id);
	}
	if (r == 0)
		r = shim_spawn_wait(ctx, &av, err);
	for (int i = 0; i < 3; i++)
		if (saved[i] >= 0)
			(void)dup2(saved[i], i);
	/* A pod's app container runs: its waiter may wait for it now (runsc-pod.c). */
	if (r == 0 && pod_app)
		shim_runsc_waiter_tell(ctx, v->id, 'S');
	/* The engine sees start's error; the sandbox must not outlive it, nor the waiter. */
	if (r > 0 && destroy_if_created(ctx, &t, v->id, rec, "start failed") == -EAGAIN)
		end_waiter_if_stopped(ctx, &t, v->id);
	return r;
}

int shim_cmd_kill(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *rec = NULL;
	_cleanup_target_ struct shim_target t = {0};
	_cleanup_strv_ struct hezo_strv av = {0};
	_cleanup_strv_ struct hezo_strv kargs = {0};
	struct shim_verb kv;
	const char *sig = shim_args_positional(&v->args, 1);
	bool ours;
	int r;

	/*
	 * runc's CLI moves a flag and the word after it to the front (kill OWN --all VICTIM is
	 * kill --all VICTIM OWN to it): the backend gets the shim's own reading, rebuilt.
	 */
	if (shim_args_positional(&v->args, 2) || (sig && sig[0] == '-'))
		return hezo_error_set(
			err, EINVAL,
			"kill: takes one container and one signal, then nothing (flags "
			"before the container)");
	r = hezo_strv_init(&kargs);
	if (r == 0 && shim_args_bool(&v->args, "all"))
		r = hezo_strv_push(&kargs, "--all");
	r = r ?: hezo_strv_push(&kargs, v->id);
	if (r == 0 && sig)
		r = hezo_strv_push(&kargs, sig);
	if (r < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	kv = *v;
	kv.argc = (int)kargs.n;
	kv.argv = kargs.v;
	r = answer(ctx, v, &t, &rec, &ours, err);
	if (r == -EAGAIN && !ours)
		return shim_cmd_passthrough(ctx, &kv, err);
	/*
	 * Stopped or gone: containerd's shim takes the kill as done and waits for the pid it was
	 * given, a pod app container's waiter, which ends here if the container never started.
	 */
	if (r != -EAGAIN && ours)
		shim_runsc_waiter_tell(ctx, v->id, 'K');
	if (r != -EAGAIN)
		return r;
	r = shim_backend_argv(ctx, &t, v->name, kv.argc, kv.argv, &av, err);
	if (r == 0)
		r = shim_spawn_wait(ctx, &av, err);
	/* runsc refuses to signal a created container; SIGKILL means it must go. */
	if (r > 0 && shim_signal_is_kill(sig) &&
	    destroy_if_created(ctx, &t, v->id, rec, "kill") == 0)
		r = 0;
	return r;
}

int shim_cmd_ps(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *rec = NULL, *pids = NULL;
	_cleanup_target_ struct shim_target t = {0};
	const char *fmt = shim_args_get(&v->args, "format");
	int r;

	bool quiet = shim_args_bool(&v->args, "quiet"),
	     no_trunc = shim_args_bool(&v->args, "no-trunc"),
	     json = shim_args_bool(&v->args, "json");
	enum shim_ps_form form = SHIM_PS_TABLE;

	/* No container: hezo-shim's own list of every box (ps.c), docker ps's flags. */
	if (!v->id) {
		if (json || (fmt && strcmp(fmt, "json") == 0))
			form = SHIM_PS_JSON;
		else if (fmt && strcmp(fmt, "table") != 0)
			return hezo_error_set(err, EINVAL, "ps: --format %s: table or json", fmt);
		if (quiet)
			form = form == SHIM_PS_JSON ? form : SHIM_PS_QUIET;
		return shim_cmd_ps_all(ctx, form, no_trunc, err);
	}
	if (quiet || no_trunc || json)
		return hezo_error_set(err, EINVAL,
				      "ps %s: -q, --no-trunc and --json list every box: give no ID",
				      v->id);
	r = runsc_container(ctx, v->id, &t, &rec, err);
	/*
	 * runsc's JSON lists PIDs inside the sandbox; engines (docker top) look them up among the
	 * host's processes and would show unrelated ones (PID 1 of the host). Answer with the host
	 * PIDs of the sandbox instead. The table form stays runsc's own view from inside.
	 */
	if (r <= 0 || !fmt || strcmp(fmt, "json") != 0)
		return r < 0 ? r : shim_cmd_passthrough(ctx, v, err);
	r = shim_runsc_host_pids(ctx, &t, rec, v->id, &pids, err);
	return r < 0 ? r : shim_ps_print_json(pids, err);
}

int shim_cmd_features(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *rec = NULL;
	_cleanup_target_ struct shim_target t = {0};
	int r;

	r = shim_resolve(ctx, NULL, &t, &rec, err);
	if (r < 0)
		return r;
	/*
	 * Engines treat a failing `features` as "unknown" and carry on; an answer we made up for
	 * gVisor could claim what it does not do.
	 */
	if (t.backend == HEZO_BACKEND_RUNSC)
		return hezo_error_set(err, ENOSYS,
				      "features: runsc has no features command and hezo-shim does "
				      "not describe gVisor's in its place");
	return shim_cmd_passthrough(ctx, v, err);
}
