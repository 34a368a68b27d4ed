/*
 * `hezo-shim stats [--no-stream] [--format table|json] [--interval SECONDS]`: what every live box
 * used over the last interval, refreshed in place like `docker stats`: CPU, memory against its
 * cap, pids against the limit, egress connections and DNS answers allowed and refused per second
 * (proxyd's counters), and the admission queue. Each sample is two readings of what `ps` reads
 * (ps.c), an interval apart; --no-stream prints one sample and exits.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

struct sample {
	struct hezo_json *doc;
	struct timespec at;
};

static int take(struct shim_ctx *ctx, struct sample *s, struct hezo_error **err)
{
	hezo_json_free(s->doc);
	s->doc = NULL;
	clock_gettime(CLOCK_MONOTONIC, &s->at);
	return shim_ps_collect(ctx, &s->doc, err);
}

static const struct hezo_json *box_by_id(const struct hezo_json *doc, const char *id)
{
	const struct hezo_json *boxes = hezo_json_get(doc, "boxes");

	HEZO_JSON_FOREACH (i, boxes)
		if (id && hezo_json_string(hezo_json_get(boxes->items[i], "id")) &&
		    strcmp(hezo_json_string(hezo_json_get(boxes->items[i], "id")), id) == 0)
			return boxes->items[i];
	return NULL;
}

/* (now - before) / seconds of a counter, NAN when either reading is missing or it went back. */
static double per_second(const struct hezo_json *now, const struct hezo_json *before,
			 const char *key, double seconds)
{
	int64_t a, b;

	if (!now || !before || seconds <= 0 ||
	    hezo_json_get_int64(hezo_json_get(now, key), &a) < 0 ||
	    hezo_json_get_int64(hezo_json_get(before, key), &b) < 0 || a < b)
		return NAN;
	return (double)(a - b) / seconds;
}

static double ratio_percent(const struct hezo_json *b, const char *use, const char *cap)
{
	int64_t u, c;

	if (hezo_json_get_int64(hezo_json_get(b, use), &u) < 0 ||
	    hezo_json_get_int64(hezo_json_get(b, cap), &c) < 0 || u < 0 || c <= 0 ||
	    c >= (int64_t)1 << 50)
		return NAN;
	return 100.0 * (double)u / (double)c;
}

static struct hezo_json *num(double v)
{
	return isfinite(v) ? hezo_json_new_fixed(v, 2) : hezo_json_new_null();
}

static void rate(char *buf, size_t size, double v)
{
	if (isnan(v))
		snprintf(buf, size, "-");
	else if (v < 9.95)
		snprintf(buf, size, "%.1f", v);
	else
		snprintf(buf, size, "%.0f", v);
}

/* The sample as one JSON object: the box's figures now, and its rates over the interval. */
static int sample_json(const struct sample *prev, const struct sample *cur, double dt,
		       struct hezo_json **out)
{
	_cleanup_json_ struct hezo_json *doc = hezo_json_new_object();
	const struct hezo_json *boxes = hezo_json_get(cur->doc, "boxes");
	struct hezo_json *arr = doc ? hezo_json_ensure_array(doc, "boxes") : NULL;
	int r;

	if (!arr)
		return -ENOMEM;
	r = hezo_json_set(doc, "intervalSeconds", hezo_json_new_fixed(dt, 3));
	r = r
		    ?: hezo_json_set(doc, "admission",
				     hezo_json_clone(hezo_json_get(cur->doc, "admission")));
	HEZO_JSON_FOREACH (i, boxes) {
		const struct hezo_json *b = boxes->items[i];
		const struct hezo_json *was =
			box_by_id(prev->doc, hezo_json_string(hezo_json_get(b, "id")));
		const struct hezo_json *px = hezo_json_get(b, "proxyd");
		const struct hezo_json *wpx = hezo_json_get(was, "proxyd");
		_cleanup_json_ struct hezo_json *o = hezo_json_new_object();
		static const char *const kept[] = {"id",     "project",	    "backend",
						   "egress", "memoryBytes", "memoryCap",
						   "pids",   "pidsCap"};
		static const struct {
			const char *out, *in;
		} rates[] = {
			{"connsAllowedPerSecond", "connsAllowed"},
			{"connsRefusedPerSecond", "connsRefused"},
			{"dnsAllowedPerSecond", "dnsAllowed"},
			{"dnsRefusedPerSecond", "dnsRefused"},
			{"bytesOutPerSecond", "bytesOut"},
			{"bytesInPerSecond", "bytesIn"},
		};

		if (!o)
			return -ENOMEM;
		for (size_t k = 0; r == 0 && k < HEZO_ARRAY_SIZE(kept); k++)
			r = hezo_json_set(o, kept[k], hezo_json_clone(hezo_json_get(b, kept[k])));
		/* cpuMicros per second of wall time, as a share of one CPU. */
		r = r
			    ?: hezo_json_set(o, "cpuPercent",
					     num(per_second(b, was, "cpuMicros", dt) / 1e4));
		r = r
			    ?: hezo_json_set(o, "memoryPercent",
					     num(ratio_percent(b, "memoryBytes", "memoryCap")));
		for (size_t k = 0; r == 0 && k < HEZO_ARRAY_SIZE(rates); k++)
			r = hezo_json_set(o, rates[k].out,
					  num(per_second(px, wpx, rates[k].in, dt)));
		r = r ?: hezo_json_append(arr, TAKE_PTR(o));
	}
	if (r < 0)
		return -ENOMEM;
	*out = TAKE_PTR(doc);
	return 0;
}

static void print_table(const struct hezo_json *s, bool clear)
{
	const struct hezo_json *boxes = hezo_json_get(s, "boxes");
	const struct hezo_json *adm = hezo_json_get(s, "admission");
	int64_t active = 0, waiting = 0, limit = 0;

	if (clear)
		fputs("\033[H\033[2J", stdout);
	printf("%-12s  %-10s %6s %-11s %5s %-9s %-9s %-9s\n", "CONTAINER ID", "PROJECT", "CPU %",
	       "MEM/LIMIT", "MEM %", "PIDS", "CONN ok/no", "DNS ok/no");
	HEZO_JSON_FOREACH (i, boxes) {
		const struct hezo_json *b = boxes->items[i];
		char mu[16], mc[16], mem[40], cpu[16], memp[16], pid[48], c1[16], c2[16], d1[16],
			d2[16], conn[40], dns[40];
		int64_t pu = -1, pc = -1;
		double v;

		shim_human_bytes(mu, sizeof(mu), hezo_json_get(b, "memoryBytes"));
		shim_human_bytes(mc, sizeof(mc), hezo_json_get(b, "memoryCap"));
		snprintf(mem, sizeof(mem), "%s/%s", mu, mc);
		hezo_json_get_double(hezo_json_get(b, "cpuPercent"), &v) == 0
			? snprintf(cpu, sizeof(cpu), "%.1f%%", v)
			: snprintf(cpu, sizeof(cpu), "-");
		hezo_json_get_double(hezo_json_get(b, "memoryPercent"), &v) == 0
			? snprintf(memp, sizeof(memp), "%.0f%%", v)
			: snprintf(memp, sizeof(memp), "-");
		hezo_json_get_int64(hezo_json_get(b, "pids"), &pu);
		hezo_json_get_int64(hezo_json_get(b, "pidsCap"), &pc);
		if (pu < 0)
			snprintf(pid, sizeof(pid), "-");
		else if (pc < 0)
			snprintf(pid, sizeof(pid), "%" PRId64 "/max", pu);
		else
			snprintf(pid, sizeof(pid), "%" PRId64 "/%" PRId64, pu, pc);
#define RATE(buf, key)                                                                             \
	rate(buf, sizeof(buf),                                                                     \
	     hezo_json_get_double(hezo_json_get(b, key), &v) == 0 ? v : (double)NAN)
		RATE(c1, "connsAllowedPerSecond");
		RATE(c2, "connsRefusedPerSecond");
		RATE(d1, "dnsAllowedPerSecond");
		RATE(d2, "dnsRefusedPerSecond");
#undef RATE
		snprintf(conn, sizeof(conn), "%s/%s", c1, c2);
		snprintf(dns, sizeof(dns), "%s/%s", d1, d2);
		printf("%-12.12s  %-10.10s %6s %-11s %5s %-9s %-9s %-9s\n",
		       hezo_json_string(hezo_json_get(b, "id")) ?: "-",
		       hezo_json_string(hezo_json_get(b, "project")) ?: "-", cpu, mem, memp, pid,
		       conn, dns);
	}
	hezo_json_get_int64(hezo_json_get(adm, "active"), &active);
	hezo_json_get_int64(hezo_json_get(adm, "waiting"), &waiting);
	hezo_json_get_int64(hezo_json_get(adm, "limit"), &limit);
	if (limit > 0)
		printf("admission: %" PRId64 " active, %" PRId64 " waiting, limit %" PRId64 "\n",
		       active, waiting, limit);
	else
		printf("admission: %" PRId64 " active, %" PRId64 " waiting, no limit\n", active,
		       waiting);
}

int shim_cmd_stats(struct shim_ctx *ctx, const struct shim_verb *v, struct hezo_error **err)
{
	const char *fmt = shim_args_get(&v->args, "format");
	const char *iv = shim_args_get(&v->args, "interval");
	bool stream = !shim_args_bool(&v->args, "no-stream"), json = false;
	bool clear = stream && isatty(STDOUT_FILENO);
	struct sample prev = {0}, cur = {0};
	double interval = 1.0;
	char *end = NULL;
	int r;

	if (v->id)
		return hezo_error_set(err, EINVAL, "stats: no container ID is taken (got %s)",
				      v->id);
	if (fmt && strcmp(fmt, "json") == 0)
		json = true;
	else if (fmt && strcmp(fmt, "table") != 0)
		return hezo_error_set(err, EINVAL, "stats: --format %s: table or json", fmt);
	if (iv) {
		errno = 0;
		interval = strtod(iv, &end);
		if (errno || end == iv || *end || !(interval >= 0.1 && interval <= 3600))
			return hezo_error_set(err, EINVAL,
					      "stats: --interval %s: seconds from 0.1 to 3600", iv);
	}
	/* A frame goes out in one write, so a terminal never shows half of one. */
	if (!json && setvbuf(stdout, NULL, _IOFBF, 1 << 16) != 0)
		return hezo_error_set(err, ENOMEM, "stats: out of memory");
	r = take(ctx, &prev, err);
	for (; r == 0;) {
		_cleanup_json_ struct hezo_json *s = NULL;
		struct timespec ts = {.tv_sec = (time_t)interval,
				      .tv_nsec =
					      (long)((interval - (double)(time_t)interval) * 1e9)};
		double dt;

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		r = take(ctx, &cur, err);
		if (r < 0)
			break;
		dt = (double)(cur.at.tv_sec - prev.at.tv_sec) +
		     (double)(cur.at.tv_nsec - prev.at.tv_nsec) / 1e9;
		if (sample_json(&prev, &cur, dt, &s) < 0) {
			r = hezo_error_set(err, ENOMEM, "stats: out of memory");
			break;
		}
		if (json)
			r = shim_ps_print_json(s, err);
		else
			print_table(s, clear);
		if (r == 0 && fflush(stdout) != 0)
			r = hezo_error_set(err, EIO, "stats: cannot write to stdout");
		if (!stream)
			break;
		hezo_json_free(prev.doc);
		prev = cur;
		cur = (struct sample){0};
	}
	hezo_json_free(prev.doc);
	hezo_json_free(cur.doc);
	return r;
}
