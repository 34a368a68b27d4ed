/*
 * start, kill, state, ps and features: pass-through verbs for runc, with the work runsc needs
 * around them (no sandbox left behind after a failed start, runc's answers for a stopped or
 * missing sandbox, host PIDs for ps, no features command).
 */
#include <errno.h>
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
			      const char *why)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *status = NULL;
	long pid = 0;
	int r;

	r = shim_runsc_state(ctx, t, id, &status, &pid, &err);
	if (r < 0 || strcmp(status, "created") != 0)
		return -EAGAIN;
	r = shim_runsc_destroy(ctx, t, id, &err);
	if (r < 0) {
		shim_log(ctx, "warning", "%s: %s", why, err && err->msg ? err->msg : "failed");
		return r;
	}
	shim_log(ctx, "warning", "%s: sandbox %ld of container %s destroyed (state was created)",
		 why, pid, id);
	return 0;
}

/*
 * runc's answers where runsc's differ, for a container that is stopped or gone: containerd's
 * runc v2 shim reads the runtime's stderr and takes a kill as done only on "container not
 * running" or "does not exist", and a state as "stopped" only on "does not exist" (runsc says
 * "sandbox is not running" and "loading container: file does not exist", exit 128). Without
 * them StopPodSandbox fails for good on a pod whose sandbox died. Returns the exit status, or
 * -EAGAIN when the container is there and running (the backend answers itself).
 */
static int runc_answer(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		       const char *verb, bool all)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_free_ char *status = NULL;
	long pid = 0;
	int r;

	r = shim_runsc_state(ctx, t, id, &status, &pid, &err);
	if (r == -ENOENT) {
		hezo_error_free(TAKE_PTR(err));
		hezo_error_set(&err, ENOENT, "container does not exist");
		return shim_fail_stderr(ctx, err);
	}
	if (r < 0 || strcmp(verb, "kill") != 0 || strcmp(status, "stopped") != 0)
		return -EAGAIN;
	/* runc: a kill --all of a stopped container signals nothing and succeeds. */
	if (all)
		return 0;
	hezo_error_set(&err, ESRCH, "container not running");
	return shim_fail_stderr(ctx, err);
}

/* The same for an id with no record where runsc is the backend the policy would pick. */
static int runc_answer_unrecorded(struct shim_ctx *ctx, const char *id, const char *verb, bool all)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *rec = NULL;
	struct shim_target t = {0};
	int r = -EAGAIN;

	if (!id || shim_validate_id(id, NULL) < 0)
		return -EAGAIN;
	if (shim_resolve(ctx, id, &t, &rec, &err) == 0 && !rec && t.backend == HEZO_BACKEND_RUNSC)
		r = runc_answer(ctx, &t, id, verb, all);
	shim_target_done(&t);
	return r;
}

int shim_cmd_state(struct shim_ctx *ctx, const char *verb, int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *rec = NULL;
	struct shim_target t = {0};
	struct shim_args a = {0};
	const char *id;
	int r;

	r = shim_parse_args(shim_verb_spec(verb), argc, argv, &a, &err);
	if (r < 0)
		return shim_fail(ctx, err);
	id = a.help ? NULL : shim_args_positional(&a, 0);
	r = runsc_container(ctx, id, &t, &rec, &err);
	if (r > 0)
		r = runc_answer(ctx, &t, id, verb, false);
	else if (r == 0)
		r = runc_answer_unrecorded(ctx, id, verb, false);
	shim_args_done(&a);
	shim_target_done(&t);
	if (r == -EAGAIN)
		return shim_cmd_passthrough(ctx, verb, argc, argv);
	return r < 0 ? shim_fail(ctx, err) : r;
}

int shim_cmd_start(struct shim_ctx *ctx, const char *verb, int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *rec = NULL;
	struct shim_target t = {0};
	struct shim_argv av = {0};
	struct shim_args a = {0};
	const char *id;
	int r;

	r = shim_parse_args(shim_verb_spec(verb), argc, argv, &a, &err);
	if (r < 0)
		return shim_fail(ctx, err);
	id = a.help ? NULL : shim_args_positional(&a, 0);
	r = runsc_container(ctx, id, &t, &rec, &err);
	if (r <= 0) {
		shim_args_done(&a);
		shim_target_done(&t);
		return r < 0 ? shim_fail(ctx, err) : shim_cmd_passthrough(ctx, verb, argc, argv);
	}
	r = shim_backend_argv(ctx, &t, verb, argc, argv, &av, &err);
	if (r == 0)
		r = shim_spawn_wait(ctx, &av, &err);
	/* The engine sees start's error; the sandbox must not outlive it. */
	if (r > 0)
		destroy_if_created(ctx, &t, id, "start failed");
	shim_args_done(&a);
	shim_argv_done(&av);
	shim_target_done(&t);
	return r < 0 ? shim_fail(ctx, err) : r;
}

int shim_cmd_kill(struct shim_ctx *ctx, const char *verb, int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *rec = NULL;
	struct shim_target t = {0};
	struct shim_argv av = {0};
	struct shim_args a = {0};
	const char *id, *sig;
	int r;

	r = shim_parse_args(shim_verb_spec(verb), argc, argv, &a, &err);
	if (r < 0)
		return shim_fail(ctx, err);
	id = a.help ? NULL : shim_args_positional(&a, 0);
	sig = shim_args_positional(&a, 1);
	r = runsc_container(ctx, id, &t, &rec, &err);
	if (r <= 0) {
		if (r == 0)
			r = runc_answer_unrecorded(ctx, id, verb, shim_args_bool(&a, "all"));
		shim_args_done(&a);
		shim_target_done(&t);
		if (r == -EAGAIN)
			return shim_cmd_passthrough(ctx, verb, argc, argv);
		return r < 0 ? shim_fail(ctx, err) : r;
	}
	r = runc_answer(ctx, &t, id, verb, shim_args_bool(&a, "all"));
	if (r != -EAGAIN) {
		shim_args_done(&a);
		shim_target_done(&t);
		return r;
	}
	r = shim_backend_argv(ctx, &t, verb, argc, argv, &av, &err);
	if (r == 0)
		r = shim_spawn_wait(ctx, &av, &err);
	/* runsc refuses to signal a created container; SIGKILL means it must go. */
	if (r > 0 && shim_signal_is_kill(sig) && destroy_if_created(ctx, &t, id, "kill") == 0)
		r = 0;
	shim_args_done(&a);
	shim_argv_done(&av);
	shim_target_done(&t);
	return r < 0 ? shim_fail(ctx, err) : r;
}

int shim_cmd_ps(struct shim_ctx *ctx, const char *verb, int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *rec = NULL, *pids = NULL;
	_cleanup_free_ char *out = NULL;
	struct shim_target t = {0};
	struct shim_args a = {0};
	const char *id, *fmt;
	size_t len;
	int r;

	/* No container: hezo-shim's own list of every box (ps.c). */
	if (argc == 0 || (argc == 1 && strcmp(argv[0], "--json") == 0))
		return shim_cmd_ps_all(ctx, argc == 1);
	r = shim_parse_args(shim_verb_spec(verb), argc, argv, &a, &err);
	if (r < 0)
		return shim_fail(ctx, err);
	id = a.help ? NULL : shim_args_positional(&a, 0);
	fmt = shim_args_get(&a, "format");
	r = runsc_container(ctx, id, &t, &rec, &err);
	/*
	 * runsc's JSON lists PIDs inside the sandbox; engines (docker top) look them up among the
	 * host's processes and would show unrelated ones (PID 1 of the host). Answer with the host
	 * PIDs of the sandbox instead. The table form stays runsc's own view from inside.
	 */
	if (r <= 0 || !fmt || strcmp(fmt, "json") != 0) {
		shim_args_done(&a);
		shim_target_done(&t);
		return r < 0 ? shim_fail(ctx, err) : shim_cmd_passthrough(ctx, verb, argc, argv);
	}
	shim_args_done(&a);
	r = shim_runsc_host_pids(ctx, &t, rec, id, &pids, &err);
	shim_target_done(&t);
	if (r == 0)
		r = hezo_json_dump(pids, false, &out, &len, &err);
	if (r < 0)
		return shim_fail(ctx, err);
	if (hezo_write_all(STDOUT_FILENO, out, len) < 0 ||
	    hezo_write_all(STDOUT_FILENO, "\n", 1) < 0)
		return shim_failf(ctx, "ps: cannot write to stdout");
	return 0;
}

int shim_cmd_features(struct shim_ctx *ctx, const char *verb, int argc, char **argv)
{
	_cleanup_error_ struct hezo_error *err = NULL;
	_cleanup_json_ struct hezo_json *rec = NULL;
	struct shim_target t = {0};
	int r;

	r = shim_resolve(ctx, NULL, &t, &rec, &err);
	if (r < 0) {
		shim_target_done(&t);
		return shim_fail(ctx, err);
	}
	shim_target_done(&t);
	/*
	 * Engines treat a failing `features` as "unknown" and carry on; an answer we made up for
	 * gVisor could claim what it does not do.
	 */
	if (t.backend == HEZO_BACKEND_RUNSC)
		return shim_failf(ctx, "features: runsc has no features command and hezo-shim does "
				       "not describe gVisor's in its place");
	return shim_cmd_passthrough(ctx, verb, argc, argv);
}
