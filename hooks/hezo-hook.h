/* hezo-hook internals: state and argument parsing, the nftables batch, the proxyd client. Pure
 * functions sit next to the ones that touch the kernel so the unit tests can reach them. */
#ifndef HEZO_HOOK_H
#define HEZO_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hezo-error.h"
#include "hezo-json.h"

/* The kernel's PID_MAX_LIMIT: no pid is ever larger. */
#define HEZO_HOOK_PID_MAX 4194304

/* Longest state document or proxyd reply we read. */
#define HEZO_HOOK_STATE_MAX (1024 * 1024)

#define HEZO_HOOK_TABLE	    "hezo"
#define HEZO_HOOK_CHAIN_NAT "output_nat"
#define HEZO_HOOK_CHAIN_OUT "output"
/* Before the dstnat priority (-100) so our redirect wins over a NAT chain the engine put there
 * (Docker's embedded DNS rules): the first NAT binding made for a connection sticks. */
#define HEZO_HOOK_PRIO_NAT    (-110)
#define HEZO_HOOK_PRIO_FILTER 0

#define HEZO_HOOK_TCP_PORT 15001
#define HEZO_HOOK_DNS_PORT 15053

/* The OCI state document a hook reads on stdin. Strings point into nothing: they are owned. */
struct hezo_hook_state {
	char *id;
	char *status; /* NULL when absent */
	char *bundle; /* NULL when absent */
	int pid;      /* 0 when absent and not required */
};

void hezo_hook_state_clear(struct hezo_hook_state *st);

/*
 * Parse the state JSON in buf[0..len). With need_pid, pid must be present and a live-looking
 * process id (1..HEZO_HOOK_PID_MAX); without it, an absent or zero pid is accepted but a malformed
 * one is still refused.
 */
int hezo_hook_parse_state(const char *buf, size_t len, bool need_pid, struct hezo_hook_state *out,
			  struct hezo_error **err);

/* A container id by the one rule (base/hezo-id.h). */
bool hezo_hook_id_valid(const char *id);

enum hezo_hook_mode {
	HEZO_HOOK_MODE_OFF,
	HEZO_HOOK_MODE_DENY,
	HEZO_HOOK_MODE_PROXY,
};

struct hezo_hook_egress {
	enum hezo_hook_mode mode;
	struct hezo_json *json; /* the whole section, handed to proxyd as it came */
	const char *project;	/* inside json; NULL when absent or null */
};

void hezo_hook_egress_clear(struct hezo_hook_egress *eg);

/* Parse and check the --egress argument (the shim's compact JSON of the effective section). */
int hezo_hook_parse_egress(const char *arg, struct hezo_hook_egress *out, struct hezo_error **err);

/* ---- nftables ---- */

/* Room for the largest batch we build, with margin. */
#define HEZO_HOOK_NFT_BUF 16384

struct hezo_hook_nft_params {
	enum hezo_hook_mode mode; /* DENY or PROXY */
	uint16_t tcp_port;	  /* PROXY only */
	uint16_t dns_port;	  /* PROXY only */
};

/*
 * Write the batch that (re)creates table inet hezo into buf: batch begin, table, delete table,
 * table (so a leftover table is replaced atomically), chains, rules, batch end. Every message but
 * the batch delimiters carries NLM_F_ACK and sequence seq+1, seq+2, ...; *nacks receives how many.
 * Returns the batch length or -ENOSPC / -EINVAL. Touches nothing but buf.
 */
ssize_t hezo_hook_nft_build_wire(void *buf, size_t size, uint32_t seq,
				 const struct hezo_hook_nft_params *p, unsigned *nacks);

/* Same for a batch that deletes table inet hezo. */
ssize_t hezo_hook_nft_build_delete(void *buf, size_t size, uint32_t seq, unsigned *nacks);

/*
 * Send a batch on a fresh NETLINK_NETFILTER socket in the current network namespace and read
 * every acknowledgement (timeout 5 s). The first error is returned with a message naming the
 * message that failed. With enoent_ok, -ENOENT acks count as success (deleting a missing table).
 */
int hezo_hook_nft_send(const void *buf, size_t len, uint32_t seq, unsigned nacks, bool enoent_ok,
		       struct hezo_error **err);

/* ---- network namespace ---- */

/* Open /proc/PID/ns/net; refuse the namespace this process is in (a host-network container). */
int hezo_hook_netns_open_pid(int pid, int *out, struct hezo_error **err);
/* Open a namespace path from config.json, same refusal. */
int hezo_hook_netns_open_path(const char *path, int *out, struct hezo_error **err);
/*
 * Serialise wiring and unwiring of one namespace (containers that share it, a pod's): an exclusive
 * flock on a fresh open of nsfd, held until *out is closed (or the process dies).
 */
int hezo_hook_netns_lock(int nsfd, int *out, struct hezo_error **err);
/* setns() into it and bring lo up (one raw rtnetlink request). */
int hezo_hook_netns_enter(int nsfd, struct hezo_error **err);
int hezo_hook_link_lo_up(struct hezo_error **err);

/* ---- proxyd control protocol ---- */

struct hezo_hook_reply {
	bool ok;
	int tcp_port; /* 0 when absent */
	int dns_port;
	char *error; /* ok == false: proxyd's reason, control characters replaced */
};

void hezo_hook_reply_clear(struct hezo_hook_reply *r);

/* Parse a reply datagram. A reply that is not an object with a boolean "ok" is an error. */
int hezo_hook_parse_reply(const char *buf, size_t len, struct hezo_hook_reply *out,
			  struct hezo_error **err);

/* Build {"op":"register","id":..,"project":..,"egress":{..},"cgroup":N} (malloc'd,
 * NUL-terminated); cgroup 0 (unknown) is left out. */
int hezo_hook_build_register(const char *id, const struct hezo_hook_egress *eg, uint64_t cgroup,
			     char **out, size_t *outlen, struct hezo_error **err);

int hezo_hook_build_deregister(const char *id, char **out, size_t *outlen, struct hezo_error **err);

/* Connect to the control socket (SOCK_SEQPACKET). -ENOENT / -ECONNREFUSED when nobody listens. */
int hezo_hook_control_connect(const char *path, int *out, struct hezo_error **err);

/* Send one request (with fd_to_pass in SCM_RIGHTS when >= 0) and read one reply, timeout_ms. */
int hezo_hook_control_call(int fd, const char *req, size_t reqlen, int fd_to_pass, int timeout_ms,
			   struct hezo_hook_reply *reply, struct hezo_error **err);

#endif
