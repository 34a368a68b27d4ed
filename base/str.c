/* Formatting into a new string. */
#include <errno.h>
#include <stdio.h>

#include "hezo-str.h"

int hezo_vasprintf(char **out, const char *fmt, va_list ap)
{
	int n = vasprintf(out, fmt, ap);

	if (n < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return n;
}
