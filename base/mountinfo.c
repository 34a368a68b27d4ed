/* The mount table and where a path lives in it (hezo-mountinfo.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-cleanup.h"
#include "hezo-file.h"
#include "hezo-mountinfo.h"

/* A mount table far past any real one: the read is bounded, the parse linear. */
#define MOUNTINFO_MAX (64u << 20)

void hezo_mounts_free(struct hezo_mounts *m)
{
	if (!m)
		return;
	free(m->v);
	free(m->text);
	*m = (struct hezo_mounts){0};
}

/* The kernel writes space, tab, newline, backslash (and, in option values, comma) as \ooo. */
static int unescape(char *s)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			int c = (r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0');
			if (c == 0)
				return -EINVAL;
			*w++ = (char)c;
			r += 3;
		} else
			*w++ = *r;
	}
	*w = '\0';
	return 0;
}

static int number(const char *s, char end, unsigned int *out, const char **next)
{
	unsigned long v = 0;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > 0xffffffffUL)
			return -EINVAL;
	}
	if (*p != end)
		return -EINVAL;
	*out = (unsigned int)v;
	if (next)
		*next = p + 1;
	return 0;
}

/* Split off the next space-separated field of *line (NULL at the end of it). */
static char *field(char **line)
{
	char *f = *line, *sp;

	if (!f)
		return NULL;
	sp = strchr(f, ' ');
	if (sp) {
		*sp = '\0';
		*line = sp + 1;
	} else
		*line = NULL;
	return f;
}

/* overlay's upperdir= among the superblock options, unescaped in place; NULL if none. */
static int upper_of(char *opts, const char **upper)
{
	*upper = NULL;
	for (char *o = opts; o && *o;) {
		char *comma = strchr(o, ',');
		if (comma)
			*comma = '\0';
		if (strncmp(o, "upperdir=", 9) == 0) {
			int r = unescape(o + 9);
			if (r < 0)
				return r;
			*upper = o + 9;
		}
		o = comma ? comma + 1 : NULL;
	}
	return 0;
}

static int parse_line(char *line, struct hezo_mount *m)
{
	char *f[6], *sep, *opts;
	const char *mm;
	int r;

	for (size_t i = 0; i < 6; i++)
		if (!(f[i] = field(&line)))
			return -EINVAL;
	/* Optional fields (shared:N, master:N...) up to the separator. */
	do
		sep = field(&line);
	while (sep && strcmp(sep, "-") != 0);
	if (!sep)
		return -EINVAL;
	m->fstype = field(&line);
	if (!m->fstype || !field(&line))
		return -EINVAL;
	opts = line; /* the last field: may hold no spaces (escaped), but take it whole */
	r = number(f[0], '\0', &m->id, NULL);
	r = r ?: number(f[1], '\0', &m->parent, NULL);
	r = r ?: number(f[2], ':', &m->major, &mm);
	r = r ?: number(mm, '\0', &m->minor, NULL);
	r = r ?: unescape(f[3]);
	r = r ?: unescape(f[4]);
	if (r < 0)
		return r;
	m->root = f[3];
	m->point = f[4];
	if (m->point[0] != '/' || !m->root[0])
		return -EINVAL;
	m->upper = NULL;
	return strcmp(m->fstype, "overlay") == 0 ? upper_of(opts, &m->upper) : 0;
}

int hezo_mounts_parse(const char *text, size_t len, struct hezo_mounts *out)
{
	struct hezo_mounts m = {0};
	size_t cap = 0;
	char *line;
	int r = 0;

	*out = (struct hezo_mounts){0};
	m.text = malloc(len + 1);
	if (!m.text)
		return -ENOMEM;
	memcpy(m.text, text, len);
	m.text[len] = '\0';
	if (strlen(m.text) != len) {
		hezo_mounts_free(&m);
		return -EINVAL;
	}
	line = m.text;
	while (line && *line) {
		char *nl = strchr(line, '\n'), *next = nl ? nl + 1 : NULL;

		if (nl)
			*nl = '\0';
		if (m.n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			struct hezo_mount *v = reallocarray(m.v, ncap, sizeof(*v));
			if (!v) {
				r = -ENOMEM;
				break;
			}
			m.v = v;
			cap = ncap;
		}
		r = parse_line(line, &m.v[m.n]);
		if (r < 0)
			break;
		m.n++;
		line = next;
	}
	if (r < 0) {
		hezo_mounts_free(&m);
		return r;
	}
	*out = m;
	return 0;
}

int hezo_mounts_read(struct hezo_mounts *out)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	r = hezo_read_file_at(AT_FDCWD, "/proc/self/mountinfo", MOUNTINFO_MAX, &text, &len, NULL);
	return r < 0 ? r : hezo_mounts_parse(text, len, out);
}

/* Is the mount point at or above path? */
static bool covers(const char *point, const char *path)
{
	size_t n = strlen(point);

	if (strcmp(point, "/") == 0)
		return true;
	return strncmp(path, point, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static bool is_id(const struct hezo_mounts *m, unsigned int id)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].id == id)
			return true;
	return false;
}

const struct hezo_mount *hezo_mounts_locate(const struct hezo_mounts *m, const char *path,
					    char *rel, size_t size)
{
	const struct hezo_mount *cur = NULL;
	const char *tail;
	int n;

	if (path[0] != '/')
		return NULL;
	/* The namespace's root: at "/", with a parent outside the table. */
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->v[i].point, "/") == 0 && !is_id(m, m->v[i].parent))
			cur = &m->v[i];
	/*
	 * Down the tree: of the mounts on cur that the path crosses, the nearest mount point is on
	 * top (a mount made on a directory hides those made below it before; one made later below
	 * it is its child); at one mount point, the last listed.
	 */
	for (size_t steps = 0; cur && steps < m->n; steps++) {
		const struct hezo_mount *next = NULL;

		for (size_t i = 0; i < m->n; i++) {
			const struct hezo_mount *c = &m->v[i];
			if (c == cur || c->parent != cur->id || !covers(c->point, path))
				continue;
			if (!next || strlen(c->point) <= strlen(next->point))
				next = c;
		}
		if (!next)
			break;
		cur = next;
	}
	if (!cur)
		return NULL;
	tail = strcmp(cur->point, "/") == 0 ? path : path + strlen(cur->point);
	if (strcmp(tail, "/") == 0)
		tail = "";
	if (strcmp(cur->root, "/") == 0)
		n = snprintf(rel, size, "%s", tail[0] ? tail : "/");
	else
		n = snprintf(rel, size, "%s%s", cur->root, tail);
	return n < 0 || (size_t)n >= size ? NULL : cur;
}

/* What exists of path, resolved, with the part that does not exist appended. */
static int resolve(const char *path, char out[PATH_MAX])
{
	char buf[PATH_MAX];
	size_t cut;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	cut = strlen(buf);
	for (;;) {
		char *slash;

		if (realpath(buf[0] ? buf : "/", out))
			break;
		slash = strrchr(buf, '/');
		if (!slash)
			return -ENOENT;
		*slash = '\0';
		cut = (size_t)(slash - buf);
	}
	if (path[cut]) {
		size_t n = strlen(out);
		if (strcmp(out, "/") == 0)
			n = 0;
		if (snprintf(out + n, PATH_MAX - n, "%s", path + cut) >= (int)(PATH_MAX - n))
			return -ENAMETOOLONG;
	}
	return 0;
}

int hezo_mounts_places(const struct hezo_mounts *m, const char *path, struct hezo_place *out,
		       size_t max)
{
	char buf[PATH_MAX], where[PATH_MAX];
	size_t n = 0;

	if (snprintf(where, sizeof(where), "%s", path) >= (int)sizeof(where))
		return -ENAMETOOLONG;
	for (;;) {
		const struct hezo_mount *mnt;
		int r;

		if (n == max)
			return -EXDEV;
		r = resolve(where, buf);
		if (r < 0)
			return r;
		mnt = hezo_mounts_locate(m, buf, out[n].rel, sizeof(out[n].rel));
		if (!mnt)
			return -ENOENT;
		out[n].major = mnt->major;
		out[n].minor = mnt->minor;
		n++;
		if (!mnt->upper)
			return (int)n;
		/* Written through the overlay, it lands at the same path under the upper dir. */
		if (mnt->upper[0] != '/')
			return -EXDEV;
		if (snprintf(where, sizeof(where), "%s%s", mnt->upper,
			     strcmp(out[n - 1].rel, "/") == 0 ? "" : out[n - 1].rel) >=
		    (int)sizeof(where))
			return -ENAMETOOLONG;
	}
}

static bool under(const char *a, const char *b)
{
	size_t n = strlen(b);

	if (strcmp(b, "/") == 0)
		return a[0] == '/';
	return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

int hezo_mounts_names(const struct hezo_mounts *m, const struct hezo_place *place,
		      int (*fn)(const char *path, void *data), void *data)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct hezo_mount *mnt = &m->v[i];
		const char *rest;
		char path[PATH_MAX];
		int n, r;

		if (mnt->major != place->major || mnt->minor != place->minor ||
		    !under(place->rel, mnt->root))
			continue;
		rest = strcmp(mnt->root, "/") == 0 ? place->rel : place->rel + strlen(mnt->root);
		if (strcmp(mnt->point, "/") == 0)
			n = snprintf(path, sizeof(path), "%s", rest[0] ? rest : "/");
		else
			n = snprintf(path, sizeof(path), "%s%s", mnt->point,
				     strcmp(rest, "/") == 0 ? "" : rest);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		r = fn(path, data);
		if (r)
			return r;
	}
	return 0;
}

bool hezo_places_overlap(const struct hezo_place *a, size_t na, const struct hezo_place *b,
			 size_t nb)
{
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			if (a[i].major == b[j].major && a[i].minor == b[j].minor &&
			    (under(a[i].rel, b[j].rel) || under(b[j].rel, a[i].rel)))
				return true;
	return false;
}

bool hezo_mounts_overlap(const struct hezo_mounts *m, const char *a, const char *b)
{
	struct hezo_place pa[HEZO_PLACES_MAX], pb[HEZO_PLACES_MAX];
	int na = hezo_mounts_places(m, a, pa, HEZO_PLACES_MAX);
	int nb = hezo_mounts_places(m, b, pb, HEZO_PLACES_MAX);

	return na < 0 || nb < 0 || hezo_places_overlap(pa, (size_t)na, pb, (size_t)nb);
}
