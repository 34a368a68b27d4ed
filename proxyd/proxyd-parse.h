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
 * request alone (RFC 9112 6.3), except after an Upgrade head without a body, where the answer
 * decides (HEZO_HTTP_T_HOLD until the caller resumes or leaves the stream). An Upgrade head with a
 * body is followed as any other request: its body is never read as a head.
 */
enum hezo_http_track_state {
	HEZO_HTTP_T_HEAD,    /* the next request head is due */
	HEZO_HTTP_T_LENGTH,  /* a Content-Length body: left bytes */
	HEZO_HTTP_T_CHUNKED, /* a chunked body: ch follows it */
	HEZO_HTTP_T_HOLD,    /* a body-less Upgrade head went: nothing is consumed until resumed */
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
 *    its body, the next head, or holds (an Upgrade without a body).
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
	bool here;	      /* the secret names the connection's host and port */
	bool pass;	      /* otherHosts "pass": elsewhere it goes unchanged */
	bool header;	      /* "in" holds "header": header values take it */
	bool query;	      /* "in" holds "query": the query string takes it */
	char *const *headers; /* lowercase field names whose values take it; NULL: any */
	size_t nheaders;
};

#define HEZO_SUBST_MAX 32

struct hezo_subst_result {
	uint32_t used;	  /* bit i: secret i was substituted */
	uint32_t refused; /* bit i: secret i's placeholder was found toward a host it does not name
			   */
	unsigned count;	  /* substitutions */
	uint32_t misplaced; /* bit i: secret i is here, but its placeholder sits where it may not go
			     */
	const char *why;    /* for misplaced and oversize: where or what (the first one) */
	uint32_t oversize;  /* bit i: secret i went into a Basic credential over
			     * HEZO_MASK_VALUE_MAX, too long to be masked back */
};

/*
 * Is v a value the substitution can put into a request head unchanged in meaning: 1 to 4096
 * bytes of visible ASCII (0x21..0x7e)? A CR, LF, space or NUL could split a header or the request
 * line.
 */
bool hezo_subst_value_ok(const uint8_t *v, size_t len);

/*
 * Rewrite the request head head[0..len) (a complete head hezo_http_parse_request accepted) into
 * out. A placeholder of a secret that is here is replaced by its value in the value of a header
 * the secret allows (never Host's), inside the credentials of "Authorization: Basic" and
 * "Proxy-Authorization: Basic" (base64 decoded, replaced, encoded again), and in the query string
 * when the secret takes "query". Anywhere else (method, path, query, field name, another header)
 * the head is refused: -EPROTO with res->misplaced and res->why. A placeholder of a secret that is
 * not here is left as it is when it may pass, else the head is refused: -EACCES with
 * res->refused naming the secrets. A Basic credential is substituted in its decoded form only
 * when a placeholder is there (else as text), and one that would come out longer than
 * HEZO_MASK_VALUE_MAX is refused: -EPROTO with res->oversize and res->why. Everything else is
 * copied byte for byte. -ENOSPC when out is too small, -EINVAL for more than HEZO_SUBST_MAX
 * secrets. Pure: fuzzed.
 */
int hezo_subst_head(const uint8_t *head, size_t len, const struct hezo_subst_secret *s, size_t n,
		    uint8_t *out, size_t outsz, size_t *outlen, struct hezo_subst_result *res);

/*
 * Ask for an answer without content coding: every Accept-Encoding field of the request head
 * head[0..len) (complete, CRLF line ends) goes and "Accept-Encoding: identity" is added last, in
 * place (size: the room at head). -ENOSPC when it does not fit, -EINVAL when it is not a head.
 */
int hezo_subst_identity(uint8_t *head, size_t len, size_t size, size_t *outlen);

/* A Basic credential as it went upstream (sent) and as the box wrote it (written). */
typedef void (*hezo_subst_pair)(void *ud, const uint8_t *sent, size_t slen, const uint8_t *written,
				size_t wlen);
/*
 * For each Authorization or Proxy-Authorization "Basic" line whose credentials hezo_subst_head
 * changed (in: the head it read, out: the head it wrote, line for line), fn gets both: an upstream
 * that echoes the header must get them masked back, and base64 hides the value from a plain
 * search.
 */
void hezo_subst_basic_pairs(const uint8_t *in, size_t inlen, const uint8_t *out, size_t outlen,
			    hezo_subst_pair fn, void *ud);

/* ---- mask.c: values replaced by placeholders in the answers of an intercepted connection ---- */

/* One secret as the masking sees it: value (len bytes) becomes placeholder. */
struct hezo_mask_value {
	const char *placeholder; /* HEZO_PLACEHOLDER_LEN characters unless placeholder_len */
	const uint8_t *value;
	size_t len;
	size_t placeholder_len; /* 0: HEZO_PLACEHOLDER_LEN */
	/* A Basic token as the box sent it, not an admin's value: masked only where it takes no
	 * byte of a real value's occurrence (the box chose its text around the value). */
	bool derived;
};

/* The secrets and, after them, the Basic credentials substituted on the connection. */
#define HEZO_MASK_VALUES    (HEZO_SUBST_MAX + 4)
#define HEZO_MASK_VALUE_MAX 12288 /* base64 of the longest Basic credential with its values */

/* Bytes toward the client, in order. */
typedef void (*hezo_mask_emit)(void *ud, const uint8_t *b, size_t n);

#define HEZO_MASK_QUEUE	    64 /* requests sent and not yet answered */
#define HEZO_MASK_STAGE_PRE 8
#define HEZO_MASK_STAGE	    (16384 - HEZO_MASK_STAGE_PRE - 2)
#define HEZO_MASK_HEAD_MAX  16384 /* an answer's head */

/* One connection's answers: the requests they answer, where the current one is. */
struct hezo_mask {
	const struct hezo_mask_value *v;
	size_t n, longest;
	hezo_mask_emit emit;
	void *ud;
	uint8_t q[HEZO_MASK_QUEUE];
	unsigned qh, qn;
	uint8_t st, cst, digits, out;
	bool close_after;
	uint64_t left;
	size_t headlen, carry, stagelen;
	size_t ctx;	  /* work[0..ctx): bytes passed, kept for an occurrence begun there */
	size_t masked_to; /* where the last occurrence masked ends */
	uint64_t masked;  /* values replaced so far */
	const char *why;  /* after an error: what was wrong */
	/* The buffers: hezo_mask_init leaves them alone. */
	uint8_t head[HEZO_MASK_HEAD_MAX];
	/* Passed bytes an occurrence may go on from and bytes that may begin one (each under a
	 * longest value), and a read. */
	uint8_t work[2 * HEZO_MASK_VALUE_MAX + 16384];
	/* Bytes on their way out, with room for a chunk's size line before them and its CR LF
	 * after: one chunk fills one TLS record. */
	uint8_t stage[HEZO_MASK_STAGE_PRE + HEZO_MASK_STAGE + 2];
};

/* v[0..n) (at most HEZO_MASK_VALUES, each value 1 to HEZO_MASK_VALUE_MAX bytes; the first
 * that is not ends the list) stay the caller's. */
void hezo_mask_init(struct hezo_mask *m, const struct hezo_mask_value *v, size_t n,
		    hezo_mask_emit emit, void *ud);
/* The values masked from now on (between two feeds). */
void hezo_mask_values(struct hezo_mask *m, const struct hezo_mask_value *v, size_t n);
/* A request went upstream: its answer is the next one after those awaited (HEAD: without body;
 * http10: an HTTP/1.0 request, whose answer must not be chunked). -ENOSPC: too many waiting. */
int hezo_mask_request(struct hezo_mask *m, bool head, bool http10);
/* From now on every byte fed is masked as one stream (an HTTP/2 stream's DATA, h2.c): no
 * framing is read; hezo_mask_end passes the bytes kept for a value that may go on. */
void hezo_mask_stream(struct hezo_mask *m);
/*
 * The whole string in[0..len) with every value of v[0..n) replaced by its placeholder (the same
 * rule as the stream: the earliest, at one place the longer), into out. *masked counts up.
 * -ENOSPC when out is too small.
 */
int hezo_mask_string(const struct hezo_mask_value *v, size_t n, const uint8_t *in, size_t len,
		     uint8_t *out, size_t outsz, size_t *outlen, uint64_t *masked);
/* Is some answer awaited or under way? */
bool hezo_mask_busy(const struct hezo_mask *m);
/* Did an answer switch protocols (101)? What follows it is masked as a stream. */
bool hezo_mask_switched(const struct hezo_mask *m);
/*
 * Bytes from the upstream: each answer's head is read whole, then passed with every value
 * replaced by its placeholder and, when it has a body, its framing redone: chunked toward an
 * HTTP/1.1 request (Content-Length dropped, the status line's version HTTP/1.1), up to the close
 * toward HTTP/1.0 (Connection: close); the body de-framed, masked and framed again; chunk
 * extensions and trailers dropped. 0: go on; 1: an answer ended that ends the connection (what
 * follows is ignored); -EPROTO (m->why says why): an answer that is not HTTP/1, a coded body
 * (Content-Encoding other than identity), a head over HEZO_MASK_HEAD_MAX, an answer to no request.
 * After a 101 the bytes are masked as a stream. Everything is emitted before it returns.
 */
int hezo_mask_feed(struct hezo_mask *m, const uint8_t *b, size_t n);
/* hezo_mask_feed that may keep up to one TLS record's worth staged (an answer's end, 1 or an
 * error excepted): the caller feeds several reads and then calls hezo_mask_flush, so a download
 * goes out in full records rather than a full one and a sliver per read. */
int hezo_mask_feed_some(struct hezo_mask *m, const uint8_t *b, size_t n);
void hezo_mask_flush(struct hezo_mask *m);
/* The upstream closed: the last bytes go. -EPIPE: in the middle of a head or framed body. */
int hezo_mask_end(struct hezo_mask *m);

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
	uint64_t cgroup;	     /* register: the container's cgroup v2 id (0: unknown) */
	char after[HEZO_CTL_ID_MAX]; /* list, stats: page after this id; "": first page */
};

void hezo_ctl_request_clear(struct hezo_ctl_request *r);
bool hezo_ctl_id_valid(const char *id);

/* Parse and check one request message (docs/egress.md). Unknown ops and keys are refused. */
int hezo_ctl_request_parse(const char *buf, size_t len, struct hezo_ctl_request *out,
			   struct hezo_error **err);

/* Check a registration document: a register request, or the state file proxyd keeps of one
 * ({"id","project","egress"}); "cgroup" (optional) is the registering container's cgroup v2 id,
 * which tells its connections from those of the namespace's other members. */
int hezo_ctl_registration(const struct hezo_json *doc, struct hezo_ctl_request *out,
			  struct hezo_error **err);

/* ---- agentmsg.c: ssh-agent requests (draft-miller-ssh-agent) and what may be signed ---- */

#define HEZO_AGENT_MSG_MAX 16384

enum {
	HEZO_AGENT_FAILURE = 5,
	HEZO_AGENTC_REQUEST_IDENTITIES = 11,
	HEZO_AGENT_IDENTITIES_ANSWER = 12,
	HEZO_AGENTC_SIGN_REQUEST = 13,
	HEZO_AGENT_SIGN_RESPONSE = 14,
};

/*
 * One message at the front of buf (uint32 length, then type and body): its whole size (> 0),
 * -EAGAIN while it is incomplete, -E2BIG past HEZO_AGENT_MSG_MAX or when empty.
 */
long hezo_agent_frame(const uint8_t *buf, size_t len, uint8_t *type, const uint8_t **body,
		      size_t *blen);

struct hezo_agent_sign {
	const uint8_t *key, *data;
	size_t keylen, datalen;
	uint32_t flags;
};

/* A SIGN_REQUEST's body: string key blob, string data, uint32 flags, nothing after. -EINVAL. */
int hezo_agent_sign_parse(const uint8_t *body, size_t len, struct hezo_agent_sign *out);

/* The blob ssh-keygen -Y sign has signed (OpenSSH's PROTOCOL.sshsig): "SSHSIG", namespace,
 * reserved (empty), hash algorithm (sha256 or sha512) and the message's hash of that size. */
struct hezo_sshsig {
	const uint8_t *ns, *hash;
	size_t nslen, hashlen;
	const char *alg; /* "sha256" or "sha512" */
};

int hezo_sshsig_parse(const uint8_t *d, size_t len, struct hezo_sshsig *out);

/*
 * What an SSH client signs to authenticate by public key (RFC 4252, section 7): string session
 * identifier, byte SSH_MSG_USERAUTH_REQUEST, string user, string "ssh-connection", string
 * "publickey" (or OpenSSH's "publickey-hostbound-v00@openssh.com", then the server's host key
 * after the key blob), boolean TRUE, string algorithm, string key blob; nothing after.
 */
struct hezo_userauth {
	const uint8_t *session, *user, *alg, *key, *hostkey; /* hostkey: NULL unless hostbound */
	size_t sessionlen, userlen, alglen, keylen, hostkeylen;
};

int hezo_userauth_parse(const uint8_t *d, size_t len, struct hezo_userauth *out);

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
/* The name of the first such pin, NULL when there is none. */
const char *hezo_pin_allowed_name(const struct hezo_pins *p, int family, const uint8_t *addr,
				  uint64_t now, const struct hezo_egress *e, uint16_t port);
void hezo_pin_expire(struct hezo_pins *p, uint64_t now);
void hezo_pin_clear(struct hezo_pins *p);

#endif
