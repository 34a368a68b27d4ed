/* The string vector (hezo-strv.h): doubling growth, one allocation per string. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "hezo-str.h"
#include "hezo-strv.h"

/* Room for one more string and the NULL after it. */
static int reserve(struct hezo_strv *s)
{
	size_t want;
	char **nv;

	if (s->n + 2 <= s->alloc)
		return 0;
	if (s->alloc > SIZE_MAX / 2 / sizeof(*nv))
		return -ENOMEM;
	want = s->alloc < 8 ? 8 : s->alloc * 2;
	nv = realloc(s->v, want * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	s->v = nv;
	s->alloc = want;
	return 0;
}

/* Take ownership of copy (freed when it cannot be added). */
static int push_owned(struct hezo_strv *s, char *copy)
{
	if (!copy || reserve(s) < 0) {
		free(copy);
		return -ENOMEM;
	}
	s->v[s->n++] = copy;
	s->v[s->n] = NULL;
	return 0;
}

int hezo_strv_init(struct hezo_strv *s)
{
	*s = (struct hezo_strv){0};
	s->v = calloc(8, sizeof(*s->v));
	if (!s->v)
		return -ENOMEM;
	s->alloc = 8;
	return 0;
}

int hezo_strv_push(struct hezo_strv *s, const char *str)
{
	size_t len = strlen(str);
	char *copy = malloc(len + 1);

	if (copy)
		memcpy(copy, str, len + 1);
	return push_owned(s, copy);
}

int hezo_strv_pushf(struct hezo_strv *s, const char *fmt, ...)
{
	char *str = NULL;

	if (HEZO_VASPRINTF(&str, fmt) < 0)
		return -ENOMEM;
	return push_owned(s, str);
}

int hezo_strv_push_all(struct hezo_strv *s, const char *const *v)
{
	for (; v && *v; v++) {
		int r = hezo_strv_push(s, *v);
		if (r < 0)
			return r;
	}
	return 0;
}

bool hezo_strv_contains(const struct hezo_strv *s, const char *str)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], str) == 0)
			return true;
	return false;
}

void hezo_strv_done(struct hezo_strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct hezo_strv){0};
}
