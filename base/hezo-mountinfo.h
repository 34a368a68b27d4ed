/*
 * The mount table (/proc/self/mountinfo) and where a path lives in it: which filesystem, and the
 * path inside that filesystem. Two host paths name the same place when they do, whatever bind
 * mounts lie between them; an overlay's writes land in its upper directory.
 */
#ifndef HEZO_MOUNTINFO_H
#define HEZO_MOUNTINFO_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct hezo_mount {
	unsigned int id, parent;
	unsigned int major, minor; /* the filesystem (the superblock's device) */
	const char *root;	   /* the directory of that filesystem mounted here */
	const char *point;	   /* where, in this mount namespace */
	const char *fstype;
	const char *upper; /* overlay: its upperdir as the mounter gave it; else NULL */
};

struct hezo_mounts {
	struct hezo_mount *v;
	size_t n;
	char *text; /* the strings above point into it */
};

/*
 * Parse mountinfo text (len bytes, need not be NUL-terminated). Returns 0, -EINVAL for a line
 * that is not a mountinfo line (nothing is kept), or -ENOMEM.
 */
int hezo_mounts_parse(const char *text, size_t len, struct hezo_mounts *out);

/* This process's mount table. Returns 0 or -errno. */
int hezo_mounts_read(struct hezo_mounts *out);

void hezo_mounts_free(struct hezo_mounts *m);

/*
 * The mount an absolute, normalised path (no "." or ".." parts, no doubled or trailing slash)
 * crosses last, walking from the root mount down and taking the mount on top at each mount
 * point, and the path inside that mount's filesystem in rel. NULL when the table has no root
 * mount or rel would not fit in size bytes. Symbolic links are not followed: resolve first.
 */
const struct hezo_mount *hezo_mounts_locate(const struct hezo_mounts *m, const char *path,
					    char *rel, size_t size);

/* A place on a filesystem: its device and the path inside it. */
struct hezo_place {
	unsigned int major, minor;
	char rel[PATH_MAX];
};

#define HEZO_PLACES_MAX 4

/*
 * Where a write to host path lands: the place it names (what exists of it resolved, the rest
 * appended), and for each overlay on the way, the place in its upper directory. Fills up to max
 * places and returns how many (1 or more), or -ENOENT (no root mount), -ENAMETOOLONG, -EXDEV
 * (an overlay whose upperdir is relative, or overlays nested deeper than max).
 */
int hezo_mounts_places(const struct hezo_mounts *m, const char *path, struct hezo_place *out,
		       size_t max);

/*
 * Every path of this mount table that names place: for each mount of its filesystem whose root
 * is at or above it, the mount point and the rest (hidden mounts too: a name more, never one
 * less). fn is called with each until it returns non-zero, which is returned; 0 after the last.
 */
int hezo_mounts_names(const struct hezo_mounts *m, const struct hezo_place *place,
		      int (*fn)(const char *path, void *data), void *data);

/* One place of a at or below one of b, or the other way: the same directory tree. */
bool hezo_places_overlap(const struct hezo_place *a, size_t na, const struct hezo_place *b,
			 size_t nb);

/*
 * Host paths a and b (absolute, normalised) reach the same directory tree by where writes to
 * them land; true too when either cannot be placed (unknown overlaps everything).
 */
bool hezo_mounts_overlap(const struct hezo_mounts *m, const char *a, const char *b);

#endif
