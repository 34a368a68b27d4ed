/*
 * The egress allow-list contract that policy/, hooks/ and proxyd/ share (docs/egress.md, "The
 * grammar"): the syntax of allow entries, resolvers and allowRanges, the structure they parse
 * into, the JSON section the shim hands the hook and the hook hands proxyd, and the matching
 * proxyd does. Pure: no I/O, no logging.
 */
#ifndef HEZO_EGRESS_H
#define HEZO_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hezo-error.h"
#include "hezo-json.h"

/* A DNS name in dotted text, lowercase, no trailing dot: at most 253 characters. */
#define HEZO_NAME_MAX 254
/* Longest allow entry, resolver or range accepted at all (a longest name with "*." and a port). */
#define HEZO_EGRESS_ENTRY_MAX 272

enum hezo_egress_mode {
	HEZO_EGRESS_PROXY,
	HEZO_EGRESS_DENY,
	HEZO_EGRESS_OFF,
};

struct hezo_cidr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	uint8_t prefix;
	uint16_t port; /* allow entries: 0 means 80 and 443; unused in allowRanges */
};

struct hezo_allow_name {
	char name[HEZO_NAME_MAX]; /* normalised; for a wildcard, the suffix after "*." */
	bool wildcard;
	uint16_t port; /* 0: the default ports 80 and 443 */
};

struct hezo_resolver {
	int family;
	uint8_t addr[16];
	uint16_t port;
};

/* ---- secrets (secrets.c): a value proxyd adds toward the hosts it names ---- */

/* An environment variable name: [A-Za-z_][A-Za-z0-9_]*, at most 63 bytes. */
#define HEZO_SECRET_NAME_MAX 64
/* "hzph" and 40 of [a-z0-9] (206 bits): every placeholder has this length, so none is a
 * substring of another, and its characters need no quoting in a shell, URL, JSON or userinfo. */
#define HEZO_PLACEHOLDER_PREFIX "hzph"
#define HEZO_PLACEHOLDER_LEN	44

struct hezo_secret {
	char name[HEZO_SECRET_NAME_MAX];
	struct hezo_allow_name *hosts; /* names only; port 0 means 443 */
	size_t nhosts;
	char *file; /* absolute; the value is read there, never copied */
	char placeholder[HEZO_PLACEHOLDER_LEN + 1]; /* "" in the policy form */
	bool pass_elsewhere; /* otherHosts "pass": sent unchanged elsewhere instead of a 403 */
	char **headers; /* "headers": the only fields whose values take it (lowercase); NULL: any */
	size_t nheaders;
	bool in_header, in_query; /* "in": header values (default), the query string (opt-in) */
};

/* ---- keys (keys.c): an ssh key whose private half stays with proxyd's agent ---- */

/* A key's name: [A-Za-z0-9_.-], 1 to 63 bytes. An SSHSIG namespace: [A-Za-z0-9@._-], 1 to 63. */
#define HEZO_KEY_NAME_MAX 64
/* "ssh-ed25519 " and the base64 of the 51-byte public key blob. */
#define HEZO_KEY_PUBLIC_MAX   96
#define HEZO_ED25519_BLOB_LEN 51

struct hezo_key {
	char name[HEZO_KEY_NAME_MAX];
	char *file;  /* absolute; the private key is read there, by the agent only */
	char **sign; /* SSHSIG namespaces it may sign ("git") */
	size_t nsign;
	struct hezo_allow_name *ssh; /* hosts it may authenticate toward; port 0 means 22 */
	size_t nssh;
	char public[HEZO_KEY_PUBLIC_MAX]; /* "ssh-ed25519 BASE64": the wire form only */
};

struct hezo_egress {
	enum hezo_egress_mode mode;
	struct hezo_allow_name *names;
	size_t nnames;
	struct hezo_cidr *cidrs; /* address entries of allow; port 0: 80 and 443 */
	size_t ncidrs;
	struct hezo_cidr *ranges; /* allowRanges */
	size_t nranges;
	struct hezo_resolver *resolvers;
	size_t nresolvers;
	struct hezo_secret *secrets; /* "secrets": placeholders required */
	size_t nsecrets;
	struct hezo_key *keys; /* "keys": public halves required */
	size_t nkeys;
};

void hezo_egress_clear(struct hezo_egress *e);

/* ---- grammar.c: one entry at a time. On -EINVAL, *why (when not NULL) says what is wrong in
 * a few words, without the input; the caller names the field and quotes the input. ---- */

/*
 * Lowercase, drop one trailing dot, check labels (1..63 of [a-z0-9_-], not starting or ending
 * with '-') and the total length. Raw UTF-8 is refused with -EILSEQ: names must come already in
 * punycode (xn--...). -EINVAL for other bad names. This is the rule for names proxyd reads from
 * the wire (DNS questions, SNI, Host); allow entries add hezo_allow_parse's checks.
 */
int hezo_name_normalize(const char *in, size_t len, char out[HEZO_NAME_MAX]);

/* "1.2.3.4", "10.0.0.0/8", "fd00::/8" (prefix optional: full length), no host bits set. */
int hezo_cidr_parse(const char *s, struct hezo_cidr *out);
bool hezo_cidr_contains(const struct hezo_cidr *c, int family, const uint8_t *addr);

/*
 * One allow entry: "example.com", "*.example.com:8443", "10.0.0.0/8:5432", "fd00::/8:443",
 * "[2001:db8::]/32:443", "[2001:db8::/32]:22", "fd00::1", "[fd00::1]:443" (no port: 80 and
 * 443). *is_cidr says which of name/cidr it filled.
 */
int hezo_allow_parse(const char *s, struct hezo_allow_name *name, struct hezo_cidr *cidr,
		     bool *is_cidr, const char **why);

/*
 * The canonical spelling of an allow entry (what policy keeps and prints, and what annotations
 * are compared with): names lowercased without a trailing dot and with the port in decimal,
 * addresses lowercased as written. -EINVAL (with *why) when s is not an entry.
 */
int hezo_allow_normalize(const char *s, char out[HEZO_EGRESS_ENTRY_MAX], const char **why);

/* A resolver: "1.1.1.1", "1.1.1.1:5353", "2001:db8::53", "[2001:db8::53]", "[::1]:5353".
 * No port: 53. */
int hezo_resolver_parse(const char *s, struct hezo_resolver *out, const char **why);

/* An allowRanges entry: ADDRESS/PREFIX, prefix required, no host bits set. */
int hezo_range_parse(const char *s, struct hezo_cidr *out, const char **why);

/* ---- section.c: the JSON form ({"mode","allow","resolvers","allowRanges","project"}) ---- */

/* Parse the mode name; -EINVAL for anything but proxy, deny or off. */
int hezo_egress_mode_parse(const char *s, enum hezo_egress_mode *out);
const char *hezo_egress_mode_name(enum hezo_egress_mode m);

/*
 * Parse an egress section: every list entry by the grammar above, unknown keys refused, "mode"
 * optional (proxy when absent), "project" a string or null when present. Errors name the key and
 * index: "egress.allow[2]: \"*.com\": wildcard too broad".
 */
int hezo_egress_parse_section(const struct hezo_json *egress, struct hezo_egress *out,
			      struct hezo_error **err);

/* The same for what proxyd serves: a section whose mode is not proxy is refused. */
int hezo_egress_parse(const struct hezo_json *egress, struct hezo_egress *out,
		      struct hezo_error **err);

/* ---- match.c ---- */

/* May a connection to name on port be made? Port 0 is never allowed: no entry can name it. */
bool hezo_egress_name_allowed(const struct hezo_egress *e, const char *name, uint16_t port);
/* Does some entry name this host, whatever its port (DNS answers it)? */
bool hezo_egress_name_listed(const struct hezo_egress *e, const char *name);
/* Does a literal CIDR:port entry allow this destination? Port 0: no. */
bool hezo_egress_cidr_allowed(const struct hezo_egress *e, int family, const uint8_t *addr,
			      uint16_t port);
/* Loopback, private, link-local, CGNAT, metadata, ULA, multicast and friends, and IPv4-mapped,
 * -compatible, NAT64 and 6to4 forms of those. */
bool hezo_addr_is_special(int family, const uint8_t *addr);
bool hezo_egress_range_allowed(const struct hezo_egress *e, int family, const uint8_t *addr);

/* ---- secrets.c ---- */

/* Header field names a secret's "headers" may hold: the token of RFC 9110, at most this long. */
#define HEZO_SECRET_HEADER_MAX 64

/*
 * A "secrets" object: {NAME: {"hosts": [NAME...], "file": "/abs", "otherHosts": "refuse"|"pass",
 * "headers": [FIELD...], "in": ["header", "query"], "placeholder": "hzph..."}}. with_placeholders:
 * the wire form (the shim's --egress, proxyd's registration and state) where each secret carries
 * its placeholder; else (the policy form) a placeholder is refused. Hosts are allow entries naming
 * hosts (no addresses; "*" alone and
 * "*.com" refused by the grammar); a wildcard does not cover its apex. Errors name the field
 * ("secrets.TOKEN.hosts[1]: ..."), never a file's content. On success the caller owns *out (n
 * entries).
 */
int hezo_secrets_parse(const struct hezo_json *obj, bool with_placeholders,
		       struct hezo_secret **out, size_t *n, struct hezo_error **err);
void hezo_secrets_free(struct hezo_secret *v, size_t n);
/* Is every host of every secret one the egress allow list lets out on its port (443 if none)? */
int hezo_secrets_check_egress(const struct hezo_secret *v, size_t n, const struct hezo_egress *e,
			      struct hezo_error **err);
/* Does the secret name host (normalised) on port (an entry without a port names 443)? Port 0:
 * any. */
bool hezo_secret_names_host(const struct hezo_secret *s, const char *host, uint16_t port);
/* May the secret's value go into the value of header field name (nlen bytes, any case)? */
bool hezo_secret_header_allowed(const struct hezo_secret *s, const char *name, size_t nlen);
/*
 * Is b (the same secret as a project or annotation left it) at most a: no "in" place and no
 * header a does not allow? -EPERM with *why naming the key otherwise.
 */
int hezo_secret_narrower(const struct hezo_secret *a, const struct hezo_secret *b,
			 const char **why);
/* Is s a placeholder's shape (prefix, length, alphabet)? */
bool hezo_placeholder_valid(const char *s);
/*
 * Make a placeholder from at least 40 bytes of randomness rnd (rejection sampling: bytes at or
 * above 252 are skipped). -EAGAIN when rnd ran out first: call again with fresh bytes.
 */
int hezo_placeholder_from(const uint8_t *rnd, size_t len, char out[HEZO_PLACEHOLDER_LEN + 1]);

/* Is f an absolute path without . or .. components, of a sane length (a secret's or key's file)? */
bool hezo_egress_file_ok(const char *f);
/* Does entry a allow every host h names? A port 0 in h stands for dflt (443 for a secret's
 * host, 22 for a key's). */
bool hezo_allow_covers(const struct hezo_allow_name *a, const struct hezo_allow_name *h,
		       uint16_t dflt);

/* ---- keys.c ---- */

/*
 * A "keys" object: {NAME: {"file": "/abs", "sign": [NAMESPACE...], "ssh": [HOST...],
 * "public": "ssh-ed25519 ..."}}. with_public: the wire form (the shim's --egress, proxyd's
 * registration) where each key carries its public half; else (the policy form) "public" is
 * refused. "ssh" hosts are allow entries naming hosts (no addresses); no port means 22. Errors
 * name the field ("keys.NAME.ssh[1]: ..."). On success the caller owns *out (n entries).
 */
int hezo_keys_parse(const struct hezo_json *obj, bool with_public, struct hezo_key **out, size_t *n,
		    struct hezo_error **err);
void hezo_keys_free(struct hezo_key *v, size_t n);
/* Is every ssh host of every key one the egress allow list lets out on its port (22 if none)? */
int hezo_keys_check_egress(const struct hezo_key *v, size_t n, const struct hezo_egress *e,
			   struct hezo_error **err);
/* May key k authenticate toward host (normalised) on port? */
bool hezo_key_names_host(const struct hezo_key *k, const char *host, uint16_t port);
/* May key k sign SSHSIG namespace ns (len bytes)? */
bool hezo_key_signs(const struct hezo_key *k, const char *ns, size_t len);

/* SSH's wire format (RFC 4251): what is left to read, a uint32 and a string taken off its front
 * (false when too short), a string compared with text. */
struct hezo_ssh_rd {
	const uint8_t *p;
	size_t len;
};
bool hezo_ssh_u32(struct hezo_ssh_rd *r, uint32_t *v);
bool hezo_ssh_string(struct hezo_ssh_rd *r, struct hezo_ssh_rd *s);
bool hezo_ssh_is(const struct hezo_ssh_rd *s, const char *v);

/* An unencrypted ed25519 key in OpenSSH's private key format, as ssh-keygen writes it. */
struct hezo_sshkey {
	uint8_t pub[32];
	uint8_t seed[32]; /* the private half */
};

/*
 * Parse text (len bytes: "-----BEGIN OPENSSH PRIVATE KEY-----" ... "-----END ...") into *out.
 * -EINVAL with *why (a few words, never the key's bytes) when it is not one unencrypted ed25519
 * key; -EOPNOTSUPP for a passphrase or another key type. Scratch memory is wiped before return.
 */
int hezo_sshkey_parse(const char *text, size_t len, struct hezo_sshkey *out, const char **why);
/* The public key blob (string "ssh-ed25519", string pub): HEZO_ED25519_BLOB_LEN bytes. */
void hezo_sshkey_blob(const uint8_t pub[32], uint8_t out[HEZO_ED25519_BLOB_LEN]);
/* "ssh-ed25519 BASE64" (NUL-terminated) into out. */
void hezo_sshkey_public_line(const uint8_t pub[32], char out[HEZO_KEY_PUBLIC_MAX]);

/* ---- intersect.c ---- */

/*
 * What a container joining a registered network namespace leaves it (a pod's app containers,
 * `--network=container:A`): *out is a section allowing only what both a (the namespace's) and b
 * (the joiner's) allow, never more than a, made of a's entries that b covers in full and, when
 * some of a's are lost, b's entries that a covers; *narrowed says whether a lost anything.
 * Modes and resolvers cannot be narrowed: -EPERM when they differ. The project is a's.
 */
int hezo_egress_intersect(const struct hezo_json *a, const struct hezo_json *b,
			  struct hezo_json **out, bool *narrowed, struct hezo_error **err);

#endif
