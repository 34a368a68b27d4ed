/*
 * DNS messages as proxyd sees them: parse a client's question, build error answers and upstream
 * queries, and rebuild an upstream answer keeping only what a container may learn. Pure.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "proxyd-parse.h"

#define MAX_POINTERS  64
#define MAX_CHAIN     16
#define FLAG_QR	      0x8000
#define FLAG_AA	      0x0400
#define FLAG_TC	      0x0200
#define FLAG_RD	      0x0100
#define FLAG_RA	      0x0080
#define OPCODE(flags) (((flags) >> 11) & 0xf)
#define RCODE(flags)  ((flags)&0xf)
#define OPT_RR_LEN    11

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

int hezo_dns_read_name(const uint8_t *msg, size_t len, size_t *off, char out[HEZO_NAME_MAX])
{
	size_t pos = *off, end = 0, o = 0, wire = 0;
	size_t floor_pos = pos; /* a pointer must land strictly before this */
	unsigned jumps = 0;
	bool jumped = false;

	for (;;) {
		uint8_t l;

		if (pos >= len)
			return -EBADMSG;
		l = msg[pos];
		if ((l & 0xc0) == 0xc0) {
			size_t target;

			if (pos + 1 >= len)
				return -EBADMSG;
			target = (size_t)(l & 0x3f) << 8 | msg[pos + 1];
			if (!jumped)
				end = pos + 2;
			jumped = true;
			/* Strictly backwards and never into the header: no loops, no games. */
			if (target >= floor_pos || target < HEZO_DNS_HEADER ||
			    ++jumps > MAX_POINTERS)
				return -EBADMSG;
			floor_pos = target;
			pos = target;
			continue;
		}
		if (l & 0xc0)
			return -EBADMSG; /* 0x40 / 0x80: extended label types, not used */
		if (l == 0) {
			if (!jumped)
				end = pos + 1;
			break;
		}
		if (pos + 1 + l > len)
			return -EBADMSG;
		wire += 1 + l;
		if (wire + 1 > 255)
			return -EBADMSG;
		if (o)
			out[o++] = '.';
		for (size_t i = 0; i < l; i++) {
			uint8_t c = msg[pos + 1 + i];

			if (c <= 0x20 || c >= 0x7f || c == '.')
				return -EINVAL;
			if (c >= 'A' && c <= 'Z')
				c = (uint8_t)(c - 'A' + 'a');
			out[o++] = (char)c;
		}
		pos += 1 + l;
	}
	out[o] = '\0';
	*off = end;
	return 0;
}

int hezo_dns_write_name(const char *name, uint8_t *out, size_t outsz)
{
	size_t o = 0;
	const char *p = name;

	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		if (l == 0 || l > 63)
			return -EINVAL;
		if (o + 1 + l + 1 > outsz)
			return -ENOSPC;
		out[o++] = (uint8_t)l;
		memcpy(out + o, p, l);
		o += l;
		p += l;
		if (*p == '.')
			p++;
	}
	if (o + 1 > outsz)
		return -ENOSPC;
	out[o++] = 0;
	if (o > 255)
		return -EINVAL;
	return (int)o;
}

/* Skip a resource record at *off; report its type/class/rdata position. */
static int skip_rr(const uint8_t *msg, size_t len, size_t *off, char name[HEZO_NAME_MAX],
		   uint16_t *type, uint16_t *cls, uint32_t *ttl, size_t *rdoff, uint16_t *rdlen)
{
	int r = hezo_dns_read_name(msg, len, off, name);

	if (r == -EINVAL)
		r = -EBADMSG;
	if (r < 0)
		return r;
	if (*off + 10 > len)
		return -EBADMSG;
	*type = get16(msg + *off);
	*cls = get16(msg + *off + 2);
	*ttl = get32(msg + *off + 4);
	*rdlen = get16(msg + *off + 8);
	*rdoff = *off + 10;
	if (*rdoff + *rdlen > len)
		return -EBADMSG;
	*off = *rdoff + *rdlen;
	return 0;
}

int hezo_dns_parse_query(const uint8_t *msg, size_t len, struct hezo_dns_query *q)
{
	size_t off = HEZO_DNS_HEADER;
	uint16_t flags, qd, an, ns, ar;
	int r;

	memset(q, 0, sizeof(*q));
	if (len < HEZO_DNS_HEADER)
		return -EBADMSG;
	q->id = get16(msg);
	flags = get16(msg + 2);
	qd = get16(msg + 4);
	an = get16(msg + 6);
	ns = get16(msg + 8);
	ar = get16(msg + 10);
	if (flags & FLAG_QR)
		return -EBADMSG;
	q->opcode = (uint8_t)OPCODE(flags);
	q->rd = flags & FLAG_RD;
	if (qd != 1 || an != 0 || ns > 8 || ar > 8)
		return -EBADMSG;
	r = hezo_dns_read_name(msg, len, &off, q->name);
	if (r < 0)
		return r;
	if (off + 4 > len)
		return -EBADMSG;
	q->qtype = get16(msg + off);
	q->qclass = get16(msg + off + 2);
	off += 4;
	q->qend = off;
	for (unsigned i = 0; i < (unsigned)ns + ar; i++) {
		char name[HEZO_NAME_MAX];
		uint16_t type, cls, rdlen;
		uint32_t ttl;
		size_t rdoff;

		r = skip_rr(msg, len, &off, name, &type, &cls, &ttl, &rdoff, &rdlen);
		if (r < 0)
			return r;
		if (i >= ns && type == HEZO_DNS_TYPE_OPT && name[0] == '\0')
			q->edns_size = cls < 512 ? 512 : cls;
	}
	return 0;
}

static int put_opt(uint8_t *out, size_t outsz, size_t o)
{
	if (o + OPT_RR_LEN > outsz)
		return -ENOSPC;
	out[o] = 0; /* root name */
	put16(out + o + 1, HEZO_DNS_TYPE_OPT);
	put16(out + o + 3, HEZO_DNS_EDNS_SIZE);
	put32(out + o + 5, 0);
	put16(out + o + 9, 0);
	return OPT_RR_LEN;
}

/* Header and the client's own question bytes (its letter case is echoed, as 0x20 clients want). */
static int put_head(const uint8_t *query, const struct hezo_dns_query *q, int rcode, bool tc,
		    uint16_t ancount, uint8_t *out, size_t outsz)
{
	uint16_t flags = FLAG_QR | FLAG_RA | (uint16_t)(q->opcode << 11) | (uint16_t)(rcode & 0xf);

	if (q->rd)
		flags |= FLAG_RD;
	if (tc)
		flags |= FLAG_TC;
	if (q->qend > outsz)
		return -ENOSPC;
	put16(out, q->id);
	put16(out + 2, flags);
	put16(out + 4, 1);
	put16(out + 6, ancount);
	put16(out + 8, 0);
	put16(out + 10, q->edns_size ? 1 : 0);
	memcpy(out + HEZO_DNS_HEADER, query + HEZO_DNS_HEADER, q->qend - HEZO_DNS_HEADER);
	return (int)q->qend;
}

int hezo_dns_build_empty(const uint8_t *query, const struct hezo_dns_query *q, int rcode,
			 uint8_t *out, size_t outsz)
{
	int o = put_head(query, q, rcode, false, 0, out, outsz);
	int r;

	if (o < 0 || !q->edns_size)
		return o;
	r = put_opt(out, outsz, (size_t)o);
	return r < 0 ? r : o + r;
}

int hezo_dns_build_query(uint16_t id, const char *name, uint16_t qtype, uint8_t *out, size_t outsz)
{
	int n, r;
	size_t o;

	if (outsz < HEZO_DNS_HEADER)
		return -ENOSPC;
	put16(out, id);
	put16(out + 2, FLAG_RD);
	put16(out + 4, 1);
	put16(out + 6, 0);
	put16(out + 8, 0);
	put16(out + 10, 1);
	n = hezo_dns_write_name(name, out + HEZO_DNS_HEADER, outsz - HEZO_DNS_HEADER);
	if (n < 0)
		return n;
	o = HEZO_DNS_HEADER + (size_t)n;
	if (o + 4 > outsz)
		return -ENOSPC;
	put16(out + o, qtype);
	put16(out + o + 2, HEZO_DNS_CLASS_IN);
	o += 4;
	r = put_opt(out, outsz, o);
	return r < 0 ? r : (int)(o + (size_t)r);
}

static bool in_chain(char chain[][HEZO_NAME_MAX], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(chain[i], name) == 0)
			return true;
	return false;
}

int hezo_dns_filter_response(const uint8_t *resp, size_t rlen, const uint8_t *query,
			     const struct hezo_dns_query *q, hezo_dns_addr_filter keep,
			     void *userdata, uint8_t *out, size_t outsz, size_t limit,
			     struct hezo_dns_result *res)
{
	char chain[MAX_CHAIN][HEZO_NAME_MAX];
	char name[HEZO_NAME_MAX];
	size_t nchain = 1, off = HEZO_DNS_HEADER, answers, o;
	uint16_t flags, an, ancount = 0;
	bool grew;
	int r, rcode;

	memset(res, 0, sizeof(*res));
	if (rlen < HEZO_DNS_HEADER)
		return -EBADMSG;
	flags = get16(resp + 2);
	if (!(flags & FLAG_QR) || get16(resp + 4) != 1)
		return -EBADMSG;
	an = get16(resp + 6);
	r = hezo_dns_read_name(resp, rlen, &off, name);
	if (r < 0)
		return -EBADMSG;
	if (off + 4 > rlen || strcmp(name, q->name) != 0 || get16(resp + off) != q->qtype ||
	    get16(resp + off + 2) != q->qclass)
		return -EBADMSG;
	off += 4;
	answers = off;

	rcode = RCODE(flags);
	if (rcode != HEZO_DNS_NOERROR && rcode != HEZO_DNS_NXDOMAIN)
		rcode = HEZO_DNS_SERVFAIL;
	res->rcode = rcode;
	if (rcode == HEZO_DNS_SERVFAIL)
		an = 0;

	/* First the chain of names: CNAMEs may come in any order. */
	strcpy(chain[0], q->name);
	do {
		grew = false;
		off = answers;
		for (unsigned i = 0; i < an; i++) {
			uint16_t type, cls, rdlen;
			uint32_t ttl;
			size_t rdoff, t;
			char target[HEZO_NAME_MAX];

			r = skip_rr(resp, rlen, &off, name, &type, &cls, &ttl, &rdoff, &rdlen);
			if (r < 0)
				return r;
			if (type != HEZO_DNS_TYPE_CNAME || cls != HEZO_DNS_CLASS_IN ||
			    !in_chain(chain, nchain, name))
				continue;
			t = rdoff;
			r = hezo_dns_read_name(resp, rlen, &t, target);
			if (r < 0 || t != rdoff + rdlen)
				return -EBADMSG;
			if (!in_chain(chain, nchain, target)) {
				if (nchain == MAX_CHAIN)
					return -EBADMSG;
				strcpy(chain[nchain++], target);
				grew = true;
			}
		}
	} while (grew);

	/* Then write the records we keep, every name uncompressed. */
	r = put_head(query, q, rcode, false, 0, out, outsz);
	if (r < 0)
		return r;
	o = (size_t)r;
	off = answers;
	for (unsigned i = 0; i < an; i++) {
		uint16_t type, cls, rdlen;
		uint32_t ttl;
		size_t rdoff, t;
		uint8_t rdata[256];
		size_t rdata_len;
		int n;

		r = skip_rr(resp, rlen, &off, name, &type, &cls, &ttl, &rdoff, &rdlen);
		if (r < 0)
			return r;
		if (cls != HEZO_DNS_CLASS_IN || !in_chain(chain, nchain, name))
			continue;
		if (ttl > HEZO_DNS_TTL_CAP)
			ttl = HEZO_DNS_TTL_CAP;
		if (type == HEZO_DNS_TYPE_CNAME) {
			char target[HEZO_NAME_MAX];

			t = rdoff;
			if (hezo_dns_read_name(resp, rlen, &t, target) < 0)
				return -EBADMSG;
			n = hezo_dns_write_name(target, rdata, sizeof(rdata));
			if (n < 0)
				return -EBADMSG;
			rdata_len = (size_t)n;
		} else if (type == q->qtype &&
			   (type == HEZO_DNS_TYPE_A || type == HEZO_DNS_TYPE_AAAA)) {
			int family = type == HEZO_DNS_TYPE_A ? AF_INET : AF_INET6;
			size_t alen = type == HEZO_DNS_TYPE_A ? 4 : 16;

			if (rdlen != alen)
				return -EBADMSG;
			if (keep && !keep(family, resp + rdoff, userdata)) {
				res->nremoved++;
				continue;
			}
			if (res->naddrs < HEZO_DNS_MAX_ADDRS) {
				struct hezo_dns_addr *a = &res->addrs[res->naddrs++];

				a->family = family;
				memcpy(a->addr, resp + rdoff, alen);
				a->ttl = ttl;
			} else {
				continue; /* more than we pin: the client does not get it either */
			}
			memcpy(rdata, resp + rdoff, alen);
			rdata_len = alen;
		} else {
			continue;
		}
		n = hezo_dns_write_name(name, out + o, outsz > o ? outsz - o : 0);
		if (n < 0)
			return n == -ENOSPC ? n : -EBADMSG;
		o += (size_t)n;
		if (o + 10 + rdata_len > outsz)
			return -ENOSPC;
		put16(out + o, type);
		put16(out + o + 2, HEZO_DNS_CLASS_IN);
		put32(out + o + 4, ttl);
		put16(out + o + 8, (uint16_t)rdata_len);
		memcpy(out + o + 10, rdata, rdata_len);
		o += 10 + rdata_len;
		ancount++;
	}
	if (q->edns_size) {
		r = put_opt(out, outsz, o);
		if (r < 0)
			return r;
		o += (size_t)r;
	}
	if (o > limit) {
		/* Too long for the client's transport: it retries over TCP. */
		res->truncated = true;
		r = put_head(query, q, rcode, true, 0, out, outsz);
		if (r < 0)
			return r;
		o = (size_t)r;
		if (q->edns_size) {
			r = put_opt(out, outsz, o);
			if (r < 0)
				return r;
			o += (size_t)r;
		}
		return (int)o;
	}
	put16(out + 6, ancount);
	return (int)o;
}
