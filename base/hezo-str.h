/* Formatting into a new string. */
#ifndef HEZO_STR_H
#define HEZO_STR_H

#include <stdarg.h>

/*
 * vasprintf that leaves *out NULL on failure (glibc leaves it undefined), so a _cleanup_free_
 * pointer is safe. The length, or -ENOMEM.
 */
int hezo_vasprintf(char **out, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/*
 * hezo_vasprintf of a variadic function's own arguments: use it in the body of a function whose
 * last named parameter is fmt.
 */
#define HEZO_VASPRINTF(out, fmt)                                                                   \
	({                                                                                         \
		va_list hezo_ap_;                                                                  \
		int hezo_r_;                                                                       \
		va_start(hezo_ap_, fmt);                                                           \
		hezo_r_ = hezo_vasprintf((out), (fmt), hezo_ap_);                                  \
		va_end(hezo_ap_);                                                                  \
		hezo_r_;                                                                           \
	})

#endif
