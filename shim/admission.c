/*
 * Admission (policy "admission", docs/policy.md): at most maxActive live boxes, the rest waiting
 * first come first served. The count is of hezo-shim's own records that are live, decided under
 * a flock on STATE_DIR/admission.lock, so two creates never take the last slot.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "hezo-file.h"
#include "shim.h"

#define QUEUE_DIR "admission-queue"
#define LOCK_FILE "admission.lock"
#define POLL_NS	  (100 * 1000 * 1000)
#define GIB	  (1ULL << 30)

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}
#define _cleanup_dir_ _cleanup_(closedirp)

bool shim_record_systemd(const struct hezo_json *rec)
{
	const struct hezo_json *v = hezo_json_get(rec, "systemdCgroup");

	return v && v->type == HEZO_JSON_TRUE;
}

int shim_record_cgroup(const struct hezo_json *rec, const char *controller, char *buf, size_t size)
{
	const char *cg = hezo_json_string(hezo_json_get(rec, "cgroupsPath"));
	bool systemd = shim_record_systemd(rec);
	char probe[PATH_MAX];

	/* cgroup v1 (this project's hosts), else the unified hierarchy. */
	if (shim_cgroup_dir("/sys/fs/cgroup", cg, systemd, controller, buf, size) == 0 &&
	    access(buf, F_OK) == 0)
		return 0;
	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0 &&
	    shim_cgroup_dir("/sys", cg, systemd, "fs/cgroup", probe, sizeof(probe)) == 0) {
		snprintf(buf, size, "%s", probe);
		return access(buf, F_OK) == 0 ? 0 : -ENOENT;
	}
	return cg && *cg ? -ENOENT : -EINVAL;
}

/* Has the container's cgroup a process? -EINVAL: no cgroup the shim can find from the record. */
static int cgroup_populated(const struct hezo_json *rec)
{
	_cleanup_free_ char *data = NULL;
	char dir[PATH_MAX], path[PATH_MAX + 16];
	size_t len;
	int r;

	r = shim_record_cgroup(rec, "pids", dir, sizeof(dir));
	if (r == -ENOENT)
		return 0; /* the engine removed it: the container is gone */
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	r = hezo_read_file_at(AT_FDCWD, path, SHIM_RECORD_MAX, &data, &len, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	for (size_t i = 0; i < len; i++)
		if (data[i] >= '0' && data[i] <= '9')
			return 1;
	return 0;
}

bool shim_record_live(const struct hezo_json *rec)
{
	const struct hezo_json *adm = hezo_json_get(rec, "admission");
	int64_t pid = 0;
	uint64_t start = 0;
	int r;

	/* Being created: the create (the shim, then the backend it became) still runs. */
	if (hezo_json_get_int64(hezo_json_get(adm, "creator"), &pid) == 0 &&
	    hezo_json_get_uint64(hezo_json_get(adm, "creatorStart"), &start) == 0 &&
	    shim_proc_alive((long)pid, start))
		return true;
	if (hezo_json_get_int64(hezo_json_get_path(rec, "creator.pid"), &pid) == 0 &&
	    hezo_json_get_uint64(hezo_json_get_path(rec, "creator.start"), &start) == 0 &&
	    shim_proc_alive((long)pid, start))
		return true;
	/*
	 * A runsc pod's app container has no host process of its own (its cgroup stays empty):
	 * it lives as long as the waiter that stands for it (runsc-pod.c).
	 */
	if (hezo_json_get_int64(hezo_json_get_path(rec, "waiter.pid"), &pid) == 0 &&
	    hezo_json_get_uint64(hezo_json_get_path(rec, "waiter.start"), &start) == 0)
		return shim_proc_alive((long)pid, start);
	r = cgroup_populated(rec);
	if (r == -EINVAL) {
		/*
		 * No cgroup to look at (runsc without cgroupsPath, a foreground run's record): ask
		 * runc's or runsc's own state; any other backend counts, rather than let a box
		 * start past the limit.
		 */
		const char *backend = hezo_json_string(hezo_json_get(rec, "backend")) ?: "";
		const char *root = hezo_json_string(hezo_json_get(rec, "root"));
		const char *id = hezo_json_string(hezo_json_get(rec, "id"));
		bool runsc = strcmp(backend, "runsc") == 0;

		if (!id || (!runsc && strcmp(backend, "runc") != 0))
			return true;
		return shim_backend_state_alive(root ?: shim_backend_default_root(backend), id);
	}
	return r != 0;
}

/*
 * The records this process has read, parsed, by where they were and what the file was: create
 * walks the records five times or more (its two judgements, the uid ranges, admission), and a
 * record is written by rename, so a file that is still the same inode with the same size and
 * times holds the same record. One process runs one verb, so the cache lives as long as it.
 */
struct record_seen {
	char key[SHIM_KEY_LEN];
	char *name;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	struct hezo_json *rec;
};

static struct {
	struct record_seen *v;
	size_t n, alloc;
} seen;

static bool seen_same(const struct record_seen *e, const char *key, const char *name,
		      const struct stat *st)
{
	return e->ino == st->st_ino && e->dev == st->st_dev && e->size == st->st_size &&
	       e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       e->ctime.tv_sec == st->st_ctim.tv_sec && e->ctime.tv_nsec == st->st_ctim.tv_nsec &&
	       strcmp(e->key, key) == 0 && strcmp(e->name, name) == 0;
}

/* The entry for the file, or NULL; hint: where the last walk found the entry after it. */
static struct record_seen *seen_find(const char *key, const char *name, const struct stat *st,
				     size_t *hint)
{
	/* readdir gives the same order walk after walk: the next entry is almost always it. */
	if (*hint < seen.n && seen_same(&seen.v[*hint], key, name, st))
		return &seen.v[(*hint)++];
	for (size_t i = 0; i < seen.n; i++)
		if (seen_same(&seen.v[i], key, name, st)) {
			*hint = i + 1;
			return &seen.v[i];
		}
	return NULL;
}

/*
 * Read and parse one record file; NULL when it is not one (being replaced, or not ours). *kept:
 * the cache holds it; otherwise (no memory for it) the caller frees it and stops.
 */
static struct hezo_json *record_load(int dfd, const char *key, const char *name, size_t *hint,
				     bool *kept)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	_cleanup_json_ struct hezo_json *rec = NULL;
	struct record_seen *e;
	struct stat st;
	size_t len;

	*kept = false;
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	if (hezo_read_fd(fd, SHIM_RECORD_MAX, &buf, &len, NULL) < 0 ||
	    hezo_json_parse(buf, len, &rec, NULL) < 0 || rec->type != HEZO_JSON_OBJECT)
		return NULL;
	/* Out of memory for the cache only costs the next walk a read. */
	if (seen.n == seen.alloc) {
		size_t alloc = seen.alloc ? 2 * seen.alloc : 64;
		struct record_seen *v = reallocarray(seen.v, alloc, sizeof(*v));

		if (!v)
			return TAKE_PTR(rec);
		seen.v = v;
		seen.alloc = alloc;
	}
	e = &seen.v[seen.n];
	*e = (struct record_seen){.dev = st.st_dev,
				  .ino = st.st_ino,
				  .size = st.st_size,
				  .mtime = st.st_mtim,
				  .ctime = st.st_ctim,
				  .name = strdup(name)};
	if (!e->name)
		return TAKE_PTR(rec);
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->rec = TAKE_PTR(rec);
	*hint = ++seen.n;
	*kept = true;
	return e->rec;
}

/*
 * STATE_DIR/.records.index: for each record file, what fstatat says of it and the part of the
 * record that brief walks read (brief_keys), so that a create looks at 200 live boxes without
 * reading 200 records. A record is written by rename, so an entry whose file is still the same
 * inode with the same size and times holds that record's values (as the cache above); any other
 * record is read whole. Walks go by the directories themselves: the index neither hides a record
 * nor adds one. Create writes it anew under the records lock when a walk found it behind.
 *
 * One line per record, "IDENTITY\tBRIEF\n" (identity(), and compact JSON in hex), after a first
 * line naming the format; a brief is parsed only when its record is walked, and a line still true
 * is written back as it was read. Hex and a hash of the file's name, because the state directory
 * is searched for a container's ID (the suite's hezo_state_records, an admin's grep) and its
 * record file must be the one thing found.
 */
#define INDEX_FILE  ".records.index"
#define INDEX_MAX   (64 * 1024 * 1024)
#define INDEX_MAGIC "hezo-records-index 2\n"

/*
 * What shim_record_live, shim_record_cgroup and the brief walks (shim.h) read of a record; of
 * "userns" only its range ("base", "size").
 */
static const char *const brief_keys[] = {
	"id",	  "root",      "backend", "cgroupsPath", "systemdCgroup",
	"handed", "admission", "creator", "waiter",	 "userns",
};

struct index_line {
	const char *text; /* IDENTITY\tBRIEF\n, in idx.buf */
	size_t idlen, len;
	struct hezo_json *brief; /* parsed when first walked; kept for the process */
};

static struct {
	bool loaded;
	char *buf; /* the file, kept: the lines point into it */
	struct index_line *v;
	size_t n, hint;
	size_t used,
		saved; /* lines a walk took as they were; lines the index being written holds */
	bool behind;   /* a brief walk read a record whole */
} idx;

static void index_load(const struct shim_ctx *ctx)
{
	char path[PATH_MAX], *p, *end;
	size_t len, lines = 0;

	if (idx.loaded)
		return;
	idx.loaded = true;
	if ((size_t)snprintf(path, sizeof(path), "%s/" INDEX_FILE, ctx->state_dir) >=
		    sizeof(path) ||
	    hezo_read_file_at(AT_FDCWD, path, INDEX_MAX, &idx.buf, &len, NULL) < 0)
		return;
	if (len < strlen(INDEX_MAGIC) || memcmp(idx.buf, INDEX_MAGIC, strlen(INDEX_MAGIC)) != 0)
		return;
	end = idx.buf + len;
	for (p = idx.buf; p < end; p++)
		lines += *p == '\n';
	idx.v = calloc(lines, sizeof(*idx.v));
	if (!idx.v)
		return;
	for (p = idx.buf + strlen(INDEX_MAGIC); p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *tab = nl ? memchr(p, '\t', (size_t)(nl - p)) : NULL;

		if (!nl)
			break; /* a torn last line is no entry */
		if (tab)
			idx.v[idx.n++] = (struct index_line){
				.text = p, .idlen = (size_t)(tab - p), .len = (size_t)(nl + 1 - p)};
		p = nl + 1;
	}
}

/* Where each digit of a file's identity goes: the walks make one per record, a printf each cost. */
static char *put_u64(char *p, uint64_t v)
{
	char d[20];
	size_t n = 0;

	do
		d[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*p++ = d[--n];
	return p;
}

static const char hexdigit[] = "0123456789abcdef";

/* "KEY/H": the record file KEY/NAME, H the FNV-1a hash of NAME in 16 hex digits. */
static size_t file_tag(const char *key, const char *name, char *out)
{
	size_t kl = strnlen(key, SHIM_KEY_LEN - 1);
	uint64_t h = shim_fnv1a64(name);

	memcpy(out, key, kl);
	out[kl] = '/';
	for (int i = 15; i >= 0; i--, h >>= 4)
		out[kl + 1 + (size_t)i] = hexdigit[h & 15];
	return kl + 17;
}

/* "KEY/H DEV INO SIZE MTIME.NS CTIME.NS": the record file as fstatat saw it. */
#define IDENTITY_MAX (SHIM_KEY_LEN + 17 + 7 * 21 + 8)
static size_t identity(const char *key, const char *name, const struct stat *st,
		       char out[IDENTITY_MAX])
{
	char *p = out + file_tag(key, name, out);

	*p++ = ' ';
	p = put_u64(p, (uint64_t)st->st_dev);
	*p++ = ' ';
	p = put_u64(p, (uint64_t)st->st_ino);
	*p++ = ' ';
	p = put_u64(p, (uint64_t)st->st_size);
	*p++ = ' ';
	p = put_u64(p, (uint64_t)st->st_mtim.tv_sec);
	*p++ = '.';
	p = put_u64(p, (uint64_t)st->st_mtim.tv_nsec);
	*p++ = ' ';
	p = put_u64(p, (uint64_t)st->st_ctim.tv_sec);
	*p++ = '.';
	p = put_u64(p, (uint64_t)st->st_ctim.tv_nsec);
	*p = '\0';
	return (size_t)(p - out);
}

static bool line_is(const struct index_line *l, const char *id, size_t idlen)
{
	return l->idlen == idlen && memcmp(l->text, id, idlen) == 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int brief_parse(struct index_line *l)
{
	const char *hex = l->text + l->idlen + 1;
	size_t n = (l->len - l->idlen - 2) / 2;
	_cleanup_free_ char *json = malloc(n ? n : 1);

	if (!json || (l->len - l->idlen - 2) % 2)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		json[i] = (char)(hi << 4 | lo);
	}
	return hezo_json_parse(json, n, &l->brief, NULL);
}

/* The index's line for the record file as it is now, its brief parsed, or NULL. */
static struct index_line *index_find(const char *id, size_t idlen)
{
	struct index_line *l = NULL;

	/* The index is written in readdir's order: the next line is almost always it. */
	if (idx.hint < idx.n && line_is(&idx.v[idx.hint], id, idlen))
		l = &idx.v[idx.hint++];
	for (size_t i = 0; !l && i < idx.n; i++)
		if (line_is(&idx.v[i], id, idlen)) {
			l = &idx.v[i];
			idx.hint = i + 1;
		}
	if (!l)
		return NULL;
	if (!l->brief && (brief_parse(l) < 0 || l->brief->type != HEZO_JSON_OBJECT)) {
		hezo_json_free(l->brief);
		l->brief = NULL;
		l->idlen = 0; /* never again */
		return NULL;
	}
	return l;
}

/* obj[key] = v (when there is a v) without owning it: the caller empties obj's items. */
static int borrow(struct hezo_json *obj, const char *key, struct hezo_json *v)
{
	if (!v)
		return 0;
	if (hezo_json_set(obj, key, hezo_json_new_null()) < 0)
		return -ENOMEM;
	hezo_json_free(obj->items[obj->len - 1]);
	obj->items[obj->len - 1] = v;
	return 0;
}

/* Append IDENTITY\tBRIEF\n for a record read whole. */
static int index_put(FILE *w, const char *id, size_t idlen, const struct hezo_json *rec)
{
	_cleanup_json_ struct hezo_json *b = hezo_json_new_object(), *u = hezo_json_new_object();
	_cleanup_free_ char *bt = NULL, *hex = NULL;
	size_t blen;
	int r = 0;

	if (!b || !u)
		return -ENOMEM;
	/* The values are borrowed for the dump (u is ours, with borrowed members), never freed. */
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(brief_keys) && r == 0; i++) {
		struct hezo_json *v = hezo_json_get(rec, brief_keys[i]);

		if (v && v->type == HEZO_JSON_OBJECT && strcmp(brief_keys[i], "userns") == 0) {
			r = borrow(u, "base", hezo_json_get(v, "base"));
			r = r ?: borrow(u, "size", hezo_json_get(v, "size"));
			v = u;
		}
		r = r ?: borrow(b, brief_keys[i], v);
	}
	r = r ?: hezo_json_dump(b, false, &bt, &blen, NULL);
	for (size_t i = 0; i < b->len; i++)
		b->items[i] = NULL;
	for (size_t i = 0; i < u->len; i++)
		u->items[i] = NULL;
	if (r < 0)
		return r;
	hex = malloc(2 * blen + 1);
	if (!hex)
		return -ENOMEM;
	for (size_t i = 0; i < blen; i++) {
		unsigned char c = (unsigned char)bt[i];

		hex[2 * i] = hexdigit[c >> 4];
		hex[2 * i + 1] = hexdigit[c & 15];
	}
	hex[2 * blen] = '\n';
	if (fwrite(id, 1, idlen, w) != idlen || fputc('\t', w) == EOF ||
	    fwrite(hex, 1, 2 * blen + 1, w) != 2 * blen + 1)
		return -ENOMEM;
	idx.saved++;
	return 0;
}

/*
 * Every record under STATE_DIR/<key>/ in turn; fn returns < 0 to stop. fn must not change rec:
 * a record read once is handed to every later walk while its file stays the same, and stays
 * until the process ends, so fn may keep a pointer to it. A record the cache has no room for
 * ends the walk with -ENOMEM rather than be left out: every walk refuses on what it finds.
 */
static int records_walk(const struct shim_ctx *ctx,
			int (*fn)(void *data, const char *key, struct hezo_json *rec), void *data,
			bool brief, FILE *index)
{
	_cleanup_dir_ DIR *top = opendir(ctx->state_dir);
	struct dirent *k;
	size_t hint = 0;

	if (!top)
		return errno == ENOENT ? 0 : -errno;
	if (brief) {
		index_load(ctx);
		idx.hint = 0;
		idx.used = 0;
	}
	while ((k = readdir(top))) {
		_cleanup_close_ int kfd = -1;
		_cleanup_dir_ DIR *d = NULL;
		struct dirent *e;

		/* A --root's key, or "default" (no --root, or a backend's own default root). */
		if (k->d_name[0] == '.' ||
		    (strlen(k->d_name) != SHIM_KEY_LEN - 1 && strcmp(k->d_name, "default") != 0))
			continue;
		kfd = openat(dirfd(top), k->d_name,
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (kfd < 0)
			continue;
		d = fdopendir(kfd);
		if (!d)
			continue;
		kfd = -1; /* d owns it */
		while ((e = readdir(d))) {
			struct hezo_json *rec;
			struct record_seen *hit;
			struct index_line *line;
			char id[IDENTITY_MAX];
			size_t idlen = 0;
			size_t n = strlen(e->d_name);
			struct stat st;
			bool kept = true;
			int r;

			if (e->d_name[0] == '.' || n < 6 || strcmp(e->d_name + n - 5, ".json") != 0)
				continue;
			/* Looked at without opening: only a record not read yet, or changed, is. */
			if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISREG(st.st_mode))
				continue;
			hit = seen_find(k->d_name, e->d_name, &st, &hint);
			rec = hit ? hit->rec : NULL;
			line = NULL;
			if (brief) {
				idlen = identity(k->d_name, e->d_name, &st, id);
				line = index_find(id, idlen);
			}
			if (line) {
				idx.used++;
				rec = rec ?: line->brief;
			}
			if (!rec) {
				rec = record_load(dirfd(d), k->d_name, e->d_name, &hint, &kept);
				idx.behind = idx.behind || brief;
			}
			if (!rec)
				continue; /* being replaced, or not ours */
			if (!kept) {
				hezo_json_free(rec);
				return -ENOMEM;
			}
			/* A line still true goes back as it was; a record read whole gets a new
			 * one. */
			if (index && line) {
				if (fwrite(line->text, 1, line->len, index) != line->len)
					return -ENOMEM;
				idx.saved++;
			} else if (index && index_put(index, id, idlen, rec) < 0) {
				return -ENOMEM;
			}
			r = fn ? fn(data, k->d_name, rec) : 0;
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int shim_records_foreach(const struct shim_ctx *ctx,
			 int (*fn)(void *data, const char *key, struct hezo_json *rec), void *data)
{
	return records_walk(ctx, fn, data, false, NULL);
}

int shim_records_foreach_brief(const struct shim_ctx *ctx,
			       int (*fn)(void *data, const char *key, struct hezo_json *rec),
			       void *data)
{
	return records_walk(ctx, fn, data, true, NULL);
}

static void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

int shim_records_index_save(const struct shim_ctx *ctx)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_(fclosep) FILE *w = NULL;
	_cleanup_close_ int dfd = -1;
	size_t len = 0;
	int r;

	w = open_memstream(&text, &len);
	if (!w)
		return -ENOMEM;
	idx.behind = false;
	idx.used = 0;
	idx.saved = 0;
	r = fputs(INDEX_MAGIC, w) == EOF ? -ENOMEM : records_walk(ctx, NULL, NULL, true, w);
	if (r < 0)
		return r;
	/* Every record taken from the index as it was, and no line more: nothing to write. */
	if (!idx.behind && idx.used == idx.saved && idx.n == idx.saved)
		return 0;
	if (fclose(TAKE_PTR(w)) == EOF)
		return -ENOMEM;
	dfd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (idx.saved == 0)
		return unlinkat(dfd, INDEX_FILE, 0) < 0 && errno != ENOENT ? -errno : 0;
	return hezo_write_state_file_at(dfd, INDEX_FILE, text, len, 0600, NULL);
}

int shim_records_index_forget(const struct shim_ctx *ctx, const char *key, const char *name)
{
	_cleanup_free_ char *buf = NULL, *out = NULL;
	_cleanup_close_ int dfd = -1;
	char tag[SHIM_KEY_LEN + 17];
	size_t len, n = 0, tl = file_tag(key, name, tag);
	const char *p, *end;

	dfd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (hezo_read_file_at(dfd, INDEX_FILE, INDEX_MAX, &buf, &len, NULL) < 0)
		return 0; /* no index: nothing to forget */
	out = malloc(len ? len : 1);
	if (!out)
		return -ENOMEM;
	/* Every line but the file's ("KEY/H ..."); the others as they were, torn or not. */
	for (p = buf, end = buf + len; p < end;) {
		const char *nl_at = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl_at ? (size_t)(nl_at + 1 - p) : (size_t)(end - p);

		if (!(ll > tl && memcmp(p, tag, tl) == 0 && p[tl] == ' ')) {
			memcpy(out + n, p, ll);
			n += ll;
		}
		p += ll;
	}
	if (n == len)
		return 0;
	/* No record left, no index: the state directory holds nothing of a container gone. */
	if (n <= strlen(INDEX_MAGIC))
		return unlinkat(dfd, INDEX_FILE, 0) < 0 && errno != ENOENT ? -errno : 0;
	return hezo_write_state_file_at(dfd, INDEX_FILE, out, n, 0600, NULL);
}

struct count {
	char key[SHIM_KEY_LEN];
	const char *id; /* the container being created: its old record is not another box */
	unsigned active;
};

static int count_one(void *data, const char *key, struct hezo_json *rec)
{
	struct count *c = data;
	const char *id = hezo_json_string(hezo_json_get(rec, "id"));

	if (c->id && id && strcmp(key, c->key) == 0 && strcmp(id, c->id) == 0)
		return 0;
	/* A runsc pod's app container runs in its pod's sandbox, which is counted. */
	if (hezo_json_get(rec, "waiter"))
		return 0;
	if (shim_record_live(rec))
		c->active++;
	return 0;
}

int shim_admission_count(const struct shim_ctx *ctx, const char *id, unsigned *active)
{
	struct count c = {.id = id};
	int r;

	shim_record_key_for_root(ctx->g.root, c.key);
	r = shim_records_foreach(ctx, count_one, &c);
	*active = c.active;
	return r;
}

struct live_list {
	char key[SHIM_KEY_LEN];
	const char *id;
	struct hezo_live_cgroup *v;
	size_t n, alloc;
};

static int live_one(void *data, const char *key, struct hezo_json *rec)
{
	struct live_list *l = data;
	const char *id = hezo_json_string(hezo_json_get(rec, "id"));
	const char *cg = hezo_json_string(hezo_json_get(rec, "cgroupsPath"));
	struct hezo_live_cgroup *nv;
	char rel[PATH_MAX];

	if (l->id && id && strcmp(key, l->key) == 0 && strcmp(id, l->id) == 0)
		return 0;
	/* Whether it lives is asked only if the new cgroup nests with it (live_cgroup). */
	if (!cg || hezo_policy_cgroup_path(cg, shim_record_systemd(rec), rel, sizeof(rel)) < 0)
		return 0;
	if (l->n == l->alloc) {
		size_t alloc = l->alloc ? 2 * l->alloc : 64;

		nv = reallocarray(l->v, alloc, sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->alloc = alloc;
	}
	nv = l->v;
	nv[l->n].id = id ? strdup(id) : NULL;
	nv[l->n].cgroup = strdup(rel);
	nv[l->n].data = rec;
	l->n++;
	if ((id && !nv[l->n - 1].id) || !nv[l->n - 1].cgroup)
		return -ENOMEM;
	return 0;
}

bool shim_live_cgroup(const struct hezo_live_cgroup *l)
{
	return shim_record_live(l->data);
}

void shim_live_cgroups_free(struct hezo_live_cgroup *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free((char *)v[i].id);
		free((char *)v[i].cgroup);
	}
	free(v);
}

int shim_live_cgroups(const struct shim_ctx *ctx, const char *id, struct hezo_live_cgroup **out,
		      size_t *n)
{
	struct live_list l = {.id = id};
	int r;

	shim_record_key_for_root(ctx->g.root, l.key);
	r = shim_records_foreach_brief(ctx, live_one, &l);
	if (r < 0) {
		shim_live_cgroups_free(l.v, l.n);
		return r;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

/* Queue entries are "<ticket>": 20 digits, holding "PID STARTTIME". */
struct queue {
	uint64_t first, last; /* live tickets; 0: none */
	unsigned waiting;
};

static int queue_scan(int qfd, struct queue *q)
{
	_cleanup_dir_ DIR *d = NULL;
	struct dirent *e;
	int fd = dup(qfd);

	memset(q, 0, sizeof(*q));
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		char buf[64] = {0};
		_cleanup_close_ int f = -1;
		uint64_t ticket, start = 0;
		long pid = 0;
		char *end;

		if (e->d_name[0] == '.')
			continue;
		ticket = strtoull(e->d_name, &end, 10);
		if (*end || ticket == 0)
			continue;
		f = openat(qfd, e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (f < 0 || read(f, buf, sizeof(buf) - 1) <= 0 ||
		    sscanf(buf, "%ld %" SCNu64, &pid, &start) != 2 ||
		    !shim_proc_alive(pid, start)) {
			/* A create that was killed while it waited: its place is free. */
			(void)unlinkat(qfd, e->d_name, 0);
			continue;
		}
		q->waiting++;
		if (!q->first || ticket < q->first)
			q->first = ticket;
		if (ticket > q->last)
			q->last = ticket;
	}
	return 0;
}

int shim_admission_queue_length(const struct shim_ctx *ctx, unsigned *waiting)
{
	_cleanup_close_ int sfd = -1, qfd = -1;
	struct queue q = {0};
	int r;

	*waiting = 0;
	sfd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0)
		return errno == ENOENT ? 0 : -errno;
	qfd = openat(sfd, QUEUE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (qfd < 0)
		return errno == ENOENT ? 0 : -errno;
	r = queue_scan(qfd, &q);
	*waiting = q.waiting;
	return r;
}

int shim_admission_limit(const struct hezo_policy *p, const struct hezo_json *spec, uint64_t *limit,
			 char *how, size_t size)
{
	struct hezo_admission a;
	struct sysinfo si;
	uint64_t cap = 0, ram, swap;

	hezo_policy_admission(p, &a);
	*limit = a.max_active;
	snprintf(how, size, "maxActive %" PRIu64 " from policy", a.max_active);
	if (!a.auto_size)
		return 0;
	if (!spec ||
	    hezo_json_get_uint64(hezo_json_get_path(spec, "linux.resources.memory.limit"), &cap) <
		    0 ||
	    cap == 0)
		return -EINVAL;
	if (sysinfo(&si) < 0)
		return -errno;
	ram = (uint64_t)si.totalram * si.mem_unit;
	swap = (uint64_t)si.totalswap * si.mem_unit;
	*limit = ram + swap > GIB ? (ram + swap - GIB) / cap : 0;
	if (*limit == 0)
		*limit = 1; /* a machine smaller than one box still runs one */
	snprintf(how, size,
		 "maxActive auto: (RAM %.1f GiB + swap %.1f GiB - 1 GiB) / memory cap %.2f GiB = "
		 "%" PRIu64,
		 (double)ram / GIB, (double)swap / GIB, (double)cap / GIB, *limit);
	return 0;
}

static int open_state(const struct shim_ctx *ctx, int *sfd, int *lfd, int *qfd,
		      struct hezo_error **err)
{
	if (mkdir(ctx->state_dir, 0700) < 0 && errno != EEXIST)
		return hezo_error_set_errno(err, errno, "admission: state directory %s",
					    ctx->state_dir);
	*sfd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*sfd < 0)
		return hezo_error_set_errno(err, errno, "admission: state directory %s",
					    ctx->state_dir);
	*lfd = openat(*sfd, LOCK_FILE, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (*lfd < 0)
		return hezo_error_set_errno(err, errno, "admission: %s/%s", ctx->state_dir,
					    LOCK_FILE);
	if (mkdirat(*sfd, QUEUE_DIR, 0700) < 0 && errno != EEXIST)
		return hezo_error_set_errno(err, errno, "admission: %s/%s", ctx->state_dir,
					    QUEUE_DIR);
	*qfd = openat(*sfd, QUEUE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (*qfd < 0)
		return hezo_error_set_errno(err, errno, "admission: %s/%s", ctx->state_dir,
					    QUEUE_DIR);
	return 0;
}

static int set_admission(struct hezo_json *rec, const char *state, uint64_t limit)
{
	struct hezo_json *a = hezo_json_new_object();
	uint64_t start = 0;
	int r;

	if (!a)
		return -ENOMEM;
	r = hezo_json_set(rec, "admission", a);
	r = r ?: hezo_json_set(a, "state", hezo_json_new_string(state));
	r = r ?: hezo_json_set(a, "limit", hezo_json_new_uint(limit));
	if (r == 0 && shim_proc_start_time(getpid(), &start) == 0) {
		r = hezo_json_set(a, "creator", hezo_json_new_int(getpid()));
		r = r ?: hezo_json_set(a, "creatorStart", hezo_json_new_uint(start));
	}
	return r;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int shim_admission_enter(const struct shim_ctx *ctx, const struct hezo_policy *p,
			 const struct hezo_json *spec, const char *id, struct hezo_json *rec,
			 int *lock_fd, struct hezo_error **err)
{
	_cleanup_close_ int sfd = -1, lfd = -1, qfd = -1;
	struct hezo_admission a;
	uint64_t limit, ticket = 0, start, deadline;
	char how[256], name[32];
	const char *pod;
	unsigned active = 0;
	struct queue q;
	int r;

	*lock_fd = -1;
	hezo_policy_admission(p, &a);
	/* A runsc pod is one sandbox: it was admitted with its sandbox (pause) container. */
	if (hezo_policy_backend(p) == HEZO_BACKEND_RUNSC &&
	    shim_runsc_pod_app(spec, &pod, NULL) > 0)
		return set_admission(rec, "pod", 0) < 0
			       ? hezo_error_set(err, ENOMEM, "out of memory")
			       : 0;
	if (!a.max_active && !a.auto_size)
		return set_admission(rec, "unlimited", 0) < 0
			       ? hezo_error_set(err, ENOMEM, "out of memory")
			       : 0;
	r = shim_admission_limit(p, spec, &limit, how, sizeof(how));
	if (r < 0)
		return hezo_error_set(err, -r,
				      "admission: maxActive \"auto\" needs the box's memory cap "
				      "(linux.resources.memory.limit)");
	r = open_state(ctx, &sfd, &lfd, &qfd, err);
	if (r < 0)
		return r;
	if (shim_proc_start_time(getpid(), &start) < 0)
		return hezo_error_set(err, EIO, "admission: cannot read /proc/self/stat");
	deadline = now_ns() + a.wait_sec * 1000000000ULL;
	for (;;) {
		if (flock(lfd, LOCK_EX) < 0)
			return hezo_error_set_errno(err, errno, "admission: lock %s/%s",
						    ctx->state_dir, LOCK_FILE);
		/* Held from here until exec (O_CLOEXEC) or failure: the record goes in under it. */
		if (a.exempt) {
			if (set_admission(rec, "exempt", limit) < 0)
				return hezo_error_set(err, ENOMEM, "out of memory");
			*lock_fd = TAKE_FD(lfd);
			return 0;
		}
		r = queue_scan(qfd, &q);
		r = r ?: shim_admission_count(ctx, id, &active);
		if (r < 0)
			return hezo_error_set_errno(err, -r, "admission: state directory %s",
						    ctx->state_dir);
		if (!ticket && active < limit && q.waiting == 0)
			break; /* nobody waits before us */
		if (!ticket) {
			_cleanup_close_ int f = -1;
			char line[64];

			ticket = q.last + 1;
			snprintf(name, sizeof(name), "%020" PRIu64, ticket);
			snprintf(line, sizeof(line), "%ld %" PRIu64 "\n", (long)getpid(), start);
			f = openat(qfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
			if (f < 0 || hezo_write_all(f, line, strlen(line)) < 0)
				return hezo_error_set_errno(err, errno, "admission: queue %s/%s",
							    ctx->state_dir, QUEUE_DIR);
		} else if (ticket == q.first && active < limit) {
			(void)unlinkat(qfd, name, 0);
			break;
		}
		if (now_ns() >= deadline) {
			(void)unlinkat(qfd, name, 0);
			return hezo_error_set(err, EBUSY,
					      "admission: %u of %" PRIu64
					      " boxes active (%s); no slot freed in %" PRIu64
					      " s (admission.wait), refused",
					      active, limit, how, a.wait_sec);
		}
		flock(lfd, LOCK_UN);
		nanosleep(&(struct timespec){.tv_nsec = POLL_NS}, NULL);
	}
	if (set_admission(rec, "active", limit) < 0)
		return hezo_error_set(err, ENOMEM, "out of memory");
	*lock_fd = TAKE_FD(lfd);
	return 0;
}
