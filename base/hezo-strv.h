/* One string vector for every program: argv for execve, lists of names and paths. */
#ifndef HEZO_STRV_H
#define HEZO_STRV_H

#include <stdbool.h>
#include <stddef.h>

#include "hezo-cleanup.h"

/*
 * A growable vector owning its strings. v is NULL-terminated once hezo_strv_init or a push has
 * succeeded, so it can be handed to execve as it is; a zeroed struct is an empty vector (v NULL).
 * On -ENOMEM a vector is left as it was: nothing leaks and every string pushed so far stays.
 */
struct hezo_strv {
	char **v;
	size_t n, alloc;
};

/* An empty vector whose v is a valid NULL-terminated array ({NULL}). -ENOMEM. */
int hezo_strv_init(struct hezo_strv *s);
/* Append a copy of str. -ENOMEM. */
int hezo_strv_push(struct hezo_strv *s, const char *str);
int hezo_strv_pushf(struct hezo_strv *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Append copies of every string of v (NULL-terminated; NULL: none). On -ENOMEM some may be in. */
int hezo_strv_push_all(struct hezo_strv *s, const char *const *v);
bool hezo_strv_contains(const struct hezo_strv *s, const char *str);
/* Free the strings and the array; s is left empty and zeroed. */
void hezo_strv_done(struct hezo_strv *s);
#define _cleanup_strv_ _cleanup_(hezo_strv_done)

#endif
