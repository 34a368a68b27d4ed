/* hezo-proxyd's daemon internals shared between its files: the loop, containers, connections. */
#ifndef HEZO_PROXYD_H
#define HEZO_PROXYD_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "hezo-error.h"
#include "hezo-id.h"
#include "hezo-json.h"
#include "proxyd-parse.h"

#define PD_TCP_PORT    15001
#define PD_DNS_PORT    15053
#define PD_ID_MAX      (HEZO_ID_MAX + 1) /* a container id (base/hezo-id.h) and its NUL */
#define PD_PROJECT_MAX 65
#define PD_HEAD_MAX    16384

/* ---- log.c ---- */

/* Daemon messages on stderr, one JSON line each, with sd-daemon(3)'s <N> priority in front when
 * stderr is the journal's stream (JOURNAL_STREAM names its device and inode). */
void pd_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* That prefix for a level ("error", "warning", "info", "debug"): "<3>".."<7>", or "". */
const char *pd_log_prefix(const char *level);
/* Connect to $NOTIFY_SOCKET when set (before privileges drop); pd_notify sends a state such as
 * "READY=1" there, and nothing without it. */
int pd_notify_init(struct hezo_error **err);
void pd_notify(const char *state);

/* ---- loop.c ---- */

struct pd_watch;
typedef void (*pd_handler)(struct pd_watch *w, uint32_t events);

struct pd_watch {
	int fd;
	uint32_t events;
	bool added; /* in the epoll set */
	pd_handler fn;
};

int pd_loop_init(struct hezo_error **err);
/* Start watching fd (taking ownership of it) for events; level-triggered. */
int pd_watch_add(struct pd_watch *w, int fd, uint32_t events, pd_handler fn);
/* Take ownership of fd without watching it yet: the first pd_watch_set() with events adds it. */
void pd_watch_init(struct pd_watch *w, int fd, pd_handler fn);
int pd_watch_set(struct pd_watch *w, uint32_t events);
/* Stop watching and hand the fd to the caller (not closed); the watch holds none after. */
int pd_watch_release(struct pd_watch *w);
/* Stop watching and close; safe on a watch that holds no fd. */
void pd_watch_close(struct pd_watch *w);
/* Close an fd that no other process or descriptor shares (accepted or socket()ed here), so its
 * close() takes it out of the epoll set and the EPOLL_CTL_DEL is saved; the close (a reset first
 * when asked: SO_LINGER 0) is done at the end of the current batch of events: work waiting in the
 * same batch, such as a new connection, goes first. */
void pd_watch_drop_later(struct pd_watch *w, bool reset);
/* Free p after the current batch of events: later events of the batch may still point at it. */
void pd_defer_free(void *p);
/*
 * Run until SIGTERM or SIGINT; tick() runs about once a second. deadline(now) says how many
 * milliseconds the loop may wait for events at most (-1: no limit), and does what is due.
 */
int pd_loop_run(void (*tick)(void), int (*deadline)(uint64_t now_ms));
uint64_t pd_now_ms(void);

/* ---- config.c: the daemon's configuration ---- */

struct pd_config {
	const char *state_dir;
	const char *log_dir;
	const char *socket;
	struct hezo_resolver upstream; /* family 0: none */
	unsigned conn_cap;
	unsigned dns_rate; /* queries per second per container */
	unsigned idle_timeout_s;
	unsigned head_timeout_s;
	unsigned connect_timeout_s;
	/* Memory intercepted connections and their HTTP/2 streams may reserve (intercept.c):
	 * in all, and one registration's share of it. */
	unsigned icpt_mem_mib, icpt_share_mib;
};

extern struct pd_config pd_cfg;

/* STATE_DIR/name, made (0700) if need be, opened as a directory: an fd or -errno. */
int pd_state_subdir(const char *name, struct hezo_error **err);

/* ---- stats.c: the traffic counters (`--ctl stats`, docs/metrics.md) ---- */

struct pd_stats {
	uint64_t conns_accepted, conns_allowed, conns_refused;
	uint64_t dns_queries, dns_allowed, dns_refused, dns_ratelimited, dns_failed;
	uint64_t bytes_out, bytes_in;
	uint64_t secrets_substituted, secrets_masked; /* intercepted connections */
	uint64_t keys_signed, keys_refused;	      /* the agent's sign requests */
	uint64_t h2_streams;			      /* intercepted HTTP/2 streams */
	uint64_t icpt_budget_refused; /* connections and streams over the memory budget */
};

/* Every registration's, in total (each registration's own are its st). */
extern struct pd_stats pd_stats;

/* Count one event in registration c's counters and in the total. */
#define PD_COUNT(c, field) ((c)->st.field++, pd_stats.field++)

/*
 * A latency histogram for the whole proxyd (docs/metrics.md): per-bucket counts, made cumulative
 * only when the endpoint renders them, and the sum in microseconds so no float is kept.
 */
#define PD_HIST_BUCKETS 14
extern const uint64_t pd_hist_bounds_us[PD_HIST_BUCKETS];
struct pd_hist {
	uint64_t bucket[PD_HIST_BUCKETS + 1]; /* the last: above every bound */
	uint64_t count, sum_us;
};
/* An upstream TCP connect of the relay, from connect() to connected. */
extern struct pd_hist pd_connect_hist;
/* A DNS query sent upstream, from its arrival to its answer (or SERVFAIL). */
extern struct pd_hist pd_dns_hist;
void pd_hist_observe(struct pd_hist *h, uint64_t us);
/* CLOCK_MONOTONIC in microseconds, for the histograms. */
uint64_t pd_now_us(void);

struct pd_container;

/* What the relay and interception know of a TCP connection from a container. */
struct pd_tcp {
	struct sockaddr_storage src, dst;
	char name[HEZO_NAME_MAX]; /* the name it was allowed for ("" for an address entry) */
	uint64_t start_ms;
	uint64_t masks;	  /* intercepted: values masked in the answers (mask.c) */
	bool ssh;	  /* began with an SSH identification string: named by its pin */
	bool auth_signed; /* the agent signed a userauth while it was live (agent.c) */
};

/* A TCP connection of c ended, relayed or intercepted: its netlog line and its counters. */
void pd_tcp_end(struct pd_container *c, const struct pd_tcp *t, uint64_t bytes_out,
		uint64_t bytes_in, bool intercepted, const char *verdict, const char *reason);

/* ---- the daemon's registrations (registry.c) ---- */

struct pd_conn;
struct pd_agentconn;
struct pd_dnsconn;
struct pd_dnsq;

#define pd_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

struct pd_listener {
	struct pd_watch w;
	struct pd_container *c;
};

/*
 * A container of a registration. Its secrets are its own: a connection takes them only when the
 * socket it came from was made in the member's cgroup (pd_member_of), as the kernel records it.
 */
struct pd_member {
	char id[PD_ID_MAX];
	uint64_t cgroup; /* its cgroup v2 id, from the hook; 0: unknown */
	struct hezo_secret *secrets;
	size_t nsecrets;
	struct hezo_json *secrets_json; /* as registered, persisted with it; NULL: none */
};

/*
 * One registration per network namespace, named by the first container that registered it. The
 * containers that share the namespace (a pod's, `--network=container:`) are its members: the
 * last to leave takes it down, and a joiner can only narrow its egress.
 */
struct pd_container {
	struct pd_container *next;
	char id[PD_ID_MAX];
	struct pd_member **members;
	size_t nmembers;
	int diag_fd; /* NETLINK_SOCK_DIAG in the namespace: whose a connection is; -1: none */
	char project[PD_PROJECT_MAX];
	struct hezo_egress eg;
	struct hezo_json *reg; /* the registration as persisted */
	int netns_fd;
	struct pd_listener tcp[2], udp[2], dnstcp[2]; /* [0] IPv4, [1] IPv6 */
	int log_fd;
	char *logbuf; /* queued netlog lines, whole lines only */
	size_t loglen;
	struct pd_container *log_next, **log_pprev; /* netlog.c's list of those with lines queued */
	struct hezo_pins pins;
	unsigned nconns;
	uint64_t icpt_mem; /* bytes its intercepted connections reserve (intercept.c) */
	unsigned ndnsq;
	double tokens;
	uint64_t tokens_ms;
	uint64_t ratelimit_logged_s;
	struct pd_conn *conns;
	struct pd_dnsconn *dnsconns;
	struct pd_dnsq *queries;
	struct pd_stats st;
	struct pd_listener agent; /* the ssh agent's socket (agent.c), when it has keys */
	struct pd_agentconn *agentconns;
	unsigned nagent;
	double agent_tokens; /* netlog lines the agent's refusals may still take (agent.c) */
	uint64_t agent_tokens_ms;
	uint64_t agent_unlogged; /* refusals not logged since the last line */
};

/* ---- metrics.c: the Prometheus endpoint (docs/metrics.md), off unless --metrics is given ---- */

struct pd_metrics_counters {
	uint64_t registrations, registration_errors, deregistrations;
	uint64_t control_requests, control_errors; /* every one answered, and those with an error */
};
extern struct pd_metrics_counters pd_metrics;
/* 127.0.0.1:PORT, [::1]:PORT or unix:PATH into ss; -EPERM for an address off loopback. */
int pd_metrics_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *sl);
int pd_metrics_init(const char *spec, struct hezo_error **err);

/* ---- hostaddr.c ---- */

/* Is addr one of this host's own addresses (refreshed every 30 s)? */
bool pd_host_addr(int family, const uint8_t *addr);
void pd_host_addrs_refresh(void);

/* ---- netns.c: the only code that enters other namespaces or mounts ---- */

/* Fork the privileged helper; call before anything else is open. */
int pd_netns_init(struct hezo_error **err);
/* Is fd a network namespace? */
bool pd_netns_is_net(int fd);
/* Create c's six listeners inside its namespace; proxyd stays in its own. */
int pd_netns_listen(int netns_fd, int fds[6], struct hezo_error **err);
/* Bind-mount the namespace at state_dir/netns/ID so a restarted proxyd can enter it again. */
int pd_netns_pin(int netns_fd, const char *id, struct hezo_error **err);
void pd_netns_unpin(const char *id);
int pd_netns_open_pinned(const char *id, struct hezo_error **err);
/* Does any process still live in this namespace? (reads all of /proc: start-up, and a register
 * whose id is registered in another namespace) */
bool pd_netns_alive(int netns_fd);
/* A NETLINK_SOCK_DIAG socket of the namespace (pd_peer_cgroup asks it), or -errno. */
int pd_netns_diag(int netns_fd, struct hezo_error **err);

/* ---- peer.c: whose a connection accepted in a container's namespace is ---- */

/*
 * The cgroup v2 id of the socket a container connected from, src its address and dst the
 * destination it asked for (before the redirect), found by sock_diag in that namespace.
 * -ENOENT: no such socket (it closed).
 */
int pd_peer_cgroup(int diag_fd, const struct sockaddr_storage *src,
		   const struct sockaddr_storage *dst, uint64_t *cgroup);
/* The member of c a connection from src to dst (as the container asked for it) came from: the
 * only member, else the one member whose cgroup made the socket; NULL when none or two are. */
const struct pd_member *pd_member_of(const struct pd_container *c,
				     const struct sockaddr_storage *src,
				     const struct sockaddr_storage *dst);

/* ---- registry.c ---- */

extern struct pd_container *pd_containers;

/* The registration container id is a member of. */
struct pd_container *pd_container_find(const char *id);
int pd_registry_init(struct hezo_error **err);
/* q: checked by hezo_ctl_request_parse(); its egress moves into the container. */
int pd_register(struct hezo_ctl_request *q, int netns_fd, struct hezo_error **err);
void pd_deregister(const char *id);
void pd_registry_restore(void);
void pd_registry_tick(uint64_t now_ms);

/* ---- relay.c ---- */

void pd_tcp_accept(struct pd_watch *w, uint32_t events);
void pd_conn_abort_all(struct pd_container *c);
void pd_relay_tick(struct pd_container *c, uint64_t now_ms);
/* fn(t, arg) for each of c's SSH connections that is relayed or connecting. */
void pd_relay_each_ssh(struct pd_container *c, void (*fn)(struct pd_tcp *t, void *arg), void *arg);
unsigned pd_relay_active(void);

/* ---- intercept.c: TLS to a secret's host (issue 17) ---- */

/* Does one of m's secrets (any member's: m NULL and c given) name this host on this port? */
bool pd_intercept_wanted(const struct pd_container *c, const struct pd_member *m, const char *name,
			 uint16_t port);
/* Take over client fd (counted in c->nconns) with the ClientHello bytes already read from it:
 * a connection of member m, whose secrets it takes (the other members' are refused). */
void pd_intercept_start(struct pd_container *c, const struct pd_member *m, int fd,
			const uint8_t *hello, size_t len, const struct sockaddr_storage *src,
			const struct sockaddr_storage *dst, const char *name);
void pd_intercept_abort_all(struct pd_container *c);
/* Member m is leaving: its intercepted connections end (they point at its secrets). */
void pd_intercept_abort_member(struct pd_container *c, const struct pd_member *m);
/* End c's intercepted connections that read the pod's secrets: a member joined since. */
void pd_intercept_abort_loaded(struct pd_container *c);
/* Does a plain-HTTP request head hold a placeholder of one of c's secrets that may not pass? */
bool pd_intercept_plain_refused(const struct pd_container *c, const uint8_t *head, size_t len);
void pd_intercept_tick(struct pd_container *c, uint64_t now_ms);

/* ---- agent.c: the ssh agent for a registration's keys (docs/hardening.md, "Keys") ---- */

/* Serve STATE/agent/ID/agent.sock when c has keys (the shim bind-mounts that directory). */
int pd_agent_start(struct pd_container *c, struct hezo_error **err);
/* Close the socket, its connections, and unlink it. */
void pd_agent_stop(struct pd_container *c);

/* ---- dnsproxy.c ---- */

void pd_dns_udp(struct pd_watch *w, uint32_t events);
void pd_dns_tcp_accept(struct pd_watch *w, uint32_t events);
void pd_dns_abort_all(struct pd_container *c);
void pd_dns_tick(struct pd_container *c, uint64_t now_ms);
/* Close upstream resolver sockets idle for a while. */
void pd_dns_upstreams_tick(uint64_t now_ms);

/* ---- netlog.c ---- */

struct pd_netlog {
	const char *proto; /* "tcp", "dns/udp", "dns/tcp", "http" (a plain request), "https" */
	const struct sockaddr_storage *src, *dst;
	const char *name;
	const char *qtype;
	const char *verdict; /* "allow", "deny", "error" */
	const char *reason;
	const struct hezo_dns_result *dns;
	uint64_t bytes_out, bytes_in, duration_ms;
	bool has_bytes;
	uint64_t masks; /* an intercepted connection's end: values masked in its answers */
	/* a request's method and path (no query); intercepted TLS (intercept.c) adds the secrets
	 * substituted or refused (names only) and how many substitutions */
	bool intercepted;
	const char *method, *path, *secrets;
	unsigned substitutions;
};

int pd_netlog_open(struct pd_container *c, struct hezo_error **err);
/* Queue one line; lines reach the file in whole-line batches (pd_netlog_flush*). */
void pd_netlog_write(struct pd_container *c, const struct pd_netlog *l);
/* An agent line: a signature made or a request refused, with the key's name and fingerprint,
 * the kind ("git" namespace, "ssh" host) and the hash signed (ALG:HEX). */
struct pd_netlog_key {
	const char *key, *fingerprint, *kind, *target, *hash, *verdict, *reason;
};
void pd_netlog_key(struct pd_container *c, const struct pd_netlog_key *k);
/* A control line: member joined ("join") or left ("leave") c's registration. */
void pd_netlog_member(struct pd_container *c, const char *event, const char *member,
		      const char *verdict, const char *reason);
void pd_netlog_flush(struct pd_container *c);
void pd_netlog_flush_all(void);
/* Milliseconds until queued lines are due (-1: none queued); flushes those that are due. The
 * loop's deadline (main.c registers it). */
int pd_netlog_poll(uint64_t now_ms);

/* ---- server.c: what control.c and metrics.c share ---- */

/* Bind fd to sa (a unix socket's file made 0600, never open to others meanwhile) and listen.
 * -errno of the call that failed. */
int pd_server_bind(int fd, const struct sockaddr *sa, socklen_t len, int backlog);
/*
 * Accept what waits on listener w (8 at most), each into a new zeroed object of size bytes that
 * starts with its struct pd_watch, watched for EPOLLIN with fn. root_only: a peer other than
 * uid 0 is sent refusal (unless NULL) and closed.
 */
void pd_server_accept(struct pd_watch *w, size_t size, bool root_only, const char *refusal,
		      pd_handler fn);

/* ---- control.c ---- */

int pd_control_init(struct hezo_error **err);

/* ---- privs.c ---- */

/* The daemon: no capability at all. The netns helper: CAP_SYS_ADMIN and a tiny filter. */
int pd_drop_privileges(bool seccomp, struct hezo_error **err);
int pd_drop_privileges_helper(struct hezo_error **err);

/* ---- ctl.c: the client side, for operators and tests ---- */

int pd_ctl_main(const char *socket_path, int argc, char **argv);

#endif
