/*
 * The allow-list grammar, one entry at a time: names, wildcards, addresses, CIDRs and ports in
 * allow; resolvers; allowRanges. The only copy: policy check, the hook and proxyd all call these.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "hezo-egress.h"

static int fail(const char **why, const char *msg)
{
	if (why)
		*why = msg;
	return -EINVAL;
}

/* 1 to 5 decimal digits, 1..65535. */
static int parse_port(const char *s, size_t len, uint16_t *port)
{
	unsigned v = 0;

	if (len == 0 || len > 5)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

/* An address of len bytes, no brackets: AF_INET (dotted quad only), AF_INET6 or -EINVAL. */
static int parse_ip(const char *s, size_t len, uint8_t *bin)
{
	char buf[64];

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET, buf, bin) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, buf, bin) == 1)
		return AF_INET6;
	return -EINVAL;
}

/* ADDR of alen bytes with, when has_prefix, the prefix digits p[0..plen). */
static int make_cidr(const char *a, size_t alen, const char *p, size_t plen, bool has_prefix,
		     struct hezo_cidr *out)
{
	unsigned prefix = 0, bits;
	int fam = parse_ip(a, alen, out->addr);

	if (fam < 0)
		return -EINVAL;
	out->family = fam;
	bits = fam == AF_INET ? 32 : 128;
	if (!has_prefix) {
		out->prefix = (uint8_t)bits;
		return 0;
	}
	if (plen == 0 || plen > 3)
		return -EINVAL;
	for (size_t i = 0; i < plen; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EINVAL;
		prefix = prefix * 10 + (unsigned)(p[i] - '0');
	}
	if (prefix > bits)
		return -EINVAL;
	/* Host bits set ("10.1.2.3/8") are a typo more often than not: refuse them. */
	for (unsigned b = prefix; b < bits; b++)
		if (out->addr[b / 8] & (0x80 >> (b % 8)))
			return -EINVAL;
	out->prefix = (uint8_t)prefix;
	return 0;
}

static size_t count_char(const char *s, char c)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
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

int hezo_cidr_parse(const char *s, struct hezo_cidr *out)
{
	const char *slash = strchr(s, '/');
	size_t len = strlen(s);

	memset(out, 0, sizeof(*out));
	if (!slash)
		return make_cidr(s, len, NULL, 0, false, out);
	return make_cidr(s, (size_t)(slash - s), slash + 1, len - (size_t)(slash - s) - 1, true,
			 out);
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

/* After an address (and prefix): nothing, or ":PORT". */
static int parse_tail(const char *rest, uint16_t *port, const char **why)
{
	*port = 0;
	if (*rest == '\0')
		return 0;
	if (*rest != ':')
		return fail(why, "expected ADDRESS[/PREFIX][:PORT]");
	if (parse_port(rest + 1, strlen(rest + 1), port) < 0)
		return fail(why, "bad port (1-65535)");
	return 0;
}

static const char *digits_end(const char *p)
{
	while (*p >= '0' && *p <= '9')
		p++;
	return p;
}

/*
 * Address entries: "[V6]", "[V6]:P", "[V6]/N:P", "[V6/N]:P", "V4[/N][:P]", "V6/N[:P]" and a bare
 * "V6" (its colons leave no room for a port).
 */
static int parse_address_entry(const char *s, struct hezo_cidr *cidr, const char **why)
{
	const char *a, *p = NULL, *rest;
	size_t alen, plen = 0;
	uint16_t port;
	int r;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		const char *slash;

		if (!close)
			return fail(why, "missing ']'");
		a = s + 1;
		alen = (size_t)(close - a);
		slash = memchr(a, '/', alen);
		rest = close + 1;
		if (slash) {
			p = slash + 1;
			plen = (size_t)(close - p);
			alen = (size_t)(slash - a);
		} else if (*rest == '/') {
			p = rest + 1;
			rest = digits_end(p);
			plen = (size_t)(rest - p);
		}
		r = parse_tail(rest, &port, why);
		if (r < 0)
			return r;
		if (make_cidr(a, alen, p, plen, p != NULL, cidr) < 0)
			return fail(why, "bad address or CIDR (no host bits may be set)");
		if (cidr->family != AF_INET6)
			return fail(why, "bad address: brackets hold an IPv6 address");
	} else if (strchr(s, '/')) {
		const char *slash = strchr(s, '/');

		a = s;
		alen = (size_t)(slash - s);
		p = slash + 1;
		rest = digits_end(p);
		plen = (size_t)(rest - p);
		r = parse_tail(rest, &port, why);
		if (r < 0)
			return r;
		if (make_cidr(a, alen, p, plen, true, cidr) < 0)
			return fail(why, "bad address or CIDR (no host bits may be set)");
	} else {
		port = 0;
		if (make_cidr(s, strlen(s), NULL, 0, false, cidr) < 0 || cidr->family != AF_INET6)
			return fail(why, "bad address");
	}
	cidr->port = port;
	return 0;
}

/* The last label of a name is all digits: "300.1.1.1" is a mistyped address, not a name. */
static bool ends_in_number(const char *name)
{
	const char *last = strrchr(name, '.');

	last = last ? last + 1 : name;
	for (; *last; last++)
		if (*last < '0' || *last > '9')
			return false;
	return true;
}

int hezo_allow_parse(const char *s, struct hezo_allow_name *name, struct hezo_cidr *cidr,
		     bool *is_cidr, const char **why)
{
	char host[HEZO_EGRESS_ENTRY_MAX];
	const char *colon, *h;
	size_t len = strlen(s), hlen;
	uint16_t port = 0;
	int r;

	memset(name, 0, sizeof(*name));
	memset(cidr, 0, sizeof(*cidr));
	*is_cidr = false;
	if (len == 0)
		return fail(why, "empty");
	if (len >= HEZO_EGRESS_ENTRY_MAX)
		return fail(why, "too long");
	if (s[0] == '[' || strchr(s, '/') || count_char(s, ':') > 1) {
		r = parse_address_entry(s, cidr, why);
		if (r < 0)
			memset(cidr, 0, sizeof(*cidr));
		else
			*is_cidr = true;
		return r;
	}
	colon = strchr(s, ':');
	hlen = colon ? (size_t)(colon - s) : len;
	if (colon && parse_port(colon + 1, strlen(colon + 1), &port) < 0)
		return fail(why, "bad port (1-65535)");
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	if (make_cidr(host, hlen, NULL, 0, false, cidr) == 0 && cidr->family == AF_INET) {
		cidr->port = port;
		*is_cidr = true;
		return 0;
	}
	memset(cidr, 0, sizeof(*cidr));
	h = host;
	if (strncmp(h, "*.", 2) == 0) {
		name->wildcard = true;
		h += 2;
	}
	if (strchr(h, '*'))
		return fail(why, "'*' is only allowed as a whole first label (*.example.com)");
	r = hezo_name_normalize(h, strlen(h), name->name);
	if (r == -EILSEQ)
		return fail(why, "non-ASCII name; write it in punycode (xn--...)");
	if (r < 0)
		return fail(why, "not a valid host name");
	if (ends_in_number(name->name))
		return fail(why,
			    "not a valid host name (it ends in a number: a mistyped address?)");
	if (name->wildcard && !strchr(name->name, '.'))
		return fail(why, "wildcard too broad (*.NAME needs a NAME of two labels or more)");
	name->port = port;
	return 0;
}

int hezo_allow_normalize(const char *s, char out[HEZO_EGRESS_ENTRY_MAX], const char **why)
{
	struct hezo_allow_name n;
	struct hezo_cidr c;
	bool is_cidr;
	size_t i;
	int r = hezo_allow_parse(s, &n, &c, &is_cidr, why);

	if (r < 0)
		return r;
	if (!is_cidr) {
		if (n.port)
			snprintf(out, HEZO_EGRESS_ENTRY_MAX, "%s%s:%u", n.wildcard ? "*." : "",
				 n.name, n.port);
		else
			snprintf(out, HEZO_EGRESS_ENTRY_MAX, "%s%s", n.wildcard ? "*." : "",
				 n.name);
		return 0;
	}
	for (i = 0; s[i]; i++)
		out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
	out[i] = '\0';
	return 0;
}

int hezo_resolver_parse(const char *s, struct hezo_resolver *out, const char **why)
{
	const char *a = s, *rest = "";
	size_t alen = strlen(s);
	uint16_t port = 53;
	int fam;

	memset(out, 0, sizeof(*out));
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close)
			return fail(why, "missing ']'");
		a = s + 1;
		alen = (size_t)(close - a);
		rest = close + 1;
	} else if (count_char(s, ':') == 1) {
		const char *colon = strchr(s, ':');

		alen = (size_t)(colon - s);
		rest = colon;
	}
	if (*rest == ':') {
		if (parse_port(rest + 1, strlen(rest + 1), &port) < 0)
			return fail(why, "bad port (1-65535)");
	} else if (*rest) {
		return fail(why, "expected IP or IP:PORT");
	}
	fam = parse_ip(a, alen, out->addr);
	if (fam < 0 || (s[0] == '[' && fam != AF_INET6))
		return fail(why, "expected IP or IP:PORT");
	out->family = fam;
	out->port = port;
	return 0;
}

int hezo_range_parse(const char *s, struct hezo_cidr *out, const char **why)
{
	if (!strchr(s, '/') || hezo_cidr_parse(s, out) < 0) {
		memset(out, 0, sizeof(*out));
		return fail(why, "not a CIDR (ADDRESS/PREFIX, no host bits set)");
	}
	return 0;
}
