/*
 * netlog: one JSON line per DNS query, per TCP connection and per container joining or leaving
 * a shared registration, appended to LOG_DIR/ID.jsonl in
 * batches of whole lines (a buffer per container, flushed when full or NETLOG_DELAY_MS after its
 * first line, and at deregistration and exit).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
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

static uint64_t flush_due_ms;	    /* 0: nothing queued anywhere */
static struct pd_container *queued; /* registrations with lines queued */

static void unqueue(struct pd_container *c)
{
	if (!c->log_pprev)
		return;
	*c->log_pprev = c->log_next;
	if (c->log_next)
		c->log_next->log_pprev = c->log_pprev;
	c->log_next = NULL;
	c->log_pprev = NULL;
}

/* Dotted quad into out (16 bytes), no printf: a netlog line has up to a dozen addresses. */
static size_t format_ip4(const uint8_t *a, char *out)
{
	size_t o = 0;

	for (int i = 0; i < 4; i++) {
		unsigned v = a[i];

		if (i)
			out[o++] = '.';
		if (v >= 100)
			out[o++] = (char)('0' + v / 100);
		if (v >= 10)
			out[o++] = (char)('0' + v / 10 % 10);
		out[o++] = (char)('0' + v % 10);
	}
	out[o] = '\0';
	return o;
}

static size_t format_port(unsigned port, char *out)
{
	char d[8];
	size_t n = 0, o = 0;

	do {
		d[n++] = (char)('0' + port % 10);
		port /= 10;
	} while (port);
	out[o++] = ':';
	while (n)
		out[o++] = d[--n];
	out[o] = '\0';
	return o;
}

/* "1.2.3.4:80", "[::1]:80" or "-" into out (INET6_ADDRSTRLEN + 8 bytes); returns the length.
 * Nothing in it needs JSON escaping. */
static size_t format_addr(const struct sockaddr_storage *ss, char *out)
{
	size_t o = 0;

	if (!ss || ss->ss_family == AF_UNSPEC) {
		out[o++] = '-';
		out[o] = '\0';
	} else if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)ss;

		o = format_ip4((const uint8_t *)&s->sin_addr, out);
		o += format_port(ntohs(s->sin_port), out + o);
	} else {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;

		out[o++] = '[';
		inet_ntop(AF_INET6, &s->sin6_addr, out + o, INET6_ADDRSTRLEN);
		o += strlen(out + o);
		out[o++] = ']';
		o += format_port(ntohs(s->sin6_port), out + o);
	}
	return o;
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

/*
 * A line under construction. Built with memcpy and hand-made digits, not snprintf: formatting
 * was the largest user-space cost of an answered DNS query. An append that does not fit is
 * dropped whole, and room for the closing "}\n" is always kept.
 */
struct line {
	char buf[NETLOG_LINE_MAX];
	size_t o;
};

static bool fits(const struct line *l, size_t n)
{
	return l->o + n + 2 <= sizeof(l->buf);
}

static void put(struct line *l, const char *s, size_t n)
{
	if (fits(l, n)) {
		memcpy(l->buf + l->o, s, n);
		l->o += n;
	}
}

#define PUT_LIT(l, s) put((l), (s), sizeof(s) - 1)

/* ,"key":"value", value already safe inside a JSON string */
static void add_raw(struct line *l, const char *key, const char *val, size_t n)
{
	size_t k = strlen(key);

	if (!fits(l, k + n + 6))
		return;
	PUT_LIT(l, ",\"");
	put(l, key, k);
	PUT_LIT(l, "\":\"");
	put(l, val, n);
	PUT_LIT(l, "\"");
}

/* ,"key":"escaped value" */
static void add_str(struct line *l, const char *key, const char *val)
{
	char esc[1024];
	size_t n = hezo_json_escape(esc, sizeof(esc), val ? val : "");

	add_raw(l, key, esc, n);
}

/* ,"key":decimal */
static void add_num(struct line *l, const char *key, uint64_t v)
{
	char d[20];
	size_t n = 0, k = strlen(key);

	do {
		d[sizeof(d) - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (!fits(l, k + n + 4))
		return;
	PUT_LIT(l, ",\"");
	put(l, key, k);
	PUT_LIT(l, "\":");
	put(l, d + sizeof(d) - n, n);
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
	unqueue(c);
}

void pd_netlog_flush_all(void)
{
	while (queued)
		pd_netlog_flush(queued);
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
	if (!c->log_pprev) {
		c->log_next = queued;
		c->log_pprev = &queued;
		if (queued)
			queued->log_pprev = &c->log_next;
		queued = c;
	}
	if (!flush_due_ms)
		flush_due_ms = pd_now_ms() + NETLOG_DELAY_MS;
}

void pd_netlog_write(struct pd_container *c, const struct pd_netlog *l)
{
	struct line ln;
	char addr[INET6_ADDRSTRLEN + 8], ms[5];
	struct timespec now;
	long msec;
	const char *prefix;

	if (c->log_fd < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	prefix = time_prefix(now.tv_sec);
	msec = now.tv_nsec / 1000000;
	ms[0] = '.';
	ms[1] = (char)('0' + msec / 100);
	ms[2] = (char)('0' + msec / 10 % 10);
	ms[3] = (char)('0' + msec % 10);
	ms[4] = 'Z';
	ln.o = 0;
	PUT_LIT(&ln, "{\"time\":\"");
	put(&ln, prefix, strlen(prefix));
	put(&ln, ms, sizeof(ms));
	PUT_LIT(&ln, "\"");
	add_str(&ln, "container", c->id);
	add_str(&ln, "project", c->project);
	add_str(&ln, "proto", l->proto);
	add_raw(&ln, "src", addr, format_addr(l->src, addr));
	add_raw(&ln, "dst", addr, format_addr(l->dst, addr));
	add_str(&ln, "name", l->name);
	if (l->qtype)
		add_str(&ln, "qtype", l->qtype);
	add_str(&ln, "verdict", l->verdict);
	add_str(&ln, "reason", l->reason);
	if (l->intercepted)
		PUT_LIT(&ln, ",\"intercepted\":true");
	if (l->method) {
		add_str(&ln, "method", l->method);
		add_str(&ln, "path", l->path);
	}
	if (l->method && l->intercepted) {
		add_str(&ln, "secrets", l->secrets);
		add_num(&ln, "substitutions", l->substitutions);
	}
	if (l->dns) {
		static const char *const rcodes[] = {"NOERROR",	 "FORMERR", "SERVFAIL",
						     "NXDOMAIN", "NOTIMP",  "REFUSED"};
		int rc = l->dns->rcode;

		add_str(&ln, "rcode",
			rc >= 0 && rc < (int)HEZO_ARRAY_SIZE(rcodes) ? rcodes[rc] : "?");
		/* Each append below leaves room for the closing bracket besides the "}\n". */
		if (fits(&ln, 13)) {
			PUT_LIT(&ln, ",\"answers\":[");
			for (size_t i = 0; i < l->dns->naddrs; i++) {
				char ip[INET6_ADDRSTRLEN];
				size_t n;

				if (l->dns->addrs[i].family == AF_INET) {
					n = format_ip4(l->dns->addrs[i].addr, ip);
				} else {
					inet_ntop(l->dns->addrs[i].family, l->dns->addrs[i].addr,
						  ip, sizeof(ip));
					n = strlen(ip);
				}
				if (!fits(&ln, n + 4))
					break;
				if (i)
					PUT_LIT(&ln, ",");
				PUT_LIT(&ln, "\"");
				put(&ln, ip, n);
				PUT_LIT(&ln, "\"");
			}
			PUT_LIT(&ln, "]");
		}
		add_num(&ln, "removed", l->dns->nremoved);
	}
	if (l->has_bytes && l->intercepted)
		add_num(&ln, "masks", l->masks);
	if (l->has_bytes) {
		add_num(&ln, "bytesOut", l->bytes_out);
		add_num(&ln, "bytesIn", l->bytes_in);
	}
	add_num(&ln, "durationMs", l->duration_ms);
	ln.buf[ln.o++] = '}';
	ln.buf[ln.o++] = '\n';
	queue_line(c, ln.buf, ln.o);
}

/* A line's opening: time, registration, project and proto. */
static void line_start(struct line *ln, const struct pd_container *c, const char *proto)
{
	char ms[16];
	struct timespec now;
	const char *prefix;

	clock_gettime(CLOCK_REALTIME, &now);
	prefix = time_prefix(now.tv_sec);
	snprintf(ms, sizeof(ms), ".%03dZ", (int)(now.tv_nsec / 1000000) % 1000);
	ln->o = 0;
	PUT_LIT(ln, "{\"time\":\"");
	put(ln, prefix, strlen(prefix));
	put(ln, ms, 5);
	PUT_LIT(ln, "\"");
	add_str(ln, "container", c->id);
	add_str(ln, "project", c->project);
	add_str(ln, "proto", proto);
}

void pd_netlog_key(struct pd_container *c, const struct pd_netlog_key *k)
{
	struct line ln;

	if (c->log_fd < 0)
		return;
	line_start(&ln, c, "agent");
	add_str(&ln, "key", k->key);
	add_str(&ln, "fingerprint", k->fingerprint);
	add_str(&ln, "kind", k->kind);
	add_str(&ln, "name", k->target);
	add_str(&ln, "signed", k->hash);
	add_str(&ln, "verdict", k->verdict);
	add_str(&ln, "reason", k->reason);
	ln.buf[ln.o++] = '}';
	ln.buf[ln.o++] = '\n';
	queue_line(c, ln.buf, ln.o);
}

void pd_netlog_member(struct pd_container *c, const char *event, const char *member,
		      const char *verdict, const char *reason)
{
	struct line ln;

	if (c->log_fd < 0)
		return;
	line_start(&ln, c, "control");
	add_str(&ln, "event", event);
	add_str(&ln, "member", member);
	add_str(&ln, "verdict", verdict);
	add_str(&ln, "reason", reason);
	ln.buf[ln.o++] = '}';
	ln.buf[ln.o++] = '\n';
	queue_line(c, ln.buf, ln.o);
}
