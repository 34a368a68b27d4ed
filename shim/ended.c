/*
 * Why a container ended: at delete the shim reads its cgroup's counters (pids.max refusals, OOM
 * kills) and, when a limit was reached, keeps a note in STATE_DIR/ended/ that `hezo-shim inspect`
 * shows after the container is gone. Under runsc either ends the whole sandbox with a bare status.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hezo-file.h"
#include "shim.h"

#define ENDED_DIR "ended"
#define ENDED_MAX (64 * 1024)

/* The number after "key " in a cgroup file of "key value" lines; -1 when absent. */
long long shim_cgroup_counter(const char *text, const char *key)
{
	size_t n = strlen(key);

	for (const char *s = text; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
		if (strncmp(s, key, n) == 0 && s[n] == ' ')
			return strtoll(s + n + 1, NULL, 10);
	}
	return -1;
}

static int read_cg(const char *cgpath, bool systemd, const char *controller, const char *file,
		   char **out)
{
	char dir[PATH_MAX], path[PATH_MAX + 64];
	size_t len;

	*out = NULL;
	if (shim_cgroup_dir("/sys/fs/cgroup", cgpath, systemd, controller, dir, sizeof(dir)) < 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return hezo_read_file_at(AT_FDCWD, path, 4096, out, &len, NULL);
}

static void chomp(char *s)
{
	if (s)
		s[strcspn(s, "\n")] = '\0';
}

int shim_ended_check(const struct hezo_json *rec, struct hezo_json **out)
{
	_cleanup_free_ char *events = NULL, *pmax = NULL, *oom = NULL, *mlim = NULL;
	_cleanup_json_ struct hezo_json *note = NULL, *why = NULL;
	const char *cg = hezo_json_string(hezo_json_get(rec, "cgroupsPath"));
	bool sd = shim_record_systemd(rec);
	const char *backend = hezo_json_string(hezo_json_get(rec, "backend")) ?: "?";
	bool runsc = strcmp(backend, "runsc") == 0;
	long long hits = -1, kills = -1;
	char line[512];
	int r = 0;

	*out = NULL;
	if (!cg)
		return 0;
	if (read_cg(cg, sd, "pids", "pids.events", &events) == 0)
		hits = shim_cgroup_counter(events, "max");
	if (read_cg(cg, sd, "memory", "memory.oom_control", &oom) == 0)
		kills = shim_cgroup_counter(oom, "oom_kill");
	if (hits <= 0 && kills <= 0)
		return 0;
	(void)read_cg(cg, sd, "pids", "pids.max", &pmax);
	(void)read_cg(cg, sd, "memory", "memory.limit_in_bytes", &mlim);
	chomp(pmax);
	chomp(mlim);
	note = hezo_json_new_object();
	why = hezo_json_new_array();
	if (!note || !why)
		return -ENOMEM;
	if (hits > 0) {
		if (runsc)
			snprintf(line, sizeof(line),
				 "the sandbox reached the host's pids.max (%s) %lld time(s): the "
				 "Sentry could not get a host thread, and runsc then ends the "
				 "whole sandbox (exit status 2)",
				 pmax ?: "?", hits);
		else
			snprintf(line, sizeof(line),
				 "the container reached pids.max (%s) %lld time(s): those forks "
				 "failed with EAGAIN",
				 pmax ?: "?", hits);
		r = r ?: hezo_json_append(why, hezo_json_new_string(line));
	}
	if (kills > 0) {
		if (runsc)
			snprintf(line, sizeof(line),
				 "the kernel's OOM killer ran %lld time(s) at the memory limit %s "
				 "bytes: under runsc it kills the Sentry, which ends the whole "
				 "sandbox (exit status 137)",
				 kills, mlim ?: "?");
		else
			snprintf(line, sizeof(line),
				 "the kernel's OOM killer killed %lld process(es) at the memory "
				 "limit %s bytes",
				 kills, mlim ?: "?");
		r = r ?: hezo_json_append(why, hezo_json_new_string(line));
	}
	r = r ?: hezo_json_set(note, "backend", hezo_json_new_string(backend));
	r = r ?: hezo_json_set(note, "pidsMaxHits", hezo_json_new_int(hits > 0 ? hits : 0));
	r = r ?: hezo_json_set(note, "oomKills", hezo_json_new_int(kills > 0 ? kills : 0));
	if (pmax)
		r = r ?: hezo_json_set(note, "pids.max", hezo_json_new_string(pmax));
	if (mlim)
		r = r ?: hezo_json_set(note, "memory.limit_in_bytes", hezo_json_new_string(mlim));
	r = r ?: hezo_json_set(note, "reasons", TAKE_PTR(why));
	if (r < 0)
		return -ENOMEM;
	*out = TAKE_PTR(note);
	return 0;
}

/* The note's file name: the container ID, hashed when too long (as records are). */
static void note_name(const char *id, char *buf, size_t size)
{
	if (strlen(id) <= 200)
		snprintf(buf, size, "%s.json", id);
	else
		snprintf(buf, size, "%.150s#%016" PRIx64 ".json", id, shim_fnv1a64(id));
}

static int open_ended(const struct shim_ctx *ctx, bool create)
{
	_cleanup_close_ int state = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd;

	if (state < 0)
		return -errno;
	if (create && mkdirat(state, ENDED_DIR, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(state, ENDED_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

int shim_ended_write(const struct shim_ctx *ctx, const char *id, struct hezo_json *note,
		     struct hezo_error **err)
{
	_cleanup_free_ char *data = NULL;
	_cleanup_close_ int dir = -1;
	char name[256], when[64];
	time_t now = time(NULL);
	struct tm tm;
	size_t len;
	int r;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	/* "container", not "id": inspect's record search must never take a note for a record. */
	r = hezo_json_set(note, "container", hezo_json_new_string(id));
	r = r ?: hezo_json_set(note, "deleted", hezo_json_new_string(when));
	if (r < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	dir = open_ended(ctx, true);
	if (dir < 0)
		return hezo_error_set_errno(err, -dir, "state directory %s/%s", ctx->state_dir,
					    ENDED_DIR);
	r = hezo_json_dump(note, false, &data, &len, err);
	if (r < 0)
		return r;
	note_name(id, name, sizeof(name));
	return hezo_write_state_file_at(dir, name, data, len, 0600, err);
}

int shim_ended_read(const struct shim_ctx *ctx, const char *id, struct hezo_json **out)
{
	_cleanup_json_ struct hezo_json *note = NULL;
	_cleanup_free_ char *data = NULL;
	_cleanup_close_ int dir = open_ended(ctx, false);
	char name[256];
	size_t len;

	*out = NULL;
	if (dir < 0)
		return dir;
	note_name(id, name, sizeof(name));
	if (hezo_read_file_at(dir, name, ENDED_MAX, &data, &len, NULL) < 0 ||
	    hezo_json_parse(data, len, &note, NULL) < 0 ||
	    strcmp(hezo_json_string(hezo_json_get(note, "container")) ?: "", id) != 0)
		return -ENOENT;
	*out = TAKE_PTR(note);
	return 0;
}

void shim_ended_remove(const struct shim_ctx *ctx, const char *id)
{
	_cleanup_close_ int dir = open_ended(ctx, false);
	char name[256];

	if (dir < 0)
		return;
	note_name(id, name, sizeof(name));
	(void)unlinkat(dir, name, 0);
}
