/*
 * netlog: one JSON line per DNS query and per TCP connection, appended with a single write() to
 * LOG_DIR/ID.jsonl; and the daemon's own messages on stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
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

void pd_netlog_write(struct pd_container *c, const struct pd_netlog *l)
{
	char buf[4096], ts[80], addr[INET6_ADDRSTRLEN + 8];
	struct timespec now;
	struct tm tm;
	size_t o;
	int n;

	if (c->log_fd < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 now.tv_nsec / 1000000);
	n = snprintf(buf, sizeof(buf), "{\"time\":\"%s\"", ts);
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
	/* One write() on an O_APPEND fd: lines never interleave. A full disk loses lines, not
	 * traffic decisions. */
	ssize_t w = write(c->log_fd, buf, o);
	(void)w;
}
