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
#include <sys/stat.h>
#include <unistd.h>

#include "hezo-file.h"
#include "hezo-spec.h"
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

/* Owned by root (or the uid runsc runs as, ours) and written by no one else. */
static bool trusted(const struct stat *st)
{
	return (st->st_uid == 0 || st->st_uid == geteuid()) && !(st->st_mode & 022);
}

/*
 * runsc trusts whatever file is at ROOT/ID_sandbox:ID.state: the sandbox's pid and control socket
 * it names are where exec, kill and pause go. So the file must be runsc's own: a regular file
 * (a symlink to another container's state would be followed), in a root and with an owner and
 * mode only root could have made, naming this container and its sandbox (a copy of another
 * container's file would not). -ENOENT when there is none: the container does not exist.
 */
static int state_file_check(const char *root, const char *id, const char *sandbox,
			    const char *marker, struct hezo_error **err)
{
	_cleanup_close_ int rfd = -1, fd = -1;
	_cleanup_json_ struct hezo_json *st_json = NULL;
	_cleanup_free_ char *buf = NULL;
	const char *fid, *sid;
	struct stat st;
	size_t len;
	int r;

	rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd >= 0)
		fd = openat(rfd, marker, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (rfd < 0 || fd < 0) {
		if (errno == ENOENT)
			return hezo_error_set(err, ENOENT, "container \"%s\" does not exist", id);
		if (errno == ELOOP)
			return hezo_error_set(
				err, EPERM,
				"container %s: %s/%s is a symlink, not runsc's state file", id,
				root, marker);
		return hezo_error_set_errno(err, errno, "container %s: runsc's state file %s/%s",
					    id, root, marker);
	}
	if (fstat(rfd, &st) < 0)
		return hezo_error_set_errno(err, errno, "container %s: --root %s", id, root);
	if (!trusted(&st))
		return hezo_error_set(err, EPERM,
				      "container %s: runsc's root %s is owned by uid %u with mode "
				      "%04o: another user could have made its state file",
				      id, root, (unsigned)st.st_uid,
				      (unsigned)(st.st_mode & 07777));
	if (fstat(fd, &st) < 0)
		return hezo_error_set_errno(err, errno, "container %s: %s/%s", id, root, marker);
	if (!S_ISREG(st.st_mode) || !trusted(&st))
		return hezo_error_set(err, EPERM,
				      "container %s: %s/%s is not runsc's state file (%s, uid %u, "
				      "mode %04o)",
				      id, root, marker,
				      S_ISREG(st.st_mode) ? "regular" : "not regular",
				      (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	r = hezo_read_fd(fd, HEZO_SPEC_MAX_SIZE + SHIM_RECORD_MAX, &buf, &len, err);
	r = r ?: hezo_json_parse(buf, len, &st_json, err);
	if (r < 0)
		return hezo_error_prefix(err, "container %s: runsc's state file %s/%s", id, root,
					 marker);
	fid = hezo_json_string(hezo_json_get(st_json, "id"));
	sid = hezo_json_string(hezo_json_get(hezo_json_get(st_json, "sandbox"), "id"));
	if (!fid || !sid || strcmp(fid, id) != 0 || strcmp(sid, sandbox) != 0)
		return hezo_error_set(err, EPERM,
				      "container %s: %s/%s names another container, not this one",
				      id, root, marker);
	return 0;
}

int shim_runsc_name(const struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		    char **out, struct hezo_error **err)
{
	_cleanup_close_ int pfd = -1, mfd = -1;
	_cleanup_json_ struct hezo_json *rec = NULL;
	char priv[PATH_MAX], marker[2 * SHIM_ID_MAX + 32];
	const char *sandbox = id;
	size_t ups, len, o = 0;
	char *s;
	int r;

	*out = NULL;
	if (!hezo_id_valid(id))
		return hezo_error_set(err, EINVAL, "invalid container id \"%s\"", id);
	/*
	 * A pod's app container lives in its pod's sandbox (ROOT/ID_sandbox:SANDBOX.state), which
	 * the shim's record of it names, as judged at create (runsc-pod.c); any other container is
	 * its own sandbox.
	 */
	if (shim_record_read(ctx, id, &rec, NULL) == 0 &&
	    shim_runsc_pod_app(rec, &sandbox, NULL) <= 0)
		sandbox = id;
	if (!hezo_id_valid(sandbox))
		return hezo_error_set(err, EINVAL, "container %s: invalid sandbox id \"%s\"", id,
				      sandbox);
	/*
	 * runsc takes the lock file of the name it resolved before it finds the state file missing,
	 * and leaves it: a container that is gone is answered here, and a file that is not runsc's
	 * own is refused before runsc could load it.
	 */
	snprintf(marker, sizeof(marker), "%s_sandbox:%s.state", id, sandbox);
	r = state_file_check(ctx->g.root ?: shim_backend_default_root("runsc"), id, sandbox, marker,
			     err);
	if (r < 0)
		return r;
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
