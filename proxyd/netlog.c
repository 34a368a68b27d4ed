/*
 * netlog: one JSON line per DNS query and per TCP connection, appended to LOG_DIR/ID.jsonl in
 * batches of whole lines (a buffer per container, flushed when full or NETLOG_DELAY_MS after its
 * first line, and at deregistration and exit); and the daemon's own messages on stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hezo-file.h"
#include "hezo-log.h"
#include "proxyd.h"

/* A line is at most 4 KiB; a full buffer takes a few dozen typical lines per write(). */
#define NETLOG_BUF	(32 * 1024)
#define NETLOG_LINE_MAX 4096
/* Lines wait at most this long, so `hezo-shim netlog --follow` stays live. */
#define NETLOG_DELAY_MS 50

static uint64_t flush_due_ms; /* 0: nothing queued anywhere */

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

void pd_format_addr(const struct sockaddr_storage *ss, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN];

	if (!ss || ss->ss_family == AF_UNSPEC) {
		snprintf(buf, size, "-");
	} else if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
		snprintf(buf, size, "%s:%u", ip, ntohs(s->sin_port));
	} else {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
		snprintf(buf, size, "[%s]:%u", ip, ntohs(s->sin6_port));
	}
}

int pd_netlog_open(struct pd_container *c, struct hezo_error **err)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s.jsonl", pd_cfg.log_dir, c->id);
	c->log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (c->log_fd < 0)
		return hezo_error_set_errno(err, errno, "netlog %s", path);
	return 0;
}

/* Append ,"key":"escaped" to buf at *o. */
static void add_str(char *buf, size_t size, size_t *o, const char *key, const char *val)
{
	char esc[1024];
	int n;

	hezo_json_escape(esc, sizeof(esc), val ? val : "");
	n = snprintf(buf + *o, size - *o, ",\"%s\":\"%s\"", key, esc);
	if (n > 0 && (size_t)n < size - *o)
		*o += (size_t)n;
}

static void add_num(char *buf, size_t size, size_t *o, const char *key, uint64_t v)
{
	int n = snprintf(buf + *o, size - *o, ",\"%s\":%llu", key, (unsigned long long)v);

	if (n > 0 && (size_t)n < size - *o)
		*o += (size_t)n;
}

/* Write out c's queued lines. A short write (full disk) loses lines, never traffic decisions. */
void pd_netlog_flush(struct pd_container *c)
{
	size_t off = 0;

	while (off < c->loglen && c->log_fd >= 0) {
		ssize_t w = write(c->log_fd, c->logbuf + off, c->loglen - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	c->loglen = 0;
}

void pd_netlog_flush_all(void)
{
	for (struct pd_container *c = pd_containers; c; c = c->next)
		pd_netlog_flush(c);
	flush_due_ms = 0;
}

int pd_netlog_poll(uint64_t now)
{
	if (!flush_due_ms)
		return -1;
	if (now >= flush_due_ms) {
		pd_netlog_flush_all();
		return -1;
	}
	return (int)(flush_due_ms - now);
}

/* "2026-11-30T06:25:57" for the current second, formatted once per second. */
static const char *time_prefix(time_t sec)
{
	static char prefix[64];
	static time_t cached = -1;
	struct tm tm;

	if (sec != cached) {
		gmtime_r(&sec, &tm);
		snprintf(prefix, sizeof(prefix), "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		cached = sec;
	}
	return prefix;
}

static void queue_line(struct pd_container *c, const char *line, size_t len)
{
	if (!c->logbuf) {
		c->logbuf = malloc(NETLOG_BUF);
		if (!c->logbuf) {
			/* No memory for a buffer: write the line on its own. */
			ssize_t w = write(c->log_fd, line, len);

			(void)w;
			return;
		}
	}
	if (c->loglen + len > NETLOG_BUF)
		pd_netlog_flush(c);
	memcpy(c->logbuf + c->loglen, line, len);
	c->loglen += len;
	if (!flush_due_ms)
		flush_due_ms = pd_now_ms() + NETLOG_DELAY_MS;
}

void pd_netlog_write(struct pd_container *c, const struct pd_netlog *l)
{
	char buf[NETLOG_LINE_MAX], addr[INET6_ADDRSTRLEN + 8];
	struct timespec now;
	size_t o;
	int n;

	if (c->log_fd < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	n = snprintf(buf, sizeof(buf), "{\"time\":\"%s.%03ldZ\"", time_prefix(now.tv_sec),
		     now.tv_nsec / 1000000);
	o = (size_t)n;
	add_str(buf, sizeof(buf), &o, "container", c->id);
	add_str(buf, sizeof(buf), &o, "project", c->project);
	add_str(buf, sizeof(buf), &o, "proto", l->proto);
	pd_format_addr(l->src, addr, sizeof(addr));
	add_str(buf, sizeof(buf), &o, "src", addr);
	pd_format_addr(l->dst, addr, sizeof(addr));
	add_str(buf, sizeof(buf), &o, "dst", addr);
	add_str(buf, sizeof(buf), &o, "name", l->name);
	if (l->qtype)
		add_str(buf, sizeof(buf), &o, "qtype", l->qtype);
	add_str(buf, sizeof(buf), &o, "verdict", l->verdict);
	add_str(buf, sizeof(buf), &o, "reason", l->reason);
	if (l->dns) {
		static const char *const rcodes[] = {"NOERROR",	 "FORMERR", "SERVFAIL",
						     "NXDOMAIN", "NOTIMP",  "REFUSED"};
		int rc = l->dns->rcode;

		add_str(buf, sizeof(buf), &o, "rcode",
			rc >= 0 && rc < (int)HEZO_ARRAY_SIZE(rcodes) ? rcodes[rc] : "?");
		if (o + 16 < sizeof(buf)) {
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, ",\"answers\":[");
			for (size_t i = 0; i < l->dns->naddrs && o + 64 < sizeof(buf); i++) {
				char ip[INET6_ADDRSTRLEN];

				inet_ntop(l->dns->addrs[i].family, l->dns->addrs[i].addr, ip,
					  sizeof(ip));
				o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s\"%s\"",
						      i ? "," : "", ip);
			}
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "]");
		}
		add_num(buf, sizeof(buf), &o, "removed", l->dns->nremoved);
	}
	if (l->has_bytes) {
		add_num(buf, sizeof(buf), &o, "bytesOut", l->bytes_out);
		add_num(buf, sizeof(buf), &o, "bytesIn", l->bytes_in);
	}
	add_num(buf, sizeof(buf), &o, "durationMs", l->duration_ms);
	if (o + 2 >= sizeof(buf))
		o = sizeof(buf) - 3;
	buf[o++] = '}';
	buf[o++] = '\n';
	queue_line(c, buf, o);
}
