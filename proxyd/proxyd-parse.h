/*
 * hezo-proxyd's pure parts: DNS messages, TLS ClientHello SNI, HTTP request heads, control
 * requests and the per-container address pins (the allow list itself is egress/hezo-egress.h).
 * No I/O, no logging: unit-tested and fuzzed.
 */
#ifndef HEZO_PROXYD_PARSE_H
#define HEZO_PROXYD_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hezo-egress.h"
#include "hezo-error.h"
#include "hezo-id.h"
#include "hezo-json.h"

/* ---- dns.c ---- */

#define HEZO_DNS_HEADER	    12
#define HEZO_DNS_TYPE_A	    1
#define HEZO_DNS_TYPE_CNAME 5
#define HEZO_DNS_TYPE_AAAA  28
#define HEZO_DNS_TYPE_OPT   41
#define HEZO_DNS_CLASS_IN   1

enum hezo_dns_rcode {
	HEZO_DNS_NOERROR = 0,
	HEZO_DNS_FORMERR = 1,
	HEZO_DNS_SERVFAIL = 2,
	HEZO_DNS_NXDOMAIN = 3,
	HEZO_DNS_NOTIMP = 4,
	HEZO_DNS_REFUSED = 5,
};

/* Longest TTL handed to a client (and kept in a pin): a day. */
#define HEZO_DNS_TTL_CAP 86400u
/* EDNS payload size proxyd advertises upstream and to clients. */
#define HEZO_DNS_EDNS_SIZE 1232u

struct hezo_dns_query {
	uint16_t id;
	uint8_t opcode;
	bool rd;
	char name[HEZO_NAME_MAX]; /* lowercase, no trailing dot; "" is the root */
	uint16_t qtype;
	uint16_t qclass;
	size_t qend;	    /* offset just past the question in the client's message */
	uint16_t edns_size; /* 0 when the client sent no OPT record */
};

#define HEZO_DNS_MAX_ADDRS 32

struct hezo_dns_addr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	uint32_t ttl;
};

struct hezo_dns_result {
	int rcode;
	bool truncated; /* the answer did not fit the client's limit: TC set, answers dropped */
	size_t naddrs;	/* addresses kept (also when truncated) */
	struct hezo_dns_addr addrs[HEZO_DNS_MAX_ADDRS];
	size_t nremoved; /* addresses removed by the filter */
};

/* Keep this address in an answer? */
typedef bool (*hezo_dns_addr_filter)(int family, const uint8_t *addr, void *userdata);

/*
 * Read the (possibly compressed) name at *off into out as lowercase dotted text and move *off
 * past it. Pointers must point strictly backwards and at most 64 are followed, so loops and
 * forward tricks are refused. -EBADMSG for malformed or truncated names, -EINVAL for bytes that
 * have no place in a host name.
 */
int hezo_dns_read_name(const uint8_t *msg, size_t len, size_t *off, char out[HEZO_NAME_MAX]);

/* Encode a dotted name uncompressed into out; returns the length written or -ENOSPC/-EINVAL. */
int hezo_dns_write_name(const char *name, uint8_t *out, size_t outsz);

/* Parse a client's query: exactly one question; OPT in the additional section is noted. */
int hezo_dns_parse_query(const uint8_t *msg, size_t len, struct hezo_dns_query *q);

/*
 * An answer without records: the client's header and question with QR, RA and rcode set, plus an
 * OPT record if the client sent one. Returns the length or -ENOSPC.
 */
int hezo_dns_build_empty(const uint8_t *query, const struct hezo_dns_query *q, int rcode,
			 uint8_t *out, size_t outsz);

/* A fresh recursive query for (name, qtype) with an OPT record, as proxyd sends upstream. */
int hezo_dns_build_query(uint16_t id, const char *name, uint16_t qtype, uint8_t *out, size_t outsz);

/*
 * Turn an upstream response into the client's answer: check it answers q (the caller checks the
 * message id), keep the CNAME chain from q->name and the A/AAAA records at its end that keep()
 * accepts, drop everything else (authority, additional, other types), write every name
 * uncompressed, cap TTLs at HEZO_DNS_TTL_CAP, and set TC without answers if the result is longer
 * than limit. Upstream errors other than NXDOMAIN become SERVFAIL. Returns the length of out or
 * -EBADMSG (not an answer to q), -ENOSPC.
 */
int hezo_dns_filter_response(const uint8_t *resp, size_t rlen, const uint8_t *query,
			     const struct hezo_dns_query *q, hezo_dns_addr_filter keep,
			     void *userdata, uint8_t *out, size_t outsz, size_t limit,
			     struct hezo_dns_result *res);

/* ---- sni.c ---- */

/*
 * Find the server name in a TLS ClientHello at the start of buf. Returns 1 with the name copied
 * to out, 0 for a complete ClientHello without SNI, -EAGAIN when more bytes are needed, -EINVAL
 * for anything that is not a well-formed ClientHello, -EPROTO for a ClientHello that asks for
 * Encrypted Client Hello (its real name would be hidden), -E2BIG beyond 16 KiB.
 */
int hezo_sni_parse(const uint8_t *buf, size_t len, char out[HEZO_NAME_MAX]);

/* ---- http.c ---- */

enum hezo_http_body {
	HEZO_HTTP_BODY_NONE,
	HEZO_HTTP_BODY_LENGTH,
	HEZO_HTTP_BODY_CHUNKED,
};

/* One request head as proxyd follows it. */
struct hezo_http_request {
	size_t head_len;	  /* through the blank line that ends it */
	size_t method_len;	  /* the method is buf[0..method_len) */
	char host[HEZO_NAME_MAX]; /* the Host header's host, as sent (without port) */
	uint16_t port;		  /* its port, 0 if none */
	uint8_t minor;		  /* HTTP/1.minor */
	enum hezo_http_body body;
	uint64_t length; /* BODY_LENGTH: the Content-Length */
	bool upgrade;	 /* an Upgrade header: the connection may switch protocols */
	/* GET, HEAD, OPTIONS, TRACE or DELETE (any case): servers commonly ignore a body there and
	 * read its bytes as the next request, so a body on these is refused (the tracker). */
	bool bodyless;
};

/*
 * Parse the HTTP/1.x request head at the start of buf. 1: complete and acceptable, *req filled.
 * -EAGAIN: not complete yet (what is there is plausible). -EINVAL: refused: not HTTP/1.0 or 1.1,
 * CONNECT, the HTTP/2 preface, a target naming another host than Host; anything RFC 9112 calls
 * invalid in a request head (obs-fold, a space before a colon, a bare CR or LF, NUL or other
 * control characters); and ambiguous framing or Host: no Host or two, two Content-Lengths or a
 * list, Content-Length with Transfer-Encoding, a Transfer-Encoding other than one "chunked",
 * Transfer-Encoding in HTTP/1.0. Bytes outside ASCII are refused too.
 */
int hezo_http_parse_request(const uint8_t *buf, size_t len, struct hezo_http_request *req);

#define HEZO_HTTP_METHOD_LOG 32
#define HEZO_HTTP_PATH_LOG   512
/* For a log line: the method and the target without its query (a query may hold a value), each
 * cut to fit, of a head hezo_http_parse_request filled req from. */
void hezo_http_method_path(const uint8_t *head, const struct hezo_http_request *req,
			   char method[HEZO_HTTP_METHOD_LOG], char path[HEZO_HTTP_PATH_LOG]);

/* The same, giving only the Host (the first request of a connection). */
int hezo_http_parse_host(const uint8_t *buf, size_t len, char out[HEZO_NAME_MAX], uint16_t *port);

/* A chunked request body being followed (hezo_http_chunked_scan). */
struct hezo_http_chunked {
	uint8_t st, digits;
	uint64_t left;
};

void hezo_http_chunked_init(struct hezo_http_chunked *c);
/*
 * Consume up to len bytes of a chunked body. 1: the body ended at buf[*used] (what follows is
 * the next request); 0: all len bytes belong to the body, more is needed; -EINVAL: bad framing
 * (a size that is not hex or over 15 digits, a bare CR, data not followed by CRLF, trailer
 * fields, which proxyd does not pass).
 */
int hezo_http_chunked_scan(struct hezo_http_chunked *c, const uint8_t *buf, size_t len,
			   size_t *used);
/* Inside a chunk's data: how many data bytes are left (they may be moved without scanning). */
uint64_t hezo_http_chunked_data_left(const struct hezo_http_chunked *c);
/* n (at most data_left) data bytes went by unscanned. */
void hezo_http_chunked_skip(struct hezo_http_chunked *c, uint64_t n);

/*
 * A client's stream of plain-HTTP requests as proxyd follows it: where each request head starts,
 * so every head is judged and no body byte is ever read as one. Request framing depends on the
 * request alone (RFC 9112 6.3), except after an Upgrade head, where the answer decides
 * (HEZO_HTTP_T_HOLD until the caller resumes or leaves the stream).
 */
enum hezo_http_track_state {
	HEZO_HTTP_T_HEAD,    /* the next request head is due */
	HEZO_HTTP_T_LENGTH,  /* a Content-Length body: left bytes */
	HEZO_HTTP_T_CHUNKED, /* a chunked body: ch follows it */
	HEZO_HTTP_T_HOLD,    /* an Upgrade head went: nothing is consumed until resumed */
};

struct hezo_http_track {
	uint8_t st; /* enum hezo_http_track_state */
	union {
		uint64_t left;		     /* T_LENGTH */
		struct hezo_http_chunked ch; /* T_CHUNKED */
	};
};

void hezo_http_track_init(struct hezo_http_track *t);
/*
 * Step over the bytes buf[0..len) that come next on the stream.
 * 1: a request head of *used bytes, *req filled: the caller judges it; the tracker now expects
 *    its body, the next head, or holds (an Upgrade).
 * 0: *used bytes (maybe all len, maybe none when holding) are body; call again for the rest.
 * -EAGAIN: a head not complete yet. -EINVAL: a head hezo_http_parse_request refuses.
 * -EBADMSG: a head with a body (Content-Length above 0, or Transfer-Encoding) on a method that
 *    takes none (req->bodyless; *req filled, *used its length): never to be passed.
 * -EPROTO: a malformed chunked body.
 * After an error the tracker is unchanged.
 */
int hezo_http_track(struct hezo_http_track *t, const uint8_t *buf, size_t len, size_t *used,
		    struct hezo_http_request *req);
/* Body bytes that may go without a look (inside a Content-Length body or a chunk's data). */
uint64_t hezo_http_track_body_left(const struct hezo_http_track *t);
/* n (at most body_left) body bytes went by without a look. */
void hezo_http_track_skip(struct hezo_http_track *t, uint64_t n);
/* After a held Upgrade the server did not switch protocols: the next bytes are a request head. */
void hezo_http_track_resume(struct hezo_http_track *t);

/* ---- subst.c: placeholders replaced in an intercepted request head (issue 17) ---- */

/* One secret as the substitution sees it; value is the file's content (without a last newline). */
struct hezo_subst_secret {
	const char *placeholder; /* HEZO_PLACEHOLDER_LEN characters */
	const uint8_t *value;
	size_t value_len;
	bool here; /* the secret names the connection's host */
	bool pass; /* otherHosts "pass": elsewhere it goes unchanged */
};

#define HEZO_SUBST_MAX 32

struct hezo_subst_result {
	uint32_t used;	  /* bit i: secret i was substituted */
	uint32_t refused; /* bit i: secret i's placeholder was found toward a host it does not name
			   */
	unsigned count;	  /* substitutions */
};

/*
 * Is v a value the substitution can put into a request head unchanged in meaning: 1 to 4096
 * bytes of visible ASCII (0x21..0x7e)? A CR, LF, space or NUL could split a header or the request
 * line.
 */
bool hezo_subst_value_ok(const uint8_t *v, size_t len);

/*
 * Rewrite the request head head[0..len) (a complete head hezo_http_parse_request accepted) into
 * out: each placeholder of a secret that is here is replaced by its value in the request target
 * and in every header value but Host's, and inside the credentials of "Authorization: Basic" and
 * "Proxy-Authorization: Basic" (base64 decoded, replaced, encoded again). A placeholder of a
 * secret that is not here is left as it is when it may pass, else the head is refused: -EACCES
 * with res->refused naming the secrets. Everything else is copied byte for byte. -ENOSPC when out
 * is too small, -EINVAL for more than HEZO_SUBST_MAX secrets. Pure: fuzzed.
 */
int hezo_subst_head(const uint8_t *head, size_t len, const struct hezo_subst_secret *s, size_t n,
		    uint8_t *out, size_t outsz, size_t *outlen, struct hezo_subst_result *res);

/* ---- request.c ---- */

/* Room for a container id (base/hezo-id.h) and its NUL. */
#define HEZO_CTL_ID_MAX	     (HEZO_ID_MAX + 1)
#define HEZO_CTL_PROJECT_MAX 65

enum hezo_ctl_op {
	HEZO_CTL_REGISTER = 1,
	HEZO_CTL_DEREGISTER,
	HEZO_CTL_LIST,
	HEZO_CTL_STATS,
};

/* A control request that passed every check proxyd makes before acting on it. */
struct hezo_ctl_request {
	enum hezo_ctl_op op;
	char id[HEZO_CTL_ID_MAX];	    /* register, deregister */
	char project[HEZO_CTL_PROJECT_MAX]; /* register: "" when none */
	struct hezo_json *egress;	    /* register: the section as it came (owned) */
	struct hezo_egress eg;		    /* register: the section as proxyd enforces it */
	char after[HEZO_CTL_ID_MAX];	    /* list, stats: page after this id; "": first page */
};

void hezo_ctl_request_clear(struct hezo_ctl_request *r);
bool hezo_ctl_id_valid(const char *id);

/* Parse and check one request message (docs/egress.md). Unknown ops and keys are refused. */
int hezo_ctl_request_parse(const char *buf, size_t len, struct hezo_ctl_request *out,
			   struct hezo_error **err);

/* Check a registration document: a register request, or the state file proxyd keeps of one
 * ({"id","project","egress"}). */
int hezo_ctl_registration(const struct hezo_json *doc, struct hezo_ctl_request *out,
			  struct hezo_error **err);

/* ---- pin.c ---- */

#define HEZO_PIN_TTL_FLOOR 60u
#define HEZO_PIN_MAX	   4096u

struct hezo_pin {
	int family;
	uint8_t addr[16];
	char name[HEZO_NAME_MAX];
	uint64_t expires; /* seconds on the caller's monotonic clock */
};

struct hezo_pins {
	struct hezo_pin *v;
	size_t n, cap;
};

/* Remember that name resolved to addr for ttl seconds (at least HEZO_PIN_TTL_FLOOR). When full,
 * expired entries go first, then the one closest to expiry. */
int hezo_pin_add(struct hezo_pins *p, int family, const uint8_t *addr, const char *name,
		 uint32_t ttl, uint64_t now);
bool hezo_pin_match(const struct hezo_pins *p, int family, const uint8_t *addr, const char *name,
		    uint64_t now);
bool hezo_pin_any(const struct hezo_pins *p, int family, const uint8_t *addr, uint64_t now);
/* Is some live pin of addr for a name that e allows on port? (Port 0: never.) */
bool hezo_pin_any_allowed(const struct hezo_pins *p, int family, const uint8_t *addr, uint64_t now,
			  const struct hezo_egress *e, uint16_t port);
void hezo_pin_expire(struct hezo_pins *p, uint64_t now);
void hezo_pin_clear(struct hezo_pins *p);

#endif
