/*
 * A mutable JSON tree that keeps what it was given: key order, duplicate-free objects, and the
 * literal text of every number, so a document can be loaded, edited and written back with every
 * field it did not touch intact. yajl sits behind this header and nowhere else.
 */
#ifndef HEZO_JSON_H
#define HEZO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hezo-error.h"

enum hezo_json_type {
	HEZO_JSON_NULL,
	HEZO_JSON_FALSE,
	HEZO_JSON_TRUE,
	HEZO_JSON_NUMBER,
	HEZO_JSON_STRING,
	HEZO_JSON_ARRAY,
	HEZO_JSON_OBJECT,
};

struct hezo_json {
	enum hezo_json_type type;
	char *str;  /* STRING: the value (NUL-terminated, may not contain NUL); NUMBER: literal text
		     */
	size_t len; /* ARRAY / OBJECT: number of members */
	size_t alloc;
	char **keys; /* OBJECT: keys[i] names items[i] */
	struct hezo_json **items;
};

/* Limits applied by the parser; exceeding one fails with -E2BIG and names the limit. */
#define HEZO_JSON_MAX_DEPTH 64
/* Values in one document (each node costs ~100 bytes: 16 MiB of "0," would need ~900 MB). */
#define HEZO_JSON_MAX_VALUES 1048576

/* Parse buf[0..len). On error the message says what and where ("line 3, byte 17: ..."). */
int hezo_json_parse(const char *buf, size_t len, struct hezo_json **out, struct hezo_error **err);

/* Serialise compactly (pretty = false) or indented. *out is NUL-terminated, malloc'd. */
int hezo_json_dump(const struct hezo_json *v, bool pretty, char **out, size_t *outlen,
		   struct hezo_error **err);

void hezo_json_free(struct hezo_json *v);
static inline void hezo_json_freep(struct hezo_json **v)
{
	hezo_json_free(*v);
}
#define _cleanup_json_ _cleanup_(hezo_json_freep)

/* Constructors; return NULL on allocation failure. */
struct hezo_json *hezo_json_new_null(void);
struct hezo_json *hezo_json_new_bool(bool b);
struct hezo_json *hezo_json_new_int(int64_t n);
struct hezo_json *hezo_json_new_uint(uint64_t n);
/* A number with `decimals` digits after the point (0-9); NULL also for NaN and infinities. */
struct hezo_json *hezo_json_new_fixed(double d, int decimals);
struct hezo_json *hezo_json_new_string(const char *s);
struct hezo_json *hezo_json_new_array(void);
struct hezo_json *hezo_json_new_object(void);
struct hezo_json *hezo_json_clone(const struct hezo_json *v);
/* Same types, same number literals and strings, same keys in the same order. */
bool hezo_json_equal(const struct hezo_json *a, const struct hezo_json *b);

/* Object access. get returns NULL when absent or when obj is not an object. */
struct hezo_json *hezo_json_get(const struct hezo_json *obj, const char *key);
/* Walk "a.b.c" through nested objects; NULL when any step is missing. */
struct hezo_json *hezo_json_get_path(const struct hezo_json *root, const char *dotted);
/* Like get, but checks the type: NULL when absent or of another type. */
struct hezo_json *hezo_json_get_type(const struct hezo_json *obj, const char *key,
				     enum hezo_json_type type);
/*
 * Set key to val, taking ownership of val in every case (freed on failure). An existing key keeps
 * its position; a new key goes at the end. Returns 0 or -ENOMEM / -EINVAL.
 */
int hezo_json_set(struct hezo_json *obj, const char *key, struct hezo_json *val);
/* Remove key if present (0 either way). */
int hezo_json_remove(struct hezo_json *obj, const char *key);
/*
 * Put val in the place (and under the key) of parent's member old, which the caller then owns:
 * a value taken out without copying it. 0, or -ENOENT when old is not a member (then nothing
 * changes and the caller still owns val) or -EINVAL.
 */
int hezo_json_replace(struct hezo_json *parent, const struct hezo_json *old, struct hezo_json *val);
/* Return the child object (or array) at key, creating it (at the end) if absent. NULL if key
 * holds another type or on allocation failure. */
struct hezo_json *hezo_json_ensure_object(struct hezo_json *obj, const char *key);
struct hezo_json *hezo_json_ensure_array(struct hezo_json *obj, const char *key);

/* Array access. append takes ownership of val (freed on failure). */
int hezo_json_append(struct hezo_json *arr, struct hezo_json *val);
int hezo_json_remove_at(struct hezo_json *arr, size_t index);

/* Scalars. Return -EINVAL when v is not of that type or does not fit; -ERANGE on overflow. */
int hezo_json_get_int64(const struct hezo_json *v, int64_t *out);
int hezo_json_get_uint64(const struct hezo_json *v, uint64_t *out);
/* Any number, as the nearest double. */
int hezo_json_get_double(const struct hezo_json *v, double *out);
/* NULL unless v is a string. */
const char *hezo_json_string(const struct hezo_json *v);
bool hezo_json_is_true(const struct hezo_json *v);
bool hezo_json_is_bool(const struct hezo_json *v);
const char *hezo_json_type_name(enum hezo_json_type type);

#define HEZO_JSON_FOREACH(i, v) for (size_t i = 0; (v) && i < (v)->len; i++)

#endif
