/* Log lines in the shape containerd and runc use: one JSON object per line. */
#ifndef HEZO_LOG_H
#define HEZO_LOG_H

#include <stddef.h>
#include <time.h>

/*
 * Format {"level":LEVEL,"msg":MSG,"time":RFC3339-UTC}\n into buf (msg is JSON-escaped and cut
 * to fit). Returns the length written, excluding the NUL. buf must hold at least 128 bytes.
 */
size_t hezo_log_format_json(char *buf, size_t size, const char *level, const char *msg,
			    const struct timespec *when);

/* Same line without JSON: "time=... level=... msg=..." as runc's text format. */
size_t hezo_log_format_text(char *buf, size_t size, const char *level, const char *msg,
			    const struct timespec *when);

/* Escape s as the inside of a JSON string into buf (always NUL-terminated). Returns length. */
size_t hezo_json_escape(char *buf, size_t size, const char *s);

#endif
