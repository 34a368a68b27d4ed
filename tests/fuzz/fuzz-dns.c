/*
 * libFuzzer target for proxyd/dns.c: the input is parsed as a client's query (and answered with
 * NXDOMAIN), and as an upstream answer to a fixed query (and filtered); outputs must stay in
 * bounds and be well-formed DNS themselves.
 *
 * Build and run by hand from the top of the checkout:
 *   clang-14 -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ibase -Ispec -Iproxyd \
 *       tests/fuzz/fuzz-dns.c proxyd/dns.c -o /tmp/fuzz-dns
 *   mkdir -p /tmp/fuzz-dns-corpus && /tmp/fuzz-dns -max_total_time=60 /tmp/fuzz-dns-corpus \
 *       tests/fuzz/corpus/dns
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxyd-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool keep_odd(int family, const uint8_t *addr, void *userdata)
{
	return (addr[family == AF_INET ? 3 : 15] & 1) != 0;
}

static void check_reply(const uint8_t *out, int n, size_t outsz)
{
	struct hezo_dns_query again;
	uint8_t copy[4096];

	if (n < 0)
		return;
	if ((size_t)n > outsz || n < HEZO_DNS_HEADER || !(out[2] & 0x80))
		abort();
	/* Our reply with QR cleared must read back as the same single-question message. */
	memcpy(copy, out, (size_t)n);
	copy[2] &= 0x7f;
	copy[6] = copy[7] = 0; /* answers are not expected in a query */
	if (hezo_dns_parse_query(copy, (size_t)n, &again) < 0 && (out[6] | out[7]) == 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hezo_dns_query q, fixed;
	struct hezo_dns_result res;
	uint8_t out[4096], query[512];
	char name[HEZO_NAME_MAX];
	size_t off;
	int n, qn;

	if (hezo_dns_parse_query(data, size, &q) == 0) {
		if (strlen(q.name) >= HEZO_NAME_MAX || q.qend > size)
			abort();
		n = hezo_dns_build_empty(data, &q, HEZO_DNS_NXDOMAIN, out, sizeof(out));
		check_reply(out, n, sizeof(out));
	}

	/* As an upstream answer to "a.example" A (and AAAA when the first byte is odd). */
	qn = hezo_dns_build_query(size ? (uint16_t)(data[0] << 8) : 0, "a.example",
				  size && (data[0] & 1) ? HEZO_DNS_TYPE_AAAA : HEZO_DNS_TYPE_A,
				  query, sizeof(query));
	if (qn < 0 || hezo_dns_parse_query(query, (size_t)qn, &fixed) < 0)
		abort();
	for (size_t limit = 64; limit <= sizeof(out); limit *= 8) {
		n = hezo_dns_filter_response(data, size, query, &fixed, keep_odd, NULL, out,
					     sizeof(out), limit, &res);
		if (n >= 0) {
			if ((size_t)n > limit && !res.truncated && (size_t)n > sizeof(out))
				abort();
			if (res.naddrs > HEZO_DNS_MAX_ADDRS)
				abort();
			if (!res.truncated && (size_t)n > limit)
				abort();
		}
		check_reply(out, n, sizeof(out));
	}

	/* Names from every offset. */
	for (off = 0; off < size && off < 64; off++) {
		size_t o = off;

		if (hezo_dns_read_name(data, size, &o, name) == 0 &&
		    (o > size || o <= off || strlen(name) >= HEZO_NAME_MAX))
			abort();
	}
	return 0;
}
