/* The egress table as one nftables batch: built into a caller's buffer (testable without a kernel),
 * then sent with every acknowledgement read. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>

#include "hezo-hook.h"

/* No single message we build comes near this; each is checked against it after building. */
#define MSG_MAX 1024

static void table_freep(struct nftnl_table **t)
{
	if (*t)
		nftnl_table_free(*t);
}
static void chain_freep(struct nftnl_chain **c)
{
	if (*c)
		nftnl_chain_free(*c);
}
static void rule_freep(struct nftnl_rule **r)
{
	if (*r)
		nftnl_rule_free(*r);
}

struct batch {
	char *buf;
	size_t size;
	size_t len;
	uint32_t seq;
	unsigned nacks;
	int error;
};

/* Start a message if MSG_MAX still fits; NULL (and b->error) otherwise. */
static char *batch_room(struct batch *b)
{
	if (b->error)
		return NULL;
	if (b->size - b->len < MSG_MAX) {
		b->error = -ENOSPC;
		return NULL;
	}
	return b->buf + b->len;
}

static void batch_commit(struct batch *b, struct nlmsghdr *nlh)
{
	if (nlh->nlmsg_len > MSG_MAX) {
		b->error = -EOVERFLOW;
		return;
	}
	b->len += NLMSG_ALIGN(nlh->nlmsg_len);
}

static void batch_delim(struct batch *b, bool begin)
{
	char *p = batch_room(b);
	struct nlmsghdr *nlh;

	if (!p)
		return;
	nlh = begin ? nftnl_batch_begin(p, b->seq) : nftnl_batch_end(p, b->seq);
	batch_commit(b, nlh);
}

static struct nlmsghdr *batch_hdr(struct batch *b, uint16_t type, uint16_t flags)
{
	char *p = batch_room(b);

	if (!p)
		return NULL;
	b->nacks++;
	return nftnl_nlmsg_build_hdr(p, type, NFPROTO_INET, flags | NLM_F_ACK, b->seq + b->nacks);
}

static void batch_table(struct batch *b, uint16_t type, uint16_t flags)
{
	_cleanup_(table_freep) struct nftnl_table *t = nftnl_table_alloc();
	struct nlmsghdr *nlh;

	if (!t) {
		b->error = b->error ?: -ENOMEM;
		return;
	}
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
	if (nftnl_table_set_str(t, NFTNL_TABLE_NAME, HEZO_HOOK_TABLE) < 0) {
		b->error = b->error ?: -ENOMEM;
		return;
	}
	nlh = batch_hdr(b, type, flags);
	if (!nlh)
		return;
	nftnl_table_nlmsg_build_payload(nlh, t);
	batch_commit(b, nlh);
}

static void batch_chain(struct batch *b, const char *name, const char *type, int prio,
			uint32_t policy)
{
	_cleanup_(chain_freep) struct nftnl_chain *c = nftnl_chain_alloc();
	struct nlmsghdr *nlh;

	if (!c || nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, HEZO_HOOK_TABLE) < 0 ||
	    nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name) < 0 ||
	    nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, type) < 0) {
		b->error = b->error ?: -ENOMEM;
		return;
	}
	nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, NFPROTO_INET);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, NF_INET_LOCAL_OUT);
	nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, prio);
	nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, policy);
	nlh = batch_hdr(b, NFT_MSG_NEWCHAIN, NLM_F_CREATE);
	if (!nlh)
		return;
	nftnl_chain_nlmsg_build_payload(nlh, c);
	batch_commit(b, nlh);
}

/* ---- expressions: each helper appends to r and returns false on allocation failure ---- */

static bool add_expr(struct nftnl_rule *r, struct nftnl_expr *e)
{
	if (!e)
		return false;
	nftnl_rule_add_expr(r, e);
	return true;
}

static bool e_meta(struct nftnl_rule *r, uint32_t key)
{
	struct nftnl_expr *e = nftnl_expr_alloc("meta");

	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, NFT_REG_1);
	return add_expr(r, e);
}

static bool e_payload(struct nftnl_rule *r, uint32_t base, uint32_t offset, uint32_t len)
{
	struct nftnl_expr *e = nftnl_expr_alloc("payload");

	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
	return add_expr(r, e);
}

static bool e_cmp(struct nftnl_rule *r, uint32_t op, const void *data, uint32_t len)
{
	struct nftnl_expr *e = nftnl_expr_alloc("cmp");

	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
	nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
	return add_expr(r, e);
}

static bool e_cmp_u8(struct nftnl_rule *r, uint32_t op, uint8_t v)
{
	return e_cmp(r, op, &v, sizeof(v));
}

static bool e_l4proto(struct nftnl_rule *r, uint8_t proto)
{
	return e_meta(r, NFT_META_L4PROTO) && e_cmp_u8(r, NFT_CMP_EQ, proto);
}

static bool e_dport(struct nftnl_rule *r, uint16_t port)
{
	uint16_t be = htons(port);

	return e_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2) &&
	       e_cmp(r, NFT_CMP_EQ, &be, sizeof(be));
}

static bool e_oifname_lo(struct nftnl_rule *r)
{
	char name[IFNAMSIZ] = "lo";

	return e_meta(r, NFT_META_OIFNAME) && e_cmp(r, NFT_CMP_EQ, name, sizeof(name));
}

static bool e_verdict(struct nftnl_rule *r, int verdict)
{
	struct nftnl_expr *e = nftnl_expr_alloc("immediate");

	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)verdict);
	return add_expr(r, e);
}

static bool e_redirect(struct nftnl_rule *r, uint16_t port)
{
	struct nftnl_expr *imm = nftnl_expr_alloc("immediate");
	struct nftnl_expr *redir;
	uint16_t be = htons(port);

	if (!imm)
		return false;
	nftnl_expr_set_u32(imm, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
	nftnl_expr_set(imm, NFTNL_EXPR_IMM_DATA, &be, sizeof(be));
	nftnl_rule_add_expr(r, imm);
	redir = nftnl_expr_alloc("redir");
	if (!redir)
		return false;
	nftnl_expr_set_u32(redir, NFTNL_EXPR_REDIR_REG_PROTO_MIN, NFT_REG_1);
	return add_expr(r, redir);
}

/* reg1 &= mask (4 bytes): the bitwise step before comparing a masked value. */
static bool e_mask32(struct nftnl_rule *r, uint32_t mask)
{
	struct nftnl_expr *bw = nftnl_expr_alloc("bitwise");
	uint32_t zero = 0;

	if (!bw)
		return false;
	nftnl_expr_set_u32(bw, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
	nftnl_expr_set_u32(bw, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
	nftnl_expr_set_u32(bw, NFTNL_EXPR_BITWISE_LEN, sizeof(uint32_t));
	nftnl_expr_set(bw, NFTNL_EXPR_BITWISE_MASK, &mask, sizeof(mask));
	nftnl_expr_set(bw, NFTNL_EXPR_BITWISE_XOR, &zero, sizeof(zero));
	nftnl_rule_add_expr(r, bw);
	return true;
}

static bool e_ct_established(struct nftnl_rule *r)
{
	struct nftnl_expr *ct = nftnl_expr_alloc("ct");
	uint32_t mask = NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED);
	uint32_t zero = 0;

	if (!ct)
		return false;
	nftnl_expr_set_u32(ct, NFTNL_EXPR_CT_KEY, NFT_CT_STATE);
	nftnl_expr_set_u32(ct, NFTNL_EXPR_CT_DREG, NFT_REG_1);
	nftnl_rule_add_expr(r, ct);
	if (!e_mask32(r, mask))
		return false;
	return e_cmp(r, NFT_CMP_NEQ, &zero, sizeof(zero));
}

static bool e_reject(struct nftnl_rule *r, uint32_t type, uint8_t code)
{
	struct nftnl_expr *e = nftnl_expr_alloc("reject");

	if (!e)
		return false;
	nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, type);
	nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE, code);
	return add_expr(r, e);
}

/*
 * IPv6 neighbour discovery (solicitation 135, advertisement 136), which replies to published ports
 * need on an IPv6 link. Hop limit 255 is what RFC 4861 demands, so it never leaves the link.
 */
static bool e_ipv6_nd(struct nftnl_rule *r)
{
	uint8_t nfproto = NFPROTO_IPV6;

	return e_meta(r, NFT_META_NFPROTO) && e_cmp_u8(r, NFT_CMP_EQ, nfproto) &&
	       e_l4proto(r, IPPROTO_ICMPV6) && e_payload(r, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1) &&
	       e_cmp_u8(r, NFT_CMP_GTE, 135) && e_cmp_u8(r, NFT_CMP_LTE, 136) &&
	       e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, 7, 1) && e_cmp_u8(r, NFT_CMP_EQ, 255);
}

/*
 * Destination in 127.0.0.0/8 or ::1. The filter chain needs this besides oifname "lo": a redirect
 * reroutes the packet to lo, but the output hooks keep reporting the device chosen before it.
 */
static bool e_daddr_loopback(struct nftnl_rule *r, bool v6)
{
	static const uint8_t lo6[16] = {[15] = 1};
	uint32_t mask = htonl(0xff000000), net = htonl(0x7f000000);
	uint8_t nfproto = v6 ? NFPROTO_IPV6 : NFPROTO_IPV4;

	if (!e_meta(r, NFT_META_NFPROTO) || !e_cmp_u8(r, NFT_CMP_EQ, nfproto))
		return false;
	if (v6)
		return e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, 24, 16) &&
		       e_cmp(r, NFT_CMP_EQ, lo6, sizeof(lo6));
	if (!e_payload(r, NFT_PAYLOAD_NETWORK_HEADER, 16, 4))
		return false;
	if (!e_mask32(r, mask))
		return false;
	return e_cmp(r, NFT_CMP_EQ, &net, sizeof(net));
}

enum rule_kind {
	R_DNS_UDP_REDIRECT,
	R_DNS_TCP_REDIRECT,
	R_LO_RETURN,
	R_TCP_REDIRECT,
	R_LO_ACCEPT,
	R_LOOP4_ACCEPT,
	R_LOOP6_ACCEPT,
	R_ESTABLISHED_ACCEPT,
	R_ND_ACCEPT,
	R_UDP_REJECT,
	R_TCP_RESET,
};

static bool rule_exprs(struct nftnl_rule *r, enum rule_kind kind,
		       const struct hezo_hook_nft_params *p)
{
	switch (kind) {
	case R_DNS_UDP_REDIRECT:
		return e_l4proto(r, IPPROTO_UDP) && e_dport(r, 53) && e_redirect(r, p->dns_port);
	case R_DNS_TCP_REDIRECT:
		return e_l4proto(r, IPPROTO_TCP) && e_dport(r, 53) && e_redirect(r, p->dns_port);
	case R_LO_RETURN:
		return e_oifname_lo(r) && e_verdict(r, NFT_RETURN);
	case R_TCP_REDIRECT:
		return e_l4proto(r, IPPROTO_TCP) && e_redirect(r, p->tcp_port);
	case R_LO_ACCEPT:
		return e_oifname_lo(r) && e_verdict(r, NF_ACCEPT);
	case R_LOOP4_ACCEPT:
		return e_daddr_loopback(r, false) && e_verdict(r, NF_ACCEPT);
	case R_LOOP6_ACCEPT:
		return e_daddr_loopback(r, true) && e_verdict(r, NF_ACCEPT);
	case R_ESTABLISHED_ACCEPT:
		return e_ct_established(r) && e_verdict(r, NF_ACCEPT);
	case R_ND_ACCEPT:
		return e_ipv6_nd(r) && e_verdict(r, NF_ACCEPT);
	case R_UDP_REJECT:
		return e_l4proto(r, IPPROTO_UDP) &&
		       e_reject(r, NFT_REJECT_ICMPX_UNREACH, NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
	case R_TCP_RESET:
		return e_l4proto(r, IPPROTO_TCP) && e_reject(r, NFT_REJECT_TCP_RST, 0);
	}
	return false;
}

static void batch_rule(struct batch *b, const char *chain, enum rule_kind kind,
		       const struct hezo_hook_nft_params *p)
{
	_cleanup_(rule_freep) struct nftnl_rule *r = nftnl_rule_alloc();
	struct nlmsghdr *nlh;

	if (!r || nftnl_rule_set_str(r, NFTNL_RULE_TABLE, HEZO_HOOK_TABLE) < 0 ||
	    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain) < 0 || !rule_exprs(r, kind, p)) {
		b->error = b->error ?: -ENOMEM;
		return;
	}
	nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);
	nlh = batch_hdr(b, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND);
	if (!nlh)
		return;
	nftnl_rule_nlmsg_build_payload(nlh, r);
	batch_commit(b, nlh);
}

static ssize_t batch_finish(struct batch *b, unsigned *nacks)
{
	batch_delim(b, false);
	if (b->error)
		return b->error;
	*nacks = b->nacks;
	return (ssize_t)b->len;
}

ssize_t hezo_hook_nft_build_wire(void *buf, size_t size, uint32_t seq,
				 const struct hezo_hook_nft_params *p, unsigned *nacks)
{
	static const enum rule_kind nat_rules[] = {
		R_DNS_UDP_REDIRECT,
		R_DNS_TCP_REDIRECT,
		R_LO_RETURN,
		R_TCP_REDIRECT,
	};
	static const enum rule_kind out_rules[] = {
		R_LO_ACCEPT, R_LOOP4_ACCEPT, R_LOOP6_ACCEPT, R_ESTABLISHED_ACCEPT,
		R_ND_ACCEPT, R_UDP_REJECT,   R_TCP_RESET,
	};
	struct batch b = {.buf = buf, .size = size, .seq = seq};

	if (p->mode != HEZO_HOOK_MODE_DENY && p->mode != HEZO_HOOK_MODE_PROXY)
		return -EINVAL;
	if (p->mode == HEZO_HOOK_MODE_PROXY && (p->tcp_port == 0 || p->dns_port == 0))
		return -EINVAL;

	batch_delim(&b, true);
	/* Create-if-missing, delete, create: a table left from an earlier run is replaced in the
	 * same transaction, and no moment exists without one. */
	batch_table(&b, NFT_MSG_NEWTABLE, NLM_F_CREATE);
	batch_table(&b, NFT_MSG_DELTABLE, 0);
	batch_table(&b, NFT_MSG_NEWTABLE, NLM_F_CREATE | NLM_F_EXCL);
	if (p->mode == HEZO_HOOK_MODE_PROXY)
		batch_chain(&b, HEZO_HOOK_CHAIN_NAT, "nat", HEZO_HOOK_PRIO_NAT, NF_ACCEPT);
	batch_chain(&b, HEZO_HOOK_CHAIN_OUT, "filter", HEZO_HOOK_PRIO_FILTER, NF_DROP);
	if (p->mode == HEZO_HOOK_MODE_PROXY)
		for (size_t i = 0; i < HEZO_ARRAY_SIZE(nat_rules); i++)
			batch_rule(&b, HEZO_HOOK_CHAIN_NAT, nat_rules[i], p);
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(out_rules); i++)
		batch_rule(&b, HEZO_HOOK_CHAIN_OUT, out_rules[i], p);
	return batch_finish(&b, nacks);
}

ssize_t hezo_hook_nft_build_delete(void *buf, size_t size, uint32_t seq, unsigned *nacks)
{
	struct batch b = {.buf = buf, .size = size, .seq = seq};

	batch_delim(&b, true);
	batch_table(&b, NFT_MSG_DELTABLE, 0);
	return batch_finish(&b, nacks);
}

static void mnl_closep(struct mnl_socket **nl)
{
	if (*nl)
		mnl_socket_close(*nl);
}

int hezo_hook_nft_send(const void *buf, size_t len, uint32_t seq, unsigned nacks, bool enoent_ok,
		       struct hezo_error **err)
{
	_cleanup_(mnl_closep) struct mnl_socket *nl = NULL;
	struct timeval tv = {.tv_sec = 5};
	/* The kernel has queued every acknowledgement by the time the send returns; one
	 * recvmmsg() takes them all instead of a recvmsg() each, and syscalls are what a wire
	 * costs once the batch is in. A slot holds an error ack even with the refused message
	 * echoed whole (NETLINK_CAP_ACK not granted). */
	enum { ACK_SLOTS = 32, ACK_SIZE = MSG_MAX + 1024 };
	static char rbufs[ACK_SLOTS][ACK_SIZE];
	struct mmsghdr msgs[ACK_SLOTS];
	struct iovec iov[ACK_SLOTS];
	unsigned seen = 0, failed_seq = 0;
	int first_error = 0, one = 1;
	uint32_t portid;

	nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
	if (!nl)
		return hezo_error_set_errno(err, errno, "nftables: netlink socket");
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0)
		return hezo_error_set_errno(err, errno, "nftables: netlink bind");
	if (setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return hezo_error_set_errno(err, errno, "nftables: SO_RCVTIMEO");
	/* Error acks then carry only the header of the refused message. */
	(void)setsockopt(mnl_socket_get_fd(nl), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	portid = mnl_socket_get_portid(nl);

	if (mnl_socket_sendto(nl, buf, len) < 0)
		return hezo_error_set_errno(err, errno, "nftables: sending the batch");

	/* The kernel answers each NLM_F_ACK message once, whether the batch committed or was
	 * aborted, so the count is known; a short answer shows up as the receive timeout. */
	while (seen < nacks) {
		int got;

		for (unsigned i = 0; i < ACK_SLOTS; i++) {
			iov[i] = (struct iovec){.iov_base = rbufs[i], .iov_len = ACK_SIZE};
			msgs[i] =
				(struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
		}
		got = recvmmsg(mnl_socket_get_fd(nl), msgs, ACK_SLOTS, MSG_WAITFORONE, NULL);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return hezo_error_set(err, ETIMEDOUT,
						      "nftables: %u of %u acknowledgements came",
						      seen, nacks);
			return hezo_error_set_errno(err, errno,
						    "nftables: reading acknowledgements");
		}
		for (int m = 0; m < got; m++) {
			const struct nlmsghdr *nlh = (const struct nlmsghdr *)rbufs[m];
			int left = (int)msgs[m].msg_len;

			if (msgs[m].msg_hdr.msg_flags & MSG_TRUNC)
				return hezo_error_set(err, EPROTO,
						      "nftables: acknowledgement too long");
			for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
				const struct nlmsgerr *e;

				if (nlh->nlmsg_pid != portid || nlh->nlmsg_seq < seq ||
				    nlh->nlmsg_seq > seq + nacks || nlh->nlmsg_type != NLMSG_ERROR)
					continue;
				if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*e)))
					return hezo_error_set(err, EPROTO,
							      "nftables: short acknowledgement");
				e = mnl_nlmsg_get_payload(nlh);
				/* An answer to the batch header means the kernel refused the batch
				 * as a whole (out of memory, bad subsystem) and nothing else will
				 * come. */
				if (nlh->nlmsg_seq == seq) {
					if (e->error == 0)
						continue;
					return hezo_error_set_errno(err, -e->error,
								    "nftables: batch refused");
				}
				seen++;
				if (e->error == 0 || (enoent_ok && e->error == -ENOENT))
					continue;
				if (!first_error) {
					first_error = -e->error;
					failed_seq = nlh->nlmsg_seq - seq;
				}
			}
		}
	}
	if (first_error)
		return hezo_error_set_errno(
			err, first_error, "nftables: message %u of the batch refused", failed_seq);
	return 0;
}
