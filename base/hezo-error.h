/* Error objects: an errno plus a message that callers prefix with context on the way up. */
#ifndef HEZO_ERROR_H
#define HEZO_ERROR_H

#include "hezo-cleanup.h"

struct hezo_error {
	int errnum; /* positive errno value */
	char *msg;  /* "outer: inner: cause" */
	/*
	 * The policy key whose value refused this ("mounts.allowedSources"), a static string, or
	 * NULL: the program that reports the error names the file that key was read from.
	 */
	const char *key;
};

/*
 * Record an error in *err (if err is not NULL and *err is still NULL) and return -errnum.
 * errnum is a positive errno value; 0 is taken as EINVAL.
 */
int hezo_error_set(struct hezo_error **err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Same, appending ": strerror(errnum)" to the message. */
int hezo_error_set_errno(struct hezo_error **err, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefix the message in *err with "context: " and return -(*err)->errnum. */
int hezo_error_prefix(struct hezo_error **err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Tag *err with the policy key that refused it (kept if one is there); returns -(*err)->errnum. */
int hezo_error_key(struct hezo_error **err, const char *key);

void hezo_error_free(struct hezo_error *err);

static inline void hezo_error_freep(struct hezo_error **err)
{
	hezo_error_free(*err);
}
#define _cleanup_error_ _cleanup_(hezo_error_freep)

#endif
