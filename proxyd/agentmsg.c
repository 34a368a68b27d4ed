/*
 * The ssh-agent protocol's requests as proxyd's agent reads them, and the two kinds of data it
 * may sign: an SSHSIG blob (git's commit and tag signatures through ssh-keygen -Y sign) and an SSH
 * user-authentication request. Pure and allocation-free: every length is checked against what is
 * left, and nothing may follow the last field (no room for data smuggled after a valid prefix).
 */
#include <errno.h>
#include <string.h>

#include "hezo-egress.h"
#include "proxyd-parse.h"

/* A string of the message (pointer and length) off the front of r. */
static bool get_str(struct hezo_ssh_rd *r, const uint8_t **s, size_t *n)
{
	struct hezo_ssh_rd v;

	if (!hezo_ssh_string(r, &v))
		return false;
	*s = v.p;
	*n = v.len;
	return true;
}

static bool is(const uint8_t *s, size_t n, const char *v)
{
	return n == strlen(v) && memcmp(s, v, n) == 0;
}

long hezo_agent_frame(const uint8_t *buf, size_t len, uint8_t *type, const uint8_t **body,
		      size_t *blen)
{
	struct hezo_ssh_rd r = {buf, len};
	uint32_t n;

	if (!hezo_ssh_u32(&r, &n))
		return -EAGAIN;
	if (n == 0 || n > HEZO_AGENT_MSG_MAX)
		return -E2BIG;
	if (r.len < n)
		return -EAGAIN;
	*type = r.p[0];
	*body = r.p + 1;
	*blen = n - 1;
	return (long)n + 4;
}

int hezo_agent_sign_parse(const uint8_t *body, size_t len, struct hezo_agent_sign *out)
{
	struct hezo_ssh_rd r = {body, len};

	if (!get_str(&r, &out->key, &out->keylen) || !get_str(&r, &out->data, &out->datalen) ||
	    !hezo_ssh_u32(&r, &out->flags) || r.len != 0)
		return -EINVAL;
	return 0;
}

int hezo_sshsig_parse(const uint8_t *d, size_t len, struct hezo_sshsig *out)
{
	struct hezo_ssh_rd r = {d, len};
	const uint8_t *res, *alg;
	size_t reslen, alglen;

	if (len < 6 || memcmp(d, "SSHSIG", 6) != 0)
		return -EINVAL;
	r.p += 6;
	r.len -= 6;
	if (!get_str(&r, &out->ns, &out->nslen) || out->nslen == 0 || !get_str(&r, &res, &reslen) ||
	    reslen != 0 || !get_str(&r, &alg, &alglen) || !get_str(&r, &out->hash, &out->hashlen) ||
	    r.len != 0)
		return -EINVAL;
	if (is(alg, alglen, "sha256") && out->hashlen == 32)
		out->alg = "sha256";
	else if (is(alg, alglen, "sha512") && out->hashlen == 64)
		out->alg = "sha512";
	else
		return -EINVAL;
	return 0;
}

int hezo_userauth_parse(const uint8_t *d, size_t len, struct hezo_userauth *out)
{
	struct hezo_ssh_rd r = {d, len};
	const uint8_t *s;
	size_t n;
	bool hostbound;

	memset(out, 0, sizeof(*out));
	/* An exchange hash: SHA-1 to SHA-512, 20 to 64 bytes. */
	if (!get_str(&r, &out->session, &out->sessionlen) || out->sessionlen < 20 ||
	    out->sessionlen > 64)
		return -EINVAL;
	if (r.len < 1 || r.p[0] != 50) /* SSH_MSG_USERAUTH_REQUEST */
		return -EINVAL;
	r.p++;
	r.len--;
	if (!get_str(&r, &out->user, &out->userlen) || !get_str(&r, &s, &n) ||
	    !is(s, n, "ssh-connection") || !get_str(&r, &s, &n))
		return -EINVAL;
	hostbound = is(s, n, "publickey-hostbound-v00@openssh.com");
	if (!hostbound && !is(s, n, "publickey"))
		return -EINVAL;
	if (r.len < 1 || r.p[0] != 1) /* TRUE: a signature follows, not a query */
		return -EINVAL;
	r.p++;
	r.len--;
	if (!get_str(&r, &out->alg, &out->alglen) || !get_str(&r, &out->key, &out->keylen))
		return -EINVAL;
	if (hostbound && !get_str(&r, &out->hostkey, &out->hostkeylen))
		return -EINVAL;
	return r.len == 0 ? 0 : -EINVAL;
}
