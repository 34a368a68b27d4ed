/*
 * The matching proxyd does for every query and connection against a parsed allow list: names,
 * wildcards, ports, CIDRs, and the address ranges DNS answers may not point at.
 */
#include <string.h>
#include <sys/socket.h>

#include "hezo-cleanup.h"
#include "hezo-egress.h"

static bool name_matches(const struct hezo_allow_name *a, const char *name)
{
	size_t n, s;

	if (!a->wildcard)
		return strcmp(a->name, name) == 0;
	/* *.example.com: any name strictly below example.com, not example.com itself */
	n = strlen(name);
	s = strlen(a->name);
	return n > s + 1 && name[n - s - 1] == '.' && strcmp(name + n - s, a->name) == 0;
}

/* An entry's port: 0 (none written) means 80 and 443. No entry can mean port 0. */
static bool port_matches(uint16_t entry, uint16_t port)
{
	if (port == 0)
		return false;
	return entry ? entry == port : (port == 80 || port == 443);
}

bool hezo_egress_name_allowed(const struct hezo_egress *e, const char *name, uint16_t port)
{
	for (size_t i = 0; i < e->nnames; i++)
		if (port_matches(e->names[i].port, port) && name_matches(&e->names[i], name))
			return true;
	return false;
}

bool hezo_egress_name_listed(const struct hezo_egress *e, const char *name)
{
	for (size_t i = 0; i < e->nnames; i++)
		if (name_matches(&e->names[i], name))
			return true;
	return false;
}

bool hezo_egress_cidr_allowed(const struct hezo_egress *e, int family, const uint8_t *addr,
			      uint16_t port)
{
	for (size_t i = 0; i < e->ncidrs; i++) {
		const struct hezo_cidr *c = &e->cidrs[i];

		if (port_matches(c->port, port) && hezo_cidr_contains(c, family, addr))
			return true;
	}
	return false;
}

static bool v4_special(const uint8_t *a)
{
	static const struct {
		uint8_t net[4];
		uint8_t prefix;
	} ranges[] = {
		{{0, 0, 0, 0}, 8},	/* "this" network */
		{{10, 0, 0, 0}, 8},	/* RFC 1918 */
		{{100, 64, 0, 0}, 10},	/* CGNAT */
		{{127, 0, 0, 0}, 8},	/* loopback */
		{{169, 254, 0, 0}, 16}, /* link-local, cloud metadata */
		{{172, 16, 0, 0}, 12},	/* RFC 1918 */
		{{192, 0, 0, 0}, 24},	/* IETF protocol assignments */
		{{192, 168, 0, 0}, 16}, /* RFC 1918 */
		{{198, 18, 0, 0}, 15},	/* benchmarking */
		{{224, 0, 0, 0}, 4},	/* multicast */
		{{240, 0, 0, 0}, 4},	/* reserved, broadcast */
	};

	for (size_t i = 0; i < HEZO_ARRAY_SIZE(ranges); i++) {
		struct hezo_cidr c = {.family = AF_INET, .prefix = ranges[i].prefix};

		memcpy(c.addr, ranges[i].net, 4);
		if (hezo_cidr_contains(&c, AF_INET, a))
			return true;
	}
	return false;
}

bool hezo_addr_is_special(int family, const uint8_t *a)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t zero12[12] = {0};
	static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};

	if (family == AF_INET)
		return v4_special(a);
	if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0)
		return v4_special(a + 12);
	if (memcmp(a, zero12, 12) == 0)
		return true; /* ::, ::1 and the deprecated IPv4-compatible form */
	if ((a[0] & 0xfe) == 0xfc)
		return true; /* ULA fc00::/7 */
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return true; /* link-local fe80::/10 */
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0)
		return true; /* site-local fec0::/10 */
	if (a[0] == 0xff)
		return true; /* multicast */
	if (a[0] == 0x20 && a[1] == 0x02)
		return v4_special(a + 2); /* 6to4 */
	if (a[0] == 0x01 && a[1] == 0 && a[2] == 0 && a[3] == 0 && !a[4] && !a[5] && !a[6] && !a[7])
		return true; /* discard-only 100::/64 */
	return false;
}

bool hezo_egress_range_allowed(const struct hezo_egress *e, int family, const uint8_t *addr)
{
	for (size_t i = 0; i < e->nranges; i++)
		if (hezo_cidr_contains(&e->ranges[i], family, addr))
			return true;
	return false;
}
