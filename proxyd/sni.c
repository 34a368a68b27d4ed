/*
 * The server name of a TLS ClientHello, read from the first bytes a client sends. Pure; the
 * handshake message may span several records and is put back together in a bounded stack buffer.
 */
#include <errno.h>
#include <string.h>

#include "proxyd-parse.h"

#define HS_MAX	      16384
#define RECORD_MAX    (16384 + 2048)
#define EXT_SNI	      0x0000
#define EXT_ECH	      0xfe0d
#define EXT_ECH_DRAFT 0xff02

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Walk the ClientHello body (after the 4-byte handshake header). */
static int parse_hello(const uint8_t *b, size_t len, char out[HEZO_NAME_MAX])
{
	size_t off = 0, n, ext_end;
	bool have_sni = false;

	if (len < 2 + 32 + 1)
		return -EINVAL;
	if (b[0] != 3)
		return -EINVAL;
	off = 2 + 32;
	n = b[off++]; /* session id */
	if (n > 32 || off + n > len)
		return -EINVAL;
	off += n;
	if (off + 2 > len)
		return -EINVAL;
	n = get16(b + off); /* cipher suites */
	off += 2;
	if (n < 2 || n % 2 || off + n > len)
		return -EINVAL;
	off += n;
	if (off + 1 > len)
		return -EINVAL;
	n = b[off++]; /* compression methods */
	if (n < 1 || off + n > len)
		return -EINVAL;
	off += n;
	if (off == len)
		return 0; /* no extensions at all */
	if (off + 2 > len)
		return -EINVAL;
	n = get16(b + off);
	off += 2;
	if (off + n != len)
		return -EINVAL;
	ext_end = off + n;
	while (off < ext_end) {
		uint16_t type, elen;

		if (off + 4 > ext_end)
			return -EINVAL;
		type = get16(b + off);
		elen = get16(b + off + 2);
		off += 4;
		if (off + elen > ext_end)
			return -EINVAL;
		if (type == EXT_ECH || type == EXT_ECH_DRAFT)
			return -EPROTO;
		if (type == EXT_SNI) {
			size_t p = off, list_end;

			if (have_sni || elen < 2)
				return -EINVAL;
			list_end = off + 2 + get16(b + off);
			if (list_end != off + elen)
				return -EINVAL;
			p += 2;
			while (p < list_end) {
				uint8_t ntype;
				uint16_t nlen;

				if (p + 3 > list_end)
					return -EINVAL;
				ntype = b[p];
				nlen = get16(b + p + 1);
				p += 3;
				if (p + nlen > list_end)
					return -EINVAL;
				if (ntype == 0) {
					if (have_sni || nlen == 0 || nlen >= HEZO_NAME_MAX)
						return -EINVAL;
					for (size_t i = 0; i < nlen; i++)
						if (b[p + i] <= 0x20 || b[p + i] >= 0x7f)
							return -EINVAL;
					memcpy(out, b + p, nlen);
					out[nlen] = '\0';
					have_sni = true;
				}
				p += nlen;
			}
			if (!have_sni)
				return -EINVAL;
		}
		off += elen;
	}
	return have_sni ? 1 : 0;
}

int hezo_sni_parse(const uint8_t *buf, size_t len, char out[HEZO_NAME_MAX])
{
	uint8_t hs[4 + HS_MAX];
	size_t have = 0, need = 4, off = 0;

	while (have < need) {
		size_t rlen, take;

		if (off + 5 > len) {
			/* Refuse early what can never become a handshake record. */
			if (off < len && buf[off] != 0x16)
				return -EINVAL;
			if (off + 1 < len && buf[off + 1] != 3)
				return -EINVAL;
			return -EAGAIN;
		}
		if (buf[off] != 0x16 || buf[off + 1] != 3 || buf[off + 2] > 4)
			return -EINVAL;
		rlen = get16(buf + off + 3);
		if (rlen == 0 || rlen > RECORD_MAX)
			return -EINVAL;
		off += 5;
		take = rlen;
		if (off + take > len)
			take = len - off; /* partial record: use what is there */
		if (have + take > sizeof(hs))
			return -E2BIG;
		memcpy(hs + have, buf + off, take);
		have += take;
		if (have >= 4 && need == 4) {
			if (hs[0] != 1)
				return -EINVAL; /* not a ClientHello */
			need = 4 + ((size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3]);
			if (need - 4 > HS_MAX)
				return -E2BIG;
		}
		if (take < rlen && have < need)
			return -EAGAIN;
		off += take;
	}
	return parse_hello(hs + 4, need - 4, out);
}
