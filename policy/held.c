/* The objects apply judged, held open: root.path and bind sources, opened without symlinks. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "policy-internal.h"

void hezo_held_init(struct hezo_held *h)
{
	memset(h, 0, sizeof(*h));
	h->root.fd = -1;
}

static void held_path_done(struct hezo_held_path *p)
{
	free(p->path);
	p->path = NULL;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

void hezo_held_done(struct hezo_held *h)
{
	if (!h)
		return;
	held_path_done(&h->root);
	for (size_t i = 0; i < h->nbinds; i++)
		held_path_done(&h->binds[i]);
	free(h->binds);
	h->binds = NULL;
	h->nbinds = 0;
	for (size_t i = 0; i < h->nnss; i++)
		held_path_done(&h->nss[i]);
	free(h->nss);
	h->nss = NULL;
	h->nnss = 0;
}

const struct hezo_held_path *hezo_held_ns(const struct hezo_held *h, const char *path)
{
	for (size_t i = 0; h && i < h->nnss; i++)
		if (strcmp(h->nss[i].path, path) == 0)
			return &h->nss[i];
	return NULL;
}

const struct hezo_held_path *hezo_held_bind(const struct hezo_held *h, const char *path)
{
	for (size_t i = 0; h && i < h->nbinds; i++)
		if (strcmp(h->binds[i].path, path) == 0)
			return &h->binds[i];
	return NULL;
}

/* Without openat2: one component at a time from /, each opened O_PATH | O_NOFOLLOW. */
static int walk_nofollow(const char *path)
{
	_cleanup_close_ int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	const char *p = path;

	if (fd < 0)
		return -errno;
	while (*p) {
		char name[256];
		size_t n;
		struct stat st;
		int next;

		p += strspn(p, "/");
		n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n >= sizeof(name))
			return -ENAMETOOLONG;
		memcpy(name, p, n);
		name[n] = '\0';
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			return -EINVAL; /* a resolved path has neither */
		next = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return -errno;
		close(fd);
		fd = next;
		if (fstat(fd, &st) < 0)
			return -errno;
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		p += n;
	}
	return TAKE_FD(fd);
}

int hezo_open_nofollow(const char *path, struct hezo_held_path *out)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (path[0] != '/')
		return -EINVAL;
	fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (fd < 0 && (errno == ENOSYS || errno == EPERM)) /* EPERM: a seccomp filter's answer */
		fd = walk_nofollow(path);
	else if (fd < 0)
		fd = -errno;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (out) {
		out->dev = st.st_dev;
		out->ino = st.st_ino;
		out->dir = S_ISDIR(st.st_mode);
	}
	return TAKE_FD(fd);
}

int hezo_policy_hold(struct hezo_held_path *slot, const char *path, const char *what,
		     struct hezo_error **err)
{
	struct hezo_held_path h = {.fd = -1};
	int fd = hezo_open_nofollow(path, &h);

	if (fd < 0)
		return hezo_error_set_errno(err, -fd,
					    "%s %s: cannot open it without following symlinks "
					    "(it changed while it was checked)",
					    what, path);
	h.fd = fd;
	h.path = strdup(path);
	if (!h.path) {
		close(fd);
		return hezo_policy_nomem(err);
	}
	*slot = h;
	return 0;
}

int hezo_policy_hold_bind(const struct hezo_apply_env *env, const char *path, size_t idx,
			  const char *dest, struct hezo_error **err)
{
	struct hezo_held *h = env ? env->held : NULL;
	struct hezo_held_path *v;
	char what[PATH_MAX + 64];
	int r;

	if (!h || hezo_held_bind(h, path))
		return 0;
	v = realloc(h->binds, (h->nbinds + 1) * sizeof(*v));
	if (!v)
		return hezo_policy_nomem(err);
	h->binds = v;
	snprintf(what, sizeof(what), "mounts[%zu] (%s): bind source", idx, dest);
	r = hezo_policy_hold(&h->binds[h->nbinds], path, what, err);
	if (r < 0)
		return r;
	h->nbinds++;
	return 0;
}
