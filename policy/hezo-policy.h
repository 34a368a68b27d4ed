/*
 * The admin's policy: parsed from /etc/hezo/policy.json (docs/policy.md), narrowed per container
 * by its project file and annotations, and applied to config.json, exec process JSON and update
 * resource JSON. Pure functions of their inputs except where a path is read (load, project file,
 * seccomp profile, mount source resolution).
 */
#ifndef HEZO_POLICY_H
#define HEZO_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "hezo-egress.h" /* enum hezo_egress_mode: part of the egress JSON form */
#include "hezo-error.h"
#include "hezo-json.h"

enum hezo_backend {
	HEZO_BACKEND_RUNSC,
	HEZO_BACKEND_RUNC,
	HEZO_BACKEND_CRUN,
	HEZO_BACKEND_COUNT,
};

enum hezo_runsc_network {
	HEZO_RUNSC_NET_HOST,
	HEZO_RUNSC_NET_NONE,
	HEZO_RUNSC_NET_SANDBOX,
};

struct hezo_policy; /* opaque */

void hezo_policy_free(struct hezo_policy *p);
static inline void hezo_policy_freep(struct hezo_policy **p)
{
	hezo_policy_free(*p);
}
#define _cleanup_policy_ _cleanup_(hezo_policy_freep)

/* Parse and validate a policy document; name is used in messages only. Pure: fuzzable. */
int hezo_policy_parse(const char *buf, size_t len, const char *name, struct hezo_policy **out,
		      struct hezo_error **err);
/*
 * Validate a policy document without stopping at the first bad field: *msgs gets one line per
 * field error ("policy NAME: field: reason"; free each and the array). Returns 0 when the document
 * is a valid policy, else a negative errno with err holding the first error (a JSON syntax error,
 * a cross-field rule or an unreadable seccomp profile appear only there).
 */
int hezo_policy_check(const char *buf, size_t len, const char *name, char ***msgs, size_t *nmsgs,
		      struct hezo_error **err);
/* Read and parse path. Errors read "policy PATH: field: reason". */
int hezo_policy_load(const char *path, struct hezo_policy **out, struct hezo_error **err);

/*
 * Narrow base for one container: choose its project (annotation org.hezo.project, then
 * project_hint from --hezo-project, then the Kubernetes namespace annotation), layer the project
 * file over base, then apply the tightening org.hezo.* annotations. annotations may be NULL.
 * Any loosening attempt or unknown org.hezo.* annotation fails naming it.
 */
int hezo_policy_for_container(const struct hezo_policy *base, const struct hezo_json *annotations,
			      const char *project_hint, struct hezo_policy **out,
			      struct hezo_error **err);

/* A project name: 1 to 64 of [a-z0-9._-], not starting with '.'. */
bool hezo_policy_project_name_valid(const char *s);
/* Does a seccomp action (an OCI name) keep the call from running? A tracer or listener could let
 * it run, so TRACE and NOTIFY do not. */
bool hezo_policy_seccomp_refuses(const char *action);

/*
 * A project file's text (read from path, which names it in messages) layered over base as the
 * project's containers get it: the same checks hezo_policy_for_container makes of
 * projectsDir/project.json, for `policy check --project` and `project create` before a file is
 * written.
 */
int hezo_policy_layer_project(const struct hezo_policy *base, const char *project, const char *path,
			      const char *buf, size_t len, struct hezo_policy **out,
			      struct hezo_error **err);

/*
 * fn with base, then with each project's policy as its containers get it (every NAME.json in
 * projectsDir layered over base; for a file that does not layer but is JSON, base with the file's
 * own mounts.allowedSources and engineRoots, its name and workspace added: its earlier boxes may
 * hold them). Stops when fn returns non-zero, and returns that; -errno when projectsDir cannot be
 * read (a missing one has no projects); -EBADMSG, after every other file, when a project file
 * cannot be read or is not JSON.
 */
int hezo_policy_foreach_project(const struct hezo_policy *base,
				int (*fn)(const struct hezo_policy *p, void *data), void *data);
/*
 * Why foreach_project returned r < 0, into why: -EBADMSG (a project file that cannot be read or is
 * not JSON, so what its boxes hold is unknown: every caller refuses) names that file.
 */
int hezo_policy_projects_why(const struct hezo_policy *base, int r, char *why, size_t size);

/*
 * A path apply judged, and the object it named then, held open: the backend would look the path
 * up again (following symlinks), so the caller hands it this very object instead (shim/stage.c).
 */
struct hezo_held_path {
	char *path; /* as written into config.json: resolved, absolute */
	int fd;	    /* O_PATH, opened without following any symlink on any component */
	uint64_t dev, ino;
	bool dir;
};
struct hezo_held {
	struct hezo_held_path root;   /* root.path; fd -1 until held */
	struct hezo_held_path *binds; /* every bind source that passed, one per distinct path */
	size_t nbinds;
	/*
	 * Every linux.namespaces[].path that names another container's namespace (or one the engine
	 * made), opened when checked: /proc/PID/ns/KIND would name another process's namespace once
	 * PID is reused, so the backend is handed the namespace held here, never the path again.
	 */
	struct hezo_held_path *nss;
	size_t nnss;
};
void hezo_held_init(struct hezo_held *h);
void hezo_held_done(struct hezo_held *h);
/* The held bind source written as path, or NULL. */
const struct hezo_held_path *hezo_held_bind(const struct hezo_held *h, const char *path);
/* The held namespace of linux.namespaces[] written as path, or NULL. */
const struct hezo_held_path *hezo_held_ns(const struct hezo_held *h, const char *path);
/*
 * Open path (absolute, already resolved) as O_PATH without following a symlink on any component
 * (openat2 RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS; a component-by-component O_NOFOLLOW walk
 * where the kernel has no openat2). -ELOOP when a component is now a symlink. Returns the fd.
 */
int hezo_open_nofollow(const char *path, struct hezo_held_path *out);

/*
 * What apply needs to know about the container beyond its config.json, supplied by the caller
 * (the shim) so that policy/ stays free of the shim's records and the backends' state.
 */
/* A recorded container's cgroup and ID (for hezo_apply_env.live_cgroups). */
struct hezo_live_cgroup {
	const char *id;
	const char *cgroup;
	const void *data; /* the caller's, for hezo_apply_env.cgroup_live */
};

struct hezo_apply_env {
	const char *id;	    /* the container's ID as the engine gave it; NULL: unknown */
	const char *bundle; /* the bundle directory, resolved; NULL: unknown */
	/*
	 * Who holds the namespace at path (kind as in /proc/PID/ns: "net", "ipc", "uts", "pid",
	 * "mnt", "user", "cgroup", "time"), the one config.json named as named (resolved)? Returns
	 * 0 with *owner set to the ID (malloc'd) of one of hezo-shim's own live containers whose
	 * processes are in it; 0 with *owner NULL when no process at all is in it (a namespace the
	 * engine made for this container); -ESRCH when processes of no container hezo-shim knows
	 * are in it; another -errno (with err) when it cannot tell. NULL: nothing is known, every
	 * path-named namespace counts as foreign.
	 */
	int (*ns_owner)(void *data, const char *kind, const char *path, const char *named,
			char **owner, struct hezo_error **err);
	void *data;
	/* NULL: nothing is held. Else apply fills it: root.path and each bind source it passed. */
	struct hezo_held *held;
	/*
	 * The engines' storage roots as their own configuration names them (Docker's data-root,
	 * podman's graphroot), resolved: root.path may be a container's overlay only under these.
	 * NULL: no engine's rootfs is accepted.
	 */
	const char *docker_root, *podman_root;
	/* Where a live container of this ID already runs (another --root, an engine's state). */
	const char *id_in_use;
	/*
	 * bundle is an engine's own task bundle for id (containerd's task directory, CRI-O's or
	 * podman's userdata): only then are the engines' per-container files of id this one's.
	 */
	bool engine_bundle;
	/*
	 * The pod uid of the container's sandbox, from the sandbox's own record (never from the
	 * container's annotations); NULL: no running sandbox, so no pod volumes.
	 */
	const char *pod_uid;
	/*
	 * The backend is handed --systemd-cgroup (its last word on the command line the shim
	 * builds): linux.cgroupsPath is then read as systemd's "slice:prefix:name" and nothing
	 * else; without it (the cgroupfs driver) only an absolute path stays where it says.
	 */
	bool systemd_cgroup;
	/*
	 * The backend sets its limits only in a cgroup it makes (runsc): an existing cgroup, even
	 * an empty leaf, is refused.
	 */
	bool fresh_cgroup;
	/*
	 * The cgroups of hezo-shim's live containers (relative to a hierarchy's root, as
	 * hezo_policy_cgroup_path gives them): a new container's cgroup may be neither one of
	 * them nor below one (their limits and kill --all would reach it) nor above one.
	 */
	const struct hezo_live_cgroup *live_cgroups;
	size_t n_live_cgroups;
	/*
	 * Is the container of an entry that nests with the new cgroup alive? Asked only of those,
	 * so the caller may list every recorded container and leave the question of its life (a
	 * look at its processes) to the few that matter. NULL: every entry is alive.
	 */
	bool (*cgroup_live)(const struct hezo_live_cgroup *l);
};

/*
 * Rewrite a parsed config.json in place so the container is in the box. env may be NULL (pure
 * callers: tests, fuzzers); then nothing outside the document is trusted. Errors name the
 * offending field, e.g. "mounts[3] (/host): bind source / is not under an allowed root".
 */
int hezo_policy_apply_spec(const struct hezo_policy *p, struct hezo_json *spec,
			   const struct hezo_apply_env *env, struct hezo_error **err);
/*
 * What apply changed of each tmpfs the engine asked for (asked: the engine's config.json, got:
 * the box's), each as {"mount": DEST, "asked": OPTION or null, "got": OPTION, "reason": ...}:
 * a flag tightened (exec -> noexec by exec.tmpfs, suid, dev) or a size capped by tmpfsMax. For
 * the container's record and `hezo-shim inspect`: no rewrite is silent. NULL: out of memory.
 */
struct hezo_json *hezo_policy_tmpfs_rewrites(const struct hezo_policy *p,
					     const struct hezo_json *asked,
					     const struct hezo_json *got);
/* Clamp an exec process JSON object (capabilities, noNewPrivileges). */
int hezo_policy_apply_process(const struct hezo_policy *p, struct hezo_json *process,
			      struct hezo_error **err);
/* The box's limits as its cgroup holds them now, for an update to follow (0: not known). */
struct hezo_policy_live {
	int64_t memory_limit; /* bytes */
	int64_t cpu_quota;    /* microseconds per period; -1: none */
	int64_t cpu_period;   /* microseconds */
};

/*
 * Clamp an update resources JSON object (memory, swap, pids, cpu). A field absent or 0 stays
 * unchanged; live (may be NULL) is what a field left unchanged still constrains.
 */
int hezo_policy_apply_resources(const struct hezo_policy *p, struct hezo_json *resources,
				const struct hezo_policy_live *live, struct hezo_error **err);
/* Is capability name (e.g. "CAP_SYS_ADMIN") one this container may hold? */
bool hezo_policy_cap_allowed(const struct hezo_policy *p, const char *cap);

/* Accessors. */
bool hezo_policy_production(const struct hezo_policy *p);
enum hezo_backend hezo_policy_backend(const struct hezo_policy *p);
const char *hezo_policy_backend_path(const struct hezo_policy *p, enum hezo_backend b);
/* NULL-terminated extra global args for backend b (may be empty, never NULL). */
const char *const *hezo_policy_backend_args(const struct hezo_policy *p, enum hezo_backend b);
enum hezo_runsc_network hezo_policy_runsc_network(const struct hezo_policy *p);
uint64_t hezo_policy_runsc_pids_headroom(const struct hezo_policy *p);
/* resources.pids: the most tasks a box may have, at create and after any update. */
uint64_t hezo_policy_pids(const struct hezo_policy *p);
/* resources.memory: the memory cap of every box, in bytes (0: none). */
uint64_t hezo_policy_memory(const struct hezo_policy *p);
const char *hezo_policy_project(const struct hezo_policy *p); /* NULL if none */
const char *hezo_policy_projects_dir(const struct hezo_policy *p);
/* mounts.kubeletRoot (NULL if none) and mounts.engineRoots (NULL-terminated, never NULL). */
const char *hezo_policy_kubelet_root(const struct hezo_policy *p);
/*
 * A directory boxes may be handed (bind sources, named-volume stores, kubelet's root, the
 * engines' per-container directories under an engine root, Docker's data-root, podman's
 * container directories) at or above path (clean and resolved), or below it: true, with it in
 * dir and *above set when it is below path. A backend's --root there could be rewritten by a box.
 */
bool hezo_policy_box_writable_dir(const struct hezo_policy *p, const char *path,
				  const char *docker_root, const char *podman_root, char *dir,
				  size_t size, bool *above);
/*
 * The project's workspace (docs/policy.md, "Workspace") as a host path, resolved or not: the
 * directory the admin named, or Docker's ROOT/PROJECT_workspace/_data. -ENOENT: none.
 */
int hezo_policy_workspace_dir(const struct hezo_policy *p, char *out, size_t size);
bool hezo_policy_workspace_is_volume(const struct hezo_policy *p);
/* Is path (clean, absolute) a system or engine directory, holding or inside one? why: which. */
bool hezo_policy_workspace_forbidden(const struct hezo_policy *p, const char *path, char *why,
				     size_t size);
struct hezo_mounts;
/*
 * p's workspace is, holds or is inside another project's of base's projectsDir, by path or by
 * where writes land in the mount table (a symlink or a bind mount on the way): 1, with why
 * naming the other project; 0 when not, or p has no workspace; -errno when projectsDir cannot be
 * read.
 */
int hezo_policy_workspace_clash(const struct hezo_policy *base, const struct hezo_policy *p,
				const struct hezo_mounts *mounts, char *why, size_t size);
/* One of two clean absolute paths is the other or below it. */
bool hezo_policy_paths_overlap(const char *a, const char *b);
const char *const *hezo_policy_engine_roots(const struct hezo_policy *p);
enum hezo_egress_mode hezo_policy_egress_mode(const struct hezo_policy *p);
/* The effective egress section as JSON ({"mode":..,"allow":[..],"resolvers":[..],...}). */
struct hezo_json *hezo_policy_egress_json(const struct hezo_policy *p);
/* The whole effective policy as JSON, for `hezo-shim policy show`. */
struct hezo_json *hezo_policy_to_json(const struct hezo_policy *p);

/*
 * The cgroup an OCI linux.cgroupsPath names, relative to a hierarchy's root, as the backend reads
 * it: with systemd (--systemd-cgroup) only the form "slice:prefix:name", as
 * /a.slice/a-b.slice/prefix-name.scope; without it only an absolute path, as it is (a relative
 * one is below the runtime's own cgroup, unknowable here). -EINVAL for the other form, for
 * empty, "." or ".." components, and for a name ending in ".slice" (a slice, not a scope).
 */
int hezo_policy_cgroup_path(const char *cgroups_path, bool systemd, char *buf, size_t size);
/*
 * linux.cgroupsPath: absent (without --systemd-cgroup) written as /ID, what the backends make;
 * then clean, its last component holding env->id, its
 * parent allowed by cgroupParents, and no existing cgroup there with processes in it, nor one
 * at, above or below env->live_cgroups (the shim asks again under its records lock, with the
 * boxes created since its first look).
 */
int hezo_policy_check_cgroups_path(const struct hezo_policy *p, struct hezo_json *linux_,
				   const struct hezo_apply_env *env, struct hezo_error **err);

/* init and admission (docs/policy.md): hezo-init as PID 1, and the limit of active boxes. */
bool hezo_policy_init(const struct hezo_policy *p);
struct hezo_admission {
	uint64_t max_active; /* 0: no limit (and not auto) */
	bool auto_size;	     /* (RAM + swap - 1 GiB) / the box's memory cap */
	uint64_t wait_sec;
	bool exempt;
};
void hezo_policy_admission(const struct hezo_policy *p, struct hezo_admission *out);

/*
 * secrets (docs/policy.md): the effective {NAME: {"hosts", "file", "otherHosts"}} object, NULL
 * when the container has none; and the check that each host is allowed by the effective egress
 * section (run again at create: an annotation may have narrowed egress.allow). name: in messages.
 */
const struct hezo_json *hezo_policy_secrets(const struct hezo_policy *p);
int hezo_policy_check_secrets(const struct hezo_policy *p, const char *name,
			      struct hezo_error **err);

/*
 * keys (docs/policy.md, "Keys"): the effective {NAME: {"file", "sign", "ssh"}} object, NULL when
 * the container has none; and the check that each ssh host is allowed by the effective egress.
 */
const struct hezo_json *hezo_policy_keys(const struct hezo_policy *p);
int hezo_policy_check_keys(const struct hezo_policy *p, const char *name, struct hezo_error **err);

const char *hezo_backend_name(enum hezo_backend b);
/*
 * What the box claims and backend b does not hold, measured (docs/hardening.md): NULL-terminated,
 * never NULL. doctor and each box's record state them, so that no one reads them as claims.
 */
const char *const *hezo_backend_limits(enum hezo_backend b);
int hezo_backend_from_name(const char *name, enum hezo_backend *out);

#endif
