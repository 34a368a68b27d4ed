/*
 * The Prometheus endpoint (docs/metrics.md): `--metrics 127.0.0.1:PORT`, `[::1]:PORT` or
 * `unix:PATH` (mode 0600, uid 0 peers only). Off unless the admin gives the flag. One GET per
 * connection, answered in the text exposition format 0.0.4 and closed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "proxyd.h"

#define REQ_MAX 4096

struct pd_metrics_counters pd_metrics;

struct mconn {
	struct pd_watch w; /* first: pd_server_accept() makes it */
	char req[REQ_MAX];
	size_t len;
	char *out;
	size_t outlen, sent;
};

_Static_assert(offsetof(struct mconn, w) == 0, "mconn");

static struct pd_watch listener = {.fd = -1};
static bool unix_socket;

struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->p && (size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap ? b->cap * 2 : 16384) + (size_t)n;
		char *np = realloc(b->p, cap);
		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
}

/* Label values: ids and projects are plain by their grammar; escape anyway, as the format says. */
static void label(struct buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			bprintf(b, "\\%c", *s);
		else if (*s == '\n')
			bprintf(b, "\\n");
		else
			bprintf(b, "%c", *s);
	}
}

struct family {
	const char *name, *type, *help;
	size_t off; /* into struct pd_stats */
};

#define F(n, t, h, field)                                                                          \
	{                                                                                          \
		n, t, h, offsetof(struct pd_stats, field)                                          \
	}
static const struct family per_container[] = {
	F("hezo_proxyd_connections_accepted_total", "counter",
	  "TCP connections from the box that proxyd accepted.", conns_accepted),
	F("hezo_proxyd_connections_allowed_total", "counter",
	  "TCP connections relayed to an allowed destination.", conns_allowed),
	F("hezo_proxyd_connections_refused_total", "counter",
	  "TCP connections refused by the egress policy.", conns_refused),
	F("hezo_proxyd_sent_bytes_total", "counter", "Bytes relayed from the box to the outside.",
	  bytes_out),
	F("hezo_proxyd_received_bytes_total", "counter",
	  "Bytes relayed from the outside to the box.", bytes_in),
	F("hezo_proxyd_secrets_substituted_total", "counter",
	  "Placeholders replaced by their secret's value toward its host.", secrets_substituted),
	F("hezo_proxyd_secrets_masked_total", "counter",
	  "Secrets' values replaced by their placeholder in answers toward the box.",
	  secrets_masked),
	F("hezo_proxyd_key_signatures_total", "counter",
	  "Signatures the ssh agent made with a project's key for the box.", keys_signed),
	F("hezo_proxyd_key_refusals_total", "counter",
	  "Requests the ssh agent refused (other namespaces, hosts, data, add/remove/lock).",
	  keys_refused),
	F("hezo_proxyd_h2_streams_total", "counter",
	  "HTTP/2 streams on intercepted connections (each has its netlog line).", h2_streams),
	F("hezo_proxyd_intercept_budget_refused_total", "counter",
	  "Intercepted connections and HTTP/2 streams refused over the memory budget.",
	  icpt_budget_refused),
	F("hezo_proxyd_dns_queries_total", "counter", "DNS queries from the box.", dns_queries),
	F("hezo_proxyd_dns_answers_total", "counter", "DNS queries answered from upstream.",
	  dns_allowed),
	F("hezo_proxyd_dns_refused_total", "counter",
	  "DNS queries refused by the egress policy (REFUSED or NXDOMAIN).", dns_refused),
	F("hezo_proxyd_dns_ratelimited_total", "counter",
	  "DNS queries dropped by the per-box rate limit.", dns_ratelimited),
	F("hezo_proxyd_dns_failed_total", "counter", "DNS queries whose upstream failed.",
	  dns_failed),
};

static void render(struct buf *b)
{
	unsigned n = 0;

	for (struct pd_container *c = pd_containers; c; c = c->next)
		n++;
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(per_container); i++) {
		const struct family *f = &per_container[i];

		bprintf(b, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
		for (struct pd_container *c = pd_containers; c; c = c->next) {
			uint64_t v;

			memcpy(&v, (const char *)&c->st + f->off, sizeof(v));
			bprintf(b, "%s{id=\"", f->name);
			label(b, c->id);
			bprintf(b, "\",project=\"");
			label(b, c->project);
			bprintf(b, "\"} %llu\n", (unsigned long long)v);
		}
	}
	bprintf(b, "# HELP hezo_proxyd_connections_open TCP connections being relayed now.\n"
		   "# TYPE hezo_proxyd_connections_open gauge\n");
	for (struct pd_container *c = pd_containers; c; c = c->next) {
		bprintf(b, "hezo_proxyd_connections_open{id=\"");
		label(b, c->id);
		bprintf(b, "\",project=\"");
		label(b, c->project);
		bprintf(b, "\"} %u\n", c->nconns);
	}
	bprintf(b,
		"# HELP hezo_proxyd_registered_boxes Boxes registered with proxyd now.\n"
		"# TYPE hezo_proxyd_registered_boxes gauge\n"
		"hezo_proxyd_registered_boxes %u\n"
		"# HELP hezo_proxyd_registrations_total Registrations proxyd accepted.\n"
		"# TYPE hezo_proxyd_registrations_total counter\n"
		"hezo_proxyd_registrations_total %llu\n"
		"# HELP hezo_proxyd_registration_errors_total Registrations proxyd refused.\n"
		"# TYPE hezo_proxyd_registration_errors_total counter\n"
		"hezo_proxyd_registration_errors_total %llu\n"
		"# HELP hezo_proxyd_deregistrations_total Boxes deregistered.\n"
		"# TYPE hezo_proxyd_deregistrations_total counter\n"
		"hezo_proxyd_deregistrations_total %llu\n"
		"# HELP hezo_proxyd_control_errors_total Control requests answered with an error.\n"
		"# TYPE hezo_proxyd_control_errors_total counter\n"
		"hezo_proxyd_control_errors_total %llu\n",
		n, (unsigned long long)pd_metrics.registrations,
		(unsigned long long)pd_metrics.registration_errors,
		(unsigned long long)pd_metrics.deregistrations,
		(unsigned long long)pd_metrics.control_errors);
}

static void conn_done(struct mconn *k)
{
	pd_watch_close(&k->w);
	free(k->out);
	pd_defer_free(k);
}

static void respond(struct mconn *k)
{
	struct buf body = {0}, head = {0};
	bool get = strncmp(k->req, "GET /metrics ", 13) == 0 || strncmp(k->req, "GET / ", 6) == 0;

	if (get)
		render(&body);
	else
		bprintf(&body, "only GET /metrics is served here\n");
	bprintf(&head,
		"HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: "
		"close\r\n\r\n",
		body.oom ? "500 Internal Server Error"
		: get	 ? "200 OK"
			 : "404 Not Found",
		get ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain", body.len);
	if (!body.oom && body.len)
		bprintf(&head, "%.*s", (int)body.len, body.p);
	free(body.p);
	if (head.oom) {
		free(head.p);
		conn_done(k);
		return;
	}
	k->out = head.p;
	k->outlen = head.len;
	pd_watch_set(&k->w, EPOLLOUT);
}

static void on_conn(struct pd_watch *w, uint32_t events)
{
	struct mconn *k = pd_container_of(w, struct mconn, w);
	ssize_t n;

	if (k->out) {
		n = send(w->fd, k->out + k->sent, k->outlen - k->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0 || (k->sent += (size_t)n) == k->outlen) {
			shutdown(w->fd, SHUT_WR);
			conn_done(k);
		}
		return;
	}
	n = recv(w->fd, k->req + k->len, sizeof(k->req) - 1 - k->len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_done(k);
		return;
	}
	k->len += (size_t)n;
	k->req[k->len] = '\0';
	if (strstr(k->req, "\r\n\r\n") || strstr(k->req, "\n\n") || k->len == sizeof(k->req) - 1)
		respond(k);
}

static void on_accept(struct pd_watch *w, uint32_t events)
{
	pd_server_accept(w, sizeof(struct mconn), unix_socket, NULL, on_conn);
}

int pd_metrics_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *sl)
{
	char host[64];
	const char *colon;
	unsigned port;
	char *end;

	memset(ss, 0, sizeof(*ss));
	if (strncmp(spec, "unix:", 5) == 0) {
		struct sockaddr_un *su = (struct sockaddr_un *)ss;

		if (spec[5] != '/' || strlen(spec + 5) >= sizeof(su->sun_path))
			return -EINVAL;
		su->sun_family = AF_UNIX;
		strcpy(su->sun_path, spec + 5);
		*sl = sizeof(*su);
		return 0;
	}
	if (spec[0] == '[') {
		const char *close_b = strchr(spec, ']');
		if (!close_b || close_b[1] != ':' || (size_t)(close_b - spec - 1) >= sizeof(host))
			return -EINVAL;
		snprintf(host, sizeof(host), "%.*s", (int)(close_b - spec - 1), spec + 1);
		colon = close_b + 1;
	} else {
		colon = strrchr(spec, ':');
		if (!colon || (size_t)(colon - spec) >= sizeof(host))
			return -EINVAL;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
	}
	errno = 0;
	port = (unsigned)strtoul(colon + 1, &end, 10);
	if (errno || *end || colon[1] == '\0' || port == 0 || port > 65535)
		return -EINVAL;
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)ss)->sin_addr) == 1) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		/* Loopback only: the counters name every box and project on the machine. */
		if ((ntohl(s4->sin_addr.s_addr) >> 24) != 127)
			return -EPERM;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		*sl = sizeof(*s4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		if (!IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			return -EPERM;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*sl = sizeof(*s6);
		return 0;
	}
	return -EINVAL;
}

int pd_metrics_init(const char *spec, struct hezo_error **err)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, r, one = 1;

	if (!spec)
		return 0;
	r = pd_metrics_parse(spec, &ss, &sl);
	if (r == -EPERM)
		return hezo_error_set(err, EPERM,
				      "--metrics %s: only a loopback address or unix:PATH", spec);
	if (r < 0)
		return hezo_error_set(
			err, EINVAL,
			"--metrics %s: expected 127.0.0.1:PORT, [::1]:PORT or unix:PATH", spec);
	unix_socket = ss.ss_family == AF_UNIX;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hezo_error_set_errno(err, errno, "--metrics %s: socket", spec);
	if (unix_socket)
		unlink(((struct sockaddr_un *)&ss)->sun_path);
	else
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	r = pd_server_bind(fd, (struct sockaddr *)&ss, sl, 16);
	if (r < 0) {
		r = hezo_error_set_errno(err, -r, "--metrics %s", spec);
		close(fd);
		return r;
	}
	if (pd_watch_add(&listener, fd, EPOLLIN, on_accept) < 0)
		return hezo_error_set_errno(err, errno, "epoll");
	return 0;
}
