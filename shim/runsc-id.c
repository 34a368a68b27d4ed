/*
 * The name runsc is handed for a container that exists: one it can resolve to that container or
 * to none, never to another whose ID begins with this one's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hezo-file.h"
#include "shim.h"

/*
 * runsc (runsc/container/state_file.go, findContainerID) finds a container by globbing
 * Join(ROOT, NAME + "*_sandbox:*.state") and takes a single match, so a bare ID reaches any
 * container whose ID it begins once its own state file is gone: a check of the ID beforehand
 * races with that file's removal (runsc run removes it itself, under no lock of ours). But the
 * match only names the container: runsc then loads ROOT/ID_sandbox:SB.state by the ID and
 * sandbox the file name spells. Handed "../../STATE/KEY/.bundles/ID/ID", it globs the container's
 * private bundle, where the one name that can match is our marker ID_sandbox:ID.state, and reads
 * that container's state file under ROOT or fails: no prefix of anything is looked up there.
 */
static bool loads_container(const char *verb)
{
	static const char *const verbs[] = {"start",  "exec",	"ps",	"pause", "resume",
					    "events", "delete", "kill", "state", "checkpoint"};

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(verbs); i++)
		if (strcmp(verb, verbs[i]) == 0)
			return true;
	return false;
}

/* Components a path could have (an upper bound: every '/' may start one). */
static size_t max_depth(const char *s)
{
	size_t n = 1;

	for (; s && *s; s++)
		n += *s == '/';
	return n;
}

/*
 * Enough ".." to climb from any --root runsc could be using to "/": the settled root, runsc's
 * default and every word of the policy's flags (a --root there); a spare ".." at "/" stays "/".
 */
static size_t climb(const struct shim_ctx *ctx, const struct shim_target *t)
{
	size_t n = max_depth(shim_backend_default_root("runsc"));

	if (ctx->g.root && max_depth(ctx->g.root) > n)
		n = max_depth(ctx->g.root);
	for (size_t i = 0; i < t->args.n; i++)
		if (max_depth(t->args.v[i]) > n)
			n = max_depth(t->args.v[i]);
	return n;
}

int shim_runsc_name(const struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		    char **out, struct hezo_error **err)
{
	_cleanup_close_ int pfd = -1, mfd = -1;
	char priv[PATH_MAX], marker[2 * SHIM_ID_MAX + 32];
	size_t ups, len, o = 0;
	char *s;

	*out = NULL;
	if (!hezo_id_valid(id))
		return hezo_error_set(err, EINVAL, "invalid container id \"%s\"", id);
	/*
	 * runsc takes the lock file of the name it resolved before it finds the state file missing,
	 * and leaves it: a container that is gone is answered here. (No check: runsc's own load
	 * below decides.) The shim makes no runsc container in another's sandbox (pod app
	 * containers are refused), so the sandbox's ID is the container's.
	 */
	snprintf(marker, sizeof(marker), "%s_sandbox:%s.state", id, id);
	if ((size_t)snprintf(priv, sizeof(priv), "%s/%s",
			     ctx->g.root ?: shim_backend_default_root("runsc"),
			     marker) >= sizeof(priv))
		return hezo_error_set(err, ENAMETOOLONG, "container %s: --root too long", id);
	if (access(priv, F_OK) < 0 && errno == ENOENT)
		return hezo_error_set(err, ENOENT, "container \"%s\" does not exist", id);
	pfd = shim_bundle_open(ctx, id, SHIM_BUNDLE_CREATE, priv, sizeof(priv), err);
	if (pfd < 0)
		return hezo_error_prefix(err, "container %s: runsc's name for it", id);
	/* runsc reads the path as a glob pattern: it must name only itself. */
	if (priv[0] != '/' || strpbrk(priv, "*?[\\"))
		return hezo_error_set(err, EINVAL,
				      "container %s: state directory %s must be an absolute path "
				      "without *, ?, [ or \\ (runsc reads it as a pattern)",
				      id, ctx->state_dir);
	mfd = openat(pfd, marker, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (mfd < 0)
		return hezo_error_set_errno(err, errno, "container %s: %s/%s", id, priv, marker);
	ups = climb(ctx, t);
	len = 3 * ups + strlen(priv) + 1 + strlen(id) + 1;
	s = malloc(len);
	if (!s)
		return hezo_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < ups; i++, o += 3)
		memcpy(s + o, "../", 3);
	snprintf(s + o, len - o, "%s/%s", priv + 1, id);
	*out = s;
	return 0;
}

int shim_runsc_name_argv(const struct shim_ctx *ctx, const struct shim_target *t, const char *verb,
			 struct hezo_strv *words, size_t from, struct hezo_error **err)
{
	_cleanup_args_ struct shim_args a = {0};
	_cleanup_free_ char *name = NULL;
	size_t at;
	int r;

	if (t->backend != HEZO_BACKEND_RUNSC || !loads_container(verb))
		return 0;
	r = shim_parse_args(shim_verb_spec(verb), (int)(words->n - from), words->v + from, &a, err);
	if (r < 0)
		return r;
	if (a.help || a.npos == 0)
		return 0;
	/* The shim checks one container per call: a second would reach runsc as it was typed. */
	if (a.npos > 1 && !shim_verb_spec(verb)->stop_at_positional && strcmp(verb, "kill") != 0)
		return hezo_error_set(err, EINVAL, "%s: expected exactly one container ID, got %zu",
				      verb, a.npos);
	at = from + (size_t)a.positional;
	r = shim_runsc_name(ctx, t, words->v[at], &name, err);
	if (r < 0)
		return r;
	free(words->v[at]);
	words->v[at] = TAKE_PTR(name);
	return 0;
}
