/* The traffic counters, and the end of a TCP connection: logged and counted in one place for
 * the relay (relay-copy.c) and interception (intercept.c) alike. */
#include <string.h>
#include <time.h>

#include "proxyd.h"

struct pd_stats pd_stats;
struct pd_hist pd_connect_hist, pd_dns_hist;

/* From a loopback round trip (under a millisecond) to the connect and DNS give-up times. */
const uint64_t pd_hist_bounds_us[PD_HIST_BUCKETS] = {
	250,   500,    1000,   2500,   5000,	10000,	 25000,
	50000, 100000, 250000, 500000, 1000000, 2500000, 10000000,
};

void pd_hist_observe(struct pd_hist *h, uint64_t us)
{
	size_t i = 0;

	while (i < PD_HIST_BUCKETS && us > pd_hist_bounds_us[i])
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum_us += us;
}

uint64_t pd_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void pd_tcp_end(struct pd_container *c, const struct pd_tcp *t, uint64_t bytes_out,
		uint64_t bytes_in, bool intercepted, const char *verdict, const char *reason)
{
	struct pd_netlog l = {
		.proto = "tcp",
		.src = &t->src,
		.dst = &t->dst,
		.name = t->name,
		.verdict = verdict,
		.reason = reason,
		.bytes_out = bytes_out,
		.bytes_in = bytes_in,
		.has_bytes = true,
		.duration_ms = pd_now_ms() - t->start_ms,
		.intercepted = intercepted,
		.masks = t->masks,
	};

	pd_netlog_write(c, &l);
	c->st.bytes_out += bytes_out;
	c->st.bytes_in += bytes_in;
	pd_stats.bytes_out += bytes_out;
	pd_stats.bytes_in += bytes_in;
	if (strcmp(verdict, "deny") == 0)
		PD_COUNT(c, conns_refused);
}
