/*
 * libFuzzer target for the ssh agent's parsers (proxyd/agentmsg.c): the framing of the client's
 * byte stream, a SIGN_REQUEST's body, and the two kinds of data the agent may sign, an SSHSIG blob
 * and an SSH user-authentication request. The first byte's low two bits choose what the rest is:
 * 0 a client's stream, fed as the agent reads it (its high bits seed the sizes of the reads),
 * 1 a SIGN_REQUEST's body, 2 or 3 the data to be signed.
 *
 * Invariants: a frame is exactly what its length says, -EAGAIN only while incomplete, and the
 * stream's frames do not depend on how it was split into reads; a refusal is -EINVAL (-E2BIG or
 * -EAGAIN for the framing) and nothing else; every parse that succeeds is the input, byte for byte,
 * once its fields are written back, so the namespace and the host key it names are the input's
 * own; no input is both an SSHSIG blob and a userauth request (the agent tries them in turn);
 * each parser reads its input from an allocation of exactly that size, so ASan sees any byte read
 * past it.
 *
 * Seeds (tests/fuzz/corpus/agent): requests a real ssh-keygen -Y sign (namespaces git and file,
 * sha256 and sha512) and ssh (three key exchanges, so session ids of 32, 48 and 64 bytes, with
 * OpenSSH's session-bind extension) sent to ssh-agent through a logging proxy, each as a stream,
 * as a body and as the data signed; one whole session's stream (read whole and in reads of 1 to
 * 7 bytes); and one userauth request rewritten as plain "publickey" (no host key).
 *
 * Run: FUZZ_SMOKE_TARGETS=agent FUZZ_SMOKE_SECONDS=600 tests/fuzz/smoke.sh /tmp/fz (builds it
 * with clang-14, libFuzzer, ASan and UBSan over the whole tree).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxyd-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The size of the agent's read buffer (proxyd/agent.c): the longest frame fits it whole. */
#define CONN_BUF   (HEZO_AGENT_MSG_MAX + 4)
#define FRAMES_MAX 64

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Writes back what a parse found, to compare with what it read. */
struct wr {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct wr *w, const void *s, size_t n)
{
	if (w->len + n > w->cap)
		abort();
	memcpy(w->p + w->len, s, n);
	w->len += n;
}

static void put_str(struct wr *w, const void *s, size_t n)
{
	uint8_t h[4] = {(uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};

	put(w, h, 4);
	put(w, s, n);
}

/* Is [s, s + n) inside [d, d + len)? */
static bool inside(const uint8_t *s, size_t n, const uint8_t *d, size_t len)
{
	return s >= d && n <= len && (size_t)(s - d) <= len - n;
}

static void same(const struct wr *w, const uint8_t *d, size_t len)
{
	if (w->len != len || memcmp(w->p, d, len) != 0)
		abort();
}

/* Returns whether it parsed. */
static bool check_sshsig(const uint8_t *d, size_t len)
{
	struct hezo_sshsig s;
	uint8_t *back;
	struct wr w;
	int r = hezo_sshsig_parse(d, len, &s);

	if (r == -EINVAL)
		return false;
	if (r != 0)
		abort();
	if (!inside(s.ns, s.nslen, d, len) || !inside(s.hash, s.hashlen, d, len) || s.nslen == 0 ||
	    !s.alg)
		abort();
	if (!((strcmp(s.alg, "sha256") == 0 && s.hashlen == 32) ||
	      (strcmp(s.alg, "sha512") == 0 && s.hashlen == 64)))
		abort();
	back = malloc(len);
	if (!back)
		abort();
	w = (struct wr){back, 0, len};
	put(&w, "SSHSIG", 6);
	put_str(&w, s.ns, s.nslen);
	put_str(&w, "", 0);
	put_str(&w, s.alg, strlen(s.alg));
	put_str(&w, s.hash, s.hashlen);
	same(&w, d, len);
	free(back);
	return true;
}

static bool check_userauth(const uint8_t *d, size_t len)
{
	static const char hostbound[] = "publickey-hostbound-v00@openssh.com";
	struct hezo_userauth u;
	const uint8_t one = 1, req = 50;
	uint8_t *back;
	struct wr w;
	int r = hezo_userauth_parse(d, len, &u);

	if (r == -EINVAL)
		return false;
	if (r != 0)
		abort();
	if (!inside(u.session, u.sessionlen, d, len) || !inside(u.user, u.userlen, d, len) ||
	    !inside(u.alg, u.alglen, d, len) || !inside(u.key, u.keylen, d, len) ||
	    u.sessionlen < 20 || u.sessionlen > 64)
		abort();
	if (u.hostkey && !inside(u.hostkey, u.hostkeylen, d, len))
		abort();
	if (!u.hostkey && u.hostkeylen)
		abort();
	back = malloc(len);
	if (!back)
		abort();
	w = (struct wr){back, 0, len};
	put_str(&w, u.session, u.sessionlen);
	put(&w, &req, 1);
	put_str(&w, u.user, u.userlen);
	put_str(&w, "ssh-connection", 14);
	if (u.hostkey)
		put_str(&w, hostbound, strlen(hostbound));
	else
		put_str(&w, "publickey", 9);
	put(&w, &one, 1);
	put_str(&w, u.alg, u.alglen);
	put_str(&w, u.key, u.keylen);
	if (u.hostkey)
		put_str(&w, u.hostkey, u.hostkeylen);
	same(&w, d, len);
	free(back);
	return true;
}

/* The data of a sign request, from an allocation of its own size as the agent's judge reads it. */
static void check_data(const uint8_t *d, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);
	bool sig, ua;

	if (!copy)
		abort();
	if (len)
		memcpy(copy, d, len);
	sig = check_sshsig(copy, len);
	ua = check_userauth(copy, len);
	if (sig && ua)
		abort();
	free(copy);
}

static void check_sign(const uint8_t *body, size_t len)
{
	struct hezo_agent_sign q;
	uint8_t *copy = malloc(len ? len : 1);
	int r;

	if (!copy)
		abort();
	if (len)
		memcpy(copy, body, len);
	r = hezo_agent_sign_parse(copy, len, &q);
	if (r == 0) {
		/* string key, string data, uint32 flags: nothing else. */
		if (!inside(q.key, q.keylen, copy, len) || !inside(q.data, q.datalen, copy, len) ||
		    q.key != copy + 4 || q.data != q.key + q.keylen + 4 ||
		    4 + q.keylen + 4 + q.datalen + 4 != len || q.flags != be32(q.data + q.datalen))
			abort();
		check_data(q.data, q.datalen);
	} else if (r != -EINVAL) {
		abort();
	}
	free(copy);
}

struct frame {
	uint8_t type;
	size_t off, blen; /* the body, from the start of the stream */
};

/* One frame at buf (len bytes); its size, or 0 when the stream must wait or the agent hangs up. */
static size_t frame(const uint8_t *buf, size_t len, uint8_t *type, size_t *blen, bool *bad)
{
	const uint8_t *body = NULL;
	long m = hezo_agent_frame(buf, len, type, &body, blen);
	uint32_t n = len >= 4 ? be32(buf) : 0;

	*bad = false;
	if (m == -EAGAIN) {
		if (len >= 4 && n != 0 && n <= HEZO_AGENT_MSG_MAX && n <= len - 4)
			abort();
		return 0;
	}
	if (m == -E2BIG) {
		if (len < 4 || (n != 0 && n <= HEZO_AGENT_MSG_MAX))
			abort();
		*bad = true;
		return 0;
	}
	if (m <= 0 || len < 4 || (size_t)m != (size_t)n + 4 || (size_t)m > len || n == 0 ||
	    n > HEZO_AGENT_MSG_MAX || *type != buf[4] || body != buf + 5 || *blen != n - 1)
		abort();
	return (size_t)m;
}

/* The stream as one buffer: the frames it holds, and whether it ended on one too long. */
static size_t frames_whole(const uint8_t *s, size_t len, struct frame *f, bool *bad)
{
	size_t off = 0, n = 0, m;

	*bad = false;
	while (n < FRAMES_MAX && (m = frame(s + off, len - off, &f[n].type, &f[n].blen, bad))) {
		f[n].off = off + 5;
		if (f[n].type == HEZO_AGENTC_SIGN_REQUEST)
			check_sign(s + off + 5, f[n].blen);
		off += m;
		n++;
	}
	return n;
}

/* The stream as the agent reads it: reads of sizes drawn from seed into its fixed buffer, each
 * read followed by every whole frame the buffer holds, the rest moved to its front. */
static void stream(const uint8_t *s, size_t len, uint8_t seed)
{
	static struct frame whole[FRAMES_MAX], got[FRAMES_MAX];
	static uint8_t buf[CONN_BUF];
	size_t nwhole, ngot = 0, fill = 0, in = 0;
	uint32_t rng = seed * 2654435761u + 1;
	bool bad_whole, bad = false;

	nwhole = frames_whole(s, len, whole, &bad_whole);
	while (in < len && !bad && ngot < FRAMES_MAX) {
		size_t room = sizeof(buf) - fill, want, off = 0, m;

		/* A full buffer holds a whole frame, so the agent never reads zero bytes of room.
		 */
		if (room == 0)
			abort();
		rng = rng * 1103515245u + 12345u;
		want = 1 + (rng >> 8) % (seed & 4 ? 7 : 600);
		if (want > room)
			want = room;
		if (want > len - in)
			want = len - in;
		memcpy(buf + fill, s + in, want);
		fill += want;
		in += want;
		while (ngot < FRAMES_MAX &&
		       (m = frame(buf + off, fill - off, &got[ngot].type, &got[ngot].blen, &bad))) {
			size_t at = in - fill + off + 5;

			if (ngot >= nwhole || got[ngot].type != whole[ngot].type ||
			    got[ngot].blen != whole[ngot].blen || at != whole[ngot].off)
				abort();
			off += m;
			ngot++;
		}
		memmove(buf, buf + off, fill - off);
		fill -= off;
	}
	if (ngot != nwhole && ngot < FRAMES_MAX)
		abort();
	if (bad != bad_whole && ngot < FRAMES_MAX)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *rest;
	size_t len;

	if (size < 1)
		return 0;
	len = size - 1;
	rest = malloc(len ? len : 1);
	if (!rest)
		abort();
	if (len)
		memcpy(rest, data + 1, len);
	switch (data[0] & 3) {
	case 0:
		stream(rest, len, data[0] >> 2);
		break;
	case 1:
		check_sign(rest, len);
		break;
	default:
		check_data(rest, len);
		break;
	}
	free(rest);
	return 0;
}
