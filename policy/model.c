/* The policy model (struct hezo_policy in policy-internal.h): the documented defaults, freeing it,
 * the lists of tmpfs mounts and sysctls it holds, and the accessors of hezo-policy.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy-parse.h"

const char *const hezo_policy_backend_names[HEZO_BACKEND_COUNT] = {
	[HEZO_BACKEND_RUNSC] = "runsc",
	[HEZO_BACKEND_RUNC] = "runc",
	[HEZO_BACKEND_CRUN] = "crun",
};

static const char *const backend_default_paths[HEZO_BACKEND_COUNT] = {
	[HEZO_BACKEND_RUNSC] = "/usr/bin/runsc",
	[HEZO_BACKEND_RUNC] = "/usr/sbin/runc",
	[HEZO_BACKEND_CRUN] = "/usr/bin/crun",
};

static const char *const default_engine_roots[] = {
	"/var/lib/docker/containers",  "/var/lib/containers/storage", "/run/containers/storage",
	"/var/run/containers/storage", "/var/lib/containerd",	      "/run/containerd",
};

/* Where engines put a container's cgroup: "/" is the top level (CRI's "/<id>"). */
static const char *const default_cgroup_parents[] = {
	"/",	     "/docker",		"/system.slice", "/machine.slice", "/libpod_parent",
	"/kubepods", "/kubepods.slice", "/default",	 "/k8s.io",
};

static const struct {
	const char *dest;
	uint64_t size;
} default_tmpfs[] = {
	{"/tmp", 64ULL << 20},
	{"/run", 16ULL << 20},
	{"/var/run", 16ULL << 20},
	{"/var/tmp", 16ULL << 20},
};

const struct host_ns_name hezo_policy_host_ns_names[] = {
	{"pid", HEZO_NS_PID},	      {"ipc", HEZO_NS_IPC},	  {"uts", HEZO_NS_UTS},
	{"network", HEZO_NS_NETWORK}, {"cgroup", HEZO_NS_CGROUP},
};

/* A memfd is on no mount: the kernel (vm.memfd_noexec 0) and gVisor both run a copy from it. */
#define LIMIT_MEMFD                                                                                \
	"noexec does not stop a copy run from a memfd (memfd_create, then execve of "              \
	"/proc/self/fd/N): it is on no mount (docs/hardening.md, \"noexec under runsc\")"

/* What the engine mounts as asked: the admin chose to share it, and a box runs code from it. */
#define LIMIT_SHARED                                                                               \
	"named volumes and mounts.allowedSources binds are writable and executable (no noexec, "   \
	"nosuid or nodev from the engine); no box can make a set-id file there "                   \
	"(docs/hardening.md, \"What a box can leave on the host\")"

const char *const *hezo_backend_limits(enum hezo_backend b)
{
	/* gVisor 2024-07 checks a mount's noexec in execve alone (tests/integration/noexec.sh). */
	static const char *const runsc[] = {
		"noexec under runsc stops execve only: `ld.so FILE`, dlopen, mmap(PROT_EXEC) and "
		"mprotect(PROT_EXEC) of a file on a noexec tmpfs run it (docs/hardening.md, "
		"\"noexec under runsc\")",
		LIMIT_MEMFD,
		LIMIT_SHARED,
		NULL,
	};
	static const char *const kernel[] = {LIMIT_MEMFD, LIMIT_SHARED, NULL};

	return b == HEZO_BACKEND_RUNSC ? runsc : kernel;
}

const char *hezo_backend_name(enum hezo_backend b)
{
	if ((unsigned)b >= HEZO_BACKEND_COUNT)
		return "unknown";
	return hezo_policy_backend_names[b];
}

int hezo_backend_from_name(const char *name, enum hezo_backend *out)
{
	for (int i = 0; name && i < HEZO_BACKEND_COUNT; i++) {
		if (strcmp(name, hezo_policy_backend_names[i]) == 0) {
			*out = (enum hezo_backend)i;
			return 0;
		}
	}
	return -EINVAL;
}

void hezo_policy_free(struct hezo_policy *p)
{
	if (!p)
		return;
	hezo_policy_volumes_free(p);
	for (int i = 0; i < HEZO_BACKEND_COUNT; i++) {
		free(p->backend_path[i]);
		hezo_strv_done(&p->backend_args[i]);
	}
	hezo_strv_done(&p->caps);
	for (size_t i = 0; i < p->ntmpfs; i++)
		free(p->tmpfs[i].dest);
	free(p->tmpfs);
	for (size_t i = 0; i < p->nsysctls; i++)
		free(p->sysctls[i].name);
	free(p->sysctls);
	free(p->seccomp_path);
	hezo_json_free(p->seccomp_profile);
	hezo_strv_done(&p->devices);
	hezo_strv_done(&p->allowed_sources);
	hezo_strv_done(&p->engine_roots);
	hezo_strv_done(&p->cgroup_parents);
	hezo_strv_done(&p->allowed_hooks);
	hezo_strv_done(&p->egress_allow);
	hezo_strv_done(&p->resolvers);
	hezo_strv_done(&p->allow_ranges);
	hezo_json_free(p->secrets);
	hezo_json_free(p->keys);
	free(p->projects_dir);
	free(p->docker_pidfile);
	free(p->docker_init);
	free(p->kubelet_root);
	free(p->project);
	free(p->workspace);
	free(p);
}

int hezo_policy_tmpfs_add(struct hezo_policy *p, const char *dest, uint64_t size)
{
	struct hezo_policy_tmpfs *n;
	char *d = strdup(dest);

	if (!d)
		return -ENOMEM;
	n = realloc(p->tmpfs, (p->ntmpfs + 1) * sizeof(*n));
	if (!n) {
		free(d);
		return -ENOMEM;
	}
	p->tmpfs = n;
	p->tmpfs[p->ntmpfs].dest = d;
	p->tmpfs[p->ntmpfs].size = size;
	p->ntmpfs++;
	return 0;
}

void hezo_policy_tmpfs_clear(struct hezo_policy *p)
{
	for (size_t i = 0; i < p->ntmpfs; i++)
		free(p->tmpfs[i].dest);
	free(p->tmpfs);
	p->tmpfs = NULL;
	p->ntmpfs = 0;
}

/* ---- sysctls: name to "LO HI" bounds of each number in the value, or true for any value ---- */

/* Kubernetes' safe set; the bounds admit what Docker sends by default (ping for every group,
 * every port unprivileged: both only in the container's own network namespace). */
static const struct {
	const char *name;
	uint64_t lo, hi;
} default_sysctls[] = {
	{"kernel.shm_rmid_forced", 0, 1},
	{"net.ipv4.ip_local_port_range", 1024, 65535},
	{"net.ipv4.tcp_syncookies", 0, 2},
	{"net.ipv4.ping_group_range", 0, 2147483647},
	{"net.ipv4.ip_unprivileged_port_start", 0, 65536},
};

int hezo_policy_sysctl_add(struct hezo_policy *p, const char *name, bool any, uint64_t lo,
			   uint64_t hi)
{
	struct hezo_policy_sysctl *n;
	char *d = strdup(name);

	if (!d)
		return -ENOMEM;
	n = realloc(p->sysctls, (p->nsysctls + 1) * sizeof(*n));
	if (!n) {
		free(d);
		return -ENOMEM;
	}
	p->sysctls = n;
	p->sysctls[p->nsysctls++] = (struct hezo_policy_sysctl){d, any, lo, hi};
	return 0;
}

void hezo_policy_sysctls_clear(struct hezo_policy *p)
{
	for (size_t i = 0; i < p->nsysctls; i++)
		free(p->sysctls[i].name);
	free(p->sysctls);
	p->sysctls = NULL;
	p->nsysctls = 0;
}

static int sysctls_default(struct hezo_policy *p)
{
	int r = 0;

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(default_sysctls); i++)
		r = r
			    ?: hezo_policy_sysctl_add(p, default_sysctls[i].name, false,
						      default_sysctls[i].lo, default_sysctls[i].hi);
	return r;
}

/* The documented defaults: the seeds' box. */
int hezo_policy_new_default(struct hezo_policy **out)
{
	_cleanup_policy_ struct hezo_policy *p = calloc(1, sizeof(*p));
	int r = 0;

	if (!p)
		return -ENOMEM;
	p->production = true;
	p->backend = HEZO_BACKEND_RUNSC;
	p->allow_backends[HEZO_BACKEND_RUNSC] = true;
	for (int i = 0; i < HEZO_BACKEND_COUNT; i++) {
		p->backend_path[i] = strdup(backend_default_paths[i]);
		if (!p->backend_path[i] || hezo_strv_init(&p->backend_args[i]) < 0)
			return -ENOMEM;
	}
	p->runsc_network = HEZO_RUNSC_NET_HOST;
	p->no_new_privs = true;
	p->readonly_rootfs = true;
	p->tmpfs_max = 64ULL << 20;
	r = r ?: sysctls_default(p);
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(default_tmpfs); i++)
		r = r ?: hezo_policy_tmpfs_add(p, default_tmpfs[i].dest, default_tmpfs[i].size);
	p->pids = 256;
	p->memory = 2ULL << 30;
	p->swap = 0;
	p->cpus_milli = 2000;
	p->cpu_shares = 1024;
	p->blkio_weight = 500;
	r = r ?: hezo_strv_init(&p->caps);
	r = r ?: hezo_strv_init(&p->devices);
	r = r ?: hezo_strv_init(&p->allowed_sources);
	r = r ?: hezo_strv_init(&p->engine_roots);
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(default_engine_roots); i++)
		r = r ?: hezo_strv_push(&p->engine_roots, default_engine_roots[i]);
	r = r ?: hezo_strv_init(&p->cgroup_parents) ?: hezo_strv_init(&p->allowed_hooks);
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(default_cgroup_parents); i++)
		r = r ?: hezo_strv_push(&p->cgroup_parents, default_cgroup_parents[i]);
	p->egress_mode = HEZO_EGRESS_PROXY;
	r = r ?: hezo_strv_init(&p->egress_allow);
	r = r ?: hezo_strv_init(&p->resolvers);
	r = r ?: hezo_strv_init(&p->allow_ranges);
	r = r ?: hezo_policy_volumes_default(p);
	if (r < 0)
		return r;
	p->projects_dir = strdup("/etc/hezo/projects");
	p->docker_pidfile = strdup("/var/run/docker.pid");
	p->kubelet_root = strdup("/var/lib/kubelet");
	/* Where Docker's packages put it, and so what dockerd finds on its PATH. */
	p->docker_init = strdup("/usr/bin/docker-init");
	if (!p->projects_dir || !p->docker_pidfile || !p->kubelet_root || !p->docker_init)
		return -ENOMEM;
	p->init = true;
	p->admission_wait = 300;
	*out = TAKE_PTR(p);
	return 0;
}

bool hezo_policy_init(const struct hezo_policy *p)
{
	return p->init;
}

void hezo_policy_admission(const struct hezo_policy *p, struct hezo_admission *out)
{
	out->max_active = p->admission_max;
	out->auto_size = p->admission_auto;
	out->wait_sec = p->admission_wait;
	out->exempt = p->admission_exempt;
}

/* ---- accessors ---- */

bool hezo_policy_cap_allowed(const struct hezo_policy *p, const char *cap)
{
	_cleanup_free_ char *norm = NULL;

	if (hezo_policy_cap_normalise(cap, &norm) < 0)
		return false;
	return hezo_strv_contains(&p->caps, norm);
}

bool hezo_policy_production(const struct hezo_policy *p)
{
	return p->production;
}

enum hezo_backend hezo_policy_backend(const struct hezo_policy *p)
{
	return p->backend;
}

const char *hezo_policy_backend_path(const struct hezo_policy *p, enum hezo_backend b)
{
	if ((unsigned)b >= HEZO_BACKEND_COUNT)
		return NULL;
	return p->backend_path[b];
}

const char *const *hezo_policy_backend_args(const struct hezo_policy *p, enum hezo_backend b)
{
	static const char *const none[] = {NULL};

	if ((unsigned)b >= HEZO_BACKEND_COUNT)
		return none;
	return (const char *const *)p->backend_args[b].v;
}

enum hezo_runsc_network hezo_policy_runsc_network(const struct hezo_policy *p)
{
	return p->runsc_network;
}

uint64_t hezo_policy_runsc_pids_headroom(const struct hezo_policy *p)
{
	return p->pids_headroom;
}

uint64_t hezo_policy_pids(const struct hezo_policy *p)
{
	return p->pids;
}

uint64_t hezo_policy_memory(const struct hezo_policy *p)
{
	return p->memory;
}

const char *hezo_policy_project(const struct hezo_policy *p)
{
	return p->project;
}

const char *hezo_policy_projects_dir(const struct hezo_policy *p)
{
	return p->projects_dir;
}

const char *hezo_policy_kubelet_root(const struct hezo_policy *p)
{
	return p->kubelet_root;
}

/* Is path (clean, resolved) at or below dir, dir resolved where it exists? */
/* path at or below dir (as written, or resolved); with above, dir at or below path. */
static bool under_dir(const char *path, const char *dir, bool above)
{
	char real[PATH_MAX];

	if (!dir || !*dir)
		return false;
	if (above)
		return hezo_policy_path_under(dir, path) ||
		       (realpath(dir, real) && hezo_policy_path_under(real, path));
	return hezo_policy_path_under(path, dir) ||
	       (realpath(dir, real) && hezo_policy_path_under(path, real));
}

static bool at_or_below(const char *path, const char *dir)
{
	return under_dir(path, dir, false);
}

/* A --root above dir holds it. */
static bool holds(const char *path, const char *dir)
{
	return under_dir(path, dir, true);
}

bool hezo_policy_paths_overlap(const char *a, const char *b)
{
	return hezo_policy_path_under(a, b) || hezo_policy_path_under(b, a);
}

static bool found(const char *path, const char *dir, char *out, size_t size, bool *above)
{
	snprintf(out, size, "%s", dir);
	*above = !at_or_below(path, dir);
	return true;
}

bool hezo_policy_box_writable_dir(const struct hezo_policy *p, const char *path,
				  const char *docker_root, const char *podman_root, char *dir,
				  size_t size, bool *above)
{
	static const char *const engine_dirs[] = {"io.containerd.grpc.v1.cri/sandboxes",
						  "io.containerd.grpc.v1.cri/containers"};
	const struct hezo_strv *lists[] = {&p->allowed_sources, &p->volume_roots};
	char cand[PATH_MAX];

	for (size_t l = 0; l < HEZO_ARRAY_SIZE(lists); l++)
		for (size_t i = 0; i < lists[l]->n; i++)
			if (at_or_below(path, lists[l]->v[i]) || holds(path, lists[l]->v[i]))
				return found(path, lists[l]->v[i], dir, size, above);
	if (at_or_below(path, p->kubelet_root) || holds(path, p->kubelet_root))
		return found(path, p->kubelet_root, dir, size, above);
	/* The project's workspace: its boxes write there. */
	if (hezo_policy_workspace_dir(p, cand, sizeof(cand)) == 0 &&
	    (at_or_below(path, cand) || holds(path, cand)))
		return found(path, cand, dir, size, above);
	for (size_t i = 0; i < p->engine_roots.n; i++)
		for (size_t k = 0; k < HEZO_ARRAY_SIZE(engine_dirs); k++) {
			snprintf(cand, sizeof(cand), "%s/%s", p->engine_roots.v[i], engine_dirs[k]);
			if (at_or_below(path, cand))
				return found(path, cand, dir, size, above);
		}
	/*
	 * Anything else below an engine root may be one container's files (ROOT/ID/mounts/shm
	 * for any ID), but for containerd's own runtime roots, ROOT/runc/NS and ROOT/runsc/NS:
	 * no engine file is a directory there, but for NS "mounts" (ID runc's mounts/shm).
	 * A --root above an engine root holds all of them.
	 */
	for (size_t i = 0; i < p->engine_roots.n; i++) {
		const char *root = p->engine_roots.v[i], *rest, *ns;
		char real[PATH_MAX];
		size_t n;

		if (holds(path, root))
			return found(path, root, dir, size, above);
		if (!at_or_below(path, root))
			continue;
		if (hezo_policy_path_under(path, root))
			n = strlen(root);
		else if (realpath(root, real))
			n = strlen(real);
		else
			continue;
		rest = path + n;
		ns = strncmp(rest, "/runc/", 6) == 0	? rest + 6
		     : strncmp(rest, "/runsc/", 7) == 0 ? rest + 7
							: NULL;
		if (ns && *ns && !strchr(ns, '/') && strcmp(ns, "mounts") != 0)
			continue;
		return found(path, root, dir, size, above);
	}
	/*
	 * Docker's data-root whole: its containers' files, and the overlay2 upper directories a
	 * box with a writable root filesystem writes through its merged view. podman's container
	 * directories (its graphroot is an engine root by default).
	 */
	if (docker_root && (at_or_below(path, docker_root) || holds(path, docker_root)))
		return found(path, docker_root, dir, size, above);
	if (podman_root) {
		snprintf(cand, sizeof(cand), "%s/overlay-containers", podman_root);
		if (at_or_below(path, cand) || holds(path, cand))
			return found(path, cand, dir, size, above);
	}
	return false;
}

const char *const *hezo_policy_engine_roots(const struct hezo_policy *p)
{
	static const char *const none[] = {NULL};

	return p->engine_roots.v ? (const char *const *)p->engine_roots.v : none;
}

enum hezo_egress_mode hezo_policy_egress_mode(const struct hezo_policy *p)
{
	return p->egress_mode;
}
