/*
 * The keys contract policy/, the shim, the hook and proxyd share: the JSON form of a key (its
 * file, the SSHSIG namespaces it signs, the hosts it authenticates toward, its public half on the
 * wire), its check against the egress allow list, and OpenSSH's private key format for ed25519.
 * Pure: no I/O; the private half passes through only hezo_sshkey_parse, into the caller's memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hezo-b64.h"
#include "hezo-cleanup.h"
#include "hezo-egress.h"

#define KEY_TEXT_MAX 8192

static bool word_ok(const char *s, size_t n, const char *extra)
{
	if (n == 0 || n >= HEZO_KEY_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || (s[i] && strchr(extra, s[i]))))
			return false;
	return true;
}

void hezo_keys_free(struct hezo_key *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].file);
		for (size_t k = 0; k < v[i].nsign; k++)
			free(v[i].sign[k]);
		free(v[i].sign);
		free(v[i].ssh);
	}
	free(v);
}

/* A public key line as hezo_sshkey_public_line writes it, and nothing else. */
static bool public_ok(const char *s)
{
	static const char pre[] = "ssh-ed25519 ";
	uint8_t blob[HEZO_ED25519_BLOB_LEN + 3], want[HEZO_ED25519_BLOB_LEN];
	long n;

	if (!s || strncmp(s, pre, sizeof(pre) - 1) != 0)
		return false;
	s += sizeof(pre) - 1;
	n = hezo_b64_decode((const uint8_t *)s, strlen(s), blob, sizeof(blob));
	if (n != HEZO_ED25519_BLOB_LEN)
		return false;
	hezo_sshkey_blob(blob + HEZO_ED25519_BLOB_LEN - 32, want);
	return memcmp(blob, want, sizeof(want)) == 0;
}

static int parse_one(const char *name, const struct hezo_json *o, bool with_public,
		     struct hezo_key *k, struct hezo_error **err)
{
	static const char *const known[] = {"file", "sign", "ssh", "public"};
	const struct hezo_json *sign, *ssh, *pub;
	const char *file, *why = NULL;

	if (!word_ok(name, strlen(name), "_.-"))
		return hezo_error_set(err, EINVAL,
				      "keys: a key's name is 1 to 63 of [A-Za-z0-9_.-]");
	snprintf(k->name, sizeof(k->name), "%s", name);
	if (!o || o->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "keys.%s: not an object", name);
	HEZO_JSON_FOREACH (i, o) {
		bool ok = false;

		for (size_t j = 0; j < HEZO_ARRAY_SIZE(known); j++)
			ok = ok || strcmp(o->keys[i], known[j]) == 0;
		if (!ok || (!with_public && strcmp(o->keys[i], "public") == 0))
			return hezo_error_set(err, EINVAL, "keys.%s: unknown key %s", name,
					      word_ok(o->keys[i], strlen(o->keys[i]), "_.-")
						      ? o->keys[i]
						      : "(not shown)");
	}
	file = hezo_json_string(hezo_json_get(o, "file"));
	if (!hezo_egress_file_ok(file))
		return hezo_error_set(err, EINVAL,
				      "keys.%s.file: not an absolute path without . or .. "
				      "components",
				      name);
	k->file = strdup(file);
	if (!k->file)
		return hezo_error_set(err, ENOMEM, "keys.%s: out of memory", name);
	sign = hezo_json_get(o, "sign");
	if (sign && sign->type != HEZO_JSON_ARRAY)
		return hezo_error_set(err, EINVAL, "keys.%s.sign: not an array", name);
	if (sign && sign->len) {
		k->sign = calloc(sign->len, sizeof(*k->sign));
		if (!k->sign)
			return hezo_error_set(err, ENOMEM, "keys.%s: out of memory", name);
		HEZO_JSON_FOREACH (i, sign) {
			const char *ns = hezo_json_string(sign->items[i]);

			if (!ns || !word_ok(ns, strlen(ns), "@._-"))
				return hezo_error_set(err, EINVAL,
						      "keys.%s.sign[%zu]: not a namespace (1 to 63 "
						      "of [A-Za-z0-9@._-])",
						      name, i);
			k->sign[i] = strdup(ns);
			if (!k->sign[i])
				return hezo_error_set(err, ENOMEM, "keys.%s: out of memory", name);
			k->nsign++;
		}
	}
	ssh = hezo_json_get(o, "ssh");
	if (ssh && ssh->type != HEZO_JSON_ARRAY)
		return hezo_error_set(err, EINVAL, "keys.%s.ssh: not an array", name);
	if (ssh && ssh->len) {
		k->ssh = calloc(ssh->len, sizeof(*k->ssh));
		if (!k->ssh)
			return hezo_error_set(err, ENOMEM, "keys.%s: out of memory", name);
		HEZO_JSON_FOREACH (i, ssh) {
			const char *h = hezo_json_string(ssh->items[i]);
			struct hezo_cidr c;
			bool is_cidr = false;

			if (!h || hezo_allow_parse(h, &k->ssh[i], &c, &is_cidr, &why) < 0)
				return hezo_error_set(err, EINVAL, "keys.%s.ssh[%zu]: %s", name, i,
						      h ? why : "not a string");
			/* The agent matches the name the relay pinned, never a bare address. */
			if (is_cidr)
				return hezo_error_set(err, EINVAL,
						      "keys.%s.ssh[%zu]: an address; a key names "
						      "hosts",
						      name, i);
			k->nssh++;
		}
	}
	if (k->nsign == 0 && k->nssh == 0)
		return hezo_error_set(err, EINVAL,
				      "keys.%s: neither \"sign\" nor \"ssh\": the key would serve "
				      "nothing",
				      name);
	pub = hezo_json_get(o, "public");
	if (with_public) {
		if (!public_ok(hezo_json_string(pub)))
			return hezo_error_set(err, EINVAL,
					      "keys.%s.public: missing or not an ssh-ed25519 key",
					      name);
		snprintf(k->public, sizeof(k->public), "%s", pub->str);
	}
	return 0;
}

int hezo_keys_parse(const struct hezo_json *obj, bool with_public, struct hezo_key **out, size_t *n,
		    struct hezo_error **err)
{
	struct hezo_key *v;
	int r = 0;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	if (!obj || obj->type != HEZO_JSON_OBJECT)
		return hezo_error_set(err, EINVAL, "keys: not an object");
	if (obj->len == 0)
		return 0;
	v = calloc(obj->len, sizeof(*v));
	if (!v)
		return hezo_error_set(err, ENOMEM, "keys: out of memory");
	HEZO_JSON_FOREACH (i, obj) {
		k = i + 1;
		r = parse_one(obj->keys[i], obj->items[i], with_public, &v[i], err);
		if (r < 0)
			break;
	}
	if (r < 0) {
		hezo_keys_free(v, k);
		return r;
	}
	*out = v;
	*n = obj->len;
	return 0;
}

int hezo_keys_check_egress(const struct hezo_key *v, size_t n, const struct hezo_egress *e,
			   struct hezo_error **err)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i].nssh && e->mode != HEZO_EGRESS_PROXY)
			return hezo_error_set(err, EINVAL,
					      "keys.%s.ssh: needs egress.mode \"proxy\" (the agent "
					      "checks the box's connections there)",
					      v[i].name);
		for (size_t k = 0; k < v[i].nssh; k++) {
			const struct hezo_allow_name *h = &v[i].ssh[k];
			bool ok = false;

			for (size_t j = 0; !ok && j < e->nnames; j++)
				ok = hezo_allow_covers(&e->names[j], h, 22);
			if (!ok)
				return hezo_error_set(err, EINVAL,
						      "keys.%s.ssh[%zu]: %s%s:%u is not allowed by "
						      "egress.allow",
						      v[i].name, k, h->wildcard ? "*." : "",
						      h->name, h->port ? h->port : 22);
		}
	}
	return 0;
}

bool hezo_key_names_host(const struct hezo_key *k, const char *host, uint16_t port)
{
	struct hezo_allow_name h = {.port = port};

	if (port == 0 || snprintf(h.name, sizeof(h.name), "%s", host) >= (int)sizeof(h.name))
		return false;
	for (size_t i = 0; i < k->nssh; i++) {
		/* A key's host without a port names 22, not egress's 80 and 443. */
		struct hezo_allow_name e = k->ssh[i];

		e.port = e.port ? e.port : 22;
		if (hezo_allow_covers(&e, &h, 22))
			return true;
	}
	return false;
}

bool hezo_key_signs(const struct hezo_key *k, const char *ns, size_t len)
{
	for (size_t i = 0; i < k->nsign; i++)
		if (strlen(k->sign[i]) == len && memcmp(k->sign[i], ns, len) == 0)
			return true;
	return false;
}

/* ---- OpenSSH's private key format (PROTOCOL.key) ---- */

bool hezo_ssh_u32(struct hezo_ssh_rd *r, uint32_t *v)
{
	if (r->len < 4)
		return false;
	*v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
	r->p += 4;
	r->len -= 4;
	return true;
}

bool hezo_ssh_string(struct hezo_ssh_rd *r, struct hezo_ssh_rd *s)
{
	uint32_t n;

	if (!hezo_ssh_u32(r, &n) || n > r->len)
		return false;
	s->p = r->p;
	s->len = n;
	r->p += n;
	r->len -= n;
	return true;
}

bool hezo_ssh_is(const struct hezo_ssh_rd *s, const char *v)
{
	return s->len == strlen(v) && memcmp(s->p, v, s->len) == 0;
}

void hezo_sshkey_blob(const uint8_t pub[32], uint8_t out[HEZO_ED25519_BLOB_LEN])
{
	static const uint8_t head[] = {0,   0,	 0,   11,  's', 's', 'h', '-', 'e', 'd',
				       '2', '5', '5', '1', '9', 0,   0,	  0,   32};

	memcpy(out, head, sizeof(head));
	memcpy(out + sizeof(head), pub, 32);
}

void hezo_sshkey_public_line(const uint8_t pub[32], char out[HEZO_KEY_PUBLIC_MAX])
{
	uint8_t blob[HEZO_ED25519_BLOB_LEN];
	size_t n = sizeof("ssh-ed25519 ") - 1;

	hezo_sshkey_blob(pub, blob);
	memcpy(out, "ssh-ed25519 ", n);
	n += hezo_b64_encode(blob, sizeof(blob), out + n);
	out[n] = '\0';
}

static int parse_body(const uint8_t *b, size_t len, struct hezo_sshkey *out, const char **why)
{
	static const char magic[] = "openssh-key-v1";
	struct hezo_ssh_rd r = {b, len}, s, priv, pubblob;
	uint32_t nkeys, c1, c2;

	if (len < sizeof(magic) || memcmp(b, magic, sizeof(magic)) != 0)
		return (*why = "no openssh-key-v1 magic"), -EINVAL;
	r.p += sizeof(magic);
	r.len -= sizeof(magic);
	if (!hezo_ssh_string(&r, &s))
		return (*why = "truncated"), -EINVAL;
	if (!hezo_ssh_is(&s, "none"))
		return (*why = "encrypted with a passphrase"), -EOPNOTSUPP;
	if (!hezo_ssh_string(&r, &s) || !hezo_ssh_is(&s, "none") || !hezo_ssh_string(&r, &s) ||
	    s.len != 0)
		return (*why = "a key derivation without a cipher"), -EINVAL;
	if (!hezo_ssh_u32(&r, &nkeys) || nkeys != 1)
		return (*why = "not exactly one key"), -EINVAL;
	if (!hezo_ssh_string(&r, &pubblob) || !hezo_ssh_string(&r, &priv) || r.len != 0)
		return (*why = "truncated"), -EINVAL;
	/* The private section: two equal check words, then the key as the agent protocol has it. */
	if (!hezo_ssh_u32(&priv, &c1) || !hezo_ssh_u32(&priv, &c2) || c1 != c2)
		return (*why = "check words differ"), -EINVAL;
	if (!hezo_ssh_string(&priv, &s))
		return (*why = "truncated"), -EINVAL;
	if (!hezo_ssh_is(&s, "ssh-ed25519"))
		return (*why = "not an ed25519 key"), -EOPNOTSUPP;
	if (!hezo_ssh_string(&priv, &s) || s.len != 32)
		return (*why = "bad public key"), -EINVAL;
	memcpy(out->pub, s.p, 32);
	/* 64 bytes: the seed, then the public key again. */
	if (!hezo_ssh_string(&priv, &s) || s.len != 64 || memcmp(s.p + 32, out->pub, 32) != 0)
		return (*why = "bad private key"), -EINVAL;
	memcpy(out->seed, s.p, 32);
	{
		uint8_t blob[HEZO_ED25519_BLOB_LEN];

		hezo_sshkey_blob(out->pub, blob);
		if (pubblob.len != sizeof(blob) || memcmp(pubblob.p, blob, sizeof(blob)) != 0)
			return (*why = "public and private halves differ"), -EINVAL;
	}
	return 0;
}

int hezo_sshkey_parse(const char *text, size_t len, struct hezo_sshkey *out, const char **why)
{
	static const char begin[] = "-----BEGIN OPENSSH PRIVATE KEY-----";
	static const char end[] = "-----END OPENSSH PRIVATE KEY-----";
	uint8_t *b64 = NULL, *bin = NULL;
	const char *p, *e;
	size_t n = 0;
	long bl;
	int r;

	*why = "not an OpenSSH private key";
	memset(out, 0, sizeof(*out));
	if (len > KEY_TEXT_MAX)
		return (*why = "too long"), -EINVAL;
	p = memmem(text, len, begin, sizeof(begin) - 1);
	e = p ? memmem(p, len - (size_t)(p - text), end, sizeof(end) - 1) : NULL;
	if (!p || !e)
		return -EINVAL;
	p += sizeof(begin) - 1;
	b64 = malloc((size_t)(e - p) + 1);
	bin = malloc((size_t)(e - p) + 1);
	if (!b64 || !bin) {
		free(b64);
		free(bin);
		return (*why = "out of memory"), -ENOMEM;
	}
	for (; p < e; p++)
		if (*p != '\n' && *p != '\r' && *p != ' ' && *p != '\t')
			b64[n++] = (uint8_t)*p;
	bl = hezo_b64_decode(b64, n, bin, n + 1);
	r = bl < 0 ? -EINVAL : parse_body(bin, (size_t)bl, out, why);
	explicit_bzero(b64, n);
	explicit_bzero(bin, n + 1);
	free(b64);
	free(bin);
	if (r < 0)
		explicit_bzero(out, sizeof(*out));
	return r;
}
