/* Error objects for every hezo library: errno plus a context-prefixed message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hezo-error.h"

__attribute__((format(printf, 4, 0))) static int
error_vset(struct hezo_error **err, int errnum, int with_errno, const char *fmt, va_list ap)
{
	struct hezo_error *e;
	char *msg = NULL;
	int r;

	if (errnum <= 0)
		errnum = EINVAL;
	if (!err || *err)
		return -errnum;

	r = vasprintf(&msg, fmt, ap);
	if (r < 0)
		msg = NULL;
	if (msg && with_errno) {
		char *full = NULL;
		if (asprintf(&full, "%s: %s", msg, strerror(errnum)) >= 0) {
			free(msg);
			msg = full;
		}
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		free(msg);
		return -errnum;
	}
	e->errnum = errnum;
	e->msg = msg ? msg : strdup("out of memory");
	*err = e;
	return -errnum;
}

int hezo_error_set(struct hezo_error **err, int errnum, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = error_vset(err, errnum, 0, fmt, ap);
	va_end(ap);
	return r;
}

int hezo_error_set_errno(struct hezo_error **err, int errnum, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = error_vset(err, errnum, 1, fmt, ap);
	va_end(ap);
	return r;
}

int hezo_error_prefix(struct hezo_error **err, const char *fmt, ...)
{
	_cleanup_free_ char *ctx = NULL;
	char *full = NULL;
	va_list ap;
	int r;

	if (!err || !*err)
		return -EINVAL;
	va_start(ap, fmt);
	r = vasprintf(&ctx, fmt, ap);
	va_end(ap);
	if (r < 0) {
		ctx = NULL;
		return -(*err)->errnum;
	}
	if (asprintf(&full, "%s: %s", ctx, (*err)->msg ? (*err)->msg : "") < 0)
		return -(*err)->errnum;
	free((*err)->msg);
	(*err)->msg = full;
	return -(*err)->errnum;
}

int hezo_error_key(struct hezo_error **err, const char *key)
{
	if (!err || !*err)
		return -EINVAL;
	if (!(*err)->key)
		(*err)->key = key;
	return -(*err)->errnum;
}

void hezo_error_free(struct hezo_error *err)
{
	if (!err)
		return;
	free(err->msg);
	free(err);
}
