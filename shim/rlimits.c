/*
 * A box's rlimits when its user namespace is its own: runc sets them with prlimit from the host's
 * root, which the kernel allows into a namespace another uid owns only with CAP_SYS_RESOURCE
 * (hosts may withhold it), so the shim sets them instead: on the backend's process before execve
 * (the box inherits them), then, for a created box, once more on its init from inside its user
 * namespace, where runc's Go runtime had raised the soft RLIMIT_NOFILE to the hard one.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim.h"

static const struct {
	const char *name;
	int res;
} names[] = {
	{"RLIMIT_AS", RLIMIT_AS},
	{"RLIMIT_CORE", RLIMIT_CORE},
	{"RLIMIT_CPU", RLIMIT_CPU},
	{"RLIMIT_DATA", RLIMIT_DATA},
	{"RLIMIT_FSIZE", RLIMIT_FSIZE},
	{"RLIMIT_LOCKS", RLIMIT_LOCKS},
	{"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
	{"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
	{"RLIMIT_NICE", RLIMIT_NICE},
	{"RLIMIT_NOFILE", RLIMIT_NOFILE},
	{"RLIMIT_NPROC", RLIMIT_NPROC},
	{"RLIMIT_RSS", RLIMIT_RSS},
	{"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
	{"RLIMIT_RTTIME", RLIMIT_RTTIME},
	{"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
	{"RLIMIT_STACK", RLIMIT_STACK},
};

int shim_rlimits_parse(const struct hezo_json *arr, struct shim_rlimits *out,
		       struct hezo_error **err)
{
	out->n = 0;
	if (!arr)
		return 0;
	if (arr->type != HEZO_JSON_ARRAY)
		return hezo_error_set(err, EINVAL, "process.rlimits: expected an array");
	HEZO_JSON_FOREACH (i, arr) {
		const struct hezo_json *e = arr->items[i];
		const char *type = hezo_json_string(hezo_json_get(e, "type"));
		uint64_t hard = 0, soft = 0;
		size_t k;

		for (k = 0; type && k < HEZO_ARRAY_SIZE(names); k++)
			if (strcmp(names[k].name, type) == 0)
				break;
		if (!type || k == HEZO_ARRAY_SIZE(names))
			return hezo_error_set(err, EINVAL, "process.rlimits[%zu]: unknown type", i);
		/* runc reads an absent value as 0. */
		if ((hezo_json_get(e, "hard") &&
		     hezo_json_get_uint64(hezo_json_get(e, "hard"), &hard) < 0) ||
		    (hezo_json_get(e, "soft") &&
		     hezo_json_get_uint64(hezo_json_get(e, "soft"), &soft) < 0))
			return hezo_error_set(err, EINVAL,
					      "process.rlimits[%zu]: expected whole numbers", i);
		if (out->n == HEZO_ARRAY_SIZE(out->v))
			return hezo_error_set(err, E2BIG, "process.rlimits: too many entries");
		/* A later entry of the same type wins, as runc sets them in order. */
		out->v[out->n].res = names[k].res;
		out->v[out->n].lim.rlim_cur = (rlim_t)soft;
		out->v[out->n].lim.rlim_max = (rlim_t)hard;
		out->n++;
	}
	return 0;
}

int shim_rlimits_take(struct hezo_json *process, struct shim_rlimits *out, struct hezo_error **err)
{
	int r = shim_rlimits_parse(hezo_json_get(process, "rlimits"), out, err);

	if (r < 0)
		return r;
	(void)hezo_json_remove(process, "rlimits");
	return 0;
}

int shim_rlimits_apply_self(const struct shim_rlimits *rl)
{
	for (size_t i = 0; rl && i < rl->n; i++)
		if (setrlimit(rl->v[i].res, &rl->v[i].lim) < 0)
			return -errno;
	return 0;
}

/* In a child: join the box's user namespace (where root's prlimit is its owner's), set, exit. */
static void fix_child(int nsfd, pid_t pid, const struct shim_rlimits *rl)
{
	if (setns(nsfd, CLONE_NEWUSER) < 0)
		_exit(1);
	for (size_t i = 0; i < rl->n; i++)
		if (prlimit(pid, rl->v[i].res, &rl->v[i].lim, NULL) < 0)
			_exit(2);
	_exit(0);
}

int shim_rlimits_fix(pid_t pid, const struct shim_userns *u, const struct shim_rlimits *rl,
		     struct hezo_error **err)
{
	_cleanup_close_ int nsfd = -1, mapfd = -1;
	char path[64], buf[128] = {0};
	unsigned long inside, base, size;
	int status = 0;
	ssize_t n;
	pid_t child;

	if (!rl || rl->n == 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	mapfd = nsfd < 0 ? -1 : open(path, O_RDONLY | O_CLOEXEC);
	n = mapfd < 0 ? -1 : read(mapfd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return hezo_error_set_errno(err, errno ?: EIO, "the box's init (pid %d)", (int)pid);
	/* Only a process of this box's range: the pid read from the backend's state may be gone. */
	if (sscanf(buf, "%lu %lu %lu", &inside, &base, &size) != 3 || inside != 0 ||
	    base != u->base || size != u->size)
		return hezo_error_set(err, ESRCH, "the box's init (pid %d): not in its namespace",
				      (int)pid);
	child = fork();
	if (child < 0)
		return hezo_error_set_errno(err, errno, "fork");
	if (child == 0)
		fix_child(nsfd, pid, rl);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return hezo_error_set(err, EPERM,
				      "the box's rlimits could not be set on its init (helper "
				      "status %d)",
				      status);
	return 0;
}
