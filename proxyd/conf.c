/*
 * A container's egress rules: parsing the registration's egress object, normalising names, and
 * the matching proxyd does for every query and connection (names, wildcards, ports, CIDRs, and
 * the address ranges DNS answers may not point at).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxyd-parse.h"

void hezo_egress_clear(struct hezo_egress *e)
{
	free(e->names);
	free(e->cidrs);
	free(e->ranges);
	free(e->resolvers);
	memset(e, 0, sizeof(*e));
}

int hezo_name_normalize(const char *in, size_t len, char out[HEZO_NAME_MAX])
{
	size_t label = 0;

	if (len > 0 && in[len - 1] == '.')
		len--;
	if (len == 0 || len >= HEZO_NAME_MAX)
		return len == 0 ? -EINVAL : -ENAMETOOLONG;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c >= 0x80)
			return -EILSEQ;
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		if (c == '.') {
			if (label == 0 || out[i - 1] == '-')
				return -EINVAL;
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
			   c == '-') {
			if (c == '-' && label == 0)
				return -EINVAL;
			if (++label > 63)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
		out[i] = (char)c;
	}
	if (out[len - 1] == '-')
		return -EINVAL;
	out[len] = '\0';
	return 0;
}

static int parse_port(const char *s, uint16_t *port)
{
	char *end;
	unsigned long v;

	if (!*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int hezo_cidr_parse(const char *s, struct hezo_cidr *out)
{
	char buf[64];
	char *slash;
	size_t len = strlen(s);

	memset(out, 0, sizeof(*out));
	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len + 1);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, buf, out->addr) == 1) {
		out->family = AF_INET;
		out->prefix = 32;
	} else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
		out->family = AF_INET6;
		out->prefix = 128;
	} else {
		return -EINVAL;
	}
	if (slash) {
		char *end;
		unsigned long p;

		if (slash[1] < '0' || slash[1] > '9')
			return -EINVAL;
		errno = 0;
		p = strtoul(slash + 1, &end, 10);
		if (errno || *end || p > out->prefix)
			return -EINVAL;
		out->prefix = (uint8_t)p;
	}
	/* Host bits set ("10.1.2.3/8") are a typo more often than not: refuse them. */
	for (unsigned bit = out->prefix; bit < (out->family == AF_INET ? 32u : 128u); bit++)
		if (out->addr[bit / 8] & (0x80 >> (bit % 8)))
			return -EINVAL;
	return 0;
}

bool hezo_cidr_contains(const struct hezo_cidr *c, int family, const uint8_t *addr)
{
	unsigned full = c->prefix / 8, rest = c->prefix % 8;

	if (c->family != family)
		return false;
	if (memcmp(c->addr, addr, full) != 0)
		return false;
	if (rest) {
		uint8_t mask = (uint8_t)(0xff << (8 - rest));

		if ((c->addr[full] & mask) != (addr[full] & mask))
			return false;
	}
	return true;
}

/*
 * Address entries, in the forms the policy parser accepts: "10.0.0.0/8", "10.0.0.0/8:5432",
 * "fd00::/8:443", "[fd00::]/8:443", "[2001:db8::/32]:22", "fd00::1", "[fd00::1]:443". No port
 * means 80 and 443, as for names.
 */
static int parse_address_entry(const char *s, char *buf, struct hezo_cidr *cidr, bool *is_cidr,
			       struct hezo_error **err)
{
	char addr[80];
	const char *rest;
	uint16_t port = 0;
	size_t alen;

	if (buf[0] == '[') {
		char *close = strchr(buf, ']');

		if (!close)
			return hezo_error_set(err, EINVAL, "\"%s\": missing ']'", s);
		alen = (size_t)(close - buf - 1);
		if (alen >= sizeof(addr))
			return hezo_error_set(err, EINVAL, "\"%s\": bad address", s);
		memcpy(addr, buf + 1, alen);
		rest = close + 1;
		if (*rest == '/') {
			const char *d = rest + 1;

			while (*d >= '0' && *d <= '9')
				d++;
			if ((size_t)(d - rest) + alen >= sizeof(addr))
				return hezo_error_set(err, EINVAL, "\"%s\": bad prefix", s);
			memcpy(addr + alen, rest, (size_t)(d - rest));
			alen += (size_t)(d - rest);
			rest = d;
		}
		addr[alen] = '\0';
	} else if (strchr(buf, '/')) {
		const char *d = strchr(buf, '/') + 1;

		while (*d >= '0' && *d <= '9')
			d++;
		alen = (size_t)(d - buf);
		if (alen >= sizeof(addr))
			return hezo_error_set(err, EINVAL, "\"%s\": bad address", s);
		memcpy(addr, buf, alen);
		addr[alen] = '\0';
		rest = d;
	} else {
		/* a bare IPv6 address: its colons leave no room for a port */
		if (strlen(buf) >= sizeof(addr))
			return hezo_error_set(err, EINVAL, "\"%s\": bad address", s);
		strcpy(addr, buf);
		rest = "";
	}
	if (*rest == ':') {
		if (parse_port(rest + 1, &port) < 0)
			return hezo_error_set(err, EINVAL, "\"%s\": bad port", s);
	} else if (*rest) {
		return hezo_error_set(err, EINVAL, "\"%s\": expected ADDRESS[/PREFIX][:PORT]", s);
	}
	if (hezo_cidr_parse(addr, cidr) < 0 || (buf[0] == '[' && cidr->family != AF_INET6))
		return hezo_error_set(err, EINVAL,
				      "\"%s\": bad address or CIDR (no host bits may be set)", s);
	cidr->port = port;
	*is_cidr = true;
	return 0;
}

int hezo_allow_parse(const char *s, struct hezo_allow_name *name, struct hezo_cidr *cidr,
		     bool *is_cidr, struct hezo_error **err)
{
	char buf[HEZO_NAME_MAX + 16];
	const char *host;
	char *colon;
	size_t len = strlen(s);
	uint16_t port = 0;
	int r;

	memset(name, 0, sizeof(*name));
	memset(cidr, 0, sizeof(*cidr));
	*is_cidr = false;
	if (len == 0 || len >= sizeof(buf))
		return hezo_error_set(err, EINVAL, "\"%s\": empty or too long", s);
	memcpy(buf, s, len + 1);

	if (buf[0] == '[' || strchr(buf, '/') || strchr(buf, ':') != strrchr(buf, ':'))
		return parse_address_entry(s, buf, cidr, is_cidr, err);
	colon = strchr(buf, ':');
	if (colon) {
		if (parse_port(colon + 1, &port) < 0)
			return hezo_error_set(err, EINVAL, "\"%s\": bad port", s);
		*colon = '\0';
	}
	if (hezo_cidr_parse(buf, cidr) == 0) {
		cidr->port = port;
		*is_cidr = true;
		return 0;
	}
	memset(cidr, 0, sizeof(*cidr));
	host = buf;
	if (strncmp(buf, "*.", 2) == 0) {
		name->wildcard = true;
		host = buf + 2;
	}
	if (strchr(host, '*'))
		return hezo_error_set(
			err, EINVAL,
			"\"%s\": '*' is only allowed as a whole first label (*.example.com)", s);
	r = hezo_name_normalize(host, strlen(host), name->name);
	if (r == -EILSEQ)
		return hezo_error_set(err, EINVAL,
				      "\"%s\": non-ASCII name; write it in punycode (xn--...)", s);
	if (r < 0)
		return hezo_error_set(err, EINVAL, "\"%s\": not a valid host name", s);
	if (name->wildcard && !strchr(name->name, '.'))
		return hezo_error_set(err, EINVAL, "\"%s\": wildcard too broad", s);
	name->port = port;
	return 0;
}

static int parse_resolver(const char *s, struct hezo_resolver *out)
{
	char buf[64];
	char *colon;
	size_t len = strlen(s);
	uint16_t port = 53;

	memset(out, 0, sizeof(*out));
	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len + 1);
	if (buf[0] == '[') {
		char *close = strchr(buf, ']');

		if (!close)
			return -EINVAL;
		*close = '\0';
		if (close[1] == ':') {
			if (parse_port(close + 2, &port) < 0)
				return -EINVAL;
		} else if (close[1]) {
			return -EINVAL;
		}
		memmove(buf, buf + 1, strlen(buf + 1) + 1);
	} else if ((colon = strchr(buf, ':')) && colon == strrchr(buf, ':')) {
		if (parse_port(colon + 1, &port) < 0)
			return -EINVAL;
		*colon = '\0';
	}
	if (inet_pton(AF_INET, buf, out->addr) == 1)
		out->family = AF_INET;
	else if (inet_pton(AF_INET6, buf, out->addr) == 1)
		out->family = AF_INET6;
	else
		return -EINVAL;
	out->port = port;
	return 0;
}

static int string_array(const struct hezo_json *egress, const char *key,
			const struct hezo_json **arr, struct hezo_error **err)
{
	const struct hezo_json *v = hezo_json_get(egress, key);

	*arr = NULL;
	if (!v)
		return 0;
	if (v->type != HEZO_JSON_ARRAY)
		return hezo_error_set(err, EINVAL, "egress.%s: not an array", key);
	HEZO_JSON_FOREACH (i, v) {
		if (v->items[i]->type != HEZO_JSON_STRING)
			return hezo_error_set(err, EINVAL, "egress.%s[%zu]: not a string", key, i);
	}
	*arr = v;
	return 0;
}

int hezo_egress_parse(const struct hezo_json *egress, struct hezo_egress *out,
		      struct hezo_error **err)
{
	static const char *const known[] = {"mode", "allow", "resolvers", "allowRanges", "project"};
	const struct hezo_json *allow, *resolvers, *ranges, *mode;
	struct hezo_egress e = {0};
	int r;

	memset(out, 0, sizeof(*out));
	if (!egress || egress->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "egress: not an object");
	HEZO_JSON_FOREACH (i, egress) {
		bool ok = false;

		for (size_t k = 0; k < HEZO_ARRAY_SIZE(known); k++)
			ok = ok || strcmp(egress->keys[i], known[k]) == 0;
		if (!ok)
			return hezo_error_set(err, EINVAL, "egress.%s: unknown key",
					      egress->keys[i]);
	}
	mode = hezo_json_get(egress, "mode");
	if (mode && (!hezo_json_string(mode) || strcmp(hezo_json_string(mode), "proxy") != 0))
		return hezo_error_set(err, EINVAL, "egress.mode: proxyd serves only \"proxy\"");
	if ((r = string_array(egress, "allow", &allow, err)) < 0 ||
	    (r = string_array(egress, "resolvers", &resolvers, err)) < 0 ||
	    (r = string_array(egress, "allowRanges", &ranges, err)) < 0)
		return r;

	if (allow && allow->len) {
		e.names = calloc(allow->len, sizeof(*e.names));
		e.cidrs = calloc(allow->len, sizeof(*e.cidrs));
		if (!e.names || !e.cidrs) {
			hezo_egress_clear(&e);
			return hezo_error_set(err, ENOMEM, "egress.allow: out of memory");
		}
		HEZO_JSON_FOREACH (i, allow) {
			struct hezo_allow_name n;
			struct hezo_cidr c;
			bool is_cidr;

			r = hezo_allow_parse(allow->items[i]->str, &n, &c, &is_cidr, err);
			if (r < 0) {
				hezo_egress_clear(&e);
				return hezo_error_prefix(err, "egress.allow[%zu]", i);
			}
			if (is_cidr)
				e.cidrs[e.ncidrs++] = c;
			else
				e.names[e.nnames++] = n;
		}
	}
	if (resolvers && resolvers->len) {
		e.resolvers = calloc(resolvers->len, sizeof(*e.resolvers));
		if (!e.resolvers) {
			hezo_egress_clear(&e);
			return hezo_error_set(err, ENOMEM, "egress.resolvers: out of memory");
		}
		HEZO_JSON_FOREACH (i, resolvers) {
			if (parse_resolver(resolvers->items[i]->str, &e.resolvers[i]) < 0) {
				r = hezo_error_set(err, EINVAL,
						   "egress.resolvers[%zu]: \"%s\": expected IP or "
						   "IP:PORT",
						   i, resolvers->items[i]->str);
				hezo_egress_clear(&e);
				return r;
			}
			e.nresolvers++;
		}
	}
	if (ranges && ranges->len) {
		e.ranges = calloc(ranges->len, sizeof(*e.ranges));
		if (!e.ranges) {
			hezo_egress_clear(&e);
			return hezo_error_set(err, ENOMEM, "egress.allowRanges: out of memory");
		}
		HEZO_JSON_FOREACH (i, ranges) {
			if (hezo_cidr_parse(ranges->items[i]->str, &e.ranges[i]) < 0) {
				r = hezo_error_set(err, EINVAL,
						   "egress.allowRanges[%zu]: \"%s\": not a CIDR", i,
						   ranges->items[i]->str);
				hezo_egress_clear(&e);
				return r;
			}
			e.nranges++;
		}
	}
	*out = e;
	return 0;
}

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

bool hezo_egress_name_allowed(const struct hezo_egress *e, const char *name, uint16_t port)
{
	for (size_t i = 0; i < e->nnames; i++) {
		const struct hezo_allow_name *a = &e->names[i];

		if (!name_matches(a, name))
			continue;
		if (port == 0)
			return true;
		if (a->port ? a->port == port : (port == 80 || port == 443))
			return true;
	}
	return false;
}

bool hezo_egress_cidr_allowed(const struct hezo_egress *e, int family, const uint8_t *addr,
			      uint16_t port)
{
	for (size_t i = 0; i < e->ncidrs; i++) {
		const struct hezo_cidr *c = &e->cidrs[i];

		if ((c->port ? c->port == port : (port == 80 || port == 443)) &&
		    hezo_cidr_contains(c, family, addr))
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
