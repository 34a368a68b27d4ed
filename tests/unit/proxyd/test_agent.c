/* Unit tests for the ssh agent's pure parts (issue 30): proxyd/agentmsg.c's requests and signed
 * data, and egress/keys.c's key section and OpenSSH private key format. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hezo-b64.h"
#include "hezo-egress.h"
#include "proxyd-parse.h"

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void u32(struct buf *b, uint32_t v)
{
	b->b[b->n++] = (uint8_t)(v >> 24);
	b->b[b->n++] = (uint8_t)(v >> 16);
	b->b[b->n++] = (uint8_t)(v >> 8);
	b->b[b->n++] = (uint8_t)v;
}

static void raw(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void str(struct buf *b, const void *p, size_t n)
{
	u32(b, (uint32_t)n);
	raw(b, p, n);
}

static void cstr(struct buf *b, const char *s)
{
	str(b, s, strlen(s));
}

static void sshsig(struct buf *b, const char *ns, const char *reserved, const char *alg,
		   size_t hlen)
{
	uint8_t h[64] = {1};

	b->n = 0;
	raw(b, "SSHSIG", 6);
	cstr(b, ns);
	cstr(b, reserved);
	cstr(b, alg);
	str(b, h, hlen);
}

static void test_sshsig(void **state)
{
	struct hezo_sshsig s;
	struct buf b;

	sshsig(&b, "git", "", "sha512", 64);
	assert_int_equal(hezo_sshsig_parse(b.b, b.n, &s), 0);
	assert_int_equal(s.nslen, 3);
	assert_memory_equal(s.ns, "git", 3);
	assert_string_equal(s.alg, "sha512");
	assert_int_equal(s.hashlen, 64);
	sshsig(&b, "file", "", "sha256", 32);
	assert_int_equal(hezo_sshsig_parse(b.b, b.n, &s), 0);
	assert_string_equal(s.alg, "sha256");
	/* a byte after the hash, a hash of the other size, a reserved field, no namespace */
	b.b[b.n++] = 0;
	assert_int_equal(hezo_sshsig_parse(b.b, b.n, &s), -EINVAL);
	sshsig(&b, "git", "", "sha512", 32);
	assert_int_equal(hezo_sshsig_parse(b.b, b.n, &s), -EINVAL);
	sshsig(&b, "git", "x", "sha512", 64);
	assert_int_equal(hezo_sshsig_parse(b.b, b.n, &s), -EINVAL);
	sshsig(&b, "", "", "sha512", 64);
	assert_int_equal(hezo_sshsig_parse(b.b, b.n, &s), -EINVAL);
	sshsig(&b, "git", "", "md5", 16);
	assert_int_equal(hezo_sshsig_parse(b.b, b.n, &s), -EINVAL);
	/* the magic is six raw bytes, not a string */
	sshsig(&b, "git", "", "sha512", 64);
	b.b[0] = 's';
	assert_int_equal(hezo_sshsig_parse(b.b, b.n, &s), -EINVAL);
}

static void userauth(struct buf *b, const char *service, const char *method, uint8_t flag,
		     bool hostkey)
{
	uint8_t sid[32] = {7}, key[51] = {0, 0, 0, 11};

	b->n = 0;
	str(b, sid, sizeof(sid));
	b->b[b->n++] = 50;
	cstr(b, "git");
	cstr(b, service);
	cstr(b, method);
	b->b[b->n++] = flag;
	cstr(b, "ssh-ed25519");
	str(b, key, sizeof(key));
	if (hostkey)
		str(b, key, sizeof(key));
}

static void test_userauth(void **state)
{
	struct hezo_userauth u;
	struct buf b;

	userauth(&b, "ssh-connection", "publickey", 1, false);
	assert_int_equal(hezo_userauth_parse(b.b, b.n, &u), 0);
	assert_int_equal(u.sessionlen, 32);
	assert_int_equal(u.keylen, 51);
	assert_null(u.hostkey);
	userauth(&b, "ssh-connection", "publickey-hostbound-v00@openssh.com", 1, true);
	assert_int_equal(hezo_userauth_parse(b.b, b.n, &u), 0);
	assert_int_equal(u.hostkeylen, 51);
	/* the hostbound form without its host key, the plain one with a trailing one */
	userauth(&b, "ssh-connection", "publickey-hostbound-v00@openssh.com", 1, false);
	assert_int_equal(hezo_userauth_parse(b.b, b.n, &u), -EINVAL);
	userauth(&b, "ssh-connection", "publickey", 1, true);
	assert_int_equal(hezo_userauth_parse(b.b, b.n, &u), -EINVAL);
	userauth(&b, "ssh-userauth", "publickey", 1, false);
	assert_int_equal(hezo_userauth_parse(b.b, b.n, &u), -EINVAL);
	userauth(&b, "ssh-connection", "password", 1, false);
	assert_int_equal(hezo_userauth_parse(b.b, b.n, &u), -EINVAL);
	userauth(&b, "ssh-connection", "publickey", 0, false);
	assert_int_equal(hezo_userauth_parse(b.b, b.n, &u), -EINVAL);
	/* an SSHSIG blob is not a userauth request, nor the other way */
	sshsig(&b, "git", "", "sha512", 64);
	assert_int_equal(hezo_userauth_parse(b.b, b.n, &u), -EINVAL);
}

static void test_frame_and_sign(void **state)
{
	struct hezo_agent_sign q;
	const uint8_t *body;
	struct buf b = {.n = 0}, m = {.n = 0};
	size_t blen;
	uint8_t type;

	assert_int_equal(hezo_agent_frame((const uint8_t *)"\0\0", 2, &type, &body, &blen),
			 -EAGAIN);
	u32(&m, 0);
	assert_int_equal(hezo_agent_frame(m.b, m.n, &type, &body, &blen), -E2BIG);
	m.n = 0;
	u32(&m, HEZO_AGENT_MSG_MAX + 1);
	assert_int_equal(hezo_agent_frame(m.b, m.n, &type, &body, &blen), -E2BIG);
	cstr(&b, "KEY");
	cstr(&b, "DATA");
	u32(&b, 0);
	m.n = 0;
	u32(&m, (uint32_t)b.n + 1);
	m.b[m.n++] = HEZO_AGENTC_SIGN_REQUEST;
	raw(&m, b.b, b.n);
	assert_int_equal(hezo_agent_frame(m.b, m.n - 1, &type, &body, &blen), -EAGAIN);
	assert_int_equal(hezo_agent_frame(m.b, m.n, &type, &body, &blen), (long)m.n);
	assert_int_equal(type, HEZO_AGENTC_SIGN_REQUEST);
	assert_int_equal(hezo_agent_sign_parse(body, blen, &q), 0);
	assert_int_equal(q.datalen, 4);
	assert_int_equal(hezo_agent_sign_parse(body, blen - 1, &q), -EINVAL);
}

/* An OpenSSH private key file for seed/pub, as ssh-keygen lays it out (PROTOCOL.key). */
static char *key_file(const uint8_t seed[32], const uint8_t pub[32], const uint8_t shown[32],
		      const char *cipher)
{
	struct buf b = {.n = 0}, p = {.n = 0};
	uint8_t blob[HEZO_ED25519_BLOB_LEN], sk[64];
	static char out[4096];
	size_t o;

	hezo_sshkey_blob(shown, blob);
	memcpy(sk, seed, 32);
	memcpy(sk + 32, pub, 32);
	u32(&p, 0x01020304);
	u32(&p, 0x01020304);
	cstr(&p, "ssh-ed25519");
	str(&p, pub, 32);
	str(&p, sk, 64);
	cstr(&p, "comment");
	for (uint8_t i = 1; p.n % 8; i++)
		p.b[p.n++] = i;
	raw(&b, "openssh-key-v1", 15);
	cstr(&b, cipher);
	cstr(&b, "none");
	cstr(&b, "");
	u32(&b, 1);
	str(&b, blob, sizeof(blob));
	str(&b, p.b, p.n);
	o = (size_t)snprintf(out, sizeof(out), "-----BEGIN OPENSSH PRIVATE KEY-----\n");
	for (size_t i = 0; i < b.n; i += 51) {
		o += hezo_b64_encode(b.b + i, b.n - i < 51 ? b.n - i : 51, out + o);
		out[o++] = '\n';
	}
	snprintf(out + o, sizeof(out) - o, "-----END OPENSSH PRIVATE KEY-----\n");
	return out;
}

static void test_sshkey(void **state)
{
	uint8_t seed[32], pub[32], other[32];
	struct hezo_sshkey k;
	char line[HEZO_KEY_PUBLIC_MAX];
	const char *why = NULL, *text;

	for (int i = 0; i < 32; i++) {
		seed[i] = (uint8_t)i;
		pub[i] = (uint8_t)(100 + i);
		other[i] = (uint8_t)(200 + i);
	}
	text = key_file(seed, pub, pub, "none");
	assert_int_equal(hezo_sshkey_parse(text, strlen(text), &k, &why), 0);
	assert_memory_equal(k.seed, seed, 32);
	assert_memory_equal(k.pub, pub, 32);
	hezo_sshkey_public_line(pub, line);
	assert_int_equal(strlen(line), 12 + HEZO_B64_LEN(HEZO_ED25519_BLOB_LEN));
	assert_int_equal(strncmp(line, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", 37), 0);
	text = key_file(seed, pub, pub, "aes256-ctr");
	assert_int_equal(hezo_sshkey_parse(text, strlen(text), &k, &why), -EOPNOTSUPP);
	assert_string_equal(why, "encrypted with a passphrase");
	/* the public blob names another key than the private section holds */
	text = key_file(seed, pub, other, "none");
	assert_int_equal(hezo_sshkey_parse(text, strlen(text), &k, &why), -EINVAL);
	assert_string_equal(why, "public and private halves differ");
	/* cut short */
	text = key_file(seed, pub, pub, "none");
	assert_int_equal(hezo_sshkey_parse(text, strlen(text) / 2, &k, &why), -EINVAL);
	assert_int_equal(hezo_sshkey_parse("ssh-ed25519 AAAA", 16, &k, &why), -EINVAL);
}

static void test_keys_section(void **state)
{
	struct hezo_json *j = NULL;
	struct hezo_error *err = NULL;
	struct hezo_key *k = NULL;
	size_t n = 0;
	const char *doc = "{\"deploy\":{\"file\":\"/etc/hezo/keys/a\",\"sign\":[\"git\"],"
			  "\"ssh\":[\"git.example.com\",\"gh.example.com:2222\"]}}";

	assert_int_equal(hezo_json_parse(doc, strlen(doc), &j, &err), 0);
	assert_int_equal(hezo_keys_parse(j, false, &k, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_true(hezo_key_signs(&k[0], "git", 3));
	assert_false(hezo_key_signs(&k[0], "file", 4));
	assert_true(hezo_key_names_host(&k[0], "git.example.com", 22));
	assert_false(hezo_key_names_host(&k[0], "git.example.com", 443));
	assert_true(hezo_key_names_host(&k[0], "gh.example.com", 2222));
	assert_false(hezo_key_names_host(&k[0], "gh.example.com", 22));
	assert_false(hezo_key_names_host(&k[0], "other.example.com", 22));
	hezo_keys_free(k, n);
	/* the wire form needs "public"; the policy form refuses it */
	assert_int_equal(hezo_keys_parse(j, true, &k, &n, &err), -EINVAL);
	hezo_error_free(err);
	err = NULL;
	hezo_json_free(j);
	doc = "{\"deploy\":{\"file\":\"/a/../b\",\"sign\":[\"git\"]}}";
	assert_int_equal(hezo_json_parse(doc, strlen(doc), &j, &err), 0);
	assert_int_equal(hezo_keys_parse(j, false, &k, &n, &err), -EINVAL);
	hezo_error_free(err);
	err = NULL;
	hezo_json_free(j);
	doc = "{\"deploy\":{\"file\":\"/a\"}}";
	assert_int_equal(hezo_json_parse(doc, strlen(doc), &j, &err), 0);
	assert_int_equal(hezo_keys_parse(j, false, &k, &n, &err), -EINVAL);
	hezo_error_free(err);
	hezo_json_free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sshsig),	       cmocka_unit_test(test_userauth),
		cmocka_unit_test(test_frame_and_sign), cmocka_unit_test(test_sshkey),
		cmocka_unit_test(test_keys_section),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
