/*
 * A Kubernetes pod under runsc is one sandbox: the pause container makes it, and runsc starts
 * each app container (CRI container-type "container") inside it. containerd's runc v2 shim
 * tracks a container by the host pid the runtime writes at create, reaps it and takes its exit
 * status; an app container's init is a task of the Sentry, with no host pid. For each app
 * container the shim starts hezo-pod-wait (pod-wait.c) at create, which containerd's shim
 * adopts and reaps: its pid is the one written, and it exits with the container's status.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hezo-file.h"
#include "hezo-spec.h"
#include "shim.h"

#define WAIT_FIFO "pod-wait.fifo"
#define WAIT_PID  "pod-wait.pid"

/* The CRI annotations runsc reads for a container's role and its pod's sandbox. */
static const char *const type_keys[] = {"io.kubernetes.cri.container-type",
					"io.kubernetes.cri-o.ContainerType"};
static const char *const sandbox_keys[] = {"io.kubernetes.cri.sandbox-id",
					   "io.kubernetes.cri-o.SandboxID"};

/* The one value the keys present give (NULL: none); two that differ are refused. */
static int agreed(const struct hezo_json *ann, const char *const keys[2], const char **out,
		  struct hezo_error **err)
{
	const char *a = hezo_json_string(hezo_json_get(ann, keys[0]));
	const char *b = hezo_json_string(hezo_json_get(ann, keys[1]));

	*out = a ?: b;
	if (a && b && strcmp(a, b) != 0)
		return hezo_error_set(err, EINVAL,
				      "annotations %s (\"%s\") and %s (\"%s\") disagree: runsc "
				      "would read one of them",
				      keys[0], a, keys[1], b);
	return 0;
}

int shim_runsc_pod_app(const struct hezo_json *spec, const char **sandbox, struct hezo_error **err)
{
	const struct hezo_json *ann = hezo_json_get_type(spec, "annotations", HEZO_JSON_OBJECT);
	const char *type;
	int r;

	*sandbox = NULL;
	r = agreed(ann, type_keys, &type, err);
	r = r ?: agreed(ann, sandbox_keys, sandbox, err);
	if (r < 0)
		return r;
	if (!type || strcmp(type, "container") != 0)
		return 0;
	if (!*sandbox || !**sandbox)
		return hezo_error_set(err, EINVAL,
				      "a pod's app container (%s=container) names no sandbox (%s)",
				      type_keys[0], sandbox_keys[0]);
	return 1;
}

#define UNIFIED "/sys/fs/cgroup/unified"

/* cgroup v1 with the unified hierarchy beside it, where runsc leaves cgroup v2 alone. */
static bool hybrid_host(void)
{
	return access(UNIFIED "/cgroup.procs", F_OK) == 0 &&
	       access("/sys/fs/cgroup/cgroup.controllers", F_OK) != 0;
}

/* The names of a wire form's secrets, "A, B", or "none", for a message. */
static void secret_names(const struct hezo_json *secrets, char *buf, size_t size)
{
	size_t at = 0;

	buf[0] = '\0';
	HEZO_JSON_FOREACH (i, secrets) {
		int n = snprintf(buf + at, size - at, "%s%s", at ? ", " : "", secrets->keys[i]);

		if (n < 0 || (size_t)n >= size - at)
			break;
		at += (size_t)n;
	}
	if (at == 0)
		snprintf(buf, size, "none");
}

/* Does mine hold the secrets of pod (names, hosts, files and the rest), placeholders aside? */
static bool same_secrets(const struct hezo_json *mine, const struct hezo_json *pod)
{
	if ((mine ? mine->len : 0) != (pod ? pod->len : 0))
		return false;
	HEZO_JSON_FOREACH (i, mine) {
		const struct hezo_json *a = mine->items[i];
		const struct hezo_json *b =
			hezo_json_get_type(pod, mine->keys[i], HEZO_JSON_OBJECT);

		if (!b || a->type != HEZO_JSON_OBJECT || a->len != b->len)
			return false;
		for (size_t k = 0; k < a->len; k++)
			if (strcmp(a->keys[k], "placeholder") != 0 &&
			    !hezo_json_equal(a->items[k], hezo_json_get(b, a->keys[k])))
				return false;
	}
	return true;
}

int shim_runsc_pod_secrets(const struct shim_ctx *ctx, const char *id, const char *sandbox,
			   struct hezo_json *spec, struct hezo_json **secrets,
			   struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *srec = NULL, *copy = NULL;
	const struct hezo_json *pod;
	char mine_names[512], pod_names[512];
	int r;

	r = shim_record_read(ctx, sandbox, &srec, err);
	if (r < 0)
		return hezo_error_prefix(err, "container %s: the record of its pod's sandbox %s",
					 id, sandbox);
	pod = hezo_json_get_type(srec, "secrets", HEZO_JSON_OBJECT);
	/*
	 * The Sentry makes every host socket of the pod, so proxyd sees all its containers as the
	 * sandbox (one cgroup, one address): a set of secrets is the pod's or none's.
	 */
	if (!same_secrets(*secrets, pod)) {
		secret_names(*secrets, mine_names, sizeof(mine_names));
		secret_names(pod, pod_names, sizeof(pod_names));
		return hezo_error_set(err, EPERM,
				      "container %s: secrets %s are not its pod's (%s, its sandbox "
				      "%s's): under runsc a pod is one sandbox with one network "
				      "identity, so its app containers hold the sandbox's secrets",
				      id, mine_names, pod_names, sandbox);
	}
	if (!pod || pod->len == 0)
		return 0;
	/* Else the Sentry's cgroup v2 is its caller's, which host processes share. */
	secret_names(pod, pod_names, sizeof(pod_names));
	if (hybrid_host() && !hezo_json_string(hezo_json_get(srec, "unifiedCgroup")))
		return hezo_error_set(
			err, EPERM,
			"container %s: its pod's sandbox %s has no cgroup v2 of its "
			"own (systemd's cgroup names, or an older hezo-shim made it): "
			"proxyd could not tell the pod's connections from the host's, "
			"so the pod gets no secrets (%s)",
			id, sandbox, pod_names);
	/* The sandbox's wire form as it is, placeholders too: proxyd takes alike members as one. */
	copy = hezo_json_clone(pod);
	if (!copy)
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = shim_secrets_set_env(hezo_json_get_type(spec, "process", HEZO_JSON_OBJECT), copy);
	if (r < 0)
		return hezo_error_set(err, -r, "config.json: process.env: cannot set secrets");
	hezo_json_free(*secrets);
	*secrets = TAKE_PTR(copy);
	return 0;
}

/* The sandbox's pid (by runsc) and, where its record says, its memory cgroup holding it. */
static int sandbox_of(struct shim_ctx *ctx, const struct shim_target *t, const char *sandbox,
		      long *pid, uint64_t *start, char memcg[PATH_MAX], struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *srec = NULL;
	_cleanup_free_ char *status = NULL;
	int r;

	memcg[0] = '\0';
	r = shim_runsc_state(ctx, t, sandbox, &status, pid, err);
	if (r == -ENOENT || (r == 0 && (*pid <= 0 || strcmp(status, "running") != 0)))
		return hezo_error_set(err, ESRCH, "the pod's sandbox %s is not running", sandbox);
	if (r < 0)
		return r;
	if (shim_proc_start_time(*pid, start) < 0)
		return hezo_error_set(err, ESRCH, "the pod's sandbox %s (pid %ld) is gone", sandbox,
				      *pid);
	if (shim_record_read(ctx, sandbox, &srec, NULL) == 0 &&
	    (shim_record_cgroup(srec, "memory", memcg, PATH_MAX) < 0 ||
	     shim_cgroup_holds(memcg, *pid, NULL) != 1))
		memcg[0] = '\0';
	return 0;
}

int shim_runsc_pod_pidns(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
			 const char *sandbox, struct hezo_json *spec, struct hezo_json *input,
			 char **path, struct hezo_error **err)
{
	struct hezo_json *ns = hezo_spec_namespace(spec, "pid");
	const char *p = hezo_json_string(hezo_json_get(ns, "path"));
	char memcg[PATH_MAX], want[64];
	uint64_t start;
	long pid = 0;
	int r;

	*path = NULL;
	if (!p || !*p)
		return 0;
	r = sandbox_of(ctx, t, sandbox, &pid, &start, memcg, err);
	if (r < 0)
		return hezo_error_prefix(err, "container %s", id);
	snprintf(want, sizeof(want), "/proc/%ld/ns/pid", pid);
	if (strcmp(p, want) != 0)
		return hezo_error_set(
			err, EPERM,
			"container %s: linux.namespaces: pid path %s is not its pod's "
			"sandbox's (%s): under runsc an app container shares a PID "
			"namespace only with its own pod",
			id, p, want);
	*path = strdup(p);
	if (!*path)
		return hezo_error_set(err, ENOMEM, "out of memory");
	/* Judged without it: not a namespace the box joins on the host (see shim.h). */
	(void)hezo_json_remove(ns, "path");
	(void)hezo_json_remove(hezo_spec_namespace(input, "pid"), "path");
	return 0;
}

/*
 * cgroup.procs of this process's own cgroup of controller (v1; "" for the unified hierarchy's
 * line) under mount: where the waiter's runsc calls go, where the shim goes back after create.
 */
static void home_procs(const char *controller, const char *mount, char out[PATH_MAX])
{
	_cleanup_free_ char *data = NULL;
	size_t len, clen = strlen(controller);

	out[0] = '\0';
	if (hezo_read_file_at(AT_FDCWD, "/proc/self/cgroup", 65536, &data, &len, NULL) < 0)
		return;
	for (char *line = data, *next; line && *line; line = next) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!c2 || (size_t)(c2 - c1 - 1) != clen || strncmp(c1 + 1, controller, clen) != 0)
			continue;
		if (!strstr(c2 + 1, "/..") &&
		    snprintf(out, PATH_MAX, "%s%s/cgroup.procs", mount,
			     strcmp(c2 + 1, "/") == 0 ? "" : c2 + 1) >= PATH_MAX)
			out[0] = '\0';
		return;
	}
}

static int write_pid(const char *dir, long pid, struct hezo_error **err)
{
	char path[PATH_MAX + 16], s[32];
	_cleanup_close_ int fd = -1;
	int n = snprintf(s, sizeof(s), "%ld\n", pid);

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || hezo_write_all(fd, s, (size_t)n) < 0)
		return hezo_error_set_errno(err, errno, "%s", path);
	return 0;
}

/* The pid file as runc writes it: the pid alone, renamed into place. */
static int write_pid_file(const char *path, long pid, struct hezo_error **err)
{
	_cleanup_free_ char *copy = strdup(path);
	_cleanup_close_ int dfd = -1;
	char *slash, s[32];
	int n = snprintf(s, sizeof(s), "%ld", pid);

	if (!copy)
		return hezo_error_set(err, ENOMEM, "out of memory");
	slash = strrchr(copy, '/');
	if (slash == copy)
		dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else if (slash) {
		*slash = '\0';
		dfd = open(copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else
		dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return hezo_error_set_errno(err, errno, "pid file %s", path);
	return hezo_write_file_atomic_at(dfd, slash ? slash + 1 : copy, s, (size_t)n, 0644, err);
}

int shim_runsc_pod_unified(const struct hezo_json *spec, bool systemd, char dir[PATH_MAX],
			   struct hezo_error **err)
{
	const struct hezo_json *ann = hezo_json_get_type(spec, "annotations", HEZO_JSON_OBJECT);
	const char *type, *cg = hezo_json_string(hezo_json_get_path(spec, "linux.cgroupsPath"));
	int r;

	dir[0] = '\0';
	r = agreed(ann, type_keys, &type, err);
	if (r < 0)
		return r;
	/* A cgroup v2 host: runsc places the sandbox itself. systemd's names: not done. */
	if (!type || strcmp(type, "sandbox") != 0 || systemd || !cg || !hybrid_host())
		return 0;
	if (shim_cgroup_dir("/sys/fs/cgroup", cg, false, "unified", dir, PATH_MAX) < 0) {
		dir[0] = '\0';
		return hezo_error_set(err, EINVAL, "linux.cgroupsPath \"%s\": not a cgroupfs path",
				      cg);
	}
	return 1;
}

int shim_runsc_pod_cgroup_enter(const char *dir, char home[PATH_MAX], struct hezo_error **err)
{
	int r;

	home_procs("", UNIFIED, home);
	if (!home[0])
		return hezo_error_set(err, ENOENT, "/proc/self/cgroup: no unified hierarchy line");
	r = hezo_mkdir_p(dir, 0755, 0755);
	if (r < 0)
		return hezo_error_set_errno(err, -r, "cgroup %s", dir);
	r = write_pid(dir, (long)getpid(), err);
	if (r < 0) {
		(void)rmdir(dir);
		home[0] = '\0';
	}
	return r;
}

void shim_runsc_pod_cgroup_leave(const char *home)
{
	_cleanup_close_ int fd = open(home, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	char s[32];
	int n = snprintf(s, sizeof(s), "%ld\n", (long)getpid());

	if (fd >= 0)
		(void)hezo_write_all(fd, s, (size_t)n);
}

void shim_runsc_pod_cgroup_remove(struct shim_ctx *ctx, const char *id, const struct hezo_json *rec)
{
	const char *dir = hezo_json_string(hezo_json_get(rec, "unifiedCgroup"));

	if (dir && rmdir(dir) < 0 && errno != ENOENT)
		shim_log(ctx, "warning", "container %s: cgroup %s stays: %s", id, dir,
			 strerror(errno));
}

/*
 * fork, setsid, fork: the waiter is nobody's child here and is adopted by the nearest subreaper
 * (containerd's shim). It gets the FIFO at fd 3, /dev/null for stdio and nothing else of ours.
 * It stays in the shim's mount namespace, which holds the container's staged root and binds:
 * runsc starts an app container's gofer at start, not at create, and start runs it in there.
 */
static int spawn_waiter(char *const argv[], int fifo, long *out, struct hezo_error **err)
{
	int report[2], st, e = 0;
	pid_t mid, pid = 0;
	ssize_t n;

	if (pipe2(report, O_CLOEXEC) < 0)
		return hezo_error_set_errno(err, errno, "pipe");
	mid = fork();
	if (mid < 0) {
		e = errno;
		close(report[0]);
		close(report[1]);
		return hezo_error_set_errno(err, e, "fork");
	}
	if (mid == 0) {
		pid_t w;

		close(report[0]);
		if (setsid() < 0)
			_exit(1);
		w = fork();
		if (w == 0) {
			int null = open("/dev/null", O_RDWR | O_CLOEXEC);
			int f = fcntl(fifo, F_DUPFD_CLOEXEC, 10);
			sigset_t none;

			sigemptyset(&none);
			sigprocmask(SIG_SETMASK, &none, NULL);
			for (int s = 1; s < NSIG; s++)
				if (s != SIGKILL && s != SIGSTOP)
					signal(s, SIG_DFL);
			/* The container's stdio, as create got it, for start to hand runsc (4-6).
			 */
			if (null < 0 || f < 0 || dup2(0, 4) < 0 || dup2(1, 5) < 0 ||
			    dup2(2, 6) < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
			    dup2(null, 2) < 0 || dup2(f, 3) < 0 || chdir("/") < 0) {
				e = errno;
			} else {
				/* Everything else of ours closes at exec. */
				for (int fd = 7; fd < 1024; fd++)
					if (fd != report[1])
						(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
				execv(argv[0], argv);
				e = errno;
			}
			(void)!write(report[1], &e, sizeof(e));
			_exit(127);
		}
		(void)!write(report[1], &w, sizeof(w));
		_exit(w < 0);
	}
	close(report[1]);
	while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
		;
	do
		n = read(report[0], &pid, sizeof(pid));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(pid) && pid > 0) {
		/* EOF at the waiter's exec, else its errno. */
		do
			n = read(report[0], &e, sizeof(e));
		while (n < 0 && errno == EINTR);
	}
	close(report[0]);
	if (pid <= 0)
		return hezo_error_set(err, ECHILD, "the pod waiter could not be started");
	if (n == (ssize_t)sizeof(e))
		return hezo_error_set_errno(err, e, "cannot execute %s", argv[0]);
	*out = pid;
	return 0;
}

int shim_runsc_waiter_helper(char *buf, size_t size)
{
	static const char *const rel[] = {"hezo-pod-wait", "../libexec/hezo/hezo-pod-wait", NULL};

	return shim_find_helper("HEZO_POD_WAIT", rel, buf, size);
}

int shim_runsc_waiter_start(struct shim_ctx *ctx, const struct shim_target *t, const char *id,
			    const char *sandbox, const char *pid_file, long *waiter,
			    struct hezo_error **err)
{
	_cleanup_strv_ struct hezo_strv av = {0}, wav = {0};
	_cleanup_close_ int pfd = -1, fifo = -1;
	char helper[PATH_MAX], memcg[PATH_MAX], home[PATH_MAX], priv[PATH_MAX];
	char spid[32], sstart[32], self[64];
	char *state_argv[] = {(char *)id, NULL};
	uint64_t start = 0, wstart = 0;
	long pid = 0;
	int r, n;

	*waiter = 0;
	if (shim_runsc_waiter_helper(helper, sizeof(helper)) < 0)
		return hezo_error_set(err, ENOENT,
				      "the pod waiter hezo-pod-wait is not installed (set "
				      "HEZO_POD_WAIT): containerd could not follow this container");
	r = sandbox_of(ctx, t, sandbox, &pid, &start, memcg, err);
	if (r < 0)
		return r;
	/* The name runsc is handed for this container, as every other verb hands it. */
	r = shim_backend_argv(ctx, t, "state", 1, state_argv, &av, err);
	if (r < 0)
		return r;
	pfd = shim_bundle_open(ctx, id, 0, priv, sizeof(priv), err);
	if (pfd < 0)
		return pfd;
	(void)unlinkat(pfd, WAIT_FIFO, 0);
	if (mkfifoat(pfd, WAIT_FIFO, 0600) < 0)
		return hezo_error_set_errno(err, errno, "%s/%s", priv, WAIT_FIFO);
	/* Read and write: the waiter never sees an end of file, only the bytes written. */
	fifo = openat(pfd, WAIT_FIFO, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fifo < 0)
		return hezo_error_set_errno(err, errno, "%s/%s", priv, WAIT_FIFO);
	home_procs("memory", "/sys/fs/cgroup/memory", home);
	snprintf(spid, sizeof(spid), "%ld", pid);
	snprintf(sstart, sizeof(sstart), "%" PRIu64, start);
	r = hezo_strv_push(&wav, helper);
	r = r ?: hezo_strv_push(&wav, "3");
	r = r ?: hezo_strv_push(&wav, spid);
	r = r ?: hezo_strv_push(&wav, sstart);
	r = r ?: hezo_strv_push(&wav, memcg[0] && home[0] ? home : "-");
	r = r ?: hezo_strv_push(&wav, av.v[av.n - 1]);
	r = r ?: hezo_strv_push(&wav, "--");
	for (size_t i = 0; r == 0 && i + 2 < av.n; i++)
		r = hezo_strv_push(&wav, av.v[i]);
	if (r < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	r = spawn_waiter(wav.v, fifo, waiter, err);
	if (r < 0)
		return r;
	/* start finds the waiter, and so the staged mounts, by this (pid and start time). */
	if (shim_proc_start_time(*waiter, &wstart) < 0) {
		kill((pid_t)*waiter, SIGKILL);
		return hezo_error_set(err, ESRCH, "the pod waiter (pid %ld) ended at once",
				      *waiter);
	}
	n = snprintf(self, sizeof(self), "%ld %" PRIu64 "\n", *waiter, wstart);
	r = hezo_write_private_file_at(pfd, WAIT_PID, self, (size_t)n, err);
	if (r < 0) {
		kill((pid_t)*waiter, SIGKILL);
		return r;
	}
	/*
	 * In the sandbox's memory cgroup, the pod's: containerd's shim watches the cgroup of the
	 * pid it is given for OOM events, and the pod's memory cap is where the Sentry is killed.
	 */
	if (memcg[0] && write_pid(memcg, *waiter, err) < 0) {
		shim_log(ctx, "warning", "container %s: %s: OOM kills will not be reported", id,
			 (*err)->msg);
		hezo_error_free(TAKE_PTR(*err));
	}
	r = write_pid_file(pid_file, *waiter, err);
	if (r < 0) {
		kill((pid_t)*waiter, SIGKILL);
		return r;
	}
	return 0;
}

void shim_runsc_waiter_tell(const struct shim_ctx *ctx, const char *id, char what)
{
	_cleanup_close_ int pfd = -1, fd = -1;
	char priv[PATH_MAX];

	pfd = shim_bundle_open(ctx, id, 0, priv, sizeof(priv), NULL);
	if (pfd < 0)
		return;
	/* ENXIO: no reader, the waiter has ended; ENOENT: the container has none. */
	fd = openat(pfd, WAIT_FIFO, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0)
		(void)!write(fd, &what, 1);
}

int shim_runsc_waiter_enter(const struct shim_ctx *ctx, const char *id, int stdio[3],
			    struct hezo_error **err)
{
	_cleanup_close_ int pfd = -1, ns = -1;
	_cleanup_free_ char *data = NULL;
	char priv[PATH_MAX], path[64];
	unsigned long long start = 0;
	uint64_t now = 0;
	long pid = 0;
	size_t len;

	pfd = shim_bundle_open(ctx, id, 0, priv, sizeof(priv), NULL);
	if (pfd < 0 || hezo_read_file_at(pfd, WAIT_PID, 64, &data, &len, NULL) < 0)
		return 0;
	if (sscanf(data, "%ld %llu", &pid, &start) != 2 || pid <= 0)
		return hezo_error_set(err, EINVAL, "container %s: %s/%s: not a pid and start time",
				      id, priv, WAIT_PID);
	/* Opened first, then the pid's start time: a pid taken by another since fails here. */
	snprintf(path, sizeof(path), "/proc/%ld/ns/mnt", pid);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0 || shim_proc_start_time(pid, &now) < 0 || now != start)
		return hezo_error_set(err, ESRCH,
				      "container %s: its pod waiter (pid %ld) is gone, and with it "
				      "the container's staged mounts",
				      id, pid);
	/*
	 * runsc hands an app container the stdio of `runsc start`, not of create; containerd's
	 * shim gave the container's to create and reads start's output to its end. The waiter
	 * keeps create's (fds 4-6): they become ours for runsc.
	 */
	for (int i = 0; i < 3; i++) {
		_cleanup_close_ int fd = -1;

		snprintf(path, sizeof(path), "/proc/%ld/fd/%d", pid, 4 + i);
		fd = open(path, (i == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
		if (fd < 0)
			return hezo_error_set_errno(err, errno, "container %s: its stdio from %s",
						    id, path);
		if (stdio[i] >= 0)
			close(stdio[i]);
		stdio[i] = TAKE_FD(fd);
	}
	if (shim_proc_start_time(pid, &now) < 0 || now != start)
		return hezo_error_set(err, ESRCH, "container %s: its pod waiter (pid %ld) is gone",
				      id, pid);
	if (setns(ns, CLONE_NEWNS) < 0)
		return hezo_error_set_errno(err, errno, "container %s: the pod waiter's mounts",
					    id);
	return 1;
}

int shim_runsc_pod_own_limits(const struct hezo_json *spec, const char *id, const char *sandbox,
			      struct hezo_error **err)
{
	static const char *const keys[] = {"org.hezo.memory", "org.hezo.pids", "org.hezo.cpus"};
	const struct hezo_json *ann = hezo_json_get_type(spec, "annotations", HEZO_JSON_OBJECT);

	/*
	 * One Sentry runs the whole pod in the sandbox's host cgroup, and runsc makes none for an
	 * app container: a ceiling of its own would be recorded and hold nothing.
	 */
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (hezo_json_get(ann, keys[i]))
			return hezo_error_set(err, EOPNOTSUPP,
					      "container %s: annotation %s cannot hold in a runsc "
					      "pod's app container: the pod's limits are its "
					      "sandbox's (%s); set it on the pod",
					      id, keys[i], sandbox);
	return 0;
}

int shim_runsc_pod_sandbox_record(const struct shim_ctx *ctx, const struct hezo_json *rec,
				  struct hezo_json **srec)
{
	const char *sandbox = NULL;
	const char *backend = hezo_json_string(hezo_json_get(rec, "backend"));

	*srec = NULL;
	if (!backend || strcmp(backend, "runsc") != 0 ||
	    shim_runsc_pod_app(rec, &sandbox, NULL) <= 0 || shim_validate_id(sandbox, NULL) < 0)
		return 0;
	return shim_record_read(ctx, sandbox, srec, NULL) == 0 ? 1 : 0;
}
