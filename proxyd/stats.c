/* The traffic counters, and the end of a TCP connection: logged and counted in one place for
 * the relay (relay-copy.c) and interception (intercept.c) alike. */
#include <string.h>

#include "proxyd.h"

struct pd_stats pd_stats;

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
