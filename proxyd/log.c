/* The daemon's own messages on stderr, one JSON line each (base/log.c formats them). */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "hezo-file.h"
#include "hezo-log.h"
#include "proxyd.h"

void pd_log(const char *level, const char *fmt, ...)
{
	char msg[1024], line[1400];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = hezo_log_format_json(line, sizeof(line), level, msg, NULL);
	if (n)
		hezo_write_all(STDERR_FILENO, line, n);
}
