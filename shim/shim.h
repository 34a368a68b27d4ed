/* Shared state and helpers of the hezo-shim program (one file per verb, as crun). */
#ifndef SHIM_H
#define SHIM_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

#include "cli.h"
#include "hezo-error.h"
#include "hezo-json.h"
#include "hezo-policy.h"

struct shim_ctx {
	int argc;
	char **argv;
	struct shim_globals g;
	/* From the build, overridable by the shim's own environment (never by a bundle). */
	const char *policy_path;
	const char *state_dir;
	const char *hook_path;
	const char *proxyd_socket;
	int log_fd; /* --log, opened on first use; -1 until then */
	/* The failure is reported on stderr as well as in --log (see shim_report). */
	bool fail_stderr;
	/* Set on the backend's process before execve (shim_exec, shim_spawn_wait); NULL: none. */
	const struct shim_rlimits *backend_rlimits;
	/* The chosen project's file ("" for none): a refusal by a policy key names it too. */
	char project_file[PATH_MAX];
};

/*
 * verb.c: the opening every verb shares, done once by main.c: the verb's flags parsed by its
 * table, --help handed to the backend, the container ID taken and checked by the verb's rule.
 */
struct shim_verb {
	const char *name; /* "create", "run", ...: as given */
	int argc;
	char **argv; /* the words after the verb: main's array (exec repoints --process in it) */
	struct shim_args args;
	const char *id; /* the first positional, NULL with --help; checked where rules say */
};
#define SHIM_VERB_HELP_PASSES  (1u << 0) /* --help: the backend answers (shim_cmd_passthrough) */
#define SHIM_VERB_NO_ID_PASSES (1u << 1) /* no positional: the backend prints its usage */
#define SHIM_VERB_ONE_ID       (1u << 2) /* exactly one positional */
#define SHIM_VERB_ID	       (1u << 3) /* the ID is checked: missing or bad is an error */
#define SHIM_VERB_STDERR       (1u << 4) /* failures on stderr too (ctx->fail_stderr) */
#define SHIM_VERB_STDIO	       (1u << 5) /* the box may inherit stdio: checked (fds.c) */
/* 0: run the verb; 1: hand the call to shim_cmd_passthrough untouched; -errno and err. */
int shim_verb_open(const char *name, int argc, char **argv, unsigned rules, struct shim_verb *v,
		   struct hezo_error **err);
void shim_verb_done(struct shim_verb *v);
/* fds.c: --preserve-fds other than 0 is refused (the caller's descriptors are not handed on). */
int shim_check_preserved_fds(const struct shim_args *a, struct hezo_error **err);
/*
 * fds.c: whether backend b hands the caller's fds 0-2 to the box as they are for verb (create,
 * run, exec) with args a and the process's terminal: runc only for create, run -d and exec -d
 * without a terminal; runsc (and crun) always.
 */
bool shim_stdio_handed(enum hezo_backend b, const char *verb, const struct shim_args *a,
		       bool terminal);
/*
 * fds.c: stdio is nothing that must not reach the box: never closed, a directory, a host socket
 * or one connected to a named or abstract socket; when handed, only a pipe, a FIFO, /dev/null, a
 * socketpair, or a regular file where files_ok (runsc).
 */
int shim_check_stdio(bool handed, bool files_ok, struct hezo_error **err);
#define _cleanup_verb_ _cleanup_(shim_verb_done)

/* log.c: one line per call, one write(); to --log when given, else stderr. */
void shim_log(struct shim_ctx *ctx, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "hezo-shim: msg" as one log line (JSON or runc's text form), newline included. */
size_t shim_log_line(char *buf, size_t size, enum shim_log_format fmt, const char *level,
		     const char *msg, const struct timespec *when);

bool shim_debug(const struct shim_ctx *ctx);
/*
 * The one report of a failed call: err's message (or "unknown error") as an error line, and on
 * stderr too when ctx->fail_stderr says the caller reads the runtime's output rather than its
 * --log (containerd's update, runc's "does not exist" answers). Returns the exit status, 1.
 */
int shim_report(struct shim_ctx *ctx, const struct hezo_error *err);
/* Remember p's project file for shim_report (a policy key's value may come from it). */
void shim_note_project(struct shim_ctx *ctx, const struct hezo_policy *p);

/* backend.c: where a container's calls go and how they are adapted to that backend. */
struct shim_target {
	enum hezo_backend backend;
	char *path;
	struct hezo_strv args; /* the backend's own global flags: policy's, then adaptation's */
};
void shim_target_done(struct shim_target *t);
#define _cleanup_target_ _cleanup_(shim_target_done)
/* Backend chosen by policy p: checks the binary is there and executable (fail closed). */
int shim_target_from_policy(const struct hezo_policy *p, struct shim_target *t,
			    struct hezo_error **err);
/*
 * Does the backend get --systemd-cgroup on the command line shim_backend_argv builds (the
 * policy's backends.NAME.args, then the caller's global flag; the last one counts)?
 */
bool shim_backend_systemd_cgroup(const struct shim_target *t, const struct shim_globals *g);
/* Global flags as the backend understands them (--hezo-* removed). */
int shim_backend_globals(enum hezo_backend b, const struct shim_globals *g, struct hezo_strv *out,
			 struct hezo_error **err);
/* Is verb one the backend may be handed (runsc: runc's verbs only)? */
bool shim_backend_has_verb(enum hezo_backend b, const char *verb);
/*
 * The state directory a backend (named as a record names it) uses with no --root: runsc's
 * /var/run/runsc, crun's /run/crun, else runc's /run/runc. shim_backend_default_roots: every such
 * directory, by each name it goes by, NULL-terminated.
 */
const char *shim_backend_default_root(const char *backend);
extern const char *const shim_backend_default_roots[];
/* The verb's arguments with the flags this backend does not have removed. */
int shim_backend_verb_args(enum hezo_backend b, const char *verb, int argc, char **argv,
			   struct hezo_strv *out, struct hezo_error **err);
/*
 * runsc-id.c: runsc finds a container by a unique prefix of its ID. *out: the name to hand it for
 * container id instead, which it resolves to that container (under the root it is given) or to
 * none; a marker in the container's private bundle is made for it.
 */
int shim_runsc_name(const struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		    char **out, struct hezo_error **err);
/*
 * For a runsc verb that acts on an existing container, the ID among words[from..] (the verb's
 * arguments) replaced by shim_runsc_name's; more than one ID is refused. Else nothing changes.
 */
int shim_runsc_name_argv(const struct shim_ctx *ctx, const struct shim_target *t, const char *verb,
			 struct hezo_strv *words, size_t from, struct hezo_error **err);
/* [path, target args, globals, verb, verb args]; a runsc ID as shim_runsc_name_argv hands it. */
int shim_backend_argv(const struct shim_ctx *ctx, const struct shim_target *t, const char *verb,
		      int argc, char **argv, struct hezo_strv *out, struct hezo_error **err);

/* record.c: the state directory's name for a --root, and a file name's hash. */
/* Directory name under the state dir for a --root: 16 hex digits of FNV-1a/64, or "default". */
#define SHIM_KEY_LEN 17
void shim_record_key(const char *root, char out[SHIM_KEY_LEN]);
uint64_t shim_fnv1a64(const char *s);

/* record.c: which backend created a container, under STATE_DIR/<root key>/<id>.json. */
int shim_record_write(const struct shim_ctx *ctx, const char *id, const struct hezo_json *rec,
		      struct hezo_error **err);
/* 0 and *out when found, -ENOENT when there is no record; other errors fill err. */
/*
 * --root settled once, before any verb: absolute, cleaned and resolved as the record key is
 * made, and then the very path the backend is handed and the record keeps. Refused: an empty
 * --root (runc would take the working directory), one under /proc (a magic link such as
 * /proc/PID/root resolves as its link text for us and into another mount namespace for the
 * kernel), and one whose existing directories someone other than root could change.
 */
int shim_root_settle(struct shim_globals *g, struct hezo_error **err);
/* The largest record the shim writes, and so the largest every scan reads. */
#define SHIM_RECORD_MAX (1024 * 1024)
/*
 * At create, under the records lock: the settled --root made (0711) where it does not exist yet,
 * and every directory on the way checked again as settle checks it, so that no other user can
 * make or point a part of it after the container was judged.
 */
int shim_root_make(const struct shim_globals *g, struct hezo_error **err);
/*
 * The backend is handed the --root the record was made under (settled then), never the caller's
 * spelling of it now: what the shim checked is what the backend acts on.
 */
int shim_root_from_record(struct shim_ctx *ctx, const struct hezo_json *rec,
			  struct hezo_error **err);
/*
 * An fd holding the exclusive lock on the records (every create checks its ID, and its cgroup
 * against the live boxes', and writes its record under it; close to release), or -errno.
 */
int shim_record_lock(const struct shim_ctx *ctx, struct hezo_error **err);
/* The record's project is the caller's (--hezo-project), or the caller names none; else -EPERM. */
int shim_record_for_caller(const struct shim_ctx *ctx, const char *id, const struct hezo_json *rec,
			   struct hezo_error **err);
/* -ENOENT with runc's answer for an unknown container (on stderr too). */
int shim_record_absent(struct shim_ctx *ctx, const char *id, struct hezo_error **err);
int shim_record_read(const struct shim_ctx *ctx, const char *id, struct hezo_json **out,
		     struct hezo_error **err);
/* Removes the record and the container's private bundle (below). */
int shim_record_remove(const struct shim_ctx *ctx, const char *id);
/* The record's file as an absolute path (the state directory resolved); -errno. */
int shim_record_path(const struct shim_ctx *ctx, const char *id, char *buf, size_t size);
/*
 * The same, under the root's record lock, only while the record is still rec's (the same
 * creator): a create of that ID since the backend deleted the container keeps its own.
 */
int shim_record_remove_same(const struct shim_ctx *ctx, const char *id,
			    const struct hezo_json *rec);
/*
 * The bundle the backend is handed: STATE_DIR/<root key>/.bundles/<id>, mode 0700, of the
 * shim's uid, so nobody who can write the caller's bundle can change what the backend reads
 * after the shim checked it. Opens it and writes its path; -ENOENT when missing and not asked
 * to create it.
 */
#define SHIM_BUNDLE_CREATE 1 /* make it when missing */
#define SHIM_BUNDLE_FRESH  2 /* empty and new (create) */
int shim_bundle_open(const struct shim_ctx *ctx, const char *id, int flags, char *path, size_t size,
		     struct hezo_error **err);
/* Remove bundles whose record is gone (a shim killed between the two). Returns how many. */
int shim_bundle_tidy(const struct shim_ctx *ctx);
/*
 * stage.c: bind the objects held (held.root, held.binds) at the private bundle's mnt/root and
 * mnt/<n>, private and recursive, in the shim's own mount namespace, and point spec's root.path and
 * bind sources there (spec: the backend's copy). stage_verify_root: path (as written) is the
 * directory held, by device and inode. stage_remove: detach and remove mnt/ of a bundle (record.c's
 * removal calls it).
 */
struct shim_userns {
	uint32_t base,
		size; /* host uids (and gids) base .. base+size-1 are the box's 0 .. size-1 */
};
/*
 * u: the box's user namespace (userns_fd, or made now when -1), its root staged at userns_root;
 * *rebuilt: an overlay root staged as a new overlay of its layers (another device and inode).
 */
int shim_stage(int bundle, const char *priv, const struct hezo_held *held,
	       const struct shim_userns *u, int userns_fd, const char *userns_root,
	       struct hezo_json *spec, bool *rebuilt, struct hezo_error **err);
/*
 * userns.c: under runc and crun, every box not joining a user namespace by path gets one of its
 * own. pick: a range no record holds and no host account or subuid/subgid range touches (called
 * with the records lock held); record/of_record: the record's "userns"; make: the namespace with
 * the range mapped and the box's user.max_* limits set, as an fd; spec: point the backend's copy
 * at it (path) with that range as its only uid and gid mapping.
 */
bool shim_userns_wanted(const struct shim_target *t, const struct hezo_json *spec);
/*
 * The machine-wide registry of uid ranges (SHIM_USERNS_REGISTRY, one for every state directory):
 * a file per box holding a range names that box's record, and a range is free when no record named
 * there still holds it for a live box. pick (pick set) chooses a free range into *u, else u is the
 * joined box's range; either way the box's entry is written. On success *lock holds the registry's
 * lock: close it once the record is written (the entry before it names a record nobody can see
 * yet).
 */
#define SHIM_USERNS_REGISTRY "/run/hezo-userns"
int shim_userns_take(const struct shim_ctx *ctx, const char *id, bool pick, struct shim_userns *u,
		     int *lock, struct hezo_error **err);
/* Drop id's entry for u; lock is the registry's held lock, or -1 to take it. */
void shim_userns_drop(const struct shim_ctx *ctx, const char *id, const struct shim_userns *u,
		      int lock);
/* Drop the entry of id's record, if it holds a range (record removal calls it). */
void shim_userns_release(const struct shim_ctx *ctx, const char *id);
int shim_userns_record(struct hezo_json *rec, const struct shim_userns *u);
int shim_userns_of_record(const struct hezo_json *rec, struct shim_userns *out);
int shim_userns_make(const struct shim_userns *u, const char *domain, int *out, int *uts,
		     struct hezo_error **err);
int shim_userns_spec(struct hezo_json *spec, const struct shim_userns *u, const char *path);
/*
 * rlimits.c: a box whose user namespace is its own gets its rlimits from the shim, not the backend
 * (see there). parse: process.rlimits as runc reads it; take: parse and remove from process;
 * apply_self: setrlimit on this process (the backend it becomes or spawns inherits them); fix:
 * set them on pid, the box's init, from inside its namespace, once pid is shown to be of range u.
 */
struct shim_rlimits {
	size_t n;
	struct {
		int res;
		struct rlimit lim;
	} v[32];
};
int shim_rlimits_parse(const struct hezo_json *arr, struct shim_rlimits *out,
		       struct hezo_error **err);
int shim_rlimits_take(struct hezo_json *process, struct shim_rlimits *out, struct hezo_error **err);
int shim_rlimits_apply_self(const struct shim_rlimits *rl);
int shim_rlimits_fix(pid_t pid, const struct shim_userns *u, const struct shim_rlimits *rl,
		     struct hezo_error **err);
/*
 * hostwide.c (runc, crun): nofile: process's RLIMIT_NOFILE lowered so that the policy's pids
 * times it is at most a quarter of fs.file-max (refused when 1024 is already more); bound: that,
 * and io_setup answered ENOSYS in the box's seccomp profile (fs.aio-max-nr is one host count).
 */
int shim_hostwide_nofile(struct hezo_json *process, const struct hezo_policy *p,
			 struct hezo_error **err);
int shim_hostwide_bound(struct hezo_json *spec, const struct hezo_policy *p,
			struct hezo_error **err);
/*
 * plan: what the box gets, from the namespaces it joins by path (held): NONE (not wanted, or one
 * the host's user namespace owns is joined), OWN (a range to pick), or JOIN (the user namespace
 * that owns them all: *join_fd, its range in *join).
 */
enum { SHIM_USERNS_NONE, SHIM_USERNS_OWN, SHIM_USERNS_JOIN };
int shim_userns_plan(const struct shim_target *t, const struct hezo_json *spec,
		     const struct hezo_held *held, int *join_fd, struct shim_userns *join,
		     struct hezo_error **err);
/* Enter a mount namespace of the shim's own (/ made slave), before the checks open anything. */
int shim_stage_namespace(struct hezo_error **err);

/*
 * workspace.c: the project's workspace made (its parent must be root's alone) with .home, owned
 * by process.user, once it is none of another project's workspaces of base's; and judged with
 * what the box is handed: the workspace by every name the mount table gives it, and no handed
 * object overlapping another project's.
 */
struct hezo_mounts;
/*
 * What prepare made, taken away again (empty directories only) when the create is refused after
 * it, unless keep is set: a refused create leaves no workspace owned by its user (ws2, L2).
 */
struct shim_ws_made {
	char dir[PATH_MAX];
	bool store, dir_made, home_made, keep;
};
void shim_workspace_made_undo(struct shim_ws_made *m);
int shim_workspace_prepare(const struct hezo_policy *base, const struct hezo_policy *p,
			   const struct hezo_json *spec, struct shim_ws_made *made,
			   struct hezo_error **err);
int shim_workspace_judge(const struct hezo_policy *base, const struct hezo_policy *p,
			 const struct hezo_held *held, const struct hezo_mounts *mounts,
			 struct hezo_error **err);
/*
 * The HOME create set (policy/workspace.c) kept in the record as {"was", "now"} when it changed
 * the input's; an exec'd process whose HOME is still the image's ("was", what the engine copies
 * into every exec) gets "now" instead. -ENOMEM.
 */
int shim_workspace_record_home(const struct hezo_json *input, const struct hezo_json *spec,
			       struct hezo_json *rec);
int shim_workspace_exec_home(struct hezo_json *proc, const struct hezo_json *rec);
int shim_stage_verify_root(const struct hezo_held *held, const char *path, struct hezo_error **err);
void shim_stage_remove(int bundle);
/*
 * runsc removes a writable root's overlay filestore (ROOT/.gvisor.filestore.ID) at delete by the
 * root.path it was handed, mnt/root, staged only in the create's mount namespace: bind the root the
 * record holds there again, in a mount namespace of this process's own, when it is still the
 * directory the box got (by device and inode). 0 when done or the record holds no root.
 */
int shim_stage_root_again(const struct shim_ctx *ctx, const char *id, const struct hezo_json *rec,
			  struct hezo_error **err);
/* exec's clamped process files in a bundle: exec-<backend pid>.json. */
#define SHIM_EXEC_PREFIX "exec-"
/* Remove the process files whose backend no longer runs. Returns how many. */
int shim_bundle_tidy_execs(int bundle);
int shim_record_target(const struct hezo_json *rec, struct shim_target *t, struct hezo_error **err);
/* The per-container policy again: base + the record's project hint + its annotations. */
int shim_record_policy(const struct shim_ctx *ctx, const struct hezo_json *rec,
		       struct hezo_policy **out, struct hezo_error **err);

/*
 * owner.c: hezo_apply_env.ns_owner for create, data being a shim_owner_query. A process belongs
 * to a container when it is in exactly the cgroup one of the state directory's records names and
 * that container is alive by its backend's state; a container of another project (or, where both
 * name one, pod) than the asking one's is refused with -EPERM.
 */
struct shim_owner_query {
	const struct shim_ctx *ctx;
	const char *project;		     /* the asking container's, NULL if none */
	const struct hezo_json *annotations; /* its config.json's; NULL if none */
	const struct hezo_policy *policy;    /* engine and kubelet roots; NULL: none known */
	const char *bundle;		     /* its bundle directory, resolved; NULL: unknown */
};
int shim_ns_owner(void *data, const char *kind, const char *path, const char *named, char **owner,
		  struct hezo_error **err);
/* Is key one of the pod identity annotations a record keeps (CRI's sandbox-id, -uid, ...)? */
bool shim_pod_key(const char *key);
/*
 * The pod uid of an app container (CRI container-type "container"), from the record of the
 * sandbox its sandbox-id names: a live sandbox of the shim's, of the same project, whose recorded
 * bundle is a live engine task naming that uid (podanchor.c), the pod's kubelet directory there,
 * and this container's own bundle (q->bundle) the engine's task for id beside the sandbox's, under
 * the sandbox's --root. *uid NULL when there is none. Refused: a claimed sandbox-uid that is not
 * the sandbox's; a sandbox (container id) claiming the uid of another live sandbox, the shim's or
 * any live engine sandbox's (another runtime handler's pod); an app container whose sandbox's uid
 * another live engine sandbox claims (the real pod started since).
 */
int shim_pod_uid(const struct shim_owner_query *q, const char *id, char **uid,
		 struct hezo_error **err);

/*
 * podanchor.c: pod sandboxes as the engines show them, in the bundle directories containerd
 * (ROOT/io.containerd.runtime.v2.task/NS/ID) and CRI-O (ROOT/overlay-containers/ID/userdata)
 * write under each engine root, and Docker's containerd: a live task whose config.json is a CRI
 * sandbox's names its pod uid, whatever runtime handler runs it.
 */
struct shim_pod_claims {
	bool self_live; /* self is a live engine sandbox task naming the uid */
	char *other;	/* the first other live sandbox naming it, NULL if none */
	char *where;	/* its bundle directory */
};
/*
 * The live engine sandboxes claiming pod uid: self's own task (container self, and where
 * self_bundle is given, in that very directory), and any other's.
 */
int shim_pod_claims(const char *const *roots, const char *uid, const char *self,
		    const char *self_bundle, struct shim_pod_claims *c, struct hezo_error **err);
void shim_pod_claims_done(struct shim_pod_claims *c);
/*
 * Is bundle (resolved) an engine's own task bundle for container id, as the engines lay them out
 * under each of roots and Docker's containerd: 0 for containerd's
 * ROOT/io.containerd.runtime.v2.task/NS/id (parent: that NS directory), 1 for containers/storage's
 * ROOT/overlay-containers/id/userdata (parent: ROOT/overlay-containers), -1 when it is neither.
 */
int shim_engine_task_bundle(const char *const *roots, const char *bundle, const char *id,
			    char parent[PATH_MAX]);
/*
 * Is KUBELET/pods/UID a directory, made no later than the sandbox's bundle where the filesystems
 * keep birth times? kubelet makes it before it asks for the sandbox: a sandbox made before the
 * pod came to this node is not the pod's.
 */
bool shim_pod_dir_anchors(const char *kubelet_root, const char *uid, const char *bundle);

/*
 * alive.c: is a process, or a backend's container, alive. One reading of /proc and of runc's and
 * runsc's state files for owner.c, engines.c and admission.c.
 */
/* Start time of pid (field 22 of /proc/PID/stat), to tell a live process from a reused PID. */
int shim_proc_start_time(long pid, uint64_t *out);
/* pid runs and started at start. */
bool shim_proc_alive(long pid, uint64_t start);
/*
 * The process's cgroup in the pids hierarchy (the one runc and runsc both place a container in on
 * this cgroup v1 machine), else in the unified one, relative to the hierarchy's root.
 */
int shim_proc_cgroup(long pid, char *buf, size_t size);
/*
 * runc's ROOT/ID/state.json: its init process alive by pid and start time and, when cgroup is
 * given, in exactly that cgroup (then a state without a start time is not alive). 1 alive, 0 not,
 * -ENOENT no state.json to read, -ENOMEM.
 */
int shim_runc_alive(const char *root, const char *id, const char *cgroup);
/*
 * runsc's ROOT/ID_sandbox:ID.state (with pod, also any other ROOT/<sandbox>_sandbox:ID.state, a
 * pod's container): for container id, created or running, its sandbox process alive (cgroup NULL)
 * or in exactly cgroup.
 */
bool shim_runsc_alive(const char *root, const char *id, const char *cgroup, bool pod);

/*
 * engines.c: the storage roots the engines' own configuration names (Docker's data-root from
 * /etc/docker/daemon.json, podman's graphroot from storage.conf), resolved ("" when missing).
 */
void shim_engine_roots(char docker[PATH_MAX], char podman[PATH_MAX]);
/* Is container id alive by the backend's own state under root (runc's state.json, runsc's)? */
bool shim_backend_state_alive(const char *root, const char *id);
/*
 * Does a live container of this ID already run elsewhere: a record of the shim's under another
 * --root, a backend's state (runc, runsc) under an engine's runtime root, a containerd task or a
 * podman container other than the one bundle (resolved; may be NULL) is? *where (malloc'd) says
 * where, NULL when nowhere.
 */
int shim_id_in_use(const struct shim_ctx *ctx, const char *id, const char *bundle, char **where,
		   struct hezo_error **err);

/*
 * Is id a live box of the shim's under another --root? Its registration with proxyd and its
 * agent directory are the ID's alone, so a second box of that ID would take them over: refused.
 */
int shim_id_live_elsewhere(const struct shim_ctx *ctx, const char *id, struct hezo_error **err);

/* ended.c: why a container ended, kept at delete when one of its limits was reached. */
/* The number after "key " in a cgroup file of "key value" lines (-1: absent). */
long long shim_cgroup_counter(const char *text, const char *key);
/* A note (NULL: no limit reached) from the record's cgroup: pids.max refusals, OOM kills. */
int shim_ended_check(const struct hezo_json *rec, struct hezo_json **out);
int shim_ended_write(const struct shim_ctx *ctx, const char *id, struct hezo_json *note,
		     struct hezo_error **err);
/* 0 and *out, or -ENOENT. */
int shim_ended_read(const struct shim_ctx *ctx, const char *id, struct hezo_json **out);
void shim_ended_remove(const struct shim_ctx *ctx, const char *id);

/* run.c: hand over to the backend. */
/* execve argv[0]; returns only on failure (-errno, err filled). */
int shim_exec(struct shim_ctx *ctx, struct hezo_strv *argv, struct hezo_error **err);
/* fork + execve + wait, forwarding SIGTERM/SIGINT/SIGHUP/SIGQUIT; returns the exit status. */
int shim_spawn_wait(struct shim_ctx *ctx, struct hezo_strv *argv, struct hezo_error **err);
/*
 * Run argv with stdin and stderr on /dev/null and collect its stdout (*out NUL-terminated).
 * Returns the exit status (>= 0), or -errno when it could not be run.
 */
int shim_spawn_capture(struct shim_ctx *ctx, struct hezo_strv *argv, char **out, size_t *len,
		       struct hezo_error **err);
/* Resolve the target of a non-create verb for container id (may be NULL: no container). */
int shim_resolve(struct shim_ctx *ctx, const char *id, struct shim_target *t,
		 struct hezo_json **rec, struct hezo_error **err);
/* Target and per-container policy for a container that already exists (exec, update). */
int shim_resolve_policy(struct shim_ctx *ctx, const char *id, struct shim_target *t,
			struct hezo_policy **p, struct hezo_error **err);
int shim_load_policy(const struct shim_ctx *ctx, struct hezo_policy **out, struct hezo_error **err);

/*
 * runsc-pids.c: the pids limit under runsc. Inside the sandbox it is RLIMIT_NPROC (the Sentry
 * refuses a fork past it with EAGAIN); the host cgroup gets base + perTask * limit (+ the policy's
 * backends.runsc.pidsHeadroom) for the Sentry's own tasks, a backstop the workload never reaches.
 */
struct shim_runsc_model {
	const char *platform;
	uint64_t base, per_task;
};
/* YYYYMMDD of `runsc --version` output ("0.0~20240729.0", "release-20240729.0"); 0: unknown. */
uint64_t shim_runsc_release_date(const char *version_output);
/* The model for a release (0: unknown) and a --platform (NULL: the release's default). */
const struct shim_runsc_model *shim_runsc_model_for(uint64_t release, const char *platform);
/* The model for the runsc binary t names (its version cached in the state directory). */
const struct shim_runsc_model *shim_runsc_model_of(struct shim_ctx *ctx,
						   const struct shim_target *t);
uint64_t shim_runsc_host_limit(const struct shim_runsc_model *m, uint64_t tasks, uint64_t extra);
/* process.rlimits gets one RLIMIT_NPROC of at most limit (a lower one from the engine stays). */
int shim_runsc_set_nproc(struct hezo_json *process, int64_t limit, struct hezo_error **err);
/* After policy: RLIMIT_NPROC = the spec's pids limit, which becomes the host backstop. */
int shim_runsc_size_pids(const struct shim_runsc_model *m, const struct hezo_policy *p,
			 struct hezo_json *spec, int64_t *tasks, int64_t *host,
			 struct hezo_error **err);

/*
 * runsc-pod.c: a pod's app container under runsc joins the pod's sandbox. 1 and *sandbox (in
 * spec) for an app container (CRI container-type "container", containerd's or CRI-O's keys,
 * which must agree), 0 for any other container, -errno when it names no sandbox.
 */
int shim_runsc_pod_app(const struct hezo_json *spec, const char **sandbox, struct hezo_error **err);
/*
 * After shim_secrets_prepare, for app container id of runsc pod sandbox: its secrets (*secrets,
 * NULL for none) must be the sandbox's by name, hosts and file, or it is refused (-EPERM, one
 * line saying why); then *secrets and process.env take the sandbox's placeholders.
 */
int shim_runsc_pod_secrets(const struct shim_ctx *ctx, const char *id, const char *sandbox,
			   struct hezo_json *spec, struct hezo_json **secrets,
			   struct hezo_error **err);
/*
 * A runsc pod's shared PID namespace (CRI pid POD): containerd names the sandbox's
 * /proc/PID/ns/pid, the runsc-sandbox process's, which is in the host's PID namespace. runsc
 * joins no host namespace for an app container: it reads the path as a name and puts the
 * container in the sandbox's PID namespace of the Sentry. The path must be exactly the pod's
 * sandbox's (else -EPERM); it is taken out of spec and input (the policy would judge it as the
 * host's namespace) into *path (NULL: none), for the backend's copy alone.
 */
int shim_runsc_pod_pidns(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
			 const char *sandbox, struct hezo_json *spec, struct hezo_json *input,
			 char **path, struct hezo_error **err);
/*
 * A runsc pod's sandbox on a cgroup v1 host: runsc leaves it in its caller's cgroup v2 (often
 * the root, shared with the host), where proxyd reads whose a socket is. 1 and dir: the unified
 * cgroup of its own, as runc gives a container (cgroupsPath under /sys/fs/cgroup/unified); 0:
 * none is made (another container, a cgroup v2 host, systemd's cgroup names).
 */
int shim_runsc_pod_unified(const struct hezo_json *spec, bool systemd, char dir[PATH_MAX],
			   struct hezo_error **err);
/* Make dir and move this process there (runsc create's sandbox is born in it); home: whence. */
int shim_runsc_pod_cgroup_enter(const char *dir, char home[PATH_MAX], struct hezo_error **err);
/* Back to home (cgroup.procs of the cgroup this process left). */
void shim_runsc_pod_cgroup_leave(const char *home);
/* The unified cgroup rec names (its "unifiedCgroup") goes, once its sandbox has. */
void shim_runsc_pod_cgroup_remove(struct shim_ctx *ctx, const char *id,
				  const struct hezo_json *rec);
/*
 * A runsc pod app container's org.hezo.memory, .pids or .cpus annotation: refused, naming it (its
 * limits are its sandbox's, the pod's).
 */
int shim_runsc_pod_own_limits(const struct hezo_json *spec, const char *id, const char *sandbox,
			      struct hezo_error **err);
/*
 * The record of the sandbox whose limits hold for rec's container: 1 and *srec for a runsc pod's
 * app container whose sandbox has a record, else 0.
 */
int shim_runsc_pod_sandbox_record(const struct shim_ctx *ctx, const struct hezo_json *rec,
				  struct hezo_json **srec);
/* The waiter's host path: $HEZO_POD_WAIT, next to the shim, or ../libexec/hezo/. */
int shim_runsc_waiter_helper(char *buf, size_t size);
/*
 * After runsc created app container id in sandbox: start its waiter (hezo-pod-wait), the host
 * process containerd's shim reaps for it, in the sandbox's memory cgroup and in this process's
 * mount namespace (the staged mounts), and write its pid to pid_file. *waiter: its pid.
 */
int shim_runsc_waiter_start(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
			    const char *sandbox, const char *pid_file, long *waiter,
			    struct hezo_error **err);
/*
 * Before runsc starts app container id: enter its waiter's mount namespace, where its staged
 * root and binds are (runsc starts the container's gofer then), and open the container's stdio
 * as create got it into stdio[0..2] (runsc gives the container start's). 0: id has no waiter;
 * 1: entered.
 */
int shim_runsc_waiter_enter(const struct shim_ctx *ctx, const char *id, int stdio[3],
			    struct hezo_error **err);
/*
 * Tell id's waiter, if it has one still waiting: 'S' started, 'D' deleted (it exits 137), 'K'
 * killed while it cannot run (exits 137 if never started, else ignored: runsc wait reports).
 */
void shim_runsc_waiter_tell(const struct shim_ctx *ctx, const char *id, char what);
/* Is pid listed in dir/cgroup.procs? 1 yes, 0 no, -errno. */
int shim_cgroup_holds(const char *dir, long pid, struct hezo_error **err);
/*
 * owner.c: may app container id join the runsc sandbox it names: a live sandbox of the shim's
 * under the same --root and backend, of the same project and pod, whose engine task is beside
 * this container's (the bundle containerd made for it)? Else refused with the reason.
 */
int shim_runsc_pod_join(const struct shim_owner_query *q, const char *id, const char *sandbox,
			struct hezo_error **err);

/* After policy: host-network guard. */
int shim_runsc_check_spec(const struct hezo_policy *p, const struct hezo_json *spec,
			  struct hezo_error **err);
/*
 * Host directory of controller for an OCI cgroupsPath as the backend's driver read it (cgroup v1
 * layout, root/controller/path): with systemd (--systemd-cgroup) the form "slice:prefix:name",
 * without it an absolute path. -EINVAL for the other form, relative paths or "..", -ENOENT for
 * none.
 */
int shim_cgroup_dir(const char *root, const char *cgroups_path, bool systemd,
		    const char *controller, char *buf, size_t size);
/* The integer in cgroup file dir/file (-EIO: unreadable, -EINVAL: not a number). */
int shim_cgroup_read_int(const char *dir, const char *file, int64_t *out);
/* Cap the box's TCP socket buffers (cgroup v1 memory dir) at a quarter of memory_limit. */
int shim_tcp_cap(const char *memdir, int64_t memory_limit, struct hezo_error **err);
/*
 * After an update: the TCP cap follows the memory limit the cgroup holds now, where create set
 * one (a cgroup without the file or never capped is left alone).
 */
int shim_tcp_follow(const char *memdir, struct hezo_error **err);
/* Write a clamped LinuxResources object into the cgroup v1 files under root. */
int shim_cgroup_update_v1(const char *root, const char *cgpath, bool systemd,
			  const struct hezo_json *res, struct hezo_error **err);
/* runsc state: status ("created", "running", "stopped", ...) and sandbox pid; -ENOENT: none. */
int shim_runsc_state(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		     char **status, long *pid, struct hezo_error **err);
/* runsc delete --force, quietly: kills the sandbox and gofer and removes runsc's state. */
int shim_runsc_destroy(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		       struct hezo_error **err);
/* JSON array of the container's host PIDs (its cgroup's processes, or the sandbox's pid). */
int shim_runsc_host_pids(struct shim_ctx *ctx, const struct shim_target *t,
			 const struct hezo_json *rec, const char *id, struct hezo_json **out,
			 struct hezo_error **err);
/* Before policy: an update's request runsc can honour (pids.limit cannot change). */
int shim_runsc_check_update(const struct hezo_json *req, const char *id, struct hezo_error **err);
/* update by writing the sandbox's cgroup files (runsc has no update command). */
int shim_runsc_update(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
		      const struct hezo_policy *p, const struct hezo_json *res,
		      struct hezo_error **err);

/*
 * runsc's exec starts processes without the container's seccomp profile: a static helper,
 * bind-mounted here, installs it (compiled to BPF at create) before it execs the command.
 */
#define SHIM_SECCOMP_EXEC_DEST "/dev/.hezo-seccomp-exec"
/* bpf.c: an OCI linux.seccomp object as a BPF program in hex (16 digits per instruction). */
int shim_seccomp_bpf(const struct hezo_json *seccomp, char **hex, struct hezo_error **err);
/* The helper's host path: $HEZO_SECCOMP_EXEC, next to the shim, or ../libexec/hezo/. */
int shim_runsc_exec_helper(char *buf, size_t size);
/*
 * A static helper of ours (the runsc exec helper, hezo-init): the absolute path in environment
 * variable env_name when set, else the first of rel (NULL-terminated, relative to the shim's own
 * directory) that is an executable regular file, resolved into buf. -ENOENT when none is.
 */
int shim_find_helper(const char *env_name, const char *const *rel, char *buf, size_t size);
/* Is there a tmpfs on /dev among mounts (where a helper's mount point can be made)? */
bool shim_has_dev_tmpfs(const struct hezo_json *mounts);
/* Append to mounts a read-only bind (rbind,ro,nosuid,nodev) of helper at dest. */
int shim_mount_helper(struct hezo_json *mounts, const char *dest, const char *helper,
		      struct hezo_error **err);
/* At create: compile the spec's profile (*hex, NULL without one) and mount the helper. */
int shim_runsc_prepare_exec(struct hezo_json *spec, char **hex, struct hezo_error **err);
/*
 * runsc-seccomp.c: runsc's OCI converter answers every SCMP_ACT_ERRNO with EPERM, ignoring
 * errnoRet, and glibc only falls back from clone3 to clone on ENOSYS. When no process in the
 * container can become a tracer (ptrace denied), ERRNO(ENOSYS) rules and default become
 * SCMP_ACT_TRACE, which the Sentry answers with ENOSYS without a tracer. *rewritten: how many.
 * Call after shim_runsc_prepare_exec: the exec filter is compiled from the profile as given.
 */
int shim_runsc_seccomp_enosys(struct hezo_json *spec, unsigned *rewritten, struct hezo_error **err);
/* At exec: [helper, hex, "--"] from the record, or a refusal when it has none. */
int shim_runsc_exec_prefix(const struct hezo_json *rec, const char *id, struct hezo_strv *out,
			   struct hezo_error **err);

/*
 * init.c: hezo-init as PID 1 (policy "init"), bind-mounted here and put in front of
 * process.args at create.
 */
#define SHIM_INIT_DEST "/dev/.hezo-init"
/* The binary's host path: $HEZO_INIT, next to the shim, the build tree, or ../libexec/hezo/. */
int shim_init_helper(char *buf, size_t size);
/* Why no hezo-init goes in ("off", "sandbox", "engine", "no-args"), or NULL when it does. */
const char *shim_init_skip_reason(const struct hezo_policy *p, const struct hezo_json *spec);
/* Put it in: *how says what the box got ("hezo", or a skip reason). */
int shim_init_prepare(const struct hezo_policy *p, struct hezo_json *spec, const char **how,
		      struct hezo_error **err);

/*
 * secrets.c (docs/policy.md, "Secrets"): at create, each secret file checked (regular, root's,
 * no group or other bits, not empty; never read), a placeholder made per secret and NAME=it put
 * into process.env, proxyd's CA bundle mounted (refused when it is missing); *out gets the wire
 * form {NAME: {hosts, file, otherHosts, placeholder}} for the record and the hook (NULL: no
 * secrets).
 */
int shim_secrets_prepare(const struct shim_ctx *ctx, const struct hezo_policy *p,
			 struct hezo_json *spec, struct hezo_json **out, struct hezo_error **err);
/*
 * Where proxyd's CA bundle (host roots and its CA) is mounted read-only in a container with
 * secrets, and what SSL_CERT_FILE, CURL_CA_BUNDLE, GIT_SSL_CAINFO... are set to.
 */
#define SHIM_CA_BUNDLE_DEST "/etc/ssl/certs/ca-certificates.crt"
/*
 * NAME=placeholder into a process object's env for each secret, replacing any NAME=, and the
 * CA variables (none of it without secrets). -errno.
 */
int shim_secrets_set_env(struct hezo_json *process, const struct hezo_json *secrets);
/* name=value into a process's env array, replacing every name= before it. -errno. */
int shim_env_put(struct hezo_json *env, const char *name, const char *value);
/* A secret's or key's file opened when it is regular, root's, not empty and without group or
 * other bits: its fd, or -errno with an error naming what ("secret", "key") and name. */
int shim_root_file_open(const char *what, const char *name, const char *path,
			struct hezo_error **err);

/*
 * keys.c (docs/policy.md, "Keys"): at create, each key file checked as a secret's and parsed for
 * its public half (the private one is wiped at once), the agent's directory made and bind-mounted
 * at SHIM_AGENT_DEST, SSH_AUTH_SOCK and git's signing configuration put into process.env; *out
 * gets the wire form {NAME: {file, sign, ssh, public}} for the record and the hook (NULL: none).
 */
#define SHIM_AGENT_DEST "/run/hezo-agent"
#define SHIM_AGENT_SOCK SHIM_AGENT_DEST "/agent.sock"
int shim_keys_prepare(const struct shim_ctx *ctx, const struct hezo_policy *p, const char *id,
		      struct hezo_json *spec, struct hezo_json **out, struct hezo_error **err);
/* SSH_AUTH_SOCK and git's GIT_CONFIG_* for the keys' wire form into a process's env. -errno. */
int shim_keys_set_env(struct hezo_json *process, const struct hezo_json *keys);
/* The agent's directory of container id removed (its socket first), if there is one. */
void shim_keys_remove(const struct shim_ctx *ctx, const char *id);

/* {NAME: {hosts}}: what `hezo-shim inspect` shows. NULL: out of memory. */
struct hezo_json *shim_secrets_public(const struct hezo_json *secrets);

/*
 * admission.c: at most admission.maxActive live boxes, the rest waiting in a FIFO queue under
 * STATE_DIR/admission-queue, decided under a flock on STATE_DIR/admission.lock.
 */
/* The host cgroup directory of controller for a record's cgroupsPath (v1, else unified). */
int shim_record_cgroup(const struct hezo_json *rec, const char *controller, char *buf, size_t size);
/* Was the record's backend handed --systemd-cgroup at create ("systemdCgroup")? */
bool shim_record_systemd(const struct hezo_json *rec);
/*
 * The cgroups of the records with their IDs, the one of (this --root, id) excepted: a
 * container's own earlier leaf is its own. Whether each lives is shim_live_cgroup's to say,
 * when asked (hezo_apply_env.cgroup_live). *out and *n: free with shim_live_cgroups_free.
 */
int shim_live_cgroups(const struct shim_ctx *ctx, const char *id, struct hezo_live_cgroup **out,
		      size_t *n);
/* Is the container of an entry shim_live_cgroups gave alive (shim_record_live), now? */
bool shim_live_cgroup(const struct hezo_live_cgroup *l);
void shim_live_cgroups_free(struct hezo_live_cgroup *v, size_t n);
/* Is the record's container live: its create still running, or its cgroup holding a process? */
bool shim_record_live(const struct hezo_json *rec);
/*
 * Call fn for every record of every --root under the state directory; a record handed to fn
 * stays until the process ends.
 */
int shim_records_foreach(const struct shim_ctx *ctx,
			 int (*fn)(void *data, const char *key, struct hezo_json *rec), void *data);
/*
 * The same, where fn reads of a record only "id", "root", "backend", "cgroupsPath",
 * "systemdCgroup", "handed", "admission", "creator" and "waiter" (what shim_record_live reads
 * is among them): a record the state directory's index holds as its file is now is handed as
 * those keys alone, unparsed.
 */
int shim_records_foreach_brief(const struct shim_ctx *ctx,
			       int (*fn)(void *data, const char *key, struct hezo_json *rec),
			       void *data);
/* Write the index of the records anew if a walk found it behind; under the records lock. */
int shim_records_index_save(const struct shim_ctx *ctx);
/* Drop the index's line of record file KEY/NAME, once the file is gone; under the records lock. */
int shim_records_index_forget(const struct shim_ctx *ctx, const char *key, const char *name);
/* Live records, the one of (this --root, id) excepted (id may be NULL). */
int shim_admission_count(const struct shim_ctx *ctx, const char *id, unsigned *active);
/* Creates waiting for a slot now. */
int shim_admission_queue_length(const struct shim_ctx *ctx, unsigned *waiting);
/* The limit for a box of this spec (0: none) and how it was reached, for messages. */
int shim_admission_limit(const struct hezo_policy *p, const struct hezo_json *spec, uint64_t *limit,
			 char *how, size_t size);
/*
 * Wait for a slot (or refuse past admission.wait) and note the admission in rec. On success
 * *lock_fd (or -1: no limit) holds the lock: write the record, then exec, which releases it.
 */
int shim_admission_enter(const struct shim_ctx *ctx, const struct hezo_policy *p,
			 const struct hezo_json *spec, const char *id, struct hezo_json *rec,
			 int *lock_fd, struct hezo_error **err);
/* project.c: `hezo-shim project`, with the live boxes of a project from the records. */
int shim_cmd_project(struct shim_ctx *ctx, int argc, char **argv);
/* record.c: the state directory's key for a --root (as records are filed). */
void shim_record_key_for_root(const char *root, char key[SHIM_KEY_LEN]);

/* lifecycle.c: kill's signal is SIGKILL in one of the forms runc takes (9, KILL, SIGKILL). */
bool shim_signal_is_kill(const char *sig);

/* update-flags.c: runc update's flags (the words after the verb, parsed by its table). */
/* runc's memory values (go-units RAMInBytes: "512m", "1.5g", "1024", "2GiB"), or "-1". */
int shim_parse_size(const char *s, int64_t *out);

/*
 * Turn runc update's flag form into one OCI LinuxResources object. *out is NULL when no
 * resource flag was given. Errors name the flag.
 */
int shim_update_flags_to_json(const struct shim_args *a, struct hezo_json **out,
			      struct hezo_error **err);
/* Is name one of update's resource flags (converted into the JSON)? */
bool shim_update_is_resource_flag(const char *name);

/* update's arguments for the backend: "--resources -" and the words that are not resources. */
int shim_update_backend_args(const struct shim_args *a, char **argv, struct hezo_strv *out);

/* exec.c: the exec filter. */
/* "net_admin" and "CAP_NET_ADMIN" name the same capability for runc: the canonical form. */
void shim_cap_name(const char *v, char *buf, size_t size);

/*
 * exec's arguments for the backend: --cap values cap_ok refuses are taken out, and an explicit
 * --no-new-privs=false (which would override the spec's true) is dropped. Every other word is
 * kept as given. *dropped counts the removed --cap values.
 */
int shim_exec_filter(const struct shim_args *a, char **argv,
		     bool (*cap_ok)(const char *cap, void *data), void *data, struct hezo_strv *out,
		     size_t *dropped);

/*
 * Verb handlers, after the opening (v). Return the exit status (0, or the backend's), or -errno
 * with err filled, which main.c reports once.
 */
int shim_cmd_create(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);
int shim_cmd_exec(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);
int shim_cmd_update(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);
int shim_cmd_delete(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);
int shim_cmd_start(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);
int shim_cmd_kill(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);
int shim_cmd_state(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);
int shim_cmd_ps(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);
/* ps.c: `hezo-shim ps [--json]`, every live box (records, cgroups, proxyd's stats). */
enum shim_ps_form { SHIM_PS_TABLE, SHIM_PS_JSON, SHIM_PS_QUIET };
/* ps.c: {"admission": {...}, "boxes": [...]} of every live box the caller may see. */
int shim_ps_collect(struct shim_ctx *ctx, struct hezo_json **out, struct hezo_error **err);
/* ps.c: a byte count in at most 5 characters (980K, 9.5M, 300M, 1.5G), "-", or "max". */
void shim_human_bytes(char *buf, size_t size, const struct hezo_json *v);
/* stats.c: `hezo-shim stats`, a live view of every box (docs/metrics.md). */
int shim_cmd_stats(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);
int shim_cmd_ps_all(struct shim_ctx *ctx, enum shim_ps_form form, bool no_trunc,
		    struct hezo_error **err);
/* doc and a newline on stdout ("ps: cannot write to stdout" when it cannot be). */
int shim_ps_print_json(const struct hezo_json *doc, struct hezo_error **err);
int shim_cmd_features(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);
/*
 * Answer for a container nobody recorded when no backend can be chosen (see passthrough.c);
 * *err holds why no backend could be, and is replaced by the answer where there is one.
 */
int shim_cmd_unrecorded(struct shim_ctx *ctx, const struct shim_verb *v, bool force,
			struct hezo_error **err);
int shim_cmd_passthrough(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);
int shim_cmd_inspect(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);
/* list.c: the backends' list, of this --root's recorded containers of the caller's project. */
int shim_cmd_list(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err);

#endif
