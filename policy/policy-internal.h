/* The parsed policy as the other policy/ files see it, and helpers they share. Not installed. */
#ifndef HEZO_POLICY_INTERNAL_H
#define HEZO_POLICY_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hezo-policy.h"
#include "hezo-strv.h" /* lists of strings: v is never NULL once hezo_strv_init ran */

struct hezo_policy_tmpfs {
	char *dest;
	uint64_t size;
};

/* A sysctl the box may set: any value, or one or two numbers each within [lo, hi]. */
struct hezo_policy_sysctl {
	char *name;
	bool any;
	uint64_t lo, hi;
};

/* Namespace kinds policy reasons about, as bits for allowHost. */
enum {
	HEZO_NS_PID = 1 << 0,
	HEZO_NS_IPC = 1 << 1,
	HEZO_NS_UTS = 1 << 2,
	HEZO_NS_NETWORK = 1 << 3,
	HEZO_NS_CGROUP = 1 << 4,
};

struct hezo_policy {
	bool production;
	enum hezo_backend backend;
	bool allow_backends[HEZO_BACKEND_COUNT];
	char *backend_path[HEZO_BACKEND_COUNT];
	struct hezo_strv backend_args[HEZO_BACKEND_COUNT];
	enum hezo_runsc_network runsc_network;
	uint64_t pids_headroom;

	struct hezo_strv caps; /* normalised "CAP_X" */
	bool no_new_privs;
	bool readonly_rootfs;
	struct hezo_policy_tmpfs *tmpfs;
	size_t ntmpfs;
	uint64_t tmpfs_max; /* size ceiling of a tmpfs the engine asks for */
	bool tmpfs_exec;    /* exec.tmpfs: a tmpfs may execute (the engine's word then stands) */
	struct hezo_policy_sysctl *sysctls;
	size_t nsysctls;

	uint64_t pids;
	uint64_t memory;
	uint64_t swap;
	uint64_t cpus_milli;	/* thousandths of a CPU */
	uint64_t cpu_shares;	/* ceiling of cpu.shares */
	uint64_t blkio_weight;	/* ceiling of the block I/O weights */
	uint64_t rlimit_rtprio; /* ceiling of RLIMIT_RTPRIO, hard and soft */
	uint64_t rlimit_nice;	/* ceiling of RLIMIT_NICE, hard and soft */

	char *seccomp_path;		   /* NULL: the built-in profile */
	struct hezo_json *seccomp_profile; /* validated profile read from seccomp_path */

	struct hezo_strv devices;
	struct hezo_strv allowed_sources;
	struct hezo_strv engine_roots;
	char *kubelet_root;	       /* kubelet's --root-dir: pods' volumes under pods/UID/ */
	struct hezo_strv volume_allow; /* volumes.allow: name patterns, {project} substituted */
	struct hezo_strv volume_roots; /* volumes.roots: engines' named-volume stores */
	struct hezo_strv cgroup_parents;
	struct hezo_strv allowed_hooks;
	unsigned allow_host_ns;
	bool require_user;

	enum hezo_egress_mode egress_mode;
	struct hezo_strv egress_allow;
	struct hezo_strv resolvers;
	struct hezo_strv allow_ranges;
	struct hezo_json *secrets; /* canonical "secrets" object (secrets.c); NULL: none */
	struct hezo_json *keys;	   /* the "keys" object as given (keys.c); NULL: none */

	char *projects_dir;
	char *docker_pidfile; /* whose pid alone may run Docker's libnetwork-setkey hook */
	char *docker_init;    /* the docker-init dockerd binds for --init; NULL: none */
	char *project;	      /* selected project, NULL if none */
	/* The project's workspace (workspace.c): a host directory, or its NAME_workspace volume. */
	char *workspace;
	bool workspace_volume;

	/* init and admission (docs/policy.md): hezo-init as PID 1, the limit of active boxes. */
	bool init;
	uint64_t admission_max;	 /* 0: no limit */
	bool admission_auto;	 /* maxActive "auto": sized from memory at create */
	uint64_t admission_wait; /* seconds a create may wait for a slot */
	bool admission_exempt;
};

/*
 * Normalise an absolute path: collapse "//" and "/./", drop a trailing "/". ".." components and
 * relative paths are refused (-EINVAL). *out is malloc'd.
 */
int hezo_policy_clean_path(const char *path, char **out);
/* Is path equal to root or below it, compared component by component? Both must be clean. */
bool hezo_policy_path_under(const char *path, const char *root);

/* "CAP_X" for a capability name libcap knows (with or without the prefix, any case). */
int hezo_policy_cap_normalise(const char *name, char **out);

/* Quote s as a JSON string for an error message, cut to a readable length. */
void hezo_policy_quote(char *buf, size_t size, const char *s);

/*
 * The next item of an annotation's comma list, cut in place from *cursor with the blanks around it
 * trimmed; empty items are skipped. NULL when the list is done. Start with *cursor = a copy.
 */
char *hezo_policy_list_next(char **cursor);

/*
 * Messages (util.c): every policy/ file words an error through these. *msg = "PREFIX: " (none
 * when prefix is NULL) and the text fmt makes, malloc'd; -ENOMEM when it cannot be made.
 */
int hezo_policy_vmsg(char **msg, const char *prefix, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* err = EINVAL with that message, or ENOMEM "out of memory"; returns -EINVAL or -ENOMEM. */
int hezo_policy_verr(struct hezo_error **err, const char *prefix, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* err = EINVAL with "FIELD: " (none when field is NULL) and the formatted message; -EINVAL. */
int hezo_policy_field_err(struct hezo_error **err, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* err = EINVAL with the formatted message; returns -EINVAL. */
#define hezo_policy_ferr(err, ...) hezo_policy_field_err((err), NULL, __VA_ARGS__)
/* err = ENOMEM "out of memory"; returns -ENOMEM. */
int hezo_policy_nomem(struct hezo_error **err);
/* The list at key, created when absent or null; another type is an error naming field. */
struct hezo_json *hezo_policy_want_array(struct hezo_json *parent, const char *key,
					 const char *field, struct hezo_error **err);
/* The same for an object. */
struct hezo_json *hezo_policy_want_object(struct hezo_json *parent, const char *key,
					  const char *field, struct hezo_error **err);

/*
 * Clamp a process object's rlimits and oomScoreAdj (rlimits.c); field names it in messages
 * ("process").
 */
int hezo_policy_clamp_rlimits(const struct hezo_policy *p, struct hezo_json *process,
			      const char *field, struct hezo_error **err);

/*
 * Rewrite config.json's mounts (mounts.c): refuse what the box cannot hold, resolve bind
 * sources, make sysfs and cgroup read-only, add the policy's tmpfs mounts. env as for
 * hezo_policy_apply_spec (NULL: engine files are refused).
 */
int hezo_policy_apply_mounts(const struct hezo_policy *p, struct hezo_json *spec,
			     const struct hezo_apply_env *env, struct hezo_error **err);

/* mounts.c: m (taken) before the first mount at or below its destination, else last; -ENOMEM. */
int hezo_policy_place_mount(struct hezo_json *mounts, struct hezo_json *m);

/*
 * tmpfs.c: an engine's tmpfs mount m (options already checked) made nosuid, noexec and nodev
 * (not nodev at /dev) and its size at most tmpfsMax.
 */
/*
 * The ptys a box's devpts instance may hold (its mount's max=): room for a shell, an editor's
 * terminals and a few dozen `exec -t` sessions, while 48 boxes at the bound still leave the 3072
 * ptys the kernel shares outside host root's reserve (pty.max 4096, pty.reserve 1024).
 */
#define HEZO_DEVPTS_MAX 64
int hezo_policy_clamp_tmpfs(const struct hezo_policy *p, struct hezo_json *m, size_t idx,
			    const char *dest, struct hezo_error **err);

/*
 * resources.c: cpu.shares (set to the policy's when config.json has none; update: absent stays
 * absent) and blockIO weight, leafWeight and weightDevice[] at most the policy's.
 */
int hezo_policy_clamp_weights(const struct hezo_policy *p, struct hezo_json *res, const char *field,
			      bool update, struct hezo_error **err);

/* sysctl.c: the listed sysctl called name, or NULL. */
const struct hezo_policy_sysctl *hezo_policy_sysctl_find(const struct hezo_policy *p,
							 const char *name);
/* sysctl.c: every key of linux.sysctl listed in sysctls and its value within the bounds. */
int hezo_policy_check_sysctl(const struct hezo_policy *p, struct hezo_json *linux_,
			     struct hezo_error **err);

/*
 * fields.c: what no other rule covers. Resources: unified and network refused, cpu realtime and
 * burst stripped; process: scheduler and ioPriority only in classes that do not outrank the host;
 * linux: rootfsPropagation not shared, no intelRdt, no netDevices, personality without flags.
 */
int hezo_policy_check_resource_fields(struct hezo_json *res, const char *field,
				      struct hezo_error **err);
int hezo_policy_check_process_fields(const struct hezo_json *process, const char *field,
				     struct hezo_error **err);
int hezo_policy_check_annotations(const struct hezo_json *spec, struct hezo_error **err);
int hezo_policy_check_linux_fields(const struct hezo_json *linux_, struct hezo_error **err);

/* resources.c: memory.disableOOMKiller made false in a resources object (field in messages). */
int hezo_policy_clamp_oom(struct hezo_json *res, const char *field, struct hezo_error **err);

/*
 * Validate a linux.seccomp object (from the admin's file) and return a cleaned copy: syscall
 * names unknown to libseccomp on every listed architecture are dropped. Messages name the field
 * relative to the object ("syscalls[3].action: ...").
 */
int hezo_policy_seccomp_check(const struct hezo_json *profile, struct hezo_json **out,
			      struct hezo_error **err);
/*
 * The same check for a reader: *view is the profile itself when every name in it is known,
 * otherwise *copy, the pruned copy (which the caller frees).
 */
int hezo_policy_seccomp_check_view(const struct hezo_json *profile, const struct hezo_json **view,
				   struct hezo_json **copy, struct hezo_error **err);
/* Read and check a profile file; errors name the path. */
int hezo_policy_seccomp_load(const char *path, struct hezo_json **out, struct hezo_error **err);
/* hezo's built-in profile as a linux.seccomp object for the machine's architecture. */
struct hezo_json *hezo_policy_seccomp_default(void);
/*
 * seccomp-floor.c: the engine's linux.seccomp (checked as an admin's file is, and refused if it
 * hands calls to a tracer or listener or sets a loosening flag) combined with the box's profile
 * into one that lets a call through only where both do (docs/policy.md, "Seccomp").
 */
int hezo_policy_seccomp_floor(const struct hezo_json *box, const struct hezo_json *engine,
			      struct hezo_json **out, struct hezo_error **err);
/*
 * The same, for create's two judgements: takes *box and *engine (NULL after; the caller frees
 * what is left), and hands the second call with equal profiles the first call's result. *box
 * NULL: the built-in default profile (hezo_policy_seccomp_default), built only when needed.
 */
int hezo_policy_seccomp_floor_take(struct hezo_json **box, struct hezo_json **engine,
				   struct hezo_json **out, struct hezo_error **err);
/*
 * seccomp-setid.c: rewrite the box's final profile so that no call can give a file a set-user-id
 * or set-group-id bit (chmod and friends, and the creating calls' modes: EPERM; openat2 and
 * io_uring_setup, whose modes a filter cannot read: ENOSYS).
 */
int hezo_policy_seccomp_no_setid(struct hezo_json *prof, struct hezo_error **err);

/*
 * volumes.c: the "volumes" key (defaults, parser, JSON, the project rule) and a bind source at,
 * below or above an engine's volume store, judged here (*handled): only ROOT/NAME/_data of a
 * volume this container's project owns and volumes.allow names. Parser messages go to why.
 */
int hezo_policy_volumes_default(struct hezo_policy *p);
/* Does one of p's volumes.allow patterns ({project} as p's project) match volume name? */
bool hezo_policy_volume_allowed(const struct hezo_policy *p, const char *name);
void hezo_policy_volumes_free(struct hezo_policy *p);
int hezo_policy_volumes_parse(struct hezo_policy *p, const struct hezo_json *v, char *why,
			      size_t size);
struct hezo_json *hezo_policy_volumes_json(const struct hezo_policy *p);
int hezo_policy_volumes_narrower(const struct hezo_policy *base, const struct hezo_policy *p,
				 char *why, size_t size);
int hezo_policy_check_volume_source(const struct hezo_policy *p, size_t idx, const char *dest,
				    const char *src, bool *handled, struct hezo_error **err);

/*
 * workspace.c: the project's workspace bound at /workspace (read-write, exec, nosuid, nodev),
 * held like a bind source; a bind source at or below it (resolved) is its project's to mount.
 * workspace_home: HOME=/workspace/.home when the image's HOME is not writable (*set says so).
 */
int hezo_policy_apply_workspace(const struct hezo_policy *p, struct hezo_json *spec,
				const struct hezo_apply_env *env, struct hezo_error **err);
bool hezo_policy_in_workspace(const struct hezo_policy *p, const char *resolved);
int hezo_policy_workspace_home(const struct hezo_policy *p, struct hezo_json *spec, bool *set,
			       struct hezo_error **err);
struct hezo_json *hezo_policy_workspace_json(const struct hezo_policy *p);

/*
 * kubelet.c: a bind source (resolved) at or under the kubelet root is judged here (*handled):
 * only ROOT/pods/UID/{volumes/..,volume-subpaths/..,etc-hosts,containers/..} of this container's
 * own pod (containerd's io.kubernetes.cri.sandbox-uid, its sandbox holding the netns it joins).
 * A source above the kubelet root is refused.
 */
int hezo_policy_check_kubelet_source(const struct hezo_policy *p, const struct hezo_apply_env *env,
				     const struct hezo_json *spec, size_t idx, const char *dest,
				     const char *src, bool *handled, struct hezo_error **err);

/*
 * namespaces.c, cgroups.c, rootfs.c, hooks.c: fields that point outside the box.
 * linux.namespaces: each kind new, the host's (if allowHost says so), one of hezo-shim's own
 * containers' or one no process is in yet (asked of env->ns_owner; without it every path-named
 * namespace is refused).
 */
int hezo_policy_check_namespaces(const struct hezo_policy *p, struct hezo_json *linux_,
				 const struct hezo_apply_env *env, struct hezo_error **err);

/* Is parent (a clean cgroup path) allowed by the list? "/" admits only the top level. */
bool hezo_policy_cgroup_parent_allowed(const struct hezo_strv *parents, const char *parent);
/*
 * held.c: hold path (resolved, absolute) in *slot, opened without following symlinks; what names
 * it in the error ("root.path"). hold_bind: the same for a bind source that passed, into
 * env->held (once per path; nothing when env or env->held is NULL).
 */
int hezo_policy_hold(struct hezo_held_path *slot, const char *path, const char *what,
		     struct hezo_error **err);
int hezo_policy_hold_bind(const struct hezo_apply_env *env, const char *path, size_t idx,
			  const char *dest, struct hezo_error **err);
/* root.path: inside the bundle, or Docker's or podman's overlay rootfs for container env->id. */
int hezo_policy_check_root(const struct hezo_json *spec, const struct hezo_apply_env *env,
			   struct hezo_error **err);
/* hooks: only the policy's allowedHooks and Docker's libnetwork-setkey for this container. */
int hezo_policy_check_hooks(const struct hezo_policy *p, const struct hezo_json *spec,
			    const struct hezo_apply_env *env, struct hezo_error **err);

/*
 * secrets.c: the "secrets" key (v: its JSON; null clears it), its JSON output into the file
 * form o (absent when none), the egress rule (every host allowed by egress.allow, mode proxy)
 * and the org.hezo.secrets annotation (a comma-separated subset to keep). name: in messages.
 */
int hezo_policy_parse_secrets(struct hezo_policy *p, const struct hezo_json *v, const char *name,
			      struct hezo_error **err);
/* A project's layered secrets against the main file's: a secret of both only narrowed ("in",
 * "headers"); -EPERM naming the key otherwise. */
int hezo_policy_secrets_narrower(const struct hezo_policy *base, const struct hezo_policy *p,
				 const char *name, struct hezo_error **err);
int hezo_policy_secrets_json(const struct hezo_policy *p, struct hezo_json *o);
/* The effective egress section of p parsed into *e (the caller clears it); name: in messages. */
int hezo_policy_egress_parsed(const struct hezo_policy *p, const char *name, struct hezo_egress *e,
			      struct hezo_error **err);
/* keys.c: the "keys" key (null clears it) and its JSON output into the file form o. */
int hezo_policy_parse_keys(struct hezo_policy *p, const struct hezo_json *v, const char *name,
			   struct hezo_error **err);
int hezo_policy_keys_json(const struct hezo_policy *p, struct hezo_json *o);
int hezo_policy_secrets_annotation(struct hezo_policy *p, const char *key, const char *val,
				   struct hezo_error **err);

#endif
