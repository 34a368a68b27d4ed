/* Unit tests for hezo-hook: state and --egress parsing, the nftables batch (parsed back with
 * libnftnl), proxyd replies and the control call over a real socketpair. No root needed. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/rule.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

#include "hezo-cgroup.h"
#include "hezo-hook.h"
#include "hezo-id.h"

/* ---- state ---- */

static int parse_state(const char *s, bool need_pid, struct hezo_hook_state *st, char **msg)
{
	struct hezo_error *err = NULL;
	int r = hezo_hook_parse_state(s, strlen(s), need_pid, st, &err);

	if (msg)
		*msg = err ? strdup(err->msg) : NULL;
	if (r < 0)
		assert_non_null(err);
	else
		assert_null(err);
	hezo_error_free(err);
	return r;
}

static void test_state_valid(void **unused)
{
	struct hezo_hook_state st;

	assert_int_equal(parse_state("{\"ociVersion\":\"1.0.2\",\"id\":\"abc_1.2-x+y\","
				     "\"status\":\"created\",\"pid\":4242,\"bundle\":\"/run/b\","
				     "\"annotations\":{\"a\":\"b\"}}",
				     true, &st, NULL),
			 0);
	assert_string_equal(st.id, "abc_1.2-x+y");
	assert_string_equal(st.status, "created");
	assert_string_equal(st.bundle, "/run/b");
	assert_int_equal(st.pid, 4242);
	hezo_hook_state_clear(&st);
	assert_null(st.id);

	/* Limits of the pid range are accepted. */
	assert_int_equal(parse_state("{\"id\":\"a\",\"pid\":4194304}", true, &st, NULL), 0);
	assert_int_equal(st.pid, 4194304);
	assert_null(st.bundle);
	hezo_hook_state_clear(&st);
}

static void test_state_pid_optional_for_unwire(void **unused)
{
	struct hezo_hook_state st;

	assert_int_equal(parse_state("{\"id\":\"a\",\"status\":\"stopped\"}", false, &st, NULL), 0);
	assert_int_equal(st.pid, 0);
	hezo_hook_state_clear(&st);
	assert_int_equal(parse_state("{\"id\":\"a\",\"pid\":0}", false, &st, NULL), 0);
	hezo_hook_state_clear(&st);
	/* What runsc 2022-12 sends at poststop, measured. */
	assert_int_equal(parse_state("{\"ociVersion\":\"1.0.2-dev\",\"id\":\"hkr1\",\"status\":"
				     "\"stopped\",\"pid\":-1,\"bundle\":\"/tmp/hkb\"}",
				     false, &st, NULL),
			 0);
	assert_int_equal(st.pid, 0);
	hezo_hook_state_clear(&st);
	/* Malformed is malformed whether it is needed or not. */
	assert_int_equal(parse_state("{\"id\":\"a\",\"pid\":-3}", false, &st, NULL), -EINVAL);
	assert_int_equal(parse_state("{\"id\":\"a\",\"pid\":\"7\"}", false, &st, NULL), -EINVAL);
}

static void test_state_hostile(void **unused)
{
	static const char *const bad[] = {
		"",
		"   ",
		"{",
		"[]",
		"\"id\"",
		"null",
		"{\"pid\":5}",
		"{\"id\":5,\"pid\":5}",
		"{\"id\":\"\",\"pid\":5}",
		"{\"id\":\"..\",\"pid\":5}",
		"{\"id\":\"a/b\",\"pid\":5}",
		"{\"id\":\"a b\",\"pid\":5}",
		"{\"id\":\"a\"}",
		"{\"id\":\"a\",\"pid\":null}",
		"{\"id\":\"a\",\"pid\":0}",
		"{\"id\":\"a\",\"pid\":-1}",
		"{\"id\":\"a\",\"pid\":4194305}",
		"{\"id\":\"a\",\"pid\":2147483648}",
		"{\"id\":\"a\",\"pid\":99999999999999999999999}",
		"{\"id\":\"a\",\"pid\":\"123\"}",
		"{\"id\":\"a\",\"pid\":12.0}",
		"{\"id\":\"a\",\"pid\":1e3}",
		"{\"id\":\"a\",\"pid\":true}",
		"{\"id\":\"a\",\"pid\":[1]}",
		"{\"id\":\"a\",\"pid\":5,\"bundle\":\"relative/path\"}",
		"{\"id\":\"a\",\"pid\":5,\"bundle\":7}",
		"{\"id\":\"a\",\"pid\":5,\"status\":{}}",
		"{\"id\":\"a\",\"pid\":5}garbage",
	};
	struct hezo_hook_state st;

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(bad); i++) {
		char *msg = NULL;
		int r = parse_state(bad[i], true, &st, &msg);

		if (r != -EINVAL && r >= 0)
			fail_msg("accepted hostile state: %s", bad[i]);
		assert_true(r < 0);
		assert_non_null(msg);
		assert_non_null(strstr(msg, "state"));
		assert_null(st.id);
		free(msg);
	}
}

static void test_state_error_names_field(void **unused)
{
	struct hezo_hook_state st;
	char *msg = NULL;

	parse_state("{\"id\":\"a\",\"pid\":-1}", true, &st, &msg);
	assert_non_null(strstr(msg, "pid"));
	free(msg);
	parse_state("{\"pid\":1}", true, &st, &msg);
	assert_non_null(strstr(msg, "id"));
	free(msg);
}

static void test_id_valid(void **unused)
{
	char long_id[1026];
	char state[1200];
	struct hezo_hook_state st;
	_cleanup_error_ struct hezo_error *err = NULL;

	assert_true(hezo_hook_id_valid("0123456789abcdef"));
	assert_true(hezo_hook_id_valid("a.b"));
	assert_false(hezo_hook_id_valid("."));
	assert_false(hezo_hook_id_valid(""));
	assert_false(hezo_hook_id_valid("a\nb"));
	assert_false(hezo_hook_id_valid("ä"));
	/* the shared rule's edges (base/hezo-id.h): what the shim and proxyd take, no more */
	assert_false(hezo_hook_id_valid(".hidden"));
	assert_false(hezo_hook_id_valid("-flag"));
	assert_true(hezo_hook_id_valid("a-"));
	memset(long_id, 'a', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = 0;
	assert_false(hezo_hook_id_valid(long_id));
	long_id[1024] = 0;
	assert_false(hezo_hook_id_valid(long_id)); /* runc's 1024 no longer: proxyd refused it */
	long_id[HEZO_ID_MAX + 1] = 0;
	assert_false(hezo_hook_id_valid(long_id));
	long_id[HEZO_ID_MAX] = 0;
	assert_true(hezo_hook_id_valid(long_id));
	/* and through the state document the hook reads */
	snprintf(state, sizeof(state), "{\"id\":\"%s\",\"pid\":1}", long_id);
	assert_int_equal(hezo_hook_parse_state(state, strlen(state), true, &st, &err), 0);
	hezo_hook_state_clear(&st);
	long_id[HEZO_ID_MAX] = 'a';
	snprintf(state, sizeof(state), "{\"id\":\"%s\",\"pid\":1}", long_id);
	assert_int_equal(hezo_hook_parse_state(state, strlen(state), true, &st, &err), -EINVAL);
	assert_non_null(strstr(err->msg, "1-128 characters"));
}

/* ---- --egress ---- */

static int parse_egress(const char *s, struct hezo_hook_egress *eg)
{
	struct hezo_error *err = NULL;
	int r = hezo_hook_parse_egress(s, eg, &err);

	if (r < 0) {
		assert_non_null(err);
		assert_non_null(strstr(err->msg, "--egress"));
	}
	hezo_error_free(err);
	return r;
}

static void test_egress_valid(void **unused)
{
	struct hezo_hook_egress eg;

	assert_int_equal(parse_egress("{\"mode\":\"proxy\",\"allow\":[\"allowed.test\","
				      "\"*.x.test:8443\",\"10.0.0.0/8:22\"],\"resolvers\":"
				      "[\"127.0.0.1:5353\"],\"allowRanges\":[],\"project\":\"p1\"}",
				      &eg),
			 0);
	assert_int_equal(eg.mode, HEZO_HOOK_MODE_PROXY);
	assert_string_equal(eg.project, "p1");
	assert_non_null(eg.json);
	assert_int_equal(hezo_json_get(eg.json, "allow")->len, 3);
	hezo_hook_egress_clear(&eg);

	assert_int_equal(parse_egress("{\"mode\":\"deny\"}", &eg), 0);
	assert_int_equal(eg.mode, HEZO_HOOK_MODE_DENY);
	assert_null(eg.project);
	hezo_hook_egress_clear(&eg);

	assert_int_equal(parse_egress("{\"mode\":\"off\",\"project\":null}", &eg), 0);
	assert_int_equal(eg.mode, HEZO_HOOK_MODE_OFF);
	hezo_hook_egress_clear(&eg);
}

static void test_egress_hostile(void **unused)
{
	static const char *const bad[] = {
		"",
		"proxy",
		"{\"mode\":\"proxy\"",
		"[\"proxy\"]",
		"{}",
		"{\"mode\":null}",
		"{\"mode\":1}",
		"{\"mode\":\"PROXY\"}",
		"{\"mode\":\"allow-all\"}",
		"{\"mode\":\"proxy\",\"allow\":\"allowed.test\"}",
		"{\"mode\":\"proxy\",\"allow\":[1]}",
		"{\"mode\":\"proxy\",\"allow\":[\"\"]}",
		"{\"mode\":\"proxy\",\"resolvers\":{}}",
		"{\"mode\":\"proxy\",\"allowRanges\":[null]}",
		"{\"mode\":\"proxy\",\"project\":\"\"}",
		"{\"mode\":\"proxy\",\"project\":3}",
		/* entries proxyd would refuse: the shared grammar refuses them here first */
		"{\"mode\":\"proxy\",\"allow\":[\"*.com\"]}",
		"{\"mode\":\"proxy\",\"allow\":[\"300.1.1.1\"]}",
		"{\"mode\":\"proxy\",\"allow\":[\"a.test:0\"]}",
		"{\"mode\":\"deny\",\"resolvers\":[\"dns.google\"]}",
		"{\"mode\":\"proxy\",\"allowRanges\":[\"10.0.0.0\"]}",
		"{\"mode\":\"proxy\",\"surprise\":[]}",
	};
	struct hezo_hook_egress eg;

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(bad); i++) {
		if (parse_egress(bad[i], &eg) >= 0)
			fail_msg("accepted hostile --egress: %s", bad[i]);
		assert_null(eg.json);
	}
}

/* ---- nftables batch ---- */

#define NFT_TYPE(m) ((NFNL_SUBSYS_NFTABLES << 8) | (m))

struct parsed_batch {
	unsigned count;
	uint16_t types[64];
	uint16_t flags[64];
	uint32_t seqs[64];
	const struct nlmsghdr *msgs[64];
};

static void walk_batch(const void *buf, ssize_t len, struct parsed_batch *pb)
{
	const struct nlmsghdr *nlh = buf;
	int left = (int)len;

	memset(pb, 0, sizeof(*pb));
	for (; mnl_nlmsg_ok(nlh, left); nlh = mnl_nlmsg_next(nlh, &left)) {
		assert_true(pb->count < 64);
		pb->types[pb->count] = nlh->nlmsg_type;
		pb->flags[pb->count] = nlh->nlmsg_flags;
		pb->seqs[pb->count] = nlh->nlmsg_seq;
		pb->msgs[pb->count] = nlh;
		pb->count++;
	}
	assert_int_equal(left, 0); /* the whole buffer is messages, nothing trailing */
}

static void rule_text(const struct nlmsghdr *nlh, char *out, size_t size)
{
	struct nftnl_rule *r = nftnl_rule_alloc();

	assert_non_null(r);
	assert_int_equal(nftnl_rule_nlmsg_parse(nlh, r), 0);
	assert_string_equal(nftnl_rule_get_str(r, NFTNL_RULE_TABLE), HEZO_HOOK_TABLE);
	assert_int_equal(nftnl_rule_get_u32(r, NFTNL_RULE_FAMILY), NFPROTO_INET);
	nftnl_rule_snprintf(out, size, r, NFTNL_OUTPUT_DEFAULT, 0);
	nftnl_rule_free(r);
	/* One line: libnftnl puts each expression on its own indented line. */
	size_t w = 0;
	bool space = false;
	for (size_t i = 0; out[i]; i++) {
		if (out[i] == ' ' || out[i] == '\n' || out[i] == '\t') {
			space = w > 0;
			continue;
		}
		if (space)
			out[w++] = ' ';
		space = false;
		out[w++] = out[i];
	}
	out[w] = 0;
}

static void check_chain(const struct nlmsghdr *nlh, const char *name, const char *type, int prio,
			uint32_t policy)
{
	struct nftnl_chain *c = nftnl_chain_alloc();

	assert_non_null(c);
	assert_int_equal(nftnl_chain_nlmsg_parse(nlh, c), 0);
	assert_string_equal(nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE), HEZO_HOOK_TABLE);
	assert_string_equal(nftnl_chain_get_str(c, NFTNL_CHAIN_NAME), name);
	assert_string_equal(nftnl_chain_get_str(c, NFTNL_CHAIN_TYPE), type);
	assert_int_equal(nftnl_chain_get_u32(c, NFTNL_CHAIN_HOOKNUM), NF_INET_LOCAL_OUT);
	assert_int_equal(nftnl_chain_get_s32(c, NFTNL_CHAIN_PRIO), prio);
	assert_int_equal(nftnl_chain_get_u32(c, NFTNL_CHAIN_POLICY), policy);
	assert_int_equal(nftnl_chain_get_u32(c, NFTNL_CHAIN_FAMILY), NFPROTO_INET);
	nftnl_chain_free(c);
}

static void check_table(const struct nlmsghdr *nlh)
{
	struct nftnl_table *t = nftnl_table_alloc();

	assert_non_null(t);
	assert_int_equal(nftnl_table_nlmsg_parse(nlh, t), 0);
	assert_string_equal(nftnl_table_get_str(t, NFTNL_TABLE_NAME), HEZO_HOOK_TABLE);
	assert_int_equal(nftnl_table_get_u32(t, NFTNL_TABLE_FAMILY), NFPROTO_INET);
	nftnl_table_free(t);
}

/* Envelope shared by every batch: delimiters around messages each asking for an ack, with
 * sequence numbers seq+1.. in order, all of family inet. */
static void check_envelope(const struct parsed_batch *pb, uint32_t seq, unsigned nacks)
{
	assert_int_equal(pb->count, nacks + 2);
	assert_int_equal(pb->types[0], NFNL_MSG_BATCH_BEGIN);
	assert_int_equal(pb->types[pb->count - 1], NFNL_MSG_BATCH_END);
	for (unsigned i = 1; i + 1 < pb->count; i++) {
		const struct nfgenmsg *g = mnl_nlmsg_get_payload(pb->msgs[i]);

		assert_true(pb->flags[i] & NLM_F_ACK);
		assert_true(pb->flags[i] & NLM_F_REQUEST);
		assert_int_equal(pb->seqs[i], seq + i);
		assert_int_equal(g->nfgen_family, NFPROTO_INET);
		assert_int_equal(pb->types[i] >> 8, NFNL_SUBSYS_NFTABLES);
	}
}

static void test_nft_proxy_batch(void **unused)
{
	static const char *const want_rules[] = {
		/* nat chain: DNS first (any destination), then loopback untouched, then all TCP */
		"[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] "
		"[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
		"[ immediate reg 1 0x0000cd3a ] [ redir proto_min reg 1 ]",
		"[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
		"[ payload load 2b @ transport header + 2 => reg 1 ] [ cmp eq reg 1 0x00003500 ] "
		"[ immediate reg 1 0x0000cd3a ] [ redir proto_min reg 1 ]",
		"[ meta load oifname => reg 1 ] [ cmp eq reg 1 0x00006f6c 0x00000000 0x00000000 "
		"0x00000000 ] [ immediate reg 0 return ]",
		"[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
		"[ immediate reg 1 0x0000993a ] [ redir proto_min reg 1 ]",
		/* filter chain */
		"[ meta load oifname => reg 1 ] [ cmp eq reg 1 0x00006f6c 0x00000000 0x00000000 "
		"0x00000000 ] [ immediate reg 0 accept ]",
		/* after a redirect the hooks still report the old device: accept by destination */
		"[ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x00000002 ] "
		"[ payload load 4b @ network header + 16 => reg 1 ] "
		"[ bitwise reg 1 = ( reg 1 & 0x000000ff ) ^ 0x00000000 ] [ cmp eq reg 1 0x0000007f "
		"] "
		"[ immediate reg 0 accept ]",
		"[ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x0000000a ] "
		"[ payload load 16b @ network header + 24 => reg 1 ] "
		"[ cmp eq reg 1 0x00000000 0x00000000 0x00000000 0x01000000 ] "
		"[ immediate reg 0 accept ]",
		"[ ct load state => reg 1 ] [ bitwise reg 1 = ( reg 1 & 0x00000006 ) ^ 0x00000000 "
		"] "
		"[ cmp neq reg 1 0x00000000 ] [ immediate reg 0 accept ]",
		"[ meta load nfproto => reg 1 ] [ cmp eq reg 1 0x0000000a ] "
		"[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x0000003a ] "
		"[ payload load 1b @ transport header + 0 => reg 1 ] [ cmp gte reg 1 0x00000087 ] "
		"[ cmp lte reg 1 0x00000088 ] [ payload load 1b @ network header + 7 => reg 1 ] "
		"[ cmp eq reg 1 0x000000ff ] [ immediate reg 0 accept ]",
		"[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000011 ] "
		"[ reject type 2 code 3 ]",
		"[ meta load l4proto => reg 1 ] [ cmp eq reg 1 0x00000006 ] "
		"[ reject type 1 code 0 ]",
	};
	const struct hezo_hook_nft_params p = {
		.mode = HEZO_HOOK_MODE_PROXY, .tcp_port = 15001, .dns_port = 15053};
	char *buf = malloc(HEZO_HOOK_NFT_BUF);
	struct parsed_batch pb;
	unsigned nacks = 0;
	ssize_t len;

	assert_non_null(buf);
	len = hezo_hook_nft_build_wire(buf, HEZO_HOOK_NFT_BUF, 1000, &p, &nacks);
	assert_true(len > 0);
	walk_batch(buf, len, &pb);
	/* 3 table messages, 2 chains, 4 + 7 rules */
	assert_int_equal(nacks, 3 + 2 + 11);
	check_envelope(&pb, 1000, nacks);

	assert_int_equal(pb.types[1], NFT_TYPE(NFT_MSG_NEWTABLE));
	assert_int_equal(pb.types[2], NFT_TYPE(NFT_MSG_DELTABLE));
	assert_int_equal(pb.types[3], NFT_TYPE(NFT_MSG_NEWTABLE));
	assert_false(pb.flags[1] & NLM_F_EXCL);
	assert_true(pb.flags[3] & NLM_F_EXCL);
	for (int i = 1; i <= 3; i++)
		check_table(pb.msgs[i]);

	assert_int_equal(pb.types[4], NFT_TYPE(NFT_MSG_NEWCHAIN));
	assert_int_equal(pb.types[5], NFT_TYPE(NFT_MSG_NEWCHAIN));
	check_chain(pb.msgs[4], HEZO_HOOK_CHAIN_NAT, "nat", -110, NF_ACCEPT);
	check_chain(pb.msgs[5], HEZO_HOOK_CHAIN_OUT, "filter", 0, NF_DROP);

	for (unsigned i = 0; i < HEZO_ARRAY_SIZE(want_rules); i++) {
		char text[2048];
		const char *chain = i < 4 ? HEZO_HOOK_CHAIN_NAT : HEZO_HOOK_CHAIN_OUT;
		char prefix[128];

		assert_int_equal(pb.types[6 + i], NFT_TYPE(NFT_MSG_NEWRULE));
		assert_true(pb.flags[6 + i] & NLM_F_APPEND);
		rule_text(pb.msgs[6 + i], text, sizeof(text));
		snprintf(prefix, sizeof(prefix), "inet hezo %s ", chain);
		assert_memory_equal(text, prefix, strlen(prefix));
		if (!strstr(text, want_rules[i]))
			fail_msg("rule %u:\n got  %s\n want %s", i, text, want_rules[i]);
	}
	free(buf);
}

static void test_nft_ports_follow_reply(void **unused)
{
	const struct hezo_hook_nft_params p = {
		.mode = HEZO_HOOK_MODE_PROXY, .tcp_port = 1, .dns_port = 65535};
	char *buf = malloc(HEZO_HOOK_NFT_BUF);
	struct parsed_batch pb;
	unsigned nacks;
	char text[2048];
	ssize_t len;

	len = hezo_hook_nft_build_wire(buf, HEZO_HOOK_NFT_BUF, 0, &p, &nacks);
	assert_true(len > 0);
	walk_batch(buf, len, &pb);
	rule_text(pb.msgs[6], text, sizeof(text));
	assert_non_null(strstr(text, "[ immediate reg 1 0x0000ffff ]"));
	rule_text(pb.msgs[9], text, sizeof(text));
	assert_non_null(strstr(text, "[ immediate reg 1 0x00000100 ]"));
	free(buf);
}

static void test_nft_deny_batch(void **unused)
{
	const struct hezo_hook_nft_params p = {.mode = HEZO_HOOK_MODE_DENY};
	char *buf = malloc(HEZO_HOOK_NFT_BUF);
	struct parsed_batch pb;
	unsigned nacks = 0;
	ssize_t len;

	len = hezo_hook_nft_build_wire(buf, HEZO_HOOK_NFT_BUF, 7, &p, &nacks);
	assert_true(len > 0);
	walk_batch(buf, len, &pb);
	assert_int_equal(nacks, 3 + 1 + 7);
	check_envelope(&pb, 7, nacks);
	/* No nat chain and no redirect anywhere: deny lets nothing out, not even to proxyd. */
	assert_int_equal(pb.types[4], NFT_TYPE(NFT_MSG_NEWCHAIN));
	check_chain(pb.msgs[4], HEZO_HOOK_CHAIN_OUT, "filter", 0, NF_DROP);
	for (unsigned i = 5; i < 12; i++) {
		char text[2048];

		assert_int_equal(pb.types[i], NFT_TYPE(NFT_MSG_NEWRULE));
		rule_text(pb.msgs[i], text, sizeof(text));
		assert_null(strstr(text, "redir"));
		assert_non_null(strstr(text, "inet hezo output "));
	}
	free(buf);
}

static void test_nft_delete_batch(void **unused)
{
	char buf[4096];
	struct parsed_batch pb;
	unsigned nacks = 0;
	ssize_t len;

	len = hezo_hook_nft_build_delete(buf, sizeof(buf), 50, &nacks);
	assert_true(len > 0);
	walk_batch(buf, len, &pb);
	assert_int_equal(nacks, 1);
	check_envelope(&pb, 50, 1);
	assert_int_equal(pb.types[1], NFT_TYPE(NFT_MSG_DELTABLE));
	check_table(pb.msgs[1]);
}

static void test_nft_bad_input(void **unused)
{
	struct hezo_hook_nft_params p = {.mode = HEZO_HOOK_MODE_OFF};
	char *buf = malloc(HEZO_HOOK_NFT_BUF);
	unsigned nacks = 12345;
	ssize_t full;

	assert_int_equal(hezo_hook_nft_build_wire(buf, HEZO_HOOK_NFT_BUF, 0, &p, &nacks), -EINVAL);
	p.mode = HEZO_HOOK_MODE_PROXY; /* ports missing */
	assert_int_equal(hezo_hook_nft_build_wire(buf, HEZO_HOOK_NFT_BUF, 0, &p, &nacks), -EINVAL);
	p.tcp_port = 15001;
	p.dns_port = 15053;
	/* Too small a buffer: refused, never overrun (ASan watches the malloc'd sizes). */
	full = hezo_hook_nft_build_wire(buf, HEZO_HOOK_NFT_BUF, 0, &p, &nacks);
	assert_true(full > 0);
	nacks = 12345;
	for (size_t size = 0; size < (size_t)full; size += 61) {
		char *small = malloc(size ? size : 1);

		assert_int_equal(hezo_hook_nft_build_wire(small, size, 0, &p, &nacks), -ENOSPC);
		free(small);
	}
	assert_int_equal(hezo_hook_nft_build_delete(buf, 100, 0, &nacks), -ENOSPC);
	assert_int_equal(nacks, 12345);
	free(buf);
}

/* ---- proxyd replies and requests ---- */

static void test_reply_parse(void **unused)
{
	struct hezo_hook_reply rep;
	struct hezo_error *err = NULL;
	const char *s;

	s = "{\"ok\":true,\"tcpPort\":15001,\"dnsPort\":15053}";
	assert_int_equal(hezo_hook_parse_reply(s, strlen(s), &rep, &err), 0);
	assert_true(rep.ok);
	assert_int_equal(rep.tcp_port, 15001);
	assert_int_equal(rep.dns_port, 15053);
	hezo_hook_reply_clear(&rep);

	s = "{\"ok\":true}";
	assert_int_equal(hezo_hook_parse_reply(s, strlen(s), &rep, &err), 0);
	assert_int_equal(rep.tcp_port, 0);

	s = "{\"ok\":false,\"error\":\"no such\\nproject\\u001b[31m\"}";
	assert_int_equal(hezo_hook_parse_reply(s, strlen(s), &rep, &err), 0);
	assert_false(rep.ok);
	assert_string_equal(rep.error, "no such?project?[31m");
	hezo_hook_reply_clear(&rep);

	s = "{\"ok\":false}";
	assert_int_equal(hezo_hook_parse_reply(s, strlen(s), &rep, &err), 0);
	assert_string_equal(rep.error, "no reason given");
	hezo_hook_reply_clear(&rep);
	assert_null(err);

	static const char *const bad[] = {
		"",
		"{",
		"[true]",
		"{\"ok\":1}",
		"{\"ok\":\"true\"}",
		"{}",
		"{\"ok\":true,\"tcpPort\":0}",
		"{\"ok\":true,\"tcpPort\":65536}",
		"{\"ok\":true,\"dnsPort\":\"53\"}",
		"{\"ok\":true,\"dnsPort\":-5}",
	};
	for (size_t i = 0; i < HEZO_ARRAY_SIZE(bad); i++) {
		if (hezo_hook_parse_reply(bad[i], strlen(bad[i]), &rep, &err) >= 0)
			fail_msg("accepted bad reply: %s", bad[i]);
		assert_non_null(err);
		assert_non_null(strstr(err->msg, "proxyd reply"));
		hezo_error_free(err);
		err = NULL;
		hezo_hook_reply_clear(&rep);
	}
}

static void test_register_request(void **unused)
{
	struct hezo_hook_egress eg;
	struct hezo_error *err = NULL;
	struct hezo_json *req = NULL;
	char *out = NULL;
	uint64_t cg = 0;
	size_t len;

	assert_int_equal(
		parse_egress("{\"mode\":\"proxy\",\"allow\":[\"a.test\"],\"project\":\"p\"}", &eg),
		0);
	assert_int_equal(hezo_hook_build_register("ctr1", &eg, 0, &out, &len, &err), 0);
	assert_int_equal(strlen(out), len);
	assert_int_equal(hezo_json_parse(out, len, &req, &err), 0);
	assert_string_equal(hezo_json_string(hezo_json_get(req, "op")), "register");
	assert_string_equal(hezo_json_string(hezo_json_get(req, "id")), "ctr1");
	assert_string_equal(hezo_json_string(hezo_json_get(req, "project")), "p");
	assert_true(hezo_json_equal(hezo_json_get(req, "egress"), eg.json));
	/* An unknown cgroup is left out; a known one is sent as a number. */
	assert_null(hezo_json_get(req, "cgroup"));
	hezo_json_free(req);
	free(out);
	assert_int_equal(hezo_hook_build_register("ctr1", &eg, 12345678901ull, &out, &len, &err),
			 0);
	assert_int_equal(hezo_json_parse(out, len, &req, &err), 0);
	assert_int_equal(hezo_json_get_uint64(hezo_json_get(req, "cgroup"), &cg), 0);
	assert_true(cg == 12345678901ull);
	hezo_json_free(req);
	free(out);
	hezo_hook_egress_clear(&eg);

	assert_int_equal(hezo_hook_build_deregister("ctr1", &out, &len, &err), 0);
	assert_string_equal(out, "{\"op\":\"deregister\",\"id\":\"ctr1\"}");
	free(out);
}

/* The unified hierarchy's line of /proc/PID/cgroup, hybrid or pure v2; nothing else. */
static void test_cgroup2_path(void **unused)
{
	const char *hybrid = "9:name=systemd:/docker/abc\n4:memory:/docker/abc\n0::/docker/abc\n";
	char out[64];

	assert_int_equal(hezo_cgroup2_path(hybrid, strlen(hybrid), out, sizeof(out)), 0);
	assert_string_equal(out, "/docker/abc");
	assert_int_equal(hezo_cgroup2_path("0::/\n", 5, out, sizeof(out)), 0);
	assert_string_equal(out, "/");
	assert_int_equal(hezo_cgroup2_path("1:cpu:/x\n", 9, out, sizeof(out)), -ENOENT);
	/* Outside the reader's cgroup namespace: no path to open. */
	assert_int_equal(hezo_cgroup2_path("0::/../../x\n", 12, out, sizeof(out)), -EINVAL);
	assert_int_equal(hezo_cgroup2_path("0::/abcdef\n", 11, out, 4), -EINVAL);
}

/* The call over a real SOCK_SEQPACKET pair: the peer must get the request and the fd. */
static void test_control_call_passes_fd(void **unused)
{
	int sv[2];
	struct hezo_error *err = NULL;
	struct hezo_hook_reply rep;
	const char *answer = "{\"ok\":true,\"tcpPort\":15001,\"dnsPort\":15053}";
	char buf[256];
	union {
		char c[CMSG_SPACE(sizeof(int))];
		struct cmsghdr a;
	} ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctl.c,
			    .msg_controllen = sizeof(ctl.c)};
	struct cmsghdr *c;
	struct stat a, b;
	int passed, devnull;
	ssize_t n;

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(devnull >= 0);
	/* Queue the answer first: the call sends, then reads. */
	assert_int_equal(send(sv[1], answer, strlen(answer), 0), (ssize_t)strlen(answer));
	assert_int_equal(
		hezo_hook_control_call(sv[0], "{\"op\":\"x\"}", 10, devnull, 1000, &rep, &err), 0);
	assert_true(rep.ok);
	assert_int_equal(rep.dns_port, 15053);

	n = recvmsg(sv[1], &mh, MSG_CMSG_CLOEXEC);
	assert_int_equal(n, 10);
	assert_memory_equal(buf, "{\"op\":\"x\"}", 10);
	c = CMSG_FIRSTHDR(&mh);
	assert_non_null(c);
	assert_int_equal(c->cmsg_type, SCM_RIGHTS);
	memcpy(&passed, CMSG_DATA(c), sizeof(int));
	assert_int_equal(fstat(passed, &a), 0);
	assert_int_equal(fstat(devnull, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	close(passed);
	close(devnull);
	close(sv[0]);
	close(sv[1]);
}

static void test_control_call_timeout_and_hangup(void **unused)
{
	int sv[2];
	struct hezo_error *err = NULL;
	struct hezo_hook_reply rep;

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(hezo_hook_control_call(sv[0], "{}", 2, -1, 200, &rep, &err), -ETIMEDOUT);
	assert_non_null(strstr(err->msg, "did not answer"));
	hezo_error_free(err);
	err = NULL;

	close(sv[1]);
	assert_int_equal(hezo_hook_control_call(sv[0], "{}", 2, -1, 200, &rep, &err) < 0, 1);
	assert_non_null(err);
	hezo_error_free(err);
	close(sv[0]);
}

static void test_control_connect_missing(void **unused)
{
	struct hezo_error *err = NULL;
	int fd = -1;

	assert_int_equal(hezo_hook_control_connect("/nonexistent/hezo/control.sock", &fd, &err),
			 -ENOENT);
	assert_non_null(strstr(err->msg, "cannot reach hezo-proxyd"));
	assert_int_equal(fd, -1);
	hezo_error_free(err);
}

static void test_netns_refuses_own(void **unused)
{
	struct hezo_error *err = NULL;
	int fd = -1;

	/* Our own namespace stands in for a host-network container. */
	assert_int_equal(hezo_hook_netns_open_pid(getpid(), &fd, &err), -EPERM);
	assert_non_null(strstr(err->msg, "host's network namespace"));
	hezo_error_free(err);
	err = NULL;
	assert_int_equal(hezo_hook_netns_open_pid(0, &fd, &err), -EINVAL);
	hezo_error_free(err);
	assert_int_equal(fd, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_valid),
		cmocka_unit_test(test_state_pid_optional_for_unwire),
		cmocka_unit_test(test_state_hostile),
		cmocka_unit_test(test_state_error_names_field),
		cmocka_unit_test(test_id_valid),
		cmocka_unit_test(test_egress_valid),
		cmocka_unit_test(test_egress_hostile),
		cmocka_unit_test(test_nft_proxy_batch),
		cmocka_unit_test(test_nft_ports_follow_reply),
		cmocka_unit_test(test_nft_deny_batch),
		cmocka_unit_test(test_nft_delete_batch),
		cmocka_unit_test(test_nft_bad_input),
		cmocka_unit_test(test_reply_parse),
		cmocka_unit_test(test_register_request),
		cmocka_unit_test(test_cgroup2_path),
		cmocka_unit_test(test_control_call_passes_fd),
		cmocka_unit_test(test_control_call_timeout_and_hangup),
		cmocka_unit_test(test_control_connect_missing),
		cmocka_unit_test(test_netns_refuses_own),
	};

	return cmocka_run_group_tests_name("hooks", tests, NULL, NULL);
}
