/*
 * `hezo-shim ps [-q] [--no-trunc] [--format table|json]` (no container ID): every live box,
 * from the records, the cgroups and proxyd's stats, with the admission state. With an ID, ps is
 * runc's verb (lifecycle.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hezo-file.h"
#include "shim.h"

#define STATS_MSG_MAX (64 * 1024)

/* Which engine made the bundle: its path says so (the record keeps the resolved bundle). */
static const char *engine_of(const char *bundle)
{
	if (!bundle)
		return "oci";
	if (strstr(bundle, "/io.containerd.runtime.v2.task/moby/"))
		return "docker";
	if (strstr(bundle, "/io.containerd.runtime.v2.task/k8s.io/"))
		return "kubernetes";
	if (strstr(bundle, "/io.containerd.runtime.v2.task/"))
		return "containerd";
	if (strstr(bundle, "/overlay-containers/") || strstr(bundle, "/libpod"))
		return "podman";
	return "oci";
}

/* An unsigned number from a cgroup file; "max" is -1 (no limit); -errno when unreadable. */
static int64_t cg_read(const struct hezo_json *rec, const char *controller, const char *file,
		       const char *key)
{
	_cleanup_free_ char *data = NULL;
	char dir[PATH_MAX], path[PATH_MAX + 64];
	const char *s;
	size_t len;
	int r;

	r = shim_record_cgroup(rec, controller, dir, sizeof(dir));
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	r = hezo_read_file_at(AT_FDCWD, path, 1 << 20, &data, &len, NULL);
	if (r < 0)
		return r;
	s = data;
	if (key) {
		/* "key value" lines (cpu.stat) */
		size_t kl = strlen(key);
		for (s = data; s && !(strncmp(s, key, kl) == 0 && s[kl] == ' ');
		     s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL)
			;
		if (!s)
			return -ENOENT;
		s += kl + 1;
	}
	if (strncmp(s, "max", 3) == 0)
		return -1;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	return (int64_t)strtoull(s, NULL, 10);
}

static bool cgroup_v2(void)
{
	return access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
}

static struct hezo_json *num_or_null(int64_t v)
{
	return v >= 0 ? hezo_json_new_int(v) : hezo_json_new_null();
}

/* A page of proxyd's stats: one SEQPACKET request, one reply (docs/egress.md). */
static int proxyd_stats_page(int fd, const char *after, struct hezo_json **out)
{
	_cleanup_free_ char *req = NULL, *buf = malloc(STATS_MSG_MAX + 1);
	ssize_t n;
	int len;

	if (!buf)
		return -ENOMEM;
	len = after ? asprintf(&req, "{\"op\":\"stats\",\"after\":\"%s\"}", after)
		    : asprintf(&req, "{\"op\":\"stats\"}");
	if (len < 0) {
		req = NULL;
		return -ENOMEM;
	}
	if (send(fd, req, (size_t)len, MSG_NOSIGNAL) != len)
		return -errno;
	n = recv(fd, buf, STATS_MSG_MAX, 0);
	if (n <= 0)
		return n < 0 ? -errno : -EPIPE;
	return hezo_json_parse(buf, (size_t)n, out, NULL);
}

/* {id: per-container stats} from proxyd; NULL when it does not answer (not running: no egress). */
static struct hezo_json *proxyd_stats(const struct shim_ctx *ctx)
{
	_cleanup_json_ struct hezo_json *all = hezo_json_new_object();
	_cleanup_free_ char *after = NULL;
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 2};

	if (!all || !ctx->proxyd_socket || strlen(ctx->proxyd_socket) >= sizeof(sa.sun_path))
		return NULL;
	strcpy(sa.sun_path, ctx->proxyd_socket);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return NULL;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (;;) {
		_cleanup_json_ struct hezo_json *rep = NULL;
		struct hezo_json *items;
		const char *next;

		if (proxyd_stats_page(fd, after, &rep) < 0 ||
		    !hezo_json_is_true(hezo_json_get(rep, "ok")))
			return NULL;
		items = hezo_json_get_type(rep, "perContainer", HEZO_JSON_ARRAY);
		HEZO_JSON_FOREACH (i, items) {
			const char *id = hezo_json_string(hezo_json_get(items->items[i], "id"));
			if (id && hezo_json_set(all, id, hezo_json_clone(items->items[i])) < 0)
				return NULL;
		}
		next = hezo_json_string(hezo_json_get(rep, "next"));
		if (!next || (after && strcmp(next, after) <= 0))
			break;
		free(after);
		after = strdup(next);
		if (!after)
			return NULL;
	}
	return TAKE_PTR(all);
}

struct ps_walk {
	struct hezo_json *boxes;
	const struct hezo_json *stats;
	const struct shim_ctx *ctx;
	time_t now;
	int r;
};

static int ps_one(void *data, const char *key, struct hezo_json *rec)
{
	struct ps_walk *w = data;
	_cleanup_json_ struct hezo_json *b = NULL, *srec = NULL;
	const struct hezo_json *st, *cg;
	const char *id = hezo_json_string(hezo_json_get(rec, "id"));
	const char *created = hezo_json_string(hezo_json_get(rec, "created"));
	bool v2 = cgroup_v2();
	int64_t cpu, up = -1;
	struct tm tm = {0};
	int r = 0;

	/* A project's runtime lists only its project's boxes. */
	if (!id || !shim_record_live(rec) || shim_record_for_caller(w->ctx, id, rec, NULL) < 0)
		return 0;
	if (created && strptime(created, "%Y-%m-%dT%H:%M:%SZ", &tm))
		up = (int64_t)(w->now - timegm(&tm));
	b = hezo_json_new_object();
	if (!b)
		return -ENOMEM;
	r = r ?: hezo_json_set(b, "id", hezo_json_new_string(id));
	r = r
		    ?: hezo_json_set(b, "engine",
				     hezo_json_new_string(engine_of(
					     hezo_json_string(hezo_json_get(rec, "bundle")))));
	r = r ?: hezo_json_set(b, "project", hezo_json_clone(hezo_json_get(rec, "project")));
	r = r ?: hezo_json_set(b, "backend", hezo_json_clone(hezo_json_get(rec, "backend")));
	r = r
		    ?: hezo_json_set(b, "egress",
				     hezo_json_clone(hezo_json_get_path(rec, "box.egress.mode")));
	r = r ?: hezo_json_set(b, "init", hezo_json_clone(hezo_json_get(rec, "init")));
	r = r
		    ?: hezo_json_set(b, "admission",
				     hezo_json_clone(hezo_json_get_path(rec, "admission.state")));
	/* A runsc pod's app container has no host cgroup of its own: its pod's holds (runsc-pod.c).
	 */
	cg = shim_runsc_pod_sandbox_record(w->ctx, rec, &srec) > 0 ? srec : rec;
	if (srec)
		r = r ?: hezo_json_set(b, "limitsOf", hezo_json_clone(hezo_json_get(srec, "id")));
	r = r
		    ?: hezo_json_set(b, "memoryBytes",
				     num_or_null(v2 ? cg_read(cg, "memory", "memory.current", NULL)
						    : cg_read(cg, "memory", "memory.usage_in_bytes",
							      NULL)));
	/* The cap the box got (config.json after policy); the cgroup file says the same. */
	r = r
		    ?: hezo_json_set(b, "memoryCap",
				     num_or_null(v2 ? cg_read(cg, "memory", "memory.max", NULL)
						    : cg_read(cg, "memory", "memory.limit_in_bytes",
							      NULL)));
	r = r ?: hezo_json_set(b, "pids", num_or_null(cg_read(cg, "pids", "pids.current", NULL)));
	r = r ?: hezo_json_set(b, "pidsCap", num_or_null(cg_read(cg, "pids", "pids.max", NULL)));
	cpu = v2 ? cg_read(rec, "cpu", "cpu.stat", "usage_usec")
		 : cg_read(rec, "cpuacct", "cpuacct.usage", NULL);
	if (cpu >= 0 && !v2)
		cpu /= 1000; /* ns to µs */
	r = r ?: hezo_json_set(b, "cpuMicros", num_or_null(cpu));
	r = r ?: hezo_json_set(b, "uptimeSeconds", num_or_null(up));
	st = hezo_json_get(w->stats, id);
	r = r ?: hezo_json_set(b, "proxyd", st ? hezo_json_clone(st) : hezo_json_new_null());
	r = r ?: hezo_json_append(w->boxes, TAKE_PTR(b));
	(void)key;
	return r;
}

/* A byte count in at most 5 characters: 980K, 9.5M, 300M, 1.5G; "-" unreadable, "max" none. */
void shim_human_bytes(char *buf, size_t size, const struct hezo_json *v)
{
	int64_t n;
	double m;

	if (hezo_json_get_int64(v, &n) < 0 || n < 0) {
		snprintf(buf, size, "-");
		return;
	}
	if (n >= (int64_t)1 << 50) {
		snprintf(buf, size, "max");
		return;
	}
	m = (double)n / (1 << 20);
	if (n < 1000 * 1024)
		snprintf(buf, size, "%" PRId64 "K", (n + 1023) / 1024);
	else if (m < 9.95)
		snprintf(buf, size, "%.1fM", m);
	else if (m < 999.5)
		snprintf(buf, size, "%.0fM", m);
	else
		snprintf(buf, size, "%.1fG", m / 1024);
}

static void human_count(char *buf, size_t size, const struct hezo_json *v)
{
	int64_t n;

	if (hezo_json_get_int64(v, &n) < 0 || n < 0)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%" PRId64, n);
}

/* An age as docker ps words it, short: 45s, 12m, 3h, 9d. */
static void human_age(char *buf, size_t size, const struct hezo_json *v)
{
	int64_t s;

	if (hezo_json_get_int64(v, &s) < 0 || s < 0)
		snprintf(buf, size, "-");
	else if (s < 60)
		snprintf(buf, size, "%" PRId64 "s", s);
	else if (s < 3600)
		snprintf(buf, size, "%" PRId64 "m", s / 60);
	else if (s < 86400)
		snprintf(buf, size, "%" PRId64 "h", s / 3600);
	else
		snprintf(buf, size, "%" PRId64 "d", s / 86400);
}

/*
 * One row per box in 80 columns, as docker ps shows containers: the ID cut to 12 characters unless
 * no_trunc. The engine, DNS answers and admission state are in --format json.
 */
static void print_table(const struct hezo_json *doc, bool no_trunc)
{
	const struct hezo_json *adm = hezo_json_get(doc, "admission");
	const struct hezo_json *boxes = hezo_json_get(doc, "boxes");
	int64_t active = 0, waiting = 0, limit = 0;
	int idw = no_trunc ? 64 : 12;

	hezo_json_get_int64(hezo_json_get(adm, "active"), &active);
	hezo_json_get_int64(hezo_json_get(adm, "waiting"), &waiting);
	hezo_json_get_int64(hezo_json_get(adm, "limit"), &limit);
	printf("%-*s  %-10s %-7s %-6s %-11s %-9s %6s %5s %5s\n", idw, "CONTAINER ID", "PROJECT",
	       "BACKEND", "EGRESS", "MEMORY", "PIDS", "CPU", "UP", "CONNS");
	HEZO_JSON_FOREACH (i, boxes) {
		const struct hezo_json *b = boxes->items[i];
		const struct hezo_json *st = hezo_json_get(b, "proxyd");
		char mu[16], mc[16], pu[24], pc[24], cpu[32], up[24], cn[24], mem[40], pid[56];
		int64_t us = -1;

		shim_human_bytes(mu, sizeof(mu), hezo_json_get(b, "memoryBytes"));
		shim_human_bytes(mc, sizeof(mc), hezo_json_get(b, "memoryCap"));
		human_count(pu, sizeof(pu), hezo_json_get(b, "pids"));
		human_count(pc, sizeof(pc), hezo_json_get(b, "pidsCap"));
		human_age(up, sizeof(up), hezo_json_get(b, "uptimeSeconds"));
		human_count(cn, sizeof(cn), hezo_json_get(st, "connsAccepted"));
		if (hezo_json_get_int64(hezo_json_get(b, "cpuMicros"), &us) == 0)
			snprintf(cpu, sizeof(cpu), "%.1fs", (double)us / 1e6);
		else
			snprintf(cpu, sizeof(cpu), "-");
		snprintf(mem, sizeof(mem), "%s/%s", mu, mc);
		snprintf(pid, sizeof(pid), "%s/%s", pu, pc);
		printf("%-*.*s  %-10.10s %-7.7s %-6.6s %-11s %-9s %6s %5s %5s\n", idw, idw,
		       hezo_json_string(hezo_json_get(b, "id")),
		       hezo_json_string(hezo_json_get(b, "project")) ?: "-",
		       hezo_json_string(hezo_json_get(b, "backend")) ?: "-",
		       hezo_json_string(hezo_json_get(b, "egress")) ?: "-", mem, pid, cpu, up, cn);
	}
	if (limit > 0)
		printf("admission: %" PRId64 " active, %" PRId64 " waiting, limit %" PRId64
		       " (%s)\n",
		       active, waiting, limit, hezo_json_string(hezo_json_get(adm, "how")) ?: "");
	else
		printf("admission: %" PRId64 " active, %" PRId64 " waiting, no limit\n", active,
		       waiting);
}

/* Only the IDs, one per line (docker ps -q). */
static void print_ids(const struct hezo_json *doc, bool no_trunc)
{
	const struct hezo_json *boxes = hezo_json_get(doc, "boxes");

	HEZO_JSON_FOREACH (i, boxes)
		printf("%.*s\n", no_trunc ? 64 : 12,
		       hezo_json_string(hezo_json_get(boxes->items[i], "id")) ?: "-");
}

/* The admission limit as a create would compute it for a box with the policy's memory cap. */
static int admission_json(const struct shim_ctx *ctx, struct hezo_json *adm,
			  struct hezo_error **err)
{
	_cleanup_policy_ struct hezo_policy *p = NULL;
	_cleanup_json_ struct hezo_json *pj = NULL, *spec = NULL;
	unsigned active = 0, waiting = 0;
	uint64_t limit = 0, mem = 0;
	char how[256] = "", text[96];
	int r;

	r = shim_load_policy(ctx, &p, err);
	if (r < 0)
		return r;
	pj = hezo_policy_to_json(p);
	hezo_json_get_uint64(hezo_json_get_path(pj, "resources.memory"), &mem);
	snprintf(text, sizeof(text),
		 "{\"linux\":{\"resources\":{\"memory\":{\"limit\":%" PRIu64 "}}}}", mem);
	if (hezo_json_parse(text, strlen(text), &spec, err) < 0)
		return -EINVAL;
	if (shim_admission_limit(p, spec, &limit, how, sizeof(how)) < 0)
		limit = 0;
	(void)shim_admission_count(ctx, NULL, &active);
	(void)shim_admission_queue_length(ctx, &waiting);
	r = hezo_json_set(adm, "active", hezo_json_new_uint(active));
	r = r ?: hezo_json_set(adm, "waiting", hezo_json_new_uint(waiting));
	r = r
		    ?: hezo_json_set(adm, "limit",
				     limit ? hezo_json_new_uint(limit) : hezo_json_new_null());
	r = r
		    ?: hezo_json_set(adm, "how",
				     limit ? hezo_json_new_string(how) : hezo_json_new_null());
	return r < 0 ? hezo_error_set(err, ENOMEM, "out of memory") : 0;
}

int shim_ps_print_json(const struct hezo_json *doc, struct hezo_error **err)
{
	_cleanup_free_ char *out = NULL;
	size_t len;
	int r;

	r = hezo_json_dump(doc, false, &out, &len, err);
	if (r < 0)
		return r;
	if (hezo_write_all(STDOUT_FILENO, out, len) < 0 ||
	    hezo_write_all(STDOUT_FILENO, "\n", 1) < 0)
		return hezo_error_set(err, EIO, "ps: cannot write to stdout");
	return 0;
}

int shim_ps_collect(struct shim_ctx *ctx, struct hezo_json **out, struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *doc = hezo_json_new_object(), *stats = NULL;
	struct ps_walk w = {.ctx = ctx};
	struct hezo_json *adm;
	int r;

	adm = doc ? hezo_json_ensure_object(doc, "admission") : NULL;
	w.boxes = doc ? hezo_json_ensure_array(doc, "boxes") : NULL;
	if (!adm || !w.boxes)
		return hezo_error_set(err, ENOMEM, "ps: out of memory");
	r = admission_json(ctx, adm, err);
	if (r < 0)
		return r;
	stats = proxyd_stats(ctx);
	w.stats = stats;
	w.now = time(NULL);
	r = shim_records_foreach(ctx, ps_one, &w);
	if (r < 0)
		return hezo_error_set(err, -r, "ps: state directory %s: %s", ctx->state_dir,
				      strerror(-r));
	*out = TAKE_PTR(doc);
	return 0;
}

int shim_cmd_ps_all(struct shim_ctx *ctx, enum shim_ps_form form, bool no_trunc,
		    struct hezo_error **err)
{
	_cleanup_json_ struct hezo_json *doc = NULL;
	int r;

	r = shim_ps_collect(ctx, &doc, err);
	if (r < 0)
		return r;
	if (form == SHIM_PS_JSON)
		return shim_ps_print_json(doc, err);
	if (form == SHIM_PS_QUIET)
		print_ids(doc, no_trunc);
	else
		print_table(doc, no_trunc);
	return fflush(stdout) == 0 ? 0 : hezo_error_set(err, EIO, "ps: cannot write to stdout");
}
