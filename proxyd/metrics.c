/*
 * The Prometheus endpoint (docs/metrics.md): `--metrics 127.0.0.1:PORT`, `[::1]:PORT` or
 * `unix:PATH` (mode 0600, uid 0 peers only). Off unless the admin gives the flag. One GET per
 * connection, answered in the text exposition format 0.0.4 and closed.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "hezo-commit.h"
#include "hezo-config.h"
#include "hezo-file.h"
#include "proxyd.h"
#include "tls.h"

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

/*
 * A family of per-box counters: one field of struct pd_stats, or several that are the outcomes of
 * one thing (a `result` label each, as the Prometheus naming guide asks, so they sum).
 */
struct family {
	const char *name, *help;
	struct {
		const char *result; /* NULL: no result label */
		size_t off;	    /* into struct pd_stats */
	} v[4];
};

#define ST(field) offsetof(struct pd_stats, field)
static const struct family per_container[] = {
	{"hezo_proxyd_connections_accepted_total",
	 "TCP connections from the box that proxyd accepted.",
	 {{NULL, ST(conns_accepted)}}},
	{"hezo_proxyd_connections_total",
	 "TCP connections from the box by the egress policy's verdict.",
	 {{"allowed", ST(conns_allowed)}, {"refused", ST(conns_refused)}}},
	{"hezo_proxyd_sent_bytes_total",
	 "Bytes relayed from the box to the outside.",
	 {{NULL, ST(bytes_out)}}},
	{"hezo_proxyd_received_bytes_total",
	 "Bytes relayed from the outside to the box.",
	 {{NULL, ST(bytes_in)}}},
	{"hezo_proxyd_secrets_substituted_total",
	 "Placeholders replaced by their secret's value toward its host.",
	 {{NULL, ST(secrets_substituted)}}},
	{"hezo_proxyd_secrets_masked_total",
	 "Secrets' values replaced by their placeholder in answers toward the box.",
	 {{NULL, ST(secrets_masked)}}},
	{"hezo_proxyd_agent_requests_total",
	 "ssh agent requests: signatures made with a project's key, and requests refused.",
	 {{"signed", ST(keys_signed)}, {"refused", ST(keys_refused)}}},
	{"hezo_proxyd_h2_streams_total",
	 "HTTP/2 streams on intercepted connections (each has its netlog line).",
	 {{NULL, ST(h2_streams)}}},
	{"hezo_proxyd_intercept_over_budget_total",
	 "Intercepted connections and HTTP/2 streams refused over the memory budget.",
	 {{NULL, ST(icpt_budget_refused)}}},
	{"hezo_proxyd_dns_queries_total",
	 "DNS queries from the box by outcome, counted when the outcome is known.",
	 {{"allowed", ST(dns_allowed)},
	  {"refused", ST(dns_refused)},
	  {"rate_limited", ST(dns_ratelimited)},
	  {"failed", ST(dns_failed)}}},
};

static void family_head(struct buf *b, const char *name, const char *type, const char *help)
{
	bprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void box_labels(struct buf *b, const struct pd_container *c)
{
	bprintf(b, "{id=\"");
	label(b, c->id);
	bprintf(b, "\",project=\"");
	label(b, c->project);
	bprintf(b, "\"");
}

/* Microseconds as seconds, exactly (no float rounding in the sum). */
static void seconds(struct buf *b, uint64_t us)
{
	bprintf(b, "%llu.%06llu", (unsigned long long)(us / 1000000),
		(unsigned long long)(us % 1000000));
}

static void histogram(struct buf *b, const char *name, const char *help, const struct pd_hist *h)
{
	uint64_t cum = 0;

	family_head(b, name, "histogram", help);
	for (size_t i = 0; i < PD_HIST_BUCKETS; i++) {
		cum += h->bucket[i];
		bprintf(b, "%s_bucket{le=\"", name);
		seconds(b, pd_hist_bounds_us[i]);
		bprintf(b, "\"} %llu\n", (unsigned long long)cum);
	}
	bprintf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum ", name, (unsigned long long)h->count,
		name);
	seconds(b, h->sum_us);
	bprintf(b, "\n%s_count %llu\n", name, (unsigned long long)h->count);
}

/*
 * The process_* families Prometheus client libraries export, from /proc/self (readable by the
 * process itself even when not dumpable; seccomp keeps getrlimit away, so no process_max_fds). A
 * figure that cannot be read is left out.
 */
static void process_metrics(struct buf *b)
{
	unsigned long long utime, stime, start, vsize, btime = 0;
	long rss, tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	_cleanup_free_ char *stat = NULL, *pstat = NULL;
	DIR *d = opendir("/proc/self/fd");
	const char *p, *bt;
	size_t len;

	if (d) {
		unsigned n = 0;
		struct dirent *e;

		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				n++;
		family_head(b, "process_open_fds", "gauge", "Number of open file descriptors.");
		bprintf(b, "process_open_fds %u\n", n ? n - 1 : 0); /* not the directory's own */
		closedir(d);
	}
	/* The command name may hold spaces and parentheses: the fields start after the last ')'. */
	if (hezo_read_file_at(AT_FDCWD, "/proc/self/stat", 4096, &stat, &len, NULL) < 0 ||
	    !(p = strrchr(stat, ')')) ||
	    sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d "
		   "%llu %llu %ld",
		   &utime, &stime, &start, &vsize, &rss) != 5 ||
	    tick <= 0 || page <= 0)
		return;
	family_head(b, "process_cpu_seconds_total", "counter",
		    "Total user and system CPU time spent in seconds.");
	bprintf(b, "process_cpu_seconds_total %.2f\n", (double)(utime + stime) / (double)tick);
	family_head(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	bprintf(b, "process_resident_memory_bytes %llu\n",
		(unsigned long long)rss * (unsigned long long)page);
	family_head(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
	bprintf(b, "process_virtual_memory_bytes %llu\n", vsize);
	if (hezo_read_file_at(AT_FDCWD, "/proc/stat", 1 << 20, &pstat, &len, NULL) < 0 ||
	    !(bt = strstr(pstat, "\nbtime ")) || sscanf(bt + 7, "%llu", &btime) != 1)
		return;
	family_head(b, "process_start_time_seconds", "gauge",
		    "Start time of the process since unix epoch in seconds.");
	bprintf(b, "process_start_time_seconds %.2f\n",
		(double)btime + (double)start / (double)tick);
}

static void render(struct buf *b)
{
	unsigned n = 0;

	for (struct pd_container *c = pd_containers; c; c = c->next)
		n++;
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(per_container); i++) {
		const struct family *f = &per_container[i];

		family_head(b, f->name, "counter", f->help);
		for (struct pd_container *c = pd_containers; c; c = c->next) {
			for (size_t j = 0; j < HEZO_ARRAY_SIZE(f->v) && (j == 0 || f->v[j].result);
			     j++) {
				uint64_t v;

				memcpy(&v, (const char *)&c->st + f->v[j].off, sizeof(v));
				bprintf(b, "%s", f->name);
				box_labels(b, c);
				if (f->v[j].result)
					bprintf(b, ",result=\"%s\"", f->v[j].result);
				bprintf(b, "} %llu\n", (unsigned long long)v);
			}
		}
	}
	family_head(b, "hezo_proxyd_connections_open", "gauge",
		    "TCP connections being relayed now.");
	for (struct pd_container *c = pd_containers; c; c = c->next) {
		bprintf(b, "hezo_proxyd_connections_open");
		box_labels(b, c);
		bprintf(b, "} %u\n", c->nconns);
	}
	family_head(b, "hezo_proxyd_registered_boxes", "gauge",
		    "Boxes registered with proxyd now.");
	bprintf(b, "hezo_proxyd_registered_boxes %u\n", n);
	family_head(b, "hezo_proxyd_registrations_total", "counter",
		    "Registrations proxyd accepted or refused.");
	bprintf(b,
		"hezo_proxyd_registrations_total{result=\"accepted\"} %llu\n"
		"hezo_proxyd_registrations_total{result=\"refused\"} %llu\n",
		(unsigned long long)pd_metrics.registrations,
		(unsigned long long)pd_metrics.registration_errors);
	family_head(b, "hezo_proxyd_deregistrations_total", "counter", "Boxes deregistered.");
	bprintf(b, "hezo_proxyd_deregistrations_total %llu\n",
		(unsigned long long)pd_metrics.deregistrations);
	family_head(b, "hezo_proxyd_control_requests_total", "counter",
		    "Control requests answered, by whether the answer was an error.");
	bprintf(b,
		"hezo_proxyd_control_requests_total{result=\"ok\"} %llu\n"
		"hezo_proxyd_control_requests_total{result=\"error\"} %llu\n",
		(unsigned long long)(pd_metrics.control_requests - pd_metrics.control_errors),
		(unsigned long long)pd_metrics.control_errors);
	family_head(b, "hezo_proxyd_tls_leaf_lookups_total", "counter",
		    "Leaf certificates for intercepted hosts: taken from the cache, or minted.");
	bprintf(b,
		"hezo_proxyd_tls_leaf_lookups_total{result=\"cached\"} %llu\n"
		"hezo_proxyd_tls_leaf_lookups_total{result=\"minted\"} %llu\n",
		(unsigned long long)pd_tls_stats.cache_hits,
		(unsigned long long)pd_tls_stats.minted);
	histogram(b, "hezo_proxyd_upstream_connect_duration_seconds",
		  "Relayed connections' upstream TCP connects, from connect() to connected.",
		  &pd_connect_hist);
	histogram(b, "hezo_proxyd_dns_upstream_duration_seconds",
		  "DNS queries sent upstream, from their arrival to the answer or SERVFAIL.",
		  &pd_dns_hist);
	family_head(b, "hezo_build_info", "gauge", "The build of hezo-proxyd: always 1.");
	bprintf(b, "hezo_build_info{version=\"");
	label(b, HEZO_VERSION);
	bprintf(b, "\",commit=\"");
	label(b, HEZO_COMMIT);
	bprintf(b, "\"} 1\n");
	process_metrics(b);
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
