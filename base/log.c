/* Formatting of log lines; writing them is the program's business, not the library's. */
#include <stdio.h>
#include <string.h>

#include "hezo-log.h"

size_t hezo_json_escape(char *buf, size_t size, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (size == 0)
		return 0;
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[7];
		size_t n;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			n = 2;
		} else if (c == '\n') {
			memcpy(esc, "\\n", 2);
			n = 2;
		} else if (c == '\t') {
			memcpy(esc, "\\t", 2);
			n = 2;
		} else if (c == '\r') {
			memcpy(esc, "\\r", 2);
			n = 2;
		} else if (c < 0x20 || c == 0x7f) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			n = 6;
		} else {
			esc[0] = (char)c;
			n = 1;
		}
		if (o + n >= size)
			break;
		memcpy(buf + o, esc, n);
		o += n;
	}
	buf[o] = '\0';
	return o;
}

static void format_time(char *out, size_t size, const struct timespec *when)
{
	struct timespec now;
	struct tm tm;

	if (!when) {
		clock_gettime(CLOCK_REALTIME, &now);
		when = &now;
	}
	gmtime_r(&when->tv_sec, &tm);
	snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, when->tv_nsec);
}

size_t hezo_log_format_json(char *buf, size_t size, const char *level, const char *msg,
			    const struct timespec *when)
{
	char ts[64], lvl[32];
	size_t o, room;
	int n;

	format_time(ts, sizeof(ts), when);
	hezo_json_escape(lvl, sizeof(lvl), level);
	n = snprintf(buf, size, "{\"level\":\"%s\",\"msg\":\"", lvl);
	if (n < 0 || (size_t)n >= size)
		return 0;
	o = (size_t)n;
	/* Leave room for the closing part: "","time":"<64>"}\n */
	room = size - o;
	if (room <= 96)
		return 0;
	o += hezo_json_escape(buf + o, room - 96, msg);
	n = snprintf(buf + o, size - o, "\",\"time\":\"%s\"}\n", ts);
	if (n < 0 || (size_t)n >= size - o)
		return 0;
	return o + (size_t)n;
}

size_t hezo_log_format_text(char *buf, size_t size, const char *level, const char *msg,
			    const struct timespec *when)
{
	char ts[64];
	int n;

	format_time(ts, sizeof(ts), when);
	n = snprintf(buf, size, "time=\"%s\" level=%s msg=\"%s\"\n", ts, level, msg ? msg : "");
	if (n < 0)
		return 0;
	if ((size_t)n >= size) {
		buf[size - 2] = '\n';
		return size - 1;
	}
	return (size_t)n;
}
