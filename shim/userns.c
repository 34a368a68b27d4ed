/*
 * A user namespace of its own for each runc box: a range of host uids and gids no other recorded
 * box on the machine holds (picked under the records lock and the machine-wide registry's, kept in
 * the box's record until delete), and the
 * namespace itself, made by the shim with the box's own user.max_* limits and handed to the
 * backend by path. The box then draws on per-user kernel counters of its own, never host root's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hezo-file.h"
#include "hezo-spec.h"
#include "shim.h"

/*
 * Far above any account an installer hands out (/etc/subuid ranges start at 100000,
 * systemd-nspawn's end below 0x70000000), one 65536-id block per box, and never 4294967295 (which
 * is (uid_t)-1).
 */
#define USERNS_BASE  UINT32_C(0x80000000)
#define USERNS_SIZE  UINT32_C(65536)
#define USERNS_SLOTS 16384u

bool shim_userns_wanted(const struct shim_target *t, const struct hezo_json *spec)
{
	const struct hezo_json *ns = hezo_spec_namespace(spec, "user");
	const char *path = ns ? hezo_json_string(hezo_json_get(ns, "path")) : NULL;

	/* runsc keeps these counters inside its Sentry; a namespace joined by path is its owner's.
	 */
	return (t->backend == HEZO_BACKEND_RUNC || t->backend == HEZO_BACKEND_CRUN) &&
	       !(path && *path);
}

/* The slots [*first, *last] that ids lo..lo+n-1 fall in; false: none. */
static bool range_slots(uint64_t lo, uint64_t n, uint64_t *first, uint64_t *last)
{
	uint64_t hi = lo + n, end = (uint64_t)USERNS_BASE + (uint64_t)USERNS_SIZE * USERNS_SLOTS;

	if (n == 0 || hi <= USERNS_BASE || lo >= end)
		return false;
	if (lo < USERNS_BASE)
		lo = USERNS_BASE;
	if (hi > end)
		hi = end;
	*first = (lo - USERNS_BASE) / USERNS_SIZE;
	*last = (hi - 1 - USERNS_BASE) / USERNS_SIZE;
	return true;
}

static void take_range(uint8_t *taken, uint64_t lo, uint64_t n)
{
	uint64_t first, last;

	if (range_slots(lo, n, &first, &last))
		memset(taken + first, 1, last - first + 1);
}

/* Would take_range(taken, lo, n) set nothing new? */
static bool range_taken(const uint8_t *taken, uint64_t lo, uint64_t n)
{
	uint64_t first, last;

	if (!range_slots(lo, n, &first, &last))
		return true;
	for (uint64_t s = first; s <= last; s++)
		if (!taken[s])
			return false;
	return true;
}

/* Host accounts and the ranges handed to other tools: /etc/passwd, group, subuid, subgid. */
static void take_host_ids(uint8_t *taken, const char *file, int field, bool range)
{
	char line[1024];
	FILE *f = fopen(file, "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL, *tok = strtok_r(line, ":\n", &save);
		uint64_t lo = 0, n = 1;

		for (int i = 0; tok && i < field; i++)
			tok = strtok_r(NULL, ":\n", &save);
		if (!tok)
			continue;
		lo = strtoull(tok, NULL, 10);
		if (range) {
			tok = strtok_r(NULL, ":\n", &save);
			n = tok ? strtoull(tok, NULL, 10) : 0;
		}
		take_range(taken, lo, n);
	}
	fclose(f);
}

static int take_recorded(void *data, const char *key, struct hezo_json *rec)
{
	uint64_t base = 0, size = 0;

	(void)key;
	if (hezo_json_get_uint64(hezo_json_get_path(rec, "userns.base"), &base) == 0 &&
	    hezo_json_get_uint64(hezo_json_get_path(rec, "userns.size"), &size) == 0)
		take_range(data, base, size);
	return 0;
}

/*
 * The registry directory, made root's and 0700 when missing, opened without following a link and
 * refused unless it is a directory only root can change: it says which ranges are taken for every
 * shim on the machine, whatever its state directory. Returned locked.
 */
static int registry_open(struct hezo_error **err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (mkdir(SHIM_USERNS_REGISTRY, 0700) < 0 && errno != EEXIST)
		return hezo_error_set_errno(err, errno, "%s", SHIM_USERNS_REGISTRY);
	fd = open(SHIM_USERNS_REGISTRY, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "%s", SHIM_USERNS_REGISTRY);
	if (fstat(fd, &st) < 0)
		return hezo_error_set_errno(err, errno, "%s", SHIM_USERNS_REGISTRY);
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return hezo_error_set(err, EPERM,
				      "%s: not the shim's own directory (owner %u, mode %o): "
				      "remove it",
				      SHIM_USERNS_REGISTRY, (unsigned)st.st_uid,
				      (unsigned)(st.st_mode & 07777));
	if (flock(fd, LOCK_EX) < 0)
		return hezo_error_set_errno(err, errno, "%s: lock", SHIM_USERNS_REGISTRY);
	return TAKE_FD(fd);
}

/* An entry's name: the range's base, and a hash of the record's path (a joined range has two). */
static int entry_name(const struct shim_ctx *ctx, const char *id, const struct shim_userns *u,
		      char *path, size_t psize, char name[32])
{
	int r = shim_record_path(ctx, id, path, psize);

	if (r < 0)
		return r;
	snprintf(name, 32, "%08" PRIx32 "-%016" PRIx64, u->base, shim_fnv1a64(path));
	return 0;
}

/* Does the live box of the record at path still hold the range at base? */
static bool entry_holds(int reg, const char *name, uint64_t base)
{
	_cleanup_free_ char *path = NULL, *data = NULL;
	_cleanup_json_ struct hezo_json *rec = NULL;
	uint64_t b = 0;
	size_t len;

	if (hezo_read_regular_file_at(reg, name, PATH_MAX, &path, &len, NULL) < 0 || len == 0 ||
	    path[0] != '/' || path[len - 1] != '\n')
		return false;
	path[len - 1] = '\0';
	if (hezo_read_regular_file_at(AT_FDCWD, path, SHIM_RECORD_MAX, &data, &len, NULL) < 0 ||
	    hezo_json_parse(data, len, &rec, NULL) < 0)
		return false;
	/* A box whose processes are all gone holds no namespace: its range is free again. */
	return hezo_json_get_uint64(hezo_json_get_path(rec, "userns.base"), &b) == 0 && b == base &&
	       shim_record_live(rec);
}

/* Ranges the registry's live entries hold; the others (their records gone) are removed. */
static int take_registered(int reg, uint8_t *taken)
{
	int dfd = fcntl(reg, F_DUPFD_CLOEXEC, 0);
	struct dirent *e;
	DIR *d;

	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		int r = -errno;

		close(dfd);
		return r;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		uint64_t base;
		char *end;

		if (e->d_name[0] == '.')
			continue;
		base = strtoull(e->d_name, &end, 16);
		if (end != e->d_name + 8 || *end != '-')
			continue;
		/*
		 * Taken already (this state directory's records hold it, live or not): whether the
		 * entry's box still holds it changes nothing, and its record is not read again.
		 */
		if (range_taken(taken, base, USERNS_SIZE))
			continue;
		if (entry_holds(reg, e->d_name, base))
			take_range(taken, base, USERNS_SIZE);
		else
			(void)unlinkat(reg, e->d_name, 0);
	}
	closedir(d);
	return 0;
}

static int entry_write(int reg, const struct shim_ctx *ctx, const char *id,
		       const struct shim_userns *u, struct hezo_error **err)
{
	char path[PATH_MAX], name[32];
	size_t len;
	int r = entry_name(ctx, id, u, path, sizeof(path) - 1, name);

	if (r < 0)
		return hezo_error_set_errno(err, -r, "container %s: its record's path", id);
	len = strlen(path);
	path[len++] = '\n';
	r = hezo_write_state_file_at(reg, name, path, len, 0600, err);
	return r < 0 ? hezo_error_prefix(err, "%s/%s", SHIM_USERNS_REGISTRY, name) : 0;
}

int shim_userns_take(const struct shim_ctx *ctx, const char *id, bool pick, struct shim_userns *u,
		     int *lock, struct hezo_error **err)
{
	_cleanup_free_ uint8_t *taken = NULL;
	_cleanup_close_ int reg = registry_open(err);
	int r;

	if (reg < 0)
		return reg;
	if (!pick)
		goto write;
	taken = calloc(USERNS_SLOTS, 1);
	if (!taken)
		return hezo_error_set(err, ENOMEM, "out of memory");
	take_host_ids(taken, "/etc/passwd", 2, false);
	take_host_ids(taken, "/etc/group", 2, false);
	take_host_ids(taken, "/etc/subuid", 1, true);
	take_host_ids(taken, "/etc/subgid", 1, true);
	/*
	 * Every record holds its range, live or not, until delete removes the record: this state
	 * directory's records, and through the registry every other's.
	 */
	r = shim_records_foreach_brief(ctx, take_recorded, taken);
	if (r < 0)
		return hezo_error_set(err, -r, "the containers' records: cannot read them");
	r = take_registered(reg, taken);
	if (r < 0)
		return hezo_error_set_errno(err, -r, "%s", SHIM_USERNS_REGISTRY);
	for (unsigned s = 0;; s++) {
		if (s == USERNS_SLOTS)
			return hezo_error_set(err, EAGAIN,
					      "no free range of uids for the box's user namespace "
					      "(%u boxes hold one); delete stopped containers",
					      USERNS_SLOTS);
		if (!taken[s]) {
			u->base = USERNS_BASE + s * USERNS_SIZE;
			u->size = USERNS_SIZE;
			break;
		}
	}
write:
	r = entry_write(reg, ctx, id, u, err);
	if (r < 0)
		return r;
	*lock = TAKE_FD(reg);
	return 0;
}

void shim_userns_drop(const struct shim_ctx *ctx, const char *id, const struct shim_userns *u,
		      int lock)
{
	_cleanup_close_ int own = -1;
	char path[PATH_MAX], name[32];

	if (lock < 0) {
		lock = own = registry_open(NULL);
		if (lock < 0)
			return;
	}
	if (entry_name(ctx, id, u, path, sizeof(path), name) == 0)
		(void)unlinkat(lock, name, 0);
}

void shim_userns_release(const struct shim_ctx *ctx, const char *id)
{
	_cleanup_json_ struct hezo_json *rec = NULL;
	struct shim_userns u;

	if (shim_record_read(ctx, id, &rec, NULL) == 0 && shim_userns_of_record(rec, &u) == 0)
		shim_userns_drop(ctx, id, &u, -1);
}

int shim_userns_record(struct hezo_json *rec, const struct shim_userns *u)
{
	_cleanup_json_ struct hezo_json *o = hezo_json_new_object();

	if (!o || hezo_json_set(o, "base", hezo_json_new_uint(u->base)) < 0 ||
	    hezo_json_set(o, "size", hezo_json_new_uint(u->size)) < 0 ||
	    hezo_json_set(rec, "userns", TAKE_PTR(o)) < 0)
		return -ENOMEM;
	return 0;
}

int shim_userns_of_record(const struct hezo_json *rec, struct shim_userns *out)
{
	uint64_t base, size;

	if (hezo_json_get_uint64(hezo_json_get_path(rec, "userns.base"), &base) < 0 ||
	    hezo_json_get_uint64(hezo_json_get_path(rec, "userns.size"), &size) < 0 ||
	    base > UINT32_MAX || size == 0 || size > UINT32_MAX - base)
		return -ENOENT;
	out->base = (uint32_t)base;
	out->size = (uint32_t)size;
	return 0;
}

/*
 * The box's user.max_* limits: a quarter of the host's. The kernel checks each at every level up
 * to the host's, where the box counts as its namespace's owner, root: a box at its limit leaves
 * root three quarters of every one of them (inotify instances and watches, fanotify, namespaces).
 */
static const char *const limit_names[] = {
	"max_cgroup_namespaces", "max_fanotify_groups", "max_fanotify_marks",
	"max_inotify_instances", "max_inotify_watches", "max_ipc_namespaces",
	"max_mnt_namespaces",	 "max_net_namespaces",	"max_pid_namespaces",
	"max_time_namespaces",	 "max_user_namespaces", "max_uts_namespaces",
};
#define NLIMITS (sizeof(limit_names) / sizeof(limit_names[0]))

static long read_limit(const char *name)
{
	char path[96], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/user/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

/* In the child, inside the new namespace: /proc/sys/user shows the caller's namespace's set. */
static int write_limits(const long *want)
{
	for (size_t i = 0; i < NLIMITS; i++) {
		char path[96], buf[32];
		int fd, n, len;

		if (want[i] < 0)
			continue;
		snprintf(path, sizeof(path), "/proc/sys/user/%s", limit_names[i]);
		len = snprintf(buf, sizeof(buf), "%ld", want[i]);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		n = (int)write(fd, buf, (size_t)len);
		close(fd);
		if (n != len)
			return -1;
	}
	return 0;
}

static int write_map(pid_t pid, const char *which, const struct shim_userns *u)
{
	char path[64], buf[64];
	int fd, n, len;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, which);
	len = snprintf(buf, sizeof(buf), "0 %" PRIu32 " %" PRIu32 "\n", u->base, u->size);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = (int)write(fd, buf, (size_t)len);
	if (n != len) {
		int e = n < 0 ? errno : EIO;
		close(fd);
		return -e;
	}
	return close(fd) < 0 ? -errno : 0;
}

static void child(const struct shim_userns *u, int ready, int go, const long *want,
		  const char *domain)
{
	char c = 0;

	/*
	 * Owned by the box's host uid, not root: the kernel charges what the box's users hold
	 * (inotify, fanotify, namespaces, message queue bytes) to the namespace's owner at every
	 * level above it, so at the host's level the box counts as its own uid, never as root.
	 * The box's rlimits are then the shim's to set (rlimits.c), not runc's prlimit.
	 */
	if (setgroups(0, NULL) < 0 || setresgid(u->base, u->base, u->base) < 0 ||
	    setresuid(u->base, u->base, u->base) < 0)
		_exit(1);
	if (unshare(CLONE_NEWUSER) < 0)
		_exit(1);
	if (write(ready, "r", 1) != 1)
		_exit(1);
	if (read(go, &c, 1) != 1 || c != 'g')
		_exit(2);
	if (write_limits(want) < 0)
		_exit(3);
	/*
	 * The box's UTS namespace, owned by its user namespace, with the NIS domain name set: runc
	 * 1.1.5 sets none itself, and the kernel.domainname sysctl is host root's alone to write.
	 */
	if (domain && (unshare(CLONE_NEWUTS) < 0 || setdomainname(domain, strlen(domain)) < 0))
		_exit(4);
	/* Held until the shim has opened what it made. */
	if (write(ready, "d", 1) != 1 || read(go, &c, 1) != 1 || c != 'e')
		_exit(5);
	_exit(0);
}

int shim_userns_make(const struct shim_userns *u, const char *domain, int *out, int *uts,
		     struct hezo_error **err)
{
	_cleanup_close_ int nsfd = -1, utsfd = -1;
	int ready[2] = {-1, -1}, go[2] = {-1, -1}, status = 0, r = 0;
	long want[NLIMITS];
	char path[64], c = 0;
	pid_t pid;

	for (size_t i = 0; i < NLIMITS; i++) {
		long host = read_limit(limit_names[i]);
		want[i] = host < 0 ? -1 : host > 3 ? host / 4 : host;
	}
	if (pipe2(ready, O_CLOEXEC) < 0)
		return hezo_error_set_errno(err, errno, "user namespace: pipe");
	if (pipe2(go, O_CLOEXEC) < 0) {
		r = hezo_error_set_errno(err, errno, "user namespace: pipe");
		close(ready[0]);
		close(ready[1]);
		return r;
	}
	pid = fork();
	if (pid < 0) {
		r = hezo_error_set_errno(err, errno, "user namespace: fork");
		goto out;
	}
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		child(u, ready[1], go[0], want, domain);
	}
	close(TAKE_FD(ready[1]));
	close(TAKE_FD(go[0]));
	if (read(ready[0], &c, 1) != 1) {
		r = hezo_error_set(err, EPERM, "user namespace: the helper could not make it");
		goto reap;
	}
	r = write_map(pid, "uid_map", u);
	r = r ?: write_map(pid, "gid_map", u);
	if (r < 0) {
		r = hezo_error_set_errno(err, -r, "user namespace: writing its uid and gid maps");
		goto reap;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0) {
		r = hezo_error_set_errno(err, errno, "user namespace: %s", path);
		goto reap;
	}
	if (write(go[1], "g", 1) != 1) {
		r = hezo_error_set_errno(err, errno, "user namespace: the helper");
		goto reap;
	}
	if (read(ready[0], &c, 1) != 1 || c != 'd') {
		r = -EPERM; /* the helper's status says which step */
		goto reap;
	}
	if (domain) {
		snprintf(path, sizeof(path), "/proc/%d/ns/uts", (int)pid);
		utsfd = open(path, O_RDONLY | O_CLOEXEC);
		if (utsfd < 0) {
			r = hezo_error_set_errno(err, errno, "UTS namespace: %s", path);
			goto reap;
		}
	}
	if (write(go[1], "e", 1) != 1) {
		r = hezo_error_set_errno(err, errno, "user namespace: the helper");
		goto reap;
	}
reap:
	if (r < 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r == -EPERM && WIFEXITED(status) && WEXITSTATUS(status) == 4)
		r = hezo_error_set(err, EPERM,
				   "UTS namespace: the NIS domain name could not be set in it");
	else if ((r == 0 || r == -EPERM) && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		r = hezo_error_set(err, EPERM,
				   "user namespace: its user.max_* limits could not be set (helper "
				   "status %d)",
				   status);
out:
	for (int i = 0; i < 2; i++) {
		if (ready[i] >= 0)
			close(ready[i]);
		if (go[i] >= 0)
			close(go[i]);
	}
	if (r < 0)
		return r;
	*out = TAKE_FD(nsfd);
	if (uts)
		*uts = TAKE_FD(utsfd);
	return 0;
}

static struct hezo_json *one_map(const struct shim_userns *u)
{
	_cleanup_json_ struct hezo_json *arr = hezo_json_new_array(), *m = hezo_json_new_object();

	if (!arr || !m || hezo_json_set(m, "containerID", hezo_json_new_uint(0)) < 0 ||
	    hezo_json_set(m, "hostID", hezo_json_new_uint(u->base)) < 0 ||
	    hezo_json_set(m, "size", hezo_json_new_uint(u->size)) < 0 ||
	    hezo_json_append(arr, TAKE_PTR(m)) < 0)
		return NULL;
	return TAKE_PTR(arr);
}

int shim_userns_spec(struct hezo_json *spec, const struct shim_userns *u, const char *path)
{
	struct hezo_json *lx = hezo_json_ensure_object(spec, "linux");
	struct hezo_json *nss = lx ? hezo_json_ensure_array(lx, "namespaces") : NULL;
	struct hezo_json *ns = hezo_spec_namespace(spec, "user"), *v;
	unsigned long lo, hi;
	const char *ping;

	if (!nss)
		return -ENOMEM;
	if (!ns) {
		_cleanup_json_ struct hezo_json *n = hezo_json_new_object();

		if (!n || hezo_json_set(n, "type", hezo_json_new_string("user")) < 0)
			return -ENOMEM;
		ns = n;
		if (hezo_json_append(nss, TAKE_PTR(n)) < 0)
			return -ENOMEM;
	}
	if (path && hezo_json_set(ns, "path", hezo_json_new_string(path)) < 0)
		return -ENOMEM;
	/*
	 * Group ids in ping_group_range are read in the box's namespace, where only 0..size-1
	 * exist (Docker asks for 0 2147483647, which the kernel then refuses).
	 */
	v = hezo_json_get_path(spec, "linux.sysctl");
	ping = hezo_json_string(hezo_json_get(v, "net.ipv4.ping_group_range"));
	if (ping && sscanf(ping, "%lu %lu", &lo, &hi) == 2) {
		char buf[64];

		hi = hi >= u->size ? u->size - 1 : hi;
		snprintf(buf, sizeof(buf), "%lu %lu", lo > hi ? hi : lo, hi);
		if (hezo_json_set(v, "net.ipv4.ping_group_range", hezo_json_new_string(buf)) < 0)
			return -ENOMEM;
	}
	/* The caller's own mappings give way: the range is the shim's to hand out. */
	v = one_map(u);
	if (!v || hezo_json_set(lx, "uidMappings", v) < 0)
		return -ENOMEM;
	v = one_map(u);
	if (!v || hezo_json_set(lx, "gidMappings", v) < 0)
		return -ENOMEM;
	return 0;
}

/* The first line of a user namespace's uid map, read from inside it by a child. */
static int map_of(int nsfd, struct shim_userns *out)
{
	char buf[128] = {0};
	int p[2], status = 0;
	unsigned long inside, base, size;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		int fd;

		close(p[0]);
		if (setns(nsfd, CLONE_NEWUSER) < 0)
			_exit(1);
		fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			_exit(1);
		n = read(fd, buf, sizeof(buf) - 1);
		_exit(n > 0 && write(p[1], buf, (size_t)n) == n ? 0 : 1);
	}
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -EIO;
	buf[n] = '\0';
	if (sscanf(buf, "%lu %lu %lu", &inside, &base, &size) != 3 || inside != 0 || size == 0 ||
	    base > UINT32_MAX || size > UINT32_MAX - base)
		return -EINVAL;
	out->base = (uint32_t)base;
	out->size = (uint32_t)size;
	return 0;
}

int shim_userns_plan(const struct shim_target *t, const struct hezo_json *spec,
		     const struct hezo_held *held, int *join_fd, struct shim_userns *join,
		     struct hezo_error **err)
{
	struct stat host, st;
	struct statfs sfs;
	int owner = -1, r;

	*join_fd = -1;
	if (!shim_userns_wanted(t, spec))
		return SHIM_USERNS_NONE;
	/*
	 * An overlay root is staged as a new overlay over its idmapped layers with a throwaway
	 * upper layer (stage.c): only a root the box may not write can be.
	 */
	if (!hezo_json_is_true(hezo_json_get_path(spec, "root.readonly")) &&
	    fstatfs(held->root.fd, &sfs) == 0 && sfs.f_type == OVERLAYFS_SUPER_MAGIC)
		return SHIM_USERNS_NONE;
	if (stat("/proc/self/ns/user", &host) < 0)
		return hezo_error_set_errno(err, errno, "/proc/self/ns/user");
	/*
	 * A namespace joined by path is joined after the user namespace, which only works when
	 * the box's user namespace owns it: another box's, whose user namespace (and range) this
	 * one then shares. One the host's user namespace owns (an engine's pin made before the
	 * box) leaves the box in the host's, as before.
	 */
	for (size_t i = 0; i < held->nnss; i++) {
		_cleanup_close_ int fd = ioctl(held->nss[i].fd, NS_GET_USERNS);
		struct stat ost;

		if (fd < 0 && errno == EBADF) {
			_cleanup_close_ int rd = -1;
			char path[64];

			/* An O_PATH descriptor takes no ioctl: the namespace opened for reading. */
			snprintf(path, sizeof(path), "/proc/self/fd/%d", held->nss[i].fd);
			rd = open(path, O_RDONLY | O_CLOEXEC);
			fd = rd < 0 ? -1 : ioctl(rd, NS_GET_USERNS);
		}
		if (fd < 0 || fstat(fd, &st) < 0) {
			if (owner >= 0)
				close(owner);
			return hezo_error_set_errno(err, errno, "%s: its owning user namespace",
						    held->nss[i].path);
		}
		if (st.st_dev == host.st_dev && st.st_ino == host.st_ino) {
			if (owner >= 0)
				close(owner);
			return SHIM_USERNS_NONE;
		}
		if (owner < 0) {
			owner = TAKE_FD(fd);
			continue;
		}
		if (fstat(owner, &ost) < 0 || ost.st_dev != st.st_dev || ost.st_ino != st.st_ino) {
			close(owner);
			return hezo_error_set(
				err, EINVAL,
				"linux.namespaces: the namespaces joined by path belong "
				"to different user namespaces");
		}
	}
	if (owner < 0)
		return SHIM_USERNS_OWN;
	r = map_of(owner, join);
	if (r < 0) {
		close(owner);
		return hezo_error_set_errno(err, -r,
					    "the joined namespaces' user namespace: its map");
	}
	*join_fd = owner;
	return SHIM_USERNS_JOIN;
}
